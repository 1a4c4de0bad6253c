"""fashion-mnist:DIR holding each IDX file twice, plain and gzipped, as `gunzip -k` leaves it, or as a
user leaves a subset written beside the download. Real Fashion-MNIST files (Debian's
dataset-fashion-mnist), through the public loader."""

from __future__ import annotations

import gzip
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from laya_inspect.data import load_data
from laya_inspect.errors import InputError

ROOT = Path("/usr/share/datasets/fashion-mnist")
FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
pytestmark = pytest.mark.skipif(
    not all((ROOT / f"{f}.gz").is_file() for f in FILES), reason="needs dataset-fashion-mnist"
)


def first_rows(src: Path, dst: Path, n: int) -> None:
    """The first n records of the IDX file src (gzipped) written plain to dst: a subset."""
    with gzip.open(src, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = list(struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim]))
    per_row = int(np.prod(dims[1:], dtype=np.int64))
    dims[0] = n
    dst.write_bytes(raw[:4] + struct.pack(f">{ndim}I", *dims) + raw[4 + 4 * ndim : 4 + 4 * ndim + n * per_row])


def rows(folder: Path) -> dict[str, int]:
    b = load_data(f"fashion-mnist:{folder}", seed=0)
    return {name: s.n for name, s in b.splits.items()}


def test_a_subset_beside_the_download_is_refused_naming_both(tmp_path):
    """QA: a folder holding the downloaded .gz files and a 200-row subset written plain beside them was
    read as the subset, with no word of the 60,000-row files beside it (the plain file was always taken)."""
    for f in FILES:
        shutil.copy(ROOT / f"{f}.gz", tmp_path)
    for f in FILES[:2]:
        first_rows(ROOT / f"{f}.gz", tmp_path / f, 200)
    with pytest.raises(InputError, match=r"both train-images-idx3-ubyte and train-images-idx3-ubyte\.gz"):
        rows(tmp_path)


def test_a_plain_copy_of_the_same_file_is_read(tmp_path):
    """`gunzip -k` leaves the same data twice: nothing to tell apart."""
    for f in FILES:
        shutil.copy(ROOT / f"{f}.gz", tmp_path)
    with gzip.open(ROOT / f"{FILES[3]}.gz", "rb") as src, open(tmp_path / FILES[3], "wb") as dst:
        dst.write(src.read())
    assert rows(tmp_path) == {"train": 60000, "test": 10000}
