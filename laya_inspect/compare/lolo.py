"""Leave-one-layer-out (LOLO) effects and top-k ablations (docs/METHOD.md, "Ablation and leave-one-layer-out effects").

Registry ``ABLATIONS`` — how layer i is removed:

* ``mean`` (default) — h_i replaced by b_i, the mean of h_i over the training split;
* ``zero``           — h_i replaced by 0;
* ``drop``           — the head's aggregation weight of layer i set to 0 and the rest renormalised
  (heads with ``has_weights`` only).

p(x) = softmax(logits)_c for the target class c; e_i(x) = p(x) − p(x with layer i ablated).
Every function runs all its ablated copies of a chunk of samples in one batched forward pass: the
chunk is stacked K times (K = L+1 for LOLO: the intact copy, then one copy per ablated layer), so
p and every p_ablated come from the same call. A forward pass therefore sees K·batch_size rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from ..errors import InputError, NotFoundError, suggest
from ..heads import Head
from ..registry import Registry

if TYPE_CHECKING:
    from ..store import FeatureStore


@dataclass(frozen=True)
class Ablation:
    name: str
    description: str
    needs_weights: bool = False  # only for heads with aggregation weights (has_weights)
    needs_baselines: bool = False  # needs the train-split layer means

    def apply(
        self, hs: Sequence[Tensor], mask: Tensor, baselines: Sequence[Tensor] | None
    ) -> tuple[list[Tensor], Tensor | None]:
        """Layers and keep-mask for ``head(hs, keep)``; ``mask`` (M, L) bool, True = ablated."""
        if self.name == "drop":
            return list(hs), (~mask).to(hs[0].dtype)
        out = []
        for i, h in enumerate(hs):
            if self.needs_baselines:
                assert baselines is not None  # _prepare raises InputError when they are missing
                b = baselines[i]
            else:
                b = torch.zeros((), dtype=h.dtype, device=h.device)
            out.append(torch.where(mask[:, i : i + 1], b.to(h.dtype).expand_as(h), h))
        return out, None


ABLATIONS: Registry[Ablation] = Registry("ablation")
ABLATIONS.add("mean", Ablation("mean", "h_i replaced by its mean over the train split", needs_baselines=True))
ABLATIONS.add("zero", Ablation("zero", "h_i replaced by 0"))
ABLATIONS.add(
    "drop", Ablation("drop", "aggregation weight of layer i set to 0, the rest renormalised", needs_weights=True)
)


def layer_means(store: FeatureStore, split: str = "train", chunk_rows: int = 8192) -> list[np.ndarray]:
    """b_i = mean of h_i over ``split`` (float64 accumulation), one (D_l,) float32 array per layer."""
    if split not in store.splits:
        raise NotFoundError(
            f"no split {split!r} in {store.path} to take the layer means b_i from; "
            f"{suggest(split, store.splits)}; use the 'zero' ablation/baseline instead"
        )
    sums = [np.zeros(w, dtype=np.float64) for w in store.widths]
    n = 0
    for _rows, feats, labels in store.iter_chunks(split, chunk_rows):
        for s, f in zip(sums, feats):
            s += f.sum(axis=0, dtype=np.float64)
        n += len(labels)
    if n == 0:
        raise InputError(f"split {split!r} of {store.path} is empty; cannot take layer means")
    return [(s / n).astype(np.float32) for s in sums]


def check_ablation(ablation: str, heads: dict[str, Head]) -> Ablation:
    """The registry entry, or an InputError naming the heads that support it."""
    abl = ABLATIONS.get(ablation)
    if abl.needs_weights:
        bad = [f"{n} ({h.kind})" for n, h in heads.items() if not h.has_weights]
        if bad:
            good = [f"{n} ({h.kind})" for n, h in heads.items() if h.has_weights]
            raise InputError(
                f"the {ablation!r} ablation needs a head with aggregation weights (laya, scalarmix); "
                f"not supported by: {', '.join(bad)}; supported by: {', '.join(good) or 'none of the heads given'}; "
                f"use --ablation mean or zero"
            )
    return abl


# ---------------------------------------------------------------------------------------------
# core: p for K masked copies of a chunk in one forward pass


def _prepare(
    head: Head, hs: Sequence[Tensor], target, ablation: str, baselines
) -> tuple[Ablation, list[Tensor], Tensor, list[Tensor] | None]:
    abl = check_ablation(ablation, {head.kind: head})
    hs = list(hs)
    if len(hs) != head.num_layers:
        raise InputError(f"{head.kind} head expects {head.num_layers} layers, got {len(hs)}")
    device, dtype = hs[0].device, hs[0].dtype
    target = torch.as_tensor(
        np.asarray(target) if not isinstance(target, Tensor) else target, dtype=torch.long, device=device
    )
    base = None
    if abl.needs_baselines:
        if baselines is None:
            raise InputError(f"the {ablation!r} ablation needs per-layer baselines (train-split means)")
        base = [torch.as_tensor(b, dtype=dtype, device=device) for b in baselines]
    head.eval()
    return abl, hs, target, base


def _p_copies(head: Head, abl: Ablation, hs: list[Tensor], target: Tensor, base, masks: Tensor) -> Tensor:
    """(K, B) target probabilities; ``masks`` (K, B, L) bool (True = ablated), all K copies in one pass."""
    k, b, _ = masks.shape
    stacked = [h.repeat(k, 1) for h in hs]  # copy-major: rows [j*B:(j+1)*B] are copy j
    x, keep = abl.apply(stacked, masks.reshape(k * b, -1), base)
    logits = head(x, keep=keep).logits
    probs = torch.softmax(logits, dim=-1).reshape(k, b, -1)
    return probs.gather(-1, target.expand(k, b).unsqueeze(-1)).squeeze(-1)


def _chunks(n: int, size: int) -> Iterable[slice]:
    size = max(1, int(size))
    return (slice(s, min(n, s + size)) for s in range(0, n, size))


def _np(t: Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float64).numpy()


# ---------------------------------------------------------------------------------------------
# public


def lolo_effects(
    head: Head,
    hs: Sequence[Tensor],
    target,
    ablation: str = "mean",
    baselines: Sequence | None = None,
    *,
    batch_size: int = 512,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p (N,), p_ablated (N, L), effects (N, L)) with e_i = p − p_ablated_i, float64.

    Per chunk of ``batch_size`` samples, one forward pass over L+1 stacked copies.
    """
    abl, hs, target, base = _prepare(head, hs, target, ablation, baselines)
    n, n_layers = len(target), len(hs)
    eye = torch.cat([torch.zeros(1, n_layers), torch.eye(n_layers)]).bool().to(target.device)  # (L+1, L)
    p, p_abl = [], []
    with torch.no_grad():
        for rows in _chunks(n, batch_size):
            b = rows.stop - rows.start
            pc = _p_copies(head, abl, [h[rows] for h in hs], target[rows], base, eye[:, None, :].expand(-1, b, -1))
            p.append(pc[0])
            p_abl.append(pc[1:].T)
    p_np, pa_np = _np(torch.cat(p)), _np(torch.cat(p_abl))
    return p_np, pa_np, p_np[:, None] - pa_np


def ablate_topk_curve(
    head: Head,
    hs: Sequence[Tensor],
    target,
    order: np.ndarray,
    ks: Sequence[int] | None = None,
    ablation: str = "mean",
    baselines: Sequence | None = None,
    *,
    batch_size: int = 512,
) -> np.ndarray:
    """(N, len(ks)) p(x with the layers order[n, :k] ablated together), for each k in ``ks``
    (default 1…L); all k of a chunk in one batched forward pass."""
    abl, hs, target, base = _prepare(head, hs, target, ablation, baselines)
    n, n_layers = len(target), len(hs)
    order = np.asarray(order)
    if order.shape != (n, n_layers):
        raise InputError(f"order must be (N, L) = ({n}, {n_layers}), got {order.shape}")
    ks = list(range(1, n_layers + 1)) if ks is None else [int(k) for k in ks]
    if any(not 0 <= k <= n_layers for k in ks):
        raise InputError(f"k must be within 0…{n_layers}, got {ks}")
    # rank[n, i] = position of layer i in sample n's order; layer i ablated at k iff rank < k.
    rank = torch.as_tensor(np.argsort(order, axis=1), device=target.device)
    kt = torch.as_tensor(ks, device=target.device)
    out = []
    with torch.no_grad():
        for rows in _chunks(n, batch_size):
            masks = rank[rows][None, :, :] < kt[:, None, None]  # (K, B, L)
            out.append(_p_copies(head, abl, [h[rows] for h in hs], target[rows], base, masks).T)
    return _np(torch.cat(out))


def ablate_topk(
    head: Head,
    hs: Sequence[Tensor],
    target,
    order: np.ndarray,
    k: int,
    ablation: str = "mean",
    baselines: Sequence | None = None,
    *,
    batch_size: int = 512,
) -> np.ndarray:
    """(N,) p(x with its top-k layers by ``order`` (N, L), most important first, ablated together)."""
    return ablate_topk_curve(head, hs, target, order, [k], ablation, baselines, batch_size=batch_size)[:, 0]
