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
