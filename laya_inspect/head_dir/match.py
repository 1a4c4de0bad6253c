"""A head and the cache it is read on: what a head records of its cache (:func:`cache_identity`),
whether a cache is that cache, with those rows (:func:`other_cache`, which names what differs), its
layers and classes as the head names them, and what was said of the head and the cache before."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..cache.fingerprint import fingerprint_of, mismatch_said
from ..cache.store import FeatureStore
from ..compare.records import FIT_SAID
from ..errors import CacheError, LayaError, few, suggest
from ..training.quality import NOT_SHOWN_BELOW
from .common import CONFIG, bad


def cache_identity(store: FeatureStore) -> dict[str, Any]:
    """What a head records about the cache it was trained on."""
    return {
        "cache_fingerprint": store.fingerprint,
        # what it is computed from, so that a refusal can say which part of another cache differs
        "cache_fingerprint_inputs": store.fingerprint_inputs,
        # the rows of each split: another split --seed or --limit gives the same features of other rows
        "cache_rows": {split: split_rows(store, split) for split in store.splits},
        "cache_path": str(store.path.resolve()),  # found again from any folder
        "layer_names": store.layer_names,
        "class_names": store.class_names,
        "backbone": {"model_spec": store.attrs.get("model_spec"), "weights_sha256": store.attrs.get("weights_sha256")},
        # what extract warned about (random weights, a backbone trained to chance, …): read beside every result
        "cache_warnings": cache_warnings(store),
        # the extract options left at their defaults: the page's "(default)" marks once the cache is gone
        "cache_config_defaults": store.whole.attrs.get("config_defaults"),
        **({} if store is store.whole else {"cache_layer_names": store.whole.layer_names}),
    }


def other_cache(head_dir: str | Path, config: Mapping[str, Any], store: FeatureStore) -> str | None:
    """Why the head was not trained on ``store``, or None: another feature space (backbone, layers,
    pooling, transforms, the --amp forward or data source), or the same features of other rows (another split seed,
    ``--limit`` or data files), whose test split may hold rows the head was trained on."""
    recorded, where = config.get("cache_fingerprint"), config.get("cache_path")
    if recorded not in store.fingerprints:
        return (
            f"head {head_dir} was trained on a cache with fingerprint {recorded} ({where}), not on {store.path} "
            f"(fingerprint {store.fingerprint}): {what_differs(config, store)}"
        )
    rows = config.get("cache_rows")
    if not isinstance(rows, dict):  # a head written before cache_rows: the data fingerprint it recorded, if any
        return _other_data(head_dir, config, store)
    # which splits extract wrote is not part of the fingerprint: a split the head did not see is not its own
    moved = [s for s in rows if s in store.splits and rows[s] != split_rows(store, s)]
    if moved:
        said = f"split {', '.join(moved)} holds other rows in {store.path}: another split --seed or --limit"
        return _other_rows(head_dir, where, said)
    return None


def _other_rows(head_dir: str | Path, where: Any, said: str) -> str:
    return (
        f"head {head_dir} was trained on {where}, the same features of other rows ({said}): its test rows may be "
        "rows the head was trained on"
    )


def _other_data(head_dir: str | Path, config: Mapping[str, Any], store: FeatureStore) -> str | None:
    """The rows check of a head written before ``cache_rows`` (laya-inspect before a3373bb recorded
    ``cache_data_fingerprint``, the fingerprint of the data extract read)."""
    rows, here = config.get("cache_data_fingerprint"), str(store.whole.attrs.get("data_fingerprint") or "")
    if rows and here and rows != here:
        said = f"data fingerprint {rows}, {store.path}: {here}; another split --seed, --limit or changed data files"
        return _other_rows(head_dir, config.get("cache_path"), said)
    return None


def unchecked_rows(head_dir: str | Path, config: Mapping[str, Any], store: FeatureStore) -> str | None:
    """A line to read beside the results of a head whose config.json records neither ``cache_rows``
    nor the older ``cache_data_fingerprint`` (a head written by an early laya-inspect, or one whose
    field was removed): whether it is read on rows it was trained on cannot be checked. None when it
    can, or when the head was trained on another cache (:func:`other_cache` says that)."""
    if config.get("cache_fingerprint") not in store.fingerprints or isinstance(config.get("cache_rows"), dict):
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
        # a head below the probe whose gap over seeds reaches 0 is a note there, not a warning, but every
        # accuracy or verdict of the head is read with it
        if (entry.get("probe_reference") or {}).get("reading") == NOT_SHOWN_BELOW:
            said += [str(n) for n in entry.get("gate_notes") or [] if str(n).startswith(NOT_SHOWN_BELOW)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # no fit-head folder around it
        return []
    if not ours or cache.get("cache_rows", config.get("cache_rows")) != config.get("cache_rows"):
        return []
    return [FIT_SAID.format(head=d.parent.name, summary=d.parent.parent / "summary.json", warning=w) for w in said]


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


def check_against_cache(d: Path, config: Mapping[str, Any], store: FeatureStore) -> None:
    """The layer and class names of a head trained on ``store``'s cache (same fingerprint) checked
    against that cache: layers it holds, in its order, of the widths kwargs.widths gives, the ones
    ``store`` reads; the cache's classes. An edited name would make the head read other layers."""
    path, whole, kwargs = d / CONFIG, store.whole, config["kwargs"]
    names, classes = config.get("layer_names"), config.get("class_names")
    if isinstance(names, list):
        unknown = [n for n in names if n not in whole.layer_names]
        if unknown:
            raise bad(
                path,
                f"field layer_names names {few([repr(n) for n in unknown], 3)}, a layer {whole.path} (the cache it "
                f"was fitted on) does not hold ({suggest(unknown[0], whole.layer_names)})",
            )
        at = [whole.layer_names.index(n) for n in names]
        if at != sorted(at):
            in_order = [n for n in whole.layer_names if n in names]
            raise bad(
                path,
                f"field layer_names lists {', '.join(names)}, not in the order of {whole.path}'s layers "
                f"({', '.join(in_order)}): the head would read each layer in another one's place",
            )
        widths = [whole.widths[i] for i in at]
        off = [i for i, (w, v) in enumerate(zip(widths, kwargs["widths"])) if w != v]
        if off:
            i = off[0]
            raise bad(
                path,
                f"field layer_names names {names[i]!r} (width {widths[i]} in {whole.path}) as layer {i}, which "
                f"kwargs.widths gives width {kwargs['widths'][i]}",
            )
        if names != store.layer_names:
            raise bad(
                path, f"field layer_names is {', '.join(names)}, but it is read here on {', '.join(store.layer_names)}"
            )
    if isinstance(classes, list) and classes and classes != store.class_names:
        raise bad(
            path,
            f"field class_names is {few([repr(c) for c in classes], 6)}, but {whole.path}, the cache it was fitted "
            f"on, names its classes {few([repr(c) for c in store.class_names], 6)}",
        )


def some_layers(config: Mapping[str, Any], store: FeatureStore) -> tuple[str, ...] | None:
    """The layers a head reads when it was trained on ``store``'s cache and reads only some of
    ``store``'s layers (fit-head --layers, prune's head/), else None."""
    names = config.get("layer_names")
    if config.get("cache_fingerprint") not in store.fingerprints or not isinstance(names, list):
        return None
    return tuple(names) if set(names) < set(store.layer_names) else None


def refuse_a_layer_subset(d: Path, config: dict[str, Any], store: FeatureStore) -> None:
    """A head trained on this cache that reads only some of its layers (fit-head --layers, prune's
    head/) cannot be fed all of them: say so, and how to use it, instead of "use the cache the head
    was trained on"."""
    names = some_layers(config, store)
    if names is None:
        return
    raise CacheError(
        f"head {d} reads {len(names)} of the {len(store.layer_names)} layers of {store.path} ({', '.join(names)}), "
        "as fit-head --layers and prune's head of the layers it keeps do; load it with "
        "store.keep_layers(config['layer_names']) (or laya_inspect.head_dir.store_for_heads(store, [DIR]))"
    )
