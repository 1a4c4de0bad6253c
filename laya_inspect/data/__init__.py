"""Datasets, splits and input transforms: ``load_data(spec, ...) -> DataBundle``.

Specs (registry :data:`DATASETS`; nothing is ever downloaded):

=========================  ===================================================================
``fashion-mnist[:ROOT]``   IDX files; default ROOT /usr/share/datasets/fashion-mnist (Debian)
``cifar10[:ROOT]``         official python batches, or ROOT/{train,test}/<class>/*.jpg
``digits``                 scikit-learn's 8x8 digits, seeded stratified train/test split
``imagefolder:DIR``        DIR/<class>/* (seeded split) or DIR/<split>/<class>/*, read lazily
``npz:FILE``               X, y or X_<split>, y_<split>: images or (N, D) vectors
``csv:FILE`` ``jsonl:FILE``  text tables; options ``?text_col=…&label_col=…&split_col=…``
``imagecsv:FILE``          image paths (relative to FILE's folder) and labels in a CSV/TSV/JSONL;
                           options ``?path_col=…&label_col=…&split_col=…``
=========================  ===================================================================

Datasets without native splits get ``train``/``test`` from a seeded stratified split
(``test_fraction``); ``limit`` keeps a seeded stratified subset of each requested split. Both are
recorded in ``DataBundle.split_info``; what was done to the inputs is in ``DataBundle.transforms``
(normalisation included, also when none was applied); what the user should hear about (no
normalisation known, a class with no rows in a split, NaN features kept) is in
``DataBundle.warnings``. A bad file or value is a :class:`~laya_inspect.errors.LayaError` naming it.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import numpy as np
import torch

from ..errors import InputError, NotFoundError, suggest
from ..registry import Registry
from .base import DatasetKind, Source, stratified_split, stratified_subset
from .checks import (
    check_labels,
    empty_classes,
    float_images,
    one_class_dominates,
    stretched_images,
    unread_spellings,
    unstratified,
)
from .headers import (
    FileHeader,
    converted_warning,
    enlarged_warning,
    paged_warning,
    refuse_mixed_sizes,
    refuse_unreadable,
)
from .imagecsv import IMAGE_CSV_OPTIONS, image_paths, load_imagecsv
from .images import load_imagefolder
from .npz import load_npz
from .sources import load_cifar10, load_digits_source, load_fashion_mnist
from .text import TEXT_OPTIONS, load_csv, load_jsonl
from .text_checks import cut_texts, repeated_texts, token_counts, unknown_texts
from .transforms import DEFAULT_MAX_LENGTH, ImageTransform, TextTransform, VectorTransform, plan_image_transform
from .words import TokenIdTransform, WordVocab

__all__ = [
    "DATASETS",
    "DataBundle",
    "DatasetKind",
    "ImageTransform",
    "Split",
    "WordVocab",
    "load_data",
    "parse_spec",
    "plan_image_transform",
    "raw_texts",
    "stratified_split",
    "stratified_subset",
]

log = logging.getLogger(__name__)

DATASETS: Registry[DatasetKind] = Registry("dataset")
DATASETS.add("fashion-mnist", DatasetKind(load_fashion_mnist, "optional", "fashion-mnist[:ROOT]"))
DATASETS.add("cifar10", DatasetKind(load_cifar10, "optional", "cifar10[:ROOT]"))
DATASETS.add("digits", DatasetKind(load_digits_source, "none", "digits"))
DATASETS.add("imagefolder", DatasetKind(load_imagefolder, "required", "imagefolder:DIR"))
DATASETS.add("npz", DatasetKind(load_npz, "required", "npz:FILE"))
DATASETS.add("csv", DatasetKind(load_csv, "required", "csv:FILE[?text_col=…&label_col=…]", TEXT_OPTIONS))
DATASETS.add("jsonl", DatasetKind(load_jsonl, "required", "jsonl:FILE[?text_col=…&label_col=…]", TEXT_OPTIONS))
DATASETS.add(
    "imagecsv", DatasetKind(load_imagecsv, "required", "imagecsv:FILE[?path_col=…&label_col=…]", IMAGE_CSV_OPTIONS)
)


@dataclass
class Split:
    """One split after ``limit``: ``n`` samples, ``labels`` (N,) int64, ``index`` (N,) source rows."""

    name: str
    labels: np.ndarray
    index: np.ndarray
    fetch: Callable[[np.ndarray], Any] = field(repr=False)  # source rows -> transformed inputs

    @property
    def n(self) -> int:
        return int(len(self.labels))

    def batches(self, batch_size: int = 256, start: int = 0) -> Iterator[tuple[Any, torch.Tensor, torch.Tensor]]:
        """Yield ``(inputs, labels (B,) long, index (B,) long)`` in order from row ``start``, inputs transformed.

        Inputs are float images (B, C, H, W), float vectors (B, D), or a dict of tokenizer tensors.
        Rows before ``start`` are not loaded, so a resumed extraction skips them for free.
        """
        if int(batch_size) < 1:
            raise InputError(f"batch size must be at least 1, got {batch_size!r}")
        for first in range(int(start), self.n, int(batch_size)):
            rows = self.index[first : first + int(batch_size)]
            labels = self.labels[first : first + int(batch_size)]
            yield self.fetch(rows), torch.from_numpy(labels.copy()), torch.from_numpy(rows.copy())


@dataclass
class DataBundle:
    """A loaded dataset spec: its splits, class names, and JSON descriptions of transforms and splits."""

    spec: str
    splits: dict[str, Split]
    class_names: list[str]
    transforms: dict
    split_info: dict
    kind: str = "image"  # "image" | "vector" | "text"
    location: str = ""
    files: list[str] | None = None  # the files the rows are read from (Source.files)
    lines: list[int] | None = None  # the file line of each source row (Source.lines), where the source is one file
    warnings: list[str] = field(default_factory=list)  # one line each, for the user (printed, stored)

    @property
    def num_classes(self) -> int:
        return len(self.class_names)


def parse_spec(spec: str) -> tuple[str, str | None, dict[str, str]]:
    """``"prefix[:arg][?k=v&…]"`` → (prefix, arg or None, options), checked against :data:`DATASETS`."""
    text = str(spec).strip()
    main, _, query = text.partition("?")
    prefix, _, raw_arg = main.partition(":")
    prefix = prefix.strip().lower()
    if prefix == "tsv" and prefix not in DATASETS:
        raise NotFoundError(
            f"no dataset 'tsv' ({text!r}): csv:FILE.tsv reads a tab-separated file (a name ending in .tsv), "
            "imagecsv:FILE.tsv one of image paths"
        )
    kind = DATASETS.get(prefix)  # NotFoundError with close matches
    arg = raw_arg.strip() or None
    if kind.arg == "required" and arg is None:
        raise InputError(f"dataset spec {text!r} needs a path: {kind.usage}")
    if kind.arg == "none" and arg is not None:
        raise InputError(f"dataset {prefix!r} takes no path, got {text!r}: use {kind.usage}")
    try:
        options = dict(parse_qsl(query, keep_blank_values=False, strict_parsing=True)) if query else {}
    except ValueError:
        raise InputError(f"dataset spec {text!r}: options must read ?key=value&key=value") from None
    for key in options:
        if key == "path_col" and prefix in ("csv", "jsonl"):
            raise InputError(
                f"dataset {prefix!r} reads texts, not image paths: read them with imagecsv:FILE?path_col=…"
            )
        if key not in kind.options:
            raise InputError(
                f"dataset {prefix!r} has no option {key!r}; "
                f"{suggest(key, kind.options) if kind.options else 'it takes no options'}"
            )
    return prefix, arg, options


def _split_names(splits: str | Sequence[str]) -> list[str]:
    names = [s.strip() for s in splits.split(",")] if isinstance(splits, str) else [str(s) for s in splits]
    names = list(dict.fromkeys(s for s in names if s))
    if not names:
        raise InputError("no splits requested")
    return names


def _plan_transform(
    src: Source,
    spec: str,
    *,
    input_spec: Any,
    tokenizer: Any,
    image_size: Any,
    normalize: Any,
    resize: str | None = None,
) -> Any:
    model_kind = getattr(input_spec, "kind", None)
    if src.kind == "text":
        if model_kind == "image":
            raise InputError(f"dataset {spec!r} is text but the model takes images; {_image_hint(src)}")
        if image_size is not None or normalize is not None or resize not in (None, "stretch"):
            raise InputError(f"dataset {spec!r} is text: image size, resize and normalize do not apply")
        max_length = int(getattr(input_spec, "max_length", None) or DEFAULT_MAX_LENGTH)
        if model_kind == "tokens":
            if not isinstance(tokenizer, WordVocab):
                raise InputError(
                    "this model reads word ids (zoo:bilstm): it needs the word vocabulary that "
                    "`laya-inspect train` writes into its checkpoint; pass --weights with such a "
                    "checkpoint, or train one: laya-inspect train --model zoo:bilstm --data csv:FILE"
                )
            return TokenIdTransform(tokenizer, max_length)
        if tokenizer is None:
            raise InputError(
                f"dataset {spec!r} is text: it needs a tokenizer, i.e. an hf: text model "
                "(e.g. --model hf:DIR with its tokenizer files)"
            )
        return TextTransform(tokenizer, max_length, getattr(input_spec, "padding", None))
    if model_kind in ("text", "tokens"):
        raise InputError(f"dataset {spec!r} holds {src.kind}s but the model takes text; use csv:FILE or jsonl:FILE")
    if src.kind == "vector":
        if image_size is not None or resize not in (None, "stretch"):
            raise InputError(f"dataset {spec!r} holds (N, D) vectors: an image size or resize does not apply")
        if normalize is not None and not (isinstance(normalize, str) and normalize.strip().lower() == "none"):
            raise InputError(f"dataset {spec!r} holds (N, D) vectors: normalize applies to images only")
        return VectorTransform(src.native["dim"], src.native["scale"])
    return plan_image_transform(
        src.native, input_spec=input_spec, image_size=image_size, normalize=normalize, resize=resize or "stretch"
    )


def _image_hint(src: Source) -> str:
    """What to do when a table of texts meets an image model: read its paths as images when they are."""
    first = src.open(src.split_names[0])
    assert first.rows is not None  # SplitSource.__post_init__ fills rows
    how = "imagecsv:FILE?path_col=COLUMN&label_col=COLUMN (a CSV, TSV or JSONL; paths relative to its folder)"
    if image_paths(list(first.fetch(first.rows[:100]))):
        return f"its texts are image file paths: read the images with {how}"
    return f"use an hf: text model, or, for a table of image file paths, {how}"


def _limited(
    labels: np.ndarray, rows: np.ndarray, limit: int | None, seed: int
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    info: dict[str, Any] = {"n_source": int(len(labels)), "n": int(len(labels))}
    if limit is not None and int(limit) < len(labels):
        keep = stratified_subset(labels, int(limit), seed=int(seed))
        labels, rows = labels[keep], rows[keep]
        info.update(n=int(len(labels)), limit=int(limit), subset="seeded stratified", seed=int(seed))
    return labels, rows, info


def raw_texts(
    spec: str, split: str = "train", *, limit: int | None = None, seed: int = 0, test_fraction: float = 0.2
) -> list[str]:
    """The untransformed texts of one split of a text dataset, the rows ``load_data`` would give with
    the same arguments (to fit a word vocabulary on the training texts)."""
    prefix, arg, options = parse_spec(spec)
    src = DATASETS.get(prefix).load(arg, options, seed=int(seed), test_fraction=_fraction(test_fraction))
    if src.kind != "text":
        raise InputError(f"dataset {spec!r} holds {src.kind}s, not texts")
    if split not in src.split_names:
        raise NotFoundError(f"no split {split!r} in dataset {spec!r}; {suggest(split, src.split_names)}")
    part = src.open(split)
    assert part.rows is not None  # SplitSource.__post_init__ fills rows
    _, rows, _ = _limited(part.labels, part.rows, limit, seed)
    return list(part.fetch(rows))


def load_data(
    spec: str,
    *,
    splits: str | Sequence[str] = ("train", "test"),
    limit: int | None = None,
    seed: int = 0,
    input_spec: Any = None,
    tokenizer: Any = None,
    image_size: Any = None,
    normalize: Any = None,
    resize: str | None = None,
    test_fraction: float = 0.2,
    allow_nonfinite: bool = False,
    batched: bool = False,
) -> DataBundle:
    """Load ``spec`` and prepare ``splits`` for a model that wants ``input_spec``.

    ``input_spec`` is duck-typed (``kind``, ``channels``, ``size``, ``mean``, ``std``,
    ``max_length``; None: images only scaled to [0, 1] at native channels and size).
    ``image_size`` (int or (H, W)) overrides ``input_spec.size``; ``normalize`` ("none",
    "imagenet" or a (mean, std) pair) overrides its mean/std; ``resize`` "stretch" or "crop"
    (torchvision's evaluation recipe: shorter side to size/0.875, centre crop) says how images reach
    the target size (None: stretch, with a warning when that changes images' aspect ratio).
    ``limit`` keeps a seeded stratified subset of at most that many samples per split. Image files
    are decoded one by one to ``input_spec.channels``. NaN/Inf features are an InputError unless
    ``allow_nonfinite`` (then kept, with a warning). ``batched``: the rows will be stacked into
    batches (extract), so image files of several sizes with no target size (``input_spec`` states
    none, no ``image_size``) are refused before any is decoded; read one at a time, each keeps its own.
    """
    if limit is not None:
        try:
            n = operator.index(limit) if not isinstance(limit, bool) else 0
        except TypeError:
            n = 0
        if n < 1:
            raise InputError(f"limit must be a positive number of samples, got {limit!r}")
        limit = n
    prefix, arg, options = parse_spec(spec)
    src = DATASETS.get(prefix).load(
        arg,
        options,
        seed=int(seed),
        test_fraction=_fraction(test_fraction),
        channels=getattr(input_spec, "channels", None) if getattr(input_spec, "kind", "image") == "image" else None,
        allow_nonfinite=bool(allow_nonfinite),
    )
    names = _split_names(splits)
    for name in names:
        if name not in src.split_names:
            raise NotFoundError(f"no split {name!r} in dataset {spec!r}; {suggest(name, src.split_names)}")
    transform = _plan_transform(
        src, spec, input_spec=input_spec, tokenizer=tokenizer, image_size=image_size, normalize=normalize, resize=resize
    )
    parts = {name: src.open(name) for name in names}
    warnings = list(src.warnings)
    warnings += unread_spellings(spec, names, src.split_names, lambda s: len(src.open(s).labels))
    warnings += unstratified(
        spec,
        list(src.class_names),
        src.split_info,
        lambda: np.concatenate([src.open(s).labels for s in src.split_names]),
    )
    source = {n: p.labels for n, p in parts.items()}
    warnings += check_labels(spec, list(src.class_names), source)
    warnings += float_images(spec, src.native, transform if isinstance(transform, ImageTransform) else None)
    if isinstance(transform, ImageTransform) and transform.normalize_from == "unknown":
        warnings.append(
            "no normalisation applied: the model does not state the mean/std its inputs need (8-bit pixels are "
            "scaled to [0, 1], float arrays fed as they are); if it was trained on normalised images pass "
            "--normalize imagenet or --normalize M1,M2,M3/S1,S2,S3 (--normalize none confirms that none is right)"
        )
    out: dict[str, Split] = {}
    per_split: dict[str, dict] = {}
    headers: list[FileHeader] = []  # of every image file to be read, before any is decoded
    texts: dict[str, list[str]] = {}
    for name, part in parts.items():
        assert part.rows is not None  # SplitSource.__post_init__ fills rows
        labels, rows, info = _limited(part.labels, part.rows, limit, seed)
        per_split[name] = info
        if part.headers is not None:
            headers += part.headers(rows)

        def fetch(q: np.ndarray, f: Callable[[np.ndarray], Any] = part.fetch) -> Any:
            return transform(f(q))

        out[name] = Split(name=name, labels=labels, index=rows, fetch=fetch)
        if src.kind == "text":
            texts[name] = list(part.fetch(rows))
        if isinstance(transform, TextTransform):
            counts = token_counts(texts[name], transform.tokenizer)  # one tokenisation for both checks
            warnings += cut_texts(spec, name, counts, transform.max_length)
            unk = str(getattr(transform.tokenizer, "unk_token", None))
            warnings += unknown_texts(spec, name, counts, rows, unk, lines=src.lines)
    warnings += repeated_texts(spec, texts, {n: s.labels for n, s in out.items()})
    if src.row_warnings is not None:  # of the rows in use only: "1 of 123 rows" must not count rows --limit left out
        warnings += src.row_warnings(np.unique(np.concatenate([s.index for s in out.values()])))
    refuse_unreadable(f"dataset {spec!r}", src.location, headers)
    if batched and isinstance(transform, ImageTransform) and transform.size is None:
        refuse_mixed_sizes(f"dataset {spec!r}", src.location, headers)
    warnings += paged_warning(f"dataset {spec!r}", src.location, headers)
    warnings += converted_warning(f"dataset {spec!r}", src.location, headers, src.native.get("channels"))
    if isinstance(transform, ImageTransform):
        warnings += enlarged_warning(f"dataset {spec!r}", src.location, headers, transform.size)
    if isinstance(transform, ImageTransform) and resize is None:
        sizes = [h.size for h in headers]
        warnings += stretched_images(spec, transform, src.native, sizes, getattr(input_spec, "resize", None))
    log.info(
        "dataset %s (%s): %s",
        spec,
        src.location,
        ", ".join(f"{k} {v['n']}/{v['n_source']}" for k, v in per_split.items()),
    )
    kept = {n: s.labels for n, s in out.items()}
    return DataBundle(
        spec=str(spec).strip(),
        splits=out,
        class_names=list(src.class_names),
        transforms=transform.describe(),
        split_info={**src.split_info, "splits": per_split},
        kind=src.kind,
        location=src.location,
        files=src.files,
        lines=src.lines,
        warnings=warnings
        + empty_classes(spec, list(src.class_names), source, kept, src.split_info)
        + one_class_dominates(spec, list(src.class_names), kept),
    )


def _fraction(test_fraction: Any) -> float:
    try:
        value = float(test_fraction)
    except (TypeError, ValueError):
        raise InputError(f"test_fraction must be a number between 0 and 1, got {test_fraction!r}") from None
    return value
