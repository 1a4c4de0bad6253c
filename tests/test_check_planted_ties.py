"""check planted never credits a tie at the top to the lower layer index (docs/METHOD.md, "The
planted-layer check", "Ranked first")."""

from __future__ import annotations

import numpy as np
import pytest

from laya_inspect.check.planted import MethodShare, Share, signal_first, top_layer_counts, verdict_lines


def _tied_scores(n: int = 300, n_layers: int = 4, seed: int = 0) -> np.ndarray:
    """(n, L) scores of few distinct values (Grad-CAM with --relu's zeros, static weights), so rows tie."""
    return np.random.default_rng(seed).integers(0, 3, size=(n, n_layers)).astype(np.float64)


def test_top_layer_counts_do_not_depend_on_the_order_the_layers_are_listed_in() -> None:
    scores = _tied_scores()
    forward, backward = top_layer_counts(scores), top_layer_counts(scores[:, ::-1])
    np.testing.assert_allclose(forward, backward[::-1])
    assert sum(forward) == pytest.approx(len(scores))


def test_a_row_whose_scores_all_tie_credits_every_layer_alike() -> None:
    assert top_layer_counts(np.zeros((6, 3))) == [2, 2, 2]
    assert top_layer_counts(np.array([[0.0, 1.0, 1.0]])) == [0, 0.5, 0.5]


def test_counts_without_ties_are_whole_rows_as_before() -> None:
    scores = np.random.default_rng(1).random((200, 5))
    counts = top_layer_counts(scores)
    assert counts == np.bincount(scores.argmax(axis=1), minlength=5).tolist()
    assert all(type(c) is int for c in counts)


def test_the_share_counts_rows_where_the_signal_layer_only_ties_apart() -> None:
    scores = _tied_scores()
    got = signal_first(scores, 2)
    top = scores == scores.max(axis=1, keepdims=True)
    assert got.hits == int((top[:, 2] & (top.sum(axis=1) == 1)).sum())
    assert got.tied == int((top[:, 2] & (top.sum(axis=1) > 1)).sum()) > 0
    assert got.to_dict()["tied"] == got.tied


def test_the_verdict_says_when_the_signal_layer_ties_for_first() -> None:
    ig = Share(380, 400, tied=20)
    methods = [MethodShare("laya", "ig", ig, [10, 390, 0, 0], 20)]
    text = "\n".join(verdict_lines(methods, {}, {}, "layers.1", 4, "mean"))
    assert "on 20 more it ties for first, not counted" in text
