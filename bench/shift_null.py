"""How often diagnose says the α profiles of two caches "differ for some heads only" when nothing is
shifted (docs/METHOD.md, "Shift"): both caches' α drawn from one distribution, m independent heads,
each head's p from diagnose's own permutation test, read by its own words (``profiles_verdict``). Before,
a head counted at p < 0.05 (the rate is printed beside: the share of runs with some but not every
p below 0.05); now at 0.05/m.

    python bench/shift_null.py            # 300 runs of 3 heads, 150 + 150 rows, 1,000 permutations (minutes)
    python bench/shift_null.py --smoke    # a few runs: checks that it runs
"""

from __future__ import annotations

import numpy as np
from _nulls import flags

from laya_inspect.beyond.diagnose import profiles_verdict
from laya_inspect.beyond.scoring import permutation_test


def main() -> None:
    runs, heads, n = (5 if flags(__doc__).smoke else 300), 3, 150
    now = before = 0
    for run in range(runs):
        rng = np.random.default_rng(run)
        classes = np.zeros(n, int)
        p = [
            permutation_test(rng.dirichlet(np.ones(4), n), rng.dirichlet(np.ones(4), n), classes, classes, 1, 1000, h)[
                "p_value"
            ]
            for h in range(heads)
        ]
        now += not profiles_verdict(p).startswith("no detectable difference")
        before += any(v < 0.05 for v in p)
    print(f"{heads} heads, nothing shifted: 'differ' in {now / runs:.3f} of {runs} runs ({before / runs:.3f} at 0.05)")


if __name__ == "__main__":
    main()
