"""diagnose over several heads: an AUROC's "below chance" is read beside the test rows' own sampling,
as its differences from msp are. Two heads that agree on 0.470 and 0.471 give a t-interval over heads
under ½ (1 degree of freedom, but hardly any spread), while each head's own bootstrap interval over its
200 shared test rows holds ½: that is not a score shown below chance."""

from __future__ import annotations

from typing import Any

from laya_inspect.beyond.diagnose import _pool_errors
from laya_inspect.beyond.scoring import versus_chance


def _head(entropy: float, half: float) -> dict[str, Any]:
    def auc(m: float) -> dict[str, Any]:
        return {"mean": m, "ci_low": m - half, "ci_high": m + half}

    return {
        "auroc": {"msp": auc(0.75), "alpha_entropy": auc(entropy)},
        "aupr": {"msp": auc(0.4), "alpha_entropy": auc(0.2)},
        "diff_vs_msp": {"alpha_entropy − msp": {"mean": entropy - 0.75, "ci_low": -0.4, "ci_high": -0.2}},
        "n_test": 200,
    }


def test_below_chance_over_agreeing_heads_is_withheld_where_each_heads_rows_hold_one_half():
    heads = [_head(0.470, 0.1), _head(0.471, 0.1)]
    pooled = _pool_errors(heads, 200)["auroc"]["alpha_entropy"]
    assert pooled["ci_high"] < 0.5  # the interval over the two heads lies under ½
    assert pooled["below_chance"] is False
    rows = pooled["chance_withheld"]
    assert rows["heads"] == 2 and rows["rows"] == 200 and rows["ci_low"] < 0.5 < rows["ci_high"]
    said = versus_chance({"alpha_entropy": pooled}, ["alpha_entropy"], "errors", [h["auroc"] for h in heads])
    assert "not read as below chance" in said and "below chance (the whole AUROC interval" not in said


def test_below_chance_stands_where_each_heads_rows_lie_under_one_half_too():
    heads = [_head(0.370, 0.05), _head(0.371, 0.05)]
    pooled = _pool_errors(heads, 200)["auroc"]["alpha_entropy"]
    assert pooled["below_chance"] is True and "chance_withheld" not in pooled
    said = versus_chance({"alpha_entropy": pooled}, ["alpha_entropy"], "errors", [h["auroc"] for h in heads])
    assert "alpha_entropy below chance (the whole AUROC interval under 0.5" in said
