"""The near-chance rule (quality.THRESHOLDS["near_chance"]): chance, the majority class's share, and the
lines an accuracy must clear above it. A leaf module, so that extraction (cache/rows.py) judges a model's
own logits by the rule fit-head judges its heads by, without importing the quality gate and its probes."""

from __future__ import annotations

import math

import numpy as np

CHANCE_GAP = 0.1  # "near chance": recovers less than this share of the way from chance to 1
GAIN_ROWS = 5  # "near chance" also: beats always answering the majority class on fewer test rows than this
LINE_TOLERANCE = 1e-9  # an accuracy this close to a near-chance line lies on it (float rounding of k/n means)
# train's warning on the classifier whose logits a zoo checkpoint carries: extract reads it to name that
# cause rather than guess at the inputs' preparation
CLASSIFIER_NOT_LEARNED = "the backbone's own classifier, fitted to convergence on its frozen last block, did not learn"
# the same warning of a checkpoint an older train wrote, whose classifier had the joint run's --epochs/--lr
CLASSIFIER_NOT_LEARNED_BEFORE = "the backbone's own classifier, refit on its frozen last block, did not learn"


def chance_level(labels: np.ndarray) -> float:
    """Accuracy of always answering the most frequent class of ``labels``."""
    counts = np.bincount(np.asarray(labels, dtype=np.int64))
    return float(counts.max() / counts.sum()) if counts.sum() else math.nan


def chance_lines(chance: float, n: int | None = None) -> tuple[float, float | None]:
    """The two lines of the near-chance rule (THRESHOLDS["near_chance"]), in accuracy: chance +
    CHANCE_GAP·(1 − chance), and with ``n`` test rows chance + (GAIN_ROWS − ½)/n, beating always
    answering the majority class on fewer than GAIN_ROWS rows (counted in whole rows: an accuracy is a
    mean over seeds, so a gain of 4.5 rows is not fewer than 5); None without ``n``. An accuracy below
    either is near chance (:func:`is_near_chance`); fit-head, compare and the reading all draw them here."""
    return chance + CHANCE_GAP * (1 - chance), (chance + (GAIN_ROWS - 0.5) / n if n else None)


def is_near_chance(acc: float, chance: float, n: int | None = None) -> bool:
    """Whether ``acc`` lies below either of :func:`chance_lines`; an accuracy on a line (within float
    rounding: means over seeds land on the rows line exactly) is not below it, as the rule's "<" says."""
    return any(line is not None and acc < line - LINE_TOLERANCE for line in chance_lines(chance, n))
