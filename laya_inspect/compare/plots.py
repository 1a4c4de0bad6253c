"""Figures of a `compare` run, saved as PNG (and SVG when asked) and readable without the terminal.

Per head:

* ``<head>_profile``    — left: each method's per-layer mean score, normalised by Σ_i |mean score_i|
  (sign kept, so α and static weights are unchanged and IG / Grad-CAM become comparable shares);
  right: the mean LOLO effect per layer, in the units of ``--effect`` (target logit or probability).
* ``<head>_ranks``      — per method, attribution rank vs LOLO-effect rank within each valid sample
  (marker area ∝ number of (sample, layer) pairs), the mean Spearman ρ in the title.
* ``<head>_deletion``   — left: Deletion@k for k = 1…L per method; right: the insertion curve (only
  the top-k layers kept); both with the oracle, top-1-only and random references (first ablation).
* ``<head>_lolo_by_class`` / ``<head>_weights_by_class`` — class × layer heatmaps of the mean LOLO
  effect and of the head's weights (α for LAYA), values written in the cells.

So that a figure cannot mislead: a method has one colour, marker and line style in every figure
(:data:`METHOD_STYLES`, references in :data:`REFERENCE_STYLES`, heads in :data:`HEAD_COLORS`); the
class heatmaps of one quantity share one colour scale across heads; titles wrap to the figure's
width instead of running off it; the layout is solved once per figure (by the save itself when there
is one format), then every format is saved from that layout. Uses matplotlib's object API
(``Figure``) with the Agg canvas: no pyplot state.
"""

from __future__ import annotations

import textwrap
import zlib
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..files import write_with
from .metrics import constant_rows, tied_rows, tolerant_ranks

FORMATS = ("png",)  # SVG only on request (write_plots(..., formats=("png", "svg")))

# Okabe–Ito colours (told apart with the common colour-vision deficiencies); markers, line styles and
# sizes differ too: methods are drawn in this order, each thinner and with smaller markers than the
# one before, so two methods whose lines coincide both stay visible (the later one inside the earlier).
METHOD_STYLES: dict[str, dict[str, Any]] = {
    "alpha": {"color": "#0072B2", "marker": "o", "ls": "-", "mfc": None, "lw": 3.2, "ms": 10},
    "ig": {"color": "#E69F00", "marker": "s", "ls": "--", "mfc": "none", "lw": 2.3, "ms": 8},
    "gradcam": {"color": "#009E73", "marker": "^", "ls": "-.", "mfc": "none", "lw": 1.5, "ms": 6},
    "static": {"color": "#CC79A7", "marker": "D", "ls": (0, (5, 1)), "mfc": None, "lw": 2.8, "ms": 9},
    "random": {"color": "#D55E00", "marker": "x", "ls": ":", "mfc": None, "lw": 1.3, "ms": 6},
}
REFERENCE_STYLES: dict[str, dict[str, Any]] = {
    "oracle": {"color": "#000000", "marker": "*", "ls": "--", "mfc": None, "label": "oracle"},
    "top1_only": {"color": "#666666", "marker": "v", "ls": "-.", "mfc": "none", "label": "top-1 only"},
    "random": {"color": "#AAAAAA", "marker": "+", "ls": ":", "mfc": None, "label": "random ordering"},
}
LOLO_COLOR = "#4D4D4D"  # the measured effects: no method's colour
# Heads: LAYA shares α's colour and ScalarMix the static weights', the heads those methods belong to.
HEAD_COLORS = {"laya": "#0072B2", "scalarmix": "#CC79A7", "last": "#332288", "concat": "#882255"}
_SPARE = ("#117733", "#44AA99", "#999933", "#AA4499", "#661100", "#6699CC")


def method_style(name: str) -> dict[str, Any]:
    """Colour, marker, line style and marker face of a method; a method without a fixed style gets
    one derived from its name, the same in every figure."""
    if name in METHOD_STYLES:
        return dict(METHOD_STYLES[name])
    return {"color": _SPARE[zlib.crc32(name.encode()) % len(_SPARE)], "marker": "P", "ls": "-", "mfc": None}


def head_color(kind: str) -> str:
    return HEAD_COLORS.get(kind) or _SPARE[zlib.crc32(kind.encode()) % len(_SPARE)]


def line_kw(style: Mapping[str, Any]) -> dict[str, Any]:
    kw = {k: style[k] for k in ("color", "marker", "ls")} | {"lw": style.get("lw", 1.6), "ms": style.get("ms", 6)}
    if style.get("mfc") is not None:
        kw["mfc"] = style["mfc"]
    return kw


def wrap(text: str, width_in: float, fontsize: float = 12) -> str:
    """``text`` wrapped to what fits in ``width_in`` inches at ``fontsize`` points (an average
    glyph is taken as 0.6 em wide), so a title never runs past the figure's edges."""
    chars = max(20, int(width_in * 72 / (fontsize * 0.6)))
    return "\n".join(textwrap.fill(part, chars) for part in text.split("\n"))


def _title(ax: Any, text: str, fontsize: float = 10) -> None:
    width = ax.figure.get_figwidth() * ax.get_position().width
    ax.set_title(wrap(text, width, fontsize), fontsize=fontsize)


def _suptitle(fig: Figure, text: str, fontsize: float = 12) -> None:
    fig.suptitle(wrap(text, fig.get_figwidth(), fontsize), fontsize=fontsize)


def solve_layout(fig: Figure) -> Figure:
    """Run the constrained layout once and freeze it: every format saved afterwards has the same
    layout, and saving does not solve it again."""
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    return fig


def save_figure(fig: Figure, stem: Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    if len(formats) > 1:  # one layout for every format; one save solves it in its own draw (a
        solve_layout(fig)  # separate solve would draw the figure twice: ≈ 20% of the plots' time)
    paths = []
    for ext in formats:
        path = stem.with_suffix(f".{ext}")
        meta = {"Date": None} if ext == "svg" else None  # no timestamp: the same run writes the same file
        write_with(path, partial(fig.savefig, format=ext, dpi=110, metadata=meta))
        paths.append(path)
    return paths


def _floats(values: Any) -> np.ndarray:
    """A list that may hold nulls (non-finite numbers in summary.json) as a float array with NaN."""
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def layer_ticks(ax: Any, layer_names: list[str], at: Any = None) -> None:
    """Layer names as x ticks (at 0 … L−1 unless ``at``), slanted when more than 4 so they do not overlap."""
    ax.set_xticks(range(len(layer_names)) if at is None else at)
    many = len(layer_names) > 4
    ax.set_xticklabels(layer_names, rotation=45 if many else 0, ha="right" if many else "center")


def _layer_axis(ax: Any, layer_names: list[str]) -> None:
    layer_ticks(ax, layer_names)
    ax.set_xlabel("layer")


def _quantity(head: dict[str, Any]) -> str:
    """What the effects were measured on: f_c (the target logit) or p_c (its probability; summaries
    written before ``--effect`` measured it)."""
    return "f_c" if ((head["lolo"].get("params") or {}).get("effect")) == "logit" else "p_c"


def profile_figure(head: dict[str, Any], layer_names: list[str], ablation: str) -> Figure:
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    x = np.arange(len(layer_names))
    for m, s in head["methods"].items():
        prof = _floats(s["mean_score"])
        norm = np.nansum(np.abs(prof))
        left.plot(x, prof / norm if norm > 0 else prof, label=m, **line_kw(method_style(m)))
    left.axhline(0, color="grey", lw=0.8)
    left.set_ylabel("mean score / Σ_layers |mean score|")
    _title(left, "attribution profile per method (normalised; mean over inputs, no error bars)")
    _layer_axis(left, layer_names)
    if head["methods"]:
        left.legend(title="method", fontsize=8)
    effect = _floats(head["lolo"]["mean_effect"])
    right.bar(x, effect, color=LOLO_COLOR)
    right.axhline(0, color="grey", lw=0.8)
    right.set_ylabel(f"mean LOLO effect  {_quantity(head)} − {_quantity(head)}(layer ablated)")
    _title(right, f"mean LOLO effect ({ablation} ablation; mean over inputs)")
    _layer_axis(right, layer_names)
    _suptitle(fig, f"{head['name']} ({head['kind']}): what each method says vs what ablation shows")
    return fig


def rank_figure(
    head: dict[str, Any], scores: Mapping[str, np.ndarray], effects: np.ndarray, tol: float = 0.0
) -> Figure:
    from scipy.stats import rankdata

    methods = list(scores)
    n_layers = effects.shape[1]
    cols = min(3, max(1, len(methods)))
    rows = int(np.ceil(len(methods) / cols)) or 1
    fig = Figure(figsize=(4.4 * cols, 4.1 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, m in zip(axes, methods):
        a = scores[m]
        finite = np.isfinite(a).all(axis=1) & np.isfinite(effects).all(axis=1)
        valid = finite & ~(constant_rows(a) | tied_rows(effects, tol))
        f = head["methods"][m]["faithfulness"]
        rho = "undefined" if f["mean"] is None else f"{f['mean']:.3f}"
        _title(ax, f"{m}: faithfulness ρ = {rho} ({f['n_valid']} valid, {f['n_undefined']} undefined)", fontsize=9)
        if valid.any():
            ra = rankdata(a[valid], axis=1).ravel()
            re = tolerant_ranks(effects[valid], tol).ravel()
            pairs, counts = np.unique(np.stack([ra, re], 1), axis=0, return_counts=True)
            ax.scatter(
                pairs[:, 0],
                pairs[:, 1],
                s=15 + 300 * counts / counts.max(),
                alpha=0.6,
                color=method_style(m)["color"],
                label="(sample, layer) pairs",
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
    _suptitle(fig, f"{head['name']} ({head['kind']}): attribution rank vs effect rank (marker area ∝ count)")
    return fig


def deletion_figure(head: dict[str, Any], ablation: str) -> Figure:
    fig = Figure(figsize=(11, 4.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    lolo, refs = head["lolo"], head.get("references") or {}
    k = np.arange(1, len(lolo["oracle_curve"]) + 1)
    q = _quantity(head)
    keep = f"mean {q}, only the top-k layers kept (higher = better)"
    for ax, curve, ref_key, title, ylabel in (
        (left, "deletion_curve", "", "Deletion@k", f"mean drop of {q}, top-k layers removed (higher = better)"),
        (right, "insertion_curve", "_insertion", "insertion", keep),
    ):
        if f"oracle{ref_key}_curve" not in lolo:
            ax.set_visible(False)
            continue
        references = [("oracle", lolo[f"oracle{ref_key}_curve"])]
        if "top1_only" in refs:
            references.append(("top1_only", refs["top1_only"][curve]))
        references.append(("random", lolo[f"random{ref_key}_curve"]))
        for ref, values in references:
            style = REFERENCE_STYLES[ref]
            ax.plot(k, _floats(values), label=style["label"], **line_kw(style))
        for m, s in head["methods"].items():
            label = m + (" (circular)" if s.get("circular") else "")
            ax.plot(k, _floats(s[curve]), label=label, **line_kw(method_style(m)))
        ax.set_xticks(k)
        ax.set_xlabel("k (top-scored layers)")
        ax.set_ylabel(ylabel, fontsize=8)
        _title(ax, f"{title}, {ablation} ablation (mean over inputs)")
        ax.legend(fontsize=7)
    _suptitle(fig, f"{head['name']} ({head['kind']}): removing / keeping layers in each method's order")
    return fig


def _matrix(matrix: Any) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in matrix], dtype=float)


def shared_span(matrices: Sequence[Any]) -> float:
    """The largest |value| over every matrix: one colour scale for heatmaps meant to be compared."""
    finite = [np.abs(m[np.isfinite(m)]) for m in map(_matrix, matrices)]
    values = np.concatenate(finite) if finite else np.zeros(0)
    span = float(values.max()) if values.size else 0.0
    return span if span > 0 else 1.0


def heatmap_figure(
    matrix: Any,
    class_names: list[str],
    layer_names: list[str],
    title: str,
    label: str,
    *,
    diverging: bool,
    fmt: str = ".2f",
    span: float | None = None,
) -> Figure:
    """``span``: the colour scale's limit (±span when diverging, [0, span] otherwise); give the same
    one to heatmaps that are compared side by side (:func:`shared_span`)."""
    m = _matrix(matrix)
    fig = Figure(figsize=(2.4 + 0.9 * len(layer_names), 1.4 + 0.42 * len(class_names)), layout="constrained")
    ax = fig.subplots()
    span = shared_span([m]) if span is None else span
    lo, cmap = (-span, "RdBu_r") if diverging else (0.0, "viridis")
    im = ax.imshow(m, aspect="auto", cmap=cmap, vmin=lo, vmax=span)
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
    fig.colorbar(im, ax=ax, label=label)
    _suptitle(fig, title, fontsize=11)
    return fig


def summary_figures(summary: dict[str, Any], head: dict[str, Any]) -> dict[str, Figure]:
    """The figures drawn from summary.json alone (every one but the rank plot), colour scales shared
    across the run's heads."""
    layers, ablation, name = summary["cache"]["layer_names"], summary["ablation"], head["name"]
    heads = summary["heads"]
    pc = head["per_class"]
    figs = {
        "profile": profile_figure(head, layers, ablation),
        "deletion": deletion_figure(head, ablation),
        "lolo_by_class": heatmap_figure(
            pc["mean_effect"],
            pc["classes"],
            layers,
            f"{name}: mean LOLO effect by target class ({ablation}; scale shared by the run's heads)",
            "mean LOLO effect",
            diverging=True,
            fmt=".3f",
            span=shared_span([h["per_class"]["mean_effect"] for h in heads]),
        ),
    }
    if pc["mean_weights"] is not None:
        what = "α" if head["kind"] == "laya" else "aggregation weight"
        figs["weights_by_class"] = heatmap_figure(
            pc["mean_weights"],
            pc["classes"],
            layers,
            f"{name}: mean {what} by target class",
            f"mean {what} (scale 0–1, as every weight heatmap)",
            diverging=False,
            span=1.0,  # weights are softmax outputs: one fixed scale across heads and fit-head's α heatmaps
        )
    return figs


def write_plots(
    plot_dir: str | Path,
    summary: dict[str, Any],
    results: Mapping[str, Any],
    *,
    formats: Sequence[str] = FORMATS,
    workers: int | None = None,
) -> list[Path]:
    """Every figure of a compare run; ``results[head]`` has ``.scores`` (method → (N, L)) and ``.effects`` (N, L).
    The heads' figures are drawn several heads at once in forked processes where the machine has the
    cores (:mod:`laya_inspect.workers`): drawing is most of a small run's time (0.2-0.5 s a figure).
    ``workers``, when given, is the most processes at once: 1 draws every figure in this process, as
    compare does where its heads ran in one (``--workers 1``, torchrun, a GPU)."""
    from ..runtime import no_progress
    from ..workers import plot_workers, run_forked

    out = Path(plot_dir)
    out.mkdir(parents=True, exist_ok=True)

    def draw(i: int, head: dict[str, Any], emit: Any) -> list[Path]:
        name, r = head["name"], results[head["name"]]
        figs = summary_figures(summary, head)
        if r.scores:
            figs["ranks"] = rank_figure(head, r.scores, r.effects, summary.get("tie_tolerance") or 0.0)
        paths: list[Path] = []
        for key in ("profile", "ranks", "deletion", "lolo_by_class", "weights_by_class"):
            if key in figs:
                paths += save_figure(figs[key], out / f"{name}_{key}", formats)
        return paths

    heads = summary["heads"]
    n = plot_workers(len(heads)) if workers is None else min(workers, plot_workers(len(heads)))
    return [p for part in run_forked(heads, draw, n, no_progress) for p in part]
