"""Where report.html's prose shows an interval cut to its range, it says so as the table's caption does: real
early-exit and diagnose runs on the digits cache (the fixture of test_reportfix_settings)."""

from __future__ import annotations

import json
from pathlib import Path

from test_reportfix_settings import _text, folders  # noqa: F401  (folders: a fixture)


def _sentence(reading: list[str], start: str) -> str:
    (line,) = [x for x in reading if x.startswith(start)]
    return line


def test_the_early_exit_prose_says_where_a_fixed_depths_accuracy_was_cut_as_its_caption_does(
    folders: dict[str, Path],  # noqa: F811
) -> None:
    """Two under-trained refits give a fixed depth's accuracy a t-interval past [0, 1]: the table's caption
    said it was cut, with its t bounds, while the reading's "Exit always at blocks.1: accuracy 0.4800
    [0.0000, 1.0000]" read as the interval itself."""
    from laya_inspect.beyond.common import bounded
    from laya_inspect.report.beyond import beyond_page
    from laya_inspect.report.reading import early_exit_reading

    folder = folders["early-exit"]
    s = json.loads((folder / "summary.json").read_text())
    cut = [f for f in s["fixed_depth"] if bounded(f["accuracy"], 0.0, 1.0).get("clipped")]
    assert cut, s["fixed_depth"]  # the case this reads: 2 seeds of 2-epoch refits on digits
    details = early_exit_reading(s).details
    page = _text(beyond_page(folder, s))
    for f in s["fixed_depth"]:
        line = _sentence(details, f"Exit always at {f['layer']} ")
        acc = f["accuracy"]
        if f in cut:
            bounds = f"[{acc['ci_low']:+.2f}, {acc['ci_high']:+.2f}]"  # the caption's figures, in both places
            assert f", cut to [0, 1] from {bounds}, " in line, line
            assert f"{f['layer']} accuracy {bounds}" in page
            assert "shown cut to [0, 1]" in page
        else:
            assert "cut to" not in line, line
        assert line in page


def test_the_early_exit_and_diagnose_prose_say_where_a_difference_was_cut_to_minus_1_1(
    folders: dict[str, Path],  # noqa: F811
) -> None:
    """A difference over 2 seeds whose t-interval passes ±1 is kept cut to [−1, 1], with its t bounds: the
    comparisons' caption said so, the reading showed "[-1.0000, +1.0000]" as the interval. Early exit's
    alpha − random as a MobileNet run read it; diagnose's msp AUROC and a score − msp over two heads."""
    from laya_inspect.beyond.exit_verdicts import exit_comparisons
    from laya_inspect.report.beyond import beyond_page
    from laya_inspect.report.reading import diagnose_reading, early_exit_reading

    base = [0.70, 0.71]
    shift = {"random": (0, 0), "alpha": (-0.01271077957251554, -0.07365011983343861), "fixed": (-0.01, -0.02)}
    shift |= {r: (0.02, 0.04) for r in ("confidence", "confidence+alpha", "confidence+alpha_oracle")}
    areas = {r: [b + d for b, d in zip(base, ds)] for r, ds in shift.items()}
    fired = {"epsilon": 0.05, "rows": 0, "oracle_rows": 0, "of": 500}
    s = json.loads((folders["early-exit"] / "summary.json").read_text())
    s["comparisons"] = exit_comparisons(areas, [], fired, in_sample=areas)
    d = s["comparisons"]["alpha vs random"]["area_diff"]
    assert d["clipped"] and (d["ci_low"], d["ci_high"]) == (-1.0, 1.0)
    lead = early_exit_reading(s).lead
    (against,) = [x for x in lead if x.startswith("Against random exit")]
    assert "[-1.0000, +1.0000], cut to [−1, 1] from [-1.59, +1.51])" in against, against
    assert against.count("cut to") == 1, against  # the differences inside [−1, 1] are not said to be cut
    page = _text(beyond_page(folders["early-exit"], s))
    assert against in page and "alpha vs random [-1.59, +1.51]" in page  # the caption: the same figures

    s = json.loads((folders["diagnose"] / "summary.json").read_text())
    msp = {"mean": 0.865, "ci_low": 0.0, "ci_high": 1.0, "clipped": True, "t_low": -0.596, "t_high": 2.326, "n": 2}
    key = next(iter(s["errors"]["diff_vs_msp"]))
    diff = {"mean": -0.2248, "ci_low": -1.0, "ci_high": 0.7405, "clipped": True, "t_low": -1.19, "t_high": 0.7405}
    s["errors"]["auroc"]["msp"] = msp
    s["errors"]["diff_vs_msp"][key] = {**diff, "n": 2}
    first = diagnose_reading(s).lead[-1]
    assert "AUROC 0.865 [0.000, 1.000], cut to [0, 1] from [-0.60, +2.33];" in first, first
    assert "-0.225 [-1.000, +0.741], cut to [−1, 1] from [-1.19, +0.74]" in first, first
