"""Layer rankings for pruning, most important first (docs/METHOD.md, "Prune"): the head's global α,
ScalarMix's weights, the mean leave-one-layer-out effect, Block Influence, and depth alone (shallowest
first, and deepest first). Pure functions of arrays apart from the LOLO pass. Ties go to the shallower
layer (stable sort), so a tie never costs compute."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import Tensor

from ..heads import Head, ScalarMixHead
from ..training.stats import counted_list

NON_ALPHA = ("scalarmix", "lolo", "block_influence", "depth", "deepest")


@dataclass
class Ranking:
    name: str
    scores: np.ndarray | None  # (L,) higher = more important; None when not applicable
    order: list[int] | None  # layer indices, most important first
    how: str  # what the scores are, or why the ranking does not apply

    @property
    def applies(self) -> bool:
        return self.order is not None


def layers_text(point: dict[str, Any]) -> str:
    """A prune point's layer set, or each LAYA head's where they differ ("seed 0: l1; seed 1: l3")."""
    by_seed = point.get("layers_by_seed")
    if by_seed:
        return "; ".join(f"seed {s}: {' '.join(layers)}" for s, layers in by_seed.items())
    return " ".join(point["layers"])


def order_of(scores: np.ndarray) -> list[int]:
    """Descending score; ties (and NaN, last) broken by the lower layer index."""
    s = np.where(np.isfinite(scores) | np.isposinf(scores), scores, -np.inf)
    return [int(i) for i in np.argsort(-s, kind="stable")]


def by_alpha(weights: np.ndarray, rows: int) -> Ranking:
    """Global α: the mean of α(x) (N, L) over the training rows given."""
    scores = np.asarray(weights, dtype=np.float64).mean(axis=0)
    return Ranking("alpha", scores, order_of(scores), f"mean α over {rows} train rows (the head's forward)")


def by_scalarmix(head: Head | None, source: str | None) -> Ranking:
    if head is None:
        return Ranking("scalarmix", None, None, "not run: no --scalarmix head directory given")
    if not isinstance(head, ScalarMixHead):
        return Ranking("scalarmix", None, None, f"not run: {source} is a {head.kind} head, not scalarmix")
    scores = head.static_weights().detach().cpu().double().numpy()
    return Ranking("scalarmix", scores, order_of(scores), f"softmax of the learned scalars of {source}")


def by_lolo(
    head: Head, hs: Sequence[Tensor], target: np.ndarray, baselines: Sequence[np.ndarray], rows: int
) -> Ranking:
    """Mean leave-one-layer-out effect (mean ablation, target = the head's prediction), float64."""
    from ..compare.lolo import lolo_effects

    h64 = copy.deepcopy(head).double().eval()
    _p, _pa, effects = lolo_effects(h64, [h.double() for h in hs], target, "mean", baselines)
    scores = np.nanmean(effects, axis=0)
    return Ranking(
        "lolo",
        scores,
        order_of(scores),
        f"mean leave-one-layer-out effect over {rows} train rows (mean ablation, target = prediction)",
    )


def block_influence(hs: Sequence[np.ndarray], names: Sequence[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """BI_l = 1 − mean_x cos(h_(l−1)(x), h_l(x)) for each layer l ≥ 2 whose width equals the previous
    one's (ShortGPT's score of a block from its input and output); NaN elsewhere. Returns the (L,)
    scores and one reason per layer where BI is undefined, naming layers by ``names`` (else 1-based)."""
    names = list(names) if names is not None else [str(i + 1) for i in range(len(hs))]
    scores = np.full(len(hs), np.nan)
    reasons = []
    for i in range(1, len(hs)):
        a, b = np.asarray(hs[i - 1], np.float64), np.asarray(hs[i], np.float64)
        if a.shape[1] != b.shape[1]:
            reasons.append(f"layers {names[i - 1]} and {names[i]} differ in width ({a.shape[1]} vs {b.shape[1]})")
            continue
        norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        cos = np.where(norms > 0, (a * b).sum(axis=1) / np.where(norms > 0, norms, 1.0), 1.0)
        scores[i] = 1.0 - float(cos.mean())
    return scores, reasons


def by_block_influence(hs: Sequence[np.ndarray], layer_names: Sequence[str], rows: int) -> Ranking:
    if len(hs) < 2:
        return Ranking("block_influence", None, None, "not applicable: one layer")
    scores, reasons = block_influence(hs, layer_names)
    if reasons:
        more = f" (and {len(reasons) - 1} more pairs)" if len(reasons) > 1 else ""
        return Ranking(
            "block_influence",
            None,
            None,
            f"not applicable: Block Influence compares a block's input and output, but {reasons[0]}{more}",
        )
    ranked = scores.copy()
    ranked[0] = np.inf  # the first cached layer has no input here to compare with: always kept
    return Ranking(
        "block_influence",
        scores,
        order_of(ranked),
        f"1 − mean cosine similarity between consecutive layers over {rows} train rows; "
        f"{layer_names[0]} (no input to compare with) kept first",
    )


def by_depth(n_layers: int) -> Ranking:
    scores = np.arange(n_layers, 0, -1, dtype=np.float64)
    return Ranking("depth", scores, list(range(n_layers)), "shallowest first: the top-k are the first k layers")


def by_deepest(n_layers: int) -> Ranking:
    """Deepest first: the top-k are the last k layers (a reference that costs no scores: where the
    signal sits at the top, any ranking that keeps the deep layers looks good against depth)."""
    scores = np.arange(1, n_layers + 1, dtype=np.float64)
    return Ranking("deepest", scores, order_of(scores), "deepest first: the top-k are the last k layers")


# Near ties: scores that sum to 1 (α, ScalarMix's weights) whose order rests on differences too small
# to mean anything. Nearly uniform: every weight within UNIFORM_SHARE (relative) of 1/L, fit-head's
# "still uniform"; a near tie: two layers next to each other in the order whose weights differ by less
# than NEAR_TIE × 1/L.
NEAR_TIE = 0.01


def near_ties(r: Ranking, names: Sequence[str]) -> str | None:
    """A warning when ``r`` (alpha or scalarmix) orders weights that are nearly uniform, or holds near
    ties between neighbours in its order; None otherwise (and for the other rankings)."""
    if r.name not in ("alpha", "scalarmix") or r.scores is None or r.order is None or len(r.order) < 2:
        return None
    s, n = np.asarray(r.scores, np.float64), len(r.order)
    uniform = 1.0 / n
    what = "mean α" if r.name == "alpha" else "ScalarMix's weights"
    from ..training.quality import UNIFORM_SHARE, uniform_spread

    spread = uniform_spread(s)
    if spread <= UNIFORM_SHARE:
        return (
            f"the {r.name} ranking orders nearly uniform weights ({what}): every one is within "
            f"{spread:.1%} of 1/L = {uniform:.4f} (threshold {UNIFORM_SHARE:.0%}), so its order rests "
            "on small differences"
        )
    ties = [
        (names[a], names[b], float(s[a] - s[b]))
        for a, b in zip(r.order, r.order[1:])
        if abs(float(s[a] - s[b])) < NEAR_TIE * uniform
    ]
    if not ties:
        return None
    shown = "; ".join(f"{a} above {b} by {d:.5f}" for a, b, d in ties[:3])
    more = f" (and {len(ties) - 3} more)" if len(ties) > 3 else ""
    return (
        f"the {r.name} ranking holds near ties ({what} of neighbours in its order differing by less than "
        f"{NEAR_TIE:.0%} of 1/L = {uniform:.4f}): {shown}{more}; the order between them is not meaningful"
    )


def across_heads(rs: Sequence[Ranking], seeds: Sequence[int]) -> Ranking:
    """One ranking read from several LAYA heads (each seed's α, or LOLO): the mean of their scores and
    its order, so the top-level figure speaks for every head rather than the first one's."""
    scores = np.nanmean(np.stack([np.asarray(r.scores, np.float64) for r in rs]), axis=0)
    how = f"mean over {len(rs)} LAYA heads ({counted_list('seed', seeds)}) of each head's {rs[0].how}"
    return Ranking(rs[0].name, scores, order_of(scores), how)


def near_ties_by_seed(rs: Sequence[Ranking], seeds: Sequence[int], names: Sequence[str]) -> str | None:
    """One warning for the heads whose ranking holds near ties (:func:`near_ties`), naming their seeds;
    None when no head's does."""
    if len(rs) == 1:
        return near_ties(rs[0], names)
    found = {s: w for r, s in zip(rs, seeds) if (w := near_ties(r, names)) is not None}
    if not found:
        return None
    heads = f"{len(found)} of {len(rs)} LAYA heads ({counted_list('seed', found)})"
    return f"{heads}: " + "; ".join(f"seed {s}: {w}" for s, w in found.items())
