"""`extract` under torchrun with 2 gloo processes on CPU: the cache equals a one-process cache bit for bit,
moves with its shards, refuses a lost shard; a killed rank resumes; another number of processes is refused.
`fit-head` and `compare` under torchrun write what one process writes; compare's rows split over the
processes get the random draws one process gives them."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from laya_inspect.cache.extract import extract_features
from laya_inspect.cache.extract_config import ExtractConfig
from laya_inspect.cache.partial import partial_path
from laya_inspect.cache.schema import attrs_digest
from laya_inspect.cache.shards import _plan, _preflight, shard_dir, shard_path
from laya_inspect.cache.store import FeatureStore
from laya_inspect.compare.attribution import AttributionOptions, attribute
from laya_inspect.compare.draws import RowSpan
from laya_inspect.compare.effects import Measured, Remover, measure
from laya_inspect.distributed import World, shard_ranges
from laya_inspect.errors import CacheError
from laya_inspect.heads import build_head
from laya_inspect.runtime import no_progress

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
# Attributes that may differ from a one-process cache (docs/FORMATS.md): when it was made, and by how many.
DIFFERS = {"created_at", "world_size", "attrs_sha256"}  # the digest covers the other two

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


@pytest.mark.parametrize(
    ("device", "gpu"), [("cuda:0", "cuda:0"), ("cuda:3", "cuda:3"), ("cuda", "cuda:1"), ("auto", "cuda:1")]
)
def test_each_process_selects_the_gpu_its_device_names(device, gpu, monkeypatch):
    """Under torchrun, a named cuda:N puts every process on GPU N (two processes sharing one GPU: the
    H200 check in docs/gpu-check-2026-12-04-cuda.md once failed here with "invalid device ordinal"
    on rank 1); cuda and auto mean the process's own GPU, cuda:LOCAL_RANK."""
    import torch.distributed as dist

    from laya_inspect import distributed

    selected: list[torch.device] = []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "set_device", selected.append)
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", lambda backend, timeout: None)
    world, joined = distributed._join(device)
    assert joined and world.backend == "cpu:gloo,cuda:nccl"
    assert selected == [torch.device(gpu)]


def test_two_processes_write_the_one_process_cache_bit_for_bit(work):
    extract_features(_config(work / "one.h5"))
    two = _run(_extract(work / "two" / "f.h5", procs=2), work)
    assert two.returncode == 0, two.stderr
    assert "× 2 processes" in two.stdout and two.stdout.count("wrote train") == 1  # rank 0 alone speaks
    _assert_same(work / "one.h5", work / "two" / "f.h5")
    with h5py.File(work / "two" / "f.h5", "r") as f:
        assert int(f.attrs["world_size"]) == 2 and f["train/layer_000"].is_virtual
        assert f.attrs["attrs_sha256"] == attrs_digest(f)  # its own attributes', not rank 0's shard's
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
    from laya_inspect.out_dir import read_record, unproven_file

    assert read_record(out) is not None and unproven_file(out) is None  # the joined cache, recorded as renamed
    with ExitStack() as held, pytest.raises(CacheError, match="already exists; pass --overwrite"):
        _preflight(_config(out, splits=("test",)), World(rank=0, size=2), held)
    extract_features(_config(out, splits=("test",), overwrite=True))
    assert not shard_dir(out).exists()  # the one-process cache replaced the shards it no longer needs
    with h5py.File(out, "r") as f:
        assert int(f.attrs["world_size"]) == 1 and not f["test/layer_000"].is_virtual


@pytest.mark.slow
def test_overwrite_under_torchrun_killed_mid_run_keeps_the_old_cache_and_a_rerun_replaces_it(work):
    """QA (data loss): under torchrun, --overwrite removed the old cache when the plan was made, so a run
    killed or failing afterwards left the user with no cache, where one process keeps the old file until
    the new one is renamed over it. The old cache, its shards and its record now stay until the join."""
    from laya_inspect.out_dir import unproven_file

    out = work / "k.h5"
    first = _run(_extract(out, "--split", "test", procs=2, batch=8), work)
    assert first.returncode == 0, first.stderr
    old = _contents(out)
    before = out.read_bytes()
    (work / "SLOW").touch()
    proc = subprocess.Popen(
        _extract(out, "--overwrite", procs=2, batch=8),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=work,
    )
    _wait_for_rows(_being_written(work, "k.h5.shards*/rank-00001-of-00002.h5", proc), 64, proc)
    os.kill(int((work / "pid-1").read_text()), signal.SIGKILL)
    proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert out.read_bytes() == before and unproven_file(out) is None  # as it was, and still proven by its record
    _assert_same_contents(old, _contents(out))  # its shards too
    (work / "SLOW").unlink()

    again = _run(_extract(out, "--overwrite", procs=2, batch=8), work)
    assert again.returncode == 0, again.stderr
    extract_features(_config(work / "ref.h5", batch=8))
    _assert_same(work / "ref.h5", out)
    assert sorted(p.name for p in work.iterdir() if p.name.startswith("k.h5")) == ["k.h5", "k.h5.shards"]
    assert unproven_file(out) is None


def _being_written(folder, pattern, proc, deadline=120):
    """The shard file matching ``pattern`` whose partial file has appeared (the new run's, wherever its
    shards are written)."""
    end = time.time() + deadline
    while time.time() < end and proc.poll() is None:
        found = sorted(folder.glob(pattern + ".partial"))
        if found:
            return found[0].with_suffix("")
        time.sleep(0.05)
    proc.kill()
    pytest.skip("the extraction finished (or failed) before it could be caught writing")


def _assert_same_contents(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if key.endswith("[]"):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_overwrite_under_torchrun_keeps_the_old_cache_until_the_join_and_checks_it_again_there(work):
    """The plan of an --overwrite run leaves the old cache and its shards in place (the new shards go to
    OUT.shards.partial); a cache edited while the shards were written is refused at the join, kept as
    edited, its shards with it."""
    from laya_inspect.cache.rows import prepare
    from laya_inspect.cache.shards import _write_shard, merge_shards
    from laya_inspect.errors import InputError

    out = work / "j.h5"
    extract_features(_config(out, splits=("test",)))  # recorded beside it
    before = out.read_bytes()
    config = _config(out, splits=("test",), overwrite=True)
    prep = prepare(config, torch.device("cpu"), world_size=2)
    plan, folder = _plan(config, World(rank=0, size=2), prep)
    assert out.exists() and out.read_bytes() == before  # kept, its shards too: the new ones go elsewhere
    assert Path(folder) == work / "j.h5.shards.partial"
    for rank in range(2):
        _write_shard(config, World(rank=rank, size=2), prep, plan, Path(folder), no_progress)
    with h5py.File(out, "a") as f:
        f.attrs["note"] = "checked by hand"  # edited while the shards were written
    edited = out.read_bytes()
    with pytest.raises(InputError, match="is not as laya-inspect wrote it"):
        merge_shards(out, 2, plan, Path(folder), overwrite=True)
    assert out.read_bytes() == edited and not shard_dir(out).exists()


def test_overwrite_under_torchrun_checks_the_cache_again_before_removing_it(work):
    """QA (race): under torchrun, --overwrite checked the old cache before the model loaded and removed
    it once loaded without checking again, so an edit made meanwhile was lost. The plan checks it
    again, as the one-process writer does before its rename, and leaves an edited cache as it is."""
    from laya_inspect.cache.rows import prepare
    from laya_inspect.errors import InputError

    out = work / "e.h5"
    extract_features(_config(out, splits=("test",)))  # recorded beside it
    config = _config(out, splits=("test",), overwrite=True)
    prep = prepare(config, torch.device("cpu"), world_size=2)  # what the processes do after the first check
    with h5py.File(out, "a") as f:
        f.attrs["note"] = "checked by hand"  # edited while the model loaded
    before = out.read_bytes()
    with pytest.raises(InputError, match="is not as laya-inspect wrote it"):
        _plan(config, World(rank=0, size=2), prep)
    assert out.read_bytes() == before and not shard_dir(out).exists()


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_users_file_at_the_records_name_is_refused_under_torchrun_before_any_work(work, overwrite):
    """The joined cache's record (`.NAME.laya-inspect.json`) must not replace a user's file of that name:
    refused when the run starts, as the one-process writer refuses it, and again before the join."""
    from laya_inspect.cache.shards import merge_shards
    from laya_inspect.errors import InputError
    from laya_inspect.out_dir import record_of

    out = work / "f.h5"
    record_of(out).write_text("my notes\n")
    with ExitStack() as held, pytest.raises(InputError, match="not a record laya-inspect wrote"):
        _preflight(_config(out, splits=("test",), overwrite=overwrite), World(rank=0, size=2), held)
    with pytest.raises(InputError, match="not a record laya-inspect wrote"):
        merge_shards(out, 2, {"test": [(0, 8), (8, 16)]})
    assert record_of(out).read_text() == "my notes\n" and not out.exists() and not shard_dir(out).exists()


def test_overwrite_under_torchrun_of_an_unrecorded_cache_says_so_at_the_end_and_in_the_joined_caches_notes(work):
    """The note that --overwrite replaced a cache with no record: in the end-of-run warnings and the
    joined cache's `overwrite_notes`, as a one-process run gives it, not in its `warnings`."""
    from laya_inspect.cache.schema import decode_attr
    from laya_inspect.out_dir import record_of

    out = work / "n.h5"
    extract_features(_config(out, splits=("test",)))
    record_of(out).unlink()  # as an earlier version left it
    r = _run(_extract(out, "--split", "test", "--overwrite", procs=2), work)
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stderr.split())
    assert said.count(f"{out} had no record beside it") == 1, r.stderr  # once, with the other warnings
    assert f"warning: {out} had no record beside it" in said, r.stderr
    record_of(out).unlink()
    alone = _run(_extract(out, "--split", "test", "--overwrite"), work)  # one process says it once too
    assert alone.returncode == 0, alone.stderr
    assert " ".join(alone.stderr.split()).count(f"{out} had no record beside it") == 1, alone.stderr
    with h5py.File(out, "r") as f:
        assert any("could not be seen" in n for n in decode_attr(f.attrs["overwrite_notes"]))
        assert not any("no record" in w for w in decode_attr(f.attrs["warnings"]))


CONSTANT_MODEL = """
import os
import torch


class Net(torch.nn.Module):
    # 'same' gives one row for every input; 'per_rank' one row per process, another in each shard
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
        self.same = torch.nn.Identity()
        self.per_rank = torch.nn.Identity()

    def forward(self, x):
        h = self.blocks(x)
        same = self.same(torch.full((len(x), 4), 2.0))
        rank = self.per_rank(torch.full((len(x), 4), 1.0 + float(os.environ.get("RANK", "0"))))
        return h + 0 * (same.sum() + rank.sum())


def make():
    torch.manual_seed(0)
    return Net()
"""


def test_under_torchrun_the_joined_cache_names_a_layer_that_gives_one_row_for_every_input(work):
    """QA: each process checked only its own shard and the joined cache said nothing (or repeated rank
    0's verdict): the join decides over every shard, so a layer constant within each shard but
    different between them is not named, and the joined cache says what a one-process cache says."""
    (work / "constmodel.py").write_text(CONSTANT_MODEL)
    out = work / "c.h5"
    cmd = _extract(out, "--split", "test", "--limit", "64", procs=2, batch=8)
    cmd[cmd.index("python:netmodel:make")] = "python:constmodel:make"
    cmd[cmd.index("--layers") + 1] = "blocks.1,same,per_rank"
    two = _run(cmd, work)
    assert two.returncode == 0, two.stderr
    said = "same (pooled by none) gives the same row for every input"
    told = " ".join(two.stderr.split())  # warnings go to stderr, once: rank 0 speaks for all
    assert told.count(f"warning: {said}") == 1 and "per_rank (pooled by" not in told, two.stderr
    with FeatureStore(out) as store:
        ours = [w for w in store.attrs["warnings"] if "the same row for every input" in w]
        rows = store.layer("test", 2)
    assert len(ours) == 1 and ours[0].startswith(said), ours
    assert set(np.unique(rows[:, 0])) == {1.0, 2.0}  # per_rank: rank 0's rows 1, rank 1's rows 2
    for rank in range(2):  # each shard records what the join reads, and no verdict of its own
        with h5py.File(shard_path(out, rank, 2), "r") as f:
            assert "the same row" not in f.attrs["warnings"] and json.loads(f.attrs["row_spread"])["rows"] == 32
    with h5py.File(out, "r") as f:
        assert "row_spread" not in f.attrs


def test_under_torchrun_the_joined_cache_names_layers_that_hold_the_same_values(work):
    """QA: the join of the shards ran only the constant-layer check, so one tensor cached under two
    names (blocks.3 and the blocks it ends) got the duplicate warning from one process only."""
    layers = ["--split", "test", "--limit", "64", "--layers", "blocks.2,blocks.3,blocks"]
    one = _run(_extract(work / "one.h5", *layers), work)
    two = _run(_extract(work / "two.h5", *layers, procs=2, batch=8), work)
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    said = "layers that hold the same values (blocks.3 = blocks; their first 8 rows are equal)"
    assert " ".join(two.stderr.split()).count(f"warning: {said}") == 1, two.stderr  # rank 0 speaks for all
    for out in ("one.h5", "two.h5"):
        with FeatureStore(work / out) as store:
            assert (
                [w for w in store.attrs["warnings"] if "hold the same values" in w]
                == [w for w in store.attrs["warnings"] if w.startswith(said)]
                != []
            ), out


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
    data.pop("workers", None)  # how many runs one process ran at once
    return data


@pytest.mark.slow
def test_fit_head_and_compare_under_torchrun_write_what_one_process_writes(work):
    """fit-head spreads its (head, seed) runs over 2 processes and compare its rows (80 rows, batches of
    512: all on rank 1, none on rank 0); rank 0 writes the folders, equal to one process's but for
    timings and the folder names they hold."""
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
    assert two.stdout.count("test split, 2 seeds") == 1  # rank 0 alone prints
    assert _json(work / "fit1" / "summary.json") == _json(work / "fit2" / "summary.json")
    runs1, runs2 = json.loads((work / "fit1/runs.json").read_text()), json.loads((work / "fit2/runs.json").read_text())
    timing = {"seconds", "head_dir"}
    assert [{k: v for k, v in r.items() if k not in timing} for r in runs1] == [
        {k: v for k, v in r.items() if k not in timing} for r in runs2
    ]
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
    assert one_summary == two_summary  # the same batches as one process: the same numbers, not merely close
    with h5py.File(work / "cmp1" / "attributions.h5", "r") as a, h5py.File(work / "cmp2" / "attributions.h5", "r") as b:
        names = []
        a.visit(names.append)
        for name in names:
            if isinstance(a[name], h5py.Dataset):
                np.testing.assert_array_equal(a[name][()], b[name][()], err_msg=name)


@pytest.mark.parametrize("ablation", ["mean", "resample"])
def test_rows_measured_in_parts_and_joined_equal_all_rows_measured_at_once(ablation):
    """What compare does under torchrun, in one process: the random method, the random and top-1-only
    orderings and resample's donors drawn for rows 8…22 alone (RowSpan) are those rows' draws among
    all 23, so the parts joined equal the whole, bit for bit (the parts run the whole's batches)."""
    widths = [5, 3, 4, 2]
    torch.manual_seed(3)
    head = build_head("laya", widths, 4, d_star=6, score_width=10).double().eval()
    hs = [torch.randn(23, w, dtype=torch.float64) for w in widths]
    target = torch.randint(0, 4, (23,)).numpy()
    kw = {
        "baselines": [h.mean(0).numpy() for h in hs],
        "donors": [torch.randn(9, w, dtype=torch.float64).numpy() for w in widths],
        "seed": 5,
        "batch_size": 8,
    }
    whole = measure(Remover(head, hs, target, ablation, **kw), seed=5)
    cuts = shard_ranges(23, 2, 8)  # what two processes take, in batches of 8
    assert cuts == [(0, 8), (8, 23)]
    parts = [
        measure(Remover(head, [h[a:b] for h in hs], target[a:b], ablation, span=RowSpan(a, 23), **kw), seed=5)
        for a, b in cuts
    ]
    joined = Measured.join(parts)
    for name in ("p", "p_ablated", "effects", "p_subsets", "finite"):
        np.testing.assert_array_equal(getattr(joined, name), getattr(whole, name), err_msg=name)
    for ref in ("oracle", "random", "top1_only"):
        for name in ("scores", "p_topk", "p_keep"):
            got, want = getattr(getattr(joined, ref), name), getattr(getattr(whole, ref), name)
            np.testing.assert_array_equal(got, want, err_msg=f"{ref}.{name}")
    # without the offset the second part would draw the first rows' numbers: the check has teeth
    alone = measure(Remover(head, [h[16:] for h in hs], target[16:], ablation, **kw), seed=5)
    assert not np.array_equal(alone.random.scores, whole.random.scores[16:])

    options = AttributionOptions(seed=7)
    full = attribute("random", head, hs, target, options).scores
    tail = attribute(
        "random", head, [h[16:] for h in hs], target[16:], AttributionOptions(seed=7, span=RowSpan(16, 23))
    )
    np.testing.assert_array_equal(tail.scores, full[16:])


def _assert_close(a, b, where="summary"):
    """Equal JSON, numbers within 1e-9 relative (NaN equal to NaN)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            _assert_close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        assert (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (where, a, b)
    else:
        assert a == b, (where, a, b)


@pytest.mark.slow
def test_compare_of_one_head_splits_its_rows_over_two_processes(work):
    """One LAYA head, every method and every ablation, 200 rows in batches of 64: rank 0 measures rows
    0…127 and rank 1 rows 128…199; rank 0 writes the summary and arrays one process writes."""
    from laya_inspect.compare.config import CompareConfig
    from laya_inspect.compare.run import compare_heads
    from laya_inspect.training.fit_head import FitConfig, fit_heads

    assert shard_ranges(200, 2, 64) == [(0, 128), (128, 200)]
    cache = "c.h5"
    extract_features(_config(cache, limit=300))
    with FeatureStore(cache) as store:
        fit_heads(store, FitConfig(heads=("laya",), seeds=(0,), epochs=2, probe=False, device="cpu"), out_dir="fit")
        config = CompareConfig(
            methods=("all",), ablation="all", limit=200, batch_size=64, n_boot=200, plots=False, device="cpu"
        )
        compare_heads(["fit/laya/seed_0"], store, config, out_dir="one")
    two = _run(
        _torchrun("compare", "-c", cache, "fit/laya/seed_0", "--method", "all", "--ablation", "all", "--limit", "200",
                  "--batch-size", "64", "--bootstrap", "200", "--no-plots", "--device", "cpu", "--out", "two"),
        work,
    )  # fmt: skip
    assert two.returncode == 0, two.stderr
    one_summary, two_summary = _json(work / "one" / "summary.json"), _json(work / "two" / "summary.json")
    assert one_summary["n"] == 200 and one_summary["ablations"] == ["mean", "zero", "resample", "drop", "mix"]
    _assert_close(one_summary, two_summary)
    with h5py.File(work / "one" / "attributions.h5", "r") as a, h5py.File(work / "two" / "attributions.h5", "r") as b:
        names: list[str] = []
        a.visit(names.append)
        datasets = [n for n in names if isinstance(a[n], h5py.Dataset)]
        assert {"heads/laya-seed_0/methods/random/scores", "heads/laya-seed_0/ablations/resample/p"} <= set(datasets)
        for name in datasets:
            x, y = a[name][()], b[name][()]
            if np.issubdtype(x.dtype, np.floating):
                np.testing.assert_allclose(y, x, rtol=1e-9, atol=0, equal_nan=True, err_msg=name)
            else:
                np.testing.assert_array_equal(y, x, err_msg=name)


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


def test_a_cache_whose_swap_was_stopped_says_so_and_how_to_mend_it(work):
    """A kill between the join's renames leaves OUT without OUT.shards (the old shards in OUT.shards.old,
    the new in OUT.shards.partial): the reader refuses it, naming the stopped --overwrite, instead of
    telling the user to keep a folder that is gone beside it."""
    out = work / "s.h5"
    r = _run(_extract(out, "--split", "test", procs=2), work)
    assert r.returncode == 0, r.stderr
    FeatureStore(out).close()  # readable as joined
    shard_dir(out).rename(work / "s.h5.shards.old")  # where the swap puts the old shards first
    (work / "s.h5.shards.partial").mkdir()
    with pytest.raises(CacheError, match=r"extract --overwrite` under torchrun was stopped .* rerun that extract"):
        FeatureStore(out)


def test_a_file_saved_at_out_while_the_shards_were_written_is_not_replaced_by_the_join(work):
    """QA (race): the join renamed the joined cache over whatever was at OUT by then, a file the user
    saved there while the shards were written included; it is now refused, the file and the shards kept."""
    from laya_inspect.cache.shards import merge_shards, read_manifest
    from laya_inspect.errors import InputError

    out = work / "u.h5"
    r = _run(_extract(out, "--split", "test", procs=2), work)
    assert r.returncode == 0, r.stderr
    plan = {s: [tuple(x) for x in v["ranges"]] for s, v in read_manifest(out)["splits"].items()}
    out.unlink()  # as before the join
    out.write_text("my notes\n")  # saved there meanwhile
    with pytest.raises(InputError, match="was saved there while the shards were written"):
        merge_shards(out, 2, plan)
    assert out.read_text() == "my notes\n" and shard_path(out, 1, 2).exists()


def _sharded(out, overwrite=False, before_join=lambda: None):
    """A torchrun extraction of two processes, run in this process: the plan, each rank's shard, the join."""
    from laya_inspect.cache.rows import prepare
    from laya_inspect.cache.shards import _write_shard, merge_shards

    config = _config(out, splits=("test",), overwrite=overwrite)
    prep = prepare(config, torch.device("cpu"), world_size=2)
    plan, folder = _plan(config, World(rank=0, size=2), prep)
    for rank in range(2):
        _write_shard(config, World(rank=rank, size=2), prep, plan, Path(folder), no_progress)
    before_join()
    return merge_shards(out, 2, plan, Path(folder), overwrite=overwrite)


def test_overwrite_under_torchrun_keeps_a_file_saved_in_the_shards_folder_while_the_shards_were_written(work):
    """QA (data loss): the swap removed the old shards' folder whole, with a file the user saved in it
    after the run's first check; the join now refuses it by name and leaves the old cache as it was."""
    from laya_inspect.errors import InputError
    from laya_inspect.out_dir import unproven_file

    out = work / "n.h5"
    _sharded(out)
    before = out.read_bytes()
    notes = shard_dir(out) / "notes.txt"
    with pytest.raises(InputError, match=r"n\.h5\.shards is a folder holding notes\.txt"):
        _sharded(out, overwrite=True, before_join=lambda: notes.write_text("mine\n"))
    assert notes.read_text() == "mine\n"
    assert out.read_bytes() == before and unproven_file(out) is None
    FeatureStore(out).close()  # still read from its own shards


def test_overwrite_by_one_process_keeps_a_file_saved_in_the_old_shards_folder_and_says_so(work, monkeypatch):
    """The one-process --overwrite of a torchrun cache removed its shards' folder whole once the new cache
    was in place, a file saved there during the run included: the folder is kept with it, and a warning
    names it."""
    import laya_inspect.cache.extract as extract

    out = work / "p.h5"
    _sharded(out)
    notes = shard_dir(out) / "notes.txt"
    real = extract._extract

    def saving(config, emit):
        notes.write_text("mine\n")  # after the check before the run
        return real(config, emit)

    monkeypatch.setattr(extract, "_extract", saving)
    result = extract_features(_config(out, splits=("test",), overwrite=True))
    assert notes.read_text() == "mine\n"
    assert sorted(p.name for p in shard_dir(out).iterdir()) == ["notes.txt"]  # the stale shards went
    assert any("p.h5.shards held the shards" in w and "notes.txt" in w for w in result.warnings), result.warnings


def test_overwrite_under_torchrun_refuses_a_shard_edited_since_the_join_and_keeps_it(work):
    """QA (data loss): --overwrite checked the joined cache against its record, not the shard files its
    rows are read from, so a shard edited by hand was replaced without a word. The record lists the shards."""
    from laya_inspect.errors import InputError
    from laya_inspect.out_dir import read_record

    out = work / "r.h5"
    _sharded(out)
    shard = shard_path(out, 0, 2)
    with h5py.File(shard, "a") as f:
        f["test"]["labels"][0] = 7  # a label mended by hand, read through the cache
    edited = shard.read_bytes()
    with pytest.raises(InputError, match=r"is not as laya-inspect wrote it: .*r\.h5\.shards/rank-00000-of-00002\.h5"):
        _sharded(out, overwrite=True)
    assert shard.read_bytes() == edited
    with pytest.raises(InputError, match=r"rank-00000-of-00002\.h5"):  # a one-process run checks them too
        extract_features(_config(out, splits=("test",), overwrite=True))
    assert shard.read_bytes() == edited
    assert "r.h5.shards/rank-00000-of-00002.h5" in {**read_record(out)["sha256"], **read_record(out)["stat"]}


def test_overwrite_of_a_torchrun_cache_whose_record_lists_no_shard_notes_it(work):
    """A record an earlier version wrote lists the cache alone: --overwrite replaces it as before, noting
    that its shards could not be checked, as it notes a cache without a record."""
    from laya_inspect.out_dir import put_record, read_record

    out = work / "o.h5"
    _sharded(out)
    record = read_record(out)
    for key in ("sha256", "stat"):
        record[key] = {k: v for k, v in record[key].items() if k == out.name}
    put_record(out, record)
    _, notes = _sharded(out, overwrite=True)
    assert any("lists none of its shard files" in n for n in notes), notes
    _, notes = _sharded(out, overwrite=True)  # recorded now, shards and all
    assert notes == []


@pytest.mark.parametrize("rerun", ["alone", "torchrun"])
@pytest.mark.parametrize("stopped", ["before_the_cache", "after_the_cache"])
def test_a_rerun_finishes_or_undoes_a_swap_stopped_between_its_renames(work, monkeypatch, stopped, rerun):
    """A kill between the join's renames left OUT without OUT.shards, refused by every reader until the
    user started the whole extraction again. The new cache's SHA-256, written into the new shards' manifest
    before the swap, tells a rerun which cache is in place: it moves the new shards in, or puts the old back."""
    from laya_inspect.out_dir import read_record, unproven_file

    out = work / "w.h5"
    _sharded(out)
    old = out.read_bytes()
    time.sleep(1.1)  # the new cache's created_at (whole seconds) tells it from the old
    _stop_swap(out, monkeypatch, stopped)
    new = out.read_bytes()
    assert (new == old) == (stopped == "before_the_cache")
    assert not shard_dir(out).exists()
    with pytest.raises(CacheError, match="was stopped while it swapped"):
        FeatureStore(out)
    what = "new cache was in place" if stopped == "after_the_cache" else "old cache was still in place"
    if rerun == "alone":
        with pytest.raises(CacheError, match=rf"{what}.* is a complete cache: pass --overwrite"):  # no --overwrite
            extract_features(_config(out, splits=("test",)))
    else:  # rank 0 of a torchrun --overwrite mends it under the run's lock, then goes on to replace it
        with ExitStack() as held:
            assert what in _preflight(_config(out, splits=("test",), overwrite=True), World(rank=0, size=2), held)
    assert out.read_bytes() == new and unproven_file(out) is None
    FeatureStore(out).close()  # readable again, from its own shards
    assert not (work / "w.h5.shards.old").exists()
    if stopped == "after_the_cache":
        assert not (work / "w.h5.shards.partial").exists() and "before" not in read_record(out)


def test_mending_a_stopped_swap_never_removes_a_users_file_in_the_old_shards_folder(work, monkeypatch):
    """Finishing the swap removes OUT.shards.old: one holding a file extract does not write is refused."""
    from laya_inspect.errors import InputError

    out = work / "u.h5"
    _sharded(out)
    time.sleep(1.1)
    _stop_swap(out, monkeypatch, "after_the_cache")
    (work / "u.h5.shards.old" / "notes.txt").write_text("mine\n")
    with pytest.raises(InputError, match=r"u\.h5\.shards\.old is a folder holding notes\.txt"):
        extract_features(_config(out, splits=("test",)))
    assert (work / "u.h5.shards.old" / "notes.txt").read_text() == "mine\n"


def test_the_join_warns_of_logits_in_another_class_numbering_from_every_shards_rows(work):
    """Each shard counts the rows whose top logit is their label; the join sums them and warns, in the
    joined cache's warnings, as one process does, when that is at or below chance."""
    from laya_inspect.cache.rows import prepare
    from laya_inspect.cache.schema import decode_attr
    from laya_inspect.cache.shards import _write_shard, merge_shards

    (work / "shifted.py").write_text(
        "import torch\nfrom torch import nn\n\n\ndef make():\n    head = nn.Linear(5, 5, bias=False)\n"
        "    with torch.no_grad():\n        head.weight.copy_(torch.roll(torch.eye(5), 1, dims=0))\n"
        "    return nn.Sequential(nn.Identity(), head)\n"
    )
    import shifted

    torch.save(shifted.make().state_dict(), work / "net.pt")
    y = np.arange(60) % 5
    np.savez(work / "d.npz", X_test=np.eye(5, dtype=np.float32)[y], y_test=y, class_names=np.array(list("abcde")))
    out = work / "l.h5"
    config = ExtractConfig(
        model="python:shifted:make", weights="net.pt", data="npz:d.npz", layers="0", out=str(out),
        batch_size=8, device="cpu", splits=("test",),
    )  # fmt: skip
    prep = prepare(config, torch.device("cpu"), world_size=2)
    plan, folder = _plan(config, World(rank=0, size=2), prep)
    for rank in range(2):
        _write_shard(config, World(rank=rank, size=2), prep, plan, Path(folder), no_progress)
    said, _ = merge_shards(out, 2, plan, Path(folder))
    assert [w for w in said if "on 0 of 60 rows" in w and "class numbering" in w], said
    with h5py.File(out, "r") as f:
        assert any("on 0 of 60 rows" in w for w in decode_attr(f.attrs["warnings"]))
        assert "logit_agreement" not in f.attrs  # a shard's count, not the joined cache's


def _stop_swap(out, monkeypatch, stopped="before_the_cache"):
    """An --overwrite under torchrun killed during its swap: once the old shards were moved aside, before
    the new cache ("before_the_cache"), or once the new cache was in place, before its shards were
    ("after_the_cache")."""
    real = os.rename

    def stop(src, dst):
        if stopped == "after_the_cache" and Path(src).name == out.name + ".shards.partial":
            raise KeyboardInterrupt
        real(src, dst)
        if stopped == "before_the_cache" and Path(dst).name == out.name + ".shards.old":
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "rename", stop)
    with pytest.raises(KeyboardInterrupt):
        _sharded(out, overwrite=True)
    monkeypatch.setattr(os, "rename", real)


def test_an_untouched_cache_whose_swap_was_stopped_twice_is_replaced_by_overwrite(work, monkeypatch):
    """QA: putting the old shards back left the stopped run's record (the new cache's digests, the old
    under 'before'); a second stopped swap kept the first one's new digests as 'before', and the
    untouched old cache was then refused by --overwrite as changed."""
    from laya_inspect.out_dir import unproven_file

    out = work / "t.h5"
    _sharded(out)
    old = out.read_bytes()
    for _ in range(2):
        time.sleep(1.1)  # the new cache's created_at (whole seconds) tells it from the old
        _stop_swap(out, monkeypatch)
        with pytest.raises(CacheError, match="old cache was still in place"):
            extract_features(_config(out, splits=("test",)))
        assert out.read_bytes() == old and unproven_file(out) is None
    _sharded(out, overwrite=True)
    FeatureStore(out).close()


def test_a_torchrun_rerun_without_overwrite_says_what_it_mended(work, monkeypatch):
    """Rank 0 mended a stopped swap and then stopped with "already exists" alone, the mend unsaid."""
    out = work / "m.h5"
    _sharded(out)
    time.sleep(1.1)
    _stop_swap(out, monkeypatch)
    with ExitStack() as held, pytest.raises(CacheError, match=r"old cache was still in place.* is a complete cache"):
        _preflight(_config(out, splits=("test",)), World(rank=0, size=2), held)
    assert shard_dir(out).is_dir()
