"""How often diagnose says some predicted class's α profile shifted when nothing is shifted
(docs/METHOD.md, "Shift"): both caches' α drawn from one distribution, 10 predicted classes, each
head's per-class p from diagnose's own permutation test, read by its own words (``shifted_classes``).
Before, no sentence read the classes: a reader scanning shift_by_class.csv's raw p (the rate printed
beside: some class's raw p below 0.05) met a false "shifted".

    python bench/class_shift_null.py            # 400 runs of 3 heads, 300 + 300 rows, 1,000 permutations (minutes)
    python bench/class_shift_null.py --smoke    # a few runs: checks that it runs
"""

from __future__ import annotations

import numpy as np
from _nulls import flags

from laya_inspect.beyond.scoring import permutation_test, shifted_classes


def main() -> None:
    runs, heads, n, classes = (3 if flags(__doc__).smoke else 400), 3, 300, 10
    said = {1: 0, heads: 0}
    names = [{"head_dir": f"heads/laya/seed_{h}"} for h in range(heads)]
    raw = {1: 0, heads: 0}
    for run in range(runs):
        rng = np.random.default_rng(run)
        pred = np.arange(n) % classes
        perms = [
            permutation_test(rng.dirichlet(np.ones(4), n), rng.dirichlet(np.ones(4), n), pred, pred, classes, 1000, h)
            for h in range(heads)
        ]
        for m in said:
            line = (
                shifted_classes({"heads": names[:m], "shift": {"heads": [{"permutation": p} for p in perms[:m]]}}) or ""
            )
            said[m] += any(f" {k} of" in line for k in range(1, classes + 1))
            raw[m] += any(c["p_value"] < 0.05 for p in perms[:m] for c in p["per_class"])
    for m in said:
        print(
            f"{m} head(s), {classes} classes, nothing shifted: some class 'shifted' in {said[m] / runs:.3f} of "
            f"{runs} runs (some raw p < 0.05: {raw[m] / runs:.3f})"
        )


if __name__ == "__main__":
    main()
