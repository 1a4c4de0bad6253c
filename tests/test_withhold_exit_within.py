"""early-exit: a "beats" whose interval over seeds is far narrower than the shared test rows allow, but
whose rows' interval still excludes 0, stands and says the rows' width beside it, as diagnose's and
prune's verdicts do (on MobileNetV2 with 80 CIFAR-10 test rows, alpha − fixed −0.2310, 97.5% CI over 5
seeds [−0.2647, −0.1972], while the rows alone allowed ±0.0797, said nothing of it)."""

from __future__ import annotations

import numpy as np

from laya_inspect.beyond.exit_verdicts import exit_comparisons

RULES = ("fixed", "random", "confidence", "alpha", "confidence+alpha", "confidence+alpha_oracle")


def _comparisons(gained: int, lost: int) -> dict:
    """Three seeds whose confidence − random areas are +0.1400, +0.1401, +0.1402 on 200 shared test rows,
    ``gained`` rows won and ``lost`` rows lost by confidence on each seed."""
    areas = {r: [0.8, 0.8, 0.8] for r in RULES}
    areas["confidence"] = [0.94, 0.9401, 0.9402]
    base = np.full(200, 0.8)
    shares = {r: [base.copy() for _ in range(3)] for r in RULES}
    for i, a in enumerate(areas["confidence"]):
        d = np.zeros(200)
        d[:gained], d[gained : gained + lost] = 1.0, -1.0
        shares["confidence"][i] = base + d + (a - 0.8) - d.mean()
    return exit_comparisons(areas, [], {"epsilon": 0.05, "rows": 0, "oracle_rows": 0, "of": 200}, None, shares)


def test_a_verdict_the_rows_hold_but_read_wider_says_their_width():
    entry = _comparisons(30, 2)["confidence vs random"]
    rows = entry["test_rows"]
    assert rows["dominates"] and not rows["withheld"] and rows["ci_low"] > 0  # far wider, but above 0
    assert entry["verdict"].startswith("rule confidence beats random exit: +0.1401")
    said = f"; the 200 shared test rows alone allow ±{rows['half_width']:.4f} (paired over rows at the same level)"
    assert said in entry["verdict"] and entry["verdict"].endswith(
        "read the difference to within that (it still excludes 0)"
    )


def test_a_verdict_the_rows_read_no_wider_says_nothing_of_them():
    entry = _comparisons(0, 0)["confidence vs random"]  # every row's share moved alike: the rows allow no width
    assert not entry["test_rows"]["dominates"]
    assert entry["verdict"].startswith("rule confidence beats random exit: +0.1401")
    assert "shared test rows" not in entry["verdict"]
