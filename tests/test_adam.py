"""The heads' Adam: torch's fused kernel without torch.optim, equal to torch.optim.Adam(fused=True) bit
for bit, and a fit that never imports torch._dynamo (≈ 2 s of start-up per command and per worker)."""

from __future__ import annotations

import pytest
import torch
from helpers import fit_in_fresh_process

from laya_inspect.heads import build_head
from laya_inspect.training.adam import FusedAdam, adam
from laya_inspect.training.loop import decay_groups


def _head(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return build_head("laya", [12, 8, 6], 4, d_star=5)


def _steps(module: torch.nn.Module, opt, n: int) -> None:  # noqa: ANN001
    gen = torch.Generator().manual_seed(1)
    xs = [[torch.randn(16, w, generator=gen) for w in (12, 8, 6)] for _ in range(n)]
    ys = [torch.randint(0, 4, (16,), generator=gen) for _ in range(n)]
    for x, y in zip(xs, ys):
        loss = torch.nn.functional.cross_entropy(module(x).logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_equals_torch_fused_adam_bit_for_bit(weight_decay: float) -> None:
    ours, theirs = _head(0), _head(0)
    _steps(ours, FusedAdam(decay_groups(ours, weight_decay), 1e-3), 40)
    _steps(theirs, torch.optim.Adam(decay_groups(theirs, weight_decay), lr=1e-3, fused=True), 40)
    moved = False
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert torch.equal(a, b), name
        moved |= not torch.equal(a, _head(0).state_dict()[name])
    assert moved  # the steps did something


def test_close_to_the_per_tensor_update_and_the_decay_only_on_matrices() -> None:
    ours, theirs = _head(0), _head(0)
    _steps(ours, adam(decay_groups(ours, 0.5), 1e-2), 30)
    _steps(theirs, torch.optim.Adam(decay_groups(theirs, 0.5), lr=1e-2), 30)
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)
    # with the decay on every tensor instead, the biases would differ: the groups are honoured
    other = _head(0)
    _steps(other, adam([{"params": list(other.parameters()), "weight_decay": 0.5}], 1e-2), 30)
    assert any(not torch.allclose(a, b) for a, b in zip(ours.parameters(), other.parameters()) if a.ndim < 2)


def test_unused_parameters_keep_no_state_and_do_not_move() -> None:
    head = _head(0)
    frozen = torch.nn.Parameter(torch.ones(3))
    opt = FusedAdam([{"params": [*head.parameters(), frozen], "weight_decay": 0.0}], 1e-2)
    _steps(head, opt, 3)
    assert torch.equal(frozen, torch.ones(3)) and frozen not in opt.state


def test_a_fit_does_not_import_torch_dynamo(digits_cache, tmp_path) -> None:  # noqa: ANN001
    body = """
        config = FitConfig(heads=('laya', 'scalarmix'), seeds=(0,), epochs=2, probe=False, workers=1)
        fit_heads(store, config, out_dir=out)
        print('dynamo' if 'torch._dynamo' in sys.modules else 'no dynamo')
    """
    assert fit_in_fresh_process(digits_cache, tmp_path / "heads", body)[-1] == "no dynamo"


def test_parameters_the_kernel_does_not_take_fall_back_to_torch_optim() -> None:
    # torch's own check decides (complex here); a generator of parameters is read once, not lost
    complex_param = torch.nn.Parameter(torch.ones(2, dtype=torch.complex64))
    assert isinstance(adam([{"params": [complex_param]}], 1e-3), torch.optim.Adam)
    opt = adam([{"params": (p for p in _head(0).parameters()), "weight_decay": 0.0}], 1e-3)
    assert isinstance(opt, FusedAdam) and len(opt.groups[0][0]) == len(list(_head(0).parameters()))
