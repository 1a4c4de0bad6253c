"""The heads' optimizer (training/loop.py's ``adam``): torch.optim.Adam, fused on the CPU, with the L2
weight decay on weight matrices only, deterministic per seed."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from laya_inspect.heads import build_head
from laya_inspect.training.loop import adam, decay_groups


def _head(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return build_head("laya", [12, 8, 6], 4, d_star=5)


def _steps(module: torch.nn.Module, opt: torch.optim.Optimizer, n: int) -> None:
    gen = torch.Generator().manual_seed(1)
    xs = [[torch.randn(16, w, generator=gen) for w in (12, 8, 6)] for _ in range(n)]
    ys = [torch.randint(0, 4, (16,), generator=gen) for _ in range(n)]
    for x, y in zip(xs, ys):
        loss = torch.nn.functional.cross_entropy(module(x).logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def test_the_decay_falls_on_weight_matrices_only() -> None:
    # with zero gradients only the L2 term moves a parameter: every matrix moves, no bias does
    head = _head(0)
    before = {n: p.detach().clone() for n, p in head.named_parameters()}
    opt = adam(decay_groups(head, 0.5), 1e-2)
    for p in head.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    moved = {n: not torch.equal(p, before[n]) for n, p in head.named_parameters()}
    matrices = [n for n, p in head.named_parameters() if p.ndim >= 2]
    vectors = [n for n, p in head.named_parameters() if p.ndim < 2]
    assert matrices and vectors
    assert all(moved[n] for n in matrices) and not any(moved[n] for n in vectors), moved


def test_the_same_seed_gives_the_same_weights_bit_for_bit() -> None:
    a, b, c = _head(0), _head(0), _head(0)
    _steps(a, adam(decay_groups(a, 1e-2), 1e-3), 30)
    _steps(b, adam(decay_groups(b, 1e-2), 1e-3), 30)
    _steps(c, adam(decay_groups(c, 0.0), 1e-3), 30)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert not all(torch.equal(x, y) for x, y in zip(a.parameters(), c.parameters()))  # the decay did something
    assert not all(torch.equal(x, y) for x, y in zip(a.parameters(), _head(0).parameters()))  # the steps moved it


def test_close_to_adams_per_tensor_update() -> None:
    ours, theirs = _head(0), _head(0)
    _steps(ours, adam(decay_groups(ours, 0.5), 1e-2), 30)
    _steps(theirs, torch.optim.Adam(decay_groups(theirs, 0.5), lr=1e-2, foreach=False, fused=False), 30)
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)


def test_unused_parameters_keep_no_state_and_do_not_move() -> None:
    head = _head(0)
    frozen = torch.nn.Parameter(torch.ones(3))
    opt = adam([{"params": [*head.parameters(), frozen], "weight_decay": 0.0}], 1e-2)
    _steps(head, opt, 3)
    assert torch.equal(frozen, torch.ones(3)) and frozen not in opt.state


def test_fused_on_the_cpu_else_foreach_and_a_generator_of_parameters_is_read_once() -> None:
    opt = adam([{"params": (p for p in _head(0).parameters()), "weight_decay": 0.0}], 1e-3)
    assert len(opt.param_groups[0]["params"]) == len(list(_head(0).parameters()))
    if tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 4):  # the CPU kernel came in 2.4
        assert opt.param_groups[0]["fused"] is True
    complex_param = torch.nn.Parameter(torch.ones(2, dtype=torch.complex64))
    other = adam([{"params": [complex_param]}], 1e-3)  # the fused kernel takes real floats only
    assert not other.param_groups[0]["fused"] and other.param_groups[0]["foreach"] is True


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_fused_on_a_cuda_device() -> None:
    head = _head(0).cuda()
    opt = adam(decay_groups(head, 1e-2), 1e-3)
    assert opt.param_groups[0]["fused"] is True
    x = [torch.randn(4, w, device="cuda") for w in (12, 8, 6)]
    torch.nn.functional.cross_entropy(head(x).logits, torch.zeros(4, dtype=torch.long, device="cuda")).backward()
    opt.step()
    assert all(torch.isfinite(p).all() for p in head.parameters())


def test_a_torch_that_refuses_fused_on_the_cpu_gets_foreach(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch 2.2 and 2.3 refuse fused=True for CPU parameters after the groups have taken it; the
    fallback must not reuse those groups (every fit-head then failed at its first step)."""

    class RefusesFusedOnTheCpu(torch.optim.Adam):
        def __init__(self, params: Any, lr: float, fused: bool | None = None, foreach: bool | None = None) -> None:
            super().__init__(params, lr=lr, foreach=foreach)
            if fused:
                for group in self.param_groups:  # what torch 2.2's defaults wrote into the given dicts
                    group["fused"] = True
                raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of ...")

    monkeypatch.setattr(torch.optim, "Adam", RefusesFusedOnTheCpu)
    head = _head(0)
    opt = adam(decay_groups(head, 1e-2), 1e-3)
    assert all(not g["fused"] and g["foreach"] is True for g in opt.param_groups), opt.param_groups
    reference = _head(0)
    _steps(head, opt, 5)
    _steps(reference, torch.optim.Adam(decay_groups(reference, 1e-2), lr=1e-3, foreach=False, fused=False), 5)
    for a, b in zip(head.parameters(), reference.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
