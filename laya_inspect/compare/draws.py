"""Seeded per-row draws that do not depend on how the compared rows are split (docs/SCALING.md).

Under torchrun each process of a compare scores a contiguous part of the rows. A draw made for the
rows a process holds would give row r other numbers than one process gives it, so every per-row draw
(random attribution scores, random orderings, resample donors) is made for all the compared rows and each
process keeps its own part: the same numbers whatever the split. A draw is a few numbers per row and
layer, so drawing them all on every process costs nothing next to the ablated forward passes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError


@dataclass(frozen=True)
class RowSpan:
    """The rows a call scores: ``[start, start + n)`` of ``total`` compared rows. The default, every
    row from 0 (``total=None``: the n rows given are all there are), is what one process does."""

    start: int = 0
    total: int | None = None


def per_row(draw: Callable[[int], np.ndarray], n: int, span: RowSpan = RowSpan(), axis: int = 0) -> np.ndarray:
    """``draw(total)`` — one entry per compared row along ``axis`` — cut to the ``n`` rows of ``span``."""
    total = n if span.total is None else span.total
    if span.start < 0 or span.start + n > total:
        raise InputError(f"rows {span.start}…{span.start + n - 1} are outside the {total} compared rows")
    full = draw(total)
    if n == total:  # one process: the draw itself
        return full
    return np.take(full, np.arange(span.start, span.start + n), axis=axis)


def fit_seed_of(cfg: Mapping[str, Any]) -> int | None:
    """The seed a head was fitted with (its config.json's ``seed``), None where it records none."""
    seed = cfg.get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0 else None


# the random method's stream: compare's other draws are [seed, k] for k in 1…8, so [seed, fit seed] would
# share a head of fit seed k's noise with one of them; not 0, as numpy reads trailing zeros as absent, so
# [seed, 0, 0] (fit seed 0) is default_rng(seed), the bootstrap's and --limit's draw
RANDOM_STREAM = 9


def draw_key(seed: int, fit_seed: int | None, *stream: int) -> list[int]:
    """``[seed, *stream]`` and then the head's fit seed where it has one: each seed of a head draws its
    own noise, so the interval over the seeds holds the draws' spread, not one draw repeated."""
    return [seed, *stream, *([] if fit_seed is None else [fit_seed])]


def seeded_rows(n: int, k: int | None, seed: Any) -> np.ndarray:
    """All ``n`` rows, or ``k`` of them drawn without replacement by ``default_rng(seed)``, sorted."""
    if k is None or k >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False))
