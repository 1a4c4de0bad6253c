"""Read weights files safely and load them into a module.

``.pt``/``.pth``/``.bin`` go through ``torch.load(weights_only=True)``, which cannot run code;
``.safetensors`` through ``safetensors.torch.load_file``. A file holding a whole pickled
``nn.Module`` needs full unpickling, which runs code from the file, so it is refused unless the
caller passes ``trust_pickle=True``.
"""

from __future__ import annotations

import hashlib
import pickle
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..errors import InputError, NotFoundError, UnsafeCheckpointError

WRAPPER_KEYS = ("state_dict", "model", "model_ema")
PREFIXES = ("module.", "_orig_mod.")


def sha256_file(path: str | Path, *, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def sha256_files(paths: list[Path]) -> str:
    """One digest over several files (sharded checkpoints), in the given order."""
    if len(paths) == 1:
        return sha256_file(paths[0])
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode() + b"\0" + sha256_file(p).encode())
    return h.hexdigest()


def _existing(path: str | Path) -> Path:
    p = Path(path).expanduser()
    if not p.is_file():
        where = (
            f"; the folder holds: {', '.join(sorted(c.name for c in p.parent.iterdir())[:20])}"
            if p.parent.is_dir()
            else ""
        )
        raise NotFoundError(f"no weights file {str(path)!r}{where}")
    return p


def _reason(message: str) -> str:
    """The informative line of torch's long weights-only error."""
    tail = message.split("WeightsUnpickler error:", 1)[-1]
    return next((line.strip() for line in tail.splitlines() if line.strip()), message)


def read_checkpoint(path: str | Path, *, trust_pickle: bool = False) -> Any:
    """The object stored in a weights file: a dict of tensors, a checkpoint dict, or (trusted) a module."""
    p = _existing(path)
    if p.suffix == ".safetensors":
        from safetensors.torch import load_file

        try:
            return load_file(str(p), device="cpu")
        except Exception as e:  # safetensors raises its own SafetensorError
            raise InputError(f"{p} is not a readable .safetensors file: {e}") from None
    try:
        return torch.load(p, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        if not re.search(r"GLOBAL|call reduce", str(e)):  # refused, but not for holding Python objects
            raise InputError(f"{p} is not a readable PyTorch checkpoint: {_reason(str(e))}") from None
        if not trust_pickle:
            raise UnsafeCheckpointError(
                f"{p} is a pickled model; loading it runs code from the file. Pass --trust-pickle if you trust it"
            ) from None
    except (RuntimeError, EOFError, OSError, ValueError) as e:
        raise InputError(f"{p} is not a readable PyTorch checkpoint: {e}") from None
    try:
        return torch.load(p, map_location="cpu", weights_only=False)
    except Exception as e:  # unpickling can fail in any way: missing classes, modules, versions
        raise InputError(f"{p} could not be unpickled (even with --trust-pickle): {type(e).__name__}: {e}") from None


def _strip(key: str) -> str:
    changed = True
    while changed:
        changed = False
        for prefix in PREFIXES:
            if key.startswith(prefix):
                key, changed = key[len(prefix) :], True
    return key


def to_state_dict(obj: Any, *, source: str = "checkpoint") -> dict[str, Tensor]:
    """Unwrap ``state_dict``/``model``/``model_ema`` (in that order) and strip ``module.``/``_orig_mod.``."""
    if isinstance(obj, nn.Module):
        obj = obj.state_dict()
    if isinstance(obj, Mapping) and not all(isinstance(v, Tensor) for v in obj.values()):
        for key in WRAPPER_KEYS:
            if key in obj and isinstance(obj[key], (Mapping, nn.Module)):
                return to_state_dict(obj[key], source=source)
        raise InputError(
            f"{source} is a dict without model weights: expected tensors or one of the keys "
            f"{', '.join(WRAPPER_KEYS)}; it has keys: {', '.join(map(str, list(obj)[:12]))}"
        )
    if not isinstance(obj, Mapping):
        raise InputError(f"{source} holds a {type(obj).__name__}, not a state dict or a module")
    return {_strip(str(k)): v for k, v in obj.items()}


def _few(keys: list[str], n: int = 5) -> str:
    return ", ".join(keys[:n]) + (f", … ({len(keys)} in all)" if len(keys) > n else "")


def load_state_dict_strict(module: nn.Module, state: Mapping[str, Tensor], *, source: str = "checkpoint") -> None:
    """``module.load_state_dict(strict=True)`` with an error that names missing/unexpected/mis-shaped keys."""
    own = module.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing {_few(missing)}")
        if unexpected:
            parts.append(f"unexpected {_few(unexpected)}")
        raise InputError(f"{source} does not fit {type(module).__name__}: {'; '.join(parts)}")
    bad = [
        f"{k} {tuple(state[k].shape)} vs {tuple(v.shape)}"
        for k, v in own.items()
        if tuple(state[k].shape) != tuple(v.shape)
    ]
    if bad:
        raise InputError(
            f"{source} does not fit {type(module).__name__}: shape mismatch (file vs model) {_few(bad, 3)}"
        )
    module.load_state_dict(state, strict=True)


def load_weights(module: nn.Module, path: str | Path, *, trust_pickle: bool = False) -> str:
    """Load a weights file into ``module`` (strict) and return the file's sha256."""
    state = to_state_dict(read_checkpoint(path, trust_pickle=trust_pickle), source=str(path))
    load_state_dict_strict(module, state, source=str(path))
    return sha256_file(path)
