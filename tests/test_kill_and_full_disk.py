"""Every writing command killed at a random point, then run again: the same result as an
uninterrupted run (or a clear refusal naming --force/--overwrite), never a half-written output under
its final name. And every writing command under a file-size limit (`ulimit -f`, a full disk as the
process sees it): exit 1, one line with the errno, nothing left under the output's name."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import write_cache

from laya_inspect.cache.store import FeatureStore

pytestmark = pytest.mark.slow
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
CLI = [sys.executable, "-m", "laya_inspect"]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A small real cache (digits through a fixed random GELU net), one fitted head, one zoo checkpoint."""
    from sklearn.datasets import load_digits

    from laya_inspect.models.zoo import build_zoo, save_zoo_checkpoint

    d = tmp_path_factory.mktemp("work")
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    feats, h = [], x
    for d_in, d_out in [(64, 32), (32, 24), (24, 16)]:
        h = torch.nn.functional.gelu(h @ (torch.randn(d_in, d_out, generator=gen) / d_in**0.5))
        feats.append(h.numpy())
    train, test = np.arange(len(y)) % 4 != 0, np.arange(len(y)) % 4 == 0
    cache = write_cache(
        d / "c.h5",
        {"train": ([f[train] for f in feats], y[train]), "test": ([f[test] for f in feats], y[test])},
    )
    torch.manual_seed(0)
    ckpt = d / "mlp.pt"
    save_zoo_checkpoint(ckpt, build_zoo("mlp", in_shape=(1, 8, 8), num_classes=10), {})
    heads = d / "heads"
    res = subprocess.run(
        [*CLI, "fit-head", str(cache), "--head", "laya", "--seeds", "1", "--epochs", "3", "--out", str(heads)],
        capture_output=True, text=True, env=ENV,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return {"cache": cache, "ckpt": ckpt, "head": next((heads / "laya").glob("seed_*"))}


def _commands(w, out: Path) -> dict[str, list[str]]:
    return {
        "extract": [*CLI, "extract", "--model", "zoo:mlp", "--weights", str(w["ckpt"]), "--data", "digits",
                    "--out", str(out), "--batch-size", "16", "--device", "cpu"],
        "fit-head": [*CLI, "fit-head", str(w["cache"]), "--head", "laya,last", "--seeds", "1", "--epochs", "3",
                     "--out", str(out)],
        "compare": [*CLI, "compare", str(w["head"]), "--cache", str(w["cache"]), "--method", "alpha,random",
                    "--out", str(out)],
        "train": [*CLI, "train", "--model", "zoo:mlp", "--data", "digits", "--head", "last", "--epochs", "2",
                  "--out", str(out)],
    }  # fmt: skip


def _result(command: str, out: Path):
    """What must be identical between an interrupted-then-rerun run and a plain one."""
    if command == "extract":
        with FeatureStore(out) as s:
            return [s.layer(sp, i).tobytes() for sp in s.splits for i in range(len(s.layer_names))]
    if command == "fit-head":
        rows = json.loads((out / "runs.json").read_text())
        return [(r["head"], r["seed"], r["test_acc"], r.get("test_loss")) for r in rows]
    if command == "compare":
        summary = json.loads((out / "summary.json").read_text())
        return json.dumps(summary.get("methods", summary.get("heads", summary)), sort_keys=True, default=str)[:20000]
    state = torch.load(out, weights_only=True)["state_dict"]
    return {k: v.numpy().tobytes() for k, v in state.items()}


def _leftovers(folder: Path, name: str) -> list[str]:
    from laya_inspect.out_dir import record_of

    # the record beside a single-file output is part of it: what the next --force or --overwrite checks
    return sorted(p.name for p in folder.iterdir() if name in p.name and p.name not in (name, record_of(name).name))


@pytest.mark.parametrize("command", ["extract", "fit-head", "compare", "train"])
def test_killed_at_a_random_point_then_rerun_gives_the_same_result(work, tmp_path, command):
    ref, out = tmp_path / "ref", tmp_path / "out"
    if command in ("extract", "train"):
        ref, out = (
            tmp_path / "ref.h5" if command == "extract" else tmp_path / "ref.pt",
            tmp_path / ("out.h5" if command == "extract" else "out.pt"),
        )
    start = time.perf_counter()
    plain = subprocess.run(_commands(work, ref)[command], capture_output=True, text=True, env=ENV)
    took = time.perf_counter() - start
    assert plain.returncode == 0, plain.stderr
    # Kill somewhere between the end of the imports (~2 s) and the end of the run.
    delay = random.Random(command).uniform(min(2.0, took * 0.5), took * 0.95)
    proc = subprocess.Popen(_commands(work, out)[command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=ENV)  # fmt: skip
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if out.exists():  # the kill came after the final rename: the output is complete
        assert _result(command, out) == _result(command, ref)
        return
    again = subprocess.run(_commands(work, out)[command], capture_output=True, text=True, env=ENV)
    assert again.returncode == 0, again.stderr
    assert _result(command, out) == _result(command, ref)
    assert _leftovers(tmp_path, out.name) == [], "temporary files of the killed run were left behind"
    if command in ("extract", "train"):  # the resumed or rerun output is recorded as it was renamed into place
        from laya_inspect.out_dir import unproven_file

        assert unproven_file(out) is None


@pytest.mark.parametrize("command", ["extract", "fit-head", "compare", "train"])
def test_a_full_disk_ends_in_one_line_with_the_errno(work, tmp_path, command):
    out = tmp_path / ("out.h5" if command == "extract" else "out.pt" if command == "train" else "out")
    cmd = " ".join(f"'{c}'" for c in _commands(work, out)[command])
    res = subprocess.run(["bash", "-c", f"ulimit -f 64 && exec {cmd}"], capture_output=True, text=True, env=ENV)
    assert res.returncode == 1, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr and re.search(r"errno 2[78]", res.stderr), res.stderr[-2000:]
    assert not out.exists()
    assert _leftovers(tmp_path, out.name) == [] or command == "extract"  # extract keeps its rows to resume
