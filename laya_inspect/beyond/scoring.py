"""Detection scores and tests for `diagnose`, pure functions of arrays (docs/METHOD.md, "Diagnose"):
AUROC (rank formula, equal to sklearn's roc_auc_score) with a paired bootstrap over rows, AUPR
(sklearn's average_precision_score), the logistic-regression combinations, and the permutation test
of two α profiles. Every score is oriented so that larger means "positive" (an error, a shifted row)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..choices import MIN_ROWS
from ..compare.metrics import finite
from ..training.stats import TINY, bounded, cut_note, family, holm, level, outcome

ERROR_SCORES = {
    "msp": "1 − max softmax probability (no α): the baseline",
    "alpha_entropy": "entropy of α(x)",
    "alpha_divergence": "KL(α(x) ‖ mean α of correct training rows of the predicted class)",
    "alpha": "logistic regression on the two α scores (fitted on the head's held-out rows)",
    "msp+alpha": "logistic regression on 1 − max softmax probability and the two α scores (held-out rows)",
}
MIN_PER_CLASS = 2  # rows of each outcome a fit needs


def auroc(y: np.ndarray, s: np.ndarray) -> float:
    """Area under the ROC curve of score ``s`` for positives ``y`` (ties count ½); NaN with one class."""
    return float(_aurocs(np.asarray(y, bool)[None], np.asarray(s)[None])[0])


def _aurocs(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """:func:`auroc` of every row of (k, n) arrays at once, by the rank formula (ranks are halves, so
    their sums are exact in any order: a row gives the same number alone or among others); NaN for a
    row with one class."""
    from scipy.stats import rankdata

    n_pos = y.sum(axis=1)
    n_neg = y.shape[1] - n_pos
    pos_ranks = np.where(y, rankdata(s, axis=1), 0.0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (pos_ranks - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return np.where((n_pos > 0) & (n_neg > 0), out, np.nan)


def aupr(y: np.ndarray, s: np.ndarray) -> float:
    from sklearn.metrics import average_precision_score

    y = np.asarray(y, bool)
    if y.all() or not y.any():
        return float("nan")
    return float(average_precision_score(y, s))


def bootstrap_auc(y: np.ndarray, s: np.ndarray, *, n_boot: int, seed: int) -> dict[str, Any]:
    """AUROC with a percentile 95% interval over ``n_boot`` row resamples (``default_rng([seed, 7])``;
    resamples with one class are skipped); ``values`` holds the resampled AUROCs, for paired differences."""
    point = auroc(y, s)
    rng = np.random.default_rng([seed, 7])
    # the resamples' rows drawn a block at a time (the same draws as all at once), so that memory does
    # not grow as n_boot × N: 100,000 resamples of 10,000 rows would be 8 GB of indices
    step = max(1, 2_000_000 // max(1, len(y)))
    values: list[float] = []
    for start in range(0, n_boot, step):
        rows = rng.integers(0, len(y), size=(min(step, n_boot - start), len(y)))
        values += _aurocs(np.asarray(y, bool)[rows], np.asarray(s)[rows]).tolist()
    values = [v for v in values if np.isfinite(v)]
    lo, hi = np.percentile(values, [2.5, 97.5]) if values else (np.nan, np.nan)
    return {"auroc": point, "ci_low": float(lo), "ci_high": float(hi), "values": values}


AUC_MAX_DRAWS = 100_000_000  # resampled rows at most when more resamples are drawn (an AUROC costs a sort)


def settled_aucs(
    y: np.ndarray,
    scores: dict[str, np.ndarray],
    *,
    n_boot: int,
    seed: int,
    base: str = "msp",
    settle: bool = True,
    confidence: float = 0.95,
    chance_confidence: float = 0.95,
) -> tuple[dict[str, dict[str, Any]], int]:
    """:func:`bootstrap_auc` of every score on the same resampled rows, and the resamples drawn: ten
    times ``n_boot`` (again, up to MAX_RESAMPLES and AUC_MAX_DRAWS resampled rows) while a bound that
    decides a verdict lies within resampling error of it (compare.paired.unsettled): a score's
    interval against chance (½), or its paired difference from ``base``'s against 0. Otherwise the
    verdict would follow the Monte-Carlo draw: one side of ½ at 1,000 resamples, the other at 2,000.
    The bounds against ½ are the 95% ones and those at ``chance_confidence`` (the level "below chance"
    is read at, :func:`with_chance`); those of the differences are at ``confidence``, the level
    :func:`diffs_vs` draws them at (a family's). ``settle`` False: ``n_boot`` only (several heads,
    whose verdict is a t-interval over heads)."""
    from ..compare.paired import unsettled
    from ..options import MAX_RESAMPLES

    drawn = n_boot
    while True:
        aucs = {k: bootstrap_auc(y, v, n_boot=drawn, seed=seed) for k, v in scores.items()}
        if not settle:
            return aucs, drawn
        near = [np.asarray(a["values"]) - 0.5 for a in aucs.values()] * 2
        ref = np.asarray(aucs[base]["values"]) if base in aucs else None
        if ref is not None:
            near += [
                np.asarray(a["values"]) - ref for k, a in aucs.items() if k != base and len(a["values"]) == len(ref)
            ]
        chance_tail = (1 - chance_confidence) / 2 * 100
        tails = [2.5] * len(aucs) + [chance_tail] * len(aucs)
        tails += [(1 - confidence) / 2 * 100] * (len(near) - len(tails))
        more = drawn * 10
        if more > MAX_RESAMPLES or more * len(y) > AUC_MAX_DRAWS or not any(map(unsettled, near, tails)):
            return aucs, drawn
        drawn = more


def shown(a: dict[str, Any]) -> dict[str, float | None]:
    """A :func:`bootstrap_auc` result as the summary holds it: point and interval, None where undefined."""
    return {"mean": finite(a["auroc"]), "ci_low": finite(a["ci_low"]), "ci_high": finite(a["ci_high"])}


def _orient(held: dict[str, np.ndarray], held_y: np.ndarray) -> dict[str, int]:
    """+1, or −1 for a score whose held-out AUROC is below ½ (its direction reversed). msp too: "α beats
    msp" must not be won by α's learnt direction against msp's assumed one (a head at chance: msp's
    AUROC 0.41 beside α entropy's learnt 0.56)."""
    out = {}
    for k, v in held.items():
        a = auroc(held_y, v)
        out[k] = -1 if np.isfinite(a) and a < 0.5 else 1
    return out


def _logistic(x_fit: np.ndarray, y_fit: np.ndarray, x_test: np.ndarray) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(x_fit, y_fit)
    return model.predict_proba(x_test)[:, 1]


def detection(
    held: dict[str, np.ndarray],
    held_y: np.ndarray,
    test: dict[str, np.ndarray],
    test_y: np.ndarray,
    *,
    n_boot: int,
    seed: int,
    settle: bool = True,
) -> dict[str, Any]:
    """AUROC (bootstrap interval) and AUPR of every score on the test rows, α directions and the
    combinations fitted on the held-out rows, and each score's paired AUROC difference from msp
    (``settle``: more resamples where a bound lies within resampling error, :func:`settled_aucs`)."""
    signs = _orient(held, held_y)
    scores = {k: signs[k] * v for k, v in test.items()}
    fit_ok = min(int(held_y.sum()), int((~held_y).sum())) >= MIN_PER_CLASS
    combined_note = None
    if fit_ok:
        alpha_cols = ["alpha_entropy", "alpha_divergence"]
        for name, cols in (("alpha", alpha_cols), ("msp+alpha", ["msp", *alpha_cols])):
            x_fit = np.stack([held[c] for c in cols], axis=1)
            x_test = np.stack([test[c] for c in cols], axis=1)
            scores[name] = _logistic(x_fit, held_y, x_test)
    else:
        combined_note = (
            f"the held-out rows hold {int(held_y.sum())} errors and {int((~held_y).sum())} correct rows: "
            f"too few (< {MIN_PER_CLASS}) to fit the combinations"
        )
    defined = 0 < int(test_y.sum()) < len(test_y)
    return {
        "directions": {k: "as is" if s > 0 else "negated (reversed on the held-out rows)" for k, s in signs.items()},
        "combined_note": combined_note,
        "undefined": None if defined else "the test rows hold no errors (or only errors): AUROC and AUPR undefined",
        **versus_msp(test_y, scores, n_boot=n_boot, seed=seed, settle=settle, of=ERRORS_FAMILY),
        "aupr": {k: {"mean": finite(aupr(test_y, v))} for k, v in scores.items()},
        "aupr_baseline": float(np.mean(test_y)),
    }


ERRORS_FAMILY = "scores compared with msp"  # the family of error detection's differences from msp


def versus_msp(
    y: np.ndarray, scores: dict[str, np.ndarray], *, n_boot: int, seed: int, settle: bool, of: str
) -> dict[str, Any]:
    """Every score's AUROC and its paired difference from msp's, the verdicts' family: every score read
    against msp is one family (any "beats msp" among them is the same claim, that α adds to the
    baseline), so each difference is drawn at 1 − 0.05/(scores compared), :func:`.stats.family`. A
    difference that is undefined (either AUROC NaN: a non-finite score, or one class only) draws no
    verdict, so it is not counted: counting it widened the others' intervals for nothing."""
    base = auroc(y, scores["msp"]) if "msp" in scores else float("nan")
    readable = [k for k, v in scores.items() if k != "msp" and np.isfinite(auroc(y, v) - base)]
    fam = family(len(readable), of)
    chance = family(sum(np.isfinite(auroc(y, v)) for v in scores.values()), CHANCE_FAMILY)["confidence"]
    aucs, drawn = settled_aucs(
        y, scores, n_boot=n_boot, seed=seed, settle=settle, confidence=fam["confidence"], chance_confidence=chance
    )
    tail = (1 - chance) / 2 * 100

    def at_chance_level(a: dict[str, Any]) -> tuple[float | None, float | None]:
        if not a["values"]:
            return None, None
        lo, hi = np.percentile(a["values"], [tail, 100 - tail])
        return float(lo), float(hi)

    return {
        "n_boot": drawn,
        "family": fam,
        "auroc": {k: with_chance(shown(a), *at_chance_level(a), chance) for k, a in aucs.items()},
        "diff_vs_msp": diffs_vs(aucs, "msp", fam["confidence"]),
    }


# Every score's AUROC read against chance (½) at once: one "below chance" or "above chance" among them is
# read as a finding, so either claim is drawn at 1 − 0.05/m over the m scores with an AUROC (at 95% each,
# one of five noise scores was said to be below chance in 11.7% of 400 null runs; tests/test_family_null.py).
CHANCE_FAMILY = "scores read against chance"


def with_chance(record: dict[str, Any], low: float | None, high: float | None, confidence: float) -> dict[str, Any]:
    """An AUROC record (``mean``, 95% ``ci_low``, ``ci_high``) with its interval at ``confidence``, the
    family's level (``chance_confidence``, ``chance_ci_low``, ``chance_ci_high``), and what that interval
    shows: ``above_chance`` (it lies over ½), ``below_chance`` (under ½). The 95% interval stays what
    describes the score. An undefined AUROC (``mean`` None) is left as it is: nothing to read."""
    if record.get("mean") is None:
        return record

    def finite_or_none(v: float | None) -> float | None:
        return float(v) if v is not None and bool(np.isfinite(v)) else None

    lo, hi = finite_or_none(low), finite_or_none(high)
    return {
        **record,
        "above_chance": lo is not None and lo > 0.5,
        "below_chance": hi is not None and hi < 0.5,
        "chance_confidence": confidence,
        "chance_ci_low": lo,
        "chance_ci_high": hi,
    }


def diffs_vs(aucs: dict[str, dict[str, Any]], base: str, confidence: float = 0.95) -> dict[str, dict[str, Any]]:
    """Each score's AUROC minus ``base``'s, with the percentile interval at ``confidence`` of the paired
    bootstrap differences (the same resampled rows for every score; none when resamples were skipped)."""
    ref = np.asarray(aucs[base]["values"])
    tail = (1 - confidence) / 2 * 100
    out = {}
    for k, a in aucs.items():
        if k == base:
            continue
        v = np.asarray(a["values"])
        ok = len(v) == len(ref) and len(v) > 0
        lo, hi = np.percentile(v - ref, [tail, 100 - tail]) if ok else (None, None)
        point = a["auroc"] - aucs[base]["auroc"]
        out[f"{k} − {base}"] = {
            "mean": point if np.isfinite(point) else None,
            "ci_low": None if lo is None else float(lo),
            "ci_high": None if hi is None else float(hi),
            "confidence": confidence,
        }
    return out


def _perm_p(
    observed: np.ndarray, wa: np.ndarray, wb: np.ndarray, n_perm: int, rng: np.random.Generator
) -> dict[str, Any]:
    """Permutation test of mean(wa) − mean(wb): the L1 statistic's p, each layer's raw p and its
    family-wise p (max-|diff| over layers, single step); p = (1 + #{perm ≥ observed}) / (1 + P)."""
    pooled = np.concatenate([wa, wb])
    n_a, n = len(wa), len(wa) + len(wb)
    total = pooled.sum(axis=0)
    stat, per_layer, max_layer = np.zeros(n_perm), np.zeros((n_perm, pooled.shape[1])), np.zeros(n_perm)
    for i in range(n_perm):
        take = rng.permutation(n)[:n_a]
        s_a = pooled[take].sum(axis=0)
        d = s_a / n_a - (total - s_a) / (n - n_a)
        stat[i], per_layer[i], max_layer[i] = np.abs(d).sum(), np.abs(d), np.abs(d).max()
    obs = np.abs(observed)
    eps = 1e-12  # equal up to rounding counts as reaching the observed value
    return {
        "observed_l1": float(obs.sum()),
        "p_value": float((1 + (stat >= obs.sum() - eps).sum()) / (1 + n_perm)),
        "p_raw": [float((1 + (per_layer[:, j] >= obs[j] - eps).sum()) / (1 + n_perm)) for j in range(len(obs))],
        "p_fwer": [float((1 + (max_layer >= obs[j] - eps).sum()) / (1 + n_perm)) for j in range(len(obs))],
    }


def permutation_test(
    wa: np.ndarray, wb: np.ndarray, pa: np.ndarray, pb: np.ndarray, num_classes: int, n_perm: int, seed: int
) -> dict[str, Any]:
    """Do the α profiles (N, L) of two sets of rows differ? Overall and per predicted class;
    ``default_rng([seed, 8])``."""
    rng = np.random.default_rng([seed, 8])
    diff = wa.mean(axis=0) - wb.mean(axis=0)
    out: dict[str, Any] = {
        "statistic": "L1 distance between the mean α profiles; rows of both caches permuted",
        "diff": diff.tolist(),
        **_perm_p(diff, wa, wb, n_perm, rng),
        "per_class": [],
    }
    for c in range(num_classes):
        a, b = wa[pa == c], wb[pb == c]
        entry: dict[str, Any] = {"class": c, "n_this": int(len(a)), "n_other": int(len(b))}
        if len(a) >= MIN_PER_CLASS and len(b) >= MIN_PER_CLASS:
            d = a.mean(axis=0) - b.mean(axis=0)
            r = _perm_p(d, a, b, n_perm, rng)
            entry.update(
                mean_this=a.mean(axis=0).tolist(),
                mean_other=b.mean(axis=0).tolist(),
                observed_l1=r["observed_l1"],
                p_value=r["p_value"],
            )
        out["per_class"].append(entry)
    # a reader scans the classes for one that shifted: Holm over the classes tested (this head, these caches)
    tested = [e for e in out["per_class"] if "p_value" in e]
    for e, adjusted in zip(tested, holm([e["p_value"] for e in tested])):
        e["p_holm"] = adjusted
    out["class_family"] = f"Holm over the {len(tested)} predicted classes tested for this head and these two caches"
    return out


# Test rows of each outcome (errors, correct rows) below which diagnose reads no verdict of a score
# against msp, as shift_not_read reads none below MIN_ROWS rows of a cache. A null simulation (every
# score the same distribution, so any verdict is wrong; 300 test rows, --bootstrap 1000, the family of
# 4 differences at 1 − 0.05/4; docs/METHOD.md, "Too few errors") gave a wrong verdict in 99% of runs at
# 1 error, 78–82% at 2, 22–28% at 5, 10–17% at 10 and 6–7% at 20: the percentile bootstrap over rows
# with a handful of errors is no interval at its level (one error: each resample holds it 0, 1, 2… times).
MIN_OUTCOME_ROWS = MIN_ROWS
WRONG_AT = "99% of runs at 1 error, 22–28% at 5, 10–17% at 10, 6–7% at 20"


def head_chance(name: str, accuracy: float, labels: np.ndarray, preds: np.ndarray) -> dict[str, Any]:
    """Whether a head is near chance on the test rows, by fit-head's rule (training.quality's
    is_near_chance, chance the majority class's share): {chance, near_chance, caveat}. A head that
    learnt next to nothing makes errors of nearly every row, and "α beats msp" beside it reads as a
    detector to trust, so its verdicts are withheld as compare withholds its (the numbers stay);
    where its accuracy cannot tell, its macro-F1 is named (training.quality.not_learned)."""
    from ..training.quality import chance_level, macro_f1_decides, majority_macro_f1, near_chance, not_learned
    from ..training.stats import macro_f1

    n = len(labels)
    chance = chance_level(labels) if n else float("nan")
    said = near_chance(accuracy, chance, "", n=n) if np.isfinite(chance) else None
    caveat = None
    if said:
        f1, majority = macro_f1(labels, preds), majority_macro_f1(labels)
        learnt = (
            not_learned("the head", accuracy, chance, f1=f1, majority_f1=majority, f1_of="its macro-F1 on these rows")
            if macro_f1_decides(accuracy, chance, f1, majority)
            else "the head learnt next to nothing, so its scores say little about the rows"
        )
        caveat = f"{name}: accuracy {accuracy:.3f} on the test rows vs chance {chance:.3f} (majority class): {learnt}"
    return {"chance": chance if np.isfinite(chance) else None, "near_chance": said is not None, "caveat": caveat}


def near_chance_not_read(heads: Sequence[dict[str, Any]], what: str) -> str | None:
    """Why ``what`` is not read against msp where a head is near chance (:func:`head_chance`), or None
    (a summary written before the check: no ``chance`` field)."""
    near = [h for h in heads if (h.get("chance") or {}).get("near_chance")]
    if not near:
        return None
    said = "; ".join(str(h["chance"]["caveat"]) for h in near)
    of = "" if len(heads) == 1 else f" ({len(near)} of {len(heads)} heads)"
    return (
        f"{what} not read against msp: near chance{of}: {said}; so none is said to beat msp or not (fit-head's "
        "rule, as compare withholds its verdicts); the numbers are kept in summary.json"
    )


def not_read_word(why: str) -> str:
    """The verdict cell of a difference from msp left unread for ``why`` (:func:`errors_not_read`,
    :func:`shift_not_read`): "not applicable", "near chance" or "too few rows"."""
    if " not applicable:" in why:
        return "not applicable"
    return "near chance" if ": near chance" in why else "too few rows"


def one_layer_not_read(heads: Sequence[dict[str, Any]], what: str) -> str | None:
    """Why ``what`` is not applicable where the heads read one layer (``layers_read``), or None: α is 1
    for every input there, so every α score is the same on every row by construction and its AUROC of ½
    against msp's is no finding about α (a summary written before: no ``layers_read``, read)."""
    if not any(h.get("layers_read") == 1 for h in heads):
        return None
    return (
        f"{what} by α not applicable: the head reads one layer, so α = 1 for every input and every α score is "
        "the same on every row by construction; no α score is read against msp (msp's own AUROC stands); the "
        "numbers are kept in summary.json"
    )


def errors_not_read(heads: Sequence[dict[str, Any]]) -> str | None:
    """Why no score is read against msp for telling errors from correct rows, or None: a head near
    chance on the test rows (:func:`near_chance_not_read`), or whose test rows hold fewer than
    MIN_OUTCOME_ROWS errors (or correct rows). The numbers stay in summary.json (QA: 1 error among
    the test rows gave "alpha_entropy is worse than msp: −0.378, 95% CI [−0.674, −0.101]")."""
    near = one_layer_not_read(heads, "error detection") or near_chance_not_read(heads, "error detection")
    if near:
        return near
    sides = [(int(h["n_errors"]), int(h["n_test"]) - int(h["n_errors"])) for h in heads if "n_errors" in h]
    if not sides or min(min(e, c) for e, c in sides) >= MIN_OUTCOME_ROWS:
        return None
    counts = ", ".join(f"{e} error{'s' * (e != 1)} and {c} correct" for e, c in sides)
    return (
        f"error detection not read against msp: too few rows: the test rows hold {counts} (fewer than "
        f"{MIN_OUTCOME_ROWS} of either), and a bootstrap over so few errors says nothing (with every score alike, "
        f"a wrong verdict came in {WRONG_AT} in a simulation); the numbers are kept in summary.json"
    )


def errors_read(s: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The "score − msp" differences read as verdicts: none where a head's error detection is undefined
    or its test rows hold too few errors (:func:`errors_not_read`)."""
    if any(h.get("undefined") for h in s["heads"]) or errors_not_read(s["heads"]):
        return {}
    return s["errors"]["diff_vs_msp"]


def one_seed_said(s: dict[str, Any]) -> str | None:
    """Where a diagnose summary reads one head: its differences from msp run over that head's test rows,
    not over the seeds it could have been fitted with, so they are said as "no verdict: one seed" first,
    their numbers kept (as prune and early-exit say one seed's); None for several heads or where no
    difference had an interval to read."""
    if len(s["heads"]) != 1 or not _intervals(s):
        return None
    named = "".join(f" ({h})" for h in [s["heads"][0].get("head_dir")] if h)
    return (
        f"no verdict: one seed: the differences from msp below read one fitted head{named}, "
        "their intervals over its test rows, not over the seeds it could have been fitted with, and a verdict that "
        "changes with the seed is no verdict; the numbers are kept in summary.json; give diagnose the fit-head "
        "folder (every seed of the head, fit-head --seeds 3 or more) for a verdict"
    )


def _intervals(s: dict[str, Any]) -> bool:
    """Whether any "score − msp" difference (errors, or the shift's) was read with an interval."""
    shift = [] if "shift" not in s or shift_not_read(s["shift"]) else list(s["shift"]["pooled"]["detect_diff"].values())
    return any(d.get("ci_low") is not None for d in [*errors_read(s).values(), *shift])


def verdict_drawn(s: dict[str, Any]) -> bool:
    """Whether a diagnose summary's verdict lines draw any verdict: a difference from msp with an
    interval over several heads, or --against's α profiles (not "too few rows", "undefined", "no
    interval" or one head's "no verdict: one seed")."""
    return "shift" in s or (len(s["heads"]) > 1 and _intervals(s))


def clipped_note(diffs: dict[str, dict[str, Any]]) -> str | None:
    """Where an "AUROC − msp" interval over heads was cut to [−1, 1] (:func:`.common.bounded`), in
    words with the t bounds, so a shown −1 is not read as the interval's own end. None where none was."""
    return cut_note(diffs, "AUROC − msp", "[−1, 1]", "the range of a difference of two AUROCs", "heads at this level")


def auroc_note(scores: dict[str, dict[str, dict[str, Any]]]) -> str | None:
    """Where an interval over heads of ``scores`` ("AUROC" or "AUPR" → score → estimate) was cut to
    [0, 1] (:func:`.common.bounded`), as :func:`clipped_note` says it. None where none was."""
    named = {f"{score} {metric}": d for metric, by in scores.items() for score, d in by.items()}
    return cut_note(named, "/".join(scores), "[0, 1]", "the values they can take", "heads at 95%")


def exit_cut_note(s: dict[str, Any]) -> str | None:
    """Where an early-exit summary's interval over seeds of a rule's area or a fixed depth's accuracy
    reached outside [0, 1] and is shown cut to it (2 seeds: "[0.0000, 1.0000]"), as :func:`auroc_note`
    says it of diagnose's. None where none did."""
    named = {f"{f['layer']} accuracy": bounded(f["accuracy"], 0.0, 1.0) for f in s.get("fixed_depth") or []}
    for rule, entry in (s.get("rules") or {}).items():
        for key in ("area_held_out", "area_in_sample"):
            if entry.get(key):
                named[f"{rule} {key.replace('_', ' ')}"] = bounded(entry[key], 0.0, 1.0)
    return cut_note(named, "areas and accuracies", "[0, 1]", "the values they can take", "seeds at 95%")


def diff_cut_note(s: dict[str, Any]) -> str | None:
    """Where a prune or early-exit summary's difference over seeds that a verdict reads (α − a ranking's
    mean test accuracy, a rule's held-out area − another's) was cut to [−1, 1] (:func:`.common.paired`), as
    :func:`clipped_note` says diagnose's. None where none was (and in summaries written before the cut)."""
    if s.get("command") == "early-exit":
        named = {k: e.get("area_diff") for k, e in (s.get("comparisons") or {}).items()}
        what = "area differences", "the range of a difference of two areas"
    else:
        named = {f"α − {k}": v.get("mean_test_acc_over_k_diff") for k, v in (s.get("alpha_vs") or {}).items() if v}
        what = "α − ranking", "the range of a difference of two accuracies"
    return cut_note(named, what[0], "[−1, 1]", what[1], "seeds at this level")


def no_spread(d: dict[str, Any] | None, digits: int = 4) -> str | None:
    """An estimate over two or more seeds that is the same on every one, as its mean alone and said so:
    its t-interval has zero width ("0.9741 [0.9741, 0.9741]", prune's random reference on digits, every
    random set scoring alike), which reads as certainty where there is only no spread. None otherwise."""
    values = [float(v) for v in (d or {}).get("values") or [] if v is not None]
    if len(values) < 2 or max(values) - min(values) > TINY:
        return None
    return f"{values[0]:.{digits}f} (the same on every seed: no spread)"


def no_flops_note(s: dict[str, Any]) -> str | None:
    """Why an early-exit summary's fixed-depth table shows a layer at "FLOPs run 0.0%": nothing up to it
    does multiply-adds (a text encoder's hidden_states.0 is its embeddings, a table lookup), so exiting
    there runs none of the backbone's counted compute; a depth of zero cost, not a missing count. None
    where no layer runs none."""
    used = s.get("compute_used_by_depth") or {}
    free = [name for name, share in used.items() if share is not None and share <= 0.0]
    if not free:
        return None
    named = ", ".join(free)
    return (
        f"FLOPs run 0.0% at {named}: nothing up to {'it' if len(free) == 1 else 'them'} does multiply-adds (an "
        "embeddings layer is a table lookup, counted as no FLOPs), so exiting there runs none of the backbone's "
        "counted compute"
    )


def shift_not_read(shift: dict[str, Any]) -> str | None:
    """Why a diagnose --against summary's shift detection is not read, or None: a cache that gives
    fewer than MIN_ROWS test rows (QA: 2 rows of the same data gave "beats msp: +0.52 [+0.38, +0.65]"),
    or a head near chance on this cache's test rows (:func:`near_chance_not_read`)."""
    near = one_layer_not_read(shift["heads"], "shift detection") or near_chance_not_read(
        shift["heads"], "shift detection"
    )
    if near:
        return near
    n = min(min(h["n_this"], h["n_other"]) for h in shift["heads"])
    if n >= MIN_ROWS:
        return None
    return (
        f"shift detection not read: a cache gives {n} test rows (fewer than {MIN_ROWS}), and AUROCs and their "
        "bootstrap intervals over so few rows say nothing; the numbers are kept in summary.json"
    )


# The fields each command's verdict_lines reads (:func:`missing_fields`' paths; "shift?": only where --against
# gave one): a summary lacking one was written by an older laya-inspect, and `report DIR` and its page show
# its stored lines instead. Here, not beside each rule, so that the page can read them without the rules.
VERDICT_FIELDS: dict[str, tuple[str, ...]] = {
    "prune": (
        "alpha_vs.*.verdict",
        "ks",
        "cache.layer_names",
        "rankings",
        "points.ranking",
        "points.k",
        "points.within_max_drop",
        "config.max_drop",
        "rows.val",
        "chosen",
        "cheapest",
        "reference.test_acc.mean",
        "reference.val_acc.values",
        "costs.source",
    ),
    "early-exit": ("comparisons.*.verdict",),
    "diagnose": (
        "heads.auroc",
        "errors.auroc",
        "errors.diff_vs_msp",
        "shift?.pooled.detect_diff",
        "shift?.pooled.detect_auroc",
        "shift?.heads.detect_auroc",
        "shift?.heads.n_this",
        "shift?.heads.n_other",
        "shift?.heads.permutation.p_value",
        "shift?.profiles",
    ),
}


def missing_fields(s: dict[str, Any], fields: tuple[str, ...]) -> list[str]:
    """Which of ``fields`` ``s`` lacks, each as far as it goes ("config.max_drop" where config lacks max_drop,
    "config" where there is none): "a.b" is b inside a, in each item where a is a list; "*" is each value of a
    dict (named by its key); a key ending "?" may be absent (what lies under it is then not read)."""

    def lacks(d: Any, keys: list[str], at: str) -> str | None:
        if isinstance(d, list):
            return next(filter(None, (lacks(x, keys, at) for x in d)), None)
        if not keys:
            return None
        key, rest = keys[0], keys[1:]
        if key == "*" and isinstance(d, dict):
            return next(filter(None, (lacks(x, rest, f"{at}.{k}") for k, x in d.items())), None)
        if key.endswith("?") and isinstance(d, dict) and key[:-1] not in d:
            return None
        name = f"{at}.{key.rstrip('?')}".lstrip(".")
        return lacks(d[key.rstrip("?")], rest, name) if isinstance(d, dict) and key.rstrip("?") in d else name

    return list(dict.fromkeys(filter(None, (lacks(s, f.split("."), "") for f in fields))))


def older_note(s: dict[str, Any], lacking: Sequence[str] = ()) -> str | None:
    """Where a summary lacks a field its command's verdict rule reads (:data:`VERDICT_FIELDS`, or
    ``lacking``: fields the rule found missing as it read them), the note that says so and names them,
    as `report DIR` and its page show it beside the stored lines; None otherwise."""
    missing = missing_fields(s, VERDICT_FIELDS[s["command"]]) or list(lacking)
    if not missing:
        return None
    return (
        f"this summary was written by an older laya-inspect and lacks {', '.join(map(plain_field, missing))}: "
        + ("its stored verdict lines are shown" if s.get("verdict") else "it stores no verdict lines")
        + f"; rerun {s['command']} to read them by today's rule"
    )


def plain_field(field: str) -> str:
    """A field's path in words: "config.max_drop" as "max_drop (in config)"."""
    *under, name = field.split(".")
    return name + (f" (in {'.'.join(under)})" if under else "")


# -- reading an AUROC against chance (½) ----------------------------------------------------------


def _holds_half(a: dict[str, Any] | None) -> bool:
    """The AUROC record's 95% interval (the one shown) holds ½."""
    lo, hi = (a or {}).get("ci_low"), (a or {}).get("ci_high")
    return lo is not None and hi is not None and lo <= 0.5 <= hi


def chance_unread(a: dict[str, Any] | None) -> bool:
    """The score is not shown to tell the two kinds of rows apart: its interval at the family's level
    (:func:`with_chance`) holds ½, or over several heads each head's own rows hold it (``chance_withheld``);
    a summary written before ``above_chance``: its 95% interval holds ½."""
    a = a or {}
    if a.get("mean") is None or a.get("ci_low") is None or a.get("ci_high") is None:
        return False
    if "above_chance" in a:
        return not a["above_chance"] and not a.get("below_chance")
    return _holds_half(a)


def chance_hidden(a: dict[str, Any] | None) -> bool:
    """:func:`chance_unread` where the 95% interval shown excludes ½, so the interval alone reads it off
    chance: the family's level or the rows' own sampling hold ½ (a table marks it)."""
    return chance_unread(a) and not _holds_half(a)


def _below_chance(auroc: dict[str, Any], name: str) -> bool:
    """Read at the family's level (:func:`with_chance`); a summary written before: its 95% interval."""
    a = auroc.get(name) or {}
    if "below_chance" in a:
        return bool(a["below_chance"])
    hi = a.get("ci_high")
    return hi is not None and hi < 0.5


def _sides(heads: Sequence[dict[str, Any]], name: str) -> tuple[int, int] | None:
    """(heads whose own interval lies above ½, below ½) when every one of several heads' interval
    excludes ½; None otherwise."""
    ends: list[tuple[float, float]] = []
    for h in heads:
        lo, hi = (h.get(name) or {}).get("ci_low"), (h.get(name) or {}).get("ci_high")
        if lo is None or hi is None:
            return None
        ends.append((lo, hi))
    if len(ends) < 2:
        return None
    up, down = sum(lo > 0.5 for lo, _ in ends), sum(hi < 0.5 for _, hi in ends)
    return (up, down) if up + down == len(heads) else None


def each_head_alone(pooled: dict[str, Any] | None, heads: Sequence[dict[str, Any] | None]) -> str | None:
    """ "better" or "worse" where the interval over several heads holds 0 while each head's own paired
    interval over its test rows lies on that one side of 0: over 3 heads the t-interval has 2 degrees
    of freedom, so it can hold 0 where every head alone shows a difference. None otherwise."""
    if len(heads) < 2 or outcome(pooled) != "no different":
        return None
    sides = {outcome(h) for h in heads}
    return sides.pop() if len(sides) == 1 and sides <= {"better", "worse"} else None


def alone_text(name: str, baseline: str, side: str, n: int) -> str:
    """:func:`each_head_alone`'s finding in words, after a "no detectable difference" line."""
    word, where = ("better", "above") if side == "better" else ("worse", "below")
    return (
        f"; {name} {word} than {baseline} on each of the {n} heads' own test rows (each head's paired interval "
        f"{where} 0), but the interval over heads holds 0 (the heads differ too much to pin it down)"
    )


def versus_chance(auroc: dict[str, Any], names: Sequence[str], rows: str, heads: Sequence[dict[str, Any]] = ()) -> str:
    """What the verdict against msp leaves out: each score read against chance (AUROC ½), at the family's
    level either way (:func:`with_chance`), over several heads beside each head's own rows. An interval
    that holds ½ does not show a score at chance, only that it is not shown above it; over a few heads
    that interval (t over heads) can hold ½ while each head's own interval over rows lies above it, or lie
    above ½ while each head's own rows hold it. With one head the interval runs over its test rows: a
    reading of that fitted head, said so, not of the method."""
    on = " on this fitted head's rows" if len(heads) == 1 else ""
    held = {n: (auroc.get(n) or {}).get("chance_withheld") for n in names}
    unread = [n for n in names if chance_unread(auroc.get(n)) and not held[n]]
    sides = {n: _sides(heads, n) or (0, 0) for n in unread}
    spread = [n for n, (up, down) in sides.items() if up and not down]  # each head alone above ½
    opposite = [n for n, (up, down) in sides.items() if up and down]  # each head alone off ½, seeds both ways
    # the interval shown holds ½; or only the one at the family's level does, which the line gives
    none = [n for n in sides if n not in spread and n not in opposite and _holds_half(auroc.get(n))]
    level_only = [n for n in sides if n not in spread and n not in opposite and n not in none]
    below = [n for n in names if _below_chance(auroc, n)]
    parts = []
    for n in names:
        if w := held[n]:
            at = f" at {level({'confidence': c})}" if (c := auroc[n].get("chance_confidence")) else ""
            own = (
                f"each head's own interval over the {w['rows']} shared test rows (±{w['half_width']:.3f} on average"
                f"{at}) holds 0.5"
            )
            if auroc[n]["mean"] >= 0.5:
                parts.append(
                    f"{n} is not shown to tell {rows} apart better than chance (its interval over {w['heads']} heads "
                    f"lies above 0.5, but {own}: which rows were drawn; add test rows)"
                )
            else:
                parts.append(
                    f"{n}: its interval over {w['heads']} heads lies under 0.5, but {own}: not read as below chance; "
                    "add test rows or heads"
                )
    if len(none) == 1:
        parts.append(f"{none[0]} is not shown to tell {rows} apart better than chance{on} (its interval holds 0.5)")
    elif none:
        parts.append(f"neither {' nor '.join(none)} is shown to tell {rows} apart better than chance{on}")
    for n in level_only:
        a = auroc[n]
        lo, hi = a.get("chance_ci_low"), a.get("chance_ci_high")
        shown = f", [{lo:.4f}, {hi:.4f}]," if lo is not None and hi is not None else ""
        parts.append(
            f"{n} is not shown to tell {rows} apart better than chance{on} (its interval at "
            f"{level({'confidence': a.get('chance_confidence')})}, Bonferroni over the scores read against "
            f"chance{shown} holds 0.5)"
        )
    if spread:
        shown_at = [
            level({"confidence": auroc[n].get("chance_confidence")}) for n in spread if not _holds_half(auroc[n])
        ]
        parts.append(
            f"{' and '.join(spread)}: above chance on each of the {len(heads)} heads' own rows, but the interval "
            f"over heads{' at ' + shown_at[0] if shown_at else ''} holds 0.5 (the heads differ too much to pin it down)"
        )
    for n in opposite:
        up, down = sides[n]
        parts.append(
            f"{n}: each of the {len(heads)} heads tells {rows} apart on its own rows, but in opposite directions "
            f"(AUROC above 0.5 for {up}, below for {down}): which rows it scores higher changes from seed to seed"
        )
    if below:
        levels = {(auroc.get(n) or {}).get("chance_confidence") for n in below} - {None}
        at = (
            f" at {level({'confidence': levels.pop()})}, Bonferroni over the scores read against chance"
            if levels
            else ""
        )
        parts.append(f"{' and '.join(below)} below chance{on} (the whole AUROC interval under 0.5{at})")
    return "".join(f"; {p}" for p in parts)


def head_label(head_dir: str) -> str:
    """laya/seed_0: a head directory as diagnose's lines and report.html's table name it."""
    return "/".join(Path(head_dir).parts[-2:])


def shifted_classes(s: dict[str, Any], level: float = 0.05) -> str | None:
    """How many predicted classes shifted in a diagnose summary ``s``, read from the Holm-adjusted
    p-values (a reader scanning the classes' raw p meets a false "shifted" far more often); over m heads
    each counts below level/m, as `profiles_verdict` counts heads. Under no shift, 10 classes:
    bench/class_shift_null.py. The terminal and report.html say the same line."""
    heads = s["heads"]
    perms = [h["permutation"] for h in s["shift"]["heads"]]
    tested = [[c["p_holm"] for c in p.get("per_class", []) if "p_holm" in c] for p in perms]
    if not any(tested):
        return None
    m = len(tested)
    cut = level / m
    said = [f"{sum(v < cut for v in t)} of the {len(t)} tested" if t else "no class tested" for t in tested]
    names = [head_label(h["head_dir"]) for h in heads]
    counts = said[0] if m == 1 else ", ".join(f"{c} for {n}" for c, n in zip(said, names))
    over = "the classes" if m == 1 else f"each head's classes, {level:g} over the {m} heads, Bonferroni"
    return (
        f"predicted classes whose α profile shifted: {counts} "
        f"(Holm-adjusted p < {cut:.3g}, Holm over {over}; shift_by_class.csv)"
    )


def fired_rows(alpha_fired: dict[str, Any], key: str = "rows") -> str:
    """ "n of N rows" for one head; with several, the range over them and each seed's count (summaries
    written before ``by_seed`` read as one head's)."""
    n, of, each = alpha_fired.get(key), alpha_fired.get("of"), alpha_fired.get("by_seed")
    if not each:
        return f"{n} of {of} rows"
    counts = {s: c[key] for s, c in each.items()}
    low, high = min(counts.values()), max(counts.values())
    if low == high:
        return f"{high} of {of} rows on each of {len(counts)} LAYA heads"
    seeds = ", ".join(f"seed {s}: {c}" for s, c in counts.items())
    return f"{low}–{high} of {of} rows across {len(counts)} LAYA heads ({seeds})"
