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
from .common import Split, accuracy, cut_said, estimate, head_outputs, level, paired
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
    test_right: np.ndarray | None = field(default=None, repr=False)  # (N,) the test rows answered right

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


def fitted(total: int, fit: Fit, names: Sequence[str]) -> dict[str, Any]:
    """The progress event of one of ``total`` refits ended, sent by the run itself: a run in a forked
    worker reports only once it ends, so the command counts these as they come, in any order."""
    layers = [names[j] for j in fit.layers]
    return {"event": "fitted", "total": total, "layers": layers, "seed": fit.seed, "seconds": fit.seconds}


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
        test_right=logits.argmax(1) == test.labels,
        epochs_run=len(history),
        seconds=time.perf_counter() - t0,
        test_probs=torch.softmax(torch.from_numpy(logits), dim=1).numpy() if keep_probs else None,
    )


def check_warnings(check: dict[str, Any] | None) -> list[str]:
    """The summary's ``warnings`` from a :func:`refit_check` record (None: no refits were checked)."""
    return [check["warning"]] if check and "warning" in check else []


# How far the refits on all layers may fall below the given head's own test accuracy before they
# count as under-trained (accuracy, absolute). Over several seeds the shortfall must also exceed the
# seeds' own noise: the paired interval of refit − given over seeds wholly below 0. On a MobileNetV2
# run (450 CIFAR-10 images) the given heads differed by 0.033 between seeds, and a fixed per-seed
# bound warned of one seed 4 test rows short while the refits beat the heads on average.
SHORTFALL = 0.01
# One seed gives no spread to read a shortfall against: only one past that seed-to-seed spread counts.
# Every seed short by more is a warning too, where 2 seeds' interval (t = 12.7) is too wide to tell.
ONE_SEED_SHORTFALL = 0.05


def refit_check(
    given: float | Sequence[float],
    refit_test: Sequence[float],
    n_layers: int,
    budget: Budget,
    n_train: int,
    head_config: dict[str, Any] | Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """The refits on all ``n_layers`` layers beside the given head's test accuracy ``given`` on the
    same rows (a sequence: each seed's own given head's, prune's and early-exit's several LAYA heads): the
    reference every refit accuracy is read against. ``warning`` when the refits fall short of it by
    more than the seeds' noise: over several seeds, a mean shortfall above SHORTFALL whose paired
    interval (refit − given, same seeds paired) lies wholly below 0, or a mean shortfall above
    ONE_SEED_SHORTFALL, what one seed can tell (two seeds' interval, t = 12.7, is too wide to lie below 0
    even then); with one seed, that alone. Then fewer layers can look
    as good as all only because the refits are under-trained."""
    givens = [float(given)] * len(refit_test) if isinstance(given, (int, float)) else [float(g) for g in given]
    shortfalls = [g - float(v) for g, v in zip(givens, refit_test)]
    mean_short = float(np.mean(shortfalls))
    diff = paired(refit_test, givens)
    if len(shortfalls) > 1:
        rule = (
            f"mean shortfall > {SHORTFALL:g} with the paired {level(diff)} interval of refit − given over "
            f"{len(shortfalls)} seeds wholly below 0, or a mean shortfall > {ONE_SEED_SHORTFALL:g}"
        )
        # the interval's own end, not outcome(): a shortfall the same on every seed has no spread to hide in
        under = (mean_short > SHORTFALL and diff["ci_high"] < 0) or mean_short > ONE_SEED_SHORTFALL
    else:
        rule = f"one seed, no interval: its shortfall > {ONE_SEED_SHORTFALL:g}"
        under = mean_short > ONE_SEED_SHORTFALL
    # several LAYA heads (``head_config`` one per head): each head's own, though two may score alike
    configs = [head_config] if isinstance(head_config, dict) else list(head_config)
    several = len(configs) > 1
    record: dict[str, Any] = {
        "given_head_test_acc": float(np.mean(givens)),  # several heads: their mean (each in given_heads_test_acc)
        "refit_all_layers_test_acc": estimate(refit_test),
        "difference": diff,
        "tolerance": SHORTFALL,
        "one_seed_tolerance": ONE_SEED_SHORTFALL,
        "mean_shortfall": mean_short,
        "max_shortfall": max(shortfalls),
        "rule": rule,
        "under_trained": bool(under),
    }
    if several:
        record["given_heads_test_acc"] = givens
    if under:
        record["warning"] = _under_trained(record, refit_test, n_layers, budget, n_train, configs)
    return record


def _under_trained(
    record: dict[str, Any],
    refit_test: Sequence[float],
    n_layers: int,
    budget: Budget,
    n_train: int,
    configs: Sequence[dict[str, Any]],
) -> str:
    """The warning of a :func:`refit_check` record that found the refits short, naming both learning rates."""
    givens = record.get("given_heads_test_acc") or [record["given_head_test_acc"]]
    several = len(configs) > 1
    epochs, patience = budget.resolve(n_train)
    ran = [(c.get("metrics") or {}).get("epochs_run") for c in configs]
    head_ran = f"{', '.join(map(str, ran))} epochs" if all(isinstance(r, int) for r in ran) else "its own budget"
    lrs = sorted({lr for c in configs if isinstance(lr := (c.get("training") or {}).get("lr"), (int, float))})
    head_lr = f" at lr {', '.join(f'{lr:g}' for lr in lrs)}" if lrs else ""
    each = ", ".join(f"{g:.4f}" for g in givens)
    heads = f"heads of those seeds {each}" if several else f"head {givens[0]:.4f}"
    diff = record["difference"]
    if diff.get("ci_high") is None:
        noise = "one seed cannot tell a smaller shortfall from seed noise"
    else:
        span = f"refit − given {diff['mean']:+.4f}, {level(diff)} CI [{diff['ci_low']:+.4f}, {diff['ci_high']:+.4f}]"
        span += cut_said(diff)  # [-1.0000, …] is a bound cut to the range, not one the seeds reached
        noise = (
            f"{span} over the seeds paired: short beyond the seeds' noise"
            if diff["ci_high"] < 0
            else f"{span} over the seeds paired is too wide to tell, but the mean shortfall is more than "
            f"{ONE_SEED_SHORTFALL:g}, past what one seed can tell"
        )
    if lrs and lrs != [budget.lr]:
        whose = "heads'" if several else "head's"
        lr_advice = f"rerun with --lr nearer the given {whose} (the refits ran at lr {budget.lr:g})"
    else:
        lr_advice = f"rerun with another --lr (the refits ran at lr {budget.lr:g})"
    return (
        f"the refits fall short of the given head: on all {n_layers} layers each seed's refit reaches "
        f"test accuracy {', '.join(f'{v:.4f}' for v in refit_test)}, the given {heads} on the same rows "
        f"(mean shortfall {record['mean_shortfall']:.4f}, largest {record['max_shortfall']:.4f}; {noise}; the rule: "
        f"{record['rule']}). "
        f"The refit budget ({epochs} epochs, patience {patience}, --lr {budget.lr:g}, --weight-decay "
        f"{budget.weight_decay or 0.0:g}) under-trains this head, so every accuracy here is an under-trained "
        f"head's, and fewer layers can look as good as all; {lr_advice}, or with more --epochs and --patience "
        f"(the given head{'s' * several} ran {head_ran}{head_lr})"
    )
