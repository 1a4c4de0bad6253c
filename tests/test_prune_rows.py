"""prune's α-vs-ranking verdicts read beside the test rows' own sampling (docs/METHOD.md, "Prune")."""

from __future__ import annotations

import numpy as np

from laya_inspect.beyond.prune import _compare_rankings

N = 200  # shared test rows
SEEDS = [0, 1, 2, 3, 4]


def _setup(gains: list[int], disagree: int) -> tuple[dict, dict, dict]:
    """Two layers; α keeps layer 0 at k = 1, depth keeps layer 1. At seed i, depth answers rows
    [0, 100) right, α the rows shifted by ``disagree`` plus ``gains[i]`` more: α − depth is
    gains[i] / N on seed i, and the two sets answer about 2·disagree rows differently."""
    ranked = {"alpha": {s: [0, 1] for s in SEEDS}, "depth": {s: [1, 0] for s in SEEDS}}
    results, rights = {}, {}
    for s, g in zip(SEEDS, gains):
        depth = np.zeros(N, bool)
        depth[:100] = True
        alpha = np.zeros(N, bool)
        alpha[disagree : 100 + disagree + g] = True
        every = np.ones(N, bool)
        for layers, right in (((0,), alpha), ((1,), depth), ((0, 1), every)):
            rights[layers, s] = right
            results[layers, s] = (0.5, float(right.mean()))
    return ranked, results, rights


def test_alpha_beats_depth_over_seeds_within_the_rows_sampling_is_withheld():
    ranked, results, rights = _setup([1, 2, 1, 2, 1], disagree=20)
    _, vs = _compare_rankings(ranked, results, [1], SEEDS, None, n_layers=2, rights=rights)
    e = vs["depth"]
    d, rows = e["mean_test_acc_over_k_diff"], e["test_rows"]
    assert d["ci_low"] > 0  # over seeds alone, α beats depth
    assert rows["rows"] == N and rows["seeds"] == len(SEEDS)
    assert abs(rows["mean"] - d["mean"]) < 1e-12  # the rows' mean is the same difference
    assert rows["dominates"] and rows["holds_zero"] and rows["withheld"]
    assert rows["half_width"] > 0.05  # ~43 of 200 rows differ: ±0.06
    assert e["verdict"].startswith("no verdict on the α ranking against the depth ranking"), e["verdict"]
    assert "beats" not in e["verdict"] and f"{N} shared test rows" in e["verdict"]


def test_alpha_beats_depth_past_the_rows_sampling_says_its_width():
    ranked, results, rights = _setup([40, 41, 40, 41, 40], disagree=5)
    _, vs = _compare_rankings(ranked, results, [1], SEEDS, None, n_layers=2, rights=rights)
    e = vs["depth"]
    rows = e["test_rows"]
    assert rows["dominates"] and not rows["holds_zero"] and not rows["withheld"]
    assert e["verdict"].startswith("the α ranking beats the depth ranking"), e["verdict"]
    assert f"the {N} shared test rows alone allow (±{rows['half_width']:.4f}" in e["verdict"]


def test_rows_far_narrower_than_the_seeds_add_nothing():
    # every row answered alike but the gained ones: the rows' interval is no wider than the seeds'
    ranked, results, rights = _setup([2, 30, 2, 30, 2], disagree=0)
    _, vs = _compare_rankings(ranked, results, [1], SEEDS, None, n_layers=2, rights=rights)
    e = vs["depth"]
    assert not e["test_rows"]["dominates"] and not e["test_rows"]["withheld"]
    assert "shared test rows" not in e["verdict"], e["verdict"]
