"""The ScalarMix heads prune ranks layers by (docs/METHOD.md, "Prune", Seeds): a fit-head scalarmix folder
gives one head per seed, each paired with the refits of the same seed; one seed folder gives one head,
read at every refit seed, which is warned about (its ranking then holds none of ScalarMix's own spread)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..cache.store import FeatureStore
from ..errors import InputError
from ..head_dir import read_head_config
from ..heads import ScalarMixHead
from ..training.stats import counted_list
from .common import open_weighted_head
from .rankings import Ranking, by_scalarmix, near_ties, order_of


@dataclass
class ScalarMixSeeds:
    given: Path
    dirs: list[Path]  # the heads read, one per ScalarMix seed used
    heads: list[ScalarMixHead]
    by_refit_seed: dict[int, int]  # refit seed → index of the head whose ranking is refit at it
    how: str  # how the ScalarMix seeds pair with the refit seeds
    warnings: list[str]

    @property
    def one_seed(self) -> bool:
        return len(self.heads) == 1


def scalarmix_dirs(path: str | Path) -> list[Path]:
    """The scalarmix head directories of ``path``: itself (a head directory), or the seed_<S>/ folders of a
    fit-head scalarmix folder, or of a whole fit-head output. Anything else is refused."""
    from ..compare.seeds import expand_head_dirs

    found = expand_head_dirs([path])
    kinds = {d: read_head_config(d).get("kind") for d in found}
    dirs = [d for d, kind in kinds.items() if kind == "scalarmix"]
    if not dirs:
        held = ", ".join(sorted({str(k) for k in kinds.values()}))
        raise InputError(
            f"--scalarmix {path} holds no scalarmix head ({held}); give a scalarmix head directory: fit-head's "
            "scalarmix folder (every seed_<S>/ read) or one of its seed_<S>/ folders"
        )
    return dirs


def open_scalarmix(
    path: str | Path, dirs: Sequence[Path], store: FeatureStore, seeds: Sequence[int], allow_other_cache: bool
) -> ScalarMixSeeds:
    """The heads of ``dirs`` (:func:`scalarmix_dirs`) paired with the refit ``seeds``: refit seed s reads the
    ScalarMix head that recorded seed s. Refused where a refit seed has none, or the heads record no or repeated
    seeds; one head is read at every refit seed, with a warning."""
    opened = [
        open_weighted_head(d, store, command="prune --scalarmix", allow_other_cache=allow_other_cache) for d in dirs
    ]
    heads = [h for h, _ in opened]
    assert all(isinstance(h, ScalarMixHead) for h in heads)  # scalarmix_dirs: of kind scalarmix only
    recorded = [c.get("seed") for _, c in opened]
    given = Path(path)
    if len(heads) == 1:
        seed = f"seed {recorded[0]}" if isinstance(recorded[0], int) else "no recorded seed"
        warning = (
            f"--scalarmix {given} is one ScalarMix head ({seed}): its ranking is read at every refit seed "
            f"({counted_list('seed', seeds)}), so α's comparison with it holds none of ScalarMix's own variation "
            "across seeds; give fit-head's scalarmix folder to pair each refit seed with ScalarMix's of that seed"
        )
        how = f"one ScalarMix head ({seed}), the same ranking at every refit seed"
        return ScalarMixSeeds(given, list(dirs), heads, {s: 0 for s in seeds}, how, [warning])  # type: ignore[arg-type]
    if not all(isinstance(s, int) for s in recorded) or len(set(recorded)) != len(recorded):
        raise InputError(
            f"--scalarmix {given}: its heads record seeds {recorded}; each refit seed is paired with the ScalarMix "
            "head of the same seed, so give heads of distinct recorded seeds (fit-head's scalarmix/seed_<S>/)"
        )
    index = {s: i for i, s in enumerate(recorded)}
    missing = [s for s in seeds if s not in index]
    if missing:
        raise InputError(
            f"--scalarmix {given} holds ScalarMix seeds {', '.join(map(str, recorded))}, not refit "
            f"{counted_list('seed', missing)}: each refit seed s ranks by the ScalarMix head of seed s; give "
            "ScalarMix heads of every refit seed (fit-head --seeds as many), or one seed_<S>/ folder to read its "
            "ranking at every seed"
        )
    unused = [s for s in recorded if s not in seeds]
    warnings = (
        [
            f"--scalarmix {given}: ScalarMix {counted_list('seed', unused)} not read: no refit seed of "
            f"{'its' if len(unused) == 1 else 'their'} number"
        ]
        if unused
        else []
    )
    used = [index[s] for s in seeds]
    how = f"seed by seed: refit seed s ranks by the ScalarMix head of seed s ({counted_list('seed', seeds)})"
    return ScalarMixSeeds(
        given,
        [dirs[i] for i in used],
        [heads[i] for i in used],  # type: ignore[misc]
        {s: j for j, s in enumerate(seeds)},
        how,
        warnings,
    )


def rankings(sm: ScalarMixSeeds | None, seeds: Sequence[int]) -> tuple[Ranking, dict[int, Ranking]]:
    """The top-level ScalarMix ranking (one head's weights, or the mean of several heads' and its order) and the
    ranking each refit seed's sets follow."""
    if sm is None:
        return by_scalarmix(None, None), {}
    own = [by_scalarmix(h, str(d)) for h, d in zip(sm.heads, sm.dirs)]
    per_seed = {s: own[i] for s, i in sm.by_refit_seed.items()}
    if sm.one_seed:
        return own[0], per_seed
    scores = np.mean(np.stack([np.asarray(r.scores, np.float64) for r in own]), axis=0)
    how = f"mean over {len(own)} ScalarMix heads ({counted_list('seed', seeds)}) of each head's softmax of its scalars"
    return Ranking("scalarmix", scores, order_of(scores), how), per_seed


def ties(sm: ScalarMixSeeds | None, per_seed: dict[int, Ranking], names: Sequence[str]) -> str | None:
    """The near-ties warning of the ScalarMix ranking each refit seed follows, naming the seeds whose ranking
    holds one (one head: its own)."""
    if sm is None:
        return None
    if sm.one_seed:
        return near_ties(next(iter(per_seed.values())), names)
    found = {s: w for s, r in per_seed.items() if (w := near_ties(r, names)) is not None}
    if not found:
        return None
    heads = f"the scalarmix ranking of {len(found)} of {len(per_seed)} ScalarMix heads ({counted_list('seed', found)})"
    return f"{heads}: " + "; ".join(f"seed {s}: {w}" for s, w in found.items())


def record(sm: ScalarMixSeeds | None) -> dict[str, Any] | None:
    """summary.json's `scalarmix`: the heads read, the refit seed each pairs with, and how."""
    if sm is None:
        return None
    return {
        "given": str(sm.given.resolve()),
        "heads": [
            {"head_dir": str(sm.dirs[i].resolve()), "refit_seeds": [s for s, j in sm.by_refit_seed.items() if j == i]}
            for i in range(len(sm.heads))
        ],
        "one_seed": sm.one_seed,
        "pairing": sm.how,
        "warnings": sm.warnings,
    }
