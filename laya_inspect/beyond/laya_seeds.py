"""The seeds of the LAYA heads early-exit and prune read α from (docs/METHOD.md, "Early exit" and
"Prune", Seeds): one head, read with refit seeds 0 … --seeds−1, or each seed of a fit-head output
read with the refits of its own seed, so an interval over seeds covers α's fit as well as the refits."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..cache.store import FeatureStore
from ..errors import InputError
from ..heads import Head
from ..options import defaulted
from .common import held_out_rows, open_weighted_head
from .config import ExitConfig, PruneConfig


def open_laya_heads(
    head_dirs: Sequence[Path], store: FeatureStore, config: ExitConfig | PruneConfig, command: str, refit: bool = True
) -> tuple[list[Head], list[dict[str, Any]], list[int], np.ndarray, np.ndarray, str]:
    """The heads of ``head_dirs`` (:func:`~.common.open_weighted_head`; the first on at least 2 layers), their
    config.json, the refit seeds (``refit=False``: --seed) and the train and held-out rows every refit shares."""
    opened = [
        open_weighted_head(
            d, store, command=command, allow_other_cache=config.allow_other_cache, test_split=config.test_split
        )
        for d in head_dirs
    ]
    heads, configs = [h for h, _ in opened], [c for _, c in opened]
    if heads[0].num_layers < 2:
        raise InputError(f"{command} needs a head on at least 2 layers; {head_dirs[0]} reads {heads[0].num_layers}")
    seeds = refit_seeds(head_dirs, configs, config, command) if refit else [config.seed]
    rows = shared_held_out(head_dirs, configs, np.asarray(store.labels(config.train_split), dtype=np.int64))
    return heads, configs, seeds, *rows


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
    _one_run(head_dirs, configs)
    return train_rows, val_rows, how


# what a head's config.json records of its own fit, not of the run's settings (fit-head's save_run); the
# device changes no setting the refits take (they run on the command's own --device)
PER_SEED = ("seed", "history", "metrics", "device")


def _flat(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """config.json's settings as {"training.lr": 0.001, …}, the per-seed records left out."""
    out: dict[str, Any] = {}
    for k, v in config.items():
        if prefix or k not in PER_SEED:
            out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def _one_run(head_dirs: Sequence[Path], configs: Sequence[dict[str, Any]]) -> None:
    """Refused unless every head records the first's settings but for its seed: the refits of every seed
    take the first head's d*, τ, learning rate, weight decay and epochs."""
    first = _flat(configs[0])
    for d, c in zip(head_dirs[1:], configs[1:]):
        other = _flat(c)
        keys = sorted(k for k in first.keys() | other.keys() if first.get(k) != other.get(k))
        if keys:
            differ = "; ".join(f"{k} {first.get(k)!r} vs {other.get(k)!r}" for k in keys)
            raise InputError(
                f"{head_dirs[0]} and {d} record other settings than their seed ({differ}): the refits of every "
                "seed take the first head's; give the heads of one fit-head run"
            )
