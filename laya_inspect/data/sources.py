"""Named datasets: ``fashion-mnist[:ROOT]``, ``cifar10[:ROOT]``, ``digits``.

Nothing is downloaded: each reads files already on the machine and, when they are missing, raises
:class:`DatasetMissingError` saying how to get them.

- Fashion-MNIST: the four IDX files (``train-images-idx3-ubyte[.gz]``, ``train-labels-idx1-ubyte[.gz]``,
  ``t10k-…``) in ROOT or ``ROOT/FashionMNIST/raw`` (torchvision's layout); default ROOT is where
  the Debian package ``dataset-fashion-mnist`` puts them. Splits train (60,000) and test (10,000).
- CIFAR-10: the official python batches (``ROOT/cifar-10-batches-py/`` or ROOT itself), read with an
  unpickler that only admits numpy arrays; or an image folder ``ROOT/{train,test}/<class>/*.jpg``
  (e.g. the JPEG tarball unpacked).
- digits: scikit-learn's 1,797 8x8 digits, values 0..16 scaled by 1/16, split train/test by a
  seeded stratified split.
"""

from __future__ import annotations

import gzip
import pickle
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import DatasetMissingError, InputError
from .base import Source, SplitSource, read_failed
from .images import array_source, images_nchw, load_imagefolder

FASHION_MNIST_ROOT = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_CLASSES = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
]
_FMNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
CIFAR10_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
CIFAR10_ROOTS = ("~/.cache/laya-inspect/cifar10", "/usr/share/datasets/cifar10")


# ----------------------------------------------------------------------------- Fashion-MNIST
def read_idx(path: Path) -> np.ndarray:
    """An IDX file (gzip or not) of unsigned bytes → numpy array of its declared shape."""
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as f:
            raw = f.read()
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:  # before OSError: BadGzipFile is one
        raise InputError(f"{path}: a damaged gzip file ({e}); download it again") from None
    except OSError as e:
        raise read_failed(e) from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise InputError(f"{path}: not an IDX file of unsigned bytes")
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">i4", count=ndim, offset=4).astype(np.int64)
    start = 4 + 4 * ndim
    if len(raw) - start != int(np.prod(dims)):
        raise InputError(f"{path}: header says {tuple(dims)} but holds {len(raw) - start} bytes")
    return np.frombuffer(raw, dtype=np.uint8, offset=start).reshape(tuple(dims))


def _idx_header(path: Path) -> bytes:
    """An IDX file's magic and dimensions (gzip or not): what says which rows it holds, read cheaply."""
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as f:
            head = f.read(4)
            return head + f.read(4 * head[3]) if len(head) == 4 else head
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise InputError(f"{path}: a damaged gzip file ({e}); download it again") from None
    except OSError as e:
        raise read_failed(e) from None


def _find(folder: Path, stem: str) -> Path | None:
    """STEM, else STEM.gz. Where both stand and their headers differ (a subset written beside the
    download), which one is meant cannot be told: refused, naming both."""
    plain, packed = folder / stem, folder / (stem + ".gz")
    if plain.is_file() and packed.is_file() and _idx_header(plain) != _idx_header(packed):
        raise InputError(
            f"{folder}: both {stem} and {stem}.gz stand there and hold different data (their headers differ), "
            "so which one is meant cannot be told; move the one you do not mean out of the folder"
        )
    for path in (plain, packed):
        if path.is_file():
            return path
    return None


def load_fashion_mnist(arg: str | None, options: dict, **_unused: Any) -> Source:
    root = Path(arg or FASHION_MNIST_ROOT).expanduser()
    stems = [s for pair in _FMNIST_FILES.values() for s in pair]
    folder = next(
        (d for d in (root, root / "FashionMNIST" / "raw", root / "raw") if all(_find(d, s) for s in stems)), None
    )
    if folder is None:
        raise DatasetMissingError(
            f"Fashion-MNIST not found in {str(root)!r}: run `apt-get install -y dataset-fashion-mnist` "
            f"(installs it in {FASHION_MNIST_ROOT}) or pass fashion-mnist:DIR with the four IDX files "
            f"({', '.join(stems)}, optionally .gz)"
        )
    cache: dict[str, np.ndarray] = {}

    def found(stem: str) -> Path:
        path = _find(folder, stem)
        assert path is not None  # folder was chosen because every file is in it
        return path

    def images(split: str) -> np.ndarray:
        if split not in cache:
            path = found(_FMNIST_FILES[split][0])
            cache[split] = images_nchw(read_idx(path), where=str(path))
            if len(cache[split]) != len(labels[split]):
                raise InputError(f"{path}: {len(cache[split])} images but {len(labels[split])} labels")
        return cache[split]

    labels = {s: read_idx(found(lab)).astype(np.int64) for s, (_, lab) in _FMNIST_FILES.items()}

    def open_split(split: str) -> SplitSource:
        return SplitSource(
            labels=labels[split], fetch=lambda rows: torch.from_numpy(np.ascontiguousarray(images(split)[rows]))
        )

    return Source(
        kind="image",
        class_names=list(FASHION_MNIST_CLASSES),
        split_names=list(_FMNIST_FILES),
        open=open_split,
        native={"channels": 1, "size": (28, 28), "scale": "uint8/255"},
        location=str(folder),
        files=[str(found(s)) for s in stems],
    )


# ----------------------------------------------------------------------------- CIFAR-10
_NUMPY_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("_codecs", "encode"),
}


class _ArraysOnlyUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, bytes and numpy arrays; refuses every other global (no code runs)."""

    def find_class(self, module: str, name: str):  # noqa: ANN201
        if (module, name) in _NUMPY_GLOBALS:
            return super().find_class(module, name)
        raise InputError(f"refusing to unpickle {module}.{name}: a CIFAR-10 batch holds only arrays and lists")


# what a damaged or foreign pickle stream raises, besides the refusals of find_class
_BAD_PICKLE = (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError)


def _unpickle(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            d = _ArraysOnlyUnpickler(f, encoding="bytes").load()
    except _BAD_PICKLE + (OverflowError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not a CIFAR-10 python batch ({type(e).__name__}: {e})") from None
    except OSError as e:
        raise read_failed(e) from None
    if not isinstance(d, dict):
        raise InputError(f"{path}: not a CIFAR-10 python batch (a {type(d).__name__}, not a dict)")
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in d.items()}


def _cifar_batches(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for p in paths:
        d = _unpickle(p)
        if "data" not in d or "labels" not in d:
            raise InputError(f"{p}: a CIFAR-10 batch needs 'data' and 'labels', has {', '.join(map(str, d))}")
        try:
            x = np.asarray(d["data"], dtype=np.uint8)
            xs.append(x.reshape(len(x), 3, 32, 32))
            ys.append(np.asarray(d["labels"], dtype=np.int64).reshape(-1))
        except (ValueError, TypeError, OverflowError) as e:
            raise InputError(f"{p}: 'data' must be (N, 3072) bytes and 'labels' N integers ({e})") from None
        if len(ys[-1]) != len(xs[-1]):
            raise InputError(f"{p}: {len(xs[-1])} images but {len(ys[-1])} labels")
    return np.concatenate(xs), np.concatenate(ys)


def _cifar_pickles(folder: Path, class_names: list[str]) -> Source:
    train = sorted(
        (p for p in folder.glob("data_batch_*") if p.name[len("data_batch_") :].isdigit()),
        key=lambda p: int(p.name[len("data_batch_") :]),
    )
    files = {"train": train, "test": [folder / "test_batch"] if (folder / "test_batch").is_file() else []}
    files = {s: f for s, f in files.items() if f}
    loaded: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def open_split(split: str) -> SplitSource:
        if split not in loaded:
            loaded[split] = _cifar_batches(files[split])
        x, y = loaded[split]
        return SplitSource(labels=y, fetch=lambda rows: torch.from_numpy(np.ascontiguousarray(x[rows])))

    meta = [folder / "batches.meta"] if (folder / "batches.meta").is_file() else []  # it names the classes
    return Source(
        kind="image",
        class_names=class_names,
        split_names=list(files),
        open=open_split,
        native={"channels": 3, "size": (32, 32), "scale": "uint8/255"},
        location=str(folder),
        files=[str(p) for batch in [*files.values(), meta] for p in batch],
    )


def load_cifar10(
    arg: str | None, options: dict, *, seed: int, test_fraction: float, channels: int | None = None, **_unused: Any
) -> Source:
    roots = [Path(arg).expanduser()] if arg else [Path(r).expanduser() for r in CIFAR10_ROOTS]
    for root in roots:
        for folder in (root / "cifar-10-batches-py", root):
            if (folder / "test_batch").is_file() or (folder / "data_batch_1").is_file():
                names = CIFAR10_CLASSES
                if (folder / "batches.meta").is_file():
                    meta = _unpickle(folder / "batches.meta").get("label_names", names)
                    if not isinstance(meta, (list, tuple)) or len(meta) != len(CIFAR10_CLASSES):
                        raise InputError(f"{folder / 'batches.meta'}: label_names must list 10 class names")
                    names = [n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n) for n in meta]
                return _cifar_pickles(folder, names)
        for folder in (root, root / "cifar10", root / "CIFAR-10-images"):
            if (folder / "train").is_dir() or (folder / "test").is_dir():
                # CIFAR-10 is in colour: files are read as RGB unless the model wants greyscale
                src = load_imagefolder(str(folder), {}, seed=seed, test_fraction=test_fraction, channels=channels or 3)
                if src.class_names != CIFAR10_CLASSES:
                    raise InputError(
                        f"{folder}: class folders {src.class_names} are not CIFAR-10's "
                        f"{CIFAR10_CLASSES}; use imagefolder:{folder} for other data"
                    )
                src.native["size"] = (32, 32)
                return src
    where = ", ".join(repr(str(r)) for r in roots)
    raise DatasetMissingError(
        f"CIFAR-10 not found in {where}: unpack the JPEG copy with "
        "`tar -xzf ../shared/data/cifar10-jpeg.tar.gz -C DIR` and pass cifar10:DIR, or pass cifar10:DIR "
        "holding the official python batches (cifar-10-batches-py/)"
    )


# ----------------------------------------------------------------------------- digits
def _digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """(pixels (1797, 64) float64, labels int64): scikit-learn's ``load_digits``, the copy of the UCI
    digits it ships."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise DatasetMissingError(
            "the digits dataset ships with scikit-learn, which is not installed here: pip install scikit-learn"
        ) from None
    d = load_digits()
    return np.asarray(d.data, dtype=np.float64), np.asarray(d.target, dtype=np.int64)


def load_digits_source(arg: str | None, options: dict, *, seed: int, test_fraction: float, **_unused: Any) -> Source:
    pixels, y = _digits_arrays()
    x = (pixels.reshape(-1, 8, 8) / 16.0).astype(np.float32)[:, None]  # (1797, 1, 8, 8) in [0, 1]
    return array_source(
        {"": (x, y)},
        [str(i) for i in range(10)],
        location="sklearn.datasets.load_digits",
        seed=seed,
        test_fraction=test_fraction,
        scale="/16 (values 0..16)",
    )
