"""The cache's schema in one place: its version, chunking, layer dataset names and how attributes
are stored (JSON text for lists and dicts, "" for None), read by the writer, the shards and the store;
and :func:`check_attrs_end`, which they call before reading an existing file's attributes."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CacheError
from ..files import special_file

SCHEMA_VERSION = 1
# Attributes holding one entry per cached layer, in layer order.
PER_LAYER_ATTRS = (
    "layer_names",
    "layer_types",
    "layer_ops",
    "layer_op_shapes",
    "layer_pooling",
    "layer_shapes",
    "layer_params",
    "layer_macs",
    "layer_roles",
)
JSON_ATTRS = (
    *PER_LAYER_ATTRS,
    "transforms",
    "split_info",
    "class_names",
    "command",
)
# What defines the feature space a head is trained in; split sizes and limits are left out on purpose.
# The cache records the `fingerprint_version` it was created under, and keeps its hash (and its heads)
# whatever later versions change (cache/fingerprint.py): from 2, `compute_dtype` joins them when it is
# not float32 (--amp; older --amp caches already recorded it); from 3, PROVENANCE is left out.
FINGERPRINT_VERSION = 3
FINGERPRINT_KEYS = (
    "model_spec",
    "weights_sha256",
    "layer_names",
    "layer_pooling",
    "transforms",
    "data_spec",
    "class_names",
)
# Parts of `transforms` that say only where a setting came from, not what was done to the inputs:
# "--normalize none" and "the model states no mean/std" give the same rows.
PROVENANCE = {"normalize": ("from", "why")}
CHUNK_ROWS = 1024
# A layer gives one row for every input when its rows' spread is at most this × its largest |value|:
# extract's check as it writes (each row within it of the first row, cache/writer.py) and fit-head's
# constant rule (their RMS std over the training rows, training/quality.py) read this one number.
CONSTANT_SPREAD = 1e-6
# The root attribute holding the sha256 of every other root attribute and every split group's
# attributes (:func:`attrs_digest`), written when the cache is marked complete.
ATTRS_DIGEST = "attrs_sha256"


def encode_attr(key: str, value: Any) -> Any:
    if key in JSON_ATTRS or isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    if value is None:
        return ""
    if isinstance(value, str):
        return str(value)  # plain str: h5py cannot store str subclasses such as torch's TorchVersion
    return value


def decode_attr(value: Any) -> Any:
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str) and value[:1] in "[{" and value[-1:] in "]}":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def attrs_digest(f: Any) -> str:
    """sha256 of a cache's attributes: the root's (all but ATTRS_DIGEST) and each split group's, decoded
    as the reader decodes them and written as canonical JSON, so it is the same in every writer."""
    import h5py

    def plain(obj: Any) -> dict[str, Any]:
        return {k: decode_attr(v) for k, v in obj.attrs.items() if k != ATTRS_DIGEST}

    groups = {name: plain(g) for name, g in f.items() if isinstance(g, h5py.Group)}
    text = json.dumps({"/": plain(f), "groups": groups}, sort_keys=True, separators=(",", ":"), default=_listed)
    return hashlib.sha256(text.encode()).hexdigest()


def with_warnings(attrs: Any, said: Sequence[str]) -> str:
    """The ``warnings`` attribute of a cache whose attributes are ``attrs``, with ``said`` added after
    what it holds (encoded, to be set before the cache is sealed)."""
    return encode_attr("warnings", [*(decode_attr(attrs.get("warnings", "[]")) or []), *said])


def named_twice(names: Any) -> Any:
    """The first entry of the list ``names`` that an earlier one equals, or None."""
    return next((x for i, x in enumerate(names) if x in names[:i]), None)


def seal(f: Any) -> None:
    """Record :func:`attrs_digest` in the open, complete cache ``f``; its attributes change no more."""
    f.attrs[ATTRS_DIGEST] = attrs_digest(f)


def _listed(value: Any) -> Any:
    """JSON for what decode_attr leaves as numpy (array attributes)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)


def layer_key(i: int) -> str:
    return f"layer_{i:03d}"


# Reading a good cache's attributes takes milliseconds. Flipped bytes in a string attribute's heap
# can send libhdf5 into a loop that never returns (seen with h5py 3.16 and HDF5 2.0.0), which no
# Python code can interrupt, so they are read first in a forked child that is given this long.
ATTRS_SECONDS = 60.0


def check_attrs_end(path: Path, what: str, remedy: str) -> None:
    """CacheError unless reading every attribute of the HDF5 file ``path`` (the root's and its groups')
    and each layer dataset's ``name`` (which the reader checks) ends within ATTRS_SECONDS; ``what``
    names the file in the message, ``remedy`` ends it."""
    from ..workers import finishes_in

    def read() -> None:
        import h5py

        with h5py.File(path, "r", locking=False) as f:
            groups = [g for g in f.values() if isinstance(g, h5py.Group)]
            for obj in [f, *groups]:
                for key in obj.attrs:
                    obj.attrs[key]
            for g in groups:
                for key in g:
                    if key.startswith("layer_"):
                        g[key].attrs.get("name")

    if not finishes_in(ATTRS_SECONDS, read):
        raise CacheError(
            f"{what} is damaged: reading its attributes did not finish in {ATTRS_SECONDS:.0f} s (libhdf5 loops "
            f"forever on some damaged files); {remedy}"
        )


HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def not_a_cache(
    path: Path, *, what: str | None = None, remedy: str = "move it away, or choose another --out"
) -> str | None:
    """None when ``path`` is a feature cache laya-inspect wrote (``extract --overwrite`` may replace
    it), else what it is instead. The signature is read before libhdf5 opens anything, so a text file
    is told apart without h5py; a damaged HDF5 file is read under :func:`check_attrs_end`'s guard
    (its error names ``what``, the path by default, and ends with ``remedy``)."""
    if special := special_file(path):
        return f"is {special}, not a cache laya-inspect wrote"
    try:
        with open(path, "rb") as f:
            head = f.read(len(HDF5_SIGNATURE))
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if head != HDF5_SIGNATURE:
        return "is not an HDF5 file, so not a cache laya-inspect wrote"
    check_attrs_end(path, what or str(path), remedy)
    import h5py

    try:
        with h5py.File(path, "r", locking=False) as f:
            ours = all(k in f.attrs for k in ("schema_version", "layer_names", "command"))
            added = _added_objects(f) if ours else []
    except OSError as e:
        return f"is an HDF5 file h5py cannot open ({e})"
    if added:
        shown = ", ".join(added[:3]) + (f" and {len(added) - 3} more" if len(added) > 3 else "")
        return f"is a cache laya-inspect wrote that holds what it does not write ({shown}: added since)"
    return None if ours else "is an HDF5 file but not a cache laya-inspect wrote (it has no schema_version)"


# What a cache holds (cache/writer.py): one group per split, of these datasets and nothing else.
_SPLIT_ITEM = re.compile(r"layer_[0-9]{3,}|labels|index|logits")


def _added_objects(f: Any) -> list[str]:
    """Paths in the open cache ``f`` that extract never writes: a dataset of the user's annotations
    saved into it was lost with the file to ``extract --overwrite``."""
    import h5py

    found = []
    for name, item in f.items():
        if not isinstance(item, h5py.Group):
            found.append(f"/{name}")
            continue
        found += [f"/{name}/{key}" for key in item if not _SPLIT_ITEM.fullmatch(key)]
    return found
