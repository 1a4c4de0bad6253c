"""What `compare` reads before it measures, checked: the heads (named as the outputs name them), the
lines to read beside every score of them, the compared rows whose features are finite, and the
refusals of a head whose logits overflow and of a --target on a class a head never learnt.
`explain` reads its one head and row through the same functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np
import torch

from ..cache.store import FeatureStore
from ..errors import CacheError, InputError, name_of
from ..head_dir import (
    fit_warnings,
    identity,
    load_head,
    other_cache,
    refuse_replaced,
    trained_split,
    unchecked_rows,
)
from ..heads import Head
from . import metrics as M
from .config import CompareConfig
from .seeds import SEED_DIR

# each loaded head's directory identity, noted before any of them was read: head_warnings reads
# summary.json after, and checks that no run replaced the heads meanwhile
_NOTED: WeakKeyDictionary[Head, tuple[str, tuple[int, int] | None]] = WeakKeyDictionary()


def load_heads(
    head_dirs: Sequence[str | Path], store: FeatureStore, allow_other_cache: bool, device: torch.device
) -> dict[str, tuple[Head, dict, str]]:
    """Each head directory's head (on ``device``, in eval mode), config.json and resolved path, under
    the name the outputs give it: its folder's, fit-head's ``<head>/seed_<S>/`` as "<head>-seed_<S>",
    a repeated name with -2, -3, …"""
    if not head_dirs:
        raise InputError("no head directory given")
    heads: dict[str, tuple[Head, dict, str]] = {}
    # one run's heads, not seed_0 of one and seed_1 of the next fit-head --force
    noted = [(d, identity(d)) for d in head_dirs]
    for d, seen in noted:  # a folder missing is load_head's to name; one replaced is refused below
        head, cfg = load_head(d, store=store, force=allow_other_cache, hint="pass --allow-other-cache to use it anyway")
        path = Path(d).resolve()
        base = path.name or "head"
        if SEED_DIR.fullmatch(base) and path.parent.name:  # fit-head's <head>/seed_<S>/ → "<head>-seed_<S>"
            base = f"{path.parent.name}-{base}"
        name, k = base, 2
        while name in heads:
            name, k = f"{base}-{k}", k + 1
        heads[name] = (head.to(device).eval(), cfg, str(Path(d).resolve()))
        _NOTED[heads[name][0]] = (str(d), seen)
    for d, seen in noted:
        refuse_replaced(d, seen)
    return heads


def head_warnings(heads: Mapping[str, tuple[Head, dict, str]], store: FeatureStore, split: str) -> list[str]:
    """A line for each head trained on another cache (let through by --allow-other-cache), to be read
    beside every score: its features came from elsewhere; for each head scored on the rows it was
    trained on; and what fit-head's quality gate said of each head."""
    lines: list[str] = []
    for name, (_, cfg, path) in heads.items():
        lines += [w for w in fit_warnings(path, cfg) if w not in lines]  # said once for all seeds of a head
        why = other_cache(name, cfg, store)
        if why is not None:
            lines.append(f"{why}; compared here under --allow-other-cache")
        elif trained_split(cfg) == split:
            lines.append(
                f"head {name} was trained on split {split!r}, the split compared here: its attributions are read "
                "on its own training rows, where its predictions are fitted, not on held-out inputs"
            )
        unchecked = unchecked_rows(name, cfg, store)
        if unchecked is not None:
            lines.append(unchecked)
    for head, _, _ in heads.values():
        if head in _NOTED:
            refuse_replaced(*_NOTED[head])
    return lines


def finite_rows(
    store: FeatureStore, config: CompareConfig, rows: np.ndarray, feats: list[np.ndarray]
) -> tuple[np.ndarray, list[np.ndarray], dict[str, Any] | None]:
    """Rows whose features are all finite; the others refused, or with ``allow_nonfinite`` left out
    and described (their count and cache row indices)."""
    ok = M.finite_rows(*feats)
    if ok.all():
        return rows, feats, None
    bad = rows[~ok]
    where = f"{store.path}: {len(bad)} of {len(rows)} {config.split!r} rows hold non-finite features (NaN or ±inf"
    if not ok.any():
        raise CacheError(f"{where}; every compared row), nothing to score; re-extract the cache from clean inputs")
    if not config.allow_nonfinite:
        raise CacheError(
            f"{where}; first: row {int(bad[0])}); re-extract the cache from clean inputs, or pass "
            "--allow-nonfinite to leave those rows out (counted in the outputs)"
        )
    info = {"n": int(len(bad)), "rows": bad.astype(int).tolist(), "why": "non-finite features (NaN or ±inf)"}
    return rows[ok], [f[ok] for f in feats], info


def nonfinite_logits(
    name: str, head_dir: str | Path, split: str, finite: np.ndarray, row: int | None = None
) -> CacheError:
    """The error for a head whose logits are NaN or ±inf on some rows (``finite``: (N,) bool, False
    there); ``row``: the split's row when only that one was run (explain)."""
    k, n = int((~finite).sum()), len(finite)
    where = (
        f"row {row} of split {split!r}"
        if row is not None
        else f"{k} of {n} rows of split {split!r} (first: row {int(np.flatnonzero(~finite)[0])} of those compared)"
    )
    return CacheError(
        f"head {name} ({head_dir}) gives non-finite logits (NaN or ±inf) on {where}: its weights overflow on these "
        "features; refit the head"
        + (", or pick another --row" if row is not None else "")
        + ("" if k == n else ", or pass --allow-nonfinite to leave those rows out (counted)")
    )


def refuse_untrained_targets(
    heads: dict[str, Head], target_of: str | int, labels: np.ndarray, class_names: Sequence[str]
) -> None:
    """Refuse a --target that would explain a class a head had no training rows of: its output unit
    never learnt anything (its logit is held below every other), so effects on it say nothing."""
    for name, head in heads.items():
        untrained = set(head.untrained_classes)
        if isinstance(target_of, int):
            hit = [target_of] if target_of in untrained else []
        elif target_of == "true":
            hit = sorted(untrained & {int(c) for c in np.unique(labels)})
        else:
            hit = []
        if hit:
            rows = int(np.isin(labels, hit).sum()) if target_of == "true" else len(labels)
            shown = ", ".join(repr(name_of(class_names, c)) for c in hit)
            raise InputError(
                f"--target {target_of}: class(es) {shown} had no training rows, so head {name} never learnt them, "
                f"and {rows} of {len(labels)} rows would be explained on an untrained output; use --target pred, or "
                "a test split without those classes"
            )


def repeated_compared(
    store: FeatureStore, split: str, rows: np.ndarray, feats: Sequence[np.ndarray]
) -> tuple[dict[str, Any] | None, list[str]]:
    """The compared rows that repeat an earlier compared row at every layer (training.overlap's
    helper, fit-head's gate's: the same record), or None; and the gate's line on them, or none. A head
    from export-head has no fit-head summary to say so, yet every bootstrap over rows counts each copy
    as another input. The rows are read in the cache's order, and named by their file line where the
    cache records one (a CSV, TSV or JSONL file), so that over the same rows the line is fit-head's, word
    for word, and said once (records.said_once)."""
    from ..training.overlap import digest, repeated_among, repeated_warning

    # each row's layers hashed in place (no copy of the features), then put in the cache's order
    flat = [np.ascontiguousarray(x).reshape(len(x), -1).view(np.uint8) for x in feats]
    digests = digest(tuple(x[i] for x in flat) for i in range(len(rows)))
    order = np.argsort(rows, kind="stable")
    found = repeated_among(digests[order], store, split, rows[order])
    return found, [repeated_warning(found)] if found else []
