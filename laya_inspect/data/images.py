"""Image sources: in-memory arrays (``npz:FILE``) and folders of image files (``imagefolder:DIR``).

``imagefolder:DIR`` takes either class folders (``DIR/<class>/*.png``; split into train/test by a
seeded stratified split) or split folders of class folders (``DIR/{train,test,val…}/<class>/…``).
Only file paths are listed up front; images are read with PIL one batch at a time. Class names are
the sorted folder names (as torchvision's ``ImageFolder``), shared by all splits.

``npz:FILE`` holds ``X`` and ``y``, or per-split ``X_<split>``/``y_<split>`` (e.g. ``X_train``,
``y_test``), and optionally ``class_names``. ``X`` is images (N, H, W), (N, H, W, C) or (N, C, H, W)
with C in 1, 3, 4, or vectors (N, D); uint8 is scaled by 1/255, floats are taken as already in [0, 1].
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import InputError, NotFoundError
from .base import Source, SplitSource, encode_labels, stratified_split

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
SPLIT_NAMES = ("train", "test", "val", "valid", "validation", "dev", "eval")
_GRAY_MODES = ("1", "L", "LA", "I", "I;16", "F")


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
    arrays: dict[str, tuple[np.ndarray, np.ndarray]], class_names: list[str], *, location: str, scale: str | None = None
) -> Source:
    """A Source over in-memory arrays with native splits: ``{split: (X, labels)}``.

    X is (N, C, H, W) images or (N, D) vectors.
    """
    first = next(iter(arrays.values()))[0]
    for name, (x, _) in arrays.items():
        if x.shape[1:] != first.shape[1:]:
            raise InputError(f"{location}: split {name!r} has inputs shaped {x.shape[1:]}, others {first.shape[1:]}")
    kind, native = _describe_arrays(first, scale)
    return Source(
        kind=kind,
        class_names=class_names,
        split_names=list(arrays),
        open=lambda s: SplitSource(labels=arrays[s][1], fetch=_rows_of(arrays[s][0])),
        native=native,
        location=location,
    )


def seeded_array_source(
    x: np.ndarray,
    y: np.ndarray,
    class_names: list[str],
    *,
    location: str,
    seed: int,
    test_fraction: float,
    scale: str | None = None,
) -> Source:
    """One pool of arrays, split into train/test by a seeded stratified split (rows index the pool)."""
    rows, info = stratified_split(y, test_fraction=test_fraction, seed=seed)
    kind, native = _describe_arrays(x, scale)
    return Source(
        kind=kind,
        class_names=class_names,
        split_names=["train", "test"],
        open=lambda s: SplitSource(labels=y[rows[s]], rows=rows[s], fetch=_rows_of(x)),
        split_info=info,
        native=native,
        location=location,
    )


def load_npz(arg: str, options: dict, *, seed: int, test_fraction: float) -> Source:
    path = Path(arg).expanduser()
    if not path.is_file():
        raise NotFoundError(f"no npz file {str(path)!r}")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (ValueError, OSError, zipfile.BadZipFile) as e:  # ValueError: pickled objects, refused
        raise InputError(f"{path}: not an npz archive of plain arrays (np.savez): {e}") from None
    keys = {k.lower(): k for k in arrays}
    names = arrays.get("class_names")
    split_keys = sorted({m.group(1) for k in arrays if (m := re.fullmatch(r"[xX]_(\w+)", k))})
    if "x" in keys:
        if "y" not in keys:
            raise InputError(f"{path}: has X but no y (keys: {', '.join(arrays)})")
        pools = {"": (arrays[keys["x"]], arrays[keys["y"]])}
    elif split_keys:
        missing = [s for s in split_keys if f"y_{s}".lower() not in keys]
        if missing:
            raise InputError(f"{path}: no labels y_{missing[0]} for X_{missing[0]} (keys: {', '.join(arrays)})")
        pools = {
            s: (arrays[f"X_{s}" if f"X_{s}" in arrays else f"x_{s}"], arrays[keys[f"y_{s}".lower()]])
            for s in split_keys
        }
    else:
        raise InputError(
            f"{path}: expected arrays X and y, or X_train/y_train/X_test/y_test; found {', '.join(arrays) or 'none'}"
        )
    for s, (x, y) in pools.items():
        if len(x) != len(y):
            raise InputError(f"{path}: X{'_' + s if s else ''} has {len(x)} rows but y has {len(y)}")
    # one label encoding over all splits, so a class keeps its index everywhere
    all_labels = np.concatenate([np.asarray(y).ravel() for _, y in pools.values()])
    flat, class_names = encode_labels(all_labels.tolist(), where=str(path))
    if names is not None:
        given = [str(n) for n in np.asarray(names).tolist()]
        if all_labels.dtype.kind in "US":  # word labels: their index in the given class_names
            unknown = sorted(set(class_names) - set(given))
            if unknown:
                raise InputError(f"{path}: labels {unknown[:5]} are not in class_names {given[:20]}")
            flat = np.array([given.index(str(v)) for v in all_labels.tolist()], dtype=np.int64)
        elif flat.size and flat.max() >= len(given):
            raise InputError(f"{path}: label {flat.max()} but only {len(given)} class_names")
        class_names = given
    bounds = np.cumsum([0] + [len(y) for _, y in pools.values()])
    prepared = {}
    for i, (s, (x, _)) in enumerate(pools.items()):
        x = x.astype(np.float32) if x.ndim == 2 and x.dtype != np.uint8 else x
        x = x if x.ndim == 2 else images_nchw(x, where=str(path))
        prepared[s] = (x, flat[bounds[i] : bounds[i + 1]])
    if "" in prepared:
        x, y = prepared[""]
        return seeded_array_source(x, y, class_names, location=str(path), seed=seed, test_fraction=test_fraction)
    return array_source(prepared, class_names, location=str(path))


# ----------------------------------------------------------------------------- image folders
def _subdirs(d: Path) -> list[str]:
    return sorted(e.name for e in os.scandir(d) if e.is_dir() and not e.name.startswith("."))


def _image_files(d: Path) -> list[str]:
    out = []
    for root, _, files in sorted(os.walk(d, followlinks=True)):
        out += [os.path.join(root, f) for f in sorted(files) if f.lower().endswith(IMG_EXTENSIONS)]
    return out


def _read_image(path: str, mode: str) -> torch.Tensor:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            arr = np.array(im.convert(mode), dtype=np.uint8)
    except (OSError, UnidentifiedImageError) as e:
        raise InputError(f"cannot read image {path!r}: {e}") from None
    t = torch.from_numpy(arr)
    return t[None] if t.ndim == 2 else t.permute(2, 0, 1).contiguous()


def _folder_split(files: list[str], labels: np.ndarray, mode: str, rows: np.ndarray | None = None) -> SplitSource:
    def fetch(q: np.ndarray) -> list[torch.Tensor]:
        return [_read_image(files[i], mode) for i in q.tolist()]

    return SplitSource(labels=labels if rows is None else labels[rows], rows=rows, fetch=fetch)


def load_imagefolder(arg: str, options: dict, *, seed: int, test_fraction: float) -> Source:
    root = Path(arg).expanduser()
    if not root.is_dir():
        raise NotFoundError(f"no image folder {str(root)!r}")
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
    first = next((f[0] for f, _ in listed.values() if f), None)
    if first is None:
        raise InputError(f"{root}: no image files ({', '.join(IMG_EXTENSIONS)}) in the class folders")
    from PIL import Image

    try:
        with Image.open(first) as im:
            mode = "L" if im.mode in _GRAY_MODES else "RGB"
            first_size = (im.size[1], im.size[0])
    except OSError as e:
        raise InputError(f"cannot read image {first!r}: {e}") from None
    native = {
        "channels": 1 if mode == "L" else 3,
        "size": None,
        "first_size": first_size,
        "scale": "uint8/255",
        "pil_mode": mode,
    }
    if split_dirs:
        return Source(
            kind="image",
            class_names=class_names,
            split_names=split_dirs,
            open=lambda s: _folder_split(*listed[s], mode),
            native=native,
            location=str(root),
        )
    files, labels = listed[""]
    rows, info = stratified_split(labels, test_fraction=test_fraction, seed=seed)
    return Source(
        kind="image",
        class_names=class_names,
        split_names=["train", "test"],
        open=lambda s: _folder_split(files, labels, mode, rows[s]),
        split_info=info,
        native=native,
        location=str(root),
    )
