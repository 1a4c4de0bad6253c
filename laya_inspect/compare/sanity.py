"""Sanity checks of every head's attributions (docs/METHOD.md, "Sanity checks"): Adebayo et al.'s
model and data randomisation at layer level, on the rows compare already holds. A deep copy of the
trained head re-initialised in cascade (:func:`cascade`: outside the adapters, then everything), and a
head fitted on permuted labels by the library's loop (:mod:`.permuted`); every method compare ran
(``random`` aside) is read against the trained head's attributions (per-row Spearman ρ, mean and
interval: "low" when it lies inside ±THRESHOLD and holds 0 or stays within :func:`band`) and LOLO
effects (faithfulness). The trained head is never touched.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..choices import MIN_ROWS, TIE_TOLERANCE
from ..files import write_with
from ..head_dir import training_settings
from ..heads import Head
from ..runtime import Progress
from ..training.quality import UNIFORM_SHARE, chance_level, uniform_spread
from . import metrics as M
from .attribution import AttributionOptions, attribute, options_for
from .draws import seeded_rows
from .lolo import forward_rows
from .per_head import HeadResult
from .permuted import EPOCHS, PATIENCE, TRAIN_ROWS, fresh, permuted_head, training_rows
from .records import NO_LAYER, NOT_APPLICABLE, PARTLY

THRESHOLD = 0.5  # |ρ| beyond which a randomised head's attributions read "high": the ranking survived it
ARRAYS = "_arrays"  # check_head's arrays, for sanity.h5 (run_sanity takes them out of the summary)
ROWS = 256  # attributions of the randomised heads on at most this many of the compared rows (seeded)
INIT_STREAM, ROWS_STREAM = 7, 8  # default_rng([seed, stream]): the checks' seeds, the checked rows
SEEDS = (
    f"per head (its record's seeds): drawn by default_rng([seed, {INIT_STREAM}, the head's fit seed]) "
    f"(default_rng([seed, {INIT_STREAM}]) for a head whose config.json records no seed), so heads fitted "
    "under different seeds each meet their own draw of the null; the permuted-label fit's training rows "
    "are drawn once, by rows_seed"
)
STATIC = ("random",)  # methods that read no weight of the head: nothing to randomise
ONE_LAYER = (
    "every method's attribution is 0 on each layer but the one the head reads, trained or randomised, so each "
    "row's ρ is ±1 from one sign, whatever the head learned"
)

CHOICES = {
    "threshold": THRESHOLD,
    "rule": f"low = the 95% bootstrap interval of the mean per-row Spearman ρ (randomised vs trained "
    f"attributions) lies inside (−{THRESHOLD}, {THRESHOLD}) and holds 0, the random reference's ρ (a ranking "
    "independent of the trained one), or lies inside ±6/(L(L²−1)) (L ≥ 3 layers ranked: the mean per-row "
    "squared rank difference within 1 of an independent ranking's, less than half a swap of two neighbouring "
    f"layers; with 2 layers, where per-row ρ is ±1, it must hold 0); high = it lies wholly outside "
    f"(−{THRESHOLD}, {THRESHOLD}); unclear = it straddles ±{THRESHOLD}; {PARTLY} = it lies inside "
    f"(−{THRESHOLD}, {THRESHOLD}) but away from 0 and the band, not passed; undefined = no row where both "
    "rankings are defined (labels: also when the real head is not above chance); too few rows = fewer than "
    f"{MIN_ROWS} rows with both rankings defined (a bootstrap over so few rows is no 95% interval), no pass; "
    "untested = --bootstrap 0: no interval, no pass",
    "cascade": "top: every parameter outside the adapters re-initialised (LAYA: scorer, ψ and output layer; "
    "ScalarMix: scalars and output layer; concat: post and output layer; last: the output layer); "
    "all: the adapters too (every learned parameter); standardisation buffers kept",
    "reinit": "the head's own constructor under torch.manual_seed(init_seed), values copied into a deep copy "
    "of the trained head",
    "data": f"same kind and constructor arguments, fitted by the library's training loop on the training split "
    f"(at most {TRAIN_ROWS} seeded rows) with permuted labels; stratified validation rows, as many as the head "
    f"held out (its config.json's val_fraction, else fit-head's 10%); at most {EPOCHS} epochs, early stopping "
    f"on validation loss with patience {PATIENCE}; the trained head's standardisation kept",
    "near_chance": "chance = the majority class's share of the compared split (all its rows, whatever --limit "
    "compared); the real head is above chance when "
    "its accuracy exceeds chance + 1.96·√(chance·(1 − chance)/n); the permuted-label head is near chance when its "
    "accuracy is at most chance + ½·(real accuracy − chance), i.e. it kept less than half of the real head's gain "
    "(a head unrelated to the labels still maps whole class clusters together, so its accuracy varies far more "
    "than a binomial over rows); undefined when the real head is not above chance",
    "faithfulness": "the randomised head's attributions scored against the trained head's LOLO effects "
    "(first ablation), beside the trained head's own",
    "rows": f"attributions compared on every compared row, or at most {ROWS} of them drawn by "
    f"default_rng([seed, {ROWS_STREAM}]); accuracies on every compared row",
    "skipped": "random (reads no weight of the head)",
    "one_layer": f"{NOT_APPLICABLE} on every method and check (no pass, no fail) for a head whose logits change "
    "with one layer alone (each layer in turn replaced by seeded noise on the checked rows: layers_read): "
    f"{ONE_LAYER}; likewise for a head whose logits change with no layer ({NO_LAYER}); the permuted-label "
    "head's accuracy is still read against chance",
}


def seeds(seed: int, head_seed: int | None = None) -> dict[str, int]:
    """The seeds of the checks, drawn from compare's ``seed`` and the head's own fit seed: heads fitted
    under different seeds each get their own re-initialisation and permutation, so the checks over
    seeds are as many draws of the null, not one draw repeated (None: compare's seed alone, which
    also draws the permuted-label fit's training rows, shared by every head)."""
    key = [seed, INIT_STREAM] if head_seed is None else [seed, INIT_STREAM, head_seed]
    draw = np.random.default_rng(key).integers(0, 2**31 - 1, size=2)
    return {"init_seed": int(draw[0]), "permutation_seed": int(draw[1]), "fit_seed": int(draw[1]) + 1}


def head_seed(cfg: Mapping[str, Any]) -> int | None:
    """The seed a head was fitted under (its config.json's ``seed``), None where it records none."""
    seed = cfg.get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0 else None


def cascade(head: Head) -> list[tuple[str, list[str]]]:
    """(step, parameter names re-initialised), cumulative, in cascade order; a head without adapters
    has one step."""
    names = [n for n, _ in head.named_parameters()]
    top = [n for n in names if not n.startswith("adapters.")]
    steps = [("top", top)] if top else []
    if len(top) < len(names):
        steps.append(("all", names))
    return steps


def randomised(head: Head, new: Head, names: Sequence[str]) -> Head:
    """A deep copy of ``head`` with the parameters ``names`` taken from ``new``; ``head`` is untouched."""
    out = copy.deepcopy(head)
    state = new.state_dict()
    with torch.no_grad():
        for n, p in out.named_parameters():
            if n in names:
                p.copy_(state[n].to(p))
    return out.eval()


def layers_read(head: Head, hs: Sequence[torch.Tensor]) -> list[int]:
    """The layers ``head``'s logits depend on, on the rows ``hs``: each layer in turn replaced by seeded
    noise of its shape, a layer is read when any logit moves. Read from the head's outputs, not its kind,
    so any head that reads one layer (``last``, or one of a user's own) is found."""
    with torch.no_grad():
        base = head(list(hs)).logits
        gen = torch.Generator().manual_seed(0)
        read = []
        for i, h in enumerate(hs):
            noise = torch.randn(h.shape, generator=gen, dtype=h.dtype).to(h.device)
            moved = head([noise if j == i else x for j, x in enumerate(hs)]).logits
            if not torch.equal(moved, base):
                read.append(i)
    return read


def checked_rows(n: int, seed: int) -> np.ndarray:
    """Positions, among ``n`` compared rows, of the rows the checks compare attributions on: every row,
    or ROWS of them drawn by default_rng([seed, ROWS_STREAM])."""
    return seeded_rows(n, ROWS, [seed, ROWS_STREAM])


def read_layers(heads: Mapping[str, tuple[Head, Any, Any]], hs: Sequence[torch.Tensor], seed: int) -> list[list[int]]:
    """Per head, :func:`layers_read` on the rows the checks compare (:func:`check_head`'s): compare
    records it with or without --sanity, and hands it to :func:`run_sanity`."""
    pick = torch.from_numpy(checked_rows(len(hs[0]), seed)).to(hs[0].device)
    return [layers_read(head, [h[pick] for h in hs]) for head, _, _ in heads.values()]


def band(n_layers: int) -> float:
    """The |ρ| a mean per-row Spearman ρ over ``n_layers`` ranked layers may keep and still read as an
    independent ranking's (ρ 0): 6/(L(L²−1)), a mean squared rank difference within 1 of the null's,
    less than half a swap of two neighbouring layers. 0 for fewer than 3 layers: at 2 it is 1, every
    ρ, and a ranking left unchanged (ρ +1 on every row) would read as independent."""
    return 6 / (n_layers * (n_layers**2 - 1)) if n_layers > 2 else 0.0


def verdict(rank: M.Faithfulness, n_layers: int) -> str:
    """low | high | unclear | partly kept | undefined for the mean per-row ρ and its interval (the
    mean alone when the bootstrap did not run), against the random reference's ρ 0: low only where
    the interval lies inside (−THRESHOLD, THRESHOLD) and holds 0 or stays within :func:`band`."""
    if rank.n_valid == 0 or not np.isfinite(rank.mean):
        return "undefined"
    low, high = (rank.ci_low, rank.ci_high) if np.isfinite(rank.ci_low) else (rank.mean, rank.mean)
    within = band(n_layers)
    if -THRESHOLD < low and high < THRESHOLD and (low <= 0 <= high or (-within <= low and high <= within)):
        return "low"
    if low >= THRESHOLD or high <= -THRESHOLD:
        return "high"
    return "unclear" if low <= -THRESHOLD or high >= THRESHOLD else PARTLY


def partly_kept(rank: M.Faithfulness, n_layers: int) -> str:
    """The note of a "partly kept" verdict: ρ with the interval the verdict was read on, and the two
    nulls it missed (the random reference's ρ 0, and :func:`band`). The mean alone is no evidence: it
    may lie inside the band while the interval reaches past it. Printed with as many decimals as the
    band needs for two significant digits (it is ±0.0035 for 12 layers), so the numbers can be read
    against each other."""
    within = band(n_layers)
    places = max(2, 1 - math.floor(math.log10(within))) if within else 2
    rho = f"ρ {rank.mean:+.{places}f}"
    # below 0: the randomised ranking runs against the trained one, tied to it still, not kept as it was
    inverted = (rank.ci_high if np.isfinite(rank.ci_low) else rank.mean) < 0
    turned = f"; {INVERTED}" if inverted else ""
    if np.isfinite(rank.ci_low):
        rho += f" [{rank.ci_low:+.{places}f}, {rank.ci_high:+.{places}f}]: its interval"
        if within:
            return f"{rho} neither holds the random reference's 0 nor stays within ±{within:.{places}f}{turned}"
        return f"{rho} does not hold the random reference's 0{turned}"
    if within:  # one profile for every row: ρ is one number, read as it stands
        return f"{rho}: neither the random reference's 0 nor within ±{within:.{places}f}{turned}"
    return f"{rho}: not the random reference's 0{turned}"


# what a ρ below 0 means where the verdict says the randomised head still follows the trained one
INVERTED = "inverted: the randomised head ranks the layers against the trained head's order, still tied to it"


def _predict(head: Head, hs: Sequence[torch.Tensor], batch_size: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(predictions (N,), mean weight per layer (L,) or None) of one forward pass."""
    logits, weights = forward_rows(head, hs, batch_size)
    return logits.argmax(1), None if weights is None else weights.mean(0)


@dataclass
class Trained:
    """What a randomised head is read against, on the checked rows: the trained head's attributions,
    its LOLO effects (first ablation) and each method's faithfulness to them."""

    hs: list[torch.Tensor]
    target: np.ndarray
    scores: dict[str, np.ndarray]
    effects: np.ndarray
    options: AttributionOptions
    n_boot: int
    seed: int
    faith: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.faith = {m: self._faith(s).to_dict() for m, s in self.scores.items()}

    def _faith(self, scores: np.ndarray) -> M.Faithfulness:
        return M.faithfulness(scores, self.effects, n_boot=self.n_boot, seed=self.seed, tol=TIE_TOLERANCE)

    def versus(
        self, head: Head, keep: dict[str, Any] | None = None, check: str = "", inapplicable: str | None = None
    ) -> dict[str, Any]:
        """Every method of ``head`` (randomised) against the trained head's: ρ, verdict, faithfulness;
        its scores kept in ``keep`` under "<check>/<method>". ``inapplicable``: why the trained head's
        attributions say nothing (:func:`.records.inapplicable`: it reads one layer, or none), so every
        verdict is NOT_APPLICABLE, with it as the note, neither passed nor failed."""
        out = {}
        for m, trained in self.scores.items():
            scores = attribute(m, head, self.hs, self.target, self.options).scores
            if keep is not None:
                keep[f"{check}/{m}"] = scores
            rho, note = one_profile(M.spearman_rows(scores, trained, 0.0), scores, trained)
            if note and np.isnan(rho).all():  # weights that rank the layers by noise: no faithfulness either
                scores = np.zeros_like(scores)
            n_boot = 0 if note else self.n_boot  # one ranking repeated: an interval over rows would have no width
            rank = M.summarise_rows(rho, n_boot=n_boot, seed=self.seed)
            word = verdict(rank, scores.shape[1])
            if note is None and word != "undefined" and rank.n_valid < MIN_ROWS:
                word = "too few rows"  # as compare reads no verdict there: no 95% interval over so few rows
            elif note is None and word != "undefined" and n_boot == 0:
                word = "untested"  # --bootstrap 0: no interval, as compare's constant-rule verdict is then
            if word == PARTLY:
                kept = partly_kept(rank, scores.shape[1])
                note = f"{note}; {kept}" if note else kept
            if inapplicable:  # ρ is ±1 by one sign per row (or all 0): it reads the signs, not what the head learned
                word, note = NOT_APPLICABLE, inapplicable
            out[m] = {
                "rank_correlation": rank.to_dict(),
                "verdict": word,
                "passed": None if word == NOT_APPLICABLE else word == "low",
                "faithfulness": self._faith(scores).to_dict(),
                "trained_faithfulness": self.faith[m],
                **({"note": note} if note else {}),
            }
        return out


def one_profile(rho: np.ndarray, scores: np.ndarray, trained: np.ndarray) -> tuple[np.ndarray, str | None]:
    """Per-row ρ and a note, for a method that gives one profile to every row (ScalarMix's weights):
    its ρ is one number repeated, not a sample of rows; and a randomised profile within UNIFORM_SHARE
    of 1/L (fit-head's "still uniform") ranks the layers by noise, so it is undefined, as an exactly
    uniform one is (its ranks all tie)."""
    if len(scores) == 0 or np.ptp(scores, axis=0).max() > 0 or np.ptp(trained, axis=0).max() > 0:
        return rho, None
    n_layers, w = scores.shape[1], scores[0]
    weights = bool((w >= 0).all()) and abs(float(w.sum()) - 1) < 1e-4  # a profile over layers, not raw scores
    if weights and uniform_spread(w) < UNIFORM_SHARE:
        note = f"the randomised weights stay within {UNIFORM_SHARE:.0%} of 1/{n_layers}: no ranking of the layers"
        return np.full_like(rho, np.nan), note
    return rho, "one profile for every row: ρ is one number, no interval over rows"


def model_randomisation(
    head: Head, trained: Trained, init_seed: int, keep: dict[str, Any], inapplicable: str | None = None
) -> list[dict[str, Any]]:
    """Per cascade step: what was re-initialised and every method's comparison with the trained head."""
    new = fresh(head, init_seed)
    out = []
    for step, names in cascade(head):
        rand = randomised(head, new, names)
        n = int(sum(p.numel() for k, p in rand.named_parameters() if k in names))
        modules = sorted({k.split(".")[0] for k in names})
        methods = trained.versus(rand, keep, step, inapplicable)
        out.append({"step": step, "reinitialised": modules, "n_parameters": n, "methods": methods})
    return out


def data_randomisation(
    head: Head,
    cfg: Mapping[str, Any],
    rows: tuple[list[np.ndarray], np.ndarray],
    hs: Sequence[torch.Tensor],
    labels: np.ndarray,
    trained: Trained,
    real_accuracy: float,
    keep: dict[str, Any],
    inapplicable: str | None = None,
    chance: float | None = None,
) -> dict[str, Any]:
    """The permuted-label head: its accuracy on every compared row beside chance (``chance``: the split's
    majority share, else the compared rows') and the real head's, its mean weight profile, and every
    method's comparison with the trained head."""
    s = seeds(trained.seed, head_seed(cfg))
    perm, info = permuted_head(
        head, rows, training_settings(cfg), permutation_seed=s["permutation_seed"], fit_seed=s["fit_seed"]
    )
    preds, profile = _predict(perm, hs, trained.options.batch_size)
    keep["labels/preds"] = preds
    n = len(labels)
    acc = float((preds == labels).mean()) if n else float("nan")
    chance = chance_level(labels) if chance is None else chance
    real_bound = chance + 1.96 * float(np.sqrt(chance * (1 - chance) / max(n, 1)))
    real_above = bool(real_accuracy > real_bound)
    bound = chance + 0.5 * (real_accuracy - chance)
    methods = trained.versus(perm, keep, "labels", inapplicable)
    if not real_above and not inapplicable:  # nothing learnt from the labels to randomise: read as nothing
        why = "the real head is not above chance: it learnt nothing from the labels for this check to take away"
        for entry in methods.values():
            entry.update(verdict="undefined", passed=False, note=why)
    return {
        **info,
        "accuracy": acc,
        "real_accuracy": real_accuracy,
        "chance": chance,
        "near_chance_bound": bound,
        "verdict": ("near chance" if acc <= bound else "above chance") if real_above else "undefined",
        "passed": bool(real_above and acc <= bound),
        "real_verdict": "above chance" if real_above else "near chance",
        "real_above_bound": real_bound,  # the real head is above chance past it (not the permuted head's bound)
        "weight_profile": None if profile is None else profile.tolist(),
        "methods": methods,
    }


def check_head(
    head: Head,
    cfg: Mapping[str, Any],
    result: HeadResult,
    rows: tuple[list[np.ndarray], np.ndarray],
    hs: Sequence[torch.Tensor],
    labels: np.ndarray,
    options: AttributionOptions,
    read: list[int],
    *,
    n_boot: int,
    seed: int,
    emit: Progress,
    chance: float | None = None,
) -> dict[str, Any]:
    """Both checks for one head of compare (``result``: its HeadResult, every row measured; ``rows``: its
    training split's rows, :func:`.permuted.training_rows`; ``read``: the layers it reads, :func:`read_layers`)."""
    methods = [m for m in result.scores if m not in STATIC]
    pick = checked_rows(len(labels), seed)  # the rows the attributions are compared on
    index = torch.from_numpy(pick).to(hs[0].device)
    trained = Trained(
        [h[index] for h in hs],
        np.asarray(result.targets, dtype=np.int64)[pick],
        {m: np.asarray(result.scores[m], dtype=np.float64)[pick] for m in methods},
        result.primary.effects[pick],
        options,
        n_boot,
        seed,
    )
    emit({"event": "step", "head": result.name, "step": "sanity: re-initialised weights"})
    keep: dict[str, Any] = {"rows": pick}
    drawn = seeds(seed, head_seed(cfg))
    # every attribution 0 outside one layer (or everywhere): ρ is structural
    why = None if len(read) > 1 else ONE_LAYER if read else NO_LAYER
    model = model_randomisation(head, trained, drawn["init_seed"], keep, why)
    emit({"event": "step", "head": result.name, "step": "sanity: permuted labels"})
    real_acc = float((np.asarray(result.preds) == labels).mean()) if len(labels) else float("nan")
    data = data_randomisation(head, cfg, rows, hs, labels, trained, real_acc, keep, why, chance)
    data["real_weight_profile"] = None if result.weights is None else np.asarray(result.weights).mean(0).tolist()
    out = {"methods": methods, "ablation": result.ablations[0], "rows": len(pick), "seeds": drawn}
    out["layers_read"] = read  # positions of the layers the head's logits depend on (one: NOT_APPLICABLE)
    out |= {"model": model, "data": data}
    return {**out, ARRAYS: keep}


def run_sanity(
    heads: Mapping[str, tuple[Head, dict[str, Any], str]],
    results: Sequence[HeadResult],
    read: Sequence[list[int]],
    store: Any,
    hs: Sequence[torch.Tensor],
    labels: np.ndarray,
    config: Any,
    values: Mapping[str, Any],
    emit: Progress,
) -> tuple[dict[str, Any], dict[str, dict[str, np.ndarray]]]:
    """(summary.json's "sanity", each head's arrays for :func:`write_h5`), every head of compare
    (``results`` and ``read``, :func:`read_layers`, in the order of ``heads``)."""
    from ..workers import cpu_workers, run_forked

    options = options_for(config, values)
    items = [(r, head, cfg, layers) for r, (head, cfg, _), layers in zip(results, heads.values(), read)]
    splits = {training_settings(cfg)["train_split"] for _, _, cfg, _ in items}  # read here, before the fork
    train = {sp: training_rows(store, sp, seeds(config.seed)["permutation_seed"]) for sp in sorted(splits)}
    chance = chance_level(store.labels(config.split))  # the split's, whatever --limit compared
    stats = {"n_boot": config.n_boot, "seed": config.seed}

    def one(_i: int, item: tuple[HeadResult, Head, dict[str, Any], list[int]], report: Progress) -> dict[str, Any]:
        r, head, cfg, layers = item
        rows = train[training_settings(cfg)["train_split"]]
        return check_head(head, cfg, r, rows, hs, labels, options, layers, emit=report, chance=chance, **stats)

    # several heads at once in forked processes on a multi-core CPU, as compare's own heads (the same numbers)
    done = run_forked(items, one, cpu_workers(config.workers, hs[0].device, len(items)), emit)
    arrays = {r.name: d.pop(ARRAYS) for (r, *_), d in zip(items, done)}
    choices = {**CHOICES, "epochs": EPOCHS, "patience": PATIENCE, "seeds": SEEDS}
    choices["rows_seed"] = seeds(config.seed)["permutation_seed"]
    return {"choices": choices, "heads": {r.name: d for (r, *_), d in zip(items, done)}}, arrays


def write_h5(path: Path, arrays: Mapping[str, Mapping[str, np.ndarray]]) -> Path:
    """sanity.h5: per head, ``rows`` (positions in the compared rows, those of attributions.h5, on which
    the attributions were compared), ``<check>/<method>`` (rows, L) the randomised head's scores
    (check: top, all, labels) and ``labels/preds`` (N,) the permuted-label head's predictions."""
    import h5py

    def write(tmp: Path) -> None:
        with h5py.File(tmp, "w") as f:
            f.attrs["schema_version"] = 1
            for head, named in arrays.items():
                for name, a in named.items():
                    f.create_dataset(f"heads/{head}/{name}", data=np.asarray(a))

    return write_with(path, write)
