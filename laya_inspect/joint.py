"""Train a zoo backbone end to end with a head (PROTOCOL §3, the paper's joint protocol): the
library behind `laya-inspect train`.

The backbone's blocks feed the head as extraction would pool them (MLP blocks: vectors; CNN
stages: global average pool; BiLSTM layers: their final hidden state). ``head="last"`` is the
backbone's own classifier on its last block. For the other heads the backbone's own classifier
(``module.head``) is not part of the joint model; so that the frozen model's logits (which
``extract`` stores) mean something, it is then fitted as a linear probe on the frozen last block,
and the checkpoint says so.

The checkpoint is a self-describing zoo checkpoint (``extract --model zoo:NAME --weights FILE``
reads it): ``{"format": "laya-inspect-zoo", "arch", "kwargs", "state_dict", "head": {"kind",
"config", "state_dict", "layer_names", "pooling"}, "metrics", "data_spec", "seed", "tool_version",
"training", "transforms", "split_info"}``; test metrics go to ``<FILE stem>.metrics.json`` beside it.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import f1_score
from torch import Tensor, nn

from . import __version__
from .errors import InputError
from .heads import HEADS, Head, HeadOutput, LastLayerHead, build_head
from .jsonable import plain
from .models.zoo import INITS  # Keras' glorot-uniform + zero bias (the paper's) | PyTorch's own defaults
from .devices import pick_device
from .train import EarlyStopping, Progress, available_memory, predict, training_checks, validation_split

JOINT_HEADS = ("last", "laya", "concat", "scalarmix")
# logits: cross-entropy on the logits | probs: Keras' categorical cross-entropy on softmax
# probabilities clipped to [1e-7, 1 − 1e-7] (the reference notebook's loss; no gradient where clipped)
LOSSES = ("logits", "probs")
KERAS_EPSILON = 1e-7
POOLING = {"mlp": "none", "cnn": "gap", "bilstm": "last"}  # how each arch's block outputs become vectors


@dataclass(frozen=True)
class JointConfig:
    model: str = "zoo:mlp"
    data: str = "fashion-mnist"
    head: str = "last"
    seed: int = 0
    lr: float = 3e-4
    batch_size: int = 128
    epochs: int = 50
    patience: int = 5
    val_fraction: float = 0.1
    val_mode: str = "stratified"
    limit: int | None = None
    device: str = "auto"
    d_star: int = 96
    tau: float = 1.5
    psi: str = "identity"
    score_width: int | None = None
    train_split: str = "train"
    test_split: str = "test"
    data_seed: int = 0  # the dataset's own seeded split/subset; extract's --seed must match it
    init: str = "glorot"  # backbone and head initialisation, one of INITS
    ln_eps: float | None = None  # the backbone's LayerNorm ε; None = the zoo default (1e-3, Keras')
    loss: str = "logits"  # one of LOSSES
    model_kwargs: dict[str, Any] = field(default_factory=dict)  # e.g. {"hidden": [512, 256, 128]}

    def __post_init__(self) -> None:
        prefix, _, name = self.model.partition(":")
        checks = [
            (prefix == "zoo" and bool(name),
             f"train builds zoo backbones: --model zoo:mlp|zoo:cnn|zoo:bilstm, got {self.model!r}"),
            (self.head in JOINT_HEADS, f"--head must be one of {', '.join(JOINT_HEADS)}, got {self.head!r}"),
            *training_checks(self),
            (self.init in INITS, f"--init must be one of {', '.join(INITS)}, got {self.init!r}"),
            (self.ln_eps is None or self.ln_eps > 0, f"--ln-eps must be > 0, got {self.ln_eps}"),
            (self.loss in LOSSES, f"--loss must be one of {', '.join(LOSSES)}, got {self.loss!r}"),
        ]
        for ok, message in checks:
            if not ok:
                raise InputError(message)

    @property
    def arch(self) -> str:
        return self.model.partition(":")[2]


def pooled_features(backbone: nn.Module, x: Any) -> list[Tensor]:
    """The backbone's block outputs as (N, D_l) vectors, pooled as ``extract --pool auto`` does."""
    if isinstance(x, dict):
        x = x["input_ids"]
    return [f.mean(dim=(2, 3)) if f.ndim == 4 else f for f in backbone.features(x)]


class JointModel(nn.Module):
    """Backbone + head; ``head=None`` means the backbone's own classifier on its last block."""

    def __init__(self, backbone: nn.Module, head: Head | None) -> None:
        super().__init__()
        self.backbone, self.head = backbone, head

    def forward(self, x: Any) -> HeadOutput:
        hs = pooled_features(self.backbone, x)
        if self.head is None:
            return HeadOutput(self.backbone.head(hs[-1]), None)
        return self.head(hs)


@dataclass
class JointResult:
    path: Path
    metrics_path: Path
    metrics: dict[str, Any]
    history: list[dict[str, float]]
    layer_names: list[str]
    alpha_mean: list[float] | None  # mean α per layer on the test split (laya)


def _to(x: Any, device: torch.device) -> Any:
    return {k: v.to(device) for k, v in x.items()} if isinstance(x, dict) else x.to(device)


class _Rows:
    """A split's transformed inputs: fetched batch by batch through the data layer, or, when the whole
    split fits in a quarter of available memory, fetched once and kept as one tensor (on the device)."""

    def __init__(self, split: Any, device: torch.device, chunk: int = 1024) -> None:
        self.split, self.device, self.x = split, device, None
        self.y = torch.from_numpy(np.asarray(split.labels, dtype=np.int64).copy()).to(device)
        sample = split.fetch(split.index[:1])
        if isinstance(sample, Tensor) and split.n * sample[0].numel() * 4 < available_memory() / 4:
            parts = [split.fetch(split.index[i:i + chunk]) for i in range(0, split.n, chunk)]
            self.x = torch.cat([p.float() if p.is_floating_point() else p for p in parts]).to(device)

    def batches(self, positions: np.ndarray, batch_size: int,
                generator: torch.Generator | None = None) -> Iterator[tuple[Any, Tensor]]:
        """Batches of the rows at ``positions`` (shuffled by ``generator``)."""
        order = (positions if generator is None
                 else positions[torch.randperm(len(positions), generator=generator).numpy()])
        for i in range(0, len(order), batch_size):
            pos = order[i:i + batch_size]
            idx = torch.from_numpy(pos).to(self.device)
            x = self.x[idx] if self.x is not None else _to(self.split.fetch(self.split.index[pos]), self.device)
            yield x, self.y[idx]


def _loss(logits: Tensor, y: Tensor, kind: str) -> Tensor:
    if kind == "probs":
        p = torch.softmax(logits, dim=1).clamp(KERAS_EPSILON, 1 - KERAS_EPSILON)
        return F.nll_loss(p.log(), y)
    return F.cross_entropy(logits, y)


def _loop(module: nn.Module, forward: Callable[[Any], HeadOutput], params: Any,
          train_batches: Callable[[torch.Generator], Iterator[tuple[Any, Tensor]]],
          val_batches: Callable[[], Iterator[tuple[Any, Tensor]]], *, config: JointConfig, seed: int,
          emit: Progress, tag: dict[str, Any]) -> tuple[list[dict[str, float]], EarlyStopping]:
    """Adam + cross-entropy, early stopping on validation accuracy, best weights of ``module`` restored."""
    opt = torch.optim.Adam(params, lr=config.lr)
    gen = torch.Generator().manual_seed(seed)
    stopper, history = EarlyStopping(config.patience), []
    emit({"event": "run_start", "head": config.head, "seed": seed, "epochs": config.epochs, **tag})
    for epoch in range(1, config.epochs + 1):
        t0 = time.perf_counter()
        module.train()
        loss_sum, correct, count = 0.0, 0, 0
        for x, y in train_batches(gen):
            out = forward(x)
            loss = _loss(out.logits, y, config.loss)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += float(loss.detach()) * len(y)
            correct += int((out.logits.detach().argmax(1) == y).sum())
            count += len(y)
        module.eval()
        p, t, _, val_loss = predict(forward, val_batches())
        val_acc = float((p == t).mean())
        history.append({"epoch": epoch, "train_loss": loss_sum / count, "train_acc": correct / count,
                        "val_loss": val_loss, "val_acc": val_acc, "seconds": time.perf_counter() - t0})
        stop = stopper.step(epoch, val_acc, module)
        emit({"event": "epoch", "head": config.head, "seed": seed, "epoch": epoch, "epochs": config.epochs,
              "loss": loss_sum / count, "val_acc": val_acc, "best_val_acc": stopper.best, **tag})
        if stop:
            break
    stopper.restore(module)
    module.eval()
    emit({"event": "run_end", "head": config.head, "seed": seed, "val_acc": stopper.best,
          "best_epoch": stopper.best_epoch, "epochs_run": len(history), **tag})
    return history, stopper


def train_joint(config: JointConfig, *, out: str | Path, progress: Progress | None = None,
                overwrite: bool = False) -> JointResult:
    """Train ``config.model`` with ``config.head`` on ``config.data``; write the checkpoint and metrics."""
    from .data import load_data
    from .models.zoo import DEFAULT_LAYERS, build_zoo, save_zoo_checkpoint

    emit = progress or (lambda e: None)
    path = Path(out)
    metrics_path = path.with_name(path.stem + ".metrics.json")
    if path.exists() and not overwrite:
        raise InputError(f"{path} exists; pass --force to overwrite it, or choose another --out")
    device = pick_device(config.device)
    input_spec, vocab = None, None
    if config.arch == "bilstm":  # word ids from a vocabulary of the training texts, kept in the checkpoint
        from .data import WordVocab, raw_texts
        from .models.base import InputSpec

        texts = raw_texts(config.data, config.train_split, limit=config.limit, seed=config.data_seed)
        vocab = WordVocab.fit(texts, size=int(config.model_kwargs.get("vocab_size", 20000)))
        input_spec = InputSpec(kind="tokens", max_length=int(config.model_kwargs.get("max_len", 200)))
    # The data seed stays fixed across run seeds so that every run (and `extract`) sees the same test rows.
    bundle = load_data(config.data, splits=(config.train_split, config.test_split), limit=config.limit,
                       seed=config.data_seed, input_spec=input_spec, tokenizer=vocab)
    train_split, test_split = bundle.splits[config.train_split], bundle.splits[config.test_split]
    num_classes = bundle.num_classes
    kwargs: dict[str, Any] = {"num_classes": num_classes, **config.model_kwargs}
    if vocab is not None:
        kwargs["vocab_size"] = vocab.size
    if config.arch in ("mlp", "cnn"):
        kwargs.setdefault("init", config.init)
        if config.ln_eps is not None:
            kwargs.setdefault("ln_eps", config.ln_eps)
        sample = train_split.fetch(train_split.index[:1])
        if not isinstance(sample, Tensor) or sample.ndim != 4:
            raise InputError(f"zoo:{config.arch} takes images (N, C, H, W); dataset {config.data!r} gives "
                             f"{type(sample).__name__} {tuple(getattr(sample, 'shape', ()))}")
        kwargs.setdefault("in_shape", tuple(int(s) for s in sample.shape[1:]))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        backbone = build_zoo(config.arch, **kwargs)
        layer_names = DEFAULT_LAYERS[config.arch](backbone)
        with torch.no_grad():
            widths = [h.shape[1] for h in pooled_features(backbone.eval(), train_split.fetch(train_split.index[:2]))]
        hp = {"d_star": config.d_star, "tau": config.tau, "psi": config.psi, "score_width": config.score_width,
              "init": config.init}
        head = None if config.head == "last" else build_head(config.head, widths, num_classes, **hp)
    model = JointModel(backbone, head).to(device)
    train, test = _Rows(train_split, device), _Rows(test_split, device)
    tr_pos, va_pos = validation_split(train_split.labels, config.val_fraction, config.val_mode, config.data_seed)

    t0 = time.perf_counter()
    history, stopper = _loop(
        model, model, model.parameters(),
        lambda g: train.batches(tr_pos, config.batch_size, g),
        lambda: train.batches(va_pos, 4 * config.batch_size), config=config, seed=config.seed,
        emit=emit, tag={"stage": "joint", "run": 1, "runs": 1})
    preds, labels, weights, test_loss = predict(model, test.batches(np.arange(test_split.n), 4 * config.batch_size))
    metrics: dict[str, Any] = {
        "head": config.head, "seed": config.seed, "val_acc": stopper.best, "best_epoch": stopper.best_epoch,
        "epochs_run": len(history), "test_acc": float((preds == labels).mean()),
        "test_macro_f1": float(f1_score(labels, preds, average="macro", zero_division=0)), "test_loss": test_loss,
        "n_train": int(len(tr_pos)), "n_val": int(len(va_pos)), "n_test": int(test_split.n),
        "seconds": time.perf_counter() - t0,
    }
    alpha_mean = weights.mean(axis=0).tolist() if weights is not None else None
    if alpha_mean is not None:
        metrics["test_mean_weights"] = dict(zip(layer_names, alpha_mean))

    if head is None:
        saved_head: Head = LastLayerHead(widths, num_classes)
        saved_head.classifier.load_state_dict(backbone.head.state_dict())
        metrics["backbone_head"] = "trained jointly (it is the 'last' head)"
    else:
        saved_head = head
        metrics["backbone_head"] = _probe(backbone, train, test, tr_pos, va_pos, config, emit)
    training = {k: v for k, v in asdict(config).items() if k != "model_kwargs"}
    ckpt_extra = {
        "head": {"kind": saved_head.kind, "config": saved_head.config(), "layer_names": layer_names,
                 "pooling": POOLING.get(config.arch, "none"),
                 "state_dict": {k: v.detach().cpu() for k, v in saved_head.state_dict().items()}},
        "metrics": metrics, "data_spec": bundle.spec, "seed": config.seed, "tool_version": __version__,
        "training": training,
        "transforms": bundle.transforms, "split_info": plain(bundle.split_info), "history": history,
    }
    if vocab is not None:
        ckpt_extra["vocab"] = list(vocab.words)
    save_zoo_checkpoint(path, backbone.cpu(), extra=plain(ckpt_extra))
    metrics_path.write_text(json.dumps(plain({"checkpoint": str(path), "model": config.model, "data": bundle.spec,
                                                 "layer_names": layer_names, **metrics, "training": training,
                                                 "history": history}),
                                       indent=2) + "\n")
    return JointResult(path=path, metrics_path=metrics_path, metrics=metrics, history=history,
                       layer_names=layer_names, alpha_mean=alpha_mean)


def _probe(backbone: nn.Module, train: _Rows, test: _Rows, tr_pos: np.ndarray, va_pos: np.ndarray,
           config: JointConfig, emit: Progress) -> dict[str, Any]:
    """Fit the backbone's own classifier on its frozen (pooled) last block, so its logits are meaningful."""
    backbone.eval()

    @torch.no_grad()
    def last_block(rows: _Rows, pos: np.ndarray) -> tuple[Tensor, Tensor]:
        feats, ys = [], []
        for x, y in rows.batches(pos, 4 * config.batch_size):
            feats.append(pooled_features(backbone, x)[-1])
            ys.append(y)
        return torch.cat(feats), torch.cat(ys)

    (f_tr, y_tr), (f_va, y_va) = last_block(train, tr_pos), last_block(train, va_pos)
    clf = backbone.head

    def tensor_batches(f: Tensor, y: Tensor, gen: torch.Generator | None) -> Iterator[tuple[Tensor, Tensor]]:
        order = torch.arange(len(y)) if gen is None else torch.randperm(len(y), generator=gen)
        for i in range(0, len(y), config.batch_size):
            idx = order[i:i + config.batch_size].to(f.device)
            yield f[idx], y[idx]

    history, stopper = _loop(
        clf, lambda h: HeadOutput(clf(h), None), clf.parameters(), lambda g: tensor_batches(f_tr, y_tr, g),
        lambda: tensor_batches(f_va, y_va, None), config=config, seed=config.seed, emit=emit,
        tag={"stage": "probe", "run": 1, "runs": 1})
    f_te, y_te = last_block(test, np.arange(len(test.y)))
    with torch.no_grad():
        test_acc = float((clf(f_te).argmax(1) == y_te).double().mean())
    return {"trained": "linear probe on the frozen last block, after joint training", "val_acc": stopper.best,
            "test_acc": test_acc, "epochs_run": len(history)}


def head_from_checkpoint(obj: dict[str, Any]) -> Head:
    """The jointly trained head stored in a zoo checkpoint (read with ``torch.load(weights_only=True)``)."""
    spec = obj.get("head")
    if not isinstance(spec, dict) or "kind" not in spec:
        raise InputError("this zoo checkpoint holds no head; it was not written by `laya-inspect train`")
    head = HEADS.get(spec["kind"])(**spec["config"])
    head.load_state_dict(spec["state_dict"])
    return head.eval()




def export_head(checkpoint: str | Path, store: Any, out_dir: str | Path, *, split: str = "test") -> dict[str, Any]:
    """Write the jointly trained head of a `train` checkpoint as a head directory bound to ``store``.

    ``store`` must be the cache `extract` wrote from that same checkpoint: the head's layers must be
    the cache's, and the head's accuracy on the cache's ``split`` is returned beside the accuracy
    `train` measured (same rows and features give the same number), so `compare` can score the
    jointly trained α — the paper's setting.
    """
    from .headio import cache_identity, save_head
    from .models.weights import read_checkpoint

    ckpt = read_checkpoint(checkpoint)
    if not isinstance(ckpt, dict) or ckpt.get("format") != "laya-inspect-zoo":
        raise InputError(f"{checkpoint} is not a checkpoint written by `laya-inspect train`")
    head = head_from_checkpoint(ckpt)
    if list(ckpt["head"].get("layer_names", [])) != list(store.layer_names):
        raise InputError(f"the head in {checkpoint} reads {ckpt['head'].get('layer_names')}, "
                         f"but {store.path} holds {store.layer_names}; extract those layers from that checkpoint")
    metrics = {k: v for k, v in (ckpt.get("metrics") or {}).items() if k != "history"}
    meta = {**cache_identity(store), "seed": ckpt.get("seed"), "checkpoint": str(checkpoint),
            "source": "jointly trained head exported from a laya-inspect zoo checkpoint", "metrics": metrics}
    save_head(out_dir, head, meta=meta)
    hs = [torch.from_numpy(np.ascontiguousarray(x)) for x in store.layers(split)]
    labels = store.labels(split)
    with torch.no_grad():
        out = head(hs)
    summary = {
        "checkpoint": str(checkpoint), "cache": str(store.path), "kind": head.kind, "split": split,
        "n": int(len(labels)), "accuracy_on_cache": float((out.logits.argmax(1).numpy() == labels).mean()),
        "joint_test_acc": metrics.get("test_acc"),
        "mean_weights_on_cache": None if out.weights is None else out.weights.mean(0).tolist(),
    }
    Path(out_dir, "export.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
