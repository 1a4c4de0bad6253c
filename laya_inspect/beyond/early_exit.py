"""`laya-inspect early-exit`: simulated per-input early exit (docs/METHOD.md, "Early exit").

Per seed, a head of the given head's kind is fitted on layers 1 … k for every depth k; input x exits
at the first depth k whose rule fires (the last depth always does) and takes that head's prediction.
Rules, each swept over its threshold:

* ``fixed`` — every input exits at depth k (L points);
* ``random`` — a uniform random score per input and depth ≥ t, over the confidence sweep: exit depths
  mixed with no information about the input, the reference every realisable rule is read against
  (fixed depth's L points leave its step frontier flat between them, so a rule could beat it by
  mixing depths alone). Taken at its expectation over the scores, exactly (:func:`random_exit_shares`),
  not one draw of them, so that the reference adds no spread of its own to the verdicts;
* ``confidence`` — the depth-k head's max softmax probability ≥ t;
* ``alpha`` — α's mass beyond k is below ε, with α from the given head when layers after k are
  replaced by their train means (what is known at depth k); given several LAYA heads (a fit-head
  output), seed s's refits are read with α of the head of seed s, so each interval over seeds covers
  both α's fit and the refits (:mod:`.exit_alpha`);
* ``confidence+alpha`` — either of the two, t swept at ``epsilon``;
* ``confidence+alpha_oracle`` — the same with α(x) of the full forward pass, which needs every layer:
  a reference for what a perfect α forecast could add, not a realisable rule.

Accuracy, mean exit depth and the share of backbone FLOPs run (:mod:`.costs`) per threshold; each
rule's area under its accuracy–compute frontier per seed, in sample (optimistic) and held out
(thresholds chosen on one fold of the test rows, scored on the other: :mod:`.exit_heldout`); paired
differences of the held-out areas against random exit (the headline) and of confidence+alpha against
confidence say whether α helps (:mod:`.exit_verdicts`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ..cache.store import FeatureStore
from ..errors import InputError
from ..files import artifact_header
from ..head_dir import store_for_heads
from ..options import defaulted
from ..runtime import Progress, no_progress, pick_device
from ..workers import cpu_workers, run_forked
from .common import (
    Result,
    cache_record,
    estimate,
    fit_rows_of,
    head_hparams,
    load_split,
    seeds_how,
    trust_lines,
    weighted_head_dirs,
    write_whole,
)
from .config import ExitConfig  # noqa: F401  (re-exported)
from .costs import backbone_costs, estimate_warnings
from .exit_alpha import mass_beyond, read_alpha  # noqa: F401  (mass_beyond re-exported)
from .exit_heldout import (
    FOLD_STREAM,
    HELD_OUT_HOW,
    MIN_FOLD_ROWS,
    choice_weights,
    crossfit_area,
    held_out,
    small_folds,
    two_folds,
)
from .exit_verdicts import (
    FAMILY_RULE,
    ROWS_RULE,
    alpha_fired,
    exit_comparisons,
    read_apart,
    rows_warning,
    verdict_lines,
)
from .laya_seeds import open_laya_heads
from .refit import Budget, Fit, check_warnings, fitted, layer_moments, refit, refit_check

RULES = ("fixed", "random", "confidence", "alpha", "confidence+alpha", "confidence+alpha_oracle")
RANDOM_REFERENCE = "expectation"  # summary.json's `random_reference`; summaries without it drew once per seed
RANDOM_HOW = (
    "random exit: a uniform random score per test row and depth, exit at the first depth whose score ≥ t over the "
    "confidence sweep, taken at its expectation over the scores, exactly: at threshold t a row exits at depth k "
    "with chance t^(k−1)(1 − t) (the last depth with t^(L−1)) whatever the input, so each point's accuracy, "
    "compute and mean depth, and each test row's share of the held-out area, are those chances' means over the "
    "depths (no draw); each fold's thresholds are chosen on the other fold's expected accuracies. Exit depths "
    "mixed with no information about the input, with the same sweep and frontier as every rule; the reference "
    "every realisable rule is read against"
)
SELECTION_CAVEAT = (
    "the areas compared are held out: each rule's thresholds are chosen on one fold of the test rows and scored "
    "on the other (cross-fitted); `area_in_sample` keeps the best of its thresholds on the rows it is scored on, "
    "optimistic for every rule alike. Not held out: the per-depth heads' validation rows stop their training "
    "(early stopping), and the threshold grid, ε and the rules themselves are fixed in advance, not chosen"
)
NEVER = 1.01  # a threshold no probability and no mass reaches


# -- pure parts -----------------------------------------------------------------------------------


def exit_depths(conf: np.ndarray | None, mass: np.ndarray | None, t: float, eps: float) -> np.ndarray:
    """(N,) 0-based exit depth: the first k with conf[:, k] ≥ t or mass[:, k] < eps; the last depth
    when neither fires. ``conf``/``mass`` are (N, L); either may be None (that rule never fires)."""
    shape = (conf if conf is not None else mass).shape  # type: ignore[union-attr]
    stop = np.zeros(shape, dtype=bool)
    if conf is not None:
        stop |= conf >= t
    if mass is not None:
        stop |= mass < eps
    stop[:, -1] = True
    return stop.argmax(axis=1)


def frontier_area(used: Sequence[float], acc: Sequence[float], lo: float, hi: float) -> float:
    """Mean over compute budgets c ∈ [lo, hi] of the best accuracy reached with compute ≤ c (a step
    function through the points; 0 below the cheapest point): the held-out area's choice made and
    scored on the same rows."""
    return crossfit_area(used, acc, used, acc, lo, hi)[0]


def threshold_grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(confidence thresholds, ε values), each with an 'always exit' and a 'never exit' end: t runs
    from 0 to 1 − 10⁻⁴ densely near 1, then NEVER; ε runs from 0 (never) through 10⁻⁴ … 1, then NEVER (always)."""
    t = np.concatenate([1 - _logspace(0, -4, n - 1), [NEVER]])
    t[0] = 0.0
    eps = np.concatenate([[0.0], _logspace(-4, 0, n - 2), [NEVER]])
    return t, eps


def _logspace(start: float, stop: float, n: int) -> np.ndarray:
    """``np.logspace`` through Python's correctly rounded ``pow``: numpy 1.x gives 10⁻⁴ as
    9.999999999999999e-05, and the grid written to the outputs must not depend on the numpy release."""
    return np.array([10.0 ** float(e) for e in np.linspace(start, stop, n)])


def random_exit_shares(thresholds: np.ndarray, n_layers: int) -> np.ndarray:
    """(T, L) the chance that random exit at each threshold t exits at each depth: the first depth whose
    uniform score is ≥ t, so depth k (0-based, k < L − 1) with t^k (1 − t), the last with t^(L−1), the
    same for every input. Each row sums to 1."""
    fire = np.clip(1.0 - np.asarray(thresholds, float), 0.0, 1.0)[:, None]
    shares = (1.0 - fire) ** np.arange(n_layers)[None, :] * fire
    shares[:, -1] = (1.0 - fire[:, 0]) ** (n_layers - 1)
    return shares


def _steps(
    rule: str,
    preds: np.ndarray,
    conf: np.ndarray,
    labels: np.ndarray,
    used: np.ndarray,
    masses: dict[str, np.ndarray],
    grid: tuple[np.ndarray, np.ndarray],
    epsilon: float,
) -> Iterator[tuple[float | None, float | None, np.ndarray, np.ndarray, np.ndarray]]:
    """Each step of one rule's sweep: (threshold, ε, and per row (N,): whether it is answered right,
    its 0-based exit depth and the compute it runs), one step at a time, not one per threshold
    (--thresholds × N at once). Random exit's are their expectations over its scores."""
    rows = np.arange(len(labels))
    if rule == "random":  # random exit reads the threshold grid only: its rate of exiting at each depth
        t_grid = grid[0]
        right = (preds == labels[:, None]).astype(float)  # (N, L)
        for t, share in zip(t_grid, random_exit_shares(t_grid, preds.shape[1])):
            depth = float(share @ np.arange(len(share)))
            yield t, None, right @ share, np.full(len(labels), depth), np.full(len(labels), float(share @ used))
        return
    for t, e, d in _exits(rule, conf, masses, grid, epsilon):
        yield t, e, preds[rows, d] == labels, d, used[d]


def _exits(
    rule: str,
    conf: np.ndarray,
    masses: dict[str, np.ndarray],
    grid: tuple[np.ndarray, np.ndarray],
    epsilon: float,
) -> Iterator[tuple[float | None, float | None, np.ndarray]]:
    """Each step of a rule that reads the input: (threshold, ε, (N,) 0-based exit depth per row)."""
    t_grid, e_grid = grid
    if rule == "fixed":
        return ((None, None, np.full(len(conf), k)) for k in range(conf.shape[1]))
    if rule == "confidence":
        return ((t, None, exit_depths(conf, None, t, 0.0)) for t in t_grid)
    if rule == "alpha":
        return ((None, e, exit_depths(None, masses["alpha"], 0.0, e)) for e in e_grid)
    m = masses["alpha_oracle" if rule.endswith("oracle") else "alpha"]
    return ((t, epsilon, exit_depths(conf, m, t, epsilon)) for t in t_grid)


def sweep(
    rule: str,
    preds: np.ndarray,
    conf: np.ndarray,
    labels: np.ndarray,
    used: np.ndarray,
    masses: dict[str, np.ndarray],
    grid: tuple[np.ndarray, np.ndarray],
    epsilon: float,
) -> list[dict[str, Any]]:
    """The points of one rule for one seed: preds/conf (N, L) of the per-depth heads; used (L,)."""
    return [
        {
            "rule": rule,
            "step": step,
            "threshold": t,
            "epsilon": e,
            "accuracy": float(right.mean()),
            "mean_depth": float(d.mean() + 1),
            "compute_used": float(run.mean()),
        }
        for step, (t, e, right, d, run) in enumerate(_steps(rule, preds, conf, labels, used, masses, grid, epsilon))
    ]


def held_out_area(
    rule: str,
    preds: np.ndarray,
    conf: np.ndarray,
    labels: np.ndarray,
    used: np.ndarray,
    masses: dict[str, np.ndarray],
    grid: tuple[np.ndarray, np.ndarray],
    epsilon: float,
    fold: np.ndarray,
) -> tuple[float, float, np.ndarray]:
    """(held-out area, mean compute overshoot, (N,) each test row's share of that area) of one rule for one
    seed, ``fold`` (N,) True on fold A (:mod:`.exit_heldout`); the arguments are :func:`sweep`'s, which
    gives each fold's points (an exit depth is a row's own). A row's share is the mean over compute
    budgets of whether it is answered right (random exit: its chance of that) at the threshold chosen on
    the other fold, so the shares' mean is the area: the test rows' own sampling of an area difference reads them."""
    lo, hi = float(used[0]), float(used[-1])
    parts, right = [], []
    for rows in (fold, ~fold):
        m = {k: v[rows] for k, v in masses.items()}
        steps = list(_steps(rule, preds[rows], conf[rows], labels[rows], used, m, grid, epsilon))
        parts.append(([float(q[4].mean()) for q in steps], [float(q[2].mean()) for q in steps], int(rows.sum())))
        right.append(np.array([q[2] for q in steps], dtype=float))
    shares = np.zeros(len(labels))
    for rows, chosen_on, scored in ((~fold, parts[0], right[1]), (fold, parts[1], right[0])):
        shares[rows] = choice_weights(chosen_on[0], chosen_on[1], lo, hi) @ scored
    area, over = held_out(parts[0], parts[1], lo, hi)
    return area, over, shares


# -- the run --------------------------------------------------------------------------------------


def simulate_early_exit(
    head_dir: str | Path,
    store: FeatureStore,
    config: ExitConfig,
    budget: Budget | None = None,
    *,
    out_dir: str | Path,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> Result:
    """Fit the per-depth heads, sweep every rule, write ``out_dir`` whole; see the module. ``head_dir``:
    one head directory, or a fit-head output (its laya/seed_<S>/, each seed's α paired with its refits)."""
    from .outputs import write_early_exit

    head_dirs = weighted_head_dirs([head_dir])

    def run(tmp: Path) -> tuple[dict[str, Any], list[Path]]:
        summary = _simulate(head_dirs, store, config, budget or Budget(), progress or no_progress)
        if len(head_dirs) > 1:  # the folder given; the heads read are in `alpha_heads`
            summary["head_dir"] = str(Path(head_dir).resolve())
        return summary, write_early_exit(tmp, summary, plots=config.plots)

    return write_whole(out_dir, run, command="early-exit", inputs=[*head_dirs, store.path], overwrite=overwrite)


def _simulate(
    head_dirs: Sequence[Path], store: FeatureStore, config: ExitConfig, budget: Budget, emit: Progress
) -> dict[str, Any]:
    from ..compare.values import layer_means

    device = pick_device(config.device)
    store = store_for_heads(store, head_dirs)  # prune's head of the layers it keeps reads only those
    opened, configs, seeds, train_rows, val_rows, rows_how = open_laya_heads(head_dirs, store, config, "early-exit")
    head, hconf, head_dir = opened[0], configs[0], head_dirs[0]
    names, n_layers = store.layer_names, head.num_layers
    train, test = load_split(store, config.train_split, device), load_split(store, config.test_split, device)
    if test.n < 2:
        raise InputError(
            f"early exit needs at least 2 rows in split {config.test_split!r} (its thresholds are chosen on one "
            f"half of them and scored on the other); it has {test.n}"
        )
    budget_defaults = defaulted(budget)  # before the head's weight decay fills one in
    budget = budget.for_head(hconf)
    fit_rows = fit_rows_of(train_rows, train.labels, budget.train_limit, config.seed, store.class_names)
    means = layer_means(store, config.train_split)
    heads = [(h.to(device), d) for h, d in zip(opened, head_dirs)]
    alpha_heads, head_masses = read_alpha(heads, seeds, test, means, config.epsilon)
    masses_of = dict(zip(seeds, head_masses if len(opened) > 1 else head_masses * len(seeds)))
    costs = backbone_costs(store, config.costs)
    used = np.array([costs.used(k) for k in range(n_layers)])
    grid = threshold_grid(config.thresholds)
    points: list[dict[str, Any]] = []
    areas: dict[str, list[float]] = {r: [] for r in RULES}  # held out: the areas compared
    in_sample: dict[str, list[float]] = {r: [] for r in RULES}
    overshoot: dict[str, list[float]] = {r: [] for r in RULES}
    shares: dict[str, list[np.ndarray]] = {r: [] for r in RULES}  # each row's share of the held-out area
    fold_sizes: list[list[int]] = []
    fits: list[dict[str, Any]] = []
    jobs = [(s, k) for s in seeds for k in range(n_layers)]
    common: dict[str, Any] = dict(
        train=train, train_rows=fit_rows, val_rows=val_rows, test=test, num_classes=store.num_classes, budget=budget
    )
    common["moments"] = layer_moments(head_hparams(hconf), train, fit_rows, names)

    def one(i: int, job: tuple[int, int], report: Progress) -> Fit:
        s, k = job
        report({"event": "fit", "done": i, "total": len(jobs), "layers": names[: k + 1]})
        fit = refit(head.kind, head_hparams(hconf), range(k + 1), s, layer_names=names, keep_probs=True, **common)
        report(fitted(len(jobs), fit, names))
        return fit.without_head()  # read for its test probabilities only

    # independent refits: several at once in forked processes on a multi-core CPU
    workers = cpu_workers(config.workers, device, len(jobs))
    at_once = f", {workers} at once" if workers > 1 else ""
    say = f"refits: {len(jobs)}, a head on the first 1 … {n_layers} layers at each seed{at_once}"
    emit({"event": "step", "step": say})
    done = dict(zip(jobs, run_forked(jobs, one, workers, emit)))
    total = len(jobs)
    for s in seeds:
        probs = []
        for k in range(n_layers):
            fit = done[s, k]
            fits.append(fit.record())
            assert fit.test_probs is not None
            probs.append(fit.test_probs)
        p = np.stack(probs, axis=1)  # (N, L, C)
        preds, conf = p.argmax(axis=2), p.max(axis=2)
        fold = two_folds(test.labels, np.random.default_rng([config.seed, s, FOLD_STREAM]))
        fold_sizes.append([int(fold.sum()), int((~fold).sum())])
        masses = masses_of[s]
        for rule in RULES:
            pts = sweep(rule, preds, conf, test.labels, used, masses, grid, config.epsilon)
            in_sample[rule].append(
                frontier_area([q["compute_used"] for q in pts], [q["accuracy"] for q in pts], used[0], used[-1])
            )
            area, over, rows = held_out_area(rule, preds, conf, test.labels, used, masses, grid, config.epsilon, fold)
            shares[rule].append(rows)
            areas[rule].append(area)
            overshoot[rule].append(over)
            points += [{**q, "seed": s} for q in pts]
    emit({"event": "fit", "done": total, "total": total, "layers": []})
    summary: dict[str, Any] = {
        **artifact_header(command="early-exit"),
        "device": str(device),  # what --device (auto by default) ran on
        "head_dir": str(Path(head_dir).resolve()),
        "head_kind": head.kind,
        "cache": cache_record(store),
        "config": asdict(config),
        "config_defaults": defaulted(config),
        "budget": {**asdict(budget), "epochs_patience": list(budget.resolve(len(fit_rows)))},
        "budget_defaults": budget_defaults,
        "seeds": seeds,
        "alpha_heads": alpha_heads,
        "seeds_how": seeds_how(seeds, len(alpha_heads)),
        "rows": {"fit": len(fit_rows), "val": len(val_rows), "test": test.n, "val_how": rows_how},
        "costs": costs.to_dict(names),
        "compute_used_by_depth": {n: float(u) for n, u in zip(names, used)},
        "area": "held-out area under accuracy–compute, per seed: " + HELD_OUT_HOW + "; in sample (optimistic): "
        "mean over compute budgets c from depth 1's to depth L's share of the best accuracy reached with compute "
        "≤ c on the test rows (step frontier)",
        "rules": {
            r: {
                "area_held_out": estimate(areas[r]),
                "area_in_sample": estimate(in_sample[r]),
                "compute_overshoot": estimate(overshoot[r]),
            }
            for r in RULES
        },
        "held_out": {
            "how": HELD_OUT_HOW,
            "folds": f"default_rng([{config.seed}, refit seed, {FOLD_STREAM}])",
            "fold_sizes": dict(zip(map(str, seeds), fold_sizes)),
            "min_fold_rows": MIN_FOLD_ROWS,
            # the warning below, kept with the folds it reads
            "folds_too_small": small_folds(fold_sizes),
            "compared": "area_held_out",
        },
        "random_exit": RANDOM_HOW,
        "random_reference": RANDOM_REFERENCE,
        "selection": SELECTION_CAVEAT,
        "alpha_fired": alpha_fired(alpha_heads, config.epsilon, test.n),
        "alpha_mass": {  # several heads: the mean over them
            key: {n: float(np.mean([m[k][:, j].mean() for m in head_masses])) for j, n in enumerate(names)}
            for key, k in (("mean_beyond_depth", "alpha"), ("oracle_mean_beyond_depth", "alpha_oracle"))
        },
        "fixed_depth": _fixed(points, names),
        "points": points,
        "fits": fits,
        # the reference of every per-depth head: the given head itself, on all its layers
        "refit_check": refit_check(
            [h["test_acc"] for h in alpha_heads] * (len(seeds) if len(alpha_heads) == 1 else 1),
            [done[s, n_layers - 1].test_acc for s in seeds],
            n_layers,
            budget,
            len(fit_rows),
            configs,
        ),
    }
    summary["warnings"] = (
        trust_lines(store, list(zip(head_dirs, configs)), test)
        + estimate_warnings(summary["costs"])
        + check_warnings(summary["refit_check"])
        + ([summary["held_out"]["folds_too_small"]] if summary["held_out"]["folds_too_small"] else [])
        + fixed_sampling_warning(summary["fixed_depth"], test.n)
    )
    summary["comparisons"] = exit_comparisons(areas, points, summary["alpha_fired"], in_sample, shares)
    summary["warnings"] += rows_warning(summary["comparisons"])
    summary["rows_rule"] = ROWS_RULE
    summary["verdict"] = verdict_lines(summary)
    summary["families_read_apart"] = read_apart(summary["comparisons"])
    summary["family_rule"] = FAMILY_RULE
    return summary


def fixed_sampling_warning(fixed: list[dict[str, Any]], n: int) -> list[str]:
    """One warning where the fixed-depth accuracies' intervals over seeds are far narrower than the
    test rows' own sampling allows (fit-head's "test sampling" rule, quality.sampling_warning): every
    seed's per-depth head is scored on the same rows, so those intervals leave out which rows were
    drawn (MobileNetV2, 500 CIFAR-10 test rows: features.10 0.482 [0.472, 0.492], where the rows
    alone allow [0.439, 0.526]). Said once, naming the layers and the widest case."""
    from ..training.quality import sampling_warning
    from ..training.stats import wilson

    narrow = [f for f in fixed if sampling_warning(f["accuracy"], n)]
    if not narrow:
        return []

    def ratio(f: dict[str, Any]) -> float:
        low, high = wilson(f["accuracy"]["mean"] * n, n)
        return (high - low) / max(f["accuracy"]["ci_high"] - f["accuracy"]["ci_low"], 1e-12)

    worst = max(narrow, key=ratio)
    a = worst["accuracy"]
    low, high = wilson(a["mean"] * n, n)
    return [
        f"test sampling: the fixed-depth accuracies' 95% intervals over seeds cover seed-to-seed variation "
        f"only, not the sampling of the {n} test rows, at {len(narrow)} of {len(fixed)} depths (at "
        f"{worst['layer']}: {a['mean']:.3f} [{a['ci_low']:.3f}, {a['ci_high']:.3f}], where the rows' own 95% "
        f"Wilson interval is [{low:.3f}, {high:.3f}]); read each to within that, or add test rows"
    ]


def _fixed(points: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    out = []
    for k, n in enumerate(names):
        acc = [p["accuracy"] for p in points if p["rule"] == "fixed" and p["mean_depth"] == k + 1]
        out.append({"depth": k + 1, "layer": n, "accuracy": estimate(acc)})
    return out
