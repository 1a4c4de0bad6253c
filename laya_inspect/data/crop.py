"""``--resize crop``: torchvision's evaluation recipe, to the pixel.

For a target (H, W) = (S, S) it is ``transforms.Resize(int(S / 0.875))`` (the shorter side to that
length, the longer one to ``int(short' * long / short)``, bilinear, antialiased) then
``CenterCrop(S)`` (offsets ``int(round((side - S) / 2))``), then ToTensor and Normalize. A
non-square target scales the shorter side to ``int(max(H, W) / 0.875)``, so the crop always fits.

The resize runs where torchvision runs it: 8-bit images through PIL (what torchvision does to the
PIL images an ImageFolder yields), float images through ``torch.nn.functional.interpolate`` (what
it does to tensors).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

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
