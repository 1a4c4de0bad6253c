"""The HDF5 feature cache: one file, one group per split, one dataset per layer.

Schema version 1 is described in docs/FORMATS.md; :mod:`laya_inspect.cache.writer` writes it. A file is
marked ``complete`` only after every split is full, and the reader refuses anything else, and any
file whose attributes, datasets or shapes do not add up, with one line naming what is wrong.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import CacheError, InputError, LayaError, NotFoundError, suggest
from ..files import special_file
from .fingerprint import fingerprint_inputs, fingerprint_of, same_features
from .partial import partial_path
from .schema import (
    ATTRS_DIGEST,
    PER_LAYER_ATTRS,
    SCHEMA_VERSION,
    attrs_digest,
    check_attrs_end,
    decode_attr,
    layer_key,
    named_twice,
)


class FeatureStore:
    """Read a complete cache; arrays are read only when asked for."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            partial = partial_path(self.path)
            if partial.exists():
                raise CacheError(
                    f"no complete cache at {self.path}: an extraction is running or was interrupted "
                    f"({partial.name}{_progress(partial)}); rerun the same extract command to resume it"
                )
            from .shards import describe_shards, shard_dir  # a missing cache only: importing shards costs ~20 ms

            shards = shard_dir(self.path)
            if shards.is_dir():
                raise CacheError(
                    f"no complete cache at {self.path}: an extraction under torchrun is running or was "
                    f"interrupted ({shards.name}{describe_shards(self.path)}); rerun the same torchrun "
                    "command to resume it"
                )
            raise NotFoundError(f"no feature cache at {self.path}; create one with `laya-inspect extract`")
        # a FIFO would hang the reader, waiting for a writer
        if what := special_file(self.path, follow=True) or ("a folder" if self.path.is_dir() else None):
            raise InputError(f"{self.path} is {what}, not a feature cache (an .h5 file written by extract)")
        check_attrs_end(self.path, str(self.path), "extract the cache again")
        try:
            self.file = h5py.File(self.path, "r")
        except OSError as e:
            raise CacheError(f"{self.path} is not a readable HDF5 cache ({e})") from None
        try:
            self._check()
        except LayaError:
            self.file.close()
            raise
        except (KeyError, ValueError, TypeError, OSError, RuntimeError) as e:
            self.file.close()
            raise CacheError(f"{self.path} is not a valid feature cache ({type(e).__name__}: {e})") from None

    def _check(self) -> None:
        """Refuse a file whose attributes, datasets and shapes do not add up, naming what is wrong."""
        version = decode_attr(self.file.attrs.get("schema_version"))
        if version != SCHEMA_VERSION:
            raise CacheError(f"{self.path} has schema_version {version!r}; this laya-inspect reads {SCHEMA_VERSION}")
        if not bool(self.file.attrs.get("complete", False)):
            progress = ", ".join(
                f"{s}: {self.file[s].attrs.get('n_written', '?')}/{self.file[s].attrs.get('n', '?')}" for s in self.file
            )
            raise CacheError(
                f"{self.path} is incomplete ({progress}): its extraction was interrupted; "
                "rerun the same extract command to resume it"
            )
        self.attrs: dict[str, Any] = {k: decode_attr(v) for k, v in self.file.attrs.items()}
        self._sources: set[Path] = set()
        self._of: FeatureStore | None = None  # set on a keep_layers view: the whole cache
        self._keys: list[str] | None = None  # a view's layer datasets
        names = self.attrs.get("layer_names")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise CacheError(f"{self.path} has no usable layer_names attribute (got {names!r})")
        classes = self.attrs.get("class_names") or []
        if not isinstance(classes, list):
            raise CacheError(f"{self.path} has a class_names attribute that is not a list ({classes!r})")
        for what, listed in (("layer_names", names), ("class_names", classes)):
            twice = named_twice(listed)
            if twice is not None:
                raise CacheError(
                    f"{self.path} names {twice!r} twice in its {what}: the file is damaged or was edited by hand; "
                    "extract the cache again"
                )
        if not list(self.file.keys()):
            raise CacheError(f"{self.path} holds no splits")
        widths = None
        for split in self.file:
            g = self.file[split]
            if not isinstance(g, h5py.Group):
                raise CacheError(f"{self.path}: {split!r} is not a split group")
            missing = [k for k in [*(layer_key(i) for i in range(len(names))), "labels", "index"] if k not in g]
            if missing:
                raise CacheError(f"{self.path}: split {split!r} lacks datasets {', '.join(missing)}")
            n = int(g.attrs.get("n", -1))
            if n < 1:
                raise CacheError(f"{self.path}: split {split!r} has {n if n >= 0 else 'no'} rows")
            shapes = [g[layer_key(i)].shape for i in range(len(names))]
            if (
                any(len(sh) != 2 or sh[0] != n for sh in shapes)
                or g["labels"].shape != (n,)
                or g["index"].shape != (n,)
            ):
                raise CacheError(f"{self.path}: split {split!r} has datasets whose shapes do not match its {n} rows")
            w = [int(sh[1]) for sh in shapes]
            if widths is not None and w != widths:
                raise CacheError(f"{self.path}: split {split!r} has layer widths {w}, other splits {widths}")
            widths = w
            self._check_sources(g)
            if classes:
                labels = _read(g["labels"], None)
                bad = labels[(labels < 0) | (labels >= len(classes))]
                if len(bad):
                    raise CacheError(
                        f"{self.path}: split {split!r} has label {int(bad[0])}, outside the {len(classes)} classes"
                    )
        recorded = self.attrs.get(ATTRS_DIGEST)  # absent in caches written before it: read as before
        if recorded is not None and recorded != attrs_digest(self.file):
            raise CacheError(
                f"{self.path} is damaged: its attributes (layer names, classes, provenance) differ from what "
                "extract wrote (their sha256 does not match the one it recorded); extract the cache again"
            )
        self._check_dataset_names(names)  # after the digest: a damaged layer_names is said as such

    def _check_dataset_names(self, names: list[str]) -> None:
        """Each layer dataset's ``name`` attribute, what h5py or h5dump shows a reader of the file, must
        be the layer ``layer_names`` gives it: the attributes' digest covers the root's and the splits'
        attributes only, so an edited or flipped name here would otherwise pass unseen. A dataset
        without one (none is written without it) is not refused."""
        for split, i in ((split, i) for split in self.file for i in range(len(names))):
            said = self.file[split][layer_key(i)].attrs.get("name")
            said = said.decode("utf-8", "replace") if isinstance(said, bytes) else said
            # an edit may leave a list or a number there: compared as text, so it is refused as damage
            # too, not as numpy's "truth value of an array is ambiguous"
            if said is not None and not (isinstance(said, str) and said == names[i]):
                raise CacheError(
                    f"{self.path} is damaged: /{split}/{layer_key(i)} says it holds layer {str(said)!r}, and "
                    f"its layer_names say {names[i]!r}; extract the cache again"
                )

    def _check_sources(self, group: h5py.Group) -> None:
        """A cache written under torchrun holds virtual datasets over shard files, named relative to
        this file: HDF5 reads a missing shard's rows as the fill value, so refuse it here instead."""
        for ds in group.values():
            if not (isinstance(ds, h5py.Dataset) and ds.is_virtual):
                continue
            for source in {m.file_name for m in ds.virtual_sources()}:
                path = self.path.parent / source
                if source == "." or path in self._sources:
                    continue
                try:
                    with h5py.File(path, "r") as f:
                        complete = bool(f.attrs.get("complete", False))
                except OSError:
                    raise CacheError(_missing_shard(self.path, path)) from None
                if not complete:
                    raise CacheError(f"{self.path}: its shard file {path} is incomplete; rerun the extraction")
                self._sources.add(path)

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
        return [int(g[self._key(i)].shape[1]) for i in range(len(self.layer_names))]

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
        """The cache's identity (a view of some layers keeps the whole cache's)."""
        if self._of is not None:
            return self._of.fingerprint
        return fingerprint_of(self.fingerprint_inputs)

    @property
    def fingerprints(self) -> set[str]:
        """:attr:`fingerprint` and those of the same feature space under other versions' rules
        (cache/fingerprint.py ``same_features``): what a head fitted on this cache may have recorded."""
        return same_features(self.fingerprint_inputs)

    @property
    def fingerprint_inputs(self) -> dict[str, Any]:
        """What :attr:`fingerprint` is computed from, under the rules of the cache's
        ``fingerprint_version`` (a view of some layers: the whole cache's)."""
        whole = self.whole
        return fingerprint_inputs(whole.attrs, whole.widths)

    def recorded_path(self, path: str | None) -> str | None:
        """A path the cache records as it was given to extract (in ``data_spec``, an ``hf:`` or
        ``torchscript:`` ``model_spec``): a relative one not found from the current folder is read
        from the folder extract ran in (``working_dir``), when it is there."""
        working_dir = self.attrs.get("working_dir")
        if not path or not working_dir or Path(path).is_absolute() or Path(path).exists():
            return path
        there = Path(str(working_dir)) / path
        return str(there) if there.exists() else path

    def nonfinite_advice(self) -> str:
        """What to do about NaN or infinite features found in the cache, from what it records: extract
        counts the non-finite values it cached under --allow-nonfinite (``nonfinite_counts``) and
        refuses them without it, so with no count they were written after extract, or by another program."""
        counts = self.attrs.get("nonfinite_counts")
        if counts:
            per_layer = f"values per layer: {counts}"
            return f"re-extract the cache without --allow-nonfinite (extract cached them under it, {per_layer})"
        said = "records no non-finite values" if isinstance(counts, dict) else "records no extract count of them"
        return (
            f"the cache {said}, and extract refuses them without --allow-nonfinite: the file was changed "
            "after extract or written by another program; re-extract it"
        )

    def keep_layers(self, names: Sequence[str]) -> FeatureStore:
        """A view of this cache that reads only the layers ``names``, in that order (the head prune
        writes of the layers it keeps reads those). It shares the open file (closing either closes
        both) and the cache's fingerprint; per-layer attributes (shapes, pooling, …) follow the kept
        layers."""
        idx = [self.layer_index(str(n)) for n in names]
        if not idx or len(set(idx)) < len(idx):
            raise InputError(f"keep_layers of {self.path} needs distinct layer names, got {list(names)}")
        view = copy.copy(self)
        view._of = self._of or self
        view._keys = [self._key(i) for i in idx]
        view.attrs = {k: _kept(v, idx, self.layer_names) if k in PER_LAYER_ATTRS else v for k, v in self.attrs.items()}
        return view

    def identity(self) -> dict[str, Any]:
        """What an output records of the cache it read: path, fingerprint and the layers read; for a
        :meth:`keep_layers` view, also every layer of the cache (``cache_layer_names``)."""
        out: dict[str, Any] = {
            "path": str(self.path.resolve()),
            "fingerprint": self.fingerprint,
            "layer_names": self.layer_names,
        }
        if self._of is not None:
            out["cache_layer_names"] = self._of.layer_names
        return out

    def made(self) -> dict[str, Any]:
        """How the whole cache's features were made: its model, pooling, input transforms and the extract
        options left at their defaults; what a summary keeps of them, so that report.html still says them
        once the cache file is gone."""
        return {k: self.whole.attrs.get(k) for k in ("model_spec", "layer_pooling", "transforms", "config_defaults")}

    @property
    def whole(self) -> FeatureStore:
        """The cache with all its layers (itself, unless this is a :meth:`keep_layers` view)."""
        return self._of or self

    def _key(self, i: int) -> str:
        """The dataset of the i-th layer this store reads."""
        return layer_key(i) if self._keys is None else self._keys[i]

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
        return _read(self._group(split)[self._key(self.layer_index(layer))], rows).astype(np.float32, copy=False)

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

    def to_pandas(
        self, split: str = "test", *, features: bool = False, layers: Sequence[int | str] | None = None
    ) -> Any:
        """One row per sample of ``split`` as a pandas DataFrame (label, class, source index; with
        ``features=True`` each layer's features as ``LAYER[i]`` columns). Needs pandas."""
        from .frames import store_frame

        return store_frame(self, split, features=features, layers=layers)

    def nbytes(self, split: str) -> int:
        g = self._group(split)
        return sum(int(np.prod(g[self._key(i)].shape)) * 4 for i in range(len(self.layer_names)))

    def close(self) -> None:
        if self.file.id.valid:
            self.file.close()

    def __enter__(self) -> FeatureStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _kept(value: Any, idx: list[int], names: list[str]) -> Any:
    """A per-layer attribute of the layers ``idx``: a list in layer order, or a dict by layer name."""
    if isinstance(value, list) and len(value) == len(names):
        return [value[i] for i in idx]
    if isinstance(value, dict):
        kept = {names[i] for i in idx}
        return {k: v for k, v in value.items() if k in kept}
    return value


def _progress(path: Path) -> str:
    """ ", train: 477/960 rows" for a partial cache, or "" when it cannot be read."""
    try:
        with h5py.File(path, "r", locking=False) as f:
            return ", " + ", ".join(f"{s}: {f[s].attrs['n_written']}/{f[s].attrs['n']} rows" for s in f)
    except Exception:  # noqa: BLE001 - a description only; the file may be mid-write
        return ""


def _read(ds: h5py.Dataset, rows: slice | np.ndarray | None) -> np.ndarray:
    try:
        if rows is None or isinstance(rows, slice):
            return ds[() if rows is None else rows]
        rows = np.asarray(rows)
        # h5py fancy indexing needs increasing indices; read sorted then restore the order asked for.
        order = np.argsort(rows, kind="stable")
        uniq, inverse = np.unique(rows[order], return_inverse=True)
        data = ds[uniq]
    except (OSError, RuntimeError) as e:  # a damaged file: its chunks cannot be read back
        if "filter returned failure" in str(e):  # a checksum; of a shard's chunk under a joined (virtual) dataset too
            raise CacheError(
                f"{ds.file.filename} is damaged: rows of {ds.name} fail their checksum (the file changed "
                "after extract wrote it); extract the cache again"
            ) from None
        raise CacheError(f"{ds.file.filename}: cannot read {ds.name} ({e})") from None
    out = np.empty((len(rows),) + data.shape[1:], dtype=data.dtype)
    out[order] = data[inverse]
    return out


def _missing_shard(cache: Path, shard: Path) -> str:
    """Why ``cache`` cannot be read, its shard file ``shard`` being absent: a folder moved apart from it,
    or an ``extract --overwrite`` under torchrun stopped while it renamed the new cache and shards into
    place (the old shards wait in ``<folder>.old``, the new ones in ``<folder>.partial``)."""
    folder = shard.parent
    swapping = [p.name for p in (folder.with_name(folder.name + ".old"), folder.with_name(folder.name + ".partial"))]
    if not folder.exists() and any((folder.parent / name).is_dir() for name in swapping):
        return (
            f"{cache}: its rows are kept in shard files, and {folder} is missing: an `extract --overwrite` under "
            f"torchrun was stopped while it swapped the new cache in ({' and '.join(swapping)} beside it hold the "
            "old and new shards); rerun that extract with the same --out, as one process or with --overwrite "
            "under torchrun: it tells from the new shards' manifest whether the cache in place is the old or the "
            "new one, and finishes the swap or puts the old shards back"
        )
    return (
        f"{cache}: its rows are kept in shard files, and {shard} is missing or unreadable; "
        f"keep the folder {folder.name} beside {cache.name} (move them together)"
    )
