"""The vectorised tie-averaged curves equal, bit for bit, the per-pattern loop they replaced
(bench/tie_curves.py keeps that loop and times the two)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from laya_inspect.compare.effects import tie_averaged_curves

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from tie_curves import inputs, per_pattern_loop  # noqa: E402


@pytest.mark.parametrize("n_layers", range(1, 9))
@pytest.mark.parametrize("levels", [1, 2, 3, 5])
def test_vectorised_curves_equal_the_per_pattern_loop(n_layers: int, levels: int) -> None:
    case = inputs(400, n_layers, levels, seed=n_layers * 10 + levels)
    for old, new in zip(per_pattern_loop(*case), tie_averaged_curves(*case)):
        assert np.array_equal(old, new)


def test_non_finite_scores_tie_last_as_in_the_loop() -> None:
    scores, table, p_topk, p_keep = inputs(300, 6, 3, seed=7)
    scores[np.random.default_rng(8).random(scores.shape) < 0.3] = -np.inf  # method_curves' non-finite scores
    for old, new in zip(
        per_pattern_loop(scores, table, p_topk, p_keep), tie_averaged_curves(scores, table, p_topk, p_keep)
    ):
        assert np.array_equal(old, new)


def test_untied_rows_keep_their_curves() -> None:
    scores, table, p_topk, p_keep = inputs(200, 5, 1000, seed=3)
    scores += np.arange(5) * 1e-3  # distinct within each row
    d, k = tie_averaged_curves(scores, table, p_topk, p_keep)
    assert np.array_equal(d, p_topk) and np.array_equal(k, p_keep)
