"""`extract` under torchrun: each process writes its own shard of every split, rank 0 joins them.

``OUT``'s datasets are virtual, views of the rows of ``OUT.shards/rank-RRRRR-of-WWWWW.h5`` (each an ordinary
cache); ``OUT.shards/manifest.json`` holds the plan (the layout, a contract another launcher can follow too:
docs/FORMATS.md). Rank r takes rows ``shard_ranges(n, world_size, align)[r]`` of each split
(:mod:`laya_inspect.distributed`), ``align`` being the batch size, so each process runs the very batches one
process would and the arrays are the same bit for bit. Each shard is written by
:class:`~laya_inspect.cache.writer.FeatureWriter`, so it is resumed after a kill as a one-process cache is;
the shares are fixed by the manifest of the first run, and a run with another number of processes is refused
rather than mixing two plans. ``OUT`` carries the attributes of a one-process cache (``world_size`` says how
it was written); its virtual datasets name their shard files relative to ``OUT``'s folder, so ``OUT`` and
``OUT.shards`` move together. ``--overwrite`` of an existing ``OUT`` writes the new shards into
``OUT.shards.partial`` and keeps the old cache and its shards until the join: the old cache is checked against
its record then, and again just before the swap (the old shards renamed aside, the new cache renamed into
place, the new shards renamed to ``OUT.shards``), so a run that fails or is killed before it leaves the old
cache as it was.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np

from ..distributed import World, agree, device_for, shard_ranges
from ..errors import CacheError, InputError
from ..files import atomic_path, output_lock, sha256_file, write_json
from ..out_dir import put_record, read_record, refuse_fixed, take_record
from ..runtime import Progress, pick_device
from .partial import (
    MOVE_IT,
    RERUN_REMEDY,
    SHARDS_SUFFIX,
    VERIFIED,
    data_remedy,
    model_problem,
    other_command,
    partial_path,
    same_transforms,
)
from .schema import (
    ATTRS_DIGEST,
    CONSTANT_SPREAD,
    check_attrs_end,
    decode_attr,
    encode_attr,
    layer_key,
    seal,
    with_warnings,
)
from .writer import (
    LOGIT_AGREEMENT,
    OVERWRITE_NOTES,
    SAME_LAYER_ROWS,
    constant_warning,
    duplicate_warning,
    may_overwrite,
    numbering_warning,
    refuse_foreign_record,
    same_layers,
    unproven_cache,
)

if TYPE_CHECKING:
    from .extract_config import ExtractConfig, ExtractResult
    from .rows import Prepared

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "laya-inspect shards 1"


def shard_dir(out: str | Path) -> Path:
    p = Path(out)
    return p.with_name(p.name + SHARDS_SUFFIX)


def staging_dir(out: str | Path) -> Path:
    """Where ``--overwrite`` writes the shards of a cache that replaces an existing one."""
    return partial_path(shard_dir(out))


def _aside_dir(out: str | Path) -> Path:
    """Where the old cache's shards wait, for the moment of the swap, until the new ones are in place."""
    folder = shard_dir(out)
    return folder.with_name(folder.name + ".old")


def shard_path(out: str | Path, rank: int, size: int, folder: Path | None = None) -> Path:
    return (folder or shard_dir(out)) / f"rank-{rank:05d}-of-{size:05d}.h5"


def read_manifest(out: str | Path, folder: Path | None = None) -> dict[str, Any] | None:
    path = (folder or shard_dir(out)) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise CacheError(f"{path} cannot be read ({e}); pass --overwrite to start again") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise CacheError(f"{path} is not a shard manifest of this laya-inspect; pass --overwrite to start again")
    return manifest


def _shard_files(out: Path) -> list[Path]:
    folder = shard_dir(out)
    return sorted(folder.glob("rank-*-of-*.h5*")) if folder.is_dir() else []


def describe_shards(out: str | Path) -> str:
    """ "(2 processes; rank 0: train 477/960, …)" for a sharded extraction in progress, or ""."""
    try:
        manifest = read_manifest(out)
    except CacheError:
        return ""
    if manifest is None:
        return ""
    parts = []
    for rank in range(int(manifest["world_size"])):
        path = shard_path(out, rank, int(manifest["world_size"]))
        try:
            with h5py.File(path if path.exists() else partial_path(path), "r", locking=False) as f:
                parts.append(
                    f"rank {rank}: " + ", ".join(f"{s} {f[s].attrs['n_written']}/{f[s].attrs['n']}" for s in f)
                )
        except Exception:  # noqa: BLE001 - a description only; the file may be absent or mid-write
            parts.append(f"rank {rank}: not started")
    return f" ({manifest['world_size']} processes; {'; '.join(parts)})"


# What extract keeps in a shards folder: the manifest, its temporary file, shard files (partial or complete)
# and their locks. A folder holding anything else is not removed by --overwrite.
_OURS = re.compile(r"manifest\.json(\.tmp-\d+-\w+)?|\.?rank-\d{5}-of-\d{5}\.h5(\.partial|\.lock)?")


def _shard_folders(out: str | Path) -> tuple[Path, Path, Path]:
    """``OUT.shards`` and the ``.shards.partial`` and ``.shards.old`` folders of an --overwrite run."""
    return shard_dir(out), staging_dir(out), _aside_dir(out)


def refuse_foreign_shards(out: str | Path) -> None:
    """Refuse, in one line naming it, an ``<out>.shards`` (or the ``.shards.partial`` and ``.shards.old``
    folders of an --overwrite run) that is not a folder extract made (a user's file, a symlink, dangling
    or to a folder: shards would be written through it into another folder, or a folder holding a file
    extract does not write): extract keeps a sharded run's manifest and shards in these folders, and
    ``--overwrite`` does not remove what laya-inspect did not make. An immutable or append-only one, or
    shard, is refused before the work too (:func:`~laya_inspect.out_dir.refuse_fixed`)."""
    for folder in _shard_folders(out):
        if not folder.is_symlink() and not folder.exists():
            continue
        if folder.is_symlink() or not folder.is_dir():
            what = f"a symlink (to {os.readlink(folder)})" if folder.is_symlink() else "a file"
        else:
            other = _foreign(folder)
            if not other:
                # its shards are appended to on a resume, and the folder removed after the join
                refuse_fixed(folder, f"{folder} (where laya-inspect keeps {Path(out).name}'s shards)")
                continue
            what = f"a folder holding {_named(other)}, which extract does not write"
        raise InputError(
            f"{folder} is {what}, not the folder where laya-inspect keeps {Path(out).name}'s shards; neither a "
            f"resume nor --overwrite touches it: {MOVE_IT}"
        )


def _foreign(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not _OURS.fullmatch(p.name) or p.is_symlink())


def _named(names: list[str]) -> str:
    return ", ".join(names[:3]) + (" …" if len(names) > 3 else "")


def drop_ours(folder: Path) -> list[str]:
    """Remove ``folder`` (a shards folder extract made) and what extract wrote in it; a folder that holds
    anything else by then (a file saved there after the last check) is kept, whole but for extract's
    files, and the warning saying so returned."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    for entry in folder.iterdir():
        if _OURS.fullmatch(entry.name) and not entry.is_symlink() and entry.is_file():
            entry.unlink(missing_ok=True)
    try:
        folder.rmdir()  # fails where something not extract's is left: that is kept
    except FileNotFoundError:
        return []
    except OSError:
        return [
            f"{folder} held the shards extract replaced, and also what extract does not write "
            f"({_named(sorted(p.name for p in folder.iterdir()))}), so it was left with that in it: move what "
            "you keep out of it, then delete it"
        ]
    return []


def refuse_sharded_leftovers(config: ExtractConfig) -> None:
    """A one-process run must not start over an interrupted run of several processes unasked."""
    if config.overwrite or Path(config.out).exists():
        return  # --overwrite starts again, whatever the manifest holds
    manifest = read_manifest(config.out)
    if manifest is None or not _shard_files(Path(config.out)):
        return
    size = int(manifest["world_size"])
    raise CacheError(
        f"{shard_dir(config.out)} holds an interrupted extraction by {size} processes{describe_shards(config.out)}; "
        f"rerun it with `torchrun --nproc-per-node {size} …` (or {size} processes in all) to resume it, "
        "or pass --overwrite to start again"
    )


def drop_stale_shards(out: str | Path) -> list[str]:
    """Remove the shards of a cache that a one-process run has just replaced, and those an --overwrite
    run under torchrun left unfinished; return the warnings of folders kept (:func:`drop_ours`)."""
    return [said for folder in _shard_folders(out) for said in drop_ours(folder)]


def extract_sharded(config: ExtractConfig, world: World, emit: Progress) -> ExtractResult:
    """This process's part of an extraction by ``world.size`` processes (see the module docstring)."""
    from .rows import own_task, prepare, result_of

    out = Path(config.out)
    device = pick_device(device_for(config.device, world))
    box: list[Prepared] = []
    with ExitStack() as held:
        mended = agree(world, lambda: _preflight(config, world, held) if world.is_main else None)[0]
        agree(world, lambda: box.append(prepare(config, device, world_size=world.size)))
        prep = box[0]
        prep.warnings += [mended] if mended else []
        start = time.perf_counter()
        plan, folder = agree(world, lambda: _plan(config, world, prep) if world.is_main else ({}, ""))[0]  # rank 0's
        started = agree(world, lambda: _as_started(prep, out, Path(folder), world.size) if world.is_main else "")[0]
        prep.attrs["data_fingerprint"] = started or prep.attrs["data_fingerprint"]
        stats = agree(world, lambda: _write_shard(config, world, prep, plan, Path(folder), emit))

        def judged(counts: dict[str, list[int]]) -> tuple[dict[str, Any], list[str]]:
            # the counts of every shard, summed: the same record and warning as one process gives
            top1, near = own_task(prep, prep.data.splits, counts)
            prep.model_top1 = top1
            return top1, near

        said, notes = agree(
            world,
            lambda: (
                merge_shards(out, world.size, plan, Path(folder), overwrite=config.overwrite, own_task=judged)
                if world.is_main
                else ([], [])
            ),
        )[0]
        seconds = time.perf_counter() - start
    # rank 0's, who speaks for all: a layer that gave one row for every input, two alike; what it replaced
    prep.warnings += [*said, *notes]
    nonfinite = _add_counts(counts for _, _, counts in stats)
    resumed = {s: sum(r[s] for _, r, _ in stats) for s in plan}
    written = sum(w for w, _, _ in stats)
    return result_of(config, prep, written, resumed, nonfinite, seconds, world_size=world.size)


def _add_counts(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """Non-finite values per layer, summed over the shards."""
    total: dict[str, int] = {}
    for c in counts:
        for name, k in c.items():
            total[name] = total.get(name, 0) + int(k)
    return total


def _preflight(config: ExtractConfig, world: World, held: ExitStack) -> str | None:
    """Rank 0 holds ``OUT``'s lock for the whole run and refuses what earlier runs left in the way; it
    mends a swap an earlier run left half done (:func:`finish_swap`), and returns what it did."""
    out = Path(config.out)
    held.enter_context(output_lock(out))
    refuse_foreign_record(out)  # merge_shards writes the record there: refused before any work
    refuse_foreign_shards(out)  # checked again under the lock: --overwrite removes these folders
    mended = finish_swap(out)
    if config.overwrite:
        return mended  # cleared in _plan, once the model and data have loaded
    if out.exists() and mended is not None:  # said as one process says it: the cache is whole again
        raise CacheError(f"{mended}; {out} is a complete cache: pass --overwrite to write a new one")
    if out.exists():
        raise CacheError(
            f"{out} already exists; pass --overwrite to write a new cache "
            "(the old cache and its shards are kept until the new one is complete)"
        )
    if partial_path(out).exists():
        raise CacheError(
            f"{partial_path(out)} is an interrupted extraction by one process; rerun it without torchrun "
            "to resume it, or pass --overwrite to start again"
        )
    manifest = read_manifest(out)
    if manifest is not None and int(manifest["world_size"]) != world.size and _shard_files(out):
        size = int(manifest["world_size"])
        raise CacheError(
            f"{shard_dir(out)} holds an interrupted extraction by {size} processes{describe_shards(out)}, "
            f"and this run has {world.size}: rows already written cannot be shared out again; rerun it with "
            f"{size} processes (`torchrun --nproc-per-node {size} …`) to resume it, or pass --overwrite to start again"
        )
    return mended


def _plan(config: ExtractConfig, world: World, prep: Prepared) -> tuple[dict[str, list[tuple[int, int]]], str]:
    """Rank 0: each split's rows per rank, from the manifest of the run being resumed or made now; and
    the folder the shards are written to (``OUT.shards``, or ``OUT.shards.partial`` where --overwrite
    replaces an existing cache, which stays as it is until the join)."""
    out = Path(config.out)
    sizes = {s: sp.n for s, sp in prep.data.splits.items()}
    folder = shard_dir(out)
    if config.overwrite:
        # checked again now the model has loaded, as the one-process writer checks when it starts: a
        # cache edited meanwhile is refused before the work, not after (and again at the join)
        may_overwrite(out)
        refuse_foreign_shards(out)  # a file saved there while the model loaded: the folders are removed next
        partial_path(out).unlink(missing_ok=True)
        if out.exists():
            folder = staging_dir(out)  # the old cache reads its shards from shard_dir until the swap
            if drop_ours(folder):  # a file saved there since the check above
                refuse_foreign_shards(out)
        else:
            drop_stale_shards(out)
    manifest = read_manifest(out, folder)
    if manifest is not None and int(manifest["world_size"]) == world.size:
        old = {s: int(v["n"]) for s, v in manifest["splits"].items()}
        if old != sizes:
            said = _rows_changed(manifest, sizes, config.limit)
            raise CacheError(f"{shard_dir(out)} was started on other rows ({old}, now {sizes}): {said}")
        return {s: [(int(a), int(b)) for a, b in v["ranges"]] for s, v in manifest["splits"].items()}, str(folder)
    plan = {s: shard_ranges(n, world.size, prep.batch_size) for s, n in sizes.items()}
    # --limit is kept so that a resume with another one is told from changed data
    _write_manifest(out, folder, world.size, prep.batch_size, plan, complete=False, limit=config.limit)
    return plan, str(folder)


def _as_started(prep: Prepared, out: Path, folder: Path, size: int) -> str:
    """Rank 0: the data fingerprint the shards record (:func:`~.rows.started_as`) where they were started on
    these very files (the same bytes, or hashed by a laya-inspect that hashed every file under the data's
    folder), so that they resume as a one-process partial does; else this version's."""
    from .rows import recorded_fingerprint, started_as

    now = str(prep.attrs["data_fingerprint"])
    for rank in range(size):
        path = shard_path(out, rank, size, folder)
        for file in (path, partial_path(path)):
            recorded = recorded_fingerprint(file)
            if recorded is not None and recorded != now:
                content = str(prep.attrs.get("data_content") or "")
                return started_as(now, prep.data, recorded, content, recorded_fingerprint(file, "data_content"))
    return now


def _rows_changed(manifest: dict[str, Any], sizes: dict[str, int], limit: int | None) -> str:
    """What changed between the run that wrote ``manifest`` and this one (its rows per split ``sizes``,
    its ``limit``), and what resumes it. A manifest written before --limit was recorded names the split
    or says "the data or --limit"."""
    started = list(manifest["splits"])
    if sorted(started) != sorted(sizes):
        return (
            f"--split changed (started with --split {','.join(started)}, now {','.join(sizes)}); rerun it with "
            f"--split {','.join(started)} to resume it, or pass --overwrite to start again"
        )
    if "limit" not in manifest:
        return f"the data or --limit changed; where --limit is the one it was started with, {data_remedy()}"
    if manifest["limit"] != limit:
        was = "no --limit" if manifest["limit"] is None else f"--limit {manifest['limit']}"
        again = "without --limit" if manifest["limit"] is None else f"with --limit {manifest['limit']}"
        now = "none" if limit is None else str(limit)
        return (
            f"--limit changed (started with {was}, now {now}); rerun it {again} to resume it, "
            "or pass --overwrite to start again"
        )
    # rerunning the command cannot help: with the same --split and --limit, only the data changed
    return f"the data changed; {data_remedy()}"


def _write_manifest(
    out: Path, folder: Path, size: int, align: int, plan: dict[str, list[tuple[int, int]]], **extra: Any
) -> None:
    write_json(
        folder / MANIFEST,
        {
            "format": MANIFEST_FORMAT,
            "cache": out.name,
            "world_size": size,
            "align": align,
            "splits": {
                s: {
                    "n": ranges[-1][1],
                    "ranges": [list(r) for r in ranges],
                    "files": [shard_path(out, r, size).name for r in range(size)],
                }
                for s, ranges in plan.items()
            },
            **extra,
        },
    )


def _write_shard(
    config: ExtractConfig,
    world: World,
    prep: Prepared,
    plan: dict[str, list[tuple[int, int]]],
    folder: Path,
    emit: Progress,
) -> tuple[int, dict[str, int], dict[str, int]]:
    """This rank's rows of every split into its shard file in ``folder``: (rows written, rows resumed,
    non-finite)."""
    path = shard_path(config.out, world.rank, world.size, folder)
    # held while this shard is written only: OUT's lock, which rank 0 holds to the end, keeps other runs
    # out, and the join renames the folder the shard's lock file is in
    with output_lock(path):
        return _write_locked(config, world, prep, plan, path, emit)


def _write_locked(
    config: ExtractConfig,
    world: World,
    prep: Prepared,
    plan: dict[str, list[tuple[int, int]]],
    path: Path,
    emit: Progress,
) -> tuple[int, dict[str, int], dict[str, int]]:
    from .rows import write_cache

    mine = {s: plan[s][world.rank] for s in plan}
    splits = {
        s: dataclasses.replace(sp, labels=sp.labels[slice(*mine[s])], index=sp.index[slice(*mine[s])])
        for s, sp in prep.data.splits.items()
    }
    shard = {"rank": world.rank, "world_size": world.size, "rows": {s: list(r) for s, r in mine.items()}}
    attrs = {**prep.attrs, "shard": shard}
    if path.exists():  # finished before another rank was stopped: nothing left to do here
        return 0, {s: sp.n for s, sp in splits.items()}, _check_shard(path, attrs)
    if partial_path(path).exists():
        _check_shard(partial_path(path), attrs)
    return write_cache(config, prep, path, splits, emit, attrs=attrs)


def _check_shard(path: Path, attrs: dict[str, Any]) -> dict[str, int]:
    """Refuse a shard file written by another command, checkpoint, data or share of rows; return its
    non-finite counts."""
    check_attrs_end(path, str(path), "pass --overwrite to start again")
    try:
        with h5py.File(path, "r", locking=False) as f:
            old = {k: decode_attr(f.attrs.get(k, "")) for k in ("command", "shard", *VERIFIED)}
            counts = decode_attr(f.attrs.get("nonfinite_counts", "{}")) or {}
            recorded_model_file = decode_attr(f.attrs.get("model_file", ""))
    except OSError as e:
        raise CacheError(f"{path} cannot be read ({e}); pass --overwrite to start again") from None
    new = {k: decode_attr(encode_attr(k, attrs.get(k))) for k in old}
    old["model_file"], new["model_file"] = recorded_model_file, attrs.get("model_file")  # named, not compared
    model = model_problem(old, new)
    same = {"transforms": same_transforms}
    changed = [k for k in old if k not in ("model_code", "model_file") and not same.get(k, operator.eq)(old[k], new[k])]
    changed += ["model_code"] if model is not None and "weights_sha256" not in changed else []
    if changed and _first(changed) == "command":  # the options that differ named, as a one-process resume does
        raise CacheError(f"{path} {other_command(old['command'], new['command'])}; {_remedy(changed)}")
    if model is not None and _first(changed) in ("weights_sha256", "model_code"):
        raise CacheError(f"{path} {model[0]}; {model[1]}")  # said as a one-process resume says it
    if changed:
        raise CacheError(f"{path} was written with another {', '.join(changed)} than this run's; {_remedy(changed)}")
    return {str(k): int(v) for k, v in counts.items()} if isinstance(counts, dict) else {}


# What resumes a shard refused for a changed attribute, in the order partial.resume_problem reads a
# one-process resume: the first that changed decides, as there (rerunning only where nothing else was said).
_ORDER = ("command", "shard", "weights_sha256", "model_code", "transforms", "data_fingerprint", "layer_pooling")


def _remedy(changed: list[str]) -> str:
    """What resumes a shard whose recorded ``changed`` attributes differ from this run's (the model's
    files: :func:`~.partial.model_problem`)."""
    return data_remedy() if _first(changed) == "data_fingerprint" else RERUN_REMEDY


def _first(changed: list[str]) -> str:
    """The changed attribute a one-process resume would name: the first in :data:`_ORDER`."""
    return min(changed, key=lambda k: _ORDER.index(k) if k in _ORDER else len(_ORDER))


def merge_shards(
    out: str | Path,
    size: int,
    plan: dict[str, list[tuple[int, int]]],
    folder: Path | None = None,
    *,
    overwrite: bool = False,
    own_task: Callable[[dict[str, list[int]]], tuple[dict[str, Any], list[str]]] | None = None,
) -> tuple[list[str], list[str]]:
    """Write ``out``, atomically: every split's datasets as virtual datasets over the ``size`` complete
    shard files in ``folder`` (default ``OUT.shards``), with the attributes a one-process cache would
    have; then mark the manifest complete. With ``overwrite``, the cache at ``out`` is checked against
    its record before the join and again just before the swap; shards written into another folder
    (``OUT.shards.partial``) replace ``OUT.shards`` only then.
    Return the warnings added to ``out``'s (a layer that gave one row for every input of every shard,
    layers that hold the same values, the model near chance on its own task) and what could not be
    checked of the cache replaced (its ``overwrite_notes``), with the warning of an old shards' folder
    kept for a file saved in it. ``own_task`` turns the shards' summed per-split agreement of the
    logits with the labels into the model's own top-1 record (``model_top1``) and its warning."""
    out = Path(out)
    final = shard_dir(out)
    folder = folder or final
    refuse_foreign_record(out)  # checked again: a file saved there while the shards were written
    files = [shard_path(out, r, size, folder) for r in range(size)]
    missing = [str(p) for p in files if not p.exists()]
    if missing:
        raise CacheError(f"cannot join the shards of {out}: {', '.join(missing)} missing; rerun the same command")
    notes = may_overwrite(out) if overwrite else []  # a cache edited while the shards were written is kept
    aside = _aside_dir(out)
    with atomic_path(out) as tmp:
        with ExitStack() as opened:
            shards = [opened.enter_context(h5py.File(p, "r")) for p in files]
            # virtual datasets need the HDF5 1.10 format; this file is written once, whole, then renamed;
            # it names the shards where they will be once in place
            names = [os.path.relpath(shard_path(out, r, size), out.parent) for r in range(size)]
            with h5py.File(tmp, "w", libver=("v110", "latest")) as f:
                said = _join(f, shards, names, plan, notes, own_task)
        if out.exists():
            _check_before_swap(out, overwrite, folder)
        # a file saved in the shards' folders while the shards were written: the swap removes the old ones
        refuse_foreign_shards(out)
        # what the next --overwrite checks: the cache and each shard its rows are read from
        shards_at = {shard_path(out, r, size): p for r, p in enumerate(files)}
        record = take_record(out, "extract", {out: tmp, **shards_at})
        if folder != final:
            # a run killed from here on leaves a cache whose shards are missing (never read from another
            # run's shards): the old shards wait in OUT.shards.old, the new cache's SHA-256 in the new
            # shards' manifest, from which a rerun tells which cache is in place (finish_swap)
            write_json(folder / MANIFEST, {**(read_manifest(out, folder) or {}), SWAP: sha256_file(tmp)})
            if drop_ours(aside):  # a file saved there since the check above
                refuse_foreign_shards(out)
            if final.exists():
                os.rename(final, aside)
    kept = []
    if folder != final:
        os.rename(folder, final)
        kept = drop_ours(aside)  # a file saved there since the check just before the swap is kept
    put_record(out, record)
    manifest = read_manifest(out) or {}
    write_json(final / MANIFEST, {**manifest, "complete": True})
    return said, [*notes, *kept]


# The staging manifest's key for the SHA-256 of the cache an --overwrite run is about to rename into place.
SWAP = "swap_cache_sha256"


def finish_swap(out: str | Path) -> str | None:
    """Mend what an ``--overwrite`` run under torchrun left when stopped between its swap's renames (``OUT``
    without ``OUT.shards``; the old shards in ``OUT.shards.old``, the new in ``OUT.shards.partial``): ``OUT``
    is the new cache when it has the SHA-256 its run recorded in the new shards' manifest, and its shards
    are then moved into place; else it is the old cache, whose shards are put back. What was done, in
    words, or None where there was nothing to mend (or no record of the new cache: left as it is). The
    caller holds ``OUT``'s lock."""
    out = Path(out)
    final, staged, aside = shard_dir(out), staging_dir(out), _aside_dir(out)
    if os.path.lexists(final) or not out.is_file() or out.is_symlink() or not staged.is_dir():
        return None
    try:
        manifest = read_manifest(out, staged) or {}
    except CacheError:
        return None
    new = manifest.get(SWAP)
    if not isinstance(new, str):
        return None
    stopped = f"an `extract --overwrite` under torchrun was stopped while it swapped {out} in"
    if sha256_file(out) == new:
        os.rename(staged, final)
        kept = drop_ours(aside)
        record = read_record(out)
        if record is not None and "before" in record:
            put_record(out, {k: v for k, v in record.items() if k != "before"})
        write_json(final / MANIFEST, {**manifest, "complete": True})
        moved = f"{stopped}; the new cache was in place, and its shards are now moved beside it into {final}"
        return "; ".join([moved, *kept])
    if not aside.is_dir():
        return None
    os.rename(aside, final)
    record = read_record(out)
    if record is not None and isinstance(record.get("before"), dict):
        # the record the stopped run wrote is the new cache's, the old one's under 'before': the old
        # cache's alone again, so that the next stopped swap keeps it as 'before' in turn
        put_record(out, {k: v for k, v in record.items() if k != "before"} | record["before"])
    return (
        f"{stopped}; the old cache was still in place, and its shards are put back into {final} (the stopped "
        f"run's shards stay in {staged}, which the next --overwrite starts again from scratch)"
    )


def _check_before_swap(out: Path, overwrite: bool, folder: Path) -> None:
    """Refuse to replace ``out`` unless --overwrite was given and it is still a cache laya-inspect wrote,
    unchanged since (a file saved there, or an edit, while the join was written)."""
    why = unproven_cache(out) if overwrite else "was saved there while the shards were written"
    if why is not None:
        raise InputError(
            f"{out} {why}; it was not replaced (this run's shards are in {folder}): move it away yourself "
            "and rerun, or choose another out"
        )


def _join(
    f: h5py.File,
    shards: list[h5py.File],
    names: list[str],
    plan: dict[str, list[tuple[int, int]]],
    notes: Sequence[str],
    own_task: Callable[[dict[str, list[int]]], tuple[dict[str, Any], list[str]]] | None = None,
) -> list[str]:
    from .rows import MODEL_TOP1, SPLIT_AGREEMENT

    first = shards[0]
    for key, value in first.attrs.items():
        # the digest is of this file's attributes: sealed below; row_spread is read below
        if key not in ("shard", "row_spread", LOGIT_AGREEMENT, SPLIT_AGREEMENT, ATTRS_DIGEST):
            f.attrs[key] = value
    layers = [str(n) for n in decode_attr(first.attrs.get("layer_names", "[]")) or []]
    pooling = [str(p) for p in decode_attr(first.attrs.get("layer_pooling", "[]")) or []]
    said = constant_warning(_constant_over_shards(shards, layers), dict(zip(layers, pooling)))
    said += duplicate_warning(same_layers(layers, _first_rows(shards, len(layers))))
    counts = _split_agreement(shards, SPLIT_AGREEMENT)
    top1, near = own_task(counts) if own_task is not None and counts is not None else ({}, [])
    # near chance names a class order unlike the data's among its causes: said once, as by one process
    said += near or _numbering_over_shards(shards)
    if top1:
        f.attrs[MODEL_TOP1] = encode_attr(MODEL_TOP1, top1)
    if said:
        f.attrs["warnings"] = with_warnings(first.attrs, said)
    if notes:
        f.attrs[OVERWRITE_NOTES] = encode_attr(OVERWRITE_NOTES, list(notes))
    total = _add_counts(decode_attr(s.attrs.get("nonfinite_counts", "{}")) or {} for s in shards)
    f.attrs["nonfinite_counts"] = encode_attr("x", total)
    for split in first:
        ranges = plan[split]
        n = ranges[-1][1]
        g = f.create_group(split)
        for key, value in first[split].attrs.items():
            g.attrs[key] = value
        bad = np.zeros(len(decode_attr(first[split].attrs["nonfinite"])), np.int64)
        for s in shards:
            bad += np.asarray(decode_attr(s[split].attrs["nonfinite"]), np.int64)
        g.attrs.update(n=n, n_written=n, complete=True, nonfinite=encode_attr("x", [int(b) for b in bad]))
        for key, ds in first[split].items():
            layout = h5py.VirtualLayout(shape=(n, *ds.shape[1:]), dtype=ds.dtype)
            for name, (lo, hi) in zip(names, ranges):
                if hi > lo:
                    layout[lo:hi] = h5py.VirtualSource(name, f"/{split}/{key}", shape=(hi - lo, *ds.shape[1:]))
            # rows no shard provides read as NaN (or -1), never as plausible zeros
            fill = np.nan if np.issubdtype(ds.dtype, np.floating) else -1
            v = g.create_virtual_dataset(key, layout, fillvalue=fill)
            for k, value in ds.attrs.items():
                v.attrs[k] = value
    seal(f)
    return said


def _numbering_over_shards(shards: list[h5py.File]) -> list[str]:
    """:func:`numbering_warning` of the logits' agreement with the labels, summed over the shards (shards of
    an earlier laya-inspect, or of an untrained model, recorded none: no check)."""
    counts = [decode_attr(s.attrs.get(LOGIT_AGREEMENT, "")) for s in shards]
    if not all(isinstance(c, list) and len(c) == 2 for c in counts):
        return []
    names = decode_attr(shards[0].attrs.get("class_names", "[]")) or []
    width = next((int(s[split]["logits"].shape[1]) for s in shards for split in s if "logits" in s[split]), None)
    return numbering_warning(width, names, [sum(int(c[0]) for c in counts), sum(int(c[1]) for c in counts)])


def _split_agreement(shards: list[h5py.File], key: str) -> dict[str, list[int]] | None:
    """Each split's [rows whose top logit is their label, labelled rows], summed over the shards' ``key``
    attribute (counts, so each row weighs the same whatever its shard's size); None where a shard recorded
    none (logits not one per class, random weights, a shard of an earlier laya-inspect)."""
    counts = [decode_attr(s.attrs.get(key, "")) for s in shards]
    if not all(isinstance(c, dict) for c in counts):
        return None
    total: dict[str, list[int]] = {}
    for c in counts:
        for split, (hits, rows) in c.items():
            got = total.setdefault(str(split), [0, 0])
            got[0], got[1] = got[0] + int(hits), got[1] + int(rows)
    return total


def _first_rows(shards: list[h5py.File], num_layers: int) -> list[np.ndarray | None]:
    """Each layer's first rows (up to SAME_LAYER_ROWS) of the first shard split that holds two or more:
    the same rows of every layer, which is all :func:`same_layers` needs."""
    for s in shards:
        for split in s:
            if len(s[split][layer_key(0)]) >= 2:
                return [np.asarray(s[split][layer_key(i)][:SAME_LAYER_ROWS]) for i in range(num_layers)]
    return [None] * num_layers


def _constant_over_shards(shards: list[h5py.File], layers: list[str]) -> list[str]:
    """The layers whose every row, over all shards, equals the first one up to rounding, from what each
    shard's writer recorded (``row_spread``: its own first row's place and each layer's largest distance
    of a row from it) and one row read per shard and layer. A row lies at most (its distance from its
    shard's first row + that first row's distance from rank 0's) from rank 0's first row, so a layer
    constant within each shard but different between shards is not named. Shards that recorded none
    (written by an earlier laya-inspect) name none."""
    spreads = [decode_attr(s.attrs.get("row_spread", "")) for s in shards]
    if not all(isinstance(sp, dict) for sp in spreads):
        return []
    seen = []  # per shard with rows: (its first row per layer, its distances per layer)
    for s, sp in zip(shards, spreads):
        if sp.get("first_row") is not None:
            split, row = sp["first_row"]
            seen.append(([np.asarray(s[split][layer_key(i)][int(row)]) for i in range(len(layers))], sp["apart"]))
    if sum(int(sp.get("rows", 0)) for sp in spreads) < 2 or not seen:
        return []
    out = []
    for i, name in enumerate(layers):
        ref = seen[0][0][i].astype(np.float64)
        scale = max(float(np.nanmax(np.abs(ref), initial=0.0)), 1e-30)
        far = max(
            float(apart[i]) + float(np.nanmax(np.abs(rows[i].astype(np.float64) - ref), initial=0.0))
            for rows, apart in seen
        )
        if far <= CONSTANT_SPREAD * scale:
            out.append(name)
    return out
