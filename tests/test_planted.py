"""The scores on planted ground truth: heads written by hand whose answer is known exactly — the
signal in one layer, in two, in an interaction of two — on seeded Gaussian layers.

The true attribution of layer i is its share of the target's logit margin relative to the
ablation's value b_i (Shapley values of the exact ablation game): w_i·v_i·(h_i − b_i) for a
linear term, and half of the interaction term's change for each of the two layers it couples.
Every score must put the true attribution above the top-1-only reference (a one-hot on the
largest effect) and that above random. Top-layer agreement and Deletion@1 ÷ oracle look at the top
layer only, where the top-1-only reference is perfect by construction: there the true attribution
must reach it (or come within a few rows, for the interaction) and both must beat random.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from laya_inspect.compare import metrics as M
from laya_inspect.compare.effects import Remover, measure
from laya_inspect.compare.scores import score_entry
from laya_inspect.errors import InputError
from laya_inspect.heads import Head, HeadOutput

WIDTH, LAYERS, N = 3, 4, 240


class PlantedHead(Head):
    """f(h) = Σ_i w_i ⟨v_i, h_i⟩ + a·⟨h_0, h_1⟩; logits = [−f/2, f/2] (binary)."""

    kind = "planted"

    def __init__(self, w: Sequence[float], a: float = 0.0) -> None:
        super().__init__([WIDTH] * LAYERS, 2)
        gen = torch.Generator().manual_seed(11)
        self.v = nn.Parameter(torch.randn(LAYERS, WIDTH, generator=gen) / WIDTH**0.5, requires_grad=False)
        self.w = nn.Parameter(torch.tensor(list(w), dtype=torch.float32), requires_grad=False)
        self.a = float(a)

    def forward(self, hs: Sequence[Tensor], keep: Tensor | None = None) -> HeadOutput:
        if keep is not None:
            raise InputError("a planted head has no aggregation weights")
        hs = self._tap(hs)
        f = sum(self.w[i] * (hs[i] @ self.v[i].to(hs[i].dtype)) for i in range(LAYERS))
        f = f + self.a * (hs[0] * hs[1]).sum(1)
        return HeadOutput(torch.stack([-f / 2, f / 2], dim=1), None)


def _data(seed: int = 0) -> tuple[list[Tensor], list[np.ndarray]]:
    gen = torch.Generator().manual_seed(seed)
    hs = [torch.randn(N, WIDTH, generator=gen) for _ in range(LAYERS)]
    train = [torch.randn(400, WIDTH, generator=gen) + 0.3 for _ in range(LAYERS)]  # means ≠ 0
    return hs, [t.mean(0).numpy() for t in train]


def _truth(head: PlantedHead, hs: list[Tensor], base: list[np.ndarray], target: np.ndarray) -> np.ndarray:
    """(N, L) Shapley values of the target margin for removing each layer to its value b_i."""
    h = [x.double().numpy() for x in hs]
    b = [np.broadcast_to(np.asarray(x, dtype=float), hi.shape) for x, hi in zip(base, h)]
    v, w = head.v.double().numpy(), head.w.double().numpy()
    t = np.stack([w[i] * ((h[i] - b[i]) @ v[i]) for i in range(LAYERS)], axis=1)

    def inter(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
        return head.a * (x0 * x1).sum(1)

    full, no0, no1, none = inter(h[0], h[1]), inter(b[0], h[1]), inter(h[0], b[1]), inter(b[0], b[1])
    t[:, 0] += 0.5 * ((full - no0) + (no1 - none))
    t[:, 1] += 0.5 * ((full - no1) + (no0 - none))
    sign = np.where(target == 1, 1.0, -1.0)  # the margin of class 1 is f, of class 0 is −f
    return t * sign[:, None]


CASES = {
    # the signal in layer 0; the others carry weaker, graded signal (else their effects tie at 0)
    "one layer": ([4.0, 1.0, 0.5, 0.25], 0.0),
    "two layers": ([3.0, 3.0, 0.5, 0.25], 0.0),
    "interaction of two": ([0.3, 0.3, 0.5, 0.25], 2.0),
}


def _scores(case: str, ablation: str):
    w, a = CASES[case]
    head = PlantedHead(w, a).double().eval()
    hs, means = _data()
    with torch.no_grad():
        target = head(hs).logits.argmax(1).numpy()
    base = means if ablation == "mean" else [np.zeros(WIDTH)] * LAYERS
    remover = Remover(head, hs, target, ablation, baselines=means if ablation == "mean" else None, seed=0)
    m = measure(remover, seed=0)
    truth = _truth(head, hs, base, target)
    out = {}
    for name, scores, curves in (
        ("true", truth, remover.curves(M.top_order(truth))),
        ("top1_only", m.top1_only.scores, (m.top1_only.p_topk, m.top1_only.p_keep)),
        ("random", m.random.scores, (m.random.p_topk, m.random.p_keep)),
    ):
        out[name] = score_entry(scores, *curves, m, n_boot=0, seed=0)[0]
    return out, m


@pytest.mark.parametrize("ablation", ["mean", "zero"])
@pytest.mark.parametrize("case", list(CASES))
def test_true_attribution_beats_top1_only_beats_random(case, ablation):
    s, m = _scores(case, ablation)
    assert m.finite.all() and M.near_ties(m.effects, 1e-6)["all_tied_rows"] == 0

    def value(name: str, key: str) -> float:
        v = s[name][key]
        return v["mean"] if isinstance(v, dict) else v

    for key in ("faithfulness", "subset_faithfulness", "deletion_area", "insertion_area"):
        true, top1, rand = (value(n, key) for n in ("true", "top1_only", "random"))
        assert true > top1 > rand, (case, ablation, key, true, top1, rand)
    for key in ("top_layer_agreement", "deletion_at_1_over_oracle"):
        true, top1, rand = (value(n, key) for n in ("true", "top1_only", "random"))
        assert top1 == pytest.approx(1.0) and rand < 0.8, (key, top1, rand)
        assert true >= (0.9 if case == "interaction of two" else 1.0 - 1e-12), (case, key, true)
    # linear heads: each effect is monotone in its true share, so ρ of the truth is 1 except on rows
    # where p saturates and small effects fall within the tie tolerance while their shares differ
    if case != "interaction of two":
        assert value("true", "faithfulness") > 0.99


def test_signal_in_one_layer_alone_makes_the_truth_the_top1_reference():
    """With no signal elsewhere the other effects are exactly 0 (tied): the truth is a one-hot, so
    the top-1-only reference is the truth and both reach ρ = 1, far above random."""
    head = PlantedHead([4.0, 0.0, 0.0, 0.0]).double().eval()
    hs, means = _data(1)
    with torch.no_grad():
        target = head(hs).logits.argmax(1).numpy()
    m = measure(Remover(head, hs, target, "mean", baselines=means), seed=0)
    np.testing.assert_array_equal(m.effects[:, 1:], 0.0)
    top1 = score_entry(m.top1_only.scores, m.top1_only.p_topk, m.top1_only.p_keep, m, n_boot=0, seed=0)[0]
    rand = score_entry(m.random.scores, m.random.p_topk, m.random.p_keep, m, n_boot=0, seed=0)[0]
    assert top1["faithfulness"]["mean"] == pytest.approx(1.0) and top1["top_layer_agreement"] == 1.0
    assert rand["faithfulness"]["mean"] < 0.3 and rand["top_layer_agreement"] < 0.5


def test_interaction_shows_in_subsets_not_in_single_layers():
    """Removing either coupled layer kills the product: the subset effect of {0, 1} is far from
    the sum of their single effects, which is what subset faithfulness can see and ρ cannot."""
    _, m = _scores("interaction of two", "zero")
    both = np.flatnonzero((m.subsets == [True, True, False, False]).all(axis=1))[0]
    drop_pair = m.subset_effects[:, both]
    additive = m.effects[:, 0] + m.effects[:, 1]
    assert np.mean(np.abs(drop_pair - additive)) > 0.1
