"""Fit heads on a frozen feature cache over seeds: the library behind `laya-inspect fit-head`.

Protocol (PROTOCOL §3): Adam, cross-entropy on logits, 10% of the training split held out for
validation (seeded and stratified, or the *last* 10% like the paper's Keras notebook), early stopping
on validation accuracy with patience and best-weights restore, at most ``epochs``. A run is
deterministic per seed: the head is initialised under ``torch.manual_seed(seed)`` and batches are
shuffled by a generator seeded with the same seed. ``--grid`` first searches LAYA's grid (§1) on
validation accuracy and then runs every head with the chosen values.

Output layout under ``out_dir``::

    <head>/seed_<S>/   config.json, weights.pt (headio.save_head), metrics.json, train_log.csv
    runs.csv|json      one row per (head, seed)
    summary.json|csv   per head: mean ± std, 95% t-interval, n; paired difference vs 'last'
    grid.json|csv      only with grid=True
    profiles/          α profiles (see profiles.py)
"""
from __future__ import annotations

import copy
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import f1_score

from . import __version__
from .devices import DEVICE_CHOICES as DEVICES
from .devices import pick_device
from .errors import InputError
from .fit_outputs import prepare_out, save_run, summary_rows, write_csv, write_grid, write_json
from .headio import cache_identity
from .heads import HEADS, PSI_CHOICES, Head, build_head
from .stats import summarize_runs, summary_to_jsonable

Progress = Callable[[dict[str, Any]], None]
VAL_MODES = ("stratified", "last")
EVAL_BATCH = 4096
STREAM_CHUNK_ROWS = 8192


def training_checks(cfg: Any) -> list[tuple[bool, str]]:
    """(ok, message) for the options `fit-head` and `train` share."""
    return [
        (cfg.tau > 0, f"--tau must be > 0, got {cfg.tau}"),
        (cfg.psi in PSI_CHOICES, f"--psi must be one of {', '.join(PSI_CHOICES)}, got {cfg.psi!r}"),
        (cfg.lr > 0, f"--lr must be > 0, got {cfg.lr}"),
        (cfg.batch_size >= 1, f"--batch-size must be ≥ 1, got {cfg.batch_size}"),
        (cfg.epochs >= 1, f"--epochs must be ≥ 1, got {cfg.epochs}"),
        (cfg.patience >= 1, f"--patience must be ≥ 1, got {cfg.patience}"),
        (0 < cfg.val_fraction < 1, f"--val-fraction must be in (0, 1), got {cfg.val_fraction}"),
        (cfg.val_mode in VAL_MODES, f"--val-mode must be one of {', '.join(VAL_MODES)}, got {cfg.val_mode!r}"),
        (cfg.device in DEVICES, f"--device must be one of {', '.join(DEVICES)}, got {cfg.device!r}"),
    ]


@dataclass(frozen=True)
class FitConfig:
    """Everything a fit depends on; written into every output. Sequences are stored as tuples."""

    heads: tuple[str, ...] = ("laya", "last", "concat", "scalarmix")
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    d_star: int = 96
    tau: float = 1.5
    psi: str = "identity"
    score_width: int | None = None  # None = 2·d*
    lr: float = 3e-4
    batch_size: int = 128
    epochs: int = 50
    patience: int = 5
    val_fraction: float = 0.1
    val_mode: str = "stratified"
    split_seed: int = 0  # the stratified validation draw; the same for every head and seed (paired runs)
    init: str = "glorot"
    device: str = "auto"
    grid: bool = False
    grid_d_star: tuple[int, ...] = (64, 96, 128)
    grid_tau: tuple[float, ...] = (0.5, 1.0, 1.5)
    grid_psi: tuple[str, ...] = ("identity", "mlp")
    grid_width_factors: tuple[int, ...] = (1, 2)  # scorer width = factor · d*
    grid_seeds: int = 3  # the first grid_seeds of `seeds` score each grid configuration
    train_split: str = "train"
    test_split: str = "test"
    weight_decay: float = 0.0
    in_memory: bool | None = None  # None: load the cache when it fits in a quarter of available RAM

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (list, tuple)):
                object.__setattr__(self, f.name, tuple(v))
        self.validate()

    def validate(self) -> None:
        if not self.heads:
            raise InputError(f"no head to fit; choose from {', '.join(HEADS.names())}")
        for h in self.heads:
            HEADS.get(h)  # NotFoundError naming the valid heads
        if len(set(self.heads)) != len(self.heads):
            raise InputError(f"a head is named twice in {list(self.heads)}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise InputError(f"seeds must be distinct and at least one, got {list(self.seeds)}")
        checks = [
            (self.d_star >= 1, f"--d-star must be ≥ 1, got {self.d_star}"),
            (self.score_width is None or self.score_width >= 1, f"--score-width must be ≥ 1, got {self.score_width}"),
            *training_checks(self),
            (self.weight_decay >= 0, f"weight_decay must be ≥ 0, got {self.weight_decay}"),
            (self.init in ("glorot", "torch"), f"init must be 'glorot' or 'torch', got {self.init!r}"),
        ]
        if self.grid:
            checks += [
                ("laya" in self.heads, "--grid searches LAYA's hyper-parameters; include --head laya"),
                (bool(self.grid_d_star) and min(self.grid_d_star) >= 1,
                 f"grid d* values must be ≥ 1: {self.grid_d_star}"),
                (bool(self.grid_tau) and min(self.grid_tau) > 0, f"grid τ values must be > 0: {self.grid_tau}"),
                (bool(self.grid_psi) and set(self.grid_psi) <= set(PSI_CHOICES),
                 f"grid ψ values must be among {', '.join(PSI_CHOICES)}: {self.grid_psi}"),
                (bool(self.grid_width_factors) and min(self.grid_width_factors) >= 1,
                 f"grid width factors must be ≥ 1: {self.grid_width_factors}"),
                (self.grid_seeds >= 1, f"grid seeds must be ≥ 1, got {self.grid_seeds}"),
            ]
        for ok, message in checks:
            if not ok:
                raise InputError(message)

    def head_hparams(self) -> dict[str, Any]:
        return {"d_star": self.d_star, "tau": self.tau, "psi": self.psi, "score_width": self.score_width,
                "init": self.init}

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def resolve_heads(names: Sequence[str]) -> tuple[str, ...]:
    """Expand comma lists and 'all'; keep the order given; unknown names raise NotFoundError."""
    out: list[str] = []
    for item in names:
        for name in (s.strip() for s in str(item).split(",")):
            if not name:
                continue
            for n in (HEADS.names() if name == "all" else [name]):
                HEADS.get(n)
                if n not in out:
                    out.append(n)
    return tuple(out)


def validation_split(labels: np.ndarray, fraction: float, mode: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train_rows, val_rows), both sorted. 'stratified': a seeded draw of ``fraction`` of each class;
    'last': the last rows, as Keras' ``validation_split`` takes them (split at round(n·(1−fraction)))."""
    n = len(labels)
    if mode == "last":
        cut = int(round(n * (1 - fraction)))
        rows = np.arange(n)
        train, val = rows[:cut], rows[cut:]
    elif mode == "stratified":
        rng = np.random.default_rng(seed)
        val_parts = []
        for c in np.unique(labels):
            members = rng.permutation(np.flatnonzero(labels == c))
            val_parts.append(members[: int(round(len(members) * fraction))])
        val = np.sort(np.concatenate(val_parts))
        train = np.setdiff1d(np.arange(n), val)
    else:
        raise InputError(f"val_mode must be one of {', '.join(VAL_MODES)}, got {mode!r}")
    if len(val) == 0 or len(train) == 0:
        raise InputError(f"a validation fraction of {fraction} leaves {len(train)} training and {len(val)} "
                         f"validation rows out of {n}; use more data or another --val-fraction")
    if mode == "last":
        # Data stored class by class (an ImageFolder, a sorted table) puts only the last classes at
        # the end: early stopping would then watch a validation set of one class.
        seen, held = np.unique(labels), np.unique(labels[val])
        if len(held) < len(seen) / 2:
            raise InputError(f"--val-mode last takes the last {len(val)} rows, which hold only {len(held)} of the "
                             f"{len(seen)} classes (the rows are ordered by class); use --val-mode stratified")
    return train.astype(np.int64), val.astype(np.int64)


def available_memory() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 30


class SplitData:
    """One split's features as float32 tensors: held in memory (on the device), or streamed from the
    store chunk by chunk (``iter_chunks``) for caches larger than memory."""

    def __init__(self, store: Any, split: str, device: torch.device, in_memory: bool) -> None:
        self.store, self.split, self.device, self.in_memory = store, split, device, in_memory
        self.labels = np.asarray(store.labels(split), dtype=np.int64)
        self.n = len(self.labels)
        if in_memory:
            self.hs = [torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in store.layers(split)]
            self.y = torch.from_numpy(self.labels).to(device)

    def batches(self, rows: np.ndarray, batch_size: int,
                generator: torch.Generator | None = None) -> Iterator[tuple[list[torch.Tensor], torch.Tensor]]:
        """Batches of ``rows`` (in order, or shuffled by ``generator``; streamed: within each chunk)."""
        if self.in_memory:
            order = rows if generator is None else rows[torch.randperm(len(rows), generator=generator).numpy()]
            for i in range(0, len(order), batch_size):
                idx = torch.from_numpy(order[i:i + batch_size]).to(self.device)
                yield [h[idx] for h in self.hs], self.y[idx]
            return
        member = np.zeros(self.n, dtype=bool)
        member[rows] = True
        for sl, feats, labels in self.store.iter_chunks(self.split, STREAM_CHUNK_ROWS):
            local = np.flatnonzero(member[sl])
            if generator is not None:
                local = local[torch.randperm(len(local), generator=generator).numpy()]
            for i in range(0, len(local), batch_size):
                take = local[i:i + batch_size]
                yield ([torch.from_numpy(np.ascontiguousarray(f[take])).to(self.device) for f in feats],
                       torch.from_numpy(labels[take].astype(np.int64)).to(self.device))


@dataclass
class Evaluation:
    loss: float
    acc: float
    preds: np.ndarray  # (N,)
    labels: np.ndarray  # (N,)
    weights: np.ndarray | None  # (N, L) for heads with aggregation weights


@torch.no_grad()
def predict(model: Callable[[Any], Any], batches: Iterator[tuple[Any, torch.Tensor]],
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, float]:
    """(predictions, labels, weights or None, mean cross-entropy) of ``model`` over ``batches``."""
    preds, labels, weights, loss_sum = [], [], [], 0.0
    for x, y in batches:
        out = model(x)
        loss_sum += float(F.cross_entropy(out.logits, y, reduction="sum"))
        preds.append(out.logits.argmax(1).cpu())
        labels.append(y.cpu())
        if out.weights is not None:
            weights.append(out.weights.float().cpu())
    p, t = torch.cat(preds).numpy(), torch.cat(labels).numpy()
    return p, t, (torch.cat(weights).numpy() if weights else None), loss_sum / max(1, len(t))


def evaluate(head: Head, data: SplitData, rows: np.ndarray, batch_size: int = EVAL_BATCH) -> Evaluation:
    head.eval()
    p, y_all, w, loss = predict(head, data.batches(rows, batch_size))
    return Evaluation(loss=loss, acc=float((p == y_all).mean()), preds=p, labels=y_all, weights=w)


class EarlyStopping:
    """Keras' EarlyStopping(monitor=val_accuracy, mode=max, min_delta=0, restore_best_weights=True):
    an epoch improves only when strictly better; stop after ``patience`` epochs without one."""

    def __init__(self, patience: int) -> None:
        self.patience, self.best, self.best_epoch, self.wait = patience, -math.inf, 0, 0
        self.state: dict[str, torch.Tensor] | None = None

    def step(self, epoch: int, score: float, module: torch.nn.Module) -> bool:
        """Record this epoch's score (keeping a copy of the weights when it is the best); True = stop."""
        if score > self.best:
            self.best, self.best_epoch, self.wait = score, epoch, 0
            self.state = copy.deepcopy(module.state_dict())
        else:
            self.wait += 1
        return self.wait >= self.patience

    def restore(self, module: torch.nn.Module) -> None:
        if self.state is not None:
            module.load_state_dict(self.state)


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
        return {"head": self.head, "seed": self.seed, "val_acc": self.val_acc, "test_acc": self.test_acc,
                "test_macro_f1": self.test_macro_f1, "test_loss": self.test_loss, "epochs_run": self.epochs_run,
                "best_epoch": self.best_epoch, "seconds": round(self.seconds, 3),
                "head_dir": str(self.head_dir) if self.head_dir else ""}


def fit_one(kind: str, seed: int, hparams: dict[str, Any], *, train: SplitData, train_rows: np.ndarray,
            val_rows: np.ndarray, num_classes: int, config: FitConfig, test: SplitData | None = None,
            progress: Progress | None = None, tag: dict[str, Any] | None = None) -> RunResult:
    """Train one head with early stopping on validation accuracy, restore its best weights, test it."""
    emit = progress or (lambda e: None)
    tag = tag or {}
    t0 = time.perf_counter()
    device = train.device
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        head = build_head(kind, train.store.widths, num_classes, **hparams)
    head.to(device)
    opt = torch.optim.Adam(head.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    gen = torch.Generator().manual_seed(seed)
    stopper, history = EarlyStopping(config.patience), []
    emit({"event": "run_start", "head": kind, "seed": seed, "epochs": config.epochs, **tag})
    for epoch in range(1, config.epochs + 1):
        t_epoch = time.perf_counter()
        head.train()
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), device=device, dtype=torch.long)
        count = 0
        for hs, y in train.batches(train_rows, config.batch_size, gen):
            out = head(hs)
            loss = F.cross_entropy(out.logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach() * len(y)
            correct += (out.logits.detach().argmax(1) == y).sum()
            count += len(y)
        val = evaluate(head, train, val_rows)
        record = {"epoch": epoch, "train_loss": float(loss_sum) / count, "train_acc": float(correct) / count,
                  "val_loss": val.loss, "val_acc": val.acc, "seconds": time.perf_counter() - t_epoch}
        history.append(record)
        stop = stopper.step(epoch, val.acc, head)
        emit({"event": "epoch", "head": kind, "seed": seed, "epoch": epoch, "epochs": config.epochs,
              "loss": record["train_loss"], "val_acc": val.acc, "best_val_acc": stopper.best, **tag})
        if stop:
            break
    stopper.restore(head)
    head.eval()
    best_acc, best_epoch = stopper.best, stopper.best_epoch
    result = RunResult(head=kind, seed=seed, hparams=dict(hparams), val_acc=best_acc, epochs_run=len(history),
                       best_epoch=best_epoch, seconds=0.0, history=history, module=head)
    if test is not None:
        ev = evaluate(head, test, np.arange(test.n))
        result.test, result.test_acc, result.test_loss = ev, ev.acc, ev.loss
        result.test_macro_f1 = float(f1_score(ev.labels, ev.preds, average="macro", zero_division=0))
    if hasattr(head, "static_weights"):
        result.static_weights = head.static_weights().detach().cpu().numpy()
    result.seconds = time.perf_counter() - t0
    emit({"event": "run_end", "head": kind, "seed": seed, "val_acc": best_acc, "test_acc": result.test_acc,
          "best_epoch": best_epoch, "epochs_run": len(history), "seconds": result.seconds, **tag})
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


def fit_heads(store: Any, config: FitConfig, *, out_dir: str | Path, progress: Progress | None = None,
              overwrite: bool = False) -> FitResult:
    """Fit every head of ``config`` over its seeds on ``store``'s train split; test on its test split."""
    from .profiles import compute_profiles, write_profiles

    emit = progress or (lambda e: None)
    out = Path(out_dir)
    device = pick_device(config.device)
    for split in (config.train_split, config.test_split):
        store.n(split)  # NotFoundError naming the splits there are
    prepare_out(out, config.heads, overwrite)
    in_memory = config.in_memory
    if in_memory is None:
        need = store.nbytes(config.train_split) + store.nbytes(config.test_split)
        in_memory = need < available_memory() / 4
    train = SplitData(store, config.train_split, device, in_memory)
    test = SplitData(store, config.test_split, device, in_memory)
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
    split_info = {"train_split": config.train_split, "test_split": config.test_split, "n_train": len(train_rows),
                  "n_val": len(val_rows), "n_test": test.n, "val_mode": config.val_mode,
                  "val_fraction": config.val_fraction, "split_seed": config.split_seed, "in_memory": in_memory}
    training = {k: getattr(config, k) for k in ("lr", "batch_size", "epochs", "patience", "weight_decay")}
    runs: list[RunResult] = []
    total = len(config.heads) * len(config.seeds)
    for kind in config.heads:
        for seed in config.seeds:
            tag = {"stage": "fit", "run": len(runs) + 1, "runs": total}
            r = fit_one(kind, seed, hparams, config=config, test=test, progress=emit, tag=tag, **common)
            r.head_dir = save_run(out / kind / f"seed_{seed}", r, identity=identity, split_info=split_info,
                                   training=training, device=str(device))
            runs.append(r)

    rows = [r.row() for r in runs]
    files["runs_json"] = write_json(out / "runs.json", rows)
    files["runs_csv"] = write_csv(out / "runs.csv", rows)
    summary = {
        "tool_version": __version__, "cache": identity, "config": config.to_dict(), "device": str(device),
        "hparams": hparams, "split": split_info, "grid": grid and {"chosen": grid["chosen"], "file": "grid.json"},
        "heads": summary_to_jsonable(summarize_runs(rows, metrics=("test_acc", "test_macro_f1"), baseline="last")),
    }
    files["summary_json"] = write_json(out / "summary.json", summary)
    files["summary_csv"] = write_csv(out / "summary.csv", summary_rows(summary["heads"]))

    profiles = None
    weighted = [r for r in runs if r.test is not None and r.test.weights is not None]
    if weighted:
        profiles = compute_profiles(runs, layer_names=store.layer_names, class_names=_class_names(store, num_classes))
        files.update(write_profiles(out / "profiles", profiles))
    return FitResult(out_dir=out, config=config, device=str(device), hparams=hparams, runs=runs, summary=summary,
                     grid=grid, profiles=profiles, files=files)


def grid_search(config: FitConfig, *, progress: Progress | None = None, **common: Any) -> dict[str, Any]:
    """LAYA's grid (PROTOCOL §1): every (d*, τ, ψ, width) over the first ``grid_seeds`` seeds; the
    configuration with the best mean validation accuracy wins (ties: the first in grid order)."""
    emit = progress or (lambda e: None)
    seeds = config.seeds[: config.grid_seeds]
    combos = list(product(config.grid_d_star, config.grid_tau, config.grid_psi, config.grid_width_factors))
    entries, total, done = [], len(combos) * len(seeds), 0
    for d_star, tau, psi, factor in combos:
        hp = {"d_star": int(d_star), "tau": float(tau), "psi": psi, "score_width": int(factor * d_star),
              "init": config.init}
        vals = []
        for seed in seeds:
            done += 1
            tag = {"stage": "grid", "run": done, "runs": total}
            r = fit_one("laya", seed, hp, config=config, progress=emit, tag=tag, **common)
            vals.append(r.val_acc)
        entries.append({**hp, "width_factor": int(factor), "seeds": list(seeds), "val_acc": vals,
                        "val_acc_mean": float(np.mean(vals)),
                        "val_acc_std": float(np.std(vals, ddof=1)) if len(vals) > 1 else None})
    best = max(range(len(entries)), key=lambda i: (entries[i]["val_acc_mean"], -i))
    chosen = {k: entries[best][k] for k in ("d_star", "tau", "psi", "score_width")}
    for i, e in enumerate(entries):
        e["chosen"] = i == best
    return {"selection": "best mean validation accuracy over seeds (ties: first in grid order)",
            "applied_to": "laya; d_star also to concat and scalarmix", "chosen": chosen, "configs": entries}


def _class_names(store: Any, num_classes: int) -> list[str]:
    names = store.class_names
    return names if len(names) == num_classes else [str(i) for i in range(num_classes)]
