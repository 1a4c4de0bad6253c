"""Work compare shares instead of repeating gives the numbers the repeated work gave: the bootstrap's
row indices drawn once per (rows, resamples, seed), and the heads' summaries made in forked workers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.compare import metrics as M
from laya_inspect.compare.config import CompareConfig
from laya_inspect.compare.paired import paired_difference
from laya_inspect.compare.run import compare_heads


def _fresh(columns: list[np.ndarray], n_boot: int, seed: int) -> np.ndarray:
    """The resampled means drawn from a new generator every time: what each call computed on its own."""
    idx = np.random.default_rng(seed).integers(0, len(columns[0]), size=(n_boot, len(columns[0])))
    return np.stack([c[idx].mean(axis=1) for c in columns], axis=1)


def test_shared_resamples_are_each_seeds_own_draws_bit_for_bit() -> None:
    rng = np.random.default_rng(11)
    a, b, short = rng.normal(size=300), rng.normal(size=300), rng.normal(size=120)
    # interleaved keys: a cache that mixed up the seed, the rows or the resamples gives other numbers
    calls = [([a], 400, 0), ([a, b], 400, 1), ([short], 400, 0), ([b], 250, 0), ([a, b], 400, 0), ([b], 400, 1)]
    for columns, n_boot, seed in calls * 2:
        np.testing.assert_array_equal(
            M.resampled_means(columns, n_boot=n_boot, seed=seed), _fresh(columns, n_boot, seed)
        )
    assert M.resample_index(300, 400, 0) is M.resample_index(300, 400, 0)  # drawn once, not per interval
    assert not M.resample_index(300, 400, 0).flags.writeable  # shared: nobody may change it for the next caller


def test_drawn_in_chunks_the_stream_is_the_shared_draws_extended() -> None:
    """Past INDEX_DRAWS indices the resamples are drawn in chunks from one generator (not kept); their
    first ones are the shared draws, so an interval extended with more resamples keeps its first ones."""
    values = np.random.default_rng(2).normal(size=5_000)
    few = M.resampled_means([values], n_boot=400, seed=7)
    many = M.resampled_means([values], n_boot=1_000, seed=7)  # 5,000,000 indices: three chunks
    np.testing.assert_array_equal(many[:400], few)
    np.testing.assert_array_equal(many, _fresh([values], 1_000, 7))


def test_paired_and_plain_intervals_unchanged_by_the_sharing() -> None:
    d = np.random.default_rng(5).normal(0.1, 1.0, size=200)
    means = _fresh([d], 1000, 3)[:, 0]
    low, high = np.percentile(means, [2.5, 97.5])
    assert M.bootstrap_ci(d, n_boot=1000, seed=3) == (float(low), float(high))
    assert M.resampled_means([d], n_boot=1000, seed=3)[:, 0].tolist() == means.tolist()
    p = paired_difference(d, np.zeros(200), n_boot=1000, seed=3)
    assert (p.ci_low, p.ci_high) == (float(low), float(high))


@pytest.mark.slow
def test_heads_summarised_in_forked_workers_match_one_process(digits_cache: Path, tmp_path: Path) -> None:
    heads = tmp_path / "heads"
    fast = ["--epochs", "3", "--lr", "1e-2", "--batch-size", "32", "--no-probe", "--workers", "1"]
    fit = ["fit-head", str(digits_cache), "--head", "laya,last", "--seeds", "1", *fast, "--out", str(heads)]
    result = CliRunner().invoke(app, fit)
    assert result.exit_code == 0, result.output
    summaries = []
    for workers in (1, 2):
        config = CompareConfig(
            limit=80, n_steps=4, n_boot=200, plots=False, sanity=False, device="cpu", workers=workers
        )
        with FeatureStore(digits_cache) as store:
            done = compare_heads([heads], store, config, out_dir=tmp_path / f"cmp{workers}")
        # what differs by design: the time and the --workers asked for
        summaries.append(
            {k: v for k, v in done.summary.items() if k not in ("created_at", "config", "config_defaults")}
        )
    one, forked = summaries
    assert [h["name"] for h in forked["heads"]] == ["laya-seed_0", "last-seed_0"]
    assert forked["heads"][0]["methods"]["alpha"]["faithfulness"]["ci_low"] is not None  # intervals were drawn
    assert forked == one
