"""Paired differences between two attributions scored on the same rows, and the cross-fitted constant
rule (docs/METHOD.md, "The constant rule and paired differences"): pure functions of per-row arrays.

Each resample draws one set of rows and takes both sides on it, so the interval reflects how the two
differ row by row; the resamples are :func:`.metrics.resampled_means`, so the paired interval of ``a``
against zeros is ``bootstrap_ci(a)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..choices import MIN_ROWS, TIE_TOLERANCE
from ..options import MAX_RESAMPLES
from ..training.stats import family
from . import metrics as M
from .records import NOT_APPLICABLE, score_value

if TYPE_CHECKING:
    from .effects import Measured

FOLDS = 2
# resamples × rows an interval may draw when it draws more resamples to settle a bound near 0 (≈ 5 s)
MAX_DRAWS = 500_000_000
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


# which comparisons the leader-against-runner-up intervals behind "best" are a family of
BEST_FAMILY = "scores a best method is marked on"
# the three headline scores a verdict against the constant rule is read from
HEADLINE = ("top_layer_agreement", "deletion_at_1_over_oracle", "faithfulness")
# "beats" needs one of the three intervals above 0: at 95% each, a method no better than the rule
# beat it in 8% of simulated runs (three independent scores), so each is drawn at 1 − 0.05/3
# (Bonferroni), which holds the chance of a wrong verdict over the three together to 5%.
VERDICT_CONFIDENCE = 1 - 0.05 / len(HEADLINE)


@dataclass(frozen=True)
class Paired:
    """mean(a − b) (÷ mean(denominator) for a ratio score) over the ``n`` rows both sides share,
    with its percentile bootstrap interval (NaN without rows or resamples) over ``n_boot`` resamples
    (more than asked where a bound lay within resampling error of 0: :func:`unsettled`)."""

    mean: float
    ci_low: float
    ci_high: float
    n: int
    n_boot: int
    seed: int
    confidence: float = 0.95

    @property
    def above(self) -> bool:
        """The interval lies above 0: a is better than b."""
        return bool(self.ci_low > 0)

    @property
    def below(self) -> bool:
        return bool(self.ci_high < 0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_difference(
    a: np.ndarray,
    b: np.ndarray,
    *,
    denominator: np.ndarray | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Paired:
    """a − b, row by row, on the rows where both (and ``denominator``) are finite: the mean
    difference (÷ the mean denominator when given, e.g. Deletion@1 ÷ oracle) and its paired
    bootstrap interval. Positive: a scores higher than b."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"a {a.shape} and b {b.shape} must be two (N,) arrays")
    ok = np.isfinite(a) & np.isfinite(b)
    den = None if denominator is None else np.asarray(denominator, dtype=np.float64)
    if den is not None:
        ok &= np.isfinite(den)
    d = (a - b)[ok]
    n = int(len(d))
    tail = (1 - confidence) / 2 * 100
    nan = float("nan")

    def ratio(num: np.ndarray, dd: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(dd > 0, num / np.where(dd > 0, dd, 1.0), np.nan)

    if n == 0:
        return Paired(nan, nan, nan, 0, int(n_boot), int(seed), confidence)
    if den is None:
        mean = float(d.mean())
    else:
        mean = float(ratio(np.array(d.mean()), np.array(den[ok].mean())))

    def resampled(k: int) -> np.ndarray:
        if k <= 0:
            return np.zeros(0)
        if den is None:
            return M.resampled_means([d], n_boot=k, seed=seed)[:, 0]
        boot = M.resampled_means([d, den[ok]], n_boot=k, seed=seed)
        return ratio(boot[:, 0], boot[:, 1])

    drawn = int(n_boot)
    stats = resampled(drawn)
    while unsettled(stats[np.isfinite(stats)], tail) and drawn * 10 <= MAX_RESAMPLES and drawn * 10 * n <= MAX_DRAWS:
        drawn *= 10  # the first draws are the same: the same seed's stream, extended
        stats = resampled(drawn)
    stats = stats[np.isfinite(stats)]
    if not len(stats):
        return Paired(mean, nan, nan, n, drawn, int(seed), confidence)
    low, high = np.percentile(stats, [tail, 100 - tail])
    return Paired(mean, float(low), float(high), n, drawn, int(seed), confidence)


def unsettled(stats: np.ndarray, tail: float) -> bool:
    """0 lies within the resampling error of a percentile bound: the order statistics that hold the
    bound's true quantile with 95% confidence (binomial, normal approximation) lie on both sides of 0,
    so another draw of as many resamples could give the bound the other sign (QA: α − constant's
    lower bound −0.0003 at 1000 resamples, +0.0008 at 2000)."""
    b = len(stats)
    if b < 2:
        return False
    ordered = np.sort(stats)

    def around(q: float) -> tuple[float, float]:
        half = 1.96 * math.sqrt(b * q * (1 - q))
        return ordered[max(0, math.floor(b * q - half))], ordered[min(b - 1, math.ceil(b * q + half))]

    # the lower bound decides "above 0" (> 0), the upper one "below 0" (< 0): a bound pinned at exactly
    # 0 (a difference ≥ 0 on every row) is neither, and more resamples cannot move it
    (lo, hi), (lo2, hi2) = around(tail / 100), around(1 - tail / 100)
    return bool(lo <= 0 < hi or lo2 < 0 <= hi2)


def verdict(diffs: dict[str, Paired | None]) -> str:
    """A key of :data:`.records.VERDICTS` from the paired differences method − constant of the headline
    scores: "beats" when at least one interval lies above 0 and none below, "worse" the reverse,
    "mixed" when both happen, "not shown" when every interval includes 0; without one, "too few rows"
    when every score is shared by fewer than MIN_ROWS rows (:func:`paired` draws no interval there, as
    sanity.py's checks), else "untested" (--bootstrap 0)."""
    tested = [d for d in diffs.values() if d is not None and np.isfinite(d.ci_low) and np.isfinite(d.ci_high)]
    if not tested:
        given = [d for d in diffs.values() if d is not None]
        return "too few rows" if given and all(d.n < MIN_ROWS for d in given) else "untested"
    up, down = any(d.above for d in tested), any(d.below for d in tested)
    return "mixed" if up and down else "beats" if up else "worse" if down else "not shown"


Rows = dict[str, np.ndarray]  # score key → (N,) per-row value, NaN where the row is not scored


def row_values(
    scores: np.ndarray,
    rows: np.ndarray,
    m: Measured,
    curves: tuple[np.ndarray, np.ndarray] | None,
    tol: float = TIE_TOLERANCE,
) -> Rows:
    """Per row, the value each score averages (NaN outside ``rows`` and where undefined); without
    ``curves`` (p_topk, p_keep) no deletion or insertion area."""
    n = len(scores)

    def put(values: np.ndarray) -> np.ndarray:
        out = np.full(n, np.nan)
        out[rows] = values
        return out

    a, e, p = scores[rows], m.effects[rows], m.p[rows]
    out = {
        "top_layer_agreement": put(M.top_layer_agreement(a, e, tol).astype(np.float64)),
        "deletion_at_1": put(M.deletion_at_k(a, p, m.p_ablated[rows])),
        "oracle_at_1": put(M.oracle_at_1(e)),
        "faithfulness": put(M.spearman_rows(a, e, tol)),
        "subset_faithfulness": put(
            M.pearson_rows(M.subset_sums(a, m.subsets), m.subset_effects[rows], tol)
            if len(m.subsets)
            else np.full(len(a), np.nan)
        ),
    }
    if curves is not None and scores.shape[1] >= 2:
        p_topk, p_keep = curves[0][rows], curves[1][rows]
        out["deletion_area"] = put((p[:, None] - p_topk)[:, :-1].mean(axis=1))
        out["insertion_area"] = put(p_keep[:, :-1].mean(axis=1))
    return out


def shared_rows(*sides: np.ndarray) -> int:
    """How many rows every one of ``sides`` scores (finite on each)."""
    return int(np.logical_and.reduce([np.isfinite(np.asarray(s, dtype=np.float64)) for s in sides]).sum())


def paired(key: str, a: Rows, b: Rows, *, n_boot: int, seed: int, confidence: float = 0.95) -> Paired | None:
    """a − b on score ``key`` over the rows both score; None when b has no such score. Over fewer than
    MIN_ROWS shared rows (ρ is undefined on a row whose effects all tie, so it can be defined on a few
    of many scored rows) no interval is drawn: the mean alone, which decides no verdict."""
    if key == "deletion_at_1_over_oracle":
        if "deletion_at_1" not in b:
            return None
        sides = (a["deletion_at_1"], b["deletion_at_1"], a["oracle_at_1"])
        draws = n_boot if shared_rows(*sides) >= MIN_ROWS else 0
        return paired_difference(
            sides[0], sides[1], denominator=sides[2], n_boot=draws, seed=seed, confidence=confidence
        )
    if key not in a or key not in b:
        return None
    draws = n_boot if shared_rows(a[key], b[key]) >= MIN_ROWS else 0
    return paired_difference(a[key], b[key], n_boot=draws, seed=seed, confidence=confidence)


# the per-row values behind the three headline scores (Deletion@1 ÷ oracle's numerator)
ROW_KEYS = ("top_layer_agreement", "deletion_at_1", "faithfulness")


def same_scores(a: Rows, b: Rows) -> bool:
    """a scores every row as b does on every headline score (the same rows undefined): a method that
    ranks the layers as the constant rule does on every row (ScalarMix's static weights; IG on a head
    that reads one layer). Its differences are 0 by construction, so "does not beat it" would read as
    a finding; it is said to be the rule instead, from the data, whatever the head."""
    same = all(k in a and k in b and np.array_equal(a[k], b[k], equal_nan=True) for k in ROW_KEYS)
    return same and any(np.isfinite(a[k]).any() for k in ROW_KEYS)


def versus_constant(
    a: Rows,
    constant: Rows | None,
    *,
    circular: bool,
    caveat: bool,
    n_boot: int,
    seed: int,
    inapplicable: str | None = None,
) -> dict[str, Any]:
    """method − constant on each headline score, each interval at VERDICT_CONFIDENCE, and the verdict
    (a key of :data:`.records.VERDICTS`): NOT_APPLICABLE, with ``inapplicable`` as its note (ONE_LAYER,
    NO_LAYER of :mod:`.records`), on a head that reads fewer than two layers, where the rule and every
    gradient method agree by construction."""
    if constant is None:
        return {"verdict": "no constant", **{k: None for k in HEADLINE}}
    diffs = {k: paired(k, a, constant, n_boot=n_boot, seed=seed, confidence=VERDICT_CONFIDENCE) for k in HEADLINE}
    same = same_scores(a, constant)
    word = (  # a head that reads one layer (or none) undoes every score, whatever else holds: said first
        NOT_APPLICABLE
        if inapplicable
        else "withheld"
        if caveat
        else "circular"
        if circular
        else "identical"
        if same
        else verdict(diffs)
    )
    out = {"verdict": word, **{k: None if d is None else d.to_dict() for k, d in diffs.items()}}
    return out | ({"note": inapplicable} if word == NOT_APPLICABLE else {})


def candidates(means: Mapping[str, Mapping[str, Any]], circular: Mapping[str, str | None], key: str) -> dict[str, Any]:
    """{method: its value of score ``key``}: the non-circular methods with a value, the ones "best" is chosen among."""
    values = {name: score_value(s, key) for name, s in means.items() if not circular.get(name)}
    return {name: v for name, v in values.items() if v is not None}


def significant_best(
    means: Mapping[str, Mapping[str, Any]],
    values: Mapping[str, Rows],
    circular: Mapping[str, str | None],
    constant: Rows | None,
    keys: tuple[str, ...],
    *,
    n_boot: int,
    seed: int,
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """(best, tests). Per score: the non-circular method with the highest mean (at least two with a
    value) is best only when its paired interval against the runner-up, and against the constant
    rule where that has the score (at VERDICT_CONFIDENCE, the verdict's interval), lies above 0.
    A star on any score is read as "this method is the best", so the runner-up intervals of the m
    scores with a leader are one family, each at 1 − 0.05/m: at 95% each, two methods equal in
    truth got a star in 29% of simulated runs (bench/best_null.py). ``tests`` says, per score, what
    was compared."""
    best: dict[str, list[str]] = {}
    tests: dict[str, Any] = {}
    led = {key: values_of for key in keys if len(values_of := candidates(means, circular, key)) >= 2}
    fam = family(len(led), BEST_FAMILY)
    for key, values_of in led.items():
        ranked = sorted((-float(v), list(means).index(name), name) for name, v in values_of.items())
        lead, runner = ranked[0][2], ranked[1][2]
        vs_runner = paired(key, values[lead], values[runner], n_boot=n_boot, seed=seed, confidence=fam["confidence"])
        # against the rule at the verdict's level: the same interval as vs_constant, so a starred method
        # never reads "does not beat the constant rule" beside its star
        vs_const = (
            None
            if constant is None
            else paired(key, values[lead], constant, n_boot=n_boot, seed=seed, confidence=VERDICT_CONFIDENCE)
        )
        ok = vs_runner is not None and vs_runner.above and (vs_const is None or vs_const.above)
        tests[key] = {
            "leader": lead,
            "runner_up": runner,
            "vs_runner_up": None if vs_runner is None else {**vs_runner.to_dict(), "family": fam},
            "vs_constant": None if vs_const is None else vs_const.to_dict(),
            "constant_tested": vs_const is not None,
            "marked": bool(ok),
        }
        if ok:
            best[key] = [lead]
    return best, tests
