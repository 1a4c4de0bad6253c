"""What ablation shows for one head under one ablation (docs/METHOD.md, "Ablation and
leave-one-layer-out effects" and "Scores"): the LOLO effects, the effects of removing seeded
subsets of layers together, and the deletion / insertion curves of the references every method is
read against — the oracle (sorted effects), random orderings, and the top-1-only order (the
largest effect, and any tied with it, first; the rest in a seeded random order). :meth:`Remover.curves` gives the same
curves for any method's order. What a removal is measured on is the Remover's ``effect``: the target
logit or its probability ("p" in the names below is that quantity). Shapes: N samples, L layers, M subsets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cache
from itertools import combinations
from typing import Any

import numpy as np
from torch import Tensor

from ..choices import MAX_SUBSETS, RANDOM_ORDERS, TABLE_LAYERS, TIE_ORDERS, TIE_TOLERANCE
from ..heads import Head
from . import metrics as M
from .draws import RowSpan, draw_key, per_row
from .lolo import RESAMPLE_DRAWS, ablate_sets
from .masks import Masks, all_masks, curve_masks, lolo_masks, mask_codes, subset_masks_of

# Up to this many layers every one of the 2^L ablation masks is measured once per sample and every
# LOLO, subset and curve value read from that table: a compare asks for more copies than 2^L
# (≈ 100 for L = 3, 280 for L = 8), most of them the same subset of layers (TABLE_LAYERS, from choices).


def subset_masks(n_layers: int, max_subsets: int = MAX_SUBSETS, seed: int = 0) -> np.ndarray:
    """(M, L) bool: every non-empty proper subset of the L layers when 2^L − 2 ≤ ``max_subsets``;
    otherwise ``max_subsets`` distinct subsets, each of a size drawn uniformly from 1…L−1 and then
    uniformly among the subsets of that size, ``default_rng([seed, 3])``."""
    if n_layers < 2:
        return np.zeros((0, n_layers), dtype=bool)
    if 2**n_layers - 2 <= max_subsets:
        codes = np.arange(1, 2**n_layers - 1)
        return (codes[:, None] >> np.arange(n_layers)[None, :]) & 1 == 1
    rng = np.random.default_rng([seed, 3])
    seen: set[bytes] = set()
    out: list[np.ndarray] = []
    while len(out) < max_subsets:
        mask = np.zeros(n_layers, dtype=bool)
        mask[rng.choice(n_layers, size=int(rng.integers(1, n_layers)), replace=False)] = True
        if mask.tobytes() not in seen:
            seen.add(mask.tobytes())
            out.append(mask)
    return np.stack(out)


@dataclass
class Remover:
    """One head, its layers and targets, and one ablation: every ablated forward pass of a compare."""

    head: Head
    hs: Sequence[Tensor]
    target: np.ndarray
    ablation: str
    baselines: Sequence[np.ndarray] | None = None  # mean
    donors: Sequence[np.ndarray] | None = None  # resample
    seed: int = 0
    batch_size: int = 512
    draws: int = RESAMPLE_DRAWS
    span: RowSpan = RowSpan()  # which of the compared rows ``hs`` holds: the seeded draws follow the row
    effect: str = "prob"  # "logit": the target logit f_c; "prob": its softmax probability (compare passes --effect)
    _table: np.ndarray | None = field(default=None, init=False, repr=False)  # (N, 2^L) p of every mask

    def _ablate(self, sets: Sequence[Masks]) -> list[np.ndarray]:
        kw = {k: getattr(self, k) for k in ("batch_size", "donors", "draws", "seed", "span", "effect")}
        return ablate_sets(self.head, self.hs, self.target, sets, self.ablation, self.baselines, **kw)

    def run(self, sets: Sequence[Masks]) -> list[np.ndarray]:
        """(N, K_j) p for each mask set: with at most :data:`TABLE_LAYERS` layers read from the table
        of every mask (measured on first use), else all of a chunk in one call (:func:`~.lolo.ablate_sets`)."""
        n_layers = len(self.hs)
        if n_layers > TABLE_LAYERS:
            return self._ablate(sets)
        if self._table is None:
            (self._table,) = self._ablate([all_masks(n_layers)])
        table = self._table
        return [np.take_along_axis(table, mask_codes(s, len(table)), axis=1) for s in sets]

    def curves(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(p_topk, p_keep), each (N, L): p with the top-k of ``order`` removed / only they kept, k = 1…L."""
        return self.curves_of([order])[0]

    def curves_of(self, orders: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`curves` of every order, from one pass over the chunks."""
        n = len(np.asarray(self.target))
        out = self.run([m for o in orders for m in curve_masks(o, n, len(self.hs))])
        return [(out[2 * i], out[2 * i + 1]) for i in range(len(orders))]

    def method_curves(self, scores: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(p_topk, p_keep) of each method's (N, L) scores, from one pass over the chunks: the top-k
        by descending score (non-finite scores last). Where scores tie exactly across the k-th place,
        with at most :data:`TABLE_LAYERS` layers, the mean over every way of choosing the tied layers
        that fill the top k (:func:`tie_averaged_curves`); with more, the rows with any exact tie get
        the mean over :data:`TIE_ORDERS` seeded random tie-breaks (:meth:`tie_drawn_orders`), never
        the lower layer index. Rows without ties keep their one order's curves, bit for bit."""
        safe = [np.where(np.isfinite(s), s, -np.inf) for s in scores]
        if self._table is None and len(self.hs) > TABLE_LAYERS:  # no table of every mask: none to read
            return self._tie_drawn_curves(safe)
        curves = self.curves_of([M.top_order(s) for s in safe])
        assert self._table is not None  # measured by the pass above
        return [tie_averaged_curves(s, self._table, *c) for s, c in zip(safe, curves)]

    def tie_drawn_orders(self, n_layers: int) -> list[np.ndarray]:
        """:data:`TIE_ORDERS` (N, L) uniform keys, ``default_rng([seed, 4, j])`` per draw j, that order
        the layers a row's scores tie: drawn for all the compared rows, so a row's keys do not depend
        on how the rows are split."""
        n = len(np.asarray(self.target))

        def keys(j: int) -> np.ndarray:
            return per_row(
                lambda total: np.random.default_rng([self.seed, 4, j]).random((total, n_layers)), n, self.span
            )

        return [keys(j) for j in range(TIE_ORDERS)]

    def _tie_drawn_curves(self, safe: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Beyond the table: each method's order, and for a method with tied rows its scores broken
        by each of the seeded keys too, all in one pass; a tied row's curves are the mean over the keys."""
        keys = self.tie_drawn_orders(len(self.hs)) if any(tied_rows(s).any() for s in safe) else []
        orders: list[np.ndarray] = []
        for s in safe:
            orders.append(M.top_order(s))
            if tied_rows(s).any():
                orders += [np.lexsort((key, -s), axis=1) for key in keys]  # by score, then by the key
        out = self.curves_of(orders)
        curves, i = [], 0
        for s in safe:
            (d, k), i = out[i], i + 1
            tied = tied_rows(s)
            if tied.any():
                drawn, i = out[i : i + len(keys)], i + len(keys)
                d, k = d.copy(), k.copy()
                d[tied] = np.mean([c[0][tied] for c in drawn], axis=0)
                k[tied] = np.mean([c[1][tied] for c in drawn], axis=0)
            curves.append((d, k))
        return curves


def curve_tie_rule(n_layers: int) -> str:
    """How the curves of a row whose scores tie exactly are read at ``n_layers`` layers, in words
    (summary.json's ``curve_ties`` of each method)."""
    if n_layers <= TABLE_LAYERS:
        return "exact: the mean over every pick of the tied layers that fill the top k"
    return (
        f"estimated: the mean over {TIE_ORDERS} seeded random tie-breaks (more than {TABLE_LAYERS} layers, so not "
        "every mask is measured)"
    )


def tied_rows(scores: np.ndarray) -> np.ndarray:
    """(N,) bool: rows where two or more layers' scores are exactly equal (anywhere, not only at the
    top: such a row has a k at which the method does not say which layers fill the top k)."""
    ordered = np.sort(np.asarray(scores), axis=1)
    return (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)


def tie_averaged_curves(
    scores: np.ndarray, table: np.ndarray, p_topk: np.ndarray, p_keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(p_topk, p_keep) with each row whose scores tie exactly somewhere replaced by its expectation
    over a uniform pick among the ties: at k, the layers scored above the k-th score are ablated (or
    kept), and of the group tied at the k-th score as many as fill k, averaged over every such
    choice (C(g, r) of them). ``table`` (N, 2^L): p with the layers of each mask code ablated."""
    a = np.asarray(scores, dtype=np.float64)
    n, n_layers = a.shape
    out_d, out_k = p_topk.copy(), p_keep.copy()
    tied = np.flatnonzero(tied_rows(a))
    if not len(tied):
        return out_d, out_k
    bits = 1 << np.arange(n_layers)
    full = (1 << n_layers) - 1
    picks, sizes = _picks(n_layers)
    rank = (a[tied][:, :, None] < a[tied][:, None, :]).sum(axis=2)  # (T, L) layers scored above; 0 = top
    at = np.sort(rank, axis=1)
    for k in range(1, n_layers + 1):
        kth = at[:, k - 1 : k]
        above, group = rank < kth, rank == kth
        base, codes = (above * bits).sum(axis=1), (group * bits).sum(axis=1)
        r = k - above.sum(axis=1)
        count = sizes[codes, r]
        # rows by how many picks they average, so each row's mean runs over its picks in the order
        # itertools.combinations lists them: the same sum, bit for bit, as one row at a time
        for m in np.unique(count):
            sel = np.flatnonzero(count == m)
            rows = tied[sel]
            masks = base[sel, None] + picks[codes[sel], r[sel], :m]  # (T_m, m) mask codes
            out_d[rows, k - 1] = table[rows[:, None], masks].mean(axis=1)  # (T_m, m), not (T_m, 2^L) copies
            out_k[rows, k - 1] = table[rows[:, None], full ^ masks].mean(axis=1)
    return out_d, out_k


@cache
def _picks(n_layers: int) -> tuple[np.ndarray, np.ndarray]:
    """For every group of layers (a mask code) and r: the codes of its r-subsets, in the order
    itertools.combinations gives them (padded with 0), (2^L, L + 1, max C(L, r)), and how many there
    are, (2^L, L + 1). 3^L subsets in all (6,561 at L = 8), listed once per L."""
    widest = max(math.comb(n_layers, r) for r in range(n_layers + 1))
    picks = np.zeros((1 << n_layers, n_layers + 1, widest), dtype=np.int64)
    sizes = np.zeros((1 << n_layers, n_layers + 1), dtype=np.int64)
    for code in range(1 << n_layers):
        group = [i for i in range(n_layers) if code >> i & 1]
        for r in range(len(group) + 1):
            subsets = [sum(1 << i for i in c) for c in combinations(group, r)]
            picks[code, r, : len(subsets)] = subsets
            sizes[code, r] = len(subsets)
    return picks, sizes


@dataclass
class Reference:
    """A reference attribution: its (N, L) scores and its curves (p_topk, p_keep)."""

    scores: np.ndarray
    p_topk: np.ndarray
    p_keep: np.ndarray

    @staticmethod
    def join(parts: Sequence[Reference]) -> Reference:
        """The references of consecutive row ranges as one, rows in order."""
        return Reference(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Reference)))


@dataclass
class Measured:
    ablation: str
    p: np.ndarray  # (N,) the target's logit or probability (params["effect"])
    p_ablated: np.ndarray  # (N, L)
    effects: np.ndarray  # (N, L)
    subsets: np.ndarray  # (M, L) bool
    p_subsets: np.ndarray  # (N, M)
    oracle: Reference  # scores = the effects
    random: Reference  # scores = seeded noise; curves = mean over RANDOM_ORDERS orderings
    top1_only: Reference  # scores = one-hot on the largest effect (and any tied with it)
    finite: np.ndarray  # (N,) bool: rows whose every measured value is finite
    params: dict[str, Any]

    @property
    def subset_effects(self) -> np.ndarray:
        return self.p[:, None] - self.p_subsets

    @staticmethod
    def join(parts: Sequence[Measured]) -> Measured:
        """The measurements of consecutive row ranges (one process's each, under torchrun) as one,
        rows in order; the subsets and params are the same in every part."""
        joined: dict[str, Any] = {}
        for f in fields(Measured):
            values = [getattr(p, f.name) for p in parts]
            if isinstance(values[0], Reference):
                joined[f.name] = Reference.join(values)
            elif isinstance(values[0], np.ndarray) and f.name != "subsets":
                joined[f.name] = np.concatenate(values)
        return replace(parts[0], **joined)


def measure(
    remover: Remover,
    *,
    seed: int = 0,
    fit_seed: int | None = None,
    max_subsets: int = MAX_SUBSETS,
    tol: float = TIE_TOLERANCE,
) -> Measured:
    """LOLO, subset effects and the three references' curves for one (head, ablation); ``tol``:
    effects this close to the largest count as top for the top-1-only reference; ``fit_seed``: the
    head's, which the random reference's draws follow (:func:`draw_key`)."""
    n_layers, span = len(remover.hs), remover.span
    n = len(np.asarray(remover.target))
    masks = subset_masks(n_layers, max_subsets, seed)
    rng = np.random.default_rng(draw_key(seed, fit_seed, 1))  # a stream of its own, apart from the random method's

    def uniform(stream: int, fit: int | None = None) -> np.ndarray:
        return per_row(
            lambda total: np.random.default_rng(draw_key(seed, fit, stream)).random((total, n_layers)), n, span
        )

    orders = [
        per_row(lambda total: rng.permuted(np.tile(np.arange(n_layers), (total, 1)), axis=1), n, span)
        for _ in range(RANDOM_ORDERS)
    ]
    # everything that does not depend on the effects in one pass over the chunks
    lolo, p_sub, *random_curves = remover.run(
        [
            lolo_masks(n_layers),
            subset_masks_of(masks, n_layers),
            *(m for o in orders for m in curve_masks(o, n, n_layers)),
        ]
    )
    p, p_abl = lolo[:, 0], lolo[:, 1:]
    effects = p[:, None] - p_abl
    r_del = np.mean(random_curves[0::2], axis=0)
    r_keep = np.mean(random_curves[1::2], axis=0)
    if n_layers:
        r_del[:, 0] = p - M.random_at_1(effects)  # exact expectation at k = 1
    random_scores = uniform(2, fit_seed)

    safe = np.where(np.isfinite(effects), effects, -np.inf)  # non-finite rows: any order, never scored
    one_hot = M.one_hot_top(safe, tol)
    # the top layer(s) first, every other layer after them in a seeded random order
    t_order = np.argsort(-(one_hot + 0.5 * uniform(6)), axis=1)
    (o_del, o_keep), (t_del, t_keep) = remover.curves_of([M.top_order(safe), t_order])

    finite = M.finite_rows(p, p_abl, p_sub, o_del, o_keep, r_del, r_keep, t_del, t_keep)
    return Measured(
        ablation=remover.ablation,
        p=p,
        p_ablated=p_abl,
        effects=effects,
        subsets=masks,
        p_subsets=p_sub,
        oracle=Reference(effects, o_del, o_keep),
        random=Reference(random_scores, r_del, r_keep),
        top1_only=Reference(one_hot, t_del, t_keep),
        finite=finite,
        params={
            "resample_draws": remover.draws if remover.ablation == "resample" else None,
            "n_subsets": int(len(masks)),
            "random_orders": RANDOM_ORDERS,
            "seed": seed,
            "fit_seed": fit_seed,
            "effect": remover.effect,
        },
    )
