"""`compare`: every attribution method of every head, scored against the same LOLO effects.

For each head: forward pass (logits, weights, target c(x)), LOLO effects once, the oracle and random
deletion references, then per applicable method its (N, L) scores, faithfulness, Deletion@1,
Deletion@k curve and top-layer agreement, overall and per target class. Writes into ``out_dir``:

* ``attributions.h5`` — every array needed to recompute every number (schema in :func:`_write_h5`),
* ``summary.json`` / ``summary.csv`` — every number of the table, the direction of each metric,
  the ablation / target / baseline used, the head directories and the cache fingerprint,
* ``plots/`` — PNG and SVG figures (:mod:`laya_inspect.plots`).

The library never prints: ``progress`` receives dict events ({"event": "head" | "step" | "write", …}).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from .. import __version__
from ..errors import InputError, suggest
from ..files import plain, write_json
from ..head_dir import load_head
from ..heads import Head
from ..options import check, option, tuples
from ..runtime import DEVICE_HELP, Progress, check_device, no_progress, pick_device
from ..store import FeatureStore
from . import metrics as M
from .attribution import BASELINE_CHOICES, METHODS, AttributionOptions, attribute, plan_methods, resolve_methods
from .lolo import ABLATIONS, ablate_topk_curve, check_ablation, layer_means, lolo_effects
from .outputs import RANDOM_ORDERS, SCHEMA_VERSION, write_h5, write_summary_csv

TARGETS = ("pred", "true")
CHOICES = {
    "spearman": "average ranks for ties; a row whose scores or effects are all exactly equal is undefined: "
    "counted in n_undefined, excluded from the mean and the bootstrap",
    "bootstrap": "percentile 95% interval of the mean over n_boot resamples of the valid rows, numpy default_rng(seed)",
    "top_order": "descending score, ties broken by the lower layer index (stable sort); used by Deletion@k and "
    "top-layer agreement; n_top_ties counts rows with a tied top score",
    "deletion_at_1": "p − p(x with the top-scored layer ablated), read from the single-layer LOLO ablations",
    "deletion_curve": "k = 1…L: the top-k layers of each sample ablated together in one forward pass",
    "oracle": "k = 1: max_i e_i; k > 1: the k layers with the largest single-layer effects ablated together "
    "(sorted-effects order, not an exhaustive search over k-subsets)",
    "random": f"k = 1: mean_i e_i (exact expectation over orderings); k > 1: mean over {RANDOM_ORDERS} "
    "uniformly random orderings per sample, numpy default_rng([seed, 1]) (exact at k = L)",
    "per_class": "grouped by the target class c(x); no bootstrap per class",
    "rows": "the whole split, or with --limit a seeded (default_rng(seed)) random subset, sorted",
    "gradcam": "LayerGradCam on head.taps[i] (Identity on h_i): for vectors <df_c/dh_i, h_i>; relu as recorded",
    "unused_layers": "attributions run on head.logits + 0·Σ(inputs and tap outputs), so a layer the head ignores "
    "gets a zero gradient instead of an autograd error (exactly zero for finite features)",
    "probabilities": "computed in float32 on the device, stored and scored as float64",
    "profile_normalisation": "plots: a method's per-layer mean score divided by Σ_i |mean score_i| (sign kept)",
}


@dataclass(frozen=True)
class CompareConfig:
    methods: tuple[str, ...] = option(
        ("all",),
        flag="--method",
        always=True,
        help=f"repeatable or comma list: {', '.join(METHODS.names())} or all (default: all)",
    )
    ablation: str = option("mean", flag="--ablation", help=f"how a layer is removed: {' | '.join(ABLATIONS.names())}")
    target: str = option(
        "pred", flag="--target", help="class to explain: pred (the head's prediction) | true (the label)"
    )
    split: str = option("test", flag="--split", help="cache split to compare on")
    limit: int | None = option(None, flag="--limit", help="at most N rows (seeded random subset)", always=True)
    seed: int = option(
        0, flag="--seed", help="seed of random scores, --limit rows, bootstrap and random orders", always=True
    )
    n_steps: int = option(50, flag="--n-steps", help="Integrated Gradients steps", always=True)
    internal_batch_size: int | None = option(None, flag="--internal-batch-size", help="Captum IG internal batch size")
    baseline: str = option(
        "mean", flag="--baseline", help=f"IG baseline b_i: {' | '.join(BASELINE_CHOICES)} (mean over the train split)"
    )
    relu: bool = option(False, flag="--relu/--no-relu", help="apply ReLU to Grad-CAM scores")
    n_boot: int = option(
        1000, flag="--bootstrap", help="bootstrap resamples for the faithfulness 95% CI (0 = none)", always=True
    )
    device: str = option("auto", flag="--device", help=DEVICE_HELP, always=True)
    batch_size: int = option(512, flag="--batch-size", help="samples per chunk (a LOLO pass sees (L+1)× as many rows)")
    force: bool = option(False, flag="--force", help="use heads trained on a cache with another fingerprint")
    plots: bool = option(True, flag="--plots/--no-plots", help="write plots/ (PNG and SVG)")

    def __post_init__(self) -> None:
        tuples(self)
        check_device(self.device)
        check(
            self,
            [
                (
                    self.target in TARGETS,
                    "target",
                    f"must be one of {', '.join(TARGETS)}; {suggest(self.target, TARGETS)}",
                ),
                (self.baseline in BASELINE_CHOICES, "baseline", f"must be one of {', '.join(BASELINE_CHOICES)}"),
                (self.limit is None or self.limit >= 1, "limit", "must be ≥ 1"),
                (self.n_steps >= 1, "n_steps", "must be ≥ 1"),
                (self.n_boot >= 0, "n_boot", "must be ≥ 0"),
                (self.batch_size >= 1, "batch_size", "must be ≥ 1"),
                (
                    self.internal_batch_size is None or self.internal_batch_size >= 1,
                    "internal_batch_size",
                    "must be ≥ 1",
                ),
            ],
        )
        ABLATIONS.get(self.ablation)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "methods": list(self.methods)}


@dataclass
class HeadResult:
    name: str
    head_dir: str
    kind: str
    targets: np.ndarray  # (N,)
    preds: np.ndarray  # (N,)
    logits: np.ndarray  # (N, C)
    weights: np.ndarray | None  # (N, L) aggregation weights (α for LAYA)
    p: np.ndarray  # (N,)
    p_ablated: np.ndarray  # (N, L)
    effects: np.ndarray  # (N, L)
    p_topk_oracle: np.ndarray  # (N, L)
    p_topk_random: np.ndarray  # (N, L) mean over RANDOM_ORDERS orderings
    scores: dict[str, np.ndarray] = field(default_factory=dict)  # method → (N, L)
    extras: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    p_topk: dict[str, np.ndarray] = field(default_factory=dict)  # method → (N, L)
    skipped: dict[str, str] = field(default_factory=dict)
    head_config: dict[str, Any] = field(default_factory=dict)  # the head's config.json


@dataclass
class CompareResult:
    out_dir: Path
    summary: dict[str, Any]
    heads: list[HeadResult]
    files: list[Path]


# ---------------------------------------------------------------------------------------------


def _load_heads(
    head_dirs: Sequence[str | Path], store: FeatureStore, force: bool, device: torch.device
) -> dict[str, tuple[Head, dict, str]]:
    if not head_dirs:
        raise InputError("no head directory given")
    heads: dict[str, tuple[Head, dict, str]] = {}
    for d in head_dirs:
        head, cfg = load_head(d, store=store, force=force)
        path = Path(d).resolve()
        base = path.name or "head"
        if re.fullmatch(r"seed_\d+", base) and path.parent.name:  # fit-head's <head>/seed_<S>/ → "<head>-seed_<S>"
            base = f"{path.parent.name}-{base}"
        name, k = base, 2
        while name in heads:
            name, k = f"{base}-{k}", k + 1
        heads[name] = (head.to(device).eval(), cfg, str(Path(d).resolve()))
    return heads


def _rows(store: FeatureStore, config: CompareConfig) -> np.ndarray:
    n = store.n(config.split)
    if config.limit is None or config.limit >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(config.seed).choice(n, size=config.limit, replace=False))


def _forward(head: Head, hs: list[torch.Tensor], batch_size: int) -> tuple[np.ndarray, np.ndarray | None]:
    logits: list[torch.Tensor] = []
    weights: list[torch.Tensor | None] = []
    with torch.no_grad():
        for s in range(0, len(hs[0]), batch_size):
            out = head([h[s : s + batch_size] for h in hs])
            logits.append(out.logits.cpu())
            weights.append(None if out.weights is None else out.weights.cpu())
    w = None if weights[0] is None else torch.cat(cast(list[torch.Tensor], weights)).double().numpy()
    return torch.cat(logits).double().numpy(), w


def _run_head(
    name: str,
    head: Head,
    head_dir: str,
    cfg: dict[str, Any],
    hs: list[torch.Tensor],
    labels: np.ndarray,
    methods: list[str],
    skipped: dict[str, str],
    config: CompareConfig,
    means: list[np.ndarray] | None,
    emit: Progress,
) -> HeadResult:
    def step(what: str) -> None:
        emit({"event": "step", "head": name, "step": what})

    logits, weights = _forward(head, hs, config.batch_size)
    preds = logits.argmax(axis=1)
    target = preds if config.target == "pred" else labels
    lolo_base = means if config.ablation == "mean" else None

    def curve(order: np.ndarray) -> np.ndarray:
        return ablate_topk_curve(
            head, hs, target, order, None, ablation=config.ablation, baselines=lolo_base, batch_size=config.batch_size
        )

    step("lolo")
    p, p_abl, effects = lolo_effects(
        head, hs, target, ablation=config.ablation, baselines=lolo_base, batch_size=config.batch_size
    )
    oracle = curve(M.top_order(effects))
    rng = np.random.default_rng([config.seed, 1])  # a stream of its own, apart from the random method's
    n, n_layers = effects.shape
    orders = [rng.permuted(np.tile(np.arange(n_layers), (n, 1)), axis=1) for _ in range(RANDOM_ORDERS)]
    rand = np.mean([curve(o) for o in orders], axis=0)
    rand[:, 0] = p - M.random_at_1(effects)  # exact expectation at k = 1
    res = HeadResult(
        name,
        head_dir,
        head.kind,
        target.astype(np.int64),
        preds.astype(np.int64),
        logits,
        weights,
        p,
        p_abl,
        effects,
        oracle,
        rand,
        skipped=skipped,
        head_config=cfg,
    )
    options = AttributionOptions(
        baselines=means if config.baseline == "mean" else None,
        baseline=config.baseline,
        n_steps=config.n_steps,
        internal_batch_size=config.internal_batch_size,
        relu=config.relu,
        seed=config.seed,
        batch_size=config.batch_size,
    )
    for m in methods:
        step(m)
        att = attribute(m, head, hs, target, options)
        res.scores[m], res.extras[m], res.params[m] = att.scores, att.extras, att.params
        res.p_topk[m] = curve(M.top_order(att.scores))
    return res


def _head_summary(
    r: HeadResult, labels: np.ndarray, cfg: dict, layer_names: list[str], class_names: list[str], config: CompareConfig
) -> dict[str, Any]:
    num_classes = max(len(class_names), int(r.logits.shape[1]))
    mean_effect = r.effects.mean(axis=0)
    order = np.argsort(-mean_effect, kind="stable")
    oracle1, random1 = M.oracle_at_1(r.effects), M.random_at_1(r.effects)
    methods, pc_methods = {}, {}
    for m, scores in r.scores.items():
        faith = M.faithfulness(scores, r.effects, n_boot=config.n_boot, seed=config.seed)
        d1 = M.deletion_at_k(scores, r.p, r.p_ablated)
        agree = M.top_layer_agreement(scores, r.effects)
        delta = r.extras[m].get("delta")
        methods[m] = {
            "faithfulness": faith.to_dict(),
            "deletion_at_1": float(d1.mean()),
            "deletion_at_1_over_oracle": float(d1.mean() / oracle1.mean()) if oracle1.mean() > 0 else None,
            "deletion_curve": M.deletion_curve(r.p, r.p_topk[m]).tolist(),
            "top_layer_agreement": float(agree.mean()),
            "n_top_ties": int(M.tied_top_rows(scores).sum()),
            "mean_score": scores.mean(axis=0).tolist(),
            "ig_delta": None
            if delta is None
            else {"abs_mean": float(np.abs(delta).mean()), "abs_max": float(np.abs(delta).max())},
            "params": r.params[m],
        }
        pcf = M.per_class_faithfulness(scores, r.effects, r.targets, num_classes)
        pc_methods[m] = {
            "faithfulness": pcf["mean"],
            "n_valid": pcf["n_valid"],
            "n_undefined": pcf["n_undefined"],
            "deletion_at_1": M.per_class(d1, r.targets, num_classes).tolist(),
            "top_layer_agreement": M.per_class(agree, r.targets, num_classes).tolist(),
        }
    return {
        "name": r.name,
        "dir": r.head_dir,
        "kind": r.kind,
        "head_config": cfg.get("kwargs"),
        "head_cache_fingerprint": cfg.get("cache_fingerprint"),
        "n": int(len(r.p)),
        "accuracy": float((r.preds == labels).mean()),
        "mean_p": float(r.p.mean()),
        "methods_run": list(r.scores),
        "methods_skipped": r.skipped,
        "lolo": {
            "mean_effect": mean_effect.tolist(),
            "oracle_at_1": float(oracle1.mean()),
            "random_at_1": float(random1.mean()),
            "oracle_curve": M.deletion_curve(r.p, r.p_topk_oracle).tolist(),
            "random_curve": M.deletion_curve(r.p, r.p_topk_random).tolist(),
            "most_relied_on": [
                {"layer": layer_names[i], "index": int(i), "mean_effect": float(mean_effect[i])} for i in order
            ],
        },
        "methods": methods,
        "per_class": {
            "by": "target class c(x)",
            "classes": class_names if len(class_names) == num_classes else [str(c) for c in range(num_classes)],
            "n": np.bincount(r.targets, minlength=num_classes).tolist(),
            "mean_effect": M.per_class(r.effects, r.targets, num_classes).tolist(),
            "mean_weights": None if r.weights is None else M.per_class(r.weights, r.targets, num_classes).tolist(),
            "oracle_at_1": M.per_class(oracle1, r.targets, num_classes).tolist(),
            "random_at_1": M.per_class(random1, r.targets, num_classes).tolist(),
            "methods": pc_methods,
        },
    }


def compare_heads(
    head_dirs: Sequence[str | Path],
    store: FeatureStore,
    config: CompareConfig,
    *,
    out_dir: str | Path,
    progress: Progress | None = None,
) -> CompareResult:
    """Score every applicable method of every head against LOLO effects and write the artifacts."""
    emit = progress or no_progress
    requested = [p.strip() for m in config.methods for p in str(m).split(",") if p.strip()]
    methods = resolve_methods(requested)
    device = pick_device(config.device)
    heads = _load_heads(head_dirs, store, config.force, device)
    ablation = check_ablation(config.ablation, {n: h for n, (h, _, _) in heads.items()})
    store.n(config.split)  # NotFoundError naming the splits
    explicit = {m for m in requested if m != "all"}
    plan = plan_methods(methods, {n: h for n, (h, _, _) in heads.items()}, explicit=explicit)
    rows = _rows(store, config)
    means = layer_means(store, "train") if config.baseline == "mean" or ablation.needs_baselines else None
    hs = [torch.from_numpy(np.ascontiguousarray(x)).to(device) for x in store.layers(config.split, rows)]
    labels = store.labels(config.split, rows).astype(np.int64)
    layer_names, class_names = store.layer_names, store.class_names

    results, head_summaries = [], []
    for i, (name, (head, cfg, d)) in enumerate(heads.items()):
        emit({"event": "head", "head": name, "kind": head.kind, "index": i, "total": len(heads)})
        run, skipped = plan[name]
        r = _run_head(name, head, d, cfg, hs, labels, run, skipped, config, means, emit)
        results.append(r)
        head_summaries.append(_head_summary(r, labels, cfg, layer_names, class_names, config))

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": "laya-inspect-compare",
        "tool_version": __version__,
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "cache": {
            "path": str(store.path),
            "fingerprint": store.fingerprint,
            "layer_names": layer_names,
            "class_names": class_names,
            "model_spec": store.attrs.get("model_spec"),
            "data_spec": store.attrs.get("data_spec"),
        },
        "config": {**config.to_dict(), "methods_resolved": methods, "device_resolved": str(device)},
        "ablation": config.ablation,
        "ablation_description": ablation.description,
        "target": config.target,
        "baseline": config.baseline,
        "split": config.split,
        "n": int(len(rows)),
        "seed": config.seed,
        "head_dirs": [d for _, _, d in heads.values()],
        "directions": M.DIRECTIONS,
        "choices": CHOICES,
        "heads": head_summaries,
    }
    files = [write_h5(out / "attributions.h5", results, rows, labels, means, summary)]
    summary["files"] = {"attributions": "attributions.h5", "summary_json": "summary.json", "summary_csv": "summary.csv"}
    plot_files: list[Path] = []
    if config.plots:
        from .plots import write_plots

        plot_files = write_plots(out / "plots", plain(summary), {r.name: r for r in results})
    summary["files"]["plots"] = [str(p.relative_to(out)) for p in plot_files]
    files += [
        write_json(out / "summary.json", summary),
        write_summary_csv(out / "summary.csv", plain(summary)),
        *plot_files,
    ]
    for f in [*files[:3], *([out / "plots"] if plot_files else [])]:
        emit({"event": "write", "path": str(f)})
    return CompareResult(out, plain(summary), results, files)
