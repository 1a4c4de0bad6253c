"""How often diagnose's scores-vs-msp family calls a wrong verdict when the test rows hold k errors
(docs/METHOD.md, "Too few errors"): the figures behind MIN_OUTCOME_ROWS (laya_inspect/beyond/scoring.py).

Every score has the same distribution (independent normal noise, the k errors shifted by ``shift`` on
every score), so any difference interval that excludes 0 is a wrong verdict; a run is wrong when any
of the four differences from msp is, each drawn at 1 − 0.05/4 over --bootstrap 1000 row resamples.

    python bench/few_errors_null.py                 # the METHOD.md table (about 10 minutes on one core)
    python bench/few_errors_null.py --smoke         # a few runs, seconds: checks that it runs
    python bench/few_errors_null.py --family        # 90 errors of 300 rows, 2,000 runs: the family's rate
                                                    # well above the minimum (METHOD.md, "Families of
                                                    # comparisons"; about 10 minutes on one core)
"""

from __future__ import annotations

import numpy as np
from _nulls import flags

from laya_inspect.beyond.scoring import versus_msp

SCORES = ("msp", "alpha_entropy", "alpha_divergence", "alpha", "msp+alpha")


def wrong_share(k: int, *, n: int, runs: int, shift: float, n_boot: int = 1000) -> float:
    wrong = 0
    for run in range(runs):
        rng = np.random.default_rng(run)
        y = np.zeros(n, bool)
        y[:k] = True
        scores = {s: rng.normal(size=n) + shift * y for s in SCORES}
        diffs = versus_msp(y, scores, n_boot=n_boot, seed=run, settle=False, of="null")["diff_vs_msp"]
        wrong += any(d["ci_low"] is not None and (d["ci_low"] > 0 or d["ci_high"] < 0) for d in diffs.values())
    return wrong / runs


def main() -> None:
    args = flags(__doc__, family="90 errors of 300 rows, 2,000 runs: the family's rate well above the minimum")
    smoke = args.smoke
    if args.family:
        runs = 3 if smoke else 2000
        share = wrong_share(90, n=300, runs=runs, shift=0.0, n_boot=100 if smoke else 1000)
        print(f"errors  90 of 300, shift 0 SD: wrong verdict in {share:.2%} of {runs} runs")
        return
    plan = [(0.0, 200, (1, 2, 3, 5, 10, 15, 20)), (1.0, 100, (1, 2, 5, 10, 20, 30, 50))]
    for shift, runs, ks in plan:
        for k in ks[:2] if smoke else ks:
            share = wrong_share(k, n=300, runs=3 if smoke else runs, shift=shift, n_boot=100 if smoke else 1000)
            print(f"errors {k:>3}, shift {shift:g} SD: wrong verdict in {share:.1%} of {3 if smoke else runs} runs")


if __name__ == "__main__":
    main()
