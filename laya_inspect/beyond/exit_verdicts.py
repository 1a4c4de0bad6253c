"""The verdicts of `laya-inspect early-exit` (docs/METHOD.md, "Early exit"): every realisable rule
against random exit, whether α adds to confidence, and the comparisons against fixed depth, each the
paired difference over seeds of the held-out areas (:mod:`.exit_heldout`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from ..training.stats import TINY
from .common import family, level, outcome, paired, rows_rule, spec, verdict
from .scoring import fired_rows

REALISABLE = ("fixed", "confidence", "alpha", "confidence+alpha")  # each read against ``random``
# The three questions the comparisons answer, each a family whose intervals are drawn at 1 − 0.05/m for
# its m comparisons (a wrong verdict among them in at most 5% of runs where no rule differs): does a
# rule beat random exit (the headline), does α add to confidence (realisable, and with α of the full
# pass), and the older reading against fixed depth. Separate questions, each read on its own.
QUESTIONS = {
    "random": "rules compared with random exit",
    "adds": "comparisons of confidence+α with confidence",
    "fixed": "rules compared with fixed depth",
}

# How many comparisons each family counts, said beside the verdicts (exit_comparisons says why)
FAMILY_RULE = (
    "each question's family is every comparison it asks, fixed before the data (4 against random exit, 2 of "
    "confidence+α with confidence, 2 against fixed depth): one that turns out to be of the same rule or the same "
    "area on every seed draws no verdict but still counts, since whether it does is read off the test rows compared"
)


def _question(label: str) -> str:
    """The key of :data:`QUESTIONS` a comparison label ("a vs b") belongs to."""
    b = label.split(" vs ")[1]
    return {"random": "random", "confidence": "adds"}.get(b, "fixed")


def _same_points(points: list[dict[str, Any]], a: str, b: str) -> bool:
    """Whether rules ``a`` and ``b`` have the same operating points at every step of every seed."""

    def key(rule: str) -> list[tuple[Any, ...]]:
        fields = ("seed", "step", "accuracy", "compute_used", "mean_depth")
        return [tuple(p[f] for f in fields) for p in points if p["rule"] == rule]

    return key(a) == key(b)


def exit_comparisons(
    areas: dict[str, list[float]],
    points: list[dict[str, Any]],
    alpha_fired: dict[str, Any],
    in_sample: dict[str, list[float]] | None = None,
    row_shares: dict[str, list[np.ndarray]] | None = None,
) -> dict[str, Any]:
    """Every realisable rule against random exit first (the headline), then whether α adds to
    confidence, the oracle's, and the older comparisons against fixed depth's step frontier. ``areas``
    are the held-out areas the verdicts read; ``in_sample``'s differences are recorded beside them.
    ``row_shares``: each rule's (N,) per-row shares of its held-out area per seed (the test rows'
    own sampling, :func:`rows_interval`); a "beats" or "worse" their interval does not hold is withheld."""
    pairs = {f"{r} vs random": (r, "random") for r in (*REALISABLE[1:], "fixed")}
    pairs |= {
        "confidence+alpha vs confidence": ("confidence+alpha", "confidence"),
        "confidence+alpha_oracle vs confidence": ("confidence+alpha_oracle", "confidence"),
        "confidence vs fixed": ("confidence", "fixed"),
        "alpha vs fixed": ("alpha", "fixed"),
    }
    identical = {
        label: a.startswith("confidence+alpha") and b == "confidence" and _same_points(points, a, b)
        for label, (a, b) in pairs.items()
    }
    same_area = {label: all(abs(x - y) <= TINY for x, y in zip(areas[a], areas[b])) for label, (a, b) in pairs.items()}
    # Each question's family is the comparisons it asks, fixed before the data (FAMILY_RULE), also where
    # two of its rules turn out the same rule or of the same area: whether they do (α firing at ε, areas
    # equal) is read off the test rows whose areas are compared, so leaving them out would pick the level
    # after looking. A comparison that turns out so draws no wrong verdict, so counting it keeps the family
    # under 5% and costs width only (3 seeds: t(1 − 0.05/8, 2) = 8.86 against 7.65 at m = 3, 16% wider).
    families = {name: family(sum(_question(k) == name for k in pairs), of) for name, of in QUESTIONS.items()}
    # confidence+alpha with the points of confidence, or with their area on every seed (α fired on a few
    # rows and moved no step of the frontier): its comparison with random exit is confidence's
    same_rule = identical["confidence+alpha vs confidence"]
    same_as = same_rule or same_area["confidence+alpha vs confidence"]
    # α never firing (or not past confidence) makes confidence+alpha, and the oracle's rule, the confidence
    # rule in every comparison it is in: the fact is said on the first such line, the later ones point to it
    oracle_too = identical["confidence+alpha_oracle vs confidence"] and not alpha_fired["oracle_rows"]
    both = same_rule and oracle_too and not alpha_fired["rows"]
    said: set[str] = set()
    out: dict[str, Any] = {}
    for label, (a, b) in pairs.items():
        fam = families[_question(label)]
        d = paired(areas[a], areas[b], fam["confidence"])
        entry: dict[str, Any] = {"area_diff": d, "family": fam}
        if in_sample is not None:
            entry["area_diff_in_sample"] = paired(in_sample[a], in_sample[b], fam["confidence"])
        adds_alpha = a.startswith("confidence+alpha") and b == "confidence"
        what = "α of the full forward pass" if a.endswith("oracle") else "α"
        n = fired_rows(alpha_fired, "oracle_rows" if a.endswith("oracle") else "rows")
        eps = alpha_fired["epsilon"]
        seeds = "on every seed" if len(areas[a]) > 1 else "on the one seed run"
        if same_as and label == "confidence+alpha vs random":
            entry["same_as"] = "confidence vs random"
            entry["same_by"] = "rule" if same_rule else "area"
            why = (
                f"{_fired(alpha_fired, 'rows', 'α', both)}: confidence+alpha"
                + (" and confidence+alpha_oracle are" if both else " is")
                + " the confidence rule"
                if same_rule
                else f"rule confidence+alpha has the same held-out area as confidence's {seeds} (α fired at "
                f"ε = {eps:g} on {n})"
            )
            said |= {"rows", "oracle_rows"} if both else {"rows"} if same_rule else {"area"}
            entry["verdict"] = (
                f"{why}, so confidence+alpha's comparison with random exit is confidence's (rule confidence's line "
                "against random exit, above), not a second finding"
            )
        elif identical[label]:
            key = "oracle_rows" if a.endswith("oracle") else "rows"
            entry["identical"] = True
            if key in said:
                entry["verdict"] = f"rule {a} is the confidence rule, as said above: nothing to compare with rule {b}"
            else:
                entry["verdict"] = f"{_fired(alpha_fired, key, what)}: {a} is the confidence rule; nothing to compare"
                said.add(key)
        elif same_area[label]:
            entry["same_area"] = True
            fired_on = f" ({what} fired at ε = {eps:g} on {n})" if adds_alpha else ""
            if adds_alpha and not a.endswith("oracle") and "area" in said:
                fired_on = ", as said above"
            entry["verdict"] = (
                f"rule {a} has the same held-out area as {'random exit' if b == 'random' else f'rule {b}'} {seeds}"
                f"{fired_on}: its points move, no step of the frontier does; nothing to compare"
            )
        elif (rows := _rows(row_shares, a, b, d, fam["confidence"])) and rows["withheld"]:
            entry["test_rows"] = rows
            entry["verdict"] = _withheld(d, rows, f"rule {a}", "random exit" if b == "random" else f"rule {b}")
        else:
            if rows:
                entry["test_rows"] = rows
            entry["verdict"] = (
                verdict(d, what=f"rule {a}", baseline="random exit" if b == "random" else f"rule {b}")
                + " (held-out area under accuracy–compute"
                + ("; not realisable: it needs α of the full forward pass)" if a.endswith("oracle") else ")")
                + _within(d, rows)
            )
        out[label] = entry
    return out


def verdict_lines(s: dict[str, Any]) -> list[str]:
    """Early-exit's verdict lines from its summary: each comparison's own verdict, in order. Those are
    written where the comparison is drawn (:func:`exit_comparisons` reads the test rows' per-row shares,
    which the summary does not keep), so `report DIR` shows them as the run wrote them."""
    return [c["verdict"] for c in s["comparisons"].values()]


# The rule a verdict is read by beside the test rows' own sampling (docs/METHOD.md, "Early exit")
ROWS_RULE = (
    "every seed's areas are scored on the same test rows, so an interval over seeds leaves out which rows were "
    "drawn: each comparison's difference is also read over the test rows (each row's share of the held-out area, "
    "the mean over compute budgets of its 0/1 answer at the threshold chosen on the other fold, averaged over the "
    'seeds; a paired normal interval at the comparison\'s level), and a "beats" or "worse" whose interval '
    "over seeds is far narrower than that one (fit-head's test-sampling rule), while that one holds 0, is withheld"
)


def rows_interval(a: Sequence[np.ndarray], b: Sequence[np.ndarray], confidence: float) -> dict[str, Any] | None:
    """The test rows' own paired interval of area(a) − area(b) at ``confidence``: ``a[i]``/``b[i]`` are
    seed i's (N,) per-row shares of each rule's held-out area (their mean is the area), the seeds'
    differences averaged per row, then a normal interval over the N rows. It leaves out that each fold's
    thresholds are chosen on the other's rows, so it is the least the rows allow. None under 2 rows."""
    d = np.mean([np.asarray(x, float) - np.asarray(y, float) for x, y in zip(a, b)], axis=0)
    n = int(d.size)
    if n < 2:
        return None
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    mean, half = float(d.mean()), z * float(d.std(ddof=1)) / math.sqrt(n)
    return {
        "rows": n,
        "seeds": len(a),
        "rows_differ": int((np.abs(d) > TINY).sum()),
        "mean": mean,
        "half_width": half,
        "ci_low": mean - half,
        "ci_high": mean + half,
        "confidence": confidence,
    }


def _rows(
    shares: dict[str, list[np.ndarray]] | None, a: str, b: str, diff: dict[str, Any], confidence: float
) -> dict[str, Any] | None:
    """:func:`rows_interval` of rules ``a`` and ``b`` beside ``diff``, their interval over seeds:
    ``dominates`` (fit-head's rule, quality.sampling_outweighs, at MIN_ROWS rows or more) and
    ``withheld``, where it dominates, holds 0 and the seeds read "better" or "worse"."""
    rows = rows_interval(shares[a], shares[b], confidence) if shares else None
    if rows is None:
        return None
    rule = rows_rule(diff, rows)
    return {**rows, "dominates": rule["dominates"], "withheld": rule["withheld"]}


def _withheld(d: dict[str, Any], rows: dict[str, Any], what: str, baseline: str) -> str:
    """The line of a comparison whose "beats" or "worse" the test rows' own sampling does not hold."""
    f = spec(d)
    return (
        f"no verdict on {what} against {baseline}: {d['mean']:{f}}, {level(d)} CI over seeds [{d['ci_low']:{f}}, "
        f"{d['ci_high']:{f}}], far narrower than the {rows['rows']} shared test rows alone allow "
        f"(±{rows['half_width']:.4f}, "
        f"paired over rows at the same level), which holds 0: a difference of which rows were drawn as much as of "
        "the rules; read it as undecided, or add test rows"
    )


def _within(d: dict[str, Any], rows: dict[str, Any] | None) -> str:
    """Where the test rows' interval is far wider than the seeds' but lies on one side of 0, the verdict
    stands and says how far to trust its size, as diagnose's and prune's do (MobileNetV2, 80 CIFAR-10 test
    rows: alpha − fixed −0.2310, 97.5% CI over seeds [−0.2647, −0.1972], the rows ±0.0797)."""
    if not rows or not rows["dominates"] or rows["withheld"] or outcome(d) not in ("better", "worse"):
        return ""
    return (
        f"; the {rows['rows']} shared test rows alone allow ±{rows['half_width']:.4f} (paired over rows at the same "
        "level), far wider than the interval over seeds: read the difference to within that (it still excludes 0)"
    )


def rows_warning(comparisons: dict[str, Any]) -> list[str]:
    """One warning naming the comparisons whose verdict the test rows' sampling withheld, or []."""
    withheld = [k for k, e in comparisons.items() if (e.get("test_rows") or {}).get("withheld")]
    if not withheld:
        return []
    n = comparisons[withheld[0]]["test_rows"]["rows"]
    return [
        f"test sampling: {len(withheld)} of the early-exit comparisons ({', '.join(withheld)}) have intervals over "
        f"seeds far narrower than the {n} shared test rows allow, and the rows' own interval holds 0: their "
        '"beats"/"worse" is withheld; add test rows to read them'
    ]


def alpha_fired(alpha_heads: list[dict[str, Any]], epsilon: float, of: int) -> dict[str, Any]:
    """The test rows where α fired at ``epsilon``: with several heads, ``rows`` and ``oracle_rows`` are
    the most of any one and ``by_seed`` holds each head's, so no count reads as one head's when it is not."""
    out: dict[str, Any] = {
        "epsilon": epsilon,
        "rows": max(h["alpha_rows_fired"] for h in alpha_heads),
        "oracle_rows": max(h["oracle_rows_fired"] for h in alpha_heads),
        "of": of,
    }
    if len(alpha_heads) > 1:
        out["by_seed"] = {
            str(h["seed"]): {"rows": h["alpha_rows_fired"], "oracle_rows": h["oracle_rows_fired"]} for h in alpha_heads
        }
    return out


def _fired(alpha_fired: dict[str, Any], key: str, what: str, both: bool = False) -> str:
    """Where α (``key``: "rows", or "oracle_rows" for the full pass's) fired, for a rule that is the
    confidence rule's: never, or only where confidence exits as early. ``both``: neither α fired, said
    in one sentence for the two rules."""
    n, eps = alpha_fired[key], alpha_fired["epsilon"]
    if both:
        where = "neither at an exit nor in the full forward pass"
        return f"α never fired at ε = {eps:g}, {where} ({fired_rows(alpha_fired, key)})"
    if n == 0:
        return f"{what} never fired at ε = {eps:g} ({fired_rows(alpha_fired, key)})"
    return f"{what} fired at ε = {eps:g} on {fired_rows(alpha_fired, key)}, only where confidence exits as early"


# The share of null runs with a wrong verdict somewhere among all three questions' comparisons together,
# each question held to 5% on its own (tests/test_family_null.py's simulation: every rule's held-out
# area the same in truth, 3 seeds, 2,000 runs; docs/METHOD.md, "Families of comparisons").
TOGETHER_NULL = 0.152


def read_apart(comparisons: dict[str, Any]) -> str | None:
    """What the verdict lines leave unsaid when two or more questions drew an interval: each question
    is held to 5% on its own, not the lines together. None when one question (or none) is read."""
    read = {
        e["family"]["of"]
        for e in comparisons.values()
        if not e.get("identical") and not e.get("same_area") and (e["area_diff"] or {}).get("ci_low") is not None
    }
    if len(read) < 2:
        return None
    # every comparison prints one verdict line, also those of a question that drew no interval
    shown, names = len(comparisons), ", ".join(q for q in QUESTIONS.values() if q in read)
    rate = f"in {TOGETHER_NULL:.0%} of simulated runs"  # measured with all three; two: about 1 − 0.95²
    said = f"the {len(read)} questions ({names}) are read apart, each at 95% for its own comparisons, not these "
    said += f"{shown} lines together"
    if len(read) < len(QUESTIONS):
        rate = f"in about {1 - 0.95 ** len(read):.0%} of runs ({TOGETHER_NULL:.0%} of simulated runs with all three)"
        lines = sum(e["family"]["of"] in read for e in comparisons.values())
        idle = [q for q in QUESTIONS.values() if q not in read]
        said = (
            f"these {shown} lines answer the {len(QUESTIONS)} questions ({', '.join(QUESTIONS.values())}); "
            f"{len(read)} drew an interval ({names}) and are read apart, each at 95% for its own comparisons, not "
            f"their {lines} lines together ({', '.join(idle)}: no interval, nothing to compare)"
        )
    return (
        f'{said}: where no rule differs, a wrong "beats" or "worse" comes somewhere among the {len(read)} '
        f"questions' lines {rate}; read the rules against random exit as the finding, the others as side questions"
    )
