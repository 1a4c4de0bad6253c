"""The multiply-adds of one call of a module whose work its weights' rows do not show, counted by hand
(docs/METHOD.md, "Backbone compute"): a recurrent module (an LSTM, GRU or RNN and their cells), attention
(``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer``, whose fast path in eval mode runs none of
its submodules), a transposed conv (its weight's rows are its input's channels) and ``nn.Bilinear``; and
:func:`missed_flops`, which adds to torch's FlopCounterMode what it does not see of them, and
:func:`math_attention`, which shows it attention's matmuls.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def _blind() -> tuple[type, ...]:
    from torch import nn

    return (nn.RNNBase, nn.RNNCellBase, nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.Bilinear)


# the ops of each of :func:`_blind`'s kinds, by the class name a TorchScript copy keeps (``original_name``):
# read where a module's graph cannot be (a scripted nn.LSTM, GRU or RNN has overloads, no ``forward`` graph)
_CLASS_OPS = {
    "LSTM": ("lstm",),
    "GRU": ("gru",),
    "RNN": ("rnn_tanh", "rnn_relu"),
    "LSTMCell": ("lstm_cell",),
    "GRUCell": ("gru_cell",),
    "RNNCell": ("rnn_tanh_cell", "rnn_relu_cell"),
    "MultiheadAttention": ("_native_multi_head_attention",),
    "TransformerEncoderLayer": ("_transformer_encoder_layer_fwd", "_native_multi_head_attention"),
    "Bilinear": ("bilinear",),
}
# those ops in a TorchScript graph, whatever the module calling them is named (a subclass of nn.LSTM, a
# module calling torch.lstm itself); scaled_dot_product_attention is not one: run in its math form
# (costs.py), the counter sees its matmuls in a scripted graph as in Python
_BLIND_OPS = frozenset(f"aten::{op}" for ops in _CLASS_OPS.values() for op in ops)


def scripted_blind(root: Any) -> list[str]:
    """The names, classes and ops of ``root``'s TorchScript modules that run an op of :func:`_blind`'s kinds
    themselves, not through a scripted child (``1 (MyRNN: aten::lstm)``): they take no hooks of their own,
    so what the counter misses of theirs cannot be added."""
    import torch

    found = []
    for name, m in root.named_modules():
        if not isinstance(m, torch.jit.ScriptModule):
            continue
        ops = _blind_ops(m)
        if ops is None:  # no graph to read: its class alone tells
            ops = Counter(["its class"] if m.original_name in _CLASS_OPS else [])
        for child in m.children():
            inside = _blind_ops(child)
            if inside is not None:
                ops -= inside
                continue
            for op in _CLASS_OPS.get(getattr(child, "original_name", ""), ()):  # a child known by its class
                ops.pop(f"aten::{op}", None)
        if ops:
            found.append(f"{name or 'the model'} ({m.original_name}: {', '.join(sorted(ops))})")
    return found


def _blind_ops(m: Any) -> Counter[str] | None:
    """How often each op of :data:`_BLIND_OPS` occurs in ``m``'s forward graph, its calls inlined (its
    scripted children's with them); None where it has no ``forward`` graph (or is not scripted)."""
    try:
        graph = m.inlined_graph
    except (RuntimeError, AttributeError):
        return None
    found: Counter[str] = Counter()
    blocks = [graph]
    while blocks:
        for node in blocks.pop().nodes():
            found.update([node.kind()] if node.kind() in _BLIND_OPS else [])
            blocks.extend(node.blocks())
    return found


def covers_inside(m: Any) -> bool:
    """Whether :func:`call_macs` of ``m`` holds its submodules' work (attention's projections, which its
    fast path, or the functional form, runs without calling them)."""
    from torch import nn

    return isinstance(m, (nn.MultiheadAttention, nn.TransformerEncoderLayer))


def call_macs(m: Any, args: Any) -> tuple[int, int] | None:
    """(multiply-adds of one call of ``m`` over all it was given, the rows it read) for a module of
    :func:`_blind`'s kinds or a transposed conv; None for any other module or input it cannot read (a
    call by keywords alone)."""
    import torch
    from torch import nn
    from torch.nn.utils.rnn import PackedSequence

    x = args[0] if args else None
    if isinstance(m, (nn.RNNBase, nn.RNNCellBase)):
        steps = x.data if isinstance(x, PackedSequence) else x
        if not isinstance(steps, torch.Tensor) or not steps.ndim or not steps.shape[-1]:
            return None
        # each weight matrix multiplies once per row at each step, both directions and every layer's
        weights = sum(p.numel() for p in m.parameters(recurse=False) if p.ndim > 1)
        return steps.numel() // steps.shape[-1] * weights, _rows(m, x)
    if not isinstance(x, torch.Tensor) or not x.ndim:
        return None
    if isinstance(m, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
        # each input element reaches out/groups channels through the kernel: the weight's entries per position
        rows = len(x) if x.ndim == m.weight.ndim else 1
        return m.weight.numel() * x.numel() // x.shape[-m.weight.ndim + 1], rows
    if isinstance(m, nn.Bilinear):
        return m.weight.numel() * (x.numel() // x.shape[-1]), max(1, x.numel() // x.shape[-1])
    if isinstance(m, nn.MultiheadAttention) and len(args) >= 3 and all(isinstance(a, torch.Tensor) for a in args[:3]):
        return _attention(m, *args[:3])
    if isinstance(m, nn.TransformerEncoderLayer):
        macs, rows = _attention(m.self_attn, x, x, x)
        feed = m.linear1.weight.numel() + m.linear2.weight.numel()
        return macs + feed * x.numel() // x.shape[-1], rows
    return None


def _attention(m: Any, q: Any, k: Any, v: Any) -> tuple[int, int]:
    """Multiply-adds of one call of ``nn.MultiheadAttention``: the query's and output's projections at each
    query step, the key's and value's at each key step, and the scores and their weighted sum (query steps ×
    key steps × width each)."""
    e, rows = m.embed_dim, 1 if q.ndim == 2 else q.shape[0 if m.batch_first else 1]
    lq, lk = q.numel() // (rows * q.shape[-1]), k.numel() // (rows * k.shape[-1])
    macs = lq * 2 * e * e + lk * e * (m.kdim + m.vdim) + 2 * lq * lk * e
    return rows * macs, rows


def _rows(m: Any, x: Any) -> int:
    """How many rows (sequences) a recurrent module's call read: a packed sequence's first step's batch, the
    batch axis of a sequence (dim 0 where ``batch_first``, else 1) or of a cell's input; 1 unbatched."""
    from torch import nn
    from torch.nn.utils.rnn import PackedSequence

    if isinstance(x, PackedSequence):
        return int(x.batch_sizes[0])
    cell = isinstance(m, nn.RNNCellBase)
    if x.ndim == (1 if cell else 2):
        return 1
    return int(x.shape[0] if cell or m.batch_first else x.shape[1])


def row_macs(m: Any, args: Any) -> int | None:
    """The multiply-adds of one row of ``m``'s call, where :func:`call_macs` counts it."""
    got = call_macs(m, args)
    return None if got is None or not got[1] else math.ceil(got[0] / got[1])


@contextmanager
def missed_flops(root: Any, counted: Callable[[], int]) -> Iterator[Callable[[], int]]:
    """Hooks on ``root``'s modules of :func:`_blind`'s kinds for the forward pass run in the body; yields the
    FLOPs ``counted`` reads plus what it missed of theirs, 2 per multiply-add: torch's FlopCounterMode sees
    none of an LSTM's matmuls, nor attention's on its fast path in eval mode, nor a Bilinear's. Only what
    was not seen inside the call (what a module inside it added included) is added, so a torch that counts
    them is not counted twice. Register it before any hook that reads the count when such a module returns."""
    missed = [0]
    started: list[int] = []

    def before(_m: Any, _args: Any) -> None:
        started.append(counted() + missed[0])

    def after(m: Any, args: Any, _out: Any) -> None:
        seen = counted() + missed[0] - started.pop()
        got = call_macs(m, args)
        missed[0] += max(0, 2 * got[0] - seen) if got is not None else 0

    modules: list[Any] = [m for m in root.modules() if isinstance(m, _blind())]
    handles = [h for m in modules for h in (m.register_forward_pre_hook(before), m.register_forward_hook(after))]
    try:
        yield lambda: counted() + missed[0]
    finally:
        for h in handles:
            h.remove()


def math_attention() -> Any:
    """Scaled dot-product attention run in its math form, as matmuls FlopCounterMode counts (its fused CPU
    kernel it counts as 0 FLOPs: all-MiniLM-L6-v2's blocks at 128 tokens read 5% low); a torch before 2.3,
    which has no switch for it, runs as it would."""
    from contextlib import nullcontext

    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return nullcontext()
    return sdpa_kernel(SDPBackend.MATH)
