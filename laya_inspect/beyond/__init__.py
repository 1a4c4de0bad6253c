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


def summary_verdict(s: dict[str, Any]) -> tuple[list[str], str | None]:
    """A prune, early-exit or diagnose summary's verdict lines rebuilt from its fields by the rule the
    run stored them by (so a summary written by an older version reads as this one words it), and None;
    where an older summary lacks a field that rule reads, its stored lines and a note naming the fields.
    VERDICT_FIELDS names the fields checked before the rule runs, each with its path; a field missing
    from that list is found by the rule's own KeyError, named by its key, so the list need not name
    every field a rule reads. Any other error of the rule is raised: a bug, not an older summary."""
    from . import diagnose, exit_verdicts, prune
    from .scoring import older_note

    module = {"prune": prune, "early-exit": exit_verdicts, "diagnose": diagnose}[s["command"]]
    note = older_note(s)
    if note is None:
        try:
            return module.verdict_lines(s), None
        except KeyError as e:
            note = older_note(s, lacking=[str(e.args[0])])
    return list(s.get("verdict") or []), note
