"""Compare's headline over several seeds of its lead head: the figures over every seed first (mean and
95% t-interval over the seeds, the constant rule and the random reference beside, the paired difference to
the rule over the seeds with its verdict_over_seeds), read from summary.json's across_seeds, then seed 0's
sentence as detail; the terminal and report.html say the same. One seed keeps its one sentence."""

from __future__ import annotations

from test_compare_seeds import _beats_by, _compared, _head

from laya_inspect.report.reading import compare_headline, compare_reading


def _three(diffs: tuple[float, ...] = (0.3, 0.35, 0.4)) -> dict:
    heads = [_beats_by(s, d) for s, d in enumerate(diffs)]
    for h in heads:  # the random reference, so the headline has both nulls to show
        h["ablations"]["mean"]["references"]["random"] = {"top_layer_agreement": 0.33, "faithfulness": {"mean": 0.01}}
    return _compared(heads, list(range(len(diffs))))


def test_the_headline_leads_with_every_seed_then_seed_0() -> None:
    summary = _three()
    first, second, *_ = compare_headline(summary)
    assert first.startswith("Over laya's 3 seeds (mean ablation, 100 test inputs each; mean [95% t-interval])"), first
    # α's top-layer agreement 0.90, 0.91, 0.92 over the seeds, the rule's and the random reference's beside
    assert "on 91% [89%, 93%] of inputs (the constant rule: 80%, the random reference: 33%)" in first, first
    assert "faithfulness ρ 0.85 [0.73, 0.97] (the constant rule 0.50, the random reference 0.01)" in first, first
    assert "α − constant rule over the seeds (98.3% t-intervals): faithfulness ρ +0.35 [+0.13, +0.57]" in first
    said = ": it beats the rule over the seeds (on faithfulness ρ; not on top-layer agreement, Deletion@1 ÷ oracle)."
    assert first.endswith(said), first
    assert second.startswith("On seed 0 of 3 (the tables below): α picks the same top layer"), second
    assert "laya-seed_0" in second and "laya-seed_0" not in first
    lead = compare_reading(summary).lead
    assert lead[:2] == [first, second]  # report.html's reading leads with the same two sentences
    assert lead[-1].startswith("Seed 0's sentences read one of the 3 seeds of laya"), lead[-1]


def test_the_headline_reads_summary_json_not_its_own_sums() -> None:
    """A value changed in across_seeds alone is the value said: the headline does not recompute it."""
    summary = _three()
    row = summary["across_seeds"]["groups"][0]["ablations"]["mean"]["methods"]["alpha"]
    row["faithfulness"] = {**row["faithfulness"], "mean": 0.123, "ci_low": 0.1, "ci_high": 0.15}
    row["verdict_over_seeds"] = "mixed"
    first = compare_headline(summary)[0]
    assert "faithfulness ρ 0.12 [0.10, 0.15]" in first, first
    assert "over the seeds it beats the rule on some scores and does worse on others" in first, first


def test_beating_the_rule_on_each_seed_but_not_over_them_is_said_first() -> None:
    """The digits demo's case: each seed's head beats the rule, the difference over the seeds holds 0."""
    first = compare_headline(_three((0.05, 0.45, 0.02)))[0]
    assert "each seed's head beats it, but over the seeds it is not shown to (every interval includes 0)" in first
    heads = [_beats_by(0, 0.3), _head(1, "not shown", [])]
    first = compare_headline(_compared(heads, [0, 1]))[0]
    assert "the seeds' verdicts differ: beats on seed 0; not shown on seed 1" in first, first


def test_one_seed_keeps_its_one_sentence() -> None:
    summary = _compared([_head(0, "beats", ["alpha"])], [0])
    (first,) = compare_headline(summary)
    assert first.startswith("α picks the same top layer") and "Over " not in first, first


def _top1(rho: float) -> dict:
    """:func:`_three` with top-1 only among the references over the seeds, the same ρ on every seed."""
    summary = _three()
    refs = summary["across_seeds"]["groups"][0]["ablations"]["mean"]["references"]
    refs["top1_only"] = {"faithfulness": {"mean": rho, "ci_low": rho, "ci_high": rho}}
    return summary


def test_the_headline_over_the_seeds_says_top1_only_beside_the_leads_rho() -> None:
    """The digits demo's case: top-1 only scores 0.87 on every seed, above α's whole interval over the
    seeds; the headline over the seeds said α's ρ beside the constant rule and random only (before)."""
    first = compare_headline(_top1(0.97))[0]
    said = "faithfulness ρ 0.85 [0.73, 0.97] (top-1 only 0.97 on every seed: α lies below it, not over its interval; "
    assert said + "the constant rule 0.50, the random reference 0.01)" in first, first
    first = compare_headline(_top1(1.0))[0]
    assert "(top-1 only 1.00 on every seed: α lies below it over its whole interval; the constant" in first, first
    first = compare_headline(_top1(0.5))[0]
    assert "(top-1 only 0.50 on every seed; the constant rule 0.50" in first, first  # α above it: no "below"
