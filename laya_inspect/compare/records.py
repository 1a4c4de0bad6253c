"""A compare summary.json read back (:func:`load_summary`): every field the report reads is checked
to be there with its type, numbers null or NaN allowed (:func:`check_summary`, and the "sanity"
record: :func:`sanity_heads`), so a damaged or hand-edited summary ends in one CacheError line that
names the field, never in a traceback; and the words a verdict against the constant rule is said in
(:data:`VERDICTS`). Free of numpy and h5py: the report reads through it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..choices import MIN_ROWS
from ..errors import CacheError, NotFoundError


def read_json(path: Path, rerun: str = "the command that wrote it") -> Any:
    """The JSON a command wrote at ``path``; one CacheError line, naming what to ``rerun``, when it is
    not valid JSON or cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CacheError(f"{path} is not valid JSON ({e}); rerun {rerun}") from None
    except OSError as e:
        raise CacheError(f"cannot read {path}: {e.strerror or e}") from None


def load_summary(out_dir: str | Path) -> dict[str, Any]:
    path = Path(out_dir) / "summary.json"
    if not path.exists():
        raise NotFoundError(f"no summary.json in {out_dir}; write one with `laya-inspect compare … --out {out_dir}`")
    summary = read_json(path, "`laya-inspect compare` to rewrite it")
    if not isinstance(summary, dict) or summary.get("kind") != "laya-inspect-compare":
        kind = summary.get("kind") if isinstance(summary, dict) else type(summary).__name__
        raise CacheError(f"{path} is not a compare summary (kind {kind!r})")
    check_summary(summary, path)
    if "sanity" in summary:  # a damaged "sanity" is refused here, not once the report is drawn
        sanity_heads(summary)
    return summary


READABLE_SCHEMAS = (1, 2)
FIT_SAID = "fit-head said of {head} ({summary}): {warning}"  # a line of head_dir.fit_warnings
_FIT_SAID = re.compile(r"fit-head said of (?P<head>\S+) \((?P<summary>.*?summary\.json)\): (?P<warning>.*)", re.S)


def said_once(lines: Sequence[str]) -> list[str]:
    """``lines`` for the terminal, each said once. fit-head's quality gate gives every head of a run
    the same few-rows and untrained-class warnings, so the lines of one warning of one fit-head summary
    (:data:`FIT_SAID`) become one line naming each head it was said of ("fit-head said of laya,
    scalarmix (…): …"); any other line given twice is kept once. A fit-head line whose claim (its text
    up to the first ": ", numbers masked) is the claim of one of this run's own lines is left out: the run's own says
    it of the rows it reads ("the test split has 15 rows (fewer than 20): …, and the intervals …").
    The outputs keep every line."""
    own = {_claim(line) for line in lines if not _FIT_SAID.fullmatch(line)}
    heads: dict[tuple[str, str] | str, list[str]] = {}
    for line in lines:
        m = _FIT_SAID.fullmatch(line)
        if m and _claim(m["warning"]) in own:
            continue
        said = heads.setdefault((m["summary"], m["warning"]) if m else line, [])
        if m and m["head"] not in said:
            said.append(m["head"])
    return [
        k if isinstance(k, str) else FIT_SAID.format(head=", ".join(names), summary=k[0], warning=k[1])
        for k, names in heads.items()
    ]


def _claim(line: str) -> str:
    """A warning's claim: its text up to the first ": " (the whole line without one), its numbers
    masked: fit-head's "108 of 120 test rows (90%) repeat …" and compare's "38 of 50 test rows (76%)
    repeat …" over the rows it read (--limit) make one claim, the run's own said of its own rows."""
    return _NUMBER.sub("#", line.split(": ", 1)[0])


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


# how compare's lines about a head began, in the summaries that kept them in cache.warnings (read only there)
OLD_HEAD_LINES = ("fit-head said of ", "head ")


def compare_warnings(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """Each warning of a compare summary, in order, with what it is said of: ("cache", line) for
    what extract recorded about the cache, ("head", line) for what is said of a head (fit-head's
    quality gate, another cache, its training rows), ("compare", line) for what the run said of its
    output folder (a leftover beside it kept as the user's)."""
    cache = (summary.get("cache") or {}).get("warnings") or []
    own = [("compare", w) for w in summary.get("warnings") or []]
    if "head_warnings" in summary:
        return [("cache", w) for w in cache] + [("head", w) for w in summary["head_warnings"] or []] + own
    # Only for a summary written before `head_warnings` (laya-inspect 0.1.0 before this change): its
    # cache.warnings held both kinds, and compare's lines about a head began with one of these words.
    return [("head" if w.startswith(OLD_HEAD_LINES) else "cache", w) for w in cache]


class BadField(Exception):
    """A field of a written summary that is missing or of the wrong type (report/folders.py reads
    fit-head summaries and demo records with the same check)."""


def checked_field(obj: Any, key: str | int, kind: Any, where: str, optional: bool = False) -> Any:
    """``obj[key]`` checked against ``kind`` ("num": a number or null; "nums" / "strs": a list of them;
    a type or tuple of types)."""
    if isinstance(key, str):
        if not isinstance(obj, dict):
            raise BadField(f"{where} is not an object")
        if key not in obj:
            if optional:
                return None
            raise BadField(f"{where} has no {key!r}")
    value = obj[key]
    here = f"{where}.{key}"
    if kind == "num":
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise BadField(f"{here} is {value!r}, not a number")
        if isinstance(value, int) and abs(value) > 2**53:  # no score is that large, and float() would overflow
            raise BadField(f"{here} is {value}, out of range")
    elif kind in ("nums", "strs"):
        if not isinstance(value, list):
            raise BadField(f"{here} is not a list" if kind == "nums" else f"{here} is {value!r}")
        for i in range(len(value)):
            checked_field(value, i, "num" if kind == "nums" else str, here)
    elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadField(f"{here} is {value!r}")
    return value


def _scores(s: Any, where: str, reference: bool = False) -> None:
    f = checked_field(s, "faithfulness", dict, where)
    _interval(f, f"{where}.faithfulness")
    for k in ("n_valid", "n_undefined"):
        checked_field(f, k, int, f"{where}.faithfulness")
    sub = checked_field(s, "subset_faithfulness", dict, where, optional=True)
    if sub is not None:
        checked_field(sub, "mean", "num", f"{where}.subset_faithfulness")
    for k in ("top_layer_agreement", "deletion_at_1_over_oracle", "deletion_area", "insertion_area"):
        checked_field(s, k, "num", where, optional=k != "top_layer_agreement")
    if not reference:
        checked_field(s, "deletion_at_1", "num", where)
        checked_field(s, "circular", (str, type(None)), where, optional=True)
        delta = checked_field(s, "ig_delta", (dict, type(None)), where, optional=True)
        if delta:
            checked_field(delta, "abs_mean", "num", f"{where}.ig_delta")
        vs = checked_field(s, "vs_constant", dict, where, optional=True) or {}  # absent before the constant rule
        if vs:
            checked_field(vs, "verdict", str, f"{where}.vs_constant")
            checked_field(vs, "note", str, f"{where}.vs_constant", optional=True)  # why a verdict is not applicable
        for k, d in vs.items():
            if k not in ("verdict", "note") and checked_field(vs, k, (dict, type(None)), f"{where}.vs_constant"):
                _interval(d, f"{where}.vs_constant.{k}")


def _interval(d: Any, where: str) -> None:
    """An estimate's mean, ci_low and ci_high: numbers or null."""
    for k in ("mean", "ci_low", "ci_high"):
        checked_field(d, k, "num", where)


def _lolo(lolo: Any, where: str) -> None:
    for k in ("oracle_at_1", "random_at_1"):
        checked_field(lolo, k, "num", where)
    for r in checked_field(lolo, "most_relied_on", list, where):
        checked_field(r, "layer", str, f"{where}.most_relied_on")
        checked_field(r, "mean_effect", "num", f"{where}.most_relied_on")
    near = checked_field(lolo, "near_ties", dict, where, optional=True)
    if near is not None:
        for k in ("all_tied_share", "top_tied_share", "any_tied_share"):
            checked_field(near, k, "num", f"{where}.near_ties", optional=k == "any_tied_share")


def _ablation(a: Any, where: str) -> None:
    _lolo(checked_field(a, "lolo", dict, where), f"{where}.lolo")
    for m, s in checked_field(a, "methods", dict, where).items():
        _scores(s, f"{where}.methods.{m}")
        for other, d in (checked_field(s, "vs_methods", dict, f"{where}.methods.{m}", optional=True) or {}).items():
            if d is not None:
                _interval(d, f"{where}.methods.{m}.vs_methods.{other}")
    for r, s in (checked_field(a, "references", dict, where, optional=True) or {}).items():
        _scores(s, f"{where}.references.{r}", reference=True)
        profile = checked_field(s, "profile", dict, f"{where}.references.{r}", optional=True)  # the constant rule's
        if profile is not None:
            checked_field(profile, "what", str, f"{where}.references.{r}.profile", optional=True)
            checked_field(profile, "fold_sizes", "nums", f"{where}.references.{r}.profile", optional=True)
    for k in ("caveats", "notes"):
        checked_field(a, k, "strs", where, optional=True)
    best = checked_field(a, "best", dict, where, optional=True) or {}
    for k in best:
        checked_field(best, k, "strs", f"{where}.best")
    for k, t in (checked_field(a, "best_tests", dict, where, optional=True) or {}).items():
        here = f"{where}.best_tests.{k}"
        for key in ("leader", "runner_up"):
            checked_field(checked_field(a["best_tests"], k, dict, f"{where}.best_tests"), key, str, here)
        for key in ("vs_runner_up", "vs_constant"):
            if checked_field(t, key, (dict, type(None)), here, optional=True):
                _interval(t[key], f"{here}.{key}")
    circ = checked_field(a, "circular", dict, where, optional=True) or {}
    for k in circ:
        checked_field(circ, k, str, f"{where}.circular")


def check_summary(summary: dict[str, Any], path: str | Path = "summary.json") -> None:
    """CacheError unless every field the report reads is there with its type (numbers may be null)."""
    try:
        version = checked_field(summary, "schema_version", int, "summary")
        if version not in READABLE_SCHEMAS:
            raise BadField(f"schema_version {version} (readable: {', '.join(map(str, READABLE_SCHEMAS))})")
        cache = checked_field(summary, "cache", dict, "summary")
        for k in ("path", "fingerprint"):
            checked_field(cache, k, str, "summary.cache")
        checked_field(cache, "warnings", "strs", "summary.cache", optional=True)
        checked_field(summary, "head_warnings", "strs", "summary", optional=True)  # absent before it: compare_warnings
        checked_field(summary, "warnings", "strs", "summary", optional=True)  # absent before it
        for k in ("layer_names", "class_names"):
            checked_field(cache, k, "strs", "summary.cache")
        for k in ("split", "target", "baseline", "ablation"):
            checked_field(summary, k, str, "summary")
        checked_field(summary, "effect", str, "summary", optional=True)  # absent before --effect: "prob"
        checked_field(summary, "n", int, "summary")
        checked_field(summary, "seed", (int, type(None)), "summary")
        checked_field(summary, "tie_tolerance", "num", "summary", optional=True)
        checked_field(summary, "ablations", "strs", "summary", optional=True)
        checked_field(checked_field(summary, "config", dict, "summary"), "n_boot", int, "summary.config")
        dirs = checked_field(summary, "directions", dict, "summary")
        for k in ("faithfulness", "top_layer_agreement"):
            checked_field(dirs, k, str, "summary.directions")
        for i, h in enumerate(checked_field(summary, "heads", list, "summary")):
            where = f"summary.heads[{i}]"
            for k in ("name", "kind"):
                checked_field(h, k, str, where)
            checked_field(h, "n", int, where)
            checked_field(h, "accuracy", "num", where)
            for k in checked_field(h, "methods_skipped", dict, where, optional=True) or {}:
                checked_field(h["methods_skipped"], k, str, f"{where}.methods_skipped")
            _ablation(h, where)
            for a, s in (checked_field(h, "ablations", dict, where, optional=True) or {}).items():
                _ablation(s, f"{where}.ablations.{a}")
        _across_seeds(checked_field(summary, "across_seeds", dict, "summary", optional=True))
    except BadField as e:
        raise CacheError(
            f"{path} is not a valid compare summary ({e}); rerun `laya-inspect compare` to rewrite it"
        ) from None


def _across_seeds(across: dict[str, Any] | None) -> None:
    """summary.across_seeds (absent before compare scored across seeds): what report/across.py reads."""
    where = "summary.across_seeds"
    for i, g in enumerate(checked_field(across, "groups", list, where) if across else []):
        here = f"{where}.groups[{i}]"
        for k in ("head", "kind"):
            checked_field(g, k, str, here)
        checked_field(g, "seeds", list, here)
        for a, entry in checked_field(g, "ablations", dict, here).items():
            for kind in ("methods", "references"):  # no references in summaries written before: among methods
                rows = checked_field(entry, kind, dict, f"{here}.ablations.{a}", optional=kind == "references")
                for m, row in (rows or {}).items():
                    at = f"{here}.ablations.{a}.{kind}.{m}"
                    checked_field(row, "verdicts", list, at, optional=True)
                    checked_field(row, "carried", "strs", at, optional=True)
                    for k, est in row.items():
                        if isinstance(est, dict):
                            _interval(est, f"{at}.{k}")
                            checked_field(est, "values", "nums", f"{at}.{k}")
            over = checked_field(entry, "vs_methods", dict, f"{here}.ablations.{a}", optional=True)  # absent before
            for m in over or {}:
                for r, est in checked_field(over, m, dict, f"{here}.ablations.{a}.vs_methods").items():
                    _interval(est, f"{here}.ablations.{a}.vs_methods.{m}.{r}")
    if across:
        checked_field(across, "caveats", "strs", where, optional=True)


# the "sanity" record (docs/METHOD.md, "Sanity checks")
NOT_APPLICABLE = "not applicable"  # every check's verdict on a head that reads one layer (compare.sanity)
PARTLY = "partly kept"  # a sanity check whose randomised ranking still follows the trained one: not passed


def _bad(where: str, what: str) -> CacheError:
    return CacheError(
        f"summary.json: {where} {what}, not a sanity check's record; rerun `laya-inspect compare` to rewrite it"
    )


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(where, "is not an object")
    return value


def _number(value: Any, where: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise _bad(where, f"is {value!r}")
    return value


def _comparison(c: Any, where: str) -> dict[str, Any]:
    c = _obj(c, where)
    for part in ("rank_correlation", "faithfulness"):
        d = _obj(c.get(part), f"{where}.{part}")
        for k in ("mean", "ci_low", "ci_high"):
            _number(d.get(k), f"{where}.{part}.{k}")
    if not isinstance(c.get("verdict"), str):
        raise _bad(f"{where}.verdict", "is missing")
    if c.get("trained_faithfulness") is not None:
        _number(_obj(c["trained_faithfulness"], f"{where}.trained_faithfulness").get("mean"), where)
    return c


def rows_of(head: dict[str, Any], where: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, check, comparison) in method order, each method's checks together; checked."""
    head = _obj(head, where)
    model = head.get("model")
    if not isinstance(model, list):
        raise _bad(f"{where}.model", "is not a list")
    data = _obj(head.get("data"), f"{where}.data")
    checks = [(str(_obj(s, f"{where}.model").get("step")), _obj(s.get("methods"), f"{where}.model")) for s in model]
    checks.append(("labels", _obj(data.get("methods"), f"{where}.data.methods")))
    methods = [m for m in head.get("methods") or [] if isinstance(m, str)]
    out = []
    for m in methods:
        for check, per_method in checks:
            if m in per_method:
                out.append((m, check, _comparison(per_method[m], f"{where}.{check}.{m}")))
    for k in ("accuracy", "real_accuracy", "chance", "near_chance_bound", "real_above_bound"):
        _number(data.get(k), f"{where}.data.{k}")
    for k in ("weight_profile", "real_weight_profile"):  # the report prints them number by number
        profile = data.get(k)
        for i, v in enumerate(profile if isinstance(profile, list) else []):
            _number(v, f"{where}.data.{k}[{i}]")
    return out


def sanity_heads(summary: dict[str, Any]) -> list[tuple[str, dict[str, Any], list[tuple[str, str, dict[str, Any]]]]]:
    """Per head of the summary's "sanity": its name, its record and its checked (method, check,
    comparison) rows; CacheError naming the first field that is missing or of the wrong type."""
    sanity = _obj(summary.get("sanity"), "sanity")
    _obj(sanity.get("choices"), "sanity.choices")
    heads = _obj(sanity.get("heads"), "sanity.heads")
    return [(name, head, rows_of(head, f"sanity.heads.{name}")) for name, head in heads.items()]


# a verdict against the constant rule (compare.paired) in the words the tables and the reading say
# no text picks among the methods by their verdicts, so the methods are not one family; the tables say
# so, since a reader scanning them meets a wrong verdict on some method far more often than 5%
ON_ITS_OWN = "each method's verdict is tested on its own (95% for its three scores together)"
TESTED = ("beats", "worse", "mixed", "not shown")  # the verdicts an interval decided
# one method equal in truth to the rule reads beats, worse or mixed in 4.6% of simulated runs; 4 such methods
# gave some row one in 17% (bench/verdict_nulls.py), as 1 − (1 − 0.046)^4 = 17.2% says: the rows' chances
# add up as independent ones, the rule shared by them all notwithstanding
ONE_METHOD_NULL = 0.046


def on_its_own(methods: int) -> str:
    """The words a table's legend says its verdicts in: each tested on its own, and with ``methods``
    methods tested against the rule (two or more) how often some row reads a verdict no method has."""
    if methods < 2:  # one row: its own 95% is the table's
        return ON_ITS_OWN
    if methods == 4:
        rate = "in 17% of simulated runs"
    else:
        rate = f"in about {1 - (1 - ONE_METHOD_NULL) ** methods:.0%} of runs (17% of simulated runs with 4)"
    return (
        f"{ON_ITS_OWN}, not over the methods: with {methods} methods no different from the rule, some row reads "
        f"beats, worse or mixed {rate}"
    )


def methods_tested(heads: list[dict[str, Any]]) -> int:
    """The most methods one table of ``heads`` (a compare summary's) reads against the constant rule with
    intervals: one head's methods under one ablation whose verdict is in :data:`TESTED`."""
    counts = [
        sum((s.get("vs_constant") or {}).get("verdict") in TESTED for s in (entry.get("methods") or {}).values())
        for h in heads
        for entry in [h, *(h.get("ablations") or {}).values()]
    ]
    return max(counts, default=0)


VERDICTS = {
    "beats": "beats the constant rule",
    "worse": "does worse than the constant rule",
    "mixed": "beats the constant rule on some scores and does worse on others",
    "not shown": "does not beat the constant rule (every interval includes 0)",
    "identical": "identical to the constant rule (same profile)",
    "untested": "not tested against the constant rule (no intervals: --bootstrap 0)",
    "too few rows": f"not tested against the constant rule (no intervals: fewer than {MIN_ROWS} shared rows, "
    "whatever --bootstrap says)",
    "circular": "not read against the constant rule: circular with this ablation",
    "withheld": "not read against the constant rule: a caveat withholds every ranking",
    "no constant": "no constant rule to read it against",
    NOT_APPLICABLE: f"{NOT_APPLICABLE} (the head reads one layer)",
}
# why a head that reads one layer has no verdict against the constant rule (summary.json's "note")
ONE_LAYER = (
    "every row's LOLO effect, every attribution but random's and the constant rule's profile are 0 "
    "outside the one layer the "
    "head reads: the rule ranks that layer first on every row, as the effects do, so no method can beat it, and "
    "a method's scores read one sign per row (its attribution there against zeros elsewhere), whatever the head "
    "learned"
)
# why a head whose logits move with no layer (a constant head, its weights zeroed) has no verdict at all
NO_LAYER = (
    "the head's logits move with no layer (each replaced in turn by seeded noise): every LOLO effect and every "
    "gradient attribution is 0 on every layer, so no score, check or comparison says anything of the head"
)


def inapplicable(layers_read: Sequence[int] | None) -> str | None:
    """Why a head's methods are read against nothing (the note, ONE_LAYER or NO_LAYER), from the layers its
    logits depend on; None where it reads several, or the summary does not say (written before)."""
    if layers_read is None or len(layers_read) > 1:
        return None
    return ONE_LAYER if len(layers_read) == 1 else NO_LAYER


def inapplicable_said(note: Any) -> str:
    """ "not applicable (the head reads one layer)", or "… no layer)" for a NO_LAYER note."""
    return f"{NOT_APPLICABLE} (the head reads {'no' if note == NO_LAYER else 'one'} layer)"


# the headline scores' names in a verdict's words
VERSUS_LABELS = {
    "top_layer_agreement": "top-layer agreement",
    "deletion_at_1_over_oracle": "Deletion@1 ÷ oracle",
    "faithfulness": "faithfulness ρ",
}


def carried(vs: dict[str, Any], labels: dict[str, str] = VERSUS_LABELS) -> str:
    """Which headline scores carry a "beats", "worse" or "mixed" verdict (a vs_constant record) and which
    do not: "on top-layer agreement, Deletion@1 ÷ oracle; not on ρ"; "" when all three carry it. One
    interval above 0 and none below is enough to beat the rule (docs/METHOD.md), so a bare "beats" was
    read as beating it on ρ where ρ's interval included 0 (MiniLM: −.03 [−.21, +.16])."""
    word = vs.get("verdict")
    if word not in ("beats", "worse", "mixed"):
        return ""
    by: dict[str, list[str]] = {"up": [], "down": [], "not": []}
    for key, label in labels.items():
        d = vs.get(key) or {}
        lo, hi = d.get("ci_low"), d.get("ci_high")  # NaN (None in JSON) where no interval was drawn
        by["not" if lo is None or hi is None else "up" if lo > 0 else "down" if hi < 0 else "not"].append(label)
    parts = [f"better on {', '.join(by['up'])}", f"worse on {', '.join(by['down'])}"] if word == "mixed" else []
    parts = parts or [f"on {', '.join(by['up' if word == 'beats' else 'down'])}"]
    return "; ".join([*parts, f"not on {', '.join(by['not'])}"]) if by["not"] else "; ".join(parts) * (word == "mixed")


def score_value(entry: Mapping[str, Any], key: str) -> Any:
    """A score's value in a method's entry: the mean of a faithfulness record, else the number itself."""
    v = entry.get(key)
    return v.get("mean") if isinstance(v, dict) else v
