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


def test_a_closed_pipe_leaves_no_descriptor_open() -> None:
    """Each stream whose reader left kept one more descriptor of /dev/null open for good (the one
    opened to dup2 onto it): two per run with stdout and stderr both piped."""
    from laya_inspect.__main__ import _Left

    def open_fds() -> set[str]:
        return set(os.listdir("/proc/self/fd"))

    pipes = [os.pipe() for _ in range(2)]
    for read, _ in pipes:
        os.close(read)  # the reader leaves
    before = open_fds()
    streams = [_Left(write) for _, write in pipes]
    try:
        for stream in streams:
            assert stream.write(b"after the reader left") == 21
            assert stream.write(b"and again") == 9  # now to /dev/null
        assert open_fds() == before
        assert all(os.readlink(f"/proc/self/fd/{w}") == os.devnull for _, w in pipes)
    finally:
        _Left.reader_left = False
        for _, write in pipes:
            os.close(write)
