"""report.html's "method − constant rule" table: each method's paired differences to the constant
rule on the headline scores, and its verdict (docs/METHOD.md, "The constant rule and paired
differences")."""

from __future__ import annotations

from typing import Any

from .html import Cell, Table, slug
from .reading import num

# method − constant: the headline scores whose paired differences the verdict reads
VERSUS = {
    "top-layer agreement": "top_layer_agreement",
    "Deletion@1 ÷ oracle": "deletion_at_1_over_oracle",
    "faithfulness ρ": "faithfulness",
}


def diff_text(d: dict[str, Any] | None) -> str:
    if not d or d.get("mean") is None:
        return "—"
    ci = "" if d.get("ci_low") is None else f" [{num(d['ci_low'], sign=True)}, {num(d['ci_high'], sign=True)}]"
    return num(d["mean"], sign=True) + ci


def versus_table(head: dict[str, Any]) -> Table | None:
    """Each method − the constant rule (paired differences, 95% intervals) and its verdict."""
    from ..compare.paired import VERDICTS

    methods = head.get("methods") or {}
    const = (head.get("references") or {}).get("constant")
    if not const or not any(s.get("vs_constant") for s in methods.values()):
        return None
    rows: list[list[Cell | str]] = []
    classes = []
    for m, s in methods.items():
        vs = s.get("vs_constant") or {}
        word = str(vs.get("verdict"))
        rows.append(
            [
                Cell(m + (" °" if s.get("circular") else ""), "text"),
                *[diff_text(vs.get(key)) for key in VERSUS.values()],
                Cell(VERDICTS.get(word, word), "best" if word == "beats" else "text"),
            ]
        )
        classes.append("ref" if s.get("circular") else "")
    profile = const.get("profile") or {}
    caption = (
        f"method − constant rule, paired over the same rows (95% bootstrap interval); constant rule: "
        f"{profile.get('what', 'one layer profile')} over the other half of the rows, the same for every input, "
        f"cross-fitted in {profile.get('folds', 2)} "
        f"folds of {'/'.join(str(n) for n in profile.get('fold_sizes') or [])} rows (split seed "
        f"{profile.get('split_seed')})"
    )
    return Table(
        f"constant-{slug(head['name'])}", ["method", *VERSUS, "verdict"], rows, caption, classes, text_columns=1
    )
