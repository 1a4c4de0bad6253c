"""report.html of a prune, early-exit or diagnose folder: one self-contained page (html.py's) that
leads with the plain reading (reading_beyond.py: α against its baseline without α, in numbers),
then the tables, the folder's PNG plots inlined, the command that rebuilds the folder and the
provenance. Built from summary.json alone (and the cache's attributes when the cache is still
there), so :func:`write_beyond_report` can rebuild a page from a finished folder."""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any

from ..errors import CacheError, NotFoundError
from ..files import write_text
from .figures import Figure, png_figure
from .html import Page, Section, render
from .reading_beyond import READINGS
from .sections import _command, cache_facts, page_facts
from .sections_beyond import SECTIONS

REPORT_NAME = "report.html"
BEYOND_KINDS = ("prune", "early-exit", "diagnose")

# What each plot shows, by its file name (laya_inspect/beyond/plots.py draws them).
CAPTIONS = {
    "prune_accuracy_vs_flops": "Test accuracy of the head refit on the top-k layers of each ranking against the "
    "share of backbone FLOPs the dropped layers would save; bars are 95% t-intervals over seeds, the star is the "
    "chosen layer set, the dotted line all layers.",
    "prune_accuracy_vs_k": "The same accuracies against the number of layers kept.",
    "rankings": "Each ranking's per-layer score, divided by its largest |score| (higher = kept longer).",
    "early_exit_accuracy_vs_compute": "Accuracy against the share of backbone FLOPs run, each rule swept over its "
    "threshold (mean over seeds); dotted: the oracle rule, which needs every layer (a reference, not a rule).",
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


def _figures(folder: Path) -> list[Figure]:
    plots = folder / "plots"
    paths = sorted(plots.glob("*.png")) if plots.is_dir() else []
    paths.sort(key=lambda p: ORDER.index(p.stem) if p.stem in ORDER else len(ORDER))
    figs = []
    for p in paths:
        fig = png_figure(p)
        figs.append(dataclasses.replace(fig, caption=CAPTIONS.get(p.stem, fig.caption)))
    return figs


def _budget_flags(budget: dict[str, Any]) -> list[str]:
    from ..beyond.config import Budget

    fields = {f.name for f in dataclasses.fields(Budget)}
    try:
        from ..options import command_line

        return command_line("x", Budget(**{k: v for k, v in budget.items() if k in fields}))[2:]
    except (TypeError, ValueError):
        return []


def _rebuild(s: dict[str, Any], kind: str, shown: Path) -> str:
    """The command line that rewrites the folder, from the config and inputs its summary records."""
    cache = ["--cache", s["cache"]["path"]]
    if kind == "prune":
        from ..beyond.config import PruneConfig

        extra = cache + (["--scalarmix", s["scalarmix_dir"]] if s.get("scalarmix_dir") else [])
        extra += _budget_flags(s.get("budget") or {})
        return _command("prune", PruneConfig, s.get("config") or {}, positional=[s["head_dir"]], extra=extra, out=shown)
    if kind == "early-exit":
        from ..beyond.config import ExitConfig

        extra = cache + _budget_flags(s.get("budget") or {})
        return _command(
            "early-exit", ExitConfig, s.get("config") or {}, positional=[s["head_dir"]], extra=extra, out=shown
        )
    from ..beyond.config import DiagnoseConfig

    extra = cache + (["--against", s["against"]["path"]] if s.get("against") else [])
    heads = [h["head_dir"] for h in s["heads"]]
    return _command("diagnose", DiagnoseConfig, s.get("config") or {}, positional=heads, extra=extra, out=shown)


def _provenance(s: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    cache = s["cache"]
    facts = [
        (f"{kind} run by", f"laya-inspect {s.get('tool_version')}"),
        ("cache", str(cache["path"])),
        *cache_facts(cache["path"], [("cache fingerprint", str(cache.get("fingerprint")))]),
    ]
    if kind == "diagnose":
        facts.append(("head directories", " · ".join(h["head_dir"] for h in s["heads"])))
        if s.get("against"):
            facts.append(("other cache", f"{s['against']['path']} (fingerprint {s['against']['fingerprint']})"))
    else:
        facts.append(("head directory", str(s.get("head_dir"))))
        facts.append(("seeds", " ".join(map(str, s.get("seeds") or []))))
        rows = s.get("rows") or {}
        facts.append(("rows", ", ".join(f"{k} {v}" for k, v in rows.items())))
        costs = s.get("costs") or {}
        facts.append(("backbone compute", f"{costs.get('source')}: {costs.get('how')}"))
    if kind == "prune" and s.get("scalarmix_dir"):
        facts.append(("scalarmix head", str(s["scalarmix_dir"])))
    facts.append(("settings", json.dumps(s.get("config") or {}, ensure_ascii=False)))
    return facts


def _subtitle(s: dict[str, Any], kind: str) -> str:
    cache = s["cache"]["path"]
    if kind == "diagnose":
        n = len(s["heads"])
        against = f" · shift to {s['against']['path']}" if s.get("against") else ""
        return f"{n} head{'s' * (n != 1)} on {cache}{against} · intervals {s['errors']['interval']}"
    mode = f" · {s['mode']}" if kind == "prune" else ""
    return f"{s['head_dir']} on {cache}{mode} · {len(s['seeds'])} seed(s), 95% t-intervals over seeds"


def beyond_page(folder: str | Path, summary: dict[str, Any] | None = None, *, as_dir: str | Path | None = None) -> str:
    """The page of a prune, early-exit or diagnose folder as HTML text. ``summary``: the one the
    command is writing (default: the folder's summary.json); ``as_dir``: the path the folder will
    have once it is complete (the commands on the page name it)."""
    path = Path(folder)
    shown = Path(as_dir) if as_dir is not None else path
    s = summary if summary is not None else _read_summary(path)
    kind = beyond_kind(s)
    if kind is None:
        raise CacheError(f"{path / 'summary.json'} was not written by prune, early-exit or diagnose")
    try:
        sections: list[Section] = SECTIONS[kind](s)
        reading = READINGS[kind](s)
        command = _rebuild(s, kind, shown)
        provenance = _provenance(s, kind)
        subtitle = _subtitle(s, kind)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise CacheError(
            f"{path} holds a {kind} summary the page cannot read ({type(e).__name__}: {e}); "
            f"rerun `laya-inspect {kind}` to rewrite it"
        ) from None
    module = "laya_inspect.report.beyond"
    rebuild = (
        f"python -c {shlex.quote(f'from {module} import write_beyond_report; write_beyond_report({str(shown)!r})')}"
    )
    page = Page(
        title=f"{kind}: {shown.name or shown}",
        subtitle=subtitle,
        reading=reading,
        sections=sections,
        figures=[("", _figures(path))],
        commands=[(f"this {kind} run", command), ("rebuild this page", rebuild)],
        provenance=[*provenance, *page_facts()],
    )
    return render(page)


def _read_summary(folder: Path) -> dict[str, Any]:
    from .folders import read_json

    if not (folder / "summary.json").is_file():
        raise NotFoundError(f"no summary.json in {folder}; give a folder written by prune, early-exit or diagnose")
    summary = read_json(folder / "summary.json")
    if not isinstance(summary, dict):
        raise CacheError(f"{folder / 'summary.json'} is not a summary object; rerun the command that wrote it")
    return summary


def write_beyond_report(
    folder: str | Path, summary: dict[str, Any] | None = None, *, as_dir: str | Path | None = None
) -> Path:
    """Write ``folder/report.html`` (atomically) and return its path; arguments as in :func:`beyond_page`."""
    return write_text(Path(folder) / REPORT_NAME, beyond_page(folder, summary, as_dir=as_dir))
