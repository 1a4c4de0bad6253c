"""Sources defined on this machine: TorchScript files, ``python:pkg.module:factory`` and the zoo."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn

from ..errors import InputError, NotFoundError, suggest
from ..runtime import seeded
from .base import SOURCES, Adapter, InputSpec, LoadedModel, blocks_of, freeze, last_linear
from .weights import load_state_dict_strict, load_weights, read_checkpoint, sha256_file, sha256_files, to_state_dict
from .zoo import DEFAULT_LAYERS, ZOO, build_zoo, is_zoo_checkpoint, model_from_checkpoint

# ---------------------------------------------------------------------------------------------
# TorchScript


def _kind(module: nn.Module) -> str:
    return getattr(module, "original_name", type(module).__name__)


class TorchScriptAdapter(Adapter):
    """TorchScript modules refuse Python forward hooks, and run their submodules inside the
    compiled graph. Two ways in remain: a scripted ``nn.Sequential`` is run child by child from
    Python (its children, and nested Sequentials' children, become layers), and a model whose
    ``forward`` returns a tuple exposes its elements as virtual layers ``outputs.K``."""

    def __init__(self, module: nn.Module) -> None:
        returns = cast("torch._C.ScriptMethod[..., Any]", module.forward).schema.returns
        rtype = returns[0].type if len(returns) == 1 else None
        self.n_outputs = len(rtype.elements()) if isinstance(rtype, torch._C.TupleType) else 0
        self.virtual_names = tuple(f"outputs.{k}" for k in range(self.n_outputs))
        self.sequential = _kind(module) == "Sequential"
        works = "its children (run one by one)" if self.sequential else "none of its submodules"
        self.hook_hint = (
            f"; TorchScript takes no Python hooks, so for this scripted {_kind(module)} laya-inspect can read {works}"
            + (f" and the outputs {', '.join(self.virtual_names)}" if self.virtual_names else "")
            + ". Export a forward that returns the tensors you want as a tuple and pick them with "
            "--layers outputs.K, or load the Python model with python:pkg.module:factory --weights FILE"
        )

    def hookable(self, module: nn.Module) -> list[str]:
        if not self.sequential:
            return []
        names: list[str] = []

        def walk(mod: nn.Module, prefix: str) -> None:
            for name, child in mod.named_children():
                names.append(prefix + name)
                if _kind(child) == "Sequential":
                    walk(child, prefix + name + ".")

        walk(module, "")
        return names

    def forward(
        self,
        module: nn.Module,
        inputs: Any,
        names: Sequence[str],
        record: Callable[[str, nn.Module, Any], None],
        want_virtual: bool,
    ) -> Any:
        if not names:
            return self.call(module, inputs, want_virtual)
        bad = [n for n in names if n not in set(self.hookable(module))]
        if bad:
            raise InputError(f"cannot read layer(s) {', '.join(map(repr, bad))}{self.hook_hint}")
        wanted = set(names)

        def run(mod: nn.Module, x: Any, prefix: str) -> Any:
            for name, child in mod.named_children():
                full = prefix + name
                inside = _kind(child) == "Sequential" and any(w.startswith(full + ".") for w in wanted)
                x = run(child, x, full + ".") if inside else child(x)
                if full in wanted:
                    record(full, child, x)
            return x

        return run(module, inputs, "")

    def virtual(self, output: Any, name: str) -> Any:
        return output[int(name.split(".", 1)[1])]

    def logits(self, output: Any, num_classes: int | None) -> torch.Tensor | None:
        return None if self.n_outputs else super().logits(output, num_classes)


@SOURCES.register("torchscript")
def load_torchscript(
    path: str, *, weights: str | None = None, trust_pickle: bool = False, device: str = "cpu"
) -> LoadedModel:
    """``torchscript:FILE`` from ``torch.jit.save``; ``weights`` (optional) are loaded on top, strictly."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise NotFoundError(f"no TorchScript file {path!r}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch.jit.* deprecation notices
            module = torch.jit.load(str(p), map_location=device)
    except RuntimeError as e:
        raise InputError(f"{p} is not a TorchScript archive (torch.jit.save): {str(e).splitlines()[0]}") from None
    files = [p]
    if weights is not None:
        state = to_state_dict(read_checkpoint(weights, trust_pickle=trust_pickle), source=str(weights))
        load_state_dict_strict(module, state, source=str(weights))
        files.append(Path(weights))
    adapter = TorchScriptAdapter(module)
    if adapter.virtual_names:
        default, num_classes = list(adapter.virtual_names), None
    else:
        default = blocks_of(module) if adapter.sequential else []
        head = last_linear(module)
        num_classes = int(head[1].weight.shape[0]) if head else None
    return LoadedModel(
        module=freeze(module, device),
        spec=f"torchscript:{path}",
        source="torchscript",
        input_spec=InputSpec(kind="image"),
        default_layers=default,
        num_classes=num_classes,
        weights_path=str(weights or p),
        weights_sha256=sha256_files(files),
        device=str(device),
        adapter=adapter,
    )


# ---------------------------------------------------------------------------------------------
# python:pkg.module:factory


@SOURCES.register("python")
def load_python(
    target: str, *, weights: str | None = None, trust_pickle: bool = False, device: str = "cpu"
) -> LoadedModel:
    """``python:pkg.module:factory``: import the module, call ``factory()`` (no arguments) → ``nn.Module``.

    The module may carry ``input_spec`` (an :class:`InputSpec` or a dict of its fields),
    ``default_layers`` and ``num_classes``; otherwise: image input, top-level blocks, and the
    last ``nn.Linear``'s width as the class count.
    """
    mod_name, sep, attr = target.rpartition(":")
    if not sep or not mod_name or not attr:
        raise InputError(f"python model spec {target!r} must look like python:pkg.module:factory")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise NotFoundError(f"cannot import {mod_name!r} for python:{target}: {e}") from None
    factory = getattr(mod, attr, None)
    if not callable(factory):
        public = [n for n in dir(mod) if not n.startswith("_") and callable(getattr(mod, n))]
        raise NotFoundError(f"module {mod_name!r} has no factory {attr!r}; {suggest(attr, public)}")
    with seeded():
        model = factory()
    if not isinstance(model, nn.Module):
        raise InputError(f"python:{target} returned a {type(model).__name__}, not a torch.nn.Module")
    sha = None if weights is None else load_weights(model, weights, trust_pickle=trust_pickle)
    spec = getattr(model, "input_spec", None)
    if isinstance(spec, dict):
        spec = InputSpec(**spec)
    num_classes = getattr(model, "num_classes", None)
    if not isinstance(num_classes, int):
        head = last_linear(model)
        num_classes = head[1].out_features if head else None
    return LoadedModel(
        module=freeze(model, device),
        spec=f"python:{target}",
        source="python",
        input_spec=spec or InputSpec(kind="image"),
        default_layers=list(getattr(model, "default_layers", None) or blocks_of(model)),
        num_classes=num_classes,
        weights_path=None if weights is None else str(weights),
        weights_sha256=sha,
        device=str(device),
    )


# ---------------------------------------------------------------------------------------------
# zoo


def _zoo_input_spec(model: nn.Module) -> InputSpec:
    kw = cast(dict[str, Any], model.kwargs)  # every zoo model sets .kwargs
    if model.arch == "bilstm":
        return InputSpec(kind="tokens", max_length=kw["max_len"], vocab_size=kw["vocab_size"])
    c, h, _w = kw["in_shape"]
    return InputSpec(kind="image", channels=c, size=h)  # scaled to [0, 1], no mean/std (as trained)


@SOURCES.register("zoo")
def load_zoo(name: str, *, weights: str | None = None, trust_pickle: bool = False, device: str = "cpu") -> LoadedModel:
    """``zoo:mlp|cnn|bilstm``: a zoo checkpoint (kwargs rebuilt from it), a plain state dict for the
    default kwargs, or, without ``weights``, default kwargs with seeded random weights."""
    ZOO.get(name)
    sha, vocab = None, None
    if weights is None:
        with seeded():
            model = build_zoo(name)
    else:
        obj = read_checkpoint(weights, trust_pickle=trust_pickle)
        if is_zoo_checkpoint(obj):
            model = model_from_checkpoint(obj, expected=name, source=str(weights))
            if obj.get("vocab"):  # word ids of a text model trained by `laya-inspect train`
                from ..data.words import WordVocab

                vocab = WordVocab(tuple(obj["vocab"]))
        else:
            kwargs = (
                getattr(obj, "kwargs", {}) if isinstance(obj, nn.Module) and getattr(obj, "arch", None) == name else {}
            )
            model = build_zoo(name, **{k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()})
            load_state_dict_strict(model, to_state_dict(obj, source=str(weights)), source=str(weights))
        sha = sha256_file(weights)
    return LoadedModel(
        module=freeze(model, device),
        spec=f"zoo:{name}",
        source="zoo",
        input_spec=_zoo_input_spec(model),
        default_layers=DEFAULT_LAYERS[name](model),
        num_classes=cast(dict[str, Any], model.kwargs)["num_classes"],
        tokenizer=vocab,
        weights_path=None if weights is None else str(weights),
        weights_sha256=sha,
        device=str(device),
    )
