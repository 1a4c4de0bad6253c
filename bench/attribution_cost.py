"""Attribution and its faithfulness check against the head passes they need, side by side in one run
(docs/PERFORMANCE.md).

Rows of the performance table printed here, on 10k cached test rows of a LAYA head (fit-head's
defaults, one epoch) over zoo MLP states of Fashion-MNIST:

* IG, 50 steps: laya-inspect's ``ig`` ÷ 50 × (head forward + backward) on each 512-row chunk
  (target ≤ 1.25×), and Captum's own gradient path (one autograd root per row and step, what ``ig``
  ran before) ÷ the same floor, with the largest difference between the two attributions;
* LOLO, mean ablation: ``lolo_effects`` ÷ (L + 1) head forwards in float64 (keep ≤ 1.5×);
* the ablation measurements of one (head, ablation) in ``compare`` — LOLO, subsets, the oracle /
  random / top-1-only curves and one pair of curves per method — ÷ the same LOLO floor, and the way
  they ran before (each request its own pass of the head's forward on stacked copies) ÷ now, with
  the largest difference between the two;
* ``laya-inspect compare --method all`` on the same rows and head, a fresh process (target < 20 s).

    python bench/attribution_cost.py            # the table's sizes (a few minutes)
    python bench/attribution_cost.py --smoke    # tiny sizes, seconds: checks that it runs
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import _bench
import _caches
import numpy as np
import torch

from laya_inspect.cache.store import FeatureStore
from laya_inspect.compare.attribution import AttributionOptions, all_layers_in_graph, attribute
from laya_inspect.compare.effects import RANDOM_ORDERS, Remover, measure, subset_masks
from laya_inspect.compare.lolo import ablate_sets, lolo_effects
from laya_inspect.compare.masks import curve_masks, lolo_masks, subset_masks_of
from laya_inspect.compare.values import layer_means
from laya_inspect.head_dir import load_head

CHUNK = 512  # compare's --batch-size default


def ig_floor(head, hs, target, n_steps: int) -> None:
    """What IG cannot avoid: n_steps forward + backward passes of the head over every row."""
    for s in range(0, len(target), CHUNK):
        t = target[s : s + CHUNK].reshape(-1, 1)
        for _ in range(n_steps):
            x = [h[s : s + CHUNK].clone().requires_grad_(True) for h in hs]
            torch.autograd.grad(head(x).logits.gather(1, t).sum(), x)


def captum_default(head, hs, target, base, n_steps: int) -> np.ndarray:
    """IG through Captum's own gradient function (one root per row and step): the old ``ig``."""
    from captum.attr import IntegratedGradients

    ig = IntegratedGradients(all_layers_in_graph(head))
    out = []
    for s in range(0, len(target), CHUNK):
        x = tuple(h[s : s + CHUNK] for h in hs)
        b = tuple(bi.expand_as(xi) for bi, xi in zip(base, x))
        attrs = ig.attribute(x, baselines=b, target=target[s : s + CHUNK], n_steps=n_steps)
        out.append(torch.stack([a.sum(1) for a in attrs], dim=1).detach())
    return torch.cat(out).double().numpy()


def ablations(head, hs, target, means, orders: list[np.ndarray]) -> list[np.ndarray]:
    """compare's measurements of one (head, mean ablation): :func:`measure` and every method's curves."""
    remover = Remover(head, hs, target, "mean", baselines=means)
    m = measure(remover)
    curves = remover.curves_of(orders)
    return [m.p_ablated, m.p_subsets, *(c for pair in curves for c in pair)]


def ablations_before(head, hs, target, means, orders: list[np.ndarray]) -> list[np.ndarray]:
    """The same requests as compare made them before: each its own pass of the head's forward on
    stacked copies (the oracle and top-1-only orders cost what any order does: random ones here)."""
    n, n_layers = len(target), len(hs)
    rng = np.random.default_rng(0)
    refs = [np.argsort(rng.random((n, n_layers)), axis=1) for _ in range(RANDOM_ORDERS + 2)]
    sets = [lolo_masks(n_layers), subset_masks_of(subset_masks(n_layers), n_layers)]
    sets += [m for o in [*refs, *orders] for m in curve_masks(o, n, n_layers)]
    out = [ablate_sets(head, hs, target, [s], "mean", means, stacked=True)[0] for s in sets]
    return [out[0][:, 1:], out[1], *out[2 + 2 * len(refs) :]]


def lolo_floor(head, hs) -> None:
    with torch.no_grad():
        for s in range(0, len(hs[0]), CHUNK):
            for _ in range(len(hs) + 1):
                head([h[s : s + CHUNK] for h in hs])


def main() -> None:
    args = _bench.parser(__doc__).parse_args()
    _bench.start(args, "attribution and faithfulness against the head passes they need")
    rows = 600 if args.smoke else 10_000
    n_steps = 5 if args.smoke else 50
    cache, what = _caches.feature_cache(rows)
    head_dir = _caches.fitted_head(cache)
    with FeatureStore(cache) as store:
        head, _ = load_head(head_dir, store=store)
        hs = [torch.from_numpy(np.ascontiguousarray(h)) for h in store.layers("test")]
        means = layer_means(store, "train")
    head.eval()
    with torch.no_grad():
        target = head(hs).logits.argmax(1)
    base = [torch.as_tensor(m) for m in means]
    opts = AttributionOptions(baselines=means, baseline="mean", n_steps=n_steps)
    n = len(target)
    print(f"# {what}: {n} test rows, layers {[h.shape[1] for h in hs]}, head {head_dir}")

    results: dict[str, np.ndarray] = {}

    def ours() -> None:
        results["ours"] = attribute("ig", head, hs, target, opts).scores

    def old() -> None:
        results["captum"] = captum_default(head, hs, target, base, n_steps)

    times = _bench.interleave(
        {"ig": ours, "captum": old, "floor": lambda: ig_floor(head, hs, target, n_steps)}, args.repeats
    )
    _bench.ratio(f"ig/{n_steps}x-head-fwd+bwd [{n} rows]", times["ig"], times["floor"], "≤ 1.25×")
    _bench.ratio(f"captum-default-ig/{n_steps}x-head-fwd+bwd [{n} rows] (before)", times["captum"], times["floor"])
    diff = np.abs(results["ours"] - results["captum"])
    scale = np.abs(results["captum"]).max()
    print(f"# ig agreement with Captum's default path: max |Δ| {diff.max():.3g} (max |score| {scale:.3g})")

    head64 = copy.deepcopy(head).double()
    hs64 = [h.double() for h in hs]
    target_np = target.numpy()
    times = _bench.interleave(
        {
            "lolo": lambda: lolo_effects(head64, hs64, target_np, "mean", means) and None,
            "floor": lambda: lolo_floor(head64, hs64),
        },
        args.repeats,
    )
    _bench.ratio(f"lolo/{len(hs) + 1}-head-forwards [{n} rows, float64]", times["lolo"], times["floor"], "≤ 1.5×")

    rng = np.random.default_rng(1)
    orders = [np.argsort(rng.random((n, len(hs))), axis=1) for _ in range(5)]  # compare's five methods
    got: dict[str, list[np.ndarray]] = {}

    def run(name, fn) -> None:
        got[name] = fn(head64, hs64, target_np, means, orders)

    times = _bench.interleave(
        {
            "now": lambda: run("now", ablations),
            "before": lambda: run("before", ablations_before),
            "floor": lambda: lolo_floor(head64, hs64),
        },
        args.repeats,
    )
    label = f"[{n} rows, L = {len(hs)}, mean ablation, 5 methods]"
    _bench.ratio(f"compare-ablations/{len(hs) + 1}-head-forwards {label}", times["now"], times["floor"])
    _bench.ratio(f"compare-ablations-before/now {label}", times["before"], times["now"])
    diff = max(float(np.abs(a - b).max()) for a, b in zip(got["now"], got["before"]))
    print(f"# compare ablations, now vs before: max |Δp| {diff:.3g} over LOLO, subsets and the methods' curves")

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            "compare", str(head_dir), "--cache", str(cache), "--method", "all", "--n-steps", str(n_steps),
            "--threads", str(args.threads), "--device", "cpu", "--force", "--out", str(Path(tmp) / "cmp"),
        ]  # fmt: skip
        if args.smoke:
            cmd += ["--bootstrap", "20"]
        times = _bench.interleave(
            {"all": lambda: _bench.laya(*cmd), "no-plots": lambda: _bench.laya(*cmd, "--no-plots")},
            args.repeats,
            warmup=False,
        )
    _bench.seconds(f"compare --method all [{n} rows, one head, CLI end to end]", times["all"], "< 20 s")
    _bench.seconds(f"compare --method all --no-plots [{n} rows, one head]", times["no-plots"])
    _bench.ratio("compare-with-plots/without", times["all"], times["no-plots"])
    print(f"# {_bench.load()}")


if __name__ == "__main__":
    main()
