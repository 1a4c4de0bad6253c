"""The constant rule (docs/METHOD.md, "The constant rule and paired differences"): one layer-weight
profile used for every input, the null every per-input attribution has to beat.

The profile is the mean, over half of the compared rows, of the head's own layer weights (α for a
LAYA head, the softmax weights for ScalarMix, which are already the same for every input) or, for a
head without weights, of |IG| (|Grad-CAM| when IG did not run). It is cross-fitted in two folds: the
rows are split in two halves by a seeded permutation, the profile fitted on one half scores the
rows of the other, and the other way round, so every row is scored by a profile that never saw it.
Pure functions of arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

FOLDS = 2
# where the profile comes from, in order of preference: the head's weights, else these methods' |scores|
SOURCE_METHODS = ("ig", "gradcam")


@dataclass(frozen=True)
class Constant:
    """The cross-fitted constant rule of one head: ``scores`` (N, L), row r holding the profile
    fitted on the fold r is not in; ``profiles`` (FOLDS, L), profile k fitted on every fold but k."""

    scores: np.ndarray
    profiles: np.ndarray
    fold: np.ndarray  # (N,) the fold of each row
    source: str  # "weights" | "|ig|" | "|gradcam|"
    seed: int

    def info(self, kind: str) -> dict[str, Any]:
        """JSON-able description for summary.json: what was fitted on what."""
        what = {"laya": "α", "scalarmix": "ScalarMix's softmax weights"}.get(kind, "the head's weights")
        return {
            "source": self.source,
            "what": f"the mean of {what if self.source == 'weights' else self.source}",
            "folds": FOLDS,
            "fold_sizes": np.bincount(self.fold, minlength=FOLDS).tolist(),
            "split_seed": self.seed,
            "profiles": self.profiles.tolist(),
            "cross_fitted": "profile k is fitted on the rows outside fold k and scores the rows of fold k",
        }


def folds(n: int, seed: int) -> np.ndarray:
    """(n,) fold of each row: a seeded permutation's first ⌊n/2⌋ rows are fold 0, the rest fold 1."""
    order = np.random.default_rng(seed).permutation(n)
    fold = np.zeros(n, dtype=np.int64)
    fold[order[n // 2 :]] = 1
    return fold


def source(weights: np.ndarray | None, scores: Mapping[str, np.ndarray]) -> tuple[str, np.ndarray] | None:
    """(name, (N, L) values the profile is the mean of), or None when the head has neither weights
    nor a method of :data:`SOURCE_METHODS`."""
    if weights is not None:
        return "weights", np.asarray(weights, dtype=np.float64)
    for m in SOURCE_METHODS:
        if m in scores:
            return f"|{m}|", np.abs(np.asarray(scores[m], dtype=np.float64))
    return None


def cross_fit(values: np.ndarray, fold: np.ndarray, seed: int, name: str) -> Constant:
    """The constant rule from ``values`` (N, L): profile k = mean of the finite rows outside fold k;
    row r is scored by the profile of its own fold (NaN where that profile has no row to fit)."""
    values = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(values).all(axis=1)
    profiles = np.full((FOLDS, values.shape[1]), np.nan)
    for k in range(FOLDS):
        fit = ok & (fold != k)
        if fit.any():
            profiles[k] = values[fit].mean(axis=0)
    return Constant(profiles[fold], profiles, fold, name, seed)


def constant_rule(weights: np.ndarray | None, scores: Mapping[str, np.ndarray], n: int, seed: int) -> Constant | None:
    """The head's constant rule on its ``n`` compared rows, or None without a source."""
    src = source(weights, scores)
    if src is None:
        return None
    return cross_fit(src[1], folds(n, seed), seed, src[0])
