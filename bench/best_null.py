"""How often compare marks a method "best" (the * in its tables) when no method is ahead in truth
(docs/METHOD.md, "Best"): the figures behind the family level of the leader-against-runner-up
intervals (laya_inspect/compare/paired.py, ``significant_best``).

Each method's per-row value of every score in BEST_METRICS is drawn from the same distribution (a
row effect every method shares, so the differences are paired, plus each method's own noise); the
constant rule sits far below, so its test never stops a star and the runner-up test alone decides.
A run is wrong when any score gets a star. ``--at-95`` draws every runner-up interval at 95%, as
before the family.

    python bench/best_null.py                  # 1,000 runs each for 2 and 3 methods (about a minute)
    python bench/best_null.py --at-95          # the same runs with every interval at 95%
    python bench/best_null.py --smoke          # a few runs, seconds: checks that it runs
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from _nulls import flags

from laya_inspect.compare import paired as P
from laya_inspect.compare.scores import BEST_METRICS
from laya_inspect.training.stats import family


def null_rows(rng: np.random.Generator, methods: Sequence[str], n: int) -> dict[str, dict[str, np.ndarray]]:
    """Per method (and "constant", 3 units lower), every score's (n,) per-row values, equal in truth."""
    shared = rng.normal(size=(n, 6))
    out = {}
    for m in (*methods, "constant"):
        v = shared + rng.normal(size=(n, 6)) - (3.0 if m == "constant" else 0.0)
        out[m] = {
            "faithfulness": np.tanh(0.3 * v[:, 0]),
            "subset_faithfulness": np.tanh(0.3 * v[:, 1]),
            "top_layer_agreement": (v[:, 2] > 0).astype(np.float64),
            "deletion_at_1": 1.0 + 0.5 * v[:, 3],
            "oracle_at_1": np.full(n, 2.0),
            "deletion_area": v[:, 4],
            "insertion_area": v[:, 5],
        }
    return out


def starred(run: int, methods: Sequence[str], n: int = 200, n_boot: int = 1000) -> bool:
    """Whether ``significant_best`` marks any score's leader best in null run ``run``."""
    rows = null_rows(np.random.default_rng(run), methods, n)
    means = {}
    for m in methods:
        means[m] = {k: float(np.mean(v)) for k, v in rows[m].items()}
        means[m]["deletion_at_1_over_oracle"] = means[m]["deletion_at_1"] / means[m]["oracle_at_1"]
    best, _ = P.significant_best(
        means, {m: rows[m] for m in methods}, {}, rows["constant"], BEST_METRICS, n_boot=n_boot, seed=run
    )
    return bool(best)


def main() -> None:
    args = flags(__doc__, at_95="the rule before the family correction: each lead at 95%")
    runs = 20 if args.smoke else 1000
    if args.at_95:
        P.family = lambda size, of: {**family(1, of), "size": size}  # type: ignore[assignment]
    for methods in (("alpha", "ig"), ("alpha", "ig", "gradcam")):
        rate = sum(starred(t, methods) for t in range(runs)) / runs
        print(f"{len(methods)} methods equal in truth, 200 rows, --bootstrap 1000: a * in {rate:.3f} of {runs} runs")


if __name__ == "__main__":
    main()
