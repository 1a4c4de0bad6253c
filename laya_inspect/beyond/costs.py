"""Backbone compute after each cached layer: what stopping the backbone at layer l would save
(docs/METHOD.md, "Backbone compute").

Counted from the model (``model``): the architecture the cache names (``model_spec``; its weights are
not needed, parameter counts and FLOPs do not depend on their values, but a zoo backbone is rebuilt from
the checkpoint extract read, whose own input shape and widths it records) runs once on one input of the
cached input shape under :class:`torch.utils.flop_counter.FlopCounterMode`, a recurrent module's matmuls,
and attention's on its fast path and a Bilinear's, which it does not see, added as the module returns
(:func:`~laya_inspect.models.work.missed_flops`), and attention in its math form, whose matmuls it counts; FLOPs
after layer l are
the total minus the count when layer l's forward hook fires, and parameters after layer l are those
of the modules first called after it (its own classifier included: a head replaces it); a hidden state
read from the model's output (a Hugging Face ``hidden_states.k``) is placed where the first module that
returned that very tensor finished (the embeddings, block k, a final norm). Estimated
from the cache (``shapes``) when the model cannot be built or hooked: a layer whose parameter count
the cache records (``layer_params``) does the multiply-adds extract counted through its convs and linear
maps (``layer_macs``: no bias or norm, each at the size it ran at; a hidden state's what FlopCounterMode
counted on extract's dry batch, its attention included), or in older caches one per parameter
at each output position (a
conv's weights ÷ its output channels are its multiply-adds per output element, so its kernel size
counts: a 3×3 conv once read as costing what a 1×1 one does); one without is taken as a dense map
from the previous layer's channels to its own at each output position; a layer the cache's
``layer_roles`` names ``embeddings`` (a Hugging Face ``hidden_states.0``) is a table lookup: no FLOPs, its
recorded parameters (where none are recorded, ``not_counted`` says its parameters are not seen), and
one whose ``layer_ops`` class (``layer_types``' in older caches; a unit's ReLU read after its conv records the
conv there, and the conv's parameters) is a norm, activation, pool, dropout or reshape, or that holds no
parameters, costs its output's element count (a BatchNorm between two convs once read as costing as
much as a conv); a unit read after its pool counts at its conv's size (its ``layer_macs``, or where those are
not known its op's map, ``layer_op_shapes``), not the pool's;
the model's classifier, where the cache holds its logits, is a dense map from the width it reads
(``classifier_inputs``: a flattened map, or pooled channels; else the last cached layer's channels) to them,
run after every layer, unless a cached layer is the classifier's own output (its rows are the logits):
counted there, once (``not_counted`` says what the estimate cannot see, ``warnings`` where an older cache
reads low).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..cache.store import FeatureStore
from ..errors import InputError, LayaError
from ..training.stats import percent, sampling_text
from .config import COST_CHOICES

# Sources whose architecture can be built without a weights file (random values, never used).
_BUILDABLE = ("torchvision", "timm", "zoo", "python")
_FROM_PATH = ("hf", "torchscript")  # model specs whose argument is a path
MODEL_HOW = (
    "counted from the model: FLOPs of one input of the cached shape (torch FlopCounterMode, 2 per "
    "multiply-add; a recurrent module's 2 per weight-matrix entry per row-step) run after the layer's forward "
    "hook; parameters of the modules first called after it"
)
PER_ELEMENT_HOW = "one FLOP per output element for a norm, activation, pool, dropout or flatten layer"
SHAPES_HOW = (
    "estimated from the cache's layer_shapes and layer_params: layer l with P_l parameters does the M_l "
    "multiply-adds extract counted through its convs and linear maps (layer_macs: FLOPs 2·M_l; a hidden state "
    "read from the output, the FLOPs torch FlopCounterMode counted on extract's dry batch from the previous "
    "state to it, attention's scores and weighted sum included), or in an older "
    "cache P_l at each of its output positions (FLOPs 2·P_l·positions: a conv's kernel counted; a unit read "
    "after its pool at its conv's map, layer_op_shapes); a layer "
    "with no recorded count (a cache written before layer_params) taken as a dense map from c_(l−1) to c_l "
    "channels (parameters c_(l−1)·c_l, FLOPs 2·c_(l−1)·c_l·positions; a flat layer reads its whole input "
    "flattened); an embeddings layer, a table lookup, no FLOPs and its recorded parameters; "
    f"{PER_ELEMENT_HOW} (its layer_ops class, else its layer_types one) "
    "or one with no parameters, and no parameters; the model's classifier, where the cache holds its "
    "logits, a dense map from the width it reads (classifier_inputs, else the last cached layer's channels) to "
    "them, run after every layer"
)
# what the shapes estimate cannot see: the cache records only the cached layers' modules
BETWEEN = "modules between two cached layers that neither holds, and the resolution inside a block that strides"
AFTER = {
    True: "modules between the last cached layer and the classifier",
    False: "everything after the last cached layer (the cache holds no logits of the model's: no classifier known)",
}

# what the shapes estimate assumes, in the warning prune and early-exit give when ``auto`` fell back to it
ASSUMED = (
    "each layer a multiply-add per parameter at each output position, or where the cache records no parameter "
    f"count a dense map between its channels; {PER_ELEMENT_HOW}; the classifier a dense map to the cached logits; "
    "modules no cached layer holds not counted"
)


@dataclass
class Costs:
    """Per layer l (0-based), the backbone parameters and FLOPs that run after it; ``*_total`` the
    whole counted backbone."""

    source: str  # "model" | "shapes"
    how: str
    params_after: np.ndarray  # (L,)
    flops_after: np.ndarray  # (L,)
    params_total: float
    flops_total: float
    note: str | None = None  # why ``auto`` fell back to shapes
    not_counted: str | None = None  # what a shapes estimate leaves out (the model's count leaves out nothing)
    warnings: list[str] = field(default_factory=list)  # where a shapes estimate reads low, from an older cache
    asked: str = ""  # --costs as given: "auto" chose ``source``

    def saved(self, deepest: int) -> tuple[float, float]:
        """(parameter share, FLOP share) of the backbone saved when layer ``deepest`` is the last one run."""
        return _share(self.params_after[deepest], self.params_total), _share(
            self.flops_after[deepest], self.flops_total
        )

    def used(self, depth: int) -> float:
        """Share of the backbone's FLOPs run up to and including layer ``depth`` (0-based)."""
        return 1.0 - _share(self.flops_after[depth], self.flops_total)

    def to_dict(self, layer_names: Sequence[str]) -> dict[str, Any]:
        return {
            "source": self.source,
            "asked": self.asked,
            "how": self.how,
            "note": self.note,
            "not_counted": self.not_counted,
            "warnings": self.warnings,
            "params_total": self.params_total,
            "flops_total": self.flops_total,
            "after_layer": [
                {"layer": n, "params_after": float(p), "flops_after": float(f)}
                for n, p, f in zip(layer_names, self.params_after, self.flops_after)
            ],
        }


def _share(part: float, total: float) -> float:
    return float(part) / float(total) if total > 0 else 0.0


def backbone_costs(store: FeatureStore, mode: str = "auto") -> Costs:
    """Costs for ``store``'s layers: ``model`` (or an InputError saying why not), ``shapes``, or ``auto``
    (the model when it can be counted, else shapes with the reason in ``note``)."""
    if mode not in COST_CHOICES:
        raise InputError(f"--costs must be one of {', '.join(COST_CHOICES)}, got {mode!r}")
    if mode == "shapes":
        costs = costs_from_shapes(store)
    else:
        try:
            costs = costs_from_model(store)
        except (LayaError, ImportError) as e:
            if mode == "model":
                raise InputError(
                    f"cannot count the backbone's compute from its model ({e}); use --costs shapes"
                ) from None
            costs = costs_from_shapes(store)
            costs.note = f"the model could not be counted ({' '.join(str(e).split())[:200]})"
    costs.asked = mode
    return costs


def estimate_warnings(costs: dict[str, Any]) -> list[str]:
    """The summary's warnings about its compute shares (:meth:`Costs.to_dict`): that ``auto`` fell back to
    the cache's shapes (``note``), so they are an estimate, which prune and early-exit say, and where that
    estimate reads low (``warnings``)."""
    note = costs.get("note")
    fell_back = [f"compute estimated from the cache's shapes ({ASSUMED}): {note}"] if note else []
    return fell_back + [f"compute estimate: {w}" for w in costs.get("warnings") or []]


def costs_from_model(store: FeatureStore) -> Costs:
    from ..models import load_model
    from ..models.sizes import counted_order

    spec = store.attrs.get("model_spec")
    if not spec:
        raise InputError(f"{store.path} records no model_spec; give --model SPEC")
    prefix, _, arg = str(spec).partition(":")
    if prefix in _FROM_PATH:  # a relative model path, as extract read it
        spec = f"{prefix}:{store.recorded_path(arg)}"
    # a python: module is imported from the folder extract ran in, as extract imported it
    ran_in = store.attrs.get("working_dir") if prefix == "python" else None
    search_dir = str(ran_in) if ran_in and Path(str(ran_in)).is_dir() else None
    weights = _zoo_weights(store) if prefix == "zoo" else None
    random_init = prefix in _BUILDABLE and weights is None
    model = load_model(spec, weights=weights, random_init=random_init, device="cpu", search_dir=search_dir)
    if weights is not None and model.weights_sha256 != store.attrs.get("weights_sha256"):
        raise InputError(f"the weights file {weights} changed since extract read it, so its architecture may differ")
    _refuse_unseen(model)
    names = store.layer_names
    virtual = [n for n in names if n in model.adapter.virtual_names]
    inputs = _one_input(store, model)
    done: dict[str, tuple[int, int]] = {}
    with counted_order(model.module) as (calls, flops):

        def record(name: str, _m: Any, _out: Any) -> None:
            done[name] = (calls.tick(), flops())

        out = model.forward(inputs, [n for n in names if n not in virtual], record, bool(virtual))
    # a hidden state read from the output (a Hugging Face hidden_states.k) is placed where the first
    # module that returned that very tensor finished: the embeddings, block k, a final norm
    for n in virtual:
        if (made := calls.maker(model.adapter.virtual(out, n))) is None:
            raise InputError(f"layer {n!r} is computed outside any module the model calls: its FLOPs cannot be placed")
        done[n] = (made.time, made.stamp)
    silent = [n for n in names if n not in done]
    if silent:
        raise InputError(f"layer {silent[0]!r} did not run in the model's forward pass")
    if calls.unseen:  # a scripted part run inside another's graph in a layer: where its work falls is not known
        raise InputError("a TorchScript part ran where no hook saw it, so where its work falls is not known")
    total_flops = float(flops())
    params_after = np.array([calls.params(done[n][0]) for n in names], dtype=float)
    flops_after = np.array([total_flops - done[n][1] for n in names], dtype=float)
    on = f", one text of {_text_length(store)} tokens, as layer_shapes records" if _is_text(store) else ""
    return Costs("model", f"{MODEL_HOW} ({spec}{on})", params_after, flops_after, float(calls.params(0)), total_flops)


def _refuse_unseen(model: Any) -> None:
    """An InputError where the count would not see what runs after each layer: a TorchScript archive that
    is not a Sequential runs as one graph (its parameters would all read as run before any layer; a
    scripted Sequential runs child by child from Python, where torch's global hooks see each child), and a
    scripted recurrent module or attention, whose matmuls the counter does not see nor a hook can add."""
    import torch

    from ..models.work import scripted_blind

    if isinstance(model.module, torch.jit.ScriptModule) and not getattr(model.adapter, "sequential", False):
        raise InputError(
            "a TorchScript module other than a Sequential runs as one graph that takes no hooks, so which "
            "parameters run after each layer is not known"
        )
    if blind := scripted_blind(model.module):
        raise InputError(
            f"torch's FLOP counter does not see the matmuls of {', '.join(blind)}, and a TorchScript module takes "
            "no hooks that could add them"
        )


def _zoo_weights(store: FeatureStore) -> str | None:
    """The zoo checkpoint extract read: its architecture (input shape, widths) is the checkpoint's own,
    not the zoo default a build without it gives."""
    path = store.recorded_path(store.attrs.get("weights_path") or None)
    if not path:
        return None
    if not Path(path).is_file():
        raise InputError(f"the zoo checkpoint extract read, {path}, is not there to rebuild its architecture from")
    return path


def _one_input(store: FeatureStore, model: Any) -> Any:
    import torch

    transforms = store.attrs.get("transforms") or {}
    shape = transforms.get("output") if isinstance(transforms, dict) else None
    if isinstance(transforms, dict) and transforms.get("kind") == "image" and isinstance(shape, list) and shape:
        if not all(isinstance(s, int) for s in shape):  # [3, "H", "W"]: no --image-size, nor one the model states
            raise InputError(f"{store.path}'s images were read at their own size, so no one input size to count on")
        return torch.full((1, *shape), 0.5)
    if _is_text(store):
        return model.example_inputs(1, _text_length(store))
    example = model.example_inputs(1)
    if example is None:
        raise InputError(f"{store.path} records no input shape to count the model's FLOPs on")
    return example


def _is_text(store: FeatureStore) -> bool:
    """Text a tokenizer read (``text``) or the zoo's word ids (``token_ids``, zoo:bilstm)."""
    transforms = store.attrs.get("transforms")
    return isinstance(transforms, dict) and transforms.get("kind") in ("text", "token_ids")


def _text_length(store: FeatureStore) -> int:
    """The tokens of the text the model is counted on: those of the first cached layer's (T, D) output
    (``layer_shapes``: extract's first batch, padded to its longest text, or the zoo BiLSTM's word ids,
    every text padded to its length), the length the shapes estimate counts at; a model's own example (4
    tokens for all-MiniLM-L6-v2, 16 for a BiLSTM that reads 200) read a longer text as a short one."""
    shapes = store.attrs.get("layer_shapes")
    found = [s[0] for s in shapes if isinstance(s, list) and len(s) == 2] if isinstance(shapes, list) else []
    if not found or not isinstance(found[0], int) or found[0] < 1:
        raise InputError(f"{store.path} records no text length (a layer's (T, D) shape) to count the model's FLOPs on")
    return found[0]


def _channels(shape: Sequence[int]) -> tuple[int, int]:
    """(channels, positions) of a layer output shape without the batch: (C, H, W), (T, D) or (D,)."""
    dims = [int(s) for s in shape]
    if len(dims) == 3:
        return dims[0], dims[1] * dims[2]
    if len(dims) == 2:
        return dims[1], dims[0]
    if len(dims) == 1:
        return dims[0], 1
    return max(1, math.prod(dims)), 1


# Module classes (the cache's layer_types) that touch each output element about once: BatchNorm2d,
# LayerNorm, ReLU6, LeakyReLU, MaxPool2d, AdaptiveAvgPool2d, Dropout2d, every torch.nn activation but
# MultiheadAttention (ELU, Mish, Hardsigmoid, Softmax, …); the few parameters of a norm (2 per channel)
# are left out like a conv's bias. Any other class, "hidden_state" included, is dense.
_PER_ELEMENT = re.compile(
    r"\w*(Norm|ReLU|Pool|Dropout)\d?d?|C?ELU|SELU|GELU|SiLU|Mish|GLU|Threshold|(Log)?Sigmoid|Tanh(shrink)?"
    r"|Hard(swish|sigmoid|tanh|shrink)|Soft(plus|sign|shrink|max2d|max|min)|LogSoftmax|Identity|Flatten"
)


def costs_from_shapes(store: FeatureStore) -> Costs:
    shapes = store.attrs.get("layer_shapes")
    names = store.layer_names
    if not isinstance(shapes, list) or len(shapes) != len(names) or not all(isinstance(s, list) for s in shapes):
        shapes = [[w] for w in store.widths]
    transforms = store.attrs.get("transforms") or {}
    given = transforms.get("output") if isinstance(transforms, dict) else None
    # images left at their own size ([3, "H", "W"]): a conv layer reads only the channels, and no flat
    # layer reads images of many sizes
    previous = [s if isinstance(s, int) else 1 for s in given] if isinstance(given, list) and given else shapes[0]
    roles = store.attrs.get("layer_roles")
    roles = roles if isinstance(roles, dict) else {}
    # the op a layer's recorded parameters run: its module's class, or the conv a unit's ReLU is read after
    own = store.attrs.get("layer_types")
    types = store.attrs.get("layer_ops") or own  # layer_ops: absent in older caches
    types = types if isinstance(types, list) and len(types) == len(names) else [""] * len(names)  # older caches
    counts = store.attrs.get("layer_params")
    counts = counts if isinstance(counts, list) and len(counts) == len(names) else [None] * len(names)
    # the map a unit's op made, where it is not the layer's own: the conv's, before the pool it is read after
    recorded = store.attrs.get("layer_op_shapes")  # absent in older caches
    op_shapes = recorded if isinstance(recorded, list) and len(recorded) == len(names) else [None] * len(names)
    # a row's multiply-adds through each layer's convs and linear maps at the size each ran at (a strided
    # block's expansion at its input's), not its biases and norms, which the model's count leaves out
    macs = store.attrs.get("layer_macs")  # absent in older caches
    macs = macs if isinstance(macs, list) and len(macs) == len(names) else [None] * len(names)
    params, flops = [], []
    unsized = []  # embeddings whose parameters the cache does not record (a cache written before they were counted)
    for name, shape, kind, count, op_shape, mac in zip(names, shapes, types, counts, op_shapes, macs):
        c, positions = _channels(shape)
        # a flat layer reads its input flattened (an MLP on pixels); any other reads its channels
        c_prev = math.prod(previous) if len(shape) == 1 else _channels(previous)[0]
        previous = [int(s) for s in shape]
        if roles.get(name) == "embeddings" or str(kind).startswith("Embedding"):
            # a lookup, no multiply-adds: keeping it alone saves the blocks' FLOPs, not its own parameters
            unsized += [name] if count is None else []
            params.append(float(count or 0))
            flops.append(0.0)
        elif _PER_ELEMENT.fullmatch(str(kind)) is not None or count == 0:
            params.append(0.0)
            flops.append(float(c * positions))
        elif isinstance(count, int):
            # a conv's weights ÷ its output channels are the multiply-adds of one output element
            # (c_(l−1)·k·k of them, ÷ groups), so P multiply-adds at each position its op made: its kernel counted
            # (layer_macs, where recorded, counts each conv at its own size, without biases and norms)
            params.append(float(count))
            flops.append(float(2 * mac) if mac else float(2 * count * _channels(op_shape or shape)[1]))
        else:  # no count recorded (an older cache, a state no module returned): a dense map between the channels
            params.append(float(c_prev * c))
            flops.append(float(2 * c_prev * c * positions))
    # the model's classifier runs after every cached layer (a head replaces it): MobileNetV2's is 37% of
    # its parameters. A dense map from what it reads (the last cached layer's map flattened, or its channels
    # pooled) to the logits.
    classes, cached = _classifier(store)  # a cached classifier is counted above as a layer: not again
    reads = store.attrs.get("classifier_inputs")  # absent in older caches
    last, spread = _channels(shapes[-1])
    width = reads if isinstance(reads, int) and reads > 0 else None
    tail = 0.0 if cached else float((width or last) * classes)
    p, f = np.array(params), np.array(flops)
    p_after = np.array([p[i + 1 :].sum() + tail for i in range(len(p))])
    f_after = np.array([f[i + 1 :].sum() + 2 * tail for i in range(len(f))])
    missed = BETWEEN if cached else f"{BETWEEN}; {AFTER[classes > 0]}"
    if unsized:  # a text encoder's embeddings can hold half its parameters: a silent 0 read as saving all
        missed += (
            f"; the parameters of {unsized[0]}, an embeddings table the cache records no size of (the parameter "
            "shares saved read high)"
        )
    # a layer whose multiply-adds extract recorded is counted at its op's own size, whatever it is read after
    sized = [bool(m) or s is not None for m, s in zip(macs, op_shapes)]
    warnings = _shrunk_warning(names, own, types, sized)
    flat = classes and not cached and width is None and len(shapes[-1]) == 3 and spread > 1
    unread = _unexplained(store, len(shapes) - 1, shapes[-1]) if flat else None
    if unread:
        warnings.append(
            f"the classifier is counted as a dense map from {names[-1]}'s {last} channels, pooled, to the {classes} "
            "logits: the cache records no width it reads (classifier_inputs: written before it was recorded, or no "
            f"one op returned the logits) and {unread}, so where it reads the map flattened ({last * spread} values) "
            "its FLOPs and parameters read low"
        )
    how = f"{SHAPES_HOW}; not counted: {missed}"
    total = (float(p.sum() + tail), float(f.sum() + 2 * tail))
    return Costs("shapes", how, p_after, f_after, *total, not_counted=missed, warnings=warnings)


def _shrunk_warning(names: list[str], own: Any, ops: list[str], sized: list[bool]) -> list[str]:
    """What a cache that records neither the multiply-adds (``layer_macs``) nor the op's map
    (``layer_op_shapes``) of a unit read after a pool or flatten (Conv–BN–ReLU–MaxPool2d(2) read after its
    pool; ``sized`` False) leaves low: it is counted at that layer's output size."""
    own = own if isinstance(own, list) and len(own) == len(names) else ops
    shrunk = [
        n
        for n, kind, op, known in zip(names, own, ops, sized)
        if not known and kind != op and re.search("Pool|Flatten", str(kind))
    ]
    if not shrunk:
        return []
    return [
        f"a unit read after its pool or flatten (layers {', '.join(shrunk)}) is counted at that layer's output "
        "size: the cache records neither its multiply-adds (layer_macs) nor the map its op made (layer_op_shapes), "
        "so its FLOPs read low (4× behind a 2×2 max-pool); extract the cache again to count it at its own size"
    ]


def _unexplained(store: FeatureStore, last: int, shape: list[int]) -> str | None:
    """Why the classifier may read more than layer ``last``'s channel means, a map's (C, H, W), or None where
    the cached logits are an affine function of them: then a dense map from its C channels (MobileNetV2's
    pool and Linear(1280, 1000)) is what the classifier is, as counted. A classifier reading the map
    flattened mixes its positions, which the channel means do not hold: no fit of twice as many rows as
    they have values leaves under 1% of the logits' spread."""
    name, pooling = store.layer_names[last], (store.attrs.get("layer_pooling") or [""] * (last + 1))[last]
    if pooling not in ("gap", "mean", "flatten"):
        return (
            f"{name} is cached {pooling}-pooled, which cannot show whether the logits are read from its channel means"
        )
    need = 2 * (shape[0] + 1)
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for split in store.splits:
        rows = slice(0, min(store.n(split), need - sum(map(len, ys))))
        if rows.stop and (logits := store.logits(split, rows)) is not None:
            ys.append(np.asarray(logits, dtype=np.float64))
            xs.append(np.asarray(store.layer(split, name, rows), dtype=np.float64).reshape(rows.stop, shape[0], -1))
    if sum(map(len, ys)) < need:
        return f"the cache holds under {need} rows with logits, too few to check them against {name}'s channel means"
    x, y = np.concatenate(xs).mean(2), np.concatenate(ys)
    x = np.hstack([x, np.ones((len(x), 1))])
    left = y - x @ np.linalg.lstsq(x, y, rcond=None)[0]
    spread = np.linalg.norm(y - y.mean(0))
    if np.linalg.norm(left) <= 0.01 * spread:
        return None
    left_over = f"{np.linalg.norm(left) / spread:.0%} of their spread left"
    return f"its logits are no affine function of {name}'s channel means ({left_over})"


def _classifier(store: FeatureStore) -> tuple[int, str | None]:
    """(the number of logits the cache holds, 0 when it holds none; the cached layer whose rows are
    those logits, the classifier's own output, --layers …,fc, or None): a layer of one value per class
    that the first rows show to be the model's answer."""
    split = next((sp for sp in store.splits if store.logits(sp, slice(0, 1)) is not None), None)
    if split is None:
        return 0, None
    rows = slice(0, min(store.n(split), 8))
    logits = np.asarray(store.logits(split, rows), dtype=np.float32)
    scale = 1e-3 * max(1.0, float(np.abs(logits).max(initial=0.0)))  # a float16 cache rounds the layer's rows
    cached = (
        name
        for name, width in zip(store.layer_names, store.widths)
        if width == logits.shape[1]
        and (x := store.layer(split, name, rows)).shape == logits.shape
        and np.allclose(x, logits, rtol=1e-3, atol=scale)
    )
    return int(logits.shape[1]), next(cached, None)


def cost_text(point: dict[str, Any], s: dict[str, Any]) -> str:
    """What the layer set costs against all layers on the test split, paired seed by seed: the
    interval, and the largest loss it leaves open (nothing for a summary written before it); where the
    test rows' own paired interval dominates and holds 0 (``test_rows_vs_all``), how many rows differ
    and no verdict."""
    d = point.get("test_acc_vs_all")
    if not d:
        return ""
    if d.get("ci_low") is None or d.get("ci_high") is None:
        why = "one evaluation of the given head (--no-refit)" if s.get("mode") != "refit" else "one seed"
        return f" (difference {d['mean']:+.4f}, no interval: {why})"
    text = f" (paired over {d['n']} seeds: {d['mean']:+.4f} [{d['ci_low']:+.4f}, {d['ci_high']:+.4f}]"
    rows = point.get("test_rows_vs_all") or {}
    if rows.get("within_sampling"):  # the seeds share the test rows: their interval leaves out which were drawn
        return f"{text}; {sampling_text(rows)})"
    if d["ci_high"] < 0:
        return text + ": a loss)"
    return text + (f"; a loss up to {-d['ci_low']:.4f} is not ruled out)" if d["ci_low"] < 0 else ")")


def _all_layers_saved(s: dict[str, Any]) -> dict[str, Any] | None:
    """What all layers save (what runs after the last cached layer); a summary written before
    ``all_layers_saved`` reads it from its k = L point."""
    every = s.get("all_layers_saved")
    if every is None:
        n = len(s["cache"]["layer_names"])
        every = next((p for p in s.get("points") or [] if p["k"] == n), None)
    return every


def _saves_nothing_more(point: dict[str, Any], s: dict[str, Any], key: str = "flops_saved") -> bool:
    every = _all_layers_saved(s)
    return every is not None and point[key] <= every[key] + 1e-12


NONE_BEYOND = "none beyond all layers"


def saved_cell(point: dict[str, Any] | None, s: dict[str, Any], key: str = "flops_saved") -> str:
    """A table cell of what a layer set saves (``key``: flops_saved or params_saved), or that it saves
    nothing beyond all layers: the share a set keeping the last cached layer saves is only what runs
    after that layer (a classifier a head replaces), the same for every such set, which
    :func:`saved_note` says once."""
    if point is None:
        return "—"
    if _saves_nothing_more(point, s, key):
        return NONE_BEYOND
    # each head's own set: a mean over different sets, not what any one set saves
    return percent(point[key], 1) + (" (mean over different sets)" if point.get("layers_by_seed") else "")


def saved_note(s: dict[str, Any], points: list[dict[str, Any] | None]) -> str | None:
    """Why a cell of :func:`saved_cell` among ``points`` reads "none beyond all layers", or None when none does."""
    every = _all_layers_saved(s)
    if every is None or not any(p is not None and _saves_nothing_more(p, s) for p in points):
        return None
    last = s["cache"]["layer_names"][-1]
    return (
        f"FLOPs saved: {NONE_BEYOND} where a set keeps {last}, the last cached layer: the same backbone runs; what "
        f"runs after it ({percent(every['flops_saved'], 1)} of the FLOPs, {percent(every['params_saved'], 1)} of "
        "the parameters: the part a head replaces, such as the classifier, or blocks not cached) is saved by all "
        "layers alike"
    )


def saves_text(point: dict[str, Any], s: dict[str, Any], short: bool = False) -> str:
    """What dropping the other layers saves, or that it saves nothing beyond all layers (the deepest
    layer is kept, so the same backbone runs)."""
    if _saves_nothing_more(point, s):
        if point.get("deepest") is None:  # each head's set its own (different LAYA seeds): all keep the last
            last = s["cache"]["layer_names"][-1]
            return f"no compute saved beyond all layers, as each head's set keeps the deepest layer, {last}"
        return f"no compute saved beyond all layers, as it keeps the deepest layer, {point['deepest']}"
    if short:
        mixed = mixed_sets(point)
        of = f" (the mean over different sets, each head's own: {mixed})" if mixed else ""
        return f"saving {percent(point['flops_saved'], 1)} FLOPs{of}"
    return (
        f"saves {percent(point['flops_saved'], 1)} of the backbone's FLOPs and {percent(point['params_saved'], 1)} "
        "of its parameters "
        f"({s['costs']['source']})"
    )


def mixed_sets(point: dict[str, Any]) -> str:
    """Where each LAYA head keeps its own set, whose saving is then a mean over different sets: those
    sets ("seed 0: blocks.2, 0.6%; seeds 1, 2: blocks.0, 83.4%"); "" where every head keeps one set.
    Summaries written before ``flops_saved_by_seed`` name the sets without their savings."""
    by_seed = point.get("layers_by_seed")
    if not by_seed:
        return ""
    saved = point.get("flops_saved_by_seed") or {}
    groups: dict[tuple[str, ...], list[str]] = {}
    for seed, layers in by_seed.items():
        groups.setdefault(tuple(layers), []).append(seed)
    parts = [
        f"seed{'s' * (len(seeds) > 1)} {', '.join(seeds)}: {' '.join(layers)}"
        + (f", {percent(saved[seeds[0]], 1)}" if seeds[0] in saved else "")
        for layers, seeds in groups.items()
    ]
    return "; ".join(parts)


def smallest_within(s: dict[str, Any], ranking: str) -> dict[str, Any] | None:
    """The fewest layers ``ranking`` keeps within --max-drop on validation in a prune summary (its
    ``why_withheld`` says when the withhold rule holds for it), or None when the ranking does not apply."""
    within = [p for p in s["points"] if p["ranking"] == ranking and p["within_max_drop"]]
    return min(within, key=lambda p: p["k"]) if within else None


def smallest_k_text(point: dict[str, Any] | None) -> str:
    """A ranking's smallest k within --max-drop for a table cell, marked when it is withheld: no pick."""
    if point is None:
        return "—"
    return f"{point['k']} (withheld)" if point.get("why_withheld") else str(point["k"])
