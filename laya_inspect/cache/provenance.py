"""What a cache records about where its rows came from: the normalisation in words, and a
fingerprint of the data that a resumed run must match."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import torch


def describe_normalization(transforms: dict[str, Any]) -> str:
    """What normalisation the inputs got, in words, from the transforms the cache records."""
    norm = transforms.get("normalize", transforms.get("normalization")) if isinstance(transforms, dict) else None
    if norm in (None, "none", {}, []):
        return "none"
    if isinstance(norm, dict) and not norm.get("applied", True):
        return f"none ({norm['why']})" if norm.get("why") else "none"
    if isinstance(norm, dict):
        where = f" ({norm['from']})" if norm.get("from") else ""
        return f"mean {norm.get('mean')}, std {norm.get('std')}{where}"
    return str(norm)


def data_fingerprint(data: Any) -> str:
    """A hash of what the rows come from, so a resumed run can tell that the data changed: the files
    behind the spec (content of a file; names, sizes and times of a folder's files), each split's
    planned labels and rows, and the transformed inputs of each split's first rows."""
    h = hashlib.sha256()
    location = Path(getattr(data, "location", "") or "")
    if str(location) not in ("", ".") and location.exists():
        h.update(_files_digest(location).encode())
    for name, split in data.splits.items():
        h.update(name.encode())
        h.update(np.ascontiguousarray(split.labels, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(split.index, dtype=np.int64).tobytes())
        if split.n:
            inputs, _, _ = next(iter(split.batches(min(8, split.n))))
            for t in inputs.values() if isinstance(inputs, dict) else [inputs]:
                h.update(np.ascontiguousarray(torch.as_tensor(t).float().cpu().numpy()).tobytes())
    return h.hexdigest()[:16]


def _files_digest(path: Path) -> str:
    from ..models.weights import sha256_file

    if path.is_file():
        return sha256_file(path)
    entries = []
    for p in sorted(path.rglob("*")):
        if p.is_file():
            st = p.stat()
            entries.append(f"{p.relative_to(path)}\t{st.st_size}\t{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()
