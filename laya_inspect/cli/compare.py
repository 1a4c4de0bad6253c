"""`laya-inspect compare` and `laya-inspect report`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from ..compare.run import CompareConfig
from ..errors import LayaError
from . import app, console, err_console, fail, opt
from .tables import build_report


def _print_report(summary: dict[str, Any]) -> None:
    for renderable in build_report(summary):
        console.print(renderable)


@app.command("compare")
def compare_command(
    head_dirs: list[Path] = typer.Argument(..., metavar="HEAD_DIR...", help="head directories written by fit-head"),
    cache: Path = typer.Option(..., "--cache", "-c", help="features.h5 the heads were trained on"),
    method: Optional[list[str]] = opt(CompareConfig, "methods", "-m", default=None),
    ablation: str = opt(CompareConfig, "ablation"),
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
    as_json: bool = typer.Option(False, "--json", help="print summary.json to stdout instead of the table"),
    device: str = opt(CompareConfig, "device"),
    batch_size: int = opt(CompareConfig, "batch_size"),
    allow_other_cache: bool = opt(CompareConfig, "allow_other_cache"),
    allow_nonfinite: bool = opt(CompareConfig, "allow_nonfinite"),
    plots: bool = opt(CompareConfig, "plots"),
    force: bool = typer.Option(
        False,
        "--force",
        help="replace a non-empty --out whole (its old files and plots go; kept until the new run is complete)",
    ),
) -> None:
    """Score each head's layer attributions (α, IG, Grad-CAM, static, random) against leave-one-layer-out effects."""
    from ..compare.run import compare_heads
    from ..store import FeatureStore

    config = CompareConfig(
        methods=tuple(method or ("all",)),
        ablation=ablation,
        target=target,
        split=split,
        limit=limit,
        seed=seed,
        n_steps=n_steps,
        internal_batch_size=internal_batch_size,
        baseline=baseline,
        relu=relu,
        n_boot=bootstrap,
        device=device,
        batch_size=batch_size,
        allow_other_cache=allow_other_cache,
        allow_nonfinite=allow_nonfinite,
        plots=plots,
    )

    def progress(event: dict[str, Any]) -> None:
        if event["event"] == "head":
            err_console.print(
                f"[bold]{event['head']}[/] ({event['kind']}) {event['index'] + 1}/{event['total']}", highlight=False
            )
        elif event["event"] == "step":
            err_console.print(f"  {event['step']} …", style="dim", highlight=False)
        elif event["event"] == "write":
            err_console.print(f"  wrote {event['path']}", style="dim", highlight=False)

    try:
        with FeatureStore(cache) as store:
            result = compare_heads(head_dirs, store, config, out_dir=out, progress=progress, overwrite=force)
    except LayaError as e:
        fail(str(e))
    if as_json:
        typer.echo(json.dumps(result.summary, indent=2, ensure_ascii=False))
    else:
        _print_report(result.summary)
        console.print(
            f"wrote {out}/: attributions.h5, summary.json, summary.csv, {len(result.files) - 3} plot files",
            style="dim",
            highlight=False,
        )


@app.command("report")
def report_command(
    out_dir: Path = typer.Argument(..., metavar="OUT_DIR", help="a directory written by `compare`"),
    as_json: bool = typer.Option(False, "--json", help="print summary.json instead of the table"),
) -> None:
    """Reprint the summary of a compare run from its summary.json."""
    from ..compare.outputs import load_summary

    try:
        summary = load_summary(out_dir)
    except LayaError as e:
        fail(str(e))
    if as_json:
        typer.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        _print_report(summary)
