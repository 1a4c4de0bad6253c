"""Figures of a `compare` run, each saved as PNG and SVG and readable without the terminal.

Per head:

* ``<head>_profile``    — left: each method's per-layer mean score, normalised by Σ_i |mean score_i|
  (sign kept, so α and static weights are unchanged and IG / Grad-CAM become comparable shares);
  right: the mean LOLO effect per layer in probability units.
* ``<head>_ranks``      — per method, attribution rank vs LOLO-effect rank within each valid sample
  (marker area ∝ number of (sample, layer) pairs), the mean Spearman ρ in the title.
* ``<head>_deletion``   — left: Deletion@k for k = 1…L per method; right: the insertion curve (only
  the top-k layers kept); both with the oracle, top-1-only and random references (first ablation).
* ``<head>_lolo_by_class`` / ``<head>_weights_by_class`` — class × layer heatmaps of the mean LOLO
  effect and of the head's weights (α for LAYA), values written in the cells.

Uses matplotlib's object API (``Figure``) with the Agg canvas: no pyplot state, no display.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from scipy.stats import rankdata

from ..files import write_with
from .metrics import constant_rows, tied_rows, tolerant_ranks

FORMATS = ("png", "svg")


def _save(fig: Figure, stem: Path) -> list[Path]:
    paths = []
    for ext in FORMATS:
        path = stem.with_suffix(f".{ext}")
        # constrained layout already fits the labels
        write_with(path, partial(fig.savefig, format=ext, dpi=110))
        paths.append(path)
    return paths


def _floats(values: Any) -> np.ndarray:
    """A list that may hold nulls (non-finite numbers in summary.json) as a float array with NaN."""
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _layer_axis(ax: Any, layer_names: list[str]) -> None:
    ax.set_xticks(range(len(layer_names)))
    many = len(layer_names) > 4
    ax.set_xticklabels(layer_names, rotation=45 if many else 0, ha="right" if many else "center")
    ax.set_xlabel("layer")


def profile_figure(head: dict[str, Any], layer_names: list[str], ablation: str) -> Figure:
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    x = np.arange(len(layer_names))
    for m, s in head["methods"].items():
        prof = _floats(s["mean_score"])
        norm = np.nansum(np.abs(prof))
        left.plot(x, prof / norm if norm > 0 else prof, marker="o", label=m)
    left.axhline(0, color="grey", lw=0.8)
    left.set_ylabel("mean score / Σ_layers |mean score|")
    left.set_title("attribution profile per method (normalised)")
    _layer_axis(left, layer_names)
    if head["methods"]:
        left.legend(title="method", fontsize=8)
    effect = _floats(head["lolo"]["mean_effect"])
    right.bar(x, effect, color="tab:red")
    right.axhline(0, color="grey", lw=0.8)
    right.set_ylabel("mean LOLO effect  p − p(layer ablated)")
    right.set_title(f"mean LOLO effect ({ablation} ablation)")
    _layer_axis(right, layer_names)
    fig.suptitle(f"{head['name']} ({head['kind']}): what each method says vs what ablation shows")
    return fig


def rank_figure(
    head: dict[str, Any], scores: Mapping[str, np.ndarray], effects: np.ndarray, tol: float = 0.0
) -> Figure:
    methods = list(scores)
    n_layers = effects.shape[1]
    cols = min(3, max(1, len(methods)))
    rows = int(np.ceil(len(methods) / cols)) or 1
    fig = Figure(figsize=(4.2 * cols, 3.9 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, m in zip(axes, methods):
        a = scores[m]
        finite = np.isfinite(a).all(axis=1) & np.isfinite(effects).all(axis=1)
        valid = finite & ~(constant_rows(a) | tied_rows(effects, tol))
        f = head["methods"][m]["faithfulness"]
        rho = "undefined" if f["mean"] is None else f"{f['mean']:.3f}"
        ax.set_title(f"{m}: mean ρ = {rho}  ({f['n_valid']} valid, {f['n_undefined']} undefined)", fontsize=9)
        if valid.any():
            ra = rankdata(a[valid], axis=1).ravel()
            re = tolerant_ranks(effects[valid], tol).ravel()
            pairs, counts = np.unique(np.stack([ra, re], 1), axis=0, return_counts=True)
            ax.scatter(
                pairs[:, 0], pairs[:, 1], s=15 + 300 * counts / counts.max(), alpha=0.6, label="(sample, layer) pairs"
            )
        ax.plot([1, n_layers], [1, n_layers], color="grey", ls="--", lw=0.8, label="perfect agreement")
        if n_layers <= 12:
            ax.set_xticks(range(1, n_layers + 1))
            ax.set_yticks(range(1, n_layers + 1))
        ax.set_xlabel(f"attribution rank in sample (1 = lowest, {n_layers} = highest)", fontsize=8)
        ax.set_ylabel("LOLO effect rank in sample", fontsize=8)
    if methods:
        axes[0].legend(fontsize=7, loc="upper left")
    for ax in axes[len(methods) :]:
        ax.set_visible(False)
    fig.suptitle(f"{head['name']} ({head['kind']}): attribution rank vs effect rank (marker area ∝ count)")
    return fig


def deletion_figure(head: dict[str, Any], ablation: str) -> Figure:
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    lolo, refs = head["lolo"], head.get("references") or {}
    k = np.arange(1, len(lolo["oracle_curve"]) + 1)
    for ax, curve, ref_key, title, ylabel in (
        (left, "deletion_curve", "", "Deletion@k", "mean drop of p_c, top-k layers removed (higher = better)"),
        (right, "insertion_curve", "_insertion", "insertion", "mean p_c, only the top-k layers kept (higher = better)"),
    ):
        if f"oracle{ref_key}_curve" not in lolo:
            ax.set_visible(False)
            continue
        ax.plot(k, _floats(lolo[f"oracle{ref_key}_curve"]), color="black", ls="--", marker="s", label="oracle")
        if "top1_only" in refs:
            ax.plot(k, _floats(refs["top1_only"][curve]), color="dimgrey", ls="-.", marker="^", label="top-1 only")
        ax.plot(k, _floats(lolo[f"random{ref_key}_curve"]), color="grey", ls=":", marker="x", label="random ordering")
        for m, s in head["methods"].items():
            ax.plot(k, _floats(s[curve]), marker="o", label=m + (" (circular)" if s.get("circular") else ""))
        ax.set_xticks(k)
        ax.set_xlabel("k (top-scored layers)")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(f"{title}, {ablation} ablation")
        ax.legend(fontsize=7)
    fig.suptitle(f"{head['name']} ({head['kind']}): removing / keeping layers in each method's order")
    return fig


def heatmap_figure(
    matrix: Any,
    class_names: list[str],
    layer_names: list[str],
    title: str,
    label: str,
    *,
    diverging: bool,
    fmt: str = ".2f",
) -> Figure:
    m = np.array([[np.nan if v is None else v for v in row] for row in matrix], dtype=float)
    fig = Figure(figsize=(1.2 + 0.9 * len(layer_names), 1.2 + 0.42 * len(class_names)), layout="constrained")
    ax = fig.subplots()
    finite = m[np.isfinite(m)]
    span = float(np.abs(finite).max()) if finite.size else 1.0
    kw = dict(cmap="RdBu_r", vmin=-span, vmax=span) if diverging else dict(cmap="viridis")
    im = ax.imshow(m, aspect="auto", **kw)
    size = 8 if len(layer_names) <= 8 else 6
    for (i, j), v in np.ndenumerate(m):
        if np.isfinite(v):
            rgba = im.cmap(im.norm(v))
            dark = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] < 0.5
            ax.text(j, i, format(v, fmt), ha="center", va="center", fontsize=size, color="white" if dark else "black")
    _layer_axis(ax, layer_names)
    ax.set_yticks(range(len(class_names)))
    ax.set_yticklabels(class_names)
    ax.set_ylabel("target class")
    ax.set_title(title)
    fig.colorbar(im, ax=ax, label=label)
    return fig


def write_plots(plot_dir: str | Path, summary: dict[str, Any], results: Mapping[str, Any]) -> list[Path]:
    """Every figure of a compare run; ``results[head]`` has ``.scores`` (method → (N, L)) and ``.effects`` (N, L)."""
    out = Path(plot_dir)
    out.mkdir(parents=True, exist_ok=True)
    layers = summary["cache"]["layer_names"]
    ablation = summary["ablation"]
    paths: list[Path] = []
    for head in summary["heads"]:
        name, r = head["name"], results[head["name"]]
        pc = head["per_class"]
        figs = {
            "profile": profile_figure(head, layers, ablation),
            "deletion": deletion_figure(head, ablation),
            "lolo_by_class": heatmap_figure(
                pc["mean_effect"],
                pc["classes"],
                layers,
                f"{name}: mean LOLO effect by target class ({ablation})",
                "mean LOLO effect",
                diverging=True,
                fmt=".3f",
            ),
        }
        if r.scores:
            figs["ranks"] = rank_figure(head, r.scores, r.effects, summary.get("tie_tolerance") or 0.0)
        if pc["mean_weights"] is not None:
            what = "α" if head["kind"] == "laya" else "aggregation weight"
            figs["weights_by_class"] = heatmap_figure(
                pc["mean_weights"],
                pc["classes"],
                layers,
                f"{name}: mean {what} by target class",
                f"mean {what}",
                diverging=False,
            )
        for key, fig in figs.items():
            paths += _save(fig, out / f"{name}_{key}")
    return paths
