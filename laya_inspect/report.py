"""The terminal summary of a `compare` run, built only from its ``summary.json``.

``compare`` and ``report OUT_DIR`` render the same renderables, so a run can be re-read from files.
Nothing here prints: :func:`build_report` returns rich renderables for the CLI to print, and
:func:`csv_rows` flattens a summary into the long rows of ``summary.csv``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from .errors import CacheError, NotFoundError

BEST = "*"  # marks the best method of a head in a column (direction from summary["directions"])


def load_summary(out_dir: str | Path) -> dict[str, Any]:
    path = Path(out_dir) / "summary.json"
    if not path.exists():
        raise NotFoundError(f"no summary.json in {out_dir}; write one with `laya-inspect compare … --out {out_dir}`")
    try:
        summary = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise CacheError(f"{path} is not valid JSON ({e})") from None
    if summary.get("kind") != "laya-inspect-compare":
        raise CacheError(f"{path} is not a compare summary (kind {summary.get('kind')!r})")
    return summary


def _num(v: Any, fmt: str = ".3f") -> str:
    return "—" if v is None else format(v, fmt)


def _best(values: dict[str, Any], higher: bool) -> set[str]:
    known = {m: v for m, v in values.items() if v is not None}
    if len(known) < 2:
        return set()
    target = max(known.values()) if higher else min(known.values())
    return {m for m, v in known.items() if v == target}


def _cell(text: str, best: bool) -> Text:
    return Text(text + (BEST if best else ""), style="bold green" if best else "")


def head_table(summary: dict[str, Any], head: dict[str, Any]) -> Table:
    methods = head["methods"]
    faith = {m: s["faithfulness"]["mean"] for m, s in methods.items()}
    d1 = {m: s["deletion_at_1"] for m, s in methods.items()}
    agree = {m: s["top_layer_agreement"] for m, s in methods.items()}
    delta = {m: (s["ig_delta"] or {}).get("abs_mean") for m, s in methods.items()}
    best = {"faith": _best(faith, True), "d1": _best(d1, True), "agree": _best(agree, True)}
    lolo = head["lolo"]
    # Oracle and random are properties of the head, not of a method: they go in the title, which
    # keeps the table inside an 80-column terminal.
    table = Table(title=f"{head['name']} ({head['kind']}) · accuracy {_num(head['accuracy'])} · n {head['n']} · "
                        f"Del@1 oracle {_num(lolo['oracle_at_1'])}, random {_num(lolo['random_at_1'])}",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for col in ("method", "ρ", "95% CI", "valid", "Del@1", "top-1", "IG |δ|"):
        table.add_column(col, justify="left" if col == "method" else "right", no_wrap=True)
    for m, s in methods.items():
        f = s["faithfulness"]
        ci = f"[{_num(f['ci_low'], '.2f')}, {_num(f['ci_high'], '.2f')}]" if f["ci_low"] is not None else "—"
        table.add_row(
            m, _cell(_num(f["mean"]), m in best["faith"]), ci, f"{f['n_valid']}/{f['n_valid'] + f['n_undefined']}",
            _cell(_num(d1[m]), m in best["d1"]),
            _cell(_num(agree[m], ".2f"), m in best["agree"]), _num(delta[m], ".0e"),
        )
    skipped = head.get("methods_skipped") or {}
    if skipped:
        table.caption = "skipped: " + "; ".join(skipped.values())
        table.caption_justify = "left"
    return table


def relied_on_line(summary: dict[str, Any], head: dict[str, Any], top: int = 3) -> Text:
    ranked = head["lolo"]["most_relied_on"][:top]
    parts = ", ".join(f"{r['layer']} ({r['mean_effect']:+.3f})" for r in ranked)
    return Text.assemble((f"{head['name']}", "bold"), f": most relied-on layers by mean LOLO effect: {parts}")


def build_report(summary: dict[str, Any]) -> list[RenderableType]:
    """Header line, one table per head (methods × metrics, best per column marked), relied-on layers."""
    cache = summary["cache"]
    header = Text.assemble(
        ("compare", "bold"), f": {summary['n']} {summary['split']} rows of {cache['path']} "
        f"(fingerprint {cache['fingerprint']}) · target {summary['target']} · ablation {summary['ablation']} · "
        f"IG baseline {summary['baseline']} · seed {summary['seed']} · bootstrap {summary['config']['n_boot']}")
    out: list[RenderableType] = [header]
    for head in summary["heads"]:
        out += [head_table(summary, head), relied_on_line(summary, head)]
    dirs = summary["directions"]
    out.append(Text(f"{BEST} best of the head's methods. ρ = faithfulness, {dirs['faithfulness']}; valid = rows "
                    f"where ρ is defined; Del@1 = Deletion@1, {dirs['deletion_at_1']}; top-1 = "
                    f"{dirs['top_layer_agreement']}; IG |δ|: {dirs['ig_delta_abs_mean']}.", style="dim"))
    return out


def csv_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Long format: one row per number (head, method, scope, metric, value, direction, provenance)."""
    const = {"ablation": summary["ablation"], "target": summary["target"], "baseline": summary["baseline"],
             "split": summary["split"], "n": summary["n"], "seed": summary["seed"],
             "cache_fingerprint": summary["cache"]["fingerprint"]}
    layers, dirs = summary["cache"]["layer_names"], summary["directions"]
    rows: list[dict[str, Any]] = []

    def add(h: dict, method: str, scope: str, metric: str, value: Any, direction_key: str | None = None) -> None:
        rows.append({"head": h["name"], "head_dir": h["dir"], "kind": h["kind"], "method": method, "scope": scope,
                     "metric": metric, "value": value, "direction": dirs.get(direction_key or metric, ""), **const})

    for h in summary["heads"]:
        add(h, "", "all", "accuracy", h["accuracy"])
        lolo = h["lolo"]
        for ref in ("oracle", "random"):
            add(h, ref, "all", f"{ref}_at_1", lolo[f"{ref}_at_1"])
            for k, v in enumerate(lolo[f"{ref}_curve"], 1):
                add(h, ref, f"k={k}", "deletion_curve", v)
        for i, v in enumerate(lolo["mean_effect"]):
            add(h, "lolo", f"layer:{layers[i]}", "mean_effect", v)
        for m, s in h["methods"].items():
            f = s["faithfulness"]
            add(h, m, "all", "faithfulness", f["mean"])
            for key in ("ci_low", "ci_high"):
                add(h, m, "all", f"faithfulness_{key}", f[key], "faithfulness")
            for key in ("n_valid", "n_undefined"):
                add(h, m, "all", f"faithfulness_{key}", f[key], "")
            add(h, m, "all", "deletion_at_1", s["deletion_at_1"])
            add(h, m, "all", "deletion_at_1_over_oracle", s["deletion_at_1_over_oracle"], "deletion_at_1")
            add(h, m, "all", "top_layer_agreement", s["top_layer_agreement"])
            add(h, m, "all", "n_top_ties", s["n_top_ties"], "")
            if s["ig_delta"]:
                add(h, m, "all", "ig_delta_abs_mean", s["ig_delta"]["abs_mean"])
                add(h, m, "all", "ig_delta_abs_max", s["ig_delta"]["abs_max"], "ig_delta_abs_mean")
            for k, v in enumerate(s["deletion_curve"], 1):
                add(h, m, f"k={k}", "deletion_curve", v)
            for i, v in enumerate(s["mean_score"]):
                add(h, m, f"layer:{layers[i]}", "mean_score", v, "")
        pc = h["per_class"]
        for c, cname in enumerate(pc["classes"]):
            scope = f"class:{cname}"
            add(h, "", scope, "n", pc["n"][c], "")
            add(h, "oracle", scope, "oracle_at_1", pc["oracle_at_1"][c])
            add(h, "random", scope, "random_at_1", pc["random_at_1"][c])
            for i, layer in enumerate(layers):
                add(h, "lolo", f"{scope}|layer:{layer}", "mean_effect", pc["mean_effect"][c][i])
                if pc["mean_weights"] is not None:
                    add(h, "weights", f"{scope}|layer:{layer}", "mean_weight", pc["mean_weights"][c][i], "")
            for m, s in pc["methods"].items():
                add(h, m, scope, "faithfulness", s["faithfulness"][c])
                add(h, m, scope, "faithfulness_n_valid", s["n_valid"][c], "")
                add(h, m, scope, "faithfulness_n_undefined", s["n_undefined"][c], "")
                add(h, m, scope, "deletion_at_1", s["deletion_at_1"][c])
                add(h, m, scope, "top_layer_agreement", s["top_layer_agreement"][c])
    return rows
