"""Batched input transforms: images (scale → channels → resize → normalise), vectors, text.

Every transform is planned once per dataset (from the raw inputs' description and what the model's
``InputSpec`` asks for), applied per batch on tensors, and describes itself as JSON
(``DataBundle.transforms``), which the feature cache stores with the features.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from ..errors import InputError, suggest

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
LUMA = (0.2989, 0.587, 0.114)  # ITU-R 601, as torchvision's rgb_to_grayscale
NORMALIZE_CHOICES = ("none", "imagenet")
# stretch: straight to the target size (aspect ratio not kept) | crop: scale to cover the target
# divided by CROP_FRACTION, keeping the aspect ratio, then take the centre (torchvision's evaluation
# recipe: resize 256, centre crop 224).
RESIZE_CHOICES = ("stretch", "crop")
CROP_FRACTION = 0.875
DEFAULT_MAX_LENGTH = 128


def _pair(size: Any) -> tuple[int, int] | None:
    if size is None:
        return None
    if isinstance(size, int):
        return (size, size)
    h, w = size
    return (int(h), int(w))


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

    @property
    def out_channels(self) -> int:
        return self.channels or self.native_channels

    def __call__(self, x: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):  # a list of (C, H, W) images, maybe of different sizes
            shapes = {tuple(t.shape) for t in x}
            if len(shapes) == 1:
                x = torch.stack(list(x))
            elif self.size is None:
                sizes = ", ".join(sorted(f"{s[-2]}x{s[-1]}" for s in shapes)[:4])
                raise InputError(
                    f"images in one batch have different sizes ({sizes}); pass an image "
                    "size (image_size / --image-size) or use a model with a fixed input size"
                )
            else:
                return self._normalise(torch.cat([self._resize(self._channels(to_unit(t[None]))) for t in x]))
        return self._normalise(self._resize(self._channels(to_unit(x))))

    def _channels(self, x: torch.Tensor) -> torch.Tensor:
        return adapt_channels(x, self.channels)

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
        norm = None
        if self.mean is not None:
            assert self.std is not None  # resolve_normalize sets mean and std together
            norm = {"mean": list(self.mean), "std": list(self.std), "from": self.normalize_from}
        return {
            "kind": "image",
            "scale": self.scale,
            "channels": channels,
            "resize": resize,
            "normalize": norm,
            "output": [self.out_channels, *(out_size or ("H", "W"))],
        }


def centre_crop(x: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Scale (B, C, H, W) so it covers ``size / CROP_FRACTION`` with its aspect ratio kept, then cut
    out the centre ``size``."""
    (h, w), (th, tw) = x.shape[-2:], size
    scale = max(th / h, tw / w) / CROP_FRACTION
    nh, nw = max(th, round(h * scale)), max(tw, round(w * scale))
    x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=True)
    top, left = (nh - th) // 2, (nw - tw) // 2
    return x[..., top : top + th, left : left + tw]


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
    return vals


def resolve_normalize(normalize: Any, input_spec: Any, channels: int) -> tuple[tuple | None, tuple | None, str]:
    """The (mean, std, where-from) to apply: the option overrides the model's InputSpec."""
    if normalize is None:
        mean, std = getattr(input_spec, "mean", None), getattr(input_spec, "std", None)
        if mean is None or std is None:
            return None, None, "none"
        mean, std, frm = _floats(mean, "mean"), _floats(std, "std"), "model"
    elif isinstance(normalize, str):
        key = normalize.strip().lower()
        if key == "none":
            return None, None, "none"
        if key != "imagenet":
            raise InputError(
                f"unknown normalize {normalize!r}; {suggest(key, NORMALIZE_CHOICES)} (or a (mean, std) pair)"
            )
        mean, std, frm = IMAGENET_MEAN, IMAGENET_STD, "imagenet"
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
    else ``input_spec.size`` (None: keep); ``resize`` says how to reach it (RESIZE_CHOICES).
    Normalisation: ``normalize`` ("none", "imagenet" or a
    (mean, std) pair) if given, else the InputSpec's mean/std, else none (values stay in [0, 1]).
    """
    channels = getattr(input_spec, "channels", None)
    size = _pair(image_size if image_size is not None else getattr(input_spec, "size", None))
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


@dataclass(frozen=True)
class TextTransform:
    """A list of B strings → dict of (B, T) tensors from a Hugging Face tokenizer, T ≤ max_length.

    Pads each batch to its longest text (truncating at ``max_length``): short texts cost short
    sequences. A text's features do not depend on its batch because the attention mask keeps the
    model off the padding and extraction pools with the same mask.
    """

    tokenizer: Any
    max_length: int = DEFAULT_MAX_LENGTH

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
            "max_length": self.max_length,
            "padding": "longest",
            "truncation": True,
        }
