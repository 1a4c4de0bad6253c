"""The options of `fit-head` and `train`: :class:`FitConfig`, :class:`JointConfig` and the fields they
share (each declared once: flag, help, default), with the head-name resolution the command line uses.
Kept free of torch so that `--help` stays fast; the libraries behind the commands are fit_head.py and
joint.py."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..choices import HEAD_NAMES, INITS, LOSSES, MONITORS, PSI_CHOICES, STANDARDIZE_CHOICES, VAL_MODES, known
from ..errors import InputError
from ..options import SKLEARN_SEED_LIMIT, check, field_of, option, seed_ok, seed_range, seed_rule, tuples
from ..runtime import DEVICE_HELP, THREADS_FLAG, THREADS_HELP, check_device

if TYPE_CHECKING:
    from .loop import LoopSettings

_SHARED: dict[str, dict[str, Any]] = {
    "lr": dict(default=3e-4, flag="--lr", help="Adam learning rate"),
    "batch_size": dict(default=128, flag="--batch-size", help="training batch size"),
    "epochs": dict(default=50, flag="--epochs", help="at most this many epochs", always=True),
    "patience": dict(
        default=5, flag="--patience", help="early stopping: epochs without a new best validation --monitor"
    ),
    "monitor": dict(
        default="loss",
        flag="--monitor",
        choices=MONITORS,
        help="early stopping watches validation loss (lower is better) or acc (higher); ties go to the "
        "other; the best epoch's weights are kept",
    ),
    "weight_decay": dict(default=0.0, flag="--weight-decay", help="Adam weight decay (L2 penalty), ≥ 0"),
    "val_fraction": dict(default=0.1, flag="--val-fraction", help="share of the training split held out"),
    "val_mode": dict(
        default="stratified",
        flag="--val-mode",
        choices=VAL_MODES,
        help="stratified (a seeded draw per class) | last (the last rows, as Keras)",
    ),
    "device": dict(default="auto", flag="--device", help=DEVICE_HELP, always=True),
    "threads": dict(default=None, flag=THREADS_FLAG, help=THREADS_HELP),
    "d_star": dict(default=96, flag="--d-star", help="adapter width d* (laya, concat, scalarmix)"),
    "tau": dict(default=1.5, flag="--tau", help="LAYA softmax temperature τ > 0"),
    "psi": dict(default="identity", flag="--psi", help="LAYA shared map ψ: identity | mlp"),
    "score_width": dict(default=None, flag="--score-width", help="LAYA scorer hidden width (default 2·d*)"),
    "init": dict(
        default="glorot",
        flag="--init",
        help="glorot (Keras' glorot-uniform, zero bias: the paper's) | torch (PyTorch's own defaults)",
    ),
}


def shared(name: str, **changes: Any) -> Any:
    """The field of a shared option (``changes`` override its declaration, e.g. ``always=True``)."""
    return option(**{**_SHARED[name], **changes})


HEAD_HPARAMS = ("d_star", "tau", "psi", "score_width", "init")  # the head options fit-head and train share


def loop_settings(cfg: Any, **run: Any) -> LoopSettings:
    """The training loop's settings: a config's shared options, and ``run``'s epochs, patience, seed (loss)."""
    from .loop import LoopSettings

    return LoopSettings(lr=cfg.lr, weight_decay=cfg.weight_decay, monitor=cfg.monitor, **run)


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def training_rules(cfg: Any) -> list[tuple[bool, str, str]]:
    """The rules `fit-head` and `train` share, for :func:`laya_inspect.options.check` (NaN and ±inf
    fail every rule on a float: they would train to chance and exit 0)."""
    check_device(cfg.device)
    return [
        # Adam moves each weight by about lr per step: beyond 1 a run can only diverge.
        (finite(cfg.lr) and 0 < cfg.lr <= 1, "lr", "must be a number in (0, 1]"),
        (finite(cfg.weight_decay) and cfg.weight_decay >= 0, "weight_decay", "must be a finite number ≥ 0"),
        (cfg.monitor in MONITORS, "monitor", f"must be one of {', '.join(MONITORS)}"),
        (cfg.batch_size >= 1, "batch_size", "must be ≥ 1"),
        (cfg.epochs is None or cfg.epochs >= 1, "epochs", "must be ≥ 1"),
        (cfg.patience is None or cfg.patience >= 1, "patience", "must be ≥ 1"),
        (0 < cfg.val_fraction < 1, "val_fraction", "must be in (0, 1)"),
        (cfg.val_mode in VAL_MODES, "val_mode", f"must be one of {', '.join(VAL_MODES)}"),
        (cfg.d_star >= 1, "d_star", "must be ≥ 1"),
        (finite(cfg.tau) and cfg.tau > 0, "tau", "must be a finite number > 0"),
        (cfg.psi in PSI_CHOICES, "psi", f"must be one of {', '.join(PSI_CHOICES)}"),
        (cfg.score_width is None or cfg.score_width >= 1, "score_width", "must be ≥ 1"),
        (cfg.init in INITS, "init", f"must be one of {', '.join(INITS)}"),
    ]


def _seeds_argv(seeds: tuple[int, ...]) -> str:
    if tuple(seeds) != tuple(range(len(seeds))):
        raise ValueError(f"fit-head takes seeds 0 … N−1 (--seeds N), not {list(seeds)}")
    return str(len(seeds))


# The training budget counts optimizer steps, not passes over the data: a head on 1,200 rows takes
# 10 steps an epoch, and 50 epochs of them leave a linear head far from converged.
EPOCHS, PATIENCE = 50, 5
MIN_STEPS, PATIENCE_STEPS = 4000, 400


@dataclass(frozen=True)
class FitConfig:
    """Everything a fit depends on; written into every output. Sequences are stored as tuples."""

    heads: tuple[str, ...] = option(
        ("laya", "last", "concat", "scalarmix"),
        flag="--head",
        help="laya | last | concat | scalarmix | all; repeat or comma-separate",
        always=True,
        argv=lambda heads: "all" if tuple(heads) == HEAD_NAMES else ",".join(heads),
    )
    seeds: tuple[int, ...] = option(
        (0, 1, 2, 3, 4), flag="--seeds", help="run seeds 0 … N−1 (default 5)", always=True, argv=_seeds_argv
    )
    d_star: int = shared("d_star", always=True)
    tau: float = shared("tau", always=True)
    psi: str = shared("psi")
    score_width: int | None = shared("score_width")
    lr: float = shared("lr", default=1e-3, help="Adam learning rate (the heads see standardised features)")
    batch_size: int = shared("batch_size")
    epochs: int | None = shared(
        "epochs",
        default=None,
        help=f"at most this many epochs (default {EPOCHS}, or as many as give {MIN_STEPS:,} optimizer steps on a "
        "small training set)",
    )
    patience: int | None = shared(
        "patience",
        default=None,
        help=f"early stopping: epochs without a new best validation --monitor (default {PATIENCE}, or as many as "
        f"give {PATIENCE_STEPS} optimizer steps on a small training set)",
    )
    monitor: str = shared("monitor")
    weight_decay: float = shared(
        "weight_decay", default=1e-2, help="Adam weight decay (L2 penalty) on the heads' weight matrices, ≥ 0"
    )
    standardize: str = option(
        "feature",
        flag="--standardize",
        choices=STANDARDIZE_CHOICES,
        help="inputs scaled inside the head with training statistics: feature (mean and std per feature) | "
        "layer (mean per feature, one std per layer) | none (raw features)",
    )
    probe: bool = option(
        True,
        flag="--probe/--no-probe",
        help="fit a logistic-regression probe on each layer: the quality gate's reference",
    )
    svg: bool = option(False, flag="--svg", help="also write each plot as SVG (PNG always)")
    val_fraction: float = shared("val_fraction")
    val_mode: str = shared("val_mode")
    split_seed: int = option(
        0,
        flag="--split-seed",
        help="seed of the stratified validation draw (the same for every head and seed: paired runs)",
    )
    init: str = "glorot"
    device: str = shared("device")
    threads: int | None = shared("threads")
    workers: int | None = option(
        None,
        flag="--workers",
        help="(head, seed) runs at once on CPU, each in a forked process (default: usable CPUs ÷ --threads, "
        "at most the runs; 1 = one after another); results do not depend on it",
    )
    grid: bool = option(
        False,
        flag="--grid",
        help="first pick LAYA's d*, τ, ψ, width by the lowest mean validation loss "
        "(with --monitor acc: the best mean validation accuracy)",
    )
    grid_d_star: tuple[int, ...] = option((64, 96, 128), flag="--grid-d-star", help="grid d* values")
    grid_tau: tuple[float, ...] = option((0.5, 1.0, 1.5), flag="--grid-tau", help="grid τ values")
    grid_psi: tuple[str, ...] = option(("identity", "mlp"), flag="--grid-psi", help="grid ψ values")
    grid_width_factors: tuple[int, ...] = option(
        (1, 2), flag="--grid-width", help="grid scorer widths as multiples of d*"
    )
    grid_seeds: int = option(3, flag="--grid-seeds", help="seeds per grid configuration (the first of the run's seeds)")
    layers: str = option(
        "all",
        flag="--layers",
        help="the cache's layers the heads read: names, indices, ranges a:b (comma-separated) or all; "
        "compare and the other commands then read those layers of the cache too",
    )
    train_split: str = option("train", flag="--train-split", help="split the heads are trained on")
    test_split: str = option("test", flag="--test-split", help="split the heads are tested on")
    in_memory: bool | None = None  # None: load the cache when it fits in a quarter of available RAM

    def __post_init__(self) -> None:
        tuples(self)
        if not self.heads:
            raise InputError(f"no head to fit; choose from {', '.join(HEAD_NAMES)}")
        for h in self.heads:
            known("head", h, HEAD_NAMES)
        rules = [
            (len(set(self.heads)) == len(self.heads), "heads", "names a head twice"),
            (bool(self.seeds) and len(set(self.seeds)) == len(self.seeds), "seeds", "must be distinct, at least one"),
            *training_rules(self),
            (seed_ok(self.split_seed), "split_seed", seed_range()),
            # the CLI checks --seed; the Python API's seeds reach torch and numpy deep inside a worker
            (all(seed_ok(s) for s in self.seeds), "seeds", seed_range()),
            # a head tested on its training split reports training accuracy as test accuracy
            (self.test_split != self.train_split, "test_split", "must be another split than --train-split"),
            (self.threads is None or self.threads >= 1, "threads", "must be a whole number ≥ 1"),
            (self.workers is None or self.workers >= 1, "workers", "must be a whole number ≥ 1"),
            (
                self.standardize in STANDARDIZE_CHOICES,
                "standardize",
                f"must be one of {', '.join(STANDARDIZE_CHOICES)}",
            ),
        ]
        if self.grid:
            rules += [
                ("laya" in self.heads, "heads", "must include laya: --grid searches LAYA's hyper-parameters"),
                (bool(self.grid_d_star) and min(self.grid_d_star) >= 1, "grid_d_star", "values must be ≥ 1"),
                (
                    bool(self.grid_tau) and all(math.isfinite(t) and t > 0 for t in self.grid_tau),
                    "grid_tau",
                    "values must be finite numbers > 0",
                ),
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
        return {k: getattr(self, k) for k in (*HEAD_HPARAMS, "standardize")}

    def budget(self, n_train: int) -> tuple[int, int]:
        """(epochs, patience) for ``n_train`` training rows: the given values, or the defaults (50, 5)
        raised to MIN_STEPS and PATIENCE_STEPS optimizer steps (docs/METHOD.md, "Training")."""
        steps = max(1, math.ceil(n_train / self.batch_size))
        epochs = self.epochs if self.epochs is not None else max(EPOCHS, math.ceil(MIN_STEPS / steps))
        patience = self.patience if self.patience is not None else max(PATIENCE, math.ceil(PATIENCE_STEPS / steps))
        return epochs, patience

    def loop_settings(self, seed: int, n_train: int) -> LoopSettings:
        epochs, patience = self.budget(n_train)
        return loop_settings(self, epochs=epochs, patience=patience, seed=seed)

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def resolve_heads(names: Sequence[str]) -> tuple[str, ...]:
    """Expand comma lists and 'all'; keep the order given; unknown names raise NotFoundError."""
    out: list[str] = []
    for item in names:
        for name in (s.strip() for s in str(item).split(",")):
            if not name:
                continue
            for n in HEAD_NAMES if name == "all" else [name]:
                known("head", n, HEAD_NAMES)
                if n not in out:
                    out.append(n)
    return tuple(out)


JOINT_HEADS = ("last", "laya", "concat", "scalarmix")
POOLING = {"mlp": "none", "cnn": "gap", "bilstm": "last"}  # how each arch's block outputs become vectors


@dataclass(frozen=True)
class JointConfig:
    model: str = option("zoo:mlp", flag="--model", help="zoo:mlp | zoo:cnn | zoo:bilstm", always=True)
    data: str = option(
        "fashion-mnist",
        flag="--data",
        always=True,
        help=(
            "dataset spec, e.g. fashion-mnist, cifar10, digits; image files of one size, imagefolder:DIR or "
            "imagecsv:FILE (listed in a CSV, TSV or JSONL), for zoo:mlp and zoo:cnn; a text table csv:FILE or "
            "jsonl:FILE for zoo:bilstm"
        ),
    )
    head: str = option(
        "last", flag="--head", always=True, help="last (the backbone's own classifier) | laya | concat | scalarmix"
    )
    seed: int = option(0, flag="--seed", help="initialisation and shuffling seed", always=True)
    lr: float = shared("lr")
    batch_size: int = shared("batch_size")
    epochs: int = shared("epochs")
    patience: int = shared("patience")
    monitor: str = shared("monitor")
    weight_decay: float = shared("weight_decay")
    val_fraction: float = shared("val_fraction")
    val_mode: str = shared("val_mode")
    limit: int | None = option(
        None, flag="--limit", help="at most this many rows per split (seeded, stratified)", always=True
    )
    device: str = shared("device")
    threads: int | None = shared("threads")
    d_star: int = shared("d_star")
    tau: float = shared("tau")
    psi: str = shared("psi")
    score_width: int | None = shared("score_width")
    train_split: str = "train"
    test_split: str = "test"
    data_seed: int = 0  # the dataset's own seeded split/subset; extract's --seed must match it
    init: str = shared("init")  # backbone and head initialisation
    ln_eps: float | None = option(None, flag="--ln-eps", help="the backbone's LayerNorm ε (default 1e-3, Keras')")
    loss: str = option(
        "logits",
        flag="--loss",
        help="logits (cross-entropy on logits) | probs (Keras' loss on "
        "clipped softmax probabilities, as the reference notebook)",
    )
    model_kwargs: dict[str, Any] = field(default_factory=dict)  # e.g. {"hidden": [512, 256, 128]}

    def __post_init__(self) -> None:
        tuples(self)
        prefix, _, name = self.model.partition(":")
        # These keys have their own fields, which train records and init also gives the head: a second
        # way in model_kwargs would silently win over the field for the backbone alone.
        twice = [k for k in ("init", "ln_eps") if k in self.model_kwargs]
        check(
            self,
            [
                (
                    prefix == "zoo" and bool(name),
                    "model",
                    "is not a zoo backbone; train builds zoo backbones: zoo:mlp | zoo:cnn | zoo:bilstm",
                ),
                (self.head in JOINT_HEADS, "head", f"must be one of {', '.join(JOINT_HEADS)}"),
                *training_rules(self),
                (self.threads is None or self.threads >= 1, "threads", "must be a whole number ≥ 1"),
                seed_rule(self),
                seed_rule(self, "data_seed", limit=SKLEARN_SEED_LIMIT),  # scikit-learn's random_state
                (
                    self.ln_eps is None or (finite(self.ln_eps) and self.ln_eps > 0),
                    "ln_eps",
                    "must be a finite number > 0",
                ),
                (self.loss in LOSSES, "loss", f"must be one of {', '.join(LOSSES)}"),
                (
                    not twice,
                    "model_kwargs",
                    f"must not set {', '.join(twice)}: give JointConfig's own field of that name instead "
                    f"({', '.join(field_of(self, k).metadata['flag'] for k in twice)} on the command line)",
                ),
                (
                    # The data decides the class count; a second one here would build a backbone whose
                    # output disagrees with the labels it is trained on.
                    "num_classes" not in self.model_kwargs,
                    "model_kwargs",
                    "must not set num_classes: train takes the class count from the data",
                ),
            ],
        )

    @property
    def arch(self) -> str:
        return self.model.partition(":")[2]

    def loop_settings(self) -> LoopSettings:
        return loop_settings(self, epochs=self.epochs, patience=self.patience, seed=self.seed, loss=self.loss)
