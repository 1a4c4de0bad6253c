"""Options of `extract` (:class:`ExtractConfig`), kept free of torch so that `--help` stays fast."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..options import SKLEARN_SEED_LIMIT, check, option, seed_rule, tuples
from ..runtime import DEVICE_HELP, check_device

DTYPES = ("float32", "float16")
RANDOM_WITHOUT_WEIGHTS = ("torchvision", "timm", "python", "zoo")  # sources whose weights come from --weights
# Options that do not change the stored arrays: a run may be resumed with other values of these.
NOT_IN_IDENTITY = ("out", "overwrite", "device", "batch_size", "allow_nonfinite")
# Rows per forward when --batch-size is not given: DEFAULT_BATCH, except for a convolutional network
# on CPU, which ran up to 2.8× faster when the largest activation of a batch stays in the CPU's cache:
# there the batch is the largest power of two whose largest activation fits in ACTIVATION_BUDGET,
# from MIN_CPU_BATCH to DEFAULT_BATCH (measured per model and image size in docs/PERFORMANCE.md).
DEFAULT_BATCH = 128
MIN_CPU_BATCH = 8
ACTIVATION_BUDGET = 16 << 20
# What --amp costs, measured on CPU bfloat16 (torchvision MobileNetV2 with its ImageNet weights, 512
# CIFAR-10 test images at 64 and 224 px, every block; docs/PERFORMANCE.md): said in --help and in the
# warning every --amp cache records.
AMP_COST = (
    "measured on CPU bfloat16 (MobileNetV2, 512 CIFAR-10 images), the median row of each block differs from "
    "float32 by 3–16% (relative L2; the first convolution 0.2%), single rows by up to 34%, and 12–15% of the "
    "model's own top-1 predictions change; GPU bfloat16 and float16 were not measured"
)


@dataclass(frozen=True)
class ExtractConfig:
    model: str = option(
        flag="--model",
        always=True,
        help=(
            "torchvision:NAME, timm:NAME, hf:DIR, torchscript:FILE, python:pkg.mod:factory or "
            "python:FILE.py:factory, zoo:mlp|cnn|bilstm"
        ),
    )
    data: str = option(
        flag="--data",
        always=True,
        help=(
            "fashion-mnist[:ROOT], cifar10[:ROOT], digits, imagefolder:DIR, imagecsv:FILE, npz:FILE, csv:FILE, "
            "jsonl:FILE"
        ),
    )
    out: str = option(flag="--out", help="HDF5 file to write (resumed if an interrupted run left it)", always=True)
    weights: str | None = option(
        None, flag="--weights", always=True, help="state_dict file (.pt/.pth/.safetensors) or zoo checkpoint"
    )
    layers: str = option(
        "all",
        flag="--layers",
        always=True,
        help="'all', dotted names, indices (negatives ok) or ranges a:b, comma-separated",
    )
    pool: str = option("auto", flag="--pool", help="auto | gap | cls | mean | max | last | flatten")
    splits: tuple[str, ...] = option(("train", "test"), flag="--split", help="splits to extract, comma-separated")
    limit: int | None = option(
        None, flag="--limit", always=True, help="at most this many rows per split (seeded, stratified)"
    )
    batch_size: int | None = option(
        None,
        flag="--batch-size",
        help=f"rows per forward pass (default {DEFAULT_BATCH}; a convolutional network on CPU gets {MIN_CPU_BATCH}–"
        f"{DEFAULT_BATCH}, sized so that its largest activation of a batch stays in the CPU cache)",
    )
    dtype: str = option(
        "float32",
        flag="--dtype",
        help=" | ".join(DTYPES) + ": how rows are stored (HDF5 has no bfloat16, so --amp rows are stored as this)",
    )
    amp: bool = option(
        False,
        flag="--amp",
        help="run the backbone forward under bfloat16 autocast (float16 on a GPU without bfloat16): faster on "
        f"recent GPUs, but the features are not float32's: {AMP_COST}; stored as --dtype, and recorded in the "
        "cache's warnings and fingerprint, so that heads do not pass between an --amp and a float32 cache unnoticed",
    )
    seed: int = option(
        0,
        flag="--seed",
        help="seed of --limit's subset, of a dataset's train/test split and of a randomly initialised model "
        "(0 … 2**32 − 1)",
        always=True,
    )
    device: str = option("auto", flag="--device", help=DEVICE_HELP, always=True)
    trust_pickle: bool = option(
        False, flag="--trust-pickle", help="allow a fully pickled model file (runs code from it)"
    )
    image_size: int | None = option(
        None, flag="--image-size", help="resize images to this side (default: what the model expects)"
    )
    normalize: str | None = option(
        None, flag="--normalize", help="none | imagenet | M1,M2,M3/S1,S2,S3 (default: what the model expects)"
    )
    resize: str | None = option(
        None,
        flag="--resize",
        help="stretch (straight to the size; the default, with a warning when it changes images' aspect ratio) | "
        "crop (keep the aspect ratio, scale to size/0.875, centre crop: torchvision's evaluation recipe)",
    )
    overwrite: bool = option(
        False,
        flag="--overwrite",
        help=(
            "write a new cache even if --out exists, when it is a cache laya-inspect wrote "
            "(the old one stays readable until the new one is complete)"
        ),
    )
    random_init: bool = option(
        False, flag="--random-init", help="allow a randomly initialised network when no --weights is given"
    )
    trust_remote_code: bool = option(
        False, flag="--trust-remote-code", help="allow a Hugging Face directory's own Python code (runs it)"
    )
    allow_nonfinite: bool = option(
        False, flag="--allow-nonfinite", help="cache NaN/inf activations (counted in the cache) instead of stopping"
    )

    def __post_init__(self) -> None:
        tuples(self)
        check_device(self.device)
        check(
            self,
            [
                (self.dtype in DTYPES, "dtype", f"must be one of {', '.join(DTYPES)}"),
                (self.batch_size is None or self.batch_size >= 1, "batch_size", "must be ≥ 1"),
                # the seed also draws scikit-learn's train/test split of a dataset without one
                seed_rule(self, limit=SKLEARN_SEED_LIMIT),
            ],
        )

    def identity(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for key in NOT_IN_IDENTITY:
            d.pop(key)
        d["splits"] = list(self.splits)
        d["resize"] = self.resize or "stretch"  # the default is stretch: the same rows either way
        if not d["amp"]:  # caches written before --amp existed resume as before
            d.pop("amp")
        return d


@dataclass
class ExtractResult:
    path: Path
    layer_names: list[str]
    widths: list[int]
    pooling: list[str]
    rows: dict[str, int]
    resumed_from: dict[str, int]
    seconds: float
    rows_per_second: float
    normalization: str = ""
    warnings: list[str] = dataclasses.field(default_factory=list)
    nonfinite: dict[str, int] = dataclasses.field(default_factory=dict)
    batch_size: int = DEFAULT_BATCH  # rows per forward pass used (--batch-size, or the default for the model)
    world_size: int = 1  # processes that wrote it (torchrun)
    transforms: dict = dataclasses.field(default_factory=dict)  # how inputs reached the model, as the cache records
    split_info: dict = dataclasses.field(default_factory=dict)  # how the rows were split, as the cache records
    device: str = ""  # the device the backbone ran on (--device auto resolved)
    layers_how: str = ""  # the rule that picked the model's default layers, where --layers all took a fallback's
    # the model's own top-1 per split, as the cache records it (model_top1); {} where it is not known
    model_top1: dict = dataclasses.field(default_factory=dict)
