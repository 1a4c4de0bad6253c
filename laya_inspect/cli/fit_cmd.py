"""`laya-inspect fit-head` (heads on a frozen cache) and `laya-inspect train` (a zoo backbone end to end)."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import app, console, err_console

VAL_MODES = ("stratified", "last")


def _list(value: str | None, cast: Callable[[str], Any], option: str) -> tuple[Any, ...] | None:
    if value is None:
        return None
    try:
        return tuple(cast(v.strip()) for v in value.split(",") if v.strip())
    except ValueError:
        raise typer.BadParameter(f"expected a comma-separated list, got {value!r}", param_hint=option) from None


@contextmanager
def _fit_progress(enabled: bool = True) -> Iterator[Callable[[dict[str, Any]], None]]:
    """Two bars on stderr: runs done, and the current run's epochs with loss and validation accuracy."""
    if not enabled:
        yield lambda event: None
        return
    if not err_console.is_terminal:  # a log file: one plain line per finished run instead of bars
        def on_line(e: dict[str, Any]) -> None:
            if e["event"] == "run_end":
                err_console.print(f"{e.get('stage', 'fit')}: {e['head']} seed {e['seed']} done, "
                                  f"val acc {e['val_acc']:.4f}", highlight=False)

        yield on_line
        return
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=err_console, transient=True)
    with bar:
        tasks: dict[str, Any] = {}

        def on_event(e: dict[str, Any]) -> None:
            stage = e.get("stage", "fit")
            if e["event"] == "run_start":
                if stage not in tasks:
                    tasks[stage] = bar.add_task("grid search" if stage == "grid" else "runs", total=e.get("runs"),
                                                info="")
                if "epoch" in tasks:
                    bar.remove_task(tasks["epoch"])
                tasks["epoch"] = bar.add_task(f"{e['head']} seed {e['seed']}", total=e["epochs"], info="")
            elif e["event"] == "epoch":
                bar.update(tasks["epoch"], completed=e["epoch"],
                           info=f"loss {e['loss']:.4f}  val acc {e['val_acc']:.4f} (best {e['best_val_acc']:.4f})")
            elif e["event"] == "run_end":
                bar.advance(tasks[stage])
                bar.update(tasks[stage], info=f"last: {e['head']} seed {e['seed']} val acc {e['val_acc']:.4f}")

        yield on_event


def _est(d: dict[str, Any] | None, digits: int = 4) -> str:
    if not d:
        return "—"
    std = "n/a" if d.get("std") is None else f"{d['std']:.{digits}f}"
    ci = "[n/a]" if d.get("ci_low") is None else f"[{d['ci_low']:.{digits}f}, {d['ci_high']:.{digits}f}]"
    return f"{d['mean']:.{digits}f} ± {std} {ci}"


def _delta(d: dict[str, Any] | None, digits: int = 4) -> str:
    if not d:
        return "—"
    ci = "[n/a]" if d.get("ci_low") is None else f"[{d['ci_low']:+.{digits}f}, {d['ci_high']:+.{digits}f}]"
    return f"{d['mean']:+.{digits}f} {ci}"


@app.command("fit-head")
def fit_head_command(
    cache: Path = typer.Argument(..., help="feature cache written by `laya-inspect extract`"),
    head: list[str] = typer.Option(["all"], "--head", "-H", help="laya|last|concat|scalarmix|all; repeat or comma-separate"),
    seeds: Optional[int] = typer.Option(None, "--seeds", help="run seeds 0 … N−1 (default 5)"),
    seed: Optional[int] = typer.Option(None, "--seed", help="run this one seed (instead of --seeds)"),
    d_star: int = typer.Option(96, "--d-star", help="adapter width d*"),
    tau: float = typer.Option(1.5, "--tau", help="LAYA softmax temperature τ > 0"),
    psi: str = typer.Option("identity", "--psi", help="LAYA shared map ψ: identity|mlp"),
    score_width: Optional[int] = typer.Option(None, "--score-width", help="LAYA scorer hidden width (default 2·d*)"),
    lr: float = typer.Option(3e-4, "--lr", help="Adam learning rate"),
    batch_size: int = typer.Option(128, "--batch-size"),
    epochs: int = typer.Option(50, "--epochs", help="at most this many epochs"),
    patience: int = typer.Option(5, "--patience", help="early stopping on validation accuracy"),
    val_fraction: float = typer.Option(0.1, "--val-fraction", help="share of the training split held out"),
    val_mode: str = typer.Option("stratified", "--val-mode", help="stratified (seeded) | last (the last rows, as Keras)"),
    split_seed: int = typer.Option(0, "--split-seed", help="seed of the stratified validation draw"),
    grid: bool = typer.Option(False, "--grid", help="first pick LAYA's d*, τ, ψ, width by mean validation accuracy"),
    grid_d_star: Optional[str] = typer.Option(None, "--grid-d-star", help="grid d* values (default 64,96,128)"),
    grid_tau: Optional[str] = typer.Option(None, "--grid-tau", help="grid τ values (default 0.5,1.0,1.5)"),
    grid_psi: Optional[str] = typer.Option(None, "--grid-psi", help="grid ψ values (default identity,mlp)"),
    grid_width: Optional[str] = typer.Option(None, "--grid-width", help="grid scorer widths as multiples of d* (default 1,2)"),
    grid_seeds: int = typer.Option(3, "--grid-seeds", help="seeds per grid configuration (the first of the run's seeds)"),
    train_split: str = typer.Option("train", "--train-split"),
    test_split: str = typer.Option("test", "--test-split"),
    device: str = typer.Option("auto", "--device", help="auto|cpu|cuda"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="output directory (default ./<cache name>-heads)"),
    json_out: bool = typer.Option(False, "--json", help="print the summary as JSON on stdout instead of the table"),
    force: bool = typer.Option(False, "--force", help="overwrite earlier fit-head results in --out"),
) -> None:
    """Fit LAYA and the baseline heads on a frozen feature cache over seeds; report accuracy, macro-F1 and α."""
    from ..profiles import profile_line
    from ..store import FeatureStore
    from ..train import FitConfig, fit_heads, resolve_heads

    if seeds is not None and seed is not None:
        raise typer.BadParameter("give --seeds N or --seed S, not both", param_hint="--seed")
    if val_mode not in VAL_MODES:
        raise typer.BadParameter(f"choose from {', '.join(VAL_MODES)}", param_hint="--val-mode")
    heads = resolve_heads(head)
    grid_values = {k: v for k, v in {
        "grid_d_star": _list(grid_d_star, int, "--grid-d-star"), "grid_tau": _list(grid_tau, float, "--grid-tau"),
        "grid_psi": _list(grid_psi, str, "--grid-psi"), "grid_width_factors": _list(grid_width, int, "--grid-width"),
    }.items() if v is not None}
    config = FitConfig(
        heads=heads, seeds=(seed,) if seed is not None else tuple(range(5 if seeds is None else seeds)),
        d_star=d_star, tau=tau, psi=psi, score_width=score_width, lr=lr, batch_size=batch_size, epochs=epochs,
        patience=patience, val_fraction=val_fraction, val_mode=val_mode, split_seed=split_seed, device=device,
        grid=grid, grid_seeds=grid_seeds, train_split=train_split, test_split=test_split, **grid_values,
    )
    out_dir = out if out is not None else Path(f"{cache.stem}-heads")
    with FeatureStore(cache) as store, _fit_progress() as on_event:
        result = fit_heads(store, config, out_dir=out_dir, progress=on_event, overwrite=force)

    if json_out:
        typer.echo(json.dumps(result.summary, indent=2))
        return
    table = Table(title=f"{cache} — test split, {len(config.seeds)} seed(s), 95% t-interval")
    for col in ("head", "accuracy", "macro-F1", "Δ acc vs last", "seeds"):
        table.add_column(col, no_wrap=col != "head")
    for h in result.summary["heads"]:
        delta = (h.get("delta_vs_last") or {}).get("test_acc")
        table.add_row(h["head"], _est(h["test_acc"]), _est(h["test_macro_f1"]),
                      "(baseline)" if h["head"] == "last" else _delta(delta), str(h["n"]))
    console.print(table)
    if result.grid:
        console.print(f"grid choice (mean val acc): {result.grid['chosen']}", highlight=False)
    if result.profiles:
        console.print(profile_line(result.profiles), highlight=False)
    o = result.out_dir
    console.print(f"heads    {o}/<{'|'.join(config.heads)}>/seed_<{'|'.join(map(str, config.seeds))}>/", highlight=False)
    for label, keys in (("runs", ("runs_csv", "runs_json")), ("summary", ("summary_csv", "summary_json")),
                        ("grid", ("grid_csv", "grid_json"))):
        if keys[0] in result.files:
            console.print(f"{label:<8} {', '.join(str(result.files[k]) for k in keys)}", highlight=False)
    prof = [p for k, p in result.files.items() if str(p).startswith(str(o / "profiles"))]
    if prof:
        console.print(f"profiles {o / 'profiles'}/ ({len(prof)} files)", highlight=False)


@app.command("train")
def train_command(
    model: str = typer.Option(..., "--model", "-m", help="zoo:mlp | zoo:cnn | zoo:bilstm"),
    data: str = typer.Option(..., "--data", "-d", help="dataset spec, e.g. fashion-mnist, cifar10, digits; a text "
                             "table csv:FILE or jsonl:FILE for zoo:bilstm"),
    head: str = typer.Option("last", "--head", "-H", help="last (the backbone's own classifier) | laya | concat | scalarmix"),
    seed: int = typer.Option(0, "--seed", help="initialisation and shuffling seed"),
    lr: float = typer.Option(3e-4, "--lr", help="Adam learning rate"),
    batch_size: int = typer.Option(128, "--batch-size"),
    epochs: int = typer.Option(50, "--epochs", help="at most this many epochs"),
    patience: int = typer.Option(5, "--patience", help="early stopping on validation accuracy"),
    val_fraction: float = typer.Option(0.1, "--val-fraction", help="share of the training split held out"),
    val_mode: str = typer.Option("stratified", "--val-mode", help="stratified | last (the last rows, as Keras)"),
    limit: Optional[int] = typer.Option(None, "--limit", help="at most this many rows per split (seeded, stratified)"),
    d_star: int = typer.Option(96, "--d-star", help="adapter width d* (laya, concat, scalarmix)"),
    tau: float = typer.Option(1.5, "--tau", help="LAYA temperature τ > 0"),
    psi: str = typer.Option("identity", "--psi", help="LAYA shared map ψ: identity|mlp"),
    score_width: Optional[int] = typer.Option(None, "--score-width", help="LAYA scorer width (default 2·d*)"),
    init: str = typer.Option("glorot", "--init", help="glorot (Keras' glorot-uniform, zero bias: the paper's) | torch "
                             "(PyTorch's own defaults), for backbone and head"),
    ln_eps: Optional[float] = typer.Option(None, "--ln-eps", help="the backbone's LayerNorm ε (default 1e-3, Keras')"),
    loss: str = typer.Option("logits", "--loss", help="logits (cross-entropy on logits) | probs (Keras' loss on "
                             "clipped softmax probabilities, as the reference notebook)"),
    device: str = typer.Option("auto", "--device", help="auto|cpu|cuda"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="checkpoint file (default ./zoo-<arch>-<head>-seed<S>.pt)"),
    force: bool = typer.Option(False, "--force", help="overwrite --out if it exists"),
) -> None:
    """Train a zoo backbone end to end with a head (the paper's joint protocol); write a zoo checkpoint."""
    from ..joint import JointConfig, train_joint

    if val_mode not in VAL_MODES:
        raise typer.BadParameter(f"choose from {', '.join(VAL_MODES)}", param_hint="--val-mode")
    config = JointConfig(model=model, data=data, head=head, seed=seed, lr=lr, batch_size=batch_size, epochs=epochs,
                         patience=patience, val_fraction=val_fraction, val_mode=val_mode, limit=limit, device=device,
                         d_star=d_star, tau=tau, psi=psi, score_width=score_width, init=init, ln_eps=ln_eps,
                         loss=loss)
    path = out if out is not None else Path(f"zoo-{config.arch}-{head}-seed{seed}.pt")
    with _fit_progress() as on_event:
        result = train_joint(config, out=path, progress=on_event, overwrite=force)
    m = result.metrics
    console.print(f"{model} + {head} on {data}, seed {seed}: test accuracy {m['test_acc']:.4f}, "
                  f"macro-F1 {m['test_macro_f1']:.4f} (best epoch {m['best_epoch']} of {m['epochs_run']}, "
                  f"val accuracy {m['val_acc']:.4f})", highlight=False)
    if result.alpha_mean is not None:
        console.print(f"{head} mean weight on test: " + " · ".join(
            f"{n} {a:.3f}" for n, a in zip(result.layer_names, result.alpha_mean)), highlight=False)
    if isinstance(m.get("backbone_head"), dict):
        console.print(f"backbone classifier: linear probe on the frozen last block, test accuracy "
                      f"{m['backbone_head']['test_acc']:.4f}", highlight=False)
    console.print(f"checkpoint {result.path}\nmetrics    {result.metrics_path}", highlight=False)
    cache = result.path.with_suffix(".h5")
    console.print(f"next: laya-inspect extract --model {model} --weights {result.path} --data {data} --out {cache}",
                  highlight=False, soft_wrap=True)


@app.command("export-head")
def export_head_command(
    checkpoint: Path = typer.Argument(..., help="zoo checkpoint written by `laya-inspect train`"),
    cache: Path = typer.Option(..., "--cache", "-c", help="the cache `extract` wrote from that checkpoint"),
    out: Path = typer.Option(..., "--out", "-o", help="head directory to write (for `compare`)"),
    split: str = typer.Option("test", "--split", help="split on which to check the head's accuracy"),
) -> None:
    """Turn the head trained jointly by `train` into a head directory that `compare` scores."""
    from ..joint import export_head
    from ..store import FeatureStore

    with FeatureStore(cache) as store:
        s = export_head(checkpoint, store, out, split=split)
    joint = "" if s["joint_test_acc"] is None else f" (train measured {s['joint_test_acc']:.4f})"
    console.print(f"{s['kind']} head → {out}: accuracy on {s['split']} of {cache} {s['accuracy_on_cache']:.4f}{joint}")
    if s["mean_weights_on_cache"] is not None:
        console.print("mean layer weights: " + " · ".join(f"{w:.3f}" for w in s["mean_weights_on_cache"]))
    console.print(f"next: laya-inspect compare {out} --cache {cache} --method all")
