"""`laya-inspect diagnose`: what α says about errors and about shifted inputs (docs/METHOD.md,
"Diagnose").

Misclassification detection on the test split, positive = misclassified; each score is larger for a
likelier error: ``msp`` = 1 − max softmax probability (the baseline without α); ``alpha_entropy`` =
H(α(x)); ``alpha_divergence`` = KL(α(x) ‖ ᾱ_ŷ), ᾱ_c the mean α over correctly classified training rows
predicted c; ``alpha`` (entropy and divergence) and ``msp+alpha`` (all three) combined by a logistic
regression fitted on the head's held-out rows and scored on the test rows. A score (msp too) whose
direction is reversed on the held-out rows is negated there, before the test rows are seen.

Shift (with another cache of the same layers): α profiles of both caches, overall and per predicted
class, a permutation test for their difference, and the AUROC of telling the other cache's rows
from this cache's test rows by α divergence, by α entropy and by 1 − max softmax probability.
Intervals: bootstrap over rows for one head; t-intervals over heads for several (seeds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..cache.fingerprint import extracted_otherwise
from ..cache.store import FeatureStore
from ..errors import CacheError, InputError, few
from ..files import artifact_header
from ..head_dir import refuse_repeats, store_for_heads
from ..options import defaulted
from ..runtime import Progress, no_progress, pick_device
from ..training.profiles import class_names
from ..training.stats import level, outcome, spec
from .common import (
    Result,
    bounded,
    cache_record,
    estimate,
    family,
    head_outputs,
    held_out_rows,
    load_split,
    open_weighted_head,
    paired,
    rows_rule,
    trust_lines,
    verdict,
    weighted_head_dirs,
    write_whole,
)
from .config import DiagnoseConfig  # noqa: F401  (re-exported)
from .scoring import (
    CHANCE_FAMILY,
    ERROR_SCORES,
    ERRORS_FAMILY,
    MIN_OUTCOME_ROWS,
    alone_text,
    detection,
    each_head_alone,
    errors_not_read,
    errors_read,
    head_chance,
    head_label,
    one_seed_said,
    permutation_test,
    shift_not_read,
    shifted_classes,
    versus_chance,
    versus_msp,
    with_chance,
)

TINY = 1e-12


def alpha_entropy(w: np.ndarray) -> np.ndarray:
    """(N,) H(α) = −Σ_i α_i ln α_i in nats (0 ln 0 = 0)."""
    w = np.asarray(w, np.float64)
    return -(np.where(w > 0, w * np.log(np.maximum(w, TINY)), 0.0)).sum(axis=1)


def class_reference(
    w: np.ndarray, preds: np.ndarray, labels: np.ndarray, num_classes: int
) -> tuple[np.ndarray, list[int]]:
    """(C, L) mean α over correctly classified rows of each class, and the classes without such rows
    (they take the mean over all correct rows, or over all rows when none is correct)."""
    correct = preds == labels
    pool = w[correct] if correct.any() else w
    ref = np.tile(pool.mean(axis=0), (num_classes, 1))
    missing = []
    for c in range(num_classes):
        rows = correct & (labels == c)
        if rows.any():
            ref[c] = w[rows].mean(axis=0)
        else:
            missing.append(c)
    return ref, missing


def alpha_divergence(w: np.ndarray, preds: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """(N,) KL(α(x) ‖ ᾱ_ŷ(x)) in nats, with ᾱ floored at 1e-12 so a layer it never uses stays finite."""
    q = np.maximum(ref[preds], TINY)
    w = np.asarray(w, np.float64)
    return (np.where(w > 0, w * (np.log(np.maximum(w, TINY)) - np.log(q)), 0.0)).sum(axis=1)


@dataclass
class Read:
    """One head on one split: probabilities, predictions, α and the α scores."""

    probs: np.ndarray
    preds: np.ndarray
    labels: np.ndarray
    weights: np.ndarray

    def scores(self, ref: np.ndarray) -> dict[str, np.ndarray]:
        return {
            "msp": 1.0 - self.probs.max(axis=1),
            "alpha_entropy": alpha_entropy(self.weights),
            "alpha_divergence": alpha_divergence(self.weights, self.preds, ref),
        }


def _read(head: Any, hs: Sequence[Any], labels: np.ndarray) -> Read:
    from scipy.special import softmax

    logits, w = head_outputs(head, hs)
    assert w is not None
    probs = softmax(logits, axis=1)
    return Read(probs, probs.argmax(axis=1), labels, w)


def diagnose_heads(
    head_dirs: Sequence[str | Path],
    store: FeatureStore,
    config: DiagnoseConfig,
    *,
    out_dir: str | Path,
    against: FeatureStore | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> Result:
    """Error detection for every head (and the shift to ``against``); writes ``out_dir`` whole."""
    from .outputs import write_diagnose

    head_dirs = weighted_head_dirs(list(head_dirs))  # a fit-head output: its laya/seed_<S>/
    store = store_for_heads(store, head_dirs)  # prune's head of the layers it keeps reads only those
    if against is not None and store is not store.whole and set(store.layer_names) <= set(against.layer_names):
        against = against.keep_layers(store.layer_names)
    if against is not None and (store.layer_names != against.layer_names or store.widths != against.widths):
        raise CacheError(
            f"--against {against.path} holds layers {against.layer_names} of widths {against.widths}, but "
            f"{store.path} holds {store.layer_names} of widths {store.widths}; the shift needs a cache of the same "
            "layers (extract them from the same model)"
        )

    def run(tmp: Path) -> tuple[dict[str, Any], list[Path]]:
        summary = _diagnose(head_dirs, store, config, against, progress or no_progress)
        return summary, write_diagnose(tmp, summary, plots=config.plots)

    # the head directories, not a fit-head output given: an --out beside them in it is allowed, as in compare
    inputs = [*head_dirs, store.path, against.path if against is not None else None]
    return write_whole(out_dir, run, command="diagnose", inputs=inputs, overwrite=overwrite)


def _diagnose(
    head_dirs: Sequence[str | Path],
    store: FeatureStore,
    config: DiagnoseConfig,
    against: FeatureStore | None,
    emit: Progress,
) -> dict[str, Any]:
    device = pick_device(config.device)
    refuse_repeats(head_dirs, "diagnose pools its heads as seeds")
    heads = [
        open_weighted_head(
            d, store, command="diagnose", allow_other_cache=config.allow_other_cache, test_split=config.test_split
        )
        for d in head_dirs
    ]
    kinds = sorted({head.kind for head, _ in heads})
    if len(kinds) > 1:
        raise InputError(
            f"diagnose pools its heads as seeds of one head, and these are of {len(kinds)} kinds ({', '.join(kinds)}); "
            "give the seeds of one head (laya/seed_0 laya/seed_1 …)"
        )
    train, test = load_split(store, config.train_split, device), load_split(store, config.test_split, device)
    other = load_split(against, config.test_split, device) if against is not None else None
    per_head, shifts = [], []
    for i, (d, (head, hconf)) in enumerate(zip(head_dirs, heads)):
        emit({"event": "head", "index": i, "total": len(heads), "head": str(d)})
        head.to(device)
        fit_rows, val_rows, rows_how = held_out_rows(hconf, train.labels)
        tr = _read(head, train.hs, train.labels)
        ref, missing = class_reference(tr.weights[fit_rows], tr.preds[fit_rows], tr.labels[fit_rows], store.num_classes)
        te = _read(head, test.hs, test.labels)
        held = Read(tr.probs[val_rows], tr.preds[val_rows], tr.labels[val_rows], tr.weights[val_rows])
        det = detection(
            held.scores(ref),
            held.preds != held.labels,
            te.scores(ref),
            te.preds != te.labels,
            n_boot=config.n_boot,
            seed=config.seed,
            settle=len(heads) == 1,  # several heads: the verdict is a t-interval over them, not these
        )
        chance = head_chance(head_label(str(d)), float((te.preds == te.labels).mean()), te.labels, te.preds)
        entry = {
            "head_dir": str(Path(d).resolve()),
            "chance": chance,
            "layers_read": len(store.layer_names),  # 1: α = 1 for every input, its scores constant by construction
            "held_out_errors": int((held.preds != held.labels).sum()),
            "kind": head.kind,
            "test_accuracy": float((te.preds == te.labels).mean()),
            "n_test": int(len(te.labels)),
            "n_errors": int((te.preds != te.labels).sum()),
            "reference_rows": f"correct training rows the head was fitted on ({len(fit_rows)} rows)",
            "classes_without_reference": missing,
            "fit_rows": rows_how,
            **det,
        }
        per_head.append(entry)
        if other is not None:
            ot = _read(head, other.hs, other.labels)
            shift = _shift(te, ot, ref, store.num_classes, config, _same_classes(store, against), len(heads) == 1)
            shifts.append(
                {**shift, "chance": chance, "layers_read": len(store.layer_names)}
            )  # the head's on this cache's test rows
    summary: dict[str, Any] = {
        **artifact_header(command="diagnose"),
        "device": str(device),  # what --device (auto by default) ran on
        "cache": cache_record(store),
        "against": None if against is None else {"path": str(against.path), "fingerprint": against.fingerprint},
        "class_names": class_names(store),
        "config": asdict(config),
        "config_defaults": defaulted(config),
        "scores": {**ERROR_SCORES},
        "heads": per_head,
        "warnings": trust_lines(store, list(zip(head_dirs, [c for _, c in heads])), test)
        + _few_errors(per_head)
        + _classes_differ(store, against)
        + _same_rows(store, against, config.test_split)
        + ([] if against is None else extracted_otherwise(store.path, store.attrs, against.path, against.attrs)),
    }
    summary["errors"] = _pool_errors(per_head, config.n_boot)
    summary["errors"]["min_rows_per_outcome"] = MIN_OUTCOME_ROWS
    summary["errors"]["not_read"] = errors_not_read(per_head)  # no verdict vs msp; the numbers stay
    summary["warnings"] += rows_warning(summary["errors"]["diff_vs_msp"])
    if shifts:
        p_values = [h["permutation"]["p_value"] for h in shifts]
        summary["shift"] = {
            "heads": shifts,
            "pooled": _pool_shift(shifts, config.n_boot),
            "profiles": profiles_verdict(p_values)
            if len(store.layer_names) > 1
            else "not applicable (one layer: α = 1 for every row of both caches)",
        }
        summary["warnings"] += rows_warning(summary["shift"]["pooled"]["detect_diff"], "shift-detection")
    summary["verdict"] = verdict_lines(summary)
    return summary


def _same_classes(store: FeatureStore, other: FeatureStore | None) -> bool:
    """The other cache's labels name this cache's classes, in the same order: only then does the
    head's accuracy on its rows mean anything (a cache of other labels is compared by α alone)."""
    return other is not None and other.class_names == store.class_names


def _classes_differ(store: FeatureStore, other: FeatureStore | None) -> list[str]:
    if other is None or _same_classes(store, other):
        return []
    return [
        f"{other.path} labels its rows with other classes than {store.path} ({few(other.class_names, 4)} against "
        f"{few(store.class_names, 4)}): the heads' accuracy on its rows is not computed; the shift is read from "
        "α and the scores alone"
    ]


def _shift(
    a: Read, b: Read, ref: np.ndarray, num_classes: int, config: DiagnoseConfig, same_classes: bool, settle: bool
) -> dict[str, Any]:
    """α profiles of this cache's test rows (a) and the other cache's (b), the permutation test, and
    AUROC of telling b's rows from a's by each score (positive = the other cache); the accuracy on b's
    rows only where its labels are this cache's classes."""
    test = permutation_test(a.weights, b.weights, a.preds, b.preds, num_classes, config.permutations, config.seed)
    sa, sb = a.scores(ref), b.scores(ref)
    y = np.concatenate([np.zeros(len(a.preds), bool), np.ones(len(b.preds), bool)])
    scores = {k: np.concatenate([sa[k], sb[k]]) for k in sa}
    # a family of its own (another question than the errors'): the α scores compared with msp
    read = versus_msp(y, scores, n_boot=config.n_boot, seed=config.seed, settle=settle, of=SHIFT_FAMILY)
    return {
        "n_this": int(len(a.preds)),
        "n_other": int(len(b.preds)),
        "accuracy_this": float((a.preds == a.labels).mean()),
        "accuracy_other": float((b.preds == b.labels).mean()) if same_classes else None,
        "mean_alpha_this": a.weights.mean(axis=0).tolist(),
        "mean_alpha_other": b.weights.mean(axis=0).tolist(),
        "permutation": test,
        "detect_auroc": read["auroc"],
        "detect_diff": read["diff_vs_msp"],
        "family": read["family"],
        "n_boot": read["n_boot"],
    }


def _over_rows(what: str, one: dict[str, Any], n_boot: int) -> str:
    """A single head's interval in words, with the resamples drawn where :func:`settled_aucs` drew more."""
    drawn = one.get("n_boot", n_boot)
    if not isinstance(drawn, int) or drawn <= n_boot:
        return what
    return (
        f"{what}, {drawn:,} resamples (--bootstrap {n_boot:,}: more, as a bound lay within resampling error of ½ or 0)"
    )


def _pool_errors(per_head: list[dict[str, Any]], n_boot: int) -> dict[str, Any]:
    """One entry per score: the single head's bootstrap interval, or a t-interval over heads."""
    names = list(per_head[0]["auroc"])
    one = len(per_head) == 1
    out: dict[str, Any] = {
        "interval": _over_rows("bootstrap over test rows", per_head[0], n_boot) if one else "t over heads"
    }
    for metric in ("auroc", "aupr"):
        out[metric] = {
            n: per_head[0][metric][n] if len(per_head) == 1 else rate([h[metric][n]["mean"] for h in per_head])
            for n in names
            if all(h[metric].get(n, {}).get("mean") is not None for h in per_head)
        }
    if not one:
        n_rows = min(h.get("n_test", 0) for h in per_head)
        out["auroc"] = chance_over_heads(out["auroc"], [h["auroc"] for h in per_head], n_rows)
    out["diff_vs_msp"] = {}
    if one:
        out["diff_vs_msp"] = per_head[0]["diff_vs_msp"]
        out["family"] = per_head[0].get("family") or family(len(out["diff_vs_msp"]), ERRORS_FAMILY)
        return out
    keys = [
        key
        for key in per_head[0]["diff_vs_msp"]
        if all(h["diff_vs_msp"].get(key, {}).get("mean") is not None for h in per_head)
    ]
    out["family"] = family(len(keys), ERRORS_FAMILY)
    out["rows_rule"] = HEADS_ROWS_RULE
    for key in keys:
        a, b = key.split(" − ")
        d = auroc_diff(
            [h["auroc"][a]["mean"] for h in per_head],
            [h["auroc"][b]["mean"] for h in per_head],
            out["family"]["confidence"],
        )
        rows = heads_rows(d, [h["diff_vs_msp"].get(key) for h in per_head], min(h.get("n_test", 0) for h in per_head))
        out["diff_vs_msp"][key] = {**d, "test_rows": rows} if rows else d
    return out


# The rule the interval over heads is read by beside the test rows' own sampling (docs/METHOD.md, "diagnose")
HEADS_ROWS_RULE = (
    "the heads are scored on the same test rows, so a t-interval over them leaves out which rows were drawn: "
    "over 2 heads that happen to agree it can be a hundredth wide. Each difference from msp is also read beside "
    "the heads' own paired bootstrap intervals over those rows (their mean half-width about the mean over "
    "heads); where that is far wider than the interval over heads (fit-head's test-sampling rule) and holds 0, "
    'a "better" or "worse" is withheld; where it is far wider and does not hold 0, the verdict says so'
)


def heads_rows(d: dict[str, Any], own: Sequence[dict[str, Any] | None], n_rows: int) -> dict[str, Any] | None:
    """The test rows' own sampling beside ``d``, a difference's t-interval over several heads: ``own``
    holds each head's paired bootstrap interval over its ``n_rows`` test rows. ``dominates`` (fit-head's
    rule, at MIN_ROWS rows or more) and ``withheld`` (it dominates, holds 0, the heads read "better" or
    "worse"). None for fewer than 2 heads with an interval, or no interval over heads."""
    read = [h for h in own if h and h.get("ci_low") is not None and h.get("ci_high") is not None]
    lo, hi, mean = d.get("ci_low"), d.get("ci_high"), d.get("mean")
    if len(read) < 2 or len(read) < len(own) or lo is None or hi is None or mean is None:
        return None
    half = float(np.mean([(h["ci_high"] - h["ci_low"]) / 2 for h in read]))
    rows = {"heads": len(read), "rows": n_rows, "half_width": half, "ci_low": mean - half, "ci_high": mean + half}
    rule = rows_rule(d, rows)
    return {**rows, "dominates": rule["dominates"], "withheld": rule["withheld"]}


def rows_warning(diffs: dict[str, Any], what: str = "error-detection") -> list[str]:
    """One warning naming the ``what`` differences from msp whose verdict the test rows' sampling
    withheld, or []."""
    withheld = [k for k, d in diffs.items() if (d.get("test_rows") or {}).get("withheld")]
    if not withheld:
        return []
    rows = diffs[withheld[0]]["test_rows"]
    return [
        f"test sampling: {len(withheld)} of the {what} differences from msp ({', '.join(withheld)}) have "
        f"intervals over {rows['heads']} heads far narrower than each head's own interval over the {rows['rows']} "
        'shared test rows, which holds 0: their "better"/"worse" is withheld; add test rows or heads to read them'
    ]


def rows_said(d: dict[str, Any], what: str, baseline: str) -> str | None:
    """What :func:`heads_rows` adds to a verdict line: its whole line where it withholds the verdict, a
    clause after it where the rows' interval dominates but lies on one side of 0, else None."""
    rows = d.get("test_rows") or {}
    # "no detectable difference" has no size to read to within the rows' width: the clause said "(it still
    # excludes 0)" of an interval [+0.0000, +0.0000] over heads (diagnose --against the same cache)
    if not rows.get("dominates") or (not rows["withheld"] and outcome(d) not in ("better", "worse")):
        return None
    f = spec(d)
    narrower = (
        f"is far narrower than each head's own interval over the {rows['rows']} shared test rows "
        f"(±{rows['half_width']:.4f} on average, paired bootstrap at the same level)"
    )
    if rows["withheld"]:
        return (
            f"no verdict on {what} against {baseline}: {d['mean']:{f}}; the {level(d)} CI over {rows['heads']} heads "
            f"[{d['ci_low']:{f}}, {d['ci_high']:{f}}] {narrower}, which holds 0: a difference of which rows were "
            "drawn as much as of the scores; read it as undecided, or add test rows"
        )
    # after the verdict, which gave the interval over heads already, and its AUROC
    return (
        f"; that interval over {rows['heads']} heads {narrower}: read the difference to within that (it still "
        "excludes 0)"
    )


def _pool_shift(shifts: list[dict[str, Any]], n_boot: int) -> dict[str, Any]:
    if len(shifts) == 1:
        return {
            "interval": _over_rows("bootstrap over rows", shifts[0], n_boot),
            "detect_auroc": shifts[0]["detect_auroc"],
            "detect_diff": shifts[0]["detect_diff"],
            "family": shifts[0].get("family") or family(len(SHIFT_SCORES), SHIFT_FAMILY),
        }

    def defined(k: str) -> bool:
        return all(s["detect_auroc"].get(k, {}).get("mean") is not None for s in shifts)

    # as with one head (scoring.versus_msp): a score whose AUROC is undefined on some head draws no
    # verdict, so it is not in the family; counting it widened the others' intervals for nothing
    readable = [k for k in SHIFT_SCORES if defined(k) and defined("msp")]
    fam = family(len(readable), SHIFT_FAMILY)
    auroc = {k: rate([s["detect_auroc"][k]["mean"] for s in shifts]) for k in shifts[0]["detect_auroc"] if defined(k)}
    diff = {}
    for k in readable:
        d = auroc_diff(
            [s["detect_auroc"][k]["mean"] for s in shifts],
            [s["detect_auroc"]["msp"]["mean"] for s in shifts],
            fam["confidence"],
        )
        n_rows = min(s.get("n_this", 0) + s.get("n_other", 0) for s in shifts)
        rows = heads_rows(d, [(s.get("detect_diff") or {}).get(f"{k} − msp") for s in shifts], n_rows)
        diff[f"{k} − msp"] = {**d, "test_rows": rows} if rows else d
    return {
        "interval": "t over heads",
        "detect_auroc": chance_over_heads(
            auroc,
            [s["detect_auroc"] for s in shifts],
            min(s.get("n_this", 0) + s.get("n_other", 0) for s in shifts),
        ),
        "detect_diff": diff,
        "family": fam,
        "rows_rule": HEADS_ROWS_RULE,
    }


def auroc_diff(a: Sequence[float], b: Sequence[float], confidence: float) -> dict[str, Any]:
    """The paired t-interval of AUROC a − AUROC b over heads, inside [−1, 1] where it reaches past."""
    return paired(a, b, confidence)


def rate(values: Sequence[float]) -> dict[str, Any]:
    """An AUROC's or AUPR's mean over heads with its 95% t-interval, inside [0, 1] where it reaches past
    (over 2 heads the half-width is t(0.975, 1) ≈ 12.7 standard errors: it reached 1.47)."""
    return bounded(estimate(values), 0.0, 1.0)


def chance_over_heads(
    auroc: dict[str, dict[str, Any]], own: Sequence[dict[str, Any]], n_rows: int
) -> dict[str, dict[str, Any]]:
    """Several heads' AUROC estimates (t over heads) read against chance at the family's level over the
    scores, either way, as one head's are (:func:`.scoring.with_chance`), and beside the test rows' own
    sampling: ``own`` holds each head's AUROC records with its bootstrap interval over its ``n_rows``
    shared test rows. Where those, about the mean, hold ½, "above chance" or "below chance" is withheld
    (``chance_withheld``): the heads are scored on one draw of rows, so two or three heads that agree on
    0.55 give a t-interval over ½ that the rows do not (a null audit, other images of the same classes:
    msp 0.552 [0.527, 0.577] over 3 heads, each head's own interval over its 320 rows holding ½)."""
    from ..training.stats import t_interval

    level = family(len(auroc), CHANCE_FAMILY)["confidence"]
    out = {}
    for k, e in auroc.items():
        low, high = t_interval(e["values"], level) if e.get("n", 0) > 1 else (None, None)
        # inside [0, 1], as the 95% interval is shown (rate): the side of ½ is the same
        read = with_chance(e, None if low is None else max(low, 0.0), None if high is None else min(high, 1.0), level)
        rows = _chance_rows(read, [h.get(k) for h in own], n_rows)
        if (read.get("above_chance") or read.get("below_chance")) and rows is not None:
            read = {**read, "above_chance": False, "below_chance": False, "chance_withheld": rows}
        out[k] = read
    return out


def _chance_rows(e: dict[str, Any], own: Sequence[dict[str, Any] | None], n_rows: int) -> dict[str, Any] | None:
    """The heads' own interval over the rows at the family's level (their mean half-width about ``e``'s
    mean) where it holds ½; None otherwise. Not only where it is far wider than the interval over heads,
    as a difference's rule reads it: a claim against ½ made of these rows needs their own sampling to
    exclude ½, however many heads agree on them."""
    got = [h for h in own if h and h.get("ci_low") is not None and h.get("ci_high") is not None]
    m = e.get("mean")
    if len(got) < 2 or len(got) < len(own) or m is None:
        return None

    def half(h: dict[str, Any]) -> float:  # at the family's level where the head records it (not before)
        lo, hi = h.get("chance_ci_low"), h.get("chance_ci_high")
        return (hi - lo) / 2 if lo is not None and hi is not None else (h["ci_high"] - h["ci_low"]) / 2

    width = float(np.mean([half(h) for h in got]))
    if not m - width <= 0.5 <= m + width:
        return None
    return {"heads": len(got), "rows": n_rows, "half_width": width, "ci_low": m - width, "ci_high": m + width}


SHIFT_SCORES = ("alpha_divergence", "alpha_entropy")  # what shift detection reads against msp
SHIFT_FAMILY = "α scores compared with msp"


# Held-out errors below which the scores' directions and the combinations are read as noisy.
FEW_ERRORS = 10


def _few_errors(per_head: list[dict[str, Any]]) -> list[str]:
    few = [h for h in per_head if h["held_out_errors"] < FEW_ERRORS]
    if not few:
        return []
    counts = ", ".join(str(h["held_out_errors"]) for h in few)
    return [
        f"the held-out rows hold {counts} error(s) ({len(few)} of {len(per_head)} head(s), fewer than {FEW_ERRORS}): "
        "the scores' directions and their combinations are learned from them, so the AUROCs rest on a handful "
        "of rows"
    ]


def _auroc_text(auroc: dict[str, Any], names: Sequence[str]) -> str:
    return ", ".join(f"{n} {auroc[n]['mean']:.3f}" for n in names if n in auroc and auroc[n].get("mean") is not None)


def _against(d: dict[str, Any], one: str | None, *, what: str, baseline: str) -> str:
    """A difference from msp as a verdict, or with ``one`` (:func:`.scoring.one_seed_said`) as one
    seed's numbers, which draw none."""
    if not one or d.get("mean") is None or d.get("ci_low") is None:
        return verdict(d, what=what, baseline=baseline, over="heads")
    f = spec(d)
    span = f"{d['mean']:{f}}, {level(d)} CI [{d['ci_low']:{f}}, {d['ci_high']:{f}}]"
    return f"no verdict: one seed: {what} − {baseline} = {span}"


def _same_rows(store: FeatureStore, against: FeatureStore | None, split: str) -> list[str]:
    """The warning for --against a cache of the same extraction and the same rows of ``split`` (the cache
    itself, a copy, or the same data extracted again): every shift AUROC is then 0.5 by construction."""
    if against is None or store.fingerprint != against.fingerprint or split not in against.splits:
        return []
    if not np.array_equal(store.index(split), against.index(split)):
        return []
    return [
        f"--against {against.path} holds the same {split!r} rows as {store.path}, from the same extraction "
        f"(fingerprint {store.fingerprint}): the two sides of the shift are one sample, so every shift AUROC is "
        "0.5 by construction and says nothing of a shift; give a cache extracted from other data"
    ]


def verdict_lines(s: dict[str, Any]) -> list[str]:
    """Diagnose's verdict lines, read from its summary's fields alone: the run stores them, `report DIR`
    rebuilds them by this same rule (on a summary holding every field of VERDICT_FIELDS)."""
    lines = []
    errors = s["errors"]
    undefined = [h["undefined"] for h in s["heads"] if h.get("undefined")]
    few = None if undefined else errors_not_read(s["heads"])
    if undefined:
        lines.append(f"error detection undefined: {undefined[0]}")
    lines += [few] if few else []
    one = one_seed_said(s)
    lines += [one] if one else []
    for key, d in errors_read(s).items():
        a, b = key.split(" − ")
        alone = each_head_alone(d, [(h.get("diff_vs_msp") or {}).get(key) for h in s["heads"]])
        said = ("" if one else rows_said(d, f"error detection by {a}", b)) or ""
        within = ""  # the rows' clause reads the verdict's interval: after it and its AUROC, not before
        if not said.startswith("no verdict"):  # withheld: the rows' line replaces the verdict
            said, within = _against(d, one, what=f"error detection by {a}", baseline=b), said
        lines.append(
            said
            + f" (AUROC {_auroc_text(errors['auroc'], [a, b])}; 0.5 is chance)"
            + within
            + (alone_text(a, b, alone, len(s["heads"])) if alone else "")
            + versus_chance(errors["auroc"], [a, b], "errors and correct predictions", [h["auroc"] for h in s["heads"]])
        )
    if "shift" in s:
        pooled = s["shift"]["pooled"]
        not_read = shift_not_read(s["shift"])
        lines += [not_read] if not_read else []
        for key, d in pooled["detect_diff"].items() if not not_read else ():
            a, b = key.split(" − ")
            line = ("" if one else rows_said(d, f"shift detection by {a}", b)) or ""
            within = ""  # as for errors: the rows' clause after the verdict and its AUROC
            if not line.startswith("no verdict"):  # withheld: the rows' line replaces the verdict
                line, within = _against(d, one, what=f"shift detection by {a}", baseline=b), line
            line += f" (AUROC {_auroc_text(pooled['detect_auroc'], [a, b])}; 0.5 is chance){within}"
            alone = each_head_alone(d, [(h.get("detect_diff") or {}).get(key) for h in s["shift"]["heads"]])
            line += alone_text(a, b, alone, len(s["shift"]["heads"])) if alone else ""
            heads = [h["detect_auroc"] for h in s["shift"]["heads"]]
            lines.append(line + versus_chance(pooled["detect_auroc"], [a, b], "the caches", heads))
        p = [h["permutation"]["p_value"] for h in s["shift"]["heads"]]
        shown = ", ".join(f"{v:.4g}" for v in p)
        lines.append(f"α profiles of the two caches: {s['shift']['profiles']} (permutation p = {shown})")
        classes = shifted_classes(s)
        lines += [classes] if classes else []
    return lines


def profiles_verdict(p: Sequence[float], level: float = 0.05) -> str:
    """The permutation tests' answer in words, over every head. "Differ" for every head needs each p
    below ``level``; "differ for some heads" is a claim about any one of m heads, so a head counts
    only below level/m (Bonferroni): at ``level`` each, 3 independent heads with nothing shifted read
    "differ for some heads only" in 16.7% of simulated runs, 4.7% at level/m (bench/shift_null.py).
    One head's permutation runs over its rows: a verdict on that fitted head, not on the method, said so."""
    if len(p) == 1:
        word = "differ (p < " if p[0] < level else "no detectable difference (p ≥ "
        return f"{word}{level:g} for this fitted head: one seed, a verdict on this head, not on the method)"
    if all(v < level for v in p):
        return f"differ (p < {level:g} for every head)"
    cut, m = level / len(p), len(p)
    some = sum(v < cut for v in p)
    over = "" if m == 1 else f", {level:g} over the {m} heads, Bonferroni"
    if not some:
        return f"no detectable difference (p ≥ {cut:.3g} for every head{over})"
    return f"differ for some heads only (p < {cut:.3g} for {some} of {m}{over})"
