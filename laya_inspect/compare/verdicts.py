"""Verdicts read from paired differences (docs/METHOD.md, "The constant rule and paired
differences"): each method against the constant rule on the headline scores, and "best" only for a
lead that is significant against the runner-up and against the constant rule.

Every score's per-row value (:func:`row_values`) is what its reported mean averages, so a paired
difference over the rows both sides share compares the same quantities the tables show.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..choices import TIE_TOLERANCE
from . import metrics as M
from .effects import Measured
from .paired import HEADLINE, Paired, paired_difference, verdict

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


def paired(key: str, a: Rows, b: Rows, *, n_boot: int, seed: int) -> Paired | None:
    """a − b on score ``key`` over the rows both score; None when b has no such score."""
    if key == "deletion_at_1_over_oracle":
        if "deletion_at_1" not in b:
            return None
        return paired_difference(
            a["deletion_at_1"], b["deletion_at_1"], denominator=a["oracle_at_1"], n_boot=n_boot, seed=seed
        )
    if key not in a or key not in b:
        return None
    return paired_difference(a[key], b[key], n_boot=n_boot, seed=seed)


def versus_constant(
    a: Rows, constant: Rows | None, *, circular: bool, caveat: bool, n_boot: int, seed: int
) -> dict[str, Any]:
    """method − constant on each headline score, and the verdict (a key of :data:`.paired.VERDICTS`)."""
    if constant is None:
        return {"verdict": "no constant", **{k: None for k in HEADLINE}}
    diffs = {k: paired(k, a, constant, n_boot=n_boot, seed=seed) for k in HEADLINE}
    word = "withheld" if caveat else "circular" if circular else verdict(diffs)
    return {"verdict": word, **{k: None if d is None else d.to_dict() for k, d in diffs.items()}}


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
    rule where that has the score, lies above 0. ``tests`` says, per score, what was compared."""
    best: dict[str, list[str]] = {}
    tests: dict[str, Any] = {}
    for key in keys:
        ranked = []
        for name, s in means.items():
            v = s[key]["mean"] if isinstance(s.get(key), dict) else s.get(key)
            if v is not None and not circular.get(name):
                ranked.append((-float(v), list(means).index(name), name))
        if len(ranked) < 2:
            continue
        ranked.sort()
        lead, runner = ranked[0][2], ranked[1][2]
        vs_runner = paired(key, values[lead], values[runner], n_boot=n_boot, seed=seed)
        vs_const = None if constant is None else paired(key, values[lead], constant, n_boot=n_boot, seed=seed)
        ok = vs_runner is not None and vs_runner.above and (vs_const is None or vs_const.above)
        tests[key] = {
            "leader": lead,
            "runner_up": runner,
            "vs_runner_up": None if vs_runner is None else vs_runner.to_dict(),
            "vs_constant": None if vs_const is None else vs_const.to_dict(),
            "constant_tested": vs_const is not None,
            "marked": bool(ok),
        }
        if ok:
            best[key] = [lead]
    return best, tests
