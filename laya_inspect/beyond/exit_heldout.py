"""Cross-fitted operating points of early exit (docs/METHOD.md, "Early exit", held-out area).

Each rule's in-sample area picks, for each compute budget c, the best of its thresholds on the rows it
then scores them on. Here the test rows are split into two folds balanced by label; for each budget c
the threshold is chosen on one fold (best accuracy there among those with compute ≤ c there, the
in-sample frontier's choice) and scored on the other; both directions, weighted by the rows scored, so
each test row is scored once, by a threshold chosen without it. Pure functions of arrays.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

FOLD_STREAM = 10  # default_rng([seed, refit seed, 10]): the two folds
# A fold both chooses each budget's threshold and scores the other fold's choice: below this many
# rows its accuracy moves in steps above 0.02, as coarse as the area differences the verdicts read.
MIN_FOLD_ROWS = 50
HELD_OUT_HOW = (
    "held-out area (cross-fitted operating points): the test rows are split into two folds balanced by label "
    "(default_rng([seed, refit seed, 10]), per seed); for each compute budget c the threshold with the best "
    "accuracy among those with compute ≤ c is chosen on one fold and its accuracy taken on the other, averaged "
    "over c as the in-sample area is, then the folds swap; the two are weighted by the rows scored (each test "
    "row counted once). A threshold chosen within c on one fold may run more than c on the other: its accuracy "
    "counts regardless, and the mean excess over c is `compute_overshoot`"
)


def small_folds(fold_sizes: Sequence[Sequence[int]]) -> str | None:
    """A warning when a fold (of any seed) has fewer than MIN_FOLD_ROWS rows, or None."""
    smallest = min(min(sizes) for sizes in fold_sizes)
    if smallest >= MIN_FOLD_ROWS:
        return None
    return (
        f"the held-out areas split the test rows into two folds, the smaller of {smallest} rows (fewer than "
        f"{MIN_FOLD_ROWS}): a fold's accuracy moves in steps of {1 / max(smallest, 1):.3f}, so its thresholds "
        "are chosen, and the other fold's scored, too coarsely to read the differences between rules; use a "
        "larger test split"
    )


def two_folds(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(N,) bool, True for fold A: each label's rows shuffled, then dealt alternately to A and B along
    the labels in turn, so each label's count and the total differ between the folds by at most 1."""
    labels = np.asarray(labels)
    order = np.concatenate([rng.permutation(np.flatnonzero(labels == c)) for c in np.unique(labels)])
    fold = np.zeros(len(labels), dtype=bool)
    fold[order[0::2]] = True
    return fold


def crossfit_area(
    used_a: Sequence[float],
    acc_a: Sequence[float],
    used_b: Sequence[float],
    acc_b: Sequence[float],
    lo: float,
    hi: float,
) -> tuple[float, float]:
    """(area, overshoot): the mean over budgets c ∈ [lo, hi] of the fold-B accuracy of the point chosen
    on fold A (the best fold-A accuracy with fold-A compute ≤ c; ties to the lower fold-A compute, then
    the earlier point; 0 where none is within c; with A = B, :func:`~.early_exit.frontier_area`), and the
    mean over c of max(0, its fold-B compute − c). Point i is the same threshold in both folds."""
    ub, ab = np.asarray(used_b, float), np.asarray(acc_b, float)
    area = over = 0.0
    for i, x0, x1 in _spans(used_a, acc_a, lo, hi):
        area += float(ab[i]) * (x1 - x0)
        if x1 <= x0:  # one budget (hi <= lo): the best fold-A point overall
            return float(ab[i]), max(0.0, float(ub[i]) - hi)
        top = min(x1, float(ub[i]))  # ∫ max(0, b − c) dc over [x0, x1], exactly (float noise of a mean: none)
        if top > x0 + 1e-12:
            over += ((ub[i] - x0) ** 2 - (ub[i] - top) ** 2) / 2
    if hi <= lo:  # no point at all
        return 0.0, 0.0
    return area / (hi - lo), float(over) / (hi - lo)


def choice_weights(used_a: Sequence[float], acc_a: Sequence[float], lo: float, hi: float) -> np.ndarray:
    """(P,) the share of budgets c ∈ [lo, hi] at which fold A chooses each point (:func:`crossfit_area`'s
    choice), so that its area is ``choice_weights(used_a, acc_a, lo, hi) @ acc_b``: the same weights on
    each fold-B row's 0/1 answers give that row's own share of the area (the test rows' sampling of it)."""
    w = np.zeros(len(used_a))
    for i, x0, x1 in _spans(used_a, acc_a, lo, hi):
        w[i] += 1.0 if x1 <= x0 else (x1 - x0) / (hi - lo)
    return w


def _spans(used_a: Sequence[float], acc_a: Sequence[float], lo: float, hi: float) -> Iterator[tuple[int, float, float]]:
    """(point chosen on fold A, x0, x1) for each span [x0, x1) of budgets over which the choice is
    constant, none where no point is within budget; one (i, hi, hi) when hi <= lo."""
    ua, aa = np.asarray(used_a, float), np.asarray(acc_a, float)
    if hi <= lo:
        i = _choose(ua, aa, np.inf)
        if i is not None:
            yield i, hi, hi
        return
    xs = np.unique(np.clip(np.concatenate([ua, [lo, hi]]), lo, hi))
    for x0, x1 in zip(xs[:-1], xs[1:]):
        i = _choose(ua, aa, x0 + 1e-12)
        if i is not None:
            yield i, float(x0), float(x1)


def _choose(used: np.ndarray, acc: np.ndarray, budget: float) -> int | None:
    within = np.flatnonzero(used <= budget)
    if not len(within):
        return None
    best = within[acc[within] >= acc[within].max()]
    return int(best[np.lexsort((best, used[best]))[0]])


def held_out(
    fold_a: tuple[Sequence[float], Sequence[float], int],
    fold_b: tuple[Sequence[float], Sequence[float], int],
    lo: float,
    hi: float,
) -> tuple[float, float]:
    """(held-out area, mean compute overshoot) from each fold's (compute, accuracy) per point and its
    row count: chosen on A scored on B and chosen on B scored on A, weighted by the rows scored."""
    (ua, aa, na), (ub, ab, nb) = fold_a, fold_b
    area_ab, over_ab = crossfit_area(ua, aa, ub, ab, lo, hi)
    area_ba, over_ba = crossfit_area(ub, ab, ua, aa, lo, hi)
    n = na + nb
    return (nb * area_ab + na * area_ba) / n, (nb * over_ab + na * over_ba) / n
