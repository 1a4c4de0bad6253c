"""The verdicts of `laya-inspect early-exit` (docs/METHOD.md, "Early exit"): every realisable rule
against random exit, whether α adds to confidence, and the comparisons against fixed depth, each the
paired difference over seeds of the held-out areas (:mod:`.exit_heldout`)."""

from __future__ import annotations

from typing import Any

from ..training.stats import TINY
from .common import paired, verdict

REALISABLE = ("fixed", "confidence", "alpha", "confidence+alpha")  # each read against ``random``


def _same_points(points: list[dict[str, Any]], a: str, b: str) -> bool:
    """Whether rules ``a`` and ``b`` have the same operating points at every step of every seed."""

    def key(rule: str) -> list[tuple[Any, ...]]:
        fields = ("seed", "step", "accuracy", "compute_used", "mean_depth")
        return [tuple(p[f] for f in fields) for p in points if p["rule"] == rule]

    return key(a) == key(b)


def _comparisons(
    areas: dict[str, list[float]],
    points: list[dict[str, Any]],
    alpha_fired: dict[str, Any],
    in_sample: dict[str, list[float]] | None = None,
) -> dict[str, Any]:
    """Every realisable rule against random exit first (the headline), then whether α adds to
    confidence, the oracle's, and the older comparisons against fixed depth's step frontier. ``areas``
    are the held-out areas the verdicts read; ``in_sample``'s differences are recorded beside them."""
    pairs = {f"{r} vs random": (r, "random") for r in (*REALISABLE[1:], "fixed")}
    pairs |= {
        "confidence+alpha vs confidence": ("confidence+alpha", "confidence"),
        "confidence+alpha_oracle vs confidence": ("confidence+alpha_oracle", "confidence"),
        "confidence vs fixed": ("confidence", "fixed"),
        "alpha vs fixed": ("alpha", "fixed"),
    }
    out: dict[str, Any] = {}
    for label, (a, b) in pairs.items():
        d = paired(areas[a], areas[b])
        entry: dict[str, Any] = {"area_diff": d}
        if in_sample is not None:
            entry["area_diff_in_sample"] = paired(in_sample[a], in_sample[b])
        adds_alpha = a.startswith("confidence+alpha") and b == "confidence"
        what = "α of the full forward pass" if a.endswith("oracle") else "α"
        n = alpha_fired["oracle_rows" if a.endswith("oracle") else "rows"]
        eps, of = alpha_fired["epsilon"], alpha_fired["of"]
        if adds_alpha and _same_points(points, a, b):
            why = (
                f"{what} never fired at ε = {eps:g} (0 of {of} rows)"
                if n == 0
                else f"{what} fired at ε = {eps:g} on {n} of {of} rows, only where confidence exits as early"
            )
            entry["identical"] = True
            entry["verdict"] = f"{why}: {a} is the confidence rule; nothing to compare"
        elif all(abs(x - y) <= TINY for x, y in zip(areas[a], areas[b])):
            entry["same_area"] = True
            fired_on = f" ({what} fired at ε = {eps:g} on {n} of {of} rows)" if adds_alpha else ""
            entry["verdict"] = (
                f"rule {a} has the same held-out area as {'random exit' if b == 'random' else f'rule {b}'} on "
                f"every seed"
                f"{fired_on}: its points move, no step of the frontier does; nothing to compare"
            )
        else:
            entry["verdict"] = (
                verdict(d, what=f"rule {a}", baseline="random exit" if b == "random" else f"rule {b}")
                + " (held-out area under accuracy–compute"
                + ("; not realisable: it needs α of the full forward pass)" if a.endswith("oracle") else ")")
            )
        out[label] = entry
    return out
