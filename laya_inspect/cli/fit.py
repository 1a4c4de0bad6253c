"""`laya-inspect fit-head` (heads on a frozen cache) and `laya-inspect train` (a zoo backbone end to end)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import InputError
from ..options import check_seed
from ..report.settings import fit_settings_line, settings_line
from ..report.terminal import fit_table, fit_title, gate_lines
from ..training.fit_config import FitConfig, JointConfig
from ..training.stats import counted, rows_accuracy
from .app import app, comma_list, console, from_options, json_text, opt, out_file, show, warn
from .progress import fit_progress


def _seeds(seeds: int | None, seed: int | None) -> tuple[int, ...]:
    """``--seeds N`` runs seeds 0 … N−1 (5 when neither is given); ``--seed S`` runs seed S alone."""
    if seeds is not None and seed is not None:
        raise typer.BadParameter("give --seeds N or --seed S, not both", param_hint="--seed")
    if seed is not None:
        return (check_seed(seed),)
    if seeds is not None and seeds < 1:
        raise InputError(
            f"--seeds {seeds}: --seeds is how many seeds to run (N ≥ 1 runs seeds 0 … N−1); "
            "give --seed S to run seed S alone"
        )
    return tuple(range(5 if seeds is None else seeds))


def print_fit(summary: dict[str, Any], title: str, profiles: dict[str, Any] | None = None, grid: Any = None) -> None:
    """The table and gate lines of a fit-head summary (fit-head, report, demo), its grid choice and α profile."""
    from ..training.profiles import profile_lines

    settings = fit_settings_line(summary, min(console.width, 100))  # a long line breaks between its items
    if settings is not None:
        console.print(settings, highlight=False, soft_wrap=True)  # a path longer than a line stays whole
    show(fit_table(summary, title))
    for gate in gate_lines(summary):
        console.print(gate, highlight=False, markup=False)
    if grid:
        console.print(f"grid choice ({grid['selection']}): {grid['chosen']}", highlight=False, markup=False)
    for line in profile_lines(profiles) if profiles else []:
        console.print(line, highlight=False, markup=False)


FIT_FORCE_HELP = "replace a non-empty --out that fit-head wrote, whole (never a folder holding other files)"
TRAIN_FORCE_HELP = "replace --out if it is a checkpoint train wrote (never any other file)"
EXPORT_FORCE_HELP = "replace a non-empty --out that export-head wrote, whole (never a folder holding other files)"


@app.command("fit-head")
def fit_head_command(
    cache: Path = typer.Argument(..., help="feature cache written by `laya-inspect extract`"),
    head: list[str] = opt(FitConfig, "heads", "-H", default=["all"]),
    seeds: Optional[int] = opt(FitConfig, "seeds", default=None),
    seed: Optional[int] = typer.Option(None, "--seed", help="run this one seed (instead of --seeds)"),
    d_star: int = opt(FitConfig, "d_star"),
    tau: float = opt(FitConfig, "tau"),
    psi: str = opt(FitConfig, "psi"),
    score_width: Optional[int] = opt(FitConfig, "score_width"),
    lr: float = opt(FitConfig, "lr"),
    batch_size: int = opt(FitConfig, "batch_size"),
    epochs: Optional[int] = opt(FitConfig, "epochs"),
    patience: Optional[int] = opt(FitConfig, "patience"),
    monitor: str = opt(FitConfig, "monitor"),
    weight_decay: float = opt(FitConfig, "weight_decay"),
    standardize: str = opt(FitConfig, "standardize"),
    probe: bool = opt(FitConfig, "probe"),
    svg: bool = opt(FitConfig, "svg"),
    val_fraction: float = opt(FitConfig, "val_fraction"),
    val_mode: str = opt(FitConfig, "val_mode"),
    split_seed: int = opt(FitConfig, "split_seed"),
    grid: bool = opt(FitConfig, "grid"),
    grid_d_star: Optional[str] = opt(FitConfig, "grid_d_star", default=None),
    grid_tau: Optional[str] = opt(FitConfig, "grid_tau", default=None),
    grid_psi: Optional[str] = opt(FitConfig, "grid_psi", default=None),
    grid_width: Optional[str] = opt(FitConfig, "grid_width_factors", default=None),
    grid_seeds: int = opt(FitConfig, "grid_seeds"),
    layers: str = opt(FitConfig, "layers"),
    train_split: str = opt(FitConfig, "train_split"),
    test_split: str = opt(FitConfig, "test_split"),
    device: str = opt(FitConfig, "device"),
    threads: Optional[int] = opt(FitConfig, "threads"),
    workers: Optional[int] = opt(FitConfig, "workers"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="output directory (default ./<cache name>-heads)"),
    json_out: bool = typer.Option(
        False, "--json", metavar="", help="print the summary as JSON on stdout instead of the table"
    ),
    force: bool = typer.Option(False, "--force", metavar="", help=FIT_FORCE_HELP),
) -> None:
    """Fit LAYA and the baseline heads on a frozen feature cache over seeds; report accuracy, macro-F1 and α.

    Example:
      laya-inspect fit-head features.h5 --head all --seeds 3 --out heads
    """
    from ..cache.store import FeatureStore
    from ..files import plain
    from ..runtime import set_threads
    from ..training.fit_head import fit_heads, resolve_heads

    seed_values = _seeds(seeds, seed)
    heads = resolve_heads(head)
    grids = {  # an option left out keeps FitConfig's default
        field: getattr(FitConfig, field) if value is None else comma_list(value, cast, flag)
        for field, value, cast, flag in (
            ("grid_d_star", grid_d_star, int, "--grid-d-star"),
            ("grid_tau", grid_tau, float, "--grid-tau"),
            ("grid_psi", grid_psi, str, "--grid-psi"),
            ("grid_width_factors", grid_width, int, "--grid-width"),
        )
    }
    config = from_options(FitConfig, locals(), seeds=seed_values, **grids)
    set_threads(config.threads)  # head-sized work: the default is a few threads at most
    out_dir = out if out is not None else Path(f"{cache.stem}-heads")
    with FeatureStore(cache) as store, fit_progress() as on_event:
        result = fit_heads(store, config, out_dir=out_dir, progress=on_event, overwrite=force)
    if not result.summary:  # another process of a torchrun launch: rank 0 writes and reports
        return
    if json_out:
        typer.echo(json_text(plain(result.summary), allow_nan=False))
        return
    print_fit(result.summary, fit_title(cache, result.summary, len(config.seeds)), result.profiles, result.grid)
    o = result.out_dir
    console.print(
        f"heads    {o}/<{'|'.join(config.heads)}>/seed_<{'|'.join(map(str, config.seeds))}>/",
        highlight=False,
        markup=False,
    )
    for label, keys in (
        ("runs", ("runs_csv", "runs_json")),
        ("summary", ("summary_csv", "summary_json")),
        ("grid", ("grid_csv", "grid_json")),
    ):
        if keys[0] in result.files:
            console.print(f"{label:<8} {', '.join(str(result.files[k]) for k in keys)}", highlight=False, markup=False)
    prof = [p for k, p in result.files.items() if str(p).startswith(str(o / "profiles"))]
    if prof:
        console.print(f"profiles {o / 'profiles'}/ ({len(prof)} files)", highlight=False, markup=False)
    if "report_html" in result.files:
        console.print(f"report   {o / 'report.html'} (open it in a browser)", highlight=False, markup=False)


def train_settings(metrics: dict[str, Any], config: JointConfig, width: int = 100) -> Any:
    """train's settings line: every option that decides its numbers, those left at their defaults
    said apart (from the metrics' ``config_defaults``), the head's own options only where they act."""
    c, left, unused = config, set(metrics.get("config_defaults") or []), metrics.get("not_used") or {}
    ln_eps = "1e-3 (Keras')" if c.ln_eps is None else f"{c.ln_eps:g}"
    ln_eps = f"LayerNorm ε {ln_eps}" if "ln_eps" not in unused else f"LayerNorm ε {unused['ln_eps']}"
    init = f"init {c.init}" + (f" ({unused['init']})" if "init" in unused else "")
    items = [
        ("head", f"head {c.head}"),
        *([("d_star", f"d*={c.d_star}")] if c.head != "last" else []),
        *([("tau", f"τ={c.tau:g}"), ("psi", f"ψ {c.psi}")] if c.head == "laya" else []),
        *([("score_width", f"scorer width {c.score_width or 2 * c.d_star}")] if c.head == "laya" else []),
        ("init", init),
        ("lr", f"lr {c.lr:g}"),
        ("weight_decay", f"weight decay {c.weight_decay:g}"),
        ("epochs", f"≤ {counted(c.epochs, 'epoch')}"),
        # the first epoch is always a new best: a patience of epochs − 1 or more never stops a run early
        ("patience", f"patience {c.patience}" + " (no early stop)" * (c.patience >= c.epochs - 1)),
        ("monitor", f"early stopping on validation {c.monitor}"),
        ("val_fraction", f"validation {c.val_fraction:g} of train"),
        ("val_mode", f"validation rows: {c.val_mode}"),
        ("limit", "all rows" if c.limit is None else f"≤ {c.limit} rows per split"),
        ("loss", f"loss on {c.loss}"),
        ("ln_eps", ln_eps),
        ("seed", f"seed {c.seed}"),
        ("batch_size", f"batch {c.batch_size}"),
        ("device", f"device {metrics.get('device', c.device)}" + " (auto)" * (c.device == "auto")),
    ]
    return settings_line([(text, name in left) for name, text in items], width)


@app.command("train")
def train_command(
    model: str = opt(JointConfig, "model", "-m", default=...),
    data: str = opt(JointConfig, "data", "-d", default=...),
    head: str = opt(JointConfig, "head", "-H"),
    seed: int = opt(JointConfig, "seed"),
    lr: float = opt(JointConfig, "lr"),
    batch_size: int = opt(JointConfig, "batch_size"),
    epochs: int = opt(JointConfig, "epochs"),
    patience: int = opt(JointConfig, "patience"),
    monitor: str = opt(JointConfig, "monitor"),
    weight_decay: float = opt(JointConfig, "weight_decay"),
    val_fraction: float = opt(JointConfig, "val_fraction"),
    val_mode: str = opt(JointConfig, "val_mode"),
    limit: Optional[int] = opt(JointConfig, "limit"),
    d_star: int = opt(JointConfig, "d_star"),
    tau: float = opt(JointConfig, "tau"),
    psi: str = opt(JointConfig, "psi"),
    score_width: Optional[int] = opt(JointConfig, "score_width"),
    init: str = opt(JointConfig, "init"),
    ln_eps: Optional[float] = opt(JointConfig, "ln_eps"),
    loss: str = opt(JointConfig, "loss"),
    device: str = opt(JointConfig, "device"),
    threads: Optional[int] = opt(JointConfig, "threads"),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        "-o",
        help="checkpoint file (default ./zoo-<arch>-<head>-seed<S>.pt)",
        parser=out_file("model.pt"),
    ),
    force: bool = typer.Option(False, "--force", metavar="", help=TRAIN_FORCE_HELP),
) -> None:
    """Train a zoo backbone end to end with a head (the paper's joint protocol); write a zoo checkpoint.

    Example:
      laya-inspect train --model zoo:mlp --data fashion-mnist --head laya \\
        --out joint.pt
    """
    from ..runtime import set_threads
    from ..training.joint import train_joint

    config = from_options(JointConfig, locals())
    set_threads(config.threads, work="backbone")
    path = out if out is not None else Path(f"zoo-{config.arch}-{head}-seed{seed}.pt")
    with fit_progress() as on_event:
        result = train_joint(config, out=path, progress=on_event, overwrite=force)
    m = result.metrics
    console.print(train_settings(m, config, min(console.width, 100)), highlight=False, soft_wrap=True)
    console.print(
        f"{model} + {head} on {data}, seed {seed}: test accuracy "
        f"{rows_accuracy(m['test_acc'], m['n_test'], m.get('chance'))}, "
        f"macro-F1 {m['test_macro_f1']:.4f} (best epoch {m['best_epoch']} of {m['epochs_run']} by validation "
        f"{m['monitor']}: val loss {m['val_loss']:.4f}, val accuracy {m['val_acc']:.4f})",
        highlight=False,
        markup=False,
    )
    if result.alpha_mean is not None:
        console.print(
            f"{head} mean weight on test: "
            + " · ".join(f"{n} {a:.3f}" for n, a in zip(result.layer_names, result.alpha_mean)),
            highlight=False,
            markup=False,
        )
    if isinstance(m.get("backbone_head"), dict):
        probe = m["backbone_head"]
        console.print(
            f"backbone classifier (extract's model logits): logistic-regression probe on the frozen last block, "
            f"L-BFGS {counted(probe['iterations'], 'iteration')}"
            + ("" if probe["converged"] else " (not converged)")
            # over the same test rows as the line above, so read with their interval and chance as it is
            + f", not --epochs/--lr: test accuracy {rows_accuracy(probe['test_acc'], m['n_test'], m.get('chance'))}",
            highlight=False,
            markup=False,
        )
    warn(m.get("data_warnings"))
    warn(m.get("warnings"))
    console.print(f"checkpoint {result.path}\nmetrics    {result.metrics_path}", highlight=False, markup=False)
    cache = result.path.with_suffix(".h5")
    console.print(
        f"next: laya-inspect extract --model {model} --weights {result.path} --data {data}"
        # the rows train saw: without it extract reads every row, and export-head's check is on others
        + ("" if limit is None else f" --limit {limit}")
        + f" --out {cache}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


@app.command("export-head")
def export_head_command(
    checkpoint: Path = typer.Argument(..., help="zoo checkpoint written by `laya-inspect train`"),
    cache: Path = typer.Option(..., "--cache", "-c", help="the cache `extract` wrote from that checkpoint"),
    out: Path = typer.Option(..., "--out", "-o", help="head directory to write (for `compare`)"),
    split: str = typer.Option("test", "--split", help="split on which to check the head's accuracy"),
    force: bool = typer.Option(False, "--force", metavar="", help=EXPORT_FORCE_HELP),
) -> None:
    """Turn the head trained jointly by `train` into a head directory that `compare` scores.

    The checkpoint is read weights-only (no code from it runs), and the cache must be the one
    `extract` wrote from that very file (its recorded weights sha256 is checked).

    Example:
      laya-inspect export-head joint.pt --cache joint.h5 --out heads/joint-laya
    """
    from ..cache.store import FeatureStore
    from ..head_dir import export_head

    with FeatureStore(cache) as store:
        s = export_head(checkpoint, store, out, split=split, force=force)
        layers = list(store.layer_names)  # the head's own: export_head refuses a cache of other layers
    joint = "" if s["joint_test_acc"] is None else f" (train measured {s['joint_test_acc']:.4f} on its test split)"
    console.print(
        f"{s['kind']} head → {out}: accuracy on {s['split']} of {cache} {s['accuracy_on_cache']:.4f}{joint}",
        markup=False,
    )
    if s["mean_weights_on_cache"] is not None:
        weights = zip(layers, s["mean_weights_on_cache"])
        console.print(
            "mean layer weights: " + " · ".join(f"{n} {w:.3f}" for n, w in weights), highlight=False, markup=False
        )
    warn(s["warnings"])
    console.print(f"next: laya-inspect compare {out} --cache {cache} --method all", markup=False)
