"""train's backbone-classifier probe line gives its test accuracy with the test rows' Wilson interval
and chance, as train's own accuracy line does."""

from __future__ import annotations

from pathlib import Path

import torch
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.training.stats import rows_accuracy

runner = CliRunner()
ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "300"}


def test_train_probe_line_has_the_rows_interval_and_chance(tmp_path: Path) -> None:
    ckpt = tmp_path / "laya.pt"
    args = ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "laya", "--epochs", "1"]
    args += ["--limit", "300", "--device", "cpu", "--out", str(ckpt)]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    m = torch.load(ckpt, weights_only=True)["metrics"]
    probe = m["backbone_head"]
    said = " ".join(result.stdout.split())
    expected = rows_accuracy(probe["test_acc"], m["n_test"], m["chance"])
    assert f"not --epochs/--lr: test accuracy {expected}" in said
    assert "(95% Wilson), chance" in expected  # the form the line now takes, not a bare number
