"""Writing a head directory whole (:func:`save_head`) and reading it back checked: config.json
(:func:`read_head_config`), weights.pt (weights-only), and the head rebuilt (:func:`load_head`)."""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import math
import os
import pickle
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from ..cache.store import FeatureStore
from ..compare.records import BadField
from ..errors import PICKLED_OBJECT, CacheError, InputError, NotFoundError, few, suggest
from ..files import artifact_header, plain, write_bytes, write_text
from ..heads import HEADS, Head
from ..out_dir import atomic_dir
from .checks import DIGESTED, build, check_digests, check_fields, names_digest
from .common import CONFIG, HEAD_SCHEMA_VERSION, REWRITE, WEIGHTS, FileWriter, bad, one_line
from .match import check_against_cache, other_cache, refuse_a_layer_subset, some_layers


def target_dir(out_dir: str | Path) -> Path:
    out = Path(os.path.abspath(out_dir))  # "." and "x/.." need a real name for the temporary sibling
    if not out.name:
        raise InputError(f"cannot write a head directory at {out_dir}; give a folder name")
    return out


def write_head_files(d: Path, head: Head, meta: Mapping[str, Any], files: Mapping[str, FileWriter]) -> None:
    core = {
        **artifact_header(schema=HEAD_SCHEMA_VERSION),
        "kind": head.kind,
        "kwargs": head.config(),
    }
    config = {**core, **meta, **core}  # core keys first in the file, and meta cannot replace them
    digests = {k: names_digest(config[k]) for k in DIGESTED if isinstance(config.get(k), list)}
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
    out = target_dir(out_dir)
    if out.is_dir() and not force and not (out / CONFIG).is_file() and any(out.iterdir()):
        raise InputError(
            f"{out} is a non-empty folder but not a head directory (no {CONFIG}); choose another folder, "
            "or pass force=True to replace it whole"
        )
    with atomic_dir(out, force=True, lock=False, flag="head directory") as tmp:
        write_head_files(tmp, head, meta, files or {})
    return Path(out_dir)


# the training settings read from a head's config.json (fit-head's defaults where it records none)
TRAINING_KEYS = ("lr", "batch_size", "weight_decay")


def training_settings(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """lr, batch size and weight decay from the head's config.json ("training"), its train split and
    validation fraction ("split"), else fit-head's defaults."""
    from ..training.fit_config import FitConfig

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
        raise bad(d, f"is a file, not a head directory (a folder with {CONFIG} and {WEIGHTS})", fix)
    path = d / CONFIG
    if not path.is_file():
        raise bad(d, f"is not a head directory (no {CONFIG}: not written by laya-inspect, or its write was cut)")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise bad(path, f"is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except (UnicodeDecodeError, RecursionError) as e:
        raise bad(path, f"is not valid JSON ({one_line(e)})") from None
    except OSError as e:
        raise bad(path, f"cannot be read ({e.strerror or e})", "check its permissions") from None
    if not isinstance(config, dict):
        raise bad(path, f"holds a JSON {type(config).__name__}, not an object")
    if "schema_version" not in config:
        raise bad(path, "has no schema_version")
    if config["schema_version"] != HEAD_SCHEMA_VERSION:
        raise bad(
            path,
            f"has schema_version {config['schema_version']!r}; this laya-inspect reads {HEAD_SCHEMA_VERSION}",
            "use the laya-inspect that wrote it, or " + REWRITE,
        )
    kind, kwargs = config.get("kind"), config.get("kwargs")
    if not isinstance(kind, str):
        raise bad(path, "has no head kind" if kind is None else f"has kind {kind!r}, not a name")
    if kind not in HEADS:
        raise bad(path, f"names an unknown head kind {kind!r} ({suggest(kind, HEADS.names())})")
    if not isinstance(kwargs, dict):
        raise bad(
            path, "has no kwargs (constructor arguments)" if kwargs is None else "has kwargs that are not an object"
        )
    params = [p for p in inspect.signature(HEADS.get(kind).__init__).parameters.values() if p.name != "self"]
    takes = ", ".join(p.name for p in params)
    unknown = [repr(k) for k in kwargs if k not in {p.name for p in params}]
    missing = [p.name for p in params if p.default is inspect.Parameter.empty and p.name not in kwargs]
    if unknown or missing:
        what = "; ".join(f"{w} {few(keys, 4)}" for w, keys in (("unknown", unknown), ("missing", missing)) if keys)
        raise bad(path, f"has kwargs that do not build a {kind} head ({what}; it takes {takes})")
    try:
        check_fields(config)
    except BadField as e:
        raise bad(path, f"field {str(e).lstrip('.')}") from None
    return config


def read_weights(d: Path) -> Any:
    path = d / WEIGHTS
    if not path.is_file():
        raise bad(d, f"has {CONFIG} but no {WEIGHTS} file (its write was cut?)")
    try:
        with warnings.catch_warnings():  # damaged bytes read as an odd protocol: the error below says it
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            return torch.load(path, map_location="cpu", weights_only=True)
    except OSError as e:
        raise bad(path, f"cannot be read ({e.strerror or e})", "check its permissions") from None
    except pickle.UnpicklingError as e:
        if PICKLED_OBJECT.search(str(e)):
            raise bad(
                path, "holds pickled Python objects, which would run code; refused (a head is a plain state_dict)"
            ) from None
        raise bad(path, f"is not a readable PyTorch file ({one_line(e)})") from None
    except Exception as e:  # torch raises many kinds on damaged bytes (RuntimeError, EOFError, KeyError, …)
        raise bad(
            path, f"is not a readable PyTorch file (truncated or damaged: {type(e).__name__}: {one_line(e)})"
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
    noted = identity(d)
    config = read_head_config(d)
    msg = None if store is None else other_cache(head_dir, config, store)
    if msg is not None:
        if not force:
            raise CacheError(f"{msg}; {hint}")
        warnings.warn(msg, stacklevel=2)
    if store is not None:
        refuse_a_layer_subset(d, config, store)
        if msg is None:
            check_against_cache(d, config, store)
    check_digests(d / CONFIG, config)
    state = read_weights(d)
    head = build(config["kind"], config["kwargs"], state, lambda problem: bad(d / WEIGHTS, problem), CONFIG)
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
    refuse_replaced(d, noted)  # config.json and weights.pt of one run, not one of each
    return head.to(map_location), config


def identity(head_dir: str | Path) -> tuple[int, int] | None:
    """(st_dev, st_ino) of a head directory, None when it is not there: fit-head --force replaces its
    output whole, so a directory read while that happens changes identity under the same path."""
    try:
        st = os.stat(head_dir)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def refuse_replaced(head_dir: str | Path, noted: tuple[int, int] | None) -> None:
    """CacheError unless ``head_dir`` is still the directory :func:`identity` noted before it was
    read: what was read may mix two runs' files."""
    if noted is None or identity(head_dir) != noted:
        raise CacheError(
            f"{head_dir} was replaced by another run while it was read (fit-head --force?); rerun when that run is done"
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
    reads = {str(d): some_layers(read_head_config(d), whole) for d in head_dirs}
    kinds = set(reads.values())
    if len(kinds) > 1:
        said = "; ".join(f"{d} reads {', '.join(n) if n else 'every layer'}" for d, n in reads.items())
        raise InputError(f"the heads read different layers of {whole.path} ({said}); give them one at a time")
    (names_read,) = kinds or {None}
    return whole if names_read is None else whole.keep_layers(list(names_read))
