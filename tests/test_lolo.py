"""lolo.py: LOLO effects worked on paper, batched == loop, top-k ablations, the drop guard; resample
and mix against plain references; subsets and insertion (keep top-k) against LOLO and top-k."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from helpers import lolo_effects_loop, paper_laya

from laya_inspect.cache.store import FeatureStore
from laya_inspect.compare.lolo import (
    ABLATIONS,
    ablate_sets,
    check_ablation,
    lolo_effects,
    resolve_ablations,
)
from laya_inspect.compare.masks import keep_masks, subset_masks_of, topk_masks
from laya_inspect.compare.values import donor_pool, layer_means
from laya_inspect.errors import InputError, NotFoundError
from laya_inspect.heads import build_head


def sig(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def topk_curve(head, hs, target, order, ks, ablation, baselines=None, **kw) -> np.ndarray:
    """(N, len(ks)) p with the layers order[n, :k] ablated together, for each k (None: 1…L)."""
    masks = topk_masks(order, ks, len(target), len(hs))
    return ablate_sets(head, hs, target, [masks], ablation, baselines, **kw)[0]


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
    # mix: the layer's term α_i h_i left out, α held at [3/4, 1/4]: a = ¼h₂ or ¾h₁
    "mix": [[sig(2 * -0.5), sig(2 * 1.5)], [sig(-2 * 0.25), sig(-2 * -0.75)]],
}


@pytest.mark.parametrize("ablation", ["mean", "zero", "drop", "mix"])
def test_lolo_effects_on_paper(ablation):
    p, p_abl, e = lolo_effects(paper_laya(), HS, TARGET, ablation, MEANS)
    np.testing.assert_allclose(p, P, atol=1e-12)
    np.testing.assert_allclose(p_abl, P_ABLATED[ablation], atol=1e-12)
    np.testing.assert_allclose(e, np.array(P)[:, None] - np.array(P_ABLATED[ablation]), atol=1e-12)
    if ablation == "mix":
        return  # the plain loop below knows the ablations of schema 1 only
    ref = lolo_effects_loop(paper_laya(), HS, TARGET, ablation, MEANS)
    for ours, theirs in zip((p, p_abl, e), ref):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


# the target logit f_c: f_0 = a, f_1 = −a; intact f = (1, ½); ablated a by hand as above
F = [1.0, 0.5]
F_ABLATED = {
    "mean": [[-0.5, 2.0], [-0.25, 0.25]],
    "zero": [[-0.5, 1.5], [-0.25, 0.75]],
    "drop": [[-2.0, 2.0], [-1.0, 1.0]],
    "mix": [[-0.5, 1.5], [-0.25, 0.75]],
}


@pytest.mark.parametrize("ablation", ["mean", "zero", "drop", "mix"])
def test_logit_effects_on_paper(ablation):
    """effect="logit": the drop of the target logit itself, the quantity IG explains. With the mean
    ablation on this linear head (α fixed) it is IG's mean-baseline score exactly: (1.5, −1), (¾, ¼)."""
    p, p_abl, e = lolo_effects(paper_laya(), HS, TARGET, ablation, MEANS, effect="logit")
    np.testing.assert_allclose(p, F, atol=1e-12)
    np.testing.assert_allclose(p_abl, F_ABLATED[ablation], atol=1e-12)
    np.testing.assert_allclose(e, np.array(F)[:, None] - np.array(F_ABLATED[ablation]), atol=1e-12)
    if ablation == "mean":
        np.testing.assert_allclose(e, [[1.5, -1.0], [0.75, 0.25]], atol=1e-12)
    # the probability effects of the same ablations are another quantity: σ(2f) here
    p_prob, _, e_prob = lolo_effects(paper_laya(), HS, TARGET, ablation, MEANS, effect="prob")
    np.testing.assert_allclose(p_prob, P, atol=1e-12)
    assert np.abs(e_prob - e).max() > 0.1


def test_an_unknown_effect_is_refused():
    with pytest.raises(InputError, match="effect must be one of logit, prob, got 'probs'"):
        lolo_effects(paper_laya(), HS, TARGET, "mean", MEANS, effect="probs")


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
    curve = topk_curve(head, hs, target, order, None, "mean", means, batch_size=9)
    rows = np.arange(len(target))
    np.testing.assert_allclose(curve[:, 0], p_abl[rows, order[:, 0]], atol=1e-12)
    with torch.no_grad():  # k = L: every layer at its mean
        all_mean = head([torch.as_tensor(m).expand_as(h) for m, h in zip(means, hs)]).logits.softmax(-1)
    np.testing.assert_allclose(curve[:, -1], all_mean[rows, target].numpy(), atol=1e-12)
    for k in (1, 2, 3):
        np.testing.assert_allclose(
            topk_curve(head, hs, target, order, [k], "mean", means)[:, 0], curve[:, k - 1], atol=1e-12
        )


def test_topk_on_paper_drop_all():
    # both layers dropped: α = 0 → h_agg = 0 → logits = bias = 0 → p = ½
    order = np.array([[0, 1], [1, 0]])
    curve = topk_curve(paper_laya(), HS, TARGET, order, None, "drop")
    np.testing.assert_allclose(curve, [[sig(-4), 0.5], [sig(2), 0.5]], atol=1e-12)


def test_input_checks():
    head, hs, means, target = _random_case("laya", torch.float32)
    with pytest.raises(InputError, match="baselines"):
        lolo_effects(head, hs, target, "mean", None)
    with pytest.raises(NotFoundError, match="did you mean 'mean'"):
        lolo_effects(head, hs, target, "meen", means)
    with pytest.raises(InputError, match="order must be"):
        topk_curve(head, hs, target, np.zeros((2, 2), dtype=int), [1], "mean", means)
    last = build_head("last", [5, 3, 4, 2], 4)
    with pytest.raises(InputError, match=r"not supported by: b \(last\); supported by: a \(laya\)"):
        check_ablation("drop", {"a": head, "b": last})
    assert ABLATIONS.names() == ["mean", "zero", "resample", "drop", "mix"]
    with pytest.raises(InputError, match="aggregation weights"):
        check_ablation("mix", {"b": last})
    with pytest.raises(InputError, match="pool of train rows"):
        lolo_effects(head, hs, target, "resample")
    assert resolve_ablations("all") == (ABLATIONS.names(), True)
    assert resolve_ablations("zero,mean,zero") == (["zero", "mean"], False)
    with pytest.raises(NotFoundError, match="did you mean 'resample'"):
        resolve_ablations("resampel")


@pytest.mark.parametrize("kind", ["laya", "scalarmix"])
def test_mix_holds_the_weights_and_leaves_the_layer_out(kind):
    """mix against the formula: logits = W Σ_(j kept) α_j z_j + b with α from the intact pass."""
    head, hs, means, target = _random_case(kind, torch.float64)
    p, p_abl, _ = lolo_effects(head, hs, target, "mix", batch_size=10)
    with torch.no_grad():
        alpha = head(hs).weights
        z = head._adapt(hs)  # (N, L, d*): z_i as the head computes them
        rows = torch.arange(len(target))
        for i in range(len(hs)):
            keep = torch.ones(len(hs), dtype=torch.float64)
            keep[i] = 0
            agg = ((alpha * keep).unsqueeze(-1) * z).sum(1)
            ref = torch.softmax(head.classifier(agg), -1)[rows, torch.as_tensor(target)]
            np.testing.assert_allclose(p_abl[:, i], ref.numpy(), atol=1e-12)
    # everything out of the mix: the classifier's bias alone
    all_out = topk_curve(head, hs, target, np.tile(np.arange(4), (len(target), 1)), [4], "mix")
    with torch.no_grad():
        bias_p = torch.softmax(head.classifier.bias, -1)[torch.as_tensor(target)].numpy()
    np.testing.assert_allclose(all_out[:, 0], bias_p, atol=1e-12)


def test_resample_with_one_donor_is_replacing_by_that_donor():
    head, hs, means, target = _random_case("concat", torch.float64)
    donor = [h[:1].numpy() + 0.5 for h in hs]  # a pool of one row
    p, p_abl, e = lolo_effects(head, hs, target, "resample", donors=donor, draws=3)
    ref = lolo_effects(head, hs, target, "mean", [d[0] for d in donor])
    for a, b in zip((p, p_abl, e), ref):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_resample_averages_seeded_donors_whatever_the_batch():
    head, hs, means, target = _random_case("laya", torch.float64)
    pool = [torch.randn(2, h.shape[1], dtype=torch.float64).numpy() for h in hs]
    one = lolo_effects(head, hs, target, "resample", donors=pool, draws=64, seed=3, batch_size=5)
    again = lolo_effects(head, hs, target, "resample", donors=pool, draws=64, seed=3, batch_size=100)
    for a, b in zip(one, again):
        np.testing.assert_allclose(a, b, atol=1e-12)  # donors are drawn per sample, not per chunk
    other = lolo_effects(head, hs, target, "resample", donors=pool, draws=64, seed=4)[1]
    assert not np.allclose(one[1], other)
    # with two donors, p_ablated lies between p(donor 0) and p(donor 1), near their mean for 64 draws
    by_donor = [lolo_effects(head, hs, target, "mean", [d[k] for d in pool])[1] for k in (0, 1)]
    low, high = np.minimum(*by_donor), np.maximum(*by_donor)
    assert np.all(one[1] >= low - 1e-12) and np.all(one[1] <= high + 1e-12)
    np.testing.assert_allclose(one[1], (by_donor[0] + by_donor[1]) / 2, atol=0.25 * np.abs(high - low).max() + 1e-9)


@pytest.mark.parametrize("ablation", ["mean", "zero", "drop", "mix"])
def test_subsets_and_keep_topk_agree_with_lolo_and_topk(ablation):
    head, hs, means, target = _random_case("laya", torch.float64)
    p, p_abl, e = lolo_effects(head, hs, target, ablation, means)
    singles = np.eye(4, dtype=bool)
    subsets = ablate_sets(head, hs, target, [subset_masks_of(singles, 4)], ablation, means)[0]
    np.testing.assert_allclose(subsets, p_abl, atol=1e-12)
    order = np.argsort(-e, axis=1, kind="stable")
    pairs = np.zeros((len(target), 1, 4), dtype=bool)
    pairs[np.arange(len(target)), 0, order[:, 0]] = pairs[np.arange(len(target)), 0, order[:, 1]] = True
    top2 = topk_curve(head, hs, target, order, [2], ablation, means)[:, 0]
    fixed = np.array([[True, True, False, False]])
    np.testing.assert_allclose(
        ablate_sets(head, hs, target, [subset_masks_of(fixed, 4)], ablation, means)[0][:, 0],
        topk_curve(head, hs, target, np.tile(np.arange(4), (len(target), 1)), [2], ablation, means)[:, 0],
        atol=1e-12,
    )
    keep = ablate_sets(head, hs, target, [keep_masks(order, len(target), 4)], ablation, means)[0]
    np.testing.assert_allclose(keep[:, -1], p, atol=1e-12)  # k = L: nothing ablated
    # keeping the top 2 of 4 is ablating the bottom 2
    bottom2 = topk_curve(head, hs, target, order[:, ::-1], [2], ablation, means)[:, 0]
    np.testing.assert_allclose(keep[:, 1], bottom2, atol=1e-12)
    assert top2.shape == (len(target),)


def test_float64_head_on_float32_layers():
    """compare runs a float64 copy of the head on the cached float32 layers: the chunks are cast."""
    head, hs, means, target = _random_case("laya", torch.float64)
    hs32 = [h.float() for h in hs]
    a = lolo_effects(head, hs32, target, "mean", means)
    b = lolo_effects(head, [h.double() for h in hs32], target, "mean", means)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert a[0].dtype == np.float64


def test_layer_means_are_train_split_means(digits_cache):
    with FeatureStore(digits_cache) as store:
        means = layer_means(store, "train", chunk_rows=100)  # several chunks
        for m, feats in zip(means, store.layers("train")):
            np.testing.assert_allclose(m, feats.astype(np.float64).mean(0), rtol=1e-6, atol=1e-7)
        with pytest.raises(NotFoundError, match="zero"):
            layer_means(store, "validation")
        pool = donor_pool(store, "train", size=50, seed=1)
        assert [p.shape for p in pool] == [(50, w) for w in store.widths]
        train = store.layers("train")
        assert all(any(np.array_equal(row, t) for t in train[0]) for row in pool[0][:5])  # real train rows
        np.testing.assert_array_equal(pool[2], donor_pool(store, "train", size=50, seed=1)[2])


def test_means_and_donors_leave_non_finite_rows_out(tmp_path):
    """A cache extracted with --allow-nonfinite: NaN/Inf rows stay out of b_i and of the donor pool."""
    import h5py
    from helpers import write_cache

    from laya_inspect.cache.store import layer_key

    rng = np.random.default_rng(0)
    layers = [rng.normal(size=(30, 3)).astype("float32") for _ in range(2)]
    cache = write_cache(tmp_path / "nan.h5", {"train": (layers, np.arange(30) % 3)})
    layers[0][4] = np.nan
    layers[1][7, 1] = np.inf
    with h5py.File(cache, "r+") as f:
        f[f"train/{layer_key(0)}"][4] = layers[0][4]
        f[f"train/{layer_key(1)}"][7] = layers[1][7]
    with FeatureStore(cache) as store:
        means = layer_means(store, "train")
        np.testing.assert_allclose(means[0], np.delete(layers[0], 4, axis=0).astype(float).mean(0), atol=1e-7)
        np.testing.assert_allclose(means[1], np.delete(layers[1], 7, axis=0).astype(float).mean(0), atol=1e-7)
        pool = donor_pool(store, "train")
        assert len(pool[0]) == 28 and all(np.isfinite(p).all() for p in pool)
