"""Extraction throughput against a plain forward pass of the same model on the same batches.

Both passes read the same data the same way (load + transform per batch); the plain pass only runs
the model, the extraction also hooks every chosen layer, pools it and writes it to HDF5. The ratio
printed is measured in this one run (these machines are noisy; compare ratios, not seconds).

    python bench/extract_throughput.py --model torchvision:mobilenet_v2 --weights W.pth \
        --data cifar10:DIR --image-size 96 --limit 2000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from laya_inspect.data import load_data
from laya_inspect.extract import ExtractConfig, extract_features
from laya_inspect.models import load_model


def plain_forward(args: argparse.Namespace) -> tuple[int, float]:
    model = load_model(args.model, weights=args.weights)
    data = load_data(
        args.data,
        splits=(args.split,),
        limit=args.limit,
        seed=0,
        input_spec=model.input_spec,
        tokenizer=model.tokenizer,
        image_size=args.image_size,
    )
    rows, start = 0, time.perf_counter()  # the batch loop only, as in hooked_extract
    with torch.no_grad():
        for inputs, labels, _ in data.splits[args.split].batches(args.batch_size):
            model.module(**inputs) if isinstance(inputs, dict) else model.module(inputs)
            rows += len(labels)
    return rows, time.perf_counter() - start


def hooked_extract(args: argparse.Namespace, out: Path) -> tuple[int, float]:
    config = ExtractConfig(
        model=args.model,
        weights=args.weights,
        data=args.data,
        out=str(out),
        layers=args.layers,
        splits=(args.split,),
        limit=args.limit,
        batch_size=args.batch_size,
        image_size=args.image_size,
        device="cpu",
        overwrite=True,
    )
    result = extract_features(config)
    # result.seconds covers the batch loop only (data, forward, hooks, pooling, writes), like the
    # plain pass; loading the model and the dataset's files is left out of both.
    return sum(result.rows.values()), result.seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="zoo:mlp")
    p.add_argument("--weights")
    p.add_argument("--data", default="fashion-mnist")
    p.add_argument("--split", default="test")
    p.add_argument("--layers", default="all")
    p.add_argument("--limit", type=int, default=5000)
    p.add_argument("--image-size", type=int)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--repeats", type=int, default=2, help="alternate the two passes this many times; best of each")
    args = p.parse_args()
    plain, hooked = [], []
    with tempfile.TemporaryDirectory() as tmp:
        plain_forward(args)  # warm-up: file cache, lazy imports, allocator
        for _ in range(args.repeats):
            plain.append(plain_forward(args))
            hooked.append(hooked_extract(args, Path(tmp) / "bench.h5"))
    n = plain[0][0]
    best_plain = min(t for _, t in plain)
    best_hooked = min(t for _, t in hooked)
    print(
        f"model {args.model}  data {args.data}:{args.split}  rows {n}  batch {args.batch_size}  "
        f"image_size {args.image_size}  torch threads {torch.get_num_threads()}"
    )
    print(f"plain forward      {n / best_plain:10.1f} rows/s  ({best_plain:.2f} s, best of {args.repeats})")
    print(f"extract (to HDF5)  {n / best_hooked:10.1f} rows/s  ({best_hooked:.2f} s, best of {args.repeats})")
    print(f"ratio extract/plain throughput: {best_plain / best_hooked:.3f}")


if __name__ == "__main__":
    main()
