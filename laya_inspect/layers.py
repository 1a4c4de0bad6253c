"""Layers by stable names: resolve what the user asked for, hook it, pool it to (N, D).

Shapes: N samples, T tokens / time steps, C channels, H×W spatial, D width.

* :func:`resolve_layers` turns ``--layers`` (names, indices, ranges, ``all``) into module names;
  :func:`depth_order` puts them in the order the model computes them.
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
from functools import lru_cache
from typing import Any, TypeGuard

import torch
from torch import Tensor, nn

from .errors import InputError, NotFoundError, suggest

POOLINGS = ("auto", "gap", "cls", "mean", "max", "last", "flatten")
RNN_TYPES = ("LSTM", "GRU", "RNN")  # class names, so TorchScript copies (original_name) count too

NAMED = "name:"  # --layers name:7 is the module named "7", not index 7
_INT = re.compile(r"-?[0-9]+")
_RANGE = re.compile(r"(-?[0-9]+)?:(-?[0-9]+)?(?::(-?[0-9]+)?)?")
_LIST_HINT = "run with --list-layers to see every layer name"


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


def _items(requested: str | Sequence[str]) -> list[str]:
    parts = [requested] if isinstance(requested, str) else [str(r) for r in requested]
    return [item.strip() for part in parts for item in part.split(",") if item.strip()]


def _select(
    item: str, candidates: Sequence[str], default: Sequence[str], hint: str, among: str, more: str
) -> list[str]:
    """The layer names one comma-separated item stands for (never empty; raises otherwise)."""
    listing = f"{among}: {', '.join(default)}"
    if item.startswith(NAMED):  # a module named by a number ("7" in an nn.Sequential), which 7 alone indexes
        if (name := item[len(NAMED) :]) in candidates or name in default:
            return [name]
        raise NotFoundError(f"no layer {name!r}; {suggest(name, list(candidates) or list(default))}; {more}")
    if item == "all" or _INT.fullmatch(item) or _RANGE.fullmatch(item):
        if not default:
            named = f"; it has {len(candidates)} other layer names" if candidates else ""
            raise InputError(
                f"--layers {item!r} picks from the model's default layers, and this model has none{named}"
                f"{hint}; {more}, then name the layers"
            )
    if item == "all":
        return list(default)
    if _INT.fullmatch(item):
        i = int(item)
        if not -len(default) <= i < len(default):
            valid = f"0..{len(default) - 1} or -{len(default)}..-1"
            named = (
                f" (integers are indices: give {NAMED}{item} for the module named {item!r})"
                if item in candidates
                else ""
            )
            raise NotFoundError(f"layer index {i} is out of range{named}: valid are {valid} over {listing}")
        return [default[i]]
    if m := _RANGE.fullmatch(item):
        a, b, step = (int(g) if g is not None else None for g in m.groups())
        if step == 0:
            raise InputError(f"layer range {item!r} has step 0; use a:b or a:b:k with k ≠ 0")
        picked = list(default)[slice(a, b, step)]
        if not picked:
            raise InputError(f"layer range {item!r} selects none of {listing}")
        return picked
    if item in candidates or item in default:
        return [item]
    raise NotFoundError(f"no layer {item!r}; {suggest(item, list(candidates) or list(default))}; {more}")


def resolve_layers(
    requested: str | Sequence[str],
    candidates: Sequence[str],
    default: Sequence[str],
    *,
    hint: str = "",
    among: str | None = None,
    more: str = _LIST_HINT,
) -> list[str]:
    """Resolve a ``--layers`` request to a non-empty list of distinct layer names, in the order asked
    (:func:`depth_order` then puts them in the model's order).

    Each comma-separated item is ``all`` (= ``default``), an integer index into ``default``
    (negatives count from the end), a python slice ``a:b`` or ``a:b:step`` over ``default``,
    or a dotted name from ``candidates``. Integers are always indices, never module names: ``name:7``
    is the module named "7".
    Anything that would select nothing, or a name twice, is refused with one line: an empty
    request, ``all``/indices/ranges when the model has no default layers (``hint`` says why, e.g.
    TorchScript's missing hooks), an index out of range, a range selecting none, an unknown name
    (:class:`NotFoundError` with close matches), or the same layer from two items. ``among`` names
    ``default`` in those lines (the model's default layers unless given) and ``more`` says where the
    other names are (``--list-layers``).
    """
    items = _items(requested)
    default = list(dict.fromkeys(default))
    among = among or f"the model's {len(default)} default layers"
    if not items:
        shown = ", ".join(default) or "(none)"
        raise InputError(f"no layers requested; give names, indices, a range a:b or 'all'; default: {shown}")
    chosen: dict[str, str] = {}  # layer → the item that selected it
    for item in items:
        for name in _select(item, candidates, default, hint, among, more):
            if name in chosen:
                by = f"by {chosen[name]!r} and {item!r}" if chosen[name] != item else f"twice by {item!r}"
                also = " ('all' already stands for every default layer)" if "all" in (chosen[name], item) else ""
                raise InputError(f"--layers selects {name!r} more than once ({by}); name each layer once{also}")
            chosen[name] = item
    return list(chosen)


def parameter_counts(modules: Mapping[str, nn.Module], names: Sequence[str]) -> list[int | None]:
    """Each layer's parameter count (its submodules' included, a shared tensor once), None for a
    name no module holds (a hidden state read from the output): the cache's ``layer_params``, from
    which the shapes estimate of backbone compute takes a conv's kernel size."""
    return [sum(p.numel() for p in modules[n].parameters()) if n in modules else None for n in names]


def module_kind(m: nn.Module) -> str:
    """A module's class name (``Linear``), a TorchScript copy's too: its type is ``RecursiveScriptModule``,
    and it keeps the class name in ``original_name``."""
    return getattr(m, "original_name", None) or type(m).__name__


def depth_order(names: Sequence[str], order: Sequence[str], of: str) -> tuple[list[str], str | None]:
    """``names`` in the order they stand in ``order`` (which holds each of them), and a warning line
    when that is not the order they were given in; ``of`` says what ``order`` is, for that line.

    Caches keep their layers in depth order: the ``last`` head, the probes and early-exit read the
    last layer as the deepest.
    """
    rank = {name: i for i, name in enumerate(order)}
    ordered = sorted(names, key=rank.__getitem__)
    if ordered == list(names):
        return ordered, None
    return (
        ordered,
        f"--layers {','.join(names)} named the layers out of depth order; they are kept in {of}: {', '.join(ordered)}",
    )


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
    targets = [_submodule(module, name) for name in names]  # by path: extract hooks every batch
    handles = []
    try:
        for name, target in zip(names, targets):
            try:
                handles.append(target.register_forward_hook(lambda m, args, out, name=name: record(name, m, out)))
            except RuntimeError as e:  # TorchScript modules refuse Python hooks
                raise InputError(
                    f"layer {name!r} cannot be hooked ({e}); pick a plain nn.Module above or below it"
                ) from None
        yield
    finally:
        for handle in handles:
            handle.remove()


def _submodule(module: nn.Module, name: str) -> nn.Module:
    """The submodule at dotted path ``name`` (``""``: the module itself), found by its path rather
    than by listing every module; a name that is not one raises :class:`NotFoundError`."""
    try:
        return module.get_submodule(name)
    except AttributeError:
        known = [n for n, _ in module.named_modules() if n]
        raise NotFoundError(f"no module {name!r} in {type(module).__name__}; {suggest(name, known)}") from None


@contextmanager
def capture(module: nn.Module, names: Sequence[str]) -> Iterator[dict[str, Any]]:
    """Yield a dict that forward hooks on ``names`` fill with each module's raw output.

    The dict holds the outputs in the order they were made; a module called several times in one
    forward keeps its last output, in the place of that last call. Outputs are cloned because
    in-place ops later in the forward would otherwise change them; the clone keeps autograd history,
    so this also works inside a training step. Unknown names raise :class:`NotFoundError`; the hooks
    are removed on exit, also when the body raises.
    """
    store: dict[str, Any] = {}

    def record(name: str, _m: nn.Module, out: Any) -> None:
        store.pop(name, None)  # a second call moves the name to where its output now stands
        store[name] = snapshot(out)

    with hooks(module, names, record):
        yield store


# ---------------------------------------------------------------------------------------------
# pooling


def forward_answer(output: Any) -> Any:
    """What a forward's output holds as the model's answer: the first of a tuple, a dict's "logits"
    (a user's forward may return ``{"logits": …, "feats": …}``), else the output itself."""
    out = output[0] if isinstance(output, (tuple, list)) and output else output
    return out.get("logits") if isinstance(out, Mapping) else out


def is_forward_output(layer: Any, out: Any) -> bool:
    """Whether a captured ``layer`` output is, value for value, the 2-D tensor the forward returned
    (``out``): a layer chosen there is most likely the model's logits, not a hidden layer."""
    return (
        isinstance(layer, Tensor)
        and isinstance(out, Tensor)
        and layer.ndim == 2
        and layer.shape == out.shape
        and bool(torch.equal(layer, out))
    )


def is_rnn(module: nn.Module | None) -> TypeGuard[nn.Module]:
    return isinstance(module, nn.RNNBase) or getattr(module, "original_name", None) in RNN_TYPES


def _tensors(obj: Any) -> Iterator[Tensor]:
    """The tensors in a (nested) tuple, list, dict or ``ModelOutput``, in order."""
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, nn.utils.rnn.PackedSequence):
        yield nn.utils.rnn.pad_packed_sequence(obj, batch_first=True)[0]
    else:
        if hasattr(obj, "to_tuple"):  # transformers ModelOutput
            obj = obj.to_tuple()
        values = obj.values() if isinstance(obj, Mapping) else obj if isinstance(obj, (tuple, list)) else ()
        for value in values:
            yield from _tensors(value)


def _first_tensor(obj: Any) -> Tensor:
    """The first tensor with a batch axis in a (nested) tuple, list, dict or ``ModelOutput``. A
    0-dim one (an auxiliary loss, a count) holds nothing per row and is passed over; one number per
    row first, beside a tensor of more axes (a score and the features it was taken from), is refused:
    which of them is the layer's state is the user's to say."""
    found = [t for t in _tensors(obj) if t.ndim > 0]
    if not found:
        raise InputError(f"layer output of type {type(obj).__name__} holds no tensor with a batch axis to pool")
    first, wider = found[0], next((t for t in found[1:] if t.ndim > 1), None)
    if first.ndim == 1 and wider is not None:
        raise InputError(
            f"its output ({type(obj).__name__}) holds one number per row first (N,) and an "
            f"(N, {', '.join(map(str, wider.shape[1:]))}) tensor after it: which of them is the layer's state "
            "is not clear; give --layers the submodule that makes the one wanted (--list-layers names them), "
            "or return it first"
        )
    return first


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
    """The (N, T) mask as x's dtype, for x = (N, T', D). A layer of more tokens (a model that pads
    further inside, as Longformer to its window) has padding in the positions past T; one of fewer
    (Funnel pools its tokens) cannot be told its padding, refused where the batch holds any."""
    if mask is None or x.ndim != 3 or mask.shape[0] != x.shape[0]:
        return None
    m = mask.to(device=x.device, dtype=x.dtype)
    tokens, given = int(x.shape[1]), int(mask.shape[1])
    if tokens == given:
        return m
    if tokens > given:  # the positions past the texts' are the model's own padding, with or without ours
        return torch.nn.functional.pad(m, (0, tokens - given))
    if bool((m > 0).all()):  # no padding in this batch: every position is a token
        return None
    raise InputError(
        f"this layer has {tokens} positions where the padded texts have {given} tokens (the model merges tokens), "
        "so its padding cannot be left out of mean, max or last; use --pool cls (its first position) or other --layers"
    )


def mean_after(prefix: int) -> str:
    """The ``sequence`` rule (and recorded pooling) "mean over the tokens after the first ``prefix``":
    what a model's own head averages when class, register or start tokens stand in front."""
    return f"mean[{prefix}:]" if prefix > 0 else "mean"


def _prefix(how: str) -> int:
    m = re.fullmatch(r"mean\[([0-9]+):\]", how)
    return int(m.group(1)) if m else 0


def _skip_prefix(x: Tensor, m: Tensor | None, prefix: int) -> tuple[Tensor, Tensor | None]:
    """x (N, T, D) and its mask without the first ``prefix`` tokens; a row with nothing after them
    (an empty text: its start token alone) keeps them, so it is not pooled to zeros."""
    if x.ndim != 3 or x.shape[1] <= prefix:
        return x, m
    if m is None:
        return x[:, prefix:], None
    after = m.clone()
    after[:, :prefix] = 0
    return x, torch.where(after.sum(1, keepdim=True) > 0, after, m)


def _shape(x: Tensor) -> str:
    return "(N, " + ", ".join(str(s) for s in x.shape[1:]) + ")"


def image_size_of(inputs: Any) -> tuple[int, int] | None:
    """(H, W) of a batch of images (B, C, H, W); None for any other input."""
    return (int(inputs.shape[-2]), int(inputs.shape[-1])) if isinstance(inputs, Tensor) and inputs.ndim == 4 else None


@lru_cache(maxsize=256)
def patch_grid(tokens: int, image_hw: tuple[int, int]) -> bool:
    """True when ``tokens`` positions are the patches of an image of ``image_hw`` and nothing else:
    h × w for some whole patch stride s, with h = H / s and w = W / s rounded down or up. Patches
    alone are what MLP-Mixer, Swin or a ViT without a class token give; a class token makes it
    h·w + 1."""
    ih, iw = image_hw
    for s in range(1, max(ih, iw) + 1):
        for h in {ih // s, -(-ih // s)}:
            if h and tokens % h == 0 and tokens // h in (iw // s, -(-iw // s)):
                return True
    return False


def pool(
    output: Any,
    how: str = "auto",
    module: nn.Module | None = None,
    *,
    mask: Tensor | None = None,
    sequence: str = "cls",
    image_hw: tuple[int, int] | None = None,
) -> tuple[Tensor, str]:
    """Reduce one layer's raw output to ``(tensor (N, D) float, decided)``.

    ``auto``: RNN (LSTM/GRU/RNN) → final hidden state of the last layer, both directions
    concatenated (``final_hidden``); 4-D (N, C, H, W) → ``gap``; 3-D (N, T, D) → ``sequence``: ``cls``
    (token 0), or ``mean`` for a model whose token 0 does not summarise the input (a decoder such as
    GPT-2, T5's encoder), or ``mean[K:]``, the mean after K tokens that stand in front (a ViT pooled
    by the mean after its class and register tokens, a decoder's start token), and ``mean`` for the patches of an image
    (``image_hw``, the input's H, W) when they are all there is (:func:`patch_grid`);
    2-D → as is (``none``); ≥5-D → ``mean`` over everything after C. Tuples, lists, dicts and
    ``ModelOutput``s are pooled through their first tensor. Explicit: ``gap`` (4-D only), ``cls``,
    ``mean``/``max`` (over tokens or spatial positions), ``last`` (last token / time step),
    ``flatten``. A 2-D output has nothing to pool and passes through every method but ``gap``.
    ``mask`` (N, T), e.g. an attention mask, makes ``mean``/``max``/``last`` skip padding.
    """
    if how not in POOLINGS and not _prefix(how):
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
        patches = x.ndim == 3 and image_hw is not None and patch_grid(int(x.shape[1]), tuple(image_hw))
        how = {2: "none", 3: "mean" if patches else sequence, 4: "gap"}.get(x.ndim, "mean")
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
    m = _masked(x, mask) if how != "cls" else None
    decided = how
    if _prefix(how):
        x, m = _skip_prefix(x, m, _prefix(how))
        how = "mean"
    if how == "cls":
        out = x[:, 0]
    elif how == "last":
        if m is None:
            out = x[:, -1]
        else:  # last position where the mask is 1 (works for left or right padding)
            # positions as integers: in x's dtype (bfloat16 under --amp) 395 and 396 are one number
            idx = ((m > 0).long() * torch.arange(x.shape[1], device=x.device)).argmax(1)
            out = x[torch.arange(x.shape[0], device=x.device), idx]
    elif x.ndim == 3 and m is not None:
        if how == "mean":
            out = (x * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp_min(1)
        else:
            out = x.masked_fill(m[..., None] == 0, float("-inf")).amax(1)
    else:
        dims = (1,) if x.ndim == 3 else tuple(range(2, x.ndim))
        out = x.mean(dims) if how in ("mean", "gap") else x.amax(dims)
    return out.reshape(out.shape[0], -1).float(), decided


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
    sequence: str | Mapping[str, str] = "cls",
    image_hw: tuple[int, int] | None = None,
) -> tuple[dict[str, Tensor], dict[str, str], dict[str, tuple[int, ...]]]:
    """Pool each layer of one batch.

    ``pooling_request`` is one method for every layer or a ``{name: method}`` dict (missing
    names → ``auto``; ``sequence`` (one rule, or ``{name: rule}``, missing names → ``cls``) and
    ``image_hw``: what ``auto`` takes of a token sequence, as :func:`pool`).
    ``modules`` is the root module or a ``{name: module}`` dict (virtual
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
            rule = sequence if isinstance(sequence, str) else sequence.get(name, "cls")
            pooled[name], decided[name] = pool(raw[name], how, module, mask=mask, sequence=rule, image_hw=image_hw)
        except InputError as e:
            raise InputError(f"layer {name!r}: {e}") from None
        shapes[name] = raw_shape(raw[name], module)
    return pooled, decided, shapes


# ---------------------------------------------------------------------------------------------
# listing


def list_layers(model: Any, inputs: Any = None) -> list[LayerInfo]:
    """Every layer ``--layers`` accepts, with its output shape from one forward pass on ``inputs``.

    ``model`` is a :class:`~laya_inspect.models.LoadedModel` (virtual layers such as HF
    ``hidden_states.K`` come first, then the modules it can hook) or a plain ``nn.Module`` called
    as ``model(inputs)``. Without ``inputs`` a LoadedModel runs on a dummy batch built from its
    ``input_spec``; when the spec leaves the shape open, or the model rejects the dummy batch, every
    shape is None. Given ``inputs`` the model rejects raise :class:`InputError`. Modules that did
    not run get ``shape=None``.
    """
    loaded = model if hasattr(model, "adapter") else None
    dummy = inputs is None and loaded is not None
    if loaded is not None and inputs is None:
        inputs = loaded.example_inputs()
    module: nn.Module = loaded.module if loaded is not None else model
    virtual = list(loaded.adapter.virtual_names) if loaded is not None else []
    default = set(loaded.default_layers) if loaded is not None else set()
    named = dict(module.named_modules())
    hookable = loaded.adapter.hookable(module) if loaded is not None else [n for n in named if n]
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
                try:
                    out = loaded.forward(inputs, hookable, record, bool(virtual))
                except InputError:
                    if not dummy:
                        raise
                    shapes.clear()  # a guessed batch the model does not take: list the names alone
            else:
                with hooks(module, hookable, record):
                    out = module(inputs)
    infos = []
    for name in virtual:
        assert loaded is not None  # virtual is empty without a LoadedModel
        try:
            shape = None if out is None else raw_shape(loaded.adapter.virtual(out, name))
        except (InputError, IndexError, KeyError):
            shape = None
        infos.append(LayerInfo(name, "virtual", shape, name in default, loaded.role(name)))
    for name in hookable:
        role = loaded.role(name) if loaded is not None else "module"
        infos.append(LayerInfo(name, module_kind(named[name]), shapes.get(name), name in default, role))
    return infos
