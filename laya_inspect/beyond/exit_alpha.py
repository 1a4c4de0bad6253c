"""The LAYA heads early-exit reads α from (docs/METHOD.md, "Early exit", Seeds): one head, read with
every refit seed, or each seed of a fit-head output read with the refits of its own seed, so an
interval over seeds covers α's fit as well as the refits. Shapes: N test rows, L layers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..heads import Head
from .common import Split, accuracy, head_outputs


def mass_beyond(weights: np.ndarray) -> np.ndarray:
    """(N, L) Σ_(j>k) w_j for each k, from (N, L) weights (0 at the last depth)."""
    tail = np.cumsum(weights[:, ::-1], axis=1)[:, ::-1]
    return np.concatenate([tail[:, 1:], np.zeros((len(weights), 1))], axis=1)


def fired(mass: np.ndarray, eps: float) -> int:
    """Rows whose α rule fires at ε before the last depth (where every row exits anyway)."""
    return int((mass[:, :-1] < eps).any(axis=1).sum())


def causal_alpha(head: Head, split: Split, means: Sequence[np.ndarray]) -> np.ndarray:
    """(N, L) α's mass beyond each depth k with every layer after k replaced by its train mean."""
    n_layers = head.num_layers
    out = np.zeros((split.n, n_layers))
    device = split.hs[0].device
    for k in range(n_layers - 1):
        hs = [h if j <= k else torch.as_tensor(means[j], device=device).expand_as(h) for j, h in enumerate(split.hs)]
        _, w = head_outputs(head, hs)
        assert w is not None
        out[:, k] = w[:, k + 1 :].sum(axis=1)
    return out


def read_alpha(
    heads: Sequence[tuple[Head, Path]], seeds: Sequence[int], test: Split, means: Sequence[np.ndarray], epsilon: float
) -> tuple[list[dict[str, Any]], list[dict[str, np.ndarray]]]:
    """(a record per head, its α masses {"alpha": causal, "alpha_oracle": full pass}, each (N, L))."""
    records, masses = [], []
    for (head, d), s in zip(heads, seeds):
        logits, w_full = head_outputs(head, test.hs)
        assert w_full is not None
        m = {"alpha": causal_alpha(head, test, means), "alpha_oracle": mass_beyond(w_full)}
        masses.append(m)
        records.append(
            {
                "head_dir": str(d.resolve()),
                "seed": s if len(heads) > 1 else None,  # one head: α for every refit seed
                "test_acc": accuracy(logits, test.labels),
                "alpha_rows_fired": fired(m["alpha"], epsilon),
                "oracle_rows_fired": fired(m["alpha_oracle"], epsilon),
            }
        )
    return records, masses
