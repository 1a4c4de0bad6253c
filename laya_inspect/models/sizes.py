"""The parameter count of each layer whose own module does not hold the op that made its output: a
layer read from a model's output (a Hugging Face ``hidden_states.k``), which no module holds, and a
hooked activation, pool or norm read after a conv or linear layer that is not cached (a plain
Sequential's unit, Conv–BN–ReLU, read after its ReLU). The cache's ``layer_params`` (and ``layer_ops``)
for such a layer, from which the shapes estimate of backbone compute (docs/METHOD.md, "Backbone
compute") counts a block's or a unit's multiply-adds and the size of the embeddings table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any


def output_state_params(model: Any, inputs: Any) -> dict[str, int]:
    """``{name: parameters}`` for each of the model's output states (``model.adapter.virtual_names``)
    that a module returned: those of the modules first called after the previous state was made, up
    to the first module that returned this very tensor (``hidden_states.0``: the embeddings;
    ``hidden_states.k``: block k; the last one with a final norm such as GPT-2's ``ln_f``).

    A state no module returned (computed in a parent's own forward) gets no count, nor does the one after
    it, whose window has no known start; so a TorchScript archive, which takes no hooks, gets none.
    """
    import torch

    names = list(model.adapter.virtual_names)
    if not names or isinstance(model.module, torch.jit.ScriptModule):
        return {}
    sizes = _own_sizes(model.module)
    tick = [0]
    first_call: dict[int, int] = {}
    made: dict[int, tuple[int, Any]] = {}  # the tensor held too, so no id is reused while the model runs

    def pre(m: Any, _args: Any) -> None:
        tick[0] += 1
        first_call.setdefault(id(m), tick[0])

    def returned(_m: Any, _args: Any, out: Any) -> None:
        tick[0] += 1
        parts = out.values() if isinstance(out, Mapping) else out if isinstance(out, (tuple, list)) else [out]
        for t in parts:
            if isinstance(t, torch.Tensor):
                made.setdefault(id(t), (tick[0], t))

    modules = list(model.module.modules())
    handles = [m.register_forward_pre_hook(pre) for m in modules if sizes[id(m)]]
    handles += [m.register_forward_hook(returned) for m in modules]
    try:
        with torch.no_grad():
            out = model.forward(inputs, [], lambda *_: None, True)
    finally:
        for h in handles:
            h.remove()
    counts: dict[str, int] = {}
    start: int | None = 0
    for name in names:
        end = made.get(id(model.adapter.virtual(out, name)))
        if end is not None and start is not None and end[0] > start:
            counts[name] = sum(sizes[i] for i, t in first_call.items() if start < t <= end[0])
        start = end[0] if end is not None else None
    return counts


def _own_sizes(root: Any) -> dict[int, int]:
    """``{id(module): parameters it holds itself}``, a tensor shared by two modules (BERT's word
    embeddings and its decoder) counted once."""
    sizes: dict[int, int] = {}
    seen: set[int] = set()
    for m in root.modules():
        own = [p for p in m.parameters(recurse=False) if id(p) not in seen]
        seen.update(id(p) for p in own)
        sizes[id(m)] = sum(p.numel() for p in own)
    return sizes


def _is_op(m: Any) -> bool:
    """A module holding weights of its own that map its input (a conv, a linear layer), not a norm's scale."""
    return any(True for _ in m.parameters(recurse=False)) and "Norm" not in type(m).__name__


@contextmanager
def unit_sizes(root: Any, modules: Mapping[str, Any], names: Sequence[str]) -> Iterator[dict[str, tuple[int, str]]]:
    """Hooks for one forward pass run in the body; on exit the yielded dict holds ``{name: (parameters,
    op class)}`` for each hooked layer in ``names`` that holds no op of its own (an activation, a pool,
    a norm) but reads one no other of ``names`` does: the parameters of the modules first called after
    the previous layer in ``names`` made its output, up to this one's (its own norm's included), and the
    class of the last op among them (``Conv2d``). Counted alone, a ReLU read after its conv held 0
    parameters and the shapes estimate took the unit for a per-element op, its conv's cost unseen.

    A TorchScript module takes no hooks: the dict stays empty. The hooks are removed on exit, also when
    the body raises.
    """
    import torch

    found: dict[str, tuple[int, str]] = {}
    hooked = [n for n in names if n in modules and not any(_is_op(m) for m in modules[n].modules())]
    if not hooked or isinstance(root, torch.jit.ScriptModule):
        yield found
        return
    sizes = _own_sizes(root)
    tick = [0]
    first_call: dict[int, tuple[int, Any]] = {}
    made: dict[str, int] = {}

    def pre(m: Any, _args: Any) -> None:
        tick[0] += 1
        first_call.setdefault(id(m), (tick[0], m))

    def returned(name: str) -> Any:
        def hook(_m: Any, _args: Any, _out: Any) -> None:
            tick[0] += 1
            made[name] = tick[0]  # a module run twice: where its last output was made, as capture keeps

        return hook

    handles = [m.register_forward_pre_hook(pre) for m in root.modules() if sizes[id(m)]]
    handles += [modules[n].register_forward_hook(returned(n)) for n in names if n in modules]
    try:
        yield found
    finally:
        for h in handles:
            h.remove()
    start = 0
    for name in sorted(made, key=made.__getitem__):
        window = [(t, m) for t, m in first_call.values() if start < t <= made[name]]
        ops = [m for _, m in sorted(window, key=lambda tm: tm[0]) if _is_op(m)]
        if name in hooked and ops:
            found[name] = (sum(sizes[id(m)] for _, m in window), type(ops[-1]).__name__)
        start = made[name]


def with_units(
    units: Mapping[str, tuple[int, str]], names: Sequence[str], counts: Sequence[int | None], types: Sequence[str]
) -> tuple[list[int | None], list[str]]:
    """The cache's ``layer_params`` and ``layer_ops``: each layer's own count and class (``counts``,
    ``types``), or its unit's, where :func:`unit_sizes` found one."""
    params = [units[n][0] if n in units else c for n, c in zip(names, counts)]
    return params, [units[n][1] if n in units else t for n, t in zip(names, types)]
