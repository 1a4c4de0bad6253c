"""The first ablation's scores per target class c(x) (docs/METHOD.md, "Scores"): pure functions of
a head's arrays, split from :mod:`.scores` to keep each module small."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..choices import TIE_TOLERANCE
from . import metrics as M

if TYPE_CHECKING:
    from .run import HeadResult


def per_class_summary(r: HeadResult, class_names: list[str], num_classes: int) -> dict[str, Any]:
    m = r.primary
    rows = m.finite
    t, e = r.targets[rows], m.effects[rows]
    pc_methods = {}
    for name, scores in r.scores.items():
        ok = np.isfinite(scores[rows]).all(axis=1)
        a, tt, ee = scores[rows][ok], t[ok], e[ok]
        pcf = M.per_class_faithfulness(a, ee, tt, num_classes, TIE_TOLERANCE)
        pc_methods[name] = {
            "faithfulness": pcf["mean"],
            "n_valid": pcf["n_valid"],
            "n_undefined": pcf["n_undefined"],
            "deletion_at_1": M.per_class(M.deletion_at_k(a, m.p[rows][ok], m.p_ablated[rows][ok]), tt, num_classes),
            "top_layer_agreement": M.per_class(M.top_layer_agreement(a, ee, TIE_TOLERANCE), tt, num_classes),
        }
    return {
        "by": "target class c(x)",
        "ablation": m.ablation,
        "classes": class_names if len(class_names) == num_classes else [str(c) for c in range(num_classes)],
        "n": np.bincount(t, minlength=num_classes).tolist(),
        "mean_effect": M.per_class(e, t, num_classes),
        "mean_weights": None if r.weights is None else M.per_class(r.weights[rows], t, num_classes),
        "oracle_at_1": M.per_class(M.oracle_at_1(e), t, num_classes),
        "random_at_1": M.per_class(M.random_at_1(e), t, num_classes),
        "methods": pc_methods,
    }
