"""fit-head's macro-F1 reads like its accuracy on report.html: with one seed, "one seed: no interval"
in words, not "[n/a]"; over seeds, where its interval was cut to [0, 1] is said with the t bounds."""

from __future__ import annotations

import html
import json
from pathlib import Path

from typer.testing import CliRunner

from laya_inspect.cli import app

runner = CliRunner()
ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
FAST = ["--epochs", "3", "--lr", "1e-2", "--batch-size", "32"]


def _page(out: Path) -> str:
    return " ".join(html.unescape((out / "report.html").read_text(encoding="utf-8")).split())


def test_one_seed_macro_f1_says_no_interval_in_words(digits_cache, tmp_path: Path) -> None:
    out = tmp_path / "one"
    args = ["fit-head", str(digits_cache), "--head", "laya", "--seeds", "1", *FAST, "--out", str(out)]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    s = json.loads((out / "summary.json").read_text())
    f1 = next(h for h in s["heads"] if h["head"] == "laya")["test_macro_f1"]
    assert f1["ci_low"] is None  # one seed: no interval over the seeds to show
    page = _page(out)
    assert f"macro-F1 {f1['mean']:.3f} (one seed: no interval))" in page  # the reading's lead
    assert f"<td>{f1['mean']:.3f} (one seed: no interval)</td>" in page  # the table's cell
    assert f"{f1['mean']:.3f} [n/a]" not in page
    # nor any difference of one seed (against chance, the probe): "+0.836 [n/a] against chance" read as missing;
    # each now has its test rows' interval (tests/test_oneseed_differences.py)
    assert "[n/a]" not in page and "(rows) against chance" in page, page


def test_a_macro_f1_interval_cut_to_one_is_said(digits_cache, tmp_path: Path) -> None:
    """Two real seeds' summary, its LAYA macro-F1 interval set as a t-interval past 1 (near-perfect heads
    over few seeds give one; these do not reach it in a test's few epochs), read again by `report --html`."""
    out = tmp_path / "two"
    args = ["fit-head", str(digits_cache), "--head", "laya", "--seeds", "2", *FAST, "--out", str(out)]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    s = json.loads((out / "summary.json").read_text())
    laya = next(h for h in s["heads"] if h["head"] == "laya")
    laya["test_macro_f1"]["ci_high"] = 1.0213
    (out / "summary.json").write_text(json.dumps(s))
    again = runner.invoke(app, ["report", str(out), "--html"], env=ENV)
    assert again.exit_code == 0, again.output
    page = _page(out)
    mean, low = laya["test_macro_f1"]["mean"], laya["test_macro_f1"]["ci_low"]
    assert f"{mean:.3f} [{max(low, 0):.3f}, 1.000], cut to [0, 1] from [{low:.3f}, 1.021]" in page
    assert "macro-F1: an interval reaching outside [0, 1] is shown cut to [0, 1], the range of a macro-F1" in page
    assert f"laya [{low:+.2f}, +1.02]" in page
