"""The `laya-inspect` command line that makes a command build a given library config.

``command_line("train", JointConfig(...), out=PATH)`` → ``["laya-inspect", "train", "--model", …]``.
An option is written when its value differs from the command's default, or when it is one the reader
should always see (:data:`ALWAYS`); a config field the command has no option for must keep its
default, else ``ValueError``: the line would not rebuild the config. Tests parse each line with the
real command and check that it builds the very same config.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .heads import HEADS

# field → option of the command; a field missing here must keep its default (else ValueError). Bool
# options are "--on/--off" pairs or a single "--flag" (True only). CLI_DEFAULTS: where the command's
# default differs from the config's (tests check these against the commands themselves).
FLAGS: dict[str, dict[str, str]] = {
    "train": {"model": "--model", "data": "--data", "head": "--head", "seed": "--seed", "lr": "--lr",
              "batch_size": "--batch-size", "epochs": "--epochs", "patience": "--patience",
              "val_fraction": "--val-fraction", "val_mode": "--val-mode", "limit": "--limit", "device": "--device",
              "d_star": "--d-star", "tau": "--tau", "psi": "--psi", "score_width": "--score-width",
              "init": "--init", "ln_eps": "--ln-eps", "loss": "--loss"},
    "extract": {"model": "--model", "weights": "--weights", "data": "--data", "layers": "--layers", "pool": "--pool",
                "splits": "--split", "limit": "--limit", "batch_size": "--batch-size", "dtype": "--dtype",
                "seed": "--seed", "device": "--device", "trust_pickle": "--trust-pickle",
                "image_size": "--image-size", "normalize": "--normalize", "resize": "--resize",
                "overwrite": "--overwrite", "out": "--out"},
    "fit-head": {"heads": "--head", "seeds": "--seeds", "d_star": "--d-star", "tau": "--tau", "psi": "--psi",
                 "score_width": "--score-width", "lr": "--lr", "batch_size": "--batch-size", "epochs": "--epochs",
                 "patience": "--patience", "val_fraction": "--val-fraction", "val_mode": "--val-mode",
                 "split_seed": "--split-seed", "train_split": "--train-split", "test_split": "--test-split",
                 "device": "--device"},
    "compare": {"methods": "--method", "ablation": "--ablation", "target": "--target", "split": "--split",
                "limit": "--limit", "seed": "--seed", "n_steps": "--n-steps",
                "internal_batch_size": "--internal-batch-size", "baseline": "--baseline", "relu": "--relu/--no-relu",
                "n_boot": "--bootstrap", "device": "--device", "batch_size": "--batch-size", "force": "--force",
                "plots": "--plots/--no-plots"},
}
ALWAYS = {"train": ("model", "data", "head", "seed", "epochs", "limit", "device"),
          "extract": ("model", "weights", "data", "layers", "limit", "seed", "device"),
          "fit-head": ("heads", "seeds", "d_star", "tau", "epochs", "device"),
          "compare": ("methods", "limit", "seed", "n_steps", "n_boot", "device")}
CLI_DEFAULTS = {"compare": {"methods": ("all",), "device": "auto"}, "fit-head": {"heads": ("all",)}}


def _default(command: str, f: dataclasses.Field) -> Any:
    if f.name in CLI_DEFAULTS.get(command, {}):
        return CLI_DEFAULTS[command][f.name]
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING


def _value(command: str, name: str, value: Any) -> Any:
    if command == "fit-head" and name == "heads" and tuple(value) == tuple(HEADS.names()):
        return ("all",)
    if command == "fit-head" and name == "seeds":
        if tuple(value) != tuple(range(len(value))):
            raise ValueError(f"fit-head takes seeds 0 … N−1 (--seeds N), not {list(value)}")
        return len(value)
    return value


def command_line(command: str, config: Any, *, out: Path | None = None, cache: Path | None = None,
                 heads: Sequence[Path] = (), force: bool = False) -> list[str]:
    """The ``laya-inspect COMMAND …`` argv that makes the command build ``config`` and use these paths
    (``force``: train's and fit-head's --force, passed to their library call as ``overwrite``)."""
    argv = ["laya-inspect", command]
    if command == "fit-head":
        argv.append(str(cache))
    elif command == "compare":
        argv += [*map(str, heads), "--cache", str(cache)]
    flags, last = FLAGS[command], []
    for f in dataclasses.fields(config):
        value, default = _value(command, f.name, getattr(config, f.name)), _default(command, f)
        if command == "fit-head" and f.name == "seeds":
            default = _value(command, "seeds", default)
        if f.name not in flags:
            if value != default:
                raise ValueError(f"`laya-inspect {command}` has no option for {f.name}={value!r}")
            continue
        if value == default and f.name not in ALWAYS[command]:
            continue
        flag = flags[f.name]
        if isinstance(value, bool):
            on, _, off = flag.partition("/")
            if not value and not off:
                raise ValueError(f"`laya-inspect {command}` cannot turn {on} off")
            argv.append(on if value else off)
        elif value is not None:
            (last if f.name == "out" else argv).extend(
                [flag, ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)])
    if force:
        argv.append("--force")
    if out is not None:
        last += ["--out", str(out)]
    return argv + last
