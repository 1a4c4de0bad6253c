"""``imagecsv:FILE``: image files listed in a CSV (``.tsv``: tab-separated; ``.jsonl``: one JSON object
a line) with their labels.

    imagecsv:labels.csv                       columns path,label[,split]
    imagecsv:meta.tsv?path_col=file&label_col=species&split_col=fold
    imagecsv:list.jsonl                       {"path": "cat/1.jpg", "label": "cat", "split": "test"} a line

A path is relative to the list's folder unless absolute. Every listed file must exist and be an image
in a format ``imagefolder:`` reads, or the load is refused naming the list's lines at fault. Labels and
splits follow ``csv:FILE`` and ``jsonl:FILE`` (a split column if present, else a seeded stratified
train/test split);
the files are then read as an image folder's are: each converted to the model's channels (else RGB if
any is in colour), every header checked before any work.

A cache fingerprints the CSV and every listed image (names, sizes and modification times), and a
resume must find them unchanged: a changed CSV or image stops it as a changed image folder does, while
other files beside them (the run's own ``--out``, a user's notes) do not.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import InputError, few
from .base import Source, index_spellings
from .checks import copied_across_classes
from .headers import FileHeader, folder_channels
from .images import DECODE, IMG_EXTENSIONS, file_split
from .text import Table, read_table

IMAGE_CSV_OPTIONS = ("path_col", "label_col", "split_col")


def _list_format(arg: str) -> str:
    """The table format of a list: jsonl for a ``.jsonl`` name (as CSV its first record reads as a header)."""
    return "jsonl" if Path(arg.strip()).suffix.lower() == ".jsonl" else "csv"


def _resolve(table: Table) -> list[str]:
    """The absolute path of each row's image, or an InputError naming every line whose path is no image
    file (absent, a folder, a format not read)."""
    folder = Path(os.path.abspath(table.path)).parent
    kind = "JSONL file" if _list_format(str(table.path)) == "jsonl" else "CSV"
    files, bad = [], []
    for i, value in enumerate(table.values):
        given = str(value).strip()
        path = os.path.normpath(folder / Path(given).expanduser())  # an absolute path stays as it is
        files.append(path)
        if not os.path.isfile(path):
            what = "a folder" if os.path.isdir(path) else "no such file"
            bad.append(f"line {table.lines[i]} {given!r} ({what})")
        elif not path.lower().endswith(IMG_EXTENSIONS):
            bad.append(f"line {table.lines[i]} {given!r} (not a format read)")
    if bad:
        windows = any("\\" in str(v) for v in table.values) and os.sep == "/"
        raise InputError(
            f"{table.path}: {len(bad)} of {len(files)} image paths are no image file: {few(bad, 5)}; paths are "
            f"relative to the {kind}'s folder {folder} unless absolute, and the formats read are "
            f"{', '.join(IMG_EXTENSIONS)}" + ("; the paths hold '\\': write them with '/'" if windows else "")
        )
    return files


def _listed_twice(table: Table, files: list[str], split_of: dict[int, str]) -> list[str]:
    """A warning when one file stands on several lines: read twice, under two labels, or in two splits
    (a test row the heads are trained on)."""
    at: dict[str, list[int]] = {}
    for i, f in enumerate(files):
        at.setdefault(os.path.realpath(f), []).append(i)
    twice = [rows for rows in at.values() if len(rows) > 1]
    if not twice:
        return []
    labels = sum(len({int(table.labels[i]) for i in rows}) > 1 for rows in twice)
    splits = sum(len({split_of.get(i) for i in rows}) > 1 for rows in twice)
    shown = few([f"lines {', '.join(str(table.lines[i]) for i in rows)}" for rows in twice], 3)
    return [
        f"{table.path}: {len(twice)} image file(s) are listed on several lines ({shown}): each line is read as a "
        f"row of its own; {labels} of them under two labels, {splits} of them in two splits (a test row the heads "
        "are trained on); remove the extra lines"
    ]


def _location(table: Table, files: list[str]) -> str:
    """The folder holding the CSV and every image, or the CSV where that is the file system's root. A
    cache fingerprints the CSV and the listed images themselves (``Source.files``) either way."""
    top = os.path.commonpath([os.path.dirname(os.path.abspath(table.path)), *(os.path.dirname(f) for f in files)])
    return top if os.path.dirname(top) != top else str(table.path)


def load_imagecsv(
    arg: str, options: dict, *, seed: int, test_fraction: float, channels: int | None = None, **_unused: Any
) -> Source:
    table = read_table(
        arg,
        options,
        seed=seed,
        test_fraction=test_fraction,
        fmt=_list_format(arg),
        spec="imagecsv",
        value=("path_col", "path", "image path"),
    )
    files = _resolve(table)
    split_of = {int(i): s for s, rows in table.groups.items() for i in rows}
    read: dict[str, FileHeader] = {}  # the headers folder_channels read, for the check before any work
    chans = channels if channels in (1, 3) else folder_channels(files, read)
    native = {"channels": chans, "size": None, "scale": "uint8/255 (16-bit: /65535)", "decode": DECODE}
    location = _location(table, files)
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for i, f in enumerate(files):
        found.setdefault((split_of.get(i, ""), table.class_names[table.labels[i]]), []).append((f, os.path.realpath(f)))
    lines = table.lines
    return Source(
        kind="image",
        class_names=table.class_names,
        split_names=list(table.groups),
        open=lambda s: file_split(files, table.labels, chans, table.groups[s], read),
        split_info=table.info,
        native=native,
        location=location,
        files=[os.path.abspath(table.path), *files],
        warnings=index_spellings(table.raw_labels, where=str(table.path), locate=lambda i: f"line {lines[i]}")
        + _listed_twice(table, files, split_of)
        + copied_across_classes(location, found, where=str(table.path)),
        lines=lines,
    )


def image_paths(texts: list[str]) -> bool:
    """Whether texts read as image paths: most of the first hundred end in an image extension."""
    named = Counter(str(t).strip().lower().endswith(IMG_EXTENSIONS) for t in texts[:100])
    return named[True] > named[False]
