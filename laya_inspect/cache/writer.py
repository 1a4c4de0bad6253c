"""Writing the HDF5 feature cache (schema in docs/FORMATS.md), safely.

Rows are gathered a whole HDF5 chunk at a time (or for at most FLUSH_SECONDS), then written into
``<out>.partial`` and flushed, so memory stays flat in N and a killed run resumes from ``n_written``,
which counts only rows on disk (:meth:`FeatureWriter.close` writes the rows gathered so far). Only a
complete cache is renamed to ``<out>``, so the final name never holds half a cache (``--overwrite``
builds the new cache beside the old one, which stays readable until the rename, and replaces only
a cache unchanged since the record beside it: :func:`unproven_cache`). Resuming checks
that the command, the weights and the data are the ones the rows came from. Non-finite activations
are counted as they are written and refused unless allowed. HDF5 cannot be closed cleanly after a
failed write (it crashes the process), so a writer that hits a full disk drops its partial file,
keeps the dead handle open, and raises one line.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import CacheError, InputError, WriteError, name_of
from ..files import keep_file_mode, special_file, start_writeback
from ..out_dir import claimed_by, put_record, read_record, record_of, take_record, unproven_file
from .partial import SHARDS_SUFFIX, VERIFIED, partial_path, refuse_foreign_partial, resume_problem, rows_on_disk
from .schema import (
    CHUNK_ROWS,
    CONSTANT_SPREAD,
    FINGERPRINT_VERSION,
    SCHEMA_VERSION,
    decode_attr,
    encode_attr,
    layer_key,
    named_twice,
    not_a_cache,
    seal,
    with_warnings,
)

_DEAD: list[Any] = []  # h5py handles of failed writes: closing them would crash the interpreter
# Rows are written a whole HDF5 chunk at a time, buffered in at most this many bytes per split, and
# at least every FLUSH_SECONDS, so a slow model still moves n_written (what a killed run resumes from).
BUFFER_BYTES = 64 << 20
FLUSH_SECONDS = 0.25


def refuse_not_a_file(out: str | Path) -> None:
    """Refuse an --out that is a folder, or a FIFO, a socket or a device: reading it to tell whether it is
    a cache would hang on a FIFO, and laya-inspect writes none of these."""
    if Path(out).is_dir():
        raise InputError(f"--out {out} is a folder; give the cache file's name (e.g. {out}/features.h5)")
    if special := special_file(out):
        raise InputError(f"--out {out} is {special}, not a cache laya-inspect wrote; give another --out")


def unproven_cache(path: Path) -> str | None:
    """None when ``extract --overwrite`` may replace the file ``path``: a cache laya-inspect wrote
    (:func:`~.schema.not_a_cache`) and, where extract recorded it beside it (``.NAME.laya-inspect.json``,
    the record train and explain keep: docs/FORMATS.md), unchanged since: an attribute added or a label
    changed in place adds no group or dataset, so only the record sees it. Else what it is instead."""
    why = not_a_cache(path)
    if why is None and os.path.lexists(record_of(path)):
        why = _not_a_record(path) or unproven_file(path)
    return why


def foreign_record(path: Path) -> str | None:
    return _not_a_record(path) if os.path.lexists(record_of(path)) else None


def _not_a_record(path: Path) -> str | None:
    """What is wrong with the file at ``path``'s record name, which exists."""
    rec = record_of(path)
    if rec.is_symlink() or rec.is_dir():
        # laya-inspect writes its record there as a plain file, and never through a link or into a folder
        what = f"a link (to {os.readlink(rec)})" if rec.is_symlink() else "a folder"
        return (
            f"is recorded in {rec}, which is {what}, not a record laya-inspect wrote: laya-inspect keeps its record "
            f"there as a plain file and writes nothing {'through a link' if rec.is_symlink() else 'into a folder'}, "
            f"so move that {'link' if rec.is_symlink() else 'folder'} away yourself (or choose another out) and rerun"
        )
    if read_record(path) is None:
        return f"is recorded in {rec}, which is not a record laya-inspect wrote"
    return None


def refuse_foreign_record(path: Path) -> None:
    """Refuse a file at ``path``'s record name that laya-inspect did not write: the cache's record, written
    once the cache is in place (here or by the torchrun join), would replace it."""
    foreign = foreign_record(path)
    if foreign is not None:
        mend = "" if foreign.endswith("rerun") else "; choose another out, or move that file away yourself"
        raise InputError(f"{path} {foreign}{mend}")


def may_overwrite(path: Path) -> list[str]:
    """Refuse to replace the file ``path`` unless :func:`unproven_cache` allows it (no file there is
    fine); what could not be checked of it (:func:`unrecorded_warning`), returned for the run's
    warnings (said once, at the end, as extract's others are)."""
    if not path.is_file():
        return []
    why = unproven_cache(path)
    if why is not None:
        raise InputError(
            f"{path} {why}; overwrite replaces only a cache laya-inspect wrote, unchanged since: "
            "choose another out, or move it away yourself"
        )
    return unrecorded_warning(path)


# The root attribute that says what --overwrite replaced (docs/FORMATS.md): absent when nothing is to be said.
OVERWRITE_NOTES = "overwrite_notes"


def unrecorded_warning(path: Path) -> list[str]:
    """The warning for replacing a cache an earlier version wrote: it has no record, so only added
    groups and datasets show it was edited (a file a folder's marker lists is that marker's to prove);
    and for a torchrun cache whose record lists none of its shards (an earlier version recorded only the
    cache), that its shards could not be checked."""
    if claimed_by(path) is not None:
        return []
    if os.path.lexists(record_of(path)):
        return _unrecorded_shards(path)
    return [
        f"{path} had no record beside it ({record_of(path).name}; an earlier version wrote none), so --overwrite "
        "replaced it having checked only that it held no group or dataset extract does not write: an attribute "
        "or value edited inside it could not be seen"
    ]


def _unrecorded_shards(path: Path) -> list[str]:
    """The note for a recorded cache whose shard files (``OUT.shards/rank-*.h5``) its record does not list."""
    record = read_record(path) or {}
    listed = {n for key in ("sha256", "stat") for n in record.get(key) or {}}
    folder = path.with_name(path.name + SHARDS_SUFFIX)
    shards = sorted(folder.glob("rank-*-of-*.h5")) if folder.is_dir() and not folder.is_symlink() else []
    if not shards or any(f"{folder.name}/{p.name}" in listed for p in shards):
        return []
    return [
        f"{path}'s record lists none of its shard files ({folder.name}/; an earlier version recorded only the "
        "cache), so --overwrite replaced them having checked only the cache: a value edited inside a shard "
        "could not be seen"
    ]


# What a constant layer's warning suggests instead: the command's options, or extract_from_module's.
COMMAND_ADVICE = ("another --pool (mean)", "out with --layers")
NOTEBOOK_ADVICE = ('another pool (pool="mean")', "out of layers")


def constant_warning(
    constant: Sequence[str], pooling: dict[str, str], advice: tuple[str, str] = COMMAND_ADVICE
) -> list[str]:
    """The warning for layers that gave one row for every input (:meth:`FeatureWriter.constant_layers`):
    the pooling that made it so (``pooling``: layer → method), and what to do instead (fit-head would
    flag them later, on every head that reads them)."""
    if not constant:
        return []
    named = ", ".join(f"{n} (pooled by {pooling.get(n, '?')})" for n in constant)
    one = len(constant) == 1
    pool, leave = advice
    return [
        f"{named} {'gives' if one else 'give'} the same row for every input (each row equals the first, up to "
        "rounding): no input can be told from another there, and a head's weight on "
        f"{'it' if one else 'them'} says nothing about the input (a token 0 that sees no other token, such as "
        f"a class token's embedding, pooled by cls is such a layer); re-extract with {pool}, "
        f"or leave {'it' if one else 'them'} {leave}"
    ]


def duplicate_warning(pairs: Sequence[tuple[str, str]], leave: str = COMMAND_ADVICE[1]) -> list[str]:
    """The warning for layers that hold the same values (:meth:`FeatureWriter.same_layers`: one tensor
    asked for under two names, a stage and its last block); fit-head would flag them later."""
    if not pairs:
        return []
    shown = ", ".join(f"{a} = {b}" for a, b in pairs)
    return [
        f"layers that hold the same values ({shown}; their first {SAME_LAYER_ROWS} rows are equal): they are one "
        f"layer under two names, and how a head's weight splits between them means nothing; leave one {leave}"
    ]


def logits_warning(found: Sequence[str], n_classes: int, leave: str = "out of --layers") -> list[str]:
    """The warning for chosen layers that are most likely the model's logits (``found``: those with one
    value per class that are what the model's forward returns)."""
    if not found:
        return []
    one = len(found) == 1
    return [
        f"{', '.join(found)} {'has' if one else 'have'} one value per class ({n_classes}, the data's class count) "
        f"and {'is' if one else 'are'} what the model's forward returns: most likely its logits (the model's own "
        f"answer), not a hidden layer, so a head's accuracy and weight there report the classifier; leave "
        f"{'it' if one else 'them'} {leave} unless that is meant"
    ]


def numbering_warning(
    num_logits: int | None, class_names: Sequence[str], agreement: Sequence[int] | None = None
) -> list[str]:
    """The warning for cached logits that are not in the data's class numbering: ``num_logits`` per row
    for another number of classes than ``class_names``; or, ``agreement`` being [rows whose top logit is
    their label, rows compared], a top logit that agrees with the label at or below chance (1 / classes),
    over at least NUMBERING_ROWS rows and twice as many rows as classes (not counted per class)."""
    n = len(class_names)
    if num_logits is None or not n:
        return []
    if num_logits != n:
        return [
            f"the model gives {num_logits} logits per row and the data has {n} classes: the cached logits are in "
            "the model's own class numbering, not the data's (logits[:, k] is the model's class k, not "
            "class_names[k]); read them, and anything computed from them, as the model's answer, not as scores "
            "of the data's classes"
        ]
    if agreement is None:
        return []
    hits, rows = int(agreement[0]), int(agreement[1])
    if not enough_rows(rows, n) or hits / rows > 1 / n:
        return []
    return [
        f"the cached logits' top class is the row's label on {hits} of {rows} rows ({hits / rows:.2f}), at or below "
        f"chance (1/{n} = {1 / n:.2f}): the logits are in the model's own class numbering, which is most likely "
        "not the data's (a model trained on other classes, or on these in another order); read logits[:, k] as "
        "the model's class k, not class_names[k], or give the data's classes in the model's order"
    ]


# A shard's attribute: its writer's logit_agreement, summed over the shards by the torchrun join.
LOGIT_AGREEMENT = "logit_agreement"

# Rows numbering_warning needs before it judges the logits' agreement with the labels.
NUMBERING_ROWS = 20


def enough_rows(rows: int, n_classes: int) -> bool:
    """Whether ``rows`` labelled rows are enough to judge logits' agreement with their labels: at least
    NUMBERING_ROWS, and twice as many as classes (agreement is not counted per class)."""
    return rows >= max(NUMBERING_ROWS, 2 * n_classes)


# Rows per layer compared by same_layers (a writer's, and the torchrun join's from one shard): a few
# suffice to tell two layers apart, and are cheap to keep.
SAME_LAYER_ROWS = 8


def same_layers(names: Sequence[str], first_rows: Sequence[np.ndarray | None]) -> list[tuple[str, str]]:
    """Pairs of layers whose ``first_rows`` (the same rows of each layer, as stored) are equal: one tensor
    under two names. Rows that are all one row tell nothing (a layer that gives one row for every input
    is :meth:`FeatureWriter.constant_layers`'s)."""
    rows = [x if x is not None and len(x) >= 2 and np.ptp(x, axis=0).any() else None for x in first_rows]
    return [
        (name_of(names, i), name_of(names, j))
        for j, b in enumerate(rows)
        for i, a in enumerate(rows[:j])
        if a is not None and b is not None and a.shape == b.shape and np.array_equal(a, b)
    ]


def _largest_gap(rows: np.ndarray, first: np.ndarray | None) -> float:
    """The largest |difference| of ``rows`` from ``first``, in float32; a NaN value (cached under
    --allow-nonfinite) is left out, not the rest of its batch with it."""
    gap = np.abs(rows.astype(np.float32, copy=False) - np.asarray(first, dtype=np.float32))
    return float(np.nanmax(gap, initial=0.0)) if gap.size else 0.0


class FeatureWriter:
    """Create (or resume) a cache and append rows to its splits.

    ``attrs`` must hold a ``command`` entry (the resolved extraction options): resuming is allowed
    only into a partial file written by the same command, from the same weights and data (the
    ``VERIFIED`` attributes). The caller holds the output's lock (``files.output_lock``).
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
        allow_nonfinite: bool = False,
        check_space: bool = True,
        nonfinite_switch: str = "--allow-nonfinite",
    ) -> None:
        self.path = Path(path)
        self.partial = partial_path(self.path)
        self.widths = list(widths)
        self.dtype = np.dtype(dtype)
        self.allow_nonfinite = allow_nonfinite
        self.nonfinite_switch = nonfinite_switch  # what the refusal names: the flag, or a library call's argument
        self.check_space = check_space
        self._broken = False
        self._splits: dict[str, _SplitBuffer] = {}
        self._last_write = time.monotonic()
        # per layer, the first row it got and how far any later row lay from it (largest |difference|)
        self._first: list[np.ndarray | None] = [None] * len(self.widths)
        self._apart = [0.0] * len(self.widths)
        self._first_at: tuple[str, int] | None = None  # (split, row) of that first row
        self._sample: list[np.ndarray | None] = [None] * len(self.widths)  # its first rows, for same_layers
        self._rows = 0
        self._unchecked: dict[str, int] = {}  # split → rows a killed run wrote, not yet compared with the first
        for what in ("layer_names", "class_names"):  # the reader refuses a cache that names one twice
            twice = named_twice(list(attrs.get(what) or []))
            if twice is not None:
                raise InputError(f"{what} names {twice!r} twice; each {what[:-6]} needs its own name")
        refuse_not_a_file(self.path)  # extract checked it before its work; the notebook path here
        refuse_foreign_partial(self.path)  # extract checked it before its work; checked again under the lock
        self.overwrite = overwrite
        # what --overwrite could not check of the file it replaces: a note on this run, not on the rows,
        # so kept apart from the cache's warnings, which every later command prints again
        self.overwrite_notes: list[str] = []
        self._shard = "shard" in attrs
        # per split, rows whose top logit is their label, of the labelled rows compared: counted only where
        # the logits are one per class of the data, and not for an untrained model, at chance by design
        n_classes = len(attrs.get("class_names") or [])
        counted = num_logits == n_classes > 0 and not attrs.get("random_init")
        self._agree: dict[str, list[int]] | None = {} if counted else None
        refuse_foreign_record(self.path)  # finish writes the record there: never over a user's file
        if overwrite:
            # extract checked this before its work; the notebook path (module_extract) is checked here
            self.overwrite_notes = may_overwrite(self.path)
            self.partial.unlink(missing_ok=True)
        elif self.path.exists():
            self._adopt_old_layout()
        sizes = {s: int(n) for s, n in split_sizes.items()}
        if self.partial.exists():
            self.file = self._reopen(attrs)
        else:
            if check_space:
                self._check_space(self._estimate(sizes, num_logits))
            self.file = self._guard(lambda: self._create(attrs, sizes, num_logits))

    # -- opening -------------------------------------------------------------------------------
    def _adopt_old_layout(self) -> None:
        """A complete cache is never overwritten without --overwrite; an incomplete one left under
        the final name (by laya-inspect 0.x) is moved aside to be resumed."""
        try:
            with h5py.File(self.path, "r") as f:
                complete = bool(f.attrs.get("complete", False))
        except OSError as e:
            raise CacheError(
                f"{self.path} exists but is not a readable cache ({e}); move it away, or choose another --out"
            ) from None
        if complete:
            raise CacheError(
                f"{self.path} is already a complete cache; pass --overwrite to write a new one "
                f"(the old file stays readable until the new one is complete){self._partial_beside()}"
            )
        os.replace(self.path, self.partial)

    def _partial_beside(self) -> str:
        """What the complete cache's ``<out>.partial`` is (a killed --overwrite run's rows) and what
        becomes of it, as the end of the refusal; "" where there is none."""
        if not self.partial.exists():
            return ""
        rows = rows_on_disk(self.path)
        held = f"{sum(rows.values())} rows" if rows is not None else "no readable rows"
        return (
            f"; {self.partial} beside it is an interrupted extraction ({held}, e.g. of an --overwrite run "
            "that was killed): --overwrite deletes it and starts again from the first row; to resume it "
            f"instead, move {self.path} away and rerun the command that started it"
        )

    def _reopen(self, attrs: dict[str, Any]) -> h5py.File:
        """Open the interrupted extraction to append to it, once its recorded attributes, read without
        changing the file (a refused resume leaves it as it was), match this run's. Its attributes were
        read under :func:`check_attrs_end`'s guard by :func:`refuse_foreign_partial`."""
        try:
            with h5py.File(self.partial, "r") as f:
                old = {k: decode_attr(f.attrs.get(k, "")) for k in ("command", "layer_names", *VERIFIED, "model_file")}
        except OSError as e:
            raise self._unopenable(e) from None
        new = {k: decode_attr(encode_attr(k, attrs.get(k))) for k in old}  # as stored, then read back
        said = resume_problem(old, new, list(attrs.get("layer_names") or []))
        if said:
            raise CacheError(f"{self.partial} (an interrupted extraction) {said[0]}; {said[1]}")
        try:
            return h5py.File(self.partial, "a")
        except OSError as e:
            raise self._unopenable(e) from None

    def _unopenable(self, e: OSError) -> CacheError:
        return CacheError(
            f"{self.partial} (an interrupted extraction) cannot be opened ({e}); pass --overwrite to start again"
        )

    def _create(self, attrs: dict[str, Any], split_sizes: dict[str, int], num_logits: int | None) -> h5py.File:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # The 1.8 format or newer: checksummed metadata, so damage is reported, not crashed on. Not the
        # 1.10 superblock ("latest" as the lower bound): it marks the file open-for-write, so a partial
        # file left by a killed run could neither be read nor reopened to resume (measured).
        f = h5py.File(self.partial, "w", libver=("v108", "latest"))
        for key, value in attrs.items():
            f.attrs[key] = encode_attr(key, value)
        f.attrs["schema_version"] = SCHEMA_VERSION
        f.attrs["dtype"] = self.dtype.name
        f.attrs["complete"] = False
        # at creation only: a partial file of an older laya-inspect, resumed, keeps its old fingerprint
        f.attrs["fingerprint_version"] = FINGERPRINT_VERSION
        names = attrs.get("layer_names", [])
        for split, n in split_sizes.items():
            g = f.create_group(split)
            g.attrs.update(n=int(n), n_written=0, complete=False, nonfinite=encode_attr("x", [0] * len(self.widths)))
            rows = max(1, min(n, CHUNK_ROWS))
            # every chunk carries HDF5's Fletcher-32 checksum, so a damaged row is refused on read
            # instead of read as garbage (its cost: docs/PERFORMANCE.md)
            for i, width in enumerate(self.widths):
                ds = g.create_dataset(
                    layer_key(i), shape=(n, width), dtype=self.dtype, chunks=(rows, width), fletcher32=True
                )
                ds.attrs["name"] = name_of(names, i)
            g.create_dataset("labels", shape=(n,), dtype="int64", chunks=(rows,), fletcher32=True)
            g.create_dataset("index", shape=(n,), dtype="int64", chunks=(rows,), fletcher32=True)
            if num_logits:
                g.create_dataset(
                    "logits", shape=(n, num_logits), dtype="float32", chunks=(rows, num_logits), fletcher32=True
                )
        f.flush()
        return f

    def _estimate(self, split_sizes: dict[str, int], num_logits: int | None) -> int:
        per_row = sum(self.widths) * self.dtype.itemsize + 16 + 4 * (num_logits or 0)
        return int(sum(split_sizes.values()) * per_row * 1.02) + (1 << 20)

    def _check_space(self, needed: int) -> None:
        """Refuse up front what cannot fit: a failed HDF5 write loses the partial cache."""
        folder = self.path.parent if self.path.parent.exists() else Path(".")
        free, limit = _room(folder)
        if limit < min(needed, free):
            raise WriteError(
                f"could not write {self.partial}: the cache needs about {_mb(needed)} but this process may "
                f"write files of at most {_mb(limit)} (errno 27, file too large: see `ulimit -f`)"
            )
        if free < needed:
            raise WriteError(
                f"could not write {self.partial}: the cache needs about {_mb(needed)} but {folder} has "
                f"{_mb(free)} free (errno 28, no space left on device); free space or choose another --out"
            )

    def _room_for(self, nbytes: int) -> None:
        """Stop before a batch that would not fit, while the partial cache is still whole and resumable."""
        # a batch may rewrite whole chunks, and closing writes HDF5's metadata
        margin = 2 * nbytes + CHUNK_ROWS * sum(self.widths) * self.dtype.itemsize + (64 << 10)
        free, limit = _room(self.partial.parent)
        if free < margin or self.partial.stat().st_size + margin > limit:
            why = "no space left on device (errno 28)" if free < margin else "file size limit, `ulimit -f` (errno 27)"
            kept = sum(int(self.file[s].attrs.get("n_written", 0)) for s in self.file)
            if not kept:  # the first block: the file holds the layout and nothing to resume from
                raise WriteError(
                    f"could not write {self.partial}: {why}; no row was written: it holds the cache's layout and "
                    "no rows — free space and rerun the same command to start from the first row"
                )
            raise WriteError(
                f"could not write {self.partial}: {why}; the {kept} rows written so far are kept — "
                "free space and rerun the same command to resume"
            )

    def _guard(self, write: Any) -> Any:
        """Run an HDF5 write; on an OS-level failure drop the partial file and raise one line."""
        try:
            return write()
        except (OSError, RuntimeError) as e:
            text = str(e)
            if not isinstance(e, OSError) and "write failed" not in text and "flush" not in text:
                raise
            self._broken = True
            if getattr(self, "file", None) is not None:
                _keep_dead(self.file)
            self.partial.unlink(missing_ok=True)
            code = re.search(r"errno = (\d+), error message = '([^']*)'", text)
            why = f"{code.group(2)} (errno {code.group(1)})" if code else text.splitlines()[0][:200]
            raise WriteError(
                f"could not write {self.partial}: {why}; the partial cache was removed — free space and rerun"
            ) from None

    # -- writing -------------------------------------------------------------------------------
    def _buffers(self, split: str) -> _SplitBuffer:
        """The split's dataset handles and row buffer, made once: looking datasets up per batch cost
        as much as writing them."""
        buf = self._splits.get(split)
        if buf is None:
            if split not in self.file:
                raise InputError(f"no split {split!r} in {self.partial}; planned: {', '.join(self.file)}")
            # rows gathered before a write: one HDF5 chunk, fewer where it would not fit in BUFFER_BYTES
            block = max(1, min(CHUNK_ROWS, BUFFER_BYTES // (sum(self.widths) * self.dtype.itemsize + 16)))
            buf = _SplitBuffer(self.file[split], len(self.widths), self.dtype, block)
            self._splits[split] = buf
            if buf.on_disk:  # resumed: later rows are compared with the first row on disk (one row read)
                for i, ds in enumerate(buf.layers):
                    if self._first[i] is None:
                        self._first[i] = np.asarray(ds[0])
                        self._first_at = (split, 0)
                        self._sample[i] = np.asarray(ds[:SAME_LAYER_ROWS])
                self._rows += buf.on_disk
                self._unchecked[split] = buf.on_disk
                if self._agree is not None and buf.logits_ds is not None:  # so the agreement covers every row
                    for lo in range(0, buf.on_disk, CHUNK_ROWS):
                        hi = min(buf.on_disk, lo + CHUNK_ROWS)
                        self._count_agreement(split, np.asarray(buf.logits_ds[lo:hi]), np.asarray(buf.labels_ds[lo:hi]))
        return buf

    def _count_agreement(self, split: str, logits: np.ndarray, labels: np.ndarray) -> None:
        """Add ``split``'s rows whose top logit is their label, and its labelled rows, to the counts."""
        assert self._agree is not None
        known = labels >= 0
        counts = self._agree.setdefault(split, [0, 0])
        counts[0] += int(np.count_nonzero(np.argmax(logits[known], axis=1) == labels[known]))
        counts[1] += int(np.count_nonzero(known))

    @property
    def rows_kept(self) -> int:
        """Rows of every split this file keeps when closed now: on disk, and buffered (close writes them)."""
        return sum(buf.on_disk + buf.fill.k for buf in self._splits.values())

    def n_written(self, split: str) -> int:
        """Rows of ``split`` on disk (a resumed run starts there); rows still buffered are not counted."""
        return self._buffers(split).on_disk

    def stored(self, split: str, start: int, stop: int) -> list[np.ndarray]:
        """Rows ``start:stop`` of ``split`` as on disk, per layer (k, D)."""
        return [np.asarray(ds[start:stop]) for ds in self._buffers(split).layers]

    def append(
        self,
        split: str,
        features: Sequence[np.ndarray],
        labels: np.ndarray,
        index: np.ndarray,
        logits: np.ndarray | None = None,
    ) -> None:
        """Add rows after the last ones appended. They are buffered up to a whole chunk (or
        FLUSH_SECONDS) and then written in one go; :meth:`close` and :meth:`finish` write the rest."""
        buf = self._buffers(split)
        start = buf.on_disk + buf.fill.k
        stop = start + len(labels)
        if stop > buf.n:
            raise InputError(f"split {split!r} would get {stop} rows, more than the {buf.n} planned")
        bad = _nonfinite(features)
        if any(bad) and not self.allow_nonfinite:
            which = ", ".join(f"layer {i}: {b}" for i, b in enumerate(bad) if b)
            raise InputError(
                f"non-finite activations (NaN or ±inf) in split {split!r}, rows {start}–{stop - 1} ({which} values); "
                "check the inputs and weights, or pass "
                f"{self.nonfinite_switch} to cache them anyway (counted in the cache)"
            )
        lost = _overflow(features, self.dtype)
        if any(lost):
            names = decode_attr(self.file.attrs.get("layer_names", "[]"))
            i = next(i for i, n in enumerate(lost) if n)
            raise InputError(
                f"activations too large for --dtype {self.dtype.name} in split {split!r}, rows {start}–{stop - 1}: "
                f"{lost[i]} values of layer {name_of(names, i)!r} (the largest {float(np.abs(features[i]).max()):.4g}) "
                f"lie beyond its ±{float(np.finfo(self.dtype).max):.6g} and would be stored as ±inf; extract with "
                "--dtype float32"
            )
        self._compare(features, split, start)
        if self._agree is not None and logits is not None:
            self._count_agreement(split, logits, labels)
        pos = 0
        while pos < len(labels):
            # fill up to the next block boundary of the dataset, so whole chunks are written at once
            boundary = min(buf.n, (buf.on_disk // buf.rows + 1) * buf.rows)
            take = min(boundary - buf.on_disk - buf.fill.k, len(labels) - pos)
            if any(bad):  # counted with the rows they belong to, so a killed run never counts them twice
                piece = bad if take == len(labels) else _nonfinite([x[pos : pos + take] for x in features])
                buf.fill.bad = [a + b for a, b in zip(buf.fill.bad, piece)]
            buf.fill.put(features, labels, index, logits, pos, take)
            pos += take
            if buf.on_disk + buf.fill.k == boundary:
                self._write(buf)
        if buf.fill.k and time.monotonic() - self._last_write > FLUSH_SECONDS:
            self._write(buf)

    def _compare(self, features: Sequence[np.ndarray], split: str, start: int) -> None:
        for i, x in enumerate(features):
            if len(x):
                stored = np.asarray(x, dtype=self.dtype)  # as written: float16's rounding is no difference
                if self._first[i] is None:
                    self._first[i] = stored[0].copy()
                    self._first_at = (split, start)
                    self._sample[i] = stored[:SAME_LAYER_ROWS].copy()
                self._apart[i] = max(self._apart[i], _largest_gap(stored, self._first[i]))
        self._rows += len(features[0]) if len(features) else 0

    def constant_layers(self) -> list[str]:
        """The layers whose every row (of every split, two rows or more) equals the first one, up to
        rounding: each within :data:`~laya_inspect.cache.schema.CONSTANT_SPREAD` × the first row's largest
        |value| of it; a resumed run compares the rows it wrote with the first on disk."""
        names = decode_attr(self.file.attrs.get("layer_names", "[]"))
        return [name_of(names, i) for i in self._same_rows()]

    def same_layers(self) -> list[tuple[str, str]]:
        """:func:`same_layers` of the first rows (up to SAME_LAYER_ROWS) this writer was given."""
        return same_layers(decode_attr(self.file.attrs.get("layer_names", "[]")), self._sample)

    def _same_rows(self) -> list[int]:
        """The layers whose rows so far are all within the tolerance of the first. The rows a killed
        run wrote are read back for these layers only (rare, and one column of the file each), so a
        resumed run does not name a layer that varied before the kill."""

        def within(i: int) -> bool:
            first = self._first[i]
            if first is None or self._rows < 2:
                return False
            return self._apart[i] <= CONSTANT_SPREAD * max(float(np.max(np.abs(first), initial=0.0)), 1e-30)

        for split, n in list(self._unchecked.items()):
            for i in [i for i in range(len(self._apart)) if within(i)]:
                ds = self._splits[split].layers[i]
                for lo in range(0, n, CHUNK_ROWS):
                    rows = np.asarray(ds[lo : min(n, lo + CHUNK_ROWS)])
                    self._apart[i] = max(self._apart[i], _largest_gap(rows, self._first[i]))
            del self._unchecked[split]
        return [i for i in range(len(self._apart)) if within(i)]

    def row_spread(self) -> dict[str, Any]:
        """What :meth:`constant_layers` decides from, for a reader of several files (a torchrun run's
        shards, joined in cache/shards.py): where the first row lies in this file (``first_row``:
        [split, row], None without rows), each layer's largest |difference| of a row from it
        (``apart``) and the rows compared (``rows``)."""
        self._same_rows()  # the rows a killed run wrote, read back where they decide
        return {
            "first_row": list(self._first_at) if self._first_at is not None else None,
            "apart": [float(a) for a in self._apart],
            "rows": int(self._rows),
        }

    def logit_agreement(self) -> list[int] | None:
        """[rows whose top logit is their label, labelled rows compared] over every split: the rows this
        writer was given and those a killed run wrote; None where not counted (no logits, other than one
        per class, or an untrained model's)."""
        if self._agree is None:
            return None
        return [sum(c[0] for c in self._agree.values()), sum(c[1] for c in self._agree.values())]

    def split_agreement(self) -> dict[str, list[int]] | None:
        """:meth:`logit_agreement` of each split."""
        return None if self._agree is None else {split: list(c) for split, c in self._agree.items()}

    def flush(self) -> None:
        """Write every buffered row now (each split's ``n_written`` then counts it)."""
        for buf in self._splits.values():
            if buf.fill.k:
                self._write(buf)

    def _write(self, buf: _SplitBuffer) -> None:
        # Written here, not in a background thread: h5py holds the GIL while it writes, so a writer
        # thread overlapped nothing (measured in docs/PERFORMANCE.md).
        block, start = buf.fill, buf.on_disk
        stop = start + block.k
        if self.check_space:
            try:
                self._room_for(block.k * (sum(self.widths) * self.dtype.itemsize + 16))
            except WriteError:
                block.clear()  # these rows will not fit: the ones on disk stay whole and resumable
                raise

        def write() -> None:
            for ds, rows in zip(buf.layers, block.feats):
                ds[start:stop] = rows[: block.k]
            buf.labels_ds[start:stop] = block.labels[: block.k]
            buf.index_ds[start:stop] = block.index[: block.k]
            if buf.logits_ds is not None and block.logits is not None:
                buf.logits_ds[start:stop] = block.logits[: block.k]
            if any(block.bad):
                old = decode_attr(buf.group.attrs.get("nonfinite", "")) or [0] * len(block.bad)
                buf.group.attrs["nonfinite"] = encode_attr("x", [int(a) + b for a, b in zip(old, block.bad)])
            # n_written moves only after the rows are on disk, so a kill never counts unwritten rows.
            self.file.flush()
            buf.group.attrs["n_written"] = stop
            self.file.flush()

        self._guard(write)
        start_writeback(self.file.id.get_vfd_handle())  # so finish's fsync has little left to wait for
        buf.on_disk = stop
        block.clear()
        self._last_write = time.monotonic()

    def nonfinite(self) -> dict[str, int]:
        """Non-finite values written so far, per layer (all splits); buffered rows are written first."""
        self.flush()
        names = decode_attr(self.file.attrs.get("layer_names", "[]"))
        total = [0] * len(self.widths)
        for split in self.file:
            for i, b in enumerate(decode_attr(self.file[split].attrs.get("nonfinite", "")) or []):
                total[i] += int(b)
        return {name_of(names, i): t for i, t in enumerate(total) if t}

    def finish(self, warnings: Sequence[str] = (), extra: dict[str, Any] | None = None) -> None:
        """Mark every split and the file complete, add ``warnings`` to its ``warnings`` attribute and the
        attributes ``extra``, record the attributes' digest (nothing changes them after this) and rename
        the partial file to its final name."""
        self.flush()
        for split in self.file:
            g = self.file[split]
            if int(g.attrs["n_written"]) != int(g.attrs["n"]):
                raise CacheError(f"split {split!r} has {g.attrs['n_written']} of {g.attrs['n']} rows")

        def write() -> None:
            for split in self.file:
                self.file[split].attrs["complete"] = True
            self.file.attrs["nonfinite_counts"] = encode_attr("x", self.nonfinite())
            if warnings:
                self.file.attrs["warnings"] = with_warnings(self.file.attrs, warnings)
            for key, value in (extra or {}).items():
                self.file.attrs[key] = encode_attr(key, value)
            if self.overwrite_notes:
                self.file.attrs[OVERWRITE_NOTES] = encode_attr(OVERWRITE_NOTES, self.overwrite_notes)
            self.file.attrs["complete"] = True
            seal(self.file)  # last: the attributes' digest, which the reader checks
            self.file.flush()
            self.file.close()

        self._guard(write)
        with open(self.partial, "rb+") as fh:
            os.fsync(fh.fileno())
        # --overwrite: the cache it replaces keeps its mode and group (after the sync: a read-only one
        # would refuse to reopen the file)
        keep_file_mode(self.partial, self.path)
        # checked again: a file saved at --out while the rows were written is not this run's to replace
        why = (unproven_cache(self.path) if self.overwrite else "exists") if self.path.exists() else None
        why = why or foreign_record(self.path)
        if why is not None or self.path.is_symlink():
            raise InputError(
                f"{self.path} {why or 'is a symlink'}, saved there while the cache was written; it is left as it "
                f"is, and the complete cache kept as {self.partial}: move that file away and rerun to finish"
            )
        # what the next --overwrite checks: the cache as renamed (its size and mtime, or its SHA-256); a
        # shard is joined into the cache, which is recorded (cache/shards.py), never replaced by a user
        record = None if self._shard else take_record(self.path, "extract", {self.path: self.partial})
        os.replace(self.partial, self.path)
        put_record(self.path, record)

    def close(self) -> None:
        """Write the rows appended so far (a resumed run continues after them) and close the file."""
        if not self._broken and self.file.id.valid:
            try:
                self.flush()
            finally:
                if not self._broken:
                    self.file.close()

    def __enter__(self) -> FeatureWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Block:
    """Rows gathered for one write: a buffer per layer, labels, index and logits, ``k`` rows filled."""

    def __init__(self, widths: Sequence[int], dtype: np.dtype, rows: int, num_logits: int | None) -> None:
        self.feats = [np.empty((rows, w), dtype) for w in widths]
        self.labels = np.empty(rows, np.int64)
        self.index = np.empty(rows, np.int64)
        self.logits = None if num_logits is None else np.empty((rows, num_logits), np.float32)
        self.k = 0
        self.bad = [0] * len(widths)  # non-finite values among these rows, per layer

    def put(self, features: Sequence[np.ndarray], labels: np.ndarray, index: np.ndarray, logits, pos: int, k: int):
        at = slice(self.k, self.k + k)
        for buf, x in zip(self.feats, features):
            buf[at] = x[pos : pos + k]
        self.labels[at] = labels[pos : pos + k]
        self.index[at] = index[pos : pos + k]
        if self.logits is not None and logits is not None:
            self.logits[at] = logits[pos : pos + k]
        self.k += k

    def clear(self) -> None:
        self.k, self.bad = 0, [0] * len(self.bad)


class _SplitBuffer:
    """One split's dataset handles, the rows on disk, and the block being filled."""

    def __init__(self, group: h5py.Group, num_layers: int, dtype: np.dtype, rows: int) -> None:
        self.group = group
        self.n = int(group.attrs["n"])
        self.on_disk = int(group.attrs["n_written"])
        self.layers = [group[layer_key(i)] for i in range(num_layers)]
        self.labels_ds, self.index_ds = group["labels"], group["index"]
        self.logits_ds = group["logits"] if "logits" in group else None
        self.rows = max(1, min(rows, self.n))
        logits = None if self.logits_ds is None else int(self.logits_ds.shape[1])
        self.fill = _Block([int(ds.shape[1]) for ds in self.layers], dtype, self.rows, logits)


def _keep_dead(handle: Any) -> None:
    """Keep a failed file's handle alive, and end the interpreter without HDF5's own cleanup,
    which crashes on it (segfault, exit 139) — exit 1, as the write error means."""
    import atexit
    import sys

    if not _DEAD:

        def _exit() -> None:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)

        atexit.register(_exit)  # registered after h5py's, so it runs first
    _DEAD.append(handle)


def _room(folder: Path) -> tuple[int, float]:
    """(bytes free in ``folder``, the largest file this process may write: `ulimit -f`, inf for none)."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return shutil.disk_usage(folder).free, math.inf if limit == resource.RLIM_INFINITY else limit


def _overflow(features: Sequence[np.ndarray], dtype: np.dtype) -> list[int]:
    """Per layer, the finite values that ``dtype`` turns into ±inf (float16 holds up to 65504)."""
    if dtype.itemsize >= 4:
        return [0] * len(features)
    with np.errstate(over="ignore"):
        return [int(np.count_nonzero(np.isfinite(x) & ~np.isfinite(np.asarray(x, dtype=dtype)))) for x in features]


def _nonfinite(features: Sequence[np.ndarray]) -> list[int]:
    return [int(np.size(x) - np.count_nonzero(np.isfinite(x))) for x in features]


def _mb(n: float) -> str:
    if n < 1e5:  # a small `ulimit -f` would read "0.0 MB"
        return f"{n / 1e3:,.0f} KB"
    return f"{n / 1e6:,.1f} MB" if n < 1e9 else f"{n / 1e9:,.2f} GB"
