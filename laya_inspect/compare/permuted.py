"""The permuted-label head of compare's sanity checks (docs/METHOD.md, "Sanity checks"): a fresh head of
the trained one's kind and constructor arguments, fitted by the library's training loop on its training
split with the labels shuffled, so its attributions show what a head that learnt nothing from the labels
gives. :mod:`.sanity` reads it against the trained head.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from ..heads import HEADS, Head
from ..runtime import seeded
from . import metrics as M
from .draws import seeded_rows

EPOCHS = 10  # the permuted-label head's epoch budget (early stopping on validation loss, PATIENCE)
PATIENCE = 3
TRAIN_ROWS = 10_000  # at most this many training rows (a seeded subset) for the permuted-label fit


def fresh(head: Head, init_seed: int) -> Head:
    """A new head of ``head``'s kind and constructor arguments, initialised under ``init_seed``."""
    with seeded(init_seed):
        new = HEADS.get(head.kind)(**head.config())
    return new.to(next(head.parameters()).device)


def training_rows(store: Any, split: str, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The permuted-label fit's rows of ``split``: every row, or at most TRAIN_ROWS seeded ones, with
    finite features; (per-layer features, labels). Read once, before any fork."""
    rows = seeded_rows(store.n(split), TRAIN_ROWS, seed)
    feats = store.layers(split, rows)
    ok = M.finite_rows(*feats)
    return [f[ok] for f in feats], np.asarray(store.labels(split, rows), dtype=np.int64)[ok]


def permuted_head(
    head: Head,
    rows: tuple[list[np.ndarray], np.ndarray],
    settings: Mapping[str, Any],
    *,
    permutation_seed: int,
    fit_seed: int,
) -> tuple[Head, dict[str, Any]]:
    """A head like ``head`` fitted on ``rows`` (:func:`training_rows`) with permuted labels; (head, what was done)."""
    from ..training.loop import EVAL_BATCH, LoopSettings, TensorRows, train_loop, validation_split

    feats, labels = rows
    permuted = np.random.default_rng(permutation_seed).permutation(labels)
    device = next(head.parameters()).device
    x = [torch.from_numpy(np.ascontiguousarray(f)).to(device) for f in feats]
    data = TensorRows(x, torch.from_numpy(permuted).to(device))
    fraction = float(settings["val_fraction"])  # training_settings: the head's, else fit-head's
    train_rows, val_rows = validation_split(permuted, fraction, "stratified", permutation_seed)
    new = fresh(head, fit_seed)
    buffers = {k: v for k, v in head.state_dict().items() if k.startswith("standardizers.")}
    new.load_state_dict({**new.state_dict(), **buffers})
    loop = LoopSettings(
        lr=float(settings["lr"]),
        epochs=EPOCHS,
        patience=PATIENCE,
        seed=fit_seed,
        weight_decay=float(settings["weight_decay"]),
    )
    bs = int(settings["batch_size"])
    history, stopper = train_loop(
        new,
        lambda g: data.batches(train_rows, bs, g),
        lambda: data.batches(val_rows, EVAL_BATCH),
        loop,
        name=head.kind,
        emit=lambda _e: None,
        tag={"stage": "sanity"},
    )
    info = {
        "split": settings["train_split"],
        "n_train": int(len(train_rows)),
        "n_val": int(len(val_rows)),
        "val_fraction": fraction,
        "epochs": EPOCHS,
        "patience": PATIENCE,
        "epochs_run": len(history),
        "best_epoch": stopper.best_epoch,
        "val_acc": stopper.best_acc,
        "settings": dict(settings),
    }
    return new.eval(), info
