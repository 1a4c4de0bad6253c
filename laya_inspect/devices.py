"""`--device auto|cpu|cuda`, resolved in one place."""
from __future__ import annotations

import torch

from .errors import InputError

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def pick_device(name: str = "auto") -> torch.device:
    if name not in DEVICE_CHOICES and not name.startswith("cuda:"):
        raise InputError(f"device must be one of {', '.join(DEVICE_CHOICES)}, got {name!r}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("--device cuda was asked for, but no CUDA device is available; use --device cpu")
    return torch.device(name)
