"""fit-head's options: :class:`FitConfig` (each field declares its flag, help and default) and the
head-name resolution the command line uses. The library behind the command is fit_head.py."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..choices import HEAD_NAMES, PSI_CHOICES, STANDARDIZE_CHOICES, known
from ..errors import InputError
from ..options import check, option, seed_ok, seed_range, tuples
from .options import HEAD_HPARAMS, loop_settings, shared, training_rules

if TYPE_CHECKING:
    from .loop import LoopSettings


def _heads_argv(heads: tuple[str, ...]) -> str:
    return "all" if tuple(heads) == HEAD_NAMES else ",".join(heads)


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
        argv=_heads_argv,
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
