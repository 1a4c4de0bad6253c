"""`laya-inspect compare` and `laya-inspect report`."""

from __future__ import annotations

import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from ..compare.config import CompareConfig
from ..report.terminal import build_report, fit_title
from ..runtime import set_threads
from .app import THREADS, app, bullets, console, dim, err_console, from_options, json_text, opt, show, warn
from .fit import print_fit


def print_report(summary: dict[str, Any], brief: bool = False) -> None:
    for renderable in build_report(summary, min(console.width, 100), brief):  # a long line breaks between its items
        show(renderable)


@app.command("compare")
def compare_command(
    head_dirs: list[Path] = typer.Argument(
        ...,
        metavar="HEAD_DIR...",
        help="head directories written by fit-head, or a fit-head output folder (every <head>/seed_<S>/ in it); "
        "a head with several seeds is also scored across seeds",
    ),
    cache: Path = typer.Option(..., "--cache", "-c", help="features.h5 the heads were trained on"),
    method: Optional[list[str]] = opt(CompareConfig, "methods", "-m", default=None),
    ablation: str = opt(CompareConfig, "ablation"),
    effect: str = opt(CompareConfig, "effect"),
    target: str = opt(CompareConfig, "target"),
    split: str = opt(CompareConfig, "split"),
    limit: Optional[int] = opt(CompareConfig, "limit"),
    seed: int = opt(CompareConfig, "seed"),
    n_steps: int = opt(CompareConfig, "n_steps"),
    internal_batch_size: Optional[int] = opt(CompareConfig, "internal_batch_size"),
    baseline: str = opt(CompareConfig, "baseline"),
    relu: bool = opt(CompareConfig, "relu"),
    bootstrap: int = opt(CompareConfig, "n_boot"),
    out: Path = typer.Option(
        Path("runs/compare"), "--out", "-o", help="directory for attributions.h5, summary.*, plots/"
    ),
    as_json: bool = typer.Option(False, "--json", metavar="", help="print summary.json to stdout instead of the table"),
    device: str = opt(CompareConfig, "device"),
    batch_size: int = opt(CompareConfig, "batch_size"),
    allow_other_cache: bool = opt(CompareConfig, "allow_other_cache"),
    allow_nonfinite: bool = opt(CompareConfig, "allow_nonfinite"),
    plots: bool = opt(CompareConfig, "plots"),
    svg: bool = opt(CompareConfig, "svg"),
    sanity: bool = opt(CompareConfig, "sanity"),
    threads: Optional[int] = THREADS,
    workers: Optional[int] = opt(CompareConfig, "workers"),
    force: bool = typer.Option(
        False,
        "--force",
        metavar="",
        help=(
            "replace a non-empty --out that compare wrote, whole "
            "(its old files and plots go; kept until the new run is complete)"
        ),
    ),
) -> None:
    """Score each head's layer attributions (α, α-contrib, IG, Grad-CAM, static, random) against layer removal.

    Example:
      laya-inspect compare heads/laya/seed_0 --cache features.h5 \\
        --method all --ablation all --out compare

    Every seed of a fit-head run, with the mean and t-interval over seeds:
      laya-inspect compare heads --cache features.h5 --out compare
    """
    from ..cache.store import FeatureStore
    from ..compare.run import compare_heads
    from ..distributed import is_main_process

    config = from_options(CompareConfig, locals(), methods=tuple(method or ("all",)), n_boot=bootstrap)

    def progress(event: dict[str, Any]) -> None:
        if not is_main_process():  # under torchrun every process runs every head: rank 0 tells
            return
        if event["event"] == "head":
            err_console.print(
                f"[bold]{event['head']}[/] ({event['kind']}) {event['index'] + 1}/{event['total']}", highlight=False
            )
        elif event["event"] == "step":
            dim(f"  {event['step']} …", err=True)
        elif event["event"] == "write":
            dim(f"  wrote {event['path']}", err=True)

    set_threads(threads)
    with FeatureStore(cache) as store:
        result = compare_heads(head_dirs, store, config, out_dir=out, progress=progress, overwrite=force)
    if not is_main_process():  # another process of a torchrun launch: rank 0 speaks for all
        return
    if as_json:
        typer.echo(json_text(result.summary))
    else:
        print_report(result.summary)
        n_plots = len(result.summary["files"].get("plots") or [])
        dim(
            f"wrote {out}/: report.html (open it in a browser), attributions.h5, summary.json, summary.csv, "
            + ("sanity.h5, " if "sanity" in result.summary else "")
            + f"{n_plots} plot files"
        )


@app.command("report")
def report_command(
    out_dir: Path = typer.Argument(
        ..., metavar="DIR", help="a folder written by fit-head, compare, demo, prune, early-exit or diagnose"
    ),
    as_json: bool = typer.Option(
        False, "--json", metavar="", help="print the folder's summary.json (demo.json for a demo) instead of the tables"
    ),
    html: bool = typer.Option(False, "--html", metavar="", help="(re)build DIR/report.html, one self-contained page"),
) -> None:
    """Reprint the summary of a command's output folder; --html rebuilds its report.html.

    DIR: a folder written by fit-head, compare, demo, prune, early-exit or diagnose.

    Example:
      laya-inspect report runs/compare --html
    """
    from ..compare.records import read_json
    from ..out_dir import refuse_symlink
    from ..report.beyond import beyond_kind
    from ..report.folders import DemoFolder, read_folder
    from ..report.html import readable

    lock: Any = nullcontext()
    if html:  # report.html is written into DIR: not through a link to somewhere else, nor over a user's page
        from ..files import output_lock

        refuse_symlink(out_dir, "DIR")
        # the lock every writer of DIR takes (fit-head --force, another report --html): the page is not
        # built from a folder being swapped, nor written over one another run wrote meanwhile
        lock = output_lock(os.path.realpath(out_dir))
    with lock:
        if html:
            from ..report import refuse_foreign_page

            refuse_foreign_page(out_dir)
        summary_path = out_dir / "summary.json"
        summary: Any = read_json(summary_path) if summary_path.is_file() else None
        beyond = beyond_kind(summary) is not None  # a prune, early-exit or diagnose folder: its summary alone
        folder = None if beyond else read_folder(out_dir)
        page = None
        if html:  # before the printing: a reader that leaves early (`| head`) ends the process there, quietly
            from ..report import write_report_html
            from ..report.beyond import write_beyond_report

            # this command holds the folder's lock already
            if beyond:  # its verdict lines rebuilt from the fields, as the terminal below prints them
                from ..beyond import summary_verdict

                lines, note = summary_verdict(summary)
                shown = {**summary, "verdict": lines}
                if note:
                    shown["warnings"] = [*(summary.get("warnings") or []), note]
                page = write_beyond_report(out_dir, shown, locked=True)
            else:
                page = write_report_html(out_dir, locked=True)
    if as_json:
        data = summary if folder is None else folder.record if isinstance(folder, DemoFolder) else folder.summary
        typer.echo(json_text(data))
    elif folder is None:
        from ..report.settings import beyond_settings_line
        from .beyond import verdict_lines

        console.print(f"[bold]{summary['command']}[/] {escape(str(out_dir))}", highlight=False)
        console.print(beyond_settings_line(summary, min(console.width, 100)), highlight=False)  # as the command said
        bullets(verdict_lines(summary), summary.get("warnings"))
    else:
        from ..report.stale import stale_inputs

        # results of a file replaced since (a demo step rerun by hand) are said before they are shown
        warn(stale_inputs(folder))
        # read_folder checked every field the terminal reads; a hand-edited file that still fails is
        # one line naming the folder, as report.html's builder says it (report/html.py: readable)
        readable(folder.kind, out_dir, lambda: _print_folder(folder), "the report")
    if page is not None:
        dim(f"wrote {page}", err=True)


def _print_folder(folder: Any) -> None:
    """A compare folder's tables, a fit-head folder's table and gate, or a demo's steps and both."""
    from ..report.folders import CompareFolder, FitFolder

    if isinstance(folder, CompareFolder):
        print_report(folder.summary)
        return
    if isinstance(folder, FitFolder):
        _print_fit(folder)
        return
    if folder.record.get("complete") is False:  # a killed demo: its steps say "not run", not why
        console.print(
            "[yellow]this demo did not finish (stopped or failed): the steps below without a time are "
            "not recorded as done; run the demo again to complete it[/]",
            highlight=False,
        )
    for step in folder.record.get("steps") or []:
        took = "not run" if step.get("seconds") is None else f"{step['seconds']:.1f} s"
        console.print(f"[bold]{step.get('name')}[/] ({took}): {escape(str(step.get('command')))}", highlight=False)
    if folder.fit is not None:
        _print_fit(folder.fit)
    if folder.compare is not None:
        from ..report.sections import said_above

        # fit-head's gate warnings were printed just above: compare's carried copies point to them
        print_report(said_above(folder.fit.summary, folder.compare.summary) if folder.fit else folder.compare.summary)


def _print_fit(folder: Any) -> None:
    """A fit-head folder's table, quality gate and α profile."""
    s = folder.summary
    n_seeds = max(int(h.get("n") or 0) for h in s["heads"])
    print_fit(s, fit_title((s.get("cache") or {}).get("cache_path", folder.path), s, n_seeds), folder.profiles)
