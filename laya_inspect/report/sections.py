"""The content of the page for each kind of folder: its tables, figures, commands and provenance,
built from the files the folder holds (folders.py) and nothing else but the cache's attributes."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..compare.config import CompareConfig
from ..compare.records import (
    FIT_SAID,
    NOT_APPLICABLE,
    VERDICTS,
    carried,
    compare_warnings,
    inapplicable_said,
    methods_tested,
    on_its_own,
    said_once,
)
from ..compare.seeds import entry_rows
from ..training.fit_config import FitConfig
from ..training.stats import counted, wilson
from .across import HEADLINE, PAGE_LABELS, seed_sections
from .classes import class_table
from .figures import Figure, accuracy_figure, compare_svg_figures, group_by_head, png_figure
from .folders import CompareFolder, DemoFolder, FitFolder
from .html import Cell, Section, Table, cache_facts, cli_line, slug
from .reading import (
    accuracy_notes,
    accuracy_text,
    bootstrap_text,
    compare_reading,
    demo_reading,
    f1_text,
    fit_reading,
    gate_cell,
    interval,
    layers_read,
    num,
    seeds_or_rows,
    sentence,
    tested_split,
    value,
    versus_groups,
    versus_level,
    vs_last_cell,
    with_ci,
)
from .sanity import html_section as sanity_section
from .settings import ONE_LINE, compare_settings_line, demo_settings_line, fit_settings_line, seeds_text

# column header → summary key of the score (the key that also names "best")
SCORES = {
    **HEADLINE,
    "subset faithfulness": "subset_faithfulness",
    "deletion area": "deletion_area",
    "insertion area": "insertion_area",
}


def _score_rows(entry: dict[str, Any], lead: list[str]) -> tuple[list[list[Cell | str]], list[str]]:
    """Rows of one ablation's methods then references; ``lead`` cells open each row (the ablation)."""
    best = entry.get("best") or {}
    rows: list[list[Cell | str]] = []
    classes = []
    for i, (name, s, label, reference) in enumerate(entry_rows(entry, PAGE_LABELS)):
        circular = bool(s.get("circular"))
        cells: list[Cell | str] = [Cell(lead[i] if i < len(lead) else "", "text")] if lead else []
        cells.append(Cell(label + (" °" if circular else ""), "text"))
        for col, key in SCORES.items():
            is_best = not reference and name in (best.get(key) or [])
            cells.append(Cell(num(value(s, key)) + (" *" if is_best else ""), "best" if is_best else ""))
            if col == "faithfulness ρ" and not lead:
                cells.append(interval(s.get("faithfulness"), 2, clip=False))
        rows.append(cells)
        classes.append("ref" if reference or circular else "")
    return rows, classes


def versus_table(head: dict[str, Any]) -> Table | None:
    """Each method − the constant rule on the headline scores (paired differences and intervals) and
    its verdict, under every ablation that ran (docs/METHOD.md, "The constant rule and paired
    differences")."""
    groups = versus_groups(head)
    if not groups:
        return None
    many = groups[0][0] is not None
    rows: list[list[Cell | str]] = []
    classes = []
    labels = {key: label for label, key in HEADLINE.items()}
    for a, entry in groups:
        for k, (m, s) in enumerate(entry["methods"].items()):
            vs = s.get("vs_constant") or {}
            word = str(vs.get("verdict"))
            style = "best text" if word == "beats" else "text"
            # one layer read or none: the note says which
            said = inapplicable_said(vs.get("note")) if word == NOT_APPLICABLE else VERDICTS.get(word, word)
            rows.append(
                [
                    *([Cell(str(a) if k == 0 else "", "text")] if many else []),
                    Cell(m + (" °" if s.get("circular") else ""), "text"),
                    *[with_ci(vs.get(key)) for key in HEADLINE.values()],
                    Cell(said + (f" ({c})" if (c := carried(vs, labels)) else ""), style),
                ]
            )
            classes.append("ref" if s.get("circular") else "")
    profile = (groups[0][1]["references"]["constant"] or {}).get("profile") or {}
    caption = (
        f"method − constant rule, paired over the same rows (bootstrap; {versus_level(groups)}); constant rule: "
        f"{profile.get('what', 'one layer profile')} over the other half of the rows, the same for every input, "
        f"cross-fitted in {profile.get('folds', 2)} "
        f"folds of {'/'.join(str(n) for n in profile.get('fold_sizes') or [])} rows (split seed "
        f"{profile.get('split_seed')})"
        + (", under every ablation that ran" if many else "")
        + f"; {on_its_own(methods_tested([head]))}"
    )
    columns = ["ablation"] * many + ["method", *HEADLINE, "verdict"]
    return Table(f"constant-{slug(head['name'])}", columns, rows, caption, classes, text_columns=1 + many)


def _level(d: dict[str, Any] | None) -> str:
    """ " (98.3%)": the level an interval of a lead's test was drawn at (the family's, or the verdict's),
    so "+0.03 [+0.00, +0.07]" is not read as a 95% interval; "" where it records none or has no interval."""
    if not d or d.get("ci_low") is None or not isinstance(d.get("confidence"), (int, float)):
        return ""
    return f" ({d['confidence']:.1%})".replace(".0%", "%")


def _notes(head: dict[str, Any]) -> list[str]:
    out = []
    abls = head.get("ablations") or {}
    for a, s in abls.items():
        out += [f"caveat ({a}): {c}" for c in s.get("caveats") or []]
        out += [f"note ({a}): {c}" for c in s.get("notes") or []]
        out += [f"° {m} × {a} is circular (never best): {why}" for m, why in (s.get("circular") or {}).items()]
    labels = {v: k for k, v in SCORES.items()}
    for key, t in (head.get("best_tests") or {}).items():  # a lead left unmarked, and why
        if t.get("marked") or key not in labels:
            continue
        const = t.get("vs_constant")
        out.append(
            f"no * for {labels[key]}: {t['leader']} − {t['runner_up']} {with_ci(t.get('vs_runner_up'))}"
            + _level(t.get("vs_runner_up"))
            + (f", {t['leader']} − constant rule {with_ci(const)}{_level(const)}" if const else "")
            # deletion and insertion areas have no constant rule's to lie above: one difference, not "both"
            + (" (both must lie above 0)" if const else " (it must lie above 0)")
        )
    out += [f"skipped: {why}" for why in (head.get("methods_skipped") or {}).values()]
    for m, s in (head.get("methods") or {}).items():
        f = s.get("faithfulness") or {}
        if f.get("n_undefined"):
            out.append(f"{m}: ρ is undefined on {f['n_undefined']} rows (all scores or all effects tied)")
        if s.get("ig_delta"):
            out.append(f"{m}: mean |completeness δ| {s['ig_delta']['abs_mean']:.1e}")
    return out


def compare_sections(summary: dict[str, Any]) -> list[Section]:
    sections = []
    dirs = summary.get("directions") or {}
    for head in summary["heads"]:
        lolo = head.get("lolo") or {}
        caption = (
            f"accuracy {num(head.get('accuracy'), 3)} on n = {head.get('n')} · Deletion@1 of the oracle "
            f"{num(lolo.get('oracle_at_1'), 3)}, of a random layer {num(lolo.get('random_at_1'), 3)}"
        )
        rows, classes = _score_rows(head, [])
        cols = ["method", *list(SCORES)[:3], "ρ 95% CI", *list(SCORES)[3:]]
        tables = [Table(f"scores-{slug(head['name'])}", cols, rows, caption, classes)]
        versus = versus_table(head)
        if versus is not None:
            tables.append(versus)
        abls = head.get("ablations") or {}
        if len(abls) > 1:
            rows, classes = [], []
            for a, s in abls.items():
                r, c = _score_rows(s, [a + (" (caveat)" if s.get("caveats") else "")])
                rows += r
                classes += c
            cols = ["ablation", "method", *SCORES]
            tables.append(
                Table(f"ablations-{slug(head['name'])}", cols, rows, "every ablation", classes, text_columns=2)
            )
        first = (head.get("ablations_run") or [summary.get("ablation")])[0]
        sections.append(Section(f"{head['name']} ({head['kind']}), {first} ablation", tables, notes=_notes(head)))
    sections += seed_sections(summary)  # heads with several seeds (docs/METHOD.md, "Across seeds")
    layers = summary["cache"]["layer_names"]
    cols, data = ["layer"], []
    for h in summary["heads"]:
        cols.append(f"{h['name']}: mean LOLO effect")
        data.append((h.get("lolo") or {}).get("mean_effect") or [])
        if "alpha" in (h.get("methods") or {}):
            cols.append(f"{h['name']}: mean α")
            data.append(h["methods"]["alpha"].get("mean_score") or [])
    rows = [[layer, *[num(d[i] if i < len(d) else None, 3) for d in data]] for i, layer in enumerate(layers)]
    legend = (
        "* best of the head's non-circular methods in that column: ahead of the runner-up (at 1 − 0.05/m, m the "
        "scores marked on: one family) and of the constant "
        "rule, both paired intervals above 0, the latter the one in the method − constant rule table; "
        "the constant rule is one layer profile for every input, fitted "
        "on the other half of the rows; ° circular: the method is built from what the "
        "ablation removes, so it cannot be validated by it; reference rows (grey) are not methods. "
        f"Top-layer agreement: {dirs.get('top_layer_agreement', 'higher is better')}. "
        f"Faithfulness ρ: {dirs.get('faithfulness', 'higher is better')}. Deletion / insertion areas: mean drop "
        f"/ kept {'target logit' if summary.get('effect') == 'logit' else 'probability'} over k = 1…L−1, higher "
        "is better. Definitions: docs/METHOD.md."
    )
    sections.append(
        Section("Mean leave-one-layer-out effect per layer", [Table("lolo-effects", cols, rows)], legend=legend)
    )
    sanity = sanity_section(summary)  # when compare ran them (docs/METHOD.md, "Sanity checks")
    return sections + ([] if sanity is None else [sanity])


def fit_sections(summary: dict[str, Any], runs: list[dict[str, Any]]) -> list[Section]:
    heads = summary["heads"]
    n_seeds = max(int(h.get("n") or 0) for h in heads)
    n_test = (summary.get("split") or {}).get("n_test")
    rows: list[list[Cell | str]] = []
    for h in heads:
        d = seeds_or_rows(h, "vs_last", (h.get("delta_vs_last") or {}).get("test_acc"))
        rows.append(
            [
                h["head"],
                accuracy_text(h.get("test_acc"), n_test),
                f1_text(h.get("test_macro_f1")),
                vs_last_cell(h, d),
                # "seed 0", not a bare "0" under "seeds" that read as no seed fitted
                seeds_text(h["seeds"]) if h.get("seeds") else counted(h.get("n"), "seed"),
                Cell(gate_cell(h), "text"),
            ]
        )
    cols = [
        "head",
        "test accuracy [95% CI]",
        "macro-F1 [95% CI]",
        "Δ accuracy vs last [95% CI]",
        "seeds fitted",
        "gate",
    ]
    read = layers_read(summary.get("cache") or {})
    seeds = counted(n_seeds, "seed")
    caption = f"{tested_split(summary)}{read}, {seeds}"
    if n_seeds != 1:  # one seed's accuracy interval is over the test rows, which its note says
        caption += "; intervals are 95% t-intervals over seeds"
    caption += "".join(f"; {note}" for note in accuracy_notes(heads, n_test, f1=True))
    sections = [Section("Heads", [Table("fit-heads", cols, rows, caption)])]
    if runs:
        keys = [
            ("seed", "seed", None),
            ("test accuracy", "test_acc", 4),
            ("macro-F1", "test_macro_f1", 4),
            ("val accuracy", "val_acc", 4),
            ("val loss", "val_loss", 4),
            ("epochs", "epochs_run", None),
            ("best epoch", "best_epoch", None),
            ("seconds", "seconds", 1),
        ]
        run_rows: list[list[Cell | str]] = [
            [str(r.get("head")), *[str(r.get(k)) if d is None else num(r.get(k), d) for _, k, d in keys]] for r in runs
        ]
        sections.append(Section("Runs", [Table("fit-runs", ["head", *[c for c, _, _ in keys]], run_rows)]))
    weighted = [h for h in heads if (h.get("layer_weights") or {}).get("pooled")]
    if weighted:
        layers = weighted[0]["layer_weights"]["layers"]
        cols = ["layer"]
        data = []
        for h in weighted:
            lw = h["layer_weights"]
            cols.append(f"{h['head']} (pooled)")
            data.append(lw["pooled"])
            for s, row in (lw.get("per_seed") or {}).items() if len(lw.get("per_seed") or {}) > 1 else []:
                cols.append(f"{h['head']} seed {s}")
                data.append(row)
        rows = [[layer, *[num(d[i], 3) for d in data]] for i, layer in enumerate(layers)]
        caption = f"mean weight per layer on the {tested_split(summary)} (α: per input, averaged)"
        sections.append(Section("Layer weights", [Table("fit-weights", cols, rows, caption)]))
    quality = summary.get("quality") or {}
    probe = quality.get("probe") or {}
    lines = []
    if quality.get("chance") is not None:
        lines.append(f"Chance (majority class of the {tested_split(summary)}): {num(quality['chance'], 3)}.")
    if probe.get("layers") and probe.get("best_layer"):
        from .terminal import probe_text

        lines.append(sentence(probe_text(probe)))
    tables = []
    if probe.get("layers"):
        f1 = any("test_macro_f1" in p for p in probe["layers"])  # absent in older summaries
        rows = [
            [p["layer"], num(p.get("val_acc"), 3), num(p.get("test_acc"), 3)] + [num(p.get("test_macro_f1"), 3)] * f1
            for p in probe["layers"]
        ]
        cols = ["layer", "val accuracy", "test accuracy"] + ["test macro-F1"] * f1
        tables.append(Table("fit-probe", cols, rows, probe.get("model") or "probe"))
    tables += class_table(heads, quality.get("class_balance"), tested_split(summary))
    notes = [f"{h['head']}: {w}" for h in heads for w in h.get("warnings") or []]
    lines += [f"{h['head']}: {n}." for h in heads for n in h.get("gate_notes") or []]
    if lines or tables or notes:
        sections.append(Section("Quality gate", tables, notes=notes, lines=lines))
    return sections


def compare_page_parts(f: CompareFolder, shown: Path, figures: bool) -> dict[str, Any]:
    s = f.summary
    cache = s["cache"]
    groups: list[tuple[str, list[Figure]]] = []
    if figures:
        names = [h["name"] for h in s["heads"]]
        if f.figures:
            groups = [(h, [png_figure(p) for p in ps]) for h, ps in group_by_head(f.figures, names).items()]
        else:
            groups = [(h["name"], compare_svg_figures(s, h)) for h in s["heads"]]
    command = cli_line(
        "compare",
        CompareConfig,
        s.get("config") or {},
        positional=s.get("head_dirs") or [h["dir"] for h in s["heads"]],
        extra=["--cache", cache["path"]],
        out=shown,
    )
    facts = [
        (
            "compare run by",
            f"laya-inspect {s.get('tool_version') or '(version not recorded)'} at {s.get('created_at')}",
        ),
        ("device", (s.get("config") or {}).get("device_resolved") or "not recorded"),
        ("cache", str(cache["path"])),
        *cache_facts(
            cache["path"],
            [
                ("cache fingerprint", str(cache.get("fingerprint"))),
                ("backbone", str(cache.get("model_spec"))),
                ("data", str(cache.get("data_spec"))),
            ],
            {**cache, "layer_names": cache.get("cache_layer_names") or cache.get("layer_names")},
        ),
        ("head directories", " · ".join(s.get("head_dirs") or [])),
        ("seed · bootstrap", f"{s.get('seed')} · {bootstrap_text(s)}"),
    ]
    subtitle = f"{s['n']} {s['split']} rows of {cache['path']}{layers_read(cache)}"
    return {
        "reading": compare_reading(s),
        "sections": compare_sections(s),
        "figures": groups,
        "commands": [("this compare run", command)],
        "provenance": facts,
        "subtitle": subtitle,
        "settings": str(compare_settings_line(s, ONE_LINE)),
    }


def fit_page_parts(f: FitFolder, shown: Path, figures: bool) -> dict[str, Any]:
    s = f.summary
    cache = s.get("cache") or {}
    groups: list[tuple[str, list[Figure]]] = []
    if figures:
        groups.append(("Accuracy", [accuracy_figure(s)]))
        by_head = group_by_head(f.figures, [h["head"] for h in s["heads"]])
        tested = tested_split(s)
        groups += [(h or "Layer weights", [png_figure(p, tested=tested) for p in ps]) for h, ps in by_head.items()]
    command = cli_line("fit-head", FitConfig, s.get("config") or {}, positional=[cache.get("cache_path")], out=shown)
    backbone = cache.get("backbone") or {}
    facts = [
        ("fit by", f"laya-inspect {s.get('tool_version') or '(version not recorded)'} on {s.get('device')}"),
        ("cache", str(cache.get("cache_path"))),
        *cache_facts(
            cache.get("cache_path"),
            [
                ("cache fingerprint", str(cache.get("cache_fingerprint"))),
                ("backbone", str(backbone.get("model_spec"))),
                ("weights sha256", str(backbone.get("weights_sha256") or "none")),
            ],
            {**(cache.get("cache_fingerprint_inputs") or {}), "config_defaults": cache.get("cache_config_defaults")},
        ),
        (
            "head hyper-parameters",
            ", ".join(f"{k}={'default' if v is None else v}" for k, v in (s.get("hparams") or {}).items()),
        ),
        ("rows", ", ".join(f"{k} {v}" for k, v in (s.get("split") or {}).items() if k.startswith("n_"))),
    ]
    heads = ", ".join(h["head"] for h in s["heads"])
    split = s.get("split") or {}
    return {
        "reading": fit_reading(s, f.profiles),
        "sections": fit_sections(s, f.runs),
        "figures": groups,
        "commands": [("this fit-head run", command)],
        "provenance": facts,
        "subtitle": f"heads {heads} on {cache.get('cache_path')} · {tested_split(s)} {split.get('n_test', '?')} rows",
        "settings": str(fit_settings_line(s, ONE_LINE) or ""),
    }


def gate_repeats(fit: dict[str, Any] | None, compare: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    """compare's lines that repeat a warning of fit-head's quality gate, each → (head, warning): in the
    demo compare reads the heads fit-head has just fitted, and carries each head's gate warnings over
    as "fit-head said of <head> (…/summary.json): <warning>", so the demo would say each one twice. Only
    lines compare still says after :func:`said_once` count: one it leaves out for its own is no repeat."""
    if not fit or not compare:
        return {}
    lines = [w for of, w in compare_warnings(compare) if of == "head"]
    kept = said_once(lines)
    out: dict[str, tuple[str, str]] = {}
    for h in fit.get("heads") or []:
        for w in h.get("warnings") or []:
            # the line's text about this head and warning, around the summary's path ("\0": not in a path)
            start, end = FIT_SAID.format(head=h["head"], summary="\0", warning=w).split("\0")
            if not any(k.startswith("fit-head said of ") and k.endswith(end) for k in kept):
                continue
            out.update({line: (h["head"], w) for line in lines if line.startswith(start) and line.endswith(end)})
    return out


def repeats_said(repeats: dict[str, tuple[str, str]]) -> str:
    """What the repeated gate warnings are, in a few words: "laya: seeds disagree; last, scalarmix:
    test sampling" (each warning's claim, its text up to the first ": ", with the heads it was said of)."""
    claims: dict[str, list[str]] = {}
    for head, w in repeats.values():
        heads = claims.setdefault(w.split(": ", 1)[0], [])
        heads += [head] * (head not in heads)
    return "; ".join(f"{', '.join(heads)}: {claim}" for claim, heads in claims.items())


def _backbone_acc(metrics: dict[str, Any]) -> str:
    """The backbone's test accuracy with the 95% Wilson interval of its test rows, as fit-head's tables give a
    one-seed head's: the one model trained has no interval over seeds, and a bare 0.9778 read as exact."""
    acc, n = metrics.get("test_acc"), metrics.get("n_test")
    if acc is None or not n:
        return num(acc, 4)
    low, high = wilson(float(acc) * n, int(n))
    return f"{num(acc, 4)} [{num(low, 4)}, {num(high, 4)}] (95% Wilson interval over its {n} test rows)"


def demo_page_parts(f: DemoFolder, shown: Path, figures: bool) -> dict[str, Any]:
    r = f.record
    steps = r.get("steps") or []
    rows: list[list[Cell | str]] = [
        [s.get("name", ""), Cell(s.get("title", ""), "text"), "—" if s.get("seconds") is None else num(s["seconds"], 1)]
        for s in steps
    ]
    steps_table = Table("demo-steps", ["step", "what", "seconds"], rows, r.get("budget_line", ""), text_columns=2)
    sections = [Section("Steps", [steps_table])]
    if f.backbone:
        sections[0].lines.append(
            f"Backbone ({r.get('model')}) with its own classifier: test accuracy {_backbone_acc(f.backbone)}, "
            f"macro-F1 {num(f.backbone.get('test_macro_f1'), 4)}."
        )
    groups: list[tuple[str, list[Figure]]] = []
    provenance = [
        (
            "demo run by",
            f"laya-inspect {r.get('tool_version') or '(version not recorded)'}; complete: {r.get('complete')}",
        ),
        ("dataset", f"{(r.get('dataset') or {}).get('spec')}: {(r.get('dataset') or {}).get('description')}"),
    ]
    subs: list[tuple[str, dict[str, Any]]] = []
    if f.fit is not None:
        subs.append(("heads", fit_page_parts(f.fit, shown / "heads", figures)))
    if f.compare is not None:
        subs.append(("compare", compare_page_parts(f.compare, shown / "compare", figures)))
    # compare's copy of a gate warning is said at the top of the page (the reading's warnings); the
    # gate's list points there instead of saying it again
    repeats = set(gate_repeats(f.fit.summary if f.fit else None, f.compare.summary if f.compare else None).values())
    for prefix, parts in subs:
        for gate in [x for x in parts["sections"] if prefix == "heads" and x.title == "Quality gate"]:
            said = [n for n in gate.notes if n in {f"{h}: {w}" for h, w in repeats}]
            if said:
                heads = ", ".join(dict.fromkeys(h for h, _ in repeats))
                gate.notes = [n for n in gate.notes if n not in said] + [
                    f"{heads}: {counted(len(said), 'warning')} of this gate, said at the top of the page "
                    '("fit-head said of …")'
                ]
        sections += [dataclasses.replace(s, title=f"{prefix}: {s.title}") for s in parts["sections"]]
        groups += [(f"{prefix}: {t}", figs) for t, figs in parts["figures"]]
        provenance += [(f"{prefix}: {k}", v) for k, v in parts["provenance"]]
    commands = [(f"{s.get('name')}", s.get("command", "")) for s in steps]
    reading = demo_reading(f.fit.summary if f.fit else None, f.compare.summary if f.compare else None)
    # what the demo said of its own folder (a leftover kept beside it) leads, as a command's warnings do
    reading.lead[:0] = [f"Warning: {w}." for w in r.get("warnings") or []]
    return {
        "reading": reading,
        "sections": sections,
        "figures": groups,
        "commands": commands,
        "provenance": provenance,
        "subtitle": f"{(r.get('dataset') or {}).get('description', '')} · {r.get('budget_line', '')}",
        "settings": str(demo_settings_line(r, ONE_LINE)),
    }


def said_above(fit: dict[str, Any], summary: dict[str, Any]) -> dict[str, Any]:
    """compare's summary as it is printed below fit-head's report (the demo, `report DEMO_DIR`): the
    fit-head gate warnings it carries over were printed under the accuracy table above, so one line
    points to them in their place. compare's summary.json and `report COMPARE_DIR` keep every line."""
    repeats = gate_repeats(fit, summary)
    if not repeats or "head_warnings" not in summary:  # a summary from before head_warnings: as written
        return summary
    n = len({w for _, w in repeats.values()})  # as the gate said them: one line for heads given the same
    verb = "applies" if n == 1 else "apply"
    pointer = f"fit-head's {counted(n, 'warning')} above ({repeats_said(repeats)}) {verb} to these heads too"
    lines = summary["head_warnings"]
    first = next(i for i, w in enumerate(lines) if w in repeats)
    kept = [*lines[:first], pointer, *(w for w in lines[first:] if w not in repeats)]
    return {**summary, "head_warnings": kept}
