"""Train a zoo backbone end to end with a head (the paper's joint protocol; docs/METHOD.md, "Training"): the
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

import io
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol, cast

import numpy as np
import torch
from torch import Tensor, nn

from .. import __version__
from ..errors import InputError
from ..files import atomic_paths, json_bytes, output_lock, plain, remove_stale_temps, special_file
from ..heads import Head, HeadOutput, LastLayerHead, build_head, class_mask, hold_untrained
from ..options import defaulted
from ..out_dir import check_out, put_record, spec_paths, take_record
from ..runtime import Progress, no_progress, pick_device, seeded, set_threads
from .chance import CLASSIFIER_NOT_LEARNED
from .fit_config import HEAD_HPARAMS, POOLING, JointConfig
from .loop import (
    InputRows,
    predict,
    run_end,
    train_loop,
    trained_validation,
    untrained_classes,
    validation_split,
)
from .quality import (
    chance_level,
    epoch_limit,
    epoch_limit_reads,
    majority_macro_f1,
    near_chance,
    not_learned,
    unlearnable_classes,
)
from .stats import macro_f1


class _ZooBackbone(Protocol):
    """What this module uses of a zoo backbone (MLP, CNN, BiLSTM); ``build_zoo`` is typed as a plain nn.Module."""

    head: nn.Module

    def features(self, x: Any) -> list[Tensor]: ...


def _zoo(backbone: nn.Module) -> _ZooBackbone:
    return cast(_ZooBackbone, backbone)


def pooled_features(backbone: nn.Module, x: Any) -> list[Tensor]:
    """The backbone's block outputs as (N, D_l) vectors, pooled as ``extract --pool auto`` does."""
    if isinstance(x, dict):
        x = x["input_ids"]
    return [f.mean(dim=(2, 3)) if f.ndim == 4 else f for f in _zoo(backbone).features(x)]


class JointModel(nn.Module):
    """Backbone + head; ``head=None`` means the backbone's own classifier on its last block."""

    def __init__(self, backbone: nn.Module, head: Head | None, untrained: Tensor | None = None) -> None:
        super().__init__()
        self.backbone, self.head = backbone, head
        self.untrained = untrained  # (C,) bool (head None): the classes with no training rows, held down

    def forward(self, x: Any) -> HeadOutput:
        hs = pooled_features(self.backbone, x)
        if self.head is None:
            logits = _zoo(self.backbone).head(hs[-1])
            return HeadOutput(logits if self.untrained is None else hold_untrained(logits, self.untrained), None)
        return self.head(hs)


@dataclass
class JointResult:
    path: Path
    metrics_path: Path
    metrics: dict[str, Any]
    history: list[dict[str, float]]
    layer_names: list[str]
    alpha_mean: list[float] | None  # mean α per layer on the test split (laya)


def train_joint(
    config: JointConfig, *, out: str | Path, progress: Progress | None = None, overwrite: bool = False
) -> JointResult:
    """Train ``config.model`` with ``config.head`` on ``config.data``; write the checkpoint and metrics.
    An existing checkpoint is refused unless ``overwrite``; a second run on the same ``out`` is
    refused while the first holds its lock."""
    refuse_unused(config)
    if config.threads is not None:  # the command line applies the default itself
        set_threads(config.threads, work="backbone")
    path = Path(out)
    if path.is_dir():
        raise InputError(f"--out {path} is a folder; give a checkpoint file name such as {path / 'model.pt'}")
    _check_out(path, config, overwrite)
    with output_lock(path):
        for own in (path, metrics_path(path)):  # what a killed run on this --out left
            remove_stale_temps(own)
        return _train_joint(config, path, progress or no_progress, overwrite)


def not_used(config: JointConfig) -> dict[str, str]:
    """The options that do not reach ``config``'s backbone (zoo:bilstm has no LayerNorm and always
    takes Keras' initialisation), each with why: the settings line and metrics.json say so."""
    if config.arch != "bilstm":
        return {}
    out = {"ln_eps": f"not used by zoo:{config.arch} (it has no LayerNorm)"}
    reach = "the head's only" if config.head != "last" else "not used"
    out["init"] = f"{reach}: zoo:{config.arch}'s own layers always take Keras' (glorot) initialisation"
    return out


def refuse_unused(config: JointConfig) -> None:
    """Refuse an option given explicitly that would change nothing of the run."""
    unused = not_used(config)
    if "ln_eps" in unused and config.ln_eps is not None:
        raise InputError(f"--ln-eps is {unused['ln_eps']}; leave it out")
    if "init" in unused and config.init != "glorot" and config.head == "last":
        raise InputError(f"--init {config.init} is {unused['init']} (and --head last has no head of its own)")


def _check_out(path: Path, config: JointConfig, overwrite: bool) -> None:
    """Refuse an --out train may not write: before the work, and again before its files are replaced,
    as a file saved there during training (the lock keeps out only other runs) is not train's."""
    from ..models.zoo import not_a_zoo_checkpoint

    check_out(
        path,
        force=overwrite,
        command="train",
        kind="file",
        inputs=spec_paths(config.data),
        owned=not_a_zoo_checkpoint,
        recorded=True,
    )
    check_metrics_out(path)
    if path.exists() and not overwrite:
        raise InputError(
            f"{path} exists; pass --force to replace it (only a checkpoint laya-inspect wrote), or choose another --out"
        )


def metrics_path(path: Path) -> Path:
    return path.with_name(path.stem + ".metrics.json")


def check_metrics_out(path: Path) -> None:
    """The metrics file beside the checkpoint is written too: an existing one that train did not write
    (the user's own ``model.metrics.json``), or wrote for another checkpoint of the same stem
    (``model.pt``'s, for ``--out model.pth``), is refused, --force or not."""
    metrics = metrics_path(path)
    if not metrics.exists() and not metrics.is_symlink():
        return
    why = not_a_metrics_file(metrics)
    if why is None and (other := _metrics_checkpoint(metrics)).name != path.name:
        why = f"holds the metrics of checkpoint {other} (the same stem)"
    if why is not None:
        raise InputError(
            f"--out {path} writes its metrics to {metrics}, which {why}; "
            "laya-inspect replaces only its own files: choose another --out, or move it away yourself"
        )


def _metrics_checkpoint(metrics: Path) -> Path:
    """The checkpoint a metrics file train wrote names (its ``--out`` as given)."""
    return Path(str(json.loads(metrics.read_text(encoding="utf-8"))["checkpoint"]))


def not_a_metrics_file(path: Path) -> str | None:
    """None when ``path`` is a metrics file ``train`` wrote (one it may replace), else what it is instead."""
    if special := special_file(path):
        return f"is {special}, not a metrics file laya-inspect train wrote"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if not path.is_symlink() else None
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict) and {"checkpoint", "training", "history"} <= set(data):
        return None
    return "is not a metrics file laya-inspect train wrote"


def _train_joint(config: JointConfig, path: Path, emit: Progress, overwrite: bool) -> JointResult:
    from ..data import load_data
    from ..models.zoo import DEFAULT_LAYERS, build_zoo, save_zoo_checkpoint

    metrics_file = metrics_path(path)
    device = pick_device(config.device)
    input_spec, vocab = None, None
    if config.arch == "bilstm":  # word ids from a vocabulary of the training texts, kept in the checkpoint
        from ..data import WordVocab, raw_texts
        from ..models.base import InputSpec

        texts = raw_texts(config.data, config.train_split, limit=config.limit, seed=config.data_seed)
        vocab = WordVocab.fit(texts, size=int(config.model_kwargs.get("vocab_size", 20000)))
        input_spec = InputSpec(kind="tokens", max_length=int(config.model_kwargs.get("max_len", 200)))
    # The data seed stays fixed across run seeds so that every run (and `extract`) sees the same test rows.
    bundle = load_data(
        config.data,
        splits=(config.train_split, config.test_split),
        limit=config.limit,
        seed=config.data_seed,
        input_spec=input_spec,
        tokenizer=vocab,
    )
    train_split, test_split = bundle.splits[config.train_split], bundle.splits[config.test_split]
    num_classes = bundle.num_classes
    kwargs: dict[str, Any] = {"num_classes": num_classes, **config.model_kwargs}
    if vocab is not None:
        kwargs["vocab_size"] = vocab.size
    if config.arch in ("mlp", "cnn"):
        kwargs["init"] = config.init  # JointConfig refuses these two in model_kwargs: the fields decide
        if config.ln_eps is not None:
            kwargs["ln_eps"] = config.ln_eps
        sample = train_split.fetch(train_split.index[:1])
        if not isinstance(sample, Tensor) or sample.ndim != 4:
            raise InputError(
                f"zoo:{config.arch} takes images (N, C, H, W); dataset {config.data!r} gives "
                f"{type(sample).__name__} {tuple(getattr(sample, 'shape', ()))}"
            )
        kwargs.setdefault("in_shape", tuple(int(s) for s in sample.shape[1:]))
    tr_pos, va_pos = validation_split(train_split.labels, config.val_fraction, config.val_mode, config.data_seed)
    untrained = untrained_classes(train_split.labels, tr_pos, num_classes)
    va_pos, val_untrained = trained_validation(train_split.labels, tr_pos, va_pos, num_classes)
    with seeded(config.seed):
        backbone = build_zoo(config.arch, **kwargs)
        layer_names = DEFAULT_LAYERS[config.arch](backbone)
        with torch.no_grad():
            widths = [h.shape[1] for h in pooled_features(backbone.eval(), train_split.fetch(train_split.index[:2]))]
        hp = {k: getattr(config, k) for k in HEAD_HPARAMS}
        head = (
            None
            if config.head == "last"
            else build_head(config.head, widths, num_classes, **hp, untrained_classes=untrained)
        )
    held = class_mask(untrained, num_classes) if untrained else None
    model = JointModel(backbone, head, held if head is None else None).to(device)
    train, test = InputRows(train_split, device), InputRows(test_split, device)

    t0 = time.perf_counter()
    tag = {"stage": "joint", "run": 1, "runs": 1}
    history, stopper = train_loop(
        model,
        lambda g: train.batches(tr_pos, config.batch_size, g),
        lambda: train.batches(va_pos, 4 * config.batch_size),
        config.loop_settings(),
        name=config.head,
        emit=emit,
        tag=tag,
    )
    end = run_end(config.head, config.seed, stopper, history, tag)
    emit(end)
    preds, labels, weights, test_loss = predict(model, test.batches(np.arange(test_split.n), 4 * config.batch_size))
    metrics: dict[str, Any] = {
        **{k: v for k, v in end.items() if k not in ("event", *tag)},  # head, seed, its best epoch's numbers
        "test_acc": float((preds == labels).mean()),
        "test_macro_f1": macro_f1(labels, preds),
        "test_loss": test_loss,
        "n_train": int(len(tr_pos)),
        "n_val": int(len(va_pos)),
        **({"n_val_untrained_left_out": val_untrained} if val_untrained else {}),
        "n_test": int(test_split.n),
        "seconds": time.perf_counter() - t0,
        "device": str(device),  # what --device auto chose: the settings line names it
        # the options left at their defaults, so the settings line can say them apart from chosen ones
        "config_defaults": [n for n in defaulted(config) if n != "model_kwargs"],
        "not_used": not_used(config),
    }
    alpha_mean = weights.mean(axis=0).tolist() if weights is not None else None
    if alpha_mean is not None:
        metrics["test_mean_weights"] = dict(zip(layer_names, alpha_mean))

    if head is None:
        silence(_zoo(backbone).head, untrained)
        last_head = LastLayerHead(widths, num_classes, untrained_classes=untrained)
        last_head.classifier.load_state_dict(_zoo(backbone).head.state_dict())
        saved_head: Head = last_head
        metrics["backbone_head"] = "trained jointly (it is the 'last' head)"
    else:
        saved_head = head
        metrics["backbone_head"] = _probe(backbone, train, test, tr_pos, va_pos, config, untrained)
    metrics["chance"] = chance_level(labels)
    metrics["epoch_limit_reads"] = epoch_limit_reads(config.monitor)  # what the epoch-limit warning read
    metrics["warnings"] = _warnings(
        metrics, majority_f1=majority_macro_f1(labels), epochs=config.epochs, patience=config.patience, history=history
    )
    unlearnable = unlearnable_classes(train_split.labels[tr_pos], labels, bundle.class_names)
    metrics["warnings"] += [unlearnable] if unlearnable else []
    # What the data said (a class missing from a split, a label written two ways): printed and kept
    # here, not in `warnings`, which travels into every cache of this checkpoint, where extract reads
    # the data and says it again.
    metrics["data_warnings"] = list(bundle.warnings)
    training = {k: v for k, v in asdict(config).items() if k != "model_kwargs"}
    ckpt_extra = {
        "head": {
            "kind": saved_head.kind,
            "config": saved_head.config(),
            "layer_names": layer_names,
            "pooling": POOLING.get(config.arch, "none"),
            "state_dict": {k: v.detach().cpu() for k, v in saved_head.state_dict().items()},
        },
        "metrics": metrics,
        "data_spec": bundle.spec,
        "seed": config.seed,
        "tool_version": __version__,
        "training": training,
        "transforms": bundle.transforms,
        "split_info": plain(bundle.split_info),
        "history": history,
    }
    if vocab is not None:
        ckpt_extra["vocab"] = list(vocab.words)
    # Serialised in memory: torch's zip writer reports a full disk as a bare RuntimeError, while a
    # plain write of the bytes gives the OS error (and its errno) that files.atomic_path reports.
    buf = io.BytesIO()
    save_zoo_checkpoint(buf, backbone.cpu(), extra=plain(ckpt_extra))
    # Both files go to temporary names first; then the old metrics file is removed and the checkpoint
    # renamed over --out before its metrics: a full disk or a kill leaves neither file half written,
    # an old checkpoint (with --force) intact, and never a metrics file beside a checkpoint it does
    # not describe (at worst a checkpoint without its metrics file; the checkpoint holds them too).
    _check_out(path, config, overwrite)
    with atomic_paths(path, metrics_file) as (tmp, tmp_metrics):
        tmp.write_bytes(buf.getvalue())
        record = {
            "checkpoint": str(path),
            "model": config.model,
            "data": bundle.spec,
            "layer_names": layer_names,
            **metrics,
            "training": training,
            "history": history,
        }
        tmp_metrics.write_bytes(json_bytes(record))
        proof = take_record(path, "train", {path: tmp, metrics_file: tmp_metrics})
    put_record(path, proof)  # what --force checks: both files as train wrote them
    return JointResult(
        path=path,
        metrics_path=metrics_file,
        metrics=metrics,
        history=history,
        layer_names=layer_names,
        alpha_mean=alpha_mean,
    )


TRAIN_ADVICE = "train again with more --epochs, or a higher --lr"  # of the epoch-limit warning


def _warnings(
    metrics: dict[str, Any],
    *,
    majority_f1: float | None = None,
    epochs: int | None = None,
    patience: int | None = None,
    history: list[dict[str, float]] | None = None,
) -> list[str]:
    """fit-head's near-chance gate for the jointly trained model and for the backbone's own
    classifier: a backbone at chance makes every cache extracted from it garbage. Where the accuracy
    cannot tell (quality.not_learned), the warning points to the model's macro-F1 beside
    ``majority_f1``, always answering the majority class's. Given ``epochs`` (--epochs, the most each
    run could train), the advice offers more --epochs only to a run that used them all, as fit-head's does;
    with ``patience`` and the run's ``history`` too, fit-head's epoch-limit warning."""
    chance, n, acc = metrics["chance"], metrics["n_test"], metrics["test_acc"]
    said = not_learned("the model", acc, chance, f1=metrics.get("test_macro_f1"), majority_f1=majority_f1)
    runs = _ran(metrics, history)
    warns = [near_chance(acc, chance, said, n=n, runs=runs, epochs=epochs)]
    if runs is not None and history is not None:
        monitor, n_val = str(metrics.get("monitor", "loss")), int(metrics.get("n_val") or 0)
        warns.append(
            epoch_limit(runs, epochs, patience, advice=TRAIN_ADVICE, what="the model", monitor=monitor, n_val=n_val)
        )
    probe = metrics.get("backbone_head")
    if isinstance(probe, dict):
        # the probe is fitted to convergence on its own budget: at chance, it is the joint run's
        # backbone (its --lr, its --epochs) that did not learn a separable last block
        warns.append(near_chance(probe["test_acc"], chance, CLASSIFIER_NOT_LEARNED, n=n, runs=runs, epochs=epochs))
        if probe.get("converged") is False:
            warns.append(
                f"the backbone's own classifier (extract's model logits) did not converge in {probe['iterations']} "
                "L-BFGS iterations: its test accuracy may understate the last block"
            )
    return [w for w in warns if w]


def _ran(record: dict[str, Any], history: list[dict[str, float]] | None = None) -> list[SimpleNamespace] | None:
    """The one run of ``record`` as quality's gates read runs (.seed, .epochs_run, .best_epoch,
    .history), or None where the record does not say how many epochs it ran."""
    if record.get("epochs_run") is None:
        return None
    ran = int(record["epochs_run"])
    return [
        SimpleNamespace(seed=record.get("seed"), epochs_run=ran, best_epoch=record.get("best_epoch"), history=history)
    ]


SILENT_BIAS = -1e4  # the bias of a class the backbone's classifier never saw (its weights 0)


def silence(clf: nn.Module, untrained: list[int]) -> None:
    """Give each class of ``untrained`` (no training rows) a constant logit SILENT_BIAS in the backbone's
    own linear classifier, which the checkpoint stores and extract runs for the model's own logits: as
    the heads hold such a class down, its untrained output unit cannot win a row there either. A
    classifier that is not a linear layer with a bias is left as it is."""
    if not untrained or not isinstance(clf, nn.Linear) or clf.bias is None:
        return
    with torch.no_grad():
        clf.weight[untrained] = 0.0
        clf.bias[untrained] = SILENT_BIAS


PROBE_MAX_ITER = 500  # L-BFGS iterations: a linear probe on ≤ 54k rows converges well within them
PROBE_MAX_EVAL = 2 * PROBE_MAX_ITER  # loss evaluations (line-search steps included), a budget of its own
PROBE_C = 1.0  # inverse L2 strength, scikit-learn's default, as fit-head's layer probes use


def _probe(
    backbone: nn.Module,
    train: InputRows,
    test: InputRows,
    tr_pos: np.ndarray,
    va_pos: np.ndarray,
    config: JointConfig,
    untrained: list[int],
) -> dict[str, Any]:
    """Fit the backbone's own classifier on its frozen (pooled) last block, so its logits are meaningful;
    the classes with no training rows silenced (:func:`silence`). The fit has its own budget, not the
    joint run's --epochs/--lr: a short joint run would otherwise leave it near chance on a good block."""
    backbone.eval()

    @torch.no_grad()
    def last_block(rows: InputRows, pos: np.ndarray) -> tuple[Tensor, Tensor]:
        feats, ys = [], []
        for x, y in rows.batches(pos, 4 * config.batch_size):
            feats.append(pooled_features(backbone, x)[-1])
            ys.append(y)
        return torch.cat(feats), torch.cat(ys)

    (f_tr, y_tr), (f_va, y_va) = last_block(train, tr_pos), last_block(train, va_pos)
    clf = _zoo(backbone).head
    if not isinstance(clf, nn.Linear) or clf.bias is None:
        raise InputError(f"the backbone's own classifier is a {type(clf).__name__}, not a linear layer with a bias")
    iterations, converged = fit_linear(clf, f_tr, y_tr, untrained)
    silence(clf, untrained)
    f_te, y_te = last_block(test, np.arange(len(test.y)))
    with torch.no_grad():
        va_logits = clf(f_va)
        val_loss = float(nn.functional.cross_entropy(va_logits, y_va)) if len(y_va) else float("nan")
        val_acc = float((va_logits.argmax(1) == y_va).double().mean()) if len(y_va) else float("nan")
        test_acc = float((clf(f_te).argmax(1) == y_te).double().mean())
    return {
        "trained": "linear probe on the frozen last block, after joint training",
        "fit": PROBE_FIT,
        "iterations": iterations,
        "converged": converged,
        "val_acc": val_acc,
        "val_loss": val_loss,
        "test_acc": test_acc,
    }


PROBE_FIT = (
    f"multinomial logistic regression (L2, C={PROBE_C:g}) on standardised features, full-batch L-BFGS "
    f"for at most {PROBE_MAX_ITER} iterations; its own budget, not the joint run's --epochs or --lr"
)


def fit_linear(clf: nn.Linear, x: Tensor, y: Tensor, untrained: list[int]) -> tuple[int, bool]:
    """Fit ``clf`` to (``x``, ``y``) as scikit-learn's LogisticRegression(C=PROBE_C) would: in float64
    on standardised features, the scaling then folded into ``clf``'s weights, so ``clf`` reads the raw
    features as extract feeds them. The classes of ``untrained`` (no rows) stay out of the fit.
    Returns the L-BFGS iterations run and whether it converged: stopped on its tolerances, not on
    PROBE_MAX_ITER iterations or PROBE_MAX_EVAL loss evaluations (L-BFGS stops silently on either)."""
    keep = [c for c in range(clf.out_features) if c not in set(untrained)]
    x64 = x.detach().double()
    mean, std = x64.mean(0), x64.std(0, unbiased=False)
    std = torch.where(std > 1e-12, std, torch.ones_like(std))  # a constant feature: left unscaled
    z = (x64 - mean) / std
    target = torch.searchsorted(torch.tensor(keep, device=y.device), y)
    w = torch.zeros(len(keep), z.shape[1], dtype=torch.float64, device=z.device, requires_grad=True)
    b = torch.zeros(len(keep), dtype=torch.float64, device=z.device, requires_grad=True)
    l2 = 1.0 / (PROBE_C * max(len(y), 1))  # sklearn's sum-loss + ||w||²/(2C), divided by the rows
    opt = torch.optim.LBFGS(
        [w, b],
        max_iter=PROBE_MAX_ITER,
        max_eval=PROBE_MAX_EVAL,
        tolerance_grad=1e-7,
        tolerance_change=1e-10,
        line_search_fn="strong_wolfe",
    )

    def closure() -> Tensor:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(z @ w.T + b, target) + 0.5 * l2 * (w * w).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    iterations = int(opt.state[w].get("n_iter", 0))
    evaluations = int(opt.state[w].get("func_evals", 0))
    with torch.no_grad():
        scaled = w / std  # z = (x − mean)/std, so w·z + b = (w/std)·x + (b − (w/std)·mean)
        clf.weight[keep] = scaled.to(clf.weight.dtype)
        clf.bias[keep] = (b - scaled @ mean).to(clf.bias.dtype)
    return iterations, iterations < PROBE_MAX_ITER and evaluations < PROBE_MAX_EVAL
