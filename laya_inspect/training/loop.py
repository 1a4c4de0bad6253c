"""The one training loop of laya-inspect, and the batchers it reads.

`fit-head` (heads on a frozen cache), `train` (a zoo backbone with its head) and train's linear
probe all run :func:`train_loop`: Adam, a loss on the logits, one pass over the shuffled training
rows per epoch, then the validation rows; early stopping with patience and the best weights restored
(docs/METHOD.md, "Training"). A run is deterministic per seed: batches are shuffled by a generator
seeded with the run's seed.

Batchers hand out ``(x, y)`` batches of chosen row positions: :class:`TensorRows` (rows held as
tensors), :class:`CacheRows` (one split of a feature cache, in memory or streamed chunk by chunk) and
:class:`InputRows` (a dataset split's model inputs, fetched through the data layer).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..cache.store import FeatureStore
from ..choices import MONITORS, VAL_MODES
from ..errors import InputError
from ..heads import HeadOutput
from ..runtime import Progress

KERAS_EPSILON = 1e-7
EVAL_BATCH = 4096
STREAM_CHUNK_ROWS = 8192

Batch = tuple[Any, Tensor]


def available_memory() -> int:
    """Bytes of memory available now (MemAvailable), or a guess of 1 GiB where it cannot be read."""
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


def untrained_classes(labels: np.ndarray, train_rows: np.ndarray, num_classes: int) -> list[int]:
    """The classes none of ``train_rows`` holds: a head cannot learn them, so it is built to hold them
    down (heads.UNTRAINED_GAP) and must never win a row by luck."""
    return np.setdiff1d(np.arange(num_classes), labels[train_rows]).tolist()


def trained_validation(
    labels: np.ndarray, train_rows: np.ndarray, val_rows: np.ndarray, num_classes: int
) -> tuple[np.ndarray, int]:
    """The validation rows of classes the heads are fitted on, and how many were left out. A row of a
    class with no training rows can never be right, and its loss (its logit held UNTRAINED_GAP below
    the rest) grows with the spread of the other logits: kept, it would steer early stopping and
    --grid toward flat, unconfident heads."""
    out = np.isin(labels[val_rows], untrained_classes(labels, train_rows, num_classes))
    if not out.any() or out.all():
        return val_rows, 0
    return val_rows[~out], int(out.sum())


def validation_split(labels: np.ndarray, fraction: float, mode: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train_rows, val_rows), both sorted. 'stratified': a seeded draw of ``fraction`` of each class;
    'last': the last rows, as Keras' ``validation_split`` takes them (split at round(n·(1−fraction)))."""
    n = len(labels)
    if mode == "last":
        cut = int(round(n * (1 - fraction)))
        train, val = np.arange(cut), np.arange(cut, n)
    elif mode == "stratified":
        rng = np.random.default_rng(seed)
        val_parts = []
        for c in np.unique(labels):
            members = rng.permutation(np.flatnonzero(labels == c))
            val_parts.append(members[: int(round(len(members) * fraction))])
        val = np.sort(np.concatenate(val_parts))
        train = np.setdiff1d(np.arange(n), val)
    else:
        raise InputError(f"--val-mode must be one of {', '.join(VAL_MODES)}, got {mode!r}")
    if len(val) == 0 or len(train) == 0:
        raise InputError(
            f"a validation fraction of {fraction} leaves {len(train)} training and {len(val)} "
            f"validation rows out of {n}; use more data or another --val-fraction"
        )
    if mode == "last":
        # Data stored class by class (an ImageFolder, a sorted table) puts only the last classes at
        # the end: early stopping would then watch a validation set of one class.
        seen, held = np.unique(labels), np.unique(labels[val])
        if len(held) < len(seen) / 2:
            raise InputError(
                f"--val-mode last takes the last {len(val)} rows, which hold only {len(held)} of the "
                f"{len(seen)} classes (the rows are ordered by class); use --val-mode stratified"
            )
    return train.astype(np.int64), val.astype(np.int64)


def batch_positions(positions: np.ndarray, batch_size: int, generator: torch.Generator | None) -> Iterator[np.ndarray]:
    """``positions`` in order, or permuted by ``generator``, in consecutive runs of ``batch_size``."""
    if generator is not None:
        positions = positions[torch.randperm(len(positions), generator=generator).numpy()]
    for i in range(0, len(positions), batch_size):
        yield positions[i : i + batch_size]


class Rows(Protocol):
    def batches(
        self, positions: np.ndarray, batch_size: int, generator: torch.Generator | None = None
    ) -> Iterator[Batch]: ...


class TensorRows:
    """Rows held as tensors on one device: ``x`` is one tensor (N, …) or a list of per-layer (N, D_l)."""

    def __init__(self, x: Tensor | list[Tensor], y: Tensor) -> None:
        self.x, self.y = x, y

    def batches(
        self, positions: np.ndarray, batch_size: int, generator: torch.Generator | None = None
    ) -> Iterator[Batch]:
        for pos in batch_positions(positions, batch_size, generator):
            idx = torch.from_numpy(pos).to(self.y.device)
            # index_select, not x[idx]: the same rows copied, about 3× faster on the CPU (advanced indexing's
            # general path), which was 6–9% of a prune refit's step (docs/PERFORMANCE.md, section 17)
            x = [h.index_select(0, idx) for h in self.x] if isinstance(self.x, list) else self.x.index_select(0, idx)
            yield x, self.y.index_select(0, idx)


class _HeldOrStreamed:
    """Rows held as one :class:`TensorRows` when they fit in memory, else streamed by ``stream``."""

    held: TensorRows | None = None

    def batches(
        self, positions: np.ndarray, batch_size: int, generator: torch.Generator | None = None
    ) -> Iterator[Batch]:
        if self.held is not None:
            yield from self.held.batches(positions, batch_size, generator)
        else:
            yield from self.stream(positions, batch_size, generator)

    def stream(self, positions: np.ndarray, batch_size: int, generator: torch.Generator | None) -> Iterator[Batch]:
        raise NotImplementedError


class CacheRows(_HeldOrStreamed):
    """One split of a feature cache as float32 (N, D_l) tensors: held in memory (on the device), or
    streamed from the store chunk by chunk for caches larger than memory (shuffled within chunks)."""

    def __init__(self, store: FeatureStore, split: str, device: torch.device, in_memory: bool) -> None:
        self.store, self.split, self.device = store, split, device
        self.labels = np.asarray(store.labels(split), dtype=np.int64)
        self.n = len(self.labels)
        if in_memory:
            hs = [torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in store.layers(split)]
            self.held = TensorRows(hs, torch.from_numpy(self.labels).to(device))

    def stream(self, positions: np.ndarray, batch_size: int, generator: torch.Generator | None) -> Iterator[Batch]:
        member = np.zeros(self.n, dtype=bool)
        member[positions] = True
        for sl, feats, labels in self.store.iter_chunks(self.split, STREAM_CHUNK_ROWS):
            for take in batch_positions(np.flatnonzero(member[sl]), batch_size, generator):
                yield (
                    [torch.from_numpy(np.ascontiguousarray(f[take])).to(self.device) for f in feats],
                    torch.from_numpy(labels[take].astype(np.int64)).to(self.device),
                )


class InputRows(_HeldOrStreamed):
    """A dataset split's transformed model inputs: fetched batch by batch through the data layer, or,
    when the whole split fits in a quarter of available memory, fetched once and held as one tensor."""

    def __init__(self, split: Any, device: torch.device, chunk: int = 1024) -> None:
        self.split, self.device = split, device
        self.y = torch.from_numpy(np.asarray(split.labels, dtype=np.int64).copy()).to(device)
        sample = split.fetch(split.index[:1])
        if isinstance(sample, Tensor) and split.n * sample[0].numel() * 4 < available_memory() / 4:
            parts = [split.fetch(split.index[i : i + chunk]) for i in range(0, split.n, chunk)]
            x = torch.cat([p.float() if p.is_floating_point() else p for p in parts]).to(device)
            self.held = TensorRows(x, self.y)

    def stream(self, positions: np.ndarray, batch_size: int, generator: torch.Generator | None) -> Iterator[Batch]:
        for pos in batch_positions(positions, batch_size, generator):
            x = self.split.fetch(self.split.index[pos])
            x = {k: v.to(self.device) for k, v in x.items()} if isinstance(x, dict) else x.to(self.device)
            yield x, self.y[torch.from_numpy(pos).to(self.device)]


@torch.no_grad()
def predict(
    model: Callable[[Any], HeadOutput], batches: Iterable[Batch]
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


@dataclass
class Evaluation:
    loss: float
    acc: float
    preds: np.ndarray  # (N,)
    labels: np.ndarray  # (N,)
    weights: np.ndarray | None  # (N, L) for heads with aggregation weights


def evaluate(model: nn.Module, rows: Rows, positions: np.ndarray, batch_size: int = EVAL_BATCH) -> Evaluation:
    model.eval()
    p, y, w, loss = predict(model, rows.batches(positions, batch_size))
    return Evaluation(loss=loss, acc=float((p == y).mean()), preds=p, labels=y, weights=w)


def loss_fn(logits: Tensor, y: Tensor, kind: str = "logits") -> Tensor:
    if kind == "probs":
        p = torch.softmax(logits, dim=1).clamp(KERAS_EPSILON, 1 - KERAS_EPSILON)
        return F.nll_loss(p.log(), y)
    return F.cross_entropy(logits, y)


class EarlyStopping:
    """Early stopping with the best weights kept (docs/METHOD.md, "Training"). An epoch is the new best
    when its monitored validation metric is strictly better (``loss``: lower cross-entropy; ``acc``:
    higher accuracy) or, on a tie, when the other one is strictly better; training stops after
    ``patience`` epochs without a new best. The tie rule matters once accuracy saturates: at 1.0 a
    strict gain can never come, and the epoch-1 weights would be kept while the loss still falls."""

    def __init__(self, patience: int, monitor: str = "loss") -> None:
        if monitor not in MONITORS:
            raise InputError(f"--monitor must be one of {', '.join(MONITORS)}, got {monitor!r}")
        self.patience, self.monitor = patience, monitor
        self.best_epoch, self.wait = 0, 0
        self.best_loss, self.best_acc = math.inf, -math.inf
        self.state: dict[str, torch.Tensor] | None = None

    def _key(self, loss: float, acc: float) -> tuple[float, float]:
        """Larger is better, compared in order: the monitored metric, then the other."""
        return (-loss, acc) if self.monitor == "loss" else (acc, -loss)

    @property
    def best(self) -> float:
        """The monitored metric at the best epoch."""
        return self.best_loss if self.monitor == "loss" else self.best_acc

    def step(self, epoch: int, loss: float, acc: float, module: nn.Module) -> bool:
        """Record this epoch's validation loss and accuracy (keeping a copy of the weights when it is
        the best); True = stop."""
        if self.best_epoch == 0 or self._key(loss, acc) > self._key(self.best_loss, self.best_acc):
            self.best_epoch, self.best_loss, self.best_acc, self.wait = epoch, loss, acc, 0
            # a clone per tensor: the same values as a deep copy, without deepcopy's Python walk (in
            # prune's refits of one batch an epoch, 6% of a refit's profile; a clone is 4× faster)
            self.state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        else:
            self.wait += 1
        return self.wait >= self.patience

    def restore(self, module: nn.Module) -> None:
        if self.state is not None:
            module.load_state_dict(self.state)


@dataclass(frozen=True)
class LoopSettings:
    """What the loop needs of a command's options."""

    lr: float
    epochs: int
    patience: int
    seed: int
    loss: str = "logits"
    weight_decay: float = 0.0
    monitor: str = "loss"


def _nonfinite(name: str, tag: dict[str, Any], settings: LoopSettings, epoch: int, what: str, value: float) -> str:
    stage = tag.get("stage")
    label = f"{name!r}" + (f" ({stage})" if stage in ("grid", "probe") else "")
    return (
        f"training of head {label}, seed {settings.seed} stopped: the {what} became {value} at epoch {epoch}; "
        f"lower --lr (now {settings.lr:g}) or check the features for NaN/Inf values"
    )


def run_end(
    name: str, seed: int, stopper: EarlyStopping, history: list[dict[str, float]], tag: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """The progress event that closes a run of :func:`train_loop`."""
    return {
        "event": "run_end",
        "head": name,
        "seed": seed,
        "val_acc": stopper.best_acc,
        "val_loss": stopper.best_loss,
        "monitor": stopper.monitor,
        "best_epoch": stopper.best_epoch,
        "epochs_run": len(history),
        **extra,
        **tag,
    }


def decay_groups(module: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """Adam's parameter groups: the L2 penalty on weight matrices only (ndim ≥ 2). Biases, norms and
    ScalarMix's scalars are left alone: decaying the scalars would pull the layer weights the tool
    reports towards uniform, and a bias carries no capacity to overfit with (docs/METHOD.md, "Training")."""
    params = [p for p in module.parameters() if p.requires_grad]
    return [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]


def adam(groups: list[dict[str, Any]], lr: float) -> torch.optim.Adam:
    """``torch.optim.Adam`` (L2 decay per group): fused, one kernel call a step for a head's dozen small
    tensors, where every parameter is a float tensor on the CPU (torch ≥ 2.4) or CUDA; else foreach."""
    groups = [{**g, "params": list(g["params"])} for g in groups]
    params = [p for g in groups for p in g["params"]]
    if all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in params):
        try:  # copies: a constructor that refuses has already written fused=True into the groups it got
            return torch.optim.Adam([dict(g) for g in groups], lr=lr, fused=True)
        except RuntimeError:  # "`fused=True` requires ... supported devices": torch < 2.4 on the CPU
            pass
    return torch.optim.Adam(groups, lr=lr, foreach=True)


def train_loop(
    module: nn.Module,
    train_batches: Callable[[torch.Generator], Iterable[Batch]],
    val_batches: Callable[[], Iterable[Batch]],
    settings: LoopSettings,
    *,
    forward: Callable[[Any], HeadOutput] | None = None,
    name: str,
    emit: Progress,
    tag: dict[str, Any],
) -> tuple[list[dict[str, float]], EarlyStopping]:
    """Train ``module`` (through ``forward``, default the module itself) until early stopping; restore
    its best weights and leave it in eval mode. Returns the per-epoch history and the stopper."""
    forward = forward or module
    opt = adam(decay_groups(module, settings.weight_decay), settings.lr)
    gen = torch.Generator().manual_seed(settings.seed)
    stopper, history = EarlyStopping(settings.patience, settings.monitor), []
    device = next(module.parameters()).device
    emit({"event": "run_start", "head": name, "seed": settings.seed, "epochs": settings.epochs, **tag})
    for epoch in range(1, settings.epochs + 1):
        t0 = time.perf_counter()
        module.train()
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), device=device, dtype=torch.long)
        count = 0
        for x, y in train_batches(gen):
            out = forward(x)
            loss = loss_fn(out.logits, y, settings.loss)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach() * len(y)
            correct += (out.logits.detach().argmax(1) == y).sum()
            count += len(y)
        module.eval()
        train_loss = float(loss_sum) / count
        if not math.isfinite(train_loss):
            raise InputError(_nonfinite(name, tag, settings, epoch, "training loss", train_loss))
        p, t, _, val_loss = predict(forward, val_batches())
        if not math.isfinite(val_loss):
            raise InputError(_nonfinite(name, tag, settings, epoch, "validation loss", val_loss))
        val_acc = float((p == t).mean())
        record = {
            "epoch": epoch,
            "train_loss": train_loss,
            "train_acc": float(correct) / count,
            "val_loss": val_loss,
            "val_acc": val_acc,
            "seconds": time.perf_counter() - t0,
        }
        history.append(record)
        stop = stopper.step(epoch, val_loss, val_acc, module)
        emit(
            {
                "event": "epoch",
                "head": name,
                "seed": settings.seed,
                "epoch": epoch,
                "epochs": settings.epochs,
                "loss": record["train_loss"],
                "val_loss": val_loss,
                "val_acc": val_acc,
                "best_val_loss": stopper.best_loss,
                "best_val_acc": stopper.best_acc,
                "monitor": stopper.monitor,
                **tag,
            }
        )
        if stop:
            break
    stopper.restore(module)
    module.eval()
    return history, stopper
