"""Plots of the layer-weight profiles (matplotlib, Agg backend): each figure as PNG and SVG.

- layer_weights: bars of the mean weight per layer, error bars = std (α: over the tested rows; static:
  over seeds), one group of bars per head; pooled over seeds, as its title says.
- <head>_seeds: one group of bars per seed (each seed's mean weight per layer) beside the pooled
  mean, so seeds that disagree show instead of averaging out.
- <head>_class_<group>: class × layer heatmap of mean α for all / correct / incorrect rows, pooled
  over seeds (title says so), the value written in each cell (empty cells: no rows of that class in
  the group); <head>_class_all_seed<S>: the same for each seed's own rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..files import write_with

PNG_ONLY = ("png",)  # SVG only when asked for (--svg)


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, stem: Path, formats: Sequence[str] = PNG_ONLY) -> dict[str, Path]:
    plt = _plt()
    out = {}
    for fmt in formats:
        path = stem.with_suffix(f".{fmt}")
        write_with(
            path,
            partial(
                fig.savefig,
                format=fmt,
                dpi=150 if fmt == "png" else None,
                bbox_inches="tight",
                metadata={"Date": None} if fmt == "svg" else None,
            ),
        )
        out[f"{stem.name}_{fmt}"] = path
    plt.close(fig)
    return out


def _pooled(n_seeds: int) -> str:
    return f"pooled over {n_seeds} seeds" if n_seeds > 1 else "1 seed"


def plot_layer_bars(
    profiles: dict[str, Any], stem: Path, formats: Sequence[str] = PNG_ONLY, split: str = "test"
) -> dict[str, Path]:
    names = profiles["layer_names"]
    series = [(f"{h} α (± std over rows)", p["mean"], p["std"]) for h, p in profiles["alpha"].items()]
    series += [(f"{h} static (± std over seeds)", p["mean"], p["std"]) for h, p in profiles["static"].items()]
    n_seeds = max([len(p["seeds"]) for t in ("alpha", "static") for p in profiles[t].values()] or [1])
    title = f"Layer weights, {_pooled(n_seeds)} (error bars clipped to [0, 1])"
    return _bars(names, series, title, stem, formats, split)


def plot_seed_bars(
    head: str,
    kind: str,
    p: dict[str, Any],
    names: list[str],
    stem: Path,
    formats: Sequence[str] = PNG_ONLY,
    split: str = "test",
) -> dict[str, Path]:
    """Each seed's mean weight per layer beside the pooled mean (no error bars)."""
    per_seed = p["seed_means"] if kind == "alpha" else p["weights"]
    series = [(f"seed {s}", row, None) for s, row in zip(p["seeds"], per_seed)]
    series.append((f"{_pooled(len(p['seeds']))}", p["mean"], None))
    label = "α" if kind == "alpha" else "static weights"
    return _bars(names, series, f"{head} {label} per seed, and pooled", stem, formats, split)


def _bars(
    names: list[str],
    series: list[tuple[str, Any, Any]],
    title: str,
    stem: Path,
    formats: Sequence[str],
    split: str = "test",
) -> dict[str, Path]:
    plt = _plt()
    x = np.arange(len(names))
    width = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(names) + 2), 3.6))
    for k, (label, mean, std) in enumerate(series):
        mean = np.asarray(mean, dtype=float)
        err = None
        if std is not None:
            std = np.nan_to_num(np.asarray(std, dtype=float), nan=0.0)
            err = np.stack([np.minimum(std, mean), np.minimum(std, 1.0 - mean)])  # weights live in [0, 1]
        ax.bar(x + (k - (len(series) - 1) / 2) * width, mean, width, yerr=err, capsize=3, label=label)
    ax.set_xticks(x, names, rotation=30 if len(names) > 6 else 0, ha="right" if len(names) > 6 else "center")
    ax.set_ylabel(f"mean weight on the {split} split")
    ax.set_ylim(0, 1.02)
    ax.set_title(title, fontsize=10)
    ax.legend(
        fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.12 if len(names) <= 6 else -0.25), ncol=2
    )
    return _save(fig, stem, formats)


def plot_class_heatmap(
    matrix: np.ndarray,
    counts: np.ndarray,
    *,
    layer_names: list[str],
    class_names: list[str],
    title: str,
    stem: Path,
    formats: Sequence[str] = PNG_ONLY,
) -> dict[str, Path]:
    plt = _plt()
    n_classes, n_layers = matrix.shape
    fig, ax = plt.subplots(figsize=(max(4.0, 0.8 * n_layers + 2.5), max(3.0, 0.38 * n_classes + 1.5)))
    masked = np.ma.masked_invalid(matrix)
    im = ax.imshow(masked, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    for i in range(n_classes):
        for j in range(n_layers):
            if np.isfinite(matrix[i, j]):
                color = "white" if matrix[i, j] < 0.6 else "black"
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7, color=color)
    wide = n_layers > 6
    ax.set_xticks(range(n_layers), layer_names, rotation=30 if wide else 0, ha="right" if wide else "center")
    ax.set_yticks(range(n_classes), [f"{n} (n={int(k)})" for n, k in zip(class_names, counts)])
    ax.set_title(title)
    fig.colorbar(im, ax=ax, label="mean α")
    return _save(fig, stem, formats)


def plot_profiles(
    out_dir: Path,
    profiles: dict[str, Any],
    formats: Sequence[str] = PNG_ONLY,
    split: str = "test",
    workers: int | None = None,
) -> dict[str, Path]:
    """Every profile figure, its labels naming the split the heads were tested on (``split``); drawn
    several at once in forked processes where the machine has the cores (:mod:`laya_inspect.workers`):
    drawing is most of a small fit's writing time. ``workers``, when given, is the most processes at
    once: 1 draws every figure in this process, as fit-head's ``--workers 1`` runs its heads."""
    from ..runtime import no_progress
    from ..workers import plot_workers, run_forked

    names, classes = profiles["layer_names"], profiles["class_names"]
    jobs: list[Callable[[], dict[str, Path]]] = [
        partial(plot_layer_bars, profiles, out_dir / "layer_weights", formats, split)
    ]
    for kind in ("alpha", "static"):
        for h, p in profiles[kind].items():
            if len(p["seeds"]) > 1:
                jobs.append(partial(plot_seed_bars, h, kind, p, names, out_dir / f"{h}_seeds", formats, split))
    heatmap = partial(plot_class_heatmap, layer_names=names, class_names=classes, formats=formats)
    for h, p in profiles["alpha"].items():
        pooled = _pooled(len(p["seeds"]))
        for group, g in p["class"].items():
            title = f"{h}: mean α by class ({group} {split} rows, {pooled})"
            jobs.append(partial(heatmap, g["mean"], g["count"], title=title, stem=out_dir / f"{h}_class_{group}"))
        if len(p["seeds"]) > 1:
            counts = p["class"]["all"]["count"] // len(p["seeds"])
            for s, matrix in zip(p["seeds"], p["seed_class"]):
                title = f"{h}: mean α by class (all {split} rows, seed {s} only)"
                jobs.append(partial(heatmap, matrix, counts, title=title, stem=out_dir / f"{h}_class_all_seed{s}"))
    workers = plot_workers(len(jobs)) if workers is None else min(workers, plot_workers(len(jobs)))
    if workers > 1:  # imported once here, not in each worker: fit-head's report needs it after them anyway
        _plt()
    files: dict[str, Path] = {}
    for part in run_forked(jobs, lambda i, job, emit: job(), workers, no_progress):
        files.update(part)
    return files
