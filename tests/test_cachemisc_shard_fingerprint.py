"""Shards an `extract` under torchrun left, started by a laya-inspect that hashed every file of the data's
folder, resume on the same files as a one-process <out>.partial does: they were refused with "put the
files back", though nothing had changed; other files are still refused. A real 2-process run (gloo, CPU)
killed part-way, whose shards are rewritten to the older fingerprint. Real data: CIFAR-10 JPEGs from
../shared/data (skipped where absent)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import h5py
import pytest

from laya_inspect.cache.partial import partial_path
from laya_inspect.cache.rows import data_fingerprint
from laya_inspect.cache.schema import attrs_digest
from laya_inspect.cache.shards import shard_path
from laya_inspect.data import load_data
from tests.test_data_fingerprint import _every_file_digest

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}

MODEL = """
import os
import time
from collections import OrderedDict

import torch


def make():
    with open(f"pid-{os.environ.get('RANK', '0')}", "w") as f:
        f.write(str(os.getpid()))
    torch.manual_seed(0)
    parts = [("flat", torch.nn.Flatten()), ("hidden", torch.nn.Linear(192, 16)), ("act", torch.nn.GELU())]
    net = torch.nn.Sequential(OrderedDict([*parts, ("out", torch.nn.Linear(16, 2))]))
    # slowed down while the file SLOW exists, so that a run can be caught writing
    net.register_forward_pre_hook(lambda *_: time.sleep(0.3) if os.path.exists("SLOW") else None)
    return net
"""


@pytest.fixture
def work(cifar_cnn, tmp_path, monkeypatch):
    """24 CIFAR-10 JPEGs in two class folders beside a note, and the model's module, in the working folder."""
    shutil.copytree(cifar_cnn / "source", tmp_path / "cifar")
    (tmp_path / "cifar" / "airplane" / "README.txt").write_text("where these came from")  # hashed before, not now
    (tmp_path / "netmodel.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _extract(out):
    return [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m", "laya_inspect",
        "extract", "--model", "python:netmodel:make", "--random-init", "--data", "imagefolder:cifar",
        "--image-size", "8", "--layers", "hidden,act,out", "--out", str(out), "--batch-size", "2",
        "--device", "cpu",
    ]  # fmt: skip


def _killed_part_way(work, out):
    """Launch the 2-process extract and kill rank 1 once its shard holds rows: its partial shard stays."""
    (work / "SLOW").touch()
    proc = subprocess.Popen(_extract(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    partial = partial_path(shard_path(out, 1, 2))
    end = time.time() + 120
    while time.time() < end and proc.poll() is None:
        try:
            with h5py.File(partial, "r", locking=False) as f:
                if int(f["train"].attrs["n_written"]) >= 2:
                    break
        except (OSError, KeyError):
            pass
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.skip("the extraction finished (or failed) before it could be caught writing")
    os.kill(int((work / "pid-1").read_text()), signal.SIGKILL)
    proc.communicate(timeout=120)
    (work / "SLOW").unlink()
    assert proc.returncode != 0 and not out.exists() and partial.is_file()


def _as_an_older_version_recorded(out, older):
    """Each shard file left, its data fingerprint the older one (a finished shard sealed again)."""
    shards = [p for r in range(2) for p in (shard_path(out, r, 2), partial_path(shard_path(out, r, 2))) if p.exists()]
    for path in shards:
        with h5py.File(path, "r+") as f:
            f.attrs["data_fingerprint"] = older
            del f.attrs["data_content"]  # that laya-inspect recorded no sha256 of the files' bytes
            if "attrs_sha256" in f.attrs:
                f.attrs["attrs_sha256"] = attrs_digest(f)
    return shards


def _run(out):
    return subprocess.run(_extract(out), capture_output=True, text=True, env=ENV, timeout=300)


@pytest.mark.slow
def test_shards_started_under_the_older_fingerprint_resume_on_the_same_files_only(work):
    out = work / "c.h5"
    _killed_part_way(work, out)
    data = load_data("imagefolder:cifar", splits=("train", "test"), seed=0, image_size=8, normalize="none")
    older = _every_file_digest(work / "cifar", data)
    assert older != data_fingerprint(data)  # the rule did change
    assert _as_an_older_version_recorded(out, older)

    one = next((work / "cifar" / "automobile").iterdir())
    kept = one.stat()
    os.utime(one, ns=(kept.st_atime_ns, kept.st_mtime_ns + 10**9))
    refused = _run(out)  # other files: still refused
    assert refused.returncode != 0 and "put the files back" in refused.stdout + refused.stderr
    os.utime(one, ns=(kept.st_atime_ns, kept.st_mtime_ns))

    again = _run(out)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resumed from" in again.stdout
    with h5py.File(out, "r") as f:
        assert f.attrs["data_fingerprint"] == older  # the rows' record as they were started
        assert int(f.attrs["world_size"]) == 2
        assert {s: len(f[s]["labels"]) for s in ("train", "test")} == {s: sp.n for s, sp in data.splits.items()}
