"""The plain reading of a prune, early-exit or diagnose run: first whether α beats the baseline that
does not use α, with the difference and its 95% interval, then what else the run found. Computed
from summary.json; "beats" and "worse" only when the interval excludes 0 (docs/METHOD.md,
"Beyond attribution")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .reading import Reading, est, interval, num

TINY = 1e-9
PRUNE_NAMES = {
    "scalarmix": "ScalarMix's weights",
    "lolo": "leave-one-layer-out effects",
    "block_influence": "Block Influence",
    "depth": "depth alone",
}


def outcome(d: dict[str, Any] | None) -> str:
    """ "better", "worse", "no different" (the interval holds 0) or "undecided" (no interval)."""
    if not d or d.get("mean") is None:
        return "undecided"
    lo, hi = d.get("ci_low"), d.get("ci_high")
    if lo is None or hi is None:
        return "undecided"
    # a difference of identical scores is 0 up to float rounding, not a win
    return "better" if lo > TINY else "worse" if hi < -TINY else "no different"


def diff_text(d: dict[str, Any] | None, digits: int = 4) -> str:
    """'+0.0116 [+0.0009, +0.0223]' of a paired difference."""
    return est(d, digits, clip=False, sign=True)


def same(d: dict[str, Any] | None) -> bool:
    """True when every paired difference is exactly 0: both rankings chose the same layer sets."""
    values = (d or {}).get("values") or []
    return bool(values) and all(v == 0 for v in values)


def _word(o: str) -> str:
    return {
        "better": "beats",
        "worse": "does worse than",
        "no different": "is not distinguishable from",
        "undecided": "cannot be compared with (one seed: no interval)",
    }[o]


# -- prune ---------------------------------------------------------------------------------------


def prune_reading(s: dict[str, Any]) -> Reading:
    n_layers = len(s["cache"]["layer_names"])
    vs = s.get("alpha_vs") or {}
    parts = []
    for other, entry in vs.items():
        d = entry.get("mean_test_acc_over_k_diff")
        if same(d):
            parts.append(f"keeps the same layer sets as {PRUNE_NAMES.get(other, other)}")
        else:
            parts.append(f"{_word(outcome(d))} {PRUNE_NAMES.get(other, other)} ({diff_text(d)})")
    if parts:
        first = (
            "Ranking layers by α "
            + "; ".join(parts)
            + f" — mean test accuracy over k < {n_layers} kept layers, refit heads, paired over "
            + f"{len(s['seeds'])} seed(s), 95% t-interval."
        )
    else:
        first = "No ranking could be compared with α (one layer count only, or no other ranking applies)."
    c, ref = s.get("chosen"), s["reference"]["test_acc"]
    if c is None or c["k"] == n_layers:
        second = (
            f"No smaller layer set stays within --max-drop {s['config']['max_drop']:g} of all {n_layers} layers' "
            f"validation accuracy: every layer is worth keeping (test accuracy {num(ref['mean'], 4)} "
            f"{interval(ref, 4)} with all)."
        )
    else:
        second = (
            f"The smallest set within --max-drop {s['config']['max_drop']:g} keeps {c['k']} of {n_layers} layers "
            f"({', '.join(c['layers'])}), found by {', '.join(c['found_by'])}: test accuracy "
            f"{num(c['test_acc']['mean'], 4)} {interval(c['test_acc'], 4)} vs {num(ref['mean'], 4)} with all "
            f"layers, saving {c['flops_saved']:.1%} of the backbone's FLOPs."
        )
    # the lead already says the α-vs-ranking lines and the chosen set
    details = [
        line for line in s.get("verdict") or [] if not line.startswith("keep ") and not line.endswith("over k < L)")
    ]
    details += [
        f"{name} does not apply: {e['how']}" for name, e in (s.get("rankings") or {}).items() if not e.get("applies")
    ]
    return Reading([first, second], details)


# -- early exit ----------------------------------------------------------------------------------


def early_exit_reading(s: dict[str, Any]) -> Reading:
    comp = s.get("comparisons") or {}
    unit = f"area under accuracy–compute, paired over {len(s['seeds'])} seed(s), 95% t-interval"
    lead = []
    d = (comp.get("confidence+alpha vs confidence") or {}).get("area_diff")
    o = outcome(d)
    helps = {"better": "helps", "worse": "hurts", "no different": "does not help", "undecided": "is undecided"}[o]
    lead.append(
        f"Adding α's mass beyond the exit depth (ε = {s['config']['epsilon']:g}) to the confidence rule {helps}: "
        f"{diff_text(d)} ({unit})."
    )
    d2 = (comp.get("alpha vs fixed") or {}).get("area_diff")
    d3 = (comp.get("confidence vs fixed") or {}).get("area_diff")
    lead.append(
        f"α alone {_word(outcome(d2))} a fixed exit depth ({diff_text(d2)}); confidence alone "
        f"{_word(outcome(d3))} it ({diff_text(d3)})."
    )
    details = []
    d4 = (comp.get("confidence+alpha_oracle vs confidence") or {}).get("area_diff")
    if d4:
        details.append(
            f"With α of the full forward pass (not realisable: it needs every layer), confidence+α "
            f"{_word(outcome(d4))} confidence ({diff_text(d4)}): the most a perfect α forecast could add."
        )
    for f in s.get("fixed_depth") or []:
        used = (s.get("compute_used_by_depth") or {}).get(f["layer"])
        details.append(
            f"Exit always at {f['layer']} (depth {f['depth']}): accuracy {num(f['accuracy']['mean'], 4)} "
            f"{interval(f['accuracy'], 4)}, {'—' if used is None else f'{used:.1%}'} of the backbone's FLOPs."
        )
    return Reading(lead, details)


# -- diagnose ------------------------------------------------------------------------------------


def _vs_msp(diffs: dict[str, Any], auroc: dict[str, Any]) -> str:
    """Each score's AUROC and its difference to max softmax probability ("score − msp" keys)."""
    parts = []
    for key, d in diffs.items():
        score = key.split(" − ")[0]
        auc = auroc.get(score) or {}
        parts.append(f"{score} {num(auc.get('mean'), 3)} ({_word(outcome(d))} msp: {diff_text(d, 3)})")
    return "; ".join(parts)


def diagnose_reading(s: dict[str, Any]) -> Reading:
    e = s["errors"]
    msp = e["auroc"].get("msp") or {}
    lead = [
        f"Misclassified test rows: max softmax probability (no α) reaches AUROC {num(msp.get('mean'), 3)} "
        f"{interval(msp)}; " + _vs_msp(e.get("diff_vs_msp") or {}, e["auroc"]) + f" ({e['interval']})."
    ]
    if "shift" in s:
        pooled = s["shift"]["pooled"]
        auc = pooled["detect_auroc"]
        scores = _vs_msp(pooled["detect_diff"], auc)
        p = [h["permutation"]["p_value"] for h in s["shift"]["heads"]]
        lead.append(
            f"Telling {s['against']['path']} from this cache's test rows: msp AUROC "
            f"{num((auc.get('msp') or {}).get('mean'), 3)}; "
            + scores
            + f" ({pooled['interval']}); α profiles differ with permutation p = {', '.join(f'{v:.3g}' for v in p)}."
        )
    details = [
        f"{h['head_dir']}: test accuracy {num(h['test_accuracy'], 4)}, {h['n_errors']} errors of {h['n_test']}."
        for h in s["heads"]
    ]
    return Reading(lead, details)


READINGS: dict[str, Callable[[dict[str, Any]], Reading]] = {
    "prune": prune_reading,
    "early-exit": early_exit_reading,
    "diagnose": diagnose_reading,
}
