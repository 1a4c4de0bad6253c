"""`check planted`'s options (:class:`PlantedConfig`), free of torch so `--help` stays fast; the
library behind the command is planted.py, the definitions docs/METHOD.md ("The planted-layer check")."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ..options import check, option, range_text, seed_rule
from ..runtime import DEVICE_HELP, check_device

MAX_LAYERS = 16
# 250× the default 400; the rows are built in memory and every one is compared (IG, LOLO, sanity).
MAX_ROWS = 100_000
# construction seeds in one run: each is a whole extract → fit-head → compare (seconds to minutes)
MAX_SEEDS = 20
SEED_LIMIT = 2**32  # well inside 2**64: the data streams' generators are seeded with 4·seed + 1 + stream


def default_signal_layer(layers: int) -> int:
    """The middle layer, (L − 1) // 2: never the last (the answer "the last layer" must not be right by
    default) and, from L = 3 on, not the first either (a rule that favours either end cannot find it by position)."""
    return (layers - 1) // 2


@dataclass(frozen=True)
class PlantedConfig:
    """The construction (seed, layers, signal layer, noise, rows) and the device; written into summary.json."""

    seed: int = option(0, flag="--seed", help="seed of the backbone, the data, the heads and compare", always=True)
    seeds: int = option(
        1,
        flag="--seeds",
        help=f"construction seeds to run: --seed, --seed + 1, …, each its own backbone, data, fit and compare; "
        f"a method passes only on every one (1 … {MAX_SEEDS})",
    )
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
                seed_rule(self, limit=SEED_LIMIT),
                (
                    isinstance(self.seeds, int) and 1 <= self.seeds <= MAX_SEEDS,
                    "seeds",
                    range_text(1, MAX_SEEDS) + " (construction seeds --seed, --seed + 1, …)",
                ),
                (
                    self.seed + self.seeds - 1 < SEED_LIMIT,
                    "seeds",
                    f"must keep the last seed --seed + --seeds − 1 below 2**32 (--seed {self.seed})",
                ),
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

    @property
    def construction_seeds(self) -> list[int]:
        """The seeds run: ``seed``, ``seed`` + 1, …, ``seed`` + ``seeds`` − 1."""
        return list(range(self.seed, self.seed + self.seeds))

    def to_dict(self) -> dict[str, Any]:
        """One construction, as summary.json's ``construction`` records it (the seeds run are its
        ``construction_seeds``)."""
        d = asdict(self)
        del d["seeds"]
        return {**d, "signal_layer_resolved": self.signal}
