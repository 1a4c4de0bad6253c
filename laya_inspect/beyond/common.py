"""What prune, early-exit and diagnose share: the head α is read from, a cache split held as tensors,
the head's own held-out rows, and estimates over seeds. Shapes: N samples, L layers, C classes."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..cache.store import FeatureStore
from ..choices import MIN_ROWS
from ..errors import CacheError, InputError, class_label
from ..head_dir import (
    cache_warnings,
    fit_warnings,
    identity,
    load_head,
    other_cache,
    read_head_config,
    refuse_replaced,
    trained_split,
    unchecked_rows,
)
from ..heads import Head
from ..out_dir import atomic_dir
from ..training.quality import few_rows, sampling_outweighs
from ..training.stats import (  # noqa: F401  (re-exported)
    ONE_VALUE,
    TINY,
    bounded,
    counted,
    counted_list,
    family,
    level,
    outcome,
    rows_paired,
    same_on_every_seed,
    same_text,
    spec,
)

EVAL_ROWS = 4096  # rows per forward pass when a head is only evaluated


@dataclass
class Split:
    """One cache split held as float32 (N, D_l) tensors on one device, with its labels."""

    name: str
    hs: list[Tensor]
    labels: np.ndarray  # (N,) int64

    @property
    def n(self) -> int:
        return len(self.labels)

    @property
    def y(self) -> Tensor:
        return torch.from_numpy(self.labels).to(self.hs[0].device)


@dataclass
class Result:
    """What prune, early-exit and diagnose return: their folder, its summary.json, the files written."""

    out_dir: Path
    summary: dict[str, Any]
    files: list[Path]


def write_whole(
    out_dir: str | Path,
    run: Callable[[Path], tuple[dict[str, Any], list[Path]]],
    *,
    command: str,
    inputs: Sequence[str | Path | None],
    overwrite: bool,
) -> Result:
    """``run(tmp)`` computes the summary and writes the folder under a temporary name
    (:func:`~laya_inspect.out_dir.atomic_dir`: it appears whole or not at all); then report.html, last
    because it inlines the plots, names the final folder in its commands. The files at their final paths."""
    from ..report.beyond import write_beyond_report

    out = Path(out_dir)
    with atomic_dir(out, force=overwrite, command=command, inputs=inputs) as tmp:
        summary, files = run(tmp)
        files.append(write_beyond_report(tmp, summary, as_dir=out, locked=True))
    return Result(out, summary, [out / p.relative_to(tmp) for p in files])


def cache_record(store: FeatureStore) -> dict[str, Any]:
    """What a summary records of the cache it read: :meth:`FeatureStore.identity`, and how the whole
    cache's features were made (its model, pooling, input transforms and the extract options left at
    their defaults), so report.html still says them once the cache file is gone."""
    return {**store.identity(), **store.made()}


def load_split(store: FeatureStore, split: str, device: torch.device) -> Split:
    """``split`` of ``store`` as tensors; a non-finite feature is refused (it would poison every score)."""
    feats = store.layers(split)
    for name, f in zip(store.layer_names, feats):
        if not np.isfinite(f).all():
            raise InputError(
                f"layer {name!r} of split {split!r} in {store.path} holds NaN or infinite features; "
                f"{store.nonfinite_advice()}"
            )
    hs = [torch.from_numpy(np.ascontiguousarray(f)).to(device) for f in feats]
    return Split(split, hs, np.asarray(store.labels(split), dtype=np.int64))


def weighted_head_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """``paths`` as compare expands them (compare.seeds.expand_head_dirs: a fit-head output folder,
    or a folder of one head's seeds, gives its ``<head>/seed_<S>/`` head directories, with compare's
    refusals), except that a fit-head output of several heads gives its laya heads only: the heads
    with α per input. One with no laya head is refused, naming the heads it holds."""
    from ..compare.seeds import expand_head_dirs, head_name

    out: list[Path] = []
    for given in paths:
        found = expand_head_dirs([given])
        names = list(dict.fromkeys(head_name(d, "") for d in found))
        if len(names) > 1:  # a whole fit-head output
            found = [d for d in found if head_name(d, "") == "laya"]
            if not found:
                raise InputError(
                    f"{given} holds no laya head ({', '.join(names)}); give a laya head directory, or a folder of "
                    "one head's seed_<S>/ folders"
                )
        out += found
    return out


def seeds_how(seeds: Sequence[int], heads: int) -> str:
    """What the intervals "over seeds" run over, for the header of the terminal and report.html:
    the refit seeds with α from one head, or the seeds of ``heads`` fitted LAYA heads."""
    if heads > 1:
        return f"over {len(seeds)} fitted LAYA heads ({counted_list('seed', seeds)}), each α with its seed's refits"
    return f"{counted(len(seeds), 'refit seed')}, α from one head"


# each head folder's identity when open_weighted_head read it: trust_lines, which reads the seeds'
# summaries at the end of a command, refuses a folder another run replaced meanwhile, so that no result
# mixes one run's seed_0 with another's seed_1
OPENED: dict[str, tuple[int, int]] = {}


def open_weighted_head(
    head_dir: str | Path,
    store: FeatureStore,
    *,
    command: str,
    allow_other_cache: bool = False,
    test_split: str | None = None,
) -> tuple[Head, dict[str, Any]]:
    """The head of ``head_dir`` in eval mode, refused unless it was trained on ``store`` (or
    ``allow_other_cache``) and has layer weights (laya, scalarmix), and when ``test_split`` is the
    split it was trained on; refused too where another run replaced the folder while it was read (the
    checks above on one run's config, the head another's). :func:`trust_lines` checks it again."""
    noted = identity(head_dir)
    config = read_head_config(head_dir)
    why = other_cache(head_dir, config, store)
    if why is not None and not allow_other_cache:
        raise CacheError(f"{why}; give the cache it was trained on, or pass --allow-other-cache")
    if why is None and test_split is not None and trained_split(config) == test_split:
        raise InputError(
            f"--test-split {test_split} is the split {head_dir} was trained on: its accuracies there are training "
            "accuracies; give a split the head has not seen"
        )
    with warnings.catch_warnings():  # the mismatch was allowed above; the caller records it
        warnings.simplefilter("ignore")
        head, config = load_head(head_dir, store=store, force=allow_other_cache)
    refuse_replaced(head_dir, noted)
    if noted is not None:  # refuse_replaced refused a None
        OPENED[str(Path(head_dir).resolve())] = noted
    if not head.has_weights:
        raise InputError(
            f"{head_dir} is a {head.kind} head, which has no layer weights α; {command} needs a laya head "
            "directory (or scalarmix), e.g. the laya/seed_0 folder that fit-head wrote"
        )
    return head.eval(), config


def trust_lines(store: FeatureStore, heads: Sequence[tuple[str | Path, dict[str, Any]]], test: Split) -> list[str]:
    """What to read beside every result of these heads on ``store``: what extract warned about the
    cache, each head trained on another cache (let through by --allow-other-cache), what fit-head's
    quality gate said of each head, and a test split of a handful of rows. Refused where another run
    replaced a head folder since :func:`open_weighted_head` read it."""
    said = [other_cache(d, config, store) for d, config in heads]
    for d, _ in heads:  # every seed still the run that was read, its summary's warnings read below too
        if (noted := OPENED.get(str(Path(d).resolve()))) is not None:
            refuse_replaced(d, noted)
    lines = cache_warnings(store) + [f"{why}; used here under --allow-other-cache" for why in said if why is not None]
    lines += [w for d, config in heads if (w := unchecked_rows(d, config, store)) is not None]
    for d, config in heads:
        lines += [w for w in fit_warnings(d, config) if w not in lines]  # said once for all seeds of a head
    intervals = "and the intervals, over seeds or resampled rows, rest on a handful of rows"
    few = few_rows(test.n, test.name, intervals)
    return lines + ([few] if few else [])


def head_hparams(config: dict[str, Any]) -> dict[str, Any]:
    """The head's constructor arguments other than its widths and class count: a head of the same
    kind on other layers is built with them."""
    return {k: v for k, v in config["kwargs"].items() if k not in ("widths", "num_classes")}


@torch.no_grad()
def head_outputs(head: Head, hs: Sequence[Tensor], keep: Tensor | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """(logits (N, C) float64, weights (N, L) float64 or None) of ``head`` on ``hs``, in chunks."""
    head.eval()
    n = len(hs[0])
    logits, weights = [], []
    for s in range(0, n, EVAL_ROWS):
        out = head([h[s : s + EVAL_ROWS] for h in hs], keep=None if keep is None else keep[s : s + EVAL_ROWS])
        logits.append(out.logits.double().cpu())
        if out.weights is not None:
            weights.append(out.weights.double().cpu())
    w = torch.cat(weights).numpy() if weights else None
    return torch.cat(logits).numpy(), w


def held_out_rows(config: dict[str, Any], labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """(train_rows, val_rows, how): the rows of the train split the head was fitted on and the rows it
    held out, drawn again from the split its config records (fit-head's), else a stratified 10% draw
    with seed 0 (fit-head's default)."""
    from ..training.loop import validation_split

    recorded_split = config.get("split")
    split: dict[str, Any] = recorded_split if isinstance(recorded_split, dict) else {}
    fraction = split.get("val_fraction", 0.1)
    mode = split.get("val_mode", "stratified")
    seed = split.get("split_seed", 0)
    recorded = "val_fraction" in split
    try:
        train_rows, val_rows = validation_split(labels, float(fraction), str(mode), int(seed))
    except InputError:
        if not recorded:
            raise
        train_rows, val_rows = validation_split(labels, 0.1, "stratified", 0)
        recorded = False
    how = (
        f"the head's own held-out rows ({mode}, {fraction:g}, split seed {seed})"
        if recorded
        else "a stratified 10% draw with split seed 0 (the head records no split)"
    )
    return train_rows, val_rows, how


def subsample(rows: np.ndarray, limit: int | None, seed: int, stream: int) -> np.ndarray:
    """At most ``limit`` of ``rows``, a seeded uniform draw (``default_rng([seed, stream])``), sorted."""
    if limit is None or len(rows) <= limit:
        return rows
    rng = np.random.default_rng([seed, stream])
    return np.sort(rng.choice(rows, size=limit, replace=False))


def fit_rows_of(
    rows: np.ndarray, labels: np.ndarray, limit: int | None, seed: int, class_names: Sequence[str]
) -> np.ndarray:
    """The rows the refits are fitted on: :func:`subsample`'s draw of ``rows`` (stream 1), refused when
    ``--train-limit`` drew one class only from rows of several (a head needs two to learn anything)."""
    drawn = subsample(rows, limit, seed, 1)
    kept = np.unique(labels[drawn])
    if len(kept) < 2 and len(np.unique(labels[rows])) >= 2:
        only = int(kept[0]) if len(kept) else None
        shown = "none" if only is None else class_label(class_names, only)
        raise InputError(
            f"--train-limit {limit} drew {len(drawn)} training rows of one class only (class {shown}) from "
            f"{len(rows)} rows of {len(np.unique(labels[rows]))} classes: a refit needs rows of at least 2; "
            "raise --train-limit, or draw others with --seed"
        )
    return drawn


def estimate(values: Sequence[float]) -> dict[str, Any]:
    """mean ± std over seeds with the 95% t-interval (docs/METHOD.md, "Training"), JSON-able."""
    from ..training.stats import describe

    return describe([float(v) for v in values]).to_dict()


def paired(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> dict[str, Any]:
    """a − b over paired seeds, with the paired t-interval at ``confidence`` (recorded in the result). Every
    a and b here is a share in [0, 1] (an accuracy, an area, an AUROC), so the interval is cut to [−1, 1]
    where it reaches past (:func:`bounded`: ``clipped``, the t bounds as ``t_low``/``t_high``); 2 seeds at
    98.75% gave early-exit's alpha − random [−1.59, +1.51]."""
    from ..training.stats import paired_difference

    d = paired_difference([float(v) for v in a], [float(v) for v in b], confidence).to_dict()
    return bounded(d, -1.0, 1.0)


def cut_said(diff: dict[str, Any], over: str = "seeds") -> str:
    """What a verdict says beside an interval :func:`paired` cut to its range, in the words compare's
    across-seed notes use (compare.seeds.CUT_SAID); "" where none was cut."""
    return f" (the t-interval over the {over} is too wide for its score's range, shown cut to it)" * bool(
        diff.get("clipped")
    )


def verdict(diff: dict[str, Any], *, what: str, baseline: str, over: str = "seeds") -> str:
    """One plain sentence from a difference estimate: better, worse, or no detectable difference;
    ``over``: what its interval runs over, named where it was cut to its range (:func:`cut_said`)."""
    m, lo, hi = diff.get("mean"), diff.get("ci_low"), diff.get("ci_high")
    if m is None:
        return f"{what} vs {baseline}: undefined"
    if lo is None or hi is None:  # spec: a value past float noise is not printed as -0.0000
        return f"{what} − {baseline} = {m:{spec(diff)}}: {ONE_VALUE}"
    if same_on_every_seed(diff):
        return f"{what} − {baseline} = {m:+.4f}, {same_text(diff)}"
    f = spec(diff)
    span = f"{m:{f}}, {level(diff)} CI [{lo:{f}}, {hi:{f}}]{cut_said(diff, over)}"
    said = outcome(diff)
    if said == "better":
        return f"{what} beats {baseline}: {span}"
    if said == "worse":
        return f"{what} is worse than {baseline}: {span}"
    return f"no detectable difference between {what} and {baseline}: {span}"


def test_rows(diff: dict[str, Any], right: Sequence[np.ndarray], other: Sequence[np.ndarray]) -> dict[str, Any] | None:
    """The test rows' own paired 95% interval (stats.rows_paired: ``right``/``other``, each seed's rows
    answered right by the two sides) beside ``diff``, their paired difference over those seeds, read
    by fit-head's rule (quality.THRESHOLDS["test_sampling_delta"]): it ``dominates`` where, over two
    seeds or more and at least MIN_ROWS rows, quality.sampling_outweighs the interval over seeds.
    ``within_sampling`` where it dominates and holds 0: the seeds share the test rows, so a loss or
    gain their interval shows may be only which rows were drawn (2 seeds, one row of 66 on each:
    [-0.0152, -0.0152]). None without rows."""
    rows = rows_paired(right, other)
    if rows is None:
        return None
    read = rows_rule(diff, rows)
    return {**rows, "dominates": read["dominates"], "within_sampling": read["dominates"] and read["holds_zero"]}


def rows_rule(diff: dict[str, Any], rows: dict[str, Any]) -> dict[str, bool]:
    """How a difference's interval over seeds ``diff`` is read beside the test rows' own interval of it
    (``rows``: its "rows", "half_width", "ci_low", "ci_high"): ``dominates`` where, at MIN_ROWS rows or
    more, the rows' is far wider (fit-head's test-sampling rule, quality.sampling_outweighs); ``holds_zero``
    where the rows' holds 0; ``withheld`` where both, and the seeds read "better" or "worse": a verdict
    of which rows were drawn as much as of the two sides."""
    # the t-interval's own width, not the one cut to the range (:func:`paired`)
    lo, hi = diff.get("t_low", diff.get("ci_low")), diff.get("t_high", diff.get("ci_high"))
    dominates = (
        lo is not None
        and hi is not None
        and rows["rows"] >= MIN_ROWS
        and sampling_outweighs(2 * rows["half_width"], hi - lo)
    )
    holds_zero = rows["ci_low"] <= TINY and rows["ci_high"] >= -TINY
    withheld = dominates and holds_zero and outcome(diff) in ("better", "worse")
    return {"dominates": bool(dominates), "holds_zero": bool(holds_zero), "withheld": bool(withheld)}


def ablated_accuracy(
    head: Head, split: Split, rows: np.ndarray | None, kept: Sequence[int], ablation: str, means: Sequence[np.ndarray]
) -> float:
    """Accuracy of ``head`` with every layer outside ``kept`` removed by ``ablation``."""
    return float(ablated_right(head, split, rows, kept, ablation, means).mean())


def ablated_right(
    head: Head, split: Split, rows: np.ndarray | None, kept: Sequence[int], ablation: str, means: Sequence[np.ndarray]
) -> np.ndarray:
    """(N,) which rows ``head`` answers right with every layer outside ``kept`` removed by ``ablation``."""
    from ..compare.ablations import check_ablation

    abl = check_ablation(ablation, {head.kind: head})
    hs = split.hs if rows is None else rows_tensor(split.hs, rows)
    labels = split.labels if rows is None else split.labels[rows]
    mask = torch.ones(head.num_layers, dtype=torch.bool, device=hs[0].device)
    mask[list(kept)] = False
    base = [torch.as_tensor(m, device=hs[0].device) for m in means] if abl.needs_baselines else None
    x, keep = abl.apply(hs, mask.expand(len(labels), -1), base)
    logits, _ = head_outputs(head, x, keep)
    return logits.argmax(1) == labels


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Share of rows whose largest logit is their label."""
    return float((logits.argmax(1) == labels).mean())


def rows_tensor(hs: Sequence[Tensor], rows: np.ndarray) -> list[Tensor]:
    idx = torch.from_numpy(np.asarray(rows, dtype=np.int64)).to(hs[0].device)
    return [h[idx] for h in hs]
