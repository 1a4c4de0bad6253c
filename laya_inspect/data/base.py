"""What every dataset loader returns, and the seeded stratified splits and subsets they share.

A loader turns a spec's argument into a :class:`Source`: the class names, the split names it has,
and ``open(split) -> SplitSource`` (labels, source rows, and a ``fetch(rows)`` that reads the raw
inputs of those rows). Loading is deferred to ``open`` so that asking for ``test`` does not read
``train``; image folders defer further, to ``fetch``, one batch at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError


@dataclass
class SplitSource:
    """One split as the loader sees it, before ``limit`` and transforms.

    ``rows`` (N,) int64 are the rows in the source dataset (what ``Split.batches`` yields as
    ``index``); ``fetch(rows)`` returns the raw inputs of those rows: an image tensor (B, C, H, W)
    (uint8, or float in [0, 1]), a list of (C, H, W) tensors when sizes may differ, a float tensor
    (B, D) of vectors, or a list of B strings.
    """

    labels: np.ndarray
    fetch: Callable[[np.ndarray], Any]
    rows: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.labels = np.asarray(self.labels, dtype=np.int64)
        self.rows = (
            np.arange(len(self.labels), dtype=np.int64) if self.rows is None else np.asarray(self.rows, dtype=np.int64)
        )


@dataclass
class Source:
    """A loaded dataset spec: ``kind`` is "image", "vector" or "text".

    ``native`` describes the raw inputs for the transform (images: ``channels``, ``size`` (H, W) or
    None when sizes may differ, ``scale`` (how raw values were brought to [0, 1])).
    """

    kind: str
    class_names: list[str]
    split_names: list[str]
    open: Callable[[str], SplitSource]
    split_info: dict = field(default_factory=lambda: {"method": "native"})
    native: dict = field(default_factory=dict)
    location: str = ""


@dataclass(frozen=True)
class DatasetKind:
    """A registry entry: ``load(arg, options, *, seed, test_fraction) -> Source``.

    ``arg`` is "required", "optional" or "none" (the part after ``prefix:``); ``options`` are the
    ``?key=value`` names the spec may carry.
    """

    load: Callable[..., Source]
    arg: str
    usage: str
    options: tuple[str, ...] = ()


def stratified_split(labels: np.ndarray, *, test_fraction: float, seed: int) -> tuple[dict, dict]:
    """Seeded stratified train/test split of rows ``0..N-1`` (sklearn ``train_test_split``).

    Returns ``({"train": rows, "test": rows}, split_info)``, rows sorted ascending. Falls back to an
    unstratified split (recorded as ``"stratified": False``) when a class has a single member.
    """
    from sklearn.model_selection import train_test_split

    if not 0.0 < float(test_fraction) < 1.0:
        raise InputError(f"test_fraction must be between 0 and 1, got {test_fraction!r}")
    labels = np.asarray(labels, dtype=np.int64)
    rows = np.arange(len(labels), dtype=np.int64)
    if len(rows) < 2:
        raise InputError(f"cannot split {len(rows)} sample(s) into train and test")
    _, counts = np.unique(labels, return_counts=True)
    stratify = labels if counts.min() >= 2 else None
    try:
        train, test = train_test_split(rows, test_size=test_fraction, random_state=seed, stratify=stratify)
    except ValueError:  # too few test rows for one per class: keep the split, drop stratification
        stratify = None
        train, test = train_test_split(rows, test_size=test_fraction, random_state=seed)
    info = {
        "method": "stratified" if stratify is not None else "random",
        "seed": int(seed),
        "test_fraction": float(test_fraction),
        "n_source": int(len(rows)),
        "stratified": stratify is not None,
    }
    return {"train": np.sort(train), "test": np.sort(test)}, info


def stratified_subset(labels: np.ndarray, k: int, *, seed: int) -> np.ndarray:
    """Positions of a seeded subset of ``k`` of ``labels`` with class proportions kept, sorted.

    Each class gets ``floor(k * n_c / N)`` rows, and the remaining rows go to the classes with the
    largest fractional parts (ties broken by the seed); so 100 of a balanced 10-class set is 10 each.
    """
    labels = np.asarray(labels, dtype=np.int64)
    n = len(labels)
    if k >= n:
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(labels, return_counts=True)
    quota = counts * (k / n)
    take = np.floor(quota).astype(np.int64)
    order = np.lexsort((rng.random(len(classes)), -(quota - take)))
    take[order[: k - int(take.sum())]] += 1
    picked = [rng.choice(np.flatnonzero(labels == c), size=t, replace=False) for c, t in zip(classes, take) if t > 0]
    return np.sort(np.concatenate(picked)).astype(np.int64)


def encode_labels(values: Sequence[Any], *, where: str) -> tuple[np.ndarray, list[str]]:
    """Labels as read from a file → (int64 array, class names).

    Non-negative integers (or strings of them) are kept as they are, with names "0".."max";
    anything else (words, negative numbers) is mapped to the sorted distinct values.
    """
    vals = list(values)
    if not vals:
        raise InputError(f"no labels in {where}")
    as_int = _as_ints(vals)
    if as_int is not None and as_int.min() >= 0:
        return as_int, [str(i) for i in range(int(as_int.max()) + 1)]
    if as_int is not None:
        names_sorted = sorted(set(as_int.tolist()))
        lookup = {v: i for i, v in enumerate(names_sorted)}
        return np.array([lookup[v] for v in as_int.tolist()], dtype=np.int64), [str(v) for v in names_sorted]
    strs = [str(v) for v in vals]
    names = sorted(set(strs))
    lookup = {v: i for i, v in enumerate(names)}
    return np.array([lookup[v] for v in strs], dtype=np.int64), names


def _as_ints(vals: list[Any]) -> np.ndarray | None:
    out = []
    for v in vals:
        if isinstance(v, (bool, np.bool_)):
            out.append(int(v))
        elif isinstance(v, (int, np.integer)):
            out.append(int(v))
        elif isinstance(v, (float, np.floating)) and float(v).is_integer():
            out.append(int(v))
        elif isinstance(v, str) and v.strip().lstrip("-").isdigit():
            out.append(int(v.strip()))
        else:
            return None
    return np.array(out, dtype=np.int64)
