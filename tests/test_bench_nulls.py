"""The null simulations of bench/ (docs/METHOD.md cites their rates): --help prints the script's
docstring and exits instead of starting a simulation of minutes, and --smoke runs the simulation
through the library's own verdict functions, so a changed signature there breaks here, not in a
reader's reproduction."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
NULLS = sorted(p.name for p in BENCH.glob("*.py") if "null" in p.name and not p.name.startswith("_"))
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH / script), *args], capture_output=True, text=True, env=ENV, timeout=300
    )


def test_the_null_simulations_are_all_here():
    assert NULLS == [
        "best_null.py",
        "class_shift_null.py",
        "few_errors_null.py",
        "shift_null.py",
        "verdict_nulls.py",
    ]


@pytest.mark.parametrize("script", NULLS)
def test_help_prints_the_docstring_and_runs_nothing(script):
    res = _run(script, "--help")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "--smoke" in res.stdout and f"python bench/{script}" in res.stdout, res.stdout
    assert _run(script, "--no-such-flag").returncode == 2


@pytest.mark.slow
@pytest.mark.parametrize("script", NULLS)
def test_smoke_runs_the_simulation_to_the_end(script):
    res = _run(script, "--smoke")
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip(), script
