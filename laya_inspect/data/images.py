"""Image sources: in-memory arrays (what ``npz:FILE`` and the named datasets hold) and folders of
image files (``imagefolder:DIR``).

``imagefolder:DIR`` takes either class folders (``DIR/<class>/*.png``; split into train/test by a
seeded stratified split) or split folders of class folders (``DIR/{train,test,val…}/<class>/…``).
Only file paths are listed up front; images are read with PIL one batch at a time, turned upright
by their EXIF orientation and each converted on its own to the model's channels (:func:`read_image`;
a model that does not say gets RGB if any file is in colour, else greyscale). Class names are the
sorted folder names (as torchvision's ``ImageFolder``), shared by all splits.

Listing a class folder follows links to files and folders, but leaves out hidden files and folders
(names starting with '.': thumbnails, notebook checkpoints, macOS '._' sidecars), links that loop
back above themselves, links into another class folder (their images would take this class's label),
and a second path to a file already listed in the class; each is said in a warning.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import ImageFileError, InputError, few
from .base import Source, SplitSource, composed, read_failed, stratified_split, user_path
from .checks import copied_across_classes
from .headers import (
    ALPHA_MODES,
    SHOWN,
    FileHeader,
    file_header,
    folder_channels,
    open_image,
    orientation,
    pil_errors,
    relative,
    transparent,
    unreadable,
)
from .jpeg import refuse_damaged

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
# Images in formats not read: a folder holding them gets a warning (other files are passed over quietly).
OTHER_IMAGES: tuple[str, ...] = (".gif", ".jfif", ".jpe", ".pbm", ".pnm", ".heic", ".heif", ".avif", ".jxl", ".jp2")
OTHER_IMAGES += (".j2k", ".ico", ".tga", ".psd", ".svg", ".dng", ".cr2", ".nef", ".arw", ".exr", ".hdr")
SPLIT_NAMES = ("train", "training", "test", "testing", "val", "valid", "validation", "dev", "eval")


# ----------------------------------------------------------------------------- arrays
def images_nchw(x: np.ndarray, *, where: str) -> np.ndarray:
    """(N, H, W), (N, H, W, C) or (N, C, H, W) → (N, C, H, W), uint8 or float32 (a view if possible)."""
    if x.ndim == 3:
        x = x[:, None]
    elif x.ndim == 4:
        if x.shape[1] not in (1, 3, 4) and x.shape[-1] in (1, 3, 4):
            x = x.transpose(0, 3, 1, 2)
        elif x.shape[1] not in (1, 3, 4):
            raise InputError(
                f"{where}: cannot tell the channel axis of images shaped {x.shape} "
                "(expected (N, H, W, C) or (N, C, H, W) with C in 1, 3, 4)"
            )
    else:
        raise InputError(f"{where}: expected images (N, H, W[, C]) or vectors (N, D), got shape {x.shape}")
    return _pixel_dtype(x, where)


def _pixel_dtype(x: np.ndarray, where: str) -> np.ndarray:
    if x.dtype == np.uint8 or np.issubdtype(x.dtype, np.floating):
        with np.errstate(over="ignore"):  # float64 beyond float32's range becomes inf, refused or kept after
            return x if x.dtype != np.float64 else x.astype(np.float32)
    if np.issubdtype(x.dtype, np.integer) or x.dtype == np.bool_:
        if x.size and (x.min() < 0 or x.max() > 255):
            deeper = f" (e.g. X.astype('float32') / {np.iinfo(x.dtype).max})" if x.max() > 255 else ""
            raise InputError(
                f"{where}: integer pixels must lie in 0..255, got {x.min()}..{x.max()} ({x.dtype}); store "
                f"deeper images as float in 0..1{deeper}, which are fed as they are"
            )
        return x.astype(np.uint8) if x.dtype != np.bool_ else x.astype(np.float32)
    raise InputError(f"{where}: unsupported array dtype {x.dtype}")


def _describe_arrays(x: np.ndarray, scale: str | None) -> tuple[str, dict]:
    native: dict[str, Any]
    if x.ndim == 2:
        kind, native = "vector", {"dim": int(x.shape[1])}
    else:
        kind, native = "image", {"channels": int(x.shape[1]), "size": tuple(int(s) for s in x.shape[2:])}
    native["scale"] = scale or ("uint8/255" if x.dtype == np.uint8 else "none (float input kept as is)")
    return kind, native


def _rows_of(x: np.ndarray):  # noqa: ANN202
    return lambda rows: torch.from_numpy(np.ascontiguousarray(x[rows]))


def array_source(
    arrays: dict[str, tuple[np.ndarray, np.ndarray]],
    class_names: list[str],
    *,
    location: str,
    seed: int = 0,
    test_fraction: float = 0.2,
    scale: str | None = None,
) -> Source:
    """A Source over in-memory arrays, X (N, C, H, W) images or (N, D) vectors: ``{split: (X, labels)}``
    with native splits, or ``{"": (X, labels)}``, one pool split into train/test by a seeded
    stratified split (rows index the pool)."""
    first = next(iter(arrays.values()))[0]
    for name, (x, _) in arrays.items():
        if x.shape[1:] != first.shape[1:]:
            raise InputError(f"{location}: split {name!r} has inputs shaped {x.shape[1:]}, others {first.shape[1:]}")
    kind, native = _describe_arrays(first, scale)
    if "" in arrays:
        x, y = arrays[""]
        rows, info = stratified_split(y, test_fraction=test_fraction, seed=seed)
        open_split = lambda s: SplitSource(labels=y[rows[s]], rows=rows[s], fetch=_rows_of(x))  # noqa: E731
    else:
        rows, info = {s: a[1] for s, a in arrays.items()}, {"method": "native"}
        open_split = lambda s: SplitSource(labels=arrays[s][1], fetch=_rows_of(arrays[s][0]))  # noqa: E731
    return Source(
        kind=kind,
        class_names=class_names,
        split_names=list(rows),
        open=open_split,
        split_info=info,
        native=native,
        location=location,
    )


# ----------------------------------------------------------------------------- image files
# Each file is converted on its own, so a folder that mixes greyscale and colour photos gives every
# photo the same pixels whatever file comes first:
#
# - colour (RGB, CMYK, YCbCr, LAB, HSV, palette P) → RGB with PIL's converters; to greyscale with
#   PIL's ``convert("L")`` (ITU-R 601-2 luma, 299/1000 R + 587/1000 G + 114/1000 B, what
#   torchvision's ``Grayscale`` does to a PIL image);
# - alpha (RGBA, LA, PA; P, L, RGB, 1 or 16-bit greyscale with one colour marked transparent) →
#   composited on white first;
# - 1-bit and 8-bit greyscale (1, L) → replicated to RGB when the model takes three channels;
# - 16-bit greyscale (I;16, and I when its values fit 0..65535) → value / 65535 as float32, never
#   through 8 bits; 32-bit float (F) kept as is when it lies in [0, 1].
#
# 8-bit results are uint8 tensors (C, H, W); 16-bit and float ones are float32 in [0, 1].

WIDE_MODES = ("I", "I;16", "I;16L", "I;16B", "I;16N", "F")  # more than 8 bits: never through uint8
DECODE = (
    "each file converted on its own with PIL: EXIF orientation applied first (upright as a viewer "
    "shows it), alpha composited on white, palette and CMYK to RGB, "
    "RGB to greyscale by PIL's ITU-R 601-2 luma, greyscale replicated to RGB, 16-bit greyscale / 65535"
)


def read_image(path: str, channels: int) -> torch.Tensor:
    """One image file → (channels, H, W): uint8, or float32 in [0, 1] for 16-bit and float files."""
    if channels not in (1, 3):
        raise InputError(f"image files are read as greyscale (1) or RGB (3) channels, not {channels}")
    try:
        with open_image(path) as im:
            if im.format in ("JPEG", "MPO"):  # an MPO's first image is a JPEG, read from the file's start
                refuse_damaged(path)
            im = _upright(im, path)
            if im.mode in WIDE_MODES:
                plane = torch.from_numpy(_wide(im, path))[None]
                return plane.repeat(channels, 1, 1) if channels == 3 else plane
            arr = np.asarray(_on_white(im).convert("L" if channels == 1 else "RGB"), dtype=np.uint8)
    except pil_errors() as e:
        raise unreadable(path, e) from None
    t = torch.from_numpy(arr.copy())
    return t[None] if t.ndim == 2 else t.permute(2, 0, 1).contiguous()


def _upright(im: Any, path: str) -> Any:
    """The image as a viewer shows it: phone cameras store a photo sideways and say so in its EXIF
    orientation, so it is applied before anything else (a copy only for an image that needs turning).
    PIL's own table of turns, without ImageOps.exif_transpose, which re-writes the EXIF and fails on
    a damaged entry that does not stop the pixels from being read."""
    from PIL import Image

    shown = im.size  # a TIFF says its upright size when opened: PIL turns its pixels on load
    im.load()  # a PNG's EXIF may follow its pixels
    if im.size != shown:
        # Pillow 13 turns a greyscale (8- or 16-bit) TIFF of orientation 5-8 into a buffer of the wrong
        # shape: its pixels come out scrambled, so they are refused, never read as they came
        import PIL

        raise ImageFileError(
            f"{path}: Pillow {PIL.__version__} reads this {im.mode} TIFF, turned by its EXIF orientation, "
            f"as {im.size[0]}×{im.size[1]} where its header says {shown[0]}×{shown[1]}: its pixels come out "
            "scrambled; save it upright (orientation 1), or as PNG",
            path,
        )
    turn = {
        2: Image.Transpose.FLIP_LEFT_RIGHT,
        3: Image.Transpose.ROTATE_180,
        4: Image.Transpose.FLIP_TOP_BOTTOM,
        5: Image.Transpose.TRANSPOSE,
        6: Image.Transpose.ROTATE_270,
        7: Image.Transpose.TRANSVERSE,
        8: Image.Transpose.ROTATE_90,
    }.get(orientation(im))
    return im if turn is None else im.transpose(turn)


def _on_white(im: Any) -> Any:
    from PIL import Image

    if im.mode == "P" or "transparency" in im.info:  # PIL's convert reads the colour marked transparent
        im = im.convert("RGBA" if transparent(im) else "RGB")
    if im.mode not in ALPHA_MODES:
        return im
    rgba = im.convert("RGBA")
    white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    return Image.alpha_composite(white, rgba).convert("RGB")


def _wide(im: Any, path: str) -> np.ndarray:
    arr = np.asarray(im)
    if im.mode == "F":
        arr = arr.astype(np.float32)
        if arr.size and not (np.isfinite(arr).all() and arr.min() >= 0.0 and arr.max() <= 1.0):
            raise ImageFileError(
                f"{path}: 32-bit float pixels must lie in [0, 1], got {np.nanmin(arr)}..{np.nanmax(arr)} "
                "(NaN or infinite included); rescale the file or save it with 8 or 16 bits",
                path,
            )
        return arr
    values = arr.astype(np.int64)
    if values.size and (values.min() < 0 or values.max() > 65535):
        raise ImageFileError(
            f"{path}: integer pixels {values.min()}..{values.max()} do not fit 16 bits (0..65535); "
            "save the file with 8 or 16 bits",
            path,
        )
    key = im.info.get("transparency")
    if isinstance(key, int):  # a 16-bit greyscale PNG's tRNS value: composited on white as 8-bit files are
        values = np.where(values == key, 65535, values)
    return (values / 65535.0).astype(np.float32)


# ----------------------------------------------------------------------------- image folders
def _subdirs(d: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(d) if e.is_dir() and not e.name.startswith("."))
    except OSError as e:
        raise read_failed(e) from None


def _holds_images(d: Path) -> bool:
    try:
        return any(e.name.lower().endswith(IMG_EXTENSIONS) and not e.name.startswith(".") for e in os.scandir(d))
    except OSError as e:
        raise read_failed(e) from None


@dataclass
class Skipped:
    """What listing the class folders left out, each kept for the warning that says so."""

    formats: Counter[str] = field(default_factory=Counter)  # images in formats not read, by extension
    bare: list[str] = field(
        default_factory=list
    )  # files with no extension (paths): images saved without one are not read
    hidden_files: list[str] = field(default_factory=list)  # image files named '.…' (paths)
    hidden_folders: list[str] = field(default_factory=list)  # folders named '.…' (not entered)
    loops: list[str] = field(default_factory=list)  # linked folders that lead back above themselves
    crossings: list[str] = field(default_factory=list)  # linked folders that lead into another class folder
    repeats: list[str] = field(default_factory=list)  # paths reaching a file listed already in the class (links)
    loose: list[str] = field(default_factory=list)  # image files beside the class folders, in no class (paths)
    # class folders with no image of their own whose images lie in two or more sub-folders: (folder, sub-folders)
    nested: list[tuple[str, list[str]]] = field(default_factory=list)
    # sub-folders of the other class folders whose images joined the class: (sub-folder, images, class)
    merged: list[tuple[str, int, str]] = field(default_factory=list)


def _within(path: str, folder: str) -> bool:
    """Whether the real path ``path`` is ``folder`` or lies below it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _real(e: os.DirEntry, parent: str) -> str:
    """The real path of an entry of the folder whose real path is ``parent`` (one lookup, for links only)."""
    return os.path.realpath(e.path) if e.is_symlink() else os.path.join(parent, e.name)


def _image_files(d: Path, skipped: Skipped, *, classes: frozenset[str]) -> list[tuple[str, str]]:
    """The image files below the class folder ``d``, (path, real path), in the order of a sorted ``os.walk`` (folders by
    path, files by name), following links; what is left out is recorded in ``skipped``. ``classes``:
    the real paths of every class folder of every split.

    A linked folder is not entered when its real path is at or above a folder being walked (a loop:
    ``ln -s . dog/self`` once listed dog's images 41 times) or at, above or below another class folder
    (its images would take this class's label); a file reached twice in the class is listed once."""
    top = os.path.realpath(d)
    others = [c for c in classes if c != top]
    found: list[tuple[str, list[tuple[str, str]]]] = []  # (folder, [(path, real path)])

    def walk(folder: str, chain: tuple[str, ...]) -> None:  # chain: real paths from d down to folder
        files = []
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            image = e.name.lower().endswith(IMG_EXTENSIONS)
            if e.name.startswith("."):
                if e.is_dir():
                    skipped.hidden_folders.append(e.path)
                elif image or e.name.lower().endswith(OTHER_IMAGES):
                    skipped.hidden_files.append(e.path)
            elif e.is_dir():
                real = _real(e, chain[-1])
                if e.is_symlink() and any(_within(c, real) for c in chain):
                    skipped.loops.append(e.path)
                elif e.is_symlink() and any(_within(real, o) or _within(o, real) for o in others):
                    skipped.crossings.append(e.path)
                else:
                    walk(e.path, (*chain, real))
            elif image:
                files.append((e.path, _real(e, chain[-1])))
            elif e.name.lower().endswith(OTHER_IMAGES):
                skipped.formats[os.path.splitext(e.name)[1].lower()] += 1
            elif "." not in e.name and e.is_file():
                skipped.bare.append(e.path)
        found.append((folder, files))

    try:
        walk(str(d), (top,))
    except OSError as e:
        raise read_failed(e) from None
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for _, files in sorted(found, key=lambda f: f[0]):
        for path, real in files:
            if real in seen:
                skipped.repeats.append(path)
            else:
                seen.add(real)
                out.append((path, real))
    return out


def _shared_files(root: Path, groups: dict[tuple[str, str], list[tuple[str, str]]]) -> list[str]:
    """A warning for each way one file stands in two folders, through a link to a file or to a whole
    class folder: under two classes of a split (one image, two labels), and under two splits (a test
    row the heads are trained on). ``groups``: (split, class) → its (path, real path) files."""
    where: dict[str, list[tuple[str, str, str]]] = {}
    for (split, label), files in groups.items():
        for path, real in files:
            where.setdefault(real, []).append((split, label, path))
    labels, splits = [], []
    for places in where.values():
        (s0, _, p0), rest = places[0], places[1:]
        other_split = [p for s, _, p in rest if s != s0]
        if other_split:
            splits.append(f"{relative(p0, root)} and {relative(other_split[0], root)}")
        two = [(a, b) for k, (s, c, a) in enumerate(places) for s2, c2, b in places[k + 1 :] if s == s2 and c != c2]
        if two:
            labels.append(f"{relative(two[0][0], root)} and {relative(two[0][1], root)}")
    out = []
    if labels:
        out.append(
            f"image folder {root}: {len(labels)} file(s) stand in two class folders through links (e.g. "
            f"{labels[0]} are one file), so one image is read under two labels; remove the link where the image "
            "does not belong"
        )
    if splits:
        out.append(
            f"image folder {root}: {len(splits)} file(s) stand in two split folders through links (e.g. "
            f"{splits[0]} are one file): the heads are tested on rows they were trained on, and the test "
            "accuracies are partly training accuracies; remove the links, or copy the files that belong in both"
        )
    return out


def _some(root: Path, paths: list[str]) -> str:
    """Up to three of ``paths``, relative to ``root``, for a one-line message."""
    shown = ", ".join(relative(p, root) for p in paths[:3])
    return shown + (", …" if len(paths) > 3 else "")


def _loose_images(folders: list[Path]) -> list[str]:
    """The image files directly in ``folders`` (the root, the split folders): no class folder holds them,
    so no label is theirs."""
    try:
        return sorted(
            e.path
            for d in folders
            for e in os.scandir(d)
            if e.name.lower().endswith(IMG_EXTENSIONS) and not e.name.startswith(".") and e.is_file()
        )
    except OSError as e:
        raise read_failed(e) from None


def _skipped_warning(root: Path, skipped: Skipped) -> list[str]:
    where = f"image folder {root}"
    out = []
    if skipped.nested:
        folder, subs = skipped.nested[0]
        out.append(
            f"{where}: {len(skipped.nested)} class folder(s) hold no image of their own, only sub-folders, and "
            f"each is read as one class (e.g. {relative(folder, root)}/: {few(subs, 3)} all read as class "
            f"{os.path.basename(folder)!r}); if the sub-folders are the classes, give imagefolder: the folder that "
            "holds them, or move them up a level"
        )
    if skipped.merged:
        shown = [f"{relative(sub, root)}/: {n} into {label!r}" for sub, n, label in skipped.merged]
        out.append(
            f"{where}: {sum(n for _, n, _ in skipped.merged)} image(s) in sub-folders of class folders are read as "
            f"the class that holds them ({few(shown, SHOWN)}); if a sub-folder is a class of its own, move it up "
            "beside the class folders, and move out the images that belong to no class"
        )
    if skipped.loose:
        out.append(
            f"{where}: {len(skipped.loose)} image file(s) outside the class folders left out "
            f"({_some(root, skipped.loose)}): a row's label is the name of the folder that holds it "
            "(DIR/<class>/<image> or DIR/<split>/<class>/<image>); move them into their class folder to include them"
        )
    if skipped.formats:
        kinds = ", ".join(f"{ext} {n}" for ext, n in skipped.formats.most_common())
        out.append(
            f"{where}: {sum(skipped.formats.values())} image(s) in the class folders are not read ({kinds}): "
            f"the formats read are {', '.join(IMG_EXTENSIONS)}; convert the others to PNG or JPEG to include them"
        )
    if skipped.bare:
        out.append(
            f"{where}: {len(skipped.bare)} file(s) in the class folders have no extension and are not read "
            f"({_some(root, skipped.bare)}): a file is read by its name's extension ({', '.join(IMG_EXTENSIONS)}); "
            "if they are images, name them so to include them"
        )
    hidden = skipped.hidden_files + skipped.hidden_folders
    if hidden:
        counts = [
            f"{len(v)} hidden {k}"
            for k, v in (("image file(s)", skipped.hidden_files), ("folder(s)", skipped.hidden_folders))
            if v
        ]
        out.append(
            f"{where}: {' and '.join(counts)} (names starting with '.') in the class folders left out "
            f"({_some(root, hidden)}): thumbnails, notebook checkpoints and macOS '._' files are not photos; "
            "rename a file without the leading '.' to include it"
        )
    if skipped.loops:
        out.append(
            f"{where}: {len(skipped.loops)} linked folder(s) that loop back to a folder above them not followed "
            f"({_some(root, skipped.loops)}): following them would list the same images again and again"
        )
    if skipped.crossings:
        out.append(
            f"{where}: {len(skipped.crossings)} linked folder(s) that lead into another class folder not followed "
            f"({_some(root, skipped.crossings)}), so no image takes a second label; copy the images there if "
            "they belong to both classes"
        )
    if skipped.repeats:
        out.append(
            f"{where}: {len(skipped.repeats)} file(s) reached a second time within one class folder through links "
            f"({_some(root, skipped.repeats)}) listed once; remove the extra links to silence this"
        )
    return out


def file_split(
    files: list[str],
    labels: np.ndarray,
    channels: int,
    rows: np.ndarray | None = None,
    read: dict[str, FileHeader] | None = None,
) -> SplitSource:
    def fetch(q: np.ndarray) -> list[torch.Tensor]:
        return [read_image(files[i], channels) for i in q.tolist()]

    def headers(q: np.ndarray) -> list[FileHeader]:
        # a header folder_channels read is taken once (popped: the listing need not hold them all)
        known = read if read is not None else {}
        return [known.pop(files[i]) if files[i] in known else file_header(files[i]) for i in q.tolist()]

    return SplitSource(labels=labels if rows is None else labels[rows], rows=rows, fetch=fetch, headers=headers)


TEXT_FILES = (".txt", ".text", ".md")


def _texts_hint(groups: dict[str, Path]) -> str:
    """What to add when class folders hold text files: imagefolder reads images only."""
    try:
        found = any(
            e.name.lower().endswith(TEXT_FILES) for d in groups.values() for c in _subdirs(d) for e in os.scandir(d / c)
        )
    except OSError:
        return ""
    if not found:
        return ""
    return (
        "; they hold text files, which imagefolder: does not read: put the texts and their labels in a CSV "
        "(csv:FILE?text_col=…&label_col=…) or a JSONL file (jsonl:FILE) and use an hf: text model"
    )


def load_imagefolder(
    arg: str, options: dict, *, seed: int, test_fraction: float, channels: int | None = None, **_unused: Any
) -> Source:
    root = user_path(arg, folder=True, what="image folder")
    top = _subdirs(root)
    # split folders hold class folders: a class folder named "train" (of trains, in sub-folders too)
    # beside "bus" and "car" holds its own images, and is a class, not a split
    named = [s for s in top if s.lower() in SPLIT_NAMES and _subdirs(root / s)]
    splits = named and (len(named) == len(top) or any(not _holds_images(root / s) for s in named))
    split_dirs = [s for s in top if _subdirs(root / s)] if splits else []
    split_dirs.sort(key=lambda s: (SPLIT_NAMES.index(s.lower()) if s.lower() in SPLIT_NAMES else 99, s))
    groups = {s: root / s for s in split_dirs} if split_dirs else {"": root}
    # a class is its name as composed Unicode (NFC): macOS writes names decomposed (NFD), so a folder
    # copied from a Mac beside one made here holds two spellings of "café" that print alike
    class_names = sorted({composed(c) for d in groups.values() for c in _subdirs(d)})
    if not class_names:
        raise InputError(f"{root}: no class folders (expected DIR/<class>/<image> or DIR/<split>/<class>/<image>)")
    lookup = {c: i for i, c in enumerate(class_names)}
    listed: dict[str, tuple[list[str], np.ndarray]] = {}
    skipped = Skipped(loose=_loose_images([root, *(d for d in groups.values() if d != root)]))
    classes = frozenset(os.path.realpath(d / c) for d in groups.values() for c in _subdirs(d))
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for s, d in groups.items():
        split_files: list[str] = []
        split_labels: list[int] = []
        for c in _subdirs(d):
            found[s, c] = _image_files(d / c, skipped, classes=classes)
            inner = [os.path.relpath(path, d / c) for path, _ in found[s, c]]
            below = Counter(rel.split(os.sep)[0] for rel in inner if os.sep in rel)  # images per sub-folder
            if len(below) > 1 and not _holds_images(d / c):
                skipped.nested.append((str(d / c), sorted(below)))
            else:
                skipped.merged += [(str(d / c / sub), n, composed(c)) for sub, n in sorted(below.items())]
            split_files += [path for path, _ in found[s, c]]
            split_labels += [lookup[composed(c)]] * len(found[s, c])
        listed[s] = (split_files, np.array(split_labels, dtype=np.int64))
    every = [f for files, _ in listed.values() for f in files]
    if not every:
        raise InputError(
            f"{root}: no image files ({', '.join(IMG_EXTENSIONS)}) in the class folders{_texts_hint(groups)}"
        )
    # The model's channels when it says (each file converted to them); otherwise the folder's own,
    # decided from every file so that no file's place in the listing changes another's pixels.
    read: dict[str, FileHeader] = {}  # the headers folder_channels read, for the check before any work
    chans = channels if channels in (1, 3) else folder_channels(every, read)
    native = {"channels": chans, "size": None, "scale": "uint8/255 (16-bit: /65535)", "decode": DECODE}
    if split_dirs:
        split_names, info = split_dirs, {"method": "native"}
        open_split = lambda s: file_split(*listed[s], chans, read=read)  # noqa: E731
    else:
        files, labels = listed[""]
        rows, info = stratified_split(labels, test_fraction=test_fraction, seed=seed)
        split_names = ["train", "test"]
        open_split = lambda s: file_split(files, labels, chans, rows[s], read)  # noqa: E731
    return Source(
        kind="image",
        class_names=class_names,
        split_names=split_names,
        open=open_split,
        split_info=info,
        native=native,
        location=str(root),
        files=every,
        warnings=_skipped_warning(root, skipped)
        + _shared_files(root, found)
        + copied_across_classes(str(root), found, where=f"image folder {root}"),
    )
