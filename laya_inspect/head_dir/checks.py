"""The checks of a head directory's config.json fields (constructor arguments, layer and class names
against their counts and recorded digests) and of weights.pt against them (:func:`build`): each
refusal is one CacheError naming the file and the field."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ..choices import INITS, PSI_CHOICES, STANDARDIZE_CHOICES
from ..compare.records import BadField, checked_field
from ..errors import InputError, LayaError, few
from ..files import plain
from ..heads import HEADS, Head
from .common import bad, one_line

# the config.json fields whose sha256 a head records (names_sha256): an edit that keeps them plausible
# (another layer of the same width, in the cache's order) would make the head read other features
DIGESTED = ("layer_names", "class_names")


def names_digest(names: Any) -> str:
    text = json.dumps(plain(names), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_digests(path: Path, config: Mapping[str, Any]) -> None:
    """layer_names and class_names against the digests laya-inspect recorded beside them when it
    wrote the head (names_sha256; a head written before has none and is read as before)."""
    recorded = config.get("names_sha256")
    if recorded is None:
        return
    if not isinstance(recorded, dict):
        raise bad(path, f"field names_sha256 is {one_line(repr(recorded), 60)}, not an object")
    for key in DIGESTED:
        if key in recorded and names_digest(config.get(key)) != recorded[key]:
            raise bad(
                path,
                f"field {key} was changed after laya-inspect wrote the head (it no longer matches "
                f"names_sha256.{key}): the head would read other layers or name other classes",
            )


def check_fields(config: Mapping[str, Any]) -> None:
    """Every field of a head's config.json that a loader reads, checked on its own and against the
    others: the constructor arguments (kwargs), layer_names (one per layer of kwargs.widths, which
    weights.pt's adapters follow), class_names (one per class of kwargs.num_classes) and the cache
    record (cache_fingerprint, cache_rows). A field a head written by hand or by an earlier version
    lacks may be absent; one that is there must be right. Raises :class:`BadField` naming the field."""
    kind, kwargs = config["kind"], config["kwargs"]
    wrong = bad_kwarg(kwargs)
    if wrong:
        k, v, want = wrong
        raise BadField(f"kwargs.{k} is {one_line(repr(v), 60)}, which must be {want} for a {kind} head")
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
KWARG_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
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
    "init": (lambda v: v in INITS, " or ".join(map(repr, INITS))),
    "standardize": (
        lambda v: v is None or v in STANDARDIZE_CHOICES,
        f"null or one of {', '.join(STANDARDIZE_CHOICES)}",
    ),
    "untrained_classes": (
        lambda v: isinstance(v, list) and all(_is_int(c) and c >= 0 for c in v),
        "a list of class indices (integers ≥ 0)",
    ),
}


def bad_kwarg(kwargs: Mapping[str, Any]) -> tuple[str, Any, str] | None:
    """The first constructor argument KWARG_RULES refuses: (name, value, what it must be)."""
    for k, v in kwargs.items():
        ok, want = KWARG_RULES.get(k, (lambda _: True, ""))
        if not ok(v):
            return k, v, want
    return None


def _construct(kind: str, kwargs: Mapping[str, Any], fail: Callable[[str], LayaError]) -> Head:
    cls = HEADS.get(kind)
    wrong = bad_kwarg(kwargs)
    if wrong:
        k, v, want = wrong
        raise fail(f"has {kind} kwarg {k}={one_line(repr(v), 60)}, which must be {want}")
    try:
        return cls(**kwargs)
    except (InputError, TypeError, ValueError, OverflowError) as e:  # a head added later, without rules here
        raise fail(f"has kwargs that do not build a {kind} head ({one_line(e)})") from None


# the constructor arguments that set the shapes of a head's weights
SHAPING = ("widths", "num_classes", "d_star", "score_width", "psi", "standardize")


def build(
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
