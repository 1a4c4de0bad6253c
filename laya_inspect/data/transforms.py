"""Batched input transforms: images (scale → channels → resize → normalise), vectors, text.

Every transform is planned once per dataset (from the raw inputs' description and what the model's
``InputSpec`` asks for), applied per batch on tensors, and describes itself as JSON
(``DataBundle.transforms``), which the feature cache stores with the features.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError, suggest

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
LUMA = (0.2989, 0.587, 0.114)  # ITU-R 601, as torchvision's rgb_to_grayscale
NORMALIZE_CHOICES = ("none", "imagenet")
# stretch: straight to the target size (aspect ratio not kept) | crop: torchvision's evaluation
# recipe, shorter side to int(size / 0.875), then the centre (centre_crop below)
RESIZE_CHOICES = ("stretch", "crop")
DEFAULT_MAX_LENGTH = 128


# ----------------------------------------------------------------------------- --resize crop, to the pixel
# For a target (H, W) = (S, S) it is ``transforms.Resize(int(S / 0.875))`` (the shorter side to that
# length, the longer one to ``int(short' * long / short)``, bilinear, antialiased) then
# ``CenterCrop(S)`` (offsets ``int(round((side - S) / 2))``), then ToTensor and Normalize. A
# non-square target scales the shorter side to ``int(max(H, W) / 0.875)``, so the crop always fits.
#
# The resize runs where torchvision runs it: 8-bit images through PIL (what torchvision does to the
# PIL images an ImageFolder yields), float images through ``torch.nn.functional.interpolate`` (what
# it does to tensors).

CROP_FRACTION = 0.875


def crop_geometry(hw: tuple[int, int], size: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """((resized H, W), (top, left)) for an image of ``hw`` cropped to ``size``."""
    (h, w), (th, tw) = hw, size
    short_side = int(max(th, tw) / CROP_FRACTION)
    if w <= h:  # torchvision's _compute_resized_output_size
        nw, nh = short_side, int(short_side * h / w)
    else:
        nh, nw = short_side, int(short_side * w / h)
    return (nh, nw), (int(round((nh - th) / 2.0)), int(round((nw - tw) / 2.0)))


def centre_crop(x: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Float (B, C, H, W) → (B, C, *size): shorter side to ``int(max(size) / 0.875)``, centre crop."""
    (nh, nw), (top, left) = crop_geometry((int(x.shape[-2]), int(x.shape[-1])), size)
    if (nh, nw) != tuple(x.shape[-2:]):
        x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=True)
    return x[..., top : top + size[0], left : left + size[1]]


def centre_crop_pil(x: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """uint8 (B, C, H, W), C in 1 or 3 → uint8 (B, C, *size), each image resized by PIL as above."""
    from PIL import Image

    out = []
    for img in x:
        arr = img.permute(1, 2, 0).numpy()
        im = Image.fromarray(np.ascontiguousarray(arr[..., 0] if arr.shape[-1] == 1 else arr))
        (nh, nw), (top, left) = crop_geometry((im.height, im.width), size)
        if (nh, nw) != (im.height, im.width):
            im = im.resize((nw, nh), Image.Resampling.BILINEAR)
        im = im.crop((left, top, left + size[1], top + size[0]))
        t = torch.from_numpy(np.array(im, dtype=np.uint8))
        out.append(t[None] if t.ndim == 2 else t.permute(2, 0, 1))
    return torch.stack(out)


def _pair(size: Any) -> tuple[int, int] | None:
    if size is None:
        return None
    if isinstance(size, int) and not isinstance(size, bool):
        return (size, size)
    try:
        h, w = size
        if isinstance(h, bool) or isinstance(w, bool) or int(h) != h or int(w) != w:
            raise ValueError
        return (int(h), int(w))
    except (TypeError, ValueError):
        raise InputError(f"image size must be a whole number or (height, width), got {size!r}") from None


@dataclass(frozen=True)
class ImageTransform:
    """uint8 or float [0, 1] images (B, C, H, W) → float32 (B, channels, *size), normalised."""

    native_channels: int
    native_size: tuple[int, int] | None  # None: sizes may differ between images
    scale: str
    channels: int | None = None
    size: tuple[int, int] | None = None
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    normalize_from: str = "none"
    resize: str = "stretch"  # one of RESIZE_CHOICES
    decode: str | None = None  # how files were decoded, for sources that read image files

    @property
    def out_channels(self) -> int:
        return self.channels or self.native_channels

    def __call__(self, x: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
        if isinstance(x, torch.Tensor):
            return self._batch(x)
        items = list(x)  # (C, H, W) images, maybe of different sizes or dtypes (8- and 16-bit files)
        shapes = {tuple(t.shape) for t in items}
        if len(shapes) > 1 and self.size is None:
            sizes = ", ".join(sorted(f"{s[-2]}x{s[-1]}" for s in shapes)[:4])
            # train has no --image-size: the way out must be one the command that hit this can take
            raise InputError(
                f"images in one batch have different sizes ({sizes}); `train` reads each image at its own size "
                "and has no option to resize them: bring the image files to one size first; extract takes "
                "--image-size N (image_size=N in Python), or a model with a fixed input size"
            )
        if len(shapes) == 1 and len({t.dtype for t in items}) == 1:
            return self._batch(torch.stack(items))
        return torch.cat([self._batch(t[None]) for t in items])

    def _batch(self, x: torch.Tensor) -> torch.Tensor:
        if self.size is not None and self.resize == "crop" and self._pil_ok(x):
            return self._normalise(to_unit(centre_crop_pil(adapt_channels(x, self.channels), self.size)))
        return self._normalise(self._resize(adapt_channels(to_unit(x), self.channels)))

    def _pil_ok(self, x: torch.Tensor) -> bool:
        """8-bit images whose channel change is exact in 8 bits (none, replicate, drop alpha) are
        resized by PIL, as torchvision resizes the PIL images of an ImageFolder."""
        c = int(x.shape[1])
        return x.dtype == torch.uint8 and (c, self.out_channels) in ((1, 1), (3, 3), (1, 3), (4, 3))

    def _resize(self, x: torch.Tensor) -> torch.Tensor:
        if self.size is None:
            return x
        if self.resize == "crop":
            return centre_crop(x, self.size)
        if tuple(x.shape[-2:]) == self.size:
            return x
        return F.interpolate(x, size=self.size, mode="bilinear", align_corners=False, antialias=True)

    def _normalise(self, x: torch.Tensor) -> torch.Tensor:
        if self.mean is None:
            return x
        mean = torch.tensor(self.mean, dtype=x.dtype).view(1, -1, 1, 1)
        std = torch.tensor(self.std, dtype=x.dtype).view(1, -1, 1, 1)
        return (x - mean) / std

    def describe(self) -> dict:
        out_size = self.size or self.native_size
        channels = None
        if self.channels is not None and self.channels != self.native_channels:
            channels = {
                "from": self.native_channels,
                "to": self.channels,
                "how": " then ".join(_channel_steps(self.native_channels, self.channels)),
            }
        resize: dict[str, Any] | None = None
        if self.size is not None and (self.size != self.native_size or self.resize == "crop"):
            resize = {
                "from": list(self.native_size) if self.native_size else "per image",
                "to": list(self.size),
                "mode": "bilinear",
                "antialias": True,
                "fit": self.resize,
            }
            if self.resize == "crop":
                resize["crop_fraction"] = CROP_FRACTION
                resize["shorter_side"] = int(max(self.size) / CROP_FRACTION)
                resize["backend"] = "PIL for 8-bit images, torch for float images (as torchvision)"
        out = {
            "kind": "image",
            "scale": self.scale,
            "channels": channels,
            "resize": resize,
            "normalize": describe_normalize(self.mean, self.std, self.normalize_from),
            "output": [self.out_channels, *(out_size or ("H", "W"))],
        }
        if self.decode:
            out["decode"] = self.decode
        return out


# where a normalisation came from → what the cache's transforms say about it
NORMALIZE_SOURCES = {
    "model": "the model's mean/std",
    "imagenet": "--normalize imagenet",
    "given": "--normalize MEAN/STD",
    "option": "none: --normalize none",
    "unknown": "none: the model states no mean/std and --normalize was not given",
    "model: none": "none: the model was trained on inputs scaled to [0, 1] without mean/std",
    "no model": "none: no model given",
}


def describe_normalize(mean: tuple | None, std: tuple | None, frm: str) -> dict:
    """Always a dict: ``applied`` false says explicitly that inputs were only scaled to [0, 1]."""
    if mean is None or std is None:
        return {"applied": False, "mean": None, "std": None, "from": frm, "why": NORMALIZE_SOURCES.get(frm, frm)}
    return {"applied": True, "mean": list(mean), "std": list(std), "from": frm}


def _channel_steps(c: int, target: int) -> list[str]:
    steps = []
    if c in (2, 4):
        steps.append("drop alpha")
        c -= 1
    if (c, target) == (1, 3):
        steps.append("replicate")
    elif (c, target) == (3, 1):
        steps.append(f"luminance {list(LUMA)}")
    return steps


def to_unit(x: torch.Tensor) -> torch.Tensor:
    """uint8 → float32 / 255; floats (already in [0, 1]) → float32."""
    if x.dtype == torch.uint8:
        return x.to(torch.float32) / 255.0
    if x.is_floating_point():
        return x.to(torch.float32)
    raise InputError(f"image tensors must be uint8 or float, got {x.dtype}")


def adapt_channels(x: torch.Tensor, target: int | None) -> torch.Tensor:
    """(B, C, H, W) → (B, target, H, W): 1→3 replicate, 3→1 luminance, 4 (RGBA)→3 drops alpha."""
    c = x.shape[1]
    if target is None or c == target:
        return x
    if c == 4:
        x, c = x[:, :3], 3
    if c == 2:
        x, c = x[:, :1], 1
    if c == target:
        return x
    if c == 1 and target == 3:
        return x.repeat(1, 3, 1, 1)
    if c == 3 and target == 1:
        w = torch.tensor(LUMA, dtype=x.dtype).view(1, 3, 1, 1)
        return (x * w).sum(dim=1, keepdim=True)
    raise InputError(f"cannot turn {c}-channel images into {target} channels (1↔3 and 4→3 are supported)")


def _floats(v: Any, what: str) -> tuple[float, ...]:
    try:
        vals = (float(v),) if isinstance(v, (int, float)) else tuple(float(a) for a in v)
    except (TypeError, ValueError):
        raise InputError(f"normalize {what} must be a number or a list of numbers, got {v!r}") from None
    if not vals:
        raise InputError(f"normalize {what} is empty")
    if not all(math.isfinite(a) for a in vals):
        raise InputError(f"normalize {what} must be finite numbers, got {list(vals)}")
    return vals


def parse_normalize_text(text: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``"M1,M2,M3/S1,S2,S3"`` (or ``"M/S"`` for every channel) → (mean, std)."""
    mean_s, slash, std_s = text.partition("/")
    if not slash or not mean_s.strip() or not std_s.strip():
        raise InputError(
            f"unknown normalize {text!r}; {suggest(text.strip().lower(), NORMALIZE_CHOICES)} "
            "(or MEAN/STD, e.g. 0.485,0.456,0.406/0.229,0.224,0.225)"
        )
    return _floats(mean_s.split(","), "mean"), _floats(std_s.split(","), "std")


def resolve_normalize(normalize: Any, input_spec: Any, channels: int) -> tuple[tuple | None, tuple | None, str]:
    """The (mean, std, where-from) to apply: the option overrides the model's InputSpec.

    where-from is a key of NORMALIZE_SOURCES: "model", "imagenet", "given"; or, with nothing applied,
    "option" (normalize="none"), "model: none" (the model says it takes unnormalised inputs),
    "unknown" (the model states no mean/std) or "no model".
    """
    if normalize is None:
        mean, std = getattr(input_spec, "mean", None), getattr(input_spec, "std", None)
        if mean is None or std is None:
            if input_spec is None:
                return None, None, "no model"
            return None, None, "model: none" if getattr(input_spec, "unnormalized", False) else "unknown"
        mean, std, frm = _floats(mean, "mean"), _floats(std, "std"), "model"
    elif isinstance(normalize, str):
        key = normalize.strip().lower()
        if key == "none":
            return None, None, "option"
        if key == "imagenet":
            mean, std, frm = IMAGENET_MEAN, IMAGENET_STD, "imagenet"
        else:
            mean, std = parse_normalize_text(normalize)
            frm = "given"
    else:
        try:
            mean_v, std_v = normalize
        except (TypeError, ValueError):
            raise InputError(f"normalize must be 'none', 'imagenet' or a (mean, std) pair, got {normalize!r}") from None
        mean, std, frm = _floats(mean_v, "mean"), _floats(std_v, "std"), "given"
    if len(mean) == 1:
        mean = mean * channels
    if len(std) == 1:
        std = std * channels
    if len(mean) != channels or len(std) != channels:
        raise InputError(
            f"normalize mean/std have {len(mean)}/{len(std)} values but the images have {channels} channels"
        )
    if any(s <= 0 for s in std):
        raise InputError(f"normalize std must be positive, got {list(std)}")
    return mean, std, frm


def plan_image_transform(
    native: dict, *, input_spec: Any = None, image_size: Any = None, normalize: Any = None, resize: str = "stretch"
) -> ImageTransform:
    """Decide the image transform from the raw images (``native``) and the model's InputSpec.

    Target channels: ``input_spec.channels`` (None: keep). Target size: ``image_size`` if given,
    else ``input_spec.hw`` (its size and width; None: keep); ``resize`` says how to reach it (RESIZE_CHOICES).
    Normalisation: ``normalize`` ("none", "imagenet", "M1,M2,M3/S1,S2,S3" or a (mean, std) pair)
    if given, else the InputSpec's mean/std, else none (values stay in [0, 1]; the description says
    so). ``native["decode"]`` (how image files were decoded) is carried into the description.
    """
    channels = getattr(input_spec, "channels", None)
    size = _pair(image_size if image_size is not None else getattr(input_spec, "hw", getattr(input_spec, "size", None)))
    if size is not None and min(size) < 1:
        raise InputError(f"image size must be positive, got {image_size!r}")
    if resize not in RESIZE_CHOICES:
        raise InputError(f"resize must be one of {', '.join(RESIZE_CHOICES)}, got {resize!r}")
    if resize == "crop" and size is None:
        raise InputError(
            "resize crop needs a target size: pass an image size (--image-size) or use a model with a fixed input size"
        )
    native_channels = int(native["channels"])
    out_channels = channels or native_channels
    mean, std, frm = resolve_normalize(normalize, input_spec, out_channels)
    if channels is not None and channels != native_channels:
        adapt_channels(torch.zeros(1, native_channels, 1, 1), channels)  # raises early if impossible
    return ImageTransform(
        native_channels=native_channels,
        native_size=_pair(native.get("size")),
        scale=native.get("scale", "uint8/255"),
        channels=channels,
        size=size,
        mean=mean,
        std=std,
        normalize_from=frm,
        resize=resize,
        decode=native.get("decode"),
    )


@dataclass(frozen=True)
class VectorTransform:
    """(B, D) vectors → float32 (uint8 → / 255)."""

    dim: int
    scale: str

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.float32) / 255.0 if x.dtype == torch.uint8 else x.to(torch.float32)

    def describe(self) -> dict:
        return {"kind": "vector", "dim": self.dim, "scale": self.scale}


def tokenizer_digest(tok: Any) -> str | None:
    """What the tokenizer does, hashed: a fast tokenizer's whole serialisation (vocabulary, merges,
    normaliser), a slow one's vocabulary and settings. Two tokenizers of one class and path that cut
    texts otherwise give other rows: the cache records which."""
    import hashlib
    import json

    try:
        backend = getattr(tok, "backend_tokenizer", None)
        if backend is not None:
            # its truncation and padding are the last call's settings, not what the files hold
            saved = {k: v for k, v in json.loads(backend.to_str()).items() if k not in ("truncation", "padding")}
        else:
            settings = {k: v for k, v in getattr(tok, "init_kwargs", {}).items() if k != "name_or_path"}
            saved = {"vocab": sorted(tok.get_vocab().items()), "settings": settings}
        text = json.dumps(saved, sort_keys=True, default=str)
    except Exception:  # noqa: BLE001  a tokenizer without either: none recorded
        return None
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class TextTransform:
    """A list of B strings → dict of (B, T) tensors from a Hugging Face tokenizer, T ≤ max_length.

    Pads each batch to its longest text (truncating at ``max_length``): short texts cost short
    sequences. A text's features do not depend on its batch because the attention mask keeps the
    model off the padding and extraction pools with the same mask.
    """

    tokenizer: Any
    max_length: int = DEFAULT_MAX_LENGTH
    padding_note: str | None = None  # what the model's loader changed so that texts pad (InputSpec.padding)

    def __call__(self, texts: list[str]) -> dict[str, torch.Tensor]:
        enc = self.tokenizer(
            list(texts), padding="longest", truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        return {k: v for k, v in enc.items()}

    def describe(self) -> dict:
        tok = self.tokenizer
        return {
            "kind": "text",
            "tokenizer": type(tok).__name__,
            "name_or_path": str(getattr(tok, "name_or_path", "") or ""),
            "sha256": tokenizer_digest(tok),
            "max_length": self.max_length,
            "padding": "longest",
            "truncation": True,
            **({"pad": self.padding_note} if self.padding_note else {}),
        }
