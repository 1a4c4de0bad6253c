"""The tie-averaged deletion / insertion curves (``effects.tie_averaged_curves``) against the per-pattern
loop they replaced, on the same inputs in one run (docs/PERFORMANCE.md).

Row of the performance table printed here: 100,000 rows of L = 8 scores drawn from 4 values (so nearly
every row ties, in some thousands of distinct patterns), with a random table of the 2^8 masks' p, the
loop ÷ the vectorised function (the results are compared bit for bit first; a difference stops the run).

    python bench/tie_curves.py            # the table's sizes (a minute)
    python bench/tie_curves.py --smoke    # tiny sizes, seconds: checks that it runs
"""

from __future__ import annotations

import time
from itertools import combinations

import _bench
import numpy as np

from laya_inspect.compare.effects import tie_averaged_curves


def per_pattern_loop(
    scores: np.ndarray, table: np.ndarray, p_topk: np.ndarray, p_keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``tie_averaged_curves`` as it was until this change: a Python loop over the rows' distinct tie patterns
    and each k, one list of mask codes per (pattern, k). Kept as the reference the vectorised one
    must equal bit for bit (tests/test_compare_tie_curves.py)."""
    a = np.asarray(scores, dtype=np.float64)
    n, n_layers = a.shape
    out_d, out_k = p_topk.copy(), p_keep.copy()
    ordered = -np.sort(-a, axis=1)
    tied = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
    if not len(tied):
        return out_d, out_k
    bits = 1 << np.arange(n_layers)
    full = (1 << n_layers) - 1
    dense = (a[tied][:, :, None] < a[tied][:, None, :]).sum(axis=2)
    patterns, which = np.unique(dense, axis=0, return_inverse=True)
    for j, rank in enumerate(patterns):
        rows = tied[which.ravel() == j]
        order = np.sort(rank)
        for k in range(1, n_layers + 1):
            above, group = rank < order[k - 1], np.flatnonzero(rank == order[k - 1])
            base = int(bits[above].sum())
            codes = [base + int(bits[list(c)].sum()) for c in combinations(group, k - int(above.sum()))]
            out_d[rows, k - 1] = table[np.ix_(rows, codes)].mean(axis=1)
            out_k[rows, k - 1] = table[np.ix_(rows, [full ^ c for c in codes])].mean(axis=1)
    return out_d, out_k


def inputs(n: int, n_layers: int, levels: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Scores of ``levels`` distinct values, a (n, 2^L) table and untied curves, all seeded."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, levels, (n, n_layers)).astype(np.float64)
    return scores, rng.random((n, 1 << n_layers)), rng.random((n, n_layers)), rng.random((n, n_layers))


def main() -> None:
    args = _bench.parser(__doc__).parse_args()
    _bench.start(args, "tie-averaged curves: vectorised against the per-pattern loop")
    n, n_layers, levels = (2_000 if args.smoke else 100_000), 8, 4
    case = inputs(n, n_layers, levels)
    for old, new in zip(per_pattern_loop(*case), tie_averaged_curves(*case)):
        if not np.array_equal(old, new):
            raise SystemExit("the vectorised curves differ from the loop's: not timed")
    patterns = len(np.unique((case[0][:, :, None] < case[0][:, None, :]).sum(axis=2), axis=0))

    def timed(f):
        def run() -> float:
            t = time.perf_counter()
            f(*case)
            return time.perf_counter() - t

        return run

    times = _bench.interleave({"loop": timed(per_pattern_loop), "vectorised": timed(tie_averaged_curves)}, args.repeats)
    label = f"tie-curves-loop/vectorised [L={n_layers}, {n} rows, {levels} values, {patterns} tie patterns]"
    _bench.ratio(label, times["loop"], times["vectorised"], "identical results")


if __name__ == "__main__":
    main()
