"""Early stopping on validation loss (ties broken by accuracy) or accuracy (ties broken by loss), the
non-finite-loss stop, and the option rules `fit-head` and `train` share."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import write_cache
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.errors import InputError
from laya_inspect.training.fit_head import FitConfig, fit_heads
from laya_inspect.training.joint import JointConfig
from laya_inspect.training.loop import EarlyStopping

runner = CliRunner()
ENV = {"COLUMNS": "200"}


def _replay(monitor: str, epochs: list[tuple[float, float]], patience: int = 2) -> tuple[EarlyStopping, float, int]:
    """Feed (val loss, val acc) per epoch; the module's weight holds the epoch number, so the restored
    weight says which epoch's weights were kept. Returns the stopper, that weight and the epochs run."""
    module = torch.nn.Linear(1, 1, bias=False)
    stopper = EarlyStopping(patience, monitor)
    run = 0
    for epoch, (loss, acc) in enumerate(epochs, start=1):
        run = epoch
        with torch.no_grad():
            module.weight.fill_(float(epoch))
        if stopper.step(epoch, loss, acc, module):
            break
    stopper.restore(module)
    return stopper, float(module.weight.detach()), run


def test_loss_monitor_keeps_the_lowest_loss_and_breaks_ties_by_accuracy() -> None:
    stopper, kept, run = _replay("loss", [(0.9, 0.5), (0.5, 0.7), (0.5, 0.8), (0.6, 0.9), (0.7, 0.95)])
    # epoch 3 ties epoch 2 on loss and wins on accuracy; epochs 4 and 5 are worse losses: stop after 5
    assert (stopper.best_epoch, kept, run) == (3, 3.0, 5)
    assert (stopper.best_loss, stopper.best_acc, stopper.best) == (0.5, 0.8, 0.5)


def test_acc_monitor_breaks_ties_by_loss_so_a_saturated_accuracy_still_learns() -> None:
    # Accuracy 1.0 from epoch 1: a strict gain on accuracy alone would keep epoch 1.
    stopper, kept, run = _replay("acc", [(0.7, 1.0), (0.3, 1.0), (0.1, 1.0), (0.2, 1.0), (0.15, 1.0)])
    assert (stopper.best_epoch, kept, run) == (3, 3.0, 5)
    stopper, kept, _ = _replay("acc", [(0.7, 0.8), (0.9, 0.9), (0.1, 0.85), (0.05, 0.85)])
    assert stopper.best_epoch == 2 and kept == 2.0  # higher accuracy wins over a lower loss


def test_unknown_monitor_is_refused() -> None:
    with pytest.raises(InputError, match="--monitor must be one of loss, acc"):
        EarlyStopping(3, "f1")


@pytest.fixture(scope="module")
def separable_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three well-separated blobs: validation accuracy reaches 1.0 in the first epoch."""
    rng = np.random.default_rng(0)

    def split(n: int) -> tuple[list[np.ndarray], np.ndarray]:
        y = np.arange(n) % 3
        x = np.eye(3)[y] * 6.0 + rng.normal(scale=0.3, size=(n, 3))
        return [x.astype(np.float32), np.tanh(x).astype(np.float32)], y

    return write_cache(tmp_path_factory.mktemp("sep") / "sep.h5", {"train": split(600), "test": split(150)})


@pytest.mark.slow
def test_saturated_accuracy_no_longer_keeps_the_epoch_1_head(separable_cache: Path, tmp_path: Path) -> None:
    """The issue's finding, reproduced: accuracy is 1.0 at epoch 1 while the loss keeps falling. Every
    rule now keeps a later epoch with a far lower validation loss."""
    with FeatureStore(separable_cache) as store:
        for i, monitor in enumerate(("loss", "acc")):
            cfg = FitConfig(heads=("scalarmix",), seeds=(0,), epochs=12, patience=3, monitor=monitor, probe=False)
            run = fit_heads(store, cfg, out_dir=tmp_path / str(i)).runs[0]
            first = run.history[0]
            assert first["val_acc"] == 1.0  # the old strict-gain rule would have stopped here, keeping epoch 1
            assert run.best_epoch > 1 and run.val_acc == 1.0
            assert run.val_loss < 0.5 * first["val_loss"], (monitor, run.history)
            assert run.val_loss == min(h["val_loss"] for h in run.history)


def _with_value(cache: Path, layer: int, value: float) -> Path:
    """``cache`` with one training feature of ``layer`` set to ``value`` (as a cache written with
    ``extract --allow-nonfinite`` may hold)."""
    import h5py

    from laya_inspect.cache.store import layer_key

    with h5py.File(cache, "r+") as f:
        f["train"][layer_key(layer)][7, 3] = value
    return cache


def test_non_finite_loss_stops_with_one_line_naming_head_seed_epoch(digits_cache: Path, tmp_path: Path) -> None:
    # One infinite feature in one training row, with standardisation off (which would refuse it first):
    # the loss of the batch holding that row is not finite.
    with FeatureStore(digits_cache) as store:
        feats = [a.copy() for a in store.layers("train")]
        labels = store.labels("train")
    cache = _with_value(
        write_cache(tmp_path / "inf.h5", {"train": (feats, labels), "test": (feats, labels)}), 0, np.inf
    )
    cfg = FitConfig(heads=("laya",), seeds=(3,), epochs=5, standardize="none", probe=False)
    with FeatureStore(cache) as store, pytest.raises(InputError) as err:
        fit_heads(store, cfg, out_dir=tmp_path / "o")
    message = str(err.value)
    assert "head 'laya', seed 3 stopped: the training loss became nan at epoch 1" in message
    assert "--lr" in message and "\n" not in message
    assert not (tmp_path / "o").exists()  # nothing written under --out


def test_nan_features_are_refused_before_training(digits_cache: Path, tmp_path: Path) -> None:
    with FeatureStore(digits_cache) as store:
        feats = [a.copy() for a in store.layers("train")]
        labels = store.labels("train")
    cache = _with_value(
        write_cache(tmp_path / "nan.h5", {"train": (feats, labels), "test": (feats, labels)}), 1, np.nan
    )
    with FeatureStore(cache) as store, pytest.raises(InputError, match="layer 'blocks.1' holds NaN or infinite"):
        fit_heads(store, FitConfig(heads=("last",), seeds=(0,), epochs=1), out_dir=tmp_path / "o")


def test_single_class_training_rows_are_refused(digits_cache: Path, tmp_path: Path) -> None:
    with FeatureStore(digits_cache) as store:
        feats = store.layers("train")
    y = np.zeros(len(feats[0]), dtype=np.int64)
    cache = write_cache(tmp_path / "one.h5", {"train": (feats, y), "test": (feats, y)}, class_names=["a", "b"])
    with FeatureStore(cache) as store, pytest.raises(InputError, match="holds only class 0 \\('a'\\); a head needs"):
        fit_heads(store, FitConfig(seeds=(0,), epochs=1), out_dir=tmp_path / "o")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"lr": math.inf}, "--lr must be a number in (0, 1], got inf"),
        ({"lr": math.nan}, "--lr must be a number in (0, 1], got nan"),
        ({"lr": 0.0}, "--lr must be a number in (0, 1]"),
        ({"lr": 2.0}, "--lr must be a number in (0, 1]"),
        ({"weight_decay": -1e-4}, "--weight-decay must be a finite number ≥ 0"),
        ({"weight_decay": math.inf}, "--weight-decay must be a finite number ≥ 0"),
        ({"tau": math.inf}, "--tau must be a finite number > 0"),
        ({"val_fraction": math.nan}, "--val-fraction must be in (0, 1)"),
        ({"monitor": "f1"}, "--monitor must be one of loss, acc"),
        ({"patience": 0}, "--patience must be ≥ 1"),
    ],
)
def test_shared_option_rules(changes: dict, message: str) -> None:
    for config in (FitConfig, JointConfig):
        with pytest.raises(InputError) as err:
            config(**changes)
        assert message in str(err.value), config


def test_seeds_outside_what_the_generators_take_are_refused() -> None:
    with pytest.raises(InputError, match="--split-seed must be an integer from 0 to 2\\*\\*64 - 1, got -1"):
        FitConfig(split_seed=-1)
    with pytest.raises(InputError, match="--seed must be an integer from 0 to 2\\*\\*64 - 1, got 18446744073709551616"):
        JointConfig(seed=2**64)


def test_standardize_and_grid_values_are_checked() -> None:
    with pytest.raises(InputError, match="--standardize must be one of feature, layer, none"):
        FitConfig(standardize="minmax")
    with pytest.raises(InputError, match="--grid-tau values must be finite numbers > 0"):
        FitConfig(grid=True, grid_tau=(1.0, math.inf))
    with pytest.raises(InputError, match="--ln-eps must be a finite number > 0"):
        JointConfig(ln_eps=math.nan)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--lr", "inf"], "--lr must be a number in (0, 1], got inf"),
        (["--lr", "nan"], "--lr must be a number in (0, 1], got nan"),
        (["--weight-decay", "-1"], "--weight-decay must be a finite number ≥ 0, got -1.0"),
    ],
)
def test_cli_refuses_non_finite_options(digits_cache: Path, tmp_path: Path, args: list[str], message: str) -> None:
    for command in (
        ["fit-head", str(digits_cache), "--out", str(tmp_path / "h")],
        ["train", "--model", "zoo:mlp", "--data", "digits", "--out", str(tmp_path / "m.pt")],
    ):
        result = runner.invoke(app, [*command, *args], env=ENV)
        assert result.exit_code == 1, result.output
        assert message in result.stderr and result.stderr.strip().count("\n") == 0
        assert not (tmp_path / "h").exists() and not (tmp_path / "m.pt").exists()


def test_cli_monitor_choices_are_usage_errors(digits_cache: Path) -> None:
    result = runner.invoke(app, ["fit-head", str(digits_cache), "--monitor", "f1"], env=ENV)
    assert result.exit_code == 2 and "loss, acc" in result.output


def test_default_budget_counts_optimizer_steps() -> None:
    cfg = FitConfig()
    assert cfg.budget(54_000) == (50, 5)  # Fashion-MNIST: 422 steps an epoch, the plain defaults
    assert cfg.budget(1_212) == (400, 40)  # digits: 10 steps an epoch → 4,000 and 400 steps
    assert FitConfig(epochs=7, patience=2).budget(1_212) == (7, 2)  # given values are kept


def test_the_best_weights_are_kept_as_clones_not_a_deep_copy(monkeypatch):
    """A deep copy of the state dict walked Python objects at every new best: 6–15% of a prune refit
    whose epochs are one batch each. The kept weights are tensor clones: separate
    from the weights still training, and restored exactly."""
    import copy

    copies: list[object] = []
    real = copy.deepcopy
    monkeypatch.setattr(copy, "deepcopy", lambda x, *a, **k: copies.append(x) or real(x, *a, **k))
    module = torch.nn.Linear(3, 2)
    stopper = EarlyStopping(2)
    stopper.step(1, 1.0, 0.5, module)  # the first epoch is the best so far: kept
    kept = {k: v.detach().clone() for k, v in module.state_dict().items()}
    with torch.no_grad():
        module.weight.add_(1.0)  # training goes on; the kept weights must not follow
    stopper.step(2, 2.0, 0.4, module)  # worse: not kept
    stopper.restore(module)
    assert all(torch.equal(module.state_dict()[k], v) for k, v in kept.items())
    assert copies == []
