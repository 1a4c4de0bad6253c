"""Formatting helpers and the report's tables (accuracy per head, controlled run, faithfulness, steps)."""

from __future__ import annotations

import math
import os
from typing import Any

import paper as P
from plans import CONTROLS, HEADS, Experiment

from .load import Ctx, load

HEAD_LABEL = {"last": "LastLayer", "laya": "LAYA", "concat": "Concat", "scalarmix": "ScalarMix"}
METHOD_ORDER = ("alpha", "ig", "gradcam", "static", "random")


def f4(x: Any, digits: int = 4, sign: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def est(d: dict | None, digits: int = 4) -> str:
    """'0.8834 ± 0.0046 [0.8777, 0.8891]' from a laya_inspect.stats Estimate dict."""
    if not d:
        return "—"
    s = f"{f4(d['mean'], digits)} ± {f4(d.get('std'), digits)}"
    if d.get("ci_low") is not None:
        s += f" [{f4(d['ci_low'], digits)}, {f4(d['ci_high'], digits)}]"
    return s


def describe(values: list[float]) -> dict:
    from laya_inspect.training.stats import describe as _describe

    return _describe(values).to_dict()


def paired(a: list[float], b: list[float]) -> dict:
    from laya_inspect.training.stats import paired_difference

    return paired_difference(a, b).to_dict()


def inside(d: dict | None, value: float) -> str:
    if not d or d.get("ci_low") is None:
        return "n/a (1 seed)"
    return "yes" if d["ci_low"] <= value <= d["ci_high"] else "**no**"


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def code(lines: list[str], lang: str = "bash") -> list[str]:
    return [f"```{lang}", *lines, "```"]


def rows_text(limit: Any) -> str:
    return "all rows" if limit is None else f"a seeded stratified subset of {limit:,} rows per split"


def val_text(mode: str, share: float) -> str:
    if mode == "last":
        return f"the last {share:.0%} of the training rows (`--val-mode last`, as the Keras notebook)"
    return (
        f"a seeded stratified {share:.0%} of the training rows (`--val-mode stratified`: the image folders "
        "list rows class by class, so the last rows would all be one class)"
    )


def joint_table(exp: Experiment, runs: dict[str, list[dict]], ref: dict) -> tuple[list[str], dict]:
    same = P.SAME_DATA[exp.name]
    rows, stats = [], {}
    last = {m["seed"]: m for m in runs.get("last", [])}
    for head in HEADS:
        rs = runs.get(head) or []
        if not rs:
            continue
        acc = describe([m["test_acc"] for m in rs])
        f1 = describe([m["test_macro_f1"] for m in rs])
        common = [m for m in rs if m["seed"] in last]
        delta = (
            paired([m["test_acc"] for m in common], [last[m["seed"]]["test_acc"] for m in common])
            if head != "last" and common
            else None
        )
        pm, ps = ref[head]
        ep = [m["epochs_run"] for m in rs]
        be = [m["best_epoch"] for m in rs]
        stats[head] = {
            "acc": acc,
            "f1": f1,
            "delta": delta,
            "paper": (pm, ps),
            "epochs_run": ep,
            "best_epoch": be,
            "capped": sum(1 for m in rs if m["best_epoch"] == m["epochs_run"] == exp.settings["epochs"]),
        }
        rows.append(
            [
                HEAD_LABEL[head],
                f"{pm:.4f} ± {ps:.4f}",
                est(acc),
                f4(acc["mean"] - pm, sign=True) if same else "n/a (other data)",
                inside(acc, pm) if same else "n/a",
                est(f1),
                "(baseline)"
                if head == "last"
                else (
                    f4(delta["mean"], sign=True)
                    + (
                        f" [{f4(delta['ci_low'], sign=True)}, {f4(delta['ci_high'], sign=True)}]"
                        if delta and delta.get("ci_low") is not None
                        else ""
                    )
                    if delta
                    else "—"
                ),
                " ".join(str(m["seed"]) for m in rs),
                f"{sum(ep) / len(ep):.1f} (best {sum(be) / len(be):.1f})",
            ]
        )
    paper_col = (
        f"paper acc ({P.PAPER_SEEDS} seeds)"
        if same
        else f"paper acc on {P.PAPER_ROW[exp.name].upper()} ({P.PAPER_SEEDS} seeds; other data)"
    )
    header = [
        "head",
        paper_col,
        "ours: acc mean ± std [95% CI]",
        "Δ ours − paper",
        "paper mean in our CI",
        "ours: macro-F1 mean ± std [95% CI]",
        "Δ acc vs LastLayer (paired) [95% CI]",
        "seeds",
        "epochs run (best epoch), mean",
    ]
    return (table(header, rows) if rows else ["(no joint runs found)"]), stats


def controls_table(exp: Experiment, runs: dict[str, list[dict]]) -> tuple[list[str], dict]:
    """The controlled run: per variant and head, mean accuracy and the difference to the main joint runs
    of the same seeds (paired), with the offset to the paper before and after."""
    controls = exp.paths.get("controls") or {}
    ref = P.TABLE1[P.PAPER_ROW[exp.name]]
    rows, info = [], {}
    heads = sorted({h for v in controls.values() for h, _ in v}, key=HEADS.index)
    for head in heads:
        base = {m["seed"]: m for m in runs.get(head, [])}
        seeds = sorted({s for v in controls.values() for h, s in v if h == head})
        have = [base[s]["test_acc"] for s in seeds if s in base]
        if have:
            rows.append(
                [
                    HEAD_LABEL[head],
                    "main joint runs (Keras-matched: glorot, ε = 1e-3, last 10%, CE on logits)",
                    " ".join(str(s) for s in seeds if s in base),
                    f4(sum(have) / len(have)),
                    "—",
                    f4(sum(have) / len(have) - ref[head][0], sign=True),
                ]
            )
        for variant, paths in controls.items():
            ms_ = [m for (h, _), p in sorted(paths.items()) if h == head and (m := load(p))]
            pairs = [(m["test_acc"], base[m["seed"]]["test_acc"]) for m in ms_ if m["seed"] in base]
            if not ms_:
                rows.append([HEAD_LABEL[head], f"`{variant}`", "not run", "—", "—", "—"])
                continue
            mean = sum(m["test_acc"] for m in ms_) / len(ms_)
            d = paired([a for a, _ in pairs], [b for _, b in pairs]) if pairs else None
            info[head, variant] = d
            ci = (
                f" [{f4(d['ci_low'], sign=True)}, {f4(d['ci_high'], sign=True)}]"
                if d and d.get("ci_low") is not None
                else ""
            )
            rows.append(
                [
                    HEAD_LABEL[head],
                    f"`{variant}`: {CONTROLS[variant][0]}",
                    " ".join(str(m["seed"]) for m in ms_),
                    f4(mean),
                    (f4(d["mean"], sign=True) + ci) if d else "—",
                    f4(mean - ref[head][0], sign=True),
                ]
            )
    if not rows:
        return [], {}
    header = [
        "head",
        "variant",
        "seeds",
        "test acc (mean)",
        "Δ vs main runs, paired by seed [95% CI]",
        "Δ vs paper mean",
    ]
    return table(header, rows), info


def frozen_table(summary: dict | None, runs: list[dict] | None, ref: dict | None) -> tuple[list[str], dict]:
    if not summary:
        return ["(no fit-head results found)"], {}
    rows, stats = [], {}
    by_head: dict[str, list[dict]] = {}
    for r in runs or []:
        by_head.setdefault(r["head"], []).append(r)
    for h in sorted(summary["heads"], key=lambda h: HEADS.index(h["head"]) if h["head"] in HEADS else 9):
        head = h["head"]
        acc, f1 = h["test_acc"], h["test_macro_f1"]
        delta = (h.get("delta_vs_last") or {}).get("test_acc")
        rr = by_head.get(head, [])
        ep = [r["epochs_run"] for r in rr]
        stats[head] = {"acc": acc, "f1": f1, "delta": delta}
        row = [HEAD_LABEL.get(head, head)]
        if ref:
            pm, ps = ref[head]
            row += [f"{pm:.4f} ± {ps:.4f}", est(acc), f4(acc["mean"] - pm, sign=True), inside(acc, pm)]
        else:
            row += [est(acc)]
        row += [
            est(f1),
            "(baseline)"
            if head == "last"
            else (
                f"{f4(delta['mean'], sign=True)}"
                + (
                    f" [{f4(delta['ci_low'], sign=True)}, {f4(delta['ci_high'], sign=True)}]"
                    if delta.get("ci_low") is not None
                    else ""
                )
                if delta
                else "—"
            ),
            h["seeds"] if isinstance(h["seeds"], str) else " ".join(map(str, h["seeds"])),
            f"{sum(ep) / len(ep):.1f}" if ep else "—",
        ]
        rows.append(row)
    header = ["head"]
    header += (
        [
            f"paper acc (joint, {P.PAPER_SEEDS} seeds)",
            "ours: acc mean ± std [95% CI]",
            "Δ ours − paper",
            "paper mean in our CI",
        ]
        if ref
        else ["acc mean ± std [95% CI]"]
    )
    header += ["macro-F1 mean ± std [95% CI]", "Δ acc vs LastLayer (paired) [95% CI]", "seeds", "epochs run, mean"]
    return table(header, rows), stats


def faith_rows(cmp: dict | None, protocol: str) -> tuple[list[list[Any]], dict]:
    rows: list[list[Any]] = []
    info: dict = {}
    if not cmp:
        return rows, info
    for h in sorted(cmp["heads"], key=lambda h: HEADS.index(h["kind"]) if h["kind"] in HEADS else 9):
        kind = h["kind"]
        lolo = h["lolo"]
        for m in [m for m in METHOD_ORDER if m in h["methods"]]:
            d = h["methods"][m]
            fa = d["faithfulness"]
            ci = f" [{f4(fa['ci_low'])}, {f4(fa['ci_high'])}]" if fa.get("ci_low") is not None else ""
            rows.append(
                [
                    protocol,
                    HEAD_LABEL.get(kind, kind),
                    f"`{m}`",
                    f4(fa["mean"]) + ci,
                    f"{fa['n_valid']}/{fa['n_undefined']}",
                    f4(d["deletion_at_1"]),
                    f4(d["deletion_at_1_over_oracle"], 2),
                    f4(d["top_layer_agreement"], 3),
                ]
            )
            info[(kind, m)] = {
                "faith": fa["mean"],
                "d1": d["deletion_at_1"],
                "d1_frac": d["deletion_at_1_over_oracle"],
                "agree": d["top_layer_agreement"],
            }
        rows.append(
            [
                protocol,
                HEAD_LABEL.get(kind, kind),
                "*oracle / random*",
                "—",
                "—",
                f"{f4(lolo['oracle_at_1'])} / {f4(lolo['random_at_1'])}",
                "1.00 / " + (f4(lolo["random_at_1"] / lolo["oracle_at_1"], 2) if lolo["oracle_at_1"] else "n/a"),
                "—",
            ]
        )
        info[(kind, "oracle")] = lolo["oracle_at_1"]
        info[(kind, "random_at_1")] = lolo["random_at_1"]
        info[(kind, "acc")] = h["accuracy"]
        info[(kind, "n")] = h["n"]
        info[(kind, "most_relied_on")] = lolo["most_relied_on"][0]["layer"] if lolo["most_relied_on"] else None
    return rows, info


FAITH_HEADER = [
    "protocol",
    "head",
    "method",
    "faithfulness (mean Spearman ρ) [95% bootstrap CI]",
    "valid/undefined rows",
    "Deletion@1",
    "Deletion@1 ÷ oracle",
    "top-layer agreement",
]


def step_table(exp: Experiment, ctx: Ctx, counted: set[str]) -> tuple[list[str], float]:
    """Steps of one experiment; a step shared with an earlier experiment (the CIFAR-10 unpacking) is listed
    but counted once, where it first appears."""
    rows, total, cmds, seen = [], 0.0, [], set()
    for st in exp.steps:
        if st.name in seen:
            continue
        seen.add(st.name)
        rec = ctx.record(st)
        if st.name in counted and rec is not None:
            rows.append(
                [
                    f"`{st.name}`",
                    (rec.get("title") or st.title) + " (shared; counted above)",
                    "—",
                    rec.get("status", "?"),
                ]
            )
            cmds.append(rec.get("cmd_str") or st.cmd_str)
            continue
        counted.add(st.name)
        if rec is None:
            rows.append([f"`{st.name}`", st.title, "—", "not run"])
            continue
        wall = rec.get("wall_s")
        total += wall or 0.0
        status = rec.get("status", "?")
        if status == "ok" and not ctx.runner.is_done(st):
            status = "**stale**: ran another command or read other inputs than this plan's"
            ctx.stale.append(st.name)
        rows.append([f"`{st.name}`", rec.get("title") or st.title, f"{wall:.1f}" if wall is not None else "—", status])
        cmds.append(rec.get("cmd_str") or st.cmd_str)
    out = table(["step", "what", "wall time (s)", "status"], rows)
    out += [
        "",
        f"Sum of step wall times: {total:.0f} s ({total / 60:.1f} min).",
        "",
        "<details><summary>Exact commands, in order (run from the repository root; every step ran with "
        "OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', '1')})</summary>",
        "",
        *code(cmds),
        "",
        "</details>",
    ]
    return out, total
