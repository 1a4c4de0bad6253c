"""The headline over the seeds names the scores that carry its verdict, as each seed's verdict line does:
one interval above 0 is enough to beat the rule, so a bare "it beats the rule over the seeds" was read as
beating it on ρ where ρ's interval over the seeds held 0 (the digits demo: [-0.08, +0.93])."""

from __future__ import annotations

from test_compare_seeds import _beats_by, _compared

from laya_inspect.report.reading import compare_headline


def test_the_verdict_over_the_seeds_names_the_scores_that_carry_it() -> None:
    heads = [_beats_by(s, d) for s, d in enumerate((0.3, 0.35, 0.4))]  # ρ − rule above 0 on every seed
    first = compare_headline(_compared(heads, [0, 1, 2]))[0]
    said = ": it beats the rule over the seeds (on faithfulness ρ; not on top-layer agreement, Deletion@1 ÷ oracle)."
    assert first.endswith(said), first


def test_a_verdict_every_score_carries_names_none() -> None:
    heads = [_beats_by(s, d) for s, d in enumerate((0.3, 0.35, 0.4))]
    for h, d in zip(heads, (0.2, 0.25, 0.3)):
        vs = h["ablations"]["mean"]["methods"]["alpha"]["vs_constant"]
        for key in ("top_layer_agreement", "deletion_at_1_over_oracle"):
            vs[key] = {"mean": d, "ci_low": d - 0.01, "ci_high": d + 0.01}
    first = compare_headline(_compared(heads, [0, 1, 2]))[0]
    assert first.endswith(": it beats the rule over the seeds."), first
