"""A randomised head whose ranking runs against the trained one was said to have "kept" it.

Null audit (MobileNetV2 on CIFAR JPEGs): `alpha labels -.20 [-.27,-.14] partly kept`, and a check read
high at ρ −0.69 said the randomised head "keeps ρ −0.69". Below 0 the order is reversed, not kept: both
still fail (the attribution stays tied to the trained ranking), and the words now say which way."""

from __future__ import annotations

import numpy as np

from laya_inspect.compare import metrics as M
from laya_inspect.compare import sanity as S
from laya_inspect.report.reading import sanity_failed


def _rank(mean: float) -> M.Faithfulness:
    z = np.random.default_rng(1).normal(size=300)
    return M.summarise_rows(mean + 0.2 * (z - z.mean()) / z.std(), n_boot=1000, seed=0)


def test_a_partly_kept_check_below_0_is_said_inverted_and_one_above_is_not() -> None:
    below, above = _rank(-0.20), _rank(+0.20)
    assert S.verdict(below, 5) == S.verdict(above, 5) == "partly kept"  # 5 layers: a band of ±0.05
    assert below.ci_high < 0 < above.ci_low
    assert S.partly_kept(below, 5).endswith(f"; {S.INVERTED}")
    assert S.INVERTED not in S.partly_kept(above, 5)


def test_a_failed_check_below_0_reverses_the_ranking_rather_than_keeping_it() -> None:
    def summary(mean: float) -> dict:
        rank = _rank(mean)
        assert S.verdict(rank, 3) == "high"
        check = {"rank_correlation": rank.to_dict(), "faithfulness": rank.to_dict(), "verdict": "high", "passed": False}
        head = {"model": [{"step": "top", "methods": {"ig": check}}], "data": {"methods": {}}, "methods": ["ig"]}
        return {"sanity": {"choices": {"threshold": S.THRESHOLD}, "heads": {"laya": head}}}

    (reversed_,) = sanity_failed(summary(-0.7))
    (kept,) = sanity_failed(summary(+0.7))
    assert "ig on laya with " in reversed_ and " reverses ρ -0.7" in reversed_, reversed_
    assert " keeps ρ +0.7" in kept and "reverses" not in kept, kept
