"""What the performance work added: --threads (set_threads), the prefetching iterator, the cache writer's
chunk buffering (rows on disk only when counted), and extract's default batch per device."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits
from typer.testing import CliRunner

from laya_inspect.cache import writer as W
from laya_inspect.cache.extract_config import DEFAULT_BATCH, MIN_CPU_BATCH
from laya_inspect.cache.rows import default_batch_size
from laya_inspect.cache.schema import CHUNK_ROWS
from laya_inspect.cli import app
from laya_inspect.errors import InputError
from laya_inspect.runtime import default_threads, prefetch, set_threads, usable_cpus

runner = CliRunner()


@pytest.fixture
def restore_threads(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    n = torch.get_num_threads()
    with threadpool_limits(limits=None):  # BLAS pools back to what they were
        yield
    torch.set_num_threads(n)


def test_set_threads_sets_torch_and_defaults_by_work(restore_threads, monkeypatch):
    assert set_threads(1) == 1 and torch.get_num_threads() == 1
    head, backbone = default_threads("head"), default_threads("backbone")
    assert 1 <= head <= min(4, usable_cpus()) and 1 <= backbone <= usable_cpus()
    assert set_threads(None) == head == torch.get_num_threads()
    assert set_threads(None, work="backbone") == backbone
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert set_threads(None, work="backbone") == 1  # the environment's choice wins over the default


def _blas_threads() -> set[int]:
    return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}


def test_set_threads_also_sets_numpys_blas_pool(restore_threads):
    # numpy's BLAS keeps its own pool: left at one thread per core it made the probes 10× slower
    assert _blas_threads(), "numpy links no BLAS that threadpoolctl can see"
    assert set_threads(1) == 1 and _blas_threads() == {1}
    if usable_cpus() >= 2:
        assert set_threads(2) == 2 and _blas_threads() == {2}


@pytest.mark.parametrize("bad", [0, -2, True, 1.5])
def test_set_threads_refuses_what_is_not_a_count(restore_threads, bad):
    with pytest.raises(InputError, match=r"--threads must be a whole number ≥ 1, got"):
        set_threads(bad)
    with pytest.raises(InputError, match="thread work must be one of head, backbone"):
        set_threads(2, work="gpu")


@pytest.mark.parametrize("command", [["extract", "-m", "zoo:mlp", "-d", "digits", "-o", "x.h5"], ["compare", "h"]])
def test_cli_threads_zero_is_one_line_exit_1(restore_threads, tmp_path, command):
    extra = ["--cache", str(tmp_path / "c.h5")] if command[0] == "compare" else []
    res = runner.invoke(app, [*command, *extra, "--threads", "0"])
    assert res.exit_code == 1, res.output
    assert "--threads must be a whole number ≥ 1, got 0" in res.output and "Traceback" not in res.output


def _prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "laya-prefetch"]


def test_prefetch_keeps_order_and_raises_the_producers_error_in_place():
    assert list(prefetch(iter(range(50)), ahead=3)) == list(range(50))
    assert list(prefetch(range(5), ahead=0)) == list(range(5))

    def broken():
        yield 1
        yield 2
        raise InputError("image 3 is broken; remove it")

    got = []
    with pytest.raises(InputError, match="image 3 is broken"):
        for item in prefetch(broken()):
            got.append(item)
    assert got == [1, 2]
    assert not _prefetch_threads()


def test_prefetch_closed_early_stops_its_thread():
    def endless():
        i = 0
        while True:
            yield i
            i += 1

    gen = prefetch(endless(), ahead=2)
    assert [next(gen) for _ in range(3)] == [0, 1, 2]
    assert _prefetch_threads()
    gen.close()
    assert not _prefetch_threads()


def _writer(path, n, widths=(3, 2)):
    return W.FeatureWriter(
        path,
        attrs={"command": {}, "layer_names": [str(i) for i in range(len(widths))]},
        split_sizes={"train": n},
        widths=list(widths),
        num_logits=None,
        check_space=False,
    )


def _on_disk(w: W.FeatureWriter) -> int:
    """n_written as stored in the file (set, then flushed, only after the rows were written)."""
    return int(w.file["train"].attrs["n_written"])


def test_writer_puts_whole_chunks_on_disk_and_close_writes_the_rest(tmp_path):
    n = CHUNK_ROWS * 2 + 100
    rng = np.random.default_rng(0)
    feats = [rng.standard_normal((n, 3)).astype(np.float32), rng.standard_normal((n, 2)).astype(np.float32)]
    path = tmp_path / "c.h5"
    w = _writer(path, n)
    seen = []
    for s in range(0, CHUNK_ROWS * 2 + 50, 100):  # batches that do not divide a chunk
        e = min(s + 100, CHUNK_ROWS * 2 + 50)
        w.append("train", [f[s:e] for f in feats], np.arange(s, e) % 3, np.arange(s, e))
        seen.append(_on_disk(w))
        assert w.n_written("train") == seen[-1]
    # n_written moves a whole chunk at a time (the batch crossing a chunk's end is split there)
    assert sorted(set(seen)) == [0, CHUNK_ROWS, 2 * CHUNK_ROWS]
    w.close()  # as if interrupted: the 50 rows gathered since are written
    with h5py.File(W.partial_path(path), "r") as f:
        assert int(f["train"].attrs["n_written"]) == 2 * CHUNK_ROWS + 50
    w = _writer(path, n)  # resume
    assert w.n_written("train") == 2 * CHUNK_ROWS + 50
    w.append("train", [f[2 * CHUNK_ROWS + 50 :] for f in feats], np.arange(2 * CHUNK_ROWS + 50, n) % 3,
             np.arange(2 * CHUNK_ROWS + 50, n))  # fmt: skip
    w.finish()
    with h5py.File(path, "r") as f:
        for i in range(2):
            np.testing.assert_array_equal(f["train"][f"layer_00{i}"][:], feats[i])
        np.testing.assert_array_equal(f["train"]["labels"][:], np.arange(n) % 3)
        np.testing.assert_array_equal(f["train"]["index"][:], np.arange(n))


def test_writer_writes_at_least_every_flush_seconds(tmp_path, monkeypatch):
    """A slow model still moves n_written: gathered rows go to disk once FLUSH_SECONDS have passed."""
    monkeypatch.setattr(W, "FLUSH_SECONDS", 0.05)
    path = tmp_path / "slow.h5"
    w = _writer(path, 100)
    w.append("train", [np.ones((4, 3)), np.ones((4, 2))], np.zeros(4, int), np.arange(4))
    time.sleep(0.1)
    w.append("train", [np.ones((4, 3)), np.ones((4, 2))], np.zeros(4, int), np.arange(4, 8))
    assert _on_disk(w) == 8
    w.close()


def test_nonfinite_counts_follow_their_rows_across_a_chunk_boundary(tmp_path):
    n = CHUNK_ROWS + 100
    a = np.ones((n, 3), np.float32)
    a[CHUNK_ROWS - 1, 0] = np.nan  # the last row of the first chunk
    a[CHUNK_ROWS + 5, 1] = np.inf  # in the second
    path = tmp_path / "nan.h5"
    w = W.FeatureWriter(
        path, attrs={"command": {}}, split_sizes={"train": n}, widths=[3], num_logits=None, allow_nonfinite=True
    )
    w.append("train", [a[: CHUNK_ROWS - 4]], np.zeros(CHUNK_ROWS - 4, int), np.arange(CHUNK_ROWS - 4))
    w.append(
        "train", [a[CHUNK_ROWS - 4 : CHUNK_ROWS + 10]], np.zeros(14, int), np.arange(CHUNK_ROWS - 4, CHUNK_ROWS + 10)
    )
    # the batch crossed the chunk's end: the chunk's one NaN is on disk, the inf waits with its row
    assert _on_disk(w) == CHUNK_ROWS and json.loads(w.file["train"].attrs["nonfinite"]) == [1]
    w.append("train", [a[CHUNK_ROWS + 10 :]], np.zeros(90, int), np.arange(CHUNK_ROWS + 10, n))
    w.finish()
    with h5py.File(path, "r") as f:
        assert json.loads(f.attrs["nonfinite_counts"]) == {"0": 2}


def test_a_killed_run_resumes_into_the_same_checksummed_bytes(tmp_path):
    """A run killed (os._exit, no close) after whole chunks are on disk resumes from n_written into
    the same bytes, each chunk with its checksum."""
    n = CHUNK_ROWS * 3 + 7
    rng = np.random.default_rng(1)
    feats = [rng.standard_normal((n, 5)).astype(np.float32), rng.standard_normal((n, 3)).astype(np.float32)]
    path = tmp_path / "d.h5"
    w = _writer(path, n, widths=(5, 3))
    w.append("train", [f[: 2 * CHUNK_ROWS] for f in feats], np.zeros(2 * CHUNK_ROWS, int), np.arange(2 * CHUNK_ROWS))
    assert _on_disk(w) == 2 * CHUNK_ROWS
    w.close()
    np.save(tmp_path / "f0.npy", feats[0])
    np.save(tmp_path / "f1.npy", feats[1])
    code = textwrap.dedent(
        f"""
        import os, numpy as np
        from laya_inspect.cache.writer import FeatureWriter
        f = [np.load({str(tmp_path / "f0.npy")!r}), np.load({str(tmp_path / "f1.npy")!r})]
        w = FeatureWriter({str(path)!r}, attrs={{"command": {{}}, "layer_names": ["0", "1"]}},
                          split_sizes={{"train": {n}}}, widths=[5, 3],
                          num_logits=None, check_space=False)
        s = w.n_written("train")
        w.append("train", [x[s : s + {CHUNK_ROWS} + 3] for x in f], np.zeros({CHUNK_ROWS} + 3, int),
                 np.arange(s, s + {CHUNK_ROWS} + 3))
        os._exit(9)  # killed: the chunk is on disk, the 3 rows after it were only gathered
        """
    )
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert killed.returncode == 9, killed.stderr[-2000:]
    with h5py.File(W.partial_path(path), "r") as f:
        assert int(f["train"].attrs["n_written"]) == 3 * CHUNK_ROWS
    w = _writer(path, n, widths=(5, 3))
    s = w.n_written("train")
    w.append("train", [f[s:] for f in feats], np.zeros(n - s, int), np.arange(s, n))
    w.finish()
    with h5py.File(path, "r") as f:
        for i in range(2):
            assert f["train"][f"layer_00{i}"].fletcher32
            assert f["train"][f"layer_00{i}"][:].tobytes() == feats[i].tobytes()


def test_finish_makes_the_file_durable_before_the_rename(tmp_path, monkeypatch):
    """Writeback starts after each write, and the fsync at the end still comes before the rename (the
    record written beside the cache, .c.h5.laya-inspect.json, syncs and renames on its own)."""
    events = []
    real_fsync, real_replace, real_writeback = os.fsync, os.replace, W.start_writeback

    def fsync(fd):
        events.append(("fsync", Path(os.readlink(f"/proc/self/fd/{fd}")).name))
        real_fsync(fd)

    monkeypatch.setattr(W, "start_writeback", lambda fd: (events.append("writeback"), real_writeback(fd)))
    monkeypatch.setattr(W.os, "fsync", fsync)
    monkeypatch.setattr(W.os, "replace", lambda a, b: (events.append(("replace", Path(b).name)), real_replace(a, b)))
    w = _writer(tmp_path / "c.h5", 10)
    w.append("train", [np.ones((10, 3)), np.ones((10, 2))], np.zeros(10, int), np.arange(10))
    w.finish()
    cache = [e for e in events if e == "writeback" or e[1] in ("c.h5", "c.h5.partial")]
    assert cache == ["writeback", ("fsync", "c.h5.partial"), ("replace", "c.h5")]
    real_writeback(-1)  # advisory: a bad descriptor is not an error


class _Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)


def test_default_batch_keeps_a_conv_nets_largest_activation_in_cache():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 4))
    assert default_batch_size(mlp, cpu, 10e6) == DEFAULT_BATCH  # no convolution
    assert default_batch_size(_Conv(), cuda, 10e6) == DEFAULT_BATCH  # not on CPU
    assert default_batch_size(_Conv(), cpu, 0.098e6) == 128  # MobileNetV2 at 32 px
    assert default_batch_size(_Conv(), cpu, 0.885e6) == 16  # MobileNetV2 at 96 px
    assert default_batch_size(_Conv(), cpu, 4.8e6) == MIN_CPU_BATCH  # MobileNetV2 at 224 px


def test_the_call_order_keeps_the_bytes_of_the_largest_tensor_a_module_returned():
    """Extract sizes its CPU batch by the largest activation of its dry batch, read through the one set of
    hooks its unit counts take (models.sizes.call_order): a tensor returned alone, the batch included, a
    scripted part's called from Python too (seen through torch's global module hooks); a module's returned
    tuples left out."""
    from laya_inspect.models.sizes import call_order

    scripted = torch.jit.script(torch.nn.Conv2d(8, 64, 1))  # 2 × 64 × 6 × 6 float32: 18,432 bytes
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), scripted, torch.nn.AdaptiveAvgPool2d(1))
    with call_order(net) as calls, torch.no_grad():
        net(torch.zeros(2, 3, 8, 8))
    assert calls.largest == 2 * 64 * 6 * 6 * 4  # the scripted conv's map, not the pool's 2 × 64
    gru = torch.nn.GRU(4, 16, batch_first=True)  # returns (output, hidden): a tuple
    with call_order(gru) as calls, torch.no_grad():
        gru(torch.zeros(2, 3, 4))
    assert calls.largest == 0


@pytest.mark.parametrize("command", [["fit-head", "c.h5"], ["train", "-m", "zoo:mlp", "-d", "digits"]])
def test_fit_head_and_train_threads_zero_is_one_line_exit_1(restore_threads, tmp_path, command):
    res = runner.invoke(app, [*command, "--threads", "0", "--out", str(tmp_path / "o")])
    assert res.exit_code == 1, res.output
    assert "--threads must be a whole number ≥ 1, got 0" in res.output and "Traceback" not in res.output


def test_fit_heads_applies_the_threads_it_is_given(restore_threads, digits_cache, tmp_path):
    import dataclasses

    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.training.fit_config import FitConfig
    from laya_inspect.training.fit_head import fit_heads

    torch.set_num_threads(2)
    config = FitConfig(heads=("last",), seeds=(0,), epochs=1, probe=False, device="cpu", threads=1)
    with FeatureStore(digits_cache) as store:
        fit_heads(store, config, out_dir=tmp_path / "heads")
    assert torch.get_num_threads() == 1
    torch.set_num_threads(2)  # without --threads the library leaves the caller's setting alone
    with FeatureStore(digits_cache) as store:
        fit_heads(store, dataclasses.replace(config, threads=None), out_dir=tmp_path / "h2")
    assert torch.get_num_threads() == 2
