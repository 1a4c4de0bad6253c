"""The tables of a prune, early-exit or diagnose page, from its summary.json: each estimate with its
95% interval, the baseline rows without α beside α's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .html import Cell, Section, Table
from .reading import interval, num
from .reading_beyond import diff_text, outcome, same


def est(d: dict[str, Any] | None, digits: int = 4, clip: bool = True) -> str:
    if not d or d.get("mean") is None:
        return "—"
    return f"{num(d['mean'], digits)} {interval(d, digits, clip=clip)}"


def pct(v: Any) -> str:
    return "—" if v is None else f"{float(v):.1%}"


def _verdict_cell(d: dict[str, Any] | None, who: str = "α", sets: bool = False) -> Cell:
    """``who``: what the first term of the difference is ("first" for two rules without α); ``sets``:
    prune's rankings, whose differences are all 0 when they keep the same layer sets."""
    if sets and same(d):
        return Cell("same layer sets", "text")
    o = outcome(d)
    return Cell(
        {"better": f"{who} better", "worse": f"{who} worse", "no different": "no difference"}.get(o, "—"), "text"
    )


# -- prune ---------------------------------------------------------------------------------------


def prune_sections(s: dict[str, Any]) -> list[Section]:
    ref = s["reference"]["test_acc"]
    rows: list[list[Cell | str]] = []
    classes = []
    for name, entry in s["rankings"].items():
        if not entry["applies"]:
            rows.append([name, "—", "—", "—", "—", "—", Cell("does not apply", "text")])
            classes.append("ref")
            continue
        within = [p for p in s["points"] if p["ranking"] == name and p["within_max_drop"]]
        best = min(within, key=lambda p: p["k"]) if within else None
        d = (s["alpha_vs"].get(name) or {}).get("mean_test_acc_over_k_diff")
        rows.append(
            [
                name,
                str(best["k"]) if best else "—",
                pct(best["flops_saved"]) if best else "—",
                est(best["test_acc"]) if best else "—",
                est((s["per_ranking"].get(name) or {}).get("mean_test_acc_over_k")),
                "(α)" if name == "alpha" else diff_text(d),
                Cell("", "text") if name == "alpha" else _verdict_cell(d, sets=True),
            ]
        )
        classes.append("")
    cols = ["ranking", "smallest k", "FLOPs saved", "test acc there", "mean test acc over k < L", "α − ranking", ""]
    caption = (
        f"{s['mode']}, {len(s['seeds'])} seed(s), 95% t-intervals over seeds; all layers: test accuracy "
        f"{est(ref)}; smallest k: fewest layers whose mean validation accuracy is within --max-drop "
        f"{s['config']['max_drop']:g} of all layers'"
    )
    sections = [Section("Rankings against α", [Table("prune-rankings", cols, rows, caption, classes)])]

    pts: list[list[Cell | str]] = [
        [
            p["ranking"],
            str(p["k"]),
            Cell(" ".join(p["layers"]), "text"),
            pct(p["flops_saved"]),
            pct(p["params_saved"]),
            est(p["val_acc"]),
            est(p["test_acc"]),
            "yes" if p["within_max_drop"] else "no",
        ]
        for p in s["points"]
    ]
    cols = ["ranking", "k", "layers kept", "FLOPs saved", "params saved", "val acc", "test acc", "within"]
    sections.append(Section("Every layer set", [Table("prune-points", cols, pts, s["selection"], text_columns=1)]))

    names = s["cache"]["layer_names"]
    applied = [r for r, e in s["rankings"].items() if e["scores"] is not None]
    after = s["costs"]["after_layer"]
    layer_rows: list[list[Cell | str]] = []
    for i, n in enumerate(names):
        row: list[Cell | str] = [n]
        for r in applied:
            e = s["rankings"][r]
            rank = e["order"].index(n) + 1 if e["order"] else None
            row.append(f"{num(e['scores'][n], 3)} (#{rank})")
        row += [pct(after[i]["flops_after"] / s["costs"]["flops_total"]) if s["costs"].get("flops_total") else "—"]
        layer_rows.append(row)
    cols = ["layer", *[f"{r} score (rank)" for r in applied], "FLOPs after it"]
    how = "; ".join(f"{r}: {s['rankings'][r]['how']}" for r in applied)
    sections.append(Section("Layer scores", [Table("prune-layers", cols, layer_rows, how)]))
    return sections


# -- early exit ----------------------------------------------------------------------------------


def early_exit_sections(s: dict[str, Any]) -> list[Section]:
    rules = [
        [
            rule + (" (not realisable)" if rule.endswith("oracle") else ""),
            est(e["area"]),
        ]
        for rule, e in s["rules"].items()
    ]
    caption = f"{s['area']}; mean over {len(s['seeds'])} seed(s) with the 95% t-interval"
    comps: list[list[Cell | str]] = [
        [c, diff_text(v["area_diff"]), _verdict_cell(v["area_diff"], "α" if "alpha" in c else "first")]
        for c, v in s["comparisons"].items()
    ]
    sections = [
        Section(
            "Rules",
            [
                Table("exit-rules", ["rule", "area under accuracy–compute"], rules, caption),
                Table("exit-comparisons", ["comparison", "area difference", ""], comps, "paired over seeds"),
            ],
        )
    ]
    used = s.get("compute_used_by_depth") or {}
    mass = (s.get("alpha_mass") or {}).get("mean_beyond_depth") or {}
    oracle = (s.get("alpha_mass") or {}).get("oracle_mean_beyond_depth") or {}
    depth: list[list[Cell | str]] = [
        [
            f["layer"],
            str(f["depth"]),
            est(f["accuracy"]),
            pct(used.get(f["layer"])),
            num(mass.get(f["layer"]), 3),
            num(oracle.get(f["layer"]), 3),
        ]
        for f in s["fixed_depth"]
    ]
    cols = ["layer", "depth", "test accuracy (fixed exit)", "FLOPs run", "α mass beyond", "α mass beyond (full pass)"]
    sections.append(
        Section(
            "Fixed depth",
            [
                Table(
                    "exit-depths", cols, depth, "α mass beyond: mean over test rows, later layers at their train means"
                )
            ],
        )
    )
    return sections


# -- diagnose ------------------------------------------------------------------------------------


def diagnose_sections(s: dict[str, Any]) -> list[Section]:
    e = s["errors"]
    rows: list[list[Cell | str]] = []
    classes = []
    for score, auc in e["auroc"].items():
        d = e["diff_vs_msp"].get(f"{score} − msp")
        rows.append(
            [
                score,
                est(auc, 3),
                est(e["aupr"].get(score), 3),
                "(baseline)" if score == "msp" else diff_text(d, 3),
                Cell("", "text") if score == "msp" else _verdict_cell(d),
                Cell(s["scores"].get(score, ""), "text"),
            ]
        )
        classes.append("ref" if score == "msp" else "")
    base = ", ".join(num(h["aupr_baseline"], 3) for h in s["heads"])
    caption = f"positive = misclassified test row; intervals: {e['interval']}; AUPR of a random score: {base}"
    cols = ["score", "AUROC", "AUPR", "AUROC − msp", "", "what"]
    sections = [Section("Misclassification detection", [Table("diagnose-errors", cols, rows, caption, classes)])]
    heads: list[list[Cell | str]] = [
        [
            Cell("/".join(Path(h["head_dir"]).parts[-2:]), "text"),  # the full paths: provenance
            num(h["test_accuracy"], 4),
            str(h["n_errors"]),
            *[num(h["auroc"].get(k, {}).get("mean"), 3) for k in e["auroc"]],
        ]
        for h in s["heads"]
    ]
    sections[0].tables.append(
        Table("diagnose-heads", ["head", "test accuracy", "errors", *[f"AUROC {k}" for k in e["auroc"]]], heads)
    )
    if "shift" not in s:
        return sections
    pooled = s["shift"]["pooled"]
    shift_rows: list[list[Cell | str]] = []
    for score, auc in pooled["detect_auroc"].items():
        d = pooled["detect_diff"].get(f"{score} − msp")
        shift_rows.append(
            [score, est(auc, 3), "(baseline)" if score == "msp" else diff_text(d, 3), _verdict_cell(d) if d else ""]
        )
    caption = f"positive = a row of {s['against']['path']}; intervals: {pooled['interval']}"
    tables = [Table("diagnose-shift", ["score", "AUROC", "AUROC − msp", ""], shift_rows, caption)]
    first = s["shift"]["heads"][0]
    perm = first["permutation"]
    layers: list[list[Cell | str]] = [
        [
            n,
            num(first["mean_alpha_this"][j], 3),
            num(first["mean_alpha_other"][j], 3),
            num(perm["diff"][j], 3, sign=True),
            f"{perm['p_fwer'][j]:.3g}",
        ]
        for j, n in enumerate(s["cache"]["layer_names"])
    ]
    tables.append(
        Table(
            "diagnose-shift-layers",
            ["layer", "mean α (this)", "mean α (other)", "difference", "p (family-wise)"],
            layers,
            f"first head; accuracy {num(first['accuracy_this'], 4)} here, {num(first['accuracy_other'], 4)} on the "
            f"other cache; overall permutation p = {perm['p_value']:.3g}",
        )
    )
    return [*sections, Section("Shift", tables)]


SECTIONS: dict[str, Callable[[dict[str, Any]], list[Section]]] = {
    "prune": prune_sections,
    "early-exit": early_exit_sections,
    "diagnose": diagnose_sections,
}
