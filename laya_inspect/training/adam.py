"""Adam for the heads: torch's fused Adam kernel, called without ``torch.optim``.

The first ``torch.optim`` optimizer a process builds imports ``torch._dynamo`` (its methods are
wrapped to keep the compiler out), which takes about 2 s here: more than a whole fit of a small head,
and paid again by each forked worker. The kernel itself (``torch._fused_adam_``) needs none of it.
The update equals ``torch.optim.Adam(groups, lr=lr, fused=True)`` bit for bit (L2 weight decay added
to the gradient, betas 0.9/0.999, eps 1e-8): tests/test_adam.py steps both side by side.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

BETAS = (0.9, 0.999)
EPS = 1e-8


class Optimizer(Protocol):
    def zero_grad(self, set_to_none: bool = True) -> None: ...

    def step(self) -> None: ...


class FusedAdam:
    """``zero_grad`` and ``step`` of Adam over parameter groups (each with its ``weight_decay``)."""

    def __init__(self, groups: list[dict[str, Any]], lr: float) -> None:
        self.lr = float(lr)
        self.groups = [(list(g["params"]), float(g.get("weight_decay", 0.0))) for g in groups]
        self.state: dict[torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for params, _ in self.groups:
            for p in params:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        for params, weight_decay in self.groups:
            # one kernel call per (device, dtype), as torch.optim does
            buckets: dict[tuple[torch.device, torch.dtype], list[torch.Tensor]] = {}
            for p in params:
                if p.grad is not None:
                    buckets.setdefault((p.device, p.dtype), []).append(p)
            for bucket in buckets.values():
                moments = [self._state(p) for p in bucket]
                steps = [m[2] for m in moments]
                torch._foreach_add_(steps, 1)
                torch._fused_adam_(
                    bucket,
                    [p.grad for p in bucket],  # type: ignore[misc]
                    [m[0] for m in moments],
                    [m[1] for m in moments],
                    [],
                    steps,
                    amsgrad=False,
                    lr=self.lr,
                    beta1=BETAS[0],
                    beta2=BETAS[1],
                    weight_decay=weight_decay,
                    eps=EPS,
                    maximize=False,
                    grad_scale=None,
                    found_inf=None,
                )

    def _state(self, p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        s = self.state.get(p)
        if s is None:
            s = (
                torch.zeros_like(p, memory_format=torch.preserve_format),
                torch.zeros_like(p, memory_format=torch.preserve_format),
                torch.zeros((), dtype=torch.float32, device=p.device),  # the step count, as fused Adam keeps it
            )
            self.state[p] = s
        return s


def adam(groups: list[dict[str, Any]], lr: float) -> Optimizer:
    """The fused kernel where this torch and device have it (a head's dozen small tensors made the
    per-tensor update a fifth of a step's time on CPU), else ``torch.optim.Adam``'s per-tensor update.
    Which parameters the kernel takes is torch's own check, the one ``Adam(fused=True)`` makes."""
    groups = [{**g, "params": list(g["params"])} for g in groups]
    try:
        from torch.optim.optimizer import _device_dtype_check_for_fused

        torch._fused_adam_  # noqa: B018 - an older torch has no kernel
        for g in groups:
            for p in g["params"]:
                _device_dtype_check_for_fused(p)
    except (ImportError, AttributeError, RuntimeError):
        return torch.optim.Adam(groups, lr=lr)
    return FusedAdam(groups, lr)
