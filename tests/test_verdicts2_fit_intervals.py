"""fit-head's accuracy interval says what it is: over seeds, cut to [0, 1] where the t-interval reaches past
it (with the t bounds, in the words compare and diagnose use); from one seed, which gives no interval over
seeds, the test rows' own 95% Wilson interval, labelled as such, where a bare "0.972" stood under a "95%
t-interval" header and report.html read "95% interval [n/a]". Real fits on digits."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.training.stats import wilson

runner = CliRunner()
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
FAST = ["--head", "laya", "--lr", "1e-2", "--batch-size", "32", "--no-probe"]


def _fit(cache: Path, out: Path, *args: str) -> tuple[str, str]:
    result = runner.invoke(app, ["fit-head", str(cache), *FAST, *args, "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split()), " ".join((out / "report.html").read_text().split())


def test_an_accuracy_interval_cut_to_1_is_said_to_be(digits_cache: Path, tmp_path: Path) -> None:
    """Two seeds 0.940 and 0.956: t(0.975, 1) = 12.7 stretches the interval to [0.88, 1.02]."""
    import json

    output, page = _fit(digits_cache, tmp_path / "two", "--seeds", "2", "--epochs", "6")
    acc = json.loads((tmp_path / "two" / "summary.json").read_text())["heads"][0]["test_acc"]
    assert acc["ci_high"] > 1, acc  # the case under test: the t-interval reaches past 1
    said = "test accuracy: an interval reaching outside [0, 1] is shown cut to [0, 1], the range of an accuracy"
    assert said in output and said in page
    assert f"[{acc['ci_low']:.3f}, 1.000]" in output
    assert f"cut to [0, 1] from [{acc['ci_low']:.3f}, {acc['ci_high']:.3f}]" in page  # the reading's sentence


def test_one_seed_shows_the_test_rows_interval(digits_cache: Path, tmp_path: Path) -> None:
    import json

    output, page = _fit(digits_cache, tmp_path / "one", "--seeds", "1", "--epochs", "2")
    summary = json.loads((tmp_path / "one" / "summary.json").read_text())
    mean, n = summary["heads"][0]["test_acc"]["mean"], summary["split"]["n_test"]
    low, high = wilson(mean * n, n)
    shown = f"{mean:.3f} [{low:.3f}, {high:.3f}]"
    assert f"{shown} (rows)" in output and "95% interval over the test rows" in output, output
    assert f"the 95% Wilson interval over the {n} test rows is shown (laya)" in output
    assert f"{shown} (rows)" in page
    assert f"(95% interval [{low:.3f}, {high:.3f}], Wilson over the {n} test rows" in page
    assert low < mean < high
    # the table's caption called them "95% t-intervals over seeds" beside the note that they are not
    assert "t-intervals over seeds" not in page, page
