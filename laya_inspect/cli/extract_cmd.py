"""`laya-inspect extract`."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from . import app, console
from .progress import row_progress


def _splits(value: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in value.split(",") if s.strip())


@app.command("extract")
def extract_command(
    model: str = typer.Option(..., "--model", "-m", help="torchvision:NAME, timm:NAME, hf:DIR, torchscript:FILE, python:pkg.mod:factory, zoo:mlp|cnn|bilstm"),
    data: Optional[str] = typer.Option(None, "--data", "-d", help="fashion-mnist[:ROOT], cifar10[:ROOT], digits, imagefolder:DIR, npz:FILE, csv:FILE, jsonl:FILE"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="HDF5 file to write (resumed if an interrupted run left it)"),
    weights: Optional[str] = typer.Option(None, "--weights", "-w", help="state_dict file (.pt/.pth/.safetensors) or zoo checkpoint"),
    layers: str = typer.Option("all", "--layers", "-l", help="'all', dotted names, indices (negatives ok) or ranges a:b, comma-separated"),
    pool: str = typer.Option("auto", "--pool", help="auto|gap|cls|mean|max|last|flatten"),
    split: str = typer.Option("train,test", "--split", help="splits to extract, comma-separated"),
    limit: Optional[int] = typer.Option(None, "--limit", help="at most this many rows per split (seeded, stratified)"),
    batch_size: int = typer.Option(128, "--batch-size"),
    dtype: str = typer.Option("float32", "--dtype", help="float32|float16"),
    seed: int = typer.Option(0, "--seed"),
    device: str = typer.Option("auto", "--device", help="auto|cpu|cuda"),
    image_size: Optional[int] = typer.Option(None, "--image-size", help="resize images to this side (default: what the model expects)"),
    resize: str = typer.Option("stretch", "--resize", help="stretch (straight to the size) | crop (keep the aspect "
                               "ratio, scale to size/0.875, centre crop: torchvision's evaluation recipe)"),
    normalize: Optional[str] = typer.Option(None, "--normalize", help="none|imagenet|M1,M2,M3/S1,S2,S3 (default: what the model expects)"),
    trust_pickle: bool = typer.Option(False, "--trust-pickle", help="allow a fully pickled model file (runs code from it)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="start again even if --out exists"),
    list_layers: bool = typer.Option(False, "--list-layers", help="print each candidate layer's name, type and output shape, then stop"),
) -> None:
    """Stream the chosen layers' hidden states of a frozen model into one HDF5 cache."""
    from ..errors import InputError
    from ..extract import ExtractConfig, extract, list_model_layers

    if list_layers:
        loaded, infos = list_model_layers(model=model, data=data, weights=weights, trust_pickle=trust_pickle,
                                          image_size=image_size, normalize=normalize, resize=resize, device=device)
        table = Table(title=f"layers of {model}")
        for col in ("name", "type", "output shape", "default"):
            table.add_column(col)
        defaults = set(loaded.default_layers)
        for info in infos:
            table.add_row(info.name, info.type, str(tuple(info.shape)) if info.shape is not None else "?",
                          "✓" if info.name in defaults else "")
        console.print(table)
        return
    if data is None or out is None:
        raise InputError("extract needs --data and --out (or --list-layers)")
    config = ExtractConfig(model=model, weights=weights, data=data, out=str(out), layers=layers, pool=pool,
                           splits=_splits(split), limit=limit, batch_size=batch_size, dtype=dtype, seed=seed,
                           device=device, trust_pickle=trust_pickle, image_size=image_size,
                           normalize=normalize, resize=resize, overwrite=overwrite)
    with row_progress("rows") as on_event:
        result = extract(config, progress=on_event)
    table = Table(title=f"{result.path}")
    for col in ("layer", "width", "pooling"):
        table.add_column(col)
    for name, width, how in zip(result.layer_names, result.widths, result.pooling):
        table.add_row(name, str(width), how)
    console.print(table)
    resumed = {s: n for s, n in result.resumed_from.items() if n}
    if resumed:
        console.print(f"resumed from {resumed}")
    rows = ", ".join(f"{s}: {n}" for s, n in result.rows.items())
    console.print(f"wrote {rows} rows in {result.seconds:.1f} s ({result.rows_per_second:,.0f} rows/s) → {result.path}")
