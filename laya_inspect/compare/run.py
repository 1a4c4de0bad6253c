"""`compare`: every attribution method of every head, scored against what ablation shows.

For each head: forward pass (logits, weights, target c(x)), each method's (N, L) scores, then per
ablation (one, a list, or every one that applies): the LOLO effects, the effects of seeded layer
subsets removed together, the oracle / random / top-1-only references, and per method its
faithfulness ρ, subset faithfulness, Deletion@1 (and ÷ oracle), top-layer agreement, deletion and
insertion curves with their areas (:mod:`.scores`); per target class for the first ablation.
Writes ``out_dir`` whole, under a temporary name renamed at the end (:func:`~laya_inspect.out_dir.atomic_dir`):

* ``attributions.h5`` — every array needed to recompute every number (:func:`.outputs.write_h5`),
* ``summary.json`` / ``summary.csv`` — every number of the tables, the direction of each metric,
  circular pairs, caveats, the ablations / target / baseline used, head directories, cache fingerprint,
* ``plots/`` — PNG figures, SVG too with ``svg`` (:mod:`.plots`),
* ``report.html`` — one self-contained page of the run (:mod:`laya_inspect.report`).

Under torchrun the compared rows are split over the processes in whole batches (``batch_size``): each
measures its own rows of every head, with the random draws one process gives those rows
(:mod:`.draws`), every process gets every part, and rank 0 writes the folder one process would
(docs/SCALING.md).

The library never prints: ``progress`` receives dict events ({"event": "head" | "step" | "write", …}).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..cache.store import FeatureStore
from ..distributed import agree, device_for, join_world, shard_ranges
from ..files import artifact_header, plain, write_csv, write_json
from ..head_dir import cache_warnings, refuse_repeats, store_for_heads
from ..heads import Head
from ..options import defaulted
from ..out_dir import atomic_dir, check_out
from ..runtime import Progress, no_progress, pick_device
from ..training.chance import chance_level
from ..workers import cpu_workers, run_forked
from . import metrics as M
from .ablations import plan_ablations
from .attribution import attribute, options_for, plan_methods, resolve_methods
from .config import CHOICES, CompareConfig, resolve_target
from .draws import RowSpan, fit_seed_of, seeded_rows
from .effects import Measured, Remover, measure
from .loaded import (
    finite_rows,
    head_warnings,
    load_heads,
    nonfinite_logits,
    refuse_untrained_targets,
    repeated_compared,
)
from .lolo import ABLATIONS, RESAMPLE_DRAWS, forward_rows, resolve_ablations
from .outputs import SCHEMA_VERSION, csv_rows, write_h5
from .per_head import HeadResult, head_summary
from .sanity import read_layers, run_sanity
from .sanity import write_h5 as write_sanity_h5
from .scores import MIN_LAYERS, NEGLIGIBLE_EFFECT, TIE_TOLERANCE, headline_rows
from .seeds import across_seeds, expand_head_dirs
from .values import DONOR_POOL, donor_pool, layer_means


@dataclass
class CompareResult:
    out_dir: Path
    summary: dict[str, Any]
    heads: list[HeadResult]
    files: list[Path]

    def _repr_html_(self) -> str:
        """The reading and the tables of report.html, for a notebook cell."""
        from ..report import summary_html

        return summary_html(self.summary)

    def __rich__(self) -> Any:  # a terminal (rich.print) shows what `compare` prints
        from rich.console import Group

        from ..report.terminal import build_report

        return Group(*build_report(self.summary))

    def to_pandas(self) -> Any:
        """Per-sample scores, one row per (head, ablation, sample, layer): effect and every method's
        score (:func:`laya_inspect.cache.frames.compare_frame`). Needs pandas."""
        from ..cache.frames import compare_frame

        return compare_frame(self)


# ---------------------------------------------------------------------------------------------


def _run_head(
    name: str,
    head: Head,
    head_dir: str,
    cfg: dict[str, Any],
    hs: list[torch.Tensor],
    labels: np.ndarray,
    methods: list[str],
    skipped: dict[str, str],
    ablations: tuple[list[str], dict[str, str]],
    config: CompareConfig,
    target_of: str | int,
    values: dict[str, Any],
    emit: Progress,
    part: tuple[int, int] | None = None,
) -> HeadResult:
    """One head on the compared rows: the forward pass on all of them, then the attributions and
    ablations on rows ``[start, stop)`` of ``part`` (all when None; none when empty)."""

    def step(what: str) -> None:
        emit({"event": "step", "head": name, "step": what})

    # every process runs this pass on every row: one forward, cheap beside the ablations, and the
    # refusal below then sees all the rows, as it does in one process
    logits, weights = forward_rows(head, hs, config.batch_size)
    finite = np.isfinite(logits).all(axis=1)
    if not finite.all() and (not finite.any() or not config.allow_nonfinite):
        raise nonfinite_logits(name, head_dir, config.split, finite)
    preds = np.where(finite, np.nan_to_num(logits, nan=-np.inf).argmax(axis=1), 0)
    if isinstance(target_of, int):  # one class for every row
        target = np.full(len(preds), target_of, dtype=np.int64)
    else:
        target = (preds if target_of == "pred" else labels).astype(np.int64)
    res = HeadResult(
        name,
        head_dir,
        head.kind,
        target,
        preds.astype(np.int64),
        logits,
        weights,
        ablations[0],
        skipped=skipped,
        ablations_skipped=ablations[1],
        head_config=cfg,
    )
    start, stop = (0, len(target)) if part is None else part
    if part is not None and start == stop:
        return res
    span = RowSpan(start, len(target))
    hs, target = [h[start:stop] for h in hs], target[start:stop]
    options = replace(options_for(config, values, span), fit_seed=fit_seed_of(cfg))
    for m in methods:
        step(m)
        att = attribute(m, head, hs, target, options)
        res.scores[m], res.extras[m], res.params[m] = att.scores, att.extras, att.params
    head64 = copy.deepcopy(head).to(torch.float64).eval()  # probabilities in float64 (docs/METHOD.md)
    for a in res.ablations:
        step(f"lolo ({a})" if len(res.ablations) > 1 else "lolo")
        abl = ABLATIONS.get(a)
        remover = Remover(
            head64,
            hs,
            target,
            a,
            baselines=values["means"] if abl.needs_baselines else None,
            donors=values["donors"] if abl.needs_donors else None,
            seed=config.seed,
            batch_size=config.batch_size,
            span=span,
            effect=config.effect,
        )
        res.measured[a] = measure(remover, seed=config.seed, fit_seed=options.fit_seed)
        curves = remover.method_curves(list(res.scores.values()))  # one pass for every method
        res.curves[a] = dict(zip(res.scores, curves))
    return res


# What a process measures on its own rows of a head: the part of a HeadResult the others need (params:
# the same on every process, but a process without rows has none)
_PER_ROW = ("scores", "extras", "params", "measured", "curves")


def _join(res: HeadResult, parts: list[dict[str, Any] | None]) -> HeadResult:
    """``res`` (this process's: the forward pass on every row) with every process's per-row
    measurements (``None``: a process without rows), in rank order, put end to end."""
    done = [p for p in parts if p is not None]
    first, cat = done[0], np.concatenate  # not ``res``: this process may have had no rows
    return replace(
        res,
        scores={m: cat([p["scores"][m] for p in done]) for m in first["scores"]},
        extras={m: {k: cat([p["extras"][m][k] for p in done]) for k in x} for m, x in first["extras"].items()},
        params=first["params"],
        measured={a: Measured.join([p["measured"][a] for p in done]) for a in first["measured"]},
        curves={
            a: {m: (cat([p["curves"][a][m][0] for p in done]), cat([p["curves"][a][m][1] for p in done])) for m in c}
            for a, c in first["curves"].items()
        },
    )


def compare_heads(
    head_dirs: Sequence[str | Path],
    store: FeatureStore,
    config: CompareConfig,
    *,
    out_dir: str | Path,
    progress: Progress | None = None,
    overwrite: bool = False,
) -> CompareResult:
    """Score every applicable method of every head against each ablation's effects and write the
    artifacts; ``out_dir`` must be empty or absent unless ``overwrite`` (then it is replaced whole)."""
    emit = progress or no_progress
    head_dirs = expand_head_dirs(head_dirs)  # a fit-head output: every <head>/seed_<S>/ in it
    # the head directories guard a fit-head output given (an --out that is or holds it holds them), and an
    # --out beside them in it is never read as a head (only <head>/seed_<S>/ are) nor deleted by fit-head --force
    inputs = [store.path, *head_dirs]
    check_out(out_dir, force=overwrite, command="compare", inputs=inputs)  # before the work; atomic_dir checks again
    refuse_repeats(head_dirs, "compare would score it twice under two names")
    store = store_for_heads(store, head_dirs)  # prune's head of the layers it keeps reads only those
    requested = [p.strip() for m in config.methods for p in str(m).split(",") if p.strip()]
    methods = resolve_methods(requested)
    ablations, every = resolve_ablations(config.ablation)
    world = join_world(config.device)  # under torchrun the rows are split over the processes
    device = pick_device(device_for(config.device, world))
    heads = load_heads(head_dirs, store, config.allow_other_cache, device)
    plain_heads = {n: h for n, (h, _, _) in heads.items()}
    abl_plan = plan_ablations(ablations, every, plain_heads)
    store.n(config.split)  # NotFoundError naming the splits
    target_of = resolve_target(config.target, store.class_names, store.num_classes)
    explicit = {m for m in requested if m != "all"}
    plan = plan_methods(methods, plain_heads, explicit=explicit)
    out = Path(out_dir)
    rows = seeded_rows(store.n(config.split), config.limit, config.seed)
    used = {a for run, _ in abl_plan.values() for a in run}
    needs = [ABLATIONS.get(a) for a in used]
    means = config.baseline == "mean" or any(a.needs_baselines for a in needs)
    values: dict[str, Any] = {
        "means": layer_means(store, "train") if means else None,
        "donors": donor_pool(store, "train", seed=config.seed) if any(a.needs_donors for a in needs) else None,
    }
    feats = store.layers(config.split, rows)
    rows, feats, left_out = finite_rows(store, config, rows, feats)
    hs = [torch.from_numpy(np.ascontiguousarray(x)).to(device) for x in feats]
    labels = store.labels(config.split, rows).astype(np.int64)
    layer_names, class_names = store.layer_names, store.class_names
    refuse_untrained_targets(plain_heads, target_of, labels, class_names)
    chance = chance_level(store.labels(config.split))  # the split's class shares: --limit moves no chance line

    # Under torchrun each process measures its own rows of every head, in whole batches, so it runs
    # exactly the batches one process would (the same numbers, bit for bit); the per-row random draws
    # follow the row, not the process (.draws). Every process gets every part and joins them.
    part = shard_ranges(len(rows), world.size, config.batch_size)[world.rank] if world.distributed else None
    results: list[HeadResult] = []

    def one(i: int, item: tuple[str, tuple[Head, dict, str]], report: Progress) -> HeadResult:
        name, (head, cfg, d) = item
        report({"event": "head", "head": name, "kind": head.kind, "index": i, "total": len(heads)})
        run, skipped = plan[name]
        return _run_head(
            name, head, d, cfg, hs, labels, run, skipped, abl_plan[name], config, target_of, values, report, part
        )

    # alone on a multi-core CPU, several heads at once in forked processes (the same numbers)
    workers = 1 if world.distributed else cpu_workers(config.workers, device, len(heads))

    def mine() -> list[dict[str, Any] | None]:
        results.extend(run_forked(list(heads.items()), one, workers, emit))
        if part is not None and part[0] == part[1]:
            return [None] * len(results)
        return [{k: getattr(r, k) for k in _PER_ROW} for r in results]

    parts = agree(world, mine)  # [rank][head]
    if world.distributed:
        results = [_join(r, [p[i] for p in parts]) for i, r in enumerate(results)]
    read = read_layers(heads, hs, config.seed)
    stats = {"n_boot": config.n_boot, "seed": config.seed}

    def summarise(_i: int, item: tuple[HeadResult, dict, list[int]], _report: Progress) -> dict[str, Any]:
        r, cfg, n = item
        return head_summary(r, labels, cfg, layer_names, class_names, **stats, layers_read=n, majority=chance)

    # the heads' bootstrap intervals, several heads at once as their measurements were (the same numbers)
    summarised = [(r, cfg, n) for r, (_, cfg, _), n in zip(results, heads.values(), read)]
    head_summaries = run_forked(summarised, summarise, workers, no_progress)

    repeated, repeats_said = repeated_compared(store, config.split, rows, feats)  # a caveat: no verdict withheld
    summary: dict[str, Any] = {
        **artifact_header("laya-inspect-compare", schema=SCHEMA_VERSION, dated=True),
        "cache": {
            **store.identity(),
            "class_names": class_names,
            "data_spec": store.attrs.get("data_spec"),
            # how the features were made (model, pooling, normalisation and where it came from, the options
            # left at their defaults): the page's facts when the cache file is gone
            **store.made(),
            "warnings": cache_warnings(store),
        },
        "head_warnings": head_warnings(heads, store, config.split) + repeats_said,
        "warnings": [],  # what the run warned about its output folder (a kept leftover): atomic_dir adds them
        "rows_repeated": repeated,
        "config": {**config.to_dict(), "methods_resolved": methods, "device_resolved": str(device)},
        "config_defaults": defaulted(config),
        "ablation": results[0].ablations[0],
        "ablation_description": ABLATIONS.get(results[0].ablations[0]).description,
        "ablations": [a for a in ablations if a in used],
        "target": config.target,
        "effect": config.effect,
        "baseline": config.baseline,
        "split": config.split,
        "n": int(len(rows)),
        "rows_left_out": left_out,
        "seed": config.seed,
        "tie_tolerance": TIE_TOLERANCE,
        "negligible_effect": NEGLIGIBLE_EFFECT,
        "min_layers": MIN_LAYERS,
        "resample": {"draws": RESAMPLE_DRAWS, "pool": DONOR_POOL} if "resample" in used else None,
        "head_dirs": [d for _, _, d in heads.values()],
        "directions": M.directions(config.effect),
        "choices": CHOICES,
        "heads": head_summaries,
        "headline": headline_rows(head_summaries),
    }
    summary["across_seeds"] = across_seeds(head_summaries, [cfg.get("seed") for _, cfg, _ in heads.values()])
    summary.setdefault("caveats", []).extend(summary["across_seeds"]["caveats"])
    if config.sanity and world.is_main:  # every row is here after the join; rank 0 writes them
        summary["sanity"], sanity_arrays = run_sanity(heads, results, read, store, hs, labels, config, values, emit)
    summary["files"] = {
        "attributions": "attributions.h5",
        "summary_json": "summary.json",
        "summary_csv": "summary.csv",
        "report": "report.html",
    }
    if "sanity" in summary:
        summary["files"]["sanity"] = "sanity.h5"  # the randomised heads' arrays (compare/sanity.py)
    if not world.is_main:  # rank 0 writes the folder
        return CompareResult(out, plain(summary), results, [])
    flat = plain(summary)  # what the plots, the CSV and the caller read: made once (it walks every number)
    with atomic_dir(out, force=overwrite, command="compare", inputs=inputs) as tmp:
        written = [write_h5(tmp / "attributions.h5", results, rows, labels, values["means"], summary)]
        plot_files: list[Path] = []
        if config.plots:
            from .plots import write_plots

            formats = ("png", "svg") if config.svg else ("png",)
            # the heads' rule: one process under torchrun or off the CPU, at most --workers (None: the CPUs)
            plot_cap = 1 if world.distributed or device.type != "cpu" else config.workers
            plot_files = write_plots(
                tmp / "plots", flat, {r.name: r for r in results}, formats=formats, workers=plot_cap
            )
        summary["files"]["plots"] = [str(p.relative_to(tmp)) for p in plot_files]
        flat["files"]["plots"] = list(summary["files"]["plots"])
        written += [
            write_json(tmp / "summary.json", flat),
            write_csv(tmp / "summary.csv", csv_rows(flat)),
            *plot_files,
        ]
        if "sanity" in summary:  # after the plots, before report.html (the last file)
            written.append(write_sanity_h5(tmp / "sanity.h5", sanity_arrays))
        from ..report import write_report_html

        written.append(write_report_html(tmp, as_dir=out, figures=config.plots, locked=True))
    files = [out / p.relative_to(tmp) for p in written]
    for f in [*files[:3], *([out / "plots"] if plot_files else []), files[-1]]:
        emit({"event": "write", "path": str(f)})
    return CompareResult(out, flat, results, files)
