"""Beyond the paper: three uses of LAYA's layer attention α, each measured against a baseline that
does not use α (definitions: docs/METHOD.md, "Beyond attribution: prune, early exit, diagnose").

* :func:`~.prune.prune_layers` — rank layers (α, ScalarMix, leave-one-layer-out, Block Influence,
  depth), refit or re-evaluate the head on the top-k of each ranking, accuracy against backbone compute.
* :func:`~.early_exit.simulate_early_exit` — per-input early exit from per-depth heads, confidence
  rules with and without α, against fixed depth.
* :func:`~.diagnose.diagnose_heads` — misclassification detection from α against max softmax
  probability, and α's shift between two caches of the same layers.

Each writes a whole output folder (tables as JSON and CSV, PNG plots) and returns what it wrote.
Their verdict lines are read from the summary alone (:func:`summary_verdict`: the run stores them,
`report DIR` and report.html rebuild them by the same rule).
"""

from __future__ import annotations

from typing import Any


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


def _plain(field: str) -> str:
    """A field's path in words: "config.max_drop" as "max_drop (in config)"."""
    *under, name = field.split(".")
    return name + (f" (in {'.'.join(under)})" if under else "")


def summary_verdict(s: dict[str, Any]) -> tuple[list[str], str | None]:
    """A prune, early-exit or diagnose summary's verdict lines rebuilt from its fields by the rule the
    run stored them by (so a summary written by an older version reads as this one words it), and None;
    where an older summary lacks a field that rule reads (its module's VERDICT_FIELDS), its stored lines
    and a note naming those fields. Any error of the rule on a summary that has them is raised."""
    from . import diagnose, exit_verdicts, prune

    module = {"prune": prune, "early-exit": exit_verdicts, "diagnose": diagnose}[s["command"]]
    missing = missing_fields(s, module.VERDICT_FIELDS)
    if not missing:
        return module.verdict_lines(s), None
    stored = list(s.get("verdict") or [])
    return stored, (
        f"this summary was written by an older laya-inspect and lacks {', '.join(map(_plain, missing))}: "
        + ("its stored verdict lines are shown" if stored else "it stores no verdict lines")
        + f"; rerun {s['command']} to read them by today's rule"
    )
