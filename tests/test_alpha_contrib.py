"""alpha-contrib: numbers on paper, a plain PyTorch recomputation on a head with input-dependent α, the
sum over layers (f_c − b_c for the linear output), autograd through a non-linear output layer, the
circular pairs, and the refusals for heads that have no α or do not aggregate Σ_i α_i z_i."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import paper_laya

from laya_inspect.compare.attribution import AttributionOptions, attribute, plan_methods
from laya_inspect.compare.lolo import lolo_effects
from laya_inspect.compare.scores import circular_reason
from laya_inspect.errors import InputError
from laya_inspect.heads import LayaHead, build_head

# sample 0: h = (2, −2), target 0 (W_0 = +1); sample 1: h = (−1, 1), target 1 (W_1 = −1); α = (¾, ¼), z_i = h_i
HS = [torch.tensor([[2.0], [-1.0]], dtype=torch.float64), torch.tensor([[-2.0], [1.0]], dtype=torch.float64)]
TARGET = np.array([0, 1])


def test_on_paper():
    out = attribute("alpha-contrib", paper_laya(), HS, TARGET)
    # α_i · W_c · h_i: (¾·2, ¼·−2) and (−¾·−1, −¼·1)
    np.testing.assert_allclose(out.scores, [[1.5, -0.5], [0.75, -0.25]], atol=1e-12)
    assert out.params["method"] == "alpha-contrib" and out.params["classifier"] == "Linear"


def _head(n: int = 29, seed: int = 4) -> tuple[LayaHead, list[torch.Tensor], torch.Tensor]:
    """A LAYA head whose α depends on the input (ψ an MLP, a scorer with weights), standardised inputs."""
    torch.manual_seed(seed)
    widths = [6, 3, 5, 4]
    head = build_head("laya", widths, 5, d_star=7, tau=0.6, psi="mlp", standardize="feature")
    assert isinstance(head, LayaHead)
    hs = [torch.randn(n, w, dtype=torch.float64) * 2 + 1 for w in widths]
    head.set_standardization([h.mean(0) for h in hs], [h.std(0) for h in hs])
    head = head.double().eval()
    target = torch.randint(0, 5, (n,))
    return head, hs, target


def test_matches_a_plain_pytorch_computation_and_sums_to_the_logit():
    head, hs, target = _head()
    got = attribute("alpha-contrib", head, hs, target, AttributionOptions(batch_size=8)).scores  # uneven chunks
    with torch.no_grad():
        # plain: z_i = W_i (h_i − μ_i)/σ_i + b_i; α from the head; ∂f_c/∂h_agg = W_c for the linear output
        z = torch.stack(
            [a((h - s.mean) / s.scale) for a, s, h in zip(head.adapters, head.standardizers, hs)], dim=1
        )  # (N, L, d*)
        out = head(hs)
        alpha = out.weights
        w_c = head.classifier.weight[target]  # (N, d*)
        want = alpha * (z * w_c[:, None, :]).sum(-1)
        logit_c = out.logits.gather(1, target[:, None])[:, 0]
        bias_c = head.classifier.bias[target]
    assert alpha.std(0).min() > 1e-3  # α really varies with the input: not the paper's constant case
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)
    # Σ_i α_i ⟨W_c, z_i⟩ = ⟨W_c, h_agg⟩ = f_c − b_c, row by row
    np.testing.assert_allclose(got.sum(1), (logit_c - bias_c).numpy(), rtol=1e-10, atol=1e-12)
    # and it is not α, nor Grad-CAM (which also carries ∂α/∂h_i)
    cam = attribute("gradcam", head, hs, target).scores
    assert np.abs(got - cam).max() > 1e-3 and np.abs(got - alpha.numpy()).max() > 1e-3


def test_equals_the_logit_effect_of_mix_exactly():
    """mix removes α_i z_i from the aggregate: for the linear output the target logit drops by exactly
    α_i ⟨W_c, z_i⟩ — why (alpha-contrib, mix) is marked circular."""
    head, hs, target = _head(n=17, seed=2)
    scores = attribute("alpha-contrib", head, hs, target).scores
    _, _, effects = lolo_effects(head, hs, target.numpy(), "mix", effect="logit")
    np.testing.assert_allclose(effects, scores, rtol=1e-9, atol=1e-10)
    for ablation in ("drop", "mix"):
        assert "alpha-contrib" in (circular_reason("alpha-contrib", ablation) or "")
    for ablation in ("mean", "zero", "resample"):
        assert circular_reason("alpha-contrib", ablation) is None


def test_a_non_linear_output_layer_by_autograd():
    head, hs, target = _head(n=11, seed=3)
    head.classifier = torch.nn.Sequential(torch.nn.Linear(7, 9), torch.nn.Tanh(), torch.nn.Linear(9, 5)).double()
    got = attribute("alpha-contrib", head, hs, target).scores
    with torch.no_grad():
        z = head._adapt(hs)
        alpha = head(hs).weights
    agg = (alpha.unsqueeze(-1) * z).sum(1).requires_grad_(True)
    rows = []
    for r in range(len(target)):  # one row at a time: the gradient of f_c(h_agg) at this row's h_agg
        (g,) = torch.autograd.grad(head.classifier(agg[r : r + 1])[0, target[r]], agg)
        rows.append(g[r])
    want = alpha * torch.einsum("bld,bd->bl", z, torch.stack(rows))
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert got.shape == (11, 4) and np.isfinite(got).all()


def test_heads_without_alpha_are_skipped_or_refused():
    last = build_head("last", [3, 3], 2)
    laya = build_head("laya", [3, 3], 2, d_star=4)
    hs = [torch.randn(4, 3), torch.randn(4, 3)]
    for kind in ("last", "concat", "scalarmix"):
        head = build_head(kind, [3, 3], 2, d_star=4)
        with pytest.raises(InputError, match="'alpha-contrib' is defined only for laya heads, not '" + kind):
            attribute("alpha-contrib", head, hs, np.zeros(4, dtype=int))
    plan = plan_methods(["alpha-contrib", "ig"], {"a": last, "b": laya}, explicit=[])
    assert plan["a"][0] == ["ig"] and "alpha-contrib" in plan["a"][1] and plan["b"][0] == ["alpha-contrib", "ig"]
    with pytest.raises(InputError, match="'alpha-contrib' is defined for none of the heads"):
        plan_methods(["alpha-contrib"], {"a": last})


def test_a_head_that_does_not_aggregate_alpha_times_z_is_refused():
    class Doubled(LayaHead):  # the output layer reads 2 Σ α_i z_i: α_i⟨W_c, z_i⟩ would not be its term
        def forward(self, hs, keep=None):  # noqa: ANN001, ANN201
            out = super().forward(hs, keep)
            z = self._adapt(hs)
            return type(out)(self.classifier(2 * (out.weights.unsqueeze(-1) * z).sum(1)), out.weights)

    head = Doubled([3, 2], 3, d_star=4).eval()
    hs = [torch.randn(5, 3), torch.randn(5, 2)]
    with pytest.raises(InputError, match="output layer reads Σ_i α_i z_i"):
        attribute("alpha-contrib", head, hs, np.zeros(5, dtype=int))
