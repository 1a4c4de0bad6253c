"""Shared fixtures. Everything is offline and on CPU; helper functions live in helpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import write_cache

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
