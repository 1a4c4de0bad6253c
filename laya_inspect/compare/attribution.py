"""Layer attributions: one score per sample and layer, an (N, L) array per method
(docs/METHOD.md, "Layer attributions"); registry ``METHODS``.

IG's gradients come from one backward pass of the summed target logits (:func:`summed_target_gradients`)
instead of Captum's one autograd root per row and step: the same numbers, several times faster. A method
not defined for a head is skipped with a reason; it is an error only when defined for none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..choices import BASELINE_CHOICES
from ..errors import InputError
from ..heads import Head, LayaHead, ScalarMixHead
from ..registry import Registry
from .ablations import resolve_names
from .draws import RANDOM_STREAM, RowSpan, draw_key, per_row
from .lolo import _chunks, _np, forward_rows, layers_and_target


@dataclass(frozen=True)
class AttributionOptions:
    """Everything a method may need besides the head, the layers and the target."""

    baselines: Sequence[Tensor | np.ndarray] | None = None  # (D_l,) per layer: IG's b_i when baseline == "mean"
    baseline: str = "zero"  # "zero" (b_i = 0) or "mean" (b_i = ``baselines``, the train-split means)
    n_steps: int = 50
    internal_batch_size: int | None = None
    relu: bool = False
    seed: int = 0
    fit_seed: int | None = None  # the head's (config.json's ``seed``): the random method draws apart per seed
    batch_size: int = 512  # samples per chunk for the gradient methods
    span: RowSpan = RowSpan()  # which of the compared rows these are: random draws for them alone


def options_for(config: Any, values: Mapping[str, Any], span: RowSpan = RowSpan()) -> AttributionOptions:
    """The attribution options of a compare run (``config``: a CompareConfig; ``values``: its layer
    means), for the rows ``span`` names; compare's scores and its sanity checks share them."""
    same = ("baseline", "n_steps", "internal_batch_size", "relu", "seed", "batch_size")
    baselines = values["means"] if config.baseline == "mean" else None
    return AttributionOptions(baselines, span=span, **{k: getattr(config, k) for k in same})


@dataclass
class Attribution:
    scores: np.ndarray  # (N, L) float64
    extras: dict[str, np.ndarray] = field(default_factory=dict)  # e.g. ig "delta" (N,)
    params: dict[str, Any] = field(default_factory=dict)  # every parameter used, for the output files


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    fn: Callable[[Head, Sequence[Tensor], Tensor, AttributionOptions], Attribution]
    kinds: tuple[str, ...] | None = None  # head kinds it is defined for; None = every head

    def skip_reason(self, head: Head) -> str | None:
        if self.kinds is None or head.kind in self.kinds:
            return None
        return f"{self.name!r} is defined only for {' / '.join(self.kinds)} heads, not {head.kind!r}"


METHODS: Registry[Method] = Registry("attribution method")


def _method(name: str, description: str, kinds: tuple[str, ...] | None = None):
    def deco(fn):
        METHODS.add(name, Method(name, description, fn, kinds))
        return fn

    return deco


# ---------------------------------------------------------------------------------------------
# helpers


def all_layers_in_graph(head: Head) -> Callable[..., Tensor]:
    """``head.logits`` plus 0·Σ(every tap output and input), so a layer the head ignores (e.g. all
    but the last for a LastLayer head) gets a zero gradient instead of Captum's "not used in the
    graph" error. The added term is exactly zero for finite features. The tap hooks are registered
    inside each call (after Captum's own, so they see what Captum's hooks return) and removed in
    ``finally``."""

    def forward(*hs: Tensor) -> Tensor:
        seen: list[Tensor] = []
        handles = [tap.register_forward_hook(lambda _m, _i, out: seen.append(out)) for tap in head.taps]
        try:
            logits = head.logits(*hs)
        finally:
            for handle in handles:
                handle.remove()
        used = sum(t.sum() for t in [*seen, *hs])
        return logits + 0.0 * used

    return forward


# Rows (samples × steps) per IG forward when internal_batch_size is not given. Captum's default, every
# step of a 512-row chunk at once (25,600 rows), moves ~100 MB of activations through memory per
# pass; 2,048 rows stay in the CPU's cache and ran 1.2–1.3× faster (docs/PERFORMANCE.md).
IG_ROWS_PER_PASS = 2048


def summed_target_gradients(
    forward_fn: Callable[..., Tensor],
    inputs: tuple[Tensor, ...],
    target_ind: Tensor | None = None,
    additional_forward_args: Any = None,
) -> tuple[Tensor, ...]:
    """A drop-in for Captum's ``compute_gradients`` (set as ``IntegratedGradients.gradient_func``) that
    asks autograd for one root, Σ_r f_(c_r)(x_r), where Captum asks for one per row and step.

    A head in eval mode maps each row on its own, so ∂(Σ_r f_(c_r)(x_r))/∂x_r = ∂f_(c_r)(x_r)/∂x_r: the
    gradients are the ones Captum computes (bit for bit in our tests), without the engine's per-root
    cost (64% of IG's time at 25,600 roots per chunk). Not valid for a model whose rows interact
    (batch statistics in training mode)."""
    if not isinstance(target_ind, Tensor):
        raise InputError(f"summed_target_gradients needs one target class per row (a tensor), got {target_ind!r}")
    extra = () if additional_forward_args is None else tuple(additional_forward_args)
    with torch.autograd.set_grad_enabled(True):
        out = forward_fn(*inputs, *extra)
        index = target_ind.reshape(-1, 1).to(out.device)
        if len(index) == 1:  # Captum passes a one-row target as is, not repeated over the steps
            index = index.expand(len(out), 1)
        picked = out.gather(1, index)
        return torch.autograd.grad(picked.sum(), inputs)


def _baselines(hs: Sequence[Tensor], options: AttributionOptions) -> list[Tensor]:
    """b_i as recorded in ``options.baseline``: zeros, or the given train-split means."""
    if options.baseline == "zero":
        return [torch.zeros(h.shape[1], dtype=h.dtype, device=h.device) for h in hs]
    if options.baselines is None:
        raise InputError("baseline 'mean' needs the per-layer train-split means (AttributionOptions.baselines)")
    if len(options.baselines) != len(hs):
        raise InputError(f"{len(options.baselines)} baselines for {len(hs)} layers")
    return [torch.as_tensor(b, dtype=h.dtype, device=h.device) for b, h in zip(options.baselines, hs)]


# ---------------------------------------------------------------------------------------------
# methods


@_method("alpha", "LAYA's attention α(x) from one forward pass (intrinsic)", kinds=("laya",))
def alpha(head: Head, hs: Sequence[Tensor], target: Tensor, options: AttributionOptions) -> Attribution:
    _, weights = forward_rows(head, hs, options.batch_size)
    assert weights is not None  # kinds=("laya",): a LAYA head returns α
    return Attribution(weights, params={"source": "HeadOutput.weights"})


@_method(
    "alpha-contrib",
    "α_i(x)·<df_c/dh_agg, z_i>: each layer's term of LAYA's aggregate through the output layer (intrinsic)",
    kinds=("laya",),
)
def alpha_contrib(head: Head, hs: Sequence[Tensor], target: Tensor, options: AttributionOptions) -> Attribution:
    """α_i(x)·⟨g_c(x), z_i(x)⟩ with g_c = ∂f_c/∂h_agg taken by autograd through ``head.classifier`` alone,
    at the head's own aggregate h_agg = Σ_i α_i z_i (read by a hook on the classifier's input): W_c for
    the linear output layer, exactly. A head whose classifier does not read Σ_i α_i z_i is refused."""
    if not isinstance(head, LayaHead):
        raise InputError(f"'alpha-contrib' needs a LAYA head (α and its z_i), got {type(head).__name__}")
    out = []
    for rows in _chunks(len(target), options.batch_size):
        x = [h[rows] for h in hs]
        seen: list[Tensor] = []
        handle = head.classifier.register_forward_pre_hook(lambda _m, args, seen=seen: seen.append(args[0]))
        try:
            with torch.no_grad():
                alpha = head(x).weights  # (B, L)
                z = head._adapt(x)  # (B, L, d*)
        finally:
            handle.remove()
        assert alpha is not None  # LayaHead always returns α
        agg = seen[-1].detach()  # what the logits were computed from
        if len(seen) != 1 or not torch.allclose(agg, (alpha.unsqueeze(-1) * z).sum(1), rtol=1e-4, atol=1e-5):
            raise InputError("'alpha-contrib' needs a head whose output layer reads Σ_i α_i z_i; this one does not")
        with torch.enable_grad():
            agg = agg.clone().requires_grad_(True)
            picked = head.classifier(agg).gather(1, target[rows].reshape(-1, 1))
            (grad,) = torch.autograd.grad(picked.sum(), agg)  # (B, d*): ∂f_c/∂h_agg, row by row
        out.append(alpha * torch.einsum("bld,bd->bl", z, grad))
    params = {
        "formula": "alpha_i * <df_c/dh_agg, z_i>",
        "gradient": "autograd through the head's output layer at its own h_agg (W_c for a linear output)",
        "classifier": type(head.classifier).__name__,
    }
    return Attribution(_np(torch.cat(out)), params=params)


@_method("ig", "Captum IntegratedGradients over all layer inputs, summed per layer (signed)")
def integrated_gradients(head: Head, hs: Sequence[Tensor], target: Tensor, options: AttributionOptions) -> Attribution:
    from captum.attr import IntegratedGradients

    base = _baselines(hs, options)
    scores, deltas = [], []
    forward = all_layers_in_graph(head)
    per_pass = options.internal_batch_size or max(IG_ROWS_PER_PASS, options.batch_size)
    with torch.enable_grad():
        ig = IntegratedGradients(forward)
        ig.gradient_func = summed_target_gradients
        for rows in _chunks(len(target), options.batch_size):
            x = tuple(h[rows] for h in hs)
            b = tuple(bi.expand_as(xi) for bi, xi in zip(base, x))
            attrs, delta = ig.attribute(
                x,
                baselines=b,
                target=target[rows],
                n_steps=options.n_steps,
                internal_batch_size=per_pass,
                return_convergence_delta=True,
            )
            scores.append(torch.stack([a.sum(dim=1) for a in attrs], dim=1))  # (B, L)
            deltas.append(delta.reshape(-1))
    params = {
        "n_steps": options.n_steps,
        "method": "gausslegendre (Captum default)",
        "internal_batch_size": options.internal_batch_size,
        "rows_per_pass": per_pass,  # samples × steps per forward: internal_batch_size, or the default
        "gradients": "one backward pass of the summed target logits per step batch (rows are independent)",
        "baseline": options.baseline,
        "layer_score": "signed sum over the layer's features",
        "return_convergence_delta": True,
    }
    return Attribution(_np(torch.cat(scores)), {"delta": _np(torch.cat(deltas))}, params)


@_method("gradcam", "Captum LayerGradCam on each layer's tap: <df_c/dh_i, h_i> for vectors")
def gradcam(head: Head, hs: Sequence[Tensor], target: Tensor, options: AttributionOptions) -> Attribution:
    from captum.attr import LayerGradCam

    cols = []
    forward = all_layers_in_graph(head)
    with torch.enable_grad():
        for tap in head.taps:
            cam = LayerGradCam(forward, tap)
            parts = [
                cam.attribute(tuple(h[rows] for h in hs), target=target[rows], relu_attributions=options.relu)
                .detach()
                .reshape(rows.stop - rows.start, -1)
                .sum(1)
                for rows in _chunks(len(target), options.batch_size)
            ]
            cols.append(torch.cat(parts))
    params = {"relu_attributions": options.relu, "layer": "head.taps[i] (Identity on h_i)"}
    return Attribution(_np(torch.stack(cols, dim=1)), params=params)


@_method("static", "ScalarMix softmax weights, the same row for every input (global)", kinds=("scalarmix",))
def static(head: Head, hs: Sequence[Tensor], target: Tensor, options: AttributionOptions) -> Attribution:
    assert isinstance(head, ScalarMixHead)  # kinds=("scalarmix",)
    with torch.no_grad():
        w = head.static_weights()  # (L,)
    return Attribution(
        np.broadcast_to(_np(w), (len(target), head.num_layers)).copy(),
        params={"source": "ScalarMixHead.static_weights()"},
    )


@_method("random", "seeded uniform noise in [0, 1) (the floor)")
def random_scores(head: Head, hs: Sequence[Tensor], target: Tensor, options: AttributionOptions) -> Attribution:
    rng = np.random.default_rng(draw_key(options.seed, options.fit_seed, RANDOM_STREAM))
    return Attribution(
        per_row(lambda total: rng.random((total, head.num_layers)), len(target), options.span),
        params={
            "seed": options.seed,
            "fit_seed": options.fit_seed,
            "distribution": f"uniform [0, 1), numpy default_rng([seed, {RANDOM_STREAM}, fit_seed]) "
            f"([seed, {RANDOM_STREAM}] without a fit seed)",
        },
    )


# ---------------------------------------------------------------------------------------------
# entry points


def resolve_methods(requested: str | Sequence[str]) -> list[str]:
    return resolve_names(requested, METHODS, "attribution method", METHODS.names())[0]


def plan_methods(
    methods: Sequence[str], heads: dict[str, Head], *, explicit: bool | Collection[str] = True
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """For each head: (methods to run, {skipped method: reason}).

    A method the user named (``explicit``: True = all of ``methods``, or the named subset; ``all``
    expands to names that are not explicit) that is defined for none of the heads is an InputError.
    """
    named = set(methods) if explicit is True else set(explicit or ())
    plan: dict[str, tuple[list[str], dict[str, str]]] = {name: ([], {}) for name in heads}
    for m in methods:
        reasons = {name: METHODS.get(m).skip_reason(head) for name, head in heads.items()}
        if m in named and all(reasons.values()):
            kinds = ", ".join(f"{n} ({h.kind})" for n, h in heads.items())
            raise InputError(
                f"method {m!r} is defined for none of the heads given: {next(iter(reasons.values()))}; heads: {kinds}"
            )
        for name, reason in reasons.items():
            if reason:
                plan[name][1][m] = reason
            else:
                plan[name][0].append(m)
    return plan


def attribute(
    method: str,
    head: Head,
    hs: Sequence[Tensor],
    target: Tensor | np.ndarray,
    options: AttributionOptions | None = None,
) -> Attribution:
    """(N, L) scores of ``method`` for ``head`` on layers ``hs`` (each (N, D_l)) and classes ``target`` (N,)."""
    m = METHODS.get(method)
    reason = m.skip_reason(head)
    if reason:
        raise InputError(reason)
    options = options or AttributionOptions()
    if options.n_steps < 1:
        raise InputError(f"n_steps must be ≥ 1, got {options.n_steps}")
    if options.baseline not in BASELINE_CHOICES:
        raise InputError(f"baseline must be one of {', '.join(BASELINE_CHOICES)}, got {options.baseline!r}")
    hs, target = layers_and_target(head, hs, target)
    head.eval()
    result = m.fn(head, hs, target, options)
    result.params = {"method": method, **result.params}
    return result
