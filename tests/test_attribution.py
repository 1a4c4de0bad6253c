"""attribution.py: numbers on paper, IG completeness, Grad-CAM vs autograd, a planted layer, skipping."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from helpers import paper_laya

from laya_inspect.compare import metrics as M
from laya_inspect.compare.attribution import METHODS, AttributionOptions, attribute, plan_methods, resolve_methods
from laya_inspect.compare.lolo import lolo_effects
from laya_inspect.errors import InputError, NotFoundError
from laya_inspect.heads import ScalarMixHead, build_head

# sample 0: h = (2, −2) → a = 1, target 0 (f_0 = a); sample 1: h = (−1, 1) → a = −½, target 1 (f_1 = −a)
HS = [torch.tensor([[2.0], [-1.0]], dtype=torch.float64), torch.tensor([[-2.0], [1.0]], dtype=torch.float64)]
MEANS = [torch.tensor([0.0], dtype=torch.float64), torch.tensor([2.0], dtype=torch.float64)]
TARGET = np.array([0, 1])


def test_alpha_and_static_on_paper():
    np.testing.assert_allclose(attribute("alpha", paper_laya(), HS, TARGET).scores, [[0.75, 0.25]] * 2, atol=1e-12)
    mix = ScalarMixHead([1, 1], 2, d_star=1)
    with torch.no_grad():
        mix.scalars.copy_(torch.tensor([math.log(3.0), 0.0]))
    out = attribute("static", mix, [h.float() for h in HS], TARGET)
    np.testing.assert_allclose(out.scores, [[0.75, 0.25]] * 2, atol=1e-7)


def test_ig_and_gradcam_on_paper():
    # f is linear in h: IG_i = ∂f_c/∂h_i · (h_i − b_i); Grad-CAM_i = ∂f_c/∂h_i · h_i; ∂f_0/∂h = (¾, ¼) = −∂f_1/∂h.
    mean = attribute("ig", paper_laya(), HS, TARGET, AttributionOptions(baselines=MEANS, baseline="mean"))
    np.testing.assert_allclose(mean.scores, [[0.75 * 2, 0.25 * (-2 - 2)], [-0.75 * -1, -0.25 * (1 - 2)]], atol=1e-9)
    zero = attribute("ig", paper_laya(), HS, TARGET, AttributionOptions(baseline="zero"))
    np.testing.assert_allclose(zero.scores, [[1.5, -0.5], [0.75, -0.25]], atol=1e-9)
    np.testing.assert_allclose(mean.extras["delta"], 0, atol=1e-9)
    assert mean.params["n_steps"] == 50 and mean.params["baseline"] == "mean"
    cam = attribute("gradcam", paper_laya(), HS, TARGET)
    np.testing.assert_allclose(cam.scores, [[1.5, -0.5], [0.75, -0.25]], atol=1e-12)
    relu = attribute("gradcam", paper_laya(), HS, TARGET, AttributionOptions(relu=True))
    np.testing.assert_allclose(relu.scores, [[1.5, 0.0], [0.75, 0.0]], atol=1e-12)
    assert relu.params["relu_attributions"] is True


def _random(kind: str, n: int = 23, seed: int = 0):
    torch.manual_seed(seed)
    widths = [6, 4, 5]
    head = build_head(kind, widths, 5, d_star=8, tau=0.5, psi="mlp").eval()
    hs = [torch.randn(n, w) for w in widths]
    with torch.no_grad():
        target = head(hs).logits.argmax(1)
    return head, hs, target


@pytest.mark.parametrize("kind", ["laya", "concat", "scalarmix", "last"])
def test_ig_completeness_within_captum_delta(kind):
    head, hs, target = _random(kind)
    base = [h.mean(0) + 0.3 for h in hs]
    opts = AttributionOptions(baselines=base, baseline="mean", batch_size=10)
    out = attribute("ig", head, hs, target, opts)
    rows = torch.arange(len(target))
    with torch.no_grad():
        fx = head(hs).logits[rows, target]
        fb = head([b.expand_as(h) for b, h in zip(base, hs)]).logits[rows, target]
    gap = np.abs(out.scores.sum(1) - (fx - fb).double().numpy())
    delta = np.abs(out.extras["delta"])
    assert np.all(gap <= delta + 1e-5)
    assert delta.max() < 1e-2 * max(1.0, float((fx - fb).abs().max()))
    # internal_batch_size changes the batching, not the numbers
    again = attribute(
        "ig", head, hs, target, AttributionOptions(baselines=base, baseline="mean", internal_batch_size=64)
    )
    np.testing.assert_allclose(again.scores, out.scores, atol=1e-5)


@pytest.mark.parametrize("kind", ["laya", "concat", "scalarmix", "last"])
def test_gradcam_equals_grad_dot_h(kind):
    head, hs, target = _random(kind, seed=1)
    out = attribute("gradcam", head, hs, target, AttributionOptions(batch_size=7))
    xs = [h.clone().requires_grad_(True) for h in hs]
    f = head([x for x in xs]).logits[torch.arange(len(target)), target].sum()
    grads = torch.autograd.grad(f, xs, allow_unused=True)
    ref = np.stack(
        [(torch.zeros_like(x) if g is None else g * x).sum(1).detach().numpy() for g, x in zip(grads, xs)], axis=1
    )
    np.testing.assert_allclose(out.scores, ref, atol=1e-5)


def test_alpha_is_the_forward_pass_weights():
    head, hs, target = _random("laya")
    out = attribute("alpha", head, hs, target)
    with torch.no_grad():
        np.testing.assert_allclose(out.scores, head(hs).weights.numpy(), atol=1e-7)
    assert np.all(out.scores >= 0) and np.allclose(out.scores.sum(1), 1)


def test_random_is_seeded_noise():
    head, hs, target = _random("last")
    a = attribute("random", head, hs, target, AttributionOptions(seed=4)).scores
    assert a.shape == (23, 3) and np.all((0 <= a) & (a < 1))
    np.testing.assert_array_equal(a, attribute("random", head, hs, target, AttributionOptions(seed=4)).scores)
    assert not np.array_equal(a, attribute("random", head, hs, target, AttributionOptions(seed=5)).scores)


@pytest.mark.parametrize("fit_seed", [0, 3, 5, 6, 8])
def test_random_method_draws_apart_from_compares_other_streams(fit_seed):
    """compare's other draws are default_rng([seed, k]) (subsets 3, donors 5, top-1 order 6, sanity rows
    8): the random method of a head fitted with seed k drew from [seed, k], the same bits."""
    head, hs, target = _random("last")
    out = attribute("random", head, hs, target, AttributionOptions(seed=4, fit_seed=fit_seed))
    # [4, k] for every other stream, and [4]: the bootstrap's (numpy reads [4, 0, 0] as [4])
    for k in ([4], *([4, k] for k in range(1, 9))):
        assert not np.array_equal(out.scores, np.random.default_rng(k).random(out.scores.shape))
    np.testing.assert_array_equal(out.scores, np.random.default_rng([4, 9, fit_seed]).random(out.scores.shape))
    assert out.params["fit_seed"] == fit_seed and "[seed, 9, fit_seed]" in out.params["distribution"]


def test_random_method_of_a_head_without_a_fit_seed_draws_its_own_stream():
    """A head whose config.json records no fit seed drew the random method from default_rng([seed]): the
    stream of the bootstrap, the constant rule's folds and --limit. It draws from [seed, 9] now."""
    head, hs, target = _random("last")
    out = attribute("random", head, hs, target, AttributionOptions(seed=4))
    assert out.params["fit_seed"] is None and "([seed, 9] without a fit seed)" in out.params["distribution"]
    for k in (4, *([4, k] for k in range(1, 9))):
        assert not np.array_equal(out.scores, np.random.default_rng(k).random(out.scores.shape))
    np.testing.assert_array_equal(out.scores, np.random.default_rng([4, 9]).random(out.scores.shape))
    from laya_inspect.compare.config import CHOICES

    assert "([seed, 9] for a head that records none)" in CHOICES["random"]  # what compare's outputs describe


def _planted(kind: str, j: int, widths=(6, 4, 5), classes: int = 4) -> torch.nn.Module:
    """A head whose output depends on layer j only; linear in h_j with zero bias and logits summing
    to 0, so f_c(x) = max logit > 0 = f_c(0) and p(x) > 1/C = p(h_j = 0)."""
    torch.manual_seed(3)
    head = build_head(kind, list(widths), classes, d_star=5)
    with torch.no_grad():
        head.classifier.bias.zero_()
        head.classifier.weight.sub_(head.classifier.weight.mean(0, keepdim=True))  # Σ_c logits = 0
        if kind != "last":
            for i, g in enumerate(head.adapters):
                g.bias.zero_()
                if i != j:
                    g.weight.zero_()
        if kind == "laya":
            for p in head.scorer.parameters():
                p.zero_()
            head.scorer[2].bias[j] = 2.0  # α_j the largest, the same for every input
        if kind == "scalarmix":
            head.scalars[j] = 1.0
    return head.eval()


@pytest.mark.parametrize("kind,j", [("last", 2), ("laya", 1), ("scalarmix", 1)])
@pytest.mark.parametrize("ablation", ["mean", "zero"])
def test_planted_layer_gets_every_top_score(kind, j, ablation):
    head = _planted(kind, j)
    torch.manual_seed(4)
    train = [torch.randn(40, w) for w in (6, 4, 5)]
    means = [torch.cat([t, -t]).mean(0) for t in train]  # a symmetric train split: b ≈ 0
    hs = [torch.randn(30, w) for w in (6, 4, 5)]
    with torch.no_grad():
        target = head(hs).logits.argmax(1).numpy()
    p, p_abl, e = lolo_effects(head, hs, target, ablation, means)
    others = [i for i in range(3) if i != j]
    np.testing.assert_allclose(e[:, others], 0, atol=1e-7)
    assert np.all(e[:, j] > 0)
    methods = [m for m in METHODS.names() if m != "random" and not METHODS.get(m).skip_reason(head)]
    assert "ig" in methods and "gradcam" in methods
    for m in methods:
        scores = attribute(m, head, hs, target, AttributionOptions(baselines=means, baseline="mean")).scores
        np.testing.assert_array_equal(M.top_order(scores)[:, 0], j, err_msg=m)
        np.testing.assert_array_equal(M.deletion_at_k(scores, p, p_abl), M.oracle_at_1(e))
        np.testing.assert_array_equal(M.top_layer_agreement(scores, e), 1.0, err_msg=m)  # full credit, not a share
        if m in ("ig", "gradcam"):
            np.testing.assert_allclose(scores[:, others], 0, atol=1e-7)


def test_methods_not_defined_are_skipped_or_refused():
    last, laya = build_head("last", [3, 3], 2), build_head("laya", [3, 3], 2, d_star=4)
    assert "laya" in METHODS.get("alpha").skip_reason(last)
    plan = plan_methods(["alpha", "ig"], {"a": last, "b": laya})
    assert plan["a"][0] == ["ig"] and "alpha" in plan["a"][1] and plan["b"] == (["alpha", "ig"], {})
    with pytest.raises(InputError, match="'alpha' is defined for none of the heads"):
        plan_methods(["alpha", "ig"], {"a": last})
    plan = plan_methods(resolve_methods("all"), {"a": last}, explicit=[])  # 'all': skip, don't refuse
    assert plan["a"][0] == ["ig", "gradcam", "random"] and set(plan["a"][1]) == {"alpha", "alpha-contrib", "static"}
    with pytest.raises(InputError, match="defined only for laya"):
        attribute("alpha", last, [torch.zeros(1, 3)] * 2, [0])
    with pytest.raises(InputError, match="train-split means"):
        attribute("ig", last, [torch.zeros(1, 3)] * 2, [0], AttributionOptions(baseline="mean"))


def test_resolve_methods():
    assert resolve_methods(["ig,alpha", "ig", "random"]) == ["ig", "alpha", "random"]
    assert resolve_methods("all") == METHODS.names() == ["alpha", "alpha-contrib", "ig", "gradcam", "static", "random"]
    with pytest.raises(NotFoundError, match="did you mean 'gradcam'"):
        resolve_methods(["gradcm"])


def _trained_on_digits(kind: str):
    """A head of ``kind`` trained for 60 full-batch Adam steps on real digits (three GELU layers of a
    fixed seeded network), with the layers and predicted classes of the 450 test rows."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    h = torch.tensor(x / 16.0, dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    hs = []
    for d_in, d_out in [(64, 48), (48, 32), (32, 16)]:
        h = torch.nn.functional.gelu(h @ (torch.randn(d_in, d_out, generator=gen) / d_in**0.5))
        hs.append(h)
    torch.manual_seed(0)
    head = build_head(kind, [48, 32, 16], 10, d_star=24)
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    labels = torch.as_tensor(y[:1347])
    for _ in range(60):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(head([t[:1347] for t in hs]).logits, labels).backward()
        opt.step()
    head.eval()
    test = [t[1347:].detach() for t in hs]
    with torch.no_grad():
        target = head(test).logits.argmax(1)
    return head, test, target


@pytest.mark.parametrize("kind", ["laya", "concat", "scalarmix", "last"])
def test_ig_summed_gradients_equal_captums_per_row_roots(kind):
    """One autograd root (Σ of the target logits) gives Captum's per-row-and-step gradients bit for bit
    on a trained head, and `attribute` (which also batches the steps) agrees with Captum's own path."""
    from captum.attr import IntegratedGradients

    from laya_inspect.compare.attribution import IG_ROWS_PER_PASS, all_layers_in_graph, summed_target_gradients

    head, hs, target = _trained_on_digits(kind)
    means = [h.mean(0) for h in hs]
    x = tuple(hs)
    b = tuple(m.expand_as(h) for m, h in zip(means, hs))
    forward = all_layers_in_graph(head)
    captum_ig = IntegratedGradients(forward)
    ours = IntegratedGradients(forward)
    ours.gradient_func = summed_target_gradients
    for per_pass in (None, 4 * len(target)):
        kw = dict(baselines=b, target=target, n_steps=20, internal_batch_size=per_pass, return_convergence_delta=True)
        (ref, ref_delta), (got, got_delta) = captum_ig.attribute(x, **kw), ours.attribute(x, **kw)
        for r, g in zip((*ref, ref_delta), (*got, got_delta)):
            assert torch.equal(r, g)
    # one row: Captum passes its one-element target as is (not repeated over the steps)
    one = dict(baselines=tuple(t[:1] for t in b), target=target[:1], n_steps=20, return_convergence_delta=True)
    x1 = tuple(t[:1] for t in x)
    for r, g in zip((*captum_ig.attribute(x1, **one)[0],), (*ours.attribute(x1, **one)[0],)):
        assert torch.equal(r, g)
    old = torch.stack([a.sum(1) for a in captum_ig.attribute(x, baselines=b, target=target)], dim=1)
    new = attribute("ig", head, hs, target, AttributionOptions(baselines=means, baseline="mean", batch_size=128))
    np.testing.assert_allclose(new.scores, old.numpy(), rtol=1e-4, atol=1e-6)
    # completeness: Σ_i score_i = f_c(x) − f_c(b) within the convergence delta Captum reports
    rows = torch.arange(len(target))
    with torch.no_grad():
        gap = head(hs).logits[rows, target] - head(list(b)).logits[rows, target]
    assert np.all(np.abs(new.scores.sum(1) - gap.double().numpy()) <= np.abs(new.extras["delta"]) + 1e-5)
    assert np.abs(new.extras["delta"]).max() < 1e-2 * max(1.0, float(gap.abs().max()))
    assert new.params["rows_per_pass"] == IG_ROWS_PER_PASS


def test_summed_gradients_need_a_target_per_row():
    from laya_inspect.compare.attribution import summed_target_gradients

    head = build_head("last", [3, 3], 2)
    with pytest.raises(InputError, match="one target class per row"):
        summed_target_gradients(head.logits, (torch.zeros(2, 3), torch.zeros(2, 3)), target_ind=None)
