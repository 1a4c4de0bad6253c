"""Image files → tensors at the model's channel count, converted file by file (``imagefolder:DIR``).

Each file is converted on its own, so a folder that mixes greyscale and colour photos gives every
photo the same pixels whatever file comes first:

- colour (RGB, CMYK, YCbCr, LAB, HSV, palette P) → RGB with PIL's converters; to greyscale with
  PIL's ``convert("L")`` (ITU-R 601-2 luma, 299/1000 R + 587/1000 G + 114/1000 B, what
  torchvision's ``Grayscale`` does to a PIL image);
- alpha (RGBA, LA, PA, P with a transparent colour) → composited on white first;
- 1-bit and 8-bit greyscale (1, L) → replicated to RGB when the model takes three channels;
- 16-bit greyscale (I;16, and I when its values fit 0..65535) → value / 65535 as float32, never
  through 8 bits; 32-bit float (F) kept as is when it lies in [0, 1].

8-bit results are uint8 tensors (C, H, W); 16-bit and float ones are float32 in [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..errors import InputError

GREY_MODES = ("1", "L", "LA", "La", "I", "I;16", "I;16L", "I;16B", "I;16N", "F")
WIDE_MODES = ("I", "I;16", "I;16L", "I;16B", "I;16N", "F")  # more than 8 bits: never through uint8
_ALPHA_MODES = ("RGBA", "RGBa", "LA", "La", "PA")
DECODE = (
    "each file converted on its own with PIL: alpha composited on white, palette and CMYK to RGB, "
    "RGB to greyscale by PIL's ITU-R 601-2 luma, greyscale replicated to RGB, 16-bit greyscale / 65535"
)


def _unreadable(path: str, e: BaseException) -> InputError:
    return InputError(f"cannot read image {path!r}: {e or type(e).__name__}; replace or remove the file")


def _open(path: str) -> Any:
    from PIL import Image

    try:
        return Image.open(path)
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as e:
        raise _unreadable(path, e) from None


def file_channels(path: str) -> int:
    """1 for a greyscale file, 3 for any other (palette files count as colour); reads the header only."""
    with _open(path) as im:
        return 1 if im.mode in GREY_MODES else 3


def folder_channels(files: Sequence[str]) -> int:
    """3 if any file is in colour, else 1: the channels of a folder when the model does not say.
    Stops at the first colour file, so a colour folder costs one header."""
    return 3 if any(file_channels(f) == 3 for f in files) else 1


def read_image(path: str, channels: int) -> torch.Tensor:
    """One image file → (channels, H, W): uint8, or float32 in [0, 1] for 16-bit and float files."""
    from PIL import Image

    if channels not in (1, 3):
        raise InputError(f"image files are read as greyscale (1) or RGB (3) channels, not {channels}")
    try:
        with _open(path) as im:
            if im.mode in WIDE_MODES:
                plane = torch.from_numpy(_wide(im, path))[None]
                return plane.repeat(channels, 1, 1) if channels == 3 else plane
            arr = np.asarray(_on_white(im).convert("L" if channels == 1 else "RGB"), dtype=np.uint8)
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as e:
        raise _unreadable(path, e) from None
    t = torch.from_numpy(arr.copy())
    return t[None] if t.ndim == 2 else t.permute(2, 0, 1).contiguous()


def _on_white(im: Any) -> Any:
    from PIL import Image

    if im.mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
    if im.mode not in _ALPHA_MODES:
        return im
    rgba = im.convert("RGBA")
    white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    return Image.alpha_composite(white, rgba).convert("RGB")


def _wide(im: Any, path: str) -> np.ndarray:
    arr = np.asarray(im)
    if im.mode == "F":
        arr = arr.astype(np.float32)
        if arr.size and not (np.isfinite(arr).all() and arr.min() >= 0.0 and arr.max() <= 1.0):
            raise InputError(
                f"{path}: 32-bit float pixels must lie in [0, 1], got {np.nanmin(arr)}..{np.nanmax(arr)} "
                "(NaN or infinite included); rescale the file or save it with 8 or 16 bits"
            )
        return arr
    values = arr.astype(np.int64)
    if values.size and (values.min() < 0 or values.max() > 65535):
        raise InputError(
            f"{path}: integer pixels {values.min()}..{values.max()} do not fit 16 bits (0..65535); "
            "save the file with 8 or 16 bits"
        )
    return (values / 65535.0).astype(np.float32)
