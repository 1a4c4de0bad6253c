"""report.html of a prune, early-exit or diagnose folder: one self-contained page (html.py's) that
leads with the plain reading (reading.py: α against its baseline without α, in numbers),
then the tables (each estimate with its 95% interval, each difference α is read by at its family's
level, reading.families_text; the baseline rows without α beside α's), the
folder's PNG plots inlined, the command that rebuilds the folder and the provenance. Built from
summary.json alone (and the cache's attributes when the cache is still there), so
:func:`write_beyond_report` can rebuild a page from a finished folder."""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..beyond.config import Budget, DiagnoseConfig, ExitConfig, PruneConfig
from ..beyond.scoring import (
    auroc_note,
    clipped_note,
    diff_cut_note,
    each_head_alone,
    errors_not_read,
    exit_cut_note,
    head_label,
    no_flops_note,
    no_spread,
    not_read_word,
    older_note,
    shift_not_read,
)
from ..compare.records import read_json
from ..errors import CacheError, NotFoundError
from ..options import command_line
from ..out_dir import with_run_notes
from ..training.stats import counted, percent, spec, tied
from . import page_lock, write_page
from .figures import Figure, png_figure
from .folders import pngs
from .html import Cell, Section, Table, cache_facts, cli_line, page
from .reading import (
    OVERSHOOT_LEGEND,
    READINGS,
    Reading,
    diff_text,
    est,
    families_text,
    held_out_areas,
    ks_text,
    num,
    outcome,
    same_sets,
    seeds_said,
)
from .settings import ONE_LINE, beyond_settings_line

BEYOND_KINDS = ("prune", "early-exit", "diagnose")

# What each plot shows, by its file name (laya_inspect/beyond/plots.py draws them).
CAPTIONS = {
    "prune_accuracy_vs_flops": "Test accuracy of the head refit on the top-k layers of each ranking against the "
    "share of backbone FLOPs the dropped layers would save; bars are 95% t-intervals over seeds, the star is the "
    "chosen layer set, the dotted line all layers; grey dashed: the random-ranking reference (at each k the mean "
    "over random layer sets of that size, drawn at the mean FLOPs they save).",
    "prune_accuracy_vs_k": "The same accuracies against the number of layers kept.",
    "rankings": "Each ranking's per-layer score, divided by its largest |score| (higher = kept longer).",
    "early_exit_accuracy_vs_compute": "Accuracy against the share of backbone FLOPs run, each rule swept over its "
    "threshold (mean over seeds); grey dashed: random exit, the reference every rule is read against (the same "
    "sweep with a uniform random score, at its expectation over the scores; one draw per seed in summaries "
    "without `random_reference`, as the table's caption says); dotted: the oracle rule, which needs every layer "
    "(a reference, not a rule).",
    "early_exit_accuracy_vs_depth": "The same sweeps against the mean exit depth.",
    "error_auroc": "AUROC of telling misclassified test rows from correct ones, per score, with its 95% interval; "
    "grey: max softmax probability, the baseline without α; dotted: chance (0.5).",
    "shift_profiles": "Mean α per layer on this cache's test rows and on the other cache's (first head), with the "
    "permutation p-value of each layer's difference (family-wise corrected).",
    "shift_by_class": "Mean α by predicted class on both caches and their difference (first head).",
}
ORDER = tuple(CAPTIONS)


def beyond_kind(summary: Any) -> str | None:
    """ "prune", "early-exit" or "diagnose" for a summary those commands wrote, else None."""
    kind = summary.get("command") if isinstance(summary, dict) else None
    return kind if kind in BEYOND_KINDS else None


def _figures(folder: Path, one: bool = False) -> list[Figure]:
    """The folder's plots with their captions; ``one``: a run of one seed, whose points are that seed's
    values with no bars (the captions speak of intervals and means over seeds)."""
    paths = sorted(pngs(folder / "plots"), key=lambda p: ORDER.index(p.stem) if p.stem in ORDER else len(ORDER))
    said = " One seed here: each point is its one value, with no interval (no bars) and no mean over seeds."
    captions = {stem: c + (said if one and stem != "rankings" else "") for stem, c in CAPTIONS.items()}
    return [png_figure(p, captions.get(p.stem)) for p in paths]


def _budget_flags(budget: dict[str, Any]) -> list[str]:
    fields = {f.name for f in dataclasses.fields(Budget)}
    try:
        return command_line("x", Budget(**{k: v for k, v in budget.items() if k in fields}))[2:]
    except (TypeError, ValueError):
        return []


def _rebuild(s: dict[str, Any], kind: str, shown: Path) -> str:
    """The command line that rewrites the folder, from the config and inputs its summary records."""
    extra = ["--cache", s["cache"]["path"]]
    if kind == "diagnose":
        extra += ["--against", s["against"]["path"]] if s.get("against") else []
        heads = [h["head_dir"] for h in s["heads"]]
    else:
        extra += ["--scalarmix", s["scalarmix_dir"]] if kind == "prune" and s.get("scalarmix_dir") else []
        extra += _budget_flags(s.get("budget") or {})
        heads = [s["head_dir"]]
    config = {"prune": PruneConfig, "early-exit": ExitConfig, "diagnose": DiagnoseConfig}[kind]
    return cli_line(kind, config, s.get("config") or {}, positional=heads, extra=extra, out=shown)


def _provenance(s: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    cache = s["cache"]
    facts = [
        (f"{kind} run by", f"laya-inspect {s.get('tool_version') or '(version not recorded)'}"),
        ("cache", str(cache["path"])),
        *cache_facts(
            cache["path"],
            [("cache fingerprint", str(cache.get("fingerprint")))],
            # how the features were made, as the summary kept it (absent in summaries written before it):
            # the whole cache's layers, to match its pooling
            {**cache, "layer_names": cache.get("cache_layer_names") or cache.get("layer_names")},
        ),
    ]
    if kind == "diagnose":
        facts.append(("head directories", " · ".join(h["head_dir"] for h in s["heads"])))
        if s.get("against"):
            facts.append(("other cache", f"{s['against']['path']} (fingerprint {s['against']['fingerprint']})"))
    else:
        facts.append(("head directory", str(s.get("head_dir"))))
        facts.append(("seeds", ", ".join(map(str, s.get("seeds") or []))))
        if len(s.get("alpha_heads") or []) > 1:  # early-exit given a fit-head output
            facts.append(("LAYA heads read", " · ".join(h["head_dir"] for h in s["alpha_heads"])))
        rows = s.get("rows") or {}
        facts.append(("rows", ", ".join(f"{k} {v}" for k, v in rows.items())))
        costs = s.get("costs") or {}
        facts.append(("backbone compute", f"{costs.get('source')}: {costs.get('how')}"))
    if kind == "prune" and s.get("scalarmix_dir"):
        heads = len((s.get("scalarmix") or {}).get("heads") or [None])  # summaries before it: one head
        facts.append(("scalarmix head" if heads == 1 else f"scalarmix heads ({heads})", str(s["scalarmix_dir"])))
    facts.append(("settings", json.dumps(s.get("config") or {}, ensure_ascii=False)))
    return facts


def _subtitle(s: dict[str, Any], kind: str) -> str:
    cache = s["cache"]["path"]
    if kind == "diagnose":
        n = len(s["heads"])
        against = f" · shift to {s['against']['path']}" if s.get("against") else ""
        return f"{counted(n, 'head')} on {cache}{against} · intervals {s['errors']['interval']}"
    mode = f" · {s['mode']}" if kind == "prune" else ""
    return f"{s['head_dir']} on {cache}{mode} · {seeds_said(s)}, {_intervals(s)}"


def _intervals(s: dict[str, Any], what: str = "95% t-intervals over seeds") -> str:
    """``what`` a prune or early-exit page's intervals are; with one seed none is drawn, so no level is named."""
    return "one seed: no interval is drawn" if _one_seed(s) else what


def _one_seed(s: dict[str, Any]) -> bool:
    return len(s.get("seeds") or []) == 1


def _value(d: dict[str, Any] | None, one: bool, digits: int = 4) -> str:
    """An estimate's cell: with one seed its value alone (no interval is drawn, as the caption says),
    else the mean and its 95% interval."""
    if one and d and d.get("mean") is not None:
        return num(d["mean"], digits)
    return no_spread(d, digits) or est(d, digits)


def _diff(d: dict[str, Any] | None, one: bool) -> str:
    """A paired difference's cell: with one seed its signed value alone, else with its interval."""
    if one and d and d.get("mean") is not None:
        return f"{d['mean']:{spec(d)}}"  # a value past float noise is not printed as -0.0000
    return diff_text(d)


def _max_drop_rule(max_drop: float | None) -> str:
    """The rule "within --max-drop" read, as prune applies it (beyond.prune.within_margin)."""
    if max_drop is None:  # an older summary: the reading above names the field it lacks
        return "smallest k: --max-drop not recorded"
    if max_drop == 0:
        return (
            "smallest k: fewest layers whose validation accuracy is no lower than all layers' on any seed "
            "(--max-drop 0)"
        )
    return f"smallest k: fewest layers whose mean validation accuracy is within --max-drop {max_drop:g} of all layers'"


def beyond_page(folder: str | Path, summary: dict[str, Any] | None = None, *, as_dir: str | Path | None = None) -> str:
    """The page of a prune, early-exit or diagnose folder as HTML text. ``summary``: the one the
    command is writing (default: the folder's summary.json); ``as_dir``: the path the folder will
    have once it is complete (the commands on the page name it)."""
    path = Path(folder)
    shown = Path(as_dir) if as_dir is not None else path
    s = with_run_notes(summary if summary is not None else _read_summary(path), path)
    kind = beyond_kind(s)
    if kind is None:
        raise CacheError(f"{path / 'summary.json'} was not written by prune, early-exit or diagnose")
    rebuild = f"laya-inspect report {shlex.quote(str(shown))} --html"  # as fit-head's and compare's pages say it
    return page(
        kind,
        path,
        shown,
        kind,
        lambda: {
            "sections": SECTIONS[kind](s),
            "reading": _reading(s, kind),
            "commands": [(f"this {kind} run", _rebuild(s, kind, shown)), ("rebuild this page", rebuild)],
            "provenance": _provenance(s, kind),
            "subtitle": _subtitle(s, kind),
            "settings": str(beyond_settings_line(s, ONE_LINE)),
            "figures": [("", _figures(path, _one_seed(s)))],
        },
    )


def _reading(s: dict[str, Any], kind: str) -> Reading:
    """The page's plain reading; where an older summary lacks a field the verdict rule reads (the reading
    reads those too), its verdict lines as given (`report DIR --html`: the stored ones) and the note that
    names those fields, unless the caller put it among the warnings already."""
    note = older_note(s)
    if note is None:
        return READINGS[kind](s)
    said = [] if note in (s.get("warnings") or []) else [note[0].upper() + note[1:] + "."]
    return Reading([*said, *(s.get("verdict") or [])])


def _read_summary(folder: Path) -> dict[str, Any]:
    if not (folder / "summary.json").is_file():
        raise NotFoundError(f"no summary.json in {folder}; give a folder written by prune, early-exit or diagnose")
    summary = read_json(folder / "summary.json")
    if not isinstance(summary, dict):
        raise CacheError(f"{folder / 'summary.json'} is not a summary object; rerun the command that wrote it")
    return summary


def write_beyond_report(
    folder: str | Path,
    summary: dict[str, Any] | None = None,
    *,
    as_dir: str | Path | None = None,
    locked: bool = False,
) -> Path:
    """Write ``folder/report.html`` (atomically) and return its path; arguments as in :func:`beyond_page`.
    It holds the folder's lock as :func:`~laya_inspect.report.write_report_html` does, unless ``locked``:
    the caller holds it already (the command writing the folder, `report DIR --html`)."""
    with page_lock(folder, locked):
        return write_page(folder, beyond_page(folder, summary, as_dir=as_dir))


def _rows_cell(rows: dict[str, Any] | None) -> Cell | str:
    """The test rows' own half-width of an early-exit comparison, marked where it outweighs the seeds'."""
    if not rows:
        return "—"
    said = f"±{rows['half_width']:.4f} over {rows['rows']} rows"
    return Cell(said + " (wider than the seeds' interval)" if rows.get("dominates") else said, "text")


def _verdict_cell(d: dict[str, Any] | None, who: str = "α", same_sets: bool = False, one: bool = False) -> Cell:
    """``who``: what the first term of the difference is ("first" for two rules without α); ``same_sets``:
    two of prune's rankings that keep the same layer sets, so there is nothing to compare; ``one``: one
    seed's value, which draws no verdict."""
    if same_sets:
        return Cell("same layer sets", "text")
    if one and d and d.get("mean") is not None:
        return Cell("no verdict: one seed", "text")
    o = outcome(d)
    return Cell(
        # an interval across 0 shows no difference it can detect, not that there is none
        {"better": f"{who} better", "worse": f"{who} worse", "no different": "not distinguishable"}.get(o, "—"),
        "text",
    )


def _alone_cell(d: dict[str, Any] | None, heads: list[dict[str, Any] | None], one: bool) -> Cell:
    """A verdict cell against msp that says, as the terminal does (scoring.alone_text), where every
    head alone shows the difference that the interval over heads does not."""
    if not one and ((d or {}).get("test_rows") or {}).get("withheld"):
        return Cell("withheld: within the test rows' sampling", "text")
    side = None if one else each_head_alone(d, heads)
    if side is None:
        return _verdict_cell(d, one=one)
    return Cell(f"not distinguishable over heads; {side} on each head's own rows", "text")


# -- prune ---------------------------------------------------------------------------------------


def _prune_cell(vs: dict[str, Any], one: bool, same: bool) -> Cell:
    """The verdict cell of α against one ranking, withheld where the test rows' own sampling withheld it."""
    if not one and not same and (vs.get("test_rows") or {}).get("withheld"):
        return Cell("withheld: within the test rows' sampling", "text")
    return _verdict_cell(vs.get("mean_test_acc_over_k_diff"), same_sets=same, one=one)


def prune_sections(s: dict[str, Any]) -> list[Section]:
    from ..beyond.costs import mixed_sets, saved_cell, saved_note, smallest_k_text, smallest_within
    from ..beyond.rankings import layers_text

    ref = s["reference"]["test_acc"]
    one = _one_seed(s)
    rows: list[list[Cell | str]] = []
    classes = []
    withheld: list[str] = []
    for name, entry in s["rankings"].items():
        if not entry["applies"]:
            rows.append([name, "—", "—", "—", "—", "—", Cell("does not apply", "text")])
            classes.append("ref")
            continue
        best = smallest_within(s, name)
        if best and best.get("why_withheld"):
            why = best["why_withheld"]
            said = any(why in note for note in withheld)  # the same why once, as the verdict's lines say it
            size = counted(best["k"], "layer")
            withheld.append(f"{name}'s smallest set ({size}) is withheld" + (" as above" if said else f": {why}"))
        vs = s["alpha_vs"].get(name) or {}
        d = vs.get("mean_test_acc_over_k_diff")
        cell = (
            Cell("", "text")
            if name == "alpha"
            else Cell("no verdict: different sets, same accuracy on every seed", "text")
            if tied(d) and not same_sets(s, name)
            else _prune_cell(vs, one, same_sets(s, name))
        )
        if vs.get("caveat"):  # what qualifies this comparison alone (ScalarMix's near ties), beside it
            cell = Cell(f"{cell.text}; {vs['caveat']}", "text")
        rows.append(
            [
                name,
                smallest_k_text(best),
                saved_cell(best, s),
                _value(best["test_acc"], one) if best else "—",
                _value((s["per_ranking"].get(name) or {}).get("mean_test_acc_over_k"), one),
                "(α)" if name == "alpha" else _diff(d, one),
                cell,
            ]
        )
        classes.append("")
    rand = s.get("random_reference")
    if rand:  # the reference α is read against first (older summaries have none)
        d = (s["alpha_vs"].get("random") or {}).get("mean_test_acc_over_k_diff")
        rows.append(
            [
                "random reference",
                "—",
                "—",
                "—",
                _value((s["per_ranking"].get("random") or {}).get("mean_test_acc_over_k"), one),
                _diff(d, one),
                _prune_cell(s["alpha_vs"].get("random") or {}, one, False),
            ]
        )
        classes.append("ref")
    cols = [
        "ranking",
        "smallest k",
        "FLOPs saved",
        "test acc there",
        f"mean test acc over {ks_text(s['ks'], len(s['cache']['layer_names']))}",  # the k tried below L, no others
        "α − ranking",
        "verdict",
    ]
    caption = (
        f"{s['mode']}, {seeds_said(s)}, "
        + _intervals(s, f"95% t-intervals over seeds (α − ranking: {families_text(*s['alpha_vs'].values())})")
        + f"; all layers: test accuracy {_value(ref, one)}; {_max_drop_rule(s['config'].get('max_drop'))}"
        + "".join(f"; {cut}" for cut in [diff_cut_note(s)] if cut)
    )
    tables = [Table("prune-rankings", cols, rows, caption, classes)]
    note = saved_note(s, [smallest_within(s, name) for name in s["rankings"]])
    mixed = [
        f"{name}'s FLOPs saved at its smallest set, {percent(p['flops_saved'], 1)}, is the mean over different "
        f"sets, each head's own: {mixed_sets(p)}"
        for name in s["rankings"]
        if (p := smallest_within(s, name)) and mixed_sets(p)
    ]
    notes = list(s.get("warnings") or []) + ([note] if note else []) + withheld + mixed
    if rand:
        per_k = "; ".join(
            f"k = {e['k']}: {_value(e['test_acc'], one)} over {len(e['sets'])} of {e['sets_of_size_k']} sets"
            for e in rand["per_k"]
        )
        notes += [f"random reference: {rand['how']} ({per_k}; {rand['refits_added']} refits added)"]
        notes += [rand["note"]] if rand.get("note") else []
    sections = [Section("Rankings against α", tables, notes=notes)]

    pts: list[list[Cell | str]] = [
        [
            p["ranking"],
            str(p["k"]),
            Cell(layers_text(p), "text"),
            saved_cell(p, s),
            saved_cell(p, s, "params_saved"),
            _value(p["val_acc"], one),
            _value(p["test_acc"], one),
            "yes" if p["within_max_drop"] else "no",
        ]
        for p in s["points"]
    ]
    cols = ["ranking", "k", "layers kept", "FLOPs saved", "params saved", "val acc", "test acc", "within"]
    note = saved_note(s, s["points"])
    sections.append(
        Section(
            "Every layer set",
            [Table("prune-points", cols, pts, s["selection"], text_columns=1)],
            notes=[note] if note else [],
        )
    )

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
        total = s["costs"].get("flops_total")
        row += [percent(after[i]["flops_after"] / total, 1) if total else "—"]
        layer_rows.append(row)
    cols = ["layer", *[f"{r} score (rank)" for r in applied], "FLOPs after it"]
    how = "; ".join(f"{r}: {s['rankings'][r]['how']}" for r in applied)
    sections.append(Section("Layer scores", [Table("prune-layers", cols, layer_rows, how)]))
    return sections


# -- early exit ----------------------------------------------------------------------------------


def early_exit_sections(s: dict[str, Any]) -> list[Section]:
    held = held_out_areas(s)
    one = _one_seed(s)
    rules: list[list[Cell | str]] = [
        [
            rule
            + (" (not realisable)" if rule.endswith("oracle") else "")
            + (" (reference: no information)" if rule == "random" else ""),
            *(
                [
                    _value(e["area_held_out"], one),
                    _value(e["area_in_sample"], one),
                    num(e["compute_overshoot"]["mean"], 4),
                ]
                if held
                else [_value(e["area"], one)]
            ),
        ]
        for rule, e in s["rules"].items()
    ]
    rule_cols = (
        ["rule", "held-out area (compared)", "in-sample area (optimistic)", "compute overshoot"]
        if held
        else ["rule", "area under accuracy–compute (in sample)"]
    )
    how = seeds_said(s).removeprefix("over ")  # "over 3 fitted LAYA heads …"
    caption = f"{s['area']}; " + _intervals(s, f"mean over seeds ({how}) with the 95% t-interval")
    caption += "".join(f"; {s[k]}" for k in ("random_exit", "selection") if s.get(k))  # absent in older summaries
    caption += f"; {OVERSHOOT_LEGEND}" if held else ""
    rows_read = any(v.get("test_rows") for v in s["comparisons"].values())  # absent in older summaries
    comps: list[list[Cell | str]] = [
        [
            c,
            _diff(v["area_diff"], one),
            Cell(f"confidence's comparison: the same {v.get('same_by', 'rule')} here", "text")
            if v.get("same_as")
            else Cell("same rule: nothing to compare", "text")
            if v.get("identical")
            else Cell("same area on every seed", "text")
            if v.get("same_area")
            else Cell("withheld: within the test rows' sampling", "text")
            if (v.get("test_rows") or {}).get("withheld")
            else _verdict_cell(v["area_diff"], "α" if "alpha" in c else "first", one=one),
            *([_rows_cell(v.get("test_rows"))] if rows_read else []),
        ]
        for c, v in s["comparisons"].items()
    ]
    comp_cols = ["comparison", "held-out area difference" if held else "area difference", "verdict"]
    comp_cols += ["test rows allow (paired over rows)"] if rows_read else []
    paired = _intervals(s, f"paired over seeds; {families_text(*s['comparisons'].values(), what='t-intervals')}")
    paired += f"; {s['family_rule']}" if s.get("family_rule") and not one else ""  # families set levels of intervals
    paired += f"; {s['rows_rule']}" if s.get("rows_rule") and rows_read else ""
    paired += "".join(f"; {cut}" for cut in [diff_cut_note(s)] if cut)
    tables = [Table("exit-rules", rule_cols, rules, caption), Table("exit-comparisons", comp_cols, comps, paired)]
    sections = [Section("Rules", tables, notes=list(s.get("warnings") or []))]
    used = s.get("compute_used_by_depth") or {}
    mass = (s.get("alpha_mass") or {}).get("mean_beyond_depth") or {}
    oracle = (s.get("alpha_mass") or {}).get("oracle_mean_beyond_depth") or {}
    depth: list[list[Cell | str]] = [
        [
            f["layer"],
            str(f["depth"]),
            _value(f["accuracy"], one),
            percent(used.get(f["layer"]), 1),
            num(mass.get(f["layer"]), 3),
            num(oracle.get(f["layer"]), 3),
        ]
        for f in s["fixed_depth"]
    ]
    cols = ["layer", "depth", "test accuracy (fixed exit)", "FLOPs run", "α mass beyond", "α mass beyond (full pass)"]
    caption = "α mass beyond: mean over test rows, later layers at their train means"
    caption += "".join(f"; {note}" for note in [no_flops_note(s), exit_cut_note(s)] if note)
    return [*sections, Section("Fixed depth", [Table("exit-depths", cols, depth, caption)])]


# -- diagnose ------------------------------------------------------------------------------------


# one head's AUPR is a point (beyond.scoring draws its bootstrap for the AUROCs): "0.491 [n/a]" read as lost
AUPR_POINT = "AUPR: one head's value, no interval (the bootstrap over its test rows is drawn for the AUROCs)"


def _aupr_point(d: dict[str, Any] | None) -> bool:
    return (d or {}).get("mean") is not None and (d or {}).get("ci_low") is None


def _aupr_cell(d: dict[str, Any] | None) -> str:
    return num((d or {}).get("mean"), 3) if _aupr_point(d) else est(d, 3)


def diagnose_sections(s: dict[str, Any]) -> list[Section]:
    e = s["errors"]
    few = errors_not_read(s["heads"])  # then no verdict is read, as the terminal says
    one = len(s["heads"]) == 1  # intervals over one head's test rows: no verdict (scoring.one_seed_said)
    rows: list[list[Cell | str]] = []
    classes = []
    for score, auc in e["auroc"].items():
        d = e["diff_vs_msp"].get(f"{score} − msp")
        rows.append(
            [
                score,
                est(auc, 3),
                _aupr_cell(e["aupr"].get(score)),
                "(baseline)" if score == "msp" else diff_text(d, 3),
                Cell("", "text")
                if score == "msp"
                else Cell(not_read_word(few), "text")
                if few
                else _alone_cell(d, [(h.get("diff_vs_msp") or {}).get(f"{score} − msp") for h in s["heads"]], one),
                Cell(s["scores"].get(score, ""), "text"),
            ]
        )
        classes.append("ref" if score == "msp" else "")
    base = ", ".join(num(h["aupr_baseline"], 3) for h in s["heads"])
    caption = (
        f"positive = misclassified test row; intervals: {e['interval']}; AUROC − msp: {families_text(e)}, "
        f"AUROC: 95% intervals; AUPR of a random score: {base}"
        + (f"; {AUPR_POINT}" if any(_aupr_point(d) for d in e["aupr"].values()) else "")
        + "".join(
            f"; {t}"
            for t in (few, auroc_note({"AUROC": e["auroc"], "AUPR": e["aupr"]}), clipped_note(e["diff_vs_msp"]))
            if t
        )
    )
    cols = ["score", "AUROC", "AUPR", "AUROC − msp", "verdict", "what"]
    sections = [Section("Misclassification detection", [Table("diagnose-errors", cols, rows, caption, classes)])]
    heads: list[list[Cell | str]] = [
        [
            Cell(head_label(h["head_dir"]), "text"),  # the full paths: provenance
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
    not_read = shift_not_read(s["shift"])  # then no verdict is read, as the terminal says
    one = len(s["heads"]) == 1
    shift_rows: list[list[Cell | str]] = []
    for score, auc in pooled["detect_auroc"].items():
        d = pooled["detect_diff"].get(f"{score} − msp")
        own = [(h.get("detect_diff") or {}).get(f"{score} − msp") for h in s["shift"]["heads"]]
        cell = "" if not d else Cell(not_read_word(not_read), "text") if not_read else _alone_cell(d, own, one)
        shift_rows.append([score, est(auc, 3), "(baseline)" if score == "msp" else diff_text(d, 3), cell])
    caption = (
        f"positive = a row of {s['against']['path']}; intervals: {pooled['interval']}; AUROC − msp: "
        f"{families_text(pooled)}, AUROC: 95% intervals"
        + "".join(
            f"; {t}"
            for t in (not_read, auroc_note({"AUROC": pooled["detect_auroc"]}), clipped_note(pooled["detect_diff"]))
            if t
        )
    )
    tables = [Table("diagnose-shift", ["score", "AUROC", "AUROC − msp", "verdict"], shift_rows, caption)]
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
    # null for a cache of other classes: the head's class indices read against another dataset's labels
    other = "not computed (other classes)" if first.get("accuracy_other") is None else num(first["accuracy_other"], 4)
    tables.append(
        Table(
            "diagnose-shift-layers",
            ["layer", "mean α (this)", "mean α (other)", "difference", "p (family-wise)"],
            layers,
            f"first head; accuracy {num(first['accuracy_this'], 4)} here, {other} on the "
            f"other cache; overall permutation p = {perm['p_value']:.3g}",
        )
    )
    return [*sections, Section("Shift", tables)]


SECTIONS: dict[str, Callable[[dict[str, Any]], list[Section]]] = {
    "prune": prune_sections,
    "early-exit": early_exit_sections,
    "diagnose": diagnose_sections,
}
