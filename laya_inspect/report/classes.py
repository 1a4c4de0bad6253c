"""fit-head's per-class table on report.html: each class's test rows and each head's mean F1 and
recall over seeds, shown where the quality gate names a weakest class."""

from __future__ import annotations

import math
from typing import Any

from ..training.classes import stands_out
from ..training.stats import counted
from .html import Cell, Table
from .reading import num

CLASS_ROWS = 20  # the table's rows at most: beyond, the classes of lowest F1


def class_table(heads: list[dict[str, Any]], balance: dict[str, Any] | None, split: str) -> list[Table]:
    """Each class's test rows and each head's mean F1 and recall over seeds, where the gate names a
    weakest class (classes.stands_out: imbalanced classes, or one class far below the others): there
    accuracy and macro-F1 hide it. No table otherwise, nor for a summary from before per_class."""
    shown = [h for h in heads if h.get("per_class")]
    if not balance or not any(stands_out(h["per_class"], balance) for h in shown):
        return []
    first = shown[0]["per_class"]
    classes = list(range(len(first["classes"])))
    if len(classes) > CLASS_ROWS:  # the lowest F1 of any head first: the rows the table is there for

        def lowest(c: int) -> float:
            means = [h["per_class"]["f1"]["mean"][c] for h in shown]
            return min((m for m in means if m is not None and m == m), default=math.inf)

        classes = sorted(sorted(classes, key=lowest)[:CLASS_ROWS])
    cols = ["class", "test rows"] + [f"{h['head']} {m}" for h in shown for m in ("F1", "recall")]
    rows: list[list[Cell | str]] = [
        [first["classes"][c], str(first["support"][c])]
        + [num(h["per_class"][m]["mean"][c], 3) for h in shown for m in ("f1", "recall")]
        for c in classes
    ]
    weakest = {h["per_class"]["weakest"]["class"] for h in shown if h["per_class"].get("weakest")}
    why = "imbalanced classes" if balance.get("imbalanced") else "a class's F1 far below the others'"
    n = max(int(h.get("n") or 0) for h in shown)
    cut = len(classes) < len(first["classes"])
    some = f"the {len(classes)} of {len(first['classes'])} classes of lowest F1, " * cut
    caption = (
        f"{some}per class on the {split}, mean over {counted(n, 'seed')} ({why}; weakest "
        f"{', '.join(map(repr, sorted(weakest)))}); per_class in summary.json holds each one's std, min and max"
    )
    return [Table("fit-classes", cols, rows, caption)]
