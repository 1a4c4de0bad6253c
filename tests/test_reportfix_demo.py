"""What report.html and the terminal say of a demo run's numbers read as a user reads them: the backbone's test
accuracy with an interval, and a gap to the last-layer head that is the same on every seed said as such."""

from __future__ import annotations

import html
import json
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.files import write_json
from laya_inspect.report import build_page


def test_the_demo_page_gives_the_backbones_test_accuracy_with_its_test_rows_interval(tmp_path: Path) -> None:
    """The demo's page said "Backbone (zoo:mlp) with its own classifier: test accuracy 0.9778" bare, the one
    number of the page with no interval: one model, one seed, so its 360 test rows' 95% Wilson interval,
    as fit-head's tables give a head fitted on one seed."""
    from laya_inspect.demo import DemoConfig, _record, plan_demo
    from laya_inspect.training.stats import wilson

    out = tmp_path / "demo"
    plan = plan_demo(DemoConfig(quick=True, device="cpu", out=str(out)))
    args = ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "last", "--epochs", "2"]
    trained = CliRunner().invoke(app, [*args, "--device", "cpu", "--out", str(out / "backbone.pt")])
    assert trained.exit_code == 0, trained.output
    assert (out / "backbone.metrics.json").is_file()
    write_json(out / "demo.json", _record(plan, [], {}, {}, complete=False))
    metrics = json.loads((out / "backbone.metrics.json").read_text())
    acc, n = metrics["test_acc"], metrics["n_test"]
    low, high = wilson(acc * n, n)
    said = " ".join(html.unescape(build_page(out, figures=False)).split())
    assert (
        f"with its own classifier: test accuracy {acc:.4f} [{low:.4f}, {high:.4f}] (95% Wilson interval over its "
        f"{n} test rows), macro-F1 {metrics['test_macro_f1']:.4f}." in said
    ), said


def test_a_gap_to_last_the_same_on_every_seed_is_not_shown_as_a_zero_width_interval() -> None:
    """The digits demo's ScalarMix heads were one test row below `last` on each of 3 seeds: the heads table
    printed "-0.003 [-0.003, -0.003]" on the terminal and in report.html, certainty where there is no spread;
    the headline's gaps say such a gap is "the same on each of the 3 seeds"."""
    from laya_inspect.report.sections import fit_sections
    from laya_inspect.report.terminal import fit_table

    step = -1 / 360
    gap = {"n": 3, "mean": step, "std": 0.0, "ci_low": step, "ci_high": step, "values": [step] * 3}
    acc = {"n": 3, "mean": 0.976, "ci_low": 0.972, "ci_high": 0.980, "values": [0.975, 0.978, 0.975]}
    heads = [
        {"head": "last", "n": 3, "seeds": [0, 1, 2], "test_acc": acc},
        {"head": "scalarmix", "n": 3, "seeds": [0, 1, 2], "test_acc": acc, "delta_vs_last": {"test_acc": gap}},
    ]
    summary = {"heads": heads, "split": {"n_test": 360}}
    table = fit_sections(summary, [])[0].tables[0]
    cell = table.rows[1][table.columns.index("Δ accuracy vs last [95% CI]")]
    assert str(getattr(cell, "text", cell)) == "-0.003 (same on every seed)", cell
    console = Console(width=120, record=True, color_system=None)
    console.print(fit_table(summary, "heads"))
    printed = console.export_text()
    assert "-0.003 (same on every seed)" in printed and "[-0.003, -0.003]" not in printed, printed


def test_an_unmarked_lead_without_a_constant_rule_says_its_one_difference_must_lie_above_0() -> None:
    """The demo's compare page said "no * for deletion area: ig − alpha-contrib +0.01 [-0.02, +0.04] (both
    must lie above 0)": the constant rule has no deletion or insertion area, so one difference is given and
    one must lie above 0; where the constant rule's is given too, both must."""
    from laya_inspect.report.sections import _notes

    runner_up = {"mean": 0.0104, "ci_low": -0.0201, "ci_high": 0.0409, "n": 360}
    const = {"mean": 0.5694, "ci_low": 0.4782, "ci_high": 0.6509, "n": 360}
    tests = {
        "deletion_area": {"leader": "ig", "runner_up": "alpha-contrib", "vs_runner_up": runner_up, "marked": False},
        "faithfulness": {
            "leader": "ig",
            "runner_up": "gradcam",
            "vs_runner_up": runner_up,
            "vs_constant": const,
            "marked": False,
        },
    }
    notes = _notes({"best_tests": tests})
    assert "no * for deletion area: ig − alpha-contrib +0.01 [-0.02, +0.04] (it must lie above 0)" in notes, notes
    assert (
        "no * for faithfulness ρ: ig − gradcam +0.01 [-0.02, +0.04], ig − constant rule +0.57 [+0.48, +0.65] "
        "(both must lie above 0)" in notes
    ), notes


def test_an_unmarked_leads_intervals_name_their_level() -> None:
    """ "no * for faithfulness ρ: ig − gradcam +0.03 [+0.00, +0.07]" was drawn at the family's 99.3%, and
    read as a 95% interval that excludes 0 it contradicted the missing star."""
    from laya_inspect.report.sections import _notes

    runner_up = {"mean": 0.03, "ci_low": 0.001, "ci_high": 0.07, "confidence": 1 - 0.05 / 7}
    const = {"mean": 0.57, "ci_low": 0.48, "ci_high": 0.65, "confidence": 1 - 0.05 / 3}
    test = {"leader": "ig", "runner_up": "gradcam", "vs_runner_up": runner_up, "vs_constant": const, "marked": False}
    (said,) = [n for n in _notes({"best_tests": {"faithfulness": test}}) if n.startswith("no * for")]
    assert "ig − gradcam +0.03 [+0.00, +0.07] (99.3%), ig − constant rule +0.57 [+0.48, +0.65] (98.3%)" in said, said
