"""lolo.py: LOLO effects worked on paper, batched == loop, top-k ablations, the drop guard."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from helpers import lolo_effects_loop, paper_laya

from laya_inspect.compare.lolo import (
    ABLATIONS,
    ablate_topk,
    ablate_topk_curve,
    check_ablation,
    layer_means,
    lolo_effects,
)
from laya_inspect.errors import InputError, NotFoundError
from laya_inspect.heads import build_head
from laya_inspect.store import FeatureStore


def sig(x: float) -> float:
    return 1 / (1 + math.exp(-x))


# sample 0: h = (2, −2) → a = 1 → class 0, p = σ(2); sample 1: h = (−1, 1) → a = −½ → class 1, p = σ(1)
HS = [torch.tensor([[2.0], [-1.0]], dtype=torch.float64), torch.tensor([[-2.0], [1.0]], dtype=torch.float64)]
MEANS = [np.array([0.0]), np.array([2.0])]
TARGET = np.array([0, 1])
P = [sig(2), sig(1)]
# p with layer i ablated, by hand: a recomputed with h_i → b_i (mean), → 0 (zero), or α renormalised (drop)
P_ABLATED = {
    "mean": [[sig(2 * -0.5), sig(2 * 2.0)], [sig(-2 * 0.25), sig(-2 * -0.25)]],
    "zero": [[sig(2 * -0.5), sig(2 * 1.5)], [sig(-2 * 0.25), sig(-2 * -0.75)]],
    "drop": [[sig(2 * -2.0), sig(2 * 2.0)], [sig(-2 * 1.0), sig(-2 * -1.0)]],
}


@pytest.mark.parametrize("ablation", ["mean", "zero", "drop"])
def test_lolo_effects_on_paper(ablation):
    p, p_abl, e = lolo_effects(paper_laya(), HS, TARGET, ablation, MEANS)
    np.testing.assert_allclose(p, P, atol=1e-12)
    np.testing.assert_allclose(p_abl, P_ABLATED[ablation], atol=1e-12)
    np.testing.assert_allclose(e, np.array(P)[:, None] - np.array(P_ABLATED[ablation]), atol=1e-12)
    ref = lolo_effects_loop(paper_laya(), HS, TARGET, ablation, MEANS)
    for ours, theirs in zip((p, p_abl, e), ref):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


def _random_case(kind: str, dtype: torch.dtype, n: int = 37):
    torch.manual_seed(1)
    widths = [5, 3, 4, 2]
    head = build_head(kind, widths, 4, d_star=6, tau=0.7).to(dtype).eval()
    hs = [torch.randn(n, w, dtype=dtype) for w in widths]
    means = [h.mean(0).numpy() for h in hs]
    target = torch.randint(0, 4, (n,)).numpy()
    return head, hs, means, target


@pytest.mark.parametrize("kind", ["laya", "scalarmix", "concat", "last"])
@pytest.mark.parametrize("ablation", ["mean", "zero", "drop"])
def test_batched_equals_loop(kind, ablation):
    head, hs, means, target = _random_case(kind, torch.float64)
    if ablation == "drop" and not head.has_weights:
        with pytest.raises(InputError, match="aggregation weights"):
            lolo_effects(head, hs, target, ablation, means)
        return
    batched = lolo_effects(head, hs, target, ablation, means, batch_size=10)  # 37 rows: uneven chunks
    loop = lolo_effects_loop(head, hs, target, ablation, means)
    for a, b in zip(batched, loop):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    # float32: the same up to float32 rounding of differently sized matmuls
    head32, hs32, means32, _ = _random_case(kind, torch.float32)
    for a, b in zip(
        lolo_effects(head32, hs32, target, ablation, means32, batch_size=8),
        lolo_effects_loop(head32, hs32, target, ablation, means32),
    ):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_topk_ablation_matches_lolo_at_k1_and_all_layers_at_kL():
    head, hs, means, target = _random_case("laya", torch.float64)
    p, p_abl, e = lolo_effects(head, hs, target, "mean", means)
    order = np.argsort(-e, axis=1, kind="stable")
    curve = ablate_topk_curve(head, hs, target, order, None, "mean", means, batch_size=9)
    rows = np.arange(len(target))
    np.testing.assert_allclose(curve[:, 0], p_abl[rows, order[:, 0]], atol=1e-12)
    with torch.no_grad():  # k = L: every layer at its mean
        all_mean = head([torch.as_tensor(m).expand_as(h) for m, h in zip(means, hs)]).logits.softmax(-1)
    np.testing.assert_allclose(curve[:, -1], all_mean[rows, target].numpy(), atol=1e-12)
    for k in (1, 2, 3):
        np.testing.assert_allclose(ablate_topk(head, hs, target, order, k, "mean", means), curve[:, k - 1], atol=1e-12)


def test_topk_on_paper_drop_all():
    # both layers dropped: α = 0 → h_agg = 0 → logits = bias = 0 → p = ½
    order = np.array([[0, 1], [1, 0]])
    curve = ablate_topk_curve(paper_laya(), HS, TARGET, order, None, "drop")
    np.testing.assert_allclose(curve, [[sig(-4), 0.5], [sig(2), 0.5]], atol=1e-12)


def test_input_checks():
    head, hs, means, target = _random_case("laya", torch.float32)
    with pytest.raises(InputError, match="baselines"):
        lolo_effects(head, hs, target, "mean", None)
    with pytest.raises(NotFoundError, match="did you mean 'mean'"):
        lolo_effects(head, hs, target, "meen", means)
    with pytest.raises(InputError, match="order must be"):
        ablate_topk(head, hs, target, np.zeros((2, 2), dtype=int), 1, "mean", means)
    last = build_head("last", [5, 3, 4, 2], 4)
    with pytest.raises(InputError, match=r"not supported by: b \(last\); supported by: a \(laya\)"):
        check_ablation("drop", {"a": head, "b": last})
    assert ABLATIONS.names() == ["mean", "zero", "drop"]


def test_layer_means_are_train_split_means(digits_cache):
    with FeatureStore(digits_cache) as store:
        means = layer_means(store, "train", chunk_rows=100)  # several chunks
        for m, feats in zip(means, store.layers("train")):
            np.testing.assert_allclose(m, feats.astype(np.float64).mean(0), rtol=1e-6, atol=1e-7)
        with pytest.raises(NotFoundError, match="zero"):
            layer_means(store, "validation")
