"""`extract_features(model, batches, layers=[...], out=...)`: the in-memory path for a notebook user
who holds an ``nn.Module`` and a DataLoader rather than a model spec and a dataset spec.

It writes the same cache as the `extract` command (same datasets and attributes, so `fit_heads`,
`compare_heads` and every command read it), with what can be known of an object in memory as its
provenance: the module's class, a SHA-256 of its state_dict, and a fingerprint of the rows seen.
Pooled rows are gathered in memory and written once the batches are exhausted (an iterable need
not know its length); data larger than memory goes through the command line's streaming `extract`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..data.checks import one_class_dominates
from ..errors import InputError, NotFoundError, suggest
from ..files import artifact_header, output_lock, utc_now
from ..layers import (
    capture,
    depth_order,
    forward_answer,
    image_size_of,
    is_forward_output,
    parameter_counts,
    reduce_batch,
)
from ..models.base import module_kind, rerun_warning
from ..models.sizes import Unit, call_order, layer_macs, unit_sizes, with_units
from .extract_config import DTYPES, ExtractResult
from .partial import refuse_reserved_name
from .writer import NOTEBOOK_ADVICE, FeatureWriter, constant_warning, duplicate_warning, logits_warning

LABEL_KEYS = ("labels", "label", "y", "target", "targets")


def extract_from_module(
    model: nn.Module,
    batches: Iterable[Any] | Mapping[str, Iterable[Any]],
    *,
    layers: Sequence[str],
    out: str | Path,
    pool: str | Mapping[str, str] = "auto",
    split: str = "train",
    class_names: Sequence[str] | None = None,
    dtype: str = "float32",
    device: str | torch.device = "cpu",
    overwrite: bool = False,
    allow_nonfinite: bool = False,
) -> ExtractResult:
    """Run ``batches`` through the frozen ``model`` and cache the pooled outputs of ``layers`` in ``out``.

    ``batches``: an iterable of batches (stored as split ``split``) or ``{split: iterable}``, e.g.
    ``{"train": train_loader, "test": test_loader}`` — fit_heads trains on "train" and tests on
    "test". A batch is ``(inputs, labels, ...)`` (further items are ignored) or a dict holding one of
    ``labels``/``label``/``y``/``target`` plus the model's keyword inputs. ``layers``: dotted module
    names (``model.named_modules()``), stored in the order the model computes them (a warning
    says when that is not the order given). ``pool``: as `extract --pool`,
    except that ``auto`` cannot tell what a plain module's token 0 is: it takes token 0 of a token
    sequence unless image patches are all there is; pass ``pool="mean"`` for a decoder (GPT-2, Llama)
    or T5's encoder, whose token 0 is no summary of the text.
    The model runs in eval mode under ``torch.no_grad`` and is put back in its former mode.
    A layer that gives the same row for every input, two layers that hold the same values, and a layer
    that is what the forward returns with one value per class (the model's logits), and a layer whose
    module runs at several places in one forward (only its last output is read), are named in the
    result's and the cache's ``warnings``, as `extract` names them.
    """
    if dtype not in DTYPES:
        raise InputError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    refuse_reserved_name(out)  # before the model runs, not after
    splits = dict(batches) if isinstance(batches, Mapping) else {split: batches}
    if not splits:
        raise InputError("no batches: give an iterable of (inputs, labels) batches or {split: iterable}")
    names = _check_layers(model, layers)
    modules = dict(model.named_modules())
    dev = torch.device(device)
    start = time.perf_counter()
    was_training = model.training
    model.eval()
    try:
        # the first split's first batch alone counts each layer's unit (hooks on every module)
        gathered = {s: _run(model, it, names, pool, modules, dev, s, not i) for i, (s, it) in enumerate(splits.items())}
    finally:
        model.train(was_training)
    ordered, moved = depth_order(names, next(iter(gathered.values())).order, "the order the model computes them")
    for g in gathered.values():  # the cache keeps its layers in depth order
        g.parts = [[part[names.index(n)] for n in ordered] for part in g.parts]
    names = ordered
    first = next(g for g in gathered.values() if g.n)
    num_classes = int(max(int(g.labels.max()) for g in gathered.values() if g.n)) + 1
    classes = [str(c) for c in class_names] if class_names is not None else [str(i) for i in range(num_classes)]
    if len(classes) < num_classes:
        raise InputError(f"class_names has {len(classes)} names but the labels reach class {num_classes - 1}")
    seen = np.unique(np.concatenate([g.labels for g in gathered.values()]))
    if len(seen) < 2:  # as the data sources refuse it (data.checks.check_labels)
        raise InputError(
            f"every row of the batches has the class {classes[int(seen[0])]!r}; a classifier needs rows of at "
            "least two classes"
        )
    lopsided = one_class_dominates("batches:" + ",".join(splits), classes, {s: g.labels for s, g in gathered.items()})
    returned = [n for n in names if first.returned.get(n) == len(classes)]
    logits = logits_warning(returned, len(classes), NOTEBOOK_ADVICE[1])
    reran = rerun_warning(first.runs)
    types = [module_kind(modules[n]) for n in names]
    params, ops, op_shapes = with_units(first.units, names, parameter_counts(modules, names), types)
    attrs = {
        **artifact_header(),
        "model_spec": f"module:{type(model).__module__}.{type(model).__qualname__}",
        "model_source": "module",
        "weights_path": None,
        "weights_sha256": state_sha256(model),
        "model_file": None,  # a module given in memory: no file behind it
        "model_code": {},
        "data_content": "",  # batches given in memory: no files
        "layer_names": names,
        "layer_types": types,
        "layer_ops": ops,
        "layer_op_shapes": op_shapes,
        "layer_pooling": [first.pooling[n] for n in names],
        "layer_shapes": [list(first.shapes[n]) for n in names],
        "layer_params": params,
        "layer_macs": [first.macs.get(n) for n in names],
        "layer_roles": {},
        "classifier_inputs": None,  # no logits cached: no classifier after the layers is counted
        "data_spec": "batches:" + ",".join(splits),
        "transforms": {"note": "batches given in memory; their transforms are the caller's"},
        "split_info": {s: {"rows": g.n} for s, g in gathered.items()},
        "class_names": classes,
        "seed": 0,
        "torch_version": torch.__version__,
        "created_at": utc_now(),
        "command": {
            "api": "extract_features(model, batches)",
            "layers": names,
            "pool": pool if isinstance(pool, str) else dict(pool),
        },
        "data_fingerprint": _fingerprint(gathered),
        "random_init": False,
        "warnings": [*reran, *lopsided, *([moved] if moved else []), *logits],
        "compute_dtype": "float32",
        "world_size": 1,
        "device": str(dev),
    }
    widths = [int(first.features[i].shape[1]) for i in range(len(names))]
    with output_lock(out):
        with FeatureWriter(
            out,
            attrs=attrs,
            split_sizes={s: g.n for s, g in gathered.items()},
            widths=widths,
            num_logits=None,
            dtype=dtype,
            overwrite=overwrite,
            allow_nonfinite=allow_nonfinite,
            nonfinite_switch="allow_nonfinite=True",
        ) as writer:
            for s, g in gathered.items():
                if g.n:
                    writer.append(s, g.features, g.labels, np.arange(g.n, dtype=np.int64), None)
            nonfinite = writer.nonfinite()
            # the checks extract makes as it writes: a layer that gave one row for every input, two the same
            said = constant_warning(writer.constant_layers(), first.pooling, NOTEBOOK_ADVICE)
            said += duplicate_warning(writer.same_layers(), NOTEBOOK_ADVICE[1])
            writer.finish(warnings=said)
            replaced = writer.overwrite_notes
    seconds = time.perf_counter() - start
    rows = {s: g.n for s, g in gathered.items()}
    return ExtractResult(
        path=Path(out),
        layer_names=names,
        widths=widths,
        pooling=[first.pooling[n] for n in names],
        rows=rows,
        resumed_from={s: 0 for s in rows},
        seconds=seconds,
        rows_per_second=sum(rows.values()) / seconds if seconds > 0 else float("nan"),
        normalization="the caller's (batches given in memory)",
        nonfinite=nonfinite,
        batch_size=first.batch_size,
        warnings=[*reran, *lopsided, *([moved] if moved else []), *logits, *said, *replaced],
    )


def state_sha256(model: nn.Module) -> str:
    """SHA-256 over the state_dict's names, dtypes, shapes and bytes: which weights the cache came from."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}\t{t.dtype}\t{tuple(t.shape)}\n".encode())
        # flat first: a 0-dim tensor of wider elements (BatchNorm's num_batches_tracked) cannot be viewed as bytes
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


class _Split:
    def __init__(self) -> None:
        self.parts: list[list[np.ndarray]] = []
        self.label_parts: list[np.ndarray] = []
        self.pooling: dict[str, str] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.batch_size = 0
        self.order: list[str] = []  # the layers in the order the first batch made their outputs
        self.returned: dict[str, int] = {}  # layers whose (N, K) output is what the forward returned: K
        self.units: dict[str, Unit] = {}  # models/sizes.unit_sizes of the first batch
        self.macs: dict[str, int | None] = {}  # models/sizes.layer_macs of the first batch
        self.runs: dict[str, int] = {}  # how often each layer's module ran in the first batch's forward

    @property
    def n(self) -> int:
        return sum(len(y) for y in self.label_parts)

    @property
    def labels(self) -> np.ndarray:
        return np.concatenate(self.label_parts) if self.label_parts else np.zeros(0, dtype=np.int64)

    @property
    def features(self) -> list[np.ndarray]:
        return [np.concatenate([p[i] for p in self.parts]) for i in range(len(self.parts[0]))]


def _check_layers(model: nn.Module, layers: Sequence[str]) -> list[str]:
    if isinstance(layers, str):
        layers = [s.strip() for s in layers.split(",") if s.strip()]
    names = list(layers)
    if not names:
        raise InputError("layers is empty: name the modules to cache, e.g. layers=['layer1', 'layer2']")
    known = [n for n, _ in model.named_modules() if n]
    for n in names:
        if n not in known:
            raise NotFoundError(f"no layer {n!r} in {type(model).__name__}; {suggest(n, known)}")
    if len(set(names)) != len(names):
        raise InputError(f"layers names a module twice: {names}")
    return names


def _split_batch(batch: Any, where: str) -> tuple[Any, np.ndarray]:
    if isinstance(batch, Mapping):
        key = next((k for k in LABEL_KEYS if k in batch), None)
        if key is None:
            raise InputError(f"{where}: a dict batch needs a label key ({', '.join(LABEL_KEYS)}); it has {list(batch)}")
        inputs, labels = {k: v for k, v in batch.items() if k != key}, batch[key]
    elif isinstance(batch, (tuple, list)) and len(batch) >= 2:
        inputs, labels = batch[0], batch[1]
    else:
        raise InputError(
            f"{where}: a batch must be (inputs, labels, ...) or a dict with labels, got {type(batch).__name__}"
        )
    y = np.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer) or (y.size and y.min() < 0):
        raise InputError(f"{where}: labels must be a 1-D array of class indices ≥ 0, got shape {y.shape} {y.dtype}")
    return inputs, y.astype(np.int64)


def _to(x: Any, dev: torch.device) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(dev)
    if isinstance(x, Mapping):
        return {k: _to(v, dev) for k, v in x.items()}
    return x


def _run(
    model: nn.Module,
    batches: Iterable[Any],
    names: list[str],
    pool: str | Mapping[str, str],
    modules: dict[str, nn.Module],
    dev: torch.device,
    split: str,
    count_units: bool,
) -> _Split:
    got = _Split()
    for i, batch in enumerate(batches):
        inputs, y = _split_batch(batch, f"split {split!r}, batch {i}")
        if len(y) == 0:
            continue
        x = _to(inputs, dev)
        counted = call_order(model) if count_units and not got.parts else nullcontext()
        with torch.no_grad(), capture(model, names) as raw, counted as calls:
            out = model(**x) if isinstance(x, Mapping) else model(x)
        mask = x.get("attention_mask") if isinstance(x, Mapping) else None
        feats, decided, shapes = reduce_batch(raw, names, pool, modules, mask=mask, image_hw=image_size_of(x))
        arrays = [feats[n].float().cpu().numpy() for n in names]
        if any(len(a) != len(y) for a in arrays):
            raise InputError(f"split {split!r}, batch {i}: {len(y)} labels but layer outputs of another batch size")
        if not got.parts:
            got.pooling, got.shapes, got.batch_size, got.order = decided, shapes, len(y), list(raw)
            got.units = unit_sizes(calls, modules, names) if calls is not None else {}
            got.macs = layer_macs(calls, got.units, {n: modules[n] for n in names}) if calls is not None else {}
            got.runs = {n: calls.runs[id(modules[n])] for n in names} if calls is not None else {}
            answer = forward_answer(out)
            got.returned = {n: int(answer.shape[1]) for n in names if is_forward_output(raw.get(n), answer)}
        elif any(a.shape[1] != b.shape[1] for a, b in zip(arrays, got.parts[0])):
            raise InputError(f"split {split!r}, batch {i}: a layer's pooled width changed between batches")
        got.parts.append(arrays)
        got.label_parts.append(y)
    if not got.parts:
        raise InputError(f"split {split!r} gave no rows")
    return got


def _fingerprint(gathered: dict[str, _Split]) -> str:
    h = hashlib.sha256()
    for name, g in gathered.items():
        h.update(name.encode())
        h.update(np.ascontiguousarray(g.labels, dtype=np.int64).tobytes())
        # the first rows of the deepest layer, as extract does
        h.update(hashlib.sha256(np.ascontiguousarray(g.parts[0][-1][:8]).tobytes()).digest())
    return h.hexdigest()[:16]
