"""Layers by stable names: resolve what the user asked for, hook it, pool it to (N, D).

Shapes: N samples, T tokens / time steps, C channels, H×W spatial, D width.

* :func:`resolve_layers` turns ``--layers`` (names, indices, ranges, ``all``) into module names.
* :func:`capture` owns the forward hooks for one forward pass and always removes them
  (:func:`hooks` is the same with a callback instead of a dict).
* :func:`pool` reduces one layer's raw output to an (N, D) float tensor and says how it did.
* :func:`reduce_batch` pools every captured layer of a batch (what extraction calls).
* :func:`list_layers` names every hookable layer with its output shape, from one dry batch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeGuard

import torch
from torch import Tensor, nn

from .errors import InputError, NotFoundError, suggest

POOLINGS = ("auto", "gap", "cls", "mean", "max", "last", "flatten")
RNN_TYPES = ("LSTM", "GRU", "RNN")  # class names, so TorchScript copies (original_name) count too

_INT = re.compile(r"^-?\d+$")
_RANGE = re.compile(r"^(-?\d*):(-?\d*)(?::(-?\d+))?$")


@dataclass(frozen=True)
class LayerInfo:
    """One hookable layer: its name, module class, and output shape without the batch axis."""

    name: str
    type: str
    shape: tuple[int, ...] | None  # None: the module did not run in the dry batch
    default: bool = False  # part of the model's default layers (what ``all`` means)
    role: str = "module"


# ---------------------------------------------------------------------------------------------
# resolve


def resolve_layers(requested: str | Sequence[str], candidates: Sequence[str], default: Sequence[str]) -> list[str]:
    """Resolve a ``--layers`` request to layer names, in the order asked, without duplicates.

    Each comma-separated item is ``all`` (= ``default``), an integer index into ``default``
    (negatives count from the end), a python slice ``a:b`` or ``a:b:step`` over ``default``,
    or a dotted name from ``candidates``. Integers are always indices, never module names.
    """
    items = requested.split(",") if isinstance(requested, str) else list(requested)
    items = [str(i).strip() for i in items if str(i).strip()]
    if not items:
        raise InputError(
            f"no layers requested; give names, indices, a range a:b or 'all'; default: {', '.join(default)}"
        )
    known = set(candidates) | set(default)
    out: list[str] = []
    for item in items:
        if item == "all":
            out.extend(default)
        elif _INT.match(item):
            i = int(item)
            if not -len(default) <= i < len(default):
                raise NotFoundError(
                    f"layer index {i} is out of range: the model has {len(default)} default layers "
                    f"(0..{len(default) - 1} or -{len(default)}..-1): {', '.join(default)}"
                )
            out.append(default[i])
        elif m := _RANGE.match(item):
            a, b, step = (int(g) if g not in (None, "") else None for g in m.groups())
            if step == 0:
                raise InputError(f"layer range {item!r} has step 0")
            picked = list(default)[slice(a, b, step)]
            if not picked:
                raise InputError(
                    f"layer range {item!r} selects none of the {len(default)} default layers: {', '.join(default)}"
                )
            out.extend(picked)
        elif item in known:
            out.append(item)
        else:
            raise NotFoundError(f"no layer {item!r}; {suggest(item, list(candidates) or list(default))}")
    return list(dict.fromkeys(out))


# ---------------------------------------------------------------------------------------------
# hooks


def snapshot(obj: Any) -> Any:
    """Copy tensors so a later in-place op (``ReLU(inplace=True)``, ``+=``) cannot change them."""
    if isinstance(obj, Tensor):
        return obj.clone()
    if type(obj) in (tuple, list):
        return type(obj)(snapshot(o) for o in obj)
    return obj


@contextmanager
def hooks(module: nn.Module, names: Sequence[str], record: Callable[[str, nn.Module, Any], None]) -> Iterator[None]:
    """Register ``record(name, submodule, output)`` as a forward hook on each named submodule.

    Hooks are removed in ``finally``; exceptions from the body propagate untouched.
    """
    modules = dict(module.named_modules())
    for name in names:
        if name not in modules:
            raise NotFoundError(
                f"no module {name!r} in {type(module).__name__}; {suggest(name, [n for n in modules if n])}"
            )
    handles = []
    try:
        for name in names:
            try:
                handles.append(
                    modules[name].register_forward_hook(lambda m, args, out, name=name: record(name, m, out))
                )
            except RuntimeError as e:  # TorchScript modules refuse Python hooks
                raise InputError(
                    f"layer {name!r} cannot be hooked ({e}); pick a plain nn.Module above or below it"
                ) from None
        yield
    finally:
        for handle in handles:
            handle.remove()


@contextmanager
def capture(module: nn.Module, names: Sequence[str], *, clone: bool = True) -> Iterator[dict[str, Any]]:
    """Yield a dict that forward hooks on ``names`` fill with each module's raw output.

    A module called several times in one forward keeps its last output. Outputs are cloned
    (``clone=True``) because in-place ops later in the forward would otherwise change them; the
    clone keeps autograd history, so this also works inside a training step. Unknown names raise
    :class:`NotFoundError`; the hooks are removed on exit, also when the body raises.
    """
    store: dict[str, Any] = {}

    def record(name: str, _m: nn.Module, out: Any) -> None:
        store[name] = snapshot(out) if clone else out

    with hooks(module, names, record):
        yield store


# ---------------------------------------------------------------------------------------------
# pooling


def is_rnn(module: nn.Module | None) -> TypeGuard[nn.Module]:
    if module is None:
        return False
    return isinstance(module, nn.RNNBase) or getattr(module, "original_name", None) in RNN_TYPES


def _first_tensor(obj: Any) -> Tensor:
    """The first tensor in a (nested) tuple, list, dict or ``ModelOutput``."""
    if isinstance(obj, Tensor):
        return obj
    if isinstance(obj, nn.utils.rnn.PackedSequence):
        return nn.utils.rnn.pad_packed_sequence(obj, batch_first=True)[0]
    if hasattr(obj, "to_tuple"):  # transformers ModelOutput
        obj = obj.to_tuple()
    values = obj.values() if isinstance(obj, Mapping) else obj if isinstance(obj, (tuple, list)) else ()
    for value in values:
        try:
            return _first_tensor(value)
        except InputError:
            continue
    raise InputError(f"layer output of type {type(obj).__name__} holds no tensor to pool")


def _rnn_sequence(output: Any, module: nn.Module) -> Tensor:
    """An RNN's per-step output as (N, T, D), whatever ``batch_first`` says."""
    seq = output[0] if isinstance(output, (tuple, list)) else output
    if isinstance(seq, nn.utils.rnn.PackedSequence):
        return nn.utils.rnn.pad_packed_sequence(seq, batch_first=True)[0]
    if seq.ndim == 3 and not getattr(module, "batch_first", False):
        seq = seq.transpose(0, 1)
    return seq


def _rnn_final_hidden(output: Any, module: nn.Module) -> Tensor:
    """Final hidden state of the last layer, forward and backward directions concatenated: (N, dirs·H)."""
    if not isinstance(output, (tuple, list)) or len(output) < 2:
        raise InputError(f"expected an RNN output (output, h_n), got {type(output).__name__}")
    h_n = output[1][0] if isinstance(output[1], (tuple, list)) else output[1]  # LSTM: (h_n, c_n)
    if h_n.ndim == 2:  # unbatched input
        h_n = h_n.unsqueeze(1)
    dirs = 2 if getattr(module, "bidirectional", False) else 1
    last = h_n[-dirs:]  # (dirs, N, H): the last layer's directions
    return last.permute(1, 0, 2).reshape(last.shape[1], -1)


def _masked(x: Tensor, mask: Tensor | None) -> Tensor | None:
    """The (N, T) mask as x's dtype, when it fits x = (N, T, D)."""
    if mask is None or x.ndim != 3 or tuple(mask.shape) != tuple(x.shape[:2]):
        return None
    return mask.to(device=x.device, dtype=x.dtype)


def _shape(x: Tensor) -> str:
    return "(N, " + ", ".join(str(s) for s in x.shape[1:]) + ")"


def pool(
    output: Any, how: str = "auto", module: nn.Module | None = None, *, mask: Tensor | None = None
) -> tuple[Tensor, str]:
    """Reduce one layer's raw output to ``(tensor (N, D) float, decided)``.

    ``auto``: RNN (LSTM/GRU/RNN) → final hidden state of the last layer, both directions
    concatenated (``final_hidden``); 4-D (N, C, H, W) → ``gap``; 3-D (N, T, D) → ``cls`` (token 0);
    2-D → as is (``none``); ≥5-D → ``mean`` over everything after C. Tuples, lists, dicts and
    ``ModelOutput``s are pooled through their first tensor. Explicit: ``gap`` (4-D only), ``cls``,
    ``mean``/``max`` (over tokens or spatial positions), ``last`` (last token / time step),
    ``flatten``. A 2-D output has nothing to pool and passes through every method but ``gap``.
    ``mask`` (N, T), e.g. an attention mask, makes ``mean``/``max``/``last`` skip padding.
    """
    if how not in POOLINGS:
        raise NotFoundError(f"no pooling {how!r}; {suggest(how, POOLINGS)}")
    if is_rnn(module):
        if how == "auto":
            return _rnn_final_hidden(output, module).float(), "final_hidden"
        x = _rnn_sequence(output, module)
    else:
        x = _first_tensor(output)
    if x.ndim == 1:
        x = x.unsqueeze(1)
    if how == "auto":
        how = {2: "none", 3: "cls", 4: "gap"}.get(x.ndim, "mean")
    if how == "gap" and x.ndim != 4:
        raise InputError(
            f"pooling 'gap' needs a 4-D (N, C, H, W) map; this layer gives {_shape(x)}; use mean, cls, last or flatten"
        )
    if x.ndim == 2 and how != "flatten":
        return x.float(), "none"
    if how == "flatten":
        return x.flatten(1).float(), "flatten"
    if how in ("cls", "last") and x.ndim != 3:
        raise InputError(
            f"pooling {how!r} needs a 3-D (N, T, D) sequence; this layer gives {_shape(x)}; "
            "use gap, mean, max or flatten"
        )
    m = _masked(x, mask)
    if how == "cls":
        out = x[:, 0]
    elif how == "last":
        if m is None:
            out = x[:, -1]
        else:  # last position where the mask is 1 (works for left or right padding)
            idx = (m * torch.arange(x.shape[1], device=x.device, dtype=x.dtype)).argmax(1)
            out = x[torch.arange(x.shape[0], device=x.device), idx]
    elif x.ndim == 3 and m is not None:
        if how == "mean":
            out = (x * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp_min(1)
        else:
            out = x.masked_fill(m[..., None] == 0, float("-inf")).amax(1)
    else:
        dims = (1,) if x.ndim == 3 else tuple(range(2, x.ndim))
        out = x.mean(dims) if how in ("mean", "gap") else x.amax(dims)
    return out.reshape(out.shape[0], -1).float(), how


def raw_shape(output: Any, module: nn.Module | None = None) -> tuple[int, ...]:
    """Shape of the tensor a layer's output is pooled from, without the batch axis (RNN: batch-first)."""
    x = _rnn_sequence(output, module) if is_rnn(module) else _first_tensor(output)
    return tuple(int(s) for s in x.shape[1:])


def reduce_batch(
    raw: Mapping[str, Any],
    names: Sequence[str],
    pooling_request: str | Mapping[str, str],
    modules: nn.Module | Mapping[str, nn.Module | None],
    *,
    mask: Tensor | None = None,
) -> tuple[dict[str, Tensor], dict[str, str], dict[str, tuple[int, ...]]]:
    """Pool each layer of one batch.

    ``pooling_request`` is one method for every layer or a ``{name: method}`` dict (missing
    names → ``auto``). ``modules`` is the root module or a ``{name: module}`` dict (virtual
    layers such as ``hidden_states.K`` have none). Returns ``({name: (N, D) float tensor},
    {name: decided method}, {name: raw shape without batch})``; tensors stay on their device.
    """
    if isinstance(modules, nn.Module):
        table = dict(modules.named_modules())
        lookup: Callable[[str], nn.Module | None] = table.get
    else:
        lookup = modules.get
    pooled: dict[str, Tensor] = {}
    decided: dict[str, str] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    for name in names:
        if name not in raw:
            raise InputError(f"layer {name!r} produced no output in this batch; captured: {', '.join(raw) or '(none)'}")
        how = pooling_request if isinstance(pooling_request, str) else pooling_request.get(name, "auto")
        module = lookup(name)
        try:
            pooled[name], decided[name] = pool(raw[name], how, module, mask=mask)
        except InputError as e:
            raise InputError(f"layer {name!r}: {e}") from None
        shapes[name] = raw_shape(raw[name], module)
    return pooled, decided, shapes


# ---------------------------------------------------------------------------------------------
# listing


def _type_name(module: nn.Module) -> str:
    return getattr(module, "original_name", None) or type(module).__name__


def list_layers(model: Any, inputs: Any = None) -> list[LayerInfo]:
    """Every layer ``--layers`` accepts, with its output shape from one forward pass on ``inputs``.

    ``model`` is a :class:`~laya_inspect.models.LoadedModel` (virtual layers such as HF
    ``hidden_states.K`` come first) or a plain ``nn.Module`` called as ``model(inputs)``.
    Without ``inputs`` a LoadedModel runs on a dummy batch built from its ``input_spec``; when
    the spec leaves the shape open, no forward runs and every shape is None. Modules that did
    not run get ``shape=None``.
    """
    loaded = model if hasattr(model, "adapter") else None
    if inputs is None and loaded is not None:
        inputs = loaded.example_inputs()
    module: nn.Module = loaded.module if loaded is not None else model
    virtual = list(loaded.adapter.virtual_names) if loaded is not None else []
    default = set(loaded.default_layers) if loaded is not None else set()
    modules = {n: m for n, m in module.named_modules() if n}
    shapes: dict[str, tuple[int, ...]] = {}

    def record(name: str, m: nn.Module, out: Any) -> None:
        try:
            shapes[name] = raw_shape(out, m)
        except (InputError, IndexError, TypeError, AttributeError):
            pass  # outputs without a tensor (None, scalars) stay unlisted

    out = None
    if inputs is not None:
        with torch.no_grad():
            if loaded is not None:
                hookable = loaded.adapter.hookable(module)
                out = loaded.adapter.forward(module, loaded.to_device(inputs), hookable, record, bool(virtual))
            else:
                with hooks(module, list(modules), record):
                    out = module(inputs)
    infos = []
    for name in virtual:
        assert loaded is not None  # virtual is empty without a LoadedModel
        try:
            shape = None if out is None else raw_shape(loaded.adapter.virtual(out, name))
        except (InputError, IndexError, KeyError):
            shape = None
        infos.append(LayerInfo(name, "virtual", shape, name in default, loaded.role(name)))
    for name, m in modules.items():
        role = loaded.role(name) if loaded is not None else "module"
        infos.append(LayerInfo(name, _type_name(m), shapes.get(name), name in default, role))
    return infos
