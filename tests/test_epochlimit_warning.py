"""fit-head and train warn when the epoch limit, not early stopping, ended a seed's training while its
validation loss still fell: it ran all --epochs, its best validation epoch lies fewer than --patience
epochs before the end, and the mean validation loss of its last fifth of the epochs lies more than 5%
below that of the fifth before. A run on a plateau, whose best is a late dip of a flat loss, is not."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import page_said
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.training.quality import epoch_limit

runner = CliRunner()
ENV = {"COLUMNS": "200"}


def _fit(cache: Path, out: Path, *extra: str) -> tuple[str, dict, dict]:
    """fit-head's `last` head on one seed: the terminal output, summary.json's head row and the run's metrics."""
    args = ["fit-head", str(cache), "--head", "last", "--seeds", "1", "--batch-size", "32", "--no-probe"]
    result = runner.invoke(app, [*args, *extra, "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    metrics = json.loads((out / "last" / "seed_0" / "metrics.json").read_text())
    with open(out / "last" / "seed_0" / "train_log.csv", newline="") as f:
        metrics["history"] = [{k: float(r[k]) for k in ("val_loss", "val_acc")} for r in csv.DictReader(f)]
    return result.output, summary["heads"][0], metrics


def _limit(warnings: list[str]) -> list[str]:
    return [w for w in warnings if w.startswith("epoch limit")]


def _fall(history: list[dict], w: int) -> float:
    """The relative fall of the mean validation loss of the last ``w`` epochs from the ``w`` before."""
    loss = [h["val_loss"] for h in history]
    before, last = sum(loss[-2 * w : -w]) / w, sum(loss[-w:]) / w
    return (before - last) / before


def test_a_fit_still_improving_at_the_epoch_limit_is_warned(digits_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "heads"
    said, head, metrics = _fit(digits_cache, out, "--epochs", "10", "--patience", "10", "--lr", "1e-3")
    # the premise: the validation loss still fell clearly over the last fifth of the epochs the limit allowed
    assert metrics["epochs_run"] == 10 and metrics["best_epoch"] == 10 and _fall(metrics["history"], 2) > 0.05
    (warning,) = _limit(head["warnings"])
    assert f"seed 0 (best epoch 10 of 10; loss −{_fall(metrics['history'], 2):.0%}, accuracy " in warning
    assert "last 2 epochs" in warning and "more --epochs" in warning and "higher --lr" in warning
    assert "epoch limit: seed 0 (best epoch 10 of 10;" in " ".join(said.split())
    page = runner.invoke(app, ["report", str(out), "--html"], env=ENV)
    assert page.exit_code == 0, page.output
    assert "epoch limit: seed 0 (best epoch 10 of 10;" in page_said(out / "report.html")


def test_a_fit_that_stops_on_patience_is_not_warned(digits_cache: Path, tmp_path: Path) -> None:
    _, head, metrics = _fit(digits_cache, tmp_path / "early", "--epochs", "300", "--patience", "2", "--lr", "0.3")
    ran, best = metrics["epochs_run"], metrics["best_epoch"]
    assert ran < 300 and ran - best == 2  # stopped by its patience, well before the limit
    assert _limit(head["warnings"]) == []


def test_a_fit_on_a_plateau_at_the_epoch_limit_is_not_warned(digits_cache: Path, tmp_path: Path) -> None:
    """A patience of the whole budget never stops a run early, so before, every run's best lay within
    the patience of the end and every run was warned, however flat its loss had long been."""
    _, head, metrics = _fit(digits_cache, tmp_path / "flat", "--epochs", "40", "--patience", "40", "--lr", "0.3")
    assert metrics["epochs_run"] == 40 and 40 - metrics["best_epoch"] < 40  # the limit ended it
    assert _fall(metrics["history"], 8) < 0.05  # the premise: a plateau over its last 16 epochs
    assert _limit(head["warnings"]) == []


@pytest.mark.slow
def test_train_warns_a_backbone_still_improving_at_the_epoch_limit(tmp_path: Path) -> None:
    ckpt = tmp_path / "mlp.pt"
    args = ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "last", "--epochs", "5", "--out", str(ckpt)]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "mlp.metrics.json").read_text())
    assert metrics["epochs_run"] == 5 and metrics["best_epoch"] == 5 and _fall(metrics["history"], 1) > 0.05
    (warning,) = _limit(metrics["warnings"])
    assert warning.startswith("epoch limit: seed 0 (best epoch 5 of 5;")
    assert warning.endswith("train again with more --epochs, or a higher --lr")
    assert "epoch limit: seed 0 (best epoch 5 of 5;" in " ".join(result.output.split())


def _run(history: list[tuple[float, float]]) -> SimpleNamespace:
    """A run that used all its epochs with its best on the last, from (val_loss, val_acc) per epoch."""
    rows = [{"val_loss": loss, "val_acc": acc} for loss, acc in history]
    return SimpleNamespace(seed=0, epochs_run=len(rows), best_epoch=len(rows), history=rows)


def test_a_loss_falling_at_a_held_accuracy_is_said_to_bring_little_accuracy() -> None:
    """On rows a head already answers right its loss keeps falling as its logits grow: the warning says its
    accuracy held, so a user does not retrain for an accuracy more epochs would not bring."""
    held = _run([(0.20 - 0.01 * e, 0.97) for e in range(10)])
    (warning,) = [w for w in [epoch_limit([held], 10, 10, advice="fit again")] if w]
    assert "loss −" in warning and "accuracy +0.0 points" in warning
    assert "validation accuracy held" in warning and "change its accuracy little" in warning
    rising = _run([(0.20 - 0.01 * e, 0.80 + 0.01 * e) for e in range(10)])
    warning = epoch_limit([rising], 10, 10, advice="fit again")
    assert warning is not None and "accuracy +2.0 points" in warning and "held" not in warning
