"""One fit-head epoch against a hand-written PyTorch loop over the same rows (docs/PERFORMANCE.md).

Row of the performance table printed here: one LAYA epoch on the zoo MLP / Fashion-MNIST cache (10k
train rows; 90% trained on, 10% validated) as ``fit_heads`` times it (its history's ``seconds``),
÷ the same epoch written by hand: the same head and hyper-parameters, Adam, shuffled batches of 128,
then one pass over the validation rows (keep ≈ 1.0×).

    python bench/fit_epoch.py            # the table's sizes (a minute)
    python bench/fit_epoch.py --smoke    # tiny sizes, seconds: checks that it runs
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import _bench
import _caches
import numpy as np
import torch

from laya_inspect.cache.store import FeatureStore
from laya_inspect.heads import build_head
from laya_inspect.training.fit_head import FitConfig, fit_heads


def main() -> None:
    args = _bench.parser(__doc__).parse_args()
    _bench.start(args, "one fit-head epoch against a hand loop")
    rows = 600 if args.smoke else 10_000
    cache, what = _caches.feature_cache(rows)
    config = FitConfig(heads=("laya",), seeds=(0,), epochs=1, device="cpu")
    store = FeatureStore(cache)
    hs = [torch.from_numpy(np.ascontiguousarray(h)) for h in store.layers("train")]
    y = torch.from_numpy(store.labels("train").astype(np.int64))
    hparams: dict = {}

    def library() -> float:
        with tempfile.TemporaryDirectory() as tmp:
            result = fit_heads(store, config, out_dir=Path(tmp) / "h")
        hparams.update(result.runs[0].hparams)
        return float(result.runs[0].history[0]["seconds"])

    def by_hand() -> float:
        gen = torch.Generator().manual_seed(0)
        order = torch.randperm(len(y), generator=gen)
        val, train = order[: len(y) // 10], order[len(y) // 10 :]
        torch.manual_seed(0)
        head = build_head("laya", store.widths, store.num_classes, **hparams)
        opt = torch.optim.Adam(head.parameters(), lr=config.lr)
        t = time.perf_counter()
        head.train()
        for idx in train[torch.randperm(len(train), generator=gen)].split(config.batch_size):
            loss = torch.nn.functional.cross_entropy(head([h[idx] for h in hs]).logits, y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        head.eval()
        with torch.no_grad():
            for idx in val.split(1024):
                head([h[idx] for h in hs]).logits.argmax(1)
        return time.perf_counter() - t

    library()  # fixes the hyper-parameters the hand loop uses
    print(f"# {what}: {len(y)} train rows, layers {store.widths}, LAYA hyper-parameters {hparams}")
    times = _bench.interleave({"fit-head": library, "hand": by_hand}, args.repeats)
    store.close()
    _bench.ratio(f"fit-head-epoch/hand-loop [LAYA, {len(y)} rows]", times["fit-head"], times["hand"], "keep ≈ 1.0×")
    print(f"# {_bench.load()}")


if __name__ == "__main__":
    main()
