"""`laya-inspect compare` and `laya-inspect report`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from ..attribution import BASELINE_CHOICES, METHODS
from ..errors import LayaError
from ..lolo import ABLATIONS
from . import app, console, err_console, fail


def _print_report(summary: dict[str, Any]) -> None:
    from ..report import build_report

    for renderable in build_report(summary):
        console.print(renderable)


@app.command("compare")
def compare_command(
    head_dirs: list[Path] = typer.Argument(..., metavar="HEAD_DIR...", help="head directories written by fit-head"),
    cache: Path = typer.Option(..., "--cache", "-c", help="features.h5 the heads were trained on"),
    method: Optional[list[str]] = typer.Option(
        None, "--method", "-m", help=f"repeatable or comma list: {', '.join(METHODS.names())} or all (default: all)"),
    ablation: str = typer.Option("mean", "--ablation", help=f"how a layer is removed: {'|'.join(ABLATIONS.names())}"),
    target: str = typer.Option("pred", "--target", help="class to explain: pred (the head's prediction) | true (the label)"),
    split: str = typer.Option("test", "--split", help="cache split to compare on"),
    limit: Optional[int] = typer.Option(None, "--limit", help="at most N rows (seeded random subset)"),
    seed: int = typer.Option(0, "--seed", help="seed of random scores, --limit rows, bootstrap and random orders"),
    n_steps: int = typer.Option(50, "--n-steps", help="Integrated Gradients steps"),
    internal_batch_size: Optional[int] = typer.Option(None, "--internal-batch-size", help="Captum IG internal batch size"),
    baseline: str = typer.Option("mean", "--baseline", help=f"IG baseline b_i: {'|'.join(BASELINE_CHOICES)} (mean over the train split)"),
    relu: bool = typer.Option(False, "--relu/--no-relu", help="apply ReLU to Grad-CAM scores"),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="bootstrap resamples for the faithfulness 95% CI (0 = none)"),
    out: Path = typer.Option(Path("runs/compare"), "--out", "-o", help="directory for attributions.h5, summary.*, plots/"),
    as_json: bool = typer.Option(False, "--json", help="print summary.json to stdout instead of the table"),
    device: str = typer.Option("auto", "--device", help="auto|cpu|cuda"),
    batch_size: int = typer.Option(512, "--batch-size", help="samples per chunk (a LOLO pass sees (L+1)× as many rows)"),
    force: bool = typer.Option(False, "--force", help="use heads trained on a cache with another fingerprint"),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="write plots/ (PNG and SVG)"),
) -> None:
    """Score each head's layer attributions (α, IG, Grad-CAM, static, random) against leave-one-layer-out effects."""
    from ..compare import CompareConfig, compare
    from ..store import FeatureStore

    config = CompareConfig(
        methods=tuple(method or ("all",)), ablation=ablation, target=target, split=split, limit=limit, seed=seed,
        n_steps=n_steps, internal_batch_size=internal_batch_size, baseline=baseline, relu=relu, n_boot=bootstrap,
        device=device, batch_size=batch_size, force=force, plots=plots)

    def progress(event: dict[str, Any]) -> None:
        if event["event"] == "head":
            err_console.print(f"[bold]{event['head']}[/] ({event['kind']}) {event['index'] + 1}/{event['total']}",
                              highlight=False)
        elif event["event"] == "step":
            err_console.print(f"  {event['step']} …", style="dim", highlight=False)
        elif event["event"] == "write":
            err_console.print(f"  wrote {event['path']}", style="dim", highlight=False)

    try:
        with FeatureStore(cache) as store:
            result = compare(head_dirs, store, config, out_dir=out, progress=progress)
    except LayaError as e:
        fail(str(e))
    if as_json:
        typer.echo(json.dumps(result.summary, indent=2, ensure_ascii=False))
    else:
        _print_report(result.summary)
        console.print(f"wrote {out}/: attributions.h5, summary.json, summary.csv, {len(result.files) - 3} plot files",
                      style="dim", highlight=False)


@app.command("report")
def report_command(
    out_dir: Path = typer.Argument(..., metavar="OUT_DIR", help="a directory written by `compare`"),
    as_json: bool = typer.Option(False, "--json", help="print summary.json instead of the table"),
) -> None:
    """Reprint the summary of a compare run from its summary.json."""
    from ..report import load_summary

    try:
        summary = load_summary(out_dir)
    except LayaError as e:
        fail(str(e))
    if as_json:
        typer.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        _print_report(summary)
