"""Options of prune, early-exit and diagnose (:class:`PruneConfig`, :class:`ExitConfig`,
:class:`DiagnoseConfig`) and of their refits (:class:`Budget`), kept free of torch and numpy so that
`--help` stays fast. The commands themselves are prune.py, early_exit.py and diagnose.py."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from ..options import MAX_RESAMPLES, check, option, range_text, seed_rule, tuples, within
from ..runtime import DEVICE_HELP, THREADS_FLAG, THREADS_HELP, check_device

COST_CHOICES = ("auto", "model", "shapes")

# Options every beyond command shares, declared once; each command says what its --seed and splits are for.
_COMMON: dict[str, dict[str, Any]] = {
    "seed": dict(default=0, flag="--seed"),
    "train_split": dict(default="train", flag="--train-split"),
    "test_split": dict(default="test", flag="--test-split"),
    "device": dict(default="auto", flag="--device", help=DEVICE_HELP),
    "allow_other_cache": dict(
        default=False, flag="--allow-other-cache", help="use a head trained on a cache with another fingerprint"
    ),
    "plots": dict(default=True, flag="--plots/--no-plots", help="write plots/ (PNG)"),
    "threads": dict(default=None, flag=THREADS_FLAG, help=THREADS_HELP),
    "workers": dict(
        default=None,
        flag="--workers",
        help="refits at once on CPU, each in a forked process (default: usable CPUs ÷ --threads, at most the "
        "refits; 1 = one after another); results do not depend on it",
    ),
    "costs": dict(
        default="auto",
        flag="--costs",
        choices=COST_CHOICES,
        help="backbone compute: model (count the cached model) | shapes (estimate from the cache) | auto",
    ),
}


def common(name: str, **changes: Any) -> Any:
    """The field of an option the beyond commands share (``changes`` override its declaration)."""
    return option(**{**_COMMON[name], **changes})


def _check(config: Any, rules: list[tuple[bool, str, str]]) -> None:
    """--device, then ``rules``, then the rules of the shared options --seed, --costs, --threads and --workers."""
    check_device(config.device)
    rules.append(seed_rule(config))
    # what is fitted on a split (refits, per-depth heads, the score combinations) is not tested on it
    rules.append((config.test_split != config.train_split, "test_split", "must be another split than --train-split"))
    if hasattr(config, "costs"):
        rules.append((config.costs in COST_CHOICES, "costs", f"must be one of {', '.join(COST_CHOICES)}"))
    for name in ("threads", "workers"):
        value = getattr(config, name, None)  # diagnose has no --workers
        rules.append((value is None or value >= 1, name, "must be a whole number ≥ 1"))
    check(config, rules)


# Optimizer steps the default budget reaches: a few passes over a large split, many over a small one.
REFIT_STEPS = 500
MIN_EPOCHS = 3


@dataclass(frozen=True)
class Budget:
    """How each refit trains; ``epochs``/``patience`` None: the default rule (:meth:`resolve`)."""

    epochs: int | None = option(
        None,
        flag="--epochs",
        help=f"at most this many epochs per refit (default: as many as give {REFIT_STEPS} optimizer steps, "
        f"at least {MIN_EPOCHS})",
    )
    patience: int | None = option(
        None, flag="--patience", help="early stopping patience per refit (default: a fifth of the epochs, ≥ 2)"
    )
    lr: float = option(3e-3, flag="--lr", help="Adam learning rate of the refits")
    weight_decay: float | None = option(
        None,
        flag="--weight-decay",
        help="Adam weight decay (L2 penalty) of the refits (default: the given head's, from its config.json; "
        "fit-head's 0.01 where it records none)",
    )
    batch_size: int = option(128, flag="--batch-size", help="training batch size of the refits")
    train_limit: int | None = option(
        None, flag="--train-limit", help="refit on at most N seeded training rows (default: all)"
    )

    def __post_init__(self) -> None:
        check(
            self,
            [
                (self.epochs is None or self.epochs >= 1, "epochs", "must be ≥ 1"),
                (self.patience is None or self.patience >= 1, "patience", "must be ≥ 1"),
                (math.isfinite(self.lr) and 0 < self.lr <= 1, "lr", "must be a number in (0, 1]"),
                (
                    self.weight_decay is None or (math.isfinite(self.weight_decay) and self.weight_decay >= 0),
                    "weight_decay",
                    "must be a finite number ≥ 0",
                ),
                (self.batch_size >= 1, "batch_size", "must be ≥ 1"),
                (self.train_limit is None or self.train_limit >= 10, "train_limit", "must be ≥ 10"),
            ],
        )

    def resolve(self, n_train: int) -> tuple[int, int]:
        """(epochs, patience) for ``n_train`` training rows."""
        steps = max(1, math.ceil(n_train / self.batch_size))
        epochs = self.epochs if self.epochs is not None else max(MIN_EPOCHS, math.ceil(REFIT_STEPS / steps))
        patience = self.patience if self.patience is not None else max(2, epochs // 5)
        return epochs, patience

    def for_head(self, head_config: dict[str, Any]) -> Budget:
        """This budget with ``weight_decay`` set: the given one, else the given head's recorded one.
        A refit without the head's weight decay can fall far short of it (it overfits in a few epochs
        on a few hundred rows), and prune's and early-exit's every comparison would then be between
        under-trained heads."""
        if self.weight_decay is not None:
            return self
        from ..head_dir import training_settings

        return replace(self, weight_decay=float(training_settings(head_config)["weight_decay"]))


NO_REFIT_ABLATIONS = ("drop", "mean", "zero")
K_SEARCHES = ("coarse", "every")
# A sweep of 10,000 points resolves thresholds 250× finer than the default 41 and keeps each seed's
# points (a few hundred bytes each, per rule) well under a gigabyte.
MAX_THRESHOLDS = 10_000


@dataclass(frozen=True)
class PruneConfig:
    refit: bool = option(
        True,
        flag="--refit/--no-refit",
        help="refit a head on each layer set (default), or only re-evaluate the given head with the other "
        "layers removed (--ablation)",
    )
    seeds: int = option(3, flag="--seeds", help="refit seeds 0 … N−1 (intervals over seeds)")
    ks: tuple[int, ...] = option(
        (),
        flag="--ks",
        help="layer counts k to evaluate, a comma list (default: --search's k; L is always added)",
    )
    search: str = option(
        "coarse",
        flag="--search",
        choices=K_SEARCHES,
        help="without --ks, under --refit: coarse (refit every ranking at k = 1, 2, 3, 4, 6, 8, 12, 16, … and L, "
        "then at every k below each ranking's smallest one within --max-drop: the same picks as every) | every "
        "(every k = 1 … L: slower)",
    )
    max_drop: float = option(
        0.005,
        flag="--max-drop",
        help="largest loss of mean validation accuracy the chosen layer set may cost; a pick is withheld "
        "unless validation resolves it (at least 1/max-drop rows: 200 at 0.005); 0 keeps only a set whose validation "
        "accuracy is no lower than all layers' on any seed, nor its mean test accuracy",
    )
    ablation: str = option(
        "drop",
        flag="--ablation",
        choices=NO_REFIT_ABLATIONS,
        help="--no-refit only: how the dropped layers are removed (drop: α renormalised over the kept layers)",
    )
    rank_rows: int = option(2000, flag="--rank-rows", help="train rows (seeded) the rankings are computed on")
    costs: str = common("costs")
    seed: int = common("seed", help="seed of the row draws (--rank-rows, --train-limit)")
    train_split: str = common("train_split", help="split the rankings and refits use")
    test_split: str = common("test_split", help="split the accuracies are reported on")
    device: str = common("device")
    threads: int | None = common("threads")
    workers: int | None = common("workers")
    allow_other_cache: bool = common("allow_other_cache")
    plots: bool = common("plots")

    def __post_init__(self) -> None:
        tuples(self)
        _check(
            self,
            [
                (self.seeds >= 1, "seeds", "must be ≥ 1"),
                (all(k >= 1 for k in self.ks), "ks", "must be layer counts ≥ 1"),
                (math.isfinite(self.max_drop) and 0 <= self.max_drop < 1, "max_drop", "must be in [0, 1)"),
                (self.search in K_SEARCHES, "search", f"must be one of {', '.join(K_SEARCHES)}"),
                (self.ablation in NO_REFIT_ABLATIONS, "ablation", f"must be one of {', '.join(NO_REFIT_ABLATIONS)}"),
                (self.rank_rows >= 10, "rank_rows", "must be ≥ 10"),
            ],
        )


@dataclass(frozen=True)
class ExitConfig:
    seeds: int = option(3, flag="--seeds", help="seeds 0 … N−1 of the per-depth heads (intervals over seeds)")
    epsilon: float = option(
        0.05, flag="--epsilon", help="confidence+alpha: also exit when α's mass beyond the depth is below ε"
    )
    thresholds: int = option(
        41, flag="--thresholds", help=f"points of each rule's threshold sweep (3 … {MAX_THRESHOLDS:,})"
    )
    costs: str = common("costs")
    seed: int = common("seed", help="seed of the --train-limit row draw")
    train_split: str = common("train_split", help="split the per-depth heads are fitted on")
    test_split: str = common("test_split", help="split the exits are simulated on")
    device: str = common("device")
    threads: int | None = common("threads")
    workers: int | None = common("workers")
    allow_other_cache: bool = common("allow_other_cache")
    plots: bool = common("plots")

    def __post_init__(self) -> None:
        _check(
            self,
            [
                (self.seeds >= 1, "seeds", "must be ≥ 1"),
                (math.isfinite(self.epsilon) and 0 <= self.epsilon <= 1, "epsilon", "must be in [0, 1]"),
                (within(self.thresholds, 3, MAX_THRESHOLDS), "thresholds", range_text(3, MAX_THRESHOLDS)),
            ],
        )


@dataclass(frozen=True)
class DiagnoseConfig:
    permutations: int = option(
        1000, flag="--permutations", help=f"permutations of the shift test (1 … {MAX_RESAMPLES:,})"
    )
    n_boot: int = option(
        1000, flag="--bootstrap", help=f"bootstrap resamples of the AUROC intervals (one head; 0 … {MAX_RESAMPLES:,})"
    )
    seed: int = common("seed", help="seed of the permutations and the bootstrap")
    train_split: str = common("train_split", help="split the class means ᾱ_c and the fits use")
    test_split: str = common("test_split", help="split the scores are measured on (both caches)")
    device: str = common("device")
    threads: int | None = common("threads")
    allow_other_cache: bool = common("allow_other_cache", help="use heads trained on a cache with another fingerprint")
    plots: bool = common("plots")

    def __post_init__(self) -> None:
        _check(
            self,
            [
                (within(self.permutations, 1, MAX_RESAMPLES), "permutations", range_text(1, MAX_RESAMPLES)),
                (within(self.n_boot, 0, MAX_RESAMPLES), "n_boot", range_text(0, MAX_RESAMPLES)),
            ],
        )
