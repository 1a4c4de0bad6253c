"""PNG figures of prune, early-exit and diagnose, drawn from their summaries (matplotlib's object API
with the Agg canvas: no pyplot state, no display).

* prune: ``prune_accuracy_vs_flops`` (test accuracy against the share of backbone FLOPs saved, one
  line per ranking, each shifted sideways by 1% of the axis so equal curves stay visible, 95%
  intervals over seeds, the chosen set starred, the random-ranking reference grey and dashed: per k
  the mean over its layer sets, drawn at the mean FLOPs they save), ``prune_accuracy_vs_k``,
  ``rankings`` (each ranking's scores, scaled to its maximum).
* early-exit: ``early_exit_accuracy_vs_compute`` (each rule's mean curve over seeds, random exit grey
  and dashed: the reference every rule is read against) and ``early_exit_accuracy_vs_depth``.
* diagnose: ``error_auroc`` (AUROC per score with its interval), and with a shift ``shift_profiles``
  (mean α per layer, both caches) and ``shift_by_class`` (class × layer mean α, both and the difference).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..compare.plots import layer_ticks
from ..files import write_with
from ..training.stats import counted

# How a reference (no information about the input) is drawn beside the rules: grey, dashed, beneath them.
REFERENCE: dict[str, Any] = {"color": "grey", "linestyle": "--", "linewidth": 1.5, "zorder": 1}


def _save(fig: Figure, path: Path) -> Path:
    write_with(path, partial(fig.savefig, format="png", dpi=110))
    return path


def _err(values: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Means and error bars of accuracies or AUROCs, drawn within [0, 1]: a t-interval over 2 seeds
    (±12.7 sd/√2) can reach −1.6 and stretch the axis until the points are flat; summary.json keeps it whole."""
    mean = np.array([v["mean"] for v in values], dtype=float)
    lo = np.array([np.nan if v.get("ci_low") is None else v["ci_low"] for v in values], dtype=float)
    hi = np.array([np.nan if v.get("ci_high") is None else v["ci_high"] for v in values], dtype=float)
    lo, hi = np.clip(lo, 0.0, None), np.clip(hi, None, 1.0)
    return mean, np.clip(np.nan_to_num(np.stack([mean - lo, hi - mean]), nan=0.0), 0.0, None)


def _random_ranking(ax: Any, s: dict[str, Any], x_key: str) -> None:
    """prune's random reference at each k < L (its intervals over seeds), joined to all layers at k = L."""
    rand = s.get("random_reference")
    if not rand or not rand.get("per_k"):
        return
    per_k = sorted(rand["per_k"], key=lambda e: e["k"])
    x = [float(e[x_key]) for e in per_k]
    values = [e["test_acc"] for e in per_k]
    every = s.get("all_layers_saved")
    if every is not None:  # k = L: every ranking keeps all layers
        x.append(float(len(s["cache"]["layer_names"]) if x_key == "k" else every[x_key]))
        values.append(s["reference"]["test_acc"])
    counts = sorted({len(e["sets"]) for e in per_k})  # layer sets averaged at each k: a range where it varies
    n = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    mean, err = _err(values)
    ax.errorbar(
        x, mean, yerr=err, marker="s", markersize=4, capsize=3, label=f"random ranking (mean of {n} sets)", **REFERENCE
    )


def prune_plots(out: Path, s: dict[str, Any]) -> list[Path]:
    paths = []
    for x_key, label, name in (
        ("flops_saved", f"share of backbone FLOPs saved ({s['costs']['source']})", "prune_accuracy_vs_flops"),
        ("k", "layers kept (k)", "prune_accuracy_vs_k"),
    ):
        fig = Figure(figsize=(6.4, 4.2), layout="constrained")
        ax = fig.add_subplot()
        ranked = [r for r in s["rankings"] if any(p["ranking"] == r for p in s["points"])]
        span = max([p[x_key] for p in s["points"]], default=1) - min([p[x_key] for p in s["points"]], default=0)
        for i, r in enumerate(ranked):
            pts = [p for p in s["points"] if p["ranking"] == r]
            # rankings that pick the same sets would hide each other: shift each a little sideways
            shift = (i - (len(ranked) - 1) / 2) * 0.01 * (span or 1.0)
            x = np.array([p[x_key] for p in pts], dtype=float) + shift
            mean, err = _err([p["test_acc"] for p in pts])
            ax.errorbar(x, mean, yerr=err, marker="o", capsize=3, label=r, alpha=0.85)
        _random_ranking(ax, s, x_key)
        c = s.get("chosen")
        if c:
            ax.plot(
                [c[x_key]],
                [c["test_acc"]["mean"]],
                marker="*",
                markersize=16,
                color="black",
                linestyle="none",
                label=f"chosen ({', '.join(c['found_by'])})",
            )
        ref = s["reference"]["test_acc"]["mean"]
        ax.axhline(ref, color="grey", linestyle=":", linewidth=1, label="all layers")
        ax.set_xlabel(label)
        if x_key == "k":  # a count of layers: no 1.5
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("test accuracy")
        bars = "one value per point, no interval" if len(s["seeds"]) == 1 else "bars: 95% t-intervals"
        ax.set_title(f"prune: {s['mode']}, {counted(len(s['seeds']), 'seed')} ({bars})")
        ax.legend(fontsize=8)
        paths.append(_save(fig, out / f"{name}.png"))
    fig = Figure(figsize=(6.4, 3.8), layout="constrained")
    ax = fig.add_subplot()
    names = s["cache"]["layer_names"]
    applied = {r: e for r, e in s["rankings"].items() if e["scores"] is not None}
    width = 0.8 / max(1, len(applied))
    for i, (r, e) in enumerate(applied.items()):
        v = np.array([e["scores"][n] for n in names], dtype=float)
        top = np.nanmax(np.abs(v)) if np.isfinite(v).any() else 1.0
        ax.bar(np.arange(len(names)) + i * width, np.nan_to_num(v / (top or 1.0)), width, label=r)
    layer_ticks(ax, names, np.arange(len(names)) + width * (len(applied) - 1) / 2)
    ax.set_ylabel("score ÷ its largest |score|")
    ax.set_title("layer rankings (higher = kept longer)")
    ax.legend(fontsize=8)
    paths.append(_save(fig, out / "rankings.png"))
    return paths


def early_exit_plots(out: Path, s: dict[str, Any], curves: list[dict[str, Any]]) -> list[Path]:
    paths = []
    for x_key, label, name in (
        ("compute_used", f"share of backbone FLOPs run ({s['costs']['source']})", "early_exit_accuracy_vs_compute"),
        ("mean_depth", "mean exit depth (layers)", "early_exit_accuracy_vs_depth"),
    ):
        fig = Figure(figsize=(6.4, 4.2), layout="constrained")
        ax = fig.add_subplot()
        for rule, entry in s["rules"].items():
            pts = sorted((c for c in curves if c["rule"] == rule), key=lambda c: (c[x_key], c["accuracy_mean"]))
            x = [c[x_key] for c in pts]
            y = [c["accuracy_mean"] for c in pts]
            area = entry["area_held_out"]["mean"]  # the area the verdicts read
            if rule == "random":  # the reference every rule is read against
                taken = "expectation" if s.get("random_reference") == "expectation" else "one draw per seed"
                ax.plot(
                    x, y, marker=".", label=f"random exit (reference, {taken}, held-out area {area:.4f})", **REFERENCE
                )
                continue
            style = ":" if rule.endswith("oracle") else "-"
            label = f"{rule} (held-out area {area:.4f})"
            ax.plot(x, y, marker="o" if rule == "fixed" else ".", linestyle=style, label=label)
        ax.set_xlabel(label)
        ax.set_ylabel("test accuracy")
        ax.set_title(
            f"early exit: {'one seed' if len(s['seeds']) == 1 else 'mean over ' + counted(len(s['seeds']), 'seed')}; "
            f"ε = {s['config']['epsilon']:g}"
        )
        ax.legend(fontsize=8)
        paths.append(_save(fig, out / f"{name}.png"))
    return paths


def diagnose_plots(out: Path, s: dict[str, Any]) -> list[Path]:
    paths = []
    fig = Figure(figsize=(6.4, 3.8), layout="constrained")
    ax = fig.add_subplot()
    errs = s["errors"]["auroc"]
    keys = list(errs)
    mean, err = _err([errs[k] for k in keys])
    ax.bar(range(len(keys)), mean, yerr=err, capsize=4, color=["grey" if k == "msp" else "tab:blue" for k in keys])
    ax.axhline(0.5, color="black", linestyle=":", linewidth=1)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(keys, rotation=20, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("AUROC (misclassified = positive)")
    ax.set_title(f"error detection ({s['errors']['interval']})")
    paths.append(_save(fig, out / "error_auroc.png"))
    if "shift" not in s:
        return paths
    names, sh = s["cache"]["layer_names"], s["shift"]["heads"][0]
    fig = Figure(figsize=(6.4, 3.8), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(names))
    ax.bar(x - 0.2, sh["mean_alpha_this"], 0.4, label=Path(s["cache"]["path"]).name)
    ax.bar(x + 0.2, sh["mean_alpha_other"], 0.4, label=Path(s["against"]["path"]).name)
    for j, p in enumerate(sh["permutation"]["p_fwer"]):
        top = max(sh["mean_alpha_this"][j], sh["mean_alpha_other"][j])
        ax.text(j, top, f"p={p:.3g}", ha="center", va="bottom", fontsize=7)
    layer_ticks(ax, names, x)
    ax.set_ylabel("mean α")
    ax.set_title(f"α profiles (first head); overall permutation p = {sh['permutation']['p_value']:.3g}")
    ax.legend(fontsize=8)
    paths.append(_save(fig, out / "shift_profiles.png"))
    classes = s["class_names"]
    per = sh["permutation"]["per_class"]
    a = np.array([c.get("mean_this", [np.nan] * len(names)) for c in per], dtype=float)
    b = np.array([c.get("mean_other", [np.nan] * len(names)) for c in per], dtype=float)
    fig = Figure(figsize=(11, 0.35 * len(classes) + 2.2), layout="constrained")
    for i, (m, title) in enumerate(((a, "this cache"), (b, "other cache"), (b - a, "other − this"))):
        ax = fig.add_subplot(1, 3, i + 1)
        lim = np.nanmax(np.abs(m)) if np.isfinite(m).any() else 1.0
        im = ax.imshow(
            m,
            aspect="auto",
            cmap="RdBu_r" if i == 2 else "viridis",
            vmin=-lim if i == 2 else 0,
            vmax=lim if i == 2 else None,
        )
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=90, fontsize=7)
        ax.set_yticks(range(len(classes)))
        ax.set_yticklabels(classes if i == 0 else [], fontsize=7)
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle("mean α by predicted class (first head)", fontsize=10)
    paths.append(_save(fig, out / "shift_by_class.png"))
    return paths
