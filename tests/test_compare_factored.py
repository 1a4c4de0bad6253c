"""Ablated passes recombined from per-layer parts (compare/factored.py) and the table of every mask
(effects.Remover) against the head's own forward on stacked copies (lolo's ``stacked=True``, the code
these replaced): every head kind, every ablation that applies, ψ identity and MLP, standardised
inputs, uneven chunks, resample's donors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laya_inspect.compare import effects
from laya_inspect.compare.effects import Remover, measure, subset_masks
from laya_inspect.compare.factored import factor
from laya_inspect.compare.lolo import ABLATIONS, ablate_sets, check_ablation
from laya_inspect.compare.masks import all_masks, curve_masks, lolo_masks, subset_masks_of
from laya_inspect.heads import LayaHead, build_head

WIDTHS = [5, 3, 4, 2]


def _case(kind: str, psi: str = "identity", dtype: torch.dtype = torch.float64, n: int = 23):
    torch.manual_seed(3)
    head = build_head(kind, WIDTHS, 4, d_star=6, tau=0.7, psi=psi, score_width=10, standardize="feature")
    head.set_standardization([torch.randn(w) for w in WIDTHS], [torch.rand(w) + 0.5 for w in WIDTHS])
    head = head.to(dtype).eval()
    hs = [torch.randn(n, w, dtype=dtype) * 2 + 0.3 for w in WIDTHS]
    means = [h.mean(0).numpy() + 0.1 for h in hs]
    donors = [torch.randn(9, w, dtype=dtype).numpy() for w in WIDTHS]
    target = torch.randint(0, 4, (n,)).numpy()
    return head, hs, means, donors, target


def _sets(n: int, n_layers: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((n, n_layers)), axis=1)
    return [
        lolo_masks(n_layers),
        subset_masks_of(subset_masks(n_layers, 5, seed), n_layers),
        *curve_masks(order, n, n_layers),
        all_masks(n_layers),
    ]


CASES = [
    (kind, ablation, psi)
    for kind in ("laya", "scalarmix", "concat", "last")
    for ablation in ABLATIONS.names()
    for psi in (("identity", "mlp") if kind == "laya" else ("identity",))  # ψ is LAYA's
    if (build_head(kind, WIDTHS, 4).has_weights or not ABLATIONS.get(ablation).needs_weights)
    and (ablation != "mix" or kind in ("laya", "scalarmix"))
]


@pytest.mark.parametrize(("kind", "ablation", "psi"), CASES)
def test_recombined_parts_equal_the_stacked_forward(kind, ablation, psi):
    head, hs, means, donors, target = _case(kind, psi)
    check_ablation(ablation, {kind: head})
    sets = _sets(len(target), len(hs))
    kw = {"batch_size": 7, "donors": donors, "draws": 3, "seed": 1}  # 23 rows: uneven chunks
    fast = ablate_sets(head, hs, target, sets, ablation, means, **kw)
    slow = ablate_sets(head, hs, target, sets, ablation, means, stacked=True, **kw)
    for a, b in zip(fast, slow):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    chunk = [h[:7] for h in hs]
    values = None if ablation in ("zero", "drop", "mix") else [torch.as_tensor(m) for m in means]
    assert factor(head, ablation, chunk, values, in_mix=ABLATIONS.get(ablation).in_mix) is not None


@pytest.mark.parametrize("kind", ["laya", "concat"])
def test_float32_heads_agree_to_float32_rounding(kind):
    head, hs, means, donors, target = _case(kind, dtype=torch.float32)
    sets = _sets(len(target), len(hs))
    fast = ablate_sets(head, hs, target, sets, "mean", means, batch_size=10)
    slow = ablate_sets(head, hs, target, sets, "mean", means, batch_size=10, stacked=True)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_other_head_classes_keep_the_stacked_forward():
    """A subclass may change forward(): it is not recombined, and its numbers are its forward's."""

    class Sharper(LayaHead):
        def forward(self, hs, keep=None):
            out = super().forward(hs, keep)
            return type(out)(out.logits * 2, out.weights)

    torch.manual_seed(0)
    head = Sharper(WIDTHS, 4, d_star=6).double().eval()
    _, hs, means, _, target = _case("laya")
    assert factor(head, "mean", hs, None, in_mix=False) is None
    sets = _sets(len(target), len(hs))
    for a, b in zip(
        ablate_sets(head, hs, target, sets, "mean", means),
        ablate_sets(head, hs, target, sets, "mean", means, stacked=True),
    ):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("ablation", ["mean", "resample", "mix"])
def test_the_table_of_every_mask_gives_what_each_request_gives(ablation, monkeypatch):
    """measure() reads LOLO, subsets and every curve from one (N, 2^L) table; without the table
    (more layers than TABLE_LAYERS) each request runs on its own: the same numbers."""
    head, hs, means, donors, target = _case("laya")
    kw = {"baselines": means if ablation == "mean" else None, "donors": donors, "batch_size": 8, "seed": 2}
    orders = [np.argsort(np.random.default_rng(k).random((len(target), 4)), axis=1) for k in range(3)]
    with_table = Remover(head, hs, target, ablation, **kw)
    m = measure(with_table, seed=2)
    curves = with_table.curves_of(orders)
    assert with_table._table is not None and with_table._table.shape == (len(target), 16)
    monkeypatch.setattr(effects, "TABLE_LAYERS", 0)
    direct = Remover(head, hs, target, ablation, **kw)
    ref = measure(direct, seed=2)
    assert direct._table is None
    for name in ("p", "p_ablated", "effects", "p_subsets"):
        np.testing.assert_allclose(getattr(m, name), getattr(ref, name), rtol=0, atol=1e-12)
    for r in ("oracle", "random", "top1_only"):
        for c in ("p_topk", "p_keep"):
            np.testing.assert_allclose(getattr(getattr(m, r), c), getattr(getattr(ref, r), c), rtol=0, atol=1e-12)
    for (d, k), (rd, rk) in zip(curves, direct.curves_of(orders)):
        np.testing.assert_allclose(d, rd, rtol=0, atol=1e-12)
        np.testing.assert_allclose(k, rk, rtol=0, atol=1e-12)
    # one table: the same subset of layers gives the same number, bit for bit, whoever asks
    np.testing.assert_array_equal(m.oracle.p_keep[:, -1], m.p)  # k = L: nothing removed
    rows = np.arange(len(target))
    top = np.argmax(np.where(np.isfinite(m.effects), m.effects, -np.inf), axis=1)
    np.testing.assert_array_equal(m.oracle.p_topk[:, 0], m.p_ablated[rows, top])


def test_method_curves_average_over_the_layers_tied_across_the_kth_place(monkeypatch):
    """The deletion and insertion curves broke score ties by the lower layer index, so a method whose
    scores all tie was read by its shallowest layers first. With the table, a row tied across the
    k-th place gets the mean over every pick of the tied layers: equal to the mean of the curves of
    every tie-breaking order (each permutation of the layers breaking the ties), measured one by one."""
    import itertools

    from laya_inspect.compare import metrics as M

    head, hs, means, _, target = _case("laya")
    n = len(target)
    patterns = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [0.0, 2.0, 2.0, 1.0], [0.4, 0.3, 0.2, 0.1]])
    scores = patterns[np.arange(n) % 4]
    with_table = Remover(head, hs, target, "mean", baselines=means, batch_size=8)
    m = measure(with_table, seed=0)
    ((d, k),) = with_table.method_curves([scores])
    monkeypatch.setattr(effects, "TABLE_LAYERS", 0)
    direct = Remover(head, hs, target, "mean", baselines=means, batch_size=8)
    perms = list(itertools.permutations(range(4)))
    orders = [np.lexsort((np.broadcast_to(np.argsort(p), scores.shape), -scores), axis=1) for p in perms]
    every = direct.curves_of(orders)
    np.testing.assert_allclose(d, np.mean([c[0] for c in every], axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(k, np.mean([c[1] for c in every], axis=0), rtol=0, atol=1e-12)
    # k = 1 is Deletion@1's expected drop; an untied row keeps its one order's curve
    np.testing.assert_allclose(m.p - d[:, 0], M.deletion_at_k(scores, m.p, m.p_ablated), rtol=0, atol=1e-12)
    untied = np.arange(n) % 4 == 3
    (ordered,) = direct.curves_of([M.top_order(scores)])
    np.testing.assert_allclose(d[untied], ordered[0][untied], rtol=0, atol=1e-12)
    # the shallowest-first order differs where the ties are (else the test would show nothing)
    assert not np.allclose(d[~untied], ordered[0][~untied], rtol=0, atol=1e-6)
    # scores of few values: many tie patterns in one call, each row against its every order
    few = np.random.default_rng(1).integers(0, 3, (n, 4)).astype(float)
    ((d, k),) = with_table.method_curves([few])
    orders = [np.lexsort((np.broadcast_to(np.argsort(p), few.shape), -few), axis=1) for p in perms]
    every = direct.curves_of(orders)
    np.testing.assert_allclose(d, np.mean([c[0] for c in every], axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(k, np.mean([c[1] for c in every], axis=0), rtol=0, atol=1e-12)
