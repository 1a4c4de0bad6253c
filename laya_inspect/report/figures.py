"""The page's figures, each one ``<img>`` whose source is a data URI inside the page: the PNG plots the
folder holds, or figures drawn here as SVG (the fit-head accuracy figure; a compare folder's figures
when it was written with --no-plots). Nothing is fetched when the page opens."""

from __future__ import annotations

import base64
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What each plot file shows, by the end of its name (compare plots/ and fit-head profiles/).
CAPTIONS: tuple[tuple[str, str], ...] = (
    (
        r"_profile$",
        "What each method says about each layer (left: mean score, normalised) beside the mean "
        "leave-one-layer-out effect of each layer (right).",
    ),
    (
        r"_ranks$",
        "Per input, each method's rank of a layer against the rank of its leave-one-layer-out effect; "
        "points on the diagonal agree.",
    ),
    (
        r"_deletion$",
        "Deletion@k (top-k layers removed) and insertion (only the top-k kept) in each method's "
        "order, with the oracle, top-1-only and random references.",
    ),
    (
        r"_lolo_by_class$",
        "Mean leave-one-layer-out effect by target class; one colour scale for every head of the run.",
    ),
    (
        r"_weights_by_class$",
        "Mean layer weight (α for LAYA) by target class, on the 0–1 scale of every weight heatmap.",
    ),
    (
        r"^layer_weights$",
        "Mean weight per layer on the {tested}, pooled over seeds; the error bars are the "
        "spread the legend names (over inputs or over seeds), not an uncertainty of the mean.",
    ),
    (r"_seeds$", "Each seed's mean weight per layer beside the pooled mean: seeds that disagree show here."),
    (r"_class_all_seed(\d+)$", "Mean α by class over all rows of the {tested}, for seed {0} alone."),
    (r"_class_all$", "Mean α by class over all rows of the {tested}, pooled over seeds."),
    (r"_class_correct$", "Mean α by class over the correctly classified rows of the {tested}, pooled over seeds."),
    (
        r"_class_incorrect$",
        "Mean α by class over the misclassified rows of the {tested}, pooled over seeds (empty cells: no such rows).",
    ),
)


@dataclass
class Figure:
    src: str  # data URI
    caption: str
    alt: str
    width_px: int | None = None  # SVG: the width to show it at (CSS pixels); PNG: its own


def caption_of(stem: str, tested: str = "test split") -> str:
    """The caption of a plot file by its name; ``tested``: the split its rows came from, as
    :func:`~laya_inspect.report.reading.tested_split` names the one fit-head tested on ("valid split")."""
    for pattern, text in CAPTIONS:
        m = re.search(pattern, stem)
        if m:
            return text.format(*m.groups(), tested=tested)
    return stem


def png_figure(path: Path, caption: str | None = None, tested: str = "test split") -> Figure:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return Figure(f"data:image/png;base64,{data}", caption or caption_of(path.stem, tested), path.stem)


def svg_figure(fig: Any, caption: str, alt: str) -> Figure:
    """A matplotlib Figure as an SVG data URI: its text kept as text, no date, ids that do not change
    from one run to the next."""
    import matplotlib

    from ..compare.plots import solve_layout

    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "laya-inspect"}):
        solve_layout(fig)
        fig.savefig(buf, format="svg", metadata={"Date": None})
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return Figure(f"data:image/svg+xml;base64,{data}", caption, alt, int(fig.get_figwidth() * 110))


def group_by_head(paths: list[Path], heads: list[str]) -> dict[str, list[Path]]:
    """Plot files under the head their name starts with (longest name first: "laya-2" before
    "laya"), the rest under ""; each group in the order the plots are meant to be read."""
    order = ("profile", "ranks", "deletion", "lolo_by_class", "weights_by_class", "seeds", "class_all", "class_")
    groups: dict[str, list[Path]] = {h: [] for h in ["", *heads]}
    for p in paths:
        owner = next((h for h in sorted(heads, key=len, reverse=True) if p.stem.startswith(f"{h}_")), "")
        groups[owner].append(p)

    def rank(p: Path) -> tuple[int, str]:
        return next((i for i, key in enumerate(order) if f"_{key}" in p.stem), len(order)), p.stem

    return {h: sorted(ps, key=rank) for h, ps in groups.items() if ps}


_DRAWN: dict[str, Figure] = {}  # accuracy figures drawn in this process, by their summary


def accuracy_figure(summary: dict[str, Any]) -> Figure:
    """Test accuracy per head: one dot per seed, the mean with its 95% t-interval (clipped to [0, 1]),
    chance and the best one-layer probe as lines. Drawn once per summary and process: the demo's
    report shows the figure fit-head's report has just drawn (≈ 0.2 s a drawing)."""
    key = json.dumps(summary, sort_keys=True, default=str)
    if key not in _DRAWN:
        _DRAWN.clear()  # one summary at a time is all a command reuses
        _DRAWN[key] = _draw_accuracy(summary)
    return _DRAWN[key]


def _draw_accuracy(summary: dict[str, Any]) -> Figure:
    import numpy as np
    from matplotlib.figure import Figure as MplFigure

    from ..compare.plots import head_color, wrap

    heads = summary["heads"]
    fig = MplFigure(figsize=(max(5.0, 1.3 * len(heads) + 2.5), 3.8), layout="constrained")
    ax = fig.subplots()
    for i, h in enumerate(heads):
        acc = h["test_acc"]
        color = head_color(h["head"])
        values = [v for v in acc.get("values") or [] if v is not None]
        if values:
            jitter = np.linspace(-0.12, 0.12, len(values)) if len(values) > 1 else np.zeros(1)
            ax.scatter(i + 0.18 + jitter, values, s=18, color=color, alpha=0.7, label="one seed" if i == 0 else None)
        mean = acc.get("mean")
        if mean is None:
            continue
        lo, hi = acc.get("ci_low"), acc.get("ci_high")
        err = None if lo is None or hi is None else [[mean - max(0.0, lo)], [min(1.0, hi) - mean]]
        ax.errorbar(
            [i], [mean], yerr=err, fmt="o", color=color, ms=7, capsize=4, lw=1.6,
            label="mean, 95% t-interval over seeds" if i == 0 else None,
        )  # fmt: skip
    quality = summary.get("quality") or {}
    probe = quality.get("probe") or {}
    shown = [v for h in heads for v in (h["test_acc"].get("values") or []) if v is not None]
    shown += [max(0.0, h["test_acc"]["ci_low"]) for h in heads if h["test_acc"].get("ci_low") is not None]
    # the probe the gate read the heads against (older summaries: the best by validation)
    ref_acc, ref_layer = probe.get("reference_test_acc"), probe.get("reference_layer")
    if ref_acc is None:
        ref_acc, ref_layer = probe.get("best_test_acc"), probe.get("best_layer")
    if ref_acc is not None:
        ax.axhline(ref_acc, color="grey", ls="--", lw=1, label=f"logistic probe on {ref_layer}")
        shown.append(ref_acc)
    # The axis spans the accuracies, not 0…1: differences of a point or two stay visible. Chance is
    # drawn when it falls inside that span, else named in the title.
    low = max(0.0, min(shown, default=0.0) - 0.05)
    ax.set_ylim(low, 1.005)
    chance = quality.get("chance")
    below = ""
    if chance is not None and chance >= low:
        ax.axhline(chance, color="grey", ls=":", lw=1, label="chance (majority class)")
    elif chance is not None:
        below = f"; chance {chance:.2f} lies below the axis"
    ax.set_xticks(range(len(heads)), [h["head"] for h in heads])
    ax.set_xlim(-0.6, len(heads) - 0.4)
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=7, loc="lower right")
    n = max(int(h.get("n") or 0) for h in heads)
    title = f"Test accuracy per head over {n} seed{'s' * (n != 1)}: dots are seeds, bars the 95% t-interval{below}"
    ax.set_title(wrap(title, fig.get_figwidth(), 10), fontsize=10)
    caption = (
        "Test accuracy of each head: one dot per seed; the error bar is the 95% t-interval of the mean over "
        "seeds (an uncertainty of the mean, clipped to [0, 1]), not the spread over inputs."
    )
    return svg_figure(fig, caption, "test accuracy per head")


def compare_svg_figures(summary: dict[str, Any], head: dict[str, Any]) -> list[Figure]:
    """The figures summary.json alone can draw, for a folder written without plots/."""
    from ..compare.plots import summary_figures

    figs = summary_figures(summary, head)
    return [svg_figure(f, caption_of(f"_{key}"), f"{head['name']} {key}") for key, f in figs.items()]
