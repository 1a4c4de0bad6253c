"""Average ranks and the t quantile without importing ``scipy.stats``.

``scipy.stats`` builds the docstrings of its distributions when imported (≈ 0.7 s), and every
command that summarises seeds or scores attributions needed only these two things from it.
"""

from __future__ import annotations

import numpy as np


def average_ranks(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Ranks 1 … n along ``axis`` (1 = smallest), tied values sharing the mean of their positions;
    a slice holding a NaN is NaN throughout. Equal to ``scipy.stats.rankdata(x, method="average",
    axis=axis)``, float64."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 0:
        raise ValueError("average_ranks needs at least one axis")
    if a.size == 0:
        return a.copy()
    moved = np.moveaxis(a, axis, -1)
    shape = moved.shape
    n = shape[-1]
    rows = moved.reshape(-1, n)
    out = np.empty_like(rows)
    order = np.argsort(rows, axis=1, kind="stable")
    xs = np.take_along_axis(rows, order, axis=1)
    starts = np.concatenate([np.ones((len(rows), 1), dtype=bool), xs[:, 1:] != xs[:, :-1]], axis=1)
    group = np.cumsum(starts, axis=1) - 1 + (np.arange(len(rows)) * n)[:, None]  # unique across rows
    pos = np.broadcast_to(np.arange(1, n + 1, dtype=np.float64), rows.shape)
    total = np.bincount(group.ravel(), weights=pos.ravel(), minlength=rows.size)
    count = np.bincount(group.ravel(), minlength=rows.size)
    np.put_along_axis(out, order, total[group] / np.maximum(count[group], 1), axis=1)
    out[np.isnan(rows).any(axis=1)] = np.nan
    return np.moveaxis(out.reshape(shape), -1, axis)


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf``)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, p))
