"""The options `fit-head` and `train` share, declared once (flag, help, default) for both configs."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..choices import INITS, MONITORS, PSI_CHOICES, VAL_MODES
from ..options import option
from ..runtime import DEVICE_HELP, THREADS_FLAG, THREADS_HELP, check_device

if TYPE_CHECKING:
    from .loop import LoopSettings

_SHARED: dict[str, dict[str, Any]] = {
    "lr": dict(default=3e-4, flag="--lr", help="Adam learning rate"),
    "batch_size": dict(default=128, flag="--batch-size", help="training batch size"),
    "epochs": dict(default=50, flag="--epochs", help="at most this many epochs", always=True),
    "patience": dict(
        default=5, flag="--patience", help="early stopping: epochs without a new best validation --monitor"
    ),
    "monitor": dict(
        default="loss",
        flag="--monitor",
        choices=MONITORS,
        help="early stopping watches validation loss (lower is better) or acc (higher); ties go to the "
        "other; the best epoch's weights are kept",
    ),
    "weight_decay": dict(default=0.0, flag="--weight-decay", help="Adam weight decay (L2 penalty), ≥ 0"),
    "val_fraction": dict(default=0.1, flag="--val-fraction", help="share of the training split held out"),
    "val_mode": dict(
        default="stratified",
        flag="--val-mode",
        choices=VAL_MODES,
        help="stratified (a seeded draw per class) | last (the last rows, as Keras)",
    ),
    "device": dict(default="auto", flag="--device", help=DEVICE_HELP, always=True),
    "threads": dict(default=None, flag=THREADS_FLAG, help=THREADS_HELP),
    "d_star": dict(default=96, flag="--d-star", help="adapter width d* (laya, concat, scalarmix)"),
    "tau": dict(default=1.5, flag="--tau", help="LAYA softmax temperature τ > 0"),
    "psi": dict(default="identity", flag="--psi", help="LAYA shared map ψ: identity | mlp"),
    "score_width": dict(default=None, flag="--score-width", help="LAYA scorer hidden width (default 2·d*)"),
    "init": dict(
        default="glorot",
        flag="--init",
        help="glorot (Keras' glorot-uniform, zero bias: the paper's) | torch (PyTorch's own defaults)",
    ),
}


def shared(name: str, **changes: Any) -> Any:
    """The field of a shared option (``changes`` override its declaration, e.g. ``always=True``)."""
    return option(**{**_SHARED[name], **changes})


HEAD_HPARAMS = ("d_star", "tau", "psi", "score_width", "init")  # the head options fit-head and train share


def loop_settings(cfg: Any, **run: Any) -> LoopSettings:
    """The training loop's settings: a config's shared options, and ``run``'s epochs, patience, seed (loss)."""
    from .loop import LoopSettings

    return LoopSettings(lr=cfg.lr, weight_decay=cfg.weight_decay, monitor=cfg.monitor, **run)


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def training_rules(cfg: Any) -> list[tuple[bool, str, str]]:
    """The rules `fit-head` and `train` share, for :func:`laya_inspect.options.check` (NaN and ±inf
    fail every rule on a float: they would train to chance and exit 0)."""
    check_device(cfg.device)
    return [
        # Adam moves each weight by about lr per step: beyond 1 a run can only diverge.
        (finite(cfg.lr) and 0 < cfg.lr <= 1, "lr", "must be a number in (0, 1]"),
        (finite(cfg.weight_decay) and cfg.weight_decay >= 0, "weight_decay", "must be a finite number ≥ 0"),
        (cfg.monitor in MONITORS, "monitor", f"must be one of {', '.join(MONITORS)}"),
        (cfg.batch_size >= 1, "batch_size", "must be ≥ 1"),
        (cfg.epochs is None or cfg.epochs >= 1, "epochs", "must be ≥ 1"),
        (cfg.patience is None or cfg.patience >= 1, "patience", "must be ≥ 1"),
        (0 < cfg.val_fraction < 1, "val_fraction", "must be in (0, 1)"),
        (cfg.val_mode in VAL_MODES, "val_mode", f"must be one of {', '.join(VAL_MODES)}"),
        (cfg.d_star >= 1, "d_star", "must be ≥ 1"),
        (finite(cfg.tau) and cfg.tau > 0, "tau", "must be a finite number > 0"),
        (cfg.psi in PSI_CHOICES, "psi", f"must be one of {', '.join(PSI_CHOICES)}"),
        (cfg.score_width is None or cfg.score_width >= 1, "score_width", "must be ≥ 1"),
        (cfg.init in INITS, "init", f"must be one of {', '.join(INITS)}"),
    ]
