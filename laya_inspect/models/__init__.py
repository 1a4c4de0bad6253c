"""Load a frozen model from a spec, and say what it expects and which layers it has.

``load_model("torchvision:resnet18", weights="r18.pth")`` → :class:`LoadedModel`. Sources
(registry :data:`SOURCES`): ``torchvision:NAME``, ``timm:NAME``, ``hf:DIR``, ``torchscript:FILE``,
``python:pkg.module:factory``, ``zoo:mlp|cnn|bilstm``. Nothing is ever downloaded, no code runs
that the caller did not allow (pickled models, a Hugging Face directory's own code), and a
network is never silently left with random weights.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from ..errors import InputError, NotFoundError

# isort: off
# Importing a source module registers it; this order is the order the sources are listed in.
from . import vision  # noqa: F401
from . import hf  # noqa: F401
from . import local  # noqa: F401

# isort: on
from .base import SOURCES, InputSpec, LoadedModel, LoadOptions
from .weights import WeightsNote, load_weights, read_checkpoint, read_weights, sha256_file, to_state_dict
from .zoo import ZOO, build_zoo, save_zoo_checkpoint

# where the warnings load_model passes on were said: "default" filters say each once, as they would have
_SAID: dict = {}

__all__ = [
    "SOURCES",
    "ZOO",
    "InputSpec",
    "LoadOptions",
    "LoadedModel",
    "build_zoo",
    "load_model",
    "load_weights",
    "read_checkpoint",
    "read_weights",
    "save_zoo_checkpoint",
    "sha256_file",
    "to_state_dict",
]


def load_model(
    spec: str,
    *,
    weights: str | Path | None = None,
    trust_pickle: bool = False,
    random_init: bool = False,
    trust_remote_code: bool = False,
    device: str = "cpu",
    search_dir: str | Path | None = None,
) -> LoadedModel:
    """Build the model ``spec`` names, load ``weights`` (strict), freeze it, and describe it.

    ``torchvision:``, ``timm:``, ``python:`` and ``zoo:`` models get their weights only from
    ``weights``; without it they would stay randomly initialised, which is refused unless
    ``random_init=True`` (the model then has ``random_init=True`` and a line in ``warnings``).
    ``hf:`` directories and ``torchscript:`` files carry their weights, so ``random_init`` is an
    error there. ``trust_pickle`` allows unpickling a whole pickled module (runs code from the
    file); ``trust_remote_code`` allows a Hugging Face directory's own code to run. ``search_dir``:
    the folder a ``python:`` spec's module is imported from first (default: the current directory).
    ``weights_sha256`` is set whenever weights come from files (see :class:`LoadedModel`).

    Raises :class:`NotFoundError` for an unknown source/name/file, :class:`InputError` for
    weights that are unreadable or do not fit, for random weights without ``random_init`` and
    for custom code without ``trust_remote_code``, :class:`UnsafeCheckpointError` for a pickled
    model without ``trust_pickle``.
    """
    prefix, sep, rest = str(spec).partition(":")
    if not sep or not rest:
        raise NotFoundError(
            f"model spec {spec!r} needs a source prefix, e.g. torchvision:resnet18 or zoo:mlp; "
            f"valid prefixes: {', '.join(SOURCES.names())}"
        )
    loader = SOURCES.get(prefix)
    if random_init and weights is not None:
        raise InputError(f"--random-init and --weights {weights} contradict each other; pass one of them")
    options = LoadOptions(
        weights=None if weights is None else str(weights),
        trust_pickle=trust_pickle,
        random_init=random_init,
        trust_remote_code=trust_remote_code,
        device=str(device),
        search_dir=None if search_dir is None else str(search_dir),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", WeightsNote)
        model = loader(rest, options)
    for w in caught:  # the checkpoint's choices go with the model's warnings; any other is said as usual
        if issubclass(w.category, WeightsNote):
            model.warnings.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, registry=_SAID)
    if model.random_init:
        model.warnings.append(
            f"{model.spec} has random weights (--random-init, no --weights): "
            "its layers describe an untrained network, not a trained one"
        )
    return model
