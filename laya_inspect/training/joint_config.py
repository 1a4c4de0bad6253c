"""train's options: :class:`JointConfig`, kept free of torch so that `--help` stays fast. The library
behind the command is joint.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..choices import LOSSES
from ..options import SKLEARN_SEED_LIMIT, check, option, seed_rule, tuples
from .options import finite, loop_settings, shared, training_rules

if TYPE_CHECKING:
    from .loop import LoopSettings

JOINT_HEADS = ("last", "laya", "concat", "scalarmix")
POOLING = {"mlp": "none", "cnn": "gap", "bilstm": "last"}  # how each arch's block outputs become vectors


@dataclass(frozen=True)
class JointConfig:
    model: str = option("zoo:mlp", flag="--model", help="zoo:mlp | zoo:cnn | zoo:bilstm", always=True)
    data: str = option(
        "fashion-mnist",
        flag="--data",
        always=True,
        help="dataset spec, e.g. fashion-mnist, cifar10, digits; a text table csv:FILE or jsonl:FILE for zoo:bilstm",
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
            ],
        )

    @property
    def arch(self) -> str:
        return self.model.partition(":")[2]

    def loop_settings(self) -> LoopSettings:
        return loop_settings(self, epochs=self.epochs, patience=self.patience, seed=self.seed, loss=self.loss)
