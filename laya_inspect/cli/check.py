"""`laya-inspect check planted`: the whole pipeline on a backbone whose answer is known
(docs/METHOD.md, "The planted-layer check")."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich import box
from rich.table import Table

from ..check.config import PlantedConfig
from .app import app, bullets, console, dim, from_options, opt

check_app = typer.Typer(
    help="Checks with a known answer: run one first on a new attribution method or a new machine.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(check_app, name="check")

FORCE_HELP = "replace a non-empty --out that `check planted` wrote (kept until the new run is complete)"


def _progress(event: dict[str, Any]) -> None:
    if event["event"] == "stage":
        dim(f"  {event['stage']} …", err=True)


def _cell(share: dict[str, Any]) -> tuple[str, str]:
    return f"{share['share']:.3f}", f"[{share['ci_low']:.3f}, {share['ci_high']:.3f}]"


def planted_table(s: dict[str, Any]) -> Table:
    """Every (head, method), the LOLO effects and the constant profile: how often the signal layer is first."""
    from ..report.reading import name

    c = s["construction"]
    table = Table(
        title=f"how often signal layer {c['signal_layer_name']} is ranked first ({s['compare']['n']} test rows)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    bar = f"vs {s['pass_share']:.0%} bar"
    for i, column in enumerate(("head", "method", "share", "95% interval", bar)):
        table.add_column(column, justify="left" if i < 2 else "right", no_wrap=True)
    where = s.get("against_bar", {})  # above: the interval's lower end reaches the bar; straddles; below
    for m in s["methods"]:
        vs = where.get("methods", {}).get(f"{m['head']}/{m['method']}", "")
        table.add_row(m["head"], name(m["method"]), *_cell(m), vs)
    for head, e in s["effects"].items():
        table.add_row(
            head, f"LOLO effect ({e['ablation']})", *_cell(e), where.get("effects", {}).get(head, ""), style="dim"
        )
    for head, k in s["constant"].items():
        table.add_row(head, f"constant rule ({k['source']})", *_cell(k), style="dim")
    table.add_row("", "random floor 1/L", f"{s['random_floor']:.3f}", "", style="dim")
    return table


@check_app.command("planted")
def planted_command(
    seed: int = opt(PlantedConfig, "seed"),
    layers: int = opt(PlantedConfig, "layers"),
    signal_layer: Optional[int] = opt(PlantedConfig, "signal_layer"),
    rows: int = opt(PlantedConfig, "rows"),
    noise: float = opt(PlantedConfig, "noise"),
    device: str = opt(PlantedConfig, "device"),
    out: Path = typer.Option(
        Path("runs/check-planted"), "--out", "-o", help="folder for summary.json, features.h5, heads/, compare/"
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """A backbone whose label lives in one tapped layer: does each method rank that layer first?

    A seeded backbone and data built in memory: the signal layer reads the class means plus
    noise, every other layer independent noise. Its layers are cached, a LAYA and a ScalarMix
    head fitted, compare run; printed: how often each method ranks the signal layer first,
    beside the LOLO effects, a constant profile and random (1/L). It passes when the lower end of
    the 95% interval of IG's share reaches 95% of rows; the verdict is for this one --seed (its
    backbone, data and fit): run several seeds and read it as passed when every one passes.

    Example:
      laya-inspect check planted --layers 4 --signal-layer 1 --out runs/check-planted
    """
    from ..check.planted import run_planted
    from ..runtime import set_threads

    config = from_options(PlantedConfig, locals())
    set_threads(None)
    c = config
    dim(
        f"check planted: {c.layers} layers, signal in layer {c.signal}, noise {c.noise:g}, {c.rows} train and "
        f"{c.rows} test rows, seed {c.seed}",
        err=True,
    )
    result = run_planted(config, out_dir=out, overwrite=force, progress=_progress)
    s = result.summary
    console.print(planted_table(s))
    accuracy = ", ".join(f"{head} {acc:.3f}" for head, acc in s["test_acc"].items())
    console.print(f"test accuracy: {accuracy}", highlight=False)
    bullets(s["verdict"])
    dim(f"wrote {out / 'summary.json'}", err=True)
