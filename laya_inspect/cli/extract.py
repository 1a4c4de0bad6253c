"""`laya-inspect extract`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table
from rich.text import Text

from ..cache.extract_config import ExtractConfig, ExtractResult
from ..options import defaulted
from .app import THREADS, Stopped, app, comma_list, console, from_options, opt, out_file, show, wrapped
from .progress import row_progress


@app.command("extract")
def extract_command(
    model: str = opt(ExtractConfig, "model", "-m"),
    data: Optional[str] = opt(ExtractConfig, "data", "-d", default=None),
    out: Optional[Path] = opt(ExtractConfig, "out", "-o", default=None, parser=out_file("features.h5")),
    weights: Optional[str] = opt(ExtractConfig, "weights", "-w"),
    layers: str = opt(ExtractConfig, "layers", "-l"),
    pool: str = opt(ExtractConfig, "pool"),
    split: str = opt(ExtractConfig, "splits", default="train,test"),
    limit: Optional[int] = opt(ExtractConfig, "limit"),
    batch_size: Optional[int] = opt(ExtractConfig, "batch_size"),
    dtype: str = opt(ExtractConfig, "dtype"),
    amp: bool = opt(ExtractConfig, "amp"),
    seed: int = opt(ExtractConfig, "seed"),
    device: str = opt(ExtractConfig, "device"),
    image_size: Optional[int] = opt(ExtractConfig, "image_size"),
    resize: str | None = opt(ExtractConfig, "resize"),
    normalize: Optional[str] = opt(ExtractConfig, "normalize"),
    trust_pickle: bool = opt(ExtractConfig, "trust_pickle"),
    trust_remote_code: bool = opt(ExtractConfig, "trust_remote_code"),
    random_init: bool = opt(ExtractConfig, "random_init"),
    allow_nonfinite: bool = opt(ExtractConfig, "allow_nonfinite"),
    overwrite: bool = opt(ExtractConfig, "overwrite"),
    threads: Optional[int] = THREADS,
    list_layers: bool = typer.Option(
        False, "--list-layers", metavar="", help="print each candidate layer's name, type and output shape, then stop"
    ),
) -> None:
    """Stream the chosen layers' hidden states of a frozen model into one HDF5 cache.

    Example:
      laya-inspect extract --model torchvision:mobilenet_v2 --weights mnv2.pth \\
        --data imagefolder:photos/ --layers 1: --out features.h5

    Under `torchrun --nproc-per-node N -m laya_inspect extract …` each process writes a shard of the
    rows and the first joins them into --out (docs/SCALING.md); only that one prints.
    """
    before = _file_identity(Path(out)) if out is not None else None
    try:
        from ..cache.extract import extract_features, list_model_layers
        from ..distributed import is_main_process
        from ..errors import InputError
        from ..runtime import set_threads

        used = set_threads(threads, work="backbone")
        if list_layers:
            loaded, infos = list_model_layers(
                model=model,
                data=data,
                weights=weights,
                trust_pickle=trust_pickle,
                trust_remote_code=trust_remote_code,
                random_init=random_init,
                image_size=image_size,
                normalize=normalize,
                resize=resize,
                device=device,
            )
            defaults = set(loaded.default_layers)
            layer_rows = [
                (
                    info.name,
                    info.type,
                    str(tuple(info.shape)) if info.shape is not None else "?",
                    "✓" if info.name in defaults else "",
                )
                for info in infos
            ]
            _print_layers(f"layers of {model}", layer_rows)
            return
        if data is None or out is None:
            raise InputError("extract needs --data and --out (or --list-layers)")
        config = from_options(ExtractConfig, locals(), out=str(out), splits=comma_list(split, str, "--split"))
        if not is_main_process():  # another process of a torchrun launch: rank 0 speaks for all
            extract_features(config)
            return
        with row_progress("rows") as on_event:
            result = extract_features(config, progress=on_event)
    except KeyboardInterrupt:
        if out is None:
            raise
        if out.is_file() and _file_identity(out) != before:  # stopped after the cache was renamed into place
            raise Stopped(f"{out} was written whole before the stop: every row is in it, ready to use") from None
        said = _nothing_written(out)
        if said is None:
            raise
        raise Stopped(said) from None
    from ..cache.rows import top1_line
    from ..report.settings import settings_line

    # soft_wrap: a path longer than the line stays whole, for the terminal to wrap, not cut by Rich mid-word
    console.print(settings_line(_settings(config, result), min(console.width, 100)), highlight=False, soft_wrap=True)
    table = Table(title=Text(str(result.path)))  # Text: a "[a…]" in a path or a name is no style tag
    for col in ("layer", "width", "pooling"):
        table.add_column(col)
    for name, width, how in zip(result.layer_names, result.widths, result.pooling):
        table.add_row(Text(name), str(width), Text(how))
    show(table)
    resumed = {s: n for s, n in result.resumed_from.items() if n}
    if resumed:
        said = ", ".join(f"{s}: {n:,} rows" for s, n in resumed.items())
        console.print(f"resumed from the rows already written ({said})", highlight=False, markup=False)
    if top1_line(result.model_top1):  # near chance, the warning below says so too: this line is for every run
        console.print(top1_line(result.model_top1), highlight=False, markup=False)
    for warning in result.warnings:
        wrapped(warning, lead="warning: ", style="yellow", err=True)
    rows = ", ".join(f"{s}: {n}" for s, n in result.rows.items())
    console.print(
        f"wrote {rows} rows in {result.seconds:.1f} s ({result.rows_per_second:,.0f} rows/s, "
        f"batch {result.batch_size}, {used} thread(s)"
        + (f" × {result.world_size} processes" if result.world_size > 1 else "")
        + f") → {result.path}",
        markup=False,
    )


def _settings(config: ExtractConfig, result: ExtractResult) -> list[tuple[str, bool]]:
    """The settings that shape the stored rows, (text, left at its default) each, in words as fit's and
    compare's lines name theirs; the layers read and their pooling are named in the table below, so
    they are said only as given, and --pool as the table shows it (a 2-D layer has nothing to pool)."""
    left = defaulted(config)
    given = [(f"weights {config.weights}", False)] if config.weights else []
    given += [("random initial weights", False)] if config.random_init else []
    pooled = sum(how == config.pool for how in result.pooling)
    pool = f"pooling {config.pool}"
    if config.pool == "auto":  # each layer's own rule: the table names what it chose
        pool += " (the table says each layer's)"
    elif pooled < len(result.pooling):
        pool += f" on {pooled} of {len(result.pooling)} layers (the table says each)"
    # the layers read and their pooling, said left at their defaults too: the table names the layers,
    # not that --layers all chose them, nor the fallback rule that read the model's structure to pick them
    layers = f"layers {config.layers}" + (f": {result.layers_how}" if result.layers_how else "")
    given += [(layers, "layers" in left), (pool, "pool" in left)]
    given += [
        (text, False)
        for name, text in (
            ("amp", "bfloat16 autocast"),
            ("allow_nonfinite", "NaN/inf activations kept"),
        )
        if name not in left
    ]
    given += _image_size(result.transforms, "image_size" in left)
    given += _inputs(config, result.transforms, left)
    device = f"device {result.device or config.device}" + " (auto)" * (config.device == "auto")
    return given + [  # which rows (--limit's subset, a dataset's own split), the precision and the device
        (f"splits {','.join(config.splits)}{_drawn(result.split_info)}", "splits" in left),
        ("every row" if config.limit is None else f"≤ {config.limit:,} rows per split", "limit" in left),
        (f"seed {config.seed}", "seed" in left),
        *([] if config.amp else [("forward in float32", True)]),  # --amp is said as given above
        (f"stored as {config.dtype}", "dtype" in left),
        # its floating point moves the last digits of every row
        (device, "device" in left),
    ]


def _inputs(config: ExtractConfig, transforms: dict, left: list[str]) -> list[tuple[str, bool]]:
    """How inputs reached the model, each step that decides the rows: the resize's fit, a colour change,
    the normalisation and where it came from, a text's token limit. A torchvision or timm model's
    mean/std come from its architecture's preset, which a user's own --weights need not share: said so."""
    from ..report.cached import COLOUR, FIT_WORDS, PRESET_SOURCES  # the words report.html says them in

    items: list[tuple[str, bool]] = []
    resize, channels, norm = transforms.get("resize"), transforms.get("channels"), transforms.get("normalize")
    if resize or "resize" not in left:
        fit = (resize or {}).get("fit") or config.resize or "stretch"
        kept = FIT_WORDS["stretch" if fit == "stretch" else "crop"]
        items.append((f"resize {fit}{kept if resize else ' (no image resized)'}", "resize" in left))
    if channels:
        items.append((f"colour {channels['from']}→{channels['to']} channels ({channels['how']}, the model's)", True))
    elif transforms.get("kind") == "image":  # no option sets it: files are decoded to the channels the model takes
        n = transforms["output"][0]
        items.append((f"images read as {COLOUR.get(n, f'{n} channels')}", True))
    if isinstance(norm, dict):
        if norm.get("applied"):
            text = f"normalize mean {_vals(norm['mean'])} / std {_vals(norm['std'])}"
            if norm.get("from") == "model":
                text += " (the model's"
                if config.weights and config.model.split(":", 1)[0] in PRESET_SOURCES:
                    text += ": its architecture's preset, assumed for --weights; --normalize if trained otherwise"
                text += ")"
        else:
            why = str(norm.get("why") or norm.get("from")).removeprefix("none: ")
            text = f"no normalisation ({why})"
        items.append((text, "normalize" in left))
    if transforms.get("kind") == "text":  # no option sets it: always the default
        items.append((f"texts cut at {transforms.get('max_length')} tokens", True))
    return items


def _vals(v: list) -> str:
    return ",".join(f"{x:g}" for x in v)


def _drawn(info: dict) -> str:
    """How a test split was drawn from data that name none (no split column, no train/ and test/
    folders): a fifth of the rows, by default, that a user who thought the file held one split reads."""
    if info.get("method") not in ("stratified", "random") or not info.get("n_source"):
        return ""
    how = "stratified" if info["method"] == "stratified" else "at random"
    return (
        f" (the data name no split: test drawn {how}, {info.get('test_fraction', 0):.0%} of "
        f"{int(info['n_source']):,} rows, seed {info.get('seed')})"
    )


def _image_size(transforms: dict, left: bool) -> list[tuple[str, bool]]:
    """The side images were fed at, said left at its default too: 32-px CIFAR images reach MobileNetV2
    at 224 px unless --image-size says otherwise, and its rows differ with it."""
    if transforms.get("kind") != "image":
        return []
    h, w = transforms["output"][1:]
    if not isinstance(h, int):  # no size to reach: each image as it came
        return [("each image at its own size", left)]
    size = str(h) if h == w else f"{h}×{w}"
    whose = "" if not left else " (the model's)" if transforms.get("resize") else " (the images' own)"
    return [(f"image size {size}{whose}", left)]


def _file_identity(path: Path) -> tuple[int, int, int] | None:
    """(device, inode, change time) of ``path``, None where there is none: a cache renamed into place is another."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_ctime_ns


def _nothing_written(out: Path) -> str | None:
    """What an extract stopped before any row was written left on disk, in words (the line after
    "interrupted:"); None where rows were written (INTERRUPTED's line says what is kept) or the run
    was one of several processes (their shard files)."""
    from ..cache.partial import partial_path, rows_on_disk
    from ..cache.shards import shard_dir

    partial = partial_path(out)
    rows = rows_on_disk(out)
    if rows is not None and any(rows.values()):
        return None
    kept = f"; {out}, the earlier cache, is as it was" if out.is_file() else ""
    if rows is not None:
        return (
            f"no row was written: {partial} holds the cache's layout and no rows{kept}; run the same command "
            "again to start from the first row, or pass --overwrite to start with other options"
        )
    if partial.exists() or shard_dir(out).exists():
        return None
    return f"no row was written and no file was made{kept}; run the same command again"


def _print_layers(title: str, rows: list[tuple[str, str, str, str]]) -> None:
    """A table when it fits the terminal; else one plain line per layer (long lines soft-wrap), so that
    a name, meant to be copied into --layers, is never cut, wrapped inside or squeezed out."""
    header = ("name", "type", "output shape", "default")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    if sum(widths) + 3 * len(widths) + 1 <= console.width:
        table = Table(title=Text(title))
        for col in header:
            table.add_column(col, no_wrap=True)
        for row in rows:
            table.add_row(*map(Text, row))
        show(table)
        return
    console.print(title, highlight=False, markup=False)
    for row in [header, *rows]:
        line = "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
        console.print(line, soft_wrap=True, highlight=False, markup=False)
