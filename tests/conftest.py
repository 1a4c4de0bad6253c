"""Shared fixtures. Everything is offline and on CPU."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

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


SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def write_cache(path: Path, splits: dict[str, tuple[list[np.ndarray], np.ndarray]], *,
                class_names: list[str] | None = None, layer_names: list[str] | None = None,
                model_spec: str = "test:mlp", data_spec: str = "test") -> Path:
    """Write a complete schema-1 cache straight from arrays (for tests of the later stages)."""
    from laya_inspect.store import FeatureWriter

    first = next(iter(splits.values()))[0]
    names = layer_names or [f"blocks.{i}" for i in range(len(first))]
    n_classes = int(max(int(y.max()) for _, y in splits.values())) + 1
    attrs = {
        "model_spec": model_spec, "model_source": "test", "weights_sha256": None,
        "layer_names": names, "layer_types": ["Sequential"] * len(names),
        "layer_pooling": ["none"] * len(names), "layer_shapes": [[f.shape[1]] for f in first],
        "layer_roles": {}, "data_spec": data_spec, "transforms": {}, "split_info": {},
        "class_names": class_names or [str(i) for i in range(n_classes)], "seed": 0,
        "torch_version": torch.__version__, "created_at": "test", "command": {"test": True},
    }
    with FeatureWriter(path, attrs=attrs, split_sizes={s: len(y) for s, (_, y) in splits.items()},
                       widths=[f.shape[1] for f in first], num_logits=None) as w:
        for split, (feats, labels) in splits.items():
            w.append(split, feats, labels, np.arange(len(labels)))
        w.finish()
    return path


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


def paper_laya():
    """A LAYA head worked out on paper: two 1-D layers, z_i = h_i, α = softmax([ln 3, 0]) = [3/4, 1/4] for
    every input, logits = [a, −a] with a = ¾h₁ + ¼h₂, so p_0 = σ(2a) and p_1 = σ(−2a)."""
    import math

    from laya_inspect.heads import LayaHead

    head = LayaHead([1, 1], 2, d_star=1, tau=1.0, score_width=2)
    with torch.no_grad():
        for p in head.parameters():
            p.zero_()
        for g in head.adapters:
            g.weight.fill_(1.0)
        head.scorer[2].bias.copy_(torch.tensor([math.log(3.0), 0.0]))
        head.classifier.weight.copy_(torch.tensor([[1.0], [-1.0]]))
    return head.double().eval()
