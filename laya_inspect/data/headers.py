"""Image files read as far as their header, no pixels decoded: the size a file decodes to (after its
EXIF orientation), its channels, and a TIFF's pages. ``load_data`` reads the header of every file it
will decode before any work (:func:`file_header`), so that the files that cannot be opened are named
all at once (:func:`refuse_unreadable`) and a TIFF of several pages, of which only the first is read,
is said (:func:`paged_warning`). A file whose header reads but whose pixels do not (a JPEG cut short,
or damaged in its middle: :mod:`.jpeg`) is found only when its batch is decoded."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ImageFileError, InputError, few

GREY_MODES = ("1", "L", "LA", "La", "I", "I;16", "I;16L", "I;16B", "I;16N", "F")
ALPHA_MODES = ("RGBA", "RGBa", "LA", "La", "PA")  # composited on white when read (images.py)
ORIENTATION = 0x0112  # the EXIF tag that says how a camera's stored pixels are turned to be upright
_SIDEWAYS = (5, 6, 7, 8)  # ... of which these swap width and height
SHOWN = 5  # files named in one message


def unreadable(path: str, e: BaseException) -> ImageFileError:
    return ImageFileError(f"cannot read image {path!r}: {e or type(e).__name__}; replace or remove the file", path)


def pil_errors() -> tuple[type[BaseException], ...]:
    """What PIL raises on a file it cannot open or decode."""
    from PIL import Image

    return (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError)


@contextmanager
def quiet_bomb() -> Iterator[None]:
    """PIL's DecompressionBombWarning silenced: it names no file and reaches neither the cache nor the
    report, so :func:`enlarged_warning` names the files over PIL's pixel limit instead."""
    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        yield


def open_image(path: str) -> Any:
    from PIL import Image

    try:
        with quiet_bomb():
            return Image.open(path)
    except pil_errors() as e:
        raise unreadable(path, e) from None


@dataclass(frozen=True)
class FileHeader:
    """What an image file's header says. ``size``: (H, W) as :func:`~.images.read_image` gives it,
    None when the header cannot be read (``problem`` says why); ``pages``: a TIFF's pages, its
    reduced-resolution copies aside (the first page is the one read); ``channels``: 1 for a greyscale
    file, 3 for any other (palette files count as colour); ``alpha``: the file has transparency that
    reading composites on white (an alpha channel, or a colour marked transparent); ``cmyk``: its pixels
    are CMYK (print files), converted to RGB when read."""

    path: str
    size: tuple[int, int] | None
    problem: str = ""
    pages: int = 1
    channels: int = 3
    alpha: bool = False
    cmyk: bool = False


def transparent(im: Any) -> bool:
    """Whether an open image has transparency that reading composites on white: an alpha channel, or one
    colour marked transparent (a PNG's tRNS chunk, which greyscale, RGB and palette files may carry)."""
    return im.mode in ALPHA_MODES or "transparency" in im.info


def file_header(path: str) -> FileHeader:
    """The header of one file, never raising: a file that cannot be opened gets ``size`` None."""
    from PIL import Image, UnidentifiedImageError

    try:
        if os.path.getsize(path) == 0:
            return FileHeader(path, None, "empty, 0 bytes")
        with quiet_bomb(), Image.open(path) as im:
            h, w = int(im.height), int(im.width)
            size = (w, h) if header_orientation(im) in _SIDEWAYS else (h, w)
            channels = 1 if im.mode in GREY_MODES else 3
            alpha, cmyk = transparent(im), im.mode == "CMYK"
            return FileHeader(path, size, pages=_pages(im), channels=channels, alpha=alpha, cmyk=cmyk)
    except UnidentifiedImageError:
        return FileHeader(path, None, "not an image PIL can identify")
    except Image.DecompressionBombError as e:
        return FileHeader(path, None, _beyond_limit(e))
    except pil_errors() as e:
        if gone := dangling(path):  # "No such file" would hide that the name is there
            return FileHeader(path, None, gone)
        return FileHeader(path, None, getattr(e, "strerror", None) or str(e) or type(e).__name__)


def _beyond_limit(e: BaseException) -> str:
    """Why PIL refuses a file of more than twice ``Image.MAX_IMAGE_PIXELS``: said with the limit and the
    way out, not as PIL's "could be decompression bomb DOS attack"."""
    import re

    from PIL import Image

    found = re.search(r"\((\d+) pixels\)", str(e))
    pixels = f"{int(found.group(1)):,} pixels" if found else "its pixels"
    return (
        f"{pixels}, beyond the {2 * (Image.MAX_IMAGE_PIXELS or 0):,} (twice PIL.Image.MAX_IMAGE_PIXELS) that PIL "
        "refuses to decode, as a guard against decompression bombs; shrink it first"
    )


def _pages(im: Any) -> int:
    """A TIFF's pages, without the reduced-resolution copies (thumbnails) some writers add; 1 for any
    other format (a camera's MPO JPEG holds a preview after the photo, read first as it should be)."""
    if im.format != "TIFF":
        return 1
    try:
        frames = int(getattr(im, "n_frames", 1))
        if frames <= 1:
            return 1
        pages = 0
        for i in range(frames):  # each page's directory only; no pixels
            im.seek(i)
            pages += not int(im.tag_v2.get(254, 0)) & 1  # NewSubfileType bit 0: a reduced-resolution copy
        return max(pages, 1)
    except pil_errors():  # a damaged directory after the first page: the first reads all the same
        return 1


def header_orientation(im: Any) -> Any:
    # PIL decodes a PNG's pixels to look for an eXIf chunk after them; PIL and cameras write it before
    # them, so a PNG whose header has none is taken as upright here rather than decoded. PIL opens a
    # TIFF already turned.
    if (im.format == "PNG" and "exif" not in im.info) or im.format == "TIFF":
        return 1
    return orientation(im)


def orientation(im: Any) -> int:
    """The EXIF orientation (1 = upright); an EXIF PIL cannot read counts as upright."""
    try:
        value = im.getexif().get(ORIENTATION, 1)
    except Exception:  # noqa: BLE001 - a damaged EXIF block, in whatever way it is damaged
        return 1
    return value if isinstance(value, int) else 1


def folder_channels(files: Sequence[str], read: dict[str, FileHeader] | None = None) -> int:
    """3 if any file is in colour, else 1: the channels of a folder when the model does not say.
    Stops at the first colour file, so a colour folder costs one header. A file that cannot be opened
    is passed over here: :func:`refuse_unreadable` names it with the others, if it is read at all.
    Each header read is put in ``read`` (path → header) when given, so that the check of every file
    before any work (a greyscale folder's are all read here) does not open each file again."""
    for path in files:
        header = file_header(path)
        if read is not None:
            read[path] = header
        if header.size is not None and header.channels == 3:
            return 3
    return 1


def refuse_unreadable(where: str, root: str, headers: Sequence[FileHeader]) -> None:
    """One error naming every file of ``headers`` that cannot be opened (the first few by name, with
    why), so that they are all fixed at once before any work; nothing when every header reads."""
    bad = sorted((h for h in headers if h.size is None), key=lambda h: h.path)
    if not bad:
        return
    named = [f"{relative(h.path, root)} ({h.problem})" for h in bad]
    raise ImageFileError(
        f"{where}: {len(bad)} of {len(headers)} image files to read cannot be opened (headers read, no pixels "
        f"yet): {few(named, SHOWN)}; replace or remove them, then run again",
        bad[0].path,
    )


def refuse_mixed_sizes(where: str, root: str, headers: Sequence[FileHeader]) -> None:
    """An error, before any work, when the images are read at their own size (the model states none
    and no --image-size was given) and their sizes differ: a batch mixing them failed part-way, and
    batches that happened to hold one size each cached features of different resolutions side by side."""
    by_size: dict[tuple[int, int], list[str]] = {}
    for h in headers:
        if h.size is not None:
            by_size.setdefault(h.size, []).append(h.path)
    if len(by_size) < 2:
        return
    ranked = sorted(by_size.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    shown = [f"{hh}×{ww}: {len(paths)} (e.g. {relative(min(paths), root)})" for (hh, ww), paths in ranked]
    raise InputError(
        f"{where}: the model states no input size, so each image would be read at its own, and the "
        f"{sum(map(len, by_size.values()))} images have {len(by_size)} sizes, height×width ({few(shown, SHOWN)}); pass "
        "--image-size N to bring them all to N×N"
    )


def paged_warning(where: str, root: str, headers: Sequence[FileHeader]) -> list[str]:
    """A warning when files hold several pages (a multi-page TIFF): only the first page of each is read."""
    paged = [h for h in headers if h.pages > 1]
    if not paged:
        return []
    first = paged[0]
    return [
        f"{where}: {len(paged)} file(s) hold several pages, and only the first page of each is read (e.g. "
        f"{relative(first.path, root)}, {first.pages} pages); save each page as its own file to include the others"
    ]


def converted_warning(where: str, root: str, headers: Sequence[FileHeader], channels: Any) -> list[str]:
    """A warning when files are converted to ``channels`` (what they are decoded to) across colour: colour
    files read as greyscale lose their colour, and greyscale files replicated to RGB beside colour ones are
    inputs unlike the rest (a black-and-white photo's features are not those of the same scene in colour).
    A folder wholly greyscale read by an RGB model (digits, X-rays) is what the replication is for: no warning.
    Files with transparency beside opaque ones are said likewise: their transparent pixels are read as
    white, whatever the photos around them show (a file transparent throughout is a blank white input).
    CMYK files read in colour are said too, however many: PIL converts them by its plain formula,
    without the file's colour profile, so their colours may not be those a viewer shows."""
    read = [h for h in headers if h.size is not None]
    grey = [h for h in read if h.channels == 1]
    colour = [h for h in read if h.channels == 3]
    clear = [h for h in read if h.alpha]
    cmyk = [h for h in read if h.cmyk]
    said = []
    if channels == 1 and colour:
        how = "in colour, converted to greyscale by luma (their colour is not read)"
        said.append((colour, f"{how}, as the images are read with 1 channel"))
    elif channels == 3 and grey and colour:
        how = "greyscale, replicated to RGB beside colour ones (inputs unlike the rest)"
        said.append((grey, f"{how}, as the images are read with 3 channels"))
    if cmyk and channels == 3:
        how = "CMYK, converted to RGB by PIL's plain formula, without any colour profile they carry"
        said.append((cmyk, f"{how} (a viewer's colours may differ)"))
    if clear and len(clear) < len(read):
        said.append(
            (clear, "transparent in part or whole, composited on white beside opaque ones (inputs unlike the rest)")
        )
    return [
        f"{where}: {len(moved)} of {len(read)} image files are {how}: "
        f"{few([relative(h.path, root) for h in sorted(moved, key=lambda h: h.path)], SHOWN)}; convert or remove "
        "them to read inputs of one kind"
        for moved, how in said
    ]


# An image whose shorter side is this many times smaller than both the model's input and the files'
# median is blown up from a few pixels: a 1×1 file becomes a flat patch of one colour. One this many
# times larger than both is the same odd one out the other way: a phone photo among thumbnails,
# squeezed to the input with its detail gone. A folder of photos all far larger than the input (an
# ImageNet-style set at 224) is what resizing is for, so the median must agree.
ENLARGED = 4
SHRUNK = 8


def enlarged_warning(where: str, root: str, headers: Sequence[FileHeader], size: tuple[int, int] | None) -> list[str]:
    """A warning when some files are far smaller than the rest and are enlarged to the model's ``size``
    (H, W): their input is a few pixels blown up, unlike the others. A folder of small images all
    brought to a large input (8×8 digits at 224) is what --image-size is for: no warning. Likewise one
    when some files are far larger than the rest and shrunk to it, and one when files exceed PIL's
    pixel limit (:func:`huge_warning`)."""
    read = [(h.path, h.size) for h in headers if h.size is not None and min(h.size) > 0]
    if size is None or not read:
        return []
    typical = float(np.median([min(hw) for _, hw in read]))
    small = sorted((path, hw) for path, hw in read if min(hw) * ENLARGED <= min(min(size), typical))
    large = sorted((path, hw) for path, hw in read if min(hw) >= SHRUNK * max(max(size), typical))
    said = []
    for files, how, unlike in (
        (small, f"enlarged {ENLARGED}× or more", "far smaller"),
        (large, f"shrunk {SHRUNK}× or more", "far larger"),
    ):
        if not files:
            continue
        shown = [f"{relative(path, root)} ({h}×{w})" for path, (h, w) in files]
        what = (
            "their few pixels are blown up into inputs unlike the rest; remove them or replace them with larger files"
            if files is small
            else "their detail is squeezed away, inputs unlike the rest; crop them to what they show, or remove them"
        )
        said.append(
            f"{where}: {len(files)} of {len(read)} image files are {how} to the model's {size[0]}×{size[1]} "
            f"input, {unlike} than the rest (shorter side {typical:g} at the median): {few(shown, SHOWN)}; {what}"
        )
    return said + huge_warning(where, root, read, size)


def huge_warning(
    where: str, root: str, read: Sequence[tuple[str, tuple[int, int]]], size: tuple[int, int]
) -> list[str]:
    """A warning naming the files over PIL's pixel limit (``Image.MAX_IMAGE_PIXELS``), which PIL would
    otherwise say once, unnamed, and only on the terminal: each is decoded whole before it is shrunk."""
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    huge = sorted((path, hw) for path, hw in read if limit and hw[0] * hw[1] > limit)
    if not huge:
        return []
    shown = [f"{relative(path, root)} ({h}×{w})" for path, (h, w) in huge]
    return [
        f"{where}: {len(huge)} of {len(read)} image files exceed PIL's limit of {limit:,} pixels "
        f"(its guard against decompression bombs): {few(shown, SHOWN)}; each is decoded whole, 3 bytes a "
        f"pixel, before it is shrunk to the model's {size[0]}×{size[1]} input; shrink them first if they are "
        "photos you mean, or remove them"
    ]


def dangling(path: str | os.PathLike[str]) -> str:
    """What ``path`` is when it is a symlink to nothing ("" otherwise): its name stands in the folder."""
    if os.path.islink(path) and not os.path.exists(path):
        return f"a symlink to {os.readlink(path)}, which does not exist"
    return ""


def relative(path: str, root: str | os.PathLike[str]) -> str:
    """``path`` relative to ``root`` for a one-line message: quoted, with escapes, where the name
    holds a character that does not print (a newline in a file name would break the line)."""
    shown = os.path.relpath(path, root) if root else str(path)
    return shown if shown.isprintable() else repr(shown)
