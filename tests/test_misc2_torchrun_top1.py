"""Under torchrun, extract records the model's own top-1 (``model_top1``) and prints its line, as one
process does: the join sums each shard's counts per split (not a mean of the shards' shares). It never
recorded it there, so neither the line nor the near-chance warning could be given. Real 2-process runs
(gloo, CPU) on sklearn's digits, through a linear classifier fitted by sklearn's logistic regression."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import h5py
import pytest
import torch
from typer.testing import CliRunner

from laya_inspect.cli import app
from tests.test_cachemisc_top1 import MODEL, _weights

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg", "COLUMNS": "400"}


@pytest.fixture
def work(tmp_path, monkeypatch):
    (tmp_path / "linmodel.py").write_text(MODEL)  # the one-process test's model, weights alike
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _args(weights, out):
    return [
        "extract", "--model", "python:linmodel.py:make", "--weights", str(weights), "--data", "digits",
        "--layers", "all", "--device", "cpu", "--batch-size", "64", "--out", str(out),
    ]  # fmt: skip


def _torchrun(weights, out):
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m", "laya_inspect"]
    done = subprocess.run([*launch, *_args(weights, out)], capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with h5py.File(out, "r") as f:
        assert int(f.attrs["world_size"]) == 2
        return (
            " ".join((done.stdout + done.stderr).split()),
            json.loads(f.attrs["model_top1"]),
            json.loads(f.attrs["warnings"]),
        )


@pytest.mark.slow
def test_torchrun_records_and_prints_the_models_own_top1_as_one_process_does(work):
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    x, y = load_digits(return_X_y=True)
    fit = LogisticRegression(max_iter=500).fit(x / 16.0, y)  # extract scales the 0..16 pixels alike
    weights = _weights(work / "w.pt", fit.coef_, fit.intercept_.astype("float32"))
    one = CliRunner().invoke(app, _args(weights, work / "one.h5"))
    assert one.exit_code == 0, one.output
    with h5py.File(work / "one.h5", "r") as f:
        alone = json.loads(f.attrs["model_top1"])
    said, recorded, _ = _torchrun(weights, work / "two.h5")
    assert recorded == alone  # every row counted once: hits and rows, so the shares, as one process's
    assert recorded["test"]["rows"] > 64  # both ranks held test rows (batches of 64 shared out)
    line = (
        f"the model's own top-1 accuracy: train {recorded['train']['top1']:.3f} · test {recorded['test']['top1']:.3f}"
    )
    assert line in said and "near chance" not in said, said

    # every logit 0: the top class is always the first, the label on about a tenth of the rows
    said, recorded, warnings = _torchrun(
        _weights(work / "zero.pt", torch.zeros(10, 64), torch.zeros(10)), work / "z.h5"
    )
    assert recorded["test"]["top1"] < 0.2
    assert "warning: the model is near chance on its own task" in said, said
    assert sum("near chance on its own task" in w for w in warnings) == 1, warnings  # in the cache, once
