"""The seeds of the LAYA heads early-exit and prune read α from (docs/METHOD.md, "Early exit" and
"Prune", Seeds): one head, read with refit seeds 0 … --seeds−1, or each seed of a fit-head output
read with the refits of its own seed, so an interval over seeds covers α's fit as well as the refits."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..options import defaulted
from .common import held_out_rows
from .config import ExitConfig, PruneConfig


def refit_seeds(
    head_dirs: Sequence[Path], configs: Sequence[dict[str, Any]], config: ExitConfig | PruneConfig, command: str
) -> list[int]:
    """0 … --seeds−1 for one head; for several, each head's own recorded seed: seed s's refits are read
    with α of the head of seed s."""
    if len(head_dirs) == 1:
        return list(range(config.seeds))
    seeds = [c.get("seed") for c in configs]
    if not all(isinstance(s, int) for s in seeds) or len(set(seeds)) != len(seeds):
        raise InputError(
            f"{command} pairs each LAYA head's α with the refits of its seed, and {', '.join(map(str, head_dirs))} "
            f"record seeds {seeds}: give heads of distinct recorded seeds (fit-head's laya/seed_<S>/), or one head"
        )
    if "seeds" not in defaulted(config) and config.seeds != len(seeds):
        raise InputError(
            f"--seeds {config.seeds} with {len(seeds)} LAYA heads: the refit seeds are the heads' own "
            f"({', '.join(map(str, seeds))}); leave --seeds out, or give one head"
        )
    return seeds  # type: ignore[return-value]


def shared_held_out(
    head_dirs: Sequence[Path], configs: Sequence[dict[str, Any]], labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray, str]:
    """:func:`~.common.held_out_rows` of the first head, refused unless every head held out the same
    rows: the refits of every seed stop on one set of held-out rows."""
    train_rows, val_rows, how = held_out_rows(configs[0], labels)
    for d, c in zip(head_dirs[1:], configs[1:]):
        if not np.array_equal(held_out_rows(c, labels)[1], val_rows):
            raise InputError(
                f"{d} held out other train rows than {head_dirs[0]}: the refits of every seed stop on one set of "
                "held-out rows; give the heads of one fit-head run"
            )
    return train_rows, val_rows, how
