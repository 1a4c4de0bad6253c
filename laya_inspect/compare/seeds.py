"""Headline scores across the seeds of one head (docs/METHOD.md, "Across seeds"): pure functions of
the per-head summaries; the result is plain JSON-able data.

Heads are grouped by name and kind: a fit-head head directory ``<head>/seed_<S>/`` belongs to head
``<head>``, any other directory to its own name. For each group of two or more seeds, each ablation
every seed ran and each method (and reference) every seed scored: the per-seed values of the
headline scores (top-layer agreement, Deletion@1 ÷ oracle, faithfulness ρ) and of each method's
paired difference to the constant rule, their mean over seeds and the two-sided t-interval
mean ± t((1+c)/2, S−1)·std/√S (std with ddof 1): c = 95% for a score, and for a paired difference the
confidence each seed's verdict was drawn at (1 − 0.05/3 against the rule, 1 − 0.05/m against another
method), so that the verdict over the seeds is held to the standard of each seed's. A verdict against
the constant rule, or a starred best method, that differs between seeds is a caveat.

What `compare` accepts as heads (:func:`expand_head_dirs`): head directories, and fit-head output
folders expanded to every head directory in them. A fit-head output holds ``<head>/seed_<S>/`` head
directories; it expands to all of them, the heads in the order its summary.json lists them (the
others by name), each head's seeds in increasing order. A folder of one head's seeds (``<head>/``
holding ``seed_<S>/``) expands the same way. Any other folder without a config.json is refused in
one line; a path that does not exist, or a damaged head directory, is left to
:func:`laya_inspect.head_dir.read_head_config` to name.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..training.stats import bounded, cut_note, level, outcome
from .paired import HEADLINE, VERDICT_CONFIDENCE
from .records import VERDICTS, carried, score_value

CONFIDENCE = 0.95
CONFIDENCE_SAID = "95%"  # CONFIDENCE as :func:`level` says it
CSV_REFERENCES = {"random": "random_ordering"}  # summary.csv's method for a reference that a method shares a name with
# the nulls' one name each, in the terminal's tables, report.html's and the across-seed caveats
REFERENCES = {"top1_only": "top-1 only", "random": "random reference", "constant": "constant rule"}
SEED_DIR = re.compile(r"seed_(\d+)")
LABELS = {  # a score's name in a caveat
    "top_layer_agreement": "top-layer agreement",
    "deletion_at_1": "Deletion@1",
    "deletion_at_1_over_oracle": "Deletion@1 ÷ oracle",
    "faithfulness": "faithfulness ρ",
    "subset_faithfulness": "subset faithfulness",
    "deletion_area": "the deletion area",
    "insertion_area": "the insertion area",
}


def t_estimate(values: Sequence[float | None], confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Mean, std (ddof 1) and the two-sided t-interval mean ± t((1+confidence)/2, n−1)·std/√n over
    the finite ``values`` (n of them); std and interval None for n < 2, everything None for n = 0.
    ``values`` is kept as given (None where a seed has no value)."""
    kept = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    n = len(kept)
    out: dict[str, Any] = {"mean": None, "std": None, "ci_low": None, "ci_high": None, "n": n}
    out["values"] = [None if v is None or not math.isfinite(float(v)) else float(v) for v in values]
    if n == 0:
        return out
    mean = sum(kept) / n
    out["mean"] = mean
    if n < 2:
        return out
    from scipy.stats import t  # only when a head has several seeds

    std = math.sqrt(sum((v - mean) ** 2 for v in kept) / (n - 1))
    half = float(t.ppf((1 + confidence) / 2, n - 1)) * std / math.sqrt(n)
    out.update(std=std, ci_low=mean - half, ci_high=mean + half)
    return out


def head_name(head_dir: str | Path, fallback: str) -> str:
    """The head a directory is a seed of: ``<head>`` for fit-head's ``<head>/seed_<S>/``, else the
    directory's own name (``fallback`` when it has none)."""
    path = Path(head_dir)
    if SEED_DIR.fullmatch(path.name) and path.parent.name:
        return path.parent.name
    return path.name or fallback


def _group_key(head: dict[str, Any]) -> tuple[str, str]:
    """Seeds of one head: fit-head's ``seed_<S>/`` folders of one ``<head>/`` folder, or directories
    of one name; of one kind either way."""
    path = Path(head.get("dir") or "")
    where = str(path.parent) if SEED_DIR.fullmatch(path.name) and path.parent.name else path.name or head["name"]
    return where, head["kind"]


def _groups(heads: Sequence[dict[str, Any]], seeds: Sequence[int | None]) -> list[dict[str, Any]]:
    """The heads with two or more seeds; a seed (or directory) given twice counts once."""
    by: dict[tuple[str, str], dict[Any, int]] = {}
    for i, h in enumerate(heads):
        label = seeds[i] if seeds[i] is not None else h["name"]
        by.setdefault(_group_key(h), {}).setdefault(label, i)
    out: list[dict[str, Any]] = []
    names: set[str] = set()
    for (_, kind), members in by.items():
        if len(members) < 2:
            continue
        first = heads[next(iter(members.values()))]
        base = head_name(first.get("dir") or "", first["name"])
        name, k = base, 2
        while name in names:  # two heads of one name (two fit-head runs): head, head-2, …
            name, k = f"{base}-{k}", k + 1
        names.add(name)
        names_in = [heads[i]["name"] for i in members.values()]
        out.append({"head": name, "kind": kind, "members": names_in, "seeds": list(members)})
    return out


# the values a headline score can take, where a t-interval over a few seeds reaches past them (3 seeds:
# t(0.975, 2) = 4.3, and ρ [−0.035, +1.235]); a difference of two such scores spans twice the width
RANGES = {"top_layer_agreement": (0.0, 1.0), "faithfulness": (-1.0, 1.0)}
# what a shown interval :func:`ranged` cut says, in the across-seed table's note and in compare's headline alike
CUT_SAID = "the t-interval over the seeds is too wide for its score's range, shown cut to it"


def ranged(key: str, values: Sequence[float | None]) -> dict[str, Any]:
    """:func:`t_estimate` of score ``key`` (``<score>_minus_constant`` for its difference to the
    constant rule, at VERDICT_CONFIDENCE, each seed's verdict's level, recorded as its ``confidence``),
    its interval cut to the score's range where it reaches past (``clipped``, with the t bounds), as
    diagnose's AUROCs are."""
    base = key.removesuffix("_minus_constant")
    est = (
        t_estimate(values)
        if base == key
        else {**t_estimate(values, VERDICT_CONFIDENCE), "confidence": VERDICT_CONFIDENCE}
    )
    if base not in RANGES:
        return est
    low, high = RANGES[base]
    return bounded(est, low - high, high - low) if base != key else bounded(est, low, high)


def named_estimates(entry: dict[str, Any], labels: Mapping[str, str] = LABELS) -> dict[str, dict[str, Any]]:
    """An across-seed ablation entry's interval estimates by "<method> <score>" (``labels`` names the
    scores; " − constant rule" after a difference to the constant rule), a reference by its label ("constant
    rule", "top-1 only", "random reference": none a method's name, so none replaces a method's estimates)."""

    def name(key: str) -> str:
        base = key.removesuffix("_minus_constant")
        return labels.get(base, base) + " − constant rule" * (base != key)

    return {
        f"{label} {name(key)}": est
        for _, row, label, _ in entry_rows(entry, REFERENCES)
        for key, est in row.items()
        if isinstance(est, dict)
    }


def difference_level(*entries: dict[str, Any]) -> str:
    """The level of the across-seed ablation ``entries``' intervals of a difference to the constant rule,
    in words ("98.3%"), read from the estimates' own ``confidence`` (:func:`level`): a summary written
    before they were drawn at each seed's verdict's level holds them at 95% and records none. Each
    level once, joined by " or ", should one summary hold several."""
    said = [
        level(est)
        for entry in entries
        for _, row, _, _ in entry_rows(entry)
        for key, est in row.items()
        if key.endswith("_minus_constant") and isinstance(est, dict)
    ]
    return " or ".join(dict.fromkeys(said)) or level(None)


def ranged_note(entry: dict[str, Any]) -> str | None:
    """Where :func:`ranged` cut an interval of an across-seed ablation entry, in words with the t
    bounds, so a shown end at the range's edge is not read as the interval's own. None where none was."""
    at = difference_level(entry)
    return cut_note(
        named_estimates(entry),
        "across seeds",
        "its score's range",
        "[0, 1] for top-layer agreement, [−1, 1] for ρ, twice as wide for a difference to the constant rule",
        "seeds at 95%" + (f" ({at} for a difference to the constant rule)" if at != CONFIDENCE_SAID else ""),
    )


def _versus_over_seeds(entries: list[dict[str, Any]], caveats: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Each other method a method's every seed was read against (``vs_methods``, the paired difference in ρ
    over one seed's rows) → :func:`t_estimate` of those differences over the seeds, cut to [−2, 2], at the
    confidence the seeds' own intervals were drawn at (``confidence``: 1 − 0.05/m, the highest where they
    differ; 95% for seeds that record none), with :func:`pair_verdict` as its ``verdict``: each seed's
    interval holds that seed's head fixed, this one asks whether a head refitted with another seed would
    order the layers the same way (``caveats``: each seed's)."""
    rivals = [r for r in entries[0].get("vs_methods") or {} if all(r in (e.get("vs_methods") or {}) for e in entries)]
    low, high = RANGES["faithfulness"]
    out = {}
    for r in rivals:
        per = [e["vs_methods"][r] or {} for e in entries]  # None on a seed with no difference drawn: no value
        levels = [float(d["confidence"]) for d in per if isinstance(d.get("confidence"), (int, float))]
        confidence = max(levels, default=CONFIDENCE)
        est = bounded(t_estimate([d.get("mean") for d in per], confidence), low - high, high - low)
        out[r] = {**est, "confidence": confidence, "verdict": pair_verdict(est, caveats)}
    return out


def pair_verdict(pair: dict[str, Any] | None, caveats: Sequence[Any]) -> str:
    """The verdict of a paired difference in ρ of one method to another, one seed's (``caveats``: its head's)
    or over the seeds (``caveats``: each seed's): "withheld" where a caveat holds (a head near chance, too few
    rows: a mean over seeds whose every ranking is withheld ranks nothing either), also in a summary written
    before; else the pair's own ``verdict``; where it keeps none, "better" or "worse" where its interval lies
    above or below 0, "no different" where it holds 0, "undecided" with no interval (one seed with a value, or
    the same difference on every seed). report.html's reading and the across-seed tables' " − <method>" rows
    say it."""
    if any(caveats):
        return "withheld"
    return str(pair["verdict"]) if pair and "verdict" in pair else outcome(pair)


def sided(bounds: Sequence[tuple[float, float]]) -> str:
    """A verdict's word from intervals of differences to the constant rule: "beats" where one lies above 0
    and none below, "worse" the reverse, "mixed" where both, "not shown" where every one holds 0."""
    up, down = any(lo > 0 for lo, _ in bounds), any(hi < 0 for _, hi in bounds)
    return "mixed" if up and down else "beats" if up else "worse" if down else "not shown"


def verdict_over_seeds(row: dict[str, Any]) -> str | None:
    """Whether a method row's one verdict on every seed holds over the seeds: where each of two or more seeds
    says "beats" (or each "worse", or each "mixed"), the verdict the score's mean differences to the constant
    rule over the seeds give (:func:`sided`, their t-intervals at each seed's level, VERDICT_CONFIDENCE):
    the seeds' word where it holds, "not shown" where every interval holds 0, "mixed" where one lies above
    0 and another below; None where the seeds' verdicts differ, are another word, or no score has an
    interval over the seeds. Each seed's verdict holds that seed's head fixed; the interval over the seeds
    asks whether a head refitted with another seed would differ from the rule, and over 3 seeds
    t(1 − 0.05/6, 2) = 7.6 makes it wide: the digits demo's concat heads beat the rule on each seed, ρ − rule
    +0.33 over the seeds, [−0.04, +0.70] at 95%."""
    verdicts = [str(v) for v in row.get("verdicts") or []]
    if len(verdicts) < 2 or len(set(verdicts)) != 1 or verdicts[0] not in ("beats", "worse", "mixed"):
        return None
    ests = [row.get(f"{key}_minus_constant") or {} for key in HEADLINE]
    bounds = [(e["ci_low"], e["ci_high"]) for e in ests if None not in (e.get("ci_low"), e.get("ci_high"))]
    return sided(bounds) if bounds else None


def kept_verdict_over_seeds(row: dict[str, Any]) -> str | None:
    """The row's ``verdict_over_seeds`` as its summary keeps it, where the summary was written under
    today's rule (its differences' intervals record their ``confidence``); else worked out again by
    :func:`verdict_over_seeds` from the intervals it holds (95% ones): a summary written before kept
    "beats" where one score's interval lay above 0 and another's below, which is "mixed"."""
    if "verdict_over_seeds" in row and any("confidence" in (row.get(f"{k}_minus_constant") or {}) for k in HEADLINE):
        return row["verdict_over_seeds"]
    return verdict_over_seeds(row)


def _method_row(entries: list[dict[str, Any]], reference: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"reference": reference}
    for key in HEADLINE:
        row[key] = ranged(key, [score_value(e, key) for e in entries])
    if not reference:
        for key in HEADLINE:
            row[f"{key}_minus_constant"] = ranged(
                f"{key}_minus_constant", [((e.get("vs_constant") or {}).get(key) or {}).get("mean") for e in entries]
            )
        row["verdicts"] = [(e.get("vs_constant") or {}).get("verdict") for e in entries]
        row["carried"] = [carried(e.get("vs_constant") or {}) for e in entries]  # one interval is enough to beat
        row["circular"] = next((e.get("circular") for e in entries if e.get("circular")), None)
        row["verdict_over_seeds"] = verdict_over_seeds(row)
    return row


def entry_rows(
    entry: dict[str, Any], labels: Mapping[str, str] = REFERENCES
) -> list[tuple[str, dict[str, Any], str, bool]]:
    """A compare entry's methods, then its references, as (name, scores, label, reference): a method
    is labelled by its name, a reference by ``labels``. The entry is a head's, one of its ablations', or
    an across-seed ablation's; an across-seed summary written before the methods and references were
    kept apart holds the references among ``methods``, marked ``reference``."""
    rows = [(m, s, bool(s.get("reference"))) for m, s in (entry.get("methods") or {}).items()]
    rows += [(r, s, True) for r, s in (entry.get("references") or {}).items()]
    return [(n, s, labels.get(n, n) if reference else n, reference) for n, s, reference in rows]


def by_seed(seeds: Sequence[int], words: Sequence[str]) -> str:
    parts: dict[str, list[str]] = {}
    for s, w in zip(seeds, words):
        parts.setdefault(w, []).append(str(s))
    return "; ".join(f"{w} on seed{'s' * (len(ss) > 1)} {', '.join(ss)}" for w, ss in parts.items())


def seed_verdicts(row: dict[str, Any], words: dict[str, str]) -> list[str]:
    """Each seed's verdict of an across-seed method row in ``words`` (VERDICTS, or the terminal's short
    words), with the scores that carry it where not all three do: "beats the constant rule (on
    top-layer agreement; not on Deletion@1 ÷ oracle, faithfulness ρ)"."""
    said = row.get("carried") or [""] * len(row.get("verdicts") or [])  # none in summaries written before
    return [words.get(str(w), str(w)) + (f" ({c})" if c else "") for w, c in zip(row.get("verdicts") or [], said)]


NO_FINDING = {"identical", "not shown"}  # verdicts that find no difference from the constant rule


def _disagreements(group: dict[str, Any], abl: str, entry: dict[str, Any]) -> list[str]:
    """Caveats: a method's verdict against the constant rule, a score's starred best method, or the
    layer of the largest mean LOLO effect, that differs between seeds."""
    seeds, out = group["seeds"], []
    where = f"{group['head']} ({abl}): "
    for m, row in entry["methods"].items():
        words = seed_verdicts(row, VERDICTS)
        if len(set(words)) > 1:  # a verdict carried by other scores on another seed is another verdict
            said = by_seed(seeds, [f"{m} {w}" for w in words])
            # every seed's word alike ("beats" on each, on other scores): not "the seeds disagree", but
            # not "one verdict" either, where the readings that follow differ in the scores that carry it
            verdicts = {str(v) for v in row.get("verdicts") or []}
            how = (
                "the same verdict on every seed, carried by different scores: "
                if len(verdicts) == 1
                # identical to the rule on one seed, every interval holding 0 on another: both are no finding
                else "no seed shows a difference from the constant rule: "
                if verdicts <= NO_FINDING
                else "the seeds disagree: "
            )
            out.append(where + how + said)
    top = entry.get("most_relied_on") or []
    if len(set(top)) > 1:
        said = by_seed(seeds, top)
        out.append(where + f"the layer of the largest mean LOLO effect differs between seeds: {said}")
    for key, per_seed in entry["best"].items():
        if len({tuple(b) for b in per_seed}) > 1:
            said = "; ".join(f"{'/'.join(b) or 'none'} on seed {s}" for s, b in zip(seeds, per_seed))
            out.append(where + f"the best method for {LABELS.get(key, key)} differs between seeds: " + said)
    return out


def across_seeds(heads: Sequence[dict[str, Any]], seeds: Sequence[int | None]) -> dict[str, Any]:
    """Every head with two or more seeds among ``heads`` (the compare summary's heads; ``seeds[i]``
    the seed heads[i] was fitted with): per ablation and method the per-seed values, mean and
    t-interval of each headline score and of each paired difference method − constant, and the
    caveats of seeds that disagree."""
    groups = _groups(heads, seeds)
    by_name = {h["name"]: h for h in heads}
    caveats: list[str] = []
    for g in groups:
        members = [by_name[n] for n in g["members"]]
        abls = [a for a in members[0].get("ablations") or {} if all(a in (h.get("ablations") or {}) for h in members)]
        g["ablations"] = {}
        for a in abls:
            per = [h["ablations"][a] for h in members]
            entry: dict[str, Any] = {}
            for kind, reference in (("methods", False), ("references", True)):  # apart: both have a "random"
                shared = [m for m in per[0].get(kind) or {} if all(m in (p.get(kind) or {}) for p in per)]
                entry[kind] = {m: _method_row([p[kind][m] for p in per], reference) for m in shared}
            keys = sorted({k for p in per for k in (p.get("best_tests") or {})} | {k for p in per for k in p["best"]})
            caveats_per_seed = [list(p.get("caveats") or []) for p in per]
            # beside the method rows, whose every dict is one score's estimate
            entry["vs_methods"] = {
                m: _versus_over_seeds([p["methods"][m] for p in per], caveats_per_seed) for m in entry["methods"]
            }
            entry["best"] = {k: [sorted(p["best"].get(k) or []) for p in per] for k in keys}
            entry["caveats_per_seed"] = caveats_per_seed
            ranked = [((p.get("lolo") or {}).get("most_relied_on") or [{}])[0].get("layer") for p in per]
            entry["most_relied_on"] = ranked if None not in ranked else []
            entry["caveats"] = _disagreements(g, a, entry)
            caveats += entry["caveats"]
            g["ablations"][a] = entry
    return {
        "confidence": CONFIDENCE,
        "interval": "two-sided t-interval over seeds: mean ± t((1+c)/2, S−1)·std/√S, std with ddof 1; c = confidence "
        f"for a score, {VERDICT_CONFIDENCE:.4f} for a difference to the constant rule (each seed's verdict's level), "
        "a difference to another method's own confidence",
        "groups": groups,
        "caveats": caveats,
    }


def cell(value: Any) -> dict[str, Any]:
    """A row's ``value`` and ``text``: words (a verdict, a caveat) go to ``text``, so that ``value``
    holds numbers alone and a reader (pandas) reads it as one numeric column."""
    return {"value": None, "text": value} if isinstance(value, str) else {"value": value, "text": ""}


def _estimate_rows(
    base: dict[str, Any], seeds: Sequence[int], key: str, est: dict[str, Any], direction: str
) -> list[dict[str, Any]]:
    """One estimate over the seeds as summary.csv's rows: ``<key>_<mean|std|ci_low|ci_high|n>`` and
    ``<key>_confidence`` (the level its interval is drawn at: a score's and a difference's differ) under
    scope ``seeds``, each seed's value under ``seed:<S>``."""
    rows = []
    for part in ("mean", "std", "ci_low", "ci_high", "n"):
        said = direction if part in ("mean", "ci_low", "ci_high") else ""
        rows.append({**base, "scope": "seeds", "metric": f"{key}_{part}", "value": est[part], "direction": said})
    confidence = est.get("confidence", CONFIDENCE)  # a score's estimate records none: CONFIDENCE
    rows.append({**base, "scope": "seeds", "metric": f"{key}_confidence", "value": confidence, "direction": ""})
    for s, v in zip(seeds, est["values"]):
        rows.append({**base, "scope": f"seed:{s}", "metric": key, "value": v, "direction": direction})
    return rows


def csv_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """summary.csv's rows for the across-seed scores: per (head, ablation, method, score) the mean,
    std, interval, n and the interval's confidence over seeds (scope ``seeds``) and each seed's value (scope
    ``seed:<S>``); per pair of methods (``vs_methods``) the same of ``faithfulness_minus_<other>`` and its
    ``verdict_vs_<other>``; ``summary``: the one compare_heads has just built, every key there."""
    dirs = summary["directions"]
    rows = []
    for g in summary["across_seeds"]["groups"]:
        for a, entry in g["ablations"].items():
            for _, row, m, _ in entry_rows(entry, CSV_REFERENCES):
                base = {"head": g["head"], "head_dir": "", "kind": g["kind"], "ablation": a, "method": m}
                for key, est in row.items():
                    if isinstance(est, dict):
                        rows += _estimate_rows(
                            base, g["seeds"], key, est, dirs.get(key.removesuffix("_minus_constant"), "")
                        )
                for metric in ("verdicts", "carried"):
                    for s, w in zip(g["seeds"], row.get(metric) or []):
                        name = "verdict_vs_constant" if metric == "verdicts" else "verdict_carried_by"
                        if w != "" or metric == "verdicts":  # "": all three carry it, no row to say so
                            rows.append({**base, "scope": f"seed:{s}", "metric": name, **cell(w), "direction": ""})
            for m, pairs in (entry.get("vs_methods") or {}).items():  # m − r in ρ over the seeds, as the tables'
                base = {"head": g["head"], "head_dir": "", "kind": g["kind"], "ablation": a, "method": m}
                for r, est in pairs.items():
                    rows += _estimate_rows(
                        base, g["seeds"], f"faithfulness_minus_{r}", est, dirs.get("faithfulness", "")
                    )
                    said = {"metric": f"verdict_vs_{r}", **cell(est.get("verdict")), "direction": ""}
                    rows.append({**base, "scope": "seeds", **said})
            for k, c in enumerate(entry["caveats"], 1):
                head = {"head": g["head"], "head_dir": "", "kind": g["kind"], "ablation": a, "method": ""}
                rows.append({**head, "scope": "seeds", "metric": f"caveat_{k}", **cell(c), "direction": ""})
    return rows


CONFIG = "config.json"


def _seed_dirs(folder: Path) -> list[Path]:
    """``folder``'s ``seed_<S>/`` head directories, by increasing S."""
    found = [
        (int(m.group(1)), p)
        for p in folder.iterdir()
        if p.is_dir() and (m := SEED_DIR.fullmatch(p.name)) and (p / CONFIG).is_file()
    ]
    return [p for _, p in sorted(found)]


def _listed_heads(folder: Path) -> list[str]:
    """The head names fit-head's summary.json lists, in its order ([] when it has none to read)."""
    try:
        heads = json.loads((folder / "summary.json").read_text(encoding="utf-8")).get("heads")
        return [h["head"] for h in heads if isinstance(h, dict) and isinstance(h.get("head"), str)]
    except (OSError, ValueError, AttributeError, TypeError):
        return []


def fit_head_dirs(folder: Path) -> list[Path]:
    """Every head directory of a fit-head output (``<head>/seed_<S>/``) or of one head's seeds
    (``seed_<S>/``), in a stable order; [] when ``folder`` holds neither."""
    own = _seed_dirs(folder)
    if own:
        return own
    by_head = {p.name: dirs for p in folder.iterdir() if p.is_dir() and (dirs := _seed_dirs(p))}
    listed = [h for h in _listed_heads(folder) if h in by_head]
    order = listed + sorted(h for h in by_head if h not in listed)
    return [d for h in order for d in by_head[h]]


def expand_head_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """``paths`` with every fit-head output folder replaced by its head directories (a head
    directory, or a path that is not a folder, kept as given); a folder that is neither a head
    directory nor a fit-head output raises :class:`InputError`."""
    out: list[Path] = []
    for given in paths:
        p = Path(given)
        if not p.is_dir() or (p / CONFIG).exists():
            out.append(p)
            continue
        found = fit_head_dirs(p)
        if not found:
            raise InputError(
                f"{p} is neither a head directory (no {CONFIG}) nor a fit-head output (no <head>/seed_<S>/ head "
                "directories in it); give a folder that `laya-inspect fit-head` wrote, or its <head>/seed_<S>/ folders"
            )
        out += found
    return out
