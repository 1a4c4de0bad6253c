"""Checks on the labels and images of the requested splits, once a dataset is loaded: errors for what
cannot be right, warnings (``DataBundle.warnings``) for what the user may mean. The texts' own checks
are in text_checks.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import InputError
from .transforms import CROP_FRACTION


def _names(class_names: list[str], idx: list[int], limit: int = 5) -> str:
    shown = ", ".join(repr(class_names[i]) for i in idx[:limit])
    return shown + (", …" if len(idx) > limit else "")


def _classes(class_names: list[str], idx: list[int]) -> str:
    return f"class{'es' * (len(idx) > 1)} {_names(class_names, idx)}"


def _has(idx: list[int]) -> str:
    return "have" if len(idx) > 1 else "has"


def check_labels(spec: str, class_names: list[str], source: dict[str, np.ndarray]) -> list[str]:
    """Labels of each requested split as the source has them (before ``limit``): every label is a
    class index, the data has two classes or more; warns about classes no split has."""
    n_classes = len(class_names)
    if n_classes < 2:
        raise InputError(
            f"dataset {spec!r} has {n_classes} class{'' if n_classes == 1 else 'es'} "
            f"({_names(class_names, list(range(n_classes)))}); a classifier needs at least two"
        )
    for split, labels in source.items():
        if not len(labels):
            raise InputError(f"dataset {spec!r}: split {split!r} has no rows")
        outside = (labels < 0) | (labels >= n_classes)
        if outside.any():
            v = int(labels[np.argmax(outside)])
            raise InputError(
                f"dataset {spec!r}: label {v} in split {split!r} is outside the class list: valid labels are "
                f"0..{n_classes - 1} ({n_classes} classes); {int(outside.sum())} labels outside it"
            )
    seen = np.unique(np.concatenate(list(source.values())))
    splits = ", ".join(repr(s) for s in source)
    if len(seen) < 2:
        raise InputError(
            f"dataset {spec!r}: every row of split {splits} has the class {class_names[int(seen[0])]!r}; "
            "a classifier needs rows of at least two classes"
        )
    said = _spelled_twice(spec, class_names)
    absent = sorted(set(range(n_classes)) - set(seen.tolist()))
    if not absent:
        return said
    implicit = class_names == [str(i) for i in range(n_classes)]
    if implicit and len(absent) > len(seen):  # e.g. labels 1000–1009: a 1010-class head for 10 classes
        raise InputError(
            f"dataset {spec!r}: labels {_span(seen)} are read as class indices 0..{n_classes - 1}, so "
            f"{len(absent)} of the {n_classes} classes would have no rows; renumber the labels from 0, or write "
            "the classes as words" + (" (or store class_names beside them)" if spec.startswith("npz:") else "")
        )
    hint = (
        f"integer labels are read as class indices 0..{n_classes - 1}: renumber them if only {len(seen)} classes exist"
        if implicit
        else "their scores are undefined"
    )
    return [
        *said,
        f"dataset {spec!r}: {_classes(class_names, absent)} ({len(absent)} of {n_classes}) {_has(absent)} no rows "
        f"in split {splits}; {hint}",
    ]


def _spelled_twice(spec: str, class_names: list[str]) -> list[str]:
    """A warning for class names that differ only in case or spacing ('science', 'SCIENCE'): most
    likely one class written two ways, which the head would learn as two."""
    by_key: dict[str, list[str]] = {}
    for name in class_names:
        by_key.setdefault(_spelling(name), []).append(str(name))
    twice = [names for names in by_key.values() if len(names) > 1]
    if not twice:
        return []
    shown = "; ".join(" and ".join(repr(n) for n in names) for names in twice[:5])
    return [
        f"dataset {spec!r}: class names that differ only in case or spacing ({shown}) are read as different "
        "classes; if each is one class written two ways, give its labels one spelling"
    ]


def unstratified(spec: str, class_names: list[str], info: dict, labels: Callable[[], np.ndarray]) -> list[str]:
    """A warning when the seeded train/test split fell back to a random one (``info["stratified"]``
    False): only classes of one row, or fewer rows on a side than classes, so the classes' shares in
    each split are left to chance; or when classes of one row were put on one side
    (``info["single_row_classes"]``), so they are missing from the other. ``labels()``: every row the
    split was drawn from, read only for the random split."""
    singles = info.get("single_row_classes")
    if singles:
        side = "training" if info.get("single_rows_in") == "train" else "test"
        none = "test" if side == "training" else "training"
        they, them = ("they have", "them") if len(singles) > 1 else ("it has", "it")
        # empty_classes leaves these classes to this line, so it says what that line would have said
        unlearnable = "" if none == "test" else f", so no head fitted on the training rows can predict {them}"
        return [
            f"dataset {spec!r}: {_classes(class_names, singles)} {_has(singles)} a single row, put with the "
            f"{side} rows (the other classes are stratified): {they} no {none} row{unlearnable}; add rows, or "
            "give the split yourself (train/ and test/ folders, a split column)"
        ]
    if info.get("stratified") is not False:
        return []
    ids, counts = np.unique(labels(), return_counts=True)
    single = [int(c) for c, k in zip(ids, counts) if k == 1]
    why = (
        f"{_classes(class_names, single)} {_has(single)} a single row"
        if single
        else f"the test or training rows are fewer than the {len(ids)} classes"
    )
    return [
        f"dataset {spec!r}: the train/test split is random, not stratified, as {why}: each class's share of "
        "the test rows is left to chance; add rows, or give the split yourself (train/ and test/ folders, a "
        "split column)"
    ]


def _spelling(name: str) -> str:
    """What two spellings of one name share once case and spacing are set aside."""
    return " ".join(str(name).split()).casefold()


def unread_spellings(spec: str, requested: list[str], available: list[str], rows: Callable[[str], int]) -> list[str]:
    """A warning for each split of the source that is not read but differs from a requested one only
    in case or spacing ('Test' beside 'test' in a split column): most likely rows of that split
    written another way, which --split leaves out. ``rows(split)`` counts a split's rows."""
    wanted = {_spelling(s): s for s in requested}
    return [
        f"dataset {spec!r}: split {s!r} ({rows(s)} rows) is not read: it differs from the requested split "
        f"{wanted[_spelling(s)]!r} only in case or spacing; if they are one split, give it one spelling, "
        f"or name both in --split"
        for s in available
        if s not in requested and _spelling(s) in wanted
    ]


def _span(values: np.ndarray) -> str:
    v = [int(x) for x in values]
    return f"{v[0]}–{v[-1]}" if len(v) > 3 else ", ".join(map(str, v))


def empty_classes(
    spec: str, class_names: list[str], source: dict[str, np.ndarray], kept: dict, info: dict
) -> list[str]:
    """A warning for each split (after the seeded split and ``limit``) that lacks a class the
    requested splits have somewhere, leaving out the classes of one row that :func:`unstratified`
    names already (``info``: the source's split_info)."""
    seen = set(np.unique(np.concatenate(list(source.values()))).tolist())
    out = []
    for split, labels in kept.items():
        said = info.get("single_row_classes") or [] if split != info.get("single_rows_in") else []
        missing = sorted(seen - set(np.unique(labels).tolist()) - set(said))
        if missing:
            # a class the training split lacks is one no head fitted on it can ever predict
            why = (
                "a head fitted on it can never predict them, and their test rows all count as misses"
                if split == "train"
                else "its per-class scores there are undefined"
            )
            out.append(
                f"dataset {spec!r}: {_classes(class_names, missing)} ({len(missing)} of {len(class_names)}) "
                f"{_has(missing)} no rows in split {split!r} (after splitting and --limit); {why}"
            )
    return out


MAJORITY_SHARE = 0.95  # a split this much one class: accuracy near 1 says little about the others


def one_class_dominates(spec: str, class_names: list[str], kept: dict[str, np.ndarray]) -> list[str]:
    """A warning for each split (after the seeded split and ``limit``) where one class holds at least
    MAJORITY_SHARE of the rows: always answering it scores that share as accuracy, and the other
    classes' scores (macro-F1, recall) rest on the few rows left, which the warning counts."""
    out = []
    for split, labels in kept.items():
        if not len(labels):
            continue
        counts = np.bincount(labels, minlength=len(class_names))
        top = int(counts.argmax())
        share = counts[top] / len(labels)
        if share < MAJORITY_SHARE:
            continue
        rest = len(labels) - int(counts[top])
        out.append(
            f"dataset {spec!r}: split {split!r} is {share:.1%} class {class_names[top]!r} ({counts[top]} of "
            f"{len(labels)} rows, {rest} of the other classes): always answering {class_names[top]!r} scores "
            f"{share:.3f} accuracy there; read its accuracies against that share and its macro-F1, whose other "
            f"classes rest on {rest} row{'s' * (rest != 1)}"
        )
    return out


def float_images(spec: str, native: dict, transform: Any) -> list[str]:
    """A warning when float images (fed as they are, read as pixels in [0, 1]) are not in [0, 1]:
    0–255 pixels or larger raw intensities stored as floats, or images normalised already (unless
    --normalize none says so)."""
    value_range = native.get("value_range")
    if not value_range or transform is None:
        return []
    lo, hi = (float(v) for v in value_range)
    if lo >= -1e-6 and hi <= 1 + 1e-6:
        return []
    where = (
        f"dataset {spec!r} holds float images in [{lo:.4g}, {hi:.4g}], not pixels in [0, 1]; float inputs are "
        "fed as they are"
    )
    if lo >= -1e-6 and hi < 128:  # far below 255: another scale (scikit-learn's digits run 0–16)
        return [
            f"{where}: values up to {hi:.4g} are not [0, 1] pixels and, far below 255, hardly 0–255 ones: divide "
            f"by their scale's maximum ({hi:.4g} here, if that is it), or by 255 if they are 0–255 pixels"
        ]
    if lo >= -1e-6 and hi <= 255 + 1e-3:
        return [
            f"{where}: values up to 255 look like 0–255 pixels; store them as uint8 (scaled by 1/255) or divide by 255"
        ]
    if lo >= -1e-6:  # nothing below 0: not mean-subtracted, whatever --normalize says
        return [
            f"{where}: values from 0 to above 255 are raw intensities (16-bit pixels reach 65535), not normalised "
            "inputs (those centre on 0); scale them to [0, 1] by the sensor's full scale (16-bit pixels: divide "
            "by 65535; 12-bit: by 4095)"
        ]
    if transform.mean is not None:
        return [
            f"{where}, and normalised again with the {transform.normalize_from} mean/std: if they are normalised "
            "already, pass --normalize none"
        ]
    if transform.normalize_from == "option":  # --normalize none: the user says they are ready
        return []
    return [f"{where}: they look normalised already; --normalize none confirms that nothing more is applied"]


# Images whose aspect ratio --resize stretch changes by more than this factor are counted as distorted.
STRETCH_TOLERANCE = 1.1


def stretched_images(
    spec: str, transform: Any, native: dict, read: list[tuple[int, int] | None], own: str | None = None
) -> list[str]:
    """A warning when the default ``--resize stretch`` changes the aspect ratio of images: the model
    sees them squeezed. ``read``: the (H, W) of every image file read, from its header (None: not
    readable; empty for arrays, whose size is ``native["size"]``): every file's, as a single odd photo
    among thousands of squares is what a sample misses; ``own``: how the model's own
    preprocessing resizes (InputSpec.resize; "stretch": no warning)."""
    if transform.size is None or transform.resize != "stretch" or own == "stretch":
        return []
    th, tw = transform.size
    if native.get("size"):
        h, w = native["size"]
        found: list[tuple[int, int] | None] = [(h, w)]
        counted = f"its images ({h}×{w}, height×width)"
    else:
        found = list(read)
        counted = ""
    sizes = [hw for hw in found if hw is not None and min(hw) > 0]
    bent = [(h, w) for h, w in sizes if max(w / h * th / tw, h / w * tw / th) > STRETCH_TOLERANCE]
    side = int(max(th, tw) / CROP_FRACTION)
    if not bent and own == "crop" and sizes:
        # images of the input's own shape still differ: the model was evaluated on their centre only
        return [
            f"dataset {spec!r}: the model's own preprocessing takes the centre {th}×{tw} of each image after "
            f"bringing its shorter side to {side}; --resize stretch, the default, feeds the whole image at "
            f"{th}×{tw} instead, so its rows are not those of the model's evaluation. Pass --resize crop to "
            "match it, or --resize stretch to confirm the stretch"
        ]
    if not bent:
        return []
    if not counted:
        shown = ", ".join(f"{h}×{w}" for h, w in sorted(set(bent))[:3])
        counted = f"{len(bent)} of {len(sizes)} images read (headers only; height×width e.g. {shown})"
    why = (
        "the model's own preprocessing keeps the aspect ratio (shorter side, then the centre)"
        if own == "crop"
        else "a model trained on undistorted images may read them differently"
    )
    return [
        f"dataset {spec!r}: {counted} have another aspect ratio than the model's {th}×{tw} input; "
        f"--resize stretch, the default, squeezes them to {th}×{tw}, and {why}. Pass --resize crop (shorter "
        f"side to {side}, then the centre {th}×{tw}: torchvision's evaluation recipe for pretrained models) to "
        "keep the aspect ratio, or --resize stretch to confirm the stretch"
    ]


def copied_across_classes(root: str, found: dict[tuple[str, str], list[tuple[str, str]]], *, where: str) -> list[str]:
    """A warning when one split holds the same bytes under two classes (a scraped image saved twice, a
    file copied into the wrong class folder or CSV line): one input read under two labels. Links are
    said by the listing; this finds copies. Only files of one size are read, so a folder of distinct
    JPEGs costs one stat per file. ``found``: (split, class) → its (path, real path) files, named
    relative to ``root``; ``where``: what the warning names (the image folder, the CSV)."""
    import hashlib
    import os

    from .headers import relative

    by_size: dict[tuple[str, int], list[tuple[str, str, str]]] = {}
    for (split, label), files in found.items():
        for path, real in files:
            try:
                by_size.setdefault((split, os.path.getsize(real)), []).append((label, path, real))
            except OSError:  # a dangling link: refuse_unreadable names it
                continue
    pairs = []
    for same_size in by_size.values():
        if len({label for label, _, _ in same_size}) < 2:
            continue
        seen: dict[bytes, tuple[str, str, str]] = {}
        for label, path, real in same_size:
            try:
                with open(real, "rb") as f:
                    digest = hashlib.blake2b(f.read(), digest_size=16).digest()
            except OSError:  # unreadable: refuse_unreadable names it
                continue
            first = seen.setdefault(digest, (label, path, real))
            if first[0] != label and first[2] != real:  # the same real file is a link, said elsewhere
                pairs.append((first[1], path))
    if not pairs:
        return []
    shown = ", ".join(f"{relative(a, root)} = {relative(b, root)}" for a, b in sorted(pairs)[:3])
    return [
        f"{where}: {len(pairs)} file(s) are byte-for-byte copies of a file filed under a different "
        f"class in the same split ({shown}{', …' if len(pairs) > 3 else ''}): one image read under two labels; remove "
        "the copy where the image does not belong"
    ]
