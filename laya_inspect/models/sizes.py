"""The parameter count of each layer whose own module does not hold the op that made its output: a
layer read from a model's output (a Hugging Face ``hidden_states.k``), which no module holds, and a
hooked activation, pool or norm read after a conv or linear layer that is not cached (a plain
Sequential's unit, Conv–BN–ReLU, read after its ReLU). The cache's ``layer_params`` (and ``layer_ops``,
``layer_op_shapes``, ``classifier_inputs``, and ``layer_macs``: a unit's multiply-adds, and a hidden
state's as torch's FLOP counter counts them) for such a layer, from which the shapes estimate of backbone
compute (docs/METHOD.md, "Backbone compute") counts a block's or a unit's multiply-adds, the size of the
embeddings table and the classifier's. Also the order of one forward pass that the model's own count of
backbone compute places each layer in (:func:`call_order`, :func:`counted_order` with its FLOPs).
"""

from __future__ import annotations

import math
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from .base import module_kind
from .work import covers_inside, math_attention, missed_flops, row_macs, scripted_blind


class Made(NamedTuple):
    """Where a tensor was first returned: the clock then, what the stamp read then, a weak reference to
    the tensor (an id is reused once its tensor is freed; none is held), the module, and the width of that
    module's input rows."""

    time: int
    stamp: Any
    tensor: weakref.ref[Any]
    module: Any
    reads: int | None


class Calls:
    """One forward pass in order, every hook advancing one clock (:meth:`tick`): when each module holding
    parameters of its own, or a TorchScript one (``scripted``), was first called (``first``), the first module
    to return each tensor (:meth:`maker`: a parent passing its block's output on does not move it), each
    module's last return with the shape it returned, without the batch axis (``last``), and how often each
    returned (``runs``); ``largest``: the bytes of the largest tensor a module returned alone, batch included
    (what extract sizes its CPU batch by)."""

    def __init__(self, sizes: dict[int, int], stamp: Callable[[], Any]) -> None:
        self.sizes = sizes
        self.own = sizes  # the parameters each module holds itself (``sizes``: a scripted one's all it holds)
        self.stamp = stamp
        self.now = 0
        self.first: dict[int, tuple[int, Any]] = {}
        self.made: dict[int, Made] = {}
        self.last: dict[int, tuple[int, list[int] | None]] = {}
        self.largest = 0
        self.work: dict[int, int | None] = {}  # multiply-adds of a module's last call, one row (None: unknown)
        # TorchScript modules holding parameters: they take no hooks of their own, but a call from Python runs
        # torch's global module hooks (one called inside another's graph is not seen); each one's scripted
        # modules holding parameters inside it
        self.scripted: dict[int, list[int]] = {}
        self.holders: dict[int, list[int]] = {}  # a hooked module: the scripted modules in it
        self.runs: Counter[int] = Counter()

    def covered(self) -> set[int]:
        """The scripted modules whose work a hook saw: one that ran, those inside it, and one holding no
        parameters of its own whose scripted parts are all covered (a scripted Sequential run child by child)."""
        done = {i for i in self.scripted if i in self.runs}
        done |= {c for i in done for c in self.scripted[i]}
        for i in sorted(self.scripted, key=lambda i: len(self.scripted[i])):
            if not self.own[i] and self.scripted[i] and set(self.scripted[i]) <= done:
                done.add(i)
        return done

    @property
    def unseen(self) -> set[int]:
        """The scripted modules no hook saw run, and the hooked modules holding one: what they compute is
        not known, so no count that holds them is."""
        unrun = set(self.scripted) - self.covered()
        return unrun | {h for h, inside in self.holders.items() if unrun.intersection(inside)}

    def tick(self) -> int:
        self.now += 1
        return self.now

    def called(self, m: Any, _args: Any) -> None:
        self.first.setdefault(id(m), (self.tick(), m))

    def returned(self, m: Any, args: Any, out: Any) -> None:
        import torch

        now = self.tick()
        if isinstance(out, torch.Tensor):
            self.largest = max(self.largest, out.numel() * out.element_size())
        parts = out.values() if isinstance(out, Mapping) else out if isinstance(out, (tuple, list)) else [out]
        made = [t for t in parts if isinstance(t, torch.Tensor)]
        self.last[id(m)] = (now, [int(s) for s in made[0].shape[1:]] if made else None)
        self.work[id(m)] = _work(m, args, made[0] if made else None)
        self.runs[id(m)] += 1
        given = next((a for a in args if isinstance(a, torch.Tensor) and a.ndim and len(a)), None)
        for t in made:
            if self.maker(t) is None:
                self.made[id(t)] = Made(
                    now, self.stamp(), weakref.ref(t), m, None if given is None else given[0].numel()
                )

    def maker(self, t: Any) -> Made | None:
        """Where the module that first returned the very tensor ``t`` returned it, or None."""
        made = self.made.get(id(t))
        return made if made is not None and made.tensor() is t else None

    def work_of(self, modules: Iterable[Any]) -> int | None:
        """The multiply-adds of one row through ``modules``, or None where one's is not known; a scripted
        module's own count holds what runs in it."""
        modules, unseen = list(modules), self.unseen
        # a scripted module or attention that ran holds the work of those inside it: counted once
        inside = {c for i in self.scripted if i in self.runs for c in self.scripted[i]}
        inside |= {id(c) for m in modules if covers_inside(m) and id(m) in self.runs for c in list(m.modules())[1:]}
        work = [
            # a weight that did not run where a hook saw it (a fast path calling none of its submodules): unknown
            None if id(m) in unseen or (id(m) not in self.runs and _weighs(m)) else self.work.get(id(m), 0)
            for m in modules
            if id(m) not in inside
        ]
        return None if None in work else sum(w for w in work if w is not None)

    def params(self, after: float, upto: float = math.inf) -> int:
        """The parameters of the modules first called after time ``after``, up to ``upto``; a scripted module
        no hook saw run counts with the hooked module holding it."""
        unrun = set(self.scripted) - self.covered()
        # a hooked module's scripted parts that no hook saw, outermost only (each holds those inside it)
        outer = unrun - {c for i in unrun for c in self.scripted[i]}
        extra = {h: sum(self.sizes[i] for i in inside if i in outer) for h, inside in self.holders.items()}
        return sum(self.sizes[i] + extra.get(i, 0) for i, (t, _) in self.first.items() if after < t <= upto)


def _weighs(m: Any) -> bool:
    return any(p.ndim > 1 for p in m.parameters(recurse=_scripted(m)))


def _work(m: Any, args: Any, out: Any) -> int | None:
    """The multiply-adds of one row of a module's call through its own weights: counted by hand for a
    recurrent module, attention, a transposed conv (:func:`~laya_inspect.models.work.call_macs`); none for
    an embedding table's lookup; else each weight of two or more dimensions (a conv's kernel, a linear
    layer's matrix) multiplies once for each of its output channels (dim 0) at each position (a bias or a
    norm's scale adds none). One whose rows are not the output's channels, or a TorchScript module holding
    others, whose work is not seen: None."""
    from torch import nn

    if (by_hand := row_macs(m, args)) is not None:
        return by_hand
    if isinstance(m, (nn.Embedding, nn.EmbeddingBag)):
        return 0  # a table lookup
    if _scripted(m) and any(True for _ in m.children()):
        return None
    mats = [p for p in m.parameters(recurse=False) if p.ndim > 1]
    if not mats:
        return 0
    out = out if out is not None and out.ndim > 1 and len(out) else None
    known = out is not None and all(p.shape[0] in (out.shape[1], out.shape[-1]) for p in mats)
    return sum(p.numel() * out[0].numel() // p.shape[0] for p in mats) if known else None


def _scripted(m: Any) -> bool:
    import torch

    return isinstance(m, torch.jit.ScriptModule)


@contextmanager
def call_order(root: Any, stamp: Callable[[], Any] = lambda: None) -> Iterator[Calls]:
    """Hooks on every module of ``root`` for the forward pass run in the body, recording :class:`Calls`
    (``stamp``: what each ``made`` entry also reads, FLOPs counted so far); removed on exit, also when the
    body raises. A TorchScript module takes no hooks of its own: one called from Python (a scripted part of
    a Python model, a scripted Sequential's child run one by one) is seen through torch's global module
    hooks, as one op holding all its parameters; one run inside a scripted graph is not, and a hooked module
    holding one that did not run where a hook saw it has its parameters counted where it was first called
    and its work unknown."""
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

    own = _own_sizes(root)
    calls = Calls(dict(own), stamp)
    calls.own = own
    modules = [m for m in root.modules() if not _scripted(m)]
    for m in root.modules():
        if _scripted(m) and (size := sum(own[id(c)] for c in m.modules())):
            calls.scripted[id(m)] = [id(c) for c in list(m.modules())[1:] if sum(own[id(d)] for d in c.modules())]
            calls.sizes[id(m)] = size  # a scripted module is seen as one op: all it holds
    for m in modules:
        inside = [i for i in map(id, m.modules()) if i in calls.scripted]
        calls.holders.update({id(m): inside} if inside else {})
    handles = [
        m.register_forward_pre_hook(calls.called) for m in modules if calls.sizes[id(m)] or id(m) in calls.holders
    ]
    handles += [m.register_forward_hook(calls.returned) for m in modules]
    scripted = {id(m) for m in root.modules() if _scripted(m)}
    if scripted:

        def before(m: Any, args: Any) -> None:
            if id(m) in scripted:
                calls.called(m, args)

        def after(m: Any, args: Any, out: Any) -> None:
            if id(m) in scripted:
                calls.returned(m, args, out)

        handles += [register_module_forward_pre_hook(before), register_module_forward_hook(after)]
    try:
        yield calls
    finally:
        for h in handles:
            h.remove()


@contextmanager
def counted_order(root: Any) -> Iterator[tuple[Calls, Callable[[], int]]]:
    """:func:`call_order` for the forward pass run in the body (without gradients), each ``made`` entry
    stamped with the FLOPs counted so far, and the count (:class:`torch.utils.flop_counter.FlopCounterMode`,
    2 per multiply-add, no bias or norm): what it misses of a recurrent module, attention on its fast path
    and a Bilinear added as the module returns (:func:`~laya_inspect.models.work.missed_flops`), scaled
    dot-product attention run in its math form, whose matmuls it counts
    (:func:`~laya_inspect.models.work.math_attention`)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    # an LSTM's work, which the counter does not see, is added as it returns: before any hook reads the count
    with (
        math_attention(),
        missed_flops(root, counter.get_total_flops) as flops,
        call_order(root, flops) as calls,
        counter,
        torch.no_grad(),
    ):
        yield calls, flops


class OutputStates(NamedTuple):
    """What :func:`output_states` counts of each output state: ``{name: parameters}`` and ``{name:
    multiply-adds of one row}``."""

    params: dict[str, int]
    macs: dict[str, int]


def output_states(model: Any, inputs: Any) -> OutputStates:
    """The parameters and multiply-adds of each of the model's output states (``model.adapter.virtual_names``)
    that a module returned: those of the modules first called after the previous state was made, up to the
    first module that returned this very tensor (``hidden_states.0``: the embeddings; ``hidden_states.k``:
    block k; the last one with a final norm such as GPT-2's ``ln_f``). The multiply-adds are half the FLOPs
    :func:`counted_order` counted between the two, over the state's rows: a block's projections and
    feed-forward maps at each token and its attention's scores and weighted sum (T × T × width each), not
    its biases and norms; 0 for an embeddings lookup.

    A state no module returned (computed in a parent's own forward) gets no count, nor does the one after
    it, whose window has no known start; so a TorchScript archive, which takes no hooks, gets none, and no
    multiply-adds where a TorchScript part ran where no hook saw it or runs a recurrent module or attention
    (:func:`~laya_inspect.models.work.scripted_blind`: the counter does not see their matmuls).
    """
    import torch

    names = list(model.adapter.virtual_names)
    if not names or isinstance(model.module, torch.jit.ScriptModule):
        return OutputStates({}, {})
    with counted_order(model.module) as (calls, _):
        out = model.forward(inputs, [], lambda *_: None, True)
    blind = bool(calls.unseen or scripted_blind(model.module))
    found = OutputStates({}, {})
    start: tuple[int, int] | None = (0, 0)  # the clock and the FLOPs counted when the previous state was made
    for name in names:
        state = model.adapter.virtual(out, name)
        end = calls.maker(state)
        if end is not None and start is not None and end.time > start[0]:
            found.params[name] = calls.params(start[0], end.time)
            rows = len(state) if isinstance(state, torch.Tensor) and state.ndim > 1 else 1
            if not blind and rows:
                found.macs[name] = math.ceil((end.stamp - start[1]) / 2 / rows)
        start = (end.time, end.stamp) if end is not None else None
    return found


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
    """A module holding weights of its own that map its input (a conv, a linear layer), not a norm's scale;
    a TorchScript module is one op holding all its parameters."""
    return any(True for _ in m.parameters(recurse=_scripted(m))) and "Norm" not in module_kind(m)


class Unit(NamedTuple):
    """A layer's unit: its parameters, the class of its last op, the shape that op returned and the
    multiply-adds of one row through its modules."""

    params: int
    op: str
    shape: list[int] | None
    macs: int | None


def unit_sizes(calls: Calls, modules: Mapping[str, Any], names: Sequence[str]) -> dict[str, Unit]:
    """``{name: Unit}`` for each hooked layer in ``names`` that holds no op of its own (an activation, a
    pool, a norm) but reads one no other of ``names`` does, from the pass ``calls`` recorded: the
    parameters of the modules first called after the previous layer in ``names`` made its output, up to
    this one's (its own norm's included), the class of the last op among them (``Conv2d``) and its output
    shape (a unit read after its pool: the conv's map, before the pool halved it). Counted alone, a ReLU
    read after its conv held 0 parameters and the shapes estimate took the unit for a per-element op, its
    conv's cost unseen. A module run twice: where its last output was made, as capture keeps."""
    hooked = [n for n in names if n in modules and not any(_is_op(m) for m in modules[n].modules())]
    done = {n: calls.last[id(modules[n])][0] for n in names if n in modules and id(modules[n]) in calls.last}
    found: dict[str, Unit] = {}
    in_order = sorted(calls.first.values(), key=lambda tm: tm[0])
    start = 0
    for name in sorted(done, key=done.__getitem__):
        ops = [m for t, m in in_order if start < t <= done[name] and _is_op(m)]
        if name in hooked and ops:
            op, shape = module_kind(ops[-1]), calls.last[id(ops[-1])][1]
            work = calls.work_of(m for t, m in in_order if start < t <= done[name])
            found[name] = Unit(calls.params(start, done[name]), op, shape, work)
        start = done[name]
    return found


def classifier_inputs(calls: Calls, logits: Any) -> int | None:
    """The width of the rows the model's classifier reads (a Linear after a Flatten: the flattened map;
    MobileNetV2's: the 1280 pooled channels): the input of the first module that returned the very
    ``logits`` tensor, where that module is one op with no submodules; else None."""
    made = calls.maker(logits) if logits is not None else None
    if made is None or not _is_op(made.module) or any(True for _ in made.module.children()):
        return None
    return made.reads


def with_units(
    units: Mapping[str, Unit], names: Sequence[str], counts: Sequence[int | None], types: Sequence[str]
) -> tuple[list[int | None], list[str], list[list[int] | None]]:
    """The cache's ``layer_params``, ``layer_ops`` and ``layer_op_shapes``: each layer's own count and
    class (``counts``, ``types``) and no shape of another op's, or its unit's, where :func:`unit_sizes`
    found one; its op's shape only where the unit's multiply-adds are not known, which otherwise count it
    at its own size (an LSTM read after a max over its steps)."""
    params = [units[n].params if n in units else c for n, c in zip(names, counts)]
    ops = [units[n].op if n in units else t for n, t in zip(names, types)]
    return params, ops, [units[n].shape if n in units and units[n].macs is None else None for n in names]


def layer_macs(calls: Calls, units: Mapping[str, Unit], modules: Mapping[str, Any]) -> dict[str, int | None]:
    """The cache's ``layer_macs``: ``{name: multiply-adds of one row}`` for each hooked layer, those of its
    unit's modules or of its module's own, each at the size it ran at (:meth:`Calls.returned`)."""
    own = {n: calls.work_of(modules[n].modules()) for n in modules}
    return {n: units[n].macs if n in units else own[n] for n in modules}
