"""A user's own architecture (fixtures/digits_convnet.py) through extract → fit-head on real digits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
runner = CliRunner()
pytestmark = pytest.mark.slow  # extract → fit-head through the CLI on real digits


def test_python_factory_extract_and_fit(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    import digits_convnet

    torch.manual_seed(0)
    model = digits_convnet.build()
    torch.save({"state_dict": {f"module.{k}": v for k, v in model.state_dict().items()}}, tmp_path / "w.pt")
    res = runner.invoke(
        app,
        [
            "extract",
            "--model",
            "python:digits_convnet:build",
            "--weights",
            str(tmp_path / "w.pt"),
            "--data",
            "digits",
            "--layers",
            "conv1,conv2",
            "--out",
            str(tmp_path / "f.h5"),
            "--device",
            "cpu",
        ],
    )
    assert res.exit_code == 0, res.output
    with FeatureStore(tmp_path / "f.h5") as store:
        assert store.layer_names == ["conv1", "conv2"] and store.widths == [8, 16]
        assert store.attrs["layer_pooling"] == ["gap", "gap"]
        assert store.attrs["layer_shapes"] == [[8, 8, 8], [16, 4, 4]]
        # The cached GAP of conv2 through the model's own fc gives its stored logits.
        with torch.no_grad():
            logits = model.fc(torch.from_numpy(store.layer("test", "conv2")))
        np.testing.assert_allclose(logits.numpy(), store.logits("test"), rtol=1e-5, atol=1e-5)
    res = runner.invoke(
        app,
        [
            "fit-head",
            str(tmp_path / "f.h5"),
            "--head",
            "laya,last",
            "--seed",
            "0",
            "--epochs",
            "3",
            "--lr",
            "1e-2",
            "--out",
            str(tmp_path / "heads"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "heads" / "laya" / "seed_0" / "weights.pt").exists()


SEQUENTIAL_CONVNET = """
from torch import nn

def build():
    m = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Dropout(0.1), nn.Linear(16, 10),
    )
    m.input_spec = {"kind": "image", "channels": 1, "size": 8}
    return m
"""


def test_a_plain_sequential_convnet_is_tapped_once_per_unit_after_its_activation(tmp_path, monkeypatch):
    """QA: a user's Conv–BN–ReLU nn.Sequential given as python: had the top-level children holding
    parameters as its default layers ("0, 1, 4, 5" here): a conv and its own BatchNorm as two layers, each
    read before its activation. One tap per unit now, after its norm and activation (the pooled map, not
    the flatten or dropout after it), the classifier's unit left out, and the settings line says the rule."""
    (tmp_path / "seq_convnet.py").write_text(SEQUENTIAL_CONVNET)
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["extract", "--model", "python:seq_convnet:build", "--random-init", "--data", "digits"]
    res = runner.invoke(app, [*args, "--limit", "60", "--out", str(tmp_path / "f.h5"), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    with FeatureStore(tmp_path / "f.h5") as store:
        assert store.layer_names == ["3", "7"] and store.widths == [8, 16]
        assert store.attrs["layer_types"] == ["MaxPool2d", "AdaptiveAvgPool2d"]
        # after the ReLU: the rows a unit's activation gives are never negative
        assert all(store.layer("test", n).min() >= 0 for n in store.layer_names)
    said = " ".join(res.output.split())
    assert "layers all: one per unit of the nn.Sequential" in said and "classifier's unit left out" in said
    assert said.count("layers all") == 1  # the rule beside --layers all, not a second "layers all" item
