"""Output heads over per-layer states: LAYA and its three baselines, one contract for all.

Every head maps hs = [h_1 … h_L], each (N, D_l), to logits (N, C). A head with aggregation weights
also returns them, (N, L), from the same forward pass: α(x) for LAYA, the input-independent softmax
of the scalars for ScalarMix. Formulas: docs/METHOD.md, "Heads".

A head built with ``standardize="feature"`` (or ``"layer"``) first maps each h_i to (h_i − μ_i) / σ_i
with fixed (D_l,) buffers that the trainer sets from training-split statistics
(:meth:`Head.set_standardization`; docs/METHOD.md, "Standardisation"). The buffers live in the
state_dict, so a saved head applied to raw cached features gives the logits it gave in training.

A head built with ``untrained_classes`` (fit-head and train pass the classes with no training rows) holds
their logits UNTRAINED_GAP below each row's lowest other one: an output unit that never saw its
class cannot win a row by the luck of its initialisation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import torch
from torch import Tensor, nn

from .choices import INITS, PSI_CHOICES, STANDARDIZE_CHOICES
from .errors import InputError
from .registry import Registry

HEADS: Registry[type[Head]] = Registry("head")
UNTRAINED_GAP = 200.0  # exp(−200) is 0 in float32: a class with no training rows gets probability 0


@dataclass
class HeadOutput:
    logits: Tensor  # (N, C)
    weights: Tensor | None  # (N, L) aggregation weights, or None


def glorot_(module: nn.Module) -> None:
    """Keras defaults (glorot-uniform, zero bias), as the reference implementation uses."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)


class Standardize(nn.Module):
    """h ↦ (h − mean) / scale with fixed (D,) buffers: identity until the trainer sets them."""

    mean: Tensor
    scale: Tensor

    def __init__(self, width: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(width))
        self.register_buffer("scale", torch.ones(width))

    def forward(self, h: Tensor) -> Tensor:
        return (h - self.mean) / self.scale


class Head(nn.Module):
    kind: ClassVar[str]
    has_weights: ClassVar[bool] = False
    untrained: Tensor  # (C,) bool: the classes with no training rows

    def __init__(
        self,
        widths: Sequence[int],
        num_classes: int,
        *,
        init: str = "glorot",
        standardize: str | None = None,
        untrained_classes: Sequence[int] = (),
    ) -> None:
        super().__init__()
        if not widths:
            raise InputError("a head needs at least one layer")
        if num_classes < 2:
            raise InputError(f"a head needs at least 2 classes, got {num_classes}")
        if init not in INITS:
            raise InputError(f"init must be {' or '.join(map(repr, INITS))}, got {init!r}")
        if standardize is not None and standardize not in STANDARDIZE_CHOICES:
            raise InputError(f"standardize must be one of {', '.join(STANDARDIZE_CHOICES)}, got {standardize!r}")
        self.widths = [int(w) for w in widths]
        self.num_classes = int(num_classes)
        self.init = init
        # Classes with no training rows: their output units never learnt anything, so their logits are
        # held far below every other (probability 0) instead of letting an untrained unit win a row.
        self.untrained_classes = sorted({int(c) for c in untrained_classes})
        if any(not 0 <= c < self.num_classes for c in self.untrained_classes):
            raise InputError(f"untrained_classes must lie in 0 … {self.num_classes - 1}, got {self.untrained_classes}")
        if len(self.untrained_classes) > self.num_classes - 2:
            raise InputError(
                f"untrained_classes {self.untrained_classes} leave fewer than 2 of {self.num_classes} classes"
            )
        self.register_buffer("untrained", class_mask(self.untrained_classes, self.num_classes), persistent=False)
        # Identity taps: the module Grad-CAM hooks to see each layer's representation inside the head.
        # They sit before the standardisation, so they see the cached h_i themselves.
        self.taps = nn.ModuleList(nn.Identity() for _ in self.widths)
        self.standardize: str | None = None if standardize in (None, "none") else standardize
        self.standardizers: nn.ModuleList | None = (
            nn.ModuleList(Standardize(w) for w in self.widths) if self.standardize is not None else None
        )

    @property
    def num_layers(self) -> int:
        return len(self.widths)

    def _init_weights(self) -> None:
        if self.init == "glorot":
            glorot_(self)

    def _tap(self, hs: Sequence[Tensor], keep: Tensor | None = None) -> list[Tensor]:
        if keep is not None and not self.has_weights:
            raise InputError("the 'drop' ablation needs a head with aggregation weights (laya, scalarmix)")
        if len(hs) != self.num_layers:
            raise InputError(f"{self.kind} head expects {self.num_layers} layers, got {len(hs)}")
        tapped = [tap(h) for tap, h in zip(self.taps, hs)]
        if self.standardizers is None:
            return tapped
        return [s(h) for s, h in zip(self.standardizers, tapped)]

    def set_standardization(self, means: Sequence[Any], scales: Sequence[Any]) -> None:
        """Set each layer's (D_l,) mean and scale (> 0, finite) for a head built with ``standardize``."""
        if self.standardizers is None:
            raise InputError(
                f"this {self.kind} head was built without standardize; build it with standardize='feature'"
            )
        if len(means) != self.num_layers or len(scales) != self.num_layers:
            raise InputError(f"{len(means)} means and {len(scales)} scales for {self.num_layers} layers")
        for i, (module, m, s) in enumerate(zip(self.standardizers, means, scales)):
            mod = cast(Standardize, module)
            m_t = torch.as_tensor(m, dtype=mod.mean.dtype).reshape(-1)
            s_t = torch.as_tensor(s, dtype=mod.scale.dtype).reshape(-1)
            if m_t.numel() != self.widths[i] or s_t.numel() != self.widths[i]:
                raise InputError(
                    f"layer {i} has width {self.widths[i]}, got {m_t.numel()} means and {s_t.numel()} scales"
                )
            if not (torch.isfinite(m_t).all() and torch.isfinite(s_t).all() and (s_t > 0).all()):
                raise InputError(f"layer {i}: standardisation means must be finite and scales finite and > 0")
            with torch.no_grad():
                mod.mean.copy_(m_t)
                mod.scale.copy_(s_t)

    def _output(self, logits: Tensor, weights: Tensor | None) -> HeadOutput:
        """The head's output, its untrained classes' logits held down (:func:`hold_untrained`)."""
        if self.untrained_classes:
            logits = hold_untrained(logits, self.untrained)
        return HeadOutput(logits, weights)

    def extra_config(self) -> dict[str, Any]:
        return {}

    def config(self) -> dict[str, Any]:
        """JSON-able constructor arguments: HEADS.get(kind)(**config) rebuilds the head."""
        std = {"standardize": self.standardize} if self.standardize is not None else {}
        untrained = {"untrained_classes": self.untrained_classes} if self.untrained_classes else {}
        return {
            "widths": self.widths,
            "num_classes": self.num_classes,
            "init": self.init,
            **std,
            **untrained,
            **self.extra_config(),
        }

    def logits(self, *hs: Tensor) -> Tensor:
        """Logits from layers given as separate arguments (the form Captum attributes over)."""
        return self.forward(list(hs)).logits

    def forward(self, hs: Sequence[Tensor], keep: Tensor | None = None) -> HeadOutput:  # pragma: no cover
        raise NotImplementedError


def _mix(weights: Tensor, keep: Tensor | None) -> Tensor:
    """Zero the dropped layers' weights and renormalise the rest ('drop' ablation)."""
    if keep is None:
        return weights
    kept = weights * keep.to(weights.dtype)
    return kept / kept.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)


class _AdaptedHead(Head):
    """Shared part: per-layer adapters z_i = W_i h_i + b_i into a common width d*."""

    def __init__(
        self,
        widths: Sequence[int],
        num_classes: int,
        *,
        d_star: int = 96,
        init: str = "glorot",
        standardize: str | None = None,
        untrained_classes: Sequence[int] = (),
    ) -> None:
        super().__init__(widths, num_classes, init=init, standardize=standardize, untrained_classes=untrained_classes)
        if d_star < 1:
            raise InputError(f"d_star must be positive, got {d_star}")
        self.d_star = int(d_star)
        self.adapters = nn.ModuleList(nn.Linear(w, self.d_star) for w in self.widths)
        self.classifier = nn.Linear(self.d_star, self.num_classes)
        self._add_layers()

    def _add_layers(self) -> None:
        """A head's own layers after the adapters and the classifier, then its initialisation (this order
        fixes the seeded weights); LAYA builds its own once τ and ψ are known."""

    def _adapt(self, hs: Sequence[Tensor], keep: Tensor | None = None) -> Tensor:
        return torch.stack([g(h) for g, h in zip(self.adapters, self._tap(hs, keep))], dim=1)  # (N, L, d*)

    def extra_config(self) -> dict[str, Any]:
        return {"d_star": self.d_star}


@HEADS.register("laya")
class LayaHead(_AdaptedHead):
    """LAYA: α(x) = softmax(MLP_score([ψ(z_1); …; ψ(z_L)]) / τ), logits = W Σ_i α_i z_i + b.

    Drop-in use as an output head::

        head = LayaHead(widths=[512, 256, 128], num_classes=10)
        out = head([h1, h2, h3])          # each (N, D_l)
        loss = F.cross_entropy(out.logits, y)
        alpha = out.weights               # (N, 3), rows sum to 1
    """

    kind = "laya"
    has_weights = True

    def __init__(
        self,
        widths: Sequence[int],
        num_classes: int,
        *,
        d_star: int = 96,
        tau: float = 1.5,
        psi: str = "identity",
        score_width: int | None = None,
        init: str = "glorot",
        standardize: str | None = None,
        untrained_classes: Sequence[int] = (),
    ) -> None:
        super().__init__(
            widths, num_classes, d_star=d_star, init=init, standardize=standardize, untrained_classes=untrained_classes
        )
        if tau <= 0:
            raise InputError(f"tau must be > 0, got {tau}")
        if psi not in PSI_CHOICES:
            raise InputError(f"psi must be one of {', '.join(PSI_CHOICES)}, got {psi!r}")
        self.tau = float(tau)
        self.psi_kind = psi
        self.score_width = int(score_width) if score_width else 2 * self.d_star
        d = self.d_star
        self.psi = (
            nn.Identity()
            if psi == "identity"
            else nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d), nn.GELU())
        )
        self.scorer = nn.Sequential(
            nn.Linear(self.num_layers * d, self.score_width), nn.GELU(), nn.Linear(self.score_width, self.num_layers)
        )
        self._init_weights()

    def extra_config(self) -> dict[str, Any]:
        return {"d_star": self.d_star, "tau": self.tau, "psi": self.psi_kind, "score_width": self.score_width}

    def forward(self, hs: Sequence[Tensor], keep: Tensor | None = None) -> HeadOutput:
        z = self._adapt(hs)  # (N, L, d*)
        scores = self.scorer(self.psi(z).flatten(1))  # (N, L)
        alpha = _mix(torch.softmax(scores / self.tau, dim=-1), keep)
        h_agg = (alpha.unsqueeze(-1) * z).sum(dim=1)  # aggregates z, not ψ(z)
        return self._output(self.classifier(h_agg), alpha)


@HEADS.register("last")
class LastLayerHead(Head):
    """logits = W h_L + b; the other layers are ignored."""

    kind = "last"

    def __init__(
        self,
        widths: Sequence[int],
        num_classes: int,
        *,
        init: str = "glorot",
        standardize: str | None = None,
        untrained_classes: Sequence[int] = (),
    ) -> None:
        super().__init__(widths, num_classes, init=init, standardize=standardize, untrained_classes=untrained_classes)
        self.classifier = nn.Linear(self.widths[-1], self.num_classes)
        self._init_weights()

    def forward(self, hs: Sequence[Tensor], keep: Tensor | None = None) -> HeadOutput:
        return self._output(self.classifier(self._tap(hs, keep)[-1]), None)


@HEADS.register("concat")
class ConcatHead(_AdaptedHead):
    """h_agg = GELU(Linear([z_1; …; z_L])), logits = W h_agg + b."""

    kind = "concat"

    def _add_layers(self) -> None:
        self.post = nn.Sequential(nn.Linear(self.num_layers * self.d_star, self.d_star), nn.GELU())
        self._init_weights()

    def forward(self, hs: Sequence[Tensor], keep: Tensor | None = None) -> HeadOutput:
        return self._output(self.classifier(self.post(self._adapt(hs, keep).flatten(1))), None)


@HEADS.register("scalarmix")
class ScalarMixHead(_AdaptedHead):
    """h_agg = Σ_i softmax(s)_i z_i with one learned scalar per layer, shared by all inputs (s = 0 at start)."""

    kind = "scalarmix"
    has_weights = True

    def _add_layers(self) -> None:
        self.scalars = nn.Parameter(torch.zeros(self.num_layers))
        self._init_weights()

    def static_weights(self) -> Tensor:
        """(L,) softmax of the scalars: the head's global layer weighting."""
        return torch.softmax(self.scalars, dim=0)

    def forward(self, hs: Sequence[Tensor], keep: Tensor | None = None) -> HeadOutput:
        z = self._adapt(hs)
        w = _mix(self.static_weights().expand(z.shape[0], -1), keep)
        return self._output(self.classifier((w.unsqueeze(-1) * z).sum(dim=1)), w)


def class_mask(classes: Sequence[int], num_classes: int) -> Tensor:
    """(num_classes,) bool, set at ``classes``."""
    mask = torch.zeros(num_classes, dtype=torch.bool)
    mask[list(classes)] = True
    return mask


def hold_untrained(logits: Tensor, untrained: Tensor) -> Tensor:
    """``logits`` (N, C) with each class where ``untrained`` (C,) bool is set held UNTRAINED_GAP below
    the row's lowest trained one (probability 0 in float32; finite, so differences and losses stay
    numbers)."""
    untrained = untrained.to(logits.device)
    low = logits.detach().masked_fill(untrained, math.inf).amin(dim=-1, keepdim=True) - UNTRAINED_GAP
    return torch.where(untrained, low, logits)


def build_head(kind: str, widths: Sequence[int], num_classes: int, **hp: Any) -> Head:
    """Build a head by registry name, passing only the hyper-parameters its constructor takes."""
    import inspect

    cls = HEADS.get(kind)
    accepted = inspect.signature(cls.__init__).parameters
    return cls(widths, num_classes, **{k: v for k, v in hp.items() if k in accepted and v is not None})
