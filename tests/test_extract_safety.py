"""`extract` as separate processes: two writers, --overwrite beside a writer or a reader, a kill then
a changed checkpoint or data, a full disk. Each must end in a complete cache or one clear line."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
import torch

from laya_inspect.cache.partial import partial_path
from laya_inspect.cache.store import FeatureStore
from laya_inspect.errors import CacheError

pytestmark = pytest.mark.slow
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}


def _checkpoint(path, seed):
    from laya_inspect.models.zoo import build_zoo, save_zoo_checkpoint

    torch.manual_seed(seed)
    save_zoo_checkpoint(path, build_zoo("mlp", in_shape=(1, 8, 8), num_classes=10), {})
    return path


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    d = tmp_path_factory.mktemp("ckpt")
    return _checkpoint(d / "a.pt", 0), _checkpoint(d / "b.pt", 1)


def _cmd(ckpt, out, *extra, data="digits", batch=1):
    return [
        sys.executable, "-m", "laya_inspect", "extract", "--model", "zoo:mlp", "--weights", str(ckpt),
        "--data", data, "--out", str(out), "--batch-size", str(batch), "--limit", "400", "--device", "cpu", *extra,
    ]  # fmt: skip


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300, **kw)


def _same_arrays(a, b):
    with FeatureStore(a) as x, FeatureStore(b) as y:
        for split in x.splits:
            for i in range(len(x.layer_names)):
                np.testing.assert_array_equal(x.layer(split, i), y.layer(split, i))
            np.testing.assert_array_equal(x.labels(split), y.labels(split))


@pytest.fixture(scope="module")
def reference(ckpts, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "ref.h5"
    res = _run(_cmd(ckpts[0], out))  # batch 1, as the runs it is compared with
    assert res.returncode == 0, res.stderr
    return out


SLOW_MODEL = """
import os
import time
import torch

CALLS = [0]


class Slow(torch.nn.Module):
    # A small MLP on 8x8 digits that a test can catch mid-run. While the file HOLD exists, forward
    # passes 2-5 take 0.3 s each (the writer puts rows on disk at least every 0.25 s, so some are
    # there), and pass 6 waits, having touched WAITING, until HOLD is removed.
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 16), torch.nn.Linear(16, 10))

    def forward(self, x):
        CALLS[0] += 1
        if 2 <= CALLS[0] <= 5 and os.path.exists("HOLD"):
            time.sleep(0.3)
        while CALLS[0] >= 6 and os.path.exists("HOLD"):
            open("WAITING", "w").close()
            time.sleep(0.05)
        return self.blocks(x)


def make():
    torch.manual_seed(0)
    return Slow()
"""


def _slow_setup(tmp_path):
    """slowmodel.py and two of its state_dicts in ``tmp_path`` (the runs' working folder)."""
    (tmp_path / "slowmodel.py").write_text(SLOW_MODEL)
    sys.path.insert(0, str(tmp_path))
    try:
        import slowmodel  # type: ignore[import-not-found]

        paths = []
        for seed in (0, 1):
            torch.manual_seed(seed)
            path = tmp_path / f"slow{seed}.pt"
            torch.save(slowmodel.Slow().state_dict(), path)
            paths.append(path)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("slowmodel", None)
    return paths


def _slow_cmd(weights, out, data="digits"):
    return [
        sys.executable, "-m", "laya_inspect", "extract", "--model", "python:slowmodel:make", "--weights", str(weights),
        "--data", data, "--image-size", "8", "--out", str(out), "--batch-size", "1", "--limit", "400",
        "--device", "cpu",
    ]  # fmt: skip


def _start_and_hold(cmd, out, cwd):
    """Start an extract of the slow model and return it once it waits on HOLD with rows on disk."""
    (cwd / "HOLD").touch()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=cwd)
    deadline = time.time() + 120
    while not (cwd / "WAITING").exists():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    with h5py.File(partial_path(out), "r", locking=False) as f:
        assert int(f["train"].attrs["n_written"]) >= 1  # caught mid-run, with rows to resume from
    return proc


def _kill(proc, cwd):
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (cwd / "HOLD").unlink()


def test_second_writer_and_overwrite_are_refused_while_one_writes(tmp_path):
    (tmp_path / "slowmodel.py").write_text(SLOW_MODEL)
    out = tmp_path / "c.h5"
    cmd = [
        sys.executable, "-m", "laya_inspect", "extract", "--model", "python:slowmodel:make", "--random-init",
        "--data", "digits", "--image-size", "8", "--out", str(out), "--batch-size", "8", "--device", "cpu",
    ]  # fmt: skip
    (tmp_path / "HOLD").touch()
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
    deadline = time.time() + 60
    while not partial_path(out).exists() and time.time() < deadline:
        time.sleep(0.1)
    for extra in ((), ("--overwrite",)):
        second = _run([*cmd, *extra], cwd=tmp_path)
        assert second.returncode == 1, second.stderr
        assert f"PID {first.pid}" in second.stderr and "Traceback" not in second.stderr, second.stderr
    assert first.poll() is None  # still waiting on HOLD, untouched by the two refused runs
    (tmp_path / "HOLD").unlink()
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    with FeatureStore(out) as store:
        assert store.n("train") + store.n("test") == 1797


def test_overwrite_beside_a_reader_keeps_the_readers_file_whole(ckpts, reference, tmp_path):
    out = tmp_path / "c.h5"
    shutil.copy(reference, out)
    reader = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, time, numpy as np\n"
            "from laya_inspect.cache.store import FeatureStore\n"
            f"s = FeatureStore({str(out)!r}); a = s.layer('train', 0)\n"
            "print('open', flush=True); sys.stdin.readline()\n"
            "b = s.layer('train', 0); print('same' if np.array_equal(a, b) else 'changed', flush=True)\n"
        )],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip
    assert reader.stdout.readline().strip() == "open"
    res = _run(_cmd(ckpts[1], out, "--overwrite", batch=64))
    assert res.returncode == 0, res.stderr
    said, err = reader.communicate("go\n", timeout=60)
    assert said.strip() == "same", err
    with FeatureStore(out) as new, FeatureStore(reference) as old:
        assert new.attrs["weights_sha256"] != old.attrs["weights_sha256"]
        assert new.n("train") == old.n("train")


def test_kill_then_swapped_checkpoint_is_refused_and_the_original_resumes(tmp_path):
    first, second = _slow_setup(tmp_path)
    reference = tmp_path / "ref.h5"
    res = _run(_slow_cmd(first, reference), cwd=tmp_path)  # no HOLD: straight through
    assert res.returncode == 0, res.stderr
    out, weights = tmp_path / "c.h5", tmp_path / "w.pt"
    shutil.copy(first, weights)
    _kill(_start_and_hold(_slow_cmd(weights, out), out, tmp_path), tmp_path)
    assert not out.exists() and partial_path(out).exists()
    with pytest.raises(CacheError, match="partial"):  # a reader is told the cache is unfinished
        FeatureStore(out)
    shutil.copy(second, weights)  # another checkpoint at the same path
    res = _run(_slow_cmd(weights, out), cwd=tmp_path)
    assert res.returncode == 1 and "other weights" in res.stderr and "--overwrite" in res.stderr, res.stderr
    shutil.copy(first, weights)
    res = _run(_slow_cmd(weights, out), cwd=tmp_path)
    assert res.returncode == 0 and "resumed from the rows already written (" in res.stdout, res.stdout + res.stderr
    assert "{'" not in res.stdout  # QA: the rows were printed as a Python dict
    _same_arrays(out, reference)


def test_kill_then_changed_data_is_refused(tmp_path):
    first, _ = _slow_setup(tmp_path)
    rng = np.random.default_rng(0)
    data, out = tmp_path / "x.npz", tmp_path / "c.h5"
    y = np.arange(600) % 10
    np.savez(data, X=rng.random((600, 8, 8)).astype(np.float32), y=y)
    _kill(_start_and_hold(_slow_cmd(first, out, data=f"npz:{data}"), out, tmp_path), tmp_path)
    np.savez(data, X=rng.random((600, 8, 8)).astype(np.float32), y=y)  # same shape and labels, other pixels
    res = _run(_slow_cmd(first, out, data=f"npz:{data}"), cwd=tmp_path)
    assert res.returncode == 1 and "other data" in res.stderr, res.stderr


def test_full_disk_ends_in_one_line_and_no_cache(ckpts, tmp_path):
    out = tmp_path / "c.h5"
    cmd = " ".join(f"'{c}'" for c in _cmd(ckpts[0], out, batch=64))
    res = subprocess.run(["bash", "-c", f"ulimit -f 300 && exec {cmd}"], capture_output=True, text=True, env=ENV)
    assert res.returncode == 1, (res.returncode, res.stderr[-1500:])
    assert "errno 27" in res.stderr and "Traceback" not in res.stderr
    assert not out.exists()
