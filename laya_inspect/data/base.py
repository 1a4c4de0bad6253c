"""What every dataset loader returns, and the seeded stratified splits and subsets they share.

A loader turns a spec's argument into a :class:`Source`: the class names, the split names it has,
and ``open(split) -> SplitSource`` (labels, source rows, and a ``fetch(rows)`` that reads the raw
inputs of those rows). Loading is deferred to ``open`` so that asking for ``test`` does not read
``train``; image folders defer further, to ``fetch``, one batch at a time.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, NotFoundError, os_message
from ..files import special_file
from .headers import FileHeader, dangling


@dataclass
class SplitSource:
    """One split as the loader sees it, before ``limit`` and transforms.

    ``rows`` (N,) int64 are the rows in the source dataset (what ``Split.batches`` yields as
    ``index``); ``fetch(rows)`` returns the raw inputs of those rows: an image tensor (B, C, H, W)
    (uint8, or float in [0, 1]), a list of (C, H, W) tensors when sizes may differ, a float tensor
    (B, D) of vectors, or a list of B strings. ``headers(rows)``, where given (image files), is each
    row's file header read without decoding its pixels (its size, whether it can be opened, its
    pages); None: every image has ``native["size"]``.
    """

    labels: np.ndarray
    fetch: Callable[[np.ndarray], Any]
    rows: np.ndarray | None = None
    headers: Callable[[np.ndarray], list[FileHeader]] | None = None

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
    # every file the rows are read from, which a cache fingerprints (a resume must find them unchanged);
    # None: every file under ``location``, less what laya-inspect itself writes there
    files: list[str] | None = None
    warnings: list[str] = field(default_factory=list)  # for the user, carried into DataBundle.warnings
    # warnings of the rows in use alone (after the splits asked for and ``limit``), given their source
    # rows: load_data adds them to DataBundle.warnings
    row_warnings: Callable[[np.ndarray], list[str]] | None = None
    # the file line of each source row, where the source is a file of lines (csv, jsonl): warnings name
    # rows by it, as a user finds them in an editor; None: by the row itself
    lines: list[int] | None = None


@dataclass(frozen=True)
class DatasetKind:
    """A registry entry: ``load(arg, options, *, seed, test_fraction, channels, allow_nonfinite) -> Source``.

    ``arg`` is "required", "optional" or "none" (the part after ``prefix:``); ``options`` are the
    ``?key=value`` names the spec may carry. ``channels`` (1, 3 or None) is what the model takes,
    for sources that decode files one by one; ``allow_nonfinite`` keeps NaN/Inf features (with a
    warning) instead of refusing them.
    """

    load: Callable[..., Source]
    arg: str
    usage: str
    options: tuple[str, ...] = ()


def user_path(arg: str, *, folder: bool, what: str) -> Path:
    """``arg`` as an existing file (or folder), or a NotFoundError / InputError naming it."""
    try:
        path = Path(arg).expanduser()
        ok = path.is_dir() if folder else path.is_file()
    except RuntimeError:  # "~name" of no user
        raise NotFoundError(f"no {what} {arg!r}: cannot expand its ~") from None
    except (OSError, ValueError) as e:  # a name too long, a NUL byte
        shown = arg if len(arg) <= 100 else arg[:100] + "…"
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InputError(f"not a usable path for the {what}: {shown!r} ({why})") from None
    if not ok and (special := special_file(path, follow=True)):  # there, but reading it would wait for a writer
        raise InputError(f"the {what} {str(path)!r} is {special}, not a {'folder' if folder else 'file'}")
    if not ok:
        other = "a file" if folder else "a folder"
        isnt = f" ({str(path)!r} is {other})" if path.exists() else ""
        if gone := dangling(path):
            isnt = f" ({str(path)!r} is {gone})"
        raise NotFoundError(f"no {what} {str(path)!r}{isnt}")
    return path


def read_failed(e: OSError) -> InputError:
    return InputError(os_message(e, "could not read"))


def stratified_split(labels: np.ndarray, *, test_fraction: float, seed: int) -> tuple[dict, dict]:
    """Seeded stratified train/test split of rows ``0..N-1``: scikit-learn's
    ``train_test_split(rows, test_size=test_fraction, random_state=seed, stratify=labels)``.

    Returns ``({"train": rows, "test": rows}, split_info)``, rows sorted ascending. A class with a
    single row cannot be stratified: its row goes to the side ``round(test_fraction)`` of one row
    names (training below 0.5, as fit-head's stratified validation draw keeps a class's only row), the
    other rows are split as above on their own, and ``split_info`` records the classes
    (``single_row_classes``) and the side (``single_rows_in``). Falls back to an unstratified split
    (recorded as ``"stratified": False``) when every class has a single row, or when the test or
    training rows (of the other classes) are fewer than the classes.
    """
    from sklearn.model_selection import train_test_split

    if not 0.0 < float(test_fraction) < 1.0:
        raise InputError(f"test_fraction must be between 0 and 1, got {test_fraction!r}")
    labels = np.asarray(labels, dtype=np.int64)
    n = len(labels)
    if n < 2:
        raise InputError(f"cannot split {n} sample(s) into train and test")
    n_test = math.ceil(float(test_fraction) * n)  # as scikit-learn rounds a fraction
    if n_test >= n:
        raise InputError(f"a test fraction of {test_fraction} of {n} samples leaves no training rows")
    classes, counts = np.unique(labels, return_counts=True)
    single = np.isin(labels, classes[counts == 1])
    if single.any() and not single.all():
        try:
            rows, info = stratified_split(labels[~single], test_fraction=test_fraction, seed=seed)
        except InputError:  # too few other rows for a split of their own: the random split below
            info = {"stratified": False}
        if info["stratified"]:
            side = "test" if round(float(test_fraction)) else "train"
            kept = np.flatnonzero(~single)
            parts = {k: kept[v] for k, v in rows.items()}
            parts[side] = np.sort(np.concatenate([parts[side], np.flatnonzero(single)]))
            singles = [int(c) for c in classes[counts == 1]]
            return parts, {**info, "n_source": int(n), "single_row_classes": singles, "single_rows_in": side}
    stratified = bool(counts.min() >= 2 and min(n_test, n - n_test) >= len(counts))
    train, test = train_test_split(
        np.arange(n, dtype=np.int64),
        test_size=float(test_fraction),
        random_state=seed,
        stratify=labels if stratified else None,
    )
    info = {
        "method": "stratified" if stratified else "random",
        "seed": int(seed),
        "test_fraction": float(test_fraction),
        "n_source": int(n),
        "stratified": stratified,
    }
    return {"train": np.sort(train).astype(np.int64), "test": np.sort(test).astype(np.int64)}, info


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


def encode_labels(
    values: Sequence[Any], *, where: str, locate: Callable[[int], str] | None = None
) -> tuple[np.ndarray, list[str]]:
    """Labels as read from a file → (int64 array, class names).

    Whole numbers (ints, integral floats, strings of digits with or without a decimal point and zeros:
    "1", "1.", "1.0", "1.00") are class indices and
    keep their values, with names "0".."max"; words become the sorted distinct values, and so do JSON's true/false (the
    words "false" and "true", not the indices 0 and 1). A negative index, a fraction, NaN,
    a value that is neither number nor word, or numbers mixed with words is an InputError naming the
    value and where it is (``locate(i)``, e.g. "line 7"; default "label #i").
    """
    vals = list(values)
    if not vals:
        raise InputError(f"no labels in {where}")
    at = locate or (lambda i: f"label #{i}")
    _refuse_missing(vals, where, at)
    parsed = [_one_label(v, i, where, at) for i, v in enumerate(vals)]
    first_int = next((i for i, v in enumerate(parsed) if isinstance(v, int)), None)
    first_word = next((i for i, v in enumerate(parsed) if isinstance(v, str)), None)
    if first_int is not None and first_word is not None:
        raise InputError(
            f"{where}: labels mix numbers and words ({vals[first_int]!r} at {at(first_int)}, "
            f"{_shown(vals[first_word], parsed[first_word])} at {at(first_word)}); use class indices 0..C-1 or "
            "words for every row"
        )
    if first_int is not None:
        ints = np.array(parsed, dtype=np.int64)
        if ints.min() < 0:
            i = int(np.argmax(ints < 0))
            top = int(ints.max())
            valid = f"0..{top}" if top >= 0 else "0 and up"
            raise InputError(
                f"{where}: label {int(ints[i])} at {at(i)} is outside the class list: integer labels are class "
                f"indices, valid labels are {valid}; renumber the labels from 0, or write the classes as words"
            )
        return ints, [str(i) for i in range(int(ints.max()) + 1)]
    names = sorted(set(map(str, parsed)))
    lookup = {v: i for i, v in enumerate(names)}
    return np.array([lookup[str(v)] for v in parsed], dtype=np.int64), names


# words a spreadsheet, pandas or R writes for a missing value (compared case-insensitively): read as a
# class they would make one called 'NaN' out of the rows with no class. Not "none": a real class
# (a severity none/minor/severe) is more often so named than a label is str(None).
MISSING_LABELS = ("nan", "null", "na", "n/a", "#n/a", "<na>")


def _refuse_missing(vals: list[Any], where: str, at: Callable[[int], str]) -> None:
    """An InputError naming every row (first 5 shown) whose label is a missing-value word."""
    missing = [i for i, v in enumerate(vals) if _word(v).strip().lower() in MISSING_LABELS]
    if not missing:
        return
    shown = ", ".join(f"{vals[i]!r} at {at(i)}" for i in missing[:5]) + (", …" if len(missing) > 5 else "")
    raise InputError(
        f"{where}: {len(missing)} of {len(vals)} rows have no class ({shown}): a missing-value word is not read "
        "as a class; remove those rows or give them their class (a class really named so: rename it, e.g. "
        "'na_class')"
    )


def composed(text: str) -> str:
    """``text`` in composed Unicode (NFC), as every class name and label is read: "café" typed
    decomposed (NFD, as macOS writes file names) is the same class as "café" typed composed."""
    return unicodedata.normalize("NFC", text)


def _word(v: Any) -> str:
    """A text label as text (an npz's byte strings decoded, as _one_label reads them); "" for others."""
    if isinstance(v, (bytes, np.bytes_)):
        return bytes(v).decode("utf-8", errors="replace")
    return str(v) if isinstance(v, (str, np.str_)) else ""


def _shown(value: Any, word: Any) -> str:
    return repr(word) if isinstance(value, (bool, np.bool_)) else repr(value)  # JSON's true as 'true'


# a class index as text: digits, or a whole number with a decimal point (pandas writes a label column that
# held NaN as 1.0; numpy's and Fortran's printing write 1.), read as JSON's 1.0 is. "1." is the number 1
# as "1.0" is: read as a word it sorted "10." before "2."; beside "1" or "1.0", index_spellings warns
_INT = re.compile(r"[+-]?\d+(?:\.0*)?")


def _index(text: str) -> int:
    return int(text.split(".")[0])


def index_spellings(values: Sequence[Any], *, where: str, locate: Callable[[int], str] | None = None) -> list[str]:
    """A warning when one class index is written two ways among text labels ('02' and '2'): both are
    read as one class, which may be what the user means (a spreadsheet dropped the zeros) or not; and
    one when a word is written with and without surrounding spaces (' cat' and 'cat'), likewise."""
    at = locate or (lambda i: f"label #{i}")
    first: dict[int, dict[str, int]] = {}
    for i, v in enumerate(values):
        if isinstance(v, (str, np.str_)) and _INT.fullmatch(text := str(v).strip()):
            first.setdefault(_index(text), {}).setdefault(text, i)
    twice = {k: ways for k, ways in first.items() if len(ways) > 1}
    warnings = _spaced_spellings(values, where, at)
    if not twice:
        return warnings
    shown = "; ".join(
        " and ".join(f"{w!r} ({at(i)})" for w, i in list(ways.items())[:3]) + f" are class {k}"
        for k, ways in list(twice.items())[:5]
    )
    return [
        f"{where}: one class index written two ways ({shown}) is read as one class; if they are different "
        "classes, write the labels as words"
    ] + warnings


def _spaced_spellings(values: Sequence[Any], where: str, at: Callable[[int], str]) -> list[str]:
    """A warning when a word label is written with and without surrounding spaces (' cat' and 'cat'):
    labels are read stripped, so both are one class, which a stray space after a comma makes likely
    but a user may not mean."""
    ways: dict[str, dict[str, list[int]]] = {}  # class → spelling → [count, first row]
    for i, v in enumerate(values):
        word = _word(v)
        if word and not _INT.fullmatch(word.strip()):
            seen = ways.setdefault(composed(word.strip()), {}).setdefault(word, [0, i])
            seen[0] += 1
    twice = {k: w for k, w in ways.items() if len(w) > 1}
    if not twice:
        return []
    shown = "; ".join(
        " and ".join(f"{w!r} ({n} row{'s' * (n != 1)}, first {at(i)})" for w, (n, i) in list(spellings.items())[:3])
        + f" are class {k!r}"
        for k, spellings in list(twice.items())[:5]
    )
    return [
        f"{where}: labels that differ only in surrounding spaces ({shown}) are read as one class; if they "
        "are different classes, rename them"
    ]


def _one_label(v: Any, i: int, where: str, at: Callable[[int], str]) -> int | str:
    if isinstance(v, (bytes, np.bytes_)):
        try:
            v = bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{where}: label {v!r} at {at(i)} is not UTF-8 text") from None
    if isinstance(v, (bool, np.bool_)):  # a yes/no label names its classes: "false", "true"
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(float(v)):
            raise InputError(f"{where}: label {v} at {at(i)} is not a number; every row needs a class")
        if not float(v).is_integer():
            raise InputError(
                f"{where}: label {v} at {at(i)} is not a whole number: labels are class indices 0..C-1 or words"
            )
        return int(v)
    if isinstance(v, (str, np.str_)):
        text = composed(str(v).strip())
        if not text:
            raise InputError(f"{where}: empty label at {at(i)}; every row needs a class")
        return _index(text) if _INT.fullmatch(text) else text
    raise InputError(f"{where}: label {v!r} at {at(i)} is neither a number nor a word")
