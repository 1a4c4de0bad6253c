"""Heads: exact numbers on hand-weighted tiny heads, and the properties every head must keep."""

from __future__ import annotations

import math

import pytest
import torch

from laya_inspect.errors import InputError
from laya_inspect.heads import HEADS, ConcatHead, LastLayerHead, LayaHead, ScalarMixHead, build_head


def gelu(x: float) -> float:
    return 0.5 * x * (1 + math.erf(x / math.sqrt(2)))


def _set(linear: torch.nn.Linear, weight: list[list[float]], bias: list[float]) -> None:
    with torch.no_grad():
        linear.weight.copy_(torch.tensor(weight))
        linear.bias.copy_(torch.tensor(bias))


def hand_laya(tau: float) -> LayaHead:
    """Two layers of width 2, d*=2, identity adapters, scorer picking z1[0] and z2[1], identity classifier."""
    head = LayaHead([2, 2], 2, d_star=2, tau=tau, psi="identity", score_width=2)
    eye = [[1.0, 0.0], [0.0, 1.0]]
    for g in head.adapters:
        _set(g, eye, [0.0, 0.0])
    _set(head.scorer[0], [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]], [0.0, 0.0])
    _set(head.scorer[2], eye, [0.0, 0.5])
    _set(head.classifier, [[1.0, 0.0], [0.0, 1.0]], [0.1, -0.1])
    return head


@pytest.mark.parametrize("tau", [1.0, 1.5, 0.5])
def test_laya_hand_weighted_exact(tau: float) -> None:
    head = hand_laya(tau)
    h1, h2 = torch.tensor([[1.0, 3.0]]), torch.tensor([[-2.0, 2.0]])
    # z1 = h1, z2 = h2; hidden = GELU([z1[0], z2[1]]) = GELU([1, 2]); s = hidden + [0, 0.5]
    s1, s2 = gelu(1.0), gelu(2.0) + 0.5
    a1 = math.exp(s1 / tau) / (math.exp(s1 / tau) + math.exp(s2 / tau))
    a2 = 1 - a1
    agg = [a1 * 1.0 + a2 * -2.0, a1 * 3.0 + a2 * 2.0]  # Σ α_i z_i
    out = head([h1, h2])
    torch.testing.assert_close(out.weights, torch.tensor([[a1, a2]]), rtol=0, atol=1e-6)
    torch.testing.assert_close(out.logits, torch.tensor([[agg[0] + 0.1, agg[1] - 0.1]]), rtol=0, atol=1e-6)


def test_small_tau_sends_alpha_to_the_argmax_layer() -> None:
    torch.manual_seed(0)
    head = LayaHead([5, 7, 3, 4], 3, d_star=6, tau=1.0)
    hs = [torch.randn(32, w) for w in head.widths]
    with torch.no_grad():
        z = head._adapt(hs)
        scores = head.scorer(head.psi(z).flatten(1))
        head.tau = 1e-4
        alpha = head(hs).weights
    one_hot = torch.nn.functional.one_hot(scores.argmax(1), head.num_layers).float()
    torch.testing.assert_close(alpha, one_hot, rtol=0, atol=1e-5)


@pytest.mark.parametrize("psi", ["identity", "mlp"])
def test_alpha_is_a_distribution(psi: str) -> None:
    torch.manual_seed(1)
    head = LayaHead([8, 16, 4], 5, d_star=12, tau=0.7, psi=psi)
    out = head([torch.randn(64, w) * 3 for w in head.widths])
    assert out.logits.shape == (64, 5) and out.weights.shape == (64, 3)
    assert (out.weights >= 0).all()
    torch.testing.assert_close(out.weights.sum(1), torch.ones(64))


@pytest.mark.parametrize("psi", ["identity", "mlp"])
def test_permuting_layers_permutes_alpha(psi: str) -> None:
    torch.manual_seed(2)
    widths, d, perm = [3, 5, 4], 6, [2, 0, 1]
    a = LayaHead(widths, 4, d_star=d, tau=1.3, psi=psi)
    b = LayaHead([widths[p] for p in perm], 4, d_star=d, tau=1.3, psi=psi)
    with torch.no_grad():
        for j, p in enumerate(perm):
            b.adapters[j].load_state_dict(a.adapters[p].state_dict())
        b.psi.load_state_dict(a.psi.state_dict())
        w1 = a.scorer[0].weight.view(-1, len(widths), d)  # (width, L, d*) blocks per layer
        b.scorer[0].weight.copy_(w1[:, perm].reshape_as(a.scorer[0].weight))
        b.scorer[0].bias.copy_(a.scorer[0].bias)
        b.scorer[2].weight.copy_(a.scorer[2].weight[perm])
        b.scorer[2].bias.copy_(a.scorer[2].bias[perm])
        b.classifier.load_state_dict(a.classifier.state_dict())
    hs = [torch.randn(10, w) for w in widths]
    out_a, out_b = a(hs), b([hs[p] for p in perm])
    torch.testing.assert_close(out_b.weights, out_a.weights[:, perm])
    torch.testing.assert_close(out_b.logits, out_a.logits)


def test_scalarmix_weights_are_softmax_of_scalars() -> None:
    head = ScalarMixHead([4, 4, 4], 3, d_star=5)
    hs = [torch.randn(7, 4) for _ in range(3)]
    torch.testing.assert_close(head(hs).weights, torch.full((7, 3), 1 / 3))  # s = 0 at start: uniform
    with torch.no_grad():
        head.scalars.copy_(torch.tensor([0.5, -1.0, 2.0]))
    e = [math.exp(0.5), math.exp(-1.0), math.exp(2.0)]
    expected = torch.tensor([v / sum(e) for v in e])
    torch.testing.assert_close(head.static_weights(), expected)
    torch.testing.assert_close(head(hs).weights, expected.expand(7, 3))
    z = torch.stack([g(h) for g, h in zip(head.adapters, hs)], 1)
    torch.testing.assert_close(head(hs).logits, head.classifier((expected[None, :, None] * z).sum(1)))


@pytest.mark.parametrize("kind", ["laya", "scalarmix"])
def test_drop_keep_mask_renormalises(kind: str) -> None:
    torch.manual_seed(3)
    head = build_head(kind, [3, 4, 5], 2, d_star=4)
    with torch.no_grad():
        if kind == "scalarmix":
            head.scalars.copy_(torch.tensor([0.3, -0.2, 1.0]))
    hs = [torch.randn(6, w) for w in head.widths]
    keep = torch.tensor([[1, 0, 1]] * 3 + [[0, 1, 1]] * 3)
    full = head(hs).weights
    dropped = head(hs, keep=keep)
    expected = full * keep / (full * keep).sum(1, keepdim=True)
    torch.testing.assert_close(dropped.weights, expected)
    assert (dropped.weights[keep == 0] == 0).all()
    z = torch.stack([g(h) for g, h in zip(head.adapters, hs)], 1)
    torch.testing.assert_close(dropped.logits, head.classifier((expected.unsqueeze(-1) * z).sum(1)))


@pytest.mark.parametrize("cls", [LastLayerHead, ConcatHead])
def test_drop_needs_aggregation_weights(cls: type) -> None:
    head = cls([3, 4], 2)
    with pytest.raises(InputError, match="drop"):
        head([torch.randn(2, 3), torch.randn(2, 4)], keep=torch.ones(2, 2))


def test_last_and_concat_by_hand() -> None:
    last = LastLayerHead([2, 3], 2)
    _set(last.classifier, [[1.0, 0.0, -1.0], [0.0, 2.0, 0.0]], [0.5, 0.0])
    out = last([torch.tensor([[9.0, 9.0]]), torch.tensor([[1.0, 2.0, 3.0]])])
    assert out.weights is None
    torch.testing.assert_close(out.logits, torch.tensor([[1.0 - 3.0 + 0.5, 4.0]]))
    cat = ConcatHead([1, 1], 2, d_star=1)
    for g, w in zip(cat.adapters, (2.0, -1.0)):
        _set(g, [[w]], [0.0])
    _set(cat.post[0], [[1.0, 1.0]], [0.0])
    _set(cat.classifier, [[1.0], [-1.0]], [0.0, 0.0])
    out = cat([torch.tensor([[1.5]]), torch.tensor([[0.5]])])  # z = [3, -0.5]; post = GELU(2.5)
    torch.testing.assert_close(out.logits, torch.tensor([[gelu(2.5), -gelu(2.5)]]))


def test_build_head_rejects_bad_values_and_filters_hparams() -> None:
    with pytest.raises(InputError, match="tau"):
        build_head("laya", [3], 2, tau=0.0)
    with pytest.raises(InputError, match="psi"):
        build_head("laya", [3], 2, psi="relu")
    with pytest.raises(InputError, match="d_star"):
        build_head("concat", [3], 2, d_star=0)
    last = build_head("last", [3, 4], 2, d_star=8, tau=0.5, psi="mlp")  # extra hyper-parameters ignored
    assert last.config() == {"widths": [3, 4], "num_classes": 2, "init": "glorot"}
    laya = build_head("laya", [3, 4], 2, d_star=8, score_width=None)
    assert laya.score_width == 16  # None → 2·d*
    assert set(HEADS.names()) == {"laya", "last", "concat", "scalarmix"}


def test_config_rebuilds_an_identical_head() -> None:
    torch.manual_seed(4)
    for kind in HEADS.names():
        head = build_head(kind, [3, 5], 4, d_star=6, tau=0.9, psi="mlp")
        clone = HEADS.get(kind)(**head.config())
        clone.load_state_dict(head.state_dict())
        hs = [torch.randn(5, 3), torch.randn(5, 5)]
        torch.testing.assert_close(clone(hs).logits, head(hs).logits, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["laya", "last", "concat", "scalarmix"])
def test_a_class_with_no_training_rows_is_never_predicted(kind: str) -> None:
    """QA (MobileNetV2, a test class absent from train): an untrained output unit gave one test row
    0.80 probability of that class, counted as a hit (accuracy 0.929 against last's 0.857) while the
    warning said such rows count as misses. A head built with untrained_classes gives them probability 0,
    and its config rebuilds the same head."""
    torch.manual_seed(0)
    head = build_head(kind, [3, 2], 3, d_star=4, untrained_classes=[1])
    with torch.no_grad():
        head.classifier.bias.copy_(torch.tensor([0.0, 1e6, 0.0]))  # the untrained unit would win every row
    hs = [torch.randn(5, 3), torch.randn(5, 2)]
    out = head(hs)
    assert (out.logits.argmax(1) != 1).all() and torch.isfinite(out.logits).all()
    assert torch.softmax(out.logits, 1)[:, 1].max().item() == 0.0
    assert head.config()["untrained_classes"] == [1]
    again = HEADS.get(kind)(**head.config())
    again.load_state_dict(head.state_dict())
    torch.testing.assert_close(again(hs).logits, out.logits, rtol=0, atol=0)
    assert "untrained_classes" not in build_head(kind, [3, 2], 3, d_star=4).config()  # older heads read alike
    with pytest.raises(InputError, match="untrained_classes"):
        build_head(kind, [3, 2], 3, d_star=4, untrained_classes=[3])
