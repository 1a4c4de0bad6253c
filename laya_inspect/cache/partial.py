"""The ``<out>.partial`` file an extraction writes before its cache is complete: its name, the rows
it holds, the names and files extract refuses to write over, and whether this run may resume it (the
command, the weights, the data, the transforms and the pooling it was started with). The writing
itself is :mod:`.writer`'s."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import CacheError, InputError
from ..out_dir import refuse_fixed
from .schema import not_a_cache

# Attributes a resumed run must share with the rows already written (beside the command options).
# model_code is read to name what changed, not compared: weights_sha256 covers it.
VERIFIED = ("weights_sha256", "data_fingerprint", "layer_pooling", "transforms", "model_code")
# A resumed run recomputes the last rows on disk (at most RECHECK_ROWS) and refuses where one differs
# from what it gives now by more than RECHECK_TOLERANCE[amp] of the row's norm (relative L2). Measured
# on CPU (2026-12-06): another batch size gives identical rows in float32 and under bfloat16 autocast
# (MobileNetV2, all-MiniLM-L6-v2 with other padding), 2e-5 apart stored as float16; another network
# with the same weights (ReLU → GELU in a user's convnet) 0.09 and up. A GPU picks kernels by batch
# size, unmeasured here: bfloat16's rounding (3–16% from float32, see --amp) gets a wide margin.
RECHECK_ROWS, RECHECK_TOLERANCE = 4, {False: 0.03, True: 0.25}
SHARDS_SUFFIX = ".shards"  # <cache>.shards: the folder of a sharded extraction (laya_inspect.cache.shards)


def recomputed_problem(
    stored: list[np.ndarray], fresh: list[np.ndarray], names: list[str], split: str, start: int, *, amp: bool
) -> str | None:
    """What is wrong with resuming, where this run's rows (per layer, (k, D)) for rows ``start`` … of
    ``split`` differ from the ones a killed run wrote there; None where they agree."""
    for name, old, new in zip(names, stored, fresh):
        old, new = np.asarray(old, dtype=np.float64), np.asarray(new, dtype=np.float64)
        scale = np.maximum(np.linalg.norm(old, axis=1), np.linalg.norm(new, axis=1))
        gap = np.linalg.norm(old - new, axis=1) / np.where(scale > 0, scale, 1.0)
        if gap.max() > RECHECK_TOLERANCE[amp]:
            return (
                f"rows {start}–{start + len(old) - 1} of split {split!r} as this run computes them differ from the "
                f"ones on disk (layer {name!r}: up to {gap.max():.0%} of a row's norm): the model, its code or its "
                "inputs changed since the rows were written; pass --overwrite to start again"
            )
    return None


def partial_path(path: str | Path) -> Path:
    p = Path(path)
    return p.with_name(p.name + ".partial")


def rows_on_disk(out: str | Path) -> dict[str, int] | None:
    """The rows ``<out>.partial`` holds per split (what a rerun resumes from); None where there is no
    such file, or it is not a cache (not yet one: a run stopped while creating it) or cannot be read."""
    partial = partial_path(out)
    if partial.is_symlink() or not partial.is_file():
        return None
    try:
        if not_a_cache(partial) is not None:  # read under the guard against a damaged file's loops
            return None
        with h5py.File(partial, "r", locking=False) as f:
            return {str(s): int(f[s].attrs.get("n_written", 0)) for s in f if isinstance(f[s], h5py.Group)}
    except (OSError, KeyError, ValueError, CacheError):
        return None


MOVE_IT = "move it away yourself, or choose another --out"


def refuse_reserved_name(out: str | Path) -> None:
    """Refuse an ``out`` named like what extract keeps beside a cache. A complete cache at
    ``<cache>.partial`` reads as an interrupted extraction of ``<cache>``, which a rerun of that
    extraction would resume from or, with --overwrite, delete; one at ``<cache>.shards`` (the folder of
    a torchrun extraction's shards) stops every later extract of ``<cache>``, --overwrite included,
    whose shard manifest cannot be read inside a file."""
    name = Path(out).name
    if not name.endswith((".partial", SHARDS_SUFFIX)):  # "." or "..", too: no name, no suffix (a folder)
        return
    cache = Path(out).with_suffix("")
    if name.endswith(".partial"):
        raise InputError(
            f"--out {out} ends in '.partial', the suffix extract gives its own unfinished caches (an interrupted "
            f"extraction of {cache} would be read there); choose a name without it, e.g. {cache}"
        )
    if name.endswith(SHARDS_SUFFIX):
        raise InputError(
            f"--out {out} ends in '{SHARDS_SUFFIX}', the suffix extract gives the folder of a cache's shards under "
            f"torchrun (every later extract of {cache} would look for its shards there); choose a name without "
            f"it, e.g. {cache}"
        )


def refuse_foreign_partial(out: str | Path) -> None:
    """Refuse, in one line naming it, an ``<out>.partial`` that laya-inspect did not write: a symlink
    (nothing writes through links), a folder, or a file that is not a feature cache (:func:`not_a_cache`).
    Neither a resume nor ``--overwrite`` touches it: it is left as it is. One laya-inspect wrote that is
    immutable or append-only is refused too, before the work (:func:`~laya_inspect.out_dir.refuse_fixed`)."""
    partial = partial_path(out)
    if partial.is_symlink():
        raise InputError(
            f"{partial} is a symlink (to {os.readlink(partial)}); laya-inspect neither writes through links nor "
            f"removes them: {MOVE_IT}"
        )
    why = "is a folder" if partial.is_dir() else None
    if why is None and partial.exists():
        why = not_a_cache(partial, what=f"{partial} (an interrupted extraction)", remedy=MOVE_IT)
    if why is not None:
        raise InputError(
            f"{partial} {why}; laya-inspect resumes, and --overwrite replaces, only an interrupted extraction "
            f"it wrote: {MOVE_IT}"
        )
    # a resume appends to it, and the end renames it onto --out: found only after the work
    refuse_fixed(partial, f"{partial} (the interrupted extraction of --out {out})")


# What resumes an interrupted extraction where nothing behind its command changed but the command.
RERUN_REMEDY = "rerun the original command to resume it, or pass --overwrite to start again"
# What to do where the files behind the same command changed: rerunning it is refused the same way.
WEIGHTS_REMEDY = (
    "only the very bytes it was started from resume it (a checkpoint saved again, even with the same values, "
    "is other bytes): put that file back, or pass --overwrite to start again"
)
# Bytes of data files hashed at most (data_content): every run (every process) reads them all before it
# starts, so above this a resume tells files apart by sizes and times alone.
CONTENT_CAP = 1 << 30


def data_remedy() -> str:
    """What to do where the files behind the same command changed. Files are told apart by name, size
    and modification time, then, where those differ, by the sha256 of their bytes recorded when the
    extraction started (data_content): a file only touched, or copied without its times, is the same
    data. An extraction started before that record, or on files of more than :data:`CONTENT_CAP` bytes
    (which it does not hash), counts such a file as changed."""
    return (
        "a data file's bytes, or a folder's file names, are not those it was started on (an extraction started "
        f"by a laya-inspect that did not record the files' bytes, or on more than {_bytes(CONTENT_CAP)} of files, "
        "counts a touch, or a copy that does not keep times, as a change too); put the files back as they were, "
        "or pass --overwrite to start again"
    )


def _bytes(n: int) -> str:
    """ "1 GiB", "512 MiB", "1,000 bytes": ``n`` in the largest binary unit that holds it whole."""
    for power, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << power and n % (1 << power) == 0:
            return f"{n >> power:,} {unit}"
    return f"{n:,} bytes"


def resume_problem(old: dict[str, Any], new: dict[str, Any], names: list[str]) -> tuple[str, str] | None:
    """Why a run may not resume the interrupted extraction whose recorded :data:`VERIFIED` attributes,
    ``command`` and ``layer_names`` are ``old`` (this run's: ``new``, both as stored and read back;
    ``names``: this run's layer names), and what to do instead; None where it may."""
    problem, remedy = None, RERUN_REMEDY
    if old["command"] != new["command"]:
        problem = other_command(old["command"], new["command"])
    elif old["layer_names"] != new["layer_names"]:
        # e.g. --layers 4,2 kept in the order given by an earlier laya-inspect, in depth order now:
        # same command, same widths, but each dataset would get rows of another layer
        problem = f"holds the layers {_listed(old['layer_names'])}, and this run's are {_listed(new['layer_names'])}"
        if sorted(map(str, old["layer_names"] or [])) == sorted(map(str, new["layer_names"] or [])):
            # not "in depth order": a TorchScript tuple's outputs keep the order --layers names
            problem += " (the same layers in another order than this laya-inspect gives them)"
        remedy = "its rows cannot be continued with these; pass --overwrite to start again"
    elif (model := model_problem(old, new)) is not None:
        problem, remedy = model
    elif _tokenizer(old["transforms"]) not in (None, _tokenizer(new["transforms"])):
        problem = (
            f"was started with another tokenizer (sha256 {_tokenizer(old['transforms'])}, now "
            f"{_tokenizer(new['transforms'])}): the tokenizer files of the model changed"
        )
    elif not same_transforms(old["transforms"], new["transforms"]):
        was, now = old["transforms"], _unrecorded(old["transforms"], new["transforms"])
        keys = sorted(set(was) | set(now)) if isinstance(was, dict) and isinstance(now, dict) else []
        changed = ", ".join(k for k in keys if was.get(k) != now.get(k)) or "all"
        problem = (
            f"read its inputs otherwise (transforms: {changed}): this laya-inspect decodes or transforms "
            "them differently from the one that started it"
        )
    elif old["data_fingerprint"] != new["data_fingerprint"]:
        problem = (
            f"was started on other data (fingerprint {old['data_fingerprint'] or 'none'}, "
            f"now {new['data_fingerprint'] or 'none'}): the files behind --data changed"
        )
        remedy = data_remedy()
    elif _methods(old["layer_pooling"]) != _methods(new["layer_pooling"]):
        problem = (
            f"pooled its layers otherwise ({_changed(names, old['layer_pooling'], new['layer_pooling'])}): this "
            "laya-inspect decides --pool auto differently from the one that started it"
        )
    return (problem, remedy) if problem else None


# The end of a model_code key that names an installed package (its value: the version), not a file.
PACKAGE = " (installed package)"
# What resumes an extraction whose model's code (model_code) is not the one it was started with.
CODE_REMEDY = "put the code back as it was (the package's version it names), or pass --overwrite to start again"


def model_problem(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, str] | None:
    """Why a run may not resume an extraction started from other weights (``weights_sha256``) or, where
    the digest does not cover it (a ``python:pkg.module:factory`` model), other code (``model_code``),
    and what to do instead; None where both are the same or a record lacks the code's. ``old``, ``new``:
    the recorded attributes and this run's, as :func:`resume_problem` takes them. One process's resume
    and a torchrun shard's say the same."""
    if old["weights_sha256"] != new["weights_sha256"]:
        # a digest of FILE.py alone and one of its imports too: putting a file back cannot make them agree
        remedy = "pass --overwrite to start again" if _newly_covered(old, new) else WEIGHTS_REMEDY
        return other_weights(old, new), remedy
    code = _code_changed(old.get("model_code"), new.get("model_code"))
    return (f"was started from other model code ({code})", CODE_REMEDY) if code else None


def code_unchecked(recorded: Any, now: Any) -> list[str]:
    """The note on a run that resumed an extraction recording no ``model_code`` (started by a laya-inspect
    that recorded none of a ``python:pkg.module`` model) where this run records one: the two cannot be
    compared, so an edit or an upgrade since is not seen; [] otherwise. Not refused: it resumed before."""
    if recorded or not (isinstance(now, dict) and now):
        return []
    return [
        f"resumed an extraction whose laya-inspect recorded no digest of the model's code, so it cannot be compared "
        f"with this run's ({', '.join(now)}): rows written before an edit of that code, or an upgrade of its "
        "package, are not told apart from the rest (--overwrite extracts them all again)"
    ]


def other_weights(old: dict[str, Any], new: dict[str, Any]) -> str:
    """ "was started from other weights (sha256 …): the model file net.py changed": the recorded
    ``weights_sha256`` and this run's (``old``, ``new``: a cache's attributes, ``command`` included), and
    the files it is a digest of, named from the recorded command: the checkpoint behind --weights, the
    file the model spec names (a ``python:FILE.py:factory``'s code, a TorchScript archive, a Hugging
    Face folder's weight files), or either where it covers both (one digest cannot tell which)."""
    digests = f"sha256 {str(old['weights_sha256'])[:12] or 'none'}…, now {str(new['weights_sha256'])[:12] or 'none'}…"
    files = _weights_files(old.get("command"))
    if not files:  # a command that records no model (not extract's): the flag that names weights
        return f"was started from other weights ({digests}): the checkpoint behind --weights changed"
    was, now = old.get("model_file"), new.get("model_file")
    if was and now and was != now:  # the same relative path read from another folder: nothing need have changed
        return (
            f"was started from other weights ({digests}): it read the model file {was}, and this run reads "
            f"{now} (rerun from the folder it started in, or give that file's path)"
        )
    imported = _newly_covered(old, new)
    if imported:  # its digest was of FILE.py alone: an unedited model reads as other weights
        return (
            f"was started from other weights ({digests}) by a laya-inspect whose digest covered "
            f"{files[0]} alone, and this one's covers the modules it imports too ({', '.join(imported)}): "
            "the two digests cannot be compared, whether or not anything was edited"
        )
    # a python:pkg.module model's code is recorded beside the digest, not in it (model_problem)
    code = _code_changed(old.get("model_code"), new.get("model_code")) if was or now else None
    if code:
        also = f" ({files[-1]} may have too: one digest covers both)" if old["command"].get("weights") else ""
        return f"was started from other weights ({digests}): {code}{also}"
    if code is not None and old["command"].get("weights"):  # the code is the same: the checkpoint is not
        return f"was started from other weights ({digests}): {files[-1]} changed"
    changed = " or ".join(files)
    return f"was started from other weights ({digests}): {changed} changed" + (
        " (the cache records one digest of both)" if len(files) > 1 else ""
    )


def _newly_covered(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The imported modules of a python:FILE.py model that this run's digest covers and that of a cache
    recording no ``model_code`` (written before the digest covered them) did not; [] otherwise."""
    now, file = new.get("model_code"), new.get("model_file")
    if not file or old.get("model_code") or not isinstance(now, dict):
        return []
    return [p for p in now if p != Path(str(file)).name]


def _code_changed(was: Any, now: Any) -> str | None:
    """ "the model's code changed: mynet_blocks.py (edited)" from two records of a ``python:`` model's code
    files and their sha256, or its installed package and version (``model_code``); "" where they agree;
    None where either has none."""
    if not (isinstance(was, dict) and was and isinstance(now, dict) and now):
        return None
    how = {True: "no longer imported", False: "edited"}
    changed = []
    for p in {**was, **now}:
        if was.get(p) == now.get(p):
            continue
        if str(p).endswith(PACKAGE) and p in was and p in now:
            changed.append(f"{p} {was[p]} → {now[p]}")
        else:
            changed.append(f"{p} ({'newly imported' if p not in was else how[p not in now]})")
    return f"the model's code changed: {', '.join(changed)}" if changed else ""


def _weights_files(command: Any) -> list[str]:
    """The files a recorded extract ``command``'s weights_sha256 is a digest of, in words; [] where the
    command records no model."""
    if not isinstance(command, dict) or not command.get("model"):
        return []
    from ..models.local import model_file  # torch: only where a resume is refused

    spec, weights = str(command["model"]), command.get("weights")
    source, _, target = spec.partition(":")
    files = []
    file = model_file(spec)
    if file is not None:
        what = "the model file" if source == "python" else "the TorchScript file"
        typed = target.rpartition(":")[0] if source == "python" else target
        # a relative path is read from the current folder: a resume from another reads another file
        files.append(f"{what} {typed}" + ("" if Path(typed).expanduser().is_absolute() else f" (read from {file})"))
    elif source == "hf":
        files.append(f"the weight files in {target}")
    if weights:
        files.append(f"the checkpoint behind --weights {weights}")
    return files or ["the weights"]


def other_command(was: Any, now: Any) -> str:
    """ "was started by a different command (seed: 0 → 3)": the recorded options that differ named."""
    changes = _command_changes(was, now)
    return "was started by a different command" + (f" ({changes})" if changes else "")


def _given(recorded: Any) -> Any:
    """A recorded attribute, None where none was given (stored as "", or as JSON null)."""
    return None if recorded in ("", "null", None) else recorded


def _tokenizer(transforms: Any) -> Any:
    """The tokenizer's sha256 a text cache records; None where it records none (written before)."""
    return transforms.get("sha256") if isinstance(transforms, dict) else None


def same_transforms(was: Any, now: Any) -> bool:
    """The recorded ``transforms`` of a partial cache and this run's are the same: none recorded reads
    as none given, and a tokenizer sha256 the partial cache predates is left out."""
    return bool(_given(was) == _given(_unrecorded(was, now)))


def _unrecorded(was: Any, now: Any) -> Any:
    """``now`` without the tokenizer's sha256 where ``was`` (written before it was recorded) has none."""
    if isinstance(was, dict) and isinstance(now, dict) and "sha256" not in was:
        return {k: v for k, v in now.items() if k != "sha256"}
    return now


def _listed(names: Any) -> str:
    return "[" + ", ".join(map(str, names)) + "]" if isinstance(names, (list, tuple)) else "(not recorded)"


def _command_changes(was: Any, now: Any, shown: int = 3) -> str:
    """ "seed: 0 → 1, limit: 100 → 50" for the recorded options that differ from this run's (at most
    ``shown`` named); "" when either is not a recorded dict of options."""
    if not isinstance(was, dict) or not isinstance(now, dict):
        return ""

    def value(options: dict[str, Any], other: dict[str, Any], key: str) -> str:
        if key not in options:  # a flag left out of the record when off (amp)
            return "off" if isinstance(other.get(key), bool) else "not recorded"
        v = options[key]
        if isinstance(v, bool):
            return "on" if v else "off"
        if v is None:  # not given; said so where the other run gave the word "none" (--normalize none)
            return "not given" if other.get(key) == "none" else "none"
        return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)

    keys = [k for k in dict.fromkeys([*was, *now]) if value(was, now, k) != value(now, was, k)]
    diff = ", ".join(f"{k}: {value(was, now, k)} → {value(now, was, k)}" for k in keys[:shown])
    return diff + (f" and {len(keys) - shown} more" if len(keys) > shown else "")


def _methods(recorded: Any) -> list[str]:
    return [str(m) for m in recorded] if isinstance(recorded, (list, tuple)) else []


def _changed(names: list[str], was: Any, now: Any) -> str:
    """ "hidden_states.0: cls → mean, …" for the layers whose pooling differs (at most three named)."""
    was, now = _methods(was), _methods(now)
    if len(was) != len(now):
        return f"{', '.join(was) or 'not recorded'}, now {', '.join(now) or 'not recorded'}"
    diff = [(names[i] if i < len(names) else f"layer {i}", a, b) for i, (a, b) in enumerate(zip(was, now)) if a != b]
    shown = ", ".join(f"{n}: {a} → {b}" for n, a, b in diff[:3])
    return shown + (f" and {len(diff) - 3} more layers" if len(diff) > 3 else "")
