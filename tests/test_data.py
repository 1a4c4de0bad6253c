"""data/: the dataset specs on real data (Fashion-MNIST, CIFAR-10 JPEGs, digits) and tiny files.

Real data is read where it is on this machine and skipped with the reason where it is not.
Transforms and text tables are in test_data_transforms.py.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import pickle
import shutil
import struct
import subprocess
import tarfile
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from laya_inspect.data import DATASETS, load_data
from laya_inspect.data.sources import read_idx
from laya_inspect.errors import DatasetMissingError, InputError, NotFoundError

FMNIST = Path("/usr/share/datasets/fashion-mnist")
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CIFAR_TAR = SHARED_DATA / "cifar10-jpeg.tar.gz"
CIFAR_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]

needs_fmnist = pytest.mark.skipif(
    not (FMNIST / "t10k-images-idx3-ubyte.gz").is_file(),
    reason=f"Fashion-MNIST not in {FMNIST} (apt-get install -y dataset-fashion-mnist)",
)


def spec(**kw):
    base = dict(kind="image", channels=None, size=None, mean=None, std=None, max_length=None)
    return SimpleNamespace(**{**base, **kw})


def all_batches(split, bs=64):
    xs, ys, idx = zip(*split.batches(bs))
    import torch

    return torch.cat(xs), torch.cat(ys), torch.cat(idx)


# ----------------------------------------------------------------------------- Fashion-MNIST (real)
@needs_fmnist
def test_fashion_mnist_real_files_sizes_labels_and_bytes():
    raw = gzip.open(FMNIST / "t10k-images-idx3-ubyte.gz").read()
    assert hashlib.md5(raw).hexdigest() == "8181f5470baa50b63fa0f6fddb340f0a"
    arr = read_idx(FMNIST / "t10k-images-idx3-ubyte.gz")
    assert arr.shape == (10000, 28, 28)
    # the reader returns exactly the file's pixels: header + array bytes reproduce the published md5
    header = b"\x00\x00\x08\x03" + struct.pack(">3i", 10000, 28, 28)
    assert hashlib.md5(header + arr.tobytes()).hexdigest() == "8181f5470baa50b63fa0f6fddb340f0a"

    b = load_data("fashion-mnist")
    assert b.class_names[0] == "T-shirt/top" and b.class_names[9] == "Ankle boot"
    assert (b.splits["train"].n, b.splits["test"].n) == (60000, 10000)
    assert b.splits["train"].labels[:10].tolist() == [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
    assert b.splits["test"].labels[:10].tolist() == [9, 2, 1, 1, 6, 1, 4, 6, 5, 7]
    assert b.split_info["method"] == "native"
    x, y, idx = next(b.splits["test"].batches(5))
    assert x.shape == (5, 1, 28, 28) and idx.tolist() == [0, 1, 2, 3, 4]
    assert np.array_equal((x[:, 0].numpy() * 255).round().astype(np.uint8), arr[:5])
    assert y.tolist() == [9, 2, 1, 1, 6]


@needs_fmnist
def test_fashion_mnist_limit_is_stratified_and_for_a_model():
    b = load_data(
        "fashion-mnist",
        splits=["test"],
        limit=200,
        seed=3,
        input_spec=spec(channels=3, size=32, mean=(0.5,) * 3, std=(0.5,) * 3),
    )
    t = b.splits["test"]
    assert t.n == 200 and np.bincount(t.labels, minlength=10).tolist() == [20] * 10
    assert np.all(np.diff(t.index) > 0)  # source rows, in source order
    x, y, idx = next(t.batches(16))
    assert x.shape == (16, 3, 32, 32) and float(x.min()) >= -1.0 and float(x.max()) <= 1.0
    assert b.split_info["splits"]["test"] == {
        "n_source": 10000,
        "n": 200,
        "limit": 200,
        "subset": "seeded stratified",
        "seed": 3,
    }
    assert b.transforms["channels"]["how"] == "replicate"
    assert b.transforms["resize"] == {
        "from": [28, 28],
        "to": [32, 32],
        "mode": "bilinear",
        "antialias": True,
        "fit": "stretch",
    }


def _idx_bytes(arr: np.ndarray) -> bytes:
    return bytes([0, 0, 8, arr.ndim]) + struct.pack(f">{arr.ndim}i", *arr.shape) + arr.tobytes()


def test_fashion_mnist_torchvision_layout_uncompressed(tmp_path):
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 6), ("t10k", 4)):
        imgs = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(_idx_bytes(imgs))
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(_idx_bytes(np.arange(n, dtype=np.uint8)))
    b = load_data(f"fashion-mnist:{tmp_path}")
    assert (b.splits["train"].n, b.splits["test"].n) == (6, 4)
    assert b.splits["test"].labels.tolist() == [0, 1, 2, 3]
    x, _, _ = next(b.splits["test"].batches(4))
    assert np.array_equal((x[:, 0].numpy() * 255).round().astype(np.uint8), imgs)


def test_fashion_mnist_missing_says_how_to_get_it(tmp_path):
    with pytest.raises(DatasetMissingError) as e:
        load_data(f"fashion-mnist:{tmp_path}")
    msg = str(e.value)
    assert "apt-get install -y dataset-fashion-mnist" in msg and "fashion-mnist:DIR" in msg
    assert "\n" not in msg


# ----------------------------------------------------------------------------- CIFAR-10
@pytest.fixture(scope="session")
def cifar_jpeg(tmp_path_factory):
    if not CIFAR_TAR.is_file():
        pytest.skip(f"{CIFAR_TAR} absent (the project's shared data folder is not on this machine)")
    # 60,000 small files: on tmpfs where there is room (seconds), as some disks take a minute
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 2**30:
        out = Path(tempfile.mkdtemp(prefix="laya-test-cifar-", dir=shm))
    else:
        out = tmp_path_factory.mktemp("cifar-jpeg")
    try:
        if shutil.which("tar"):
            subprocess.run(["tar", "-xzf", str(CIFAR_TAR), "-C", str(out)], check=True)
        else:
            with tarfile.open(CIFAR_TAR) as tf:
                tf.extractall(out, filter="data")
        yield out
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_cifar10_jpeg_folder(cifar_jpeg):
    b = load_data(f"cifar10:{cifar_jpeg}", limit=1000, seed=0)
    assert b.class_names == CIFAR_CLASSES
    assert b.split_info["splits"]["train"]["n_source"] == 50000
    assert b.split_info["splits"]["test"]["n_source"] == 10000
    for s in ("train", "test"):
        assert b.splits[s].n == 1000
        assert np.bincount(b.splits[s].labels, minlength=10).tolist() == [100] * 10
    x, y, idx = all_batches(b.splits["test"], bs=250)
    assert x.shape == (1000, 3, 32, 32) and x.dtype.is_floating_point
    assert np.array_equal(y.numpy(), b.splits["test"].labels)
    assert np.array_equal(idx.numpy(), b.splits["test"].index)
    means = x.mean(dim=(0, 2, 3)).tolist()
    # README's means over the whole test set; a 1,000-image stratified subset is within 0.01
    assert means == pytest.approx([0.4941, 0.4851, 0.4504], abs=0.015)
    assert b.transforms["output"] == [3, 32, 32]


def test_cifar10_missing_says_how_to_get_it(tmp_path):
    with pytest.raises(DatasetMissingError, match=r"tar -xzf .*cifar10-jpeg\.tar\.gz -C DIR.*cifar10:DIR"):
        load_data(f"cifar10:{tmp_path / 'nowhere'}")


def _write_cifar_batches(folder: Path, rng) -> dict:
    folder.mkdir(parents=True)
    written = {}
    for name, n in [(f"data_batch_{i}", 3) for i in range(1, 6)] + [("test_batch", 10)]:
        data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, 10, n)]
        with open(folder / name, "wb") as f:
            pickle.dump({b"batch_label": name.encode(), b"data": data, b"labels": labels}, f)
        written[name] = (data, labels)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({b"label_names": [c.encode() for c in CIFAR_CLASSES], b"num_vis": 3072}, f)
    return written


def test_cifar10_python_batches(tmp_path):
    written = _write_cifar_batches(tmp_path / "cifar-10-batches-py", np.random.default_rng(0))
    for root in (tmp_path, tmp_path / "cifar-10-batches-py"):  # the parent or the folder itself
        b = load_data(f"cifar10:{root}")
        assert b.class_names == CIFAR_CLASSES
        assert (b.splits["train"].n, b.splits["test"].n) == (15, 10)
        want = sum((written[f"data_batch_{i}"][1] for i in range(1, 6)), [])
        assert b.splits["train"].labels.tolist() == want
    data, labels = written["test_batch"]
    x, y, _ = next(b.splits["test"].batches(10))
    px = (x.numpy() * 255).round().astype(np.uint8)
    # official layout: 1024 red, 1024 green, 1024 blue values, each a 32x32 image row by row
    assert px[0, 0, 0, 0] == data[0, 0] and px[0, 0, 0, 1] == data[0, 1] and px[0, 0, 1, 0] == data[0, 32]
    assert px[0, 1, 0, 0] == data[0, 1024] and px[0, 2, 31, 31] == data[0, 3071]
    assert y.tolist() == labels


def test_cifar10_batches_refuse_code_in_pickles(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (Path.touch, (marker,))

    with open(folder / "test_batch", "wb") as f:
        pickle.dump({b"data": Evil(), b"labels": [0]}, f)
    with pytest.raises(InputError, match="refusing to unpickle"):
        load_data(f"cifar10:{tmp_path}", splits=["test"])
    assert not marker.exists()


# ----------------------------------------------------------------------------- digits
def test_digits_seeded_stratified_split():
    a = load_data("digits", seed=0)
    assert (a.splits["train"].n, a.splits["test"].n) == (1437, 360)
    assert a.split_info["method"] == "stratified" and a.split_info["seed"] == 0
    assert a.split_info["test_fraction"] == 0.2
    tr, te = a.splits["train"].index, a.splits["test"].index
    assert len(np.intersect1d(tr, te)) == 0 and len(np.union1d(tr, te)) == 1797
    from sklearn.datasets import load_digits

    y = load_digits().target
    assert np.array_equal(a.splits["test"].labels, y[te])
    expected = np.bincount(y) * 0.2
    assert np.all(np.abs(np.bincount(a.splits["test"].labels) - expected) <= 1)  # stratified
    assert np.array_equal(load_data("digits", seed=0).splits["test"].index, te)  # same seed, same rows
    assert not np.array_equal(load_data("digits", seed=1).splits["test"].index, te)
    x, _, idx = all_batches(a.splits["test"])
    assert x.shape == (360, 1, 8, 8) and float(x.min()) == 0.0 and float(x.max()) == 1.0
    assert np.allclose(x[0, 0].numpy(), load_digits().images[int(idx[0])] / 16)
    assert load_data("digits", test_fraction=0.5).splits["test"].n in (898, 899)


# ----------------------------------------------------------------------------- image folders
def _png(path: Path, arr: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path)


def test_imagefolder_class_folders_split_and_lazy(tmp_path):
    rng = np.random.default_rng(0)
    pixels = {}
    for c in ("dog", "cat", "bird"):  # sorted: bird, cat, dog
        for i in range(10):
            arr = rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)
            _png(tmp_path / c / f"{i:02d}.png", arr)
            pixels[(c, i)] = arr
    (tmp_path / "cat" / "notes.txt").write_text("not an image")
    b = load_data(f"imagefolder:{tmp_path}", seed=0, test_fraction=0.3)
    assert b.class_names == ["bird", "cat", "dog"]
    assert b.split_info["method"] == "stratified"
    assert (b.splits["train"].n, b.splits["test"].n) == (21, 9)
    assert np.bincount(b.splits["test"].labels).tolist() == [3, 3, 3]
    # rows index the sorted file list: bird/00..09, cat/00..09, dog/00..09
    row = int(b.splits["test"].index[0])
    name, i = ["bird", "cat", "dog"][row // 10], row % 10
    new = np.full((4, 6, 3), 7, dtype=np.uint8)
    _png(tmp_path / name / f"{i:02d}.png", new)  # written after load_data: read lazily, so seen
    x, y, idx = next(b.splits["test"].batches(4))
    assert x.shape == (4, 3, 4, 6) and int(idx[0]) == row and int(y[0]) == row // 10
    assert np.array_equal((x[0].permute(1, 2, 0).numpy() * 255).round().astype(np.uint8), new)
    j = int(idx[1])
    want = pixels[(["bird", "cat", "dog"][j // 10], j % 10)]
    assert np.array_equal((x[1].permute(1, 2, 0).numpy() * 255).round().astype(np.uint8), want)


def test_images_in_formats_not_read_are_a_warning_not_a_silent_loss(tmp_path):
    """A folder of GIFs once lost them with no word: 10 files, 6 rows. Other files (notes, hidden
    files) are still passed over quietly."""
    rng = np.random.default_rng(0)
    for c in ("a", "b"):
        for i in range(5):
            arr = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
            if i < 3:
                _png(tmp_path / c / f"{i}.png", arr)
            else:
                Image.fromarray(arr).convert("P").save(tmp_path / c / f"{i}.gif")
    (tmp_path / "a" / "notes.txt").write_text("not an image")
    (tmp_path / "b" / ".DS_Store").write_bytes(b"\x00")
    b = load_data(f"imagefolder:{tmp_path}", seed=0, test_fraction=0.5)
    assert b.splits["train"].n + b.splits["test"].n == 6
    said = [w for w in b.warnings if "not read" in w]
    assert len(said) == 1 and "4 image(s)" in said[0] and ".gif 4" in said[0] and ".txt" not in said[0]
    _png(tmp_path / "a" / "3.png", np.zeros((4, 4, 3), dtype=np.uint8))
    for gif in tmp_path.glob("*/*.gif"):
        gif.unlink()
    assert not [w for w in load_data(f"imagefolder:{tmp_path}", test_fraction=0.5).warnings if "not read" in w]


def test_imagefolder_split_folders_gray_and_sizes(tmp_path):
    for split, classes in (("train", ("a", "b", "c")), ("test", ("a", "c"))):
        for c in classes:
            for i in range(2):
                side = 5 if (split, c, i) == ("test", "c", 1) else 4
                _png(tmp_path / split / c / f"{i}.png", np.full((side, side), 10 * i, dtype=np.uint8))
    b = load_data(f"imagefolder:{tmp_path}", splits=["train", "test"])
    assert b.class_names == ["a", "b", "c"] and b.split_info["method"] == "native"
    assert b.splits["test"].labels.tolist() == [0, 0, 2, 2]  # test has no 'b': indices stay shared
    x, _, _ = next(b.splits["train"].batches(6))
    assert x.shape == (6, 1, 4, 4)
    with pytest.raises(InputError, match="different sizes"):
        next(b.splits["test"].batches(4))
    b = load_data(f"imagefolder:{tmp_path}", splits="test", input_spec=spec(channels=3), image_size=8)
    x, _, _ = next(b.splits["test"].batches(4))
    assert x.shape == (4, 3, 8, 8) and b.transforms["resize"]["from"] == "per image"
    assert float(x[3].mean()) == pytest.approx(10 / 255, abs=1e-6)
    with pytest.raises(NotFoundError, match="no split 'val'.*available: train, test"):
        load_data(f"imagefolder:{tmp_path}", splits=["val"])


# ----------------------------------------------------------------------------- npz
def test_npz_layouts(tmp_path):
    rng = np.random.default_rng(0)
    hw = rng.integers(0, 256, (20, 5, 6), dtype=np.uint8)
    y = np.repeat(np.arange(4), 5)
    np.savez(tmp_path / "hw.npz", X=hw, y=y)
    b = load_data(f"npz:{tmp_path / 'hw.npz'}", seed=0)
    assert b.class_names == ["0", "1", "2", "3"] and b.split_info["method"] == "stratified"
    x, lab, idx = all_batches(b.splits["test"])
    assert x.shape == (4, 1, 5, 6) and np.allclose(x[:, 0].numpy(), hw[idx.numpy()] / 255)
    assert np.array_equal(lab.numpy(), y[idx.numpy()])

    hwc = rng.integers(0, 256, (8, 5, 6, 3), dtype=np.uint8)
    np.savez(tmp_path / "hwc.npz", X_train=hwc[:6], y_train=["cat", "dog"] * 3, X_test=hwc[6:], y_test=["dog", "cat"])
    b = load_data(f"npz:{tmp_path / 'hwc.npz'}")
    assert b.class_names == ["cat", "dog"] and b.split_info["method"] == "native"
    assert b.splits["test"].labels.tolist() == [1, 0]
    x, _, _ = next(b.splits["test"].batches(2))
    assert x.shape == (2, 3, 5, 6) and np.allclose(x.permute(0, 2, 3, 1).numpy(), hwc[6:] / 255)

    chw = rng.random((6, 3, 4, 4), dtype=np.float32)
    np.savez(
        tmp_path / "chw.npz",
        X_train=chw,
        y_train=np.arange(6) % 2,
        X_test=chw[:2],
        y_test=[0, 1],
        class_names=np.array(["no", "yes"]),
    )
    b = load_data(f"npz:{tmp_path / 'chw.npz'}", splits="train")
    x, _, _ = next(b.splits["train"].batches(6))
    assert b.class_names == ["no", "yes"] and np.array_equal(x.numpy(), chw)

    vec = rng.random((10, 7)).astype(np.float64)
    np.savez(tmp_path / "vec.npz", X=vec, y=np.arange(10) % 2)
    b = load_data(f"npz:{tmp_path / 'vec.npz'}", test_fraction=0.4)
    x, _, idx = next(b.splits["test"].batches(8))
    assert b.kind == "vector" and x.shape == (4, 7) and x.dtype.is_floating_point
    assert np.allclose(x.numpy(), vec[idx.numpy()]) and b.transforms["kind"] == "vector"

    np.savez(tmp_path / "bad.npz", X=hw)
    with pytest.raises(InputError, match="no y"):
        load_data(f"npz:{tmp_path / 'bad.npz'}")


# ----------------------------------------------------------------------------- errors
def test_spec_errors(tmp_path):
    with pytest.raises(NotFoundError, match="did you mean 'fashion-mnist'"):
        load_data("fashion_mnist")
    with pytest.raises(NotFoundError, match="available: fashion-mnist, cifar10, digits"):
        load_data("mnist")
    assert DATASETS.names() == ["fashion-mnist", "cifar10", "digits", "imagefolder", "npz", "csv", "jsonl", "imagecsv"]
    with pytest.raises(NotFoundError, match="no split 'valid' in dataset 'digits'.*available: train, test"):
        load_data("digits", splits=["valid"])
    with pytest.raises(InputError, match="needs a path"):
        load_data("imagefolder")
    with pytest.raises(InputError, match="takes no path"):
        load_data("digits:/tmp")
    with pytest.raises(InputError, match="no option 'text'"):
        load_data("digits?text=a")
    with pytest.raises(NotFoundError, match="no image folder"):
        load_data(f"imagefolder:{tmp_path / 'absent'}")
    with pytest.raises(NotFoundError, match="no npz file"):
        load_data(f"npz:{tmp_path / 'absent.npz'}")
    with pytest.raises(InputError, match="limit"):
        load_data("digits", limit=0)
    with pytest.raises(InputError, match="test_fraction"):
        load_data("digits", test_fraction=1.5)
    with pytest.raises(InputError, match="model takes text"):
        load_data("digits", input_spec=spec(kind="text"))
    with pytest.raises(InputError, match="batch size"):
        next(load_data("digits").splits["test"].batches(0))
