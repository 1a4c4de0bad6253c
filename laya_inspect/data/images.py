"""Image sources: in-memory arrays (what ``npz:FILE`` and the named datasets hold) and folders of
image files (``imagefolder:DIR``).

``imagefolder:DIR`` takes either class folders (``DIR/<class>/*.png``; split into train/test by a
seeded stratified split) or split folders of class folders (``DIR/{train,test,val…}/<class>/…``).
Only file paths are listed up front; images are read with PIL one batch at a time, each converted
on its own to the model's channels (``pixels.read_image``; a model that does not say gets RGB if any
file is in colour, else greyscale). Class names are the sorted folder names (as torchvision's
``ImageFolder``), shared by all splits.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import InputError
from .base import Source, SplitSource, read_failed, stratified_split, user_path
from .pixels import DECODE, folder_channels, read_image

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
SPLIT_NAMES = ("train", "test", "val", "valid", "validation", "dev", "eval")


# ----------------------------------------------------------------------------- arrays
def images_nchw(x: np.ndarray, *, where: str) -> np.ndarray:
    """(N, H, W), (N, H, W, C) or (N, C, H, W) → (N, C, H, W), uint8 or float32 (a view if possible)."""
    if x.ndim == 3:
        x = x[:, None]
    elif x.ndim == 4:
        if x.shape[1] not in (1, 3, 4) and x.shape[-1] in (1, 3, 4):
            x = x.transpose(0, 3, 1, 2)
        elif x.shape[1] not in (1, 3, 4):
            raise InputError(
                f"{where}: cannot tell the channel axis of images shaped {x.shape} "
                "(expected (N, H, W, C) or (N, C, H, W) with C in 1, 3, 4)"
            )
    else:
        raise InputError(f"{where}: expected images (N, H, W[, C]) or vectors (N, D), got shape {x.shape}")
    return _pixel_dtype(x, where)


def _pixel_dtype(x: np.ndarray, where: str) -> np.ndarray:
    if x.dtype == np.uint8 or np.issubdtype(x.dtype, np.floating):
        return x if x.dtype != np.float64 else x.astype(np.float32)
    if np.issubdtype(x.dtype, np.integer) or x.dtype == np.bool_:
        if x.size and (x.min() < 0 or x.max() > 255):
            raise InputError(f"{where}: integer pixels must lie in 0..255, got {x.min()}..{x.max()}")
        return x.astype(np.uint8) if x.dtype != np.bool_ else x.astype(np.float32)
    raise InputError(f"{where}: unsupported array dtype {x.dtype}")


def _describe_arrays(x: np.ndarray, scale: str | None) -> tuple[str, dict]:
    native: dict[str, Any]
    if x.ndim == 2:
        kind, native = "vector", {"dim": int(x.shape[1])}
    else:
        kind, native = "image", {"channels": int(x.shape[1]), "size": tuple(int(s) for s in x.shape[2:])}
    native["scale"] = scale or ("uint8/255" if x.dtype == np.uint8 else "none (float input kept as is)")
    return kind, native


def _rows_of(x: np.ndarray):  # noqa: ANN202
    return lambda rows: torch.from_numpy(np.ascontiguousarray(x[rows]))


def array_source(
    arrays: dict[str, tuple[np.ndarray, np.ndarray]],
    class_names: list[str],
    *,
    location: str,
    seed: int = 0,
    test_fraction: float = 0.2,
    scale: str | None = None,
) -> Source:
    """A Source over in-memory arrays, X (N, C, H, W) images or (N, D) vectors: ``{split: (X, labels)}``
    with native splits, or ``{"": (X, labels)}``, one pool split into train/test by a seeded
    stratified split (rows index the pool)."""
    first = next(iter(arrays.values()))[0]
    for name, (x, _) in arrays.items():
        if x.shape[1:] != first.shape[1:]:
            raise InputError(f"{location}: split {name!r} has inputs shaped {x.shape[1:]}, others {first.shape[1:]}")
    kind, native = _describe_arrays(first, scale)
    if "" in arrays:
        x, y = arrays[""]
        rows, info = stratified_split(y, test_fraction=test_fraction, seed=seed)
        open_split = lambda s: SplitSource(labels=y[rows[s]], rows=rows[s], fetch=_rows_of(x))  # noqa: E731
    else:
        rows, info = {s: a[1] for s, a in arrays.items()}, {"method": "native"}
        open_split = lambda s: SplitSource(labels=arrays[s][1], fetch=_rows_of(arrays[s][0]))  # noqa: E731
    return Source(
        kind=kind,
        class_names=class_names,
        split_names=list(rows),
        open=open_split,
        split_info=info,
        native=native,
        location=location,
    )


# ----------------------------------------------------------------------------- image folders
def _subdirs(d: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(d) if e.is_dir() and not e.name.startswith("."))
    except OSError as e:
        raise read_failed(e) from None


def _image_files(d: Path) -> list[str]:
    out = []

    def fail(e: OSError) -> None:
        raise read_failed(e)

    for root, _, files in sorted(os.walk(d, followlinks=True, onerror=fail)):
        out += [os.path.join(root, f) for f in sorted(files) if f.lower().endswith(IMG_EXTENSIONS)]
    return out


def _folder_split(files: list[str], labels: np.ndarray, channels: int, rows: np.ndarray | None = None) -> SplitSource:
    def fetch(q: np.ndarray) -> list[torch.Tensor]:
        return [read_image(files[i], channels) for i in q.tolist()]

    return SplitSource(labels=labels if rows is None else labels[rows], rows=rows, fetch=fetch)


def load_imagefolder(
    arg: str, options: dict, *, seed: int, test_fraction: float, channels: int | None = None, **_unused: Any
) -> Source:
    root = user_path(arg, folder=True, what="image folder")
    top = _subdirs(root)
    split_dirs = [s for s in top if _subdirs(root / s)] if any(s.lower() in SPLIT_NAMES for s in top) else []
    split_dirs.sort(key=lambda s: (SPLIT_NAMES.index(s.lower()) if s.lower() in SPLIT_NAMES else 99, s))
    groups = {s: root / s for s in split_dirs} if split_dirs else {"": root}
    class_names = sorted({c for d in groups.values() for c in _subdirs(d)})
    if not class_names:
        raise InputError(f"{root}: no class folders (expected DIR/<class>/<image> or DIR/<split>/<class>/<image>)")
    lookup = {c: i for i, c in enumerate(class_names)}
    listed: dict[str, tuple[list[str], np.ndarray]] = {}
    for s, d in groups.items():
        split_files: list[str] = []
        split_labels: list[int] = []
        for c in _subdirs(d):
            found = _image_files(d / c)
            split_files += found
            split_labels += [lookup[c]] * len(found)
        listed[s] = (split_files, np.array(split_labels, dtype=np.int64))
    every = [f for files, _ in listed.values() for f in files]
    if not every:
        raise InputError(f"{root}: no image files ({', '.join(IMG_EXTENSIONS)}) in the class folders")
    # The model's channels when it says (each file converted to them); otherwise the folder's own,
    # decided from every file so that no file's place in the listing changes another's pixels.
    chans = channels if channels in (1, 3) else folder_channels(every)
    native = {"channels": chans, "size": None, "scale": "uint8/255 (16-bit: /65535)", "decode": DECODE}
    if split_dirs:
        split_names, info = split_dirs, {"method": "native"}
        open_split = lambda s: _folder_split(*listed[s], chans)  # noqa: E731
    else:
        files, labels = listed[""]
        rows, info = stratified_split(labels, test_fraction=test_fraction, seed=seed)
        split_names = ["train", "test"]
        open_split = lambda s: _folder_split(files, labels, chans, rows[s])  # noqa: E731
    return Source(
        kind="image",
        class_names=class_names,
        split_names=split_names,
        open=open_split,
        split_info=info,
        native=native,
        location=str(root),
    )
