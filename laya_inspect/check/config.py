"""`check planted`'s options (:class:`PlantedConfig`), free of torch so `--help` stays fast; the
library behind the command is planted.py, the definitions docs/METHOD.md ("The planted-layer check")."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ..options import check, option, seed_rule
from ..runtime import DEVICE_HELP, check_device

MAX_LAYERS = 16
# 250× the default 400; the rows are built in memory and every one is compared (IG, LOLO, sanity).
MAX_ROWS = 100_000


def default_signal_layer(layers: int) -> int:
    """The middle layer, (L − 1) // 2: never the last (the answer "the last layer" must not be right by
    default) and, from L = 3 on, not the first either (ties go to the lower layer index)."""
    return (layers - 1) // 2


@dataclass(frozen=True)
class PlantedConfig:
    """The construction (seed, layers, signal layer, noise, rows) and the device; written into summary.json."""

    seed: int = option(0, flag="--seed", help="seed of the backbone, the data, the heads and compare", always=True)
    layers: int = option(4, flag="--layers", help=f"tapped layers L, 2 … {MAX_LAYERS}", always=True)
    signal_layer: int | None = option(
        None,
        flag="--signal-layer",
        help="the layer 0 … L−1 that carries the label (default (L − 1) // 2: not the last, not the first)",
    )
    rows: int = option(
        400,
        flag="--rows",
        help=f"rows in each of the train and test splits (test rows are compared; 40 … {MAX_ROWS:,})",
    )
    noise: float = option(
        0.5,
        flag="--noise",
        help="within-class noise of the signal layer's input, in units of the class means' scale (> 0)",
    )
    device: str = option("auto", flag="--device", help=DEVICE_HELP, always=True)

    def __post_init__(self) -> None:
        check_device(self.device)
        check(
            self,
            [
                # well inside 2**64: the data streams' generators are seeded with 4·seed + 1 + stream
                seed_rule(self, limit=2**32),
                (2 <= self.layers <= MAX_LAYERS, "layers", f"must be a whole number from 2 to {MAX_LAYERS}"),
                (
                    self.signal_layer is None or 0 <= self.signal_layer < self.layers,
                    "signal_layer",
                    f"must be a layer index from 0 to {self.layers - 1} (--layers {self.layers})",
                ),
                (40 <= self.rows <= MAX_ROWS, "rows", f"must be a whole number from 40 to {MAX_ROWS:,}"),
                (math.isfinite(self.noise) and self.noise > 0, "noise", "must be a finite number > 0"),
            ],
        )

    @property
    def signal(self) -> int:
        """The signal layer's index, the default resolved."""
        return default_signal_layer(self.layers) if self.signal_layer is None else self.signal_layer

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "signal_layer_resolved": self.signal}
