"""Fit heads on a frozen feature cache over seeds: the library behind `laya-inspect fit-head`.

Protocol (docs/METHOD.md, "Training"): Adam, cross-entropy on logits, 10% of the training split held out for
validation (seeded and stratified, or the *last* 10% like the paper's Keras notebook), early stopping
on validation accuracy with patience and best-weights restore, at most ``epochs``. A run is
deterministic per seed: the head is initialised under ``torch.manual_seed(seed)`` and batches are
shuffled by a generator seeded with the same seed. ``--grid`` first searches LAYA's grid (docs/METHOD.md, "Heads") on
validation accuracy and then runs every head with the chosen values.

Output layout under ``out_dir``::

    <head>/seed_<S>/   config.json, weights.pt (headio.save_head), metrics.json, train_log.csv
    runs.csv|json      one row per (head, seed)
    summary.json|csv   per head: mean ± std, 95% t-interval, n; paired difference vs 'last'
    grid.json|csv      only with grid=True
    profiles/          α profiles (see profiles.py)
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import f1_score

from .. import __version__
from ..errors import InputError
from ..files import write_csv, write_json
from ..head_dir import cache_identity
from ..heads import HEADS, PSI_CHOICES, Head, ScalarMixHead, build_head
from ..options import check, option, tuples
from ..runtime import Progress, no_progress, pick_device, seeded
from ..store import FeatureStore
from .loop import (
    EVAL_BATCH,
    CacheRows,
    Evaluation,
    LoopSettings,
    available_memory,
    evaluate,
    run_end,
    train_loop,
    validation_split,
)
from .options import shared, training_rules
from .outputs import prepare_out, save_run, summary_rows, write_grid
from .stats import summarize_runs, summary_to_jsonable


def _heads_argv(heads: tuple[str, ...]) -> str:
    return "all" if tuple(heads) == tuple(HEADS.names()) else ",".join(heads)


def _seeds_argv(seeds: tuple[int, ...]) -> str:
    if tuple(seeds) != tuple(range(len(seeds))):
        raise ValueError(f"fit-head takes seeds 0 … N−1 (--seeds N), not {list(seeds)}")
    return str(len(seeds))


@dataclass(frozen=True)
class FitConfig:
    """Everything a fit depends on; written into every output. Sequences are stored as tuples."""

    heads: tuple[str, ...] = option(
        ("laya", "last", "concat", "scalarmix"),
        flag="--head",
        help="laya | last | concat | scalarmix | all; repeat or comma-separate",
        always=True,
        argv=_heads_argv,
    )
    seeds: tuple[int, ...] = option(
        (0, 1, 2, 3, 4), flag="--seeds", help="run seeds 0 … N−1 (default 5)", always=True, argv=_seeds_argv
    )
    d_star: int = shared("d_star", always=True)
    tau: float = shared("tau", always=True)
    psi: str = shared("psi")
    score_width: int | None = shared("score_width")
    lr: float = shared("lr")
    batch_size: int = shared("batch_size")
    epochs: int = shared("epochs")
    patience: int = shared("patience")
    val_fraction: float = shared("val_fraction")
    val_mode: str = shared("val_mode")
    split_seed: int = option(
        0,
        flag="--split-seed",
        help="seed of the stratified validation draw (the same for every head and seed: paired runs)",
    )
    init: str = "glorot"
    device: str = shared("device")
    grid: bool = option(False, flag="--grid", help="first pick LAYA's d*, τ, ψ, width by mean validation accuracy")
    grid_d_star: tuple[int, ...] = option((64, 96, 128), flag="--grid-d-star", help="grid d* values")
    grid_tau: tuple[float, ...] = option((0.5, 1.0, 1.5), flag="--grid-tau", help="grid τ values")
    grid_psi: tuple[str, ...] = option(("identity", "mlp"), flag="--grid-psi", help="grid ψ values")
    grid_width_factors: tuple[int, ...] = option(
        (1, 2), flag="--grid-width", help="grid scorer widths as multiples of d*"
    )
    grid_seeds: int = option(3, flag="--grid-seeds", help="seeds per grid configuration (the first of the run's seeds)")
    train_split: str = option("train", flag="--train-split", help="split the heads are trained on")
    test_split: str = option("test", flag="--test-split", help="split the heads are tested on")
    weight_decay: float = 0.0
    in_memory: bool | None = None  # None: load the cache when it fits in a quarter of available RAM

    def __post_init__(self) -> None:
        tuples(self)
        if not self.heads:
            raise InputError(f"no head to fit; choose from {', '.join(HEADS.names())}")
        for h in self.heads:
            HEADS.get(h)  # NotFoundError naming the valid heads
        rules = [
            (len(set(self.heads)) == len(self.heads), "heads", "names a head twice"),
            (bool(self.seeds) and len(set(self.seeds)) == len(self.seeds), "seeds", "must be distinct, at least one"),
            *training_rules(self),
            (self.weight_decay >= 0, "weight_decay", "must be ≥ 0"),
        ]
        if self.grid:
            rules += [
                ("laya" in self.heads, "heads", "must include laya: --grid searches LAYA's hyper-parameters"),
                (bool(self.grid_d_star) and min(self.grid_d_star) >= 1, "grid_d_star", "values must be ≥ 1"),
                (bool(self.grid_tau) and min(self.grid_tau) > 0, "grid_tau", "values must be > 0"),
                (
                    bool(self.grid_psi) and set(self.grid_psi) <= set(PSI_CHOICES),
                    "grid_psi",
                    f"values must be among {', '.join(PSI_CHOICES)}",
                ),
                (
                    bool(self.grid_width_factors) and min(self.grid_width_factors) >= 1,
                    "grid_width_factors",
                    "values must be ≥ 1",
                ),
                (self.grid_seeds >= 1, "grid_seeds", "must be ≥ 1"),
            ]
        check(self, rules)

    def head_hparams(self) -> dict[str, Any]:
        return {
            "d_star": self.d_star,
            "tau": self.tau,
            "psi": self.psi,
            "score_width": self.score_width,
            "init": self.init,
        }

    def loop_settings(self, seed: int) -> LoopSettings:
        return LoopSettings(
            lr=self.lr, epochs=self.epochs, patience=self.patience, seed=seed, weight_decay=self.weight_decay
        )

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def resolve_heads(names: Sequence[str]) -> tuple[str, ...]:
    """Expand comma lists and 'all'; keep the order given; unknown names raise NotFoundError."""
    out: list[str] = []
    for item in names:
        for name in (s.strip() for s in str(item).split(",")):
            if not name:
                continue
            for n in HEADS.names() if name == "all" else [name]:
                HEADS.get(n)
                if n not in out:
                    out.append(n)
    return tuple(out)


@dataclass
class RunResult:
    """One (head, seed) run. ``test`` holds predictions and weights for the profiles."""

    head: str
    seed: int
    hparams: dict[str, Any]
    val_acc: float
    epochs_run: int
    best_epoch: int
    seconds: float
    history: list[dict[str, float]]
    test_acc: float = math.nan
    test_macro_f1: float = math.nan
    test_loss: float = math.nan
    head_dir: Path | None = None
    test: Evaluation | None = field(default=None, repr=False)
    static_weights: np.ndarray | None = field(default=None, repr=False)  # (L,) ScalarMix
    module: Head | None = field(default=None, repr=False)

    def row(self) -> dict[str, Any]:
        return {
            "head": self.head,
            "seed": self.seed,
            "val_acc": self.val_acc,
            "test_acc": self.test_acc,
            "test_macro_f1": self.test_macro_f1,
            "test_loss": self.test_loss,
            "epochs_run": self.epochs_run,
            "best_epoch": self.best_epoch,
            "seconds": round(self.seconds, 3),
            "head_dir": str(self.head_dir) if self.head_dir else "",
        }


def fit_one(
    kind: str,
    seed: int,
    hparams: dict[str, Any],
    *,
    train: CacheRows,
    train_rows: np.ndarray,
    val_rows: np.ndarray,
    num_classes: int,
    config: FitConfig,
    test: CacheRows | None = None,
    progress: Progress | None = None,
    tag: dict[str, Any] | None = None,
) -> RunResult:
    """Train one head with early stopping on validation accuracy, restore its best weights, test it."""
    emit = progress or no_progress
    tag = tag or {}
    t0 = time.perf_counter()
    with seeded(seed):
        head = build_head(kind, train.store.widths, num_classes, **hparams)
    head.to(train.device)
    history, stopper = train_loop(
        head,
        lambda g: train.batches(train_rows, config.batch_size, g),
        lambda: train.batches(val_rows, EVAL_BATCH),
        config.loop_settings(seed),
        name=kind,
        emit=emit,
        tag=tag,
    )
    best_acc, best_epoch = stopper.best, stopper.best_epoch
    result = RunResult(
        head=kind,
        seed=seed,
        hparams=dict(hparams),
        val_acc=best_acc,
        epochs_run=len(history),
        best_epoch=best_epoch,
        seconds=0.0,
        history=history,
        module=head,
    )
    if test is not None:
        ev = evaluate(head, test, np.arange(test.n))
        result.test, result.test_acc, result.test_loss = ev, ev.acc, ev.loss
        result.test_macro_f1 = float(f1_score(ev.labels, ev.preds, average="macro", zero_division=0))
    if isinstance(head, ScalarMixHead):
        result.static_weights = head.static_weights().detach().cpu().numpy()
    result.seconds = time.perf_counter() - t0
    emit(run_end(kind, seed, stopper, history, tag, test_acc=result.test_acc, seconds=result.seconds))
    return result


@dataclass
class FitResult:
    out_dir: Path
    config: FitConfig
    device: str
    hparams: dict[str, Any]  # the head hyper-parameters used (the grid's choice with grid=True)
    runs: list[RunResult]
    summary: dict[str, Any]  # what summary.json holds
    grid: dict[str, Any] | None
    profiles: dict[str, Any] | None
    files: dict[str, Path]


def fit_heads(
    store: FeatureStore,
    config: FitConfig,
    *,
    out_dir: str | Path,
    progress: Progress | None = None,
    overwrite: bool = False,
) -> FitResult:
    """Fit every head of ``config`` over its seeds on ``store``'s train split; test on its test split."""
    from .profiles import compute_profiles, write_profiles

    emit = progress or no_progress
    out = Path(out_dir)
    device = pick_device(config.device)
    for split in (config.train_split, config.test_split):
        store.n(split)  # NotFoundError naming the splits there are
    prepare_out(out, config.heads, overwrite)
    in_memory = config.in_memory
    if in_memory is None:
        need = store.nbytes(config.train_split) + store.nbytes(config.test_split)
        in_memory = need < available_memory() / 4
    train = CacheRows(store, config.train_split, device, in_memory)
    test = CacheRows(store, config.test_split, device, in_memory)
    train_rows, val_rows = validation_split(train.labels, config.val_fraction, config.val_mode, config.split_seed)
    num_classes = store.num_classes
    common = dict(train=train, train_rows=train_rows, val_rows=val_rows, num_classes=num_classes)
    files: dict[str, Path] = {}

    hparams, grid = config.head_hparams(), None
    if config.grid:
        grid = grid_search(config, progress=emit, **common)
        hparams = {**hparams, **grid["chosen"]}
        files.update(write_grid(out, grid))

    identity = cache_identity(store)
    split_info = {
        "train_split": config.train_split,
        "test_split": config.test_split,
        "n_train": len(train_rows),
        "n_val": len(val_rows),
        "n_test": test.n,
        "val_mode": config.val_mode,
        "val_fraction": config.val_fraction,
        "split_seed": config.split_seed,
        "in_memory": in_memory,
    }
    training = {k: getattr(config, k) for k in ("lr", "batch_size", "epochs", "patience", "weight_decay")}
    runs: list[RunResult] = []
    total = len(config.heads) * len(config.seeds)
    for kind in config.heads:
        for seed in config.seeds:
            tag = {"stage": "fit", "run": len(runs) + 1, "runs": total}
            r = fit_one(
                kind,
                seed,
                hparams,
                train=train,
                train_rows=train_rows,
                val_rows=val_rows,
                num_classes=num_classes,
                config=config,
                test=test,
                progress=emit,
                tag=tag,
            )
            r.head_dir = save_run(
                out / kind / f"seed_{seed}",
                r,
                identity=identity,
                split_info=split_info,
                training=training,
                device=str(device),
            )
            runs.append(r)

    rows = [r.row() for r in runs]
    files["runs_json"] = write_json(out / "runs.json", rows)
    files["runs_csv"] = write_csv(out / "runs.csv", rows)
    summary: dict[str, Any] = {
        "tool_version": __version__,
        "cache": identity,
        "config": config.to_dict(),
        "device": str(device),
        "hparams": hparams,
        "split": split_info,
        "grid": grid and {"chosen": grid["chosen"], "file": "grid.json"},
        "heads": summary_to_jsonable(summarize_runs(rows, metrics=("test_acc", "test_macro_f1"), baseline="last")),
    }
    files["summary_json"] = write_json(out / "summary.json", summary)
    files["summary_csv"] = write_csv(out / "summary.csv", summary_rows(summary["heads"]))

    profiles = None
    weighted = [r for r in runs if r.test is not None and r.test.weights is not None]
    if weighted:
        profiles = compute_profiles(runs, layer_names=store.layer_names, class_names=_class_names(store, num_classes))
        files.update(write_profiles(out / "profiles", profiles))
    return FitResult(
        out_dir=out,
        config=config,
        device=str(device),
        hparams=hparams,
        runs=runs,
        summary=summary,
        grid=grid,
        profiles=profiles,
        files=files,
    )


def grid_search(config: FitConfig, *, progress: Progress | None = None, **common: Any) -> dict[str, Any]:
    """LAYA's grid (docs/METHOD.md, "Heads"): every (d*, τ, ψ, width) over the first ``grid_seeds`` seeds; the
    configuration with the best mean validation accuracy wins (ties: the first in grid order)."""
    emit = progress or no_progress
    seeds = config.seeds[: config.grid_seeds]
    combos = list(product(config.grid_d_star, config.grid_tau, config.grid_psi, config.grid_width_factors))
    entries, total, done = [], len(combos) * len(seeds), 0
    for d_star, tau, psi, factor in combos:
        hp = {
            "d_star": int(d_star),
            "tau": float(tau),
            "psi": psi,
            "score_width": int(factor * d_star),
            "init": config.init,
        }
        vals = []
        for seed in seeds:
            done += 1
            tag = {"stage": "grid", "run": done, "runs": total}
            r = fit_one("laya", seed, hp, config=config, progress=emit, tag=tag, **common)
            vals.append(r.val_acc)
        entries.append(
            {
                **hp,
                "width_factor": int(factor),
                "seeds": list(seeds),
                "val_acc": vals,
                "val_acc_mean": float(np.mean(vals)),
                "val_acc_std": float(np.std(vals, ddof=1)) if len(vals) > 1 else None,
            }
        )
    best = max(range(len(entries)), key=lambda i: (entries[i]["val_acc_mean"], -i))
    chosen = {k: entries[best][k] for k in ("d_star", "tau", "psi", "score_width")}
    for i, e in enumerate(entries):
        e["chosen"] = i == best
    return {
        "selection": "best mean validation accuracy over seeds (ties: first in grid order)",
        "applied_to": "laya; d_star also to concat and scalarmix",
        "chosen": chosen,
        "configs": entries,
    }


def _class_names(store: FeatureStore, num_classes: int) -> list[str]:
    names = store.class_names
    return names if len(names) == num_classes else [str(i) for i in range(num_classes)]
