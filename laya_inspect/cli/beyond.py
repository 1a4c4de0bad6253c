"""`laya-inspect prune`, `early-exit` and `diagnose`: uses of α beyond attribution, each against a
baseline without α (docs/METHOD.md, "Beyond attribution")."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..beyond.config import Budget, DiagnoseConfig, ExitConfig, PruneConfig
from ..beyond.scoring import chance_hidden, diff_cut_note, exit_cut_note, no_flops_note, no_spread, verdict_drawn
from ..options import field_of
from ..report.reading import (
    OVERSHOOT_LEGEND,
    alpha_fit_note,
    est,
    one_seed_sentence,
    same_sets,
    seeds_said,
    with_ci,
)
from ..report.settings import beyond_settings_line
from ..runtime import set_threads
from ..training.stats import percent, tied
from .app import app, bullets, comma_list, console, dim, from_options, opt, show, titled_table
from .progress import step_progress

FORCE_HELP = "replace a non-empty --out the same command wrote, whole (kept until the new run is complete)"
# prune's and early-exit's one head and its cache
HEAD_DIR = typer.Argument(
    ...,
    metavar="HEAD_DIR",
    help="a laya head directory written by fit-head, or a fit-head output folder: every laya/seed_<S>/ in it "
    "is read, each seed's α with the refits of that seed",
)
CACHE = typer.Option(..., "--cache", "-c", help="features.h5 the head was trained on")


def _ci(d: dict[str, Any] | None, signed: bool = False) -> str:
    """'0.6000 [0.5503, 0.6497]'. Unsigned values here are accuracies, AUROC, AUPR and areas: their
    interval is shown inside [0, 1], as report.html shows it (a t-interval over 2 heads can reach
    [-0.45, 2.10]); differences (``signed``) as computed."""
    if signed or not d or d.get("ci_low") is None:
        return with_ci(d, signed, digits=4)
    return no_spread(d) or est(d, 4)


def _auroc(d: dict[str, Any] | None) -> str:
    """An AUROC cell, marked where its 95% interval lies off ½ but the score is not read off chance (at the
    family's level, or beside each head's own rows: the verdict lines say which)."""
    return _ci(d) + (" (not shown off chance)" if chance_hidden(d) else "")


def _settings(s: dict[str, Any]) -> None:
    """The settings that decide the numbers, above them (`report DIR` restates the line from ``s``)."""
    console.print(beyond_settings_line(s, min(console.width, 100)), highlight=False)


def verdict_lines(s: dict[str, Any]) -> list[str]:
    """The verdict and its notes, as the command prints them and `report DIR` prints them again
    (rebuilt from the summary's fields, not the lines it stored, which an older version worded)."""
    from ..beyond import summary_verdict

    lines, stored = summary_verdict(s)
    # early-exit's questions are each held to 5% on its own: said beside their lines, not left to the docs
    notes = [s[k] for k in ("families_read_apart", "family_rule") if s.get(k)]
    command = str(s.get("command") or "")
    heads = (s.get("heads") or []) if command == "diagnose" else []
    if len(heads) == 1 and verdict_drawn(s):  # its intervals run over test rows: they leave out its fitted seed
        notes.append(one_seed_sentence("the verdicts above", heads[0]["head_dir"], "diagnose"))
    # one head's α: its intervals run over refits, not over fits of α (several heads: the header says so)
    one_head = command in ("prune", "early-exit") and len(s.get("alpha_heads") or []) <= 1
    if one_head and (note := alpha_fit_note(s, command)):
        notes.append(note)
    notes += [stored] if stored else []
    return [*lines, *(f"note: {n}" for n in notes)]


def _wrote(out: Path, s: dict[str, Any]) -> None:
    """The verdict and its notes under the run's warnings, then the files in ``out`` (report.html among
    them, plots/ if any)."""
    bullets(verdict_lines(s), s.get("warnings"))
    names = sorted(p.name + "/" * p.is_dir() for p in Path(out).iterdir())
    dim(f"wrote {out}/: {', '.join(names)}")


def prune_table(s: dict[str, Any], head_dir: Path) -> Table:
    """Prune's table: per ranking its smallest k within --max-drop, the FLOPs that saves, test accuracy
    there and over k, and α's difference to it; the random reference last."""
    from ..beyond.costs import saved_cell, smallest_k_text, smallest_within

    table = titled_table(
        f"prune {head_dir} · {s['mode']} · {seeds_said(s)} · all layers: "
        f"test accuracy {_ci(s['reference']['test_acc'])} · compute {s['costs']['source']}",
        "ranking",
        "smallest k",
        "FLOPs saved",
        "test acc there",
        "mean acc over k",
        "α − ranking",
    )
    for name, entry in s["rankings"].items():
        if not entry["applies"]:
            table.add_row(name, "—", "—", "—", "—", "—", style="dim")
            continue
        best = smallest_within(s, name)
        vs = s["alpha_vs"].get(name, {})
        versus = vs.get("mean_test_acc_over_k_diff")
        area = s["per_ranking"].get(name, {}).get("mean_test_acc_over_k")
        table.add_row(
            name,
            smallest_k_text(best),
            saved_cell(best, s),
            _ci(best["test_acc"]) if best else "—",
            _ci(area),
            _versus_cell(s, name, versus),
        )
    rand = s.get("random_reference")
    if rand:  # the reference α is read against first: what a random order keeps
        table.add_row(
            "random reference",
            "—",
            "—",
            "—",
            _ci(s["per_ranking"].get("random", {}).get("mean_test_acc_over_k")),
            _ci(s["alpha_vs"].get("random", {}).get("mean_test_acc_over_k_diff"), signed=True) + _withheld(s, "random"),
            style="bold",
        )
    return table


def _versus_cell(s: dict[str, Any], name: str, versus: dict[str, Any] | None) -> str:
    """α's difference to ``name``: different sets that tie on every seed have a zero-width interval that
    tests nothing, so it is not printed as one."""
    if name == "alpha":
        return "(α)"
    if same_sets(s, name):
        return "same sets"
    if tied(versus):
        return "0 on every seed: no verdict"
    return _ci(versus, signed=True) + _withheld(s, name)


def _withheld(s: dict[str, Any], name: str) -> str:
    """A mark on α's difference to ``name`` whose verdict the shared test rows' sampling withheld (the
    verdict lines below the table say why), else ""."""
    rows = (s["alpha_vs"].get(name) or {}).get("test_rows") or {}
    return " (withheld: test rows)" if rows.get("withheld") else ""


@app.command("prune")
def prune_command(
    head_dir: Path = HEAD_DIR,
    cache: Path = CACHE,
    scalarmix: Optional[Path] = typer.Option(
        None,
        "--scalarmix",
        help="fit-head's scalarmix folder: rank by each seed's weights, refit seed s by ScalarMix's seed s "
        "(one seed_<S>/ folder: its weights at every seed, warned)",
    ),
    refit: bool = opt(PruneConfig, "refit"),
    seeds: int = opt(PruneConfig, "seeds"),
    ks: Optional[str] = opt(PruneConfig, "ks", default=None, help=field_of(PruneConfig, "ks").metadata["help"]),
    search: str = opt(PruneConfig, "search"),
    max_drop: float = opt(PruneConfig, "max_drop"),
    ablation: str = opt(PruneConfig, "ablation"),
    rank_rows: int = opt(PruneConfig, "rank_rows"),
    costs: str = opt(PruneConfig, "costs"),
    seed: int = opt(PruneConfig, "seed"),
    epochs: Optional[int] = opt(Budget, "epochs"),
    patience: Optional[int] = opt(Budget, "patience"),
    lr: float = opt(Budget, "lr"),
    weight_decay: Optional[float] = opt(Budget, "weight_decay"),
    batch_size: int = opt(Budget, "batch_size"),
    train_limit: Optional[int] = opt(Budget, "train_limit"),
    train_split: str = opt(PruneConfig, "train_split"),
    test_split: str = opt(PruneConfig, "test_split"),
    device: str = opt(PruneConfig, "device"),
    threads: Optional[int] = opt(PruneConfig, "threads"),
    workers: Optional[int] = opt(PruneConfig, "workers"),
    allow_other_cache: bool = opt(PruneConfig, "allow_other_cache"),
    plots: bool = opt(PruneConfig, "plots"),
    out: Path = typer.Option(Path("runs/prune"), "--out", "-o", help="folder for summary.json, *.csv, head/, plots/"),
    force: bool = typer.Option(False, "--force", metavar="", help=FORCE_HELP),
) -> None:
    """Rank layers by α, ScalarMix, LOLO effect, Block Influence and depth; refit on the top-k; keep the fewest.

    Given a fit-head output (or its laya/ folder), every LAYA seed is read: each seed's α and LOLO
    rank the layers refit at that seed; one head is read with --seeds refits. --scalarmix takes fit-head's
    scalarmix folder: refit seed s ranks by the ScalarMix head of seed s, paired seed by seed.

    Example:
      laya-inspect prune heads --cache features.h5 \\
        --scalarmix heads/scalarmix --max-drop 0.005 --out prune
    """
    from ..beyond.costs import saved_note, smallest_within
    from ..beyond.prune import prune_layers
    from ..cache.store import FeatureStore

    given = locals()
    config = from_options(PruneConfig, given, ks=comma_list(ks or "", int, "--ks", "a comma list of integers"))
    budget = from_options(Budget, given)
    set_threads(config.threads)  # head-sized work: a few threads at most
    progress = step_progress()
    with FeatureStore(cache) as store:
        result = prune_layers(
            head_dir, store, config, budget, out_dir=out, scalarmix_dir=scalarmix, overwrite=force, progress=progress
        )
    s = result.summary
    _settings(s)
    show(prune_table(s, head_dir))
    note = saved_note(s, [smallest_within(s, name) for name in s["rankings"]])
    skipped = [f"{name}: {entry['how']}" for name, entry in s["rankings"].items() if not entry["applies"]]
    for line in ([note] if note else []) + skipped + [cut for cut in [diff_cut_note(s)] if cut]:
        dim(line)
    _wrote(out, s)


_RULE_NOTES = {"random": " (reference: no information)", "confidence+alpha_oracle": " (not realisable)"}


@app.command("early-exit")
def early_exit_command(
    head_dir: Path = HEAD_DIR,
    cache: Path = CACHE,
    seeds: int = opt(ExitConfig, "seeds"),
    epsilon: float = opt(ExitConfig, "epsilon"),
    thresholds: int = opt(ExitConfig, "thresholds"),
    costs: str = opt(ExitConfig, "costs"),
    seed: int = opt(ExitConfig, "seed"),
    epochs: Optional[int] = opt(Budget, "epochs"),
    patience: Optional[int] = opt(Budget, "patience"),
    lr: float = opt(Budget, "lr"),
    weight_decay: Optional[float] = opt(Budget, "weight_decay"),
    batch_size: int = opt(Budget, "batch_size"),
    train_limit: Optional[int] = opt(Budget, "train_limit"),
    train_split: str = opt(ExitConfig, "train_split"),
    test_split: str = opt(ExitConfig, "test_split"),
    device: str = opt(ExitConfig, "device"),
    threads: Optional[int] = opt(ExitConfig, "threads"),
    workers: Optional[int] = opt(ExitConfig, "workers"),
    allow_other_cache: bool = opt(ExitConfig, "allow_other_cache"),
    plots: bool = opt(ExitConfig, "plots"),
    out: Path = typer.Option(Path("runs/early-exit"), "--out", "-o", help="folder for summary.json, *.csv, plots/"),
    force: bool = typer.Option(False, "--force", metavar="", help=FORCE_HELP),
) -> None:
    """Simulate per-input early exit: confidence, α and fixed depth against random exit.

    Given a fit-head output (or its laya/ folder), every LAYA seed is read: the refit seeds are the
    heads' seeds, so the intervals over seeds cover α's fit too; one head is read with --seeds refits.

    Example:
      laya-inspect early-exit heads --cache features.h5 --out early-exit
    """
    from ..beyond.early_exit import simulate_early_exit
    from ..cache.store import FeatureStore

    given = locals()
    config = from_options(ExitConfig, given)
    budget = from_options(Budget, given)
    set_threads(config.threads)
    progress = step_progress()
    with FeatureStore(cache) as store:
        result = simulate_early_exit(head_dir, store, config, budget, out_dir=out, overwrite=force, progress=progress)
    s = result.summary
    _settings(s)
    table = titled_table(
        f"early exit {head_dir} · {seeds_said(s)} · compute {s['costs']['source']}",
        "rule",
        "held-out area",
        "in-sample area (optimistic)",
        "compute overshoot",
    )
    for rule, entry in s["rules"].items():
        table.add_row(
            rule + _RULE_NOTES.get(rule, ""),
            _ci(entry["area_held_out"]),
            _ci(entry["area_in_sample"]),
            f"{entry['compute_overshoot']['mean']:.4f}",
        )
    show(table)
    dim(OVERSHOOT_LEGEND)
    if s.get("selection"):
        dim(s["selection"])
    depth = titled_table("fixed depth", "layer", "test accuracy", "FLOPs run")
    for d in s["fixed_depth"]:
        depth.add_row(d["layer"], _ci(d["accuracy"]), percent(s["compute_used_by_depth"][d["layer"]], 1))
    show(depth)
    if free := no_flops_note(s):
        dim(free)

    for cut in (exit_cut_note(s), diff_cut_note(s)):
        if cut:
            dim(cut)
    _wrote(out, s)


@app.command("diagnose")
def diagnose_command(
    head_dirs: list[Path] = typer.Argument(
        ...,
        metavar="HEAD_DIR...",
        help="laya head directories (seeds pool), or a fit-head output folder (every laya/seed_<S>/ in it) or one "
        "head's folder of seed_<S>/ folders, as compare expands them",
    ),
    cache: Path = typer.Option(..., "--cache", "-c", help="features.h5 the heads were trained on"),
    against: Optional[Path] = typer.Option(
        None, "--against", help="another cache of the same layers: measure the shift"
    ),
    permutations: int = opt(DiagnoseConfig, "permutations"),
    bootstrap: int = opt(DiagnoseConfig, "n_boot"),
    seed: int = opt(DiagnoseConfig, "seed"),
    train_split: str = opt(DiagnoseConfig, "train_split"),
    test_split: str = opt(DiagnoseConfig, "test_split"),
    device: str = opt(DiagnoseConfig, "device"),
    threads: Optional[int] = opt(DiagnoseConfig, "threads"),
    allow_other_cache: bool = opt(DiagnoseConfig, "allow_other_cache"),
    plots: bool = opt(DiagnoseConfig, "plots"),
    out: Path = typer.Option(Path("runs/diagnose"), "--out", "-o", help="folder for summary.json, *.csv, plots/"),
    force: bool = typer.Option(False, "--force", metavar="", help=FORCE_HELP),
) -> None:
    """Detect misclassified and shifted inputs from α, against max softmax probability.

    A fit-head output folder stands for its laya/seed_<S>/ head directories, pooled as seeds.

    Example:
      laya-inspect diagnose heads --cache features.h5 --against noisy.h5 --out diagnose
    """
    from contextlib import ExitStack

    from ..beyond.diagnose import diagnose_heads
    from ..beyond.scoring import auroc_note, clipped_note
    from ..cache.store import FeatureStore

    config = from_options(DiagnoseConfig, locals(), n_boot=bootstrap)
    set_threads(config.threads)
    with ExitStack() as stack:
        store = stack.enter_context(FeatureStore(cache))
        other = stack.enter_context(FeatureStore(against)) if against is not None else None
        result = diagnose_heads(
            head_dirs, store, config, out_dir=out, against=other, overwrite=force, progress=step_progress()
        )
    s = result.summary
    e = s["errors"]
    _settings(s)
    table = titled_table(
        f"misclassification detection · {len(s['heads'])} head(s) · {e['interval']}",
        "score",
        "AUROC",
        "AUPR",
        "AUROC − msp",
    )
    for score, auc in e["auroc"].items():
        table.add_row(score, _auroc(auc), _ci(e["aupr"].get(score)), _ci(e["diff_vs_msp"].get(f"{score} − msp"), True))
    show(table)
    # AUPR's chance is the error rate, not ½: the digits demo's alpha_entropy 0.132 beside 0.028, 0.017
    base = ", ".join(f"{h['aupr_baseline']:.3f}" for h in s["heads"])
    dim(f"AUPR of a random score (the error rate): {base}; AUROC's: 0.5")
    for cut in (auroc_note({"AUROC": e["auroc"], "AUPR": e["aupr"]}), clipped_note(e["diff_vs_msp"])):
        if cut:
            dim(cut)
    if "shift" in s:
        pooled = s["shift"]["pooled"]
        shift = titled_table(f"telling {against} from {cache} · {pooled['interval']}", "score", "AUROC", "AUROC − msp")
        for score, auc in pooled["detect_auroc"].items():
            shift.add_row(score, _auroc(auc), _ci(pooled["detect_diff"].get(f"{score} − msp"), True))
        show(shift)
        for cut in (auroc_note({"AUROC": pooled["detect_auroc"]}), clipped_note(pooled["detect_diff"])):
            if cut:
                dim(cut)
    _wrote(out, s)
