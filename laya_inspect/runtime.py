"""What every stage shares at run time: one device rule, seeded construction, the progress type.

Devices: ``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda`` or ``cuda:N``, the same for every
command. :func:`check_device` validates the spelling (configs call it in ``__post_init__``);
:func:`pick_device` also checks that the device exists. torch is imported only when a device is picked,
so validating a config stays cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .errors import InputError

if TYPE_CHECKING:
    import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda", "cuda:N")
DEVICE_HELP = "auto (CUDA when available) | cpu | cuda | cuda:N"

# A stage reports what it is doing as dict events ({"event": "epoch", ...}); the CLI renders them.
Progress = Callable[[dict[str, Any]], None]


def no_progress(_event: dict[str, Any]) -> None:
    """The progress callback of a caller that does not listen."""


def check_device(name: str) -> str:
    """``name`` if it is a device this tool accepts, else an InputError naming the valid ones."""
    if name in ("auto", "cpu", "cuda") or re.fullmatch(r"cuda:\d+", str(name)):
        return name
    raise InputError(f"--device must be one of {', '.join(DEVICE_CHOICES)}, got {name!r}")


def pick_device(name: str = "auto") -> torch.device:
    """The torch device for ``name``; asking for CUDA where there is none is an InputError."""
    import torch

    check_device(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError(f"--device {name} was asked for, but no CUDA device is available; use --device cpu")
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise InputError(
                f"--device {name}: only {torch.cuda.device_count()} CUDA device(s) here "
                f"(cuda:0 … cuda:{torch.cuda.device_count() - 1})"
            )
    return torch.device(name)


@contextmanager
def seeded(seed: int = 0) -> Iterator[None]:
    """Run the body with torch's CPU generator seeded, and restore the caller's generator state after:
    what is built inside is the same for the same seed, and nothing outside is disturbed."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
