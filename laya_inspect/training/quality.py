"""The quality gate after every fit (docs/METHOD.md, "Quality gate"): the references a head is held
to, and the warnings that say when its numbers should not be trusted.

References: chance (the majority-class share of the test split) and a logistic-regression probe on
each single layer (scikit-learn, standardised features, fitted on at most PROBE_MAX_ROWS training
rows). Every head is held to two probes, each fixed before the test split is read: the one on the
layer validation accuracy picks and the one on the last layer (only the last for ``last``, the one
layer it reads); held to the stronger on the test split, it is held to both, so a layer a few
validation rows picked can raise the bar, never lower it. Warnings, each one line: the head is near
chance; it is below that probe by more than PROBE_MARGIN; α is constant across inputs; ScalarMix's
weights are still uniform; the seeds' mean weights peak on different layers; the seeds agree on each
row's top layer no more often than chance at their own top-layer shares, or, above chance, on fewer
than AGREEMENT_MIN of the rows while their mean weights peak on one layer; they rank a row's layers
alike no more than their mean profiles, one per seed for every row, do; test rows are training
rows (overlap.py); a seed ran all its epochs with its best validation epoch within the patience of the
end, so early stopping had not stopped it; a class has fewer than FEW_CLASS_ROWS training rows; fewer
than MIN_VAL_ROWS validation rows pick the epoch and the probe's layer; the test split's own sampling
(a Wilson interval over its rows) is far wider than the interval over seeds.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cache.schema import CONSTANT_SPREAD  # a layer is constant: RMS std over training rows ≤ this × largest |mean|
from ..choices import MIN_ROWS
from ..errors import InputError, name_of
from .chance import CHANCE_GAP, GAIN_ROWS, LINE_TOLERANCE, chance_lines, is_near_chance
from .chance import chance_level as chance_level  # read from here by fit-head, train and compare
from .classes import RULES as CLASS_RULES
from .classes import weakest_note
from .stats import counted, counted_list, describe, macro_f1, percent, rows_paired, seed_agreement, wilson

if TYPE_CHECKING:  # only for annotations: report.reading reads the chance rule without loading h5py
    from ..cache.store import FeatureStore

PROBE_MAX_ROWS = 10_000  # training rows of the probe: a reference, not a contender; bounded time
PROBE_C = 1.0  # scikit-learn's default inverse L2 strength
PROBE_MARGIN = 0.03  # accuracy a head may lose to the probe before it is flagged
ALPHA_CONSTANT_STD = 0.01  # α constant: every layer's α varies less than this over test rows
UNIFORM_SHARE = 0.1  # ScalarMix uniform: every weight within this share of 1/L
AGREEMENT_MIN = 0.5  # seeds split per row: fewer rows than this share keep their top layer across seeds
AGREEMENT_SE = 2.0  # seeds at chance: agreement within this many binomial standard errors of its chance
# rankings at one profile: from this per-row rank ρ up the seeds rank nearly every row alike, however far
# below the constant rule's ρ (often 1: it cannot be exceeded); what they differ on is near-ties
RANK_AGREEMENT_HIGH = 0.9
FEW_CLASS_ROWS = 5  # a class with fewer training rows (but some): its output unit learns from a handful of rows
MIN_VAL_ROWS = MIN_ROWS  # fewer validation rows: accuracy there moves in steps of > 0.05, too coarse to pick by
SAMPLING_RATIO = 2.0  # the test rows' Wilson interval wider than this many seed intervals: the seed one reads too sure
SAMPLING_FLOOR = 0.01  # ... and its half-width above this: 10,000 rows (±0.006) leave the second decimal alone
# epoch limit: a run still improving when --epochs ended it; its last fifth of the epochs against the fifth before
# (on the digits demo, runs still improving fell 6.5–9.2% over 10 epochs, those on a plateau −0.3% to +2.8%)
LIMIT_WINDOWS = 5
LIMIT_FALL = 0.05
LIMIT_ACC_HELD = 0.005  # 'held' where the validation rows are not known: under one row in 200
EPOCH_ADVICE = "fit again with more --epochs, or a higher --lr"  # fit-head's; train and demo say their own
# need two seeds or more
SEED_CHECKS = ("seeds disagree", "seeds split per row", "seeds at chance", "rankings at one profile")
# the probe every head is read against (probe_reference)
REFERENCE_RULE = (
    "every head is read against the stronger on the test split of two probes, each fixed before the test split is "
    "read: the probe on the layer with the best validation accuracy (ties to the deeper layer, and to it on equal "
    "test accuracy) and the probe on the last layer; held to the stronger, a head's accuracy is held to both (below "
    "either by more than the margin is below the stronger), so the test split can raise the bar, never lower it "
    "below the last layer's probe (the stronger of two accuracies on the same rows errs high, so the bar does too); "
    "on imbalanced classes its macro-F1 is read against that probe's, which may be the lower of the two probes' "
    "macro-F1; 'last', which reads only the last layer, against the probe on the last layer"
)
# the probe is fitted once, on one draw of the training rows: a gap to it varies with the head's seeds only
PROBE_FITS = (
    "one fit (on one seeded draw of the training rows), shared by every head and seed, so every head is read against "
    "one number; an interval of a gap to the probe covers the head's seeds only, not the probe's own variation "
    "(refitted on another draw or split it can move by a few hundredths)"
)
PROBE_ONE_FIT = "the probe is one fit; the interval covers the head's seeds only"
PROBE_ROWS_AND_SEEDS = (
    "the probe is one fit; the intervals cover the head's seeds and test rows, not the probe's own variation"
)

THRESHOLDS = {
    "near_chance": f"mean test accuracy < chance + {CHANCE_GAP}·(1 − chance), or (mean test accuracy − chance)·n < "
    f"{GAIN_ROWS} rows, n the test rows",
    "below_probe": f"mean test accuracy < probe test accuracy − {PROBE_MARGIN} (the stronger on the test split of the "
    "probe on the layer with the best validation accuracy, ties to the deeper layer, and the probe on the last layer; "
    "for 'last' the probe on the last layer); on imbalanced classes (see 'imbalanced') also mean test macro-F1 < "
    f"that probe's test macro-F1 − {PROBE_MARGIN}; said as a warning only where the 95% t-interval over seeds of the "
    "per-seed gap lies below 0 and, on accuracy, the 95% Wilson interval of the (mean) test accuracy over the n test "
    "rows lies below the probe's (one seed: that alone); else a note, 'not shown below the probe'",
    "alpha_constant": f"in some seed, every layer's α has std < {ALPHA_CONSTANT_STD} over the test rows",
    "scalarmix_uniform": f"in every seed, every weight within {UNIFORM_SHARE:.0%} of 1/L",
    "seeds_disagree": "the seeds' mean weights peak on different layers",
    "seeds_split_per_row": f"the seeds' mean weights peak on one layer, but their per-row top layers agree on fewer "
    f"than {AGREEMENT_MIN:.0%} of the rows (top-layer agreement < {AGREEMENT_MIN}), and more often than chance",
    "seeds_at_chance": f"top-layer agreement ≤ c + {AGREEMENT_SE:g}·√(c(1 − c)/n), c its chance at each seed's own "
    "top-layer shares, n the test rows",
    "rankings_at_one_profile": f"per-row rank agreement ≤ its constant rule's (rank_agreement_constant: each seed's "
    f"mean profile for every row) + {AGREEMENT_SE:g}·s/√m, s the standard deviation over the m test rows with a "
    f"ranking of each row's rank ρ (mean over seed pairs), and per-row rank agreement < {RANK_AGREEMENT_HIGH}",
    "duplicate_layers": "two layers with the same moments over the training rows and the same first 256 rows",
    "unlearnable_classes": "classes of the test split with no training rows",
    "few_class_rows": f"classes with 1 to {FEW_CLASS_ROWS - 1} training rows (validation rows left out)",
    "epoch_limit": "a seed ran all --epochs, its best validation epoch lies fewer than --patience epochs before the "
    f"last (early stopping had not stopped it, the epoch limit did), and it was still improving on the quantity "
    f"--monitor watched (summary's epoch_limit_reads): its last W = max(1, ⌊epochs/{LIMIT_WINDOWS}⌋) epochs hold a "
    "new best (ranked as early stopping ranks epochs), and with --monitor loss, the mean validation loss of its last "
    f"W epochs lies more than {LIMIT_FALL:.0%} below that of the W before; with "
    "--monitor acc, the mean validation accuracy of its last W epochs lies above that of the W before by more than "
    "max(√(p(1 − p)/n), 1/n), p the two windows' mean accuracy, n the validation rows (a run on a plateau, its best "
    "a lucky extreme of a flat, noisy curve, is not warned)",
    "few_validation_rows": f"the validation rows number fewer than {MIN_VAL_ROWS}",
    "few_test_rows": f"the test split has fewer than {MIN_ROWS} rows",
    "test_sampling": f"with two seeds or more and at least {MIN_ROWS} test rows, the 95% Wilson interval of the mean "
    f"test accuracy over the n test rows is wider than {SAMPLING_RATIO:g} × the 95% t-interval over seeds (or that "
    f"has zero width) and its half-width above {SAMPLING_FLOOR}",
    "test_sampling_delta": f"with two seeds or more and at least {MIN_ROWS} test rows, the paired 95% Wald interval "
    f"of a head's accuracy less last's over the n shared test rows is wider than {SAMPLING_RATIO:g} × the 95% "
    f"t-interval over seeds of that difference and its half-width above {SAMPLING_FLOOR}",
    "test_rows_in_train": "test rows whose features equal a training row's, byte for byte at every layer",
    "test_rows_repeated": "test rows whose features equal an earlier test row's at every layer (16-byte digests)",
    "constant_layer": f"a layer's features have an RMS std over the training rows ≤ {CONSTANT_SPREAD} × their "
    "largest |mean| (flagged on every head that reads it)",
    **CLASS_RULES,
}


def uniform_spread(weights: Any) -> float:
    """How far a profile of layer weights lies from uniform: its largest |w − 1/L|, in units of 1/L.
    Below UNIFORM_SHARE it is "still uniform", and its order of the layers rests on noise (fit-head's
    gate, compare's sanity check and prune's rankings read it alike)."""
    w = np.asarray(weights, dtype=np.float64)
    return float(np.abs(w - 1 / w.shape[-1]).max() * w.shape[-1])


def _per_row(agree: Mapping[str, Any]) -> str:
    """The per-row top-layer agreement beside its nulls, as the warnings say it: "41% of rows across
    seed pairs (chance 30% at each seed's own top-layer shares; each seed's mean profile for every row:
    100%)": the constant rule too, as the terminal's profile line and the reading give it."""
    chance, constant = agree.get("top_layer_chance_shares"), agree.get("top_layer_agreement_constant")
    nulls = []
    for value, said in (
        (chance, "chance {} at each seed's own top-layer shares"),
        (constant, "each seed's mean profile for every row: {}"),
    ):
        if value is not None and value == value:  # NaN: no such null to say
            nulls.append(said.format(percent(value)))
    said = f"{percent(agree['top_layer_agreement'])} of rows across seed pairs"
    return f"{said} ({'; '.join(nulls)})" if nulls else said


def agreement_at_chance(agree: dict[str, Any]) -> str | None:
    """The seeds pick the same top layer for a row no more often than independent picks at each seed's
    own top-layer shares would: their agreement then says the seeds favour the same layers overall,
    not that they pick the same layer for the same input."""
    chance, n = agree.get("top_layer_chance_shares"), int(agree.get("rows") or 0)
    if chance is None or chance != chance or n < 1:
        return None
    if agree["top_layer_agreement"] > chance + AGREEMENT_SE * math.sqrt(chance * (1 - chance) / n):
        return None
    return (
        f"seeds at chance: top-layer agreement {agree['top_layer_agreement']:.2f} across seed pairs is no more "
        f"than independent picks at each seed's own top-layer shares give ({chance:.2f}, {n} test rows): it "
        "shows that the seeds favour the same layers overall, not that they pick a layer by the input"
    )


def rankings_at_constant(agree: Mapping[str, Any], weights: Sequence[np.ndarray]) -> str | None:
    """The seeds rank a row's layers alike no more than their mean profiles, one per seed used for every
    row, do (THRESHOLDS["rankings_at_one_profile"]; ``agree``: stats.seed_agreement of ``weights``, one
    (N, L) array per seed): their per-row agreement then says only that their average profiles agree.
    The margin is AGREEMENT_SE standard errors of the mean per-row ρ over the test rows, as
    agreement_at_chance's is binomial: rows are what was sampled, so each row's ρ is averaged over the
    seed pairs first (the pairs share rows and are not independent). From RANK_AGREEMENT_HIGH up it is
    not said: the constant rule's ρ is often 1, which no per-row agreement exceeds, and seeds that rank
    nearly every row alike differ only on near-ties (3 seeds of one Dirichlet profile per row, each
    jittered by 0.01: ρ 0.96–0.98 against 1.00)."""
    from ..compare.metrics import spearman_rows

    rho, constant = agree.get("rank_agreement"), agree.get("rank_agreement_constant")
    if rho is None or constant is None or not (math.isfinite(rho) and math.isfinite(constant)):
        return None
    if rho >= RANK_AGREEMENT_HIGH:
        return None
    pairs = [spearman_rows(weights[a], weights[b]) for a in range(len(weights)) for b in range(a + 1, len(weights))]
    per_pair = np.vstack(pairs)
    ranked = ~np.isnan(per_pair).all(axis=0)  # rows with a ranking in some pair
    m = int(ranked.sum())
    if m < 2:
        return None
    per_row = np.nanmean(per_pair[:, ranked], axis=0)
    se = float(per_row.std(ddof=1) / math.sqrt(m))
    if rho > constant + AGREEMENT_SE * se:
        return None
    return (
        f"seeds' per-row layer rankings agree no more than one fixed profile per seed does: per-row rank ρ "
        f"{rho:.2f} across seed pairs against ρ {constant:.2f} for each seed's mean profile used for every row "
        f"(a standard error of ±{se:.2f} over the {m} test rows with a ranking): a given input's ranking of the "
        "layers is less alike across seeds than their mean profiles are; read one input's ranking as one seed's, "
        "not the head's, and the layers by the mean profiles"
    )


def constant_layers(means: Sequence[np.ndarray], stds: Sequence[np.ndarray], layer_names: Sequence[str]) -> list[str]:
    """The layers that give (up to float rounding) one row for every training input."""
    out = []
    for name, m, s in zip(layer_names, means, stds):
        spread = float(np.sqrt(np.mean(s**2))) if s.size else 0.0
        if spread <= CONSTANT_SPREAD * max(float(np.abs(m).max()) if m.size else 0.0, 1e-30):
            out.append(name)
    return out


def unlearnable_classes(
    train_labels: np.ndarray,
    test_labels: np.ndarray,
    class_names: Sequence[str],
    split_labels: np.ndarray | None = None,
) -> str | None:
    """A warning when classes of the test split have no training rows (``train_labels``: the rows the
    heads are fitted on, validation rows left out): no head can predict them. ``split_labels``, the
    whole training split, names the rows of them the validation rows took, where it had some."""
    n = max(len(class_names), int(max(train_labels.max(initial=-1), test_labels.max(initial=-1))) + 1)
    seen, tested = np.bincount(train_labels, minlength=n), np.bincount(test_labels, minlength=n)
    gaps = [c for c in range(n) if seen[c] == 0 and tested[c] > 0]
    if not gaps:
        return None
    names = ", ".join(repr(name_of(class_names, c)) for c in gaps[:5])
    rows = int(sum(tested[c] for c in gaps))
    split = np.bincount(split_labels, minlength=n) if split_labels is not None else np.zeros(n, dtype=np.int64)
    held = int(sum(split[c] for c in gaps))
    why = (
        f"; the training split has {counted(held, 'row')} of them, all taken as validation rows: lower --val-fraction, "
        "or use --val-mode stratified (below --val-fraction 0.5 it keeps a class's only row for training)"
        if held
        else ""
    )
    return (
        f"class(es) {names}{', …' if len(gaps) > 5 else ''} have test rows but no training rows: no head can "
        f"predict them, and their {rows} of {len(test_labels)} test rows count as misses{why}"
    )


def few_class_rows(train_labels: np.ndarray, class_names: Sequence[str]) -> str | None:
    """A warning when classes have some but fewer than FEW_CLASS_ROWS training rows (``train_labels``:
    the rows the heads are fitted on, validation rows left out): what a head says of them rests on a
    handful of inputs. Classes with none are unlearnable_classes' to say."""
    counts = np.bincount(np.asarray(train_labels, dtype=np.int64), minlength=len(class_names))
    few = [c for c in range(len(counts)) if 0 < counts[c] < FEW_CLASS_ROWS]
    if not few:
        return None
    names = ", ".join(f"{name_of(class_names, c)!r} ({counts[c]})" for c in few[:5])
    return (
        f"class(es) with fewer than {FEW_CLASS_ROWS} training rows: {names}{', …' if len(few) > 5 else ''}; "
        "a head learns them from a handful of inputs and their test rows say little; add rows of them or "
        "leave them out of the data"
    )


def sampling_outweighs(rows_width: float, seeds_width: float) -> bool:
    """Fit-head's test-sampling rule (THRESHOLDS["test_sampling"], ["test_sampling_delta"]): the test
    rows' own 95% interval, ``rows_width`` wide, is wider than SAMPLING_RATIO × the interval over seeds
    and its half-width above SAMPLING_FLOOR, so the seeds' interval reads too sure. fit-head's accuracy
    and Δ-vs-last warnings and prune's test rows all read it here."""
    return rows_width > SAMPLING_RATIO * seeds_width and rows_width / 2 > SAMPLING_FLOOR


def difference_sampling_warning(
    delta: Mapping[str, Any], runs: Sequence[Any], last: Sequence[Any], n: int | None
) -> str | None:
    """sampling_warning for a head's "Δ acc vs last" (``delta``: its Estimate as a dict; ``runs``,
    ``last``: the two heads' runs, paired by seed, with .test.preds and .test.labels): the seeds share
    the ``n`` test rows, so their interval leaves out which rows were drawn. The rows' own 95% interval
    of a paired difference (stats.rows_paired) stands beside it; one line per head, not per cell."""
    low, high = delta.get("ci_low"), delta.get("ci_high")
    if n is None or n < MIN_ROWS or low is None or high is None or not math.isfinite(high - low):
        return None
    other = {r.seed: r.test for r in last if r.test is not None}
    pairs = [(r.test, other[r.seed]) for r in runs if r.test is not None and r.seed in other]
    if len(pairs) < 2:
        return None
    rows = rows_paired([a.preds == a.labels for a, _ in pairs], [b.preds == b.labels for _, b in pairs])
    if rows is None:
        return None
    half, apart = rows["half_width"], rows["differ"] / rows["rows"]
    seeds = high - low
    if not sampling_outweighs(2 * half, seeds):
        return None
    return (
        f"test sampling of Δ vs last: its 95% interval over {counted(len(pairs), 'seed')}, [{low:+.3f}, "
        f"{high:+.3f}], covers seed-to-seed variation only; the {n} shared test rows alone allow ±{half:.3f} "
        f"(a paired 95% interval from the {apart:.1%} of rows the two heads answer differently); read the "
        "difference to within that, or add test rows"
    )


def still_improving(
    history: Sequence[Mapping[str, float]], epochs: int, monitor: str = "loss", n_val: int = 0
) -> float | None:
    """How much a run that ran all ``epochs`` still improved over its last window of
    W = max(1, epochs // LIMIT_WINDOWS) epochs, read on the quantity early stopping watched, when
    that is more than its rule allows; else None. ``loss``: the relative fall of the window's mean
    validation loss from the W epochs before, above LIMIT_FALL. ``acc``: the rise of the window's mean
    validation accuracy over the ``n_val`` validation rows, above :func:`accuracy_noise`. Means of
    windows, not the best epoch: on a flat curve the best is a noisy extreme that lands near the end
    by chance. A run whose last window holds no new best of that quantity (lower loss; with ``acc``,
    higher accuracy, or on a tie lower loss, as the stopper ranks epochs) is not improving, whatever
    its windows' means say: a loss that rose after its best and partly came back falls between them
    (concat on digits, best epoch 7 of 20: −8%)."""
    if not _new_best(history, epochs, monitor):
        return None
    if monitor == "acc":
        before, last = _windows(history, epochs, "val_acc")
        if before is None or last is None or n_val < 1:
            return None
        gain = last - before
        return gain if gain > accuracy_noise((before + last) / 2, n_val) else None
    before, last = _windows(history, epochs, "val_loss")
    if before is None or last is None:
        return None
    fall = (before - last) / before if before > 0 else 0.0
    return fall if fall > LIMIT_FALL else None


def _new_best(history: Sequence[Mapping[str, float]], epochs: int, monitor: str) -> bool:
    """Whether the last W epochs (:func:`_windows`' W) hold an epoch better than every one before them,
    ranked as the stopper ranks them: the monitored metric, on a tie the other."""
    w = max(1, epochs // LIMIT_WINDOWS)
    if not all("val_loss" in h and "val_acc" in h for h in history) or len(history) <= w:
        return True  # nothing to rank by: the windows' rule alone decides
    rank = [
        (float(h["val_acc"]), -float(h["val_loss"]))
        if monitor == "acc"
        else (-float(h["val_loss"]), float(h["val_acc"]))
        for h in history
    ]
    return max(rank[-w:]) > max(rank[:-w])


def accuracy_noise(acc: float, n: int) -> float:
    """The rise of a validation accuracy ``acc`` over ``n`` rows that the epoch-limit rule reads as
    sampling noise: one binomial standard error √(acc(1 − acc)/n), and never less than one row (1/n),
    where that error shrinks near 0 or 1 below the accuracy's own step."""
    return max(math.sqrt(max(acc * (1 - acc), 0.0) / n), 1 / n)


def _windows(history: Sequence[Mapping[str, float]], epochs: int, key: str) -> tuple[float | None, float | None]:
    """The mean of ``key`` over the W epochs before the last W, and over the last W (None, None where the
    run holds fewer than 2·W epochs or lacks ``key``)."""
    w = max(1, epochs // LIMIT_WINDOWS)
    values = [float(h[key]) for h in history if key in h]
    if len(values) < 2 * w or len(values) < len(history):
        return None, None
    return sum(values[-2 * w : -w]) / w, sum(values[-w:]) / w


def _accuracy_gain(history: Sequence[Mapping[str, float]], epochs: int) -> float | None:
    """The change of the validation accuracy's window mean over the windows :func:`still_improving` reads."""
    before, last = _windows(history, epochs, "val_acc")
    return None if before is None or last is None else last - before


def _held_within(history: Sequence[Mapping[str, float]], epochs: int, n_val: int) -> float:
    """The change of the validation accuracy's window mean that :func:`epoch_limit` still calls held:
    :func:`accuracy_noise` at the two windows' mean over ``n_val`` rows, or LIMIT_ACC_HELD without them."""
    before, last = _windows(history, epochs, "val_acc")
    if n_val < 1 or before is None or last is None:
        return LIMIT_ACC_HELD
    return accuracy_noise((before + last) / 2, n_val)


def _loss_fall(history: Sequence[Mapping[str, float]], epochs: int) -> float | None:
    """The relative fall of the validation loss's window mean over the windows :func:`still_improving` reads."""
    before, last = _windows(history, epochs, "val_loss")
    return None if before is None or last is None or before <= 0 else (before - last) / before


def epoch_limit_reads(monitor: str) -> str:
    """The history key the epoch-limit rule reads under early stopping's ``monitor`` (summary.json's
    and train's metrics' ``epoch_limit_reads``)."""
    return "val_acc" if monitor == "acc" else "val_loss"


def epoch_limit(
    runs: Sequence[Any],
    epochs: int | None,
    patience: int | None,
    *,
    advice: str,
    what: str = "the head",
    monitor: str = "loss",
    n_val: int = 0,
) -> str | None:
    """The warning of a head whose seeds the epoch limit stopped while they still improved
    (THRESHOLDS["epoch_limit"]; ``runs``: .seed, .epochs_run, .best_epoch, .history). The stopper stops
    after ``patience`` epochs without a strictly better one and has no minimum gain, so a run that used
    all ``epochs`` with its best late was stopped by the budget; only one still clearly improving on the
    quantity the stopper watched (``monitor``, over ``n_val`` validation rows; :func:`still_improving`)
    would gain from more. ``advice``: the command's way to give it more; ``what``: what was trained."""
    if epochs is None or patience is None:
        return None
    held = [
        (r, change)
        for r in runs
        if r.epochs_run >= epochs
        and epochs - r.best_epoch < patience
        and (change := still_improving(r.history, epochs, monitor, n_val)) is not None
    ]
    if not held:
        return None
    w = counted(max(1, epochs // LIMIT_WINDOWS), "epoch")
    acc = monitor == "acc"
    gains = [change if acc else _accuracy_gain(r.history, epochs) for r, change in held]
    falls = [_loss_fall(r.history, epochs) if acc else change for r, change in held]
    said = []
    for (r, _), gain, fall in zip(held, gains, falls):
        loss = [f"loss {'−' if fall > 0 else '+'}{abs(fall):.0%}"] if fall is not None else []
        accuracy = [f"accuracy {gain * 100:+.1f} points"] if gain is not None else []
        moves = accuracy + loss if acc else loss + accuracy  # the quantity read first
        said.append(f"seed {r.seed} (best epoch {r.best_epoch} of {epochs}; {', '.join(moves)})")
    seeds = ", ".join(said)
    if acc:
        # early stopping kept the epoch of best accuracy: a loss still falling beside a flat accuracy
        # would not have moved it, so the accuracy alone says whether more epochs would
        return (
            f"epoch limit: {seeds} still improved when --epochs ended the training, before early stopping could: the "
            f"mean validation accuracy (the --monitor) of the last {w} rose from that of the {w} before by more than "
            f"its sampling noise over the {n_val} validation rows (one standard error, at least one row); {what} may "
            f"be under-trained and its numbers rest on --epochs; {advice}"
        )
    # on rows a head already separates, the loss keeps falling as its logits grow while its answers stay:
    # say so, or a user retrains for a gain in accuracy that more epochs do not bring
    # held: within the noise the accuracy rule reads (one row of 142 is 0.7 points, so a fixed share alone
    # called a single row's flip a change); LIMIT_ACC_HELD where the validation rows are not known
    flat = all(g is not None and abs(g) <= _held_within(r.history, epochs, n_val) for (r, _), g in zip(held, gains))
    within = (
        f"one standard error over the {n_val} validation rows, at least one row"
        if n_val > 0
        else f"{LIMIT_ACC_HELD * 100:g} points"
    )
    held_acc = (
        f"; its validation accuracy held (within {within}) over those epochs, so its loss fell by growing "
        "confidence in the same answers and more epochs would change its accuracy little"
        if flat
        else ""
    )
    return (
        f"epoch limit: {seeds} still improved when --epochs ended the training, before early stopping could: the "
        f"mean validation loss of the last {w} fell by more than {LIMIT_FALL:.0%} (by the share given) from that of "
        f"the {w} before{held_acc}; {what} may be under-trained and its numbers rest on --epochs; {advice}"
    )


def few_validation_rows(n_val: int, probe: bool) -> str | None:
    """A warning when fewer than MIN_VAL_ROWS rows pick the epoch each head keeps (early stopping)
    and, with ``probe``, the probe's layer: their accuracy moves in steps of 1/n."""
    if n_val >= MIN_VAL_ROWS:
        return None
    picks = "the epoch each head keeps" + (" and the probe's best layer" if probe else "")
    return (
        f"only {n_val} validation rows (fewer than {MIN_VAL_ROWS}) pick {picks}: their accuracy moves in steps "
        f"of {1 / max(n_val, 1):.2f}, so the pick is close to arbitrary; raise --val-fraction or add training rows"
    )


def duplicate_layers(
    store: FeatureStore, split: str, means: Sequence[np.ndarray], stds: Sequence[np.ndarray]
) -> list[tuple[str, str]]:
    """Pairs of layers that hold the same rows (a stage and its last block, one layer asked for
    twice): the same moments, then the same first 256 rows of ``split``."""
    names, out = store.layer_names, []
    for j in range(len(names)):
        for i in range(j):
            if means[i].shape != means[j].shape or not (
                np.array_equal(means[i], means[j]) and np.array_equal(stds[i], stds[j])
            ):
                continue
            if np.array_equal(store.layer(split, i, slice(0, 256)), store.layer(split, j, slice(0, 256))):
                out.append((names[i], names[j]))
    return out


def few_rows(n: int | None, split: str, intervals: str) -> str | None:
    """The warning for a split of fewer than MIN_ROWS rows, else None (also for n None: not known);
    ``intervals`` says what the intervals beside its accuracies leave out."""
    if n is None or n >= MIN_ROWS:
        return None
    return (
        f"the {split} split has {n} rows (fewer than {MIN_ROWS}): its accuracy moves in steps of "
        f"{1 / max(n, 1):.2f}, {intervals}"
    )


def sampling_warning(acc: Mapping[str, Any], n: int | None) -> str | None:
    """A warning when the interval over seeds of a head's mean test accuracy (``acc``: its Estimate as
    a dict) is far narrower than the test split's own sampling allows (THRESHOLDS["test_sampling"]):
    the seeds see the same ``n`` test rows, so their interval leaves out which rows were drawn. 27 of
    27 rows right on every seed read "1.000 [1.000, 1.000]", where 27 rows alone allow [0.875, 1].
    Below MIN_ROWS test rows few_rows says it instead. The line does not name the head: every place
    it goes names it (summary.json's head, the terminal's "warning laya:"), and heads whose numbers
    are the same are then said once, naming them all."""
    low, high, mean = acc.get("ci_low"), acc.get("ci_high"), acc.get("mean")
    if n is None or n < MIN_ROWS or low is None or high is None or mean is None:  # one seed: no interval to read
        return None
    if not all(math.isfinite(v) for v in (low, high, mean)):
        return None
    w_low, w_high = wilson(mean * n, n)
    wide, seeds = w_high - w_low, high - low
    if not sampling_outweighs(wide, seeds):
        return None
    how = "the seed interval has zero width" if seeds <= LINE_TOLERANCE else f"{wide / seeds:.1f}× as wide"
    return (
        f"test sampling: the 95% interval over {counted(int(acc.get('n') or 0), 'seed')}, [{low:.3f}, "
        f"{high:.3f}], covers seed-to-seed variation only, not the sampling of the {n} test rows: their own 95% "
        f"Wilson interval of {mean:.3f} is [{w_low:.3f}, {w_high:.3f}] ({how}); read "
        "the accuracy to within that, or add test rows"
    )


def near_chance(
    test_acc: float,
    chance: float,
    what: str,
    *,
    n: int | None = None,
    runs: Sequence[Any] | None = None,
    epochs: int | None = None,
) -> str | None:
    """The near-chance warning (THRESHOLDS["near_chance"]) of a test accuracy, else None; ``what``
    says what failed ("the head did not learn"). On imbalanced classes an accuracy just above the
    majority share can come from a few rows of the minority classes, which CHANCE_GAP of a small
    1 − chance cannot see: with ``n`` test rows, a head that beats always answering the majority class
    on fewer than GAIN_ROWS of them is near chance too. Given the seeds' ``runs`` (.seed, .epochs_run)
    and ``epochs``, the most each could run, its advice reads them as the probe's does (:func:`_advice`)."""
    if not is_near_chance(test_acc, chance, n):
        return None
    fix = "(try another --lr or more --epochs)" if runs is None else f"({_advice(runs, epochs, 'may help')})"
    gap, _ = chance_lines(chance, n)
    if test_acc < gap - LINE_TOLERANCE:
        return f"near chance: test accuracy {test_acc:.3f} vs chance {chance:.3f} (majority class); {what} {fix}"
    return (
        f"near chance: test accuracy {test_acc:.3f} vs chance {chance:.3f} (majority class) beats always "
        f"answering that class on {(test_acc - chance) * (n or 0):.3g} of {n} test rows, fewer than {GAIN_ROWS}: "
        f"those few rows of the other classes decide every comparison; {what} {fix}"
    )


def majority_macro_f1(labels: np.ndarray) -> float:
    """The macro-F1 of always answering the majority class of ``labels``: what a model's macro-F1 is
    read against where its accuracy cannot tell (:func:`not_learned`)."""
    y = np.asarray(labels, dtype=np.int64).ravel()
    if not y.size:
        return math.nan
    return macro_f1(y, np.full(len(y), np.bincount(y).argmax()))


def macro_f1_decides(acc: float, chance: float, f1: float | None, majority_f1: float | None) -> bool:
    """Whether a near-chance accuracy leaves the verdict to macro-F1: it clears the gap over chance and
    falls only under the rows line. On 99:1 data a model of macro-F1 0.81 (0.50 for the majority
    class) beats the majority class on 4 of 1000 rows: too few for its accuracy to say it learned, and
    its macro-F1 says it did; so "did not learn" would be wrong there."""
    return f1 is not None and majority_f1 is not None and math.isfinite(f1) and not is_near_chance(acc, chance)


def not_learned(
    who: str,
    acc: float,
    chance: float,
    *,
    f1: float | None = None,
    majority_f1: float | None = None,
    f1_of: str = "its test macro-F1",
) -> str:
    """What a near-chance verdict says of ``who`` ("the model"): that it did not learn, or where
    :func:`macro_f1_decides`, that its accuracy cannot show it and ``f1_of`` is to be read beside the
    majority class's. train, fit-head, compare and the reading all say it here."""
    if f1 is not None and majority_f1 is not None and macro_f1_decides(acc, chance, f1, majority_f1):
        return (
            f"accuracy alone cannot show whether {who} learned: read {f1_of}, {f1:.3f}, against "
            f"{majority_f1:.3f} for always answering the majority class"
        )
    return f"{who} did not learn"


def _read(store: FeatureStore, split: str, layer: int, rows: np.ndarray | None, step: int = 8192) -> np.ndarray:
    """One layer at ``rows`` (sorted; all rows for None), read in contiguous chunks: HDF5 point
    selection of thousands of scattered rows is far slower than reading the chunks around them."""
    n = store.n(split)
    rows = np.arange(n) if rows is None else np.sort(rows)
    parts = []
    for start in range(0, n, step):
        lo, hi = np.searchsorted(rows, [start, start + step])
        if hi > lo:
            parts.append(store.layer(split, layer, rows=slice(start, start + step))[rows[lo:hi] - start])
    return np.concatenate(parts).astype(np.float64)


def layer_probes(
    store: FeatureStore,
    *,
    train_split: str,
    test_split: str,
    train_rows: np.ndarray,
    val_rows: np.ndarray,
    seed: int = 0,
    max_rows: int = PROBE_MAX_ROWS,
    read: Callable[[str, int, np.ndarray | None], np.ndarray] | None = None,
    labels: Mapping[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """A multinomial logistic regression on each single layer: fitted on (a seeded, stratified draw of
    at most ``max_rows`` of) ``train_rows``, its layer chosen on ``val_rows``, scored on the test split.
    ``read(split, layer, rows)`` gives a layer's rows (sorted; all for None) as float64 and
    ``labels[split]`` a split's labels, by default from ``store``; fit-head passes what it holds in
    memory, so the probes can run in a forked process beside the fits without touching the HDF5
    file (its handles are not to be used across a fork)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    read = read or partial(_read, store)

    def split_labels(split: str) -> np.ndarray:
        return np.asarray(store.labels(split) if labels is None else labels[split], dtype=np.int64)

    y_all = split_labels(train_split)
    fit_rows = np.sort(_draw(train_rows, y_all, max_rows, seed))
    val_rows = np.sort(val_rows)
    y_fit, y_val = y_all[fit_rows], y_all[val_rows]
    y_test = split_labels(test_split)
    layers = []
    for i, name in enumerate(store.layer_names):
        x_fit = read(train_split, i, fit_rows)
        if not np.isfinite(x_fit).all():
            raise InputError(
                f"layer {name!r} holds NaN or infinite features in the training rows; {store.nonfinite_advice()}, "
                "or fit with --no-probe"
            )
        scaler = StandardScaler().fit(x_fit)
        clf = LogisticRegression(C=PROBE_C, max_iter=300)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(scaler.transform(x_fit), y_fit)
        val_acc = float((clf.predict(scaler.transform(read(train_split, i, val_rows))) == y_val).mean())
        pred = clf.predict(scaler.transform(read(test_split, i, None)))
        test_acc, test_f1 = float((pred == y_test).mean()), macro_f1(y_test, pred)
        layers.append({"layer": name, "val_acc": val_acc, "test_acc": test_acc, "test_macro_f1": test_f1})
    best = max(range(len(layers)), key=lambda i: (layers[i]["val_acc"], i))  # ties: the deeper layer
    out = {
        "model": f"scikit-learn LogisticRegression(C={PROBE_C}) on standardised features, one layer at a time",
        "rows": int(len(fit_rows)),
        "seed": seed,
        "layers": layers,
        "best_layer": layers[best]["layer"],
        "best_test_acc": layers[best]["test_acc"],
        "last_test_acc": layers[-1]["test_acc"],
        "val_rows": int(len(val_rows)),
        # the other layers whose validation accuracy equals the best one's: the pick among them is the tie rule's
        "best_val_tied": [
            p["layer"] for i, p in enumerate(layers) if i != best and p["val_acc"] == layers[best]["val_acc"]
        ],
    }
    ref = probe_reference(out, "laya")
    return out | {
        "reference_layer": ref["layer"],
        "reference_test_acc": ref["test_acc"],
        "reference_test_macro_f1": ref.get("test_macro_f1"),
        "reference_rule": REFERENCE_RULE,
        "fits": PROBE_FITS,
    }


def probe_reference(probe: Mapping[str, Any], head: str) -> dict[str, Any]:
    """The probe a head is held to (REFERENCE_RULE): {layer, test_acc, margin, chosen_by}. Validation
    rows pick one layer, design fixes the last; the test split only says which of the two is the higher
    bar, so a pick on a few validation rows cannot let a head off. ``last`` reads the last layer only.
    Works on the probe of an older summary too (``layers`` and ``best_layer``)."""
    layers = probe["layers"]
    last = layers[-1]
    best = next(p for p in layers if p["layer"] == probe["best_layer"])
    if head == "last":
        pick, chosen_by = last, "the last layer, the only one the head reads"
    elif best is last:
        pick, chosen_by = last, "the best layer by validation accuracy, which is the last layer"
    elif best["test_acc"] >= last["test_acc"]:
        pick, chosen_by = best, "the best layer by validation accuracy, no weaker on the test split than the last"
    else:
        said = f"stronger on the test split than {best['layer']}, the best layer by validation accuracy"
        pick, chosen_by = last, f"the last layer, {said}"
    f1 = {"test_macro_f1": pick["test_macro_f1"]} if "test_macro_f1" in pick else {}  # absent in older summaries
    return {"layer": pick["layer"], "test_acc": pick["test_acc"], **f1, "margin": PROBE_MARGIN, "chosen_by": chosen_by}


def _draw(rows: np.ndarray, labels: np.ndarray, k: int, seed: int) -> np.ndarray:
    """At most ``k`` of ``rows``, drawn per class in proportion (seeded)."""
    if len(rows) <= k:
        return rows
    rng = np.random.default_rng(seed)
    parts = []
    for c in np.unique(labels[rows]):
        members = rows[labels[rows] == c]
        parts.append(rng.choice(members, size=max(1, int(round(k * len(members) / len(rows)))), replace=False))
    return np.concatenate(parts)


def gate(
    heads: list[dict[str, Any]],
    runs: Sequence[Any],
    *,
    chance: float,
    probe: dict[str, Any] | None,
    layer_names: Sequence[str],
    constant: Sequence[str] = (),
    n_test: int | None = None,
    majority_f1: float | None = None,
    duplicates: Sequence[tuple[str, str]] = (),
    unlearnable: str | None = None,
    in_train: dict[str, Any] | None = None,
    repeated: dict[str, Any] | None = None,
    small: Sequence[str] = (),
    epochs: int | None = None,
    patience: int | None = None,
    monitor: str = "loss",
    n_val: int = 0,
    balance: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Add ``warnings``, ``probe_reference`` and ``seed_agreement`` to each head row of the summary
    (``heads``: summarize_runs rows, JSON-able); return summary.json's ``quality`` section.
    ``constant``: the layers :func:`constant_layers` found; ``n_test``: the test split's rows;
    ``majority_f1``: the test split's :func:`majority_macro_f1`;
    ``in_train``: the test rows that are training rows (overlap.rows_in_train), or None; ``repeated``:
    the test rows that repeat another (overlap.repeated_rows), or None; ``small``:
    the warnings of too few rows to fit or pick by (few_class_rows, few_validation_rows); ``epochs``: the
    most epochs a seed could run, ``patience`` its early stopping's and ``monitor`` what it watched
    over ``n_val`` validation rows (:func:`epoch_limit`); ``balance``: the test split's
    classes.class_balance, whose ``imbalanced`` makes the probe check read macro-F1 too and names each
    head's weakest class."""
    from .overlap import overlap_warning, repeated_warning

    imbalanced = bool((balance or {}).get("imbalanced"))

    for h in heads:
        h.update(
            head_quality(
                h["head"],
                [r for r in runs if r.head == h["head"]],
                test_acc=h["test_acc"]["mean"],
                test_f1=(h.get("test_macro_f1") or {}).get("mean"),
                majority_f1=majority_f1,
                chance=chance,
                n_test=n_test,
                probe=probe,
                layer_names=layer_names,
                constant=constant,
                epochs=epochs,
                patience=patience,
                monitor=monitor,
                n_val=n_val,
                imbalanced=imbalanced,
            )
        )
        if balance is not None and (weak := weakest_note(h.get("per_class"), balance, int(h.get("n") or 1))):
            h["gate_notes"].append(weak)
        if duplicates and h["head"] != "last":
            pairs = ", ".join(f"{a} = {b}" for a, b in duplicates)
            h["warnings"].append(
                f"layers that hold the same rows ({pairs}): how a head's weight splits between them is "
                "arbitrary (seeds may put it on either); leave one of each pair out with --layers"
            )
        if unlearnable:
            h["warnings"].append(unlearnable)
        h["warnings"].extend(small)
        if in_train:
            h["warnings"].append(overlap_warning(in_train))
        if repeated:
            h["warnings"].append(repeated_warning(repeated))
        few = few_rows(n_test, "test", "and the interval over seeds leaves out the sampling of the test rows")
        if few:
            h["warnings"].append(few)
        if sampled := sampling_warning(h["test_acc"], n_test):
            h["warnings"].append(sampled)
        delta = (h.get("delta_vs_last") or {}).get("test_acc")
        if delta and h["head"] != "last":
            mine, last = ([r for r in runs if r.head == k] for k in (h["head"], "last"))
            if sampled := difference_sampling_warning(delta, mine, last, n_test):
                h["warnings"].append(sampled)
    return {
        "chance": chance,
        "majority_macro_f1": majority_f1,
        "class_balance": balance,
        "constant_layers": list(constant),
        "duplicate_layers": [list(p) for p in duplicates],
        "test_rows_in_train": in_train,
        "test_rows_repeated": repeated,
        "chance_definition": "majority-class share of the test split",
        "probe": probe,
        "thresholds": THRESHOLDS,
        "epoch_limit_reads": epoch_limit_reads(monitor),
        "warnings": sum(len(h["warnings"]) for h in heads),
    }


# The reading of a head below the probe whose gap over seeds includes 0, and how its note begins: it
# travels with every result of the head (head_dir.fit_warnings)
NOT_SHOWN_BELOW = "not shown below the probe"
BELOW_PROBE = "below the probe"  # probe_reference's reading where the gate warns


def head_quality(
    head: str,
    runs: Sequence[Any],
    *,
    test_acc: float,
    chance: float,
    probe: dict[str, Any] | None,
    layer_names: Sequence[str],
    constant: Sequence[str] = (),
    epochs: int | None = None,
    patience: int | None = None,
    monitor: str = "loss",
    n_val: int = 0,
    n_test: int | None = None,
    test_f1: float | None = None,
    majority_f1: float | None = None,
    imbalanced: bool = False,
) -> dict[str, Any]:
    """The gate for one head over its seeds (``runs``: fit_head.RunResult with .test, .test_acc,
    .epochs_run, .best_epoch and .static_weights; ``epochs``: the most each seed could run, ``patience``
    its early stopping's, ``monitor`` what it watched over ``n_val`` validation rows): its warnings, its
    probe reference and the seeds' agreement on the layers. ``test_f1``: its mean test macro-F1 over
    seeds, read beside ``majority_f1`` where its accuracy cannot tell (:func:`not_learned`), and held
    to the probe's macro-F1 as well as its accuracy where the classes are ``imbalanced``: there the
    minority classes weigh little in accuracy, and macro-F1 says whether the head learned them."""
    said = not_learned("the head", test_acc, chance, f1=test_f1, majority_f1=majority_f1)
    near = near_chance(test_acc, chance, said, n=n_test, runs=runs, epochs=epochs)
    limit = epoch_limit(runs, epochs, patience, advice=EPOCH_ADVICE, monitor=monitor, n_val=n_val)
    warns = [w for w in (near, limit) if w]
    notes: list[str] = []
    read = [n for n in constant if head != "last" or n == layer_names[-1]]
    if read:
        warns.append(
            f"{', '.join(read)} {'gives' if len(read) == 1 else 'give'} one row for every training input (up "
            "to rounding): no input can be told from another there, so a weight on it says nothing about the "
            "input; re-extract with another --pool (a token 0 that sees no other token, such as a class "
            "token's embedding, is constant), or leave it out with --layers"
        )
    reference = None
    if probe is not None:
        reference = probe_reference(probe, head)
        layer = reference["layer"]
        checks = [("test_acc", "test accuracy", test_acc, reference["test_acc"])]
        ref_f1 = reference.get("test_macro_f1")
        if imbalanced and test_f1 is not None and math.isfinite(test_f1) and ref_f1 is not None:
            checks.append(("test_macro_f1", "test macro-F1", test_f1, ref_f1))
        below = next((c for c in checks if c[2] < c[3] - PROBE_MARGIN), None)
        if below is not None:
            key, what, value, ref = below
            said = f"{what} {value:.3f} vs {ref:.3f} for a logistic regression on {layer} alone"
            said += f" (the reference probe: {reference['chosen_by']})"
            if key == "test_macro_f1":
                said += "; on imbalanced classes macro-F1 is read beside accuracy, which hides the minority classes"
            # over seeds, a gap whose interval reaches 0 is seed noise as much as a shortfall
            gap = describe([getattr(r, key) - ref for r in runs]) if len(runs) > 1 else None
            # every seed reads the same test rows, so the seeds' interval leaves out which rows were drawn:
            # the (mean) accuracy is read beside the test rows' own interval too, with one seed or several
            n_rows = n_test or 0
            within = wilson(value * n_rows, n_rows) if key == "test_acc" and n_rows else None
            record = _rows_record(within, n_rows) if within is not None else None
            # the intervals that hold the probe's accuracy: below it only where neither does
            held = ["seeds"] * (gap is not None and gap.ci_high >= 0) + ["test_rows"] * (
                within is not None and within[1] >= ref
            )
            reference["metric"] = key
            reference |= {"gap": gap.to_dict() if gap else None} | ({"test_rows": record} if record else {})
            if held:
                reference |= {"reading": NOT_SHOWN_BELOW, "held_by": held}
                notes.append(f"{NOT_SHOWN_BELOW}: {said}, but {_held(gap, within, n_rows, held)}")
            else:
                reference["reading"] = BELOW_PROBE
                warns.append(f"below the probe: {said}; {_shown(gap, within, n_rows)}; {_advice(runs, epochs)}")
    # per seed, the head's (N, L) weights on the test rows; None for heads without weights
    ws = [r.test.weights for r in runs if r.test is not None and r.test.weights is not None]
    weights = ws if ws and len(ws) == len(runs) else None
    agreement = seed_agreement(weights) if weights is not None else None
    seeds = [r.seed for r in runs]
    if weights is not None and any(r.static_weights is None for r in runs):  # α heads
        flat = [s for s, w in zip(seeds, weights) if float(w.std(axis=0).max()) < ALPHA_CONSTANT_STD]
        if flat:
            warns.append(
                f"α constant across inputs in {counted_list('seed', flat)} (std over "
                f"test rows < {ALPHA_CONSTANT_STD} for every layer): it weighs layers globally, like ScalarMix, not "
                "per input"
            )
    statics = [r.static_weights for r in runs if r.static_weights is not None]
    if statics and len(statics) == len(runs):
        n_layers = len(statics[0])
        if all(uniform_spread(s) < UNIFORM_SHARE for s in statics):
            warns.append(
                f"weights still uniform: within {UNIFORM_SHARE:.0%} of 1/{n_layers} in every seed; the "
                "scalars barely moved, so they say nothing about the layers"
            )
    if agreement is not None and weights is not None:
        tops = [layer_names[int(np.argmax(w.mean(axis=0)))] for w in weights]
        static = any(r.static_weights is not None for r in runs)  # one profile for every row, by design
        if len(set(tops)) > 1:
            rows = "" if static else f"; per-row top layers agree on {_per_row(agreement)}"
            warns.append(
                f"seeds disagree: mean weights peak on {', '.join(f'{n} (seed {s})' for n, s in zip(tops, seeds))}"
                f"{rows}; read the per-seed profiles, not the pooled one"
            )
        elif at_chance := (None if static else agreement_at_chance(agreement)):
            warns.append(at_chance)
        elif agreement["top_layer_agreement"] < AGREEMENT_MIN:
            warns.append(
                f"seeds split per row: every seed's mean weights peak on {tops[0]}, but per-row top layers agree on "
                f"only {_per_row(agreement)}: the seeds agree on the layers overall, not on which layer tops a "
                "given input; read one input's weights as one seed's, not the head's"
            )
        # beside "seeds disagree" and a constant α the profiles are the whole story, told already
        trivial = static or len(set(tops)) > 1 or any(float(w.std(axis=0).max()) < ALPHA_CONSTANT_STD for w in weights)
        if not trivial and (ranked := rankings_at_constant(agreement, weights)):
            warns.append(ranked)
    # with one seed the checks across seeds have nothing to compare: say so rather than pass them
    not_run: list[str] = []
    if weights is not None and len(runs) == 1:  # one profile for every row (ScalarMix): no per-row checks
        not_run = list(SEED_CHECKS[:1] if runs[0].static_weights is not None else SEED_CHECKS)
    profile = None
    if weights is not None:  # each seed's mean weight per layer beside the pooled mean, on the test rows
        profile = {
            "layers": list(layer_names),
            # float64 sums, as profiles.json's: float32 ones differ from them in the sixth digit
            "pooled": np.concatenate(weights).mean(axis=0, dtype=np.float64).tolist(),
            "per_seed": {str(s): w.mean(axis=0, dtype=np.float64).tolist() for s, w in zip(seeds, weights)},
        }
    return {
        "warnings": warns,
        "checks_not_run": not_run,
        "gate_notes": notes + ([seed_checks_note(not_run)] if not_run else []),
        "probe_reference": reference,
        "seed_agreement": agreement,
        "layer_weights": profile,
    }


def _gap_said(gap: Any) -> str:
    """The gap to the probe over seeds with its interval: "the gap over 3 seeds, −0.044 [−0.140, +0.051]
    (95% t-interval)"."""
    return (
        f"the gap over {gap.n} seeds, {gap.mean:+.3f} [{gap.ci_low:+.3f}, {gap.ci_high:+.3f}] "
        f"({gap.confidence:.0%} t-interval)"
    )


def _held(gap: Any, rows: tuple[float, float] | None, n: int, held: Sequence[str]) -> str:
    """Why a head under the probe by more than the margin is not shown below it: the intervals in
    ``held`` ("seeds", "test_rows") that hold the probe's accuracy, each with its numbers."""
    said = []
    if gap is not None:
        said.append(_gap_said(gap) + (", includes 0" if "seeds" in held else ", lies below 0"))
    if rows is not None and "test_rows" in held:
        whose = "one seed's accuracy" if gap is None else f"the {gap.n} seeds' mean accuracy"
        said.append(
            f"{whose} over the {n} test rows alone lies in [{rows[0]:.3f}, {rows[1]:.3f}] (95% Wilson), which "
            "holds the probe's"
        )
    if held == ["test_rows"] and gap is not None:  # the seeds alone would have called it below
        return (
            f"{said[1]}, though {said[0]}: the seeds all read the same test rows, and other rows could put the "
            "head level with the probe; more test rows would tell"
        )
    return f"{', and '.join(said)}; more seeds{'' if held == ['seeds'] else ' or test rows'} would tell"


def _shown(gap: Any, rows: tuple[float, float] | None, n: int) -> str:
    """What shows a head below the probe: the gap over seeds below 0 and, on accuracy, the test rows'
    Wilson interval below the probe's accuracy; each with its numbers."""
    if gap is None and rows is not None:
        return (
            f"the probe is one fit, and the head's 95% Wilson interval over the {n} test rows, "
            f"[{rows[0]:.3f}, {rows[1]:.3f}], lies below its accuracy"
        )
    if gap is None:
        return PROBE_ONE_FIT
    if rows is None:
        return f"{_gap_said(gap)}, lies below 0; {PROBE_ONE_FIT}"
    return (
        f"{_gap_said(gap)}, lies below 0, and the seeds' mean accuracy over the {n} test rows, [{rows[0]:.3f}, "
        f"{rows[1]:.3f}] (95% Wilson), lies below the probe's; {PROBE_ROWS_AND_SEEDS}"
    )


def _rows_record(rows: tuple[float, float], n: int) -> dict[str, Any]:
    """probe_reference's ``test_rows``: one seed's accuracy interval over its test rows."""
    return {"n": n, "ci_low": rows[0], "ci_high": rows[1], "confidence": 0.95, "method": "wilson"}


def _advice(runs: Sequence[Any], epochs: int | None, effect: str = "may close the gap") -> str:
    """What to try for a head below the probe or near chance (``effect``: what it may do): more --epochs
    only where a seed used them all; seeds that stopped on patience before the budget would not use more."""
    if epochs is None or not runs:
        return f"another --lr or more --epochs {effect}"
    ran = sorted(r.epochs_run for r in runs)
    if ran[-1] < epochs:
        span = f"{ran[0]}" if ran[0] == ran[-1] else f"{ran[0]}–{ran[-1]}"
        return (
            f"another --lr {effect}; every seed stopped early on patience ({span} of {epochs} epochs), "
            "so more --epochs will not"
        )
    full = [r.seed for r in runs if r.epochs_run >= epochs]
    return f"another --lr or more --epochs {effect}: {counted_list('seed', full)} ran all {epochs} epochs"


def seed_checks_note(not_run: Sequence[str]) -> str:
    """The note of a head with layer weights fitted on one seed: the checks across seeds it did not get."""
    return (
        f"1 seed: the checks across seeds ({', '.join(not_run)}) were not run; fit with --seeds 2 or more to run them"
    )
