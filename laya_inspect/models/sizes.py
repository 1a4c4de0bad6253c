"""The parameter count of each layer read from a model's output (a Hugging Face ``hidden_states.k``),
which no module holds: the cache's ``layer_params`` for such a layer, from which the shapes estimate of
backbone compute (docs/METHOD.md, "Backbone compute") counts a block's multiply-adds and the size of the
embeddings table.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    sizes: dict[int, int] = {}
    seen: set[int] = set()  # a tied tensor (BERT's word embeddings and its decoder) counted once
    for m in model.module.modules():
        own = [p for p in m.parameters(recurse=False) if id(p) not in seen]
        seen.update(id(p) for p in own)
        sizes[id(m)] = sum(p.numel() for p in own)
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
