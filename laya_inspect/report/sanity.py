"""The sanity checks of a compare summary (its "sanity", docs/METHOD.md "Sanity checks") for the
terminal (a short block per head, within 80 columns) and for report.html (one section); built from
summary.json alone, and a damaged "sanity" is refused in one CacheError line."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.text import Text

from ..compare.records import NOT_APPLICABLE, PARTLY, inapplicable_said, sanity_heads
from .across import rich_table, short_ci
from .html import Cell, Section, Table, slug
from .reading import num

WORD_STYLE = {"low": "green", "high": "yellow", "unclear": "yellow", PARTLY: "yellow"} | dict.fromkeys(
    ("undefined", "too few rows", "untested", "n/a", NOT_APPLICABLE), "dim"
)


def one_layer(rows: list[tuple[str, str, dict[str, Any]]]) -> bool:
    """Every check of a head is NOT_APPLICABLE: it reads one layer, so its ρ says nothing (ONE_LAYER)."""
    return bool(rows) and all(c["verdict"] == NOT_APPLICABLE for _, _, c in rows)


def _heads(summary: dict[str, Any]) -> list[tuple[str, list[tuple[str, str, dict[str, Any]]], str]]:
    """Per head: its name, its checked rows and the permuted-label head's line."""
    kinds = {h.get("name"): h.get("kind") for h in summary.get("heads") or []}
    return [
        (name, rows, data_line(head["data"], str(kinds.get(name))) + _seeds(head.get("seeds")) + _notes(rows))
        for name, head, rows in sanity_heads(summary)
    ]


def _notes(rows: list[tuple[str, str, dict[str, Any]]]) -> str:
    """What qualifies a row's verdict (a method with one profile for every row); a note every row shares
    (a head that reads one layer) said once."""
    if one_layer(rows) and len({c.get("note") for _, _, c in rows}) == 1:
        return f"; every check {inapplicable_said(rows[0][2].get('note'))}: {rows[0][2].get('note')}"
    return "".join(f"; {m} {check}: {c['note']}" for m, check, c in rows if c.get("note"))


def _seeds(drawn: Any) -> str:
    """A head's own seeds of the checks (summaries written before they were drawn per head have none)."""
    if not isinstance(drawn, dict):
        return ""
    return f"; seeds: init {drawn.get('init_seed')}, permutation {drawn.get('permutation_seed')}"


def _profile(p: Any) -> str:
    return "/".join(num(v, 2) for v in p) if isinstance(p, list) else "—"


def _real_bound(data: dict[str, Any]) -> str:
    """The real head's own bound beside "near chance" (chance + 1.96 SE over the rows), which the
    permuted head's near-chance bound printed before it is not (summaries written before: nothing)."""
    bound = data.get("real_above_bound")
    if data.get("real_verdict") != "near chance" or bound is None:
        return ""
    return f": not above {num(bound, 3)}, chance + 1.96 SE over the rows"


def data_line(data: dict[str, Any], kind: str) -> str:
    """The permuted-label head in one sentence: its accuracy beside chance and the real head's."""
    text = (
        f"permuted labels: accuracy {num(data.get('accuracy'), 3)} ({data.get('verdict')}: chance "
        f"{num(data.get('chance'), 3)}, near-chance bound {num(data.get('near_chance_bound'), 3)}); the real head "
        f"{num(data.get('real_accuracy'), 3)} ({data.get('real_verdict')}{_real_bound(data)}); "
        f"{data.get('epochs_run')} of {data.get('epochs')} epochs"
    )
    if data.get("weight_profile") is not None:
        weights = "mean α" if kind == "laya" else "mean weights"
        text += (
            f"; {weights} per layer {_profile(data['weight_profile'])}, the real head's "
            f"{_profile(data.get('real_weight_profile'))}"
        )
    return text


def legend(summary: dict[str, Any]) -> str:
    choices = summary["sanity"]["choices"]  # checked by _heads, which every caller runs first
    t = choices.get("threshold")
    if "init_seed" in choices:  # written before each head drew its own: one draw for every head
        seeds = f"seeds: init {choices.get('init_seed')}, permutation {choices.get('permutation_seed')}, every head"
    else:
        seeds = "seeds per head, drawn from --seed and the head's fit seed"
    return (
        f"sanity: ρ = mean per-row Spearman of the randomised head's attributions with the trained head's; low = "
        f"its 95% interval lies inside (−{t}, {t}) and holds 0 (the random reference's ρ) or stays within "
        f"±6/(L(L²−1)) (L ≥ 3), what a method that reads what the head learned should show; {PARTLY} = inside "
        f"(−{t}, {t}) but away from 0, not passed; top = "
        f"the weights outside the adapters re-initialised (LAYA: scorer, ψ, output layer), all = the adapters too, "
        f"labels = a head fitted on permuted labels (≤ {choices.get('epochs')} epochs); faith = faithfulness ρ "
        f"against the trained head's LOLO effects, the trained method's beside it ({seeds})."
    )


def _labels_near(data: dict[str, Any]) -> str:
    """The permuted-label head's accuracy beside chance and the bound it was read against: "near chance"
    alone reads 0.21 against 0.10 as a failure, while the bound (chance plus half the real head's gain
    over it) is far above."""
    bound = data.get("near_chance_bound")
    below = f", below its bound {num(bound, 3)}" if bound is not None else ""
    return f"permuted labels near chance ({num(data.get('accuracy'), 3)} vs chance {num(data.get('chance'), 3)}{below})"


def passed(name: str, rows: list[tuple[str, str, dict[str, Any]]], data: dict[str, Any]) -> Text | None:
    """A head with no check read high, in one line: how many checks read low, each other verdict with the
    checks it names (an unclear or partly kept one with its interval), the permuted-label head beside
    chance. None for a head whose table must be read: a check read high, or the permuted-label head is
    not near chance. The notes that qualify a verdict follow the lines (:func:`terminal_block`)."""
    if not rows or any(c["verdict"] == "high" for _, _, c in rows) or data.get("verdict") != "near chance":
        return None
    if one_layer(rows):  # no check passed or failed: said as such, not as "0 of 4 low"
        return Text(
            f"  {name}: {inapplicable_said(rows[0][2].get('note'))}, no check passed or failed; {_labels_near(data)}",
            style="dim",
        )
    said: dict[str, dict[str, list[str]]] = {}  # verdict → method → its checks
    for m, check, c in rows:
        ci = f" {short_ci(c['rank_correlation'])}" if c["verdict"] in ("unclear", PARTLY) else ""
        said.setdefault(str(c["verdict"]), {}).setdefault(m, []).append(check + ci)
    low = sum(map(len, said.pop("low", {}).values()))
    others = [
        f"{sum(map(len, by.values()))} {word} (" + "; ".join(f"{m} {', '.join(c)}" for m, c in by.items()) + ")"
        for word, by in said.items()
    ]
    return Text(
        f"  {name}: {low} of {len(rows)} low" + "".join(f", {o}" for o in others) + f"; {_labels_near(data)}",
        style="dim",
    )


def terminal_block(summary: dict[str, Any], brief: bool = False) -> list[RenderableType]:
    """Per head: a table of method × check (ρ with the trained attributions, verdict, faithfulness),
    the permuted-label head's line; then the legend. Nothing when the summary has no "sanity".
    ``brief`` (the demo's view): one line for a head that passed every check (:func:`passed`)."""
    if "sanity" not in summary:
        return []
    out: list[RenderableType] = []
    data = {name: head["data"] for name, head, _ in sanity_heads(summary)}
    titled = False  # the heads said in one line, under one title, each note once after them
    notes: dict[str, None] = {}
    for name, rows, data_text in _heads(summary):
        if brief and (line := passed(name, rows, data[name])) is not None:
            if not titled:
                out.append(Text("sanity (re-initialised weights, permuted labels):", style="bold"))
                titled = True
            out.append(line)
            if one_layer(rows):
                notes[f"  {inapplicable_said(rows[0][2].get('note'))}: {rows[0][2].get('note')}"] = None
            else:
                notes.update(dict.fromkeys(f"  {m} {c['verdict']}: {c['note']}" for m, _, c in rows if c.get("note")))
            continue
        table = rich_table(f"{name}: sanity (re-initialised weights, permuted labels)")
        for col in ("method", "check"):
            table.add_column(col, no_wrap=True)
        for col in ("ρ vs trained [95%]", "low?", "faith", "trained"):
            table.add_column(col, justify="right" if col != "low?" else "left", no_wrap=True)
        previous = None
        for m, check, c in rows:
            word = str(c["verdict"])
            word = "n/a" if word == NOT_APPLICABLE else word  # within 80 columns; the line below says why
            table.add_row(
                m if m != previous else "",
                check,
                short_ci(c["rank_correlation"]),
                Text(word, style=WORD_STYLE.get(word, "")),
                num(c["faithfulness"].get("mean"), sign=True, lead=False),
                num((c.get("trained_faithfulness") or {}).get("mean"), sign=True, lead=False),
            )
            previous = m
        out.append(table)
        out.append(Text("  " + data_text, style="dim"))
    out += [Text(n, style="dim") for n in notes]
    out.append(Text(legend(summary), style="dim"))
    return out


def html_section(summary: dict[str, Any]) -> Section | None:
    """report.html's "Sanity checks" section, or None when the summary has none."""
    if "sanity" not in summary:
        return None
    tables = []
    cols = ["method", "check", "ρ with trained", "95% CI", "verdict", "faithfulness ρ", "trained method's ρ"]
    for name, checked, data_text in _heads(summary):
        rows: list[list[Cell | str]] = []
        for m, check, c in checked:
            r = c["rank_correlation"]
            word = str(c["verdict"])
            rows.append(
                [
                    Cell(m, "text"),
                    Cell(check, "text"),
                    num(r.get("mean"), 2, sign=True),
                    "—" if r.get("ci_low") is None else f"[{num(r['ci_low'], 2)}, {num(r['ci_high'], 2)}]",
                    Cell(word, "best text" if word == "low" else "text"),
                    num(c["faithfulness"].get("mean"), 2),
                    num((c.get("trained_faithfulness") or {}).get("mean"), 2),
                ]
            )
        tables.append(Table(f"sanity-{slug(name)}", cols, rows, f"{name}: {data_text}", text_columns=2))
    return Section("Sanity checks", tables, legend=legend(summary))
