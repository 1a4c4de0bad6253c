"""Registry ``ABLATIONS``: how layer i is removed (the list is in :mod:`.lolo`'s docstring), and the
checks of which head an ablation applies to. The arithmetic of removing layers is :mod:`.lolo`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..choices import RESAMPLE_DRAWS
from ..errors import InputError, suggest
from ..heads import Head
from ..registry import Registry


@dataclass(frozen=True)
class Ablation:
    name: str
    description: str
    needs_weights: bool = False  # only for heads with aggregation weights (has_weights)
    needs_baselines: bool = False  # needs the train-split layer means
    needs_donors: bool = False  # needs a pool of train rows (resample)

    @property
    def in_mix(self) -> bool:
        """Removes the layer inside the head's aggregation, not at its input."""
        return self.name in ("drop", "mix")

    def apply(
        self, hs: Sequence[Tensor], mask: Tensor, baselines: Sequence[Tensor] | None
    ) -> tuple[list[Tensor], Tensor | None]:
        """Layers and keep-mask for ``head(hs, keep)``; ``mask`` (M, L) bool, True = ablated.
        ``baselines[i]`` is the value put in place of h_i: (D_l,), or (M, D_l) per row (resample)."""
        if self.in_mix:
            return list(hs), (~mask).to(hs[0].dtype)
        out = []
        for i, h in enumerate(hs):
            if baselines is not None:
                b = baselines[i]
            else:
                b = torch.zeros((), dtype=h.dtype, device=h.device)
            out.append(torch.where(mask[:, i : i + 1], b.to(h.dtype).expand_as(h), h))
        return out, None


ABLATIONS: Registry[Ablation] = Registry("ablation")
ABLATIONS.add("mean", Ablation("mean", "h_i replaced by its mean over the train split", needs_baselines=True))
ABLATIONS.add("zero", Ablation("zero", "h_i replaced by 0"))
ABLATIONS.add(
    "resample",
    Ablation(
        "resample",
        f"h_i replaced by h_i of another train sample, p averaged over {RESAMPLE_DRAWS} seeded donors",
        needs_donors=True,
    ),
)
ABLATIONS.add(
    "drop", Ablation("drop", "aggregation weight of layer i set to 0, the rest renormalised", needs_weights=True)
)
ABLATIONS.add(
    "mix",
    Ablation(
        "mix", "layer i left out of the aggregation, the other weights held (not renormalised)", needs_weights=True
    ),
)


def resolve_names(
    requested: str | Sequence[str], registry: Registry, what: str, choices: list[str]
) -> tuple[list[str], bool]:
    """(names, is_all): comma lists flattened, ``all`` expanded in registry order, duplicates dropped;
    nothing requested is an InputError naming ``choices``."""
    items = requested.split(",") if isinstance(requested, str) else [p for r in requested for p in str(r).split(",")]
    items = [i.strip() for i in items if i.strip()]
    if not items:
        raise InputError(f"no {what} given; {suggest('', choices)}")
    out: list[str] = []
    for item in items:
        names = registry.names() if item == "all" else [registry.get(item).name]
        out += [n for n in names if n not in out]
    return out, "all" in items


def resolve_ablations(requested: str | Sequence[str]) -> tuple[list[str], bool]:
    return resolve_names(requested, ABLATIONS, "ablation", [*ABLATIONS.names(), "all"])


def check_ablation(ablation: str, heads: dict[str, Head]) -> Ablation:
    """The registry entry, or an InputError naming the heads that support it."""
    abl = ABLATIONS.get(ablation)
    if abl.needs_weights:
        bad = [f"{n} ({h.kind})" for n, h in heads.items() if not h.has_weights]
        if bad:
            good = [f"{n} ({h.kind})" for n, h in heads.items() if h.has_weights]
            raise InputError(
                f"the {ablation!r} ablation needs a head with aggregation weights (laya, scalarmix); "
                f"not supported by: {', '.join(bad)}; supported by: {', '.join(good) or 'none of the heads given'}; "
                f"use --ablation mean, zero or resample"
            )
    if abl.name == "mix":
        # mix rescales the classifier's input (see _mix_scale): it needs logits = W h_agg + b.
        bad = [f"{n} ({h.kind})" for n, h in heads.items() if not isinstance(getattr(h, "classifier", None), nn.Linear)]
        if bad:
            raise InputError(
                f"the 'mix' ablation needs a head whose logits are a Linear map of its aggregate; "
                f"not: {', '.join(bad)}; use --ablation drop"
            )
    return abl


def plan_ablations(
    names: list[str], every: bool, heads: dict[str, Head]
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Per head: (ablations to run, {skipped: reason}). A named ablation must apply to every head;
    with ``all``, each head runs the ones that apply to it."""
    plan: dict[str, tuple[list[str], dict[str, str]]] = {n: ([], {}) for n in heads}
    for a in names:
        if not every:
            check_ablation(a, heads)
        for n, h in heads.items():
            try:
                check_ablation(a, {n: h})
                plan[n][0].append(a)
            except InputError as e:
                plan[n][1][a] = str(e)
    return plan
