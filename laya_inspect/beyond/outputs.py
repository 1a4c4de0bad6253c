"""What prune, early-exit and diagnose write into their output folders: summary.json (every number),
CSV tables for spreadsheets, plots/ (PNG) and, for prune, the chosen head directory; report.html (one
self-contained page: the reading, the tables, the plots, the command) is added by common.write_whole. Plain I/O."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ..files import write_csv, write_json
from ..head_dir import save_head
from ..heads import Head
from .common import estimate
from .rankings import layers_text


def _est(prefix: str, e: dict[str, Any] | None) -> dict[str, Any]:
    e = e or {}
    return {f"{prefix}_mean": e.get("mean"), f"{prefix}_ci_low": e.get("ci_low"), f"{prefix}_ci_high": e.get("ci_high")}


def _rows(r: dict[str, Any] | None) -> dict[str, Any]:
    """The test rows' own interval of a comparison (exit_verdicts.rows_interval), so a CSV reader sees
    why a verdict was withheld; empty cells where none was read."""
    r = r or {}
    keys = ("rows", "half_width", "ci_low", "ci_high", "withheld")
    return {f"test_rows_{k}" if k != "rows" else "test_rows": r.get(k) for k in keys}


def write_prune(
    out: Path, summary: dict[str, Any], chosen: tuple[Head, dict[str, Any]] | None, *, plots: bool
) -> list[Path]:
    files = [write_json(out / "summary.json", summary)]
    rows = [
        {
            "ranking": p["ranking"],
            "k": p["k"],
            "layers": layers_text(p),
            "deepest": p["deepest"],
            "params_saved": p["params_saved"],
            "flops_saved": p["flops_saved"],
            **_est("val_acc", p["val_acc"]),
            **_est("test_acc", p["test_acc"]),
            "within_max_drop": p["within_max_drop"],
        }
        for p in summary["points"]
    ]
    files.append(write_csv(out / "points.csv", rows))
    names = summary["cache"]["layer_names"]
    table = []
    for i, n in enumerate(names):
        row: dict[str, Any] = {"layer": n}
        for r, e in summary["rankings"].items():
            row[f"{r}_score"] = None if e["scores"] is None else e["scores"][n]
            row[f"{r}_rank"] = None if e["order"] is None else e["order"].index(n) + 1
        costs = summary["costs"]["after_layer"][i]
        row.update(params_after=costs["params_after"], flops_after=costs["flops_after"])
        table.append(row)
    files.append(write_csv(out / "rankings.csv", table))
    if summary["fits"]:
        fits = [{**f, "layers": " ".join(names[i] for i in f["layers"])} for f in summary["fits"]]
        files.append(write_csv(out / "fits.csv", fits))
    if chosen is not None:
        head, meta = chosen
        save_head(out / "head", head, meta=meta)
        files += [out / "head" / "config.json", out / "head" / "weights.pt"]
    if plots:
        from .plots import prune_plots

        files += prune_plots(out / "plots", summary)
    return files


def exit_curves(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Points of every seed pooled per (rule, step of its sweep): mean and interval over seeds."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        groups[p["rule"], p["step"]].append(p)
    rows = []
    for (rule, step), ps in groups.items():
        rows.append(
            {
                "rule": rule,
                "step": step,
                "threshold": ps[0]["threshold"],
                "epsilon": ps[0]["epsilon"],
                "seeds": len(ps),
                **_est("accuracy", estimate([p["accuracy"] for p in ps])),
                "mean_depth": float(np.mean([p["mean_depth"] for p in ps])),
                "compute_used": float(np.mean([p["compute_used"] for p in ps])),
            }
        )
    return rows


def write_early_exit(out: Path, summary: dict[str, Any], *, plots: bool) -> list[Path]:
    curves = exit_curves(summary["points"])
    files = [
        write_json(out / "summary.json", summary),
        write_csv(out / "points.csv", summary["points"]),
        write_csv(out / "curves.csv", curves),
        write_csv(
            out / "areas.csv",
            [
                {
                    "rule": r,
                    **_est("area_held_out", e["area_held_out"]),
                    **_est("area_in_sample", e["area_in_sample"]),
                    **_est("compute_overshoot", e["compute_overshoot"]),
                }
                for r, e in summary["rules"].items()
            ],
        ),
        write_csv(
            out / "comparisons.csv",
            [
                {
                    "comparison": k,
                    **_est("area_diff", v["area_diff"]),
                    **_est("area_diff_in_sample", v.get("area_diff_in_sample")),
                    **_rows(v.get("test_rows")),
                    "verdict": v["verdict"],
                }
                for k, v in summary["comparisons"].items()
            ],
        ),
        write_csv(out / "fits.csv", [{**f, "layers": len(f["layers"])} for f in summary["fits"]]),
    ]
    if plots:
        from .plots import early_exit_plots

        files += early_exit_plots(out / "plots", summary, curves)
    return files


def write_diagnose(out: Path, summary: dict[str, Any], *, plots: bool) -> list[Path]:
    files = [write_json(out / "summary.json", summary)]
    rows = []
    for h in summary["heads"]:
        for score in h["auroc"]:
            rows.append(
                {
                    "head_dir": h["head_dir"],
                    "score": score,
                    **_est("auroc", h["auroc"][score]),
                    "aupr": h["aupr"][score]["mean"],
                    "aupr_baseline": h["aupr_baseline"],
                    **_est("auroc_minus_msp", h["diff_vs_msp"].get(f"{score} − msp")),
                }
            )
    files.append(write_csv(out / "errors.csv", rows))
    names, classes = summary["cache"]["layer_names"], summary["class_names"]
    if "shift" in summary:
        layer_rows, class_rows = [], []
        for h, s in zip(summary["heads"], summary["shift"]["heads"]):
            perm = s["permutation"]
            for j, n in enumerate(names):
                layer_rows.append(
                    {
                        "head_dir": h["head_dir"],
                        "layer": n,
                        "mean_alpha_this": s["mean_alpha_this"][j],
                        "mean_alpha_other": s["mean_alpha_other"][j],
                        "diff": perm["diff"][j],
                        "p_raw": perm["p_raw"][j],
                        "p_fwer": perm["p_fwer"][j],
                    }
                )
            for c in perm["per_class"]:
                for j, n in enumerate(names):
                    class_rows.append(
                        {
                            "head_dir": h["head_dir"],
                            "class": classes[c["class"]],
                            "layer": n,
                            "n_this": c["n_this"],
                            "n_other": c["n_other"],
                            "mean_alpha_this": c["mean_this"][j] if "mean_this" in c else None,
                            "mean_alpha_other": c["mean_other"][j] if "mean_other" in c else None,
                            "class_p_value": c.get("p_value"),
                            "class_p_holm": c.get("p_holm"),
                        }
                    )
        files.append(write_csv(out / "shift_layers.csv", layer_rows))
        files.append(write_csv(out / "shift_by_class.csv", class_rows))
    if plots:
        from .plots import diagnose_plots

        files += diagnose_plots(out / "plots", summary)
    return files
