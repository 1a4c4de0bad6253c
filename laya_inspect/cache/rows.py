"""Rows through the model into a cache: load the model and data and fix the cache's widths and
attributes from one dry batch (:func:`prepare`), then write every split's rows not yet written
(:func:`write_cache`). One process (`extract.py`) and every torchrun process (`shards.py`) run these.
Also what a cache records about where its rows came from: the normalisation in words, and a
fingerprint of the data that a resumed run must match."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import closing, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data import load_data
from ..errors import CacheError, ImageFileError, InputError
from ..files import artifact_header, utc_now
from ..layers import depth_order, image_size_of, is_forward_output, parameter_counts, reduce_batch
from ..models import load_model
from ..models.base import module_kind, rerun_warning
from ..models.local import model_file
from ..models.sizes import call_order, classifier_inputs, layer_macs, output_states, unit_sizes, with_units
from ..models.weights import sha256_file
from ..options import defaulted
from ..runtime import Progress, prefetch, usable_cpus
from ..training.chance import CLASSIFIER_NOT_LEARNED, CLASSIFIER_NOT_LEARNED_BEFORE, chance_level, is_near_chance
from ..training.classes import class_balance
from . import partial
from .extract_config import (
    ACTIVATION_BUDGET,
    AMP_COST,
    DEFAULT_BATCH,
    MIN_CPU_BATCH,
    ExtractConfig,
    ExtractResult,
)
from .fingerprint import module_code
from .partial import RECHECK_ROWS, code_unchecked, partial_path, recomputed_problem
from .schema import decode_attr, not_a_cache
from .writer import (
    LOGIT_AGREEMENT,
    FeatureWriter,
    constant_warning,
    duplicate_warning,
    enough_rows,
    logits_warning,
    numbering_warning,
)

# The cache's attribute of the model's own top-1 agreement with the labels, per split (own_task).
MODEL_TOP1 = "model_top1"
# A shard's attribute: its writer's split_agreement, summed per split by the torchrun join into MODEL_TOP1.
SPLIT_AGREEMENT = "split_agreement"


@dataclass
class Prepared:
    """A loaded model and dataset, the layers to cache and the cache's attributes, before any row is
    written: what every process of a run works out the same way."""

    model: Any
    data: Any
    device: torch.device
    names: list[str]
    modules: dict[str, torch.nn.Module]
    widths: list[int]
    pooling: list[str]
    num_logits: int | None
    attrs: dict[str, Any]
    batch_size: int
    warnings: list[str]
    # the model's own top-1 per split once the rows are written (own_task); {} where it is not known
    model_top1: dict[str, Any] = field(default_factory=dict)


def prepare(config: ExtractConfig, device: torch.device, *, world_size: int = 1) -> Prepared:
    """Load the model and the data, and fix widths, pooling and attributes from one dry batch."""
    torch.manual_seed(config.seed)
    model = load_model(
        config.model,
        weights=config.weights,
        trust_pickle=config.trust_pickle,
        trust_remote_code=config.trust_remote_code,
        random_init=config.random_init,
        device=str(device),
    )
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
        allow_nonfinite=config.allow_nonfinite,
        batched=True,
    )
    if config.pool == "flatten" and data.kind == "text":
        raise InputError(
            "--pool flatten is not defined for text: each batch is padded to its own longest "
            "text, so flattened widths would vary; use cls, mean, max or last"
        )
    names = model.resolve_layers(config.layers)
    modules = dict(model.module.named_modules())
    compute = autocast_dtype(device, config.amp)
    warnings = [*getattr(model, "warnings", []), *getattr(data, "warnings", []), *amp_warning(compute, config.dtype)]

    # One dry batch fixes the widths, pooling decisions and original shapes before the file exists.
    first = next(iter(data.splits.values()))
    inputs, _, _ = next(iter(first.batches(min(2, first.n))))
    with autocast(device, config.amp), call_order(model.module) as calls:
        raw, logits = model.run(to_device(inputs, device), names)
    warnings += rerun_warning({n: calls.runs[id(modules[n])] for n in names if n in modules})
    names, moved = depth_order(names, list(raw), "the order the model computes them")
    warnings += [moved] if moved else []
    warnings += _logit_layers(names, raw, logits, model.adapter, len(data.class_names))
    num_logits = int(logits.shape[1]) if logits is not None and logits.ndim == 2 else None
    warnings += numbering_warning(num_logits, data.class_names)
    feats, decided, shapes = _pool_batch(config, model, modules, raw, names, inputs)
    types = [module_kind(modules[n]) if n in modules else "hidden_state" for n in names]
    units = unit_sizes(calls, modules, names)
    params, ops, op_shapes = with_units(units, names, parameter_counts(modules, names), types)
    macs = layer_macs(calls, units, {n: modules[n] for n in names if n in modules})
    params, macs = _output_states(model, params, macs, names, inputs)
    file = model_file(config.model)
    listed = data_files(data)  # each file looked at once: both records of the data are of that one look
    content = data_content(data, listed)
    batch = config.batch_size or default_batch_size(model.module, device, calls.largest / min(2, first.n))
    attrs = {
        **artifact_header(),
        "model_spec": config.model,
        "model_source": model.source,
        "weights_path": str(config.weights) if config.weights else None,
        "weights_sha256": model.weights_sha256,
        # model_spec keeps the path as typed: a resume from another folder reads another file of that name
        "model_file": None if file is None else str(file),
        # the files weights_sha256 covers of a python:FILE.py model's code; a python:pkg.module model's,
        # or its installed package's version, which a resume compares beside it
        "model_code": model.code_files or module_code(config.model),
        "layer_names": names,
        "layer_types": types,
        "layer_ops": ops,
        "layer_op_shapes": op_shapes,
        "layer_pooling": [decided[n] for n in names],
        "layer_shapes": [list(shapes[n]) for n in names],
        "layer_params": params,
        "layer_macs": [macs.get(n) for n in names],
        "classifier_inputs": classifier_inputs(calls, logits),
        "layer_roles": {n: r for n, r in getattr(model, "layer_roles", {}).items() if n in names},
        "data_spec": config.data,
        # a relative path in data_spec (csv:text.csv) is read from here: explain finds the input again
        "working_dir": os.getcwd(),
        "transforms": data.transforms,
        "split_info": data.split_info,
        "class_names": data.class_names,
        "seed": config.seed,
        "torch_version": torch.__version__,
        "created_at": utc_now(),
        "command": config.identity(),
        "data_fingerprint": as_started(data_fingerprint(data, listed=listed), data, config.out, content),
        "data_content": content,
        "source_lines": source_lines(data),
        "random_init": bool(getattr(model, "random_init", False)),
        "warnings": warnings,
        "compute_dtype": "float32" if compute is None else f"{_name(compute)} (autocast)",
        "world_size": world_size,
        # what the run was told and what it left to its defaults (resumed runs keep the first run's); where
        # it writes and whether it may replace a cache say nothing of the rows, and differ between two
        # runs that write the same cache (a first run and an --overwrite one)
        "config_defaults": [n for n in defaulted(config) if n not in ("out", "overwrite")],
        "device": str(device),
        "batch_size": batch,  # rows per forward: no number depends on it beyond rounding
    }
    return Prepared(
        model=model,
        data=data,
        device=device,
        names=names,
        modules=modules,
        widths=[int(feats[n].shape[1]) for n in names],
        pooling=[decided[n] for n in names],
        num_logits=num_logits,
        attrs=attrs,
        batch_size=batch,
        warnings=warnings,
    )


def _output_states(
    model: Any, counts: list[int | None], macs: dict[str, int | None], names: list[str], inputs: Any
) -> tuple[list[int | None], dict[str, int | None]]:
    """The cache's ``layer_params`` and the multiply-adds of ``layer_macs``: ``counts`` and ``macs`` (a hooked
    layer's module's, or its unit's); a hidden state read from the output, which no module holds, counted
    from the modules that made it (one more pass on the dry batch, its FLOPs counted)."""
    if not any(n in model.adapter.virtual_names for n in names):
        return counts, macs
    made = output_states(model, inputs)
    return [made.params.get(n, c) for n, c in zip(names, counts)], {**macs, **made.macs}


def _logit_layers(names: list[str], raw: dict[str, Any], logits: Any, adapter: Any, n_classes: int) -> list[str]:
    """The warning for chosen layers that are most likely the model's logits: one value per class and
    what its forward returns (a tuple's ``outputs.K``, or the output the logits are read from)."""

    def returned(name: str) -> bool:
        out = raw.get(name)
        if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[1] != n_classes:
            return False
        if name in adapter.virtual_names:
            return bool(adapter.virtual_returned)
        return is_forward_output(out, logits)

    return logits_warning([n for n in names if returned(n)], n_classes)


def write_cache(
    config: ExtractConfig,
    prep: Prepared,
    path: str | Path,
    splits: dict[str, Any],
    emit: Progress,
    *,
    attrs: dict[str, Any],
    overwrite: bool = False,
) -> tuple[int, dict[str, int], dict[str, int]]:
    """Create or resume the cache ``path`` and run each split's rows not yet in it through the model
    into it, then mark it complete; (rows written, rows found already written per split, non-finite
    values per layer). A layer that gave one row for every input, and two that hold the same values,
    add a warning to the cache's and to ``prep.warnings``; a shard (``attrs`` holds ``shard``) records
    what the first check reads instead (``row_spread``), for the join to decide over all shards."""
    with FeatureWriter(
        path,
        attrs=attrs,
        split_sizes={s: sp.n for s, sp in splits.items()},
        widths=prep.widths,
        num_logits=prep.num_logits,
        dtype=config.dtype,
        overwrite=overwrite,
        allow_nonfinite=config.allow_nonfinite,
    ) as writer:
        prep.warnings += code_unchecked(decode_attr(writer.file.attrs.get("model_code", "")), attrs.get("model_code"))
        written, resumed = _write_rows(config, prep, writer, splits, emit)
        nonfinite = writer.nonfinite()
        if "shard" in attrs:  # one process's rows of a torchrun run: the join decides over every shard
            extra = {
                "row_spread": writer.row_spread(),
                LOGIT_AGREEMENT: writer.logit_agreement(),
                SPLIT_AGREEMENT: writer.split_agreement(),
            }
            writer.finish(extra={k: v for k, v in extra.items() if v is not None})
        else:
            said = constant_warning(writer.constant_layers(), dict(zip(prep.names, prep.pooling)))
            said += duplicate_warning(writer.same_layers())
            top1, near = own_task(prep, splits, writer.split_agreement())
            if prep.num_logits == len(prep.data.class_names):  # another width was said when it was found
                # near chance names a class order unlike the data's among its causes: said once
                said += near or numbering_warning(prep.num_logits, prep.data.class_names, writer.logit_agreement())
            prep.warnings += said
            prep.model_top1 = top1
            writer.finish(warnings=said, extra={MODEL_TOP1: top1} if top1 else None)
    prep.warnings += writer.overwrite_notes  # said at the end of the run; the cache keeps them apart
    return written, resumed, nonfinite


def own_task(
    prep: Prepared, splits: dict[str, Any], counts: dict[str, list[int]] | None
) -> tuple[dict[str, Any], list[str]]:
    """The model's own top-1 agreement with the labels on each split (``counts``: the writer's
    :meth:`~.writer.FeatureWriter.split_agreement`, counted only where its logits are one per class of
    the data), as the cache records it (MODEL_TOP1), and the warning where a split of enough rows
    (:func:`~.writer.enough_rows`) finds it near chance by fit-head's rule against that split's majority
    class: a model that does not do its own task on these inputs makes its layers' rows, and every head
    fitted on them, say little of what it learned."""
    if not counts:
        return {}, []
    n = len(prep.data.class_names)
    record: dict[str, Any] = {}
    low, skewed = [], False
    for split, (hits, rows) in counts.items():
        labels = np.asarray(splits[split].labels)
        labels = labels[labels >= 0]  # the labelled rows the writer counted
        majority = chance_level(labels) if rows else None
        record[split] = {"top1": hits / rows if rows else None, "hits": hits, "rows": rows, "majority": majority}
        if majority is not None and enough_rows(rows, n) and is_near_chance(hits / rows, majority, rows):
            low.append(f"{hits} of {rows} {split} rows ({hits / rows:.3f}, the majority class's share {majority:.3f})")
            # on imbalanced classes accuracy alone cannot tell such a model from one that learnt the rare ones
            skewed |= class_balance(labels, prep.data.class_names)["imbalanced"]
    if not low:
        return record, []
    said = "the model is near chance on its own task: its top class (the cached logits' largest) is the label on "
    if any(CLASSIFIER_NOT_LEARNED_BEFORE in w for w in prep.warnings):
        # an older `laya-inspect train` checkpoint: its classifier had only the joint run's short budget
        return record, [
            f"{said}{' and '.join(low)}. These logits are those of the backbone's own classifier, which an older "
            "`laya-inspect train` refit on the frozen last block with the joint run's --epochs and --lr and warned "
            "did not learn (the warning above): an undertrained classifier, which says nothing of the layers "
            "themselves; train again with this version, which fits it to convergence"
        ]
    if any(CLASSIFIER_NOT_LEARNED in w for w in prep.warnings):
        # a `laya-inspect train` checkpoint: its logits are the classifier train fitted and already warned of
        return record, [
            f"{said}{' and '.join(low)}. These logits are those of the backbone's own classifier, which "
            "`laya-inspect train` fitted on the frozen last block on its own budget and warned did not learn (the "
            "warning above): that block may not separate these classes; the heads fitted on this cache read every "
            "layer, so read their accuracy against chance"
        ]
    return record, [
        f"{said}{' and '.join(low)}, so its layers' rows, and any head fitted on them, may say little of what it "
        "learned"
        + (
            " (on classes this imbalanced accuracy alone cannot tell: read the heads' macro-F1 beside the majority "
            "class's)"
            if skewed
            else ""
        )
        + f". Check whether its inputs are prepared unlike its training ({_preparation(prep.data.transforms)}), "
        "and whether its classes are in another order than the data's (the logits in another class numbering: "
        "logits[:, k] is the model's class k, not class_names[k]; give the data's classes in the model's order)"
    ]


def _preparation(transforms: dict[str, Any]) -> str:
    """What of the inputs' preparation to check against the model's training, with what this cache did."""
    if transforms.get("kind") == "image":
        channels, resize = transforms.get("channels"), transforms.get("resize")
        c = transforms["output"][0]
        colour = f"{channels['from']}→{channels['to']} channels" if channels else f"{c} channel" + "s" * (c != 1)
        norm = transforms.get("normalize") or {}
        told = f"mean {norm['mean']}, std {norm['std']}" if norm.get("applied") else "none"
        h, w = transforms["output"][1:]
        size = ("each image's own" if not isinstance(h, int) else str(h) if h == w else f"{h}×{w}") + " px"
        fit = f"{resize['fit']} from {resize['from']}" if resize else "not resized"
        return (
            f"normalisation mean/std, here {told}: --normalize M/S gives the model's "
            f"own; colour mode, here {colour}; size, here {size} ({fit}): --image-size, --resize"
        )
    if transforms.get("kind") in ("text", "token_ids"):
        vocabulary = transforms.get("tokenizer") or f"a vocabulary of {transforms.get('vocab_size')} words"
        return f"the tokenizer, here {vocabulary}, and the tokens texts are cut at, here {transforms.get('max_length')}"
    return f"their scale and normalisation, here {transforms.get('scale') or 'as given'}"


def _write_rows(
    config: ExtractConfig, prep: Prepared, writer: FeatureWriter, splits: dict[str, Any], emit: Progress
) -> tuple[int, dict[str, int]]:
    written = 0
    resumed: dict[str, int] = {}
    names = prep.names
    for split_name, split in splits.items():
        done = writer.n_written(split_name)
        resumed[split_name] = done
        emit({"event": "split", "split": split_name, "total": split.n, "done": done})
        # image files: the next batch is decoded on another CPU while this one runs (arrays, already
        # decoded, and a single CPU gain nothing from it)
        ahead = 2 if "decode" in prep.data.transforms and usable_cpus() > 1 else 0
        if done:  # rows a killed run wrote: this model must give them again (its code may have changed)
            k = min(done, RECHECK_ROWS)
            inputs, _, _ = next(iter(split.batches(k, start=done - k)))
            fresh, _ = _rows(config, prep, inputs)
            stored = writer.stored(split_name, done - k, done)
            said = recomputed_problem(stored, fresh, names, split_name, done - k, amp=config.amp)
            if said is not None:
                raise CacheError(f"{writer.partial} (an interrupted extraction): {said}")
        with closing(prefetch(split.batches(prep.batch_size, start=done), ahead)) as batches, _resume_hint(writer):
            for inputs, labels, index in batches:
                feats, batch_logits = _rows(config, prep, inputs)
                writer.append(split_name, feats, labels.numpy(), index.numpy(), batch_logits)
                written += len(labels)
                emit({"event": "batch", "split": split_name, "rows": len(labels)})
    return written, resumed


def _rows(config: ExtractConfig, prep: Prepared, inputs: Any) -> tuple[list[np.ndarray], np.ndarray | None]:
    """One batch through the model: each layer's pooled rows (B, D) and the logits (B, C) if cached."""
    with autocast(prep.device, config.amp):
        raw, logits = prep.model.run(to_device(inputs, prep.device), prep.names)
    feats, _, _ = _pool_batch(config, prep.model, prep.modules, raw, prep.names, inputs)
    if prep.num_logits is None:
        return [feats[n].float().cpu().numpy() for n in prep.names], None
    assert logits is not None  # the model gave logits on the dry batch
    return [feats[n].float().cpu().numpy() for n in prep.names], logits.float().cpu().numpy()


@contextmanager
def _resume_hint(writer: FeatureWriter) -> Iterator[None]:
    """An image file that fails to decode mid-run (its header read) stops the run; mending or removing
    it changes the folder, and so the data fingerprint a resume must match: the error says so."""
    try:
        yield
    except ImageFileError as e:
        kept = writer.rows_kept
        what = f"the {kept:,} rows written so far" if kept else "the partial cache, with no rows yet"
        raise ImageFileError(
            f"{e}, then run the same command again with --overwrite: {what} ({writer.partial}) "
            "came from the folder as it was, and a changed folder is not resumed",
            e.path,
        ) from None


def result_of(
    config: ExtractConfig,
    prep: Prepared,
    written: int,
    resumed: dict[str, int],
    nonfinite: dict[str, int],
    seconds: float,
    world_size: int = 1,
) -> ExtractResult:
    warnings = list(prep.warnings)
    if nonfinite:
        warnings.append(f"non-finite activations cached (--allow-nonfinite): {nonfinite}")
    return ExtractResult(
        path=Path(config.out),
        layer_names=prep.names,
        widths=prep.widths,
        pooling=prep.pooling,
        rows={s: sp.n for s, sp in prep.data.splits.items()},
        split_info=dict(prep.data.split_info or {}),
        resumed_from=resumed,
        seconds=seconds,
        rows_per_second=written / seconds if seconds > 0 else float("nan"),
        normalization=describe_normalization(prep.data.transforms),
        warnings=warnings,
        nonfinite=nonfinite,
        batch_size=prep.batch_size,
        world_size=world_size,
        transforms=prep.data.transforms,
        device=str(prep.device),
        layers_how=getattr(prep.model, "default_layers_how", "") if config.layers == "all" else "",
        model_top1=prep.model_top1,
    )


def top1_line(record: dict[str, Any]) -> str:
    """The model's own top-1 (:func:`own_task`'s record) in one line, beside each split's majority class's
    share, which a model that learnt nothing reaches; "" where no split has a labelled row."""
    known = {s: r for s, r in record.items() if r.get("top1") is not None and r.get("majority") is not None}
    if not known:
        return ""
    top1 = " · ".join(f"{s} {r['top1']:.3f}" for s, r in known.items())
    majority = " · ".join(f"{r['majority']:.3f}" for r in known.values())
    return f"the model's own top-1 accuracy: {top1} (majority class {majority})"


# Runs recorded at most: past them (a blank line between every two rows) the rows are named by index.
MAX_LINE_RUNS = 1000


def source_lines(data: Any) -> dict[str, Any] | None:
    """Where the data are a file of lines (CSV, TSV, JSONL), the line each source row starts on, as the
    cache records it so that later commands name a row as extract does: ``file`` (its name) and ``runs``,
    [first source row, its line] where the step between rows and lines changes (a text over several
    lines, a blank line), each row's line being its run's plus the rows since; None otherwise."""
    lines = getattr(data, "lines", None)
    if not lines:
        return None
    runs: list[list[int]] = []
    for row, line in enumerate(lines):
        if not runs or line - row != runs[-1][1] - runs[-1][0]:
            runs.append([row, int(line)])
    # an image list's location is the folder of its images; its lines are of the list, its first file
    file = data.files[0] if getattr(data, "files", None) else data.location
    return {"file": Path(file).name, "runs": runs} if len(runs) <= MAX_LINE_RUNS else None


def describe_normalization(transforms: dict[str, Any]) -> str:
    """What normalisation the inputs got, in words, from the transforms the cache records (an image
    transform's ``normalize`` entry, :func:`~laya_inspect.data.transforms.describe_normalize`)."""
    norm = transforms.get("normalize")
    if norm is None:
        return "none"
    if not norm["applied"]:
        return f"none ({norm['why']})"
    return f"mean {norm['mean']}, std {norm['std']} ({norm['from']})"


@dataclass
class DataFiles:
    """The files behind the data as one run lists them (:func:`data_files`), each looked at once: the
    name the data fingerprint gives it, its path, and its size and modification time (None: gone since
    it was listed), so that every record a run makes of them is of this one listing."""

    names: list[str]
    paths: list[Path]
    stats: list[tuple[int, int] | None]

    def size(self) -> int:
        return sum(st[0] for st in self.stats if st is not None)

    def digest(self, content: bool = False) -> str:
        """The sha256 of each file's name and size and time (``content``: the sha256 of its bytes)."""
        said = [_bytes_said(p) for p in self.paths] if content else [_stat_said(st) for st in self.stats]
        return hashlib.sha256("\n".join(f"{n}\t{s}" for n, s in zip(self.names, said)).encode()).hexdigest()


def data_files(data: Any, *, everything: bool = False) -> DataFiles | None:
    """The files the data fingerprint names: ``data.files`` where the rows are read from a list (named
    relative to the data's folder), else a folder's files (:func:`_folder_files`; ``everything``: every
    file under it, as laya-inspect hashed it before); None where the data are one file or no files."""
    location = Path(getattr(data, "location", "") or "")
    files = None if everything else getattr(data, "files", None)
    if files is not None:
        inside = location.is_dir()
        names = [os.path.relpath(f, location) if inside else str(f) for f in files]
        paths = [Path(f) for f in files]
    elif str(location) not in ("", ".") and location.is_dir():
        paths = _folder_files(location, everything)
        names = [str(f.relative_to(location)) for f in paths]
    else:
        return None
    return DataFiles(names, paths, [_stat(f) for f in paths])


def data_content(data: Any, listed: DataFiles | None) -> str:
    """The data fingerprint with the files' bytes in place of their sizes and times (what a resume
    falls back to where those differ: a file only touched, or copied without its times, is the same
    data); "" where the fingerprint hashes bytes already (one file), reads no files (``listed``, of
    :func:`data_files`, None), or where the files hold more than :data:`~.partial.CONTENT_CAP` bytes."""
    if listed is None or listed.size() > partial.CONTENT_CAP:
        return ""
    return data_fingerprint(data, content=True, listed=listed)


def data_fingerprint(data: Any, *, legacy: bool = False, content: bool = False, listed: DataFiles | None = None) -> str:
    """A hash of what the rows come from, so a resumed run can tell that the data changed: the files
    behind the spec (content of a file; names, sizes and times of the files the rows are read from,
    ``data.files``, or of a folder's files less laya-inspect's own), each split's planned labels and
    rows, and the transformed inputs of each split's first rows. ``legacy``: every file under the
    folder, as laya-inspect hashed it before (:func:`as_started`); ``content``: the files' bytes in place
    of their sizes and times (:func:`data_content`); ``listed``: the files :func:`data_files` listed
    already for this run (else listed now)."""
    h = hashlib.sha256()
    location = Path(getattr(data, "location", "") or "")
    if legacy or listed is None:
        listed = data_files(data, everything=legacy)
    if listed is not None:
        h.update(listed.digest(content).encode())
    elif str(location) not in ("", ".") and location.is_file():
        h.update(sha256_file(location).encode())
    for name, split in data.splits.items():
        h.update(name.encode())
        h.update(np.ascontiguousarray(split.labels, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(split.index, dtype=np.int64).tobytes())
        if split.n:
            inputs, _, _ = next(iter(split.batches(min(8, split.n))))
            for t in inputs.values() if isinstance(inputs, dict) else [inputs]:
                h.update(np.ascontiguousarray(torch.as_tensor(t).float().cpu().numpy()).tobytes())
    return h.hexdigest()[:16]


def as_started(fingerprint: str, data: Any, out: str | Path, content: str = "") -> str:
    """The data fingerprint this run records: ``fingerprint``, or where ``<out>.partial`` records another
    of these very files (the same bytes, :func:`data_content`, or a laya-inspect that hashed every file
    under the data's folder), that one, so that the interrupted extraction resumes (other data is still
    refused)."""
    file = partial_path(out)
    return started_as(
        fingerprint, data, recorded_fingerprint(file), content, recorded_fingerprint(file, "data_content")
    )


def started_as(fingerprint: str, data: Any, started: str | None, content: str = "", started_content: Any = None) -> str:
    """``started``, the data fingerprint an interrupted extraction records, where it is of these very files:
    their bytes are the ones it recorded (``content`` equals ``started_content``: only the sizes' and
    times' record differs), or a laya-inspect that hashed every file under the data's folder recorded
    it; else ``fingerprint`` (this version's), which a resume then compares with ``started`` and refuses
    where they differ."""
    if started is None or started == fingerprint or getattr(data, "location", "") in ("", "."):
        return fingerprint
    if content and content == started_content:
        return started
    if str(getattr(data, "spec", "")).strip().lower().startswith("imagecsv"):
        # no released laya-inspect read imagecsv: its folder (maybe a home) is not walked to refuse the run
        return fingerprint
    return started if data_fingerprint(data, legacy=True) == started else fingerprint


def recorded_fingerprint(path: Path, key: str = "data_fingerprint") -> str | None:
    """The data fingerprint (``key``: or its data_content) the cache file ``path`` (a partial one, a
    shard) records; None where there is none, or none to read."""
    import h5py

    if path.is_symlink() or not path.is_file() or not_a_cache(path) is not None:
        return None
    try:
        with h5py.File(path, "r", locking=False) as f:
            value = f.attrs.get(key)
    except (OSError, KeyError, ValueError):
        return None
    return value if isinstance(value, str) and value else None


# What laya-inspect itself writes beside an output (<out>.partial, <out>.shards and its .partial and .old
# folders, the hidden .<out>.lock and .<out>.old-PID, <out>.tmp-PID-CHECK): written into the data's folder,
# they must not make the data read as changed, or a killed run could never resume.
_OURS = re.compile(r"\..*|.*\.tmp-.*|.*\.(partial|shards|shards\.old)")


def _stat(file: Path) -> tuple[int, int] | None:
    try:
        st = file.stat()
    except OSError:  # gone since it was listed: reading it refuses the run
        return None
    return st.st_size, st.st_mtime_ns


def _stat_said(st: tuple[int, int] | None) -> str:
    return "absent" if st is None else f"{st[0]}\t{st[1]}"


def _bytes_said(file: Path) -> str:
    try:
        return sha256_file(file)
    except OSError:
        return "absent"


def _folder_files(path: Path, everything: bool = False) -> list[Path]:
    """A folder's files, less (unless ``everything``) hidden ones and laya-inspect's own (:data:`_OURS`),
    in the order every earlier laya-inspect hashed them in."""
    return [
        p
        for p in sorted(path.rglob("*"))
        if (everything or not any(_OURS.fullmatch(part) for part in p.relative_to(path).parts)) and p.is_file()
    ]


def autocast_dtype(device: torch.device, on: bool) -> torch.dtype | None:
    """The dtype --amp runs the backbone forward in on ``device`` (bfloat16; float16 on a GPU without
    bfloat16), None without --amp."""
    if not on:
        return None
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        return torch.float16
    return torch.bfloat16


def autocast(device: torch.device, on: bool) -> Any:
    """Autocast for the backbone forward with --amp (:func:`autocast_dtype`); rows are stored as
    --dtype all the same, since HDF5 has no bfloat16."""
    dtype = autocast_dtype(device, on)
    if dtype is None:
        return nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def amp_warning(compute: torch.dtype | None, stored: str) -> list[str]:
    """The warning an --amp cache records: its rows are not the float32 features, and what that cost
    where it was measured."""
    if compute is None:
        return []
    name = _name(compute)
    return [
        f"--amp: the backbone ran under {name} autocast, so the cached layers and logits hold values computed "
        f"in {name} (stored as {stored}), not the float32 features: {AMP_COST}. The cache's fingerprint says so, "
        "and a head fitted on it is another cache's head to a float32 cache of the same options, and the other "
        "way round. Run extract without --amp for float32 features"
    ]


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def default_batch_size(module: torch.nn.Module, device: torch.device, row_bytes: float) -> int:
    """Rows per forward when none are asked for, given the bytes one row's largest activation takes
    (``row_bytes``): see ACTIVATION_BUDGET."""
    from torch import nn

    convs = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
    if device.type != "cpu" or row_bytes <= 0 or not any(isinstance(m, convs) for m in module.modules()):
        return DEFAULT_BATCH
    batch = DEFAULT_BATCH
    while batch > MIN_CPU_BATCH and batch * row_bytes > ACTIVATION_BUDGET:
        batch //= 2
    return batch


def _pool_batch(
    config: ExtractConfig, model: Any, modules: Any, raw: dict[str, Any], names: list[str], inputs: Any
) -> tuple[dict[str, torch.Tensor], dict[str, str], dict[str, tuple[int, ...]]]:
    """Pool one batch as every batch of the cache is pooled: --pool, the model's rule for token
    sequences (LoadedModel.sequence_for), the padding mask and image size of these inputs."""
    sequence = {n: model.sequence_for(n) for n in names}
    mask = inputs.get("attention_mask") if isinstance(inputs, dict) else None  # padding that pooling skips
    return reduce_batch(raw, names, config.pool, modules, mask=mask, sequence=sequence, image_hw=image_size_of(inputs))


def to_device(inputs: Any, device: torch.device) -> Any:
    """Inputs onto ``device``; to a GPU from pinned memory without waiting, so the copy overlaps."""
    if isinstance(inputs, dict):
        return {k: to_device(v, device) for k, v in inputs.items()}
    if device.type == "cuda" and inputs.device.type == "cpu":
        return inputs.pin_memory().to(device, non_blocking=True)
    return inputs.to(device)
