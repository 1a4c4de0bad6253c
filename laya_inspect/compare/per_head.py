"""One head's summary for compare: its ablations each scored by :mod:`laya_inspect.compare.scores`
(the first also at the top level), whether the head is near chance on the compared rows (which then
withholds its verdicts), and the first ablation's scores per target class. Plain JSON-able data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..choices import TIE_TOLERANCE
from . import metrics as M
from .effects import Measured
from .lolo import ABLATIONS
from .paired import constant_rule
from .records import inapplicable
from .scores import ablation_summary


@dataclass
class HeadResult:
    """One head as compare measured it: its forward pass, each method's scores and each ablation's
    effects; read by the summary, the outputs and the sanity checks."""

    name: str
    head_dir: str
    kind: str
    targets: np.ndarray  # (N,)
    preds: np.ndarray  # (N,)
    logits: np.ndarray  # (N, C)
    weights: np.ndarray | None  # (N, L) aggregation weights (α for LAYA)
    ablations: list[str]  # run on this head, the first is the primary
    measured: dict[str, Measured] = field(default_factory=dict)  # ablation → effects and references
    scores: dict[str, np.ndarray] = field(default_factory=dict)  # method → (N, L)
    extras: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    curves: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)  # abl → m → curves
    skipped: dict[str, str] = field(default_factory=dict)
    ablations_skipped: dict[str, str] = field(default_factory=dict)
    head_config: dict[str, Any] = field(default_factory=dict)  # the head's config.json

    @property
    def primary(self) -> Measured:
        return self.measured[self.ablations[0]]

    @property
    def p(self) -> np.ndarray:
        return self.primary.p

    @property
    def p_ablated(self) -> np.ndarray:
        return self.primary.p_ablated

    @property
    def effects(self) -> np.ndarray:
        return self.primary.effects


def head_summary(
    r: HeadResult,
    labels: np.ndarray,
    cfg: dict,
    layer_names: list[str],
    class_names: list[str],
    *,
    n_boot: int,
    seed: int,
    layers_read: list[int] | None = None,
    majority: float | None = None,
) -> dict[str, Any]:
    """Everything about one head: its ablations (the first also at the top level, as in schema 1),
    and the first ablation's scores per target class. ``layers_read``: the positions of the layers
    its logits depend on (:func:`.sanity.layers_read`); one alone or none, and no method is read against
    another, nor against the constant rule (random included: the rule is the oracle there)."""
    num_classes = max(len(class_names), int(r.logits.shape[1]))
    info: dict[str, dict[str, Any]] = {}
    for m in r.scores:
        delta = r.extras[m].get("delta")
        ok = delta[np.isfinite(delta)] if delta is not None else None
        info[m] = {
            "ig_delta": None
            if ok is None or not len(ok)
            else {"abs_mean": float(np.abs(ok).mean()), "abs_max": float(np.abs(ok).max())},
            "params": r.params[m],
        }
    constant = constant_rule(r.weights, r.scores, len(r.targets), seed)
    accuracy = float((r.preds == labels).mean())
    chance = chance_check(r.name, accuracy, labels, preds=r.preds, chance=majority)
    by_abl = {
        a: ablation_summary(
            r.measured[a],
            r.scores,
            r.curves[a],
            info,
            layer_names,
            description=ABLATIONS.get(a).description,
            n_boot=n_boot,
            seed=seed,
            constant=constant,
            kind=r.kind,
            head_caveat=chance["caveat"],
            inapplicable=inapplicable(layers_read),
        )
        for a in r.ablations
    }
    first = by_abl[r.ablations[0]]
    return {
        "name": r.name,
        "dir": r.head_dir,
        "kind": r.kind,
        "head_config": cfg.get("kwargs"),
        "head_cache_fingerprint": cfg.get("cache_fingerprint"),
        # report says when the head was refitted since (`fit-head --force` into the same folder)
        "head_weights_sha256": weights_sha256(r.head_dir),
        "n": int(len(r.targets)),
        "n_layers": len(layer_names),
        "layers_read": layers_read,
        "accuracy": accuracy,
        "chance": chance,
        "mean_p": _mean_p(r),
        "methods_run": list(r.scores),
        "methods_skipped": r.skipped,
        "ablations_run": r.ablations,
        "ablations_skipped": r.ablations_skipped,
        **{
            k: first[k] for k in ("lolo", "methods", "references", "circular", "caveats", "notes", "best", "best_tests")
        },
        "ablations": by_abl,
        "per_class": per_class_summary(r, class_names, num_classes),
    }


def weights_sha256(head_dir: Any) -> str | None:
    """The SHA-256 of the head's weights.pt, or None where it cannot be read."""
    from pathlib import Path

    from ..files import sha256_file
    from ..head_dir import WEIGHTS

    try:
        return sha256_file(Path(head_dir) / WEIGHTS)
    except OSError:
        return None


# What compare does with a head near chance on the rows it compares (fit-head's rule, docs/METHOD.md)
NEAR_CHANCE_POLICY = (
    "verdicts withheld: no method is read against the constant rule and none is marked best; the scores and "
    "their intervals are kept"
)


ON_ROWS = "its macro-F1 on these rows"


def chance_check(
    name: str, accuracy: float, labels: np.ndarray, preds: np.ndarray | None = None, chance: float | None = None
) -> dict[str, Any]:
    """Whether the head is near chance on the compared rows, by fit-head's rule (training.quality's
    near_chance: below chance + CHANCE_GAP·(1 − chance), chance the majority class's share of the split
    (``chance``; else of ``labels``: a --limit subset's share moves with its draw), or above
    it by fewer than GAIN_ROWS rows), and the caveat that then withholds its verdicts. A head that
    learnt nothing still has a computation its attributions can be faithful to, but "beats the constant
    rule" beside it reads as an explanation to trust: so the verdicts are withheld, not merely
    captioned (the numbers stay). With the head's ``preds``, a head whose accuracy cannot tell
    (training.quality.not_learned) is not said to have learnt nothing: its macro-F1 is named instead."""
    from ..training.quality import (
        CHANCE_GAP,
        GAIN_ROWS,
        chance_level,
        chance_lines,
        macro_f1_decides,
        majority_macro_f1,
        near_chance,
        not_learned,
    )
    from ..training.stats import macro_f1

    n = len(labels)
    chance = chance if chance is not None and n else chance_level(labels) if n else float("nan")
    f1 = macro_f1(labels, preds) if preds is not None and n else None
    majority_f1 = majority_macro_f1(labels) if f1 is not None else None
    said = near_chance(accuracy, chance, "", n=n) if np.isfinite(chance) else None
    # fit-head's words, read on the compared rows: "near chance: test accuracy …; …" → "accuracy …"
    detail = said.split(";")[0].split(": ", 1)[1].replace("test ", "") if said else ""
    learnt = (
        not_learned(f"head {name}", accuracy, chance, f1=f1, majority_f1=majority_f1, f1_of=ON_ROWS)
        if macro_f1_decides(accuracy, chance, f1, majority_f1)
        else "its attributions explain a head that learnt next to nothing"
    )
    caveat = (
        f"head {name} is near chance on the compared rows ({detail}): {learnt}, so none is read against the "
        "constant rule and no method is marked best"
        if said
        else None
    )
    ok = bool(np.isfinite(chance))
    return {
        "accuracy": accuracy,
        "chance": chance if ok else None,
        "macro_f1": f1,
        "majority_macro_f1": majority_f1,
        "bound": max(x for x in chance_lines(chance, n) if x is not None) if ok else None,
        "near_chance": said is not None,
        "rule": f"near chance: accuracy < chance + {CHANCE_GAP:g}·(1 − chance), chance the majority class's share "
        f"of the compared split (all its rows, whatever --limit compared), or (accuracy − chance)·n < {GAIN_ROWS} "
        "rows (fit-head's rule)",
        "policy": NEAR_CHANCE_POLICY,
        "caveat": caveat,
    }


def _mean_p(r: HeadResult) -> float:
    """Mean softmax probability of the target class over the rows with finite logits, whatever the effect."""
    logits = np.asarray(r.logits, dtype=np.float64)
    ok = np.isfinite(logits).all(axis=1)
    if not ok.any():
        return float("nan")
    z = logits[ok] - logits[ok].max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return float(p[np.arange(len(p)), r.targets[ok]].mean())


# the first ablation's scores per target class c(x) (docs/METHOD.md, "Scores")
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
