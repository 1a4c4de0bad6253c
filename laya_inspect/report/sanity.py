"""The sanity checks of a compare summary (its "sanity", docs/METHOD.md "Sanity checks") for the
terminal (a short block per head, within 80 columns) and for report.html (one section); built from
summary.json alone, and a damaged "sanity" is refused in one CacheError line."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.text import Text

from ..errors import CacheError
from .across import rich_table
from .html import Cell, Section, Table, slug
from .reading import num

CHECKS = {"top": "top", "all": "all", "labels": "labels"}  # cascade steps, then the permuted-label head
WORD_STYLE = {"low": "green", "high": "yellow", "unclear": "yellow", "undefined": "dim"}


def _bad(where: str, what: str) -> CacheError:
    return CacheError(
        f"summary.json: {where} {what}, not a sanity check's record; rerun `laya-inspect compare` to rewrite it"
    )


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(where, "is not an object")
    return value


def _number(value: Any, where: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise _bad(where, f"is {value!r}")
    return value


def _comparison(c: Any, where: str) -> dict[str, Any]:
    c = _obj(c, where)
    for part in ("rank_correlation", "faithfulness"):
        d = _obj(c.get(part), f"{where}.{part}")
        for k in ("mean", "ci_low", "ci_high"):
            _number(d.get(k), f"{where}.{part}.{k}")
    if not isinstance(c.get("verdict"), str):
        raise _bad(f"{where}.verdict", "is missing")
    if c.get("trained_faithfulness") is not None:
        _number(_obj(c["trained_faithfulness"], f"{where}.trained_faithfulness").get("mean"), where)
    return c


def rows_of(head: dict[str, Any], where: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, check, comparison) in method order, each method's checks together; checked."""
    head = _obj(head, where)
    model = head.get("model")
    if not isinstance(model, list):
        raise _bad(f"{where}.model", "is not a list")
    data = _obj(head.get("data"), f"{where}.data")
    checks = [(str(_obj(s, f"{where}.model").get("step")), _obj(s.get("methods"), f"{where}.model")) for s in model]
    checks.append(("labels", _obj(data.get("methods"), f"{where}.data.methods")))
    methods = [m for m in head.get("methods") or [] if isinstance(m, str)]
    out = []
    for m in methods:
        for check, per_method in checks:
            if m in per_method:
                out.append((m, check, _comparison(per_method[m], f"{where}.{check}.{m}")))
    for k in ("accuracy", "real_accuracy", "chance", "near_chance_bound"):
        _number(data.get(k), f"{where}.data.{k}")
    return out


def _heads(summary: dict[str, Any]) -> list[tuple[str, list[tuple[str, str, dict[str, Any]]], str]]:
    """Per head: its name, its checked rows and the permuted-label head's line."""
    sanity = _obj(summary.get("sanity"), "sanity")
    _obj(sanity.get("choices"), "sanity.choices")
    kinds = {h.get("name"): h.get("kind") for h in summary.get("heads") or []}
    return [
        (name, rows_of(head, f"sanity.heads.{name}"), data_line(head["data"], str(kinds.get(name))))
        for name, head in _obj(sanity.get("heads"), "sanity.heads").items()
    ]


def check(summary: dict[str, Any]) -> None:
    """CacheError unless the summary's "sanity", if any, holds every field this module reads."""
    if "sanity" in summary:
        _heads(summary)


def _short(v: Any) -> str:
    text = num(v, 2, sign=True)
    return text.replace("0.", ".", 1) if text[1:].startswith("0.") else text


def _rank(c: dict[str, Any]) -> str:
    r = c["rank_correlation"]
    ci = "" if r.get("ci_low") is None else f" [{_short(r['ci_low'])},{_short(r['ci_high'])}]"
    return _short(r.get("mean")) + ci


def _profile(p: Any) -> str:
    return "/".join(num(v, 2) for v in p) if isinstance(p, list) else "—"


def data_line(data: dict[str, Any], kind: str) -> str:
    """The permuted-label head in one sentence: its accuracy beside chance and the real head's."""
    text = (
        f"permuted labels: accuracy {num(data.get('accuracy'), 3)} ({data.get('verdict')}: chance "
        f"{num(data.get('chance'), 3)}, near-chance bound {num(data.get('near_chance_bound'), 3)}); the real head "
        f"{num(data.get('real_accuracy'), 3)} ({data.get('real_verdict')}); {data.get('epochs_run')} of "
        f"{data.get('epochs')} epochs"
    )
    if data.get("weight_profile") is not None:
        weights = "mean α" if kind == "laya" else "mean weights"
        text += (
            f"; {weights} per layer {_profile(data['weight_profile'])}, the real head's "
            f"{_profile(data.get('real_weight_profile'))}"
        )
    return text


def legend(summary: dict[str, Any]) -> str:
    choices = _obj(_obj(summary.get("sanity"), "sanity").get("choices"), "sanity.choices")
    t = choices.get("threshold")
    return (
        f"sanity: ρ = mean per-row Spearman of the randomised head's attributions with the trained head's; low = "
        f"its 95% interval inside (−{t}, {t}), what a method that reads what the head learned should show; top = "
        f"the weights outside the adapters re-initialised (LAYA: scorer, ψ, output layer), all = the adapters too, "
        f"labels = a head fitted on permuted labels (≤ {choices.get('epochs')} epochs); faith = faithfulness ρ "
        f"against the trained head's LOLO effects, the trained method's beside it (seeds: init "
        f"{choices.get('init_seed')}, permutation {choices.get('permutation_seed')})."
    )


def terminal_block(summary: dict[str, Any]) -> list[RenderableType]:
    """Per head: a table of method × check (ρ with the trained attributions, verdict, faithfulness),
    the permuted-label head's line; then the legend. Nothing when the summary has no "sanity"."""
    if "sanity" not in summary:
        return []
    out: list[RenderableType] = []
    for name, rows, data_text in _heads(summary):
        table = rich_table(f"{name}: sanity (re-initialised weights, permuted labels)")
        for col in ("method", "check"):
            table.add_column(col, no_wrap=True)
        for col in ("ρ vs trained [95%]", "low?", "faith", "trained"):
            table.add_column(col, justify="right" if col != "low?" else "left", no_wrap=True)
        previous = None
        for m, check, c in rows:
            word = str(c["verdict"])
            table.add_row(
                m if m != previous else "",
                CHECKS.get(check, check),
                _rank(c),
                Text(word, style=WORD_STYLE.get(word, "")),
                _short(c["faithfulness"].get("mean")),
                _short((c.get("trained_faithfulness") or {}).get("mean")),
            )
            previous = m
        out.append(table)
        out.append(Text("  " + data_text, style="dim"))
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
                    Cell(CHECKS.get(check, check), "text"),
                    num(r.get("mean"), 2, sign=True),
                    "—" if r.get("ci_low") is None else f"[{num(r['ci_low'], 2)}, {num(r['ci_high'], 2)}]",
                    Cell(word, "best" if word == "low" else "text"),
                    num(c["faithfulness"].get("mean"), 2),
                    num((c.get("trained_faithfulness") or {}).get("mean"), 2),
                ]
            )
        tables.append(Table(f"sanity-{slug(name)}", cols, rows, f"{name}: {data_text}", text_columns=2))
    return Section("Sanity checks", tables, legend=legend(summary))
