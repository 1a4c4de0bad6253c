"""Load a frozen model from a spec, and say what it expects and which layers it has.

``load_model("torchvision:resnet18", weights="r18.pth")`` → :class:`LoadedModel`. Sources
(registry :data:`SOURCES`): ``torchvision:NAME``, ``timm:NAME``, ``hf:DIR``, ``torchscript:FILE``,
``python:pkg.module:factory``, ``zoo:mlp|cnn|bilstm``. Nothing is ever downloaded.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import NotFoundError

# isort: off
# Importing a source module registers it; this order is the order the sources are listed in.
from . import vision  # noqa: F401
from . import hf  # noqa: F401
from . import local  # noqa: F401

# isort: on
from .base import SOURCES, InputSpec, LoadedModel
from .weights import load_weights, read_checkpoint, sha256_file, to_state_dict
from .zoo import ZOO, build_zoo, save_zoo_checkpoint

__all__ = [
    "SOURCES",
    "ZOO",
    "InputSpec",
    "LoadedModel",
    "build_zoo",
    "load_model",
    "load_weights",
    "read_checkpoint",
    "save_zoo_checkpoint",
    "sha256_file",
    "to_state_dict",
]


def load_model(
    spec: str, *, weights: str | Path | None = None, trust_pickle: bool = False, device: str = "cpu"
) -> LoadedModel:
    """Build the model ``spec`` names, load ``weights`` (strict), freeze it, and describe it.

    Raises :class:`NotFoundError` for an unknown source/name/file, :class:`InputError` for
    weights that do not fit, :class:`UnsafeCheckpointError` for a pickled model without
    ``trust_pickle``.
    """
    prefix, sep, rest = str(spec).partition(":")
    if not sep or not rest:
        raise NotFoundError(
            f"model spec {spec!r} needs a source prefix, e.g. torchvision:resnet18 or zoo:mlp; "
            f"valid prefixes: {', '.join(SOURCES.names())}"
        )
    loader = SOURCES.get(prefix)
    return loader(
        rest, weights=None if weights is None else str(weights), trust_pickle=trust_pickle, device=str(device)
    )
