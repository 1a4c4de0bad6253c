"""Fit heads on a frozen feature cache over seeds: the library behind `laya-inspect fit-head`.

Protocol (docs/METHOD.md, "Training"): each head standardises its inputs with training-split statistics
it stores (``--standardize``), Adam, cross-entropy on logits, 10% of the training split held out for
validation (seeded and stratified, or the *last* 10% like the paper's Keras notebook), early stopping
on validation loss (``--monitor``) with patience and best-weights restore, at most ``epochs``. A run
is deterministic per seed: the head is initialised under ``torch.manual_seed(seed)`` and batches are
shuffled by a generator seeded with the same seed. ``--grid`` first searches LAYA's grid
(docs/METHOD.md, "Heads") on the validation rows and then runs every head with the chosen values.
After the runs, the quality gate (quality.py) adds its warnings to the summary.

The output folder (its layout: docs/FORMATS.md) is built under a temporary name and renamed into
place at the end (``out_dir.atomic_dir``: a killed run leaves the previous folder as it was).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..cache.store import FeatureStore
from ..distributed import World, device_for, join_world, spread
from ..errors import InputError, class_label, name_of
from ..files import artifact_header, write_csv, write_json
from ..head_dir import cache_identity
from ..heads import Head, ScalarMixHead, build_head
from ..options import defaulted
from ..out_dir import atomic_dir
from ..runtime import Progress, no_progress, pick_device, seeded, set_threads
from ..workers import cpu_workers, run_forked
from .fit_config import FitConfig, resolve_heads
from .loop import (
    EVAL_BATCH,
    STREAM_CHUNK_ROWS,
    CacheRows,
    Evaluation,
    available_memory,
    evaluate,
    run_end,
    train_loop,
    trained_validation,
    untrained_classes,
    validation_split,
)
from .outputs import RUN_FIELDS, add_test_rows, save_run, summary_rows
from .stats import macro_f1, summarize_runs, summary_to_jsonable

__all__ = ["FitConfig", "FitResult", "RunResult", "fit_heads", "fit_one", "resolve_heads"]

Scaling = tuple[list[np.ndarray], list[np.ndarray]]  # per layer (D_l,) means and scales


@dataclass
class RunResult:
    """One (head, seed) run. ``test`` holds predictions and weights for the profiles."""

    head: str
    seed: int
    hparams: dict[str, Any]
    val_acc: float
    val_loss: float
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
            **{k: getattr(self, k) for k in RUN_FIELDS},
            "seconds": round(self.seconds, 3),
            "head_dir": str(self.head_dir.resolve()) if self.head_dir else "",  # readable from any folder
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
    scaling: Scaling | None = None,
) -> RunResult:
    """Train one head with early stopping on the validation ``--monitor``, restore its best weights,
    test it. A head built with ``standardize`` takes ``scaling`` (computed from ``train_rows`` when None)."""
    emit = progress or no_progress
    tag = tag or {}
    t0 = time.perf_counter()
    untrained = untrained_classes(train.labels, train_rows, num_classes)
    with seeded(seed):
        head = build_head(kind, train.store.widths, num_classes, **hparams, untrained_classes=untrained)
    if head.standardize is not None:
        if scaling is None:
            from .standardize import standardization

            scaling = standardization(train, train_rows, train.store.layer_names, head.standardize)[:2]
        head.set_standardization(*scaling)
    head.to(train.device)
    history, stopper = train_loop(
        head,
        lambda g: train.batches(train_rows, config.batch_size, g),
        lambda: train.batches(val_rows, EVAL_BATCH),
        config.loop_settings(seed, len(train_rows)),
        name=kind,
        emit=emit,
        tag=tag,
    )
    result = RunResult(
        head=kind,
        seed=seed,
        hparams=dict(hparams),
        val_acc=stopper.best_acc,
        val_loss=stopper.best_loss,
        epochs_run=len(history),
        best_epoch=stopper.best_epoch,
        seconds=0.0,
        history=history,
        module=head,
    )
    if test is not None:
        ev = evaluate(head, test, np.arange(test.n))
        result.test, result.test_acc, result.test_loss = ev, ev.acc, ev.loss
        result.test_macro_f1 = macro_f1(ev.labels, ev.preds)
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

    def _repr_html_(self) -> str:  # a notebook shows the result as the report's tables
        from ..report import fit_summary_html

        return fit_summary_html(self.summary, [r.row() for r in self.runs])

    def __rich__(self) -> Any:  # a terminal (rich.print, IPython with rich) shows the fit-head table
        from ..report.terminal import fit_table, fit_title

        return fit_table(self.summary, fit_title(self.out_dir, self.summary, len(self.config.seeds)))


def _refuse_nonfinite(rows: CacheRows, store: FeatureStore) -> None:
    """Test rows with NaN or infinite features (a cache extracted with --allow-nonfinite) gave NaN α
    and an accuracy that counted them, with the gate "ok": refused, as the other commands do."""
    bad, first = 0, None
    for hs, _ in rows.batches(np.arange(rows.n), STREAM_CHUNK_ROWS):
        finite = [torch.isfinite(h.reshape(len(h), -1)).all(dim=1) for h in hs]
        bad += int((~torch.stack(finite).all(dim=0)).sum())
        first = first or next((store.layer_names[i] for i, f in enumerate(finite) if not bool(f.all())), None)
    if bad:
        raise InputError(
            f"{bad} of the {rows.n} rows of split {rows.split!r} in {store.path} hold NaN or infinite features (layer "
            f"{first!r} first): no accuracy or α can be read on them; {store.nonfinite_advice()}"
        )


def fit_heads(
    store: FeatureStore,
    config: FitConfig,
    *,
    out_dir: str | Path,
    progress: Progress | None = None,
    overwrite: bool = False,
) -> FitResult:
    """Fit every head of ``config`` over its seeds on ``store``'s train split; test on its test split.
    ``out_dir`` must be empty or absent unless ``overwrite``, which replaces it whole at the end.
    Under torchrun the runs are spread over the processes and rank 0 writes ``out_dir``; the others
    return every run with an empty summary and no files."""
    emit = progress or no_progress
    if config.threads is not None:  # the command line applies the default itself
        set_threads(config.threads)
    store, said = _layers_of(store, config.layers)
    out = Path(out_dir)
    world = join_world(config.device)  # under torchrun the (head, seed) runs are spread over the processes
    device = pick_device(device_for(config.device, world))
    for split in (config.train_split, config.test_split):
        store.n(split)  # NotFoundError naming the splits there are
    present = np.unique(store.labels(config.train_split))
    if len(present) < 2:
        names = store.class_names
        shown = ", ".join(class_label(names, int(c)) for c in present)
        raise InputError(
            f"the {config.train_split!r} split of {store.path} holds only class {shown or '(none)'}; "
            "a head needs training rows of at least 2 classes"
        )
    if not world.is_main:  # rank 0 writes the folder; this process only runs its share of the runs
        return _fit_into(store, config, None, final=out, device=device, emit=emit, world=world, said=said)
    with atomic_dir(out, force=overwrite, command="fit-head", inputs=[store.path]) as tmp:
        result = _fit_into(store, config, tmp, final=out, device=device, emit=emit, world=world, said=said)
        from ..report import write_report_html

        result.files["report_html"] = write_report_html(tmp, as_dir=out, locked=True)
    # Everything was written under the temporary name: report the final paths.
    result.files = {k: out / p.relative_to(tmp) for k, p in result.files.items()}
    return result


def _layers_of(store: FeatureStore, requested: str) -> tuple[FeatureStore, list[str]]:
    """``store``, or the view of the layers ``--layers`` names (:meth:`FeatureStore.keep_layers`) in
    the cache's order, and the warning that says so when they were named in another."""
    from ..layers import depth_order, resolve_layers

    every = store.layer_names
    among = f"the {len(every)} layers of {store.path}"
    asked = resolve_layers(requested, every, every, among=among, more=f"{store.path} holds only these layers")
    names, moved = depth_order(asked, every, "the cache's order")
    return (store if names == every else store.keep_layers(names)), [moved] if moved else []


def _refuse_one_trained_class(labels: np.ndarray, train_rows: np.ndarray, config: FitConfig, store: Any) -> None:
    """The split holds two classes or more (fit_heads checked), yet the validation rows took every row
    of all but one: a head would be fitted on one class."""
    kept = np.unique(labels[train_rows])
    if len(kept) >= 2:
        return
    names = store.class_names
    held = [int(c) for c in np.unique(labels) if c not in kept]
    shown = ", ".join(repr(name_of(names, c)) for c in held)
    raise InputError(
        f"the validation rows (--val-fraction {config.val_fraction}, --val-mode {config.val_mode}) took every "
        f"{config.train_split!r} row of class(es) {shown}, leaving training rows of one class only; a head needs "
        "training rows of at least 2 classes: lower --val-fraction, or add rows of those classes"
    )


def _fit_into(
    store: FeatureStore,
    config: FitConfig,
    out: Path | None,
    *,
    final: Path,
    device: Any,
    emit: Progress,
    world: World = World(),
    said: Sequence[str] = (),
) -> FitResult:
    """Fit into the folder ``out``; ``out`` None: a process other than rank 0 under torchrun, which
    runs its share of the runs and returns them, writing nothing. ``said``: what fit-head warns of
    its own options, for summary.json's ``warnings``."""
    from .classes import add_per_class
    from .grid import grid_search, write_grid
    from .overlap import repeated_rows, rows_in_train
    from .profiles import class_names, compute_profiles, write_profiles
    from .quality import (
        chance_level,
        constant_layers,
        duplicate_layers,
        few_class_rows,
        few_validation_rows,
        gate,
        layer_probes,
        majority_macro_f1,
        unlearnable_classes,
    )
    from .standardize import feature_moments, standardization

    in_memory = config.in_memory
    if in_memory is None:
        need = store.nbytes(config.train_split) + store.nbytes(config.test_split)
        in_memory = need < available_memory() / 4
    train = CacheRows(store, config.train_split, device, in_memory)
    test = CacheRows(store, config.test_split, device, in_memory)
    _refuse_nonfinite(test, store)
    train_rows, val_rows = validation_split(train.labels, config.val_fraction, config.val_mode, config.split_seed)
    _refuse_one_trained_class(train.labels, train_rows, config, store)
    num_classes = store.num_classes
    val_rows, val_untrained = trained_validation(train.labels, train_rows, val_rows, num_classes)
    scaling, standardized = None, None
    try:
        moments: tuple[list[np.ndarray], list[np.ndarray]] | None = feature_moments(
            train, train_rows, store.layer_names, store.nonfinite_advice()
        )
    except InputError:  # non-finite rows (--allow-nonfinite): refused below unless --standardize none
        if config.standardize != "none":
            raise
        moments = None
    if config.standardize != "none":
        means, scales, standardized = standardization(train, train_rows, store.layer_names, config.standardize, moments)
        scaling = (means, scales)
    common: dict[str, Any] = dict(
        train=train, train_rows=train_rows, val_rows=val_rows, num_classes=num_classes, scaling=scaling
    )
    files: dict[str, Path] = {}

    hparams, grid = config.head_hparams(), None
    if config.grid:
        grid = grid_search(config, fit_one=fit_one, progress=emit, **common)
        hparams = {**hparams, **grid["chosen"]}
        if out is not None:
            files.update(write_grid(out, grid))

    identity = cache_identity(store)
    split_info = {
        "train_split": config.train_split,
        "test_split": config.test_split,
        "n_train": len(train_rows),
        "n_val": len(val_rows),
        **({"n_val_untrained_left_out": val_untrained} if val_untrained else {}),
        "n_test": test.n,
        "val_mode": config.val_mode,
        "val_fraction": config.val_fraction,
        "split_seed": config.split_seed,
        "in_memory": in_memory,
    }
    epochs, patience = config.budget(len(train_rows))
    training = {
        **{k: getattr(config, k) for k in ("lr", "batch_size", "monitor", "weight_decay", "standardize")},
        "epochs": epochs,
        "patience": patience,
        "budget": "as given" if config.epochs is not None and config.patience is not None else "default rule",
    }
    pairs = [(kind, seed) for kind in config.heads for seed in config.seeds]
    probe_job = bool(config.probe and out is not None)  # with workers, the probes are one more job
    # runs at once in forked processes: only on CPU, with the cache in memory, outside torchrun
    in_fork = not world.distributed and in_memory
    workers = cpu_workers(config.workers, device, len(pairs) + int(probe_job)) if in_fork else 1

    def fit(i: int, pair: tuple[str, int], report: Progress = emit) -> RunResult:
        tag = {"stage": "fit", "run": i + 1, "runs": len(pairs)}
        r = fit_one(*pair, hparams, config=config, test=test, progress=report, tag=tag, **common)
        if world.distributed and r.module is not None:  # sent to rank 0, which may not see this GPU
            r.module.cpu()
        return r

    def probes(held: bool) -> dict[str, Any]:
        splits = {config.train_split: train, config.test_split: test}
        return layer_probes(
            store,
            train_split=config.train_split,
            test_split=config.test_split,
            train_rows=train_rows,
            val_rows=val_rows,
            seed=config.split_seed,
            read=partial(_held_layer, splits) if held else None,
            labels={k: s.labels for k, s in splits.items()} if held else None,
        )

    probe = None
    if workers > 1:  # independent runs: several at once in forked processes on this machine's CPUs
        # The probes go first, as one more job: their scikit-learn import (≈ 1 s) overlaps the fits.
        jobs: list[tuple[str, int] | None] = [None] * probe_job + list(pairs)

        def job(i: int, item: tuple[str, int] | None, report: Progress = emit) -> Any:
            return probes(held=True) if item is None else fit(i - probe_job, item, report)

        runs = run_forked(jobs, job, workers, emit)
        if probe_job:
            probe = runs.pop(0)
    else:  # one after another, or spread over the processes of a torchrun launch
        runs = spread(world, pairs, fit)
    if out is None:
        return FitResult(final, config, str(device), hparams, runs, {}, grid, None, {})
    for r, (kind, seed) in zip(runs, pairs):
        save_run(
            out / kind / f"seed_{seed}",
            r,
            identity=identity,
            split_info=split_info,
            training=training,
            device=str(device),
        )
        r.head_dir = final / kind / f"seed_{seed}"

    if config.probe and probe is None:
        probe = probes(held=False)
    rows = [r.row() for r in runs]
    files["runs_json"] = write_json(out / "runs.json", rows)
    files["runs_csv"] = write_csv(out / "runs.csv", rows)
    heads = summary_to_jsonable(summarize_runs(rows, metrics=("test_acc", "test_macro_f1"), baseline="last"))
    balance = add_per_class(heads, runs, store.class_names, num_classes, test.labels)
    constant = constant_layers(*moments, store.layer_names) if moments is not None else []
    duplicates = duplicate_layers(store, config.train_split, *moments) if moments is not None else []
    # every layer constant: every row equals every other, which the constant-layer warning says
    distinct = len(constant) < len(store.layer_names)
    in_train = rows_in_train(train, test) if distinct else None
    repeated = repeated_rows(test) if distinct else None
    quality = gate(
        heads,
        runs,
        chance=chance_level(test.labels),
        majority_f1=majority_macro_f1(test.labels),
        probe=probe,
        layer_names=store.layer_names,
        constant=constant,
        n_test=test.n,
        duplicates=duplicates,
        unlearnable=unlearnable_classes(train.labels[train_rows], test.labels, store.class_names, train.labels),
        in_train=in_train,
        repeated=repeated,
        epochs=epochs,
        patience=patience,
        monitor=config.monitor,
        n_val=len(val_rows),
        balance=balance,
        small=[
            w
            for w in (
                few_class_rows(train.labels[train_rows], store.class_names),
                few_validation_rows(len(val_rows), probe=probe is not None),
            )
            if w
        ],
    )
    add_test_rows(heads, runs, quality["chance"], test.n)
    summary: dict[str, Any] = {
        **artifact_header(),
        "cache": identity,
        "config": config.to_dict(),
        "config_defaults": defaulted(config),
        "device": str(device),
        "workers": workers,  # runs at once in forked processes; the numbers do not depend on it
        "hparams": hparams,
        "split": split_info,
        "training": training,
        "standardization": standardized,
        "grid": grid and {"chosen": grid["chosen"], "file": "grid.json"},
        "heads": heads,
        "quality": quality,
        "warnings": list(said),
    }
    files["summary_json"] = write_json(out / "summary.json", summary)
    files["summary_csv"] = write_csv(out / "summary.csv", summary_rows(heads))

    profiles = None
    weighted = [r for r in runs if r.test is not None and r.test.weights is not None]
    if weighted:
        profiles = compute_profiles(runs, layer_names=store.layer_names, class_names=class_names(store))
        formats = ("png", "svg") if config.svg else ("png",)
        # figures follow the runs: --workers 1, torchrun or a GPU draw them in this process
        drawers = 1 if world.distributed or str(device) != "cpu" else config.workers
        files.update(
            write_profiles(out / "profiles", profiles, formats=formats, split=config.test_split, workers=drawers)
        )
    return FitResult(
        out_dir=final,
        config=config,
        device=str(device),
        hparams=hparams,
        runs=runs,
        summary=summary,
        grid=grid,
        profiles=profiles,
        files=files,
    )


def _held_layer(splits: dict[str, CacheRows], split: str, layer: int, rows: np.ndarray | None) -> np.ndarray:
    """One layer's rows (all for None) from a split held in memory, as float64."""
    held = splits[split].held
    assert held is not None and isinstance(held.x, list)  # forked runs need the cache in memory
    x = held.x[layer].cpu().numpy()
    return (x if rows is None else x[rows]).astype(np.float64)
