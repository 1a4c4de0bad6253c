"""Leave-one-layer-out (LOLO) effects and multi-layer ablations (docs/METHOD.md, "Ablation and
leave-one-layer-out effects"); registry ``ABLATIONS``.

Every function runs all the ablated copies of a chunk in one call, so p and every p_ablated come from
the same forward pass; the built-in heads recombine per-layer parts computed once per chunk
(:mod:`.factored`), any other head runs on the chunk stacked K = L+1 times.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial

import numpy as np
import torch
from torch import Tensor, nn

from ..choices import RESAMPLE_DRAWS
from ..errors import InputError
from ..heads import Head
from .ablations import ABLATIONS, Ablation, check_ablation, resolve_ablations  # noqa: F401 (re-exported)
from .config import EFFECTS
from .draws import RowSpan, per_row
from .factored import factor, group_size
from .masks import Masks, lolo_masks

# ---------------------------------------------------------------------------------------------
# core: p for K masked copies of a chunk in one forward pass


def _dtype(head: Head) -> torch.dtype:
    return next(head.parameters()).dtype


def layers_and_target(head: Head, hs: Sequence[Tensor], target) -> tuple[list[Tensor], Tensor]:
    """``hs`` as a list, checked to be the head's L layers, and ``target`` as a long tensor beside them."""
    hs = list(hs)
    if len(hs) != head.num_layers:
        raise InputError(f"{head.kind} head expects {head.num_layers} layers, got {len(hs)}")
    target = torch.as_tensor(
        np.asarray(target) if not isinstance(target, Tensor) else target, dtype=torch.long, device=hs[0].device
    )
    return hs, target


def forward_rows(head: Head, hs: Sequence[Tensor], batch_size: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(logits (N, C), weights (N, L) or None) of the intact head, in float64, ``batch_size`` rows a pass."""
    logits: list[Tensor] = []
    weights: list[Tensor] = []
    with torch.no_grad():
        for s in range(0, len(hs[0]), batch_size):
            out = head([h[s : s + batch_size] for h in hs])
            logits.append(out.logits.cpu())
            if out.weights is not None:
                weights.append(out.weights.cpu())
    w = torch.cat(weights).double().numpy() if weights else None
    return torch.cat(logits).double().numpy(), w


def _prepare(
    head: Head, hs: Sequence[Tensor], target, ablation: str, baselines, donors: Sequence | None = None
) -> tuple[Ablation, list[Tensor], Tensor, list[Tensor] | None]:
    """(ablation, layers, target, values): ``values`` are the per-layer means (mean), the donor pool
    (resample) or None (zero, drop, mix)."""
    abl = check_ablation(ablation, {head.kind: head})
    hs, target = layers_and_target(head, hs, target)
    if abl.needs_baselines and baselines is None:
        raise InputError(f"the {ablation!r} ablation needs per-layer baselines (train-split means)")
    if abl.needs_donors and (donors is None or len(donors) != len(hs) or len(donors[0]) == 0):
        raise InputError(f"the {ablation!r} ablation needs a pool of train rows for every layer (donor_pool)")
    values = baselines if abl.needs_baselines else donors if abl.needs_donors else None
    base = None
    if values is not None:
        base = [torch.as_tensor(np.asarray(v), dtype=_dtype(head), device=hs[0].device) for v in values]
    head.eval()
    return abl, hs, target, base


def _mix_scale(head: Head, scale: Tensor):
    """Multiply the classifier's input (the aggregate) by ``scale`` per row: drop's renormalised
    Σ_kept α_j z_j / Σ_kept α_j times Σ_kept α_j is mix's Σ_kept α_j z_j."""

    def hook(_module: nn.Module, args: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        return (args[0] * scale[:, None].to(args[0].dtype), *args[1:])

    classifier = head.classifier
    assert isinstance(classifier, nn.Module)  # check_ablation: a Linear
    return classifier.register_forward_pre_hook(hook)


def _stacked_logits(
    head: Head, abl: Ablation, hs: list[Tensor], base: list[Tensor] | None, donor_rows: Tensor | None, masks: Tensor
) -> Tensor:
    """(K, B, C) logits of the head's own forward on K stacked copies of the chunk ``hs``, all in one
    pass; ``masks`` (K, B, L) bool (True = ablated); ``donor_rows`` (B,) rows of the donor pool for resample."""
    k, b, _ = masks.shape
    dtype = _dtype(head)
    hs = [h.to(dtype) for h in hs]
    stacked = [h.repeat(k, 1) for h in hs]  # copy-major: rows [j*B:(j+1)*B] are copy j
    flat = masks.reshape(k * b, -1)
    values = base
    if abl.needs_donors:
        assert base is not None and donor_rows is not None  # _prepare checked the pool
        values = [pool[donor_rows].repeat(k, 1) for pool in base]
    x, keep = abl.apply(stacked, flat, values)
    if abl.name == "mix":
        assert keep is not None
        alpha = head(hs).weights  # (B, L), intact: held while layers leave the mix
        assert alpha is not None  # check_ablation: heads with weights only
        handle = _mix_scale(head, (alpha.repeat(k, 1) * keep).sum(-1))
        try:
            logits = head(x, keep=keep).logits
        finally:
            handle.remove()
    else:
        logits = head(x, keep=keep).logits
    return logits.reshape(k, b, -1)


def _chunks(n: int, size: int) -> Iterable[slice]:
    size = max(1, int(size))
    return (slice(s, min(n, s + size)) for s in range(0, n, size))


def _np(t: Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float64).numpy()


def _target_value(logits: Tensor, target: Tensor, effect: str) -> Tensor:
    """(K, B) float64 value of each row's target class from (K, B, C) logits: the logit itself
    (``effect="logit"``) or its softmax probability (``"prob"``)."""
    values = logits.to(torch.float64)
    if effect == "prob":
        values = torch.softmax(values, dim=-1)
    return values.gather(-1, target.expand(*logits.shape[:2]).unsqueeze(-1)).squeeze(-1)


def _p_chunk(
    head: Head,
    abl: Ablation,
    chunk: list[Tensor],
    target: Tensor,
    base: list[Tensor] | None,
    masks: Tensor,
    donor_rows: Tensor | None,
    stacked: bool,
    effect: str,
) -> Tensor:
    """(K, B) p of one chunk: recombined from per-layer parts computed once (:mod:`.factored`) when the
    head allows it, else by the stacked forward of at most L+1 copies per pass."""
    logits_of = None
    if not stacked:
        values = base if donor_rows is None or base is None else [pool[donor_rows] for pool in base]
        logits_of = factor(head, abl.name, chunk, values, in_mix=abl.in_mix)
    if logits_of is None:  # as many copies a pass as LOLO's, so subsets and curves need no more memory
        logits_of, step = partial(_stacked_logits, head, abl, chunk, base, donor_rows), len(chunk) + 1
    else:
        step = group_size(head, len(target))
    return torch.cat(
        [_target_value(logits_of(masks[j : j + step]), target, effect) for j in range(0, len(masks), step)]
    )


# ---------------------------------------------------------------------------------------------
# public


def ablate_sets(
    head: Head,
    hs: Sequence[Tensor],
    target,
    sets: Sequence[Masks],
    ablation: str = "mean",
    baselines: Sequence | None = None,
    *,
    batch_size: int = 512,
    donors: Sequence | None = None,
    draws: int = RESAMPLE_DRAWS,
    seed: int = 0,
    stacked: bool = False,
    span: RowSpan = RowSpan(),
    effect: str = "prob",
) -> list[np.ndarray]:
    """(N, K_j) p for each mask set of ``sets`` (:mod:`.masks`), every set of a chunk in one pass over
    its copies. resample averages ``draws`` seeded donors per sample (the same donors in every call
    with the same seed and rows; ``span``: which of the compared rows these are, so a row gets its
    donors whatever the split). ``stacked``: always run the head's own forward on stacked copies (the
    reference the recombined parts are tested against); ``effect``: the target's ``"prob"`` or ``"logit"``."""
    n = len(np.asarray(target))
    sets = list(sets)
    if not any(s.k for s in sets):
        return [np.zeros((n, 0)) for _ in sets]
    if effect not in EFFECTS:
        raise InputError(f"effect must be one of {', '.join(EFFECTS)}, got {effect!r}")
    abl, hs, target, base = _prepare(head, hs, target, ablation, baselines, donors)
    n_draws = max(1, int(draws)) if abl.needs_donors else 1
    idx = None
    if abl.needs_donors:
        assert base is not None
        pool = len(base[0])
        rng = np.random.default_rng([seed, 5])
        idx = torch.as_tensor(
            per_row(lambda total: rng.integers(0, pool, size=(n_draws, total)), n, span, axis=1),
            device=target.device,
        )
    dtype = _dtype(head)
    out = []
    with torch.no_grad():
        for rows in _chunks(n, batch_size):
            masks = torch.cat([s.of(rows, target.device) for s in sets if s.k])
            chunk = [h[rows].to(dtype) for h in hs]
            per_draw = [
                _p_chunk(
                    head, abl, chunk, target[rows], base, masks, None if idx is None else idx[d, rows], stacked, effect
                )
                for d in range(n_draws)
            ]
            # first draw + mean difference: layers a head ignores give exactly the intact p
            first = per_draw[0]
            mean = first + sum((p - first for p in per_draw[1:]), torch.zeros_like(first)) / n_draws
            out.append(mean.T)
    pc = _np(torch.cat(out))
    bounds = np.cumsum([0, *(s.k for s in sets)])
    return [pc[:, a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def lolo_effects(
    head: Head,
    hs: Sequence[Tensor],
    target,
    ablation: str = "mean",
    baselines: Sequence | None = None,
    **kw,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p (N,), p_ablated (N, L), effects (N, L)) with e_i = p − p_ablated_i, float64; ``kw``:
    batch_size (512), donors, draws, seed, effect ("prob": p is the target probability; "logit": the
    target logit) of :func:`ablate_sets`.

    p and every p_ablated of a chunk of ``batch_size`` samples come from the same call.
    """
    (pc,) = ablate_sets(head, hs, target, [lolo_masks(len(hs))], ablation, baselines, **kw)
    p, p_abl = pc[:, 0], pc[:, 1:]
    return p, p_abl, p[:, None] - p_abl
