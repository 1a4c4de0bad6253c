"""compare draws its figures with the processes its heads were measured with: several at once in forked
workers by default, every one in this process with ``--workers 1``; the PNG files are the same bytes."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from helpers import figures_saved_by, write_cache

import laya_inspect.compare.plots as compare_plots
import laya_inspect.workers as workers
from laya_inspect.cache.store import FeatureStore
from laya_inspect.compare.config import CompareConfig
from laya_inspect.compare.run import compare_heads
from laya_inspect.training.fit_head import FitConfig, fit_heads

pytestmark = pytest.mark.skipif(not workers.can_fork(), reason="forked workers need Linux")


@pytest.fixture(scope="module")
def heads(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """Two heads fitted on scikit-learn's digits, the image's top and bottom halves as two 'layers'."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:600], order[600:780]
    d = tmp_path_factory.mktemp("plotpar")
    cache = write_cache(
        d / "digits.h5",
        {s: ([x[r, :32], x[r, 32:]], y[r]) for s, r in (("train", train), ("test", test))},
        layer_names=["top", "bottom"],
    )
    config = FitConfig(heads=("laya", "scalarmix"), seeds=(0,), d_star=8, epochs=2, probe=False, workers=1)
    with FeatureStore(cache) as store:
        fit_heads(store, config, out_dir=d / "fit")
    return cache, [d / "fit" / h / "seed_0" for h in ("laya", "scalarmix")]


def test_workers_1_draws_every_figure_here_and_workers_2_the_same_bytes_in_children(
    heads: tuple[Path, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, dirs = heads
    monkeypatch.setattr(workers, "usable_cpus", lambda: 2)  # a 2-core machine, whatever this one has
    pids = figures_saved_by(tmp_path, monkeypatch, compare_plots, "save_figure")
    out: dict[int, Path] = {}
    with FeatureStore(cache) as store:
        for n in (1, 2):
            for f in pids.iterdir():
                f.unlink()
            out[n] = tmp_path / f"cmp{n}"
            config = CompareConfig(n_boot=50, methods=("alpha", "static"), workers=n, sanity=False)
            compare_heads(dirs, store, config, out_dir=out[n])
            drawers = {int(f.name.split("-")[0]) for f in pids.iterdir()}
            assert len(list(pids.iterdir())) >= 8, sorted(pids.iterdir())
            if n == 1:  # --workers 1: no process forked for the figures either
                assert drawers == {os.getpid()}, drawers
            else:
                assert os.getpid() not in drawers and len(drawers) == 2, drawers
    one = sorted(p.relative_to(out[1]) for p in out[1].rglob("*.png"))
    two = sorted(p.relative_to(out[2]) for p in out[2].rglob("*.png"))
    assert one == two and len(one) >= 8, (one, two)
    for rel in one:
        assert (out[1] / rel).read_bytes() == (out[2] / rel).read_bytes(), rel
