"""A head of a given kind fitted on a subset of the cached layers: what prune refits on the top-k
layers of a ranking and early-exit fits per depth. It runs fit-head's training loop
(:func:`laya_inspect.training.loop.train_loop`: Adam with the given head's weight decay,
cross-entropy, early stopping on the held-out rows with the best weights restored) and its
standardisation, on a shorter budget by default (docs/METHOD.md, "Beyond attribution").
Deterministic per seed."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from ..heads import Head, build_head
from ..runtime import no_progress, seeded
from .common import Split, accuracy, head_outputs
from .config import Budget

Moments = tuple[list[np.ndarray], list[np.ndarray]]  # per layer, the (D_l,) means and standard deviations


def layer_moments(
    hparams: dict[str, Any], train: Split, train_rows: np.ndarray, names: Sequence[str]
) -> Moments | None:
    """Every layer's standardisation moments over ``train_rows``, for heads built with ``hparams``
    that standardise, else None. A layer's moments do not depend on the other layers beside it, so the
    refits of every layer set and seed share them, bit for bit; computed per refit they were 2–9% of
    a 19-layer refit on 9,000 rows (docs/PERFORMANCE.md, section 17)."""
    from ..training.loop import TensorRows
    from ..training.standardize import feature_moments

    if hparams.get("standardize") in (None, "none"):
        return None
    return feature_moments(TensorRows(train.hs, train.y), train_rows, names)


@dataclass
class Fit:
    layers: tuple[int, ...]
    seed: int
    head: Head | None = field(repr=False)  # None once dropped: see without_head
    val_acc: float
    test_acc: float
    epochs_run: int
    seconds: float
    test_probs: np.ndarray | None = field(default=None, repr=False)  # (N, C) when asked for

    def without_head(self) -> Fit:
        """This fit less its head, for a caller that reads only its numbers: a refit run in a forked
        worker is pickled back to the parent whole, and a head's weights are most of those bytes."""
        return replace(self, head=None)

    def record(self) -> dict[str, Any]:
        return {
            "layers": list(self.layers),
            "seed": self.seed,
            "val_acc": self.val_acc,
            "test_acc": self.test_acc,
            "epochs_run": self.epochs_run,
            "seconds": round(self.seconds, 3),
        }


def refit(
    kind: str,
    hparams: dict[str, Any],
    layers: Sequence[int],
    seed: int,
    *,
    train: Split,
    train_rows: np.ndarray,
    val_rows: np.ndarray,
    test: Split,
    num_classes: int,
    budget: Budget,
    layer_names: Sequence[str],
    keep_probs: bool = False,
    moments: Moments | None = None,
) -> Fit:
    """Fit a ``kind`` head on ``layers`` of ``train`` (rows ``train_rows``; early stopping on
    ``val_rows``) under ``torch.manual_seed(seed)``; test it on ``test``. ``moments``: every cache
    layer's :func:`layer_moments` over the same rows, shared by a command's refits."""
    from ..training.loop import EVAL_BATCH, LoopSettings, TensorRows, train_loop, untrained_classes
    from ..training.standardize import standardization

    t0 = time.perf_counter()
    layers = tuple(int(i) for i in layers)
    hs = [train.hs[i] for i in layers]
    untrained = untrained_classes(train.labels, train_rows, num_classes)
    with seeded(seed):
        head = build_head(
            kind, [int(h.shape[1]) for h in hs], num_classes, **{**hparams, "untrained_classes": untrained}
        )
    rows = TensorRows(hs, train.y)
    if head.standardize is not None:
        own = None if moments is None else ([moments[0][i] for i in layers], [moments[1][i] for i in layers])
        means, scales, _ = standardization(rows, train_rows, [layer_names[i] for i in layers], head.standardize, own)
        head.set_standardization(means, scales)
    head.to(hs[0].device)
    epochs, patience = budget.resolve(len(train_rows))
    # the validation rows are the same every epoch: gathered once, not once per epoch
    val_batches = list(rows.batches(val_rows, EVAL_BATCH))
    history, stopper = train_loop(
        head,
        lambda g: rows.batches(train_rows, budget.batch_size, g),
        lambda: val_batches,
        LoopSettings(
            lr=budget.lr, epochs=epochs, patience=patience, seed=seed, weight_decay=budget.weight_decay or 0.0
        ),
        name=kind,
        emit=no_progress,
        tag={},
    )
    logits, _ = head_outputs(head, [test.hs[i] for i in layers])
    return Fit(
        layers=layers,
        seed=seed,
        head=head.cpu().eval(),
        val_acc=float(stopper.best_acc),
        test_acc=accuracy(logits, test.labels),
        epochs_run=len(history),
        seconds=time.perf_counter() - t0,
        test_probs=torch.softmax(torch.from_numpy(logits), dim=1).numpy() if keep_probs else None,
    )
