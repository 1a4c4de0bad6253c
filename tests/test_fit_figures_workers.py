"""fit-head draws its profile figures with the processes its runs used: `--workers 1` drew its heads in
this process but still forked a worker per figure (compare's figures followed --workers already)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import figures_saved_by
from test_plotpar_compare import heads  # noqa: F401  (a fixture: a digits cache and two heads)

import laya_inspect.training.plots as fit_plots
import laya_inspect.workers as workers
from laya_inspect.cache.store import FeatureStore
from laya_inspect.training.fit_head import FitConfig, fit_heads

pytestmark = pytest.mark.skipif(not workers.can_fork(), reason="forked workers need Linux")


def test_workers_1_draws_the_profile_figures_here_and_workers_2_in_children(
    heads: tuple[Path, list[Path]],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache, _ = heads
    monkeypatch.setattr(workers, "usable_cpus", lambda: 2)  # a 2-core machine, whatever this one has
    pids = figures_saved_by(tmp_path, monkeypatch, fit_plots, "_save")
    out: dict[int, Path] = {}
    with FeatureStore(cache) as store:
        for n in (1, 2):
            for f in pids.iterdir():
                f.unlink()
            out[n] = tmp_path / f"fit{n}"
            config = FitConfig(heads=("laya", "scalarmix"), seeds=(0, 1), d_star=8, epochs=2, probe=False, workers=n)
            fit_heads(store, config, out_dir=out[n])
            drawers = {int(f.name.split("-")[0]) for f in pids.iterdir()}
            assert len(list(pids.iterdir())) >= 4, sorted(pids.iterdir())
            if n == 1:
                assert drawers == {os.getpid()}, drawers
            else:
                assert os.getpid() not in drawers, drawers
    one = sorted(p.relative_to(out[1]) for p in (out[1] / "profiles").rglob("*.png"))
    two = sorted(p.relative_to(out[2]) for p in (out[2] / "profiles").rglob("*.png"))
    assert one == two and len(one) >= 4, (one, two)
    for rel in one:
        assert (out[1] / rel).read_bytes() == (out[2] / rel).read_bytes(), rel
