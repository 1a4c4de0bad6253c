"""`laya-inspect check planted`: the whole pipeline on a backbone whose answer is known
(docs/METHOD.md, "The planted-layer check")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..check.config import PlantedConfig
from ..runtime import set_threads
from .app import Typer, app, bullets, console, dim, from_options, opt, show, titled_table

check_app = Typer(
    help="Checks with a known answer: run one first on a new attribution method or a new machine.",
    no_args_is_help=True,
)
app.add_typer(check_app, name="check")

FORCE_HELP = "replace a non-empty --out that `check planted` wrote (kept until the new run is complete)"


def _progress(several: bool) -> Callable[[dict[str, Any]], None]:
    """The stage lines on stderr; naming their seed when ``several`` seeds run."""

    def show(event: dict[str, Any]) -> None:
        if event["event"] == "stage":
            seed = f"seed {event['seed']}: " if several and "seed" in event else ""
            dim(f"  {seed}{event['stage']} …", err=True)

    return show


def _cell(share: dict[str, Any]) -> tuple[str, str]:
    return f"{share['share']:.3f}", f"[{share['ci_low']:.3f}, {share['ci_high']:.3f}]"


def planted_table(s: dict[str, Any]) -> Table:
    """Every (head, method), the LOLO effects and the constant profile: how often the signal layer is first."""
    from ..report.reading import name

    c = s["construction"]
    table = titled_table(
        f"how often signal layer {c['signal_layer_name']} is ranked first ({s['compare']['n']} test rows)",
        *("head", "method", "share", "95% interval", f"vs {s['pass_share']:.0%} bar"),
        left=2,
        wrap=False,
    )
    where = s.get("against_bar", {})  # above: the interval's lower end reaches the bar; straddles; below
    for m in s["methods"]:
        vs = where.get("methods", {}).get(f"{m['head']}/{m['method']}", "")
        table.add_row(m["head"], name(m["method"]), *_cell(m), vs)
    for head, e in s["effects"].items():
        table.add_row(
            head, f"LOLO effect ({e['ablation']})", *_cell(e), where.get("effects", {}).get(head, ""), style="dim"
        )
    for head, k in s["constant"].items():
        vs = where.get("constant", {}).get(head, "")
        table.add_row(head, f"constant rule ({k['source']})", *_cell(k), vs, style="dim")
    table.add_row("", "random reference 1/L", f"{s['random_floor']:.3f}", "", style="dim")
    return table


def seeds_table(s: dict[str, Any]) -> Table:
    """Every (head, method), the LOLO effects and the constant rule: the share per construction seed and
    on how many seeds it is at the bar."""
    from ..report.reading import name, num

    c = s["construction"]
    seeds = s["construction_seeds"]
    table = titled_table(
        f"how often signal layer {c['signal_layer_name']} is ranked first, per construction seed "
        f"({s['compare']['n']} test rows each; * not at the {s['pass_share']:.0%} bar on that seed)",
        *("head", "method", *(f"seed {seed}" for seed in seeds), "at bar"),
        left=2,
        wrap=False,
    )

    def cells(r: dict[str, Any]) -> list[str]:
        return [
            num(v, 3) + ("" if v is None or where == "above" else "*")
            for v, where in zip(r["shares"], r["against_bar"])
        ] + [f"{r['passed_on']}/{r['of']}"]

    a = s["across_seeds"]
    for m in a["methods"]:
        table.add_row(m["head"], name(m["method"]), *cells(m))
    for head, e in a["effects"].items():
        table.add_row(head, f"LOLO effect ({s['compare']['ablation']})", *cells(e), style="dim")
    for head, k in a["constant"].items():
        table.add_row(head, "constant rule", *cells(k), style="dim")
    table.add_row("", "random reference 1/L", *[f"{s['random_floor']:.3f}"] * len(seeds), "", style="dim")
    return table


@check_app.command("planted")
def planted_command(
    seed: int = opt(PlantedConfig, "seed"),
    seeds: int = opt(PlantedConfig, "seeds"),
    layers: int = opt(PlantedConfig, "layers"),
    signal_layer: Optional[int] = opt(PlantedConfig, "signal_layer"),
    rows: int = opt(PlantedConfig, "rows"),
    noise: float = opt(PlantedConfig, "noise"),
    device: str = opt(PlantedConfig, "device"),
    out: Path = typer.Option(
        Path("runs/check-planted"), "--out", "-o", help="folder for summary.json, features.h5, heads/, compare/"
    ),
    force: bool = typer.Option(False, "--force", metavar="", help=FORCE_HELP),
) -> None:
    """A backbone whose label lives in one tapped layer: does each method rank that layer first?

    A seeded backbone and data built in memory: the signal layer reads the class means plus
    noise, every other layer independent noise. Its layers are cached, a LAYA and a ScalarMix
    head fitted, compare run; printed: how often each method ranks the signal layer first,
    beside the LOLO effects, a constant profile and random (1/L). It passes when the lower end of
    the 95% interval of IG's share reaches 95% of rows. --seeds N runs N construction seeds (each
    its own backbone, data and fit, in OUT/seed_S/) and passes a method only when it passes on
    every one of them.

    Example:
      laya-inspect check planted --layers 4 --signal-layer 1 --seeds 3 --out runs/check-planted
    """
    from ..check.planted import run_planted
    from ..check.seeds import run_planted_seeds

    c = from_options(PlantedConfig, locals())
    set_threads(None)
    which = f"seed {c.seed}" if c.seeds == 1 else f"construction seeds {c.seed} … {c.seed + c.seeds - 1}"
    dim(
        f"check planted: {c.layers} layers, signal in layer {c.signal}, noise {c.noise:g}, {c.rows} train and "
        f"{c.rows} test rows, {which}",
        err=True,
    )
    if c.seeds > 1:
        several = run_planted_seeds(c, out_dir=out, overwrite=force, progress=_progress(True))
        s = several.summary
        show(seeds_table(s))
        accuracy = "; ".join(
            f"seed {p['seed']}: " + ", ".join(f"{head} {acc:.3f}" for head, acc in p["test_acc"].items())
            for p in s["per_seed"]
        )
        console.print(f"test accuracy: {accuracy}", highlight=False)
        bullets(s["verdict"])
        folders = ", ".join(f"{folder}/" for folder in s["files"]["seeds"].values())
        dim(f"wrote {out / 'summary.json'} and, one per seed, {folders}", err=True)
        return
    result = run_planted(c, out_dir=out, overwrite=force, progress=_progress(False))
    s = result.summary
    show(planted_table(s))
    accuracy = ", ".join(f"{head} {acc:.3f}" for head, acc in s["test_acc"].items())
    console.print(f"test accuracy: {accuracy}", highlight=False)
    bullets(s["verdict"])
    dim(f"wrote {out / 'summary.json'}", err=True)
