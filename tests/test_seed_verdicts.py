"""The verdict over the seeds is held to each seed's standard (docs/METHOD.md, "Across seeds"): a method's
difference to the constant rule over the seeds is read at the per-seed verdicts' level (1 − 0.05/3), scores
that disagree in sign over the seeds read "mixed", and each pair of methods' difference in ρ over the seeds
carries its own verdict, which the reading and the across-seed tables say."""

from __future__ import annotations

import html
import io

import pytest
from rich.console import Console
from test_compare_seeds import _beats_by, _compared, _head, _render, _with_ig

from laya_inspect.compare.paired import VERDICT_CONFIDENCE
from laya_inspect.compare.seeds import across_seeds
from laya_inspect.report.across import seed_sections, seed_tables


def _wide(renderables: list) -> str:
    """The terminal's text at 200 columns: each cell on one line."""
    console = Console(file=io.StringIO(), width=200, color_system=None)
    for r in renderables:
        console.print(r)
    return " ".join(console.file.getvalue().split())  # type: ignore[attr-defined]


def _alpha(summary: dict) -> dict:
    return summary["groups"][0]["ablations"]["mean"]["methods"]["alpha"]


def test_beating_the_rule_over_the_seeds_needs_the_level_each_seed_needs() -> None:
    """ρ − rule +0.2, +0.3, +0.4 on 3 seeds, each above 0: at 95% the interval over the seeds,
    [+0.05, +0.55], read "beats" although each seed's verdict needs 98.3%; at 98.3% it holds 0."""
    spread = across_seeds([_beats_by(s, d) for s, d in enumerate((0.2, 0.3, 0.4))], [0, 1, 2])
    alpha = _alpha(spread)
    est = alpha["faithfulness_minus_constant"]
    assert est["confidence"] == VERDICT_CONFIDENCE
    half = 7.648803937915553 * 0.1 / 3**0.5  # t(1 − 0.05/6, 2), from scipy's table, · std / √3
    assert (est["ci_low"], est["ci_high"]) == pytest.approx((0.3 - half, 0.3 + half))
    assert alpha["verdict_over_seeds"] == "not shown"
    text = _wide(seed_tables({"across_seeds": spread}))
    assert "every 98.3% t-interval over the seeds includes 0" in text, text
    assert "beats per seed " in text and "per seed: each seed's own intervals give that verdict" in text, text


def test_scores_that_disagree_in_sign_over_the_seeds_read_mixed() -> None:
    """Each seed beats the rule on ρ; over the seeds ρ − rule lies above 0 and top-layer agreement − rule
    below: the verdict over the seeds was "beats", the score below 0 unread. It is "mixed" now, and the
    terminal and report.html say which score is which."""
    heads = [_beats_by(s, d) for s, d in enumerate((0.3, 0.35, 0.4))]
    for h, d in zip(heads, (-0.3, -0.35, -0.4)):
        vs = h["ablations"]["mean"]["methods"]["alpha"]["vs_constant"]
        vs["top_layer_agreement"] = {"mean": d, "ci_low": d - 0.5, "ci_high": d + 0.5}  # each seed's holds 0
    spread = across_seeds(heads, [0, 1, 2])
    alpha = _alpha(spread)
    assert alpha["verdicts"] == ["beats"] * 3 and alpha["verdict_over_seeds"] == "mixed"
    said = (
        "beats the constant rule on each of the 3 seeds, but over the seeds the scores disagree in sign (better on "
        "faithfulness ρ; worse on top-layer agreement; not on Deletion@1 ÷ oracle) (98.3% t-intervals over the seeds)"
    )
    text = _wide(seed_tables({"across_seeds": spread}))
    assert said in text and "beats per seed, mixed" in text and "(after the comma, the verdict they give)" in text
    (section,) = seed_sections({"across_seeds": spread})
    assert said in " ".join(html.unescape(section.html()).split())


def test_a_pair_of_methods_carries_its_verdict_over_the_seeds_at_the_seeds_level() -> None:
    """α − IG's difference in ρ over the seeds is drawn at the level each seed's was (97.5%, recorded as
    ``confidence``), records its ``verdict``, and the " − ig" row of the terminal's table and report.html
    say it; the reading reads that field, not a rule of its own."""
    from laya_inspect.report.reading import compare_reading

    heads = [_with_ig(_head(s, "beats", []), d - 0.01, d + 0.01) for s, d in enumerate((-0.2, -0.3, -0.25))]
    for h in heads:
        h["ablations"]["mean"]["methods"]["alpha"]["vs_methods"]["ig"]["confidence"] = 0.975
    summary = _compared(heads, [0, 1, 2])
    entry = summary["across_seeds"]["groups"][0]["ablations"]["mean"]
    over = entry["vs_methods"]["alpha"]["ig"]
    half = 6.205346816 * 0.05 / 3**0.5  # t(0.9875, 2) · std / √3
    assert over["confidence"] == 0.975 and over["ci_high"] == pytest.approx(-0.25 + half)
    assert over["verdict"] == "worse"
    row = next(line for line in _render(seed_tables(summary)).splitlines() if line.strip().startswith("− ig"))
    assert row.rstrip().endswith("worse"), row
    (section,) = seed_sections(summary)
    assert "− ig: -0.25 [" in html.unescape(section.html()) and "; worse over the seeds (97.5%)" in section.html()
    assert "lies below 0 too" in " ".join(compare_reading(summary).lead)
    over["verdict"] = "no different"  # the field is what the reading says
    lead = " ".join(compare_reading(summary).lead)
    assert "includes 0 (97.5% t-interval over the seeds): not shown for the head refitted" in lead, lead
