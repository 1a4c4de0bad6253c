"""`extract`: run data through a frozen model and stream the chosen layers into one HDF5 cache."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from . import __version__
from .data import load_data
from .errors import InputError
from .layers import reduce_batch, resolve_layers
from .models import load_model
from .options import check, option, tuples
from .runtime import DEVICE_HELP, Progress, check_device, no_progress, pick_device
from .store import FeatureWriter

DTYPES = ("float32", "float16")
# Options that do not change the stored arrays: a run may be resumed with other values of these.
NOT_IN_IDENTITY = ("out", "overwrite", "device", "batch_size")


@dataclass(frozen=True)
class ExtractConfig:
    model: str = option(
        flag="--model",
        always=True,
        help="torchvision:NAME, timm:NAME, hf:DIR, torchscript:FILE, python:pkg.mod:factory, zoo:mlp|cnn|bilstm",
    )
    data: str = option(
        flag="--data",
        always=True,
        help="fashion-mnist[:ROOT], cifar10[:ROOT], digits, imagefolder:DIR, npz:FILE, csv:FILE, jsonl:FILE",
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
    batch_size: int = option(128, flag="--batch-size", help="rows per forward pass")
    dtype: str = option("float32", flag="--dtype", help=" | ".join(DTYPES))
    seed: int = option(
        0, flag="--seed", help="seed of --limit's subset and of a randomly initialised model", always=True
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
    resize: str = option(
        "stretch",
        flag="--resize",
        help="stretch (straight to the size) | crop (keep the aspect "
        "ratio, scale to size/0.875, centre crop: torchvision's evaluation recipe)",
    )
    overwrite: bool = option(False, flag="--overwrite", help="start again even if --out exists")

    def __post_init__(self) -> None:
        tuples(self)
        check_device(self.device)
        check(
            self,
            [
                (self.dtype in DTYPES, "dtype", f"must be one of {', '.join(DTYPES)}"),
                (self.batch_size >= 1, "batch_size", "must be ≥ 1"),
            ],
        )

    def identity(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for key in NOT_IN_IDENTITY:
            d.pop(key)
        d["splits"] = list(self.splits)
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


def extract_features(config: ExtractConfig, *, progress: Progress | None = None) -> ExtractResult:
    """Run ``config.data`` through the frozen ``config.model`` and write the chosen layers to ``config.out``."""
    emit = progress or no_progress
    device = pick_device(config.device)
    torch.manual_seed(config.seed)
    model = load_model(config.model, weights=config.weights, trust_pickle=config.trust_pickle, device=str(device))
    data = load_data(
        config.data,
        splits=config.splits,
        limit=config.limit,
        seed=config.seed,
        input_spec=model.input_spec,
        tokenizer=model.tokenizer,
        image_size=config.image_size,
        normalize=config.normalize,
        resize=config.resize,
    )
    if config.pool == "flatten" and data.kind == "text":
        raise InputError(
            "--pool flatten is not defined for text: each batch is padded to its own longest "
            "text, so flattened widths would vary; use cls, mean, max or last"
        )
    names = resolve_layers(config.layers, model.candidate_layers(), model.default_layers)
    modules = dict(model.module.named_modules())

    # One dry batch fixes the widths, pooling decisions and original shapes before the file exists.
    first = next(iter(data.splits.values()))
    inputs, _, _ = next(iter(first.batches(min(2, first.n))))
    raw, logits = model.run(_to(inputs, device), names)
    feats, decided, shapes = reduce_batch(raw, names, config.pool, modules, mask=_mask(inputs))
    widths = [int(feats[n].shape[1]) for n in names]
    num_logits = int(logits.shape[1]) if logits is not None and logits.ndim == 2 else None

    attrs = {
        "tool_version": __version__,
        "model_spec": config.model,
        "model_source": model.source,
        "weights_path": str(config.weights) if config.weights else None,
        "weights_sha256": model.weights_sha256,
        "layer_names": names,
        "layer_types": [type(modules[n]).__name__ if n in modules else "hidden_state" for n in names],
        "layer_pooling": [decided[n] for n in names],
        "layer_shapes": [list(shapes[n]) for n in names],
        "layer_roles": {n: r for n, r in getattr(model, "layer_roles", {}).items() if n in names},
        "data_spec": config.data,
        "transforms": data.transforms,
        "split_info": data.split_info,
        "class_names": data.class_names,
        "seed": config.seed,
        "torch_version": torch.__version__,
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": config.identity(),
    }
    start_time = time.perf_counter()
    written = 0
    resumed: dict[str, int] = {}
    with FeatureWriter(
        config.out,
        attrs=attrs,
        split_sizes={s: sp.n for s, sp in data.splits.items()},
        widths=widths,
        num_logits=num_logits,
        dtype=config.dtype,
        overwrite=config.overwrite,
    ) as writer:
        for split_name, split in data.splits.items():
            done = writer.n_written(split_name)
            resumed[split_name] = done
            emit({"event": "split", "split": split_name, "total": split.n, "done": done})
            for inputs, labels, index in split.batches(config.batch_size, start=done):
                raw, logits = model.run(_to(inputs, device), names)
                feats, _, _ = reduce_batch(raw, names, config.pool, modules, mask=_mask(inputs))
                batch_logits = None
                if num_logits is not None:
                    assert logits is not None  # the model gave logits on the dry batch
                    batch_logits = logits.float().cpu().numpy()
                writer.append(
                    split_name,
                    [feats[n].float().cpu().numpy() for n in names],
                    labels.numpy(),
                    index.numpy(),
                    batch_logits,
                )
                written += len(labels)
                emit({"event": "batch", "split": split_name, "rows": len(labels)})
        writer.finish()
    seconds = time.perf_counter() - start_time
    return ExtractResult(
        path=Path(config.out),
        layer_names=names,
        widths=widths,
        pooling=[decided[n] for n in names],
        rows={s: sp.n for s, sp in data.splits.items()},
        resumed_from=resumed,
        seconds=seconds,
        rows_per_second=written / seconds if seconds > 0 else float("nan"),
    )


def _mask(inputs: Any) -> torch.Tensor | None:
    """Tokenised text carries an attention mask: mean/max/last pooling must skip the padding."""
    return inputs.get("attention_mask") if isinstance(inputs, dict) else None


def _to(inputs: Any, device: torch.device) -> Any:
    if isinstance(inputs, dict):
        return {k: v.to(device) for k, v in inputs.items()}
    return inputs.to(device)


def list_model_layers(
    *,
    model: str,
    data: str | None,
    weights: str | None = None,
    trust_pickle: bool = False,
    image_size: int | None = None,
    normalize: str | None = None,
    resize: str = "stretch",
    device: str = "auto",
):
    """Each candidate layer's name, type and output shape from one dry batch."""
    from .layers import list_layers

    dev = pick_device(device)
    loaded = load_model(model, weights=weights, trust_pickle=trust_pickle, device=str(dev))
    inputs = None
    if data is not None:
        bundle = load_data(
            data,
            splits=("test",),
            limit=2,
            seed=0,
            input_spec=loaded.input_spec,
            tokenizer=loaded.tokenizer,
            image_size=image_size,
            normalize=normalize,
            resize=resize,
        )
        split = next(iter(bundle.splits.values()))
        inputs, _, _ = next(iter(split.batches(2)))
        inputs = _to(inputs, dev)
    return loaded, list_layers(loaded, inputs)
