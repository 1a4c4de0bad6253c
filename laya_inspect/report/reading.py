"""The plain reading of a result: one or two sentences computed from its numbers, the first thing
report.html says (definitions of the scores: docs/METHOD.md).

A compare run is read from the head that has α (else the first head) on the first ablation: how
often the lead method picks the layer whose removal changes the prediction most (top-layer
agreement, beside the random reference and the constant rule), whether it orders the layers better or worse
than the best other non-circular method (the paired difference in faithfulness ρ over the same rows,
"better" or "worse" only when its 95% interval excludes 0), and whether it beats the constant rule
(paired differences on the headline scores).
A fit-head run is read from LAYA (else the most accurate head): its test accuracy and the paired
difference to the last-layer head, then where α puts its weight and whether the seeds agree.
A prune, early-exit or diagnose run is read first by whether α beats the baseline that does not use α,
with the difference and its 95% interval, then by what else the run found; "beats" and "worse" only
when the interval excludes 0 (docs/METHOD.md, "Beyond attribution").
Each reading says right after its verdicts what they rest on (one fitted seed of a head, or which of
several), so that a verdict one fit gives is never read alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..beyond.scoring import (
    alone_text,
    each_head_alone,
    errors_not_read,
    fired_rows,
    one_seed_said,
    shift_not_read,
    shifted_classes,
    verdict_drawn,
    versus_chance,
)
from ..choices import MIN_ROWS
from ..compare.records import (
    NO_LAYER,
    NOT_APPLICABLE,
    VERDICTS,
    VERSUS_LABELS,
    carried,
    compare_warnings,
    inapplicable,
    inapplicable_said,
    said_once,
    sanity_heads,
)
from ..compare.seeds import CUT_SAID, by_seed, kept_verdict_over_seeds, pair_verdict
from ..training.quality import (
    CHANCE_GAP,
    GAIN_ROWS,
    PROBE_ONE_FIT,
    chance_lines,
    is_near_chance,
    macro_f1_decides,
    not_learned,
)
from ..training.stats import (
    ONE_VALUE,
    TINY,
    chance_text,
    counted,
    cut_note,
    family_text,
    level,
    outcome,
    percent,
    same_on_every_seed,
    same_text,
    spec,
    tied,
    wilson,
)

NAMES = {
    "alpha": "α",
    "alpha-contrib": "α-contrib",
    "ig": "IG",
    "gradcam": "Grad-CAM",
    "static": "ScalarMix's weight vector",
    "random": "random attribution",  # the method; the random reference is a null, named as one
}


@dataclass
class Reading:
    lead: list[str]  # one or two sentences: what the page says first
    details: list[str] = field(default_factory=list)  # one line per further head or remark


def zeroed(value: float, digits: int, sign: bool) -> float:
    """``value``, or 0.0 where it shows as zero: a plain number never reads "-0.00"; a signed one (a
    difference, an interval's end) keeps its sign unless it is float noise (|v| ≤ TINY), so an
    interval that ends at −0.0014 reads "-0.00", not "+0.00", beside a verdict that it lies below 0."""
    if round(value, digits) != 0 or (sign and abs(value) > TINY):
        return value
    return 0.0


def num(v: Any, digits: int = 2, sign: bool = False, lead: bool = True) -> str:
    """A number for a sentence or a cell: "—" for a missing or NaN one (an undefined score); zero as
    :func:`zeroed` shows it; without ``lead`` no leading zero, for narrow tables (".72", "+.05", "-.00")."""
    if v is None or v != v:
        return "—"
    text = format(zeroed(float(v), digits, sign), f"{'+' if sign else ''}.{digits}f")
    return text.replace("0.", ".", 1) if not lead and text.lstrip("+-").startswith("0.") else text


def layers_read(cache: dict[str, Any]) -> str:
    """' · 4 of its 18 layers' when the heads read some of the cache's layers (fit-head --layers,
    prune's head of the kept layers), else ''."""
    every = cache.get("cache_layer_names")
    if not every:
        return ""
    return f" · {len(cache.get('layer_names') or [])} of its {len(every)} layers"


def tested_split(summary: dict[str, Any]) -> str:
    """'test split', or the split fit-head tested on with --test-split ('valid split')."""
    return f"{(summary.get('split') or {}).get('test_split') or 'test'} split"


def gate_cell(head: dict[str, Any], warn: str = "{}") -> str:
    """A fit-head table's gate cell: "ok", "2 warnings" (put in ``warn``, the terminal's colour), and
    what the gate could not check: "no seed checks (1 seed)" for a head with layer weights fitted
    on one seed, whose "ok" would read as checked across seeds (docs/METHOD.md, "Quality gate")."""
    n_warn = len(head.get("warnings") or [])
    said = [warn.format(f"{n_warn} warning{'s' * (n_warn > 1)}")] if n_warn else []
    if head.get("checks_not_run"):
        said.append("no seed checks (1 seed)")
    return "; ".join(said) or "ok"


def name(method: str) -> str:
    return NAMES.get(method, method)


def value(entry: dict[str, Any], key: str) -> Any:
    """A score of a summary entry: the mean of an estimate, or the number itself."""
    v = entry.get(key)
    return v.get("mean") if isinstance(v, dict) else v


def _cap(text: str) -> str:
    """Capitalised for the start of a sentence; α stays α (its capital looks like a Latin A)."""
    return text[:1].upper() + text[1:] if text[:1].isascii() else text


# -- compare -------------------------------------------------------------------------------------


def _faith(s: dict[str, Any]) -> tuple[Any, Any, Any]:
    f = s.get("faithfulness") or {}
    return f.get("mean"), f.get("ci_low"), f.get("ci_high")


def _lead_method(head: dict[str, Any]) -> str | None:
    methods = head.get("methods") or {}
    if "alpha" in methods:
        return "alpha"
    best = (head.get("best") or {}).get("faithfulness") or []
    if best:
        return str(best[0])
    return next((m for m in methods if m != "random"), next(iter(methods), None))


def _rival(head: dict[str, Any], lead: str) -> str | None:
    """The other non-circular, non-random method with the highest mean faithfulness."""
    scored = [
        (_faith(s)[0], m)
        for m, s in (head.get("methods") or {}).items()
        if m not in (lead, "random") and not s.get("circular") and _faith(s)[0] is not None
    ]
    return max(scored)[1] if scored else None


def _rho_nulls(head: dict[str, Any], lead: str) -> str:
    """The nulls of ρ the summary records, to read the lead's ρ beside: top-1 only (what knowing only
    the top layer earns; on the digits demo 0.87, above every method), the constant rule and the
    random reference. Top-1 only says what a ρ below it means, and where it is the same on every row, whether the
    layer count alone fixes it: against L untied effects a one-hot scores √(3/(L + 1)), √3/2 at 3
    (docs/METHOD.md, "Scores")."""
    refs = head.get("references") or {}
    said = []
    top = (refs.get("top1_only") or {}).get("faithfulness") or {}
    if top.get("mean") is not None:
        text = f"top-1 only {num(top['mean'])}"
        if top.get("ci_low") == top["mean"] == top.get("ci_high"):
            text += " on every row"
            n = head.get("n_layers")
            if isinstance(n, int) and abs(top["mean"] - math.sqrt(3 / (n + 1))) < TINY:  # one-hot vs n distinct ranks
                text += f" (what a one-hot scores against {n} untied effects)"
        rho, _, high = _faith(head["methods"][lead])
        if rho is not None and round(rho, 2) < round(top["mean"], 2):  # as printed: both reading 0.87 is no "below"
            # "better" only past both intervals, as a method is said better than another only on an
            # interval (docs/METHOD.md, "One method against another"): a mean a hair above proves nothing
            floor = top.get("ci_low") if top.get("ci_low") is not None else top["mean"]
            if high is not None and high < floor:
                text += f", above {name(lead)}'s: naming the top layer alone orders the layers better"
            elif high is not None and high < top["mean"]:  # past α's interval, but its own interval reaches into it
                text += (
                    f", above {name(lead)}'s 95% interval but its own reaching into it: not shown to order the "
                    "layers better"
                )
            else:
                text += f", above {name(lead)}'s mean but not its 95% interval: not shown to order the layers better"
        said.append(text)
    for ref, words in (("constant", "the constant rule"), ("random", "the random reference")):
        rho = ((refs.get(ref) or {}).get("faithfulness") or {}).get("mean")
        if rho is not None:
            said.append(f"{words} {num(rho)}")
    if said and ":" in said[0]:  # top-1 only's own verdict ends at a semicolon, not run on into the other nulls
        return "; ".join([said[0], ", ".join(said[1:])]) if said[1:] else said[0]
    return ", ".join(said)


def _versus(s_lead: dict[str, Any], rival: str, s_rival: dict[str, Any], nulls: str = "") -> str:
    """How the lead orders the layers beside its rival, read from their paired difference in ρ over
    the same rows (two intervals that overlap can still differ row by row, and did), with ρ's nulls."""
    rho = f"faithfulness ρ {num(_faith(s_lead)[0])} vs {num(_faith(s_rival)[0])}" + (f"; {nulls}" if nulls else "")
    d = (s_lead.get("vs_methods") or {}).get(rival)
    word = outcome(d)
    if word == "undecided":
        n = (d or {}).get("n")
        why = (
            "this summary holds no paired difference: rerun compare"  # written before it was stored
            if "vs_methods" not in s_lead
            else f"ρ is defined on both on {n} rows only, fewer than {MIN_ROWS}: no paired interval"
            if isinstance(n, int) and n < MIN_ROWS
            else "no paired interval: run with --bootstrap N"
        )
        return f"it is not tested against {name(rival)} ({rho}; {why})"
    # the level the interval was drawn at, named where the summary records it (its family: the rival
    # is picked among the other methods after the fact)
    fam = (d or {}).get("family")
    drawn = f", {family_text(fam, 'interval')}" if isinstance(fam, dict) else ""
    diff = f"paired difference {with_ci(d)}{drawn}"
    if word == "no different":
        return f"it is not shown to order the layers better or worse than {name(rival)} ({rho}; {diff})"
    return f"it orders the layers {word} than {name(rival)} ({rho}; {diff})"


def head_sentences(summary: dict[str, Any], head: dict[str, Any]) -> list[str]:
    """What one head's first ablation says: :func:`headline_sentences`, then its lead method against the
    constant rule with the paired differences, where there is a verdict to read."""
    lines = headline_sentences(summary, head)
    lead = _lead_method(head)
    if lead is None or head.get("caveats") or head["methods"][lead].get("circular") or reads_few(head):
        return lines  # a head that reads one layer or none: the headline said why nothing is read
    against = versus_constant(lead, head["methods"][lead], (head.get("references") or {}).get("constant"))
    return lines + ([against] if against else [])


def compare_headline(summary: dict[str, Any]) -> list[str]:
    """The reading's first sentences on compare's lead head (:func:`lead_sentences`), with the caveat that
    qualifies them where one does: report.html's reading and the terminal both lead with them, so that
    neither says α's ρ without top-1 only, the constant rule and the random reference beside it. [] without
    heads."""
    return lead_sentences(summary, lead_head(summary), headline_sentences) if summary.get("heads") else []


def lead_sentences(
    summary: dict[str, Any], head: dict[str, Any], said: Callable[[dict[str, Any], dict[str, Any]], list[str]]
) -> list[str]:
    """``said(summary, head)``, led by :func:`over_seeds_sentence` where ``head`` is one seed of several:
    the figures over every seed first, then that seed's sentences, named as its, as detail."""
    lines = said(summary, head)
    over = over_seeds_sentence(summary, head)
    if over is None:
        return lines
    seed, seeds = over[1]
    return [over[0], f"On seed {seed} of {seeds} (the tables below): {lines[0]}", *lines[1:]]


def headline_sentences(summary: dict[str, Any], head: dict[str, Any]) -> list[str]:
    """One head's first ablation in a sentence: its lead method's top-layer agreement and ρ beside their
    nulls, and how it orders the layers against its strongest rival; with the caveat or circularity
    that stops it from being read, said right after it, where there is one."""
    ablation = (head.get("ablations_run") or [summary.get("ablation")])[0]
    where = f"{head['name']}, {ablation} ablation, {head.get('n', summary.get('n'))} {summary.get('split', '')} inputs"
    lead = _lead_method(head)
    if lead is None:
        return [f"No attribution method ran on {head['name']}."]
    if note := reads_few(head):  # its agreement and ρ are one sign per row (or nothing): no finding to lead with
        return [f"No method is read on {where}: {inapplicable_said(note)}: {note}."]
    s = head["methods"][lead]
    random_ref = (head.get("references") or {}).get("random") or {}
    constant = (head.get("references") or {}).get("constant")
    first = (
        f"{_cap(name(lead))} picks the same top layer as the leave-one-layer-out effects on "
        f"{percent(s.get('top_layer_agreement'))} of inputs ({where}; the random reference: "
        f"{percent(random_ref.get('top_layer_agreement'))}"
        + (f", the constant rule: {percent(constant.get('top_layer_agreement'))}" if constant else "")
        + ")"
    )
    caveats = head.get("caveats") or []
    near = (head.get("chance") or {}).get("caveat")
    if near and near in caveats:  # α's agreement read first was taken as a finding about a head that learnt nothing
        return [f"No method is ranked on this ablation: {near}.", f"Its figures, read as such: {first}."]
    if caveats:
        return [first + ".", f"No method is ranked on this ablation: {caveats[0]}"]
    if s.get("circular"):
        return [first + ".", f"This cannot validate {name(lead)}: {s['circular']} (circular)."]
    rival = _rival(head, lead)
    nulls = _rho_nulls(head, lead)
    if rival is None:  # no method to read it against: the lead's ρ beside its nulls alone
        rho = f"its faithfulness ρ is {with_ci(s.get('faithfulness'), sign=False)}" + (f" ({nulls})" if nulls else "")
        return [f"{first}; {rho}."]
    return [f"{first}; {_versus(s, rival, head['methods'][rival], nulls)}."]


def reads_few(head: dict[str, Any]) -> str | None:
    """Why no method of ``head`` is read against another (:func:`.compare.records.inapplicable`: its
    logits move with one layer, or none); None where it reads several or its summary does not say."""
    read = head.get("layers_read")
    return inapplicable(read) if isinstance(read, list) else None


def versus_groups(head: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """(ablation, its entry) of each ablation whose methods were read against the constant rule; the
    head itself (ablation None) when it ran one ablation."""
    abls = head.get("ablations") or {}
    groups: list[tuple[str | None, dict[str, Any]]] = list(abls.items()) if len(abls) > 1 else [(None, head)]
    return [
        (a, s)
        for a, s in groups
        if "constant" in (s.get("references") or {}) and any(m.get("vs_constant") for m in s["methods"].values())
    ]


def bootstrap_text(summary: dict[str, Any]) -> str:
    """A compare run's resamples as the header says them: none were drawn below MIN_ROWS rows."""
    n_boot = (summary.get("config") or {}).get("n_boot")
    n = summary.get("n")
    if isinstance(n, int) and n < MIN_ROWS:
        return f"no bootstrap ({n} rows, fewer than {MIN_ROWS})"
    most = max(_paired_draws(summary.get("heads")), default=0)
    if isinstance(n_boot, int) and most > n_boot:
        return f"bootstrap {n_boot} (up to {most:,} for a paired interval whose bound lay within resampling error of 0)"
    return f"bootstrap {n_boot}"


def _paired_draws(o: Any) -> list[int]:
    """The resamples every paired difference under ``o`` drew (compare draws more where a bound lay
    within resampling error of 0)."""
    if isinstance(o, dict):
        own = [o["n_boot"]] if isinstance(o.get("n_boot"), int) and "ci_low" in o else []
        return own + [k for v in o.values() for k in _paired_draws(v)]
    if isinstance(o, list):
        return [k for v in o for k in _paired_draws(v)]
    return []


CONSTANT_WORDS = {
    "beats": "beats it",
    "worse": "does worse than it",
    "mixed": "beats it on some scores and does worse on others",
    "not shown": "does not beat it (every paired interval includes 0)",
    "identical": "is identical to it (the same profile: the rule's scores on every row, so its differences are 0 "
    "by construction, no finding)",
}


def level_text(*entries: dict[str, Any] | None) -> str:
    """The confidence of the paired intervals method − constant in ``entries`` (vs_constant records),
    in words: "98.3% intervals (95% for the three scores together)" since each is drawn at
    1 − 0.05/3; "95% intervals" for a summary written before that; "no intervals" without any, and
    why (:func:`no_interval_reason`)."""
    levels = {
        round(float(d.get("confidence") or 0.95), 4)
        for e in entries
        for d in (e or {}).values()
        if isinstance(d, dict) and d.get("ci_low") is not None
    }
    if not levels:
        return f"no intervals: {no_interval_reason(*entries)}"
    if len(levels) == 1 and (level := levels.pop()) > 0.95:
        return f"{level * 100:.1f}% intervals (95% for the three scores together)"
    return "95% intervals"


def versus_level(groups: list[tuple[Any, dict[str, Any]]]) -> str:
    """:func:`level_text` of every method's vs_constant record in ``groups`` (:func:`versus_groups`):
    what the method − constant rule table's caption says of its intervals."""
    return level_text(*[s.get("vs_constant") for _, entry in groups for s in entry["methods"].values()])


def families_text(*entries: dict[str, Any] | None, what: str = "intervals") -> str:
    """The levels of the beyond commands' comparisons in ``entries`` (records with a ``family``: prune's
    alpha_vs entries, early-exit's comparisons, diagnose's errors and shift), each family once, in
    words (:func:`.training.stats.family_text`); "95% intervals" for a summary written before them."""
    seen: list[dict[str, Any]] = []
    for e in entries:
        fam = (e or {}).get("family")
        if isinstance(fam, dict) and fam not in seen:
            seen.append(fam)
    return "; ".join(family_text(f, what) for f in seen) if seen else family_text(None, what)


def no_interval_reason(*entries: dict[str, Any] | None) -> str:
    """Why the paired differences in ``entries`` (vs_constant records) have no interval: fewer than
    MIN_ROWS shared rows (compare draws none there, whatever --bootstrap says), else --bootstrap 0."""
    rows = [d["n"] for e in entries for d in (e or {}).values() if isinstance(d, dict) and isinstance(d.get("n"), int)]
    if rows and min(rows) < MIN_ROWS:
        return f"{min(rows)} shared rows, fewer than {MIN_ROWS}"
    return "--bootstrap 0"


def versus_constant(method: str, s: dict[str, Any], constant: dict[str, Any] | None) -> str | None:
    """The verdict of ``method`` against the constant rule, with the paired differences, or None
    when there is no verdict to read (no constant rule, a circular pair, a caveat)."""
    vs = s.get("vs_constant") or {}
    word = vs.get("verdict")
    if not constant or word in (None, "circular", "withheld", "no constant"):
        return None
    what = (constant.get("profile") or {}).get("what", "one layer profile")
    rule = f"the constant rule ({what} over the other half of the rows, the same for every input)"
    if word == NOT_APPLICABLE:  # a head that reads one layer (or none): the rule ranks as the effects do
        why = f": {vs['note']}" if vs.get("note") else ""
        return f"{_cap(name(method))} is not read against {rule}: {inapplicable_said(vs.get('note'))}{why}."
    head = f"Against {rule}, {name(method)}"
    if word in ("untested", "too few rows"):  # "untested" for both, in summaries written before "too few rows"
        why = no_interval_reason(vs)
        return f"{head} was not tested: no intervals ({'run with --bootstrap N' if why == '--bootstrap 0' else why})."
    parts = ", ".join(f"{label} {with_ci(vs.get(key))}" for key, label in VERSUS_LABELS.items())
    which = f" ({c})" if (c := carried(vs)) else ""
    return f"{head} {CONSTANT_WORDS.get(str(word), str(word))}{which}: {parts} (paired {level_text(vs)})."


def relied_on(head: dict[str, Any], effect: str = "prob") -> str | None:
    ranked = (head.get("lolo") or {}).get("most_relied_on") or []
    if not ranked:
        return None
    top = ranked[0]
    if few := reads_few(head):  # only the layer it reads moves its logits: its lead is so by construction
        why = "no layer moves its logits" if few == NO_LAYER else f"only removing {top['layer']} moves its logits"
        return (
            f"{head['name']}: the layer whose removal changes the prediction most: {inapplicable_said(few)}: "
            f"{why}, by construction."
        )
    of = "the target logit" if effect == "logit" else "p"
    lead = (head.get("lolo") or {}).get("top_lead")
    if lead and len(ranked) > 1 and outcome(lead) != "better":  # "most" only for a lead shown over the same rows
        second = ranked[1]
        why = (
            f"paired difference {with_ci(lead, digits=3)}"
            if outcome(lead) != "undecided"
            else f"{lead.get('n')} rows: no paired interval under {MIN_ROWS}"
            if isinstance(lead.get("n"), int) and lead["n"] < MIN_ROWS
            else "no paired interval"
        )
        return (
            f"{head['name']}: removing {top['layer']} and {second['layer']} change the prediction most, not told "
            f"apart (mean drops of {of} {num(top.get('mean_effect'), 3, sign=True)} and "
            f"{num(second.get('mean_effect'), 3, sign=True)}; {why})."
        )
    ahead = f"; ahead of {lead['runner_up']} by {with_ci(lead, digits=3)}, paired over the same rows" if lead else ""
    return (
        f"{head['name']}: removing {top['layer']} changes the prediction most "
        f"(mean drop of {of} {num(top.get('mean_effect'), 3, sign=True)}{ahead})."
    )


def compare_reading(summary: dict[str, Any], what: str = "These sentences") -> Reading:
    """Compare's warnings and :func:`compare_verdicts` (their caveat naming them ``what``), then the
    other heads' sentences."""
    heads = summary.get("heads") or []
    if not heads:
        return Reading(["This compare run scored no head."])
    lead = lead_head(summary)
    details = []
    for h in heads:
        if h is not lead:
            details.append(" ".join(head_sentences(summary, h)))
    details += [line for h in heads if (line := relied_on(h, summary.get("effect", "prob")))]
    left_out = summary.get("rows_left_out")
    if isinstance(left_out, dict) and left_out.get("n"):
        details.append(f"{left_out['n']} rows were left out: {left_out.get('why', 'non-finite values')}.")
    # the cache's warnings, then a head on another cache or on its training rows, what fit-head said of a
    # head, then what the run said of its output folder
    warned = _warnings({"warnings": [w for _, w in compare_warnings(summary)]})
    return Reading(warned + compare_verdicts(summary, what), details)


def compare_verdicts(summary: dict[str, Any], what: str = "These sentences") -> list[str]:
    """Compare's verdicts on its lead head and what they rest on, said as ``what``: the sanity checks
    that undo them first, then the head's sentences (the constant rule's among them), then the seeds
    they read. The demo's page leads with these too: with its first sentence alone, the verdict
    against the constant rule sat in the list under a caveat that spoke of "these sentences"."""
    lead = lead_head(summary)
    undone = [sentence(line) for line in sanity_failed(summary)]
    return undone + lead_sentences(summary, lead, head_sentences) + seed_caveat(summary, lead, what)


def lead_head(summary: dict[str, Any]) -> dict[str, Any]:
    """The head compare's reading is read from: the one with α, else the first; among the heads that read
    several layers where there is one (a head that reads one layer has no comparison to lead with)."""
    heads = [h for h in summary["heads"] if not reads_few(h)] or summary["heads"]
    return next((h for h in heads if "alpha" in (h.get("methods") or {})), heads[0])


def seed_caveat(summary: dict[str, Any], head: dict[str, Any], what: str = "These sentences") -> list[str]:
    """What the verdicts on ``head`` rest on, said right after them: which seed of how many, or that
    they read one fitted seed and hold for that fit only (a verdict one seed gives is never the
    reading's first word alone; a caveat in the list under it was read as a footnote)."""
    return seeds_sentence(summary, head, what) or [one_seed_sentence(what, head["name"])]


def seeds_said(s: dict[str, Any], over: bool = False) -> str:
    """What a prune or early-exit summary's intervals run over: its ``seeds_how`` ("3 refit seeds, α
    from one head", "over 3 fitted LAYA heads …"), or the seed count where it has none (--no-refit, an
    older summary); led by "over" for a sentence where ``over``."""
    n = len(s["seeds"])
    how = s.get("seeds_how") or counted(n, "seed")
    return how if not over or how.startswith("over ") else f"over {how}"


def seeds_read(s: dict[str, Any], one: bool) -> str:
    """How a lead's differences were read: "paired over 3 refit seeds …", or "from 1 refit seed …"
    where each is one seed's value (nothing is paired into an interval)."""
    return f"from {seeds_said(s)}" if one else f"paired {seeds_said(s, over=True)}"


def one_seed_sentence(what: str, names: str, command: str = "compare") -> str:
    """Why verdicts read from one fitted seed of a head are not yet verdicts, and what reads them all
    (``command``: compare, or diagnose, which take a fit-head folder alike)."""
    return (
        f"{what} read one fitted seed of {names}: a verdict that changes with the seed a head "
        f"was fitted with is not a verdict; give {command} the fit-head folder (every seed of the head) to read "
        "them together, after fit-head --seeds 3 or more where the head was fitted under one seed."
    )


def seeds_sentence(summary: dict[str, Any], head: dict[str, Any], what: str = "These sentences") -> list[str]:
    """Where ``head`` is one seed of several: which seed the sentences above read, and whether the
    other seeds give the same verdicts on that ablation (the across-seed caveats, said here so that a
    verdict one seed gives is never the page's first word alone); [] for a head with one seed."""
    across = summary.get("across_seeds") or {}
    group = seed_group(summary, head)
    if group is None:
        return []
    seeds = group.get("seeds") or []
    seed = seeds[group["members"].index(head["name"])]
    ablation = (head.get("ablations_run") or [summary.get("ablation")])[0]
    prefix = f"{group['head']} ({ablation}): "
    said = [c.removeprefix(prefix) for c in across.get("caveats") or [] if c.startswith(prefix)]
    where = f"{what} read seed {seed} of {len(seeds)} of {group['head']} ({ablation} ablation)"
    if over_seeds_sentence(summary, head) is not None:  # the first sentence read every seed
        where = f"Seed {seed}'s sentences read one of the {len(seeds)} seeds of {group['head']} ({ablation} ablation)"
    rival = _rival_by_seed(summary, head, group)
    alike = rival is not None and rival[0]
    if rival is not None and not alike:  # the headline's comparison with its rival is a verdict the seeds differ on
        said.insert(0, rival[1])
    if not said:
        also = f", and {rival[1]}" if rival else ""
        same = f"each of the {len(seeds)} seeds gives the same verdicts and best marks{also}"
        return [f"{where}; {same} (the across-seed table below)."]
    unlike = "the seeds do not all read alike, so read no one seed's verdict alone"
    return [f"{where}, and {unlike}: " + "; ".join(said) + "."] + ([_cap(rival[1]) + "."] if rival and alike else [])


def seed_group(summary: dict[str, Any], head: dict[str, Any]) -> dict[str, Any] | None:
    """The across-seed group ``head`` is one seed of (summary.json's ``across_seeds``); None for one seed."""
    groups = (summary.get("across_seeds") or {}).get("groups") or []
    return next((g for g in groups if head["name"] in (g.get("members") or [])), None)


# the verdict of the lead's paired differences to the constant rule over the seeds (verdict_over_seeds)
OVER_SEEDS_WORDS = {
    "beats": "it beats the rule over the seeds",
    "worse": "it does worse than the rule over the seeds",
    "mixed": "over the seeds it beats the rule on some scores and does worse on others",
    "not shown": "each seed's head {word}, but over the seeds it is not shown to (every interval includes 0)",
}


def over_seeds_sentence(summary: dict[str, Any], head: dict[str, Any]) -> tuple[str, tuple[Any, int]] | None:
    """The headline over every seed of ``head``'s group, read from summary.json's ``across_seeds`` (not
    worked out again): the lead method's top-layer agreement and ρ, mean [95% t-interval over the seeds],
    the constant rule's and the random reference's means beside them, and its paired differences to the
    rule over the seeds with their verdict (``verdict_over_seeds``; where the seeds' verdicts differ, each
    seed's). One seed's figures agree with a fixed layer profile as often as they do not: the mean over the
    seeds is what a head refitted with another seed would be read by. With the seed of ``head`` and the
    seed count; None where ``head`` has one seed or its lead method has no row over the seeds."""
    group = seed_group(summary, head)
    lead = _lead_method(head)
    if group is None or lead is None or head.get("caveats") or reads_few(head):
        return None
    if head["methods"][lead].get("circular"):
        return None
    ablation = (head.get("ablations_run") or [summary.get("ablation")])[0]
    entry = (group.get("ablations") or {}).get(ablation) or {}
    row = (entry.get("methods") or {}).get(lead)
    if not row:
        return None
    refs = entry.get("references") or {}
    seeds = group.get("seeds") or []

    def mean(ref: str, key: str, show: Callable[[Any], str]) -> str:
        return show(((refs.get(ref) or {}).get(key) or {}).get("mean"))

    def share(d: dict[str, Any]) -> str:
        ci = "" if d.get("ci_low") is None else f" [{percent(d['ci_low'])}, {percent(d['ci_high'])}]"
        return percent(d.get("mean")) + ci

    def beside(d: dict[str, Any], nulls: list[str]) -> str:
        """The parentheses after an estimate: the across-seed table's note where its interval was cut
        to the score's range (an end at 100% is not the t-interval's), then the nulls' figures."""
        said = [CUT_SAID] * bool(d.get("clipped")) + [n for n in nulls if n]  # each a list of its own
        return f" ({'; '.join(said)})" if said else ""

    agree, rho = row.get("top_layer_agreement") or {}, row.get("faithfulness") or {}
    nulls = [(r, w) for r, w in (("constant", "the constant rule"), ("random", "the random reference")) if r in refs]
    nulls_rho = [f"{w} {mean(r, 'faithfulness', num)}" for r, w in nulls]  # top-1 only's before them, in its own list
    first = (
        f"Over {group['head']}'s {len(seeds)} seeds ({ablation} ablation, {head.get('n', summary.get('n'))} "
        f"{summary.get('split', '')} inputs each; mean [95% t-interval]), {name(lead)} picks the "
        f"same top layer as the leave-one-layer-out effects on {share(agree)} of inputs"
        + beside(agree, [", ".join(f"{w}: {mean(r, 'top_layer_agreement', percent)}" for r, w in nulls)])
        + f", faithfulness ρ {with_ci(rho, sign=False)}"
        + beside(rho, [*_top1_over_seeds(refs, rho, name(lead)), ", ".join(nulls_rho)])
    )
    diffs = [(label, row.get(f"{key}_minus_constant") or {}) for key, label in VERSUS_LABELS.items()]
    diffs = [(label, d) for label, d in diffs if d.get("mean") is not None]
    if "constant" not in refs or not diffs:
        return first + ".", (group["seeds"][group["members"].index(head["name"])], len(seeds))
    over = kept_verdict_over_seeds(row)
    verdicts = [str(v) for v in row.get("verdicts") or []]
    if over in OVER_SEEDS_WORDS:
        each = {"beats": "beats it", "worse": "does worse than it"}.get(verdicts[0], "beats or does worse than it")
        # one interval is enough to beat the rule: name the scores that carry it, as each seed's verdict does
        ests = {key: row.get(f"{key}_minus_constant") for key in VERSUS_LABELS}
        why = carried({"verdict": over, **ests})
        word = OVER_SEEDS_WORDS[str(over)].format(word=each) + (f" ({why})" if why else "")
    elif len(set(verdicts)) == 1:
        word = f"each seed's verdict: {VERDICTS.get(verdicts[0], verdicts[0])}"
    else:
        word = f"the seeds' verdicts differ: {by_seed(seeds, verdicts)}"
    at = next((level(d) for _, d in diffs if d.get("ci_low") is not None), None)
    paired = ", ".join(f"{label} {with_ci(d)}{beside(d, [])}" for label, d in diffs)
    drawn = f" ({at} t-intervals)" if at else ""
    text = f"{first}; {name(lead)} − constant rule over the seeds{drawn}: {paired}: {word}."
    return text, (group["seeds"][group["members"].index(head["name"])], len(seeds))


def _top1_over_seeds(refs: dict[str, Any], rho: dict[str, Any], lead: str) -> list[str]:
    """Top-1 only's ρ over the seeds (what naming the top layer alone earns: 0.87 on every digits demo
    seed, above α's whole interval [0.55, 0.83]), and where the lead's ρ lies below it; [] where the
    summary has none."""
    top = ((refs.get("top1_only") or {}).get("faithfulness") or {}).get("mean")
    if top is None:
        return []
    d = (refs.get("top1_only") or {}).get("faithfulness") or {}
    text = f"top-1 only {num(top)}" + (" on every seed" if d.get("ci_low") == top == d.get("ci_high") else "")
    mean, high = rho.get("mean"), rho.get("ci_high")
    if mean is not None and round(mean, 2) < round(top, 2):  # as printed: both reading 0.87 is no "below"
        floor = d.get("ci_low") if d.get("ci_low") is not None else top
        below = high is not None and high < floor
        text += f": {lead} lies below it" + (" over its whole interval" if below else ", not over its interval")
    return [text]


RIVAL_WORDS = {
    "better": "orders the layers better than",
    "worse": "orders the layers worse than",
    "no different": "is not shown to order the layers better or worse than",
    "undecided": "is not tested against",
    "withheld": "is not read (a caveat withholds every ranking) against",
}


def _rival_by_seed(summary: dict[str, Any], head: dict[str, Any], group: dict[str, Any]) -> tuple[bool, str] | None:
    """How the headline's lead method orders the layers against its rival on every seed of ``group``,
    each seed read from its own paired difference (the headline reads one seed's; a seed with a caveat:
    "withheld", :func:`pair_verdict`): (True, "α orders the layers worse than IG on each of the 3 seeds …")
    where all read alike, else (False, "α against IG differs between seeds: …"). None where the headline
    compares the lead with no rival."""
    lead = _lead_method(head)
    if lead is None or head.get("caveats") or head["methods"][lead].get("circular") or reads_few(head):
        return None
    rival = _rival(head, lead)
    if rival is None:
        return None
    by_name = {h.get("name"): h for h in summary.get("heads") or []}
    words = []
    for member in group.get("members") or []:
        seed = by_name.get(member) or {}
        s = (seed.get("methods") or {}).get(lead) or {}
        words.append(pair_verdict((s.get("vs_methods") or {}).get(rival), seed.get("caveats") or []))
    if len(set(words)) == 1:
        each = f"on each of the {len(words)} seeds (each seed's paired difference)"
        over = _over_seeds(head, group, lead, rival, words[0])
        return True, f"{name(lead)} {RIVAL_WORDS[words[0]]} {name(rival)} {each}{over}"
    short = [RIVAL_WORDS[w].removesuffix(" than").removesuffix(" against") for w in words]
    return (
        False,
        f"{name(lead)} against {name(rival)} differs between seeds: {by_seed(group.get('seeds') or [], short)}",
    )


def versus_pair(entry: dict[str, Any], method: str, rival: str) -> dict[str, Any] | None:
    """An across-seed entry's paired difference of ``method`` to ``rival`` over the seeds (its ``vs_methods``),
    with the ``verdict`` :func:`pair_verdict` reads it by (the entry's ``caveats_per_seed``)."""
    d = ((entry.get("vs_methods") or {}).get(method) or {}).get(rival)
    return {**d, "verdict": pair_verdict(d, entry.get("caveats_per_seed") or [])} if isinstance(d, dict) else d


def _over_seeds(head: dict[str, Any], group: dict[str, Any], lead: str, rival: str, word: str) -> str:
    """The mean of the lead's paired difference to its rival over the seeds, with its t-interval, after
    a verdict every seed gives alike: each seed's interval holds that seed's head fixed, so "worse on each
    of the 3 seeds" is not shown for a head refitted with another seed where this one includes 0. The
    verdict is :func:`versus_pair`'s. "" where the summary holds none or no seed reads better or worse."""
    entries = group.get("ablations") or {}
    entry: dict[str, Any] = entries.get((head.get("ablations_run") or list(entries) or [None])[0]) or {}
    d = versus_pair(entry, lead, rival)
    if word not in ("better", "worse") or not d or d.get("ci_low") is None:
        return ""
    over = f"its mean difference in ρ over the seeds {with_ci(d)}"
    if d["verdict"] == word:
        return f", and {over} lies {'above' if word == 'better' else 'below'} 0 too"
    if d["verdict"] != "no different":  # the same difference on every seed: no spread, no interval to read
        return ""
    at = f"{level(d)} t-interval over the seeds"
    return f", but {over} includes 0 ({at}): not shown for the head refitted with another seed"


# -- fit-head ------------------------------------------------------------------------------------


def interval(
    d: dict[str, Any] | None, digits: int = 3, clip: bool = True, sign: bool = False, *, diff: bool = False
) -> str:
    """'[lo, hi]' of an estimate; accuracies (``clip``) stay inside [0, 1]. A difference of two
    accuracies (``diff``) lies in [−1, 1]: a t-interval over few seeds that reaches past it is said to be
    uninformative rather than printed with bounds no difference can take (docs/METHOD.md)."""
    if not d or d.get("ci_low") is None or d.get("ci_high") is None:
        one = d is not None and (d.get("n") == 1 or len(d.get("values") or []) == 1)
        return f"({F1_ONE_SEED})" if one else "[n/a]"  # one seed: no interval over seeds, not a missing value
    lo, hi = float(d["ci_low"]), float(d["ci_high"])
    if diff and (lo < -1 or hi > 1):
        seeds = f" at {d['n']} seeds" if d.get("n") else ""
        return f"[uninformative{seeds}: the interval reaches past ±1]"
    if clip:
        lo, hi = max(0.0, lo), min(1.0, hi)
    return f"[{num(lo, digits, sign)}, {num(hi, digits, sign)}]" + ROWS_MARK * bool(d.get(OVER_ROWS))


# marks an accuracy or a difference whose interval is the test rows' own (one seed: none over seeds to give)
ROWS_MARK = " (rows)"
OVER_ROWS = "over_rows"  # set by seeds_or_rows on the one-seed difference it returns: interval() marks it


def seeds_or_rows(head: dict[str, Any], key: str, d: dict[str, Any] | None) -> dict[str, Any] | None:
    """A head's difference ``d`` over seeds, or from one seed, which gives no interval, its test rows'
    own (summary.json's ``test_rows[key]``: ``vs_last``, ``vs_probe``, ``vs_chance``); ``d`` where a
    summary has none."""
    rows = (head.get("test_rows") or {}).get(key)
    return {**rows, OVER_ROWS: True} if rows and d is not None and d.get("ci_low") is None else d


BASELINE_NEAR = " (vs a baseline near chance)"
BASELINE_BELOW = " (vs a baseline below its layer's probe)"


def vs_last_cell(head: dict[str, Any], d: dict[str, Any] | None) -> str:
    """A fit table's Δ-vs-last cell, marked where last is itself near chance (summary.json's
    ``baseline_near_chance``): a gain over a head that learned nothing read as a gain over a baseline; and
    where the gate read last below the probe on its own layer (``baseline_below_probe``): the gain then
    measures how under-fitted last is as much as what the head adds."""
    if head["head"] == "last":
        return "(baseline)"
    near = BASELINE_NEAR * bool(head.get("baseline_near_chance")) + BASELINE_BELOW * bool(
        head.get("baseline_below_probe")
    )
    if same_on_every_seed(d):  # "-0.003 [-0.003, -0.003]" read as certainty where there is no spread at all
        return f"{num((d or {})['mean'], 3, sign=True)} (same on every seed){near}"
    return est(d, 3, clip=False, sign=True, diff=True) + near


def accuracy_text(d: dict[str, Any] | None, n_test: int | None, digits: int = 3) -> str:
    """A head's mean test accuracy with its interval: over the seeds, the t-interval kept inside [0, 1]
    (:func:`accuracy_notes` says where it was cut); from one seed, which gives none, the 95% Wilson
    interval over the ``n_test`` test rows, marked ROWS_MARK: a bare "0.972" under a 95% interval header
    read as exact."""
    if not d or d.get("mean") is None:
        return "—"
    if d.get("ci_low") is None and n_test:
        low, high = wilson(float(d["mean"]) * n_test, int(n_test))
        return f"{num(d['mean'], digits)} [{num(low, digits)}, {num(high, digits)}]{ROWS_MARK}"
    return est(d, digits)


def _acc_interval(d: dict[str, Any] | None, n_test: int | None) -> str:
    """The interval part of :func:`accuracy_text`, said in words where it is the test rows' own, and where
    it was cut to [0, 1]."""
    if not d or d.get("mean") is None:
        return "[n/a]"
    if d.get("ci_low") is None and n_test:
        return accuracy_text(d, n_test).split(" ", 1)[1].replace(ROWS_MARK, f", Wilson over the {n_test} test rows")
    return interval(d) + _cut_text(d)


def _cut_text(d: dict[str, Any] | None, *, diff: bool = False, caption: bool = False) -> str:
    """ ", cut to [0, 1] from [t bounds]" where an interval over the seeds reached outside [0, 1] (``diff``:
    a difference's, [−1, 1]), else "": the words a table's caption says it in (training.stats.cut_note), for a
    sentence that shows the cut interval. Its t bounds are the record's own where it holds them uncut (fit-head's
    accuracies, early-exit's fixed depths), ``t_low``/``t_high`` where it holds the interval cut (``clipped``);
    ``caption``: written as that note writes them (a difference's always are), the same figures in both places."""
    d = d or {}
    if d.get("clipped"):
        low, high = d.get("t_low"), d.get("t_high")
    elif diff or not _was_cut(d):  # a difference kept uncut is shown uncut: nothing to say
        return ""
    else:
        low, high = d["ci_low"], d["ci_high"]
    if low is None or high is None:
        return ""
    if caption or diff:  # "+1.003", not "+1.00", which would read as inside the range, as cut_note writes it
        bounds = [f"{v:+.{next((k for k in (2, 3, 4) if round(v, k) != round(v)), 6)}f}" for v in (low, high)]
    else:
        bounds = [num(low, 3), num(high, 3)]
    return f", cut to {'[−1, 1]' if diff else '[0, 1]'} from [{', '.join(bounds)}]"


def _was_cut(d: dict[str, Any]) -> bool:
    return d.get("ci_low") is not None and (d["ci_low"] < 0 or d["ci_high"] > 1)


# a macro-F1 from one seed: no interval over seeds, and the test rows give it no Wilson interval, it being
# no share of rows; said in words where "[n/a]" read as a missing value
F1_ONE_SEED = "one seed: no interval"


def f1_text(d: dict[str, Any] | None, digits: int = 3) -> str:
    """A head's mean test macro-F1 with its interval over the seeds kept inside [0, 1] (:func:`accuracy_notes`
    says where it was cut, given ``f1``); from one seed, F1_ONE_SEED in its place."""
    if not d or d.get("mean") is None:
        return "—"
    if d.get("ci_low") is None:
        return f"{num(d['mean'], digits)} ({F1_ONE_SEED})"
    return est(d, digits)


def _f1_said(d: dict[str, Any]) -> str:
    """The lead's macro-F1 as its accuracy is said there: with where its interval was cut, or in words
    where one seed gives none."""
    return f1_text(d) if d.get("ci_low") is None else f"{num(d['mean'], 3)} {interval(d)}{_cut_text(d)}"


def accuracy_notes(heads: Sequence[dict[str, Any]], n_test: int | None, f1: bool = False) -> list[str]:
    """What :func:`accuracy_text` showed that its cells do not say: the accuracy intervals over the seeds
    cut to [0, 1], with their t bounds, in the words compare and diagnose use; and that an interval from
    one seed is over the test rows. ``f1``: the macro-F1 intervals (:func:`f1_text`) are shown too, and
    where they were cut is said as well."""

    def cut(key: str) -> dict[str, dict[str, Any]]:
        return {
            str(h["head"]): {"clipped": True, "t_low": d["ci_low"], "t_high": d["ci_high"], "n": d.get("n")}
            for h in heads
            if _was_cut(d := h.get(key) or {})
        }

    note = cut_note(cut("test_acc"), "test accuracy", "[0, 1]", "the range of an accuracy", "seeds at 95%")
    f1_cut = cut("test_macro_f1") if f1 else {}
    f1_note = cut_note(f1_cut, "macro-F1", "[0, 1]", "the range of a macro-F1", "seeds at 95%")
    one = [h["head"] for h in heads if (h.get("test_acc") or {}).get("ci_low") is None]
    paired = any((h.get("test_rows") or {}).get("vs_last") for h in heads)
    rows = (
        f"{ROWS_MARK.strip()}: one seed gives no interval over seeds; the 95% Wilson interval over the "
        f"{n_test} test rows is shown ({', '.join(one)})"
        + ("; beside a difference to last, the paired 95% interval over those rows" if paired else "")
        if one and n_test
        else None
    )
    return [t for t in (note, f1_note, rows) if t]


def est(d: dict[str, Any] | None, digits: int = 4, clip: bool = True, sign: bool = False, *, diff: bool = False) -> str:
    """'mean [lo, hi]' of an estimate, "—" without one; ``clip`` and ``diff`` as in :func:`interval`."""
    if not d or d.get("mean") is None:
        return "—"
    return f"{num(d['mean'], digits, sign)} {interval(d, digits, clip, sign, diff=diff)}"


def with_ci(d: dict[str, Any] | None, sign: bool = True, digits: int = 2) -> str:
    """'+0.12 [+0.03, +0.20]' of an estimate (two decimals by default); no interval when it has none."""
    if not d or d.get("mean") is None:
        return "—"
    ci = "" if d.get("ci_low") is None else f" [{num(d['ci_low'], digits, sign)}, {num(d['ci_high'], digits, sign)}]"
    return num(d["mean"], digits, sign) + ci


def peak(row: list[Any]) -> int:
    return max(range(len(row)), key=lambda i: row[i] if row[i] is not None else -1.0)


def _seed_peaks(layers: list[str], per_seed: dict[str, list[Any]]) -> dict[str, list[str]]:
    """Each layer on which some seed's mean weights peak -> those seeds, in seed order."""
    peaks: dict[str, list[str]] = {}
    for seed, row in per_seed.items():
        if len(row) == len(layers):
            peaks.setdefault(layers[peak(row)], []).append(seed)
    return peaks


def fit_reading(summary: dict[str, Any], profiles: dict[str, Any] | None = None) -> Reading:
    heads = summary.get("heads") or []
    if not heads:
        return Reading(["This fit-head run fitted no head."])
    by_name = {h["head"]: h for h in heads}
    lead = by_name.get("laya") or max(heads, key=lambda h: (h.get("test_acc") or {}).get("mean") or 0.0)
    acc, f1 = lead.get("test_acc") or {}, lead.get("test_macro_f1") or {}
    title = "LAYA" if lead["head"] == "laya" else lead["head"]
    n_test = (summary.get("split") or {}).get("n_test")
    first = (
        f"{title} reaches a test accuracy of {num(acc.get('mean'), 3)} over {counted(int(lead.get('n') or 0), 'seed')} "
        f"(95% interval {_acc_interval(acc, n_test)}"
        + (f"; macro-F1 {_f1_said(f1)})" if f1.get("mean") is not None else ")")
    )
    d = seeds_or_rows(lead, "vs_last", (lead.get("delta_vs_last") or {}).get("test_acc"))
    if lead["head"] != "last" and d and d.get("mean") is not None:
        said = [
            *(["itself near chance"] if lead.get("baseline_near_chance") else []),
            *(["itself below the probe on its own layer"] if lead.get("baseline_below_probe") else []),
            *filter(None, [gap_shown(d)]),
        ]
        first += f", {est(d, gap_digits(d), clip=False, sign=True, diff=True)} against the last-layer head" + (
            f" ({'; '.join(said)})" if said else ""
        )
    chance = (summary.get("quality") or {}).get("chance")
    first += "".join(f", {null}" for null in _fit_nulls(lead, chance))
    # what fit-head said of its own options (--layers out of depth order) leads, as a compare run's warnings do
    majority_f1 = (summary.get("quality") or {}).get("majority_macro_f1")
    at = _at_chance(title, lead, chance, n_test, majority_f1)
    lead_lines = [*_warnings(summary), *([at] if at else []), first + "."]
    weights = lead.get("layer_weights") or {}
    layers, pooled = weights.get("layers") or [], weights.get("pooled") or []
    per_seed = dict(weights.get("per_seed") or {})
    if not pooled and profiles:
        p = (profiles.get("alpha") or {}).get(lead["head"]) or (profiles.get("static") or {}).get(lead["head"]) or {}
        layers, pooled = profiles.get("layer_names") or [], p.get("mean") or []
        per_seed = dict(zip(map(str, p.get("seeds") or []), p.get("seed_means") or p.get("weights") or []))
    if layers and pooled and len(layers) == len(pooled):
        what = "α" if lead["head"] == "laya" else "its layer weights"
        peaks = _seed_peaks(layers, per_seed)
        if len(peaks) > 1:  # the pooled peak holds for no seed's reading: say each seed's, as the gate does
            each = ", ".join(f"{layer} (seed{'s' * (len(s) > 1)} {', '.join(s)})" for layer, s in peaks.items())
            second = f"{_cap(what)} puts the most weight on a different layer by seed: {each}"
        else:
            k = peak(pooled)
            # beside the uniform weight 1/L, which an α that learned no preference gives each layer
            uniform = num(1 / len(layers))
            second = (
                f"{_cap(what)} puts the most weight on {layers[k]} "
                f"({num(pooled[k])} on average over test inputs, uniform {uniform})"
            )
        agree = lead.get("seed_agreement") or {}
        if agree.get("top_layer_agreement") is not None and int(agree.get("seeds") or 0) > 1:
            constant = agree.get("top_layer_agreement_constant")
            second += (
                f"; the seeds pick the same top layer on {percent(agree['top_layer_agreement'])} of inputs "
                f"({chance_text(agree)}"
                + ("" if constant is None else f"; each seed's mean profile for every input: {percent(constant)}")
                + ")"
            )
        lead_lines.append(second + ".")
    details = [
        f"{h['head']}: test accuracy {num((h.get('test_acc') or {}).get('mean'), 3)} "
        f"{_acc_interval(h.get('test_acc'), n_test)} over {counted(int(h.get('n') or 0), 'seed')}"
        + (
            f" (near chance: {not_learned('it', h['test_acc']['mean'], chance, f1=_f1(h), majority_f1=majority_f1)})."
            if chance is not None and _at_chance(h["head"], h, chance, n_test)
            else "."
        )
        for h in heads
        if h is not lead
    ]
    n_warn = sum(len(h.get("warnings") or []) for h in heads)
    if n_warn:
        details.append(f"The quality gate raised {n_warn} warning{'s' * (n_warn > 1)}: see below.")
    return Reading(lead_lines, details)


def _f1(head: dict[str, Any]) -> float | None:
    return (head.get("test_macro_f1") or {}).get("mean")


def gap_shown(d: dict[str, Any]) -> str:
    """What the interval of a gap over seeds shows, said alike for every gap of fit-head's headline (to
    the last-layer head, the probe, chance): "" without an interval (one seed)."""
    if d.get("ci_low") is None or d.get("ci_high") is None:
        return ""
    if same_on_every_seed(d):
        return same_text(d)
    which = f"the {d['rows']} test rows' interval" if d.get(OVER_ROWS) else "the interval"
    if d["ci_low"] > 0 or d["ci_high"] < 0:
        return f"{which} excludes 0"
    return f"{which} includes 0: no difference shown"


def gap_digits(d: dict[str, Any], digits: int = 3, most: int = 6) -> int:
    """Decimals for a gap whose interval excludes 0: enough that neither bound reads as 0 ("-0.000"
    beside "excludes 0" reads as a contradiction; -0.0002 does not); ``digits`` otherwise."""
    if not gap_shown(d).endswith("interval excludes 0"):  # also "" where a bound is missing
        return digits
    bounds = [float(d["ci_low"]), float(d["ci_high"])]
    while digits < most and any(round(b, digits) == 0 for b in bounds):
        digits += 1
    return digits


def _minus(d: dict[str, Any], x: float) -> dict[str, Any]:
    """A t-estimate over seeds less a number every seed shares (chance, the probe fitted once): the
    interval of the per-seed differences, which pair trivially; each seed's value kept (same_on_every_seed)."""
    out = {k: None if d.get(k) is None else d[k] - x for k in ("mean", "ci_low", "ci_high")}
    return out | {"values": [None if v is None else v - x for v in d.get("values") or []]}


# one seed's gap to the probe: the head's Wilson interval less the probe's accuracy, itself read on the same rows
PROBE_FIXED = (
    "the probe is one fit, its accuracy taken as fixed: the interval covers the head's test rows only (where the "
    "probe is the stronger of two on these rows, its accuracy errs high)"
)


def _fit_nulls(head: dict[str, Any], chance: float | None) -> list[str]:
    """A head's test accuracy less its other nulls, each with its interval over seeds: the single-layer
    probe the gate reads it against, and chance (the majority class); [] in summaries without them."""
    acc, probe = head.get("test_acc") or {}, head.get("probe_reference") or {}
    if acc.get("mean") is None:
        return []
    out = []
    if probe.get("test_acc") is not None:
        d = seeds_or_rows(head, "vs_probe", _minus(acc, probe["test_acc"])) or {}
        shown = "; " * bool(gap_shown(d)) + gap_shown(d)
        # the probe is fitted once: its own variation is in no interval (training.quality.PROBE_FITS)
        fixed = PROBE_FIXED if d.get(OVER_ROWS) else PROBE_ONE_FIT
        one_fit = f"; {fixed}" if d.get("ci_low") is not None and not same_on_every_seed(d) else ""
        rows = probe.get("test_rows") or {}
        if one_fit and not d.get(OVER_ROWS) and rows.get("ci_low") is not None:
            # several seeds: the gate read the test rows too (training.quality, "below the probe")
            one_fit += (
                f"; the seeds' mean accuracy over the {rows.get('n')} test rows lies in [{num(rows['ci_low'], 3)}, "
                f"{num(rows['ci_high'], 3)}] (95% Wilson)"
            )
        out.append(
            f"{est(d, gap_digits(d), clip=False, sign=True, diff=True)} against the single-layer probe on "
            f"{probe['layer']} ({num(probe['test_acc'], 3)}{shown}{one_fit})"
        )
    if chance is not None:
        d = seeds_or_rows(head, "vs_chance", _minus(acc, chance)) or {}
        shown = "; " * bool(gap_shown(d)) + gap_shown(d)
        out.append(
            f"{est(d, gap_digits(d), clip=False, sign=True, diff=True)} against chance ({num(chance, 3)}, the majority "
            f"class{shown})"
        )
    return out


def _at_chance(
    title: str,
    head: dict[str, Any],
    chance: float | None,
    n: int | None,
    majority_f1: float | None = None,
) -> str | None:
    """The verdict on a head the quality gate finds near chance (its rule, docs/METHOD.md, "Quality gate",
    over the ``n`` test rows; None in older summaries: the accuracy rule alone), said before its numbers:
    an accuracy beside a bare "+0.004 against last" read as a head that works. Where its accuracy cannot
    tell (training.quality.not_learned), it points to the head's macro-F1 beside ``majority_f1``."""
    acc = head.get("test_acc") or {}
    if chance is None or acc.get("mean") is None or not is_near_chance(acc["mean"], chance, n):
        return None
    gap, rows_line = chance_lines(chance, n)
    rows = f", or fewer than {GAIN_ROWS} of the {n} test rows above it = {num(rows_line, 3)}" if rows_line else ""
    if n and rows_line is not None and rows_line > 1:  # a line past 1 no accuracy reaches: say why instead
        rows = (
            f", or fewer than {GAIN_ROWS} test rows above it: with {n} test rows, {round(chance * n)} of them the "
            "majority class's, no head can pass"
        )
    near = (
        f"test accuracy {accuracy_text(acc, n)} is near chance ({num(chance, 3)}, the majority "
        f"class; the gate's line is chance + {CHANCE_GAP:g}·(1 − chance) = {num(gap, 3)}{rows})"
    )
    said = not_learned(title, acc["mean"], chance, f1=_f1(head), majority_f1=majority_f1)
    if macro_f1_decides(acc["mean"], chance, _f1(head), majority_f1):
        return f"{title}'s {near}; {said}."
    return f"{said}: its {near}, so what it puts on a layer says nothing about the layers."


def demo_reading(fit: dict[str, Any] | None, compare: dict[str, Any] | None) -> Reading:
    """fit-head's headline first, then compare's verdicts with what they rest on (the seeds they read),
    then the rest; a step's warnings, which lead its own page, follow the headlines here, so compare's
    verdicts are not pushed out by them. The caveat names compare's sentences: fit-head's headline
    above them reads every seed."""
    lead: list[str] = []
    rest: list[str] = []
    if fit:
        r = fit_reading(fit)
        lead += [next((x for x in r.lead if not x.startswith("Warning:")), r.lead[0])]
        rest += [x for x in r.lead if x not in lead] + r.details
    if compare:
        # compare's lead is its warnings, then its verdicts: here named as compare's (not "these sentences")
        r = compare_reading(compare, "The compare step's sentences above")
        lead += [x for x in r.lead if not x.startswith("Warning:")]
        rest += [x for x in r.lead if x.startswith("Warning:")] + r.details
    rest.sort(key=lambda line: not line.startswith("Warning:"))  # stable: the warnings first, in their order
    return Reading(lead or ["The demo has not finished: no summary to read yet."], list(dict.fromkeys(rest)))


# The held-out table's last column, said under it: the number alone was read nowhere on the terminal
OVERSHOOT_LEGEND = (
    "compute overshoot: how far past each compute budget c the threshold chosen within c on one fold of the test "
    "rows runs on the other, max(0, its compute − c) averaged over c (a fraction of all layers' FLOPs; 0: never "
    "over budget); its held-out accuracy counts regardless"
)


PRUNE_NAMES = {
    "scalarmix": "ScalarMix's weights",
    "lolo": "leave-one-layer-out effects",
    "block_influence": "Block Influence",
    "depth": "depth alone",
    "deepest": "keeping the deepest layers",
    "random": "a random ranking",
}


def diff_text(d: dict[str, Any] | None, digits: int = 4) -> str:
    """'+0.0116 [+0.0009, +0.0223]' of a paired difference; '+3.1e-06 [-1.0e-05, +1.6e-05]' where all
    three would show as ±0 but it is not float noise (:func:`.training.stats.spec`)."""
    if d and d.get("mean") is not None and d.get("ci_low") is not None and spec(d, digits) == "+.1e":
        return f"{d['mean']:+.1e} [{d['ci_low']:+.1e}, {d['ci_high']:+.1e}]"
    return est(d, digits, clip=False, sign=True)


def diff_said(d: dict[str, Any] | None, digits: int = 4) -> str:
    """:func:`diff_text` for a sentence: with the words that say where its interval was cut to [−1, 1], which a
    table's cell leaves to its caption."""
    return diff_text(d, digits) + _cut_text(d, diff=True)


# --scalarmix given one seed folder: its ranking is the same at every seed, so α's interval against it holds the
# refits' and α's heads' spread, none of ScalarMix's own across its seeds
SCALARMIX_ONE_SEED = "ScalarMix's ranking is from its one given head (one seed), the same at every seed"
SCALARMIX_INTERVAL = "the interval covers the refits and α's heads, not ScalarMix's own variation across seeds"
SCALARMIX_SEEDS = "each refit seed's sets ranked by the ScalarMix head of that seed, paired seed by seed"


def scalarmix_one_seed(s: dict[str, Any]) -> bool:
    """Whether prune read one ScalarMix head at every seed; summaries written before it read every ScalarMix seed
    record `scalarmix_dir` alone, one head."""
    return bool((s.get("scalarmix") or {}).get("one_seed", True))


def same_sets(s: dict[str, Any], other: str) -> bool:
    """prune's α and ``other`` keep the same layer sets at every k and seed, as summary.json records it;
    a summary written before that record: the sets its points record compared. Never read off equal
    accuracies: different sets can score alike on every seed."""
    entry = (s.get("alpha_vs") or {}).get(other) or {}
    if "same_layer_sets" in entry:
        return bool(entry["same_layer_sets"])

    def sets(name: str) -> dict[int, Any]:
        return {p["k"]: p.get("layers_by_seed") or p.get("layers") for p in s["points"] if p["ranking"] == name}

    alpha, theirs = sets("alpha"), sets(other)
    return bool(theirs) and all(alpha.get(k) == theirs.get(k) for k in s["ks"])


def _said(d: dict[str, Any] | None) -> str:
    """:func:`_word` of the paired difference ``d``, saying why where it is the same on every seed
    (its zero-width interval is printed beside it: "no interval" would contradict it)."""
    if same_on_every_seed(d):
        return f"cannot be compared with ({_no_spread(d)})"
    return _word(outcome(d))


def _no_spread(d: dict[str, Any] | None) -> str:
    return same_text(d or {}).removesuffix(", so no verdict")


def one_value(*diffs: dict[str, Any] | None) -> bool:
    """Every paired difference in ``diffs`` is one seed's value: no interval is drawn, so a reading
    names no level of intervals and no "[n/a]" beside them."""
    drawn = [d for d in diffs if d and d.get("mean") is not None]
    return bool(drawn) and all(d.get("n") == 1 for d in drawn)


def versus_text(subject: str, d: dict[str, Any] | None, other: str) -> str:
    """'α beats depth alone (+0.0116 [+0.0009, +0.0223])'; from one seed 'α − depth alone = +0.0028', or
    '-1.5e-05' where it is past float noise yet shows as ±0 at four decimals (as the terminal prints it)."""
    if one_value(d):
        m = (d or {})["mean"]
        return f"{subject} − {other} = {format(m, '+.1e') if spec(d or {}) == '+.1e' else num(m, 4, sign=True)}"
    return f"{subject} {_said(d)} {other} ({diff_said(d)})".lstrip()


def _word(o: str) -> str:
    return {
        "better": "beats",
        "worse": "does worse than",
        "no different": "is not distinguishable from",
        "undecided": "cannot be compared with (no interval)",
    }[o]


SANITY_CHECKS = {
    "top": "the weights outside its adapters re-initialised",
    "all": "every weight re-initialised",
    "labels": "a head fitted on permuted labels",
}


def sanity_failed(summary: dict[str, Any]) -> list[str]:
    """One sentence per check an attribution failed ("high": it stayed correlated with the trained
    head's on a head that learned nothing), said at the top of the terminal and of report.html's
    reading: at the end of a long run, in a table's yellow cell, it was missed (MiniLM's ScalarMix
    seed 2: IG and Grad-CAM −.69 [−.73, −.65] under the top re-initialisation)."""
    if "sanity" not in summary:
        return []
    t = summary["sanity"]["choices"].get("threshold")
    return [
        f"sanity check failed: {m} on {name} with {SANITY_CHECKS.get(check, check)} "
        + ("reverses" if _below_zero(c["rank_correlation"]) else "keeps")
        + f" ρ {with_ci(c['rank_correlation'])} with the trained head's attributions ("
        + (f"|ρ| ≥ {t} over the whole interval" if t is not None else "read high")
        + "): they follow something other than what the head learned, so its scores do not explain the head"
        for name, _, rows in sanity_heads(summary)
        for m, check, c in rows
        if c["verdict"] == "high"
    ]


def _below_zero(rank: dict[str, Any]) -> bool:
    """A sanity ρ read below 0 (its interval's top, or the mean where no interval was drawn): the
    randomised head's ranking runs against the trained one's, an order reversed rather than kept."""
    top = rank.get("ci_high")
    top = rank.get("mean") if top is None or top != top else top
    return top is not None and top < 0


def _warnings(s: dict[str, Any]) -> list[str]:
    """A run's warnings, said before its reading: what the numbers that follow cannot be trusted for;
    each said once, as the terminal says them (summary.json keeps every record)."""
    return [f"Warning: {w}." for w in said_once(s.get("warnings") or [])]


# -- prune ---------------------------------------------------------------------------------------


def sentence(text: str) -> str:
    """A verdict line as a sentence of a page: capitalised as :func:`_cap` does, with its full stop."""
    return _cap(text) + "."


def ks_text(ks: Sequence[int], n_layers: int | None = None) -> str:
    """The layer counts below all ``n_layers`` that were tried, runs of three or more as "1 to 4":
    "k = 1 to 4, 6, 8 of 19 layers". prune's comparisons average over these alone, and "k < L" read
    as every count where --ks or the coarse grid tried a few."""
    below = sorted(k for k in set(ks) if n_layers is None or k < n_layers)
    runs: list[list[int]] = []
    for k in below:
        if runs and k == runs[-1][-1] + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    said = ", ".join(f"{r[0]} to {r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)
    return f"k = {said or '—'}" + (f" of {n_layers} layers" if n_layers is not None else "")


def withheld_cost(w: dict[str, Any], s: dict[str, Any]) -> str:
    """A withheld set's paired test difference from all layers, as ``cost_text`` reads a kept set's;
    nothing where its why already quotes that difference (``why_kind`` "test loss")."""
    from ..beyond.costs import cost_text

    return "" if w.get("why_kind") == "test loss" else cost_text(w, s)


def strongest_without_alpha(s: dict[str, Any]) -> str | None:
    """The ranking compared with α, random aside, whose mean test accuracy over the k tried is highest
    (α − it the lowest): what a ranking that needs no α already does. On a tie, the one that needs the
    least (SIMPLEST: the cache's order before a head's weights)."""
    means = {
        name: m
        for name, v in (s.get("alpha_vs") or {}).items()
        if name != "random" and (m := (v.get("mean_test_acc_over_k_diff") or {}).get("mean")) is not None
    }
    order = [*SIMPLEST, *means]
    return min(means, key=lambda name: (means[name], order.index(name))) if means else None


# The rankings without α, those that need least first: depth and Block Influence read the cache alone,
# ScalarMix another head's weights, LOLO this head's effects
SIMPLEST = ("deepest", "depth", "block_influence", "scalarmix", "lolo")


def prune_reading(s: dict[str, Any]) -> Reading:
    from ..beyond.costs import cost_text, saves_text

    n_layers = len(s["cache"]["layer_names"])
    vs = s.get("alpha_vs") or {}
    parts = []
    one = one_value(*(e.get("mean_test_acc_over_k_diff") for e in vs.values()))
    for other, entry in vs.items():
        d = entry.get("mean_test_acc_over_k_diff")
        name = PRUNE_NAMES.get(other, other)
        if same_sets(s, other):
            parts.append(f"{'α ' * one}keeps the same layer sets as {name}")
        elif tied(d):
            parts.append(f"keeps different layer sets from {name} that score alike ({_no_spread(d)}, {diff_said(d)})")
        else:  # read beside the test rows' own interval, as early-exit's comparisons are
            parts.append(_exit_versus("α" if one else "", {"area_diff": d, "test_rows": entry.get("test_rows")}, name))
            rows = entry.get("test_rows") or {}
            if rows.get("dominates") and not rows.get("withheld"):
                parts[-1] += f" (the {rows['rows']} shared test rows alone allow ±{rows['half_width']:.4f})"
        if other == "scalarmix" and not one:
            parts[-1] += (
                f" ({SCALARMIX_ONE_SEED}" + ("" if same_sets(s, other) else f": {SCALARMIX_INTERVAL}") + ")"
                if scalarmix_one_seed(s)
                else f" ({SCALARMIX_SEEDS})"
            )
    if parts:
        first = (
            f"Ranking layers by α{':' * one} "
            + "; ".join(parts)
            + f" — mean test accuracy over {ks_text(s['ks'], n_layers)} kept, refit heads, {seeds_read(s, one)}"
            + (f": {ONE_VALUE}." if one else f", {families_text(*vs.values(), what='t-intervals')}.")
        )
    else:
        first = "No ranking could be compared with α (one layer count only, or no other ranking applies)."
    strongest = []
    if "random" in vs and (strong := strongest_without_alpha(s)) is not None:
        # α can beat random sets only as well as keeping the deepest layers does: its lead over random is
        # read beside what a ranking that needs no α already achieves
        strongest.append(
            f"The strongest ranking that needs no α is {PRUNE_NAMES.get(strong, strong)}: α's lead over random "
            "layer sets is read beside it, not alone."
        )
    c, ref = s.get("chosen"), s["reference"]["test_acc"]
    withheld = (s.get("withheld") or {}).get("chosen")
    if withheld is not None:
        second = (
            f"No layer set is recommended: the smallest set within --max-drop {s['config']['max_drop']:g} on "
            f"validation keeps {withheld['k']} of {n_layers} layers ({', '.join(withheld['layers'])}), but "
            f"{withheld['why']}; test accuracy {num(withheld['test_acc']['mean'], 4)} vs {num(ref['mean'], 4)} with "
            f"all layers{withheld_cost(withheld, s)}. No head is written."
        )
    elif c is None or c["k"] == n_layers:
        second = (
            f"No smaller layer set stays within --max-drop {s['config']['max_drop']:g} of all {n_layers} layers' "
            f"validation accuracy: every layer is worth keeping (test accuracy {num(ref['mean'], 4)} "
            f"{interval(ref, 4)}{_cut_text(ref, caption=True)} with all)."
        )
    else:
        second = (
            f"The smallest set within --max-drop {s['config']['max_drop']:g} keeps {c['k']} of {n_layers} layers "
            f"({', '.join(c['layers'])}), found by {', '.join(c['found_by'])}: test accuracy "
            f"{num(c['test_acc']['mean'], 4)} vs {num(ref['mean'], 4)} with all layers"
            f"{cost_text(c, s) or ' ' + interval(c['test_acc'], 4) + _cut_text(c['test_acc'], caption=True)}; "
            f"{saves_text(c, s, short=True)}"
            + (f"; {c['vs_random']}." if c.get("vs_random") else ".")  # against random sets of its size
        )
    # --max-drop 0 is read per seed and against the test mean: said where the pick is, not only below
    rule = [sentence(line) for line in s.get("verdict") or [] if line.startswith("--max-drop 0:")]
    # the lead already says the α-vs-ranking lines, the chosen set and that rule
    said = tuple(e["verdict"] for e in vs.values() if e.get("verdict"))
    details = [
        line
        for line in s.get("verdict") or []
        if not line.startswith(("keep ", "no recommendation: the smallest", "--max-drop 0:", *said))
    ]
    details += [
        f"{name} does not apply: {e['how']}" for name, e in (s.get("rankings") or {}).items() if not e.get("applies")
    ]
    one_alpha = [note] if (note := alpha_fit_note(s, "prune")) else []  # what α's verdicts rest on, right after them
    return Reading([*_warnings(s), first, *strongest, *one_alpha, second, *rule], details)


# -- early exit ----------------------------------------------------------------------------------


def held_out_areas(s: dict[str, Any]) -> bool:
    """Whether an early-exit summary compares held-out areas (``area_held_out`` per rule); one written
    before them has the in-sample ``area`` only, and its differences are of those."""
    rules = s.get("rules") or {}
    return bool(rules) and all("area_held_out" in e for e in rules.values())


def _confidences(rule: str, entry: dict[str, Any], fired: dict[str, Any]) -> str:
    """A rule's comparison with random exit that is confidence's, in the lead: the same rule (α never
    fired, or only where confidence exits as early), or the same held-out area on every seed."""
    if entry.get("same_by") == "area":
        seeds = "on every seed" if ((entry.get("area_diff") or {}).get("n") or 0) != 1 else "on the one seed run"
        return (
            f"{rule}, of the same held-out area as confidence's {seeds} (α fired at ε = "
            f"{fired.get('epsilon', 0):g} on {fired_rows(fired)}), is confidence's "
            "comparison, not a second finding"
        )
    why = entry["verdict"].split(":")[0]
    return f"{rule}, the confidence rule here ({why}), is confidence's comparison, not a second finding"


def _rows_withheld(entry: dict[str, Any]) -> bool:
    """An early-exit comparison whose "beats" or "worse" the test rows' own sampling withheld."""
    return bool((entry.get("test_rows") or {}).get("withheld"))


def _exit_versus(subject: str, entry: dict[str, Any], other: str) -> str:
    """:func:`versus_text` of an early-exit comparison, or, where the test rows' own sampling withheld
    its verdict, the interval beside the rows' own half-width and no verdict."""
    rows = entry.get("test_rows") or {}
    if not rows.get("withheld"):
        return versus_text(subject, entry.get("area_diff"), other)
    return (
        f"{subject} − {other} = {diff_said(entry.get('area_diff'))}, no verdict: the {rows['rows']} shared test rows "
        f"alone allow ±{rows['half_width']:.4f}"
    )


def early_exit_reading(s: dict[str, Any]) -> Reading:
    comp = s.get("comparisons") or {}
    held = held_out_areas(s)
    one = one_value(*(e.get("area_diff") for e in comp.values()))
    over = f"{'held-out ' if held else ''}area under accuracy–compute, {seeds_read(s, one)}"

    def unit(*labels: str) -> str:
        if one:
            return f"{over}: {ONE_VALUE}"
        return f"{over}, {families_text(*(comp.get(k) for k in labels), what='t-intervals')}"

    lead = []
    if "confidence vs random" in comp:  # older summaries have no random-exit reference
        said = [
            _confidences(rule, comp[f"{rule} vs random"], s.get("alpha_fired") or {})
            if comp[f"{rule} vs random"].get("same_as")
            else _exit_versus(rule, comp[f"{rule} vs random"], "random exit" if one else "it")
            for rule in ("confidence", "alpha", "confidence+alpha", "fixed")
            if f"{rule} vs random" in comp
        ]
        lead.append(
            f"Against random exit (exit depths mixed with no information about the input, the same sweep, "
            f"{random_exit_taken(s)}): "
            + "; ".join(said)
            + f" ({unit(*(k for k in comp if k.endswith(' vs random')))})."
        )
    entry = comp.get("confidence+alpha vs confidence") or {}
    d = entry.get("area_diff")
    if entry.get("identical") or entry.get("same_area") or _rows_withheld(entry):
        lead.append(sentence(entry["verdict"]))
    else:
        o = outcome(d)
        helps = {"better": "helps", "worse": "hurts", "no different": "does not help", "undecided": "is undecided"}[o]
        if same_on_every_seed(d):
            helps += f" ({_no_spread(d)})"
        lead.append(
            f"Adding α's mass beyond the exit depth (ε = {s['config']['epsilon']:g}) to the confidence rule"
            f"{'' if one else ' ' + helps}: {num((d or {})['mean'], 4, sign=True) if one_value(d) else diff_said(d)} "
            f"({unit('confidence+alpha vs confidence')})."
        )
    details: list[str] = []
    e2, e3 = comp.get("alpha vs fixed") or {}, comp.get("confidence vs fixed") or {}
    d3 = e3.get("area_diff")
    (details if "confidence vs random" in comp else lead).append(
        f"{_exit_versus('α alone', e2, 'a fixed exit depth')}; "
        f"{_exit_versus('confidence alone', e3, 'a fixed exit depth' if one_value(d3) else 'it')}"
        + (" — fixed depth's L points credit nothing between them" if "confidence vs random" in comp else "")
        + "."
    )
    oracle = comp.get("confidence+alpha_oracle vs confidence") or {}
    d4 = oracle.get("area_diff")
    if oracle.get("identical") or oracle.get("same_area") or _rows_withheld(oracle):
        details.append(sentence(oracle["verdict"]))
    elif d4:
        details.append(
            f"With α of the full forward pass (not realisable: it needs every layer), "
            f"{versus_text('confidence+α', d4, 'confidence')}: the most a perfect α forecast could add."
        )
    if s.get("families_read_apart"):  # absent in older summaries
        details.append(sentence(s["families_read_apart"]))
    if note := alpha_fit_note(s, "early-exit"):  # right after the verdicts, as compare says it
        lead.append(note)
    for f in s.get("fixed_depth") or []:
        used = (s.get("compute_used_by_depth") or {}).get(f["layer"])
        cut = _cut_text(f["accuracy"], caption=True)
        details.append(
            f"Exit always at {f['layer']} (depth {f['depth']}): accuracy {num(f['accuracy']['mean'], 4)}"
            f"{'' if one_value(f['accuracy']) else ' ' + interval(f['accuracy'], 4) + cut}, "
            f"{percent(used, 1)} of the backbone's FLOPs."
        )
    return Reading([*_warnings(s), *lead], details)


def random_exit_taken(s: dict[str, Any]) -> str:
    """How an early-exit summary's random exit is taken: at its expectation over the uniform scores, or
    (summaries written before `random_reference`) one draw of them per seed, which adds its own spread."""
    if s.get("random_reference") == "expectation":
        return "at its expectation over the random scores"
    return "one draw of the random scores per seed, which adds its own spread to each interval over seeds"


# what prune's and early-exit's intervals over seeds run over, and the lines on α they qualify
_REFITS = {
    "prune": ("the refits on each ranking's layers", "the α ranking's lines (and the LOLO ranking's, the same head's)"),
    "early-exit": ("the per-depth heads' refits", "the alpha and confidence+alpha lines"),
}


def alpha_fit_note(s: dict[str, Any], command: str) -> str | None:
    """What the verdicts on α of a prune or early-exit run (``command``) rest on, for report.html's reading
    and the terminal's notes: early exit's seeds are the per-depth heads' refits, prune's its refits on
    each ranking's layers; α (and prune's LOLO) is the one given head's, so its verdicts hold for that
    fit of α alone; given several LAYA heads, seed s's refits are read with the head of seed s. None
    where no interval runs over refits (prune --no-refit, older summaries)."""
    if not s.get("seeds_how" if command == "prune" else "head_dir"):
        return None
    refits, lines = _REFITS[command]
    n = len(s.get("seeds") or [])
    if len(s.get("alpha_heads") or []) > 1:
        return (
            f"α here is each of {n} fitted LAYA heads' ({s['head_dir']}): seed s's {refits.removeprefix('the ')} "
            "are read with α of the head fitted with seed s, so each interval over seeds covers both α's fit and the "
            "refits."
        )
    # both read every seed of a fit-head folder themselves
    todo = f"give {command} the fit-head folder (or its laya/) to read α of every seed"
    if n == 1:  # no interval is drawn: there is nothing "the intervals run over"
        return (
            f"α here is one fitted head's ({s['head_dir']}) and {refits} are of one seed: no interval is drawn, "
            f"so {lines} hold for this fit of α and this one refit only; a verdict that changes with the seed a "
            f"head or refit was drawn with is not a verdict: run {command} with --seeds 3 or more, and {todo}."
        )
    return (
        f"α here is one fitted head's ({s['head_dir']}): the {counted(n, 'seed')} the intervals run over are "
        f"{refits}, not fits of α, so {lines} hold for this fit of α only; a verdict that changes with the seed a "
        f"head was fitted with is not a verdict: {todo}."
    )


# -- diagnose ------------------------------------------------------------------------------------


def _vs_msp(
    diffs: dict[str, Any], auroc: dict[str, Any], one: bool = False, heads: Sequence[dict[str, Any]] = ()
) -> str:
    """Each score's AUROC and its difference to max softmax probability ("score − msp" keys); ``one``:
    one head's, which draw no verdict (:func:`.beyond.scoring.one_seed_said`). ``heads``: each head's
    own differences by the same keys, so a difference every head alone shows is said beside "not
    distinguishable", as the verdict line says it (:func:`.beyond.scoring.alone_text`)."""
    parts = []
    for key, d in diffs.items():
        score = key.split(" − ")[0]
        auc = auroc.get(score) or {}
        said = f"− msp: {diff_said(d, 3)}, no verdict: one seed" if one else f"{_said(d)} msp: {diff_said(d, 3)}"
        rows = {} if one else d.get("test_rows") or {}
        if rows.get("withheld"):
            said = f"− msp: {diff_said(d, 3)}, no verdict: the {rows['rows']} shared test rows alone allow "
            said += f"±{rows['half_width']:.3f} per head, which holds 0"
        elif rows.get("dominates"):
            said += f"; each head's own interval over the {rows['rows']} shared test rows is ±{rows['half_width']:.3f}"
        alone = None if one else each_head_alone(d, [h.get(key) for h in heads])
        said += alone_text(score, "msp", alone, len(heads)) if alone else ""
        parts.append(f"{score} {num(auc.get('mean'), 3)} ({said})")
    return "; ".join(parts)


def _against_chance(auroc: dict[str, Any], rows: str, heads: list[dict[str, Any]]) -> str:
    """The scores read against chance (AUROC ½) as the terminal reads them; nothing when each is above."""
    said = versus_chance(auroc, list(auroc), rows, heads).removeprefix("; ")
    return f" Against chance: {said}." if said else ""


def diagnose_reading(s: dict[str, Any]) -> Reading:
    e = s["errors"]
    msp = e["auroc"].get("msp") or {}
    one = one_seed_said(s)
    lead = [sentence(one)] if one else []  # up front, as the terminal says it: one head's numbers are no verdict
    lead += [
        f"Misclassified test rows: max softmax probability (no α) reaches AUROC {num(msp.get('mean'), 3)} "
        f"{interval(msp)}{_cut_text(msp, caption=True)}; "
        + (
            errors_not_read(s["heads"])
            or _vs_msp(
                e.get("diff_vs_msp") or {}, e["auroc"], bool(one), [h.get("diff_vs_msp") or {} for h in s["heads"]]
            )
        )
        + f" ({e['interval']}; AUROCs at 95%, differences from msp at {families_text(e)})."
        + _against_chance(e["auroc"], "errors and correct predictions", [h.get("auroc") or {} for h in s["heads"]])
    ]
    if "shift" in s:
        pooled = s["shift"]["pooled"]
        auc = pooled["detect_auroc"]
        own = [h.get("detect_diff") or {} for h in s["shift"]["heads"]]
        scores = shift_not_read(s["shift"]) or _vs_msp(pooled["detect_diff"], auc, bool(one), own)
        p = [h["permutation"]["p_value"] for h in s["shift"]["heads"]]
        lead.append(
            f"Telling {s['against']['path']} from this cache's test rows: msp AUROC "
            f"{num((auc.get('msp') or {}).get('mean'), 3)}; "
            + scores
            + f" ({pooled['interval']}; differences from msp at {families_text(pooled)}; 0.5 is chance); "
            f"α profiles: {s['shift'].get('profiles', 'see the p-values')} "
            f"(permutation p = {', '.join(f'{v:.3g}' for v in p)})."
        )
        if not shift_not_read(s["shift"]):
            heads = [h.get("detect_auroc") or {} for h in s["shift"]["heads"]]
            lead[-1] += _against_chance(auc, "the caches", heads)
        lead += [sentence(shifted) for shifted in [shifted_classes(s)] if shifted]
    lead += [f"Error detection is undefined: {h['undefined']}." for h in s["heads"][:1] if h.get("undefined")]
    details = [
        f"{h['head_dir']}: test accuracy {num(h['test_accuracy'], 4)}, {h['n_errors']} errors of {h['n_test']}"
        + (
            f"; the scores' directions learned from {h['held_out_errors']} held-out errors"
            if "held_out_errors" in h
            else ""
        )
        + (
            "; msp negated: the head is more confident on its errors there (held-out AUROC below ½)"
            if str((h.get("directions") or {}).get("msp", "")).startswith("negated")
            else ""
        )
        + "."
        for h in s["heads"]
    ]
    if len(s["heads"]) == 1 and verdict_drawn(s):  # its intervals run over test rows, not its fitted seeds
        lead.append(one_seed_sentence("These sentences", s["heads"][0]["head_dir"], "diagnose"))
    return Reading([*_warnings(s), *lead], details)


READINGS: dict[str, Callable[[dict[str, Any]], Reading]] = {
    "prune": prune_reading,
    "early-exit": early_exit_reading,
    "diagnose": diagnose_reading,
}
