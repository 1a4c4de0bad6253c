"""With --monitor acc, early stopping keeps the epoch of best validation accuracy, so the epoch-limit
warning reads the validation accuracy too: a run is still improving where the mean accuracy of its last
fifth of the epochs lies above that of the fifth before by more than one binomial standard error
(at least one row). A loss that keeps falling beside a flat accuracy does not warn, and summary.json
(train: its metrics file) says which quantity the rule read."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.training.quality import accuracy_noise, epoch_limit, still_improving

runner = CliRunner()
ENV = {"COLUMNS": "200"}


def _fit(cache: Path, out: Path, head: str, *extra: str) -> tuple[dict, dict, list[dict]]:
    """fit-head on one seed: summary.json, its head row and the run's per-epoch validation numbers."""
    args = ["fit-head", str(cache), "--head", head, "--seeds", "1", "--batch-size", "32", "--no-probe"]
    result = runner.invoke(app, [*args, *extra, "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    with open(out / head / "seed_0" / "train_log.csv", newline="") as f:
        history = [{k: float(r[k]) for k in ("val_loss", "val_acc")} for r in csv.DictReader(f)]
    return summary, summary["heads"][0], history


def _windows(history: list[dict], key: str, w: int) -> tuple[float, float]:
    values = [h[key] for h in history]
    return sum(values[-2 * w : -w]) / w, sum(values[-w:]) / w


def _limit(warnings: list[str]) -> list[str]:
    return [w for w in warnings if w.startswith("epoch limit")]


def test_a_falling_loss_beside_a_held_accuracy_is_not_warned_under_monitor_acc(
    digits_cache: Path, tmp_path: Path
) -> None:
    """Before, this run was warned "loss −8%": its best accuracy came at epoch 7 of 20 and had held since."""
    summary, head, history = _fit(
        digits_cache,
        tmp_path / "acc",
        "concat",
        "--epochs",
        "20",
        "--patience",
        "20",
        "--lr",
        "3e-3",
        "--monitor",
        "acc",
    )
    loss_before, loss_last = _windows(history, "val_loss", 4)
    acc_before, acc_last = _windows(history, "val_acc", 4)
    n_val = summary["split"]["n_val"]
    # the premise: the loss still fell by more than the loss rule's 5%, the accuracy rose by less than its noise
    assert (loss_before - loss_last) / loss_before > 0.05
    assert acc_last - acc_before < math.sqrt(acc_last * (1 - acc_last) / n_val)
    assert _limit(head["warnings"]) == []
    assert summary["quality"]["epoch_limit_reads"] == "val_acc"
    # under --monitor loss the same run (no stop: the same epochs) is not warned either: its best loss lies at
    # epoch 7 and the last 4 epochs hold no new best, their lower mean a partial recovery from a rise
    _, head, history = _fit(
        digits_cache, tmp_path / "loss", "concat", "--epochs", "20", "--patience", "20", "--lr", "3e-3"
    )
    loss = [h["val_loss"] for h in history]
    assert min(loss[-4:]) > min(loss[:-4]) and _limit(head["warnings"]) == []


def test_a_rising_accuracy_is_warned_on_accuracy_under_monitor_acc(digits_cache: Path, tmp_path: Path) -> None:
    extra = ("--epochs", "20", "--patience", "20", "--lr", "1e-3")
    summary, head, history = _fit(digits_cache, tmp_path / "acc", "last", *extra, "--monitor", "acc")
    before, last = _windows(history, "val_acc", 4)
    n_val = summary["split"]["n_val"]
    assert last - before > accuracy_noise((before + last) / 2, n_val)  # the premise: still rising, beyond noise
    (warning,) = _limit(head["warnings"])
    assert warning.startswith(f"epoch limit: seed 0 (best epoch 20 of 20; accuracy {(last - before) * 100:+.1f} points")
    assert "mean validation accuracy (the --monitor) of the last 4 epochs rose" in warning
    assert f"sampling noise over the {n_val} validation rows" in warning and "more --epochs" in warning
    assert summary["quality"]["epoch_limit_reads"] == "val_acc"
    # the default monitor reads the loss, as before
    summary, head, _ = _fit(digits_cache, tmp_path / "loss", "last", *extra)
    assert summary["quality"]["epoch_limit_reads"] == "val_loss"
    (warning,) = _limit(head["warnings"])
    assert "mean validation loss of the last 4 epochs fell" in warning


def _run(acc: list[float], loss: list[float] | None = None) -> SimpleNamespace:
    """A run that used all its epochs with its best on the last, from its validation accuracy per epoch."""
    loss = loss or [1.0] * len(acc)
    rows = [{"val_loss": v, "val_acc": a} for v, a in zip(loss, acc)]
    return SimpleNamespace(seed=0, epochs_run=len(rows), best_epoch=len(rows), history=rows)


def test_the_accuracy_rule_is_one_standard_error_and_at_least_one_row() -> None:
    assert accuracy_noise(0.5, 100) == pytest.approx(0.05)
    assert accuracy_noise(1.0, 100) == pytest.approx(0.01)  # no binomial error at 1: one row's step
    # 5 epochs, windows of 1: 0.50 → 0.56 at n = 100 (noise √(0.53·0.47/100) = 0.0499) is warned, 0.50 → 0.54 not
    assert still_improving(_run([0.4, 0.45, 0.5, 0.5, 0.56]).history, 5, "acc", 100) == pytest.approx(0.06)
    assert still_improving(_run([0.4, 0.45, 0.5, 0.5, 0.54]).history, 5, "acc", 100) is None
    # the loss fell by half, the accuracy held: warned under --monitor loss, not under --monitor acc
    flat = _run([0.9] * 5, [1.0, 0.8, 0.6, 0.5, 0.25])
    assert epoch_limit([flat], 5, 5, advice="fit again") is not None
    assert epoch_limit([flat], 5, 5, advice="fit again", monitor="acc", n_val=100) is None


@pytest.mark.slow
def test_train_reads_its_own_monitor(tmp_path: Path) -> None:
    """train's one run under --monitor acc: its loss still fell over its last epoch, its accuracy held, and
    early stopping kept the last epoch; before, the loss alone warned it."""
    ckpt = tmp_path / "mlp.pt"
    args = ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "last", "--epochs", "5", "--monitor", "acc"]
    result = runner.invoke(app, [*args, "--out", str(ckpt)], env=ENV)
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "mlp.metrics.json").read_text())
    assert metrics["monitor"] == "acc"
    (before, last), n_val = metrics["history"][-2:], metrics["n_val"]
    # the premise: run to the limit, best last, the loss still falling, the accuracy within its noise
    assert metrics["epochs_run"] == 5 and metrics["best_epoch"] == 5
    assert (before["val_loss"] - last["val_loss"]) / before["val_loss"] > 0.05
    assert last["val_acc"] - before["val_acc"] <= accuracy_noise((before["val_acc"] + last["val_acc"]) / 2, n_val)
    assert _limit(metrics["warnings"]) == []
    assert metrics["epoch_limit_reads"] == "val_acc"
