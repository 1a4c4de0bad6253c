"""Paired differences between two attributions scored on the same rows (docs/METHOD.md, "The
constant rule and paired differences"): pure functions of per-row arrays.

A paired difference resamples *rows*: each bootstrap resample draws one set of row indices (with
replacement) and takes both sides on those same rows, so the interval reflects how the two differ
row by row, not how each varies on its own. Rows where either side (or the denominator) is not
finite are left out of both. The resamples are :func:`.metrics.resampled_means`, which
:func:`.metrics.bootstrap_ci` draws too, so the paired interval of ``a`` against zeros is
``bootstrap_ci(a)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .metrics import resampled_means

# the three headline scores a verdict against the constant rule is read from
HEADLINE = ("top_layer_agreement", "deletion_at_1_over_oracle", "faithfulness")
VERDICTS = {
    "beats": "beats the constant rule",
    "worse": "does worse than the constant rule",
    "mixed": "beats the constant rule on some scores and does worse on others",
    "not shown": "does not beat the constant rule (every interval includes 0)",
    "untested": "not tested against the constant rule (no intervals: run with --bootstrap N)",
    "circular": "not read against the constant rule: circular with this ablation",
    "withheld": "not read against the constant rule: a caveat withholds every ranking",
    "no constant": "no constant rule to read it against",
}


@dataclass(frozen=True)
class Paired:
    """mean(a − b) (÷ mean(denominator) for a ratio score) over the ``n`` rows both sides share,
    with its percentile bootstrap interval (NaN without rows or resamples)."""

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
        stats = resampled_means([d], n_boot=n_boot, seed=seed)[:, 0] if n_boot > 0 else np.zeros(0)
    else:
        mean = float(ratio(np.array(d.mean()), np.array(den[ok].mean())))
        boot = resampled_means([d, den[ok]], n_boot=n_boot, seed=seed) if n_boot > 0 else np.zeros((0, 2))
        stats = ratio(boot[:, 0], boot[:, 1])
    stats = stats[np.isfinite(stats)]
    if not len(stats):
        return Paired(mean, nan, nan, n, int(n_boot), int(seed), confidence)
    low, high = np.percentile(stats, [tail, 100 - tail])
    return Paired(mean, float(low), float(high), n, int(n_boot), int(seed), confidence)


def verdict(diffs: dict[str, Paired | None]) -> str:
    """A key of :data:`VERDICTS` from the paired differences method − constant of the headline
    scores: "beats" when at least one interval lies above 0 and none below, "worse" the reverse,
    "mixed" when both happen, "not shown" when every interval includes 0, "untested" without one."""
    tested = [d for d in diffs.values() if d is not None and np.isfinite(d.ci_low) and np.isfinite(d.ci_high)]
    if not tested:
        return "untested"
    up, down = any(d.above for d in tested), any(d.below for d in tested)
    return "mixed" if up and down else "beats" if up else "worse" if down else "not shown"
