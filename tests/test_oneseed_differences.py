"""fit-head with one seed gives each difference (to the last-layer head, the probe, chance) the 95% interval
its test rows allow, marked "(rows)" as the accuracy's is, where it read "(one seed: no interval)": to last
the paired interval over the same rows, to a fixed value the head's Wilson interval less it. summary.json
records them under each head's ``test_rows``. Real fits on digits."""

from __future__ import annotations

import copy
import html
import json
import math
from pathlib import Path

from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.report.reading import fit_reading
from laya_inspect.training.stats import wilson

runner = CliRunner()
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "HF_HUB_OFFLINE": "1"}
FAST = ["--head", "laya,last", "--seeds", "1", "--epochs", "3", "--lr", "1e-2", "--batch-size", "32"]


def _signed(d: dict, digits: int = 3) -> str:
    return f"{d['mean']:+.{digits}f} [{d['ci_low']:+.{digits}f}, {d['ci_high']:+.{digits}f}] (rows)"


def test_one_seed_differences_carry_the_test_rows_interval(digits_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "one"
    result = runner.invoke(app, ["fit-head", str(digits_cache), *FAST, "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    page = " ".join(html.unescape((out / "report.html").read_text(encoding="utf-8")).split())
    summary = json.loads((out / "summary.json").read_text())
    n, chance = summary["split"]["n_test"], summary["quality"]["chance"]
    heads = {h["head"]: h for h in summary["heads"]}
    laya, last = heads["laya"], heads["last"]
    rows = laya["test_rows"]
    acc, low, high = laya["test_acc"]["mean"], *wilson(laya["test_acc"]["mean"] * n, n)

    # to last: the paired interval over the same rows, centred on the difference of the two accuracies
    vs_last = rows["vs_last"]
    assert vs_last["rows"] == n and vs_last["method"] == "paired wald"
    assert math.isclose(vs_last["mean"], acc - last["test_acc"]["mean"], abs_tol=1e-12)
    assert math.isclose(vs_last["better"] - vs_last["worse"], vs_last["mean"] * n, abs_tol=1e-9)
    assert vs_last["ci_low"] < vs_last["mean"] < vs_last["ci_high"]
    # narrower than two Wilson intervals side by side: the rows both heads answer alike drop out
    assert vs_last["ci_high"] - vs_last["ci_low"] < (high - low) * 2
    # to the probe and chance, fixed values: the head's Wilson interval less each
    probe = laya["probe_reference"]["test_acc"]
    for key, ref in (("vs_probe", probe), ("vs_chance", chance)):
        assert rows[key]["reference"] == ref
        assert math.isclose(rows[key]["ci_low"], low - ref) and math.isclose(rows[key]["ci_high"], high - ref)
    assert "vs_last" not in last["test_rows"]  # last is the baseline

    # the terminal's table and the page's table and reading show them, marked as the test rows'
    assert _signed(vs_last) in output, output
    assert "beside a difference to last, the paired 95% interval over those rows" in output
    # one seed of last on digits is read below its layer's probe by the gate: the difference is marked so
    below = " (vs a baseline below its layer's probe)" if laya.get("baseline_below_probe") else ""
    assert f"<td>{_signed(vs_last)}{below}</td>" in page
    verdict = "excludes 0" if vs_last["ci_low"] > 0 or vs_last["ci_high"] < 0 else "includes 0: no difference shown"
    beside = "itself below the probe on its own layer; " if below else ""
    said = f"{_signed(vs_last)} against the last-layer head ({beside}the {n} test rows' interval {verdict})"
    assert said in page, page
    assert f"{_signed(rows['vs_chance'])} against chance ({chance:.3f}, the majority class; the {n} test rows'" in page
    assert f"{_signed(rows['vs_probe'])} against the single-layer probe" in page
    assert "its accuracy taken as fixed" in page
    assert "[n/a]" not in page and "(one seed: no interval) against" not in page

    # a one-seed summary written before test_rows still reads, saying it has no interval
    older = copy.deepcopy(summary)
    for h in older["heads"]:
        del h["test_rows"]
    said = " ".join(fit_reading(older).lead)
    assert "(one seed: no interval) against the last-layer head" in said and "(rows) against" not in said


def _head(name: str, acc: float, rows: dict | None) -> dict:
    one = {"n": 1, "mean": acc, "std": None, "ci_low": None, "ci_high": None, "values": [acc]}
    h = {"head": name, "n": 1, "seeds": [0], "test_acc": one, "delta_vs_last": {"test_acc": dict(one)}}
    return h | ({"test_rows": rows} if rows else {})


def test_a_test_rows_interval_holding_0_shows_no_difference() -> None:
    """80 test rows, one seed: LAYA 0.85 and last 0.80, 8 rows better and 4 worse: its paired interval
    [−0.033, +0.133] holds 0, and the words say so, as over seeds."""
    vs_last = {"rows": 80, "better": 8.0, "worse": 4.0, "mean": 0.05, "ci_low": -0.0333, "ci_high": 0.1333}
    summary = {
        "split": {"n_test": 80},
        "quality": {"chance": 0.5},
        "heads": [_head("laya", 0.85, {"rows": 80, "vs_last": vs_last}), _head("last", 0.80, None)],
    }
    said = " ".join(fit_reading(summary).lead)
    assert "+0.050 [-0.033, +0.133] (rows) against the last-layer head (the 80 test rows' interval includes 0: " in said


def test_a_one_seed_head_near_chance_gives_its_accuracy_the_test_rows_interval() -> None:
    """The near-chance verdict leading the reading read "test accuracy 0.113 (one seed: no interval)" where the
    table beside it gave the test rows' Wilson interval."""
    summary = {"split": {"n_test": 80}, "quality": {"chance": 0.1}, "heads": [_head("laya", 0.1125, None)]}
    low, high = wilson(9, 80)
    said = " ".join(fit_reading(summary).lead)
    assert f"test accuracy 0.113 [{low:.3f}, {high:.3f}] (rows) is near chance (0.100" in said, said
