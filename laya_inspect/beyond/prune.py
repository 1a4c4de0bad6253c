"""`laya-inspect prune`: which layers can the backbone lose? (docs/METHOD.md, "Prune").

Each ranking (:mod:`.rankings`) orders the L layers; for k = L … 1 a head of the same kind is refit
on the top-k layers over seeds (or, ``refit=False``, the given head is re-evaluated with the other
layers removed by an ablation), giving validation and test accuracy against the backbone compute
the dropped layers would save: only layers after the deepest kept one stop running
(:mod:`.costs`). The smallest layer set whose mean validation accuracy is within ``max_drop`` of
all layers' is chosen and written as a head directory; the report names the rankings that found it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ..cache.store import FeatureStore
from ..errors import InputError
from ..files import artifact_header
from ..head_dir import cache_identity, read_head_config, store_for_heads
from ..heads import Head
from ..options import defaulted
from ..runtime import Progress, no_progress, pick_device
from ..training.quality import MIN_VAL_ROWS
from ..training.stats import counted, family_text, same_text
from ..workers import cpu_workers, run_forked
from .common import (
    Result,
    ablated_accuracy,
    ablated_right,
    accuracy,
    cache_record,
    estimate,
    family,
    fit_rows_of,
    head_hparams,
    head_outputs,
    level,
    load_split,
    paired,
    rows_rule,
    rows_tensor,
    seeds_how,
    spec,
    subsample,
    test_rows,
    trust_lines,
    verdict,
    weighted_head_dirs,
    write_whole,
)
from .config import PruneConfig  # noqa: F401  (re-exported)
from .costs import Costs, backbone_costs, cost_text, estimate_warnings, saves_text, smallest_within
from .exit_verdicts import rows_interval
from .laya_seeds import open_laya_heads
from .rankings import (
    NON_ALPHA,
    Ranking,
    across_heads,
    by_alpha,
    by_block_influence,
    by_deepest,
    by_depth,
    by_lolo,
    near_ties,
    near_ties_by_seed,
)
from .refit import Budget, Fit, check_warnings, fitted, layer_moments, refit, refit_check
from .scalarmix_seeds import open_scalarmix, scalarmix_dirs
from .scalarmix_seeds import rankings as scalarmix_rankings
from .scalarmix_seeds import record as scalarmix_record
from .scalarmix_seeds import ties as scalarmix_ties

WITHHOLD_RULE = (
    f"a layer set chosen on validation is withheld (no recommendation, no head written) when fewer than "
    f"{MIN_VAL_ROWS} validation rows chose it, or when one validation row weighs more than --max-drop "
    "(1/rows > max_drop > 0: validation cannot resolve the drop the set is to keep under), or when its paired test "
    "difference from all layers is a loss (interval below 0, and not within the test rows' own sampling: fit-head's "
    "test-sampling rule; with no interval, within that sampling, or under --max-drop 0, a mean drop larger than "
    "--max-drop)"
)
COARSE_HOW = (
    "every ranking and the random reference at k = 1, 2, 3, 4, 6, 8, 12, 16, … and L; then each ranking at every k "
    "below its smallest grid k within --max-drop: the picks are those of `--search every`, the comparisons over k "
    "read the grid's k"
)
TOLERANCE = 1e-12  # accuracies are ratios of counts: equal within rounding means equal
# The random-ranking reference at each k < L: every layer set of size k where there are at most
# RANDOM_EXACT (the exact mean over random orders: all k when L ≤ 4), else RANDOM_DRAWS distinct sets
# drawn with default_rng([seed, 3, k]); each set refit over the same seeds as the rankings.
RANDOM_EXACT = 6
RANDOM_DRAWS = 3


def random_sets(n_layers: int, k: int, seed: int) -> tuple[list[tuple[int, ...]], bool]:
    """The layer sets of size ``k`` the random reference averages over, and whether they are all of them."""
    if math.comb(n_layers, k) <= RANDOM_EXACT:
        return [tuple(c) for c in itertools.combinations(range(n_layers), k)], True
    rng = np.random.default_rng([seed, 3, k])
    drawn: list[tuple[int, ...]] = []
    while len(drawn) < RANDOM_DRAWS:
        s = tuple(sorted(int(i) for i in rng.choice(n_layers, size=k, replace=False)))
        if s not in drawn:
            drawn.append(s)
    return drawn, False


def coarse_ks(n_layers: int) -> list[int]:
    """The layer counts every ranking is refit at under ``--search coarse``: 1, 2, 3, 4, 6, 8, 12, 16, …
    below ``n_layers``, and ``n_layers``; every k up to 4."""
    grid = {k for i in range(n_layers.bit_length()) for k in (2**i, 3 * 2**i)}
    return sorted({k for k in grid if k < n_layers} | {n_layers})


def within_margin(vals: list[float], refs: list[float], max_drop: float) -> float:
    """What --max-drop reads of a set's validation accuracy per seed ``vals`` against all layers' ``refs``:
    the mean difference, within when ≥ −max_drop; under --max-drop 0 the worst seed's, so "within" means
    validation accuracy no lower on any seed (a mean could hide one seed's loss behind another's gain)."""
    if max_drop == 0:
        return float(np.min(np.asarray(vals) - np.asarray(refs)))
    return float(np.mean(vals) - np.mean(refs))


def finer_ks(grid: list[int], val: dict[int, float], floor: float) -> list[int]:
    """The k off the coarse ``grid`` (ascending, ending at L) one ranking is also refit at, given its
    validation reading ``val`` at each grid k (:func:`within_margin`) and the ``floor`` of --max-drop: every k
    below its first grid k at the floor. Accuracy need not rise with k (a rise and fall between two grid
    points leaves no trace on the grid), so only every k below it finds the ranking's smallest k at the
    floor; the k above it cannot be smaller, nor save more compute (the deepest kept layer never
    shallows as k grows), so the picks are those of a search over every k."""
    first = next(k for k in grid if val[k] >= floor)
    return [k for k in range(1, first) if k not in grid]


def refit_jobs(
    ranked: dict[str, dict[int, list[int]]],
    ks: list[int],
    randoms: dict[int, tuple[list[tuple[int, ...]], bool]],
    seeds: list[int],
) -> dict[tuple[tuple[int, ...], int], list[str]]:
    """The (layer set, seed) pairs to refit, each with the rankings that keep it at that seed: a set
    one seed's ranking keeps (its own LAYA head's α or LOLO) is refit at that seed only; the random
    reference's sets at every seed (with no ranking, where none keeps them)."""
    wanted: dict[tuple[tuple[int, ...], int], list[str]] = {}
    for name, orders in ranked.items():
        for k in ks:
            for s, order in orders.items():
                wanted.setdefault((_top(order, k), s), []).append(name)
    for drawn, _ in randoms.values():
        for layers in drawn:
            for s in seeds:
                wanted.setdefault((layers, s), [])
    return wanted


def _top(order: list[int], k: int) -> tuple[int, ...]:
    """The top-``k`` layers of a ranking's order, in cache order."""
    return tuple(sorted(order[:k]))


def prune_layers(
    head_dir: str | Path,
    store: FeatureStore,
    config: PruneConfig,
    budget: Budget | None = None,
    *,
    out_dir: str | Path,
    scalarmix_dir: str | Path | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> Result:
    """Rank, refit (or re-evaluate) on the top-k layers of each ranking, choose and write; see the module.
    ``head_dir``: one head directory, or a fit-head output (its laya/seed_<S>/, each seed's α and LOLO
    ranking the layers refit at that seed). ``scalarmix_dir``: fit-head's scalarmix folder (each refit seed
    ranked by the ScalarMix head of its seed) or one ScalarMix head (read at every seed, warned)."""
    from .outputs import write_prune

    head_dirs = weighted_head_dirs([head_dir])
    if len(head_dirs) > 1 and not config.refit:
        raise InputError(
            f"--no-refit with {len(head_dirs)} LAYA heads in {head_dir}: --no-refit re-evaluates one head; give "
            "one of them (laya/seed_<S>/), or leave --no-refit out to refit each head's ranking at its seed"
        )
    given = Path(head_dir) if len(head_dirs) > 1 else head_dirs[0]  # the heads read are in `alpha_heads`

    def run(tmp: Path) -> tuple[dict[str, Any], list[Path]]:
        summary, chosen = _prune(
            given, head_dirs, store, config, budget or Budget(), scalarmix_dir, progress or no_progress
        )
        return summary, write_prune(tmp, summary, chosen, plots=config.plots)

    inputs = [*head_dirs, store.path, scalarmix_dir]  # an --out beside the head in a fit-head output is allowed
    return write_whole(out_dir, run, command="prune", inputs=inputs, overwrite=overwrite)


Layers = tuple[int, ...]
Job = tuple[Layers, int]  # a layer set and the seed it is refit at


def _prune(
    given: Path,
    head_dirs: list[Path],
    store: FeatureStore,
    config: PruneConfig,
    budget: Budget,
    scalarmix_dir: str | Path | None,
    emit: Progress,
) -> tuple[dict[str, Any], tuple[Head, dict[str, Any]] | None]:
    device = pick_device(config.device)
    smix_dirs = [] if scalarmix_dir is None else scalarmix_dirs(scalarmix_dir)
    store = store_for_heads(store, [*head_dirs, *smix_dirs])
    opened, configs, seeds, train_rows, val_rows, rows_how = open_laya_heads(
        head_dirs, store, config, "prune", refit=config.refit
    )
    head, hconf = opened[0], configs[0]
    names, n_layers = store.layer_names, head.num_layers
    too_many = [k for k in config.ks if k > n_layers]
    if too_many:
        raise InputError(f"--ks {too_many[0]}: the head reads {n_layers} layers; give layer counts 1 … {n_layers}")
    smix = (
        None
        if scalarmix_dir is None
        else open_scalarmix(scalarmix_dir, smix_dirs, store, seeds, config.allow_other_cache)
    )
    smix_ranking, smix_by_seed = scalarmix_rankings(smix, seeds)
    train, test = load_split(store, config.train_split, device), load_split(store, config.test_split, device)
    budget_defaults = defaulted(budget)  # before the head's weight decay fills one in
    budget = budget.for_head(hconf)
    fit_rows = fit_rows_of(train_rows, train.labels, budget.train_limit, config.seed, store.class_names)
    rank_rows = subsample(train_rows, config.rank_rows, config.seed, 2)
    emit({"event": "step", "step": "rankings"})
    rank_hs = rows_tensor(train.hs, rank_rows)
    from ..compare.values import layer_means

    means = layer_means(store, config.train_split)
    own = []  # each head's α and LOLO rankings, which rank the layers refit at its seed
    for h in opened:
        h.to(device)
        logits, weights = head_outputs(h, rank_hs)
        assert weights is not None  # open_weighted_head: heads with weights only
        own.append((by_alpha(weights, len(rank_rows)), by_lolo(h, rank_hs, logits.argmax(1), means, len(rank_rows))))
    # several heads: the top-level α and LOLO scores are their mean (each head's own in by_seed)
    alpha, lolo = (across_heads([pair[i] for pair in own], seeds) if len(own) > 1 else own[0][i] for i in (0, 1))
    rankings = [
        alpha,
        smix_ranking,
        lolo,
        by_block_influence([h.cpu().numpy() for h in rank_hs], names, len(rank_rows)),
        by_depth(n_layers),
        by_deepest(n_layers),
    ]
    costs = backbone_costs(store, config.costs)
    coarse = config.refit and not config.ks and config.search == "coarse"
    if config.ks:
        ks = sorted({*config.ks, n_layers}, reverse=True)
    else:
        ks = sorted(coarse_ks(n_layers) if coarse else range(1, n_layers + 1), reverse=True)
    # each ranking's order at each seed: α and LOLO are each head's own (one head: the same at every seed)
    ranked = {r.name: {s: r.order for s in seeds} for r in rankings if r.applies and r.order is not None}
    if len(opened) > 1:
        for s, pair in zip(seeds, own):
            for r in pair:
                assert r.order is not None
                ranked[r.name][s] = r.order
    for s, r in smix_by_seed.items():  # each refit seed's ScalarMix head: its own ranking
        assert r.order is not None
        ranked["scalarmix"][s] = r.order
    per_ranking = {name: list(ks) for name in ranked}  # the k each ranking is evaluated at, largest first
    randoms = {k: random_sets(n_layers, k, config.seed) for k in ks if k < n_layers}
    wanted = refit_jobs(ranked, ks, randoms, seeds)
    added = {layers for (layers, _), found in wanted.items() if not found} - {
        layers for (layers, _), found in wanted.items() if found
    }
    added_refits = sum(not found for found in wanted.values())
    results: dict[Job, tuple[float, float]] = {}
    rights: dict[Job, np.ndarray] = {}  # (N,) the test rows each refit answers right: their own sampling
    fits: dict[Job, Fit] = {}
    hp, kind = head_hparams(hconf), head.kind
    common: dict[str, Any] = dict(
        train=train, train_rows=fit_rows, val_rows=val_rows, test=test, num_classes=store.num_classes, budget=budget
    )
    if config.refit:
        common["moments"] = layer_moments(hp, train, fit_rows, names)
    every = tuple(range(n_layers))

    def evaluate(todo: list[Job], why: str) -> None:
        """Refit (or re-evaluate) the (layer set, seed) pairs of ``todo`` into ``results`` and ``fits``;
        ``why`` says what they are, in the step line that counts them before the first one starts; no
        pairs, no line (a coarse search whose grid left no k below a ranking's first within --max-drop)."""
        if not todo:
            return
        workers = cpu_workers(config.workers, device, len(todo)) if config.refit else 1
        at_once = f", {workers} at once" if workers > 1 else ""
        doing = "refits" if config.refit else "evaluations"
        emit({"event": "step", "step": f"{doing}: {len(todo)} (layer set, seed) pairs, {why}{at_once}"})
        if config.refit:

            def one(i: int, job: Job, report: Progress) -> Fit:
                report({"event": "fit", "done": i, "total": len(todo), "layers": [names[j] for j in job[0]]})
                fit = refit(kind, hp, job[0], job[1], layer_names=names, **common)
                report(fitted(len(todo), fit, names))
                # only a first-seed head can be written (the chosen set's); the others' are never read
                return fit if job[1] == seeds[0] else fit.without_head()

            # independent refits: several at once in forked processes on a multi-core CPU
            fits.update(zip(todo, run_forked(todo, one, workers, emit)))
            results.update({job: (fits[job].val_acc, fits[job].test_acc) for job in todo})
            for job in todo:
                if (right := fits[job].test_right) is not None:
                    rights[job] = right
        else:
            for i, (layers, s) in enumerate(todo):
                emit({"event": "fit", "done": i, "total": len(todo), "layers": [names[j] for j in layers]})
                val = ablated_accuracy(head, train, val_rows, layers, config.ablation, means)
                rights[layers, s] = ablated_right(head, test, None, layers, config.ablation, means)
                results[layers, s] = (val, float(rights[layers, s].mean()))
        emit({"event": "fit", "done": len(todo), "total": len(todo), "layers": []})

    def accs(orders: dict[int, list[int]], k: int) -> tuple[list[float], list[float]]:
        """(val, test) accuracies per seed of a ranking's top-k sets, each refit at its seed."""
        vals, tests = zip(*(results[_top(order, k), s] for s, order in orders.items()))
        return list(vals), list(tests)

    drawn = sum(len(d) for d, _ in randoms.values())
    evaluate(
        list(wanted),
        f"{len(ranked)} rankings' top-k sets at {len(ks)} k ({', '.join(map(str, ks))}) and {drawn} random sets, "
        f"each at {counted(len(seeds), 'seed')} (shared sets refit once)",
    )
    ref_vals, ref_tests = accs({s: list(every) for s in seeds}, n_layers)
    floor = -config.max_drop - TOLERANCE
    if coarse:  # every k below each ranking's smallest grid k within --max-drop
        for name, orders in ranked.items():
            margins = {k: within_margin(accs(orders, k)[0], ref_vals, config.max_drop) for k in ks}
            finer = finer_ks(sorted(ks), margins, floor)
            per_ranking[name] = sorted({*ks, *finer}, reverse=True)
            for k in finer:
                for s, order in orders.items():
                    wanted.setdefault((_top(order, k), s), []).append(name)
        evaluate([job for job in wanted if job not in results], "the k below each ranking's first k within --max-drop")

    # per seed, what a random ranking keeps at each k it is refit at: the null of a set a ranking keeps
    random_tests = {
        k: np.mean([[results[d, s][1] for s in seeds] for d in drawn], axis=0) for k, (drawn, _) in randoms.items()
    }
    points = []
    for name, orders in ranked.items():
        for k in per_ranking[name]:
            tops = {s: _top(order, k) for s, order in orders.items()}
            vals, tests = accs(orders, k)
            p_saved, f_saved = np.mean([costs.saved(max(layers)) for layers in tops.values()], axis=0)
            layers = tops[seeds[0]]
            stable = len(set(tops.values())) == 1
            point: dict[str, Any] = {
                "ranking": name,
                "k": k,
                "layers": [names[j] for j in layers] if stable else None,
                "layer_index": list(layers) if stable else None,
                "deepest": names[max(layers)] if stable else None,
                "params_saved": float(p_saved),
                "flops_saved": float(f_saved),
                "val_acc": estimate(vals),
                "test_acc": estimate(tests),
                # what keeping only these layers costs on the test split, paired seed by seed
                "test_acc_vs_all": (vs_all := paired(tests, ref_tests)),
                # ... beside the test rows' own paired interval (the seeds share those rows)
                "test_rows_vs_all": test_rows(
                    vs_all, [rights[tops[s], s] for s in orders], [rights[every, s] for s in orders]
                ),
                # against random layer sets of the same size (none off the coarse grid, nor at k = L)
                "test_acc_vs_random": paired(tests, random_tests[k]) if k in random_tests else None,
                "within_max_drop": within_margin(vals, ref_vals, config.max_drop) >= floor,
                "why_withheld": None,
            }
            if not stable:  # each head's set: no one set to recommend, and its saving a mean over those sets
                point["layers_by_seed"] = {str(s): [names[j] for j in t] for s, t in tops.items()}
                point["flops_saved_by_seed"] = {str(s): float(costs.saved(max(t))[1]) for s, t in tops.items()}
            points.append(point)
            # the rule that withholds the chosen set, read on every set a ranking would pick
            if point["within_max_drop"]:
                point["why_withheld"] = (
                    _unstable(name, [k])
                    if not stable
                    else _why_withheld(point, len(val_rows), n_layers, config.max_drop, refit=config.refit)
                )
    chosen_point = _pick(points, ranked, lambda p: (p["k"], -p["flops_saved"], -p["val_acc"]["mean"]), n_layers)
    cheapest = _pick(points, ranked, lambda p: (-p["flops_saved"], p["k"], -p["val_acc"]["mean"]), n_layers)
    withheld: dict[str, dict[str, Any]] = {}
    for what, pick in (("chosen", chosen_point), ("cheapest", cheapest)):
        why = _withhold(pick, len(val_rows), n_layers, config.max_drop, refit=config.refit)
        if pick is not None and why is not None:
            withheld[what] = {**pick, "why_kind": why[0], "why": why[1]}
    chosen_point = None if "chosen" in withheld else chosen_point
    cheapest = None if "cheapest" in withheld else cheapest
    chosen = None
    if chosen_point is not None:
        layers = tuple(chosen_point["layer_index"])
        fit = fits.get((layers, seeds[0])) if config.refit else None
        if fit is None:
            emit({"event": "step", "step": "refit of the chosen layer set"})
            fit = refit(kind, hp, layers, seeds[0], layer_names=names, **common)
        assert fit.head is not None
        chosen = (fit.head, _head_meta(store, given, layers, chosen_point, fit, config))
        chosen_point = {**chosen_point, "head_dir": "head", "head_seed": fit.seed, "head_test_acc": fit.test_acc}
    given_accs = [accuracy(head_outputs(h, test.hs)[0], test.labels) for h in opened]
    several = len(opened) > 1
    summary: dict[str, Any] = {
        **artifact_header(command="prune"),
        "device": str(device),  # what --device (auto by default) ran on
        "head_dir": str(given.resolve()),
        # the heads α and LOLO are read from: one, for every seed, or each fit-head seed's for its own
        "alpha_heads": [
            {"head_dir": str(d.resolve()), "seed": s if several else None, "test_acc": a}
            for d, s, a in zip(head_dirs, seeds, given_accs)
        ],
        "head_kind": kind,
        "scalarmix_dir": None if scalarmix_dir is None else str(Path(scalarmix_dir).resolve()),
        "scalarmix": scalarmix_record(smix),  # the ScalarMix heads read, and the refit seeds each pairs with
        "cache": cache_record(store),
        "config": asdict(config),
        "config_defaults": defaulted(config),
        "budget": {**asdict(budget), "epochs_patience": list(budget.resolve(len(fit_rows)))},
        "budget_defaults": budget_defaults,
        "mode": "refit" if config.refit else f"no-refit (ablation {config.ablation})",
        "seeds": seeds,
        **({"seeds_how": seeds_how(seeds, len(opened))} if config.refit else {}),
        "rows": {
            "fit": len(fit_rows),
            "val": len(val_rows),
            "test": test.n,
            "rank": len(rank_rows),
            "val_how": rows_how,
        },
        "selection": _selection(config.max_drop),
        "costs": costs.to_dict(names),
        "rankings": {r.name: _ranking_entry(r, names) for r in rankings},
        "reference": {"val_acc": estimate(ref_vals), "test_acc": estimate(ref_tests)},
        "points": points,
        "fits": [f.record() for f in fits.values()],
        # the reference of every refit accuracy: each seed's given head itself (no refit under --no-refit)
        "refit_check": refit_check(
            given_accs if several else given_accs[0], ref_tests, n_layers, budget, len(fit_rows), configs
        )
        if config.refit
        else None,
        "chosen": chosen_point,
        # the compute view of the choice: the most FLOPs saved (ties: fewer layers)
        "cheapest": cheapest,
        # picks validation chose that are not recommended (not written as a head), each with why
        "withheld": withheld,
        "withhold_rule": WITHHOLD_RULE,
    }
    if smix is not None and not smix.one_seed:  # each refit seed's ScalarMix order
        summary["rankings"]["scalarmix"]["by_seed"] = {
            str(s): _ranking_entry(r, names) for s, r in smix_by_seed.items()
        }
    if several:  # each head's α and LOLO order, which rank the layers refit at its seed
        for pair, s in zip(own, seeds):
            for r in pair:
                summary["rankings"][r.name].setdefault("by_seed", {})[str(s)] = _ranking_entry(r, names)
        for i, name in enumerate(("alpha", "lolo")):  # the top-level mean's interval over the heads
            summary["rankings"][name]["scores_over_heads"] = {
                n: estimate([float(np.asarray(pair[i].scores)[j]) for pair in own]) for j, n in enumerate(names)
            }
    summary["ks"] = ks
    summary["k_search"] = {
        "search": "coarse" if coarse else "given" if config.ks else "every",
        "per_ranking": {name: per_ranking[name] for name in ranked},
        "how": COARSE_HOW if coarse else "every ranking at the same k",
    }
    summary["all_layers_saved"] = dict(zip(("params_saved", "flops_saved"), costs.saved(n_layers - 1)))
    summary["random_reference"] = _random_reference(
        randoms, results, names, n_layers, (len(added), added_refits), seeds, costs
    )
    summary["per_ranking"], summary["alpha_vs"] = _compare_rankings(
        ranked,
        results,
        [k for k in ks if k < n_layers],
        seeds,
        randoms,
        n_layers=n_layers,
        scalarmix_seeds=0 if smix is None else len(smix.heads),
        rights=rights,
    )
    summary["rows_rule"] = ROWS_RULE
    heads: list[tuple[str | Path, dict[str, Any]]] = list(zip(head_dirs, configs))
    heads += [(d, read_head_config(d)) for d in (smix.dirs if smix else [])]
    # α's (and ScalarMix's) near ties are each head's: the mean of several can tie where no head does
    ties = [w for r in rankings if r.name not in ("alpha", "scalarmix") and (w := near_ties(r, names)) is not None]
    ties += [w] if (w := scalarmix_ties(smix, smix_by_seed, names)) else []
    smix_vs = summary["alpha_vs"].get("scalarmix")
    if smix_vs is not None:  # ScalarMix's near ties qualify α's comparison with it alone: said there, once
        smix_vs["caveat"] = next((w for w in ties if w.startswith("the scalarmix ranking")), None)
        ties = [w for w in ties if w != smix_vs["caveat"]]
    alpha_ties = near_ties_by_seed([pair[0] for pair in own], seeds, names)
    ties = ([alpha_ties] if alpha_ties else []) + ties
    estimated = estimate_warnings(summary["costs"])
    summary["warnings"] = (
        (smix.warnings if smix else [])
        + trust_lines(store, heads, test)
        + estimated
        + check_warnings(summary["refit_check"])
        + ties
    )
    summary["verdict"] = verdict_lines(summary)
    return summary, chosen


def _selection(max_drop: float) -> str:
    """The rule that picked each ranking's smallest k, as :func:`within_margin` reads --max-drop."""
    within = (
        "whose validation accuracy is no lower than all layers' on any seed (--max-drop 0)"
        if max_drop == 0
        else f"whose mean validation accuracy is within --max-drop {max_drop:g} of all layers'"
    )
    return (
        f"smallest k {within}; ties: more FLOPs saved, then higher validation accuracy; never a k where the heads' "
        "rankings keep different sets"
    )


def _unstable(name: str, ks: list[int]) -> str:
    """Why a point whose layer sets differ across the LAYA (or ScalarMix) heads is no recommendation."""
    what = {"alpha": "α", "lolo": "LOLO", "scalarmix": "ScalarMix"}.get(name, name)
    return (
        f"the heads' {what} rankings keep different sets at k = {', '.join(map(str, ks))}: not a stable recommendation"
    )


def _why_withheld(
    point: dict[str, Any] | None, val_rows: int, n_layers: int, max_drop: float, *, refit: bool = True
) -> str | None:
    """The words of :func:`_withhold`: why a set is no recommendation, or None."""
    said = _withhold(point, val_rows, n_layers, max_drop, refit=refit)
    return None if said is None else said[1]


def _withhold(
    point: dict[str, Any] | None, val_rows: int, n_layers: int, max_drop: float, *, refit: bool = True
) -> tuple[str, str] | None:
    """Why a layer set validation chose (fewer than all layers) is no recommendation, as (kind, words),
    or None. The kinds: "few validation rows" (fewer than MIN_VAL_ROWS), "coarse validation" (one row
    weighing more than ``max_drop``), "test loss" (its own paired test difference from all layers
    reads as a loss, one the test rows' own sampling does not hold (``test_rows_vs_all``'s
    within_sampling): the words quote that difference), "test mean" (with no interval, or within the
    test rows' sampling, a drop larger than --max-drop, worded as a rule on one seed's value where one
    refit seed drew it, as --no-refit measures the given head itself; under --max-drop 0, any fall of
    the test mean). The test split only withholds a pick here, it never picks another one."""
    if point is None or point["k"] == n_layers:
        return None
    if val_rows < MIN_VAL_ROWS:
        return "few validation rows", (
            f"it was chosen on {val_rows} validation rows (fewer than {MIN_VAL_ROWS}: accuracy there moves in "
            f"steps of {1 / val_rows:.3f}, too coarse to choose by against --max-drop {max_drop:g})"
        )
    # A drop finer than one row is invisible to validation: "within --max-drop" would then mean
    # "no validation row lost", which passed a MobileNetV2 set that lost 0.084 on test (20 rows, --max-drop 0.005).
    # --max-drop 0 asks for exactly that, read per seed, and the test mean must not fall either.
    if max_drop > 0 and 1 / val_rows > max_drop + TOLERANCE:
        return "coarse validation", (
            f"it was chosen on {val_rows} validation rows: one row there weighs {1 / val_rows:.4f}, more than "
            f"--max-drop {max_drop:g}, so validation cannot resolve the drop the set is to keep under; "
            f"{math.ceil(1 / max_drop - TOLERANCE)} rows resolve it, or --max-drop 0 asks for a set whose "
            "validation accuracy is no lower than all layers' on any seed, nor its mean test accuracy"
        )
    d = point.get("test_acc_vs_all") or {}
    # a loss of the interval over seeds that the test rows' own sampling holds is no measured loss
    sampled = (point.get("test_rows_vs_all") or {}).get("within_sampling")
    if d.get("ci_high") is not None and d["ci_high"] < 0 and not sampled:
        said = f"{d['mean']:+.4f} [{d['ci_low']:+.4f}, {d['ci_high']:+.4f}]"
        return (
            "test loss",
            f"its own test difference from all layers reads as a loss ({said}, paired over {d['n']} seeds)",
        )
    # within the rows' sampling the interval decides nothing, so the mean rule still holds --max-drop
    mean_only = d.get("ci_high") is None or max_drop == 0 or bool(sampled)
    if mean_only and d.get("mean") is not None and d["mean"] < -max_drop - TOLERANCE:
        n = d.get("n") or 1
        if max_drop == 0:  # a rule on the mean, deliberately strict: not a loss the interval shows
            return "test mean", (
                f"its test accuracy{f', mean over {n} seeds,' if n > 1 else ''} is {-d['mean']:.4f} lower than all "
                "layers', and --max-drop 0 recommends no set whose test mean is lower at all (a rule on the mean, "
                "not a measured loss)"
            )
        if n == 1 and refit:  # one refit seed's value: no interval says whether the set loses anything
            return "test mean", (
                f"its test accuracy on the one refit seed is {-d['mean']:.4f} lower than all layers', more than "
                f"--max-drop {max_drop:g} (one value from one seed, no interval: a rule on that value, not a measured "
                "loss)"
            )
        over = f" (mean over {n} seeds)" if n > 1 else ""
        why = " (within the test rows' sampling: a rule on the mean, not a measured loss)" if sampled else ""
        return (
            "test mean",
            f"its test accuracy falls {-d['mean']:.4f} below all layers'{over}, more than --max-drop {max_drop:g}{why}",
        )
    return None


def _pick(
    points: list[dict[str, Any]],
    ranked: dict[str, dict[int, list[int]]],
    key: Callable[[dict[str, Any]], Any],
    n_layers: int,
) -> dict[str, Any] | None:
    """The point within max_drop that ``key`` puts first, with every ranking whose top-k is its layer
    set at every seed (α first): also one the coarse search did not refit at that k, as a search over
    every k lists. A point whose sets differ across the LAYA (or ScalarMix) heads is never one."""
    within = [p for p in points if p["within_max_drop"] and "layers_by_seed" not in p]
    if not within:
        return None
    best = min(within, key=key)
    layers = tuple(best["layer_index"])
    found = sorted(
        (n for n, orders in ranked.items() if all(_top(o, best["k"]) == layers for o in orders.values())),
        key=lambda n: NON_ALPHA.index(n) + 1 if n in NON_ALPHA else 0,
    )
    return {**best, "found_by": found, "vs_random": _vs_random(best, n_layers)}


def _vs_random(point: dict[str, Any], n_layers: int) -> str:
    """The set against random sets of as many layers, paired seed by seed: whether keeping these k
    layers is the ranking's finding or any k layers'; where there is no random reference, why."""
    d, k = point.get("test_acc_vs_random"), point["k"]
    layers = counted(k, "layer")
    if k == n_layers:
        return f"no random reference at k = {k}: every set of {layers} is all layers"
    if not d or d.get("mean") is None:  # a k the coarse search added below its grid
        return (
            f"no random reference at k = {k}: random sets are refit at the coarse grid's k only "
            "(--search every refits them at every k)"
        )
    said = verdict(
        d,
        what="this layer" if k == 1 else f"these {layers}",
        baseline=f"random sets of {layers} (the random reference at k = {k})",
    )
    return f"{said} (test accuracy)"


def _also(text: str | None) -> str:
    return f"; {text}" if text else ""


def _head_meta(
    store: FeatureStore,
    source: str | Path,
    layers: tuple[int, ...],
    point: dict[str, Any],
    fit: Fit,
    config: PruneConfig,
) -> dict[str, Any]:
    names = store.layer_names
    return {
        **cache_identity(store),
        "layer_names": [names[i] for i in layers],
        "pruned_from": {
            "head_dir": str(Path(source).resolve()),
            "cache_layer_names": names,
            "kept_layer_index": list(layers),
            "found_by": point["found_by"],
            "max_drop": config.max_drop,
            "note": "this head reads only the kept layers of the cache, in cache order",
        },
        "seed": fit.seed,
        "metrics": {"val_acc": fit.val_acc, "test_acc": fit.test_acc, "epochs_run": fit.epochs_run},
    }


def _ranking_entry(r: Ranking, names: list[str]) -> dict[str, Any]:
    return {
        "applies": r.applies,
        "how": r.how,
        "scores": None if r.scores is None else {n: float(s) for n, s in zip(names, r.scores)},
        "order": None if r.order is None else [names[i] for i in r.order],
    }


def _random_reference(
    randoms: dict[int, tuple[list[tuple[int, ...]], bool]],
    results: dict[Job, tuple[float, float]],
    names: list[str],
    n_layers: int,
    added: tuple[int, int],
    seeds: list[int],
    costs: Costs,
) -> dict[str, Any] | None:
    """What a random ranking keeps at each k < L: per seed, the mean accuracy over the layer sets of
    :func:`random_sets`, and the mean compute those sets save (what the plots draw it at); the note
    when L is so small that there are few orders to choose from."""
    if not randoms:
        return None
    per_k = []
    for k, (drawn, exact) in sorted(randoms.items(), reverse=True):
        tests = np.mean([[results[d, s][1] for s in seeds] for d in drawn], axis=0)
        vals = np.mean([[results[d, s][0] for s in seeds] for d in drawn], axis=0)
        p_saved, f_saved = np.mean([costs.saved(max(s)) for s in drawn], axis=0)
        per_k.append(
            {
                "k": k,
                "exact": exact,
                "sets_of_size_k": math.comb(n_layers, k),
                "sets": [[names[j] for j in s] for s in drawn],
                "params_saved": float(p_saved),
                "flops_saved": float(f_saved),
                "val_acc": estimate(vals),
                "test_acc": estimate(tests),
            }
        )
    exact = all(e["exact"] for e in per_k)
    note = None
    if exact:
        counts = ", ".join(f"{e['sets_of_size_k']} of size {e['k']}" for e in per_k)
        note = (
            f"with {n_layers} layers there are only {math.factorial(n_layers)} orders and few layer sets ({counts}): "
            "a ranking has little room to be right or wrong, and any that keeps the deepest layers first looks "
            "good against depth; the random reference is the exact mean over all of them"
        )
    return {
        "how": f"per seed, the mean test accuracy over every layer set of size k where there are at most "
        f"{RANDOM_EXACT}, else over {RANDOM_DRAWS} distinct sets drawn with default_rng([seed, 3, k]); each set "
        "refit over the same seeds as the rankings (paired)",
        "exact": exact,
        "per_k": per_k,
        "layer_sets_added": added[0],
        "refits_added": added[1],
        "note": note,
    }


def _compare_rankings(
    ranked: dict[str, dict[int, list[int]]],
    results: dict[Job, tuple[float, float]],
    ks: list[int],
    seeds: list[int],
    randoms: dict[int, tuple[list[tuple[int, ...]], bool]] | None = None,
    *,
    n_layers: int | None = None,
    scalarmix_seeds: int = 1,
    rights: dict[Job, np.ndarray] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per ranking, the mean test accuracy over the evaluated k < L per seed (k = L is the same for
    all), each seed's sets refit at that seed; α's paired difference from a random ranking (the
    headline) and from each other ranking that applies. Rankings that keep α's layer sets at every k
    and seed are said to, not compared. ``scalarmix_seeds``: how many ScalarMix heads ranked the seeds.
    ``rights``: each refit's (N,) test rows answered right, so each difference is also read beside the
    test rows' own interval (ROWS_RULE)."""
    area: dict[str, list[float]] = {}
    if not ks:
        return {}, {}
    tops: dict[str, dict[int, list[tuple[int, ...]]]] = {}
    for name, orders in ranked.items():
        tops[name] = {s: [_top(o, k) for k in ks] for s, o in orders.items()}
        area[name] = [float(np.mean([results[t, s][1] for t in tops[name][s]])) for s in seeds]
    if randoms:
        per_k = [np.mean([[results[d, s][1] for s in seeds] for d in randoms[k][0]], axis=0) for k in ks]
        area["random"] = [float(v) for v in np.mean(per_k, axis=0)]
    per = {n: {"mean_test_acc_over_k": estimate(v)} for n, v in area.items()}
    shares = _row_shares(tops, randoms, ks, seeds, rights)
    versus = {}
    others = [o for o in ("random", *NON_ALPHA) if o in area and "alpha" in area]
    same = {o: o in tops and tops[o] == tops["alpha"] for o in others}
    # one family: α against every ranking it is compared with, random first (any "α beats X" is read as
    # "α ranks layers well"); a ranking that keeps α's layer sets draws no verdict and is not counted
    fam = family(sum(not v for v in same.values()), "rankings compared with α")
    for other in others:
        d = paired(area["alpha"], area[other], fam["confidence"])
        rows = None
        if shares and not same[other]:  # the seeds' refits share the test rows: their own interval beside
            rows = rows_interval(shares["alpha"], shares[other], fam["confidence"])
            rows = None if rows is None else {**rows, **rows_rule(d, rows)}
        versus[other] = {
            "mean_test_acc_over_k_diff": d,
            "same_layer_sets": same[other],
            "test_rows": rows,
            "verdict": versus_verdict(
                other,
                d,
                same_sets=same[other],
                ks=ks,
                n_seeds=len(seeds),
                n_layers=n_layers,
                scalarmix_seeds=scalarmix_seeds,
                rows=rows,
            ),
            "family": fam,
        }
    return per, versus


# How α's comparisons with the other rankings are read beside the test rows' sampling (docs/METHOD.md, "Prune")
ROWS_RULE = (
    "every seed's refits are scored on the same test rows, so an interval over seeds leaves out which rows were "
    "drawn: each difference of α's ranking from another is also read over the test rows (each row's 0/1 answer "
    "by the top-k set, averaged over the k compared and the seeds; a paired normal interval at the comparison's "
    'level), and a "beats" or "worse" whose interval over seeds is far narrower than that one (fit-head\'s '
    "test-sampling rule), while that one holds 0, is withheld; where it is far narrower and that one excludes 0, "
    "the verdict says the rows' width"
)


def _row_shares(
    tops: dict[str, dict[int, list[tuple[int, ...]]]],
    randoms: dict[int, tuple[list[tuple[int, ...]], bool]] | None,
    ks: list[int],
    seeds: list[int],
    rights: dict[Job, np.ndarray] | None,
) -> dict[str, list[np.ndarray]] | None:
    """Per ranking (and "random"), per seed, each test row's share of the mean test accuracy over ``ks``:
    its 0/1 answer by the ranking's top-k set at that seed, averaged over the k (random: over each k's
    drawn sets first), so the rows' mean is the ranking's accuracy over k. None without ``rights``."""
    if not rights:
        return None

    def right(job: Job) -> np.ndarray:
        return np.asarray(rights[job], float)

    out = {
        name: [np.mean([right((t, s)) for t in by_seed[s]], axis=0) for s in seeds] for name, by_seed in tops.items()
    }
    if randoms:  # the mean over k of each k's mean over its drawn sets, as the random area is
        out["random"] = [
            np.mean([np.mean([right((d, s)) for d in randoms[k][0]], axis=0) for k in ks], axis=0) for s in seeds
        ]
    return out


def versus_verdict(
    other: str,
    d: dict[str, Any],
    *,
    same_sets: bool,
    ks: list[int],
    n_seeds: int,
    n_layers: int | None = None,
    scalarmix_seeds: int = 1,
    rows: dict[str, Any] | None = None,
) -> str:
    """The sentence of α's ranking against ``other``'s: same sets (nothing to compare), different sets that
    tie on every seed (no verdict: a zero-width interval from ties tests nothing), else the verdict, read
    beside ``rows``, the test rows' own interval (common.rows_rule): withheld where it is far wider and holds
    0, its width said where it is far wider and excludes 0. The k tried read "k = 1, 2 of 19 layers", as the
    headline says them (and the terminal keeps them on one line)."""
    from ..report.reading import SCALARMIX_INTERVAL, SCALARMIX_ONE_SEED, ks_text
    from ..training.stats import tied

    baseline = (
        "a random ranking (mean over random layer sets of each size k)" if other == "random" else f"the {other} ranking"
    )
    tried = ks_text(ks, n_layers)
    if same_sets:
        said = (
            f"the α ranking and the {other} ranking keep the same layer sets at each k tried ({tried}): "
            "nothing to compare"
        )
    elif tied(d):
        said = (
            f"the α ranking and the {other} ranking keep different layer sets at some k tried ({tried}), "
            f"which score alike: α − {other} = {d['mean']:+.4f}, {same_text(d)}"
        )
    elif rows and rows["withheld"]:
        said = (
            f"no verdict on the α ranking against {baseline}: {_over_seeds(d, rows)}, which holds 0: a difference of "
            "which rows were drawn as much as of the rankings; read it as undecided, or add test rows"
        )
    else:
        said = verdict(d, what="the α ranking", baseline=baseline)
        if rows and rows["dominates"] and not rows["holds_zero"]:  # said of the rows' interval: "excludes 0"
            said += (
                f"; that CI over seeds is far narrower than {_rows_allow(rows)}, which excludes 0: read the difference "
                "to within that"
            )
    if other == "scalarmix" and n_seeds > 1 and scalarmix_seeds == 1:  # one head: its ranking does not vary by seed
        said += f"; {SCALARMIX_ONE_SEED}" + ("" if same_sets else f": {SCALARMIX_INTERVAL}")
    return said


def _rows_allow(rows: dict[str, Any]) -> str:
    return (
        f"the {rows['rows']} shared test rows alone allow (±{rows['half_width']:.4f}, paired over rows at the same "
        "level)"
    )


def _over_seeds(d: dict[str, Any], rows: dict[str, Any]) -> str:
    """A difference's interval over seeds beside the test rows' own, far wider one."""
    f = spec(d)
    return (
        f"{d['mean']:{f}}, {level(d)} CI over seeds [{d['ci_low']:{f}}, {d['ci_high']:{f}}], far narrower than "
        f"{_rows_allow(rows)}"
    )


def _given(s: dict[str, Any]) -> str:
    """The given head's own test accuracy, beside the refits' on all layers (their reference); several
    LAYA heads' each (refit_check's `given_head_test_acc` is their mean, no one head's)."""
    heads = s.get("alpha_heads") or []
    if len(heads) > 1:
        seeds, accs = (", ".join(f"{h[k]:{f}}" for h in heads) for k, f in (("seed", ""), ("test_acc", ".4f")))
        return f" (refitted; the given heads of seeds {seeds}: {accs})"
    given = (s.get("refit_check") or {}).get("given_head_test_acc")
    return f" (refitted; the given head: {given:.4f})" if isinstance(given, float) else ""


def _search_line(s: dict[str, Any]) -> list[str]:
    """Which k a coarse-to-fine search refit (none said when the grid is every k)."""
    search, n_layers = s.get("k_search") or {}, len(s["cache"]["layer_names"])
    if search.get("search") != "coarse" or len(s["ks"]) >= n_layers:
        return []
    extra = {
        name: ", ".join(str(k) for k in sorted(set(ks) - set(s["ks"]))) for name, ks in search["per_ranking"].items()
    }
    finer = "; ".join(f"{name} also at {ks}" for name, ks in extra.items() if ks)
    below = "every k below its smallest grid k within --max-drop"
    return [
        f"k searched coarse to fine: every ranking refit at k = {', '.join(str(k) for k in sorted(s['ks']))} "
        f"(the random reference at those below {n_layers}); "
        + (
            f"{finer}: {below}"
            if finer
            else "no ranking is refit at a k off the grid: none lies below its smallest grid k within --max-drop"
        )
        + "; the chosen and cheapest sets are those a search over every k finds; α's comparisons over k read the "
        "grid's k only; --search every refits every k"
    ]


def verdict_lines(s: dict[str, Any]) -> list[str]:
    """Prune's verdict lines, read from its summary's fields alone: the run stores them, `report DIR`
    rebuilds them by this same rule (on a summary holding every field of VERDICT_FIELDS)."""
    from ..report.reading import ks_text, withheld_cost

    lines = []
    vs = s["alpha_vs"]
    over = f"mean test accuracy over {ks_text(s['ks'], len(s['cache']['layer_names']))}"  # the k tried, no others
    if "random" in vs:  # the headline: α against what any ranking would keep
        # the family's level reads an interval: one seed gives none
        no_ci = vs["random"]["mean_test_acc_over_k_diff"].get("ci_low") is None
        fam = "" if no_ci else f"; {family_text(vs['random'].get('family'))}"
        lines.append(vs["random"]["verdict"] + _strongest_said(s) + f" ({over}{fam})")
    note = (s.get("random_reference") or {}).get("note")
    if note:
        lines.append(note)
    lines += _search_line(s)
    for name in s["rankings"]:  # several LAYA heads: the k where their α (or LOLO) sets differ
        ks = sorted(p["k"] for p in s["points"] if p["ranking"] == name and "layers_by_seed" in p)
        lines += [_unstable(name, ks)] if ks else []
    if s["config"]["max_drop"] == 0:  # the one request validation reads at any number of rows
        n = s["rows"]["val"]
        lines.append(
            f"--max-drop 0: a set is within only if its validation accuracy is no lower than all layers' on any seed "
            f"(one of the {n} rows weighs {1 / n:.4f}: a smaller loss is not seen there), and no recommendation unless "
            "its mean test accuracy is no lower than all layers'"
        )
    c = s["chosen"]
    withheld = s.get("withheld") or {}
    for what, w in withheld.items():
        if what == "cheapest" and w["layers"] == withheld.get("chosen", {}).get("layers"):
            continue  # the same set as the smallest one: said once
        view = "smallest layer set" if what == "chosen" else "layer set saving the most compute"
        lines.append(
            f"no recommendation: the {view} within --max-drop on validation, {', '.join(w['layers'])} "
            f"({w['k']} of {len(s['cache']['layer_names'])} layers; {saves_text(w, s, short=True)}), is withheld: "
            f"{w['why']}; test accuracy {w['test_acc']['mean']:.4f} vs {s['reference']['test_acc']['mean']:.4f} "
            f"with all layers{withheld_cost(w, s)}; no head is written for it"
        )
    n_layers = len(s["cache"]["layer_names"])
    # all layers "found by" every ranking is no finding: it is the reference itself (a CNN on CIFAR read so)
    every = c is not None and c["k"] == n_layers
    if (c is None and "chosen" not in withheld) or every:
        lines.append(f"no layer set but all {n_layers} stays within --max-drop: nothing to prune")
    elif c is not None:
        lines.append(
            f"keep {', '.join(c['layers'])} ({c['k']} of {len(s['cache']['layer_names'])} layers), found by "
            f"{', '.join(c['found_by'])}: test accuracy {c['test_acc']['mean']:.4f} vs "
            f"{s['reference']['test_acc']['mean']:.4f} with all layers{cost_text(c, s)}{_given(s)}; "
            f"{saves_text(c, s)}{_also(c.get('vs_random'))}"
        )
    cheap = s["cheapest"]
    if cheap is not None and not every:
        lines.append(
            f"most compute saved within --max-drop: keep {', '.join(cheap['layers'])}, found by "
            f"{', '.join(cheap['found_by'])}: {saves_text(cheap, s, short=True)}, test accuracy "
            f"{cheap['test_acc']['mean']:.4f}{cost_text(cheap, s)}{_also(cheap.get('vs_random'))}"
        )
    for name in s["rankings"]:
        p = smallest_within(s, name)
        if p is None or every:  # every ranking's is all layers then, said above
            continue
        why = p.get("why_withheld")  # absent from summaries written before the rule read every ranking
        said = why and any(why in line for line in lines)  # the same why once: later lines point back to it
        lines.append(
            f"{name}: smallest set within --max-drop keeps {counted(p['k'], 'layer')}, "
            f"{saves_text(p, s, short=True)}"
            + (
                "; no recommendation, withheld as above"
                if said
                else f"; no recommendation, withheld: {why}"
                if why
                else ""
            )
        )
    lines += _random_within(s)
    lines += [
        v["verdict"]
        + ("" if v.get("same_layer_sets") else f" ({over})")
        + (f"; {v['caveat']}" if v.get("caveat") else "")
        for k, v in vs.items()
        if k != "random"
    ]
    return lines


def _strongest_said(s: dict[str, Any]) -> str:
    """What α against random leaves out, in its sentence: α against the strongest ranking that needs no α.
    α putting 0.63 on the last layer ranks as "keep the deepest", so it beat random (+0.0426, 99% CI
    [+0.0072, +0.0781]) as keeping the deepest layers would, against which it was −0.0063 [−0.0536, +0.0411]."""
    from ..report.reading import PRUNE_NAMES, same_sets, strongest_without_alpha
    from ..training.stats import outcome

    name = strongest_without_alpha(s)
    if name is None:
        return ""
    d = s["alpha_vs"][name]["mean_test_acc_over_k_diff"]
    what = f"the strongest ranking that needs no α, {name} ({PRUNE_NAMES.get(name, name)})"
    random_won = outcome(s["alpha_vs"]["random"]["mean_test_acc_over_k_diff"]) == "better"
    but = "; but" if random_won and outcome(d) != "better" else ";"
    if same_sets(s, name):
        return f"{but} {what}, keeps the same layer sets at each k tried: the α ranking amounts to it here"
    if (s["alpha_vs"][name].get("test_rows") or {}).get("withheld"):
        f = spec(d)
        span = f"{d['mean']:{f}}, {level(d)} CI [{d['ci_low']:{f}}, {d['ci_high']:{f}}]"
        return f"; against {what}: α − {name} = {span}, no verdict (within the test rows' sampling)"
    return f"{but} " + verdict(d, what="the α ranking", baseline=what)


def _random_within(s: dict[str, Any]) -> list[str]:
    """The null of each ranking's smallest set within --max-drop: the fewest layers random sets keep
    within it (validation, as the rankings are read), so a ranking's smallest k at or above it is
    said to be no finding of the ranking's."""
    per_k, max_drop = (s.get("random_reference") or {}).get("per_k") or [], s["config"]["max_drop"]
    ref = s["reference"]["val_acc"]["values"]
    ks = [e["k"] for e in per_k if within_margin(e["val_acc"]["values"], ref, max_drop) >= -max_drop - TOLERANCE]
    if not per_k:
        return []
    if not ks:
        sizes = " or ".join(str(e["k"]) for e in per_k)
        return [
            f"random sets: none of {sizes} layers stays within --max-drop (the mean over random sets of each size, as "
            "the rankings are read)"
        ]
    k = min(ks)
    return [
        f"random sets of {counted(k, 'layer')} stay within --max-drop (the mean over random sets, as the rankings "
        f"are read): a ranking whose smallest set keeps {k} or more layers found no fewer than layers drawn at random"
    ]
