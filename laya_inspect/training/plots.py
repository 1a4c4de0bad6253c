"""Plots of the layer-weight profiles (matplotlib, Agg backend): each figure as PNG and SVG.

- layer_weights: bars of the mean weight per layer, error bars = std (α: over test rows; static:
  over seeds), one group of bars per head.
- <head>_class_<group>: class × layer heatmap of mean α for all / correct / incorrect rows, the value
  written in each cell (empty cells: no rows of that class in the group).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..files import write_with

FORMATS = ("png", "svg")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, stem: Path) -> dict[str, Path]:
    plt = _plt()
    out = {}
    for fmt in FORMATS:
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


def plot_layer_bars(profiles: dict[str, Any], stem: Path) -> dict[str, Path]:
    plt = _plt()
    names = profiles["layer_names"]
    series = [(f"{h} α (± std over rows)", p["mean"], p["std"]) for h, p in profiles["alpha"].items()]
    series += [(f"{h} static (± std over seeds)", p["mean"], p["std"]) for h, p in profiles["static"].items()]
    x = np.arange(len(names))
    width = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(names) + 2), 3.6))
    for k, (label, mean, std) in enumerate(series):
        mean = np.asarray(mean, dtype=float)
        std = np.nan_to_num(np.asarray(std, dtype=float), nan=0.0)
        err = np.stack([np.minimum(std, mean), np.minimum(std, 1.0 - mean)])  # weights live in [0, 1]
        ax.bar(x + (k - (len(series) - 1) / 2) * width, mean, width, yerr=err, capsize=3, label=label)
    ax.set_xticks(x, names, rotation=30 if len(names) > 6 else 0, ha="right" if len(names) > 6 else "center")
    ax.set_ylabel("mean weight on the test split")
    ax.set_ylim(0, 1.02)
    ax.set_title("Layer weights (error bars clipped to [0, 1])", fontsize=10)
    ax.legend(
        fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.12 if len(names) <= 6 else -0.25), ncol=2
    )
    return _save(fig, stem)


def plot_class_heatmap(
    matrix: np.ndarray, counts: np.ndarray, *, layer_names: list[str], class_names: list[str], title: str, stem: Path
) -> dict[str, Path]:
    plt = _plt()
    n_classes, n_layers = matrix.shape
    fig, ax = plt.subplots(figsize=(max(4.0, 0.8 * n_layers + 2.5), max(3.0, 0.38 * n_classes + 1.5)))
    masked = np.ma.masked_invalid(matrix)
    im = ax.imshow(masked, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    for i in range(n_classes):
        for j in range(n_layers):
            if np.isfinite(matrix[i, j]):
                ax.text(
                    j,
                    i,
                    f"{matrix[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if matrix[i, j] < 0.6 else "black",
                )
    wide = n_layers > 6
    ax.set_xticks(range(n_layers), layer_names, rotation=30 if wide else 0, ha="right" if wide else "center")
    ax.set_yticks(range(n_classes), [f"{n} (n={int(k)})" for n, k in zip(class_names, counts)])
    ax.set_title(title)
    fig.colorbar(im, ax=ax, label="mean α")
    return _save(fig, stem)


def plot_profiles(out_dir: Path, profiles: dict[str, Any]) -> dict[str, Path]:
    files = plot_layer_bars(profiles, out_dir / "layer_weights")
    for h, p in profiles["alpha"].items():
        for group, g in p["class"].items():
            files.update(
                plot_class_heatmap(
                    g["mean"],
                    g["count"],
                    layer_names=profiles["layer_names"],
                    class_names=profiles["class_names"],
                    title=f"{h}: mean α by class ({group} test rows)",
                    stem=out_dir / f"{h}_class_{group}",
                )
            )
    return files
