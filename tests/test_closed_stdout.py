"""A reader that leaves the pipe (`laya-inspect demo | head`): the command stops writing to stdout
quietly, finishes its work and files, and exits 141 (128 + SIGPIPE) instead of 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}


@pytest.mark.slow
def test_a_demo_piped_into_head_finishes_its_files_and_exits_141(tmp_path: Path) -> None:
    """`demo | head -3` died with exit 1 at its first print after head left, its folder half-made
    (demo.json "complete": false, no cache, heads or page)."""
    out = tmp_path / "d"
    cmd = [sys.executable, "-m", "laya_inspect", "demo", "--quick", "--device", "cpu", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()  # the header, printed before the first step
    proc.stdout.close()  # the reader leaves: every later print goes to a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141, err
    assert first.startswith(b"laya-inspect demo")
    assert "Traceback" not in err and "Broken pipe" not in err and "error" not in err, err
    record = json.loads((out / "demo.json").read_text())
    assert record["complete"] is True
    assert all(s["seconds"] is not None for s in record["steps"])
    for rel in ("backbone.pt", "features.h5", "heads/summary.json", "compare/summary.json", "report.html"):
        assert (out / rel).is_file(), rel
