"""Rich renderables for the terminal: the compare summary (built only from its ``summary.json``, so
``compare`` and ``report OUT_DIR`` print the same) and the cells of the fit-head table."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

BEST = "*"  # marks the best method of a head in a column (direction from summary["directions"])


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
    table = Table(
        title=f"{head['name']} ({head['kind']}) · accuracy {_num(head['accuracy'])} · n {head['n']} · "
        f"Del@1 oracle {_num(lolo['oracle_at_1'])}, random {_num(lolo['random_at_1'])}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for col in ("method", "ρ", "95% CI", "valid", "Del@1", "top-1", "IG |δ|"):
        table.add_column(col, justify="left" if col == "method" else "right", no_wrap=True)
    for m, s in methods.items():
        f = s["faithfulness"]
        ci = f"[{_num(f['ci_low'], '.2f')}, {_num(f['ci_high'], '.2f')}]" if f["ci_low"] is not None else "—"
        table.add_row(
            m,
            _cell(_num(f["mean"]), m in best["faith"]),
            ci,
            f"{f['n_valid']}/{f['n_valid'] + f['n_undefined']}",
            _cell(_num(d1[m]), m in best["d1"]),
            _cell(_num(agree[m], ".2f"), m in best["agree"]),
            _num(delta[m], ".0e"),
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
        ("compare", "bold"),
        f": {summary['n']} {summary['split']} rows of {cache['path']} "
        f"(fingerprint {cache['fingerprint']}) · target {summary['target']} · ablation {summary['ablation']} · "
        f"IG baseline {summary['baseline']} · seed {summary['seed']} · bootstrap {summary['config']['n_boot']}",
    )
    out: list[RenderableType] = [header]
    for head in summary["heads"]:
        out += [head_table(summary, head), relied_on_line(summary, head)]
    dirs = summary["directions"]
    out.append(
        Text(
            f"{BEST} best of the head's methods. ρ = faithfulness, {dirs['faithfulness']}; valid = rows "
            f"where ρ is defined; Del@1 = Deletion@1, {dirs['deletion_at_1']}; top-1 = "
            f"{dirs['top_layer_agreement']}; IG |δ|: {dirs['ig_delta_abs_mean']}.",
            style="dim",
        )
    )
    return out


def estimate(d: dict[str, Any] | None, digits: int = 4) -> str:
    if not d:
        return "—"
    std = "n/a" if d.get("std") is None else f"{d['std']:.{digits}f}"
    ci = "[n/a]" if d.get("ci_low") is None else f"[{d['ci_low']:.{digits}f}, {d['ci_high']:.{digits}f}]"
    return f"{d['mean']:.{digits}f} ± {std} {ci}"


def delta(d: dict[str, Any] | None, digits: int = 4) -> str:
    if not d:
        return "—"
    ci = "[n/a]" if d.get("ci_low") is None else f"[{d['ci_low']:+.{digits}f}, {d['ci_high']:+.{digits}f}]"
    return f"{d['mean']:+.{digits}f} {ci}"
