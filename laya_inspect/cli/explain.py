"""`laya-inspect explain`: one prediction, layer by layer."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any, Optional

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from ..report.terminal import warning_lines
from ..runtime import DEVICE_HELP, set_threads
from .app import THREADS, app, console, dim, json_text, out_file, show


def explain_table(e: Any) -> Table:
    """Layers × (every method's score, the LOLO effect); the top layer of each column marked *, every
    one of the layers that tie at its top (a uniform ScalarMix's static weights, saturated effects):
    a tie is not the shallowest layer's win (stats.top_credit)."""
    import numpy as np

    from ..report.reading import name, num

    columns = [(name(m) if m != "static" else "static", s, 3) for m, s in e.scores.items()]
    drawn = e.effects_ci is not None  # resample: the mean over the draws, with its interval beside it
    columns.append((f"LOLO effect ({e.ablation})", e.effects, 3 if drawn else 4))
    tops = [_top_layers(np.asarray(values, dtype=np.float64)) for _, values, _ in columns]
    if e.effects_tied is not None:  # drawn: every layer the draws do not tell from the top (explain.tied_with_top)
        tops[-1] = e.effects_tied
    rows = []
    for i, layer in enumerate(e.layer_names):
        cells = [
            Text(num(values[i], digits, sign=True) + ("*" if tops[k][i] else " "), style="bold" if tops[k][i] else "")
            for k, (_, values, digits) in enumerate(columns)
        ]
        if drawn:
            low, high = e.effects_ci[i]
            cells.append(Text(f"[{num(low, 3, sign=True)}, {num(high, 3, sign=True)}]"))
        rows.append([Text(layer), *cells])
    # each column at least as wide as the widest word of its cells: on a narrow terminal titles and
    # intervals wrap between words, and no layer name or number is cut (rich cut "features.16" to
    # "features" and "+0.886*" to "+0.…", and cropped the interval at the edge)
    titles = ["layer", *(t for t, _, _ in columns)] + ([f"95% interval ({e.draws} draws)"] if drawn else [])
    # A column of single words never wraps (no_wrap): rich narrows a table by shrinking its widest
    # wrapping columns, then widens each back to its min_width, and crops the last column by the
    # difference (HF layer names, "hidden_states.0", cut the interval to "[-0.2" on 80 columns)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for k, title in enumerate(titles):
        texts = [title, *(cells[k].plain for cells in rows)]
        words = [w for text in texts for w in text.split()]
        one_word = all(len(text.split()) <= 1 for text in texts)
        table.add_column(title, justify="left" if k == 0 else "right", min_width=max(map(len, words)), no_wrap=one_word)
    for cells in rows:
        table.add_row(*cells)
    return table


def _settings(e: Any) -> list[tuple[str, bool]]:
    """The settings that decide the row's numbers, (text, left at its default) each, where each acts: the
    IG baseline and steps where IG ran, the seed and draws where donors were drawn. One given that decides
    nothing here is said as given, with why: left out, the line could read "all left at their defaults"."""
    c, left = e.config, set(e.config_defaults)
    items = [(f"target {c['target']}", "target" in left), (f"effect {c['effect']}", "effect" in left)]
    items.append((f"ablation {e.ablation}", "ablation" in left))
    inert = []
    if "ig" in e.scores:  # IG's baseline and steps change its scores
        items.append((f"IG baseline {c['baseline']}, {c['n_steps']} steps", {"baseline", "n_steps"} <= left))
    else:
        given = [f"--{k.replace('_', '-')} {c[k]}" for k in ("baseline", "n_steps") if k not in left]
        inert += [(f"{flag} (decides nothing here: IG did not run)", False) for flag in given]
    if e.draws > 1:  # the donors: how many, and the seed that draws them
        items += [(f"{e.draws} draws", "draws" in left), (f"seed {c['seed']}", "seed" in left)]
    else:
        given = [f"--{k} {c[k]}" for k in ("draws", "seed") if k not in left]
        inert += [(f"{flag} (decides nothing here: {e.ablation} draws no donors)", False) for flag in given]
    items.append((f"device {e.device}" + " (auto)" * (c["device"] == "auto"), "device" in left))
    items += [("--allow-other-cache", False)] if c["allow_other_cache"] else []
    return items + inert


def _printable(text: str) -> str:
    """``text`` with each character that does not print (a newline, a right-to-left override) as its
    escape: one line, its words in the order the model read them."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _top_layers(values: Any) -> Any:
    """(L,) bool: the layers whose value is the column's largest (NaNs never; none when all are NaN)."""
    import numpy as np

    finite = ~np.isnan(values)
    return finite & (values == (values[finite].max() if finite.any() else np.nan))


@app.command("explain")
def explain_command(
    head_dir: Path = typer.Argument(..., metavar="HEAD_DIR", help="a head directory written by fit-head"),
    cache: Path = typer.Option(..., "--cache", "-c", help="features.h5 the head was trained on"),
    row: int = typer.Option(..., "--row", "-r", help="row of the split to explain (0 … N−1)"),
    split: str = typer.Option("test", "--split", help="cache split the row is in"),
    target: str = typer.Option("pred", "--target", help="class to explain: pred | true | a class name or index"),
    ablation: str = typer.Option(
        "resample",
        "--ablation",
        help="how a layer is removed: resample (default; not mean, IG's baseline) | mean | zero | drop | mix",
    ),
    baseline: str = typer.Option("mean", "--baseline", help="IG baseline: mean (train split) | zero"),
    effect: str = typer.Option(
        "logit", "--effect", help="what a removal is measured on: logit (the target logit) | prob (its probability)"
    ),
    n_steps: int = typer.Option(50, "--n-steps", help="Integrated Gradients steps (1 … 10,000)"),
    seed: int = typer.Option(0, "--seed", help="seed of the resample donors"),
    draws: int = typer.Option(
        32,
        "--draws",
        help="resample: donors drawn for the row (2 … 1,024); the LOLO effect is their mean, with a 95% interval",
    ),
    device: str = typer.Option("auto", "--device", help=DEVICE_HELP),
    threads: Optional[int] = THREADS,
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="write the figure here (.png, or .svg)", parser=out_file("figure.png")
    ),
    force: bool = typer.Option(
        False,
        "--force",
        metavar="",
        help="replace an existing --out (only a figure explain wrote; never anyone else's file)",
    ),
    as_json: bool = typer.Option(False, "--json", metavar="", help="print the numbers as JSON instead of the table"),
    allow_other_cache: bool = typer.Option(
        False, "--allow-other-cache", metavar="", help="use a head trained on a cache with another fingerprint"
    ),
) -> None:
    """Explain one prediction: its input, the prediction, and per layer α, IG, Grad-CAM and the LOLO effect.

    Example:
      laya-inspect explain heads/laya/seed_0 --cache features.h5 --row 5 \\
        --out row5.png
    """
    from ..cache.store import FeatureStore
    from ..explain import check_figure_out, explain_row, write_figure
    from ..files import output_lock

    if out is not None:  # before the work: never over (or into) the cache, the head directory or a file not ours
        check_figure_out(out, force=force, inputs=[cache, head_dir])

    # held from the check above to the write: a second explain writing the same --out is refused, naming this PID
    with output_lock(out) if out is not None else nullcontext():
        # head-sized work, as compare's: torch's own default (every core) would crowd a shared machine
        set_threads(threads)
        with FeatureStore(cache) as store:
            e = explain_row(
                head_dir,
                store,
                row=row,
                split=split,
                target=target,
                ablation=ablation,
                baseline=baseline,
                n_steps=n_steps,
                seed=seed,
                device=device,
                allow_other_cache=allow_other_cache,
                effect=effect,
                draws=draws,
            )
        path = write_figure(e, out, force=force, locked=True) if out is not None else None
    if as_json:
        typer.echo(json_text(e.to_dict()))
    else:
        _print(e)
    if path is not None:
        dim(f"wrote {path}", err=True)


def _print(e: Any) -> None:
    from ..explain import VERDICT_NOTE, profile_line, tie_line

    top = sorted(range(len(e.probs)), key=lambda c: -e.probs[c])[:3]
    console.print(
        Text.assemble(
            (f"{e.head}", "bold"),
            f" ({e.head_kind}) on {e.split} row {e.row} ({e.input.where(e.source_row)}): label "
            f"{e.class_name(e.label)}, predicted {e.class_name(e.pred)} "
            f"({', '.join(f'{e.class_name(c)} {e.probs[c]:.3f}' for c in top)})",
        )
    )
    console.print(
        f"explaining class {e.class_name(e.target)} ({e.target_rule}): p {e.p:.4f}; LOLO effect = the drop of "
        f"its {'logit' if e.effect == 'logit' else 'probability'} with the layer removed ({e.ablation} ablation)",
        highlight=False,
    )
    from ..report.settings import settings_line

    console.print(settings_line(_settings(e), min(console.width, 100)), highlight=False)
    if e.input.kind == "text":
        console.print(Text("input: " + _printable((e.input.text or "")[:300]), style="dim"))
    if e.input.note:
        console.print(Text(e.input.note, style="yellow"))
    show(explain_table(e))
    if (tie := tie_line(e)) is not None:
        console.print(Text(tie, "yellow"))
    if (said := profile_line(e)) is not None:
        console.print(said, highlight=False)
    for why in e.skipped.values():
        console.print(Text(f"skipped: {why}", style="dim"))
    for line in warning_lines(e.cache_warnings) + warning_lines(e.head_warnings, of="head"):
        console.print(line, highlight=False)

    console.print(
        Text(
            "* the layer each column ranks first (each of the layers tied at its top); scores are on each "
            "method's own scale (docs/METHOD.md)",
            "dim",
        )
    )
    if e.effects_ci is not None:
        console.print(
            Text(
                f"LOLO effect: the mean over {e.draws} donors drawn for this row (--draws, seeded by --seed), its "
                "95% t-interval over the draws beside it; one donor is not the effect",
                "dim",
            )
        )
    console.print(Text(VERDICT_NOTE, "dim"))
