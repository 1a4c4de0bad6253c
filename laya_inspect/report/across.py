"""The across-seed scores of a compare summary (``summary["across_seeds"]``, docs/METHOD.md, "Across
seeds"): a compact terminal table per head with several seeds (80 columns), report.html's section,
and the caveats of seeds that disagree. Built only from summary.json."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table as RichTable
from rich.text import Text

from ..compare.records import NOT_APPLICABLE, ONE_LAYER, TESTED, VERDICTS, carried, inapplicable_said, on_its_own
from ..compare.seeds import (
    CONFIDENCE_SAID,
    CUT_SAID,
    REFERENCES,
    by_seed,
    difference_level,
    entry_rows,
    kept_verdict_over_seeds,
    named_estimates,
    ranged_note,
    seed_verdicts,
)
from ..training.stats import level
from .html import Cell, Section, Table, slug
from .reading import num, versus_groups, versus_pair, with_ci

# column → summary key of the headline score
HEADLINE = {  # the headline scores by docs/METHOD.md's names: report.html's column headers
    "top-layer agreement": "top_layer_agreement",
    "Deletion@1 ÷ oracle": "deletion_at_1_over_oracle",
    "faithfulness ρ": "faithfulness",
}
SCORES = {
    label.removeprefix("faithfulness "): key for label, key in HEADLINE.items()
}  # the terminal's: ρ, as METHOD.md
# the verdicts' short words in the terminal; "n/a" as the sanity checks' table, with a line saying why
WORDS = {"not shown": "does not", "identical": "= rule", NOT_APPLICABLE: "n/a"}
# the same verdicts in a line of words, where a cut "does not" read as a sentence cut short
LINE_WORDS = {"not shown": "does not beat the rule", "identical": "identical to the rule"} | {
    NOT_APPLICABLE: VERDICTS[NOT_APPLICABLE]
}


def one_layer_line(verdicts: list[Any], note: Any = None) -> str | None:
    """The line under a table with a NOT_APPLICABLE verdict (a head that reads one layer, or none: ``note``,
    the verdicts' own, says which), in the sanity checks' words; None without one. "every verdict" where
    all are; else "n/a =": the random reference keeps its verdict on a head that reads one layer."""
    if NOT_APPLICABLE not in verdicts:
        return None
    lead = "every verdict" if all(v == NOT_APPLICABLE for v in verdicts) else "n/a ="
    return f"{lead} {inapplicable_said(note)}: {note or ONE_LAYER}"


def with_one_layer_line(lines: list[str], verdicts: list[Any], note: Any = None) -> list[str]:
    """A table's caption lines with :func:`one_layer_line`: alone where every verdict is NOT_APPLICABLE,
    else after the lines."""
    why = one_layer_line(verdicts, note)
    if why is None:
        return lines
    return [why] if all(v == NOT_APPLICABLE for v in verdicts) else [*lines, why]


def head_note(head: dict[str, Any]) -> Any:
    """The note of a head's first NOT_APPLICABLE verdict against the constant rule (None without one)."""
    every = [
        s.get("vs_constant") or {}
        for e in [head, *(head.get("ablations") or {}).values()]
        for s in (e.get("methods") or {}).values()
    ]
    return next((vs.get("note") for vs in every if vs.get("verdict") == NOT_APPLICABLE), None)


# the terminal's tables: the 80-column per-head table has no room for "constant rule" and "random reference",
# so they abbreviate them (the legend says so); report.html and every sentence use REFERENCES' names
REF_LABELS = {"top1_only": "top-1 only", "random": "random ref", "constant": "constant"}
PAGE_LABELS = {r: label if "reference" in label else f"{label} (reference)" for r, label in REFERENCES.items()}


def header(label: str) -> str:
    """A score's name as a terminal column header, on two lines ("top-layer" over "agreement"): the
    numbers under it are narrower than the name."""
    return label.replace(" ", "\n", 1)


def groups(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return list((summary.get("across_seeds") or {}).get("groups") or [])


def group_note(summary: dict[str, Any], group: dict[str, Any]) -> Any:
    """:func:`head_note` of the first seed of ``group`` with one (None where the summary holds none)."""
    by_name = {h.get("name"): h for h in summary.get("heads") or []}
    return next((n for m in group.get("members") or [] if (n := head_note(by_name.get(m) or {}))), None)


def caveats(summary: dict[str, Any]) -> list[str]:
    return list((summary.get("across_seeds") or {}).get("caveats") or [])


def rich_table(title: str | Text) -> RichTable:
    """A terminal table as every summary prints one: title on the left, a rule under the header. A title
    is text, not markup: a head folder named "[run]" would otherwise vanish from it."""
    title = Text(title) if isinstance(title, str) else title
    return RichTable(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)


def fit_width(table: RichTable, console: Console) -> RichTable:
    """``table`` sized to the console so that no cell is cut to "…": each column at least as wide as its
    longest word, the rest of the width shared by how much more each column holds. Rich narrows a
    table too wide for the terminal by shrinking its widest columns below their longest word ("1
    (withheld)" read "1 (withhe…" in prune's table at 80 columns); where even the longest words do not
    fit side by side, the too-long words are broken across lines instead (nothing is dropped)."""
    options = console.options
    # a column's share of the width: what Rich adds to its content (padding) and between columns (the box)
    pad_left, pad_right = table.padding[3], table.padding[1]
    last = len(table.columns) - 1
    overhead = (2 if table.box and table.show_edge else 0) + (last if table.box else 0)
    for i in range(len(table.columns)):
        left = pad_left if i > 0 or table.pad_edge else 0
        right = pad_right if i < last or table.pad_edge else 0
        if table.collapse_padding and i > 0:
            left = max(0, left - pad_right)
        overhead += left + right
    room = console.width - overhead
    sizes = [[Measurement.get(console, options, cell) for cell in (k.header, *k.cells)] for k in table.columns]
    highs = [max(m.maximum for m in s) for s in sizes]
    words = [max(m.minimum for m in s) for s in sizes]  # each column's longest word
    lows = [h if k.no_wrap else w for k, h, w in zip(table.columns, highs, words)]
    if sum(highs) <= room:
        return table  # Rich gives every column all it holds
    # the unbreakable columns (a name, an estimate) may wrap between their words too, the one that gains most
    # first, so that a long cell (five seeds' verdicts) breaks before a method's name does
    for i in sorted(range(len(lows)), key=lambda i: words[i] - highs[i]):
        if sum(lows) <= room:
            break
        lows[i], table.columns[i].no_wrap = words[i], False
    if sum(lows) > room:
        for column in table.columns:
            column.overflow = "fold"
        return table
    spare, more = room - sum(lows), [h - lo for lo, h in zip(lows, highs)]
    shares = [spare * m // sum(more) for m in more]
    for column, low, share in zip(table.columns, lows, shares):
        column.width = low + share
    return table


def short_ci(d: dict[str, Any] | None, sign: bool = True) -> str:
    """Two decimals without the leading zero, signed unless ``sign`` is false: "+.03 [-.01,+.08]"."""
    if not d or d.get("mean") is None:
        return "—"
    mean, lo, hi = (num(d.get(k), sign=sign, lead=False) for k in ("mean", "ci_low", "ci_high"))
    return mean if d.get("ci_low") is None or d.get("ci_high") is None else f"{mean} [{lo},{hi}]"


def seed_cell(est: dict[str, Any] | None, sign: bool = False, each: bool = True) -> Text:
    """An estimate over seeds in a narrow cell: "mean±h" with h the half-width of the t-interval (just
    the mean when it has none; "mean [lo,hi]" when it was cut to the score's range), each seed's value
    dim below. compare's across-seed tables and the demo's α profile read alike."""
    est = est or {}
    shown = short_ci(est, sign)  # cut to the score's range, or no interval: the interval as it is
    if not est.get("clipped") and None not in (est.get("mean"), est.get("ci_low"), est.get("ci_high")):
        shown = f"{num(est['mean'], sign=sign, lead=False)}±{num((est['ci_high'] - est['ci_low']) / 2, lead=False)}"
    if not each:
        return Text(shown)
    per_seed = " ".join(num(v, sign=sign, lead=False) for v in est.get("values") or [])
    return Text.assemble(shown, "\n", (per_seed, "dim"))


def over_seeds(row: dict[str, Any]) -> str | None:
    """The row's verdict over the seeds (:func:`..compare.seeds.kept_verdict_over_seeds`: worked out again for
    a summary written before today's rule) where it is not the word every seed gives; else None."""
    verdicts = [str(v) for v in row.get("verdicts") or []]
    over = kept_verdict_over_seeds(row)
    return None if over is None or not verdicts or over == verdicts[0] else str(over)


def not_over_seeds(row: dict[str, Any]) -> str | None:
    """Where every seed's verdict is "beats" (or every one "worse", or "mixed") but the scores' mean differences
    to the constant rule over the seeds say another (:func:`over_seeds`), a line saying so: "not shown" where
    every interval holds 0, "mixed" where the scores disagree in sign; else None."""
    over = over_seeds(row)
    if over is None:
        return None
    verdicts = [str(v) for v in row.get("verdicts") or []]
    ests = {key: row.get(f"{key}_minus_constant") or {} for key in HEADLINE.values()}
    at = level(next((e for e in ests.values() if e.get("ci_low") is not None), None))
    each = f"{VERDICTS.get(verdicts[0], verdicts[0])} on each of the {len(verdicts)} seeds"
    if over == "not shown" and verdicts[0] != "mixed":
        side = "above" if verdicts[0] == "beats" else "below"
        return (
            f"{each}, but no score's mean difference over the seeds lies {side} 0 "
            f"(every {at} t-interval over the seeds includes 0): not shown for the head refitted with another seed"
        )
    why = carried({"verdict": over, **ests}, {k: label for label, k in HEADLINE.items()})
    said = "the scores disagree in sign" if over == "mixed" else f"it {VERDICTS.get(over, over)}"
    return f"{each}, but over the seeds {said}" + (f" ({why})" if why else "") + f" ({at} t-intervals over the seeds)"


def rivals(entry: dict[str, Any], method: str) -> list[tuple[str, dict[str, Any]]]:
    """The other methods ``method``'s ρ was read against over the seeds (the entry's ``vs_methods``), each
    pair once, with its ``verdict`` as :func:`.reading.versus_pair` reads it: those after ``method`` in the
    entry's order (b − a is a − b mirrored). [] where the summary
    holds none (written before, or a head that reads one layer)."""
    order = list(entry.get("methods") or {})
    after = order[order.index(method) + 1 :] if method in order else []
    pairs = [(r, versus_pair(entry, method, r)) for r in after]
    return [(r, d) for r, d in pairs if isinstance(d, dict) and d.get("mean") is not None]


# the verdict over the seeds beside the seeds' one word where it differs ("beats per seed, mixed"), short
# enough for an 80-column table: the line under the table says it in words
OVER_WORDS = {"not shown": ""}
PER_SEED_LINE = "per seed: each seed's own intervals give that verdict, the mean differences over the seeds do not"
OTHER_LINE = " (after the comma, the verdict they give)"


class Verdicts:
    """A verdict cell that breaks only between its seeds' verdicts, " / " between them: a column that
    never wraps cut five seeds' "does not / beats / …" to "…" at 80 columns (or, wrapped by Rich, split
    "does not" and, to make room, a method's name), and one that wraps between words lost which words
    were one verdict. It measures its longest verdict as its narrowest width, so :func:`fit_width` keeps
    the other columns whole and gives it the rest; where the whole line fits, it stays one line."""

    def __init__(self, said: list[str], style: str = "") -> None:
        self.parts = [w + " /" * (i < len(said) - 1) for i, w in enumerate(said)]
        self.style = style

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(max(map(cell_len, self.parts), default=0), cell_len(" ".join(self.parts)))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = [""]
        for part in self.parts:
            if lines[-1] and cell_len(f"{lines[-1]} {part}") > options.max_width:
                lines.append(part)
            else:
                lines[-1] = f"{lines[-1]} {part}".lstrip()
        yield Text("\n".join(lines), style=self.style, overflow="fold")


def _verdicts(row: dict[str, Any]) -> Verdicts:
    said = [WORDS.get(str(w), str(w)) for w in row.get("verdicts") or []]
    if len(set(said)) == 1:  # carried by other scores on another seed: the line under the table says which
        if over := over_seeds(row):  # each seed's word, another over the seeds: the line under the table says why
            other = OVER_WORDS.get(over, f", {over}")
            return Verdicts([f"{said[0]} per seed{other}"], "yellow")
        return Verdicts([f"{said[0]} (all)"], "bold green" if said[0] == "beats" else "dim")
    return Verdicts(said, "yellow")


def verdict_text(row: dict[str, Any], seeds: list[Any], words: dict[str, str], every: str) -> str:
    """An across-seed method row's verdicts in ``words`` with the scores that carry them, as the per-seed
    tables say them: "beats (every seed): on top-layer agreement; not on Deletion@1 ÷ oracle, faithfulness ρ"; seed
    by seed where they differ, in the verdict or in the scores that carry it. One interval is enough to
    beat the rule, so a bare "beats (all)" was read as beating it on every score."""
    said, carried = seed_verdicts(row, words), row.get("carried") or [""]
    if len(set(said)) > 1:
        return by_seed(seeds, said)
    first = str((row.get("verdicts") or ["—"])[0])
    return f"{words.get(first, first)} ({every})" + (f": {carried[0]}" if carried[0] else "")


def verdict_line(head: dict[str, Any]) -> Text | None:
    """A head's verdicts against the constant rule in one line, for a seed whose tables the demo leaves
    to the files: the across-seed table carries its scores, this line what its own intervals said
    (with the scores that carry a verdict, as the method − constant rule table's caption names them)."""
    said = []
    every = [(s.get("vs_constant") or {}).get("verdict") for _, e in versus_groups(head) for s in e["methods"].values()]
    if every and all(v == NOT_APPLICABLE for v in every):
        return Text.assemble(
            (head["name"], "bold"), f" − constant rule: every verdict {inapplicable_said(head_note(head))}"
        )
    for a, entry in versus_groups(head):
        words = []
        for m, s in entry["methods"].items():
            vs = s.get("vs_constant") or {}
            word = (
                inapplicable_said(vs.get("note"))
                if vs.get("verdict") == NOT_APPLICABLE
                else LINE_WORDS.get(str(vs.get("verdict")), str(vs.get("verdict")))
            )
            why = carried(vs, {key: col for col, key in SCORES.items()})
            words.append(f"{m}{'°' * bool(s.get('circular'))} {word}" + (f" ({why})" if why else ""))
        said.append((f"{a}: " if a is not None else "") + ", ".join(words))
    if not said:
        return None
    return Text.assemble((head["name"], "bold"), " − constant rule: " + "; ".join(said))


def cut_short(entry: dict[str, Any]) -> str | None:
    """:func:`ranged_note` without the t bounds (report.html gives them): which cells show an interval
    cut to its score's range."""
    named = named_estimates(entry, {key: col for col, key in SCORES.items()})
    cut = [name for name, est in named.items() if est.get("clipped")]
    if not cut:
        return None
    return f"across seeds: {CUT_SAID}: " + ", ".join(cut)


# what a " − ig" row under a method's holds: ρ alone, the one score read between two methods
VERSUS_LINE = (
    "− <method>: the method above minus that method, paired difference in ρ over the seeds, at the level of "
    "each seed's interval; its verdict over the seeds"
)


# a pair's verdict over the seeds of a group whose seeds' rankings a caveat withholds, in report.html
WITHHELD_SAID = "withheld: a caveat withholds every ranking"


def seed_tables(summary: dict[str, Any], brief: bool = False) -> list[RenderableType]:
    """Per head with several seeds, one table: each method's headline scores and its paired
    difference to the constant rule (mean ± 95% t half-width over seeds, each seed's value below but
    in the ``brief`` view), the constant rule's own scores, and the seeds' verdicts; then the caveats of
    seeds that disagree."""
    out: list[RenderableType] = []
    for g in groups(summary):
        at = difference_level(*(g.get("ablations") or {}).values())
        table = rich_table(
            f"across seeds: {g['head']} ({g['kind']}), seeds {', '.join(map(str, g['seeds']))}\n"
            f"mean ± t half-width over seeds, {CONFIDENCE_SAID}"
            + (f" ({at} for − constant, the verdicts' level)" if at != CONFIDENCE_SAID else "")
            + ("" if brief else "; below, each seed's value")
        )
        table.add_column("method", no_wrap=True)
        for col in SCORES:
            table.add_column(header(col), justify="right", overflow="fold")
        table.add_column("verdicts", no_wrap=True)  # each cell a Verdicts: broken between seeds where too wide
        abls, lines, per_seed = g.get("ablations") or {}, [], set()
        for a, entry in abls.items():
            if len(abls) > 1:
                table.add_row(Text(a, style="bold"))
            methods = entry.get("methods") or {}
            for m, row, label, reference in entry_rows(entry, REF_LABELS):
                if reference and m in methods:  # random: scored as a method already
                    continue
                dim = "dim" if reference or row.get("circular") else ""
                cells = [seed_cell(row.get(k), each=not brief) for k in SCORES.values()]
                table.add_row(Text(label + ("°" if row.get("circular") else ""), style=dim), *cells, "")
                if not reference:
                    where = f" ({a})" * (len(abls) > 1)
                    diffs = [seed_cell(row.get(f"{k}_minus_constant"), True, not brief) for k in SCORES.values()]
                    table.add_row(Text(" − constant", style="dim"), *diffs, _verdicts(row))
                    for r, est in rivals(entry, m):  # α − IG in ρ over the seeds: the other scores are not paired
                        word = est["verdict"]  # as versus_pair reads it
                        style = "bold green" if word == "better" else "yellow" if word == "worse" else "dim"
                        table.add_row(
                            Text(f" − {r}", style="dim"),
                            "",
                            "",
                            seed_cell(est, True, not brief),
                            Verdicts([word], style),
                        )
                    if any(row.get("carried") or []):  # the cell has no room for the scores that carry it
                        lines.append(f"{m}{where}: {verdict_text(row, g['seeds'], LINE_WORDS, 'all')}")
                    if note := not_over_seeds(row):
                        lines.append(f"{m}{where}: {note}")
                        per_seed.add(str(over_seeds(row)))
            if table.rows:
                table.rows[-1].end_section = len(abls) > 1
        if any(rivals(e, m) for e in abls.values() for m in e.get("methods") or {}):  # one line for every such row
            lines.insert(0, VERSUS_LINE)
        if per_seed:
            lines.insert(0, PER_SEED_LINE + OTHER_LINE * any(OVER_WORDS.get(o) != "" for o in per_seed))
        every = [
            v for e in abls.values() for row in (e.get("methods") or {}).values() for v in row.get("verdicts") or []
        ]
        lines = with_one_layer_line(lines, every, group_note(summary, g))
        if lines:
            table.caption, table.caption_justify = "\n".join(lines), "left"
        out.append(table)
        out += [Text(f"  {c}", style="dim") for c in map(cut_short if brief else ranged_note, abls.values()) if c]
    out += [Text(f"  caveat (seeds): {c}", style="yellow") for c in caveats(summary)]
    return out


def _html_cell(est: dict[str, Any] | None, sign: bool = False) -> str:
    if not est or est.get("mean") is None:
        return "—"
    return f"{with_ci(est, sign)}; {' / '.join(num(v, sign=sign) for v in est.get('values') or [])}"


VERSUS = "faithfulness ρ − other method"


def _versus_cell(pairs: list[tuple[str, dict[str, Any]]]) -> str:
    """A method's paired difference in ρ to each later method over the seeds: "− ig: +0.12 [−0.05, +0.29];
    each seed's value; no different over the seeds (97.5%)", rival after rival ("—" where it has none)."""
    said = [
        f"− {r}: {_html_cell(est, sign=True)}; "
        + (WITHHELD_SAID if est["verdict"] == "withheld" else f"{est['verdict']} over the seeds ({level(est)})")
        for r, est in pairs
    ]
    return "; ".join(said) or "—"


def _tested(entry: dict[str, Any]) -> int:
    """The methods of an across-seed ablation entry that some seed read against the constant rule with
    intervals: the rows of its table that can read a verdict no method has."""
    rows = (entry.get("methods") or {}).values()
    return sum(any(v in TESTED for v in row.get("verdicts") or []) for row in rows if not row.get("reference"))


def seed_sections(summary: dict[str, Any]) -> list[Section]:
    """report.html's "Across seeds" section per head with several seeds: one table per ablation."""
    out = []
    for g in groups(summary):
        tables = []
        seeds = ", ".join(map(str, g["seeds"]))
        cols = ["method", *HEADLINE, *[f"{c} − constant rule" for c in HEADLINE], "verdict per seed"]
        words = VERDICTS | {NOT_APPLICABLE: inapplicable_said(group_note(summary, g))}  # one layer, or none
        for a, entry in (g.get("ablations") or {}).items():
            rows: list[list[Cell | str]] = []
            classes = []
            versus = any(rivals(entry, m) for m in entry.get("methods") or {})
            for m, row, label, reference in entry_rows(entry, PAGE_LABELS):
                said = verdict_text(row, g["seeds"], words, "every seed") if row.get("verdicts") else "—"
                said += f"; {note}" if (note := not_over_seeds(row)) else ""
                rows.append(
                    [
                        Cell(label + " °" * bool(row.get("circular")), "text"),
                        *[_html_cell(row.get(k)) for k in HEADLINE.values()],
                        *[_html_cell(row.get(f"{k}_minus_constant"), sign=True) for k in HEADLINE.values()],
                        *([_versus_cell(rivals(entry, m) if not reference else [])] if versus else []),
                        Cell(said, "text"),
                    ]
                )
                classes.append("ref" if reference or row.get("circular") else "")
            head_cols = [*cols[:-1], VERSUS, cols[-1]] if versus else cols
            cut, at = ranged_note(entry), difference_level(entry)
            caption = (
                f"ablation {a}: mean over seeds {seeds} [two-sided t-interval, {CONFIDENCE_SAID}"
                + (
                    f"; {at} for a difference to the constant rule, the level of each seed's verdict"
                    * (at != CONFIDENCE_SAID)
                )
                + "]; then each seed's value"
            ) + (f"; {cut}" if cut else "")
            tables.append(Table(f"seeds-{slug(g['head'])}-{slug(a)}", head_cols, rows, caption, classes))
        notes = [c for c in caveats(summary) if c.startswith(f"{g['head']} (")]
        tested = max((_tested(entry) for entry in (g.get("ablations") or {}).values()), default=0)
        at = difference_level(*(g.get("ablations") or {}).values())
        levels = (
            f"c = {CONFIDENCE_SAID} for a score and each seed's own level for a difference ({at} to the constant "
            "rule), so that the verdict over the seeds is held to each seed's standard"
            if at != CONFIDENCE_SAID
            # a summary written before the differences were held to each seed's verdict's level
            else f"c = {CONFIDENCE_SAID} for a score and for a difference to the constant rule alike"
        )
        legend = (
            "Each head's headline scores, and each method's paired difference to the constant rule, per seed and "
            f"across seeds: the mean over seeds with the t-interval mean ± t((1+c)/2, S−1)·std/√S, {levels}. "
            "A verdict or a "
            f"best method that differs between seeds is a caveat; {on_its_own(tested)}. Definitions: docs/METHOD.md, "
            '"Across seeds".'
        )
        out.append(Section(f"Across seeds: {g['head']} ({g['kind']}), seeds {seeds}", tables, notes, legend=legend))
    return out
