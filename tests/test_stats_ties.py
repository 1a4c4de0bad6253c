"""The seeds' top-layer agreement never credits a tie to the shallowest layer (docs/METHOD.md, "Seed agreement")."""

from __future__ import annotations

import numpy as np

from laya_inspect.training.stats import seed_agreement

KEYS = ("top_layer_agreement", "top_layer_chance_shares", "top_layer_agreement_constant")


def _weights(rng: np.random.Generator, n: int, n_layers: int, levels: int) -> np.ndarray:
    """(n, L) weights with few distinct values, so rows tie exactly."""
    return rng.integers(0, levels, size=(n, n_layers)).astype(np.float64)


def test_top_layer_agreement_does_not_depend_on_the_order_the_layers_are_listed_in() -> None:
    rng = np.random.default_rng(0)
    ws = [_weights(rng, 200, 4, 3) for _ in range(3)]
    forward = seed_agreement(ws)
    backward = seed_agreement([w[:, ::-1] for w in ws])
    assert forward is not None and backward is not None
    for key in KEYS:
        assert np.isclose(forward[key], backward[key]), key


def test_a_row_tied_between_two_layers_meets_a_seed_that_tops_either_half_the_time() -> None:
    tied = np.array([[0.5, 0.5, 0.0]])
    for other in ([[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]]):
        agree = seed_agreement([tied, np.array(other)])
        assert agree is not None
        assert agree["top_layer_agreement"] == 0.5
        assert agree["top_layer_chance_shares"] == 0.5
    agree = seed_agreement([tied, np.array([[0.0, 0.0, 1.0]])])
    assert agree is not None and agree["top_layer_agreement"] == 0.0


def test_without_ties_the_agreement_is_the_argmax_match() -> None:
    rng = np.random.default_rng(1)
    ws = [rng.random((300, 5)) for _ in range(3)]
    agree = seed_agreement(ws)
    assert agree is not None
    tops = [w.argmax(axis=1) for w in ws]
    pairs = [float((tops[a] == tops[b]).mean()) for a in range(3) for b in range(a + 1, 3)]
    assert agree["top_layer_agreement_pairs"] == pairs
    assert agree["top_layer_agreement"] == float(np.mean(pairs))
    shares = [np.bincount(t, minlength=5) / 300 for t in tops]
    chance = float(np.mean([float(shares[a] @ shares[b]) for a in range(3) for b in range(a + 1, 3)]))
    assert agree["top_layer_chance_shares"] == chance
