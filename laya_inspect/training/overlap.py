"""Test rows that are also training rows (docs/METHOD.md, "Quality gate"): a test row whose cached
features equal a row of the training split byte for byte, at every layer the heads read, is an input
the heads were fitted on (a file copied into both split folders, one record twice in a source
table). Its score is partly a training score. The check reads only the cache, so it holds for every
data source and backbone.

Three passes, one chunk of rows in memory at a time: the test rows are hashed (BLAKE2b, 8 bytes, of
each row's bytes over every layer); the training split is streamed, and the first training row of
each hash some test row has is kept, the later ones of that hash compared with it byte for byte and
their labels gathered; the test split is streamed again, and each test row whose hash was kept is
compared with the kept row byte for byte. The memory beyond one chunk: 8 bytes per test row, and one
row per distinct repeated row. Identity at every layer is what counts: a layer that gives one row
for every input (a class token's embedding) makes no two rows equal when another layer differs.

Test rows that repeat one another (:func:`repeated_rows`) are found alike, from 16-byte digests of
the test rows alone: a copy is not another input, yet the test accuracy and every interval drawn
over test rows (compare's, diagnose's and early-exit's bootstraps) count it as one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..cache.store import FeatureStore
from .loop import STREAM_CHUNK_ROWS, CacheRows, Rows
from .stats import percent

EXAMPLES = 5  # test rows named in summary.json and in the warning (first of them)


def _row_bytes(rows: Rows, n: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, (B, bytes) uint8) per chunk of ``rows``: each row's features over every layer as bytes."""
    start = 0
    for hs, _ in rows.batches(np.arange(n), STREAM_CHUNK_ROWS):
        xs = [np.ascontiguousarray(h.detach().cpu().numpy()) for h in hs]
        chunk = np.concatenate([x.reshape(len(x), -1).view(np.uint8) for x in xs], axis=1)
        yield start, chunk
        start += len(chunk)


def _hashes(chunk: np.ndarray) -> np.ndarray:
    """(B,) uint64: the first 8 bytes of each row's BLAKE2b digest."""
    return np.frombuffer(b"".join(hashlib.blake2b(r, digest_size=8).digest() for r in chunk), dtype=np.uint64)


def repeated_rows(test: CacheRows) -> dict[str, Any] | None:
    """The rows of split ``test`` identical at every layer to an earlier row of it, or None when
    every row is distinct (:func:`repeated_among` over the whole split)."""
    digests = [digest(chunk) for _, chunk in _row_bytes(test, len(test.labels))]
    return repeated_among(np.concatenate(digests), test.store, test.split) if digests else None


def with_lines(found: dict[str, Any] | None, lines: Any, keys: dict[str, str]) -> dict[str, Any] | None:
    """``found`` with each example's file line beside its source index (``keys``: index field → line
    field) and ``file``, where the cache records the lines its rows start on (the cache's ``source_lines``:
    a CSV, TSV or JSONL file), as extract and explain name such rows; ``found`` as it is otherwise."""
    if found is None or not isinstance(lines, dict) or not lines.get("runs"):
        return found
    runs = np.asarray(lines["runs"], dtype=np.int64)

    def line(index: int) -> int:
        first, at = runs[np.searchsorted(runs[:, 0], index, side="right") - 1]
        return int(at + index - first)

    examples = [{**e, **{k: line(e[i]) for i, k in keys.items()}} for e in found["examples"]]
    return {**found, "file": str(lines.get("file") or ""), "examples": examples}


def _named(found: dict[str, Any], example: dict[str, Any], index: str, line: str) -> str:
    """A source row as extract names it: "line 7 of reviews.csv" where its line is known, else its index."""
    if line in example:
        return f"line {example[line]} of {found['file']}"
    return f"source index {example[index]}"


def digest(rows: Iterable[Any]) -> np.ndarray:
    """(B,) 16-byte BLAKE2b digests of ``rows`` (each a bytes-like row; a tuple of them is read as their
    concatenation), for :func:`repeated_among`."""
    out = []
    for r in rows:
        h = hashlib.blake2b(digest_size=16)
        for part in r if isinstance(r, tuple) else (r,):
            h.update(part)
        out.append(h.digest())
    return np.frombuffer(b"".join(out), dtype="V16")


def repeated_among(
    digests: np.ndarray, store: FeatureStore, split: str, rows: np.ndarray | None = None
) -> dict[str, Any] | None:
    """The rows among ``rows`` (row numbers of ``split`` in the cache ``store``, ascending; every row of
    it where None) identical at every layer to an earlier one of them, or None when every row is distinct.
    ``digests``: each row's :func:`digest` of its features over every layer, in the order of ``rows`` (a
    collision of two different rows: about 2**-128 a pair), 16 bytes a row in memory.

    Returns summary.json's ``quality.test_rows_repeated`` (compare's ``rows_repeated``): ``split``,
    ``rows`` (how many rows repeat an earlier one), ``of`` (the rows read), ``distinct`` (the distinct
    rows), ``examples`` (the first few: the row, the earlier row it repeats, their source indices, and their
    file lines where the cache records them, :func:`with_lines`)."""
    if len(digests) == 0:
        return None
    index = store.index(split) if rows is None else store.index(split, rows)
    rows = np.arange(len(digests)) if rows is None else rows
    n = len(rows)
    _, first, inverse = np.unique(digests, return_index=True, return_inverse=True)
    earlier = first[inverse.reshape(-1)]  # the first row with each row's digest
    repeats = np.flatnonzero(earlier != np.arange(n))
    if len(repeats) == 0:
        return None
    examples = [
        {
            "row": int(rows[r]),
            "index": int(index[r]),
            "first_row": int(rows[earlier[r]]),
            "first_index": int(index[earlier[r]]),
        }
        for r in repeats[:EXAMPLES]
    ]
    found = {"split": split, "rows": len(repeats), "of": n, "distinct": len(first), "examples": examples}
    return with_lines(found, store.attrs.get("source_lines"), {"index": "line", "first_index": "first_line"})


def repeated_warning(found: dict[str, Any]) -> str:
    """The gate's one line on :func:`repeated_rows`'s finding, on every head."""
    e, split = found["examples"][0], found["split"]
    row, first = _named(found, e, "index", "line"), _named(found, e, "first_index", "first_line")
    return (
        f"{found['rows']} of {found['of']} {split} rows ({_share(found['rows'] / max(found['of'], 1))}) repeat an "
        f"earlier {split} row (the same features at every layer, e.g. row {e['row']} ({row}) = row "
        f"{e['first_row']} ({first})): {found['distinct']} distinct inputs, yet the "
        f"test accuracy and every interval over {split} rows (compare's, diagnose's and early-exit's bootstraps) "
        f"count each copy as another input, so those intervals are narrower than {found['distinct']} inputs allow; "
        "remove the copies and extract again"
    )


def rows_in_train(train: CacheRows, test: CacheRows) -> dict[str, Any] | None:
    """The rows of split ``test`` identical to a row of split ``train`` at every layer (of the
    store's view: the layers the heads read), or None when there is none.

    Returns summary.json's ``quality.test_rows_in_train``: ``train_split``, ``test_split``, ``rows``
    (how many test rows), ``of`` (the test rows), ``share``, ``other_label`` (how many of them have
    a training copy under another label), ``examples`` (the first few: test row, training row,
    their source indices and labels)."""
    train_labels, test_labels = train.labels, test.labels
    train_index, test_index = train.store.index(train.split), test.store.index(test.split)
    n_test, n_train = len(test_labels), len(train_labels)
    test_hash = np.concatenate([_hashes(c) for _, c in _row_bytes(test, n_test)] or [np.zeros(0, np.uint64)])
    wanted = np.unique(test_hash)
    kept: dict[int, tuple[int, bytes, set[int]]] = {}  # hash → (first training row, its bytes, labels)
    for start, chunk in _row_bytes(train, n_train):
        h = _hashes(chunk)
        for i in np.flatnonzero(np.isin(h, wanted)):
            key, row, label = int(h[i]), chunk[i].tobytes(), int(train_labels[start + i])
            if key not in kept:
                kept[key] = (start + int(i), row, {label})
            elif kept[key][1] == row:  # a different row with the same 8-byte hash is left out
                kept[key][2].add(label)
    if not kept:
        return None
    same: list[tuple[int, int]] = []  # (test row, training row)
    other, keys = 0, np.fromiter(kept, dtype=np.uint64, count=len(kept))
    for start, chunk in _row_bytes(test, n_test):
        for i in np.flatnonzero(np.isin(test_hash[start : start + len(chunk)], keys)):
            first, row, labels = kept[int(test_hash[start + i])]
            if chunk[i].tobytes() == row:
                same.append((start + int(i), first))
                other += bool(labels - {int(test_labels[start + i])})
    if not same:
        return None
    examples = []
    for t, j in same[:EXAMPLES]:
        examples.append(
            {
                "test_row": t,
                "test_index": int(test_index[t]),
                "test_label": int(test_labels[t]),
                "train_row": j,
                "train_index": int(train_index[j]),
                "train_label": int(train_labels[j]),
            }
        )
    found = {
        "train_split": train.split,
        "test_split": test.split,
        "rows": len(same),
        "of": n_test,
        "share": len(same) / max(n_test, 1),
        "other_label": other,
        "examples": examples,
    }
    lines = test.store.attrs.get("source_lines")
    return with_lines(found, lines, {"test_index": "test_line", "train_index": "train_line"})


def overlap_warning(found: dict[str, Any]) -> str:
    """The gate's one line on :func:`rows_in_train`'s finding, on every head."""
    e, train_split, test_split = found["examples"][0], found["train_split"], found["test_split"]

    def at(split: str, row: int, part: str) -> str:
        return f"{split} row {row} ({_named(found, e, part + '_index', part + '_line')})"

    other = found["other_label"]
    example = f"{at(test_split, e['test_row'], 'test')} = {at(train_split, e['train_row'], 'train')}"
    # a source index names no file: explain reads the row's file back from the data
    find = "" if "test_line" in e else f" (`laya-inspect explain HEAD --row {e['test_row']}` names the test row's file)"
    return (
        f"{found['rows']} of {found['of']} {test_split} rows ({_share(found['share'])}) are identical to rows of the "
        f"{train_split!r} split (the same features at every layer, e.g. {example}): the test accuracy is partly a "
        f"training accuracy{f'; {other} of them carry another label there (label noise)' if other else ''}; remove "
        "the copies from one split (a file copied into both split folders, a record twice in the source, or two "
        "inputs that become the same once read, such as fully transparent images composited on white) and "
        f"extract again{find}"
    )


def _share(share: float) -> str:
    """A share as a percentage that does not round a few rows of many to 0%."""
    return percent(share) if share >= 0.005 else "under 1%"
