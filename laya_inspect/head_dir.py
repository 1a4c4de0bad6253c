"""A trained head is a directory: config.json (constructor arguments, layer names, the fingerprint of
the cache and backbone it was trained on), weights.pt (a plain state_dict, loaded weights-only), and
whatever the trainer adds beside them (metrics.json, train_log.csv).

Saving, loading and checking head directories, and :func:`export_head`, which turns the head that
`laya-inspect train` stored in a zoo checkpoint into such a directory. A head directory is written
whole under a temporary name and renamed into place, so a killed run leaves the old directory or
the new one; loading checks every file and ends in one :class:`CacheError` line for any damage."""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import math
import os
import pickle
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from . import __version__
from .cache.fingerprint import fingerprint_of, mismatch_said
from .cache.store import FeatureStore
from .compare.records import BadField, checked_field
from .errors import (
    PICKLED_OBJECT,
    CacheError,
    InputError,
    LayaError,
    NotFoundError,
    UnsafeCheckpointError,
    few,
    suggest,
)
from .files import atomic_dir, check_out, plain, write_bytes, write_json, write_text
from .heads import HEADS, PSI_CHOICES, STANDARDIZE_CHOICES, Head

HEAD_SCHEMA_VERSION = 1
CONFIG, WEIGHTS = "config.json", "weights.pt"
REWRITE = "write it again with `laya-inspect fit-head` or `laya-inspect export-head`"
FileWriter = Callable[[Path], object]


def cache_identity(store: FeatureStore) -> dict[str, Any]:
    """What a head records about the cache it was trained on."""
    return {
        "cache_fingerprint": store.fingerprint,
        # what it is computed from, so that a refusal can say which part of another cache differs
        "cache_fingerprint_inputs": store.fingerprint_inputs,
        # the rows of each split: another split --seed or --limit gives the same features of other rows
        "cache_rows": {split: split_rows(store, split) for split in store.splits},
        "cache_path": str(store.path),
        "layer_names": store.layer_names,
        "class_names": store.class_names,
        "backbone": {"model_spec": store.attrs.get("model_spec"), "weights_sha256": store.attrs.get("weights_sha256")},
        # what extract warned about (random weights, a backbone trained to chance, …): read beside every result
        "cache_warnings": cache_warnings(store),
        **({} if store is store.whole else {"cache_layer_names": store.whole.layer_names}),
    }


def other_cache(head_dir: str | Path, config: Mapping[str, Any], store: FeatureStore) -> str | None:
    """Why the head was not trained on ``store``, or None: another feature space (backbone, layers,
    pooling, transforms, the --amp forward or data source), or the same features of other rows (another split seed,
    ``--limit`` or data files), whose test split may hold rows the head was trained on."""
    recorded, where = config.get("cache_fingerprint"), config.get("cache_path")
    if recorded != store.fingerprint:
        return (
            f"head {head_dir} was trained on a cache with fingerprint {recorded} ({where}), not on {store.path} "
            f"(fingerprint {store.fingerprint}): {what_differs(config, store)}"
        )
    rows = config.get("cache_rows")
    if not isinstance(rows, dict):  # a head written before cache_rows: the data fingerprint it recorded, if any
        return _other_data(head_dir, config, store)
    lacking = [s for s in store.splits if s not in rows]
    if lacking:
        raise _bad(
            Path(head_dir) / CONFIG,
            f"field cache_rows has no split {', '.join(map(repr, lacking))} of {store.path}, the cache it was fitted "
            f"on (fingerprint {store.fingerprint}), so its test rows cannot be checked",
        )
    moved = [s for s in rows if s in store.splits and rows[s] != split_rows(store, s)]
    if moved:
        return (
            f"head {head_dir} was trained on {where}, the same features of other rows (split {', '.join(moved)} "
            f"holds other rows in {store.path}: another split --seed or --limit): its test rows may be rows the "
            "head was trained on"
        )
    return None


def _other_data(head_dir: str | Path, config: Mapping[str, Any], store: FeatureStore) -> str | None:
    """The rows check of a head written before ``cache_rows`` (laya-inspect before a3373bb recorded
    ``cache_data_fingerprint``, the fingerprint of the data extract read)."""
    rows, here = config.get("cache_data_fingerprint"), str(store.whole.attrs.get("data_fingerprint") or "")
    if rows and here and rows != here:
        return (
            f"head {head_dir} was trained on {config.get('cache_path')}, the same features of other rows (data "
            f"fingerprint {rows}, {store.path}: {here}; another split --seed, --limit or changed data files): "
            "its test rows may be rows the head was trained on"
        )
    return None


def unchecked_rows(head_dir: str | Path, config: Mapping[str, Any], store: FeatureStore) -> str | None:
    """A line to read beside the results of a head whose config.json records neither ``cache_rows``
    nor the older ``cache_data_fingerprint`` (a head written by an early laya-inspect, or one whose
    field was removed): whether it is read on rows it was trained on cannot be checked. None when it
    can, or when the head was trained on another cache (:func:`other_cache` says that)."""
    if config.get("cache_fingerprint") != store.fingerprint or isinstance(config.get("cache_rows"), dict):
        return None
    if config.get("cache_data_fingerprint") and store.whole.attrs.get("data_fingerprint"):
        return None
    return (
        f"head {head_dir} records no cache_rows in its {CONFIG} (written by an early laya-inspect, or the field "
        "was removed): whether the rows it is read on here are rows it was trained on cannot be checked"
    )


def what_differs(config: Mapping[str, Any], store: FeatureStore) -> str:
    """Which part of the fingerprint of the head's cache differs from ``store``'s: from the inputs the
    head recorded, else those of its cache where it still is (checked against the recorded fingerprint),
    else from the backbone, layers and class names that older heads recorded."""
    recorded = config.get("cache_fingerprint")
    theirs = config.get("cache_fingerprint_inputs")
    if not (isinstance(theirs, dict) and fingerprint_of(theirs) == recorded):
        theirs = None
        where = config.get("cache_path")
        if isinstance(where, str) and where and Path(where).is_file():
            try:
                with FeatureStore(where) as found:
                    if found.fingerprint == recorded:
                        theirs = found.fingerprint_inputs
            except (LayaError, OSError):
                pass
    backbone = config.get("backbone")
    backbone = backbone if isinstance(backbone, dict) else {}
    known = {
        "model_spec": backbone.get("model_spec"),
        "weights_sha256": backbone.get("weights_sha256"),
        "layer_names": config.get("cache_layer_names") or config.get("layer_names"),
        "class_names": config.get("class_names"),
    }
    return mismatch_said(theirs, store.fingerprint_inputs, known)


def fit_warnings(head_dir: str | Path, config: Mapping[str, Any]) -> list[str]:
    """What fit-head's quality gate said of this head's kind (seeds that disagree, an α constant
    across inputs, a head near chance), from the summary.json of the fit-head folder that holds
    ``head_dir`` as ``<head>/seed_<S>/``: read beside every result of the head. Nothing when the
    folder was moved out of it, or the summary is of another run (cache, rows or seeds)."""
    d = Path(head_dir).resolve()
    try:
        summary = json.loads((d.parent.parent / "summary.json").read_text(encoding="utf-8"))
        cache = summary["cache"]
        (entry,) = [h for h in summary["heads"] if h.get("head") == d.parent.name]
        ours = cache["cache_fingerprint"] == config.get("cache_fingerprint") and config.get("seed") in entry["seeds"]
        said = [str(w) for w in entry.get("warnings") or []]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # no fit-head folder around it
        return []
    if not ours or cache.get("cache_rows", config.get("cache_rows")) != config.get("cache_rows"):
        return []
    return [f"fit-head said of {d.parent.name} ({d.parent.parent / 'summary.json'}): {w}" for w in said]


def trained_split(config: Mapping[str, Any]) -> str | None:
    """The split of its cache a head was trained on, as its config records it (None: not recorded)."""
    split = config.get("split")
    return split.get("train_split") if isinstance(split, dict) else None


def split_rows(store: FeatureStore, split: str) -> str:
    """Which rows a split holds: 16 hex digits over their source indices and labels, in order."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(store.index(split), dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(store.labels(split), dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def cache_warnings(store: FeatureStore) -> list[str]:
    """The warnings extract recorded in the cache (``warnings``), as a list of lines."""
    said = store.attrs.get("warnings")
    return [str(w) for w in said] if isinstance(said, list) else []


# -- writing ----------------------------------------------------------------------------------


def _target(out_dir: str | Path) -> Path:
    out = Path(os.path.abspath(out_dir))  # "." and "x/.." need a real name for the temporary sibling
    if not out.name:
        raise InputError(f"cannot write a head directory at {out_dir}; give a folder name")
    return out


# the config.json fields whose sha256 a head records (names_sha256): an edit that keeps them plausible
# (another layer of the same width, in the cache's order) would make the head read other features
DIGESTED = ("layer_names", "class_names")


def _names_digest(names: Any) -> str:
    text = json.dumps(plain(names), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _check_digests(path: Path, config: Mapping[str, Any]) -> None:
    """layer_names and class_names against the digests laya-inspect recorded beside them when it
    wrote the head (names_sha256; a head written before has none and is read as before)."""
    recorded = config.get("names_sha256")
    if recorded is None:
        return
    if not isinstance(recorded, dict):
        raise _bad(path, f"field names_sha256 is {_one_line(repr(recorded), 60)}, not an object")
    for key in DIGESTED:
        if key in recorded and _names_digest(config.get(key)) != recorded[key]:
            raise _bad(
                path,
                f"field {key} was changed after laya-inspect wrote the head (it no longer matches "
                f"names_sha256.{key}): the head would read other layers or name other classes",
            )


def _write_head(d: Path, head: Head, meta: Mapping[str, Any], files: Mapping[str, FileWriter]) -> None:
    core = {
        "schema_version": HEAD_SCHEMA_VERSION,
        "tool_version": __version__,
        "kind": head.kind,
        "kwargs": head.config(),
    }
    config = {**core, **meta, **core}  # core keys first in the file, and meta cannot replace them
    digests = {k: _names_digest(config[k]) for k in DIGESTED if isinstance(config.get(k), list)}
    config = {**config, **({"names_sha256": digests} if digests else {})}
    text = json.dumps(plain(config), indent=2, ensure_ascii=False, allow_nan=False, default=str)
    write_text(d / CONFIG, text + "\n")
    # Serialised in memory first: torch's zip writer reports a full disk as a bare RuntimeError, a
    # plain file write as an OSError with its errno (one WriteError line naming the path).
    buf = io.BytesIO()
    torch.save(head.state_dict(), buf)
    write_bytes(d / WEIGHTS, buf.getvalue())
    for name, writer in files.items():
        writer(d / name)


def save_head(
    out_dir: str | Path,
    head: Head,
    *,
    meta: Mapping[str, Any],
    files: Mapping[str, FileWriter] | None = None,
    force: bool = False,
) -> Path:
    """Write ``head`` as a head directory: config.json (``meta`` beside its kind and constructor
    arguments), weights.pt, and each of ``files`` (name → ``writer(path)``, e.g. metrics.json).

    The directory is built under a temporary name beside ``out_dir`` and renamed into place at the
    end. An earlier head directory there is replaced whole; a non-empty folder that is not one is
    refused unless ``force``. The caller holds the output lock (fit-head locks its whole output)."""
    out = _target(out_dir)
    if out.is_dir() and not force and not (out / CONFIG).is_file() and any(out.iterdir()):
        raise InputError(
            f"{out} is a non-empty folder but not a head directory (no {CONFIG}); choose another folder, "
            "or pass force=True to replace it whole"
        )
    with atomic_dir(out, force=True, lock=False, flag="head directory") as tmp:
        _write_head(tmp, head, meta, files or {})
    return Path(out_dir)


# -- reading ----------------------------------------------------------------------------------


def _bad(where: Path | str, problem: str, fix: str = REWRITE) -> CacheError:
    return CacheError(f"{where} {problem}; {fix}")


def _one_line(e: BaseException | str, limit: int = 160) -> str:
    """An exception's message (or any text) on one line, cut at ``limit`` characters."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


# the training settings read from a head's config.json (fit-head's defaults where it records none)
TRAINING_KEYS = ("lr", "batch_size", "weight_decay")


def training_settings(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """lr, batch size and weight decay from the head's config.json ("training"), its train split and
    validation fraction ("split"), else fit-head's defaults."""
    from .training.fit_config import FitConfig

    default = FitConfig()
    raw, split = cfg.get("training"), cfg.get("split")
    recorded: dict[str, Any] = raw if isinstance(raw, dict) else {}
    out: dict[str, Any] = {}
    for k in TRAINING_KEYS:
        v = recorded.get(k)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
        out[k] = v if ok else getattr(default, k)
    mine = all(k in recorded for k in TRAINING_KEYS)
    out["source"] = "recorded in the head's config.json" if mine else "fit-head's defaults where config.json is silent"
    recorded_split: dict[str, Any] = split if isinstance(split, dict) else {}
    out["train_split"] = str(recorded_split.get("train_split") or "train")
    fraction = recorded_split.get("val_fraction")
    ok = isinstance(fraction, (int, float)) and not isinstance(fraction, bool) and 0 < fraction < 1
    out["val_fraction"] = float(fraction) if ok and fraction is not None else default.val_fraction
    return out


def read_head_config(head_dir: str | Path) -> dict[str, Any]:
    """config.json of a head directory, checked: an object with this schema_version, a registered
    ``kind``, and ``kwargs`` naming exactly the arguments that head's constructor takes."""
    d = Path(head_dir)
    if not d.exists():
        raise NotFoundError(
            f"{d} is not a head directory (it does not exist); create one with `laya-inspect fit-head` "
            "or `laya-inspect export-head`"
        )
    if not d.is_dir():
        folder = d.parent if d.name in (CONFIG, WEIGHTS) else None
        fix = f"give its folder {folder}" if folder else "give the folder that fit-head or export-head wrote"
        raise _bad(d, f"is a file, not a head directory (a folder with {CONFIG} and {WEIGHTS})", fix)
    path = d / CONFIG
    if not path.is_file():
        raise _bad(d, f"is not a head directory (no {CONFIG}: not written by laya-inspect, or its write was cut)")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise _bad(path, f"is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except (UnicodeDecodeError, RecursionError) as e:
        raise _bad(path, f"is not valid JSON ({_one_line(e)})") from None
    except OSError as e:
        raise _bad(path, f"cannot be read ({e.strerror or e})", "check its permissions") from None
    if not isinstance(config, dict):
        raise _bad(path, f"holds a JSON {type(config).__name__}, not an object")
    if "schema_version" not in config:
        raise _bad(path, "has no schema_version")
    if config["schema_version"] != HEAD_SCHEMA_VERSION:
        raise _bad(
            path,
            f"has schema_version {config['schema_version']!r}; this laya-inspect reads {HEAD_SCHEMA_VERSION}",
            "use the laya-inspect that wrote it, or " + REWRITE,
        )
    kind, kwargs = config.get("kind"), config.get("kwargs")
    if not isinstance(kind, str):
        raise _bad(path, "has no head kind" if kind is None else f"has kind {kind!r}, not a name")
    if kind not in HEADS:
        raise _bad(path, f"names an unknown head kind {kind!r} ({suggest(kind, HEADS.names())})")
    if not isinstance(kwargs, dict):
        raise _bad(
            path, "has no kwargs (constructor arguments)" if kwargs is None else "has kwargs that are not an object"
        )
    params = [p for p in inspect.signature(HEADS.get(kind).__init__).parameters.values() if p.name != "self"]
    takes = ", ".join(p.name for p in params)
    unknown = [repr(k) for k in kwargs if k not in {p.name for p in params}]
    missing = [p.name for p in params if p.default is inspect.Parameter.empty and p.name not in kwargs]
    if unknown or missing:
        what = "; ".join(f"{w} {few(keys, 4)}" for w, keys in (("unknown", unknown), ("missing", missing)) if keys)
        raise _bad(path, f"has kwargs that do not build a {kind} head ({what}; it takes {takes})")
    try:
        _check_fields(config)
    except BadField as e:
        raise _bad(path, f"field {str(e).lstrip('.')}") from None
    return config


def _check_fields(config: Mapping[str, Any]) -> None:
    """Every field of a head's config.json that a loader reads, checked on its own and against the
    others: the constructor arguments (kwargs), layer_names (one per layer of kwargs.widths, which
    weights.pt's adapters follow), class_names (one per class of kwargs.num_classes) and the cache
    record (cache_fingerprint, cache_rows). A field a head written by hand or by an earlier version
    lacks may be absent; one that is there must be right. Raises :class:`BadField` naming the field."""
    kind, kwargs = config["kind"], config["kwargs"]
    for k, v in kwargs.items():
        ok, want = _KWARG_RULES.get(k, (lambda _: True, ""))
        if not ok(v):
            raise BadField(f"kwargs.{k} is {_one_line(repr(v), 60)}, which must be {want} for a {kind} head")
    counts = {
        "layer_names": (len(kwargs["widths"]), f"kwargs.widths has {len(kwargs['widths'])} layers"),
        "class_names": (kwargs["num_classes"], f"kwargs.num_classes is {kwargs['num_classes']}"),
    }
    for key, (n, what) in counts.items():
        names = checked_field(config, key, "strs", "", optional=True)
        if names is None or (key == "class_names" and not names):  # not recorded
            continue
        if len(names) != n:
            raise BadField(f"{key} has {len(names)} names, but {what}")
        twice = sorted({x for x in names if names.count(x) > 1})
        if twice:
            raise BadField(f"{key} names {few([repr(x) for x in twice], 3)} twice")
    checked_field(config, "cache_fingerprint", (str, type(None)), "", optional=True)
    checked_field(config, "cache_data_fingerprint", (str, type(None)), "", optional=True)
    rows = checked_field(config, "cache_rows", dict, "", optional=True)
    for split in rows or {}:
        checked_field(rows, split, str, ".cache_rows")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# What each constructor argument of the registered heads must be; JSON can hold anything.
_KWARG_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "widths": (
        lambda v: isinstance(v, list) and bool(v) and all(_is_int(w) and w >= 1 for w in v),
        "a non-empty list of positive integers",
    ),
    "num_classes": (lambda v: _is_int(v) and v >= 2, "an integer ≥ 2"),
    "d_star": (lambda v: _is_int(v) and v >= 1, "a positive integer"),
    "score_width": (lambda v: v is None or (_is_int(v) and v >= 1), "a positive integer or null"),
    "tau": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0,
        "a finite number > 0",
    ),
    "psi": (lambda v: v in PSI_CHOICES, f"one of {', '.join(PSI_CHOICES)}"),
    "init": (lambda v: v in ("glorot", "torch"), "'glorot' or 'torch'"),
    "standardize": (
        lambda v: v is None or v in STANDARDIZE_CHOICES,
        f"null or one of {', '.join(STANDARDIZE_CHOICES)}",
    ),
}


def _construct(kind: str, kwargs: Mapping[str, Any], fail: Callable[[str], LayaError]) -> Head:
    cls = HEADS.get(kind)
    for k, v in kwargs.items():
        ok, want = _KWARG_RULES.get(k, (lambda _: True, ""))
        if not ok(v):
            raise fail(f"has {kind} kwarg {k}={_one_line(repr(v), 60)}, which must be {want}")
    try:
        return cls(**kwargs)
    except (InputError, TypeError, ValueError, OverflowError) as e:  # a head added later, without rules here
        raise fail(f"has kwargs that do not build a {kind} head ({_one_line(e)})") from None


# the constructor arguments that set the shapes of a head's weights
SHAPING = ("widths", "num_classes", "d_star", "score_width", "psi", "standardize")


def _build(
    kind: str, kwargs: Mapping[str, Any], state: Any, fail: Callable[[str], LayaError], config: str = "its config"
) -> Head:
    """The head ``kind(**kwargs)`` holding ``state``; every mismatch ends in ``fail(problem)``.
    The shapes are checked on a meta-device head first, so kwargs that ask for a huge head cost no memory."""
    if not isinstance(state, Mapping) or not all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in state.items()
    ):
        raise fail(f"holds a {type(state).__name__} that is not a state_dict (names → tensors)")
    with torch.device("meta"):
        shape_of = {k: tuple(v.shape) for k, v in _construct(kind, kwargs, fail).state_dict().items()}
    missing = [k for k in shape_of if k not in state]
    unexpected = [k for k in state if k not in shape_of]
    shaped = ", ".join(f"kwargs.{k} {kwargs[k]}" for k in SHAPING if k in kwargs)
    described = f"the {kind} head {config} describes ({shaped})"
    if missing or unexpected:
        parts = [f"missing {few(missing, 4)}"] * bool(missing) + [f"unexpected {few(unexpected, 4)}"] * bool(unexpected)
        raise fail(f"does not fit {described}: {'; '.join(parts)}; one of the two was edited or damaged")
    bad = [f"{k} {tuple(state[k].shape)} vs {s}" for k, s in shape_of.items() if tuple(state[k].shape) != s]
    if bad:
        raise fail(
            f"does not fit {described}: shape (weights vs config) {', '.join(bad[:3])}; "
            "one of the two was edited or damaged"
        )
    for k, v in state.items():
        if not v.is_floating_point():
            raise fail(f"holds {k} of dtype {v.dtype}; a head's weights are floating point")
        if v.dtype != torch.float32:  # fit-head, export-head and train write float32; a cast would hide the edit
            raise fail(
                f"holds {k} as {v.dtype}, not float32 (laya-inspect writes a head's weights as float32; a converted "
                "file gives other logits than the head that was measured)"
            )
        if not bool(torch.isfinite(v).all()):
            raise fail(f"holds non-finite values (NaN or inf) in {k}")
        if k.startswith("standardizers.") and k.endswith(".scale") and not bool((v > 0).all()):
            raise fail(f"holds a standardisation scale ≤ 0 in {k} (each scale is a layer's spread, > 0)")
    head = _construct(kind, kwargs, fail)
    head.load_state_dict(state, strict=True)
    return head.eval()


def _read_weights(d: Path) -> Any:
    path = d / WEIGHTS
    if not path.is_file():
        raise _bad(d, f"has {CONFIG} but no {WEIGHTS} file (its write was cut?)")
    try:
        with warnings.catch_warnings():  # damaged bytes read as an odd protocol: the error below says it
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            return torch.load(path, map_location="cpu", weights_only=True)
    except OSError as e:
        raise _bad(path, f"cannot be read ({e.strerror or e})", "check its permissions") from None
    except pickle.UnpicklingError as e:
        if PICKLED_OBJECT.search(str(e)):
            raise _bad(
                path, "holds pickled Python objects, which would run code; refused (a head is a plain state_dict)"
            ) from None
        raise _bad(path, f"is not a readable PyTorch file ({_one_line(e)})") from None
    except Exception as e:  # torch raises many kinds on damaged bytes (RuntimeError, EOFError, KeyError, …)
        raise _bad(
            path, f"is not a readable PyTorch file (truncated or damaged: {type(e).__name__}: {_one_line(e)})"
        ) from None


def load_head(
    head_dir: str | Path,
    *,
    store: FeatureStore | None = None,
    force: bool = False,
    map_location: str | torch.device = "cpu",
    hint: str = "pass --force to use it anyway",
) -> tuple[Head, dict[str, Any]]:
    """Rebuild a head on ``map_location``; with ``store``, refuse one trained on another cache's
    feature space, ending in ``hint`` (the caller's own flag; ``force`` only warns, but widths that
    cannot be read are always refused)."""
    d = Path(head_dir)
    config = read_head_config(d)
    msg = None if store is None else other_cache(head_dir, config, store)
    if msg is not None:
        if not force:
            raise CacheError(f"{msg}; {hint}")
        warnings.warn(msg, stacklevel=2)
    if store is not None:
        _refuse_a_layer_subset(d, config, store)
        if msg is None:
            _check_against_cache(d, config, store)
    _check_digests(d / CONFIG, config)
    state = _read_weights(d)
    head = _build(config["kind"], config["kwargs"], state, lambda problem: _bad(d / WEIGHTS, problem), CONFIG)
    if store is not None and head.widths != store.widths:
        raise CacheError(
            f"head {head_dir} reads layers of widths {head.widths}, but {store.path} holds widths {store.widths}; "
            "use the cache the head was trained on"
        )
    if store is not None and head.num_classes != store.num_classes:
        raise CacheError(
            f"head {head_dir} predicts {head.num_classes} classes, but {store.path} holds {store.num_classes}; "
            "use the cache the head was trained on"
        )
    return head.to(map_location), config


def _check_against_cache(d: Path, config: Mapping[str, Any], store: FeatureStore) -> None:
    """The layer and class names of a head trained on ``store``'s cache (same fingerprint) checked
    against that cache: layers it holds, in its order, of the widths kwargs.widths gives, the ones
    ``store`` reads; the cache's classes. An edited name would make the head read other layers."""
    path, whole, kwargs = d / CONFIG, store.whole, config["kwargs"]
    names, classes = config.get("layer_names"), config.get("class_names")
    if isinstance(names, list):
        unknown = [n for n in names if n not in whole.layer_names]
        if unknown:
            raise _bad(
                path,
                f"field layer_names names {few([repr(n) for n in unknown], 3)}, a layer {whole.path} (the cache it "
                f"was fitted on) does not hold ({suggest(unknown[0], whole.layer_names)})",
            )
        at = [whole.layer_names.index(n) for n in names]
        if at != sorted(at):
            in_order = [n for n in whole.layer_names if n in names]
            raise _bad(
                path,
                f"field layer_names lists {', '.join(names)}, not in the order of {whole.path}'s layers "
                f"({', '.join(in_order)}): the head would read each layer in another one's place",
            )
        widths = [whole.widths[i] for i in at]
        off = [i for i, (w, v) in enumerate(zip(widths, kwargs["widths"])) if w != v]
        if off:
            i = off[0]
            raise _bad(
                path,
                f"field layer_names names {names[i]!r} (width {widths[i]} in {whole.path}) as layer {i}, which "
                f"kwargs.widths gives width {kwargs['widths'][i]}",
            )
        if names != store.layer_names:
            raise _bad(
                path, f"field layer_names is {', '.join(names)}, but it is read here on {', '.join(store.layer_names)}"
            )
    if isinstance(classes, list) and classes and classes != store.class_names:
        raise _bad(
            path,
            f"field class_names is {few([repr(c) for c in classes], 6)}, but {whole.path}, the cache it was fitted "
            f"on, names its classes {few([repr(c) for c in store.class_names], 6)}",
        )


def refuse_repeats(head_dirs: Sequence[str | Path], why: str) -> None:
    """InputError when one head is given twice: the same directory (also through a fit-head folder
    that holds it, or another spelling of its path), or a copy of it (the same weights.pt bytes).
    ``why``: what the command would do with it, e.g. "compare would score it twice"."""
    seen: dict[str, Path] = {}
    for given in head_dirs:
        d = Path(given)
        weights = d / WEIGHTS
        key = hashlib.sha256(weights.read_bytes()).hexdigest() if weights.is_file() else str(d.resolve())
        if key in seen:
            first = seen[key]
            said = f"{d} is given twice" if d.resolve() == first.resolve() else f"{d} and {first} are the same head"
            raise InputError(f"{said}; {why}, so give each head once")
        seen[key] = d


def store_for_heads(store: FeatureStore, head_dirs: Sequence[str | Path]) -> FeatureStore:
    """``store``, or the view of the layers the heads read (:meth:`FeatureStore.keep_layers`) when
    they were trained on some of its layers: the head prune writes of the layers it keeps. Heads on
    different sets of this cache's layers cannot be read together."""
    whole = store.whole
    reads = {str(d): _some_layers(read_head_config(d), whole) for d in head_dirs}
    kinds = set(reads.values())
    if len(kinds) > 1:
        said = "; ".join(f"{d} reads {', '.join(n) if n else 'every layer'}" for d, n in reads.items())
        raise InputError(f"the heads read different layers of {whole.path} ({said}); give them one at a time")
    (names_read,) = kinds or {None}
    return whole if names_read is None else whole.keep_layers(list(names_read))


def _some_layers(config: Mapping[str, Any], store: FeatureStore) -> tuple[str, ...] | None:
    """The layers a head reads when it was trained on ``store``'s cache and reads only some of
    ``store``'s layers (fit-head --layers, prune's head/), else None."""
    names = config.get("layer_names")
    if config.get("cache_fingerprint") != store.fingerprint or not isinstance(names, list):
        return None
    return tuple(names) if set(names) < set(store.layer_names) else None


def _refuse_a_layer_subset(d: Path, config: dict[str, Any], store: FeatureStore) -> None:
    """A head trained on this cache that reads only some of its layers (fit-head --layers, prune's
    head/) cannot be fed all of them: say so, and how to use it, instead of "use the cache the head
    was trained on"."""
    names = _some_layers(config, store)
    if names is None:
        return
    raise CacheError(
        f"head {d} reads {len(names)} of the {len(store.layer_names)} layers of {store.path} ({', '.join(names)}), "
        "as fit-head --layers and prune's head of the layers it keeps do; load it with "
        "store.keep_layers(config['layer_names']) (or laya_inspect.head_dir.store_for_heads(store, [DIR]))"
    )


# -- export from a zoo checkpoint -------------------------------------------------------------


def head_from_checkpoint(obj: dict[str, Any], *, source: str = "this zoo checkpoint") -> Head:
    """The jointly trained head stored in a zoo checkpoint (read with ``torch.load(weights_only=True)``)."""
    spec = obj.get("head") if isinstance(obj, dict) else None
    if not isinstance(spec, dict) or "kind" not in spec:
        raise InputError(f"{source} holds no head; it was not written by `laya-inspect train`")

    def fail(problem: str) -> InputError:
        return InputError(f"the head stored in {source} {problem}; train it again with `laya-inspect train`")

    kind, kwargs = spec["kind"], spec.get("config")
    if not isinstance(kind, str) or kind not in HEADS:
        raise fail(f"names an unknown head kind {kind!r} ({suggest(str(kind), HEADS.names())})")
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise fail("has no constructor arguments (config)")
    return _build(kind, kwargs, spec.get("state_dict"), fail)


def _check_same_weights(checkpoint: str | Path, store: FeatureStore) -> None:
    """The cache must come from this very file: same layer names are not enough (another checkpoint
    of the same architecture has them too, and its features mean something else)."""
    from .models.weights import sha256_file

    recorded = store.attrs.get("weights_sha256") or None
    actual = sha256_file(checkpoint)
    if recorded == actual:
        return
    spec, data = store.attrs.get("model_spec") or "zoo:<arch>", store.attrs.get("data_spec") or "<data>"
    fix = f"extract a cache from it: laya-inspect extract --model {spec} --weights {checkpoint} --data {data}"
    if recorded is None:
        raise InputError(
            f"{store.path} records no weights hash (it was extracted without --weights), so it is not a cache "
            f"of {checkpoint} (sha256 {actual}); {fix}"
        )
    raise InputError(
        f"{store.path} was extracted from weights with sha256 {recorded} "
        f"({store.attrs.get('weights_path') or 'path not recorded'}), but {checkpoint} has sha256 {actual}: "
        f"the head would read another network's features; {fix}"
    )


def export_head(
    checkpoint: str | Path, store: FeatureStore, out_dir: str | Path, *, split: str = "test", force: bool = False
) -> dict[str, Any]:
    """Write the jointly trained head of a `train` checkpoint as a head directory bound to ``store``.

    ``store`` must be the cache `extract` wrote from that same checkpoint (its ``weights_sha256`` is
    the checkpoint file's sha256, and its layers are the head's); the head's accuracy on the cache's
    ``split`` is returned beside the accuracy `train` measured (same rows and features give the same
    number), so `compare` can score the jointly trained α — the paper's setting. A non-empty
    ``out_dir`` is refused unless ``force``, which replaces it whole.
    """
    from .models.weights import read_checkpoint

    check_out(_target(out_dir), force=force, command="export-head", inputs=[checkpoint, store.path])
    try:
        ckpt = read_checkpoint(checkpoint)
    except UnsafeCheckpointError:
        raise InputError(
            f"{checkpoint} is a pickled model, not a checkpoint written by `laya-inspect train`; export-head reads "
            "checkpoints weights-only and never runs code from them"
        ) from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != "laya-inspect-zoo":
        raise InputError(f"{checkpoint} is not a checkpoint written by `laya-inspect train`")
    head = head_from_checkpoint(ckpt, source=str(checkpoint))
    _check_same_weights(checkpoint, store)
    if list(ckpt["head"].get("layer_names", [])) != list(store.layer_names):
        raise InputError(
            f"the head in {checkpoint} reads {ckpt['head'].get('layer_names')}, "
            f"but {store.path} holds {store.layer_names}; extract those layers from that checkpoint"
        )
    metrics = {k: v for k, v in (ckpt.get("metrics") or {}).items() if k != "history"}
    meta = {
        **cache_identity(store),
        "seed": ckpt.get("seed"),
        "checkpoint": str(checkpoint),
        "source": "jointly trained head exported from a laya-inspect zoo checkpoint",
        "metrics": metrics,
    }
    hs = [torch.from_numpy(np.ascontiguousarray(x)) for x in store.layers(split)]
    labels = store.labels(split)
    with torch.no_grad():
        out = head(hs)
    summary = {
        "checkpoint": str(checkpoint),
        "cache": str(store.path),
        "kind": head.kind,
        "split": split,
        "n": int(len(labels)),
        "accuracy_on_cache": float((out.logits.argmax(1).numpy() == labels).mean()),
        "joint_test_acc": metrics.get("test_acc"),
        "mean_weights_on_cache": None if out.weights is None else out.weights.mean(0).tolist(),
    }
    with atomic_dir(_target(out_dir), force=force, command="export-head", inputs=[checkpoint, store.path]) as tmp:
        _write_head(tmp, head, meta, {"export.json": lambda p: write_json(p, summary)})
    return summary
