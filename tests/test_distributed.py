"""`extract` under torchrun with 2 gloo processes on CPU: the cache equals a one-process cache bit for bit,
moves with its shards, refuses a lost shard; a killed rank resumes; another number of processes is refused."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import ExitStack

import h5py
import numpy as np
import pytest

from laya_inspect.distributed import World, shard_ranges
from laya_inspect.errors import CacheError
from laya_inspect.extract import extract_features
from laya_inspect.extract_config import ExtractConfig
from laya_inspect.shards import _preflight, shard_dir, shard_path
from laya_inspect.store import FeatureStore
from laya_inspect.writer import partial_path

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
# Attributes that may differ from a one-process cache (docs/FORMATS.md): when it was made, and by how many.
DIFFERS = {"created_at", "world_size"}

MODEL = """
import os
import time
import torch


class Net(torch.nn.Module):
    # a small MLP on 8x8 digits, slowed down while the file SLOW exists so a run can be caught writing
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(64, 48), torch.nn.GELU(), torch.nn.Linear(48, 10)
        )

    def forward(self, x):
        if os.path.exists("SLOW"):
            time.sleep(0.02)
        return self.blocks(x)


def make():
    with open(f"pid-{os.environ.get('RANK', '0')}", "w") as f:
        f.write(str(os.getpid()))
    torch.manual_seed(0)
    return Net()
"""


def _extract(out, *extra, procs=1, batch=16):
    launch = [sys.executable, "-m", "laya_inspect"]
    if procs > 1:
        launch = [
            sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={procs}",
            "-m", "laya_inspect",
        ]  # fmt: skip
    return [
        *launch, "extract", "--model", "python:netmodel:make", "--random-init", "--data", "digits",
        "--image-size", "8", "--layers", "blocks.1,blocks.2,blocks.3", "--out", str(out), "--batch-size", str(batch),
        "--device", "cpu", *extra,
    ]  # fmt: skip


def _run(cmd, cwd):
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=cwd, timeout=300)


def _config(out, batch=16, **kw):
    return ExtractConfig(
        model="python:netmodel:make",
        random_init=True,
        data="digits",
        image_size=8,
        layers="blocks.1,blocks.2,blocks.3",
        out=str(out),
        batch_size=batch,
        device="cpu",
        **kw,
    )


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A folder holding the model's module, made the working directory (one-process runs happen in
    this process; torchrun's are launched from here)."""
    (tmp_path / "netmodel.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _contents(path):
    """Every attribute and array of an HDF5 file, by object name."""
    out = {}
    with h5py.File(path, "r") as f:
        out["/"] = {k: v for k, v in f.attrs.items() if k not in DIFFERS}

        def visit(name, obj):
            out[name] = dict(obj.attrs)
            if isinstance(obj, h5py.Dataset):
                out[name + "[]"] = obj[()]

        f.visititems(visit)
    return out


def _assert_same(one, two):
    a, b = _contents(one), _contents(two)
    assert a.keys() == b.keys()
    for key in a:
        if key.endswith("[]"):
            assert a[key].dtype == b[key].dtype, key
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)  # bit for bit, NaN included
        else:
            assert a[key].keys() == b[key].keys(), key
            for name in a[key]:
                assert np.array_equal(a[key][name], b[key][name]), (key, name)


def test_shard_ranges_are_contiguous_disjoint_and_aligned():
    for n in (0, 1, 7, 360, 1437, 10_000):
        for size in (1, 2, 3, 8):
            for align in (1, 8, 128):
                ranges = shard_ranges(n, size, align)
                assert ranges[0][0] == 0 and ranges[-1][1] == n
                assert all(a <= b for a, b in ranges)
                assert all(ranges[r][1] == ranges[r + 1][0] for r in range(size - 1))
                assert all(b % align == 0 for _, b in ranges[:-1] if b < n)
                # every boundary is within half a block of its even place, so each share within one block
                assert all(abs((b - a) - n / size) <= align for a, b in ranges)


def test_two_processes_write_the_one_process_cache_bit_for_bit(work):
    extract_features(_config(work / "one.h5"))
    two = _run(_extract(work / "two" / "f.h5", procs=2), work)
    assert two.returncode == 0, two.stderr
    assert "× 2 processes" in two.stdout and two.stdout.count("wrote train") == 1  # rank 0 alone speaks
    _assert_same(work / "one.h5", work / "two" / "f.h5")
    with h5py.File(work / "two" / "f.h5", "r") as f:
        assert int(f.attrs["world_size"]) == 2 and f["train/layer_000"].is_virtual
        assert {m.file_name for m in f["train/layer_000"].virtual_sources()} == {
            "f.h5.shards/rank-00000-of-00002.h5",
            "f.h5.shards/rank-00001-of-00002.h5",
        }
    manifest = json.loads((shard_dir(work / "two" / "f.h5") / "manifest.json").read_text())
    assert manifest["complete"] and manifest["world_size"] == 2 and manifest["splits"]["train"]["n"] == 1437

    # the folder moves as a whole (relative paths); readers see the same rows
    shutil.move(work / "two", work / "moved")
    with FeatureStore(work / "one.h5") as a, FeatureStore(work / "moved" / "f.h5") as b:
        assert a.fingerprint == b.fingerprint
        rows = np.array([1436, 0, 700, 769])
        np.testing.assert_array_equal(a.layer("train", 1, rows), b.layer("train", 1, rows))
    # a shard lost: refused, never read as fill values
    shard_path(work / "moved" / "f.h5", 1, 2).unlink()
    with pytest.raises(CacheError, match="rank-00001-of-00002.h5 is missing"):
        FeatureStore(work / "moved" / "f.h5")


def _wait_for_rows(path, rows, proc, deadline=120):
    end = time.time() + deadline
    while time.time() < end and proc.poll() is None:
        try:
            with h5py.File(partial_path(path), "r", locking=False) as f:
                if int(f["train"].attrs["n_written"]) >= rows:
                    return
        except (OSError, KeyError):
            pass
        time.sleep(0.05)
    proc.kill()
    pytest.skip("the extraction finished (or failed) before it could be caught writing")


@pytest.mark.slow
def test_a_killed_rank_resumes_and_another_world_size_is_refused(work):
    out = work / "c.h5"
    (work / "SLOW").touch()
    proc = subprocess.Popen(
        _extract(out, procs=2, batch=8), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=work
    )
    _wait_for_rows(shard_path(out, 1, 2), 64, proc)
    os.kill(int((work / "pid-1").read_text()), signal.SIGKILL)
    proc.communicate(timeout=120)
    assert proc.returncode != 0 and not out.exists()
    with h5py.File(partial_path(shard_path(out, 1, 2)), "r", locking=False) as f:
        kept = int(f["train"].attrs["n_written"])
    assert kept >= 64
    (work / "SLOW").unlink()

    # one process, or three, may not take over the rows shared out among two
    with pytest.raises(CacheError, match="interrupted extraction by 2 processes"):
        extract_features(_config(out, batch=8))
    with ExitStack() as held, pytest.raises(CacheError, match="this run has 3"):
        _preflight(_config(out, batch=8), World(rank=0, size=3), held)

    again = _run(_extract(out, procs=2, batch=8), work)
    assert again.returncode == 0, again.stderr
    assert "resumed from" in again.stdout
    extract_features(_config(work / "ref.h5", batch=8))
    _assert_same(work / "ref.h5", out)


def test_overwrite_under_torchrun_and_then_alone_replaces_the_shards(work):
    out = work / "d.h5"
    first = _run(_extract(out, "--split", "test", procs=2), work)
    assert first.returncode == 0, first.stderr
    with ExitStack() as held, pytest.raises(CacheError, match="already exists; pass --overwrite"):
        _preflight(_config(out, splits=("test",)), World(rank=0, size=2), held)
    extract_features(_config(out, splits=("test",), overwrite=True))
    assert not shard_dir(out).exists()  # the one-process cache replaced the shards it no longer needs
    with h5py.File(out, "r") as f:
        assert int(f.attrs["world_size"]) == 1 and not f["test/layer_000"].is_virtual


def _torchrun(*args):
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "laya_inspect",
        *args,
    ]


def _json(path):
    data = json.loads(path.read_text())
    data.pop("created_at", None)  # when it was made
    return data


@pytest.mark.slow
def test_fit_head_and_compare_under_torchrun_write_what_one_process_writes(work):
    """fit-head spreads its (head, seed) runs and compare its heads over 2 processes; rank 0 writes the
    folders, equal to one process's but for timings and the folder names they hold."""
    from laya_inspect.compare.config import CompareConfig
    from laya_inspect.compare.run import compare_heads
    from laya_inspect.training.fit_head import FitConfig, fit_heads

    cache = "c.h5"  # relative, as on the command lines below (the summaries record the paths given)
    extract_features(_config(cache, limit=300))
    fit = FitConfig(heads=("laya", "last"), seeds=(0, 1), epochs=2, probe=False, device="cpu")
    with FeatureStore(cache) as store:
        fit_heads(store, fit, out_dir="fit1")
    heads = ["fit1/laya/seed_0", "fit1/last/seed_1", "fit1/laya/seed_1"]
    with FeatureStore(cache) as store:
        compare_heads(heads, store, CompareConfig(limit=80, n_boot=200, plots=False, device="cpu"), out_dir="cmp1")

    two = _run(
        _torchrun("fit-head", "c.h5", "--head", "laya,last", "--seeds", "2", "--epochs", "2", "--no-probe",
                  "--device", "cpu", "--out", "fit2"),
        work,
    )  # fmt: skip
    assert two.returncode == 0, two.stderr
    assert two.stdout.count("test split, 2 seed(s)") == 1  # rank 0 alone prints
    assert _json(work / "fit1" / "summary.json") == _json(work / "fit2" / "summary.json")
    runs1, runs2 = json.loads((work / "fit1/runs.json").read_text()), json.loads((work / "fit2/runs.json").read_text())
    timing = {"seconds", "head_dir"}
    assert [{k: v for k, v in r.items() if k not in timing} for r in runs1] == [
        {k: v for k, v in r.items() if k not in timing} for r in runs2
    ]
    import torch

    for run in ("laya/seed_0", "laya/seed_1", "last/seed_1"):
        a, b = (torch.load(work / d / run / "weights.pt") for d in ("fit1", "fit2"))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), run

    two = _run(
        _torchrun("compare", "-c", "c.h5", *heads, "--limit", "80", "--bootstrap", "200", "--no-plots",
                  "--device", "cpu", "--out", "cmp2"),
        work,
    )  # fmt: skip
    assert two.returncode == 0, two.stderr
    one_summary, two_summary = _json(work / "cmp1" / "summary.json"), _json(work / "cmp2" / "summary.json")
    assert one_summary == two_summary  # each head runs whole on one process: the same numbers, not merely close
    with h5py.File(work / "cmp1" / "attributions.h5", "r") as a, h5py.File(work / "cmp2" / "attributions.h5", "r") as b:
        names = []
        a.visit(names.append)
        for name in names:
            if isinstance(a[name], h5py.Dataset):
                np.testing.assert_array_equal(a[name][()], b[name][()], err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("script", ["scaling.py", "gpu_check.py"])
def test_bench_scripts_smoke_mode_runs(script, tmp_path):
    """bench/scaling.py and bench/gpu_check.py (the GPU check, CPU against CPU) run to the end."""
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "bench" / script
    extra = ["--report", str(tmp_path / "r.md")] if script == "gpu_check.py" else []
    res = subprocess.run(
        [sys.executable, str(bench), "--smoke", *extra], capture_output=True, text=True, env=ENV, timeout=900
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    if script == "gpu_check.py":
        assert "| train (joint) test accuracy" in res.stdout and "**no**" not in res.stdout
        assert (tmp_path / "r.md").read_text().startswith("# GPU check")
    else:
        assert res.stdout.count("rows/s [zoo:mlp") == 3
