"""Every file the tool writes goes through here: plain values, and atomic writers.

Atomic: each writer writes ``<name>.tmp-<pid>`` beside the target, flushes and fsyncs it, then
renames it over the target, so a reader (or a killed run) sees the old file or the new one, never
half of one. One policy for numbers JSON and CSV cannot hold: NaN and ±inf become ``null`` in JSON
and an empty cell in CSV.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np


def plain(v: Any) -> Any:
    """dicts (keys as str), lists, str, int, float, bool, None only: numpy arrays and scalars become
    Python values, tuples lists, paths str, and NaN/±inf None (JSON has no such numbers)."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return plain(v.tolist())
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, Path):
        return str(v)
    return v


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the body returns, the file written there replaces
    ``path`` in one rename. When the body raises, the temporary file is removed and ``path`` is left
    as it was. For writers that take a file name (h5py, torch.save, savefig)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        if tmp.exists():
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_bytes(path: str | Path, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, obj: Any) -> Path:
    """``obj`` as indented UTF-8 JSON after :func:`plain` (so NaN is null)."""
    return write_text(path, json.dumps(plain(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def csv_cell(v: Any) -> Any:
    if v is None or (isinstance(v, (float, np.floating)) and not math.isfinite(float(v))):
        return ""
    return v.item() if isinstance(v, np.generic) else v


def write_csv(path: str | Path, rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> Path:
    """One row per dict; the columns are every key in first-seen order (or ``columns``)."""
    cols = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=cols)
    w.writeheader()
    for r in rows:
        w.writerow({k: csv_cell(v) for k, v in r.items()})
    return write_text(path, buf.getvalue())


def write_with(path: str | Path, writer: Callable[[Path], Any]) -> Path:
    """``writer(tmp)`` writes the file, which then replaces ``path`` atomically."""
    with atomic_path(path) as tmp:
        writer(tmp)
    return Path(path)
