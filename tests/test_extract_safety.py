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

from laya_inspect.store import FeatureStore
from laya_inspect.writer import partial_path

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


def _start_and_wait(cmd, out, rows=64):
    """Start an extract and return it once ``rows`` rows of train are on disk."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
        try:
            with h5py.File(partial_path(out), "r", locking=False) as f:
                if int(f["train"].attrs["n_written"]) >= rows:
                    return proc
        except (OSError, KeyError):
            continue
    proc.kill()
    pytest.skip("the extraction finished (or failed) before it could be caught running")


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


class Slow(torch.nn.Module):
    # a small MLP on 8x8 digits that waits while the file HOLD exists, so a run can be caught writing
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 16), torch.nn.Linear(16, 10))

    def forward(self, x):
        while os.path.exists("HOLD"):
            time.sleep(0.05)
        return self.blocks(x)


def make():
    torch.manual_seed(0)
    return Slow()
"""


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
            "from laya_inspect.store import FeatureStore\n"
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


def test_kill_then_swapped_checkpoint_is_refused_and_the_original_resumes(ckpts, reference, tmp_path):
    out, weights = tmp_path / "c.h5", tmp_path / "w.pt"
    shutil.copy(ckpts[0], weights)
    proc = _start_and_wait(_cmd(weights, out), out)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists() and partial_path(out).exists()
    shutil.copy(ckpts[1], weights)  # another checkpoint at the same path
    res = _run(_cmd(weights, out))
    assert res.returncode == 1 and "other weights" in res.stderr and "--overwrite" in res.stderr, res.stderr
    shutil.copy(ckpts[0], weights)
    res = _run(_cmd(weights, out))
    assert res.returncode == 0 and "resumed" in res.stdout, res.stdout + res.stderr
    _same_arrays(out, reference)


def test_kill_then_changed_data_is_refused(ckpts, tmp_path):
    rng = np.random.default_rng(0)
    data, out = tmp_path / "x.npz", tmp_path / "c.h5"
    y = np.arange(600) % 10
    np.savez(data, X=rng.random((600, 8, 8)).astype(np.float32), y=y)
    proc = _start_and_wait(_cmd(ckpts[0], out, data=f"npz:{data}"), out)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    np.savez(data, X=rng.random((600, 8, 8)).astype(np.float32), y=y)  # same shape and labels, other pixels
    res = _run(_cmd(ckpts[0], out, data=f"npz:{data}"))
    assert res.returncode == 1 and "other data" in res.stderr, res.stderr


def test_full_disk_ends_in_one_line_and_no_cache(ckpts, tmp_path):
    out = tmp_path / "c.h5"
    cmd = " ".join(f"'{c}'" for c in _cmd(ckpts[0], out, batch=64))
    res = subprocess.run(["bash", "-c", f"ulimit -f 300 && exec {cmd}"], capture_output=True, text=True, env=ENV)
    assert res.returncode == 1, (res.returncode, res.stderr[-1500:])
    assert "errno 27" in res.stderr and "Traceback" not in res.stderr
    assert not out.exists()
