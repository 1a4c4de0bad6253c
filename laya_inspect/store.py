"""The HDF5 feature cache: one file, one group per split, one dataset per layer.

Schema version 1 is described in docs/FORMATS.md. Rows are written batch by batch and flushed, so
memory stays flat in N; a file is marked ``complete`` only after every split is full, and readers
refuse anything else. An interrupted writer leaves ``n_written`` per split, from which the same
command resumes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from .errors import CacheError, InputError, NotFoundError, suggest

SCHEMA_VERSION = 1
JSON_ATTRS = (
    "layer_names",
    "layer_types",
    "layer_pooling",
    "layer_shapes",
    "layer_roles",
    "transforms",
    "split_info",
    "class_names",
    "command",
)
# What defines the feature space a head is trained in; split sizes and limits are left out on purpose.
FINGERPRINT_KEYS = (
    "model_spec",
    "weights_sha256",
    "layer_names",
    "layer_pooling",
    "transforms",
    "data_spec",
    "class_names",
)
CHUNK_ROWS = 1024


def _encode(key: str, value: Any) -> Any:
    if key in JSON_ATTRS or isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    if value is None:
        return ""
    if isinstance(value, str):
        return str(value)  # plain str: h5py cannot store str subclasses such as torch's TorchVersion
    return value


def _decode(key: str, value: Any) -> Any:
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


def layer_key(i: int) -> str:
    return f"layer_{i:03d}"


class FeatureWriter:
    """Create (or resume) a cache and append rows to its splits.

    ``attrs`` must hold a ``command`` entry (the resolved extraction config): resuming is allowed
    only into an incomplete file written by the same command.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        attrs: dict[str, Any],
        split_sizes: dict[str, int],
        widths: Sequence[int],
        num_logits: int | None,
        dtype: str = "float32",
        overwrite: bool = False,
    ) -> None:
        self.path = Path(path)
        self.widths = list(widths)
        self.dtype = np.dtype(dtype)
        if self.path.exists() and not overwrite:
            self.file = self._reopen(attrs)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.file = self._create(attrs, split_sizes, num_logits)

    def _reopen(self, attrs: dict[str, Any]) -> h5py.File:
        try:
            f = h5py.File(self.path, "a")
        except OSError as e:
            raise CacheError(
                f"{self.path} exists but cannot be opened ({e}); pass --overwrite to start again"
            ) from None
        if f.attrs.get("complete", False):
            f.close()
            raise CacheError(f"{self.path} is already a complete cache; pass --overwrite to write it again")
        old = _decode("command", f.attrs.get("command", ""))
        if old != attrs.get("command"):
            f.close()
            raise CacheError(
                f"{self.path} is an incomplete cache from a different command; "
                "rerun that command to resume it, or pass --overwrite to start again"
            )
        return f

    def _create(self, attrs: dict[str, Any], split_sizes: dict[str, int], num_logits: int | None) -> h5py.File:
        f = h5py.File(self.path, "w")
        for key, value in attrs.items():
            f.attrs[key] = _encode(key, value)
        f.attrs["schema_version"] = SCHEMA_VERSION
        f.attrs["dtype"] = self.dtype.name
        f.attrs["complete"] = False
        names = attrs.get("layer_names", [])
        for split, n in split_sizes.items():
            g = f.create_group(split)
            g.attrs.update(n=int(n), n_written=0, complete=False)
            for i, width in enumerate(self.widths):
                ds = g.create_dataset(
                    layer_key(i), shape=(n, width), dtype=self.dtype, chunks=(max(1, min(n, CHUNK_ROWS)), width)
                )
                ds.attrs["name"] = names[i] if i < len(names) else str(i)
            g.create_dataset("labels", shape=(n,), dtype="int64")
            g.create_dataset("index", shape=(n,), dtype="int64")
            if num_logits:
                g.create_dataset(
                    "logits", shape=(n, num_logits), dtype="float32", chunks=(max(1, min(n, CHUNK_ROWS)), num_logits)
                )
        f.flush()
        return f

    def n_written(self, split: str) -> int:
        return int(self.file[split].attrs["n_written"])

    def append(
        self,
        split: str,
        features: Sequence[np.ndarray],
        labels: np.ndarray,
        index: np.ndarray,
        logits: np.ndarray | None = None,
    ) -> None:
        g = self.file[split]
        start = int(g.attrs["n_written"])
        stop = start + len(labels)
        if stop > int(g.attrs["n"]):
            raise InputError(f"split {split!r} would get {stop} rows, more than the {g.attrs['n']} planned")
        for i, feats in enumerate(features):
            g[layer_key(i)][start:stop] = feats.astype(self.dtype, copy=False)
        g["labels"][start:stop] = labels
        g["index"][start:stop] = index
        if logits is not None and "logits" in g:
            g["logits"][start:stop] = logits
        # n_written moves only after the rows are on disk, so a kill never counts unwritten rows.
        self.file.flush()
        g.attrs["n_written"] = stop
        self.file.flush()

    def finish(self) -> None:
        for split in self.file:
            g = self.file[split]
            if int(g.attrs["n_written"]) != int(g.attrs["n"]):
                raise CacheError(f"split {split!r} has {g.attrs['n_written']} of {g.attrs['n']} rows")
            g.attrs["complete"] = True
        self.file.attrs["complete"] = True
        self.file.flush()

    def close(self) -> None:
        if self.file.id.valid:
            self.file.close()

    def __enter__(self) -> FeatureWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FeatureStore:
    """Read a complete cache; arrays are read only when asked for."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise NotFoundError(f"no feature cache at {self.path}; create one with `laya-inspect extract`")
        try:
            self.file = h5py.File(self.path, "r")
        except OSError as e:
            raise CacheError(f"{self.path} is not a readable HDF5 cache ({e})") from None
        version = _decode("schema_version", self.file.attrs.get("schema_version"))
        if version != SCHEMA_VERSION:
            self.file.close()
            raise CacheError(f"{self.path} has schema_version {version!r}; this laya-inspect reads {SCHEMA_VERSION}")
        if not bool(self.file.attrs.get("complete", False)):
            progress = ", ".join(f"{s}: {self.file[s].attrs['n_written']}/{self.file[s].attrs['n']}" for s in self.file)
            self.file.close()
            raise CacheError(
                f"{self.path} is incomplete ({progress}): its extraction was interrupted; "
                "rerun the same extract command to resume it"
            )
        self.attrs: dict[str, Any] = {k: _decode(k, v) for k, v in self.file.attrs.items()}

    # -- description -------------------------------------------------------------------------
    @property
    def layer_names(self) -> list[str]:
        return list(self.attrs["layer_names"])

    @property
    def splits(self) -> list[str]:
        return list(self.file.keys())

    @property
    def widths(self) -> list[int]:
        g = self.file[self.splits[0]]
        return [int(g[layer_key(i)].shape[1]) for i in range(len(self.layer_names))]

    @property
    def class_names(self) -> list[str]:
        return list(self.attrs.get("class_names") or [])

    @property
    def num_classes(self) -> int:
        if self.class_names:
            return len(self.class_names)
        return int(max(int(self.labels(s).max()) for s in self.splits)) + 1

    @property
    def fingerprint(self) -> str:
        ident = {k: self.attrs.get(k) for k in FINGERPRINT_KEYS}
        ident["widths"] = self.widths
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]

    def _group(self, split: str) -> h5py.Group:
        if split not in self.file:
            raise NotFoundError(f"no split {split!r} in {self.path}; {suggest(split, self.splits)}")
        return self.file[split]

    def layer_index(self, layer: int | str) -> int:
        names = self.layer_names
        if isinstance(layer, str):
            if layer not in names:
                raise NotFoundError(f"no layer {layer!r} in {self.path}; {suggest(layer, names)}")
            return names.index(layer)
        if not -len(names) <= layer < len(names):
            raise NotFoundError(f"layer index {layer} out of range for {len(names)} layers")
        return layer % len(names)

    # -- arrays --------------------------------------------------------------------------------
    def n(self, split: str) -> int:
        return int(self._group(split).attrs["n"])

    def labels(self, split: str, rows: slice | np.ndarray | None = None) -> np.ndarray:
        return _read(self._group(split)["labels"], rows)

    def index(self, split: str, rows: slice | np.ndarray | None = None) -> np.ndarray:
        return _read(self._group(split)["index"], rows)

    def logits(self, split: str, rows: slice | np.ndarray | None = None) -> np.ndarray | None:
        g = self._group(split)
        return _read(g["logits"], rows) if "logits" in g else None

    def layer(self, split: str, layer: int | str, rows: slice | np.ndarray | None = None) -> np.ndarray:
        """(N, D_l) float32 array of one layer."""
        return _read(self._group(split)[layer_key(self.layer_index(layer))], rows).astype(np.float32, copy=False)

    def layers(self, split: str, rows: slice | np.ndarray | None = None) -> list[np.ndarray]:
        """Every layer as a list of (N, D_l) float32 arrays."""
        return [self.layer(split, i, rows) for i in range(len(self.layer_names))]

    def padded(self, split: str, rows: slice | np.ndarray | None = None) -> np.ndarray:
        """(N, L, D_max) float32 array, each layer zero-padded to the widest."""
        feats = self.layers(split, rows)
        out = np.zeros((len(feats[0]), len(feats), max(self.widths)), dtype=np.float32)
        for i, f in enumerate(feats):
            out[:, i, : f.shape[1]] = f
        return out

    def iter_chunks(self, split: str, chunk_rows: int = 8192) -> Iterator[tuple[slice, list[np.ndarray], np.ndarray]]:
        """Yield (rows, per-layer arrays, labels) chunk by chunk, for caches larger than memory."""
        n = self.n(split)
        for start in range(0, n, chunk_rows):
            rows = slice(start, min(n, start + chunk_rows))
            yield rows, self.layers(split, rows), self.labels(split, rows)

    def nbytes(self, split: str) -> int:
        g = self._group(split)
        return sum(int(np.prod(g[layer_key(i)].shape)) * 4 for i in range(len(self.layer_names)))

    def close(self) -> None:
        if self.file.id.valid:
            self.file.close()

    def __enter__(self) -> FeatureStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read(ds: h5py.Dataset, rows: slice | np.ndarray | None) -> np.ndarray:
    if rows is None:
        return ds[()]
    if isinstance(rows, slice):
        return ds[rows]
    rows = np.asarray(rows)
    # h5py fancy indexing needs increasing indices; read sorted then restore the order asked for.
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    uniq, inverse = np.unique(sorted_rows, return_inverse=True)
    data = ds[uniq]
    out = np.empty((len(rows),) + data.shape[1:], dtype=data.dtype)
    out[order] = data[inverse]
    return out
