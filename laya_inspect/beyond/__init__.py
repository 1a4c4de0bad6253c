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
    where an older summary lacks a field that rule reads, its stored lines and a note saying so."""
    from . import diagnose, exit_verdicts, prune

    rule = {"prune": prune.verdict_lines, "early-exit": exit_verdicts.verdict_lines, "diagnose": diagnose.verdict_lines}
    try:
        return rule[s["command"]](s), None
    except (KeyError, TypeError) as e:  # a field the rule reads is missing (KeyError) or null (TypeError)
        return list(s.get("verdict") or []), (
            f"the verdict lines above are as summary.json stores them: it lacks a field today's rule reads "
            f"({type(e).__name__}: {e}), as a summary written by an older laya-inspect may; rerun "
            f"{s.get('command')} to read them by today's rule"
        )
