"""Rich renderables for the terminal: the compare summary (built only from its ``summary.json``, so
``compare`` and ``report OUT_DIR`` print the same) and the cells of the fit-head table."""

from __future__ import annotations

import re
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ..compare.records import carried, compare_warnings, methods_tested, on_its_own, said_once
from ..compare.seeds import entry_rows
from ..training.stats import counted, percent
from .across import (
    REF_LABELS,
    SCORES,
    WORDS,
    groups,
    head_note,
    header,
    rich_table,
    seed_tables,
    short_ci,
    verdict_line,
    with_one_layer_line,
)
from .reading import (
    accuracy_notes,
    accuracy_text,
    compare_headline,
    gate_cell,
    layers_read,
    lead_head,
    num,
    one_seed_sentence,
    relied_on,
    sanity_failed,
    seeds_or_rows,
    seeds_sentence,
    tested_split,
    value,
    versus_groups,
    versus_level,
    vs_last_cell,
)
from .sanity import terminal_block as sanity_block
from .settings import compare_settings_line

BEST = "*"  # the best non-circular method of a head in a column (direction from summary["directions"])
CIRCULAR = "°"  # a (method, ablation) pair that cannot validate the method: never best
# detailed table column → summary key of the score (the same key names "best"); the first three are
# the headline scores whose paired differences to the constant rule the verdict reads (SCORES)
COLUMNS = {**SCORES, "subset ρ": "subset_faithfulness", "del": "deletion_area", "ins": "insertion_area"}


def _cell(text: str, best: bool, dim: bool = False) -> Text:
    style = "bold green" if best else ("dim" if dim else "")
    return Text(text + (BEST if best else ""), style=style)


def _best(head_or_ablation: dict[str, Any]) -> dict[str, list[str]]:
    """The stored "best" (withheld under a caveat), or for summaries written before it existed, the
    highest value per score."""
    if "best" in head_or_ablation:
        return head_or_ablation["best"] or {}
    from ..compare.scores import best as best_of  # scipy and torch: only when a table is drawn

    return best_of(head_or_ablation["methods"], {})


def _table(title: str, ablation_column: bool) -> Table:
    table = rich_table(title)
    if ablation_column:
        table.add_column("ablation", no_wrap=True)
    table.add_column("method", justify="left", no_wrap=True)
    for col in (*list(COLUMNS)[:3], *(() if ablation_column else ("95% CI",)), *list(COLUMNS)[3:]):
        table.add_column(header(col) if col in SCORES else col, justify="right", no_wrap=True)
    return table


def _add_rows(table: Table, entry: dict[str, Any], labels: list[Text] | None) -> None:
    """The methods of one ablation, then its references; ``labels`` fill the ablation column."""
    best = _best(entry)
    rows = entry_rows(entry, REF_LABELS)
    for i, (name, s, label, reference) in enumerate(rows):
        circular = bool(s.get("circular"))
        dim = "dim" if reference or circular else ""
        cells = {
            col: _cell(num(value(s, key)), not reference and name in best.get(key, []), dim=bool(dim))
            for col, key in COLUMNS.items()
        }
        lead = [labels[i] if i < len(labels) else Text("")] if labels is not None else []
        mid = []
        if labels is None:
            f = s["faithfulness"]
            ci = (
                f"[{num(f['ci_low'], lead=False)},{num(f['ci_high'], lead=False)}]"
                if f.get("ci_low") is not None
                else "—"
            )
            mid = [Text(ci, style=dim)]
        table.add_row(
            *lead,
            Text(label + (CIRCULAR if circular else ""), style=dim),
            *[cells[c] for c in list(COLUMNS)[:3]],
            *mid,
            *[cells[c] for c in list(COLUMNS)[3:]],
            end_section=labels is not None and i == len(rows) - 1,
        )


def head_table(summary: dict[str, Any], head: dict[str, Any]) -> Table:
    """Methods × scores of the head's first ablation, with the top-1-only and random references."""
    methods, lolo = head["methods"], head["lolo"]
    near = lolo.get("near_ties")
    ties = (
        f" · ties: all {percent(near['all_tied_share'])}, top {percent(near['top_tied_share'])}, "
        f"any {percent(near.get('any_tied_share'))}"
        if near
        else ""
    )
    # Oracle and random are properties of the head, not of a method: they go in the title, which
    # keeps the table inside an 80-column terminal.
    chance = (head.get("chance") or {}).get("chance")  # the accuracy's null, the majority class's share
    beside = f" (chance {num(chance, 3)})" if chance is not None else ""
    table = _table(
        f"{head['name']} ({head['kind']}) · accuracy {num(head['accuracy'], 3)}{beside} · n {head['n']} · "
        f"ablation {summary['ablation']}\nDeletion@1: oracle {num(lolo['oracle_at_1'], 3)}, "
        f"random layer {num(lolo['random_at_1'], 3)}{ties}",
        ablation_column=False,
    )
    _add_rows(table, head, None)
    caption = []
    undefined = [
        f"{m} {s['faithfulness']['n_valid']}/{s['faithfulness']['n_valid'] + s['faithfulness']['n_undefined']}"
        for m, s in methods.items()
        if s["faithfulness"].get("n_undefined")
    ]
    if undefined:
        caption.append("rows where ρ is defined: " + ", ".join(undefined))
    deltas = [f"{m} {s['ig_delta']['abs_mean']:.0e}" for m, s in methods.items() if s.get("ig_delta")]
    if deltas:
        caption.append("IG |δ| " + ", ".join(deltas))
    floor = ((head.get("references") or {}).get("random") or {}).get("subset_faithfulness") or {}
    if floor.get("mean") is not None:  # summed noise grows with |S| as the effects do: subset ρ's floor is not 0
        caption.append(f"subset ρ chance floor (the random reference's): {floor['mean']:.2f}")
    skipped = head.get("methods_skipped") or {}
    if skipped:
        caption.append("skipped: " + "; ".join(skipped.values()))
    if caption:
        table.caption, table.caption_justify = Text("\n".join(caption)), "left"
    return table


def versus_table(head: dict[str, Any]) -> Table | None:
    """Each method − the constant rule on the headline scores, under every ablation that ran: the
    paired difference with its interval over the same resampled rows, and the verdict."""
    groups = versus_groups(head)
    if not groups:
        return None
    many = groups[0][0] is not None
    table = rich_table(f"method − constant rule (paired over the same rows; {versus_level(groups)})")
    if many:
        table.add_column("ablation", no_wrap=True)
    table.add_column("method", no_wrap=True)
    for col in SCORES:
        table.add_column(header(col), justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    labels, lines = {key: col for col, key in SCORES.items()}, []
    for a, entry in groups:
        for k, (m, s) in enumerate(entry["methods"].items()):
            vs = s.get("vs_constant") or {}
            word = vs.get("verdict")
            style = "bold green" if word == "beats" else "yellow" if word in ("worse", "mixed") else "dim"
            table.add_row(
                *([Text(str(a) if k == 0 else "", style="bold")] if many else []),
                Text(m + (CIRCULAR if s.get("circular") else ""), style="dim" if s.get("circular") else ""),
                *[
                    Text(short_ci(vs.get(key)), style="dim" if word in ("circular", "withheld") else "")
                    for key in SCORES.values()
                ],
                Text(WORDS.get(str(word), str(word)), style=style),
            )
            if c := carried(vs, labels):  # one interval is enough to beat the rule: name the ones that do
                lines.append(f"{m}{f' ({a})' if many else ''} {WORDS.get(str(word), str(word))}: {c}")
    every = [(s.get("vs_constant") or {}).get("verdict") for _, e in groups for s in e["methods"].values()]
    lines = with_one_layer_line(lines, every, head_note(head))
    if lines:
        table.caption, table.caption_justify = Text("\n".join(lines)), "left"
    return table


def ablation_matrix(head: dict[str, Any]) -> Table:
    """Methods × ablations, one group of rows per ablation (its near-tie shares under its name)."""
    table = _table(f"{head['name']}: methods × ablations", ablation_column=True)
    for a, s in head["ablations"].items():
        near = (s.get("lolo") or {}).get("near_ties") or {}
        labels = [
            Text(a + ("!" if s.get("caveats") else ""), style="bold"),
            Text("ties " + "/".join(percent(near.get(f"{k}_tied_share")) for k in ("all", "top", "any")), "dim"),
        ]
        _add_rows(table, s, labels)
    return table


def _said_where(head: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    """(kind, text) → the ablations of ``head`` it is said under, each caveat or note once."""
    where: dict[tuple[str, str], list[str]] = {}  # the same text under several ablations is printed once
    for kind in ("caveats", "notes"):
        for a, s in (head.get("ablations") or {}).items():
            for text in s.get(kind) or []:
                where.setdefault((kind, text), []).append(a)
    return where


Shared = dict[tuple[str, str, tuple[str, ...]], list[str]]


def shared_caveats(heads: list[dict[str, Any]]) -> Shared:
    """Each caveat or note said of several heads under the same ablations (the seeds of one head on
    too few rows) → the heads, in order: :func:`caveat_lines` prints it once, under the first of them,
    naming them all. Said under other ablations of another head, it is that head's own line: the
    ablations named beside it are each head's."""
    said: Shared = {}
    for head in heads:
        for (kind, text), names in _said_where(head).items():
            said.setdefault((kind, text, tuple(names)), []).append(head["name"])
    return {key: names for key, names in said.items() if len(names) > 1}


def head_names(names: list[str]) -> str:
    """Heads in a label: the seeds of one head as "laya-seed_0, seed_1, seed_2"."""
    seeds = [re.fullmatch(r"(.+-)(seed_\d+)", n) for n in names]
    if len(names) > 1 and all(seeds) and len({m[1] for m in seeds if m}) == 1:
        return ", ".join([names[0], *(m[2] for m in seeds[1:] if m)])
    return ", ".join(names)


def caveat_lines(head: dict[str, Any], shared: Shared | None = None) -> list[Text]:
    """Why no method is marked best (caveats), circular pairs, and notes, per ablation; one said of
    several heads (``shared``, :func:`shared_caveats`) only under the first of them, naming them all."""
    out: list[Text] = []
    abls = head.get("ablations") or {}
    many, shared = len(abls) > 1, shared or {}
    for (kind, text), names in _said_where(head).items():
        heads = shared.get((kind, text, tuple(names)), [head["name"]])
        if heads[0] != head["name"]:
            continue  # said above, under the first head it applies to
        label = "; ".join([*([head_names(heads)] if len(heads) > 1 else []), *([", ".join(names)] if many else [])])
        out.append(Text(f"  {kind[:-1]}{f' ({label})' if label else ''}: {text}", style="yellow"))
    pairs = sorted({(m, a) for a, s in abls.items() for m in (s.get("circular") or {})})
    if pairs:
        shown = ", ".join(f"{m} × {a}" for m, a in pairs)
        out.append(Text(f"  {CIRCULAR} circular (never best): {shown}", style="dim"))
    return out


def relied_on_line(head: dict[str, Any], effect: str = "prob") -> Text | None:
    """report.html's sentence on the layer whose removal changes the prediction most, the name in bold."""
    said = relied_on(head, effect)
    return Text.assemble((head["name"], "bold"), said.removeprefix(head["name"])) if said else None


def one_seed_lines(summary: dict[str, Any]) -> list[RenderableType]:
    """Where a head's verdicts against the constant rule come from one fitted seed (no other seed of it
    compared), the terminal says so, as report.html's reading does: on MobileNetV2 seed 0 alone read
    "alpha beats" the rule, seeds 1 and 2 "worse" and "does not"."""
    across = summary.get("across_seeds") or {}
    grouped = {m for g in across.get("groups") or [] for m in g.get("members") or []}
    alone = [
        h["name"]
        for h in summary["heads"]
        if h["name"] not in grouped
        and any((s.get("vs_constant") or {}).get("verdict") for s in (h.get("methods") or {}).values())
    ]
    if not alone:
        return []
    return [Text("  note: " + one_seed_sentence("the verdicts above", ", ".join(alone)), "yellow")]


def tabled(summary: dict[str, Any]) -> list[str]:
    """The heads whose own tables the brief view keeps: each head compared on one seed, and the first
    seed of the first head read across seeds; the other seeds' scores are in the across-seed tables."""
    grouped = [g.get("members") or [] for g in groups(summary)]
    first = [grouped[0][0]] if grouped and grouped[0] else []
    return [h["name"] for h in summary["heads"] if h["name"] in first or not any(h["name"] in g for g in grouped)]


def build_report(summary: dict[str, Any], width: int = 100, brief: bool = False) -> list[RenderableType]:
    """The reading's headline (:func:`.reading.compare_headline`, after any sanity check that undoes it)
    and which seed it reads, then the header line, the settings line within ``width`` columns; per head
    its table (methods × scores, first ablation, references below), the methods × ablations matrix when
    several ran, caveats, relied-on layers; the legend. ``brief`` (the demo's view): the tables of the
    heads :func:`tabled` names, each other head's verdicts in one line, and a sanity line per head that
    passed every check."""
    cache = summary["cache"]
    # report.html's first sentence leads here too: α's ρ beside its nulls, not a table to find them in
    undone = [Text(line, "bold yellow") for line in sanity_failed(summary)]
    said_seed = seeds_sentence(summary, lead_head(summary), "The headline's numbers") if summary.get("heads") else []
    headline: list[RenderableType] = [Text(line, "bold") for line in compare_headline(summary)]
    headline += [Text(s, "dim") for s in said_seed]
    # right after the sentence it qualifies, as report.html's reading says it: after the tables it was read
    # as a footnote to them, the headline's verdict already taken
    alone = one_seed_lines(summary) if headline else []
    headline += alone
    header = Text.assemble(
        ("compare", "bold"),
        f": {summary['n']} {summary['split']} rows of {cache['path']} "
        f"(fingerprint {cache['fingerprint']}){layers_read(cache)}",
    )
    said = compare_warnings(summary)
    warned = warning_lines([w for of, w in said if of == "cache"])
    warned += warning_lines(said_once([w for of, w in said if of == "head"]), of="head")  # one line per warning
    warned += warning_lines([w for of, w in said if of == "compare"], of="compare")
    out: list[RenderableType] = [*undone, *headline, header, compare_settings_line(summary, width), *warned]
    left_out = summary.get("rows_left_out")
    if isinstance(left_out, dict) and left_out.get("n"):
        out.append(Text(f"  note: {left_out['n']} rows left out: {left_out.get('why', 'non-finite values')}", "yellow"))
    shared = shared_caveats(summary["heads"])
    shown = tabled(summary) if brief else [h["name"] for h in summary["heads"]]
    for head in summary["heads"]:
        if head["name"] not in shown:
            out += [line] if (line := verdict_line(head)) else []
        else:
            out += [head_table(summary, head), *filter(None, [versus_table(head)])]
            if len(head.get("ablations") or {}) > 1:
                out.append(ablation_matrix(head))
        out += caveat_lines(head, shared)
        out += [line] if (line := relied_on_line(head, summary.get("effect", "prob"))) else []
    out += seed_tables(summary, brief)  # heads with several seeds: mean and t-interval over seeds, caveats
    out += [] if alone else one_seed_lines(summary)
    dirs = summary["directions"]
    tol = summary.get("tie_tolerance")
    out.append(
        Text(
            f"{BEST} best of the head's non-circular methods: ahead of the runner-up (at 1 − 0.05/m, m the scores "
            "marked on: one family) and of the constant rule, "
            "both paired intervals above 0, the latter the one in the method − constant rule table ("
            f"{CIRCULAR} circular: the method is built from what "
            f"the ablation removes; ! an ablation with a caveat, nothing marked; ties all/top/any = rows whose "
            f"effects are all tied / whose top effect is / with any tie). top-layer agreement: "
            f"{dirs['top_layer_agreement']}; ρ = faithfulness ρ, "
            f"{dirs['faithfulness']}; subset ρ = subset faithfulness, the correlation over layer subsets; "
            "del / ins = deletion / insertion curve areas; top-1 only = a one-hot on the largest effect, the ρ "
            "that knowing only the top layer earns; "
            "constant = the constant rule, one layer profile for every input, fitted on the other half of the rows "
            "(two folds); random ref = the random reference, seeded uniform noise scored like a method; "
            "verdict: beats = an interval above 0 and none below, worse = the reverse, 'does not' = every "
            "interval includes 0, '= rule' = identical to the constant rule (same profile: the rule's scores on every "
            "row, its differences 0 by construction, no finding), n/a = not applicable "
            "(the head reads one layer, or none); "
            + on_its_own(methods_tested(summary["heads"]))
            + (f"; effects within {tol:g} count as tied" if tol is not None else "")
            + ".",
            style="dim",
        )
    )
    return out + sanity_block(summary, brief)  # nothing without "sanity" (--no-sanity, older summaries)


def fit_title(cache: Any, summary: dict[str, Any], n_seeds: int) -> str:
    """The fit table's title: the cache, the share of its layers the heads read, the split tested on, the seeds."""
    read = layers_read(summary.get("cache") or {})
    over = "95% t-interval" if n_seeds > 1 else "95% interval over the test rows"  # one seed: no t-interval
    return f"{cache}{read} — {tested_split(summary)}, {counted(n_seeds, 'seed')}, {over}"


def fit_table(summary: dict[str, Any], title: str) -> Table:
    """A fit-head summary's heads: accuracy with its 95% interval kept inside [0, 1], macro-F1, the
    paired difference to `last`, seeds and the gate; at 80 columns only the difference wraps."""
    table = rich_table(title)
    for col in ("head", "accuracy", "macro-F1", "Δ acc vs last", "seeds", "gate"):
        table.add_column(
            col, no_wrap=col in ("head", "seeds", "accuracy"), justify="left" if col == "head" else "right"
        )
    n_test = (summary.get("split") or {}).get("n_test")
    for h in summary["heads"]:
        acc, f1 = h.get("test_acc") or {}, h.get("test_macro_f1") or {}
        d = seeds_or_rows(h, "vs_last", (h.get("delta_vs_last") or {}).get("test_acc"))
        # Text, not markup: Rich drops "[n/a]" or "[uninformative at 3 seeds: …]" as an unknown style tag
        table.add_row(
            Text(h["head"]),
            Text(accuracy_text(acc, n_test)),
            Text(num(f1.get("mean"), 3)),
            Text(vs_last_cell(h, d)),
            Text(str(h.get("n"))),
            Text.from_markup(gate_cell(h, "[yellow]{}[/yellow]")),
        )
    if notes := accuracy_notes(summary["heads"], n_test):
        table.caption, table.caption_justify = Text("\n".join(notes)), "left"
    return table


def gate_lines(summary: dict[str, Any]) -> list[Text]:
    """The quality gate's references, then one line per warning (docs/METHOD.md, "Quality gate"): the
    text behind the fit table's "n warnings" cell, printed wherever that table is."""
    q = summary.get("quality") or {}
    probe = q.get("probe")
    ref = f"reference: chance {q['chance']:.3f} (majority class)" if q.get("chance") is not None else ""
    if probe:
        ref += " · " + probe_text(probe)
    ref += imbalance_text(q)
    lines = [Text(ref)] if ref else []
    lines += warning_lines((summary.get("cache") or {}).get("cache_warnings"))
    lines += warning_lines(summary.get("warnings"), of="fit-head")
    said: dict[str, list[str]] = {}  # the gate gives every head the same few-rows warnings: once each
    for h in summary["heads"]:
        for w in h.get("warnings") or []:
            said.setdefault(w, []).append(h["head"])
    lines += [Text.assemble(("warning", "yellow"), f" {', '.join(heads)}: {w}") for w, heads in said.items()]
    lines += [Text(f"note {h['head']}: {n}") for h in summary["heads"] for n in h.get("gate_notes") or []]
    return lines


def imbalance_text(quality: dict[str, Any]) -> str:
    """On imbalanced classes, the macro-F1 references the heads' macro-F1 is read against: always
    answering the majority class, and the reference probe; empty otherwise (and in older summaries)."""
    balance, f1 = quality.get("class_balance") or {}, quality.get("majority_macro_f1")
    if not balance.get("imbalanced") or f1 is None:
        return ""
    said = f" · imbalanced classes ({balance['smallest']!r} {percent(balance['smallest_share'])} of test rows): "
    said += f"macro-F1 {f1:.3f} always answering the majority class"
    probe = quality.get("probe") or {}
    if probe.get("reference_test_macro_f1") is not None:
        said += f", {probe['reference_test_macro_f1']:.3f} for the reference probe (on {probe['reference_layer']})"
    return said


def probe_text(probe: dict[str, Any]) -> str:
    """The single-layer probes a head is read against: the best by validation accuracy (on how many
    rows, tied with which layers), the last, and, from summaries that record it, the reference the
    gate held the heads to (docs/METHOD.md, "Quality gate")."""
    best = next(p for p in probe["layers"] if p["layer"] == probe["best_layer"])
    last = probe["layers"][-1]["layer"]
    if "reference_layer" not in probe:  # a summary from before the reference rule was recorded
        return (
            f"logistic probe on one layer, test accuracy: best {probe['best_layer']} {num(best.get('test_acc'), 3)}, "
            f"last {last} {num(probe.get('last_test_acc'), 3)}"
        )
    how = [f"picked on {probe['val_rows']} validation rows"] if probe.get("val_rows") is not None else []
    if probe.get("best_val_tied"):
        how.append(f"tied there with {', '.join(probe['best_val_tied'])}, the deeper layer taken")
    # the numbers are test accuracies: "best by validation X 0.720 (on 30 validation rows)" read as a validation score
    said = "logistic probe on one layer, test accuracy: best by validation "
    said += f"{probe['best_layer']} {num(best.get('test_acc'), 3)}"
    said += f" ({'; '.join(how)})" if how else ""
    if probe["best_layer"] != last:
        said += f", last {last} {num(probe.get('last_test_acc'), 3)}"
        said += f"; heads are read against {probe['reference_layer']} {num(probe.get('reference_test_acc'), 3)}"
        if "stronger" in probe.get("reference_rule", ""):  # the stronger of the picked and the last layer's
            said += ", the stronger of the two on the test split"
        said += "" if probe["reference_layer"] == last else " (last: against the last)"
    else:
        said += "; every head is read against it"
    return said


def warning_lines(warnings: Any, of: str = "cache") -> list[Text]:
    """One line per warning, saying what it is said of: "cache", what extract warned about the cache
    every number here comes from, "head", what is said of a head (fit-head's gate, another cache,
    its training rows), "fit-head", what fit-head said of its own options, or "compare", what compare
    said of its output folder."""
    return [Text.assemble(("warning", "yellow"), f" {of}: {w}") for w in warnings or []]
