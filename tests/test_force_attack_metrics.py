"""`train` writes ``<stem>.metrics.json`` beside its checkpoint, so two checkpoints of one stem share
a metrics file: `train --out model.pth` beside `model.pt` used to replace model.pt's metrics, with
--force or without."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from laya_inspect.cli import app

runner = CliRunner()
TRAIN = ["train", "--model", "zoo:mlp", "--data", "digits", "--limit", "100", "--epochs", "1", "--device", "cpu"]


@pytest.fixture()
def trained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*TRAIN, "--out", "model.pt"])
    assert result.exit_code == 0, result.output
    return Path("model.metrics.json").read_bytes()


def test_another_suffix_keeps_the_first_checkpoints_metrics(trained: bytes) -> None:
    for force in ([], ["--force"]):
        result = runner.invoke(app, [*TRAIN, "--seed", "5", "--out", "model.pth", *force])
        assert result.exit_code == 1, result.output
        assert "holds the metrics of checkpoint model.pt" in " ".join(result.output.split())
        assert Path("model.metrics.json").read_bytes() == trained
        assert not Path("model.pth").exists()
