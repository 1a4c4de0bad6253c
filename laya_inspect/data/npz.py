"""``npz:FILE``: arrays written with ``np.savez``.

The file holds ``X`` and ``y``, or per-split ``X_<split>``/``y_<split>`` (e.g. ``X_train``,
``y_test``; never both layouts, nor labels of a split without its inputs), and optionally
``class_names``. ``X`` is images (N, H, W), (N, H, W, C) or (N, C, H, W)
with C in 1, 3, 4, or vectors (N, D); uint8 is scaled by 1/255, floats are taken as already in [0, 1]
(float images outside it are a warning: :func:`laya_inspect.data.checks.float_images`).
``y`` is one label a row: class indices 0..C-1 (``class_names`` then has C names) or words.
NaN or infinite features are refused unless ``allow_nonfinite`` (then kept, with a warning).
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .base import Source, composed, encode_labels, index_spellings, read_failed, user_path
from .images import array_source, images_nchw

_NUMERIC = "biuf"  # bool, signed, unsigned, float


def _read(path: Path) -> dict[str, np.ndarray]:
    how = "write it with np.savez(FILE, X=..., y=...)"
    try:
        with open(path, "rb") as f:
            head = f.read(6)
        if not head:
            raise InputError(f"{path}: the file is empty; {how}")
        if head == b"\x93NUMPY":
            raise InputError(f"{path}: a single .npy array, not an npz archive; {how}")
        if not zipfile.is_zipfile(path):  # np.load would try to unpickle it
            raise InputError(f"{path}: not an npz archive (np.savez writes a zip of .npy arrays); {how}")
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except ValueError as e:  # object arrays (refused: unpickling runs code) or a member that is not an array
        why = "it holds object arrays, which are refused" if "pickle" in str(e) else str(e)
        raise InputError(f"{path}: not an npz archive of plain arrays ({why}); {how}") from None
    except (EOFError, KeyError, NotImplementedError, zipfile.BadZipFile, zlib.error) as e:
        raise InputError(f"{path}: a damaged npz archive ({type(e).__name__}: {e}); {how}") from None
    except OSError as e:
        raise read_failed(e) from None


def _pools(path: Path, arrays: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    keys = {k.lower(): k for k in arrays}
    split_keys = sorted({m.group(1) for k in arrays if (m := re.fullmatch(r"[xX]_(\w+)", k))})
    label_keys = sorted({m.group(1) for k in arrays if (m := re.fullmatch(r"[yY]_(\w+)", k))})
    if "x" in keys and (split_keys or label_keys):  # one of the two would be left unread with no word
        raise InputError(
            f"{path}: holds both X/y and per-split arrays (keys: {', '.join(arrays)}); keep X and y for one pool "
            "split by --test-fraction, or X_<split>/y_<split> alone"
        )
    if "x" in keys:
        if "y" not in keys:
            raise InputError(f"{path}: has X but no y (keys: {', '.join(arrays)})")
        return {"": (arrays[keys["x"]], arrays[keys["y"]])}
    if split_keys:
        missing = [s for s in split_keys if f"y_{s}".lower() not in keys]
        if missing:
            raise InputError(f"{path}: no labels y_{missing[0]} for X_{missing[0]} (keys: {', '.join(arrays)})")
        lone = [s for s in label_keys if s.lower() not in {k.lower() for k in split_keys}]
        if lone:  # labels of a split whose inputs are missing: that split would not exist, with no word
            raise InputError(f"{path}: no inputs X_{lone[0]} for y_{lone[0]} (keys: {', '.join(arrays)})")
        return {
            s: (arrays[f"X_{s}" if f"X_{s}" in arrays else f"x_{s}"], arrays[keys[f"y_{s}".lower()]])
            for s in split_keys
        }
    raise InputError(
        f"{path}: expected arrays X and y, or X_train/y_train/X_test/y_test; found {', '.join(arrays) or 'none'}"
    )


def _checked(path: Path, name: str, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    xn, yn = f"X{name}", f"y{name}"
    if x.dtype.kind not in _NUMERIC:
        raise InputError(f"{path}: {xn} holds {x.dtype} values, not numbers; features must be numeric")
    if x.ndim < 2:
        raise InputError(f"{path}: {xn} is shaped {x.shape}; expected images (N, H, W[, C]) or vectors (N, D)")
    if 0 in x.shape[1:]:
        raise InputError(f"{path}: {xn} is shaped {x.shape}: an empty feature axis")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        onehot = y.ndim == 2 and y.dtype.kind in _NUMERIC and bool(np.isin(y, (0, 1)).all() and (y.sum(1) == 1).all())
        hint = f" ({yn} reads as one-hot rows: store {yn}.argmax(1))" if onehot else ""
        raise InputError(f"{path}: {yn} is shaped {y.shape}; expected one label a row, shaped (N,){hint}")
    if len(x) != len(y):
        raise InputError(f"{path}: {xn} has {len(x)} rows but {yn} has {len(y)}")
    return x, y


def _nonfinite(path: Path, name: str, x: np.ndarray, allow: bool, warnings: list[str]) -> None:
    if x.dtype.kind != "f":
        return
    bad = int(x.size - np.count_nonzero(np.isfinite(x)))
    if not bad:
        return
    what = f"{bad} of {x.size} values in X{name} of {path} are NaN or infinite"
    if not allow:
        row = int(np.argmax(~np.isfinite(x.reshape(len(x), -1)).all(axis=1)))
        raise InputError(
            f"{what} (first in row {row}); fix the file, or keep them: --allow-nonfinite on the command line, "
            "allow_nonfinite=True to ExtractConfig or load_data from Python"
        )
    warnings.append(f"{what}; kept as asked (allow_nonfinite)")


def _axes_warning(path: Path, name: str, x: np.ndarray) -> list[str]:
    """Images whose first and last axes could each be the channels (4×4 RGB stored channels-last reads
    as 4 channels of 4×3): read as (N, C, H, W), with a warning that says so."""
    if x.ndim != 4 or x.shape[1] == x.shape[-1] or not {x.shape[1], x.shape[-1]} <= {1, 3, 4}:
        return []
    n, c, h, w = x.shape
    return [
        f"{path}: X{name} shaped {x.shape} is read as (N, C, H, W), {c} channel(s) of {h}×{w}; its last axis "
        f"could be the channels ({w}) instead: if so, store it as (N, C, H, W) with np.moveaxis(X, -1, 1)"
    ]


def _float_range(xs: list[np.ndarray]) -> list[float] | None:
    """[min, max] of the finite values of float images (fed as they are), else None."""
    lo, hi = np.inf, -np.inf
    for x in xs:
        if x.ndim != 4 or x.dtype.kind != "f":
            return None
        finite = x[np.isfinite(x)]
        if finite.size:
            lo, hi = min(lo, float(finite.min())), max(hi, float(finite.max()))
    return None if lo > hi else [lo, hi]


def _labels(path: Path, pools: dict, names: np.ndarray | None) -> tuple[np.ndarray, list[str]]:
    """One label encoding over all splits, so a class keeps its index everywhere."""
    ys = [y for _, y in pools.values()]
    locate = _locator(pools)
    all_labels = np.concatenate(ys) if ys else np.zeros(0)
    if names is None:
        return encode_labels(all_labels.tolist(), where=str(path), locate=locate)
    given = [_text(n) for n in np.asarray(names).ravel().tolist()]
    if not given:
        raise InputError(f"{path}: class_names is empty")
    if len(set(given)) != len(given):
        twice = next(n for n in given if given.count(n) > 1)
        raise InputError(f"{path}: class_names names {twice!r} twice")
    if all_labels.dtype.kind in _NUMERIC:
        outside = (all_labels < 0) | (all_labels >= len(given))
        if outside.any():
            i = int(np.argmax(outside))
            more = int(outside.sum()) - 1
            raise InputError(
                f"{path}: label {all_labels[i]} at {locate(i)} is outside the class list: valid labels are "
                f"0..{len(given) - 1} ({len(given)} class_names)" + (f"; {more} more labels outside it" if more else "")
            )
        # indices into class_names: a yes/no array is 0 and 1 here, not the words "false" and "true"
        indices = all_labels.astype(np.int64) if all_labels.dtype.kind == "b" else all_labels
        flat, _ = encode_labels(indices.tolist(), where=str(path), locate=locate)
        return flat, given
    words = [_text(v) for v in all_labels.tolist()]
    unknown = sorted(set(words) - set(given))
    if unknown:
        raise InputError(f"{path}: labels {unknown[:5]} are not in class_names {given[:20]}")
    lookup = {n: i for i, n in enumerate(given)}
    return np.array([lookup[w] for w in words], dtype=np.int64), given


def _locator(pools: dict) -> Callable[[int], str]:
    """Where the i-th label of all splits together is: ``y_train[12]``."""
    where = [(s, j) for s, (_, y) in pools.items() for j in range(len(y))]

    def locate(i: int) -> str:
        s, j = where[i]
        return f"y{'_' + s if s else ''}[{j}]"

    return locate


def _text(v: object) -> str:
    """A label or class name as text, in composed Unicode (NFC) as encode_labels reads labels: a name
    typed decomposed (NFD, as macOS writes it) is the same class."""
    return composed(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v))


def load_npz(
    arg: str, options: dict, *, seed: int, test_fraction: float, allow_nonfinite: bool = False, **_unused: Any
) -> Source:
    path = user_path(arg, folder=False, what="npz file")
    arrays = _read(path)
    pools = {s: _checked(path, f"_{s}" if s else "", x, y) for s, (x, y) in _pools(path, arrays).items()}
    flat, class_names = _labels(path, pools, arrays.get("class_names"))
    every = [v for _, y in pools.values() for v in y.tolist()]
    warnings: list[str] = index_spellings(every, where=str(path), locate=_locator(pools))
    bounds = np.cumsum([0] + [len(y) for _, y in pools.values()])
    prepared = {}
    for i, (s, (x, _)) in enumerate(pools.items()):
        if x.ndim == 2 and x.dtype != np.uint8:
            with np.errstate(over="ignore"):  # float64 beyond float32's range becomes inf, counted next
                x = x.astype(np.float32)
        warnings += _axes_warning(path, f"_{s}" if s else "", x)
        x = x if x.ndim == 2 else images_nchw(x, where=str(path))
        _nonfinite(path, f"_{s}" if s else "", x, allow_nonfinite, warnings)
        prepared[s] = (x, flat[bounds[i] : bounds[i + 1]])
    src = array_source(prepared, class_names, location=str(path), seed=seed, test_fraction=test_fraction)
    src.warnings += warnings
    value_range = _float_range([x for x, _ in prepared.values()])
    if value_range is not None:  # read beside the transform (data.checks.float_images)
        src.native["value_range"] = value_range
    return src
