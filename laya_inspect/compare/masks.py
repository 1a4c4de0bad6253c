"""Which layers each ablated copy of a sample removes: the masks of LOLO, of fixed layer subsets and
of the deletion / insertion curves (docs/METHOD.md, "Ablation and leave-one-layer-out effects").

A :class:`Masks` is K copies of every sample; :func:`~laya_inspect.compare.lolo.ablate_sets` runs
several of them in one pass over the chunks, so a compare reads each chunk's per-layer parts once for
all its curves. Shapes: N samples, K copies, B rows of a chunk, L layers; True = ablated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..errors import InputError


@dataclass(frozen=True)
class Masks:
    """``of(rows, device)``: the (K, B, L) bool masks of the samples ``rows``, K = ``k``."""

    k: int
    of: Callable[[slice, torch.device], Tensor]


def _fixed(masks: Tensor) -> Masks:
    def of(rows: slice, device: torch.device) -> Tensor:
        return masks.to(device)[:, None, :].expand(-1, rows.stop - rows.start, -1)

    return Masks(len(masks), of)


def lolo_masks(n_layers: int) -> Masks:
    """K = L+1: the intact copy, then layer i alone ablated in copy i+1."""
    return _fixed(torch.cat([torch.zeros(1, n_layers), torch.eye(n_layers)]).bool())


def subset_masks_of(subsets: np.ndarray, n_layers: int) -> Masks:
    """K = M: subset m (a row of ``subsets`` (M, L) bool) ablated, the same for every sample."""
    sub = torch.as_tensor(np.asarray(subsets, dtype=bool))
    if sub.ndim != 2 or sub.shape[1] != n_layers:
        raise InputError(f"subsets must be (M, L) with L = {n_layers}, got {tuple(sub.shape)}")
    return _fixed(sub)


def topk_masks(order: np.ndarray, ks: Sequence[int] | None, n: int, n_layers: int) -> Masks:
    """K = len(ks) (default 1…L): the layers order[n, :k] of each sample ablated together."""
    order = np.asarray(order)
    if order.shape != (n, n_layers):
        raise InputError(f"order must be (N, L) = ({n}, {n_layers}), got {order.shape}")
    ks = list(range(1, n_layers + 1)) if ks is None else [int(k) for k in ks]
    if any(not 0 <= k <= n_layers for k in ks):
        raise InputError(f"k must be within 0…{n_layers}, got {ks}")
    # rank[n, i] = position of layer i in sample n's order; layer i ablated at k iff rank < k.
    rank = torch.as_tensor(np.argsort(order, axis=1))
    kt = torch.as_tensor(ks)

    def of(rows: slice, device: torch.device) -> Tensor:
        return rank[rows].to(device)[None, :, :] < kt.to(device)[:, None, None]

    return Masks(len(ks), of)


def keep_masks(order: np.ndarray, n: int, n_layers: int) -> Masks:
    """K = L: only the layers order[n, :k] kept, k = 1…L (k = L: nothing ablated)."""
    reverse = np.asarray(order)[:, ::-1]
    return topk_masks(reverse, [n_layers - k for k in range(1, n_layers + 1)], n, n_layers)


def curve_masks(order: np.ndarray, n: int, n_layers: int) -> list[Masks]:
    """The deletion curve's masks, then the insertion curve's, for one (N, L) order."""
    return [topk_masks(order, None, n, n_layers), keep_masks(order, n, n_layers)]


def all_masks(n_layers: int) -> Masks:
    """K = 2^L: every subset of the layers, copy c ablating the layers i with bit i of c set."""
    codes = torch.arange(2**n_layers)
    return _fixed((codes[:, None] >> torch.arange(n_layers)[None, :]) & 1 == 1)


def mask_codes(masks: Masks, n: int) -> np.ndarray:
    """(N, K) the copy of :func:`all_masks` that each copy of ``masks`` is, for samples 0 … N−1."""
    m = masks.of(slice(0, n), torch.device("cpu")).long()  # (K, N, L)
    return (m << torch.arange(m.shape[-1])).sum(-1).T.numpy()
