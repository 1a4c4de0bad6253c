"""Shared fixtures. Everything is offline and on CPU; helper functions live in helpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import SHARED_DATA, write_cache

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """One intra-op thread: on a shared 2-core machine, two threads made training tests up to 7× slower."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def digits_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real digits through a fixed, seeded 3-layer GELU network: a small real cache (64→48→32→16)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    feats, h = [], x
    for d_in, d_out in [(64, 48), (48, 32), (32, 16)]:
        w = torch.randn(d_in, d_out, generator=gen) / d_in**0.5
        h = torch.nn.functional.gelu(h @ w)
        feats.append(h.numpy())
    idx_train, idx_test = train_test_split(np.arange(len(y)), test_size=0.25, stratify=y, random_state=0)
    splits = {
        "train": ([f[idx_train] for f in feats], y[idx_train]),
        "test": ([f[idx_test] for f in feats], y[idx_test]),
    }
    return write_cache(tmp_path_factory.mktemp("cache") / "digits.h5", splits)


@pytest.fixture(scope="session")
def cifar_cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder: source/ with 24 CIFAR-10 JPEGs in two class folders, and a zoo CNN checkpoint cnn.pt.
    Tests copy what they change. Real data from ../shared/data (skipped where absent)."""
    import tarfile

    from laya_inspect.models.zoo import build_zoo, save_zoo_checkpoint

    tarball, per_class = SHARED_DATA / "cifar10-jpeg.tar.gz", 12
    if not tarball.is_file():
        pytest.skip(f"{tarball} is absent (see ../shared/data/README.md)")
    d = tmp_path_factory.mktemp("cifar_cnn")
    taken: dict[str, int] = {}
    with tarfile.open(tarball) as tar:  # the first classes of train/ come first: stop once both are read
        for member in tar:
            parts = member.name.split("/")
            if len(parts) == 3 and parts[0] == "train" and member.isfile() and parts[1] in ("airplane", "automobile"):
                if taken.get(parts[1], 0) < per_class:
                    target = d / "source" / parts[1] / parts[2]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(tar.extractfile(member).read())
                    taken[parts[1]] = taken.get(parts[1], 0) + 1
            if len(taken) == 2 and min(taken.values()) == per_class:
                break
    torch.manual_seed(0)
    save_zoo_checkpoint(d / "cnn.pt", build_zoo("cnn", in_shape=(3, 32, 32), num_classes=2), {})
    return d
