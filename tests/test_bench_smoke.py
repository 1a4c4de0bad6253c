"""Every bench/ script's --smoke mode runs to the end and prints each of its table rows: a ratio or time
line, or a skip line naming what is missing where its real data or weights are absent. Timings are
never asserted (docs/PERFORMANCE.md reads them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import _bench  # noqa: E402

pytestmark = pytest.mark.slow
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
IMAGES = _bench.mobilenet_weights() is not None and _bench.CIFAR_TAR.exists()

# script → [(line prefix, whether the row's data and weights are here)]
ROWS = {
    "extract_throughput.py": [
        ("ratio extract/plain-forward [zoo MLP", _bench.fmnist_spec() is not None),
        ("ratio extract/plain-forward [MobileNetV2", IMAGES),
        ("ratio cli-end-to-end/model-only", IMAGES),
        ("ratio batch-128/batch-16", IMAGES),
    ],
    "attribution_cost.py": [
        ("ratio ig/", True),
        ("ratio captum-default-ig/", True),
        ("ratio lolo/", True),
        ("time compare --method all [", True),
        ("ratio compare-with-plots/without", True),
    ],
    "fit_epoch.py": [("ratio fit-head-epoch/hand-loop", True)],
    "captum_layer_ig.py": [("ratio captum-layer-ig/cached-ig per sample", IMAGES)],
    "cli_latency.py": [("time laya-inspect --help", True), ("ratio help/bare-python-startup", True)],
    "tie_curves.py": [("ratio tie-curves-loop/vectorised [", True)],
    "prune_speed.py": [
        ("ratio batch-gather h[idx]/index_select", True),
        ("ratio prune-refits before/after [MobileNetV2", IMAGES),
        ("ratio prune every-k/coarse [MobileNetV2", IMAGES),
        ("ratio prune-refits before/after [zoo MLP", True),
    ],
}


def test_every_performance_script_has_a_smoke_test():
    scripts = {p.name for p in BENCH.glob("*.py") if not p.name.startswith("_") and "import _bench" in p.read_text()}
    assert scripts == set(ROWS)


@pytest.mark.parametrize("script", sorted(ROWS))
def test_smoke_mode_prints_every_row(script):
    res = subprocess.run(
        [sys.executable, str(BENCH / script), "--smoke"], capture_output=True, text=True, env=ENV, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    for prefix, available in ROWS[script]:
        if available:
            assert any(line.startswith(prefix) for line in lines), (prefix, res.stdout)
        else:
            label = prefix.split(" ", 1)[1]
            assert any(line.startswith(("skip " + label, prefix)) for line in lines), (prefix, res.stdout)
    for line in lines:
        if line.startswith("ratio "):
            assert "×" in line and "per-round" in line, line
    assert "machine load" in res.stdout
