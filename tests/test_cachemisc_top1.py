"""extract prints the model's own top-1 accuracy (the cache's ``model_top1``) on every run where it is
known, not only when it is near chance; near chance, the warning is still given beside it. Real data:
sklearn's digits, through a linear classifier fitted by sklearn's logistic regression."""

from __future__ import annotations

import json

import h5py
import pytest
import torch
from typer.testing import CliRunner

from laya_inspect.cli import app

MODEL = """
import torch


def make():
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
"""


@pytest.fixture
def work(tmp_path, monkeypatch):
    (tmp_path / "linmodel.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _weights(path, weight, bias):
    torch.save({"1.weight": torch.as_tensor(weight, dtype=torch.float32), "1.bias": torch.as_tensor(bias)}, path)
    return path


def _extract(work, weights):
    args = ["extract", "--model", "python:linmodel:make", "--weights", str(weights), "--data", "digits"]
    result = CliRunner().invoke(app, [*args, "--layers", "all", "--device", "cpu", "--out", str(work / "c.h5")])
    assert result.exit_code == 0, result.output
    with h5py.File(work / "c.h5", "r") as f:
        recorded = json.loads(f.attrs["model_top1"])
    return " ".join(result.output.split()), recorded


def test_extract_prints_the_models_own_top1_where_it_learnt_its_task(work):
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    x, y = load_digits(return_X_y=True)
    fit = LogisticRegression(max_iter=500).fit(x / 16.0, y)  # extract scales the 0..16 pixels alike
    said, recorded = _extract(work, _weights(work / "w.pt", fit.coef_, fit.intercept_.astype("float32")))
    train, test = recorded["train"], recorded["test"]
    assert test["top1"] > 0.9  # far from chance: BASE printed nothing of it
    line = (
        f"the model's own top-1 accuracy: train {train['top1']:.3f} · test {test['top1']:.3f} "
        f"(majority class {train['majority']:.3f} · {test['majority']:.3f})"
    )
    assert line in said
    assert "near chance" not in said


def test_near_chance_the_line_is_printed_and_the_warning_still_given(work):
    # every logit 0: the top class is always the first, the label on about a tenth of the rows
    said, recorded = _extract(work, _weights(work / "zero.pt", torch.zeros(10, 64), torch.zeros(10)))
    assert recorded["test"]["top1"] == pytest.approx(recorded["test"]["hits"] / recorded["test"]["rows"])
    assert recorded["test"]["top1"] < 0.2
    assert f"the model's own top-1 accuracy: train {recorded['train']['top1']:.3f}" in said
    assert "warning: the model is near chance on its own task" in said
