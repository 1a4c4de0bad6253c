"""Ablated forward passes of the built-in heads, recombined from per-layer parts computed once per chunk
(docs/METHOD.md, "Ablation and leave-one-layer-out effects").

Removing layer i changes one layer's term and nothing else before the head mixes its layers:

* ``mean`` / ``zero`` / ``resample`` replace h_i, so only z_i = W_i s_i(h_i) + b_i changes (s_i the
  standardisation), and with it ψ(z_i) and its block of the first scorer (LAYA) or post layer
  (Concat) product: u_i = U_i ψ(z_i). The mixing layer's input for any mask m (True = ablated) is
  Σ_i u_i + b + Σ_i m_i (u_i^abl − u_i);
* ``drop`` / ``mix`` leave every z_i and the intact weights α as they are and only reweight Σ_i α_i z_i.

So each chunk pays one pass of the per-layer parts for its intact rows and one for the ablated values,
and every masked copy then costs a few (L × width) products instead of a whole forward. The numbers
equal the stacked forward's up to floating-point rounding (tests/test_compare_factored.py). Heads of
another class, or with another layout of modules, return None here and keep the stacked forward.
Shapes: K copies, B rows, L layers, d* = D, C classes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from ..heads import ConcatHead, Head, LastLayerHead, LayaHead, ScalarMixHead, _mix

# logits (K, B, C) of a chunk for masks (K, B, L) bool, True = ablated
Logits = Callable[[Tensor], Tensor]


def factor(
    head: Head, ablation: str, hs: Sequence[Tensor], values: Sequence[Tensor] | None, *, in_mix: bool
) -> Logits | None:
    """The masked logits of one chunk ``hs`` (each (B, D_l), in the head's dtype), or None when ``head``
    is not a built-in head of the expected layout. ``values[i]``: what replaces h_i, (D_l,) or (B, D_l);
    None for zero (and unused by drop / mix)."""
    if type(head) not in (LayaHead, ScalarMixHead, ConcatHead, LastLayerHead):  # a subclass may change forward
        return None
    if isinstance(head, LayaHead) and _is_laya(head):
        return _laya(head, ablation, hs, values, in_mix)
    if isinstance(head, ScalarMixHead):
        return _scalarmix(head, ablation, hs, values, in_mix)
    if isinstance(head, ConcatHead) and _is_concat(head) and not in_mix:
        return _concat(head, hs, values)
    if isinstance(head, LastLayerHead) and not in_mix:
        return _last(head, hs, values)
    return None


def group_size(head: Head, rows: int) -> int:
    """Masked copies per call: about 2M numbers in the widest (K, B, width) intermediate."""
    width = max(int(getattr(head, "d_star", 1)), int(getattr(head, "score_width", 1)), head.num_classes)
    return max(head.num_layers + 1, min(256, (1 << 21) // max(1, rows * width)))


def _is_laya(head: LayaHead) -> bool:
    s = head.scorer
    return (
        isinstance(s, nn.Sequential)
        and len(s) == 3
        and isinstance(s[0], nn.Linear)
        and isinstance(s[2], nn.Linear)
        and s[0].in_features == head.num_layers * head.d_star
    )


def _is_concat(head: ConcatHead) -> bool:
    p = head.post
    return isinstance(p, nn.Sequential) and len(p) == 2 and isinstance(p[0], nn.Linear)


def _ablated_inputs(hs: Sequence[Tensor], values: Sequence[Tensor] | None) -> list[Tensor]:
    """What replaces each h_i, as (1, D_l) or (B, D_l) rows."""
    if values is None:
        return [torch.zeros((1, h.shape[1]), dtype=h.dtype, device=h.device) for h in hs]
    return [v.to(h.dtype).reshape(-1, h.shape[1]) for v, h in zip(values, hs)]


def _adapted(head: LayaHead | ScalarMixHead | ConcatHead, xs: Sequence[Tensor]) -> Tensor:
    """(R, L, d*): z_i of rows that may differ in count per layer (1 or B), broadcast to the most."""
    zs = [g(x) for g, x in zip(head.adapters, head._tap(xs))]
    rows = max(len(z) for z in zs)
    return torch.stack([z.expand(rows, -1) for z in zs], dim=1)


def _blocks(p: Tensor, weight: Tensor) -> Tensor:
    """(R, L, d) @ per-layer column blocks of ``weight`` (out, L·d) → (R, L, out): each layer's share
    of weight @ flatten(p)."""
    out = weight.shape[0]
    return torch.einsum("rld,old->rlo", p, weight.reshape(out, p.shape[1], p.shape[2]))


def _mixed(base: Tensor, masks: Tensor, delta: Tensor) -> Tensor:
    """(K, B, W): base (B, W) + Σ_i m_i delta_i with delta (B or 1, L, W)."""
    k, b, n_layers = masks.shape
    delta = delta.expand(b, n_layers, -1)
    return base + torch.bmm(masks.to(delta.dtype).transpose(0, 1), delta).transpose(0, 1)


def _aggregate(weights: Tensor, z: Tensor) -> Tensor:
    """(K, B, d): Σ_i weights_i z_i for weights (K, B, L) and z (B, L, d)."""
    return torch.bmm(weights.transpose(0, 1), z).transpose(0, 1)


def _reweight(weights: Tensor, masks: Tensor, ablation: str) -> Tensor:
    """drop: the kept weights renormalised; mix: the kept weights as they are."""
    keep = (~masks).to(weights.dtype)
    return _mix(weights, keep) if ablation == "drop" else weights * keep


def _laya(head: LayaHead, ablation: str, hs: Sequence[Tensor], values, in_mix: bool) -> Logits:
    first, act, last = head.scorer[0], head.scorer[1], head.scorer[2]
    assert isinstance(first, nn.Linear)
    z = _adapted(head, hs)  # (B, L, d*)
    u = _blocks(head.psi(z), first.weight)  # (B, L, sw)
    pre = u.sum(1) + first.bias

    def alpha_of(pre_k: Tensor) -> Tensor:
        return torch.softmax(last(act(pre_k)) / head.tau, dim=-1)

    if in_mix:
        alpha = alpha_of(pre)  # (B, L): held while layers leave the mix

        def reweighted(masks: Tensor) -> Tensor:
            w = _reweight(alpha.expand(masks.shape[0], -1, -1), masks, ablation)
            return head.classifier(_aggregate(w, z))

        return reweighted
    zb = _adapted(head, _ablated_inputs(hs, values))  # (1 or B, L, d*)
    du = _blocks(head.psi(zb), first.weight) - u
    dz = zb - z

    def replaced(masks: Tensor) -> Tensor:
        alpha = alpha_of(_mixed(pre, masks, du))  # (K, B, L)
        agg = _aggregate(alpha, z) + _aggregate(alpha * masks.to(alpha.dtype), dz.expand_as(z))
        return head.classifier(agg)

    return replaced


def _scalarmix(head: ScalarMixHead, ablation: str, hs: Sequence[Tensor], values, in_mix: bool) -> Logits:
    z = _adapted(head, hs)
    w = head.static_weights()
    if in_mix:
        return lambda masks: head.classifier(_aggregate(_reweight(w.expand(*masks.shape), masks, ablation), z))
    dz = (_adapted(head, _ablated_inputs(hs, values)) - z).expand_as(z)

    def replaced(masks: Tensor) -> Tensor:
        full = w.expand(*masks.shape)
        return head.classifier(_aggregate(full, z) + _aggregate(full * masks.to(w.dtype), dz))

    return replaced


def _concat(head: ConcatHead, hs: Sequence[Tensor], values) -> Logits:
    first, act = head.post[0], head.post[1]
    assert isinstance(first, nn.Linear)
    z = _adapted(head, hs)
    u = _blocks(z, first.weight)
    pre = u.sum(1) + first.bias
    du = _blocks(_adapted(head, _ablated_inputs(hs, values)), first.weight) - u
    return lambda masks: head.classifier(act(_mixed(pre, masks, du)))


def _last(head: LastLayerHead, hs: Sequence[Tensor], values) -> Logits:
    intact = head.classifier(head._tap(hs)[-1])  # (B, C)
    ablated = head.classifier(head._tap(_ablated_inputs(hs, values))[-1])  # (1 or B, C)
    return lambda masks: torch.where(masks[..., -1:], ablated.expand_as(intact), intact)
