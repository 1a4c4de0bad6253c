"""Faithfulness scores: pure functions of arrays (docs/METHOD.md, "Scores"). Shapes: N samples, L layers,
C classes; a (N, L) method scores, e (N, L) LOLO effects e_i = p − p_ablated_i; directions in
:data:`DIRECTIONS`. An undefined row (constant scores, tied effects) is counted in ``n_undefined`` and
left out of the mean and the bootstrap, never averaged in as 0.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

DIRECTIONS = {
    "faithfulness": "higher is better (mean Spearman ρ over valid rows, in [-1, 1]; 0 = no rank agreement)",
    "deletion_at_1": "higher is better (drop of p_c when the top-scored layer is ablated; "
    "oracle = ceiling, random = floor)",
    "deletion_curve": "higher is better at each k (drop of p_c when the top-k scored layers are ablated together)",
    "top_layer_agreement": "higher is better (share of samples whose top-scored layer has the largest effect, "
    "within the tie tolerance; a row with k layers tied at the top score earns the share of them that do)",
    "oracle_at_1": "reference: mean of max_i e_i (the best any method can reach at k=1)",
    "random_at_1": "reference: mean of mean_i e_i (expected Deletion@1 of a random ordering)",
    "subset_faithfulness": "higher is better (mean over valid rows of the Pearson r, across layer subsets S, "
    "between Σ_{i∈S} score_i and the drop of p_c when S is ablated together; in [-1, 1])",
    "deletion_at_1_over_oracle": "higher is better (Deletion@1 ÷ the oracle's; 1 = always the layer that matters most)",
    "deletion_area": "higher is better (mean of the Deletion@k curve over k = 1…L−1)",
    "insertion_curve": "higher is better at each k (p_c with only the top-k scored layers kept, the rest ablated)",
    "insertion_area": "higher is better (mean of the insertion curve over k = 1…L−1)",
    "near_tie_share": "share of rows whose effects are all within the tie tolerance (all), whose two largest "
    "effects are (top), or with any two effects tied (any); a high share means ρ mostly orders noise",
    "ig_delta_abs_mean": "lower is better (mean |Σ_i score_i − (f_c(x) − f_c(b))|, Captum's convergence delta)",
    "mean_effect": "larger = the head relies more on that layer (mean LOLO effect, probability units)",
    "accuracy": "higher is better (head accuracy on the compared rows)",
}


def directions(effect: str) -> dict[str, str]:
    """:data:`DIRECTIONS` in the units of ``effect``: "prob" (p_c) or "logit" (the target logit)."""
    if effect != "logit":
        return dict(DIRECTIONS)
    return {
        k: v.replace("p_c", "the target logit z_c").replace("probability units", "logit units")
        for k, v in DIRECTIONS.items()
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
    tie_tolerance: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check(a: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name} must be (N, L), got shape {a.shape}")
    return a


def finite(v: Any) -> float | None:
    """``v``, or None where it is undefined (NaN): an undefined score has no value and no interval."""
    return float(v) if v is not None and np.isfinite(v) else None


def finite_rows(*arrays: np.ndarray) -> np.ndarray:
    """(N,) bool: the rows where every one of ``arrays`` (each with N rows, of any shape) is finite."""
    ok = np.ones(len(arrays[0]), dtype=bool)
    for a in arrays:
        ok &= np.isfinite(a).all(axis=tuple(range(1, np.ndim(a))))
    return ok


def constant_rows(x: np.ndarray) -> np.ndarray:
    """(N,) bool: rows whose L values are all exactly equal (Spearman undefined)."""
    x = _check(x, "x")
    return np.all(x == x[:, :1], axis=1)


def tolerant_ranks(x: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """(N, L) average ranks (1 = smallest) per row, where values closer than ``tol`` are tied: the
    sorted row is cut wherever two neighbours differ by more than ``tol`` (single linkage), and
    each group gets the mean of its positions. ``tol = 0`` gives ``rankdata(method="average")``."""
    x = _check(x, "x")
    n, n_layers = x.shape
    if n_layers == 0:
        return x.copy()
    order = np.argsort(x, axis=1, kind="stable")
    xs = np.take_along_axis(x, order, axis=1)
    starts = np.concatenate([np.ones((n, 1), dtype=bool), np.diff(xs, axis=1) > tol], axis=1)
    group = np.cumsum(starts, axis=1) - 1 + (np.arange(n) * n_layers)[:, None]  # ids unique across rows
    pos = np.broadcast_to(np.arange(1, n_layers + 1, dtype=np.float64), (n, n_layers))
    total = np.bincount(group.ravel(), weights=pos.ravel(), minlength=n * n_layers)
    count = np.bincount(group.ravel(), minlength=n * n_layers)
    ranks = np.empty_like(xs)
    np.put_along_axis(ranks, order, (total[group] / np.maximum(count[group], 1)), axis=1)
    return ranks


def tied_rows(x: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """(N,) bool: rows whose L values all fall in one tie group (within ``tol`` of their neighbours)."""
    x = _check(x, "x")
    if x.shape[1] < 2:
        return np.ones(len(x), dtype=bool)
    return np.all(np.diff(np.sort(x, axis=1), axis=1) <= tol, axis=1)


def top_tied_rows(effects: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """(N,) bool: rows whose two largest values are within ``tol`` (the top layer is not determined)."""
    e = _check(effects, "effects")
    if e.shape[1] < 2:
        return np.zeros(len(e), dtype=bool)
    top2 = np.sort(e, axis=1)[:, -2:]
    return top2[:, 1] - top2[:, 0] <= tol


def near_ties(effects: np.ndarray, tol: float) -> dict[str, Any]:
    """Counts and shares of rows with every effect tied, with the top effect tied, and with any two
    effects tied, at ``tol`` (each tied pair changes what ρ can reach)."""
    e = _check(effects, "effects")
    n = len(e)
    gaps = np.diff(np.sort(e, axis=1), axis=1)
    counts = {
        "all": int(tied_rows(e, tol).sum()),
        "top": int(top_tied_rows(e, tol).sum()),
        "any": int((gaps <= tol).any(axis=1).sum()),
    }
    out: dict[str, Any] = {"tolerance": tol, "n_rows": n}
    for k, c in counts.items():
        out[f"{k}_tied_rows"] = c
        out[f"{k}_tied_share"] = c / n if n else None
    return out


def spearman_rows(scores: np.ndarray, effects: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """(N,) Spearman ρ between each row of ``scores`` and ``effects`` (average ranks; effects closer
    than ``tol`` tied); NaN where undefined."""
    a, e = _check(scores, "scores"), _check(effects, "effects")
    if a.shape != e.shape:
        raise ValueError(f"scores {a.shape} and effects {e.shape} differ in shape")
    from scipy.stats import rankdata

    return _correlation_rows(rankdata(a, axis=1), tolerant_ranks(e, tol), constant_rows(a) | tied_rows(e, tol))


def _correlation_rows(x: np.ndarray, y: np.ndarray, undefined: np.ndarray) -> np.ndarray:
    """(N,) Pearson r between each row of ``x`` and ``y``, NaN where ``undefined``, within [-1, 1]."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(1) / np.sqrt((xc**2).sum(1) * (yc**2).sum(1))
    r[undefined] = np.nan
    return np.clip(r, -1.0, 1.0)


def bootstrap_ci(
    values: np.ndarray, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of the mean of ``values`` over ``n_boot`` resamples; NaNs if empty or n_boot=0."""
    if len(values) == 0 or n_boot <= 0:
        return float("nan"), float("nan")
    means = resampled_means([values], n_boot=n_boot, seed=seed)[:, 0]
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


INDEX_DRAWS = 2_000_000  # the most row indices drawn at once: bounds the index array's memory


def resampled_means(columns: list[np.ndarray], *, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, k): the mean of each of the k equal-length ``columns`` over the same resampled rows."""
    cols = [np.asarray(c, dtype=np.float64) for c in columns]
    out = np.empty((n_boot, len(cols)))
    for start, stop, idx in index_chunks(len(cols[0]), n_boot, seed):
        for j, c in enumerate(cols):
            out[start:stop, j] = c[idx].mean(axis=1)
    return out


def index_chunks(n: int, n_boot: int, seed: Any) -> Iterator[tuple[int, int, np.ndarray]]:
    """(start, stop, row indices of resamples start … stop−1) from ``default_rng(seed)``, at most
    INDEX_DRAWS indices at a time; one chunk is :func:`resample_index`'s, drawn once per run."""
    step = max(1, INDEX_DRAWS // max(1, n))
    if 0 < n_boot <= step and isinstance(seed, (int, np.integer)):
        yield 0, n_boot, resample_index(n, n_boot, int(seed))
        return
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        yield start, stop, rng.integers(0, n, size=(stop - start, n))


@lru_cache(maxsize=4)  # a run's few keys (its rows, the sanity checks' rows); at most 4 × 16 MB kept
def resample_index(n: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n) row indices, ``default_rng(seed)``'s first draw: the resamples of every interval of a
    run over n rows. A compare run asks for the same few hundreds of times (each method, score and
    head, with its one seed), and drawing them took most of each interval's time; read-only, as shared."""
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    idx.flags.writeable = False
    return idx


def summarise_rows(
    values: np.ndarray, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95, tol: float = 0.0
) -> Faithfulness:
    """Mean of per-row correlations over the defined (non-NaN) rows, their counts and a bootstrap CI."""
    values = np.asarray(values, dtype=np.float64)
    valid = values[~np.isnan(values)]
    mean = float(valid.mean()) if len(valid) else float("nan")
    low, high = bootstrap_ci(valid, n_boot=n_boot, seed=seed, confidence=confidence)
    return Faithfulness(
        mean, low, high, int(len(valid)), int(len(values) - len(valid)), int(n_boot), int(seed), confidence, tol
    )


def faithfulness(
    scores: np.ndarray,
    effects: np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    tol: float = 0.0,
) -> Faithfulness:
    """Mean row-wise Spearman ρ over valid rows, their count, the undefined count, bootstrap CI. Higher is better."""
    rho = spearman_rows(scores, effects, tol)
    return summarise_rows(rho, n_boot=n_boot, seed=seed, confidence=confidence, tol=tol)


def subset_sums(scores: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """(N, M) Σ_{i∈S_m} score_i for each subset mask ``subsets`` (M, L) bool."""
    return _check(scores, "scores") @ np.asarray(subsets, dtype=np.float64).T


def pearson_rows(x: np.ndarray, y: np.ndarray, tol_y: float = 0.0) -> np.ndarray:
    """(N,) Pearson r between rows of ``x`` and ``y``; NaN where ``x`` is constant or ``y`` spans ≤ ``tol_y``."""
    x, y = _check(x, "x"), _check(y, "y")
    if x.shape != y.shape:
        raise ValueError(f"x {x.shape} and y {y.shape} differ in shape")
    if x.shape[1] < 2:
        return np.full(len(x), np.nan)
    return _correlation_rows(x, y, constant_rows(x) | (y.max(axis=1) - y.min(axis=1) <= tol_y))


def subset_faithfulness(
    scores: np.ndarray,
    subsets: np.ndarray,
    subset_effects: np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    tol: float = 0.0,
) -> Faithfulness:
    """Mean over valid rows of the Pearson r, across the subsets (M, L), between the summed scores
    and ``subset_effects`` (N, M) = p − p(x with S_m ablated together). Higher is better."""
    r = pearson_rows(subset_sums(scores, subsets), subset_effects, tol)
    return summarise_rows(r, n_boot=n_boot, seed=seed, tol=tol)


def one_hot_top(effects: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """(N, L) the top-1-only reference: 1 on the largest effect, and on any effect tied with it
    (within ``tol``), 0 elsewhere: all that knowing the top layer tells."""
    e = _check(effects, "effects")
    if e.shape[1] == 0:
        return e.copy()
    return (e >= e.max(axis=1, keepdims=True) - tol).astype(np.float64)


def top_order(scores: np.ndarray) -> np.ndarray:
    """(N, L) layer indices by descending score; ties → lower layer index first: an order to measure
    curves along, never a ranking to credit (a caller reading the first place as a win shares it among
    the tied layers: :func:`top_layer_agreement`, :func:`deletion_at_k`, effects.tie_averaged_curves)."""
    return np.argsort(-_check(scores, "scores"), axis=1, kind="stable")


def tied_top_rows(scores: np.ndarray) -> np.ndarray:
    """(N,) bool: rows where more than one layer shares the top score."""
    a = _check(scores, "scores")
    return (a == a.max(axis=1, keepdims=True)).sum(axis=1) > 1


def deletion_at_k(scores: np.ndarray, p: np.ndarray, p_ablated: np.ndarray) -> np.ndarray:
    """(N,) Deletion@1 per sample: p − p(x with the top-scored layer ablated), from the single-layer
    LOLO ablations ``p_ablated`` (N, L). Where several layers share the row's top score exactly (the
    ties :func:`top_layer_agreement` shares its credit among), the mean of their drops: the expected
    Deletion@1 of a uniform pick among them, not the shallowest one's. Higher is better; its mean is
    the reported value."""
    a, pa = _check(scores, "scores"), _check(p_ablated, "p_ablated")
    if a.shape != pa.shape:
        raise ValueError(f"scores {a.shape} and p_ablated {pa.shape} differ in shape")
    top = a == a.max(axis=1, keepdims=True)
    drop = np.asarray(p, dtype=np.float64)[:, None] - pa
    return np.where(top, drop, 0.0).sum(axis=1) / top.sum(axis=1)


def deletion_curve(p: np.ndarray, p_topk: np.ndarray) -> np.ndarray:
    """(L,) mean over samples of p − p_topk[:, k−1], k = 1…L. Higher is better."""
    return (np.asarray(p, dtype=np.float64)[:, None] - _check(p_topk, "p_topk")).mean(axis=0)


def oracle_at_1(effects: np.ndarray) -> np.ndarray:
    """(N,) max_i e_i: the best Deletion@1 any ordering reaches for each sample."""
    return _check(effects, "effects").max(axis=1)


def random_at_1(effects: np.ndarray) -> np.ndarray:
    """(N,) mean_i e_i: the expected Deletion@1 of a uniformly random ordering."""
    return _check(effects, "effects").mean(axis=1)


def top_layer_agreement(scores: np.ndarray, effects: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """(N,) credit in [0, 1]: the share of the row's top-scored layers (every layer whose score equals
    the row's largest exactly) whose effect is within ``tol`` of the largest effect (``tol = 0``: equal
    to it). One top-scored layer: 1 or 0. k tied ones: the expected credit of a uniform pick among
    them, 1/k when one of them holds the largest effect, so a row whose scores all tie earns what a
    random pick earns, not the credit of its shallowest layer. Its mean is the share."""
    a, e = _check(scores, "scores"), _check(effects, "effects")
    top = a == a.max(axis=1, keepdims=True)
    hit = e >= e.max(axis=1, keepdims=True) - tol
    return (top & hit).sum(axis=1) / top.sum(axis=1)


def insertion_curve(p_keep: np.ndarray) -> np.ndarray:
    """(L,) mean over samples of p(x with only its top-k layers kept), k = 1…L. Higher is better."""
    return _check(p_keep, "p_keep").mean(axis=0)


def curve_area(curve: np.ndarray) -> float:
    """Mean of a k = 1…L curve over k = 1…L−1 (k = L removes or keeps every layer: the same for
    every order); NaN when L < 2."""
    c = np.asarray(curve, dtype=np.float64)
    return float(c[:-1].mean()) if len(c) >= 2 else float("nan")


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
    scores: np.ndarray, effects: np.ndarray, classes: np.ndarray, num_classes: int, tol: float = 0.0
) -> dict[str, list]:
    """Per class: mean ρ over valid rows (no bootstrap), n_valid, n_undefined."""
    rho = spearman_rows(scores, effects, tol)
    per = [rho[np.asarray(classes) == c] for c in range(num_classes)]
    valid = [r[~np.isnan(r)] for r in per]
    return {
        "mean": [float(v.mean()) if len(v) else float("nan") for v in valid],
        "n_valid": [len(v) for v in valid],
        "n_undefined": [len(r) - len(v) for r, v in zip(per, valid)],
    }
