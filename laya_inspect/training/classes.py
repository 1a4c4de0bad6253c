"""Per-class scores of fit-head's heads and the balance of the test split's classes.

Accuracy and macro-F1 each fold the classes into one number; on imbalanced classes a head can read
0.74 accurate while its rarest class is mostly missed. Each head's summary row carries every class's
F1 and recall (the mean over seeds with their spread) beside the class's test rows, and the weakest
class is named in a gate note where the classes are imbalanced (IMBALANCED_SHARE) or one class's F1
lies far below the others' (WEAK_GAP).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import name_of
from .stats import percent

IMBALANCED_SHARE = 0.5  # imbalanced: the smallest class holds fewer than this share of 1/C of the test rows
WEAK_GAP = 0.2  # on balanced classes, a class whose mean F1 is this far below the others' mean is named

RULES = {
    "imbalanced": f"the smallest class present in the test split holds fewer than {IMBALANCED_SHARE:g} × 1/C of its "
    "rows (C the classes present); macro-F1 is then read beside accuracy by the probe check",
    "weakest_class": f"named in a gate note where the lowest mean F1 over seeds lies more than {WEAK_GAP:g} below the "
    f"mean F1 of the other classes ({WEAK_GAP / 2:g} where the classes are imbalanced)",
}


def class_balance(labels: np.ndarray, class_names: Sequence[str]) -> dict[str, Any]:
    """The test split's rows per class (``class_names``: one per class, C) and whether its classes are
    imbalanced (RULES["imbalanced"]). Classes with no test rows are left out of the rule: their share
    says nothing of the others."""
    y = np.asarray(labels, dtype=np.int64).ravel()
    support = np.bincount(y, minlength=len(class_names))[: len(class_names)]
    present = np.flatnonzero(support)
    if not len(present):
        return {"support": support.tolist(), "smallest": None, "smallest_share": None, "imbalanced": False}
    small = int(present[np.argmin(support[present])])
    share = float(support[small] / y.size)
    return {
        "support": support.tolist(),
        "smallest": class_names[small],
        "smallest_share": share,
        "imbalanced": bool(share < IMBALANCED_SHARE / len(present)),
        "rule": RULES["imbalanced"],
    }


def per_class_scores(labels: np.ndarray, preds: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Each class's F1 and recall on one run's test rows, (C,) each (scikit-learn's
    precision_recall_fscore_support, average=None; a class never predicted scores 0); NaN for a class
    with no test rows, whose scores are undefined rather than 0."""
    from sklearn.metrics import precision_recall_fscore_support

    y, p = np.asarray(labels, dtype=np.int64).ravel(), np.asarray(preds, dtype=np.int64).ravel()
    classes = np.arange(n_classes)
    _, recall, f1, support = precision_recall_fscore_support(y, p, labels=classes, average=None, zero_division=0)
    absent = support == 0
    f1, recall = f1.astype(np.float64), recall.astype(np.float64)
    f1[absent], recall[absent] = math.nan, math.nan
    return f1, recall


def _spread(values: np.ndarray) -> dict[str, list[float]]:
    """Per class over seeds ((S, C) values): mean, std (ddof 1; 0 with one seed), min, max; NaN (null
    in JSON) for a class with no test rows."""
    std = values.std(axis=0, ddof=1) if len(values) > 1 else np.zeros(values.shape[1])
    return {
        "mean": values.mean(axis=0).tolist(),
        "std": std.tolist(),
        "min": values.min(axis=0).tolist(),
        "max": values.max(axis=0).tolist(),
    }


def head_per_class(runs: Sequence[Any], class_names: Sequence[str], balance: dict[str, Any]) -> dict[str, Any] | None:
    """One head's per-class block over its seeds (``runs``: fit_head.RunResult with .test holding
    labels and preds; ``class_names``: one per class): {classes, support, f1, recall (each {mean, std,
    min, max} per class over seeds), weakest}; None when no run was tested."""
    tested = [r.test for r in runs if r.test is not None]
    if not tested:
        return None
    scores = [per_class_scores(t.labels, t.preds, len(class_names)) for t in tested]
    f1 = np.stack([s[0] for s in scores])
    recall = np.stack([s[1] for s in scores])
    block = {
        "classes": list(class_names),
        "support": balance["support"],
        "f1": _spread(f1),
        "recall": _spread(recall),
    }
    return block | {"weakest": weakest(block)}


def weakest(block: dict[str, Any]) -> dict[str, Any] | None:
    """The class with the lowest mean F1 (ties: the fewer test rows), beside the mean F1 of the others;
    None with fewer than two classes tested."""
    means = block["f1"]["mean"]
    tested = [c for c, m in enumerate(means) if m is not None and math.isfinite(m)]
    if len(tested) < 2:
        return None
    c = min(tested, key=lambda i: (means[i], block["support"][i]))
    others = float(np.mean([means[i] for i in tested if i != c]))
    return {
        "class": block["classes"][c],
        "f1": means[c],
        "recall": block["recall"]["mean"][c],
        "support": block["support"][c],
        "others_f1": others,
    }


def stands_out(block: dict[str, Any] | None, balance: dict[str, Any]) -> bool:
    """Whether a head's weakest class is to be named (RULES["weakest_class"]): its mean F1 lies more
    than WEAK_GAP below the other classes' (half that on imbalanced classes)."""
    weak = (block or {}).get("weakest")
    if not weak:
        return False
    # on imbalanced classes a smaller gap is named, but a gap all the same: a near-perfect head has no weak class
    gap = WEAK_GAP / 2 if balance.get("imbalanced") else WEAK_GAP
    return bool(weak["f1"] < weak["others_f1"] - gap)


def weakest_note(block: dict[str, Any] | None, balance: dict[str, Any], n_seeds: int) -> str | None:
    """The gate note naming a head's weakest class (RULES["weakest_class"]), else None."""
    if not block or not stands_out(block, balance):
        return None
    weak = block["weakest"]
    rows = sum(block["support"])
    i = block["classes"].index(weak["class"])
    spread = block["f1"]["std"][i] if n_seeds > 1 else None
    f1 = f"{weak['f1']:.3f}" + (f" ± {spread:.3f} std over {n_seeds} seeds" if spread is not None else "")
    why = (
        f"imbalanced classes, F1 more than {WEAK_GAP / 2:g} below the others'"
        if balance.get("imbalanced")
        else f"F1 more than {WEAK_GAP:g} below the others'"
    )
    return (
        f"weakest class {weak['class']!r} ({why}): F1 {f1}, recall {weak['recall']:.3f} on its "
        f"{weak['support']} of {rows} test rows ({percent(weak['support'] / max(rows, 1))}), vs mean F1 "
        f"{weak['others_f1']:.3f} over the other classes; accuracy folds it in (per_class in summary.json)"
    )


def add_per_class(
    heads: list[dict[str, Any]], runs: Sequence[Any], class_names: Sequence[str], n_classes: int, labels: np.ndarray
) -> dict[str, Any]:
    """Give each head row of the summary (``heads``) its ``per_class`` block; return the test split's
    class balance (``labels``), which the gate reads and summary.json's quality section holds."""
    names = [name_of(class_names, c) for c in range(n_classes)]
    balance = class_balance(labels, names)
    for h in heads:
        h["per_class"] = head_per_class([r for r in runs if r.head == h["head"]], names, balance)
    return balance
