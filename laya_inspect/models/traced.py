"""A TorchScript graph traced in training mode: ``torch.jit.trace`` writes the module's ``training``
flag into the graph as a constant, so ``.eval()`` on the loaded file cannot turn batch norm's batch
statistics or dropout's random masks off. A scripted module reads the flag at run time and is fine."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from torch import nn

from ..errors import InputError

# op → the position of its training flag (aten::batch_norm's ``training``, the dropouts' ``train``)
TRAIN_FLAG = {
    "aten::batch_norm": 5,
    "aten::dropout": 2,
    "aten::dropout_": 2,
    "aten::feature_dropout": 2,
    "aten::feature_dropout_": 2,
    "aten::alpha_dropout": 2,
    "aten::alpha_dropout_": 2,
    "aten::feature_alpha_dropout": 2,
    "aten::feature_alpha_dropout_": 2,
}


def _nodes(block: Any) -> Iterator[Any]:
    for node in block.nodes():
        yield node
        for inner in node.blocks():  # the bodies of if / loop nodes
            yield from _nodes(inner)


def _constant(value: Any) -> Any:
    """The value of a graph input fixed at trace time, else None (read at run time)."""
    node = value.node()
    return node.output().toIValue() if node.kind() == "prim::Constant" else None


def _none(value: Any) -> bool:
    """Whether a graph input is the constant None (a batch norm's running mean where it keeps none)."""
    return value.node().kind() == "prim::Constant" and value.type().kind() == "NoneType"


def training_ops(module: nn.Module) -> Counter[str]:
    """How many batch-norm and dropout ops of ``module``'s forward run in training mode whatever
    ``.eval()`` says, by op name (``batch_norm``, ``dropout``; ``batch_norm without running statistics``
    for a BatchNorm with ``track_running_stats=False``, which uses each batch's statistics in eval mode
    too, so its trace fixes the flag on however it was traced)."""
    graph = getattr(module, "inlined_graph", None)
    found: Counter[str] = Counter()
    if graph is None:
        return found
    for node in _nodes(graph):
        at = TRAIN_FLAG.get(node.kind())
        if at is None:
            continue
        inputs = list(node.inputs())
        if node.kind() != "aten::batch_norm" and _constant(inputs[1]) == 0:  # dropout with p = 0 drops nothing
            continue
        if _constant(inputs[at]) is True:
            if node.kind() != "aten::batch_norm":
                found["dropout"] += 1
            else:  # inputs[3]: the running mean
                found[NO_STATS if _none(inputs[3]) else "batch_norm"] += 1
    return found


NO_STATS = "batch_norm without running statistics"


def refuse_training_graph(module: nn.Module, spec: str) -> None:
    """Refuse a TorchScript file whose forward is fixed in training mode: each row's features would
    depend on the other rows of its batch (batch norm) or on chance (dropout)."""
    found = training_ops(module)
    if not found:
        return
    if set(found) == {NO_STATS}:  # traced in eval mode or not: eval() and a new trace change nothing
        raise InputError(
            f"{spec}: {found[NO_STATS]} batch_norm op(s) of its graph keep no running statistics (a BatchNorm "
            "with track_running_stats=False), so they normalise by each batch's own statistics in eval mode too "
            "and each row's features would depend on the rows batched with it; tracing again after model.eval() "
            "does not change that: give those layers running statistics (track_running_stats=True, trained)"
        )
    parts = " and ".join(f"{n} {op} op(s)" for op, n in sorted(found.items()))
    raise InputError(
        f"{spec}: the file was traced in training mode: {parts} of its graph keep training behaviour, which "
        "eval() cannot switch off in a traced graph, so each row's features would depend on the rows "
        "batched with it (batch norm) or on chance (dropout); call model.eval() before torch.jit.trace "
        "and save it again (torch.jit.script keeps the switch)"
    )
