"""Training-split statistics for the standardisation a head applies to its inputs (docs/METHOD.md,
"Standardisation"): pure arithmetic over batches, no I/O beyond reading the rows.

Means and variances are merged batch by batch in float64 (Chan et al.'s pairwise update), so a cache
streamed chunk by chunk gives the same numbers as one held in memory, and a large mean does not
swallow a small variance as the sum-of-squares formula would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from .loop import STREAM_CHUNK_ROWS, Rows

# A feature whose training std is below this share of its layer's typical std is scaled as if it had
# that std: a feature (nearly) constant in training would otherwise turn test-time noise into huge inputs.
SCALE_FLOOR = 0.01


def feature_moments(
    rows: Rows, positions: np.ndarray, layer_names: Sequence[str], advice: str = "re-extract the cache"
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per layer, the (D_l,) mean and standard deviation (ddof 0) of ``rows`` at ``positions``, in
    float64. A non-finite value anywhere is an InputError naming the layer, with ``advice`` (the
    cache's :meth:`~laya_inspect.cache.store.FeatureStore.nonfinite_advice`, where the rows are its)."""
    count = 0
    means: list[np.ndarray] = []
    m2: list[np.ndarray] = []
    for hs, _ in rows.batches(np.sort(positions), STREAM_CHUNK_ROWS):
        xs = [h.detach().cpu().numpy().astype(np.float64) for h in hs]
        n_b = len(xs[0])
        if n_b == 0:
            continue
        for i, x in enumerate(xs):
            if not np.isfinite(x).all():
                raise InputError(
                    f"layer {layer_names[i]!r} holds NaN or infinite features in the training rows; "
                    f"{advice}, or fit with --standardize none"
                )
            mean_b = x.mean(axis=0)
            m2_b = ((x - mean_b) ** 2).sum(axis=0)
            if count == 0:
                means.append(mean_b)
                m2.append(m2_b)
            else:
                delta = mean_b - means[i]
                total = count + n_b
                means[i] = means[i] + delta * (n_b / total)
                m2[i] = m2[i] + m2_b + delta**2 * (count * n_b / total)
        count += n_b
    if count == 0:
        raise InputError("no training rows to compute the standardisation from")
    return means, [np.sqrt(v / count) for v in m2]


def scales_for(stds: Sequence[np.ndarray], mode: str) -> list[np.ndarray]:
    """Per layer, the (D_l,) divisor of :class:`laya_inspect.heads.Standardize`.

    ``feature``: each feature's own std, floored at SCALE_FLOOR × the layer's RMS std;
    ``layer``: the layer's RMS std for every feature (its centred features keep their relative scale).
    A layer constant in training keeps a scale of 1."""
    if mode not in ("feature", "layer"):
        raise InputError(f"standardize must be feature or layer here, got {mode!r}")
    out = []
    for s in stds:
        rms = float(np.sqrt(np.mean(s**2))) if s.size else 0.0
        if rms <= 0:
            out.append(np.ones_like(s))
        elif mode == "layer":
            out.append(np.full_like(s, rms))
        else:
            out.append(np.maximum(s, SCALE_FLOOR * rms))
    return out


def standardization(
    rows: Rows,
    positions: np.ndarray,
    layer_names: Sequence[str],
    mode: str,
    moments: tuple[list[np.ndarray], list[np.ndarray]] | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray], dict[str, Any]]:
    """(means, scales, record): what :meth:`Head.set_standardization` takes, and what summary.json
    says; ``moments``: :func:`feature_moments` of the same rows, when already computed."""
    means, stds = moments or feature_moments(rows, positions, layer_names)
    scales = scales_for(stds, mode)
    record = {
        "mode": mode,
        "statistics": "training rows of the train split (validation rows left out)",
        "rows": int(len(positions)),
        "scale_floor": SCALE_FLOOR if mode == "feature" else None,
        "raw_std": {n: float(np.sqrt(np.mean(s**2))) for n, s in zip(layer_names, stds)},
    }
    return means, scales, record
