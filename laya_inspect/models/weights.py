"""Read weights files safely and load them into a module.

``.pt``/``.pth``/``.bin`` go through ``torch.load(weights_only=True)``, which cannot run code;
``.safetensors`` through ``safetensors.torch.load_file``. A file holding a whole pickled
``nn.Module`` needs full unpickling, which runs code from the file, so it is refused unless the
caller passes ``trust_pickle=True``. Any file that is not a readable checkpoint (empty, truncated,
random bytes, a folder) and any state dict that does not fit the module is an :class:`InputError`
naming the file.
"""

from __future__ import annotations

import hashlib
import pickle
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..errors import PICKLED_OBJECT, InputError, NotFoundError, UnsafeCheckpointError, few, os_message
from ..files import sha256_file, special_file
from ..out_dir import own_temp

# where checkpoints keep the weights, in the order looked for (the plain weights before an EMA copy)
WRAPPER_KEYS = ("state_dict", "model_state_dict", "model", "net", "model_ema", "state_dict_ema", "ema")
PREFIXES = ("module.", "_orig_mod.")


def step_counter(key: str) -> bool:
    """BatchNorm's step counter: absent from checkpoints saved before PyTorch 0.4.1 and from many
    re-exports; torch's own strict load fills it in, and it does not change an eval-mode output."""
    return key.endswith("num_batches_tracked")


class WeightsNote(UserWarning):
    """A choice made while reading a checkpoint (which copy, which prefix): the loader records it with
    the model's warnings, so it reaches the cache and the report."""


def sha256_files(paths: list[Path], digests: list[str] | None = None) -> str:
    """One digest over several files (sharded checkpoints), in the given order: one file's own
    digest, else the sha256 over each file's ``name NUL hexdigest``. ``digests``: the files'
    :func:`sha256_file` digests when already known."""
    digests = digests if digests is not None else [sha256_file(p) for p in paths]
    if len(paths) == 1:
        return digests[0]
    h = hashlib.sha256()
    for p, digest in zip(paths, digests, strict=True):
        h.update(p.name.encode() + b"\0" + digest.encode())
    return h.hexdigest()


def _listing(folder: Path) -> str:
    try:
        # a run's own lock and temporary files (.out.lock, .x.tmp-PID-CHECK) would only hide the user's files
        names = sorted(c.name for c in folder.iterdir() if not own_temp(c.name))
    except OSError:
        return ""
    return few(names, 20) if names else "(nothing)"


def _existing(path: str | Path) -> Path:
    p = Path(path).expanduser()
    if p.is_dir():
        raise InputError(f"weights {str(path)!r} is a folder, not a weights file; give a file inside it: {_listing(p)}")
    if what := special_file(p, follow=True):  # reading it would wait for a writer that may never come
        raise InputError(f"weights {str(path)!r} is {what}, not a weights file")
    if not p.is_file():
        where = f"; the folder holds: {_listing(p.parent)}" if p.parent.is_dir() else ""
        raise NotFoundError(f"no weights file {str(path)!r}{where}")
    try:
        empty = p.stat().st_size == 0
    except OSError as e:
        raise InputError(os_message(e, "could not read")) from None
    if empty:
        raise InputError(f"weights file {str(p)!r} is empty (0 bytes); it was probably cut short while being written")
    return p


def first_line(e: BaseException) -> str:
    """``Type: first non-empty line of the message``: an error from a library, for a one-line message."""
    text = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _safetensors(p: Path) -> bool:
    """Whether the file's bytes are safetensors (an 8-byte header length, then its JSON), whatever its
    name says: a torch.save file named .safetensors, or the reverse, is read as what it is."""
    try:
        with open(p, "rb") as f:
            head = f.read(9)
    except OSError:
        return p.suffix == ".safetensors"  # the reader says what is wrong
    # the header's length first: its low byte may be 0x80, a pickle's first byte (timm's resnet50: 0x7080);
    # a torch.save file never has "{" as its ninth byte
    if len(head) == 9 and head[8:9] == b"{" and 0 < int.from_bytes(head[:8], "little") < 1 << 30:
        return True
    if head.startswith((b"PK\x03\x04", b"\x80")):  # torch.save's zip, or its older bare pickle
        return False
    return p.suffix == ".safetensors"  # neither: the reader its name asks for says what is wrong


# files a user may hand --weights by mistake, told by their first bytes: torch's unpickler would only
# say "Unsupported operand 147" of a NumPy array
OTHER_FORMATS = (
    (b"\x93NUMPY", "a NumPy array (.npy)"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file (a Keras model, or a laya-inspect cache?)"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
)


def other_format(p: Path) -> str | None:
    """What ``p`` is where its first bytes name a format that holds no PyTorch weights, else None."""
    try:
        with open(p, "rb") as f:
            head = f.read(8)
    except OSError:
        return None
    return next((what for magic, what in OTHER_FORMATS if head.startswith(magic)), None)


def _torch_load(p: Path, *, weights_only: bool) -> Any:
    with open(p, "rb") as f:  # a file object: torch reads a path named .safetensors as safetensors
        return torch.load(f, map_location="cpu", weights_only=weights_only)


def _read(p: Path, trust_pickle: bool) -> Any:
    if _safetensors(p):
        from safetensors.torch import load_file

        try:
            return load_file(str(p), device="cpu")
        except Exception as e:  # safetensors raises its own SafetensorError, and OSError, ValueError…
            raise InputError(f"{p} is not a readable .safetensors file: {first_line(e)}") from None
    if (what := other_format(p)) is not None:
        raise InputError(
            f"{p} is {what}, not a PyTorch checkpoint: --weights takes a state_dict saved by torch.save "
            "(.pt, .pth) or a .safetensors file"
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "Detected pickle protocol …" notices
            return _torch_load(p, weights_only=True)
    except pickle.UnpicklingError as e:
        if not PICKLED_OBJECT.search(str(e)):  # refused, but not for holding Python objects
            tail = str(e).split("WeightsUnpickler error:", 1)[-1]  # torch's long message: its informative line
            reason = next((line.strip() for line in tail.splitlines() if line.strip()), str(e))
            raise InputError(f"{p} is not a readable PyTorch checkpoint: {reason}") from None
        if not trust_pickle:
            raise UnsafeCheckpointError(
                f"{p} is a pickled model; loading it runs code from the file. Pass --trust-pickle if you trust it"
            ) from None
    except Exception as e:  # corrupt bytes end in any error of the unpickler or the zip reader
        raise InputError(f"{p} is not a readable PyTorch checkpoint (corrupt?): {first_line(e)}") from None
    try:
        return _torch_load(p, weights_only=False)
    except Exception as e:  # unpickling can fail in any way: missing classes, modules, versions
        raise InputError(
            f"{p} could not be unpickled (even with --trust-pickle): {first_line(e)}{_pickled_in_main(e)}"
        ) from None


def _pickled_in_main(e: Exception) -> str:
    """The way out when a model was pickled by a script run directly: its class was recorded as
    ``__main__.NAME``, and no other program's ``__main__`` holds that class, so no loader can rebuild it."""
    # pickle looks the class up in whatever runs as __main__ here: the tool's (laya_inspect.__main__);
    # the message's wording varies across Python versions, the module's name does not
    if not (isinstance(e, AttributeError) and "__main__" in str(e)):
        return ""
    return (
        ". The model was saved with torch.save(model) by a script run directly, so its class is recorded as "
        "__main__.CLASS, which only that script defines: save its weights instead "
        "(torch.save(model.state_dict(), FILE)) and load them with --model python:MODULE:FACTORY --weights FILE"
    )


def read_checkpoint(path: str | Path, *, trust_pickle: bool = False) -> Any:
    """The object stored in a weights file: a dict of tensors, a checkpoint dict, or (trusted) a module."""
    return _read(_existing(path), trust_pickle)


def read_weights(path: str | Path, *, trust_pickle: bool = False) -> tuple[Any, str]:
    """:func:`read_checkpoint` and the file's :func:`sha256_file`, refusing a file that changed
    between the two (so the digest names the bytes that were loaded)."""
    p = _existing(path)
    try:
        before = p.stat()
        digest = sha256_file(p)
        obj = _read(p, trust_pickle)
        after = p.stat()
    except OSError as e:
        raise InputError(os_message(e, "could not read")) from None
    if (before.st_ino, before.st_size, before.st_mtime_ns) != (after.st_ino, after.st_size, after.st_mtime_ns):
        raise InputError(f"weights file {str(p)!r} changed while it was being read; load it again once it is written")
    return obj, digest


def _strip(state: dict[str, Any]) -> dict[str, Any]:
    """Without a ``module.``/``_orig_mod.`` prefix that every key carries (DataParallel, torch.compile):
    a model's own submodule named ``module`` leaves other keys without it, and keeps its name."""
    while state:
        common = next((p for p in PREFIXES if all(k.startswith(p) for k in state)), None)
        if common is None:
            break
        state = {k[len(common) :]: v for k, v in state.items()}
    return state


def to_state_dict(obj: Any, *, source: str = "checkpoint") -> dict[str, Tensor]:
    """Unwrap the first of :data:`WRAPPER_KEYS` that holds the weights, keep the tensors (a training
    step count beside them is no weight) and strip a ``module.``/``_orig_mod.`` prefix every key has."""
    if isinstance(obj, nn.Module):
        obj = obj.state_dict()
    if isinstance(obj, Mapping) and not all(isinstance(v, Tensor) for v in obj.values()):
        held = [key for key in WRAPPER_KEYS if key in obj and isinstance(obj[key], (Mapping, nn.Module))]
        if held:
            copies = [
                k for k in held if isinstance(obj[k], nn.Module) or any(isinstance(v, Tensor) for v in obj[k].values())
            ]
            if len(copies) > 1 and copies[0] == held[0]:
                warnings.warn(
                    f"{source} holds several copies of the weights ({', '.join(map(repr, copies))}); read "
                    f"{held[0]!r}. To read another, save it alone, e.g. torch.save(ckpt[{copies[1]!r}], 'w.pt')",
                    WeightsNote,
                    stacklevel=2,
                )
            return to_state_dict(obj[held[0]], source=source)
        tensors = {k: v for k, v in obj.items() if isinstance(v, Tensor)}
        if not tensors:
            raise InputError(
                f"{source} holds no tensors: expected a state dict or one of the keys "
                f"{', '.join(WRAPPER_KEYS)}; it has keys: {', '.join(map(str, list(obj)[:12]))}"
            )
        obj = tensors
    if not isinstance(obj, Mapping):
        raise InputError(f"{source} holds a {type(obj).__name__}, not a state dict or a module")
    return _strip({str(k): v for k, v in obj.items()})


def under_prefix(own: Mapping[str, Tensor], state: Mapping[str, Tensor], source: str) -> Mapping[str, Tensor]:
    """The tensors under the one prefix where ``state`` holds exactly the module's keys: a wrapper's
    submodule (a Lightning module's ``model.``, a trainer's ``backbone.``). ``state`` itself when it
    fits already or no prefix fits; two prefixes that fit (a model and its EMA copy) are refused."""
    needed = [k for k in own if not step_counter(k)]
    if not needed or all(k in state for k in needed):
        return state
    probe = needed[0]
    fits = []
    for key in state:
        prefix = key[: len(key) - len(probe)]
        if key.endswith(probe) and prefix.endswith("."):
            under = {k[len(prefix) :] for k in state if k.startswith(prefix)}
            if all(k in under for k in needed) and all(k in own for k in under):
                fits.append(prefix)
    if len(fits) > 1:
        raise InputError(
            f"{source} holds the model's weights under several prefixes ({', '.join(map(repr, fits))}); "
            "save the copy you mean alone"
        )
    if not fits:
        return state
    prefix = fits[0]
    left = [k for k in state if not k.startswith(prefix)]
    warnings.warn(
        f"{source}: read the weights under {prefix!r} (a wrapper's submodule)"
        + (f"; {len(left)} other tensor{'s' * (len(left) > 1)} left out ({few(left, 3)})" if left else ""),
        WeightsNote,
        stacklevel=3,
    )
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}


def load_state_dict_strict(module: nn.Module, state: Mapping[str, Tensor], *, source: str = "checkpoint") -> None:
    """``module.load_state_dict(strict=True)`` with an error that names missing/unexpected/mis-shaped keys."""
    own = module.state_dict()
    state = under_prefix(own, state, source)
    missing = [k for k in own if k not in state and not step_counter(k)]
    unexpected = [k for k in state if k not in own]
    if missing or unexpected:
        parts = [f"{what} {few(keys, 5)}" for what, keys in (("missing", missing), ("unexpected", unexpected)) if keys]
        raise InputError(f"{source} does not fit {type(module).__name__}: {'; '.join(parts)}")
    bad = [
        f"{k} {tuple(state[k].shape)} vs {tuple(v.shape)}"
        for k, v in own.items()
        if k in state and tuple(state[k].shape) != tuple(v.shape)
    ]
    if bad:
        raise InputError(f"{source} does not fit {type(module).__name__}: shape mismatch (file vs model) {few(bad, 3)}")
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as e:  # names and shapes fit, the values do not (e.g. a dtype that cannot be copied)
        raise InputError(f"{source} does not fit {type(module).__name__}: {first_line(e)}") from None


def load_weights(module: nn.Module, path: str | Path, *, trust_pickle: bool = False) -> str:
    """Load a weights file into ``module`` (strict) and return the file's sha256."""
    obj, digest = read_weights(path, trust_pickle=trust_pickle)
    load_state_dict_strict(module, to_state_dict(obj, source=str(path)), source=str(path))
    return digest
