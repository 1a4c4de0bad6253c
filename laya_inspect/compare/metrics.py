"""Faithfulness scores: pure functions of arrays (docs/METHOD.md, "Scores"). Shapes: N samples, L layers, C classes.

Inputs: method scores a (N, L), LOLO effects e (N, L) with e_i = p − p_ablated_i, p (N,),
p_ablated (N, L), and for curves p_topk (N, L) = p with the top-k layers ablated together (k = 1…L).

Direction of each metric (also written into every summary): see :data:`DIRECTIONS`.

Policies:
* Spearman ρ per row, average ranks for ties (equal to ``scipy.stats.spearmanr`` row by row). A row
  whose scores or effects are all exactly equal is undefined: counted in ``n_undefined``, excluded
  from the mean and the bootstrap, never averaged in as 0.
* Top-scored layer / top-k order: descending score, ties broken by the lower layer index (stable).
* Bootstrap: percentile interval of the mean over ``n_boot`` resamples (with replacement) of the
  valid rows, ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import rankdata

DIRECTIONS = {
    "faithfulness": "higher is better (mean Spearman ρ over valid rows, in [-1, 1]; 0 = no rank agreement)",
    "deletion_at_1": "higher is better (drop of p_c when the top-scored layer is ablated; "
    "oracle = ceiling, random = floor)",
    "deletion_curve": "higher is better at each k (drop of p_c when the top-k scored layers are ablated together)",
    "top_layer_agreement": "higher is better (share of samples whose top-scored layer is the top-effect layer)",
    "oracle_at_1": "reference: mean of max_i e_i (the best any method can reach at k=1)",
    "random_at_1": "reference: mean of mean_i e_i (expected Deletion@1 of a random ordering)",
    "ig_delta_abs_mean": "lower is better (mean |Σ_i score_i − (f_c(x) − f_c(b))|, Captum's convergence delta)",
    "mean_effect": "larger = the head relies more on that layer (mean LOLO effect, probability units)",
    "accuracy": "higher is better (head accuracy on the compared rows)",
}


@dataclass(frozen=True)
class Faithfulness:
    mean: float  # NaN when no row is valid
    ci_low: float
    ci_high: float
    n_valid: int
    n_undefined: int
    n_boot: int
    seed: int
    confidence: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check(a: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name} must be (N, L), got shape {a.shape}")
    return a


def constant_rows(x: np.ndarray) -> np.ndarray:
    """(N,) bool: rows whose L values are all exactly equal (Spearman undefined)."""
    x = _check(x, "x")
    return np.all(x == x[:, :1], axis=1)


def spearman_rows(scores: np.ndarray, effects: np.ndarray) -> np.ndarray:
    """(N,) Spearman ρ between each row of ``scores`` and ``effects`` (average ranks); NaN where undefined."""
    a, e = _check(scores, "scores"), _check(effects, "effects")
    if a.shape != e.shape:
        raise ValueError(f"scores {a.shape} and effects {e.shape} differ in shape")
    ra = rankdata(a, method="average", axis=1)
    re = rankdata(e, method="average", axis=1)
    ra -= ra.mean(axis=1, keepdims=True)
    re -= re.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (ra * re).sum(1) / np.sqrt((ra**2).sum(1) * (re**2).sum(1))
    rho[constant_rows(a) | constant_rows(e)] = np.nan
    return np.clip(rho, -1.0, 1.0)


def bootstrap_ci(
    values: np.ndarray, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of the mean of ``values`` over ``n_boot`` resamples; NaNs if empty or n_boot=0."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0 or n_boot <= 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    step = max(1, 2_000_000 // len(values))  # bound the index array's memory
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        means[start:stop] = values[rng.integers(0, len(values), size=(stop - start, len(values)))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def faithfulness(
    scores: np.ndarray, effects: np.ndarray, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
) -> Faithfulness:
    """Mean row-wise Spearman ρ over valid rows, their count, the undefined count, bootstrap CI. Higher is better."""
    rho = spearman_rows(scores, effects)
    valid = rho[~np.isnan(rho)]
    mean = float(valid.mean()) if len(valid) else float("nan")
    low, high = bootstrap_ci(valid, n_boot=n_boot, seed=seed, confidence=confidence)
    return Faithfulness(
        mean, low, high, int(len(valid)), int(len(rho) - len(valid)), int(n_boot), int(seed), confidence
    )


def top_order(scores: np.ndarray) -> np.ndarray:
    """(N, L) layer indices by descending score; ties → lower layer index first."""
    return np.argsort(-_check(scores, "scores"), axis=1, kind="stable")


def top_layer(scores: np.ndarray) -> np.ndarray:
    """(N,) index of the top-scored layer (first of ties)."""
    return np.argmax(_check(scores, "scores"), axis=1)


def tied_top_rows(scores: np.ndarray) -> np.ndarray:
    """(N,) bool: rows where more than one layer shares the top score."""
    a = _check(scores, "scores")
    return (a == a.max(axis=1, keepdims=True)).sum(axis=1) > 1


def deletion_at_k(scores: np.ndarray, p: np.ndarray, p_ablated: np.ndarray) -> np.ndarray:
    """(N,) Deletion@1 per sample: p − p(x with the top-scored layer ablated), from the single-layer
    LOLO ablations ``p_ablated`` (N, L). Higher is better; its mean is the reported value."""
    pa = _check(p_ablated, "p_ablated")
    top = top_layer(scores)
    return np.asarray(p, dtype=np.float64) - pa[np.arange(len(pa)), top]


def deletion_curve(p: np.ndarray, p_topk: np.ndarray) -> np.ndarray:
    """(L,) mean over samples of p − p_topk[:, k−1], k = 1…L. Higher is better."""
    return (np.asarray(p, dtype=np.float64)[:, None] - _check(p_topk, "p_topk")).mean(axis=0)


def oracle_at_1(effects: np.ndarray) -> np.ndarray:
    """(N,) max_i e_i: the best Deletion@1 any ordering reaches for each sample."""
    return _check(effects, "effects").max(axis=1)


def random_at_1(effects: np.ndarray) -> np.ndarray:
    """(N,) mean_i e_i: the expected Deletion@1 of a uniformly random ordering."""
    return _check(effects, "effects").mean(axis=1)


def top_layer_agreement(scores: np.ndarray, effects: np.ndarray) -> np.ndarray:
    """(N,) bool: argmax scores == argmax effects (first of ties on both sides). Its mean is the share."""
    return top_layer(scores) == top_layer(effects)


def _nanmean(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
    return float(x.mean()) if len(x) else float("nan")


def per_class(values: np.ndarray, classes: np.ndarray, num_classes: int) -> np.ndarray:
    """Mean of ``values`` (N, …) per class, NaNs ignored; (C, …), NaN where a class has no sample."""
    values = np.asarray(values, dtype=np.float64)
    classes = np.asarray(classes)
    out = np.full((num_classes,) + values.shape[1:], np.nan)
    for c in range(num_classes):
        rows = values[classes == c]
        if len(rows):
            with warnings.catch_warnings():  # all-NaN columns stay NaN without "mean of empty slice"
                warnings.simplefilter("ignore", RuntimeWarning)
                out[c] = np.nanmean(rows, axis=0)
    return out


def per_class_faithfulness(
    scores: np.ndarray, effects: np.ndarray, classes: np.ndarray, num_classes: int
) -> dict[str, list]:
    """Per class: mean ρ over valid rows (no bootstrap), n_valid, n_undefined."""
    rho = spearman_rows(scores, effects)
    classes = np.asarray(classes)
    means, n_valid, n_undef = [], [], []
    for c in range(num_classes):
        r = rho[classes == c]
        means.append(_nanmean(r))
        n_valid.append(int((~np.isnan(r)).sum()))
        n_undef.append(int(np.isnan(r).sum()))
    return {"mean": means, "n_valid": n_valid, "n_undefined": n_undef}
