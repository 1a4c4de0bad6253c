"""Seed statistics against hand computations and scipy's paired t-test."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from laya_inspect.errors import InputError
from laya_inspect.training.stats import (
    describe,
    paired_difference,
    std,
    summarize_runs,
    summary_to_jsonable,
    t_interval,
)


def test_t_interval_by_hand() -> None:
    x = [1.0, 2.0, 3.0, 4.0]
    # mean 2.5; std (ddof=1) = sqrt(5/3); t(0.975, 3) = 3.182446305284263 (tables)
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2
    assert describe(x).mean == 2.5
    assert std(x) == pytest.approx(math.sqrt(5 / 3), abs=1e-12)
    lo, hi = t_interval(x)
    assert lo == pytest.approx(2.5 - half, abs=1e-9) and hi == pytest.approx(2.5 + half, abs=1e-9)
    e = describe(x)
    assert (e.n, e.mean, e.confidence) == (4, 2.5, 0.95)
    assert (e.ci_high - e.ci_low) / 2 == pytest.approx(half, abs=1e-9)
    assert e.format(3) == f"2.500 ± {math.sqrt(5 / 3):.3f} [{2.5 - half:.3f}, {2.5 + half:.3f}]"


def test_five_seeds_match_scipy() -> None:
    x = np.array([0.8842, 0.8811, 0.8790, 0.8865, 0.8820])
    lo, hi = t_interval(x)
    ref = sps.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
    assert (lo, hi) == pytest.approx(ref, abs=1e-12)


def test_one_value_is_undefined_and_says_so() -> None:
    e = describe([0.9])
    assert e.n == 1 and e.mean == 0.9
    assert math.isnan(e.std) and math.isnan(e.ci_low) and math.isnan(e.ci_high)
    d = e.to_dict()
    assert d["std"] is None and d["ci_low"] is None and "undefined" in d["note"]
    json.dumps(d, allow_nan=False)
    assert e.format(2) == "0.90 ± n/a [n/a]"
    with pytest.raises(InputError):
        describe([])


def test_paired_difference_matches_ttest_rel() -> None:
    a, b = [0.90, 0.80, 0.85, 0.88], [0.80, 0.78, 0.80, 0.86]
    e = paired_difference(a, b)
    ref = sps.ttest_rel(a, b).confidence_interval(0.95)
    assert e.mean == pytest.approx(np.mean(np.subtract(a, b)))
    assert (e.ci_low, e.ci_high) == pytest.approx((ref.low, ref.high), abs=1e-12)
    with pytest.raises(InputError, match="paired"):
        paired_difference([1.0, 2.0], [1.0])


def test_summarize_runs_pairs_by_seed() -> None:
    runs = [{"head": "last", "seed": s, "test_acc": v} for s, v in [(0, 0.80), (1, 0.82), (2, 0.81)]]
    runs += [{"head": "laya", "seed": s, "test_acc": v} for s, v in [(2, 0.86), (0, 0.84), (3, 0.99)]]
    rows = {r["head"]: r for r in summarize_runs(runs, metrics=("test_acc",))}
    assert rows["last"]["delta_vs_last"] is None
    assert rows["laya"]["n"] == 3 and rows["laya"]["seeds"] == [0, 2, 3]
    delta = rows["laya"]["delta_vs_last"]["test_acc"]  # seeds 0 and 2 only: 0.04 and 0.05
    assert delta.n == 2 and delta.mean == pytest.approx(0.045)
    assert delta.values == pytest.approx((0.04, 0.05))
    plain = summary_to_jsonable(list(rows.values()))
    json.dumps(plain, allow_nan=False)
    without_base = summarize_runs([r for r in runs if r["head"] == "laya"], metrics=("test_acc",))
    assert without_base[0]["delta_vs_last"] is None


def test_the_same_difference_on_every_seed_is_no_verdict() -> None:
    """Test accuracies move in steps of 1/n, so two refits can tie: α − a ranking of +0.0028 on both
    seeds has std 0 and a t-interval [+0.0028, +0.0028] of zero width, which read "beats" from no
    spread at all. A difference that is the same on every seed, and not 0, decides nothing."""
    from laya_inspect.beyond.common import paired, verdict
    from laya_inspect.report.reading import fit_reading
    from laya_inspect.training.stats import outcome

    tied = paired([0.9806, 0.9806], [0.9778, 0.9778])
    assert tied["ci_low"] == pytest.approx(tied["ci_high"]) and tied["ci_low"] > 0  # zero width, above 0
    assert outcome(tied) == "undecided"
    said = verdict(tied, what="the α ranking", baseline="a random ranking")
    assert "beats" not in said and "the same on each of the 2 seeds" in said and "no verdict" in said
    assert outcome(paired([0.98, 0.99, 0.985], [0.97, 0.975, 0.972])) == "better"  # spread over seeds: read as before
    assert outcome(paired([0.97, 0.98], [0.97, 0.98])) == "no different"  # 0 on every seed: no difference

    laya = {"head": "laya", "n": 2, "test_acc": {"mean": 0.98}, "delta_vs_last": {"test_acc": tied}}
    first = fit_reading({"heads": [laya]}).lead[0]
    assert "excludes 0" not in first and "the same on each of the 2 seeds" in first


def test_the_readings_of_prune_and_early_exit_say_a_tied_difference_has_no_spread() -> None:
    """report.html's reading of prune and early-exit put "(no interval)" beside the zero-width
    interval it printed ("cannot be compared with (no interval) a random ranking (+0.0028 [+0.0028,
    +0.0028])"), where the verdict lines say why: the same on every seed, no spread."""
    from laya_inspect.beyond.common import paired
    from laya_inspect.report.reading import early_exit_reading, prune_reading

    tied = paired([0.9806, 0.9806], [0.9778, 0.9778])
    prune = {
        "cache": {"layer_names": ["a", "b", "c"]},
        "ks": [1, 2],  # every prune summary records the layer counts it tried
        "alpha_vs": {"random": {"mean_test_acc_over_k_diff": tied, "same_layer_sets": False}},
        "seeds": [0, 1],
        "reference": {"test_acc": {"mean": 0.98, "ci_low": 0.97, "ci_high": 0.99}},
        "config": {"max_drop": 0.01},
        "chosen": None,
    }
    first = prune_reading(prune).lead[0]
    assert "(no interval)" not in first and "the same on each of the 2 seeds" in first, first
    exits = {
        "seeds": [0, 1],
        "config": {"epsilon": 0.1},
        "comparisons": {
            "confidence vs random": {"area_diff": tied},
            "confidence+alpha vs confidence": {"area_diff": tied},
        },
    }
    lead = " ".join(early_exit_reading(exits).lead)
    assert "(no interval)" not in lead and "is undecided:" not in lead, lead
    assert lead.count("the same on each of the 2 seeds") == 2, lead


def test_a_cut_note_says_each_intervals_count_where_they_differ() -> None:
    """The demo's ρ over 3 seeds and the constant rule's over 2 (its ρ undefined on one seed), both cut
    to [−1, 1]: the note said "over 3 seeds" for both, the first one's count. Each is now said with its
    own; where the counts agree the sentence names the one count, as before."""
    from laya_inspect.compare.seeds import t_estimate
    from laya_inspect.training.stats import bounded, cut_note

    alpha = bounded(t_estimate([0.35, 0.6, 0.85]), -1.0, 1.0)
    constant = bounded(t_estimate([0.1, None, 0.9]), -1.0, 1.0)
    assert alpha["n"] == 3 and constant["n"] == 2 and alpha["clipped"] and constant["clipped"]
    note = cut_note({"alpha": alpha, "constant rule": constant}, "ρ", "[−1, 1]", "the range", "seeds at 95%")
    assert note is not None and "over 3 seeds" not in note, note
    assert f"alpha over 3 [{alpha['t_low']:+.2f}, +1.22]" in note, note
    assert f"constant rule over 2 [{constant['t_low']:+.2f}, {constant['t_high']:+.2f}]" in note, note
    assert "the t-interval over each one's seeds at 95% (" in note, note
    same = cut_note({"alpha": alpha, "ig": alpha}, "ρ", "[−1, 1]", "the range", "seeds at 95%")
    assert same is not None and "the t-interval over 3 seeds at 95% (alpha [-0.02, +1.22], ig [" in same, same


def test_a_cut_note_shows_a_bound_past_the_range_edge_as_past_it() -> None:
    """QA (all-MiniLM-L6-v2, 3 seeds): "the t-interval … (gradcam top-layer agreement [+0.88, +1.00]) is
    too wide to bound it there": the upper bound, 1.003, rounded onto the edge of [0, 1] it was cut to."""
    from laya_inspect.training.stats import bounded, cut_note

    agree = bounded({"mean": 0.94, "ci_low": 0.8812, "ci_high": 1.0031, "n": 3}, 0.0, 1.0)
    note = cut_note({"gradcam": agree}, "agreement", "[0, 1]", "its range", "seeds at 95%")
    assert note is not None and "gradcam [+0.88, +1.003]" in note, note


def test_a_difference_of_accuracies_whose_interval_leaves_minus_one_to_one_is_said_uninformative() -> None:
    """QA: 2 seeds printed "Δ acc vs last +0.153 [−1.435, +1.741]", bounds no difference of accuracies
    can take; the interval is said to be uninformative at so few seeds instead."""
    from laya_inspect.report.reading import est
    from laya_inspect.report.sections import fit_sections
    from laya_inspect.report.terminal import fit_table

    runs = [
        {"head": h, "seed": s, "test_acc": a, "test_macro_f1": a}
        for h, accs in (("laya", (0.55, 0.98)), ("last", (0.60, 0.62)), ("concat", (0.61, 0.64)))
        for s, a in enumerate(accs)
    ]
    heads = summary_to_jsonable(summarize_runs(runs, baseline="last"))
    wide, narrow = (heads[i]["delta_vs_last"]["test_acc"] for i in (0, 2))
    assert wide["ci_low"] < -1 and wide["ci_high"] > 1 and -1 < narrow["ci_low"] < narrow["ci_high"] < 1
    summary = {"heads": [{**h, "warnings": []} for h in heads], "quality": {"chance": 0.1}}
    text = " ".join(" ".join(str(c) for c in col._cells) for col in fit_table(summary, "t").columns)
    assert "uninformative at 2 seeds" in text and f"{wide['ci_low']:+.3f}" not in text
    assert est(narrow, 3, clip=False, sign=True, diff=True) in text  # a bounded interval keeps its bounds
    page = str(fit_sections(summary, []))
    assert "uninformative at 2 seeds" in page and f"{wide['ci_high']:+.3f}" not in page


def test_counted_says_one_without_a_plural() -> None:
    from laya_inspect.training.stats import counted

    assert [counted(n, "layer") for n in (0, 1, 2)] == ["0 layers", "1 layer", "2 layers"]


def test_counted_list_puts_the_noun_before_its_items() -> None:
    from laya_inspect.training.stats import counted_list

    assert counted_list("seed", [3]) == "seed 3"
    assert counted_list("seed", [0, 1]) == "seeds 0, 1"
    assert counted_list("seed", (s for s in (2, 5, 7))) == "seeds 2, 5, 7"  # any iterable, read once
    assert counted_list("seed", []) == "seeds —"
