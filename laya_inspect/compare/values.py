"""What an ablation puts in a layer's place, read from the training split (docs/METHOD.md,
"Ablation and leave-one-layer-out effects"): the per-layer means b_i (``mean`` ablation, IG's mean
baseline) and a pool of real training rows (the donors of the ``resample`` ablation). Rows with a
non-finite value are left out of both."""

from __future__ import annotations

import numpy as np

from ..cache.store import FeatureStore
from ..choices import DONOR_POOL
from ..errors import InputError, NotFoundError, suggest
from .draws import seeded_rows
from .metrics import finite_rows


def layer_means(store: FeatureStore, split: str = "train", chunk_rows: int = 8192) -> list[np.ndarray]:
    """b_i = mean of h_i over ``split`` (float64 accumulation), one (D_l,) float32 array per layer.
    Rows with a non-finite value in that layer are left out."""
    if split not in store.splits:
        raise NotFoundError(
            f"no split {split!r} in {store.path} to take the layer means b_i from; "
            f"{suggest(split, store.splits)}; use the 'zero' ablation/baseline instead"
        )
    sums = [np.zeros(w, dtype=np.float64) for w in store.widths]
    counts = [0] * len(sums)
    for _rows, feats, _labels in store.iter_chunks(split, chunk_rows):
        for i, f in enumerate(feats):
            ok = np.isfinite(f).all(axis=1)
            sums[i] += f[ok].sum(axis=0, dtype=np.float64)
            counts[i] += int(ok.sum())
    if min(counts, default=0) == 0:
        raise InputError(
            f"split {split!r} of {store.path} has no row with finite features in some layer; "
            "cannot take layer means: use the 'zero' ablation and baseline"
        )
    return [(s / n).astype(np.float32) for s, n in zip(sums, counts)]


def donor_pool(store: FeatureStore, split: str = "train", size: int = DONOR_POOL, seed: int = 0) -> list[np.ndarray]:
    """Up to ``size`` seeded random rows of ``split`` with finite features: one (P, D_l) array per
    layer, the donors of the ``resample`` ablation."""
    if split not in store.splits:
        raise NotFoundError(
            f"no split {split!r} in {store.path} to draw resample donors from; {suggest(split, store.splits)}"
        )
    rows = seeded_rows(store.n(split), size, [seed, 4])
    feats = store.layers(split, rows)
    ok = finite_rows(*feats)
    if not ok.any():
        raise InputError(
            f"split {split!r} of {store.path} has no row with finite features to resample from; use another --ablation"
        )
    return [f[ok] for f in feats]
