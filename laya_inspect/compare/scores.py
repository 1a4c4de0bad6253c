"""The numbers of one (head, ablation): every method and reference scored against what ablation
shows (docs/METHOD.md, "Scores", "Circular pairs" and "Caveats"), the near-tie shares, which pairs
are circular, the caveats that withhold "best", and the best method per score. Pure functions of
arrays and of :class:`~laya_inspect.compare.effects.Measured`; the result is plain JSON-able data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..choices import MIN_LAYERS, MIN_ROWS, NEGLIGIBLE_EFFECT, TIE_TOLERANCE
from ..training.stats import family
from . import metrics as M
from .effects import Measured, curve_tie_rule, tied_rows
from .paired import (
    HEADLINE,
    Constant,
    Rows,
    candidates,
    paired,
    paired_difference,
    row_values,
    significant_best,
    versus_constant,
)
from .records import inapplicable_said

BEST_METRICS = (
    "faithfulness",
    "subset_faithfulness",
    "top_layer_agreement",
    "deletion_at_1",
    "deletion_at_1_over_oracle",
    "deletion_area",
    "insertion_area",
)
REFERENCES = ("top1_only", "random", "constant")


def circular_reason(method: str, ablation: str, params: Mapping[str, Any] | None = None) -> str | None:
    """Why (``method``, ``ablation``) cannot validate the method, or None: the method is built
    from what the ablation removes."""
    params = params or {}
    if method in ("alpha", "static") and ablation in ("drop", "mix"):
        return f"{method} is the head's aggregation weights, which the {ablation!r} ablation removes"
    if method == "alpha-contrib" and ablation in ("drop", "mix"):
        return f"alpha-contrib is built from α_i z_i, the term the {ablation!r} ablation removes from the aggregate"
    if method == "ig" and params.get("baseline") == ablation and ablation in ("mean", "zero"):
        return f"IG integrates from the baseline {ablation!r}, the value the {ablation!r} ablation puts in"
    if method == "gradcam" and ablation == "zero":
        return "Grad-CAM on a vector, <df_c/dh_i, h_i>, is the first-order estimate of setting h_i to 0"
    return None


def score_entry(
    scores: np.ndarray,
    p_topk: np.ndarray | None,
    p_keep: np.ndarray | None,
    m: Measured,
    *,
    n_boot: int,
    seed: int,
    tol: float = TIE_TOLERANCE,
) -> tuple[dict[str, Any], np.ndarray]:
    """(every score of one attribution, the rows scored): rows with a non-finite probability or
    score are left out and counted. Without curves (``p_topk``, ``p_keep`` None: the constant
    rule) the deletion and insertion curves and areas are None."""
    rows = m.finite & M.finite_rows(scores, *(c for c in (p_topk, p_keep) if c is not None))
    a, e, p, pa = scores[rows], m.effects[rows], m.p[rows], m.p_ablated[rows]
    faith = M.faithfulness(a, e, n_boot=n_boot, seed=seed, tol=tol)
    subset = M.subset_faithfulness(a, m.subsets, m.subset_effects[rows], n_boot=n_boot, seed=seed, tol=tol)
    d1 = M.deletion_at_k(a, p, pa) if len(a) else np.zeros(0)
    oracle1 = float(M.oracle_at_1(e).mean()) if len(e) else float("nan")
    nan_curve = np.full(scores.shape[1], np.nan)
    del_curve = M.deletion_curve(p, p_topk[rows]) if len(a) and p_topk is not None else nan_curve
    ins_curve = M.insertion_curve(p_keep[rows]) if len(a) and p_keep is not None else nan_curve
    no_curves = p_topk is None or p_keep is None
    entry = {
        "faithfulness": faith.to_dict(),
        "subset_faithfulness": subset.to_dict(),
        "deletion_at_1": M.finite(d1.mean()) if len(d1) else None,
        "deletion_at_1_over_oracle": M.finite(d1.mean() / oracle1) if len(d1) and oracle1 > 0 else None,
        "deletion_curve": None if no_curves else del_curve.tolist(),
        "deletion_area": None if no_curves else M.finite(M.curve_area(del_curve)),
        "insertion_curve": None if no_curves else ins_curve.tolist(),
        "insertion_area": None if no_curves else M.finite(M.curve_area(ins_curve)),
        "top_layer_agreement": M.finite(M.top_layer_agreement(a, e, tol).mean()) if len(a) else None,
        "n_rows_scored": int(rows.sum()),
        "n_rows_nonfinite": int((~rows).sum()),
    }
    return entry, rows


AREA_KINDS = {"deletion": "{}_curve", "insertion": "{}_insertion_curve"}


def _area(curves: dict[str, list], ref: str, kind: str) -> float | None:
    values = curves[AREA_KINDS[kind].format(ref)]
    return None if any(v is None for v in values) else M.finite(M.curve_area(np.asarray(values, dtype=float)))


def top_lead(
    e: np.ndarray, order: np.ndarray, layer_names: list[str], *, n_boot: int, seed: int
) -> dict[str, Any] | None:
    """The layer of the largest mean effect against the runner-up: the paired difference of their
    effects over the same rows (no interval under MIN_ROWS rows or without resamples), what "removing
    it changes the prediction most" rests on; None for fewer than two layers."""
    if len(order) < 2 or not len(e):
        return None
    top, second = int(order[0]), int(order[1])
    draws = n_boot if len(e) >= MIN_ROWS else 0
    d = paired_difference(e[:, top], e[:, second], n_boot=draws, seed=seed).to_dict()
    return {
        "layer": layer_names[top],
        "runner_up": layer_names[second],
        **{k: M.finite(v) if isinstance(v, float) else v for k, v in d.items()},
    }


def lolo_entry(
    m: Measured, layer_names: list[str], tol: float = TIE_TOLERANCE, *, n_boot: int = 0, seed: int = 0
) -> dict[str, Any]:
    rows = m.finite
    e, p = m.effects[rows], m.p[rows]
    n_layers = m.effects.shape[1]
    mean_effect = e.mean(axis=0) if len(e) else np.full(n_layers, np.nan)
    order = np.argsort(-np.nan_to_num(mean_effect, nan=-np.inf), kind="stable")

    def curve(p_curve: np.ndarray, insertion: bool) -> list:
        if not len(e):
            return [None] * n_layers
        c = M.insertion_curve(p_curve[rows]) if insertion else M.deletion_curve(p, p_curve[rows])
        return c.tolist()

    curves = {
        "oracle_curve": curve(m.oracle.p_topk, False),
        "random_curve": curve(m.random.p_topk, False),
        "oracle_insertion_curve": curve(m.oracle.p_keep, True),
        "random_insertion_curve": curve(m.random.p_keep, True),
    }
    max_abs = float(np.abs(e).max(axis=1).mean()) if len(e) and n_layers else float("nan")
    return {
        "mean_effect": mean_effect.tolist(),
        "oracle_at_1": M.finite(M.oracle_at_1(e).mean()) if len(e) else None,
        "random_at_1": M.finite(M.random_at_1(e).mean()) if len(e) else None,
        **curves,
        **{f"{ref}_{kind}_area": _area(curves, ref, kind) for ref in ("oracle", "random") for kind in AREA_KINDS},
        "top_lead": top_lead(e, order, layer_names, n_boot=n_boot, seed=seed),
        "most_relied_on": [
            {"layer": layer_names[i], "index": int(i), "mean_effect": M.finite(mean_effect[i])} for i in order
        ],
        "near_ties": M.near_ties(e, tol),
        "mean_max_abs_effect": M.finite(max_abs),
        "effects_negligible": bool(not np.isfinite(max_abs) or max_abs < NEGLIGIBLE_EFFECT),
        "n_rows_scored": int(rows.sum()),
        "n_rows_nonfinite": int((~rows).sum()),
        "subsets": {
            "n": int(len(m.subsets)),
            "sizes": sorted({int(s) for s in m.subsets.sum(axis=1)}),
            "masks": m.subsets.astype(int).tolist(),
        },
        "params": m.params,
    }


def caveats(n_layers: int, ablation: str, lolo: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(caveats, notes): a caveat withholds "best" (the scores cannot rank methods); a note does not."""
    out, notes = [], []
    if n_layers < MIN_LAYERS:
        out.append(
            f"L = {n_layers} layer{'s' * (n_layers != 1)}: per-sample ρ is ±1 or undefined by construction, "
            "so no method is marked best"
        )
    if lolo["n_rows_scored"] == 0:
        out.append(f"no row has finite probabilities under the {ablation!r} ablation: nothing to score")
    elif lolo["n_rows_scored"] < MIN_ROWS:
        out.append(
            f"only {lolo['n_rows_scored']} rows scored (fewer than {MIN_ROWS}): a bootstrap over so few rows "
            "gives no 95% interval, so no method is marked best and none is read against the constant rule"
        )
    elif lolo["effects_negligible"]:
        out.append(
            f"every LOLO effect is ≈ 0 under the {ablation!r} ablation (mean max_i |e_i| = "
            f"{lolo['mean_max_abs_effect']:.1e} < {NEGLIGIBLE_EFFECT:g}): the scores would rank noise, "
            "so no method is marked best"
        )
    bad = lolo["n_rows_nonfinite"]
    if bad and lolo["n_rows_scored"]:
        notes.append(
            f"{bad} of {bad + lolo['n_rows_scored']} rows give non-finite probabilities under the {ablation!r} "
            "ablation (NaN/Inf features or head weights): left out of every score"
        )
    return out, notes


def best(methods: Mapping[str, Mapping[str, Any]], circular: Mapping[str, str | None]) -> dict[str, list[str]]:
    """Per score in :data:`BEST_METRICS`: the methods with the highest value, among the non-circular
    ones with a value (at least two of them, else none). Only for summaries written before "best"
    was stored; new runs mark best through :func:`.paired.significant_best`."""
    out: dict[str, list[str]] = {}
    for key in BEST_METRICS:
        values = candidates(methods, circular, key)
        if len(values) >= 2:
            top = max(values.values())
            out[key] = [name for name, v in values.items() if v == top]
    return out


def _mirrored(d: dict[str, Any]) -> dict[str, Any]:
    """b − a from a − b: the mean and the interval negated, the ends swapped."""
    return {**d, "mean": -d["mean"], "ci_low": -d["ci_high"], "ci_high": -d["ci_low"]}


# which comparisons the paired differences in ρ between methods are a family of
METHODS_FAMILY = "other methods the strongest rival is picked from"


def versus_methods(
    values: Mapping[str, Rows], compared: list[str], *, n_boot: int, seed: int
) -> dict[str, dict[str, Any]]:
    """{method: {other: the paired difference method − other in ρ}} over ``compared``: what the report's
    "α orders the layers better than IG" reads, drawn once per pair (b − a is a − b mirrored: the same
    resampled rows). The report reads the lead against its strongest rival, the other method with the
    highest mean ρ, picked after the fact among the m others: "worse than the strongest" is "worse than
    one of m", so each interval is drawn at 1 − 0.05/m (:func:`.training.stats.family`). At 95% a lead
    equal in truth to four rivals read "better" or "worse" in about 10% of simulated runs
    (tests/test_constant_null.py)."""
    fam = family(len(compared) - 1, METHODS_FAMILY)
    level = fam["confidence"]
    out: dict[str, dict[str, Any]] = {name: {} for name in compared}
    for i, name in enumerate(compared):
        for other in compared[i + 1 :]:
            d = paired("faithfulness", values[name], values[other], n_boot=n_boot, seed=seed, confidence=level)
            there = None if d is None else {**d.to_dict(), "family": fam}
            out[name][other] = there
            out[other][name] = None if there is None else _mirrored(there)
    return out


def ablation_summary(
    m: Measured,
    scores: Mapping[str, np.ndarray],
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]],
    method_info: Mapping[str, dict[str, Any]],
    layer_names: list[str],
    *,
    description: str,
    n_boot: int,
    seed: int,
    constant: Constant | None = None,
    kind: str = "",
    head_caveat: str | None = None,
    inapplicable: str | None = None,
) -> dict[str, Any]:
    """Everything about one (head, ablation): lolo, methods, references (the constant rule's among
    them when the head has one), each method against the constant rule, circular pairs, caveats,
    and "best" with the paired tests behind it. ``method_info[m]`` holds the method's
    ablation-independent keys (params, ig_delta, …); ``head_caveat`` one said of the head itself
    (:func:`chance_check`), which withholds as the others do; ``inapplicable``: why the head's attributions
    are read against nothing (:func:`.records.inapplicable`: it reads one layer, or none), so no method is
    read against another, nor against the constant rule (random included: the rule is the oracle there)."""
    lolo = lolo_entry(m, layer_names, n_boot=n_boot, seed=seed)
    cav, notes = caveats(m.effects.shape[1], m.ablation, lolo)
    cav += [head_caveat] if head_caveat else []
    if lolo["n_rows_scored"] < MIN_ROWS:  # the caveat says a bootstrap gives no interval: none is drawn
        n_boot = 0
    methods: dict[str, Any] = {}
    circular: dict[str, str | None] = {}
    values: dict[str, Rows] = {}
    for name, a in scores.items():
        entry, rows = score_entry(a, *curves[name], m, n_boot=n_boot, seed=seed)
        circular[name] = circular_reason(name, m.ablation, method_info[name].get("params"))
        values[name] = row_values(a, rows, m, curves[name])
        methods[name] = {
            **entry,
            "circular": circular[name],
            "n_top_ties": int(M.tied_top_rows(a[rows]).sum()) if rows.any() else 0,
            "n_curve_ties": int(tied_rows(a[rows]).sum()) if rows.any() else 0,
            "curve_ties": curve_tie_rule(a.shape[1]),
            "mean_score": a[rows].mean(axis=0).tolist() if rows.any() else [None] * a.shape[1],
            **method_info[name],
        }
    references = {
        ref: score_entry(r.scores, r.p_topk, r.p_keep, m, n_boot=n_boot, seed=seed)[0]
        for ref, r in (("top1_only", m.top1_only), ("random", m.random))
    }
    const_values = None
    if constant is not None:
        entry, rows = score_entry(constant.scores, None, None, m, n_boot=n_boot, seed=seed)
        references["constant"] = {**entry, "profile": constant.info(kind)}
        const_values = row_values(constant.scores, rows, m, None)
    for name in methods:
        methods[name]["vs_constant"] = versus_constant(
            values[name],
            const_values,
            circular=bool(circular[name]),
            caveat=bool(cav),
            n_boot=n_boot,
            seed=seed,
            # random too: on one layer read the rule picks that layer, the oracle, so random is worse by
            # construction, whatever a method of the head could do
            inapplicable=inapplicable,
        )
    # one layer read: every gradient method scores one sign per row, so a paired difference between two
    # of them reads those signs, not an ordering of the layers (ONE_LAYER); none is drawn
    compared = [] if inapplicable else [m for m in methods if m != "random" and not circular[m]]
    for name, vs in versus_methods(values, compared, n_boot=n_boot, seed=seed).items():
        methods[name]["vs_methods"] = vs
    for name in methods:
        methods[name].setdefault("vs_methods", {})
    best, tests = significant_best(methods, values, circular, const_values, BEST_METRICS, n_boot=n_boot, seed=seed)
    if inapplicable:  # a best mark is a method read against its runner-up: one sign per row, as vs_methods
        best, tests = {}, {}
        notes.append(f"no method is marked best: {inapplicable_said(inapplicable)}")
    if constant is None:
        notes.append(
            "no constant rule: the head has no layer weights and neither IG nor Grad-CAM ran, so 'best' "
            "is tested against the runner-up only"
        )
    return {
        "ablation": m.ablation,
        "description": description,
        "lolo": lolo,
        "methods": methods,
        "references": references,
        "circular": {k: v for k, v in circular.items() if v},
        "caveats": cav,
        "notes": notes,
        "best": {} if cav else best,
        "best_tests": {} if cav else tests,
    }


def headline_rows(heads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per (head, ablation, method or reference): the scores to read together."""
    rows = []
    for h in heads:
        for abl, a in h["ablations"].items():
            near = a["lolo"]["near_ties"]
            top1 = a["references"]["top1_only"]["faithfulness"]["mean"]
            rand = a["references"]["random"]["faithfulness"]["mean"]
            const = (a["references"].get("constant") or {}).get("faithfulness") or {}
            entries = [(m, s, False) for m, s in a["methods"].items()]
            entries += [(r, a["references"][r], True) for r in REFERENCES if r in a["references"]]
            for name, s, is_ref in entries:
                rows.append(
                    {
                        "head": h["name"],
                        "kind": h["kind"],
                        "ablation": abl,
                        "method": name,
                        "reference": is_ref,
                        "circular": s.get("circular"),
                        "best": sorted(k for k, v in a["best"].items() if name in v),
                        "top_layer_agreement": s["top_layer_agreement"],
                        "deletion_at_1_over_oracle": s["deletion_at_1_over_oracle"],
                        "faithfulness": s["faithfulness"]["mean"],
                        "faithfulness_ci_low": s["faithfulness"]["ci_low"],
                        "faithfulness_ci_high": s["faithfulness"]["ci_high"],
                        "faithfulness_top1_only": top1,
                        "faithfulness_random": rand,
                        "faithfulness_constant": const.get("mean"),
                        **versus_columns(s.get("vs_constant")),
                        "subset_faithfulness": s["subset_faithfulness"]["mean"],
                        "subset_faithfulness_random": a["references"]["random"]["subset_faithfulness"]["mean"],
                        "deletion_area": s["deletion_area"],
                        "insertion_area": s["insertion_area"],
                        "near_tie_all_share": near["all_tied_share"],
                        "near_tie_top_share": near["top_tied_share"],
                        "near_tie_any_share": near["any_tied_share"],
                        "caveats": a["caveats"],
                    }
                )
    return rows


def versus_columns(vs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The headline row's method − constant columns: each headline score's paired difference and
    its interval, and the verdict (None for a reference)."""
    out: dict[str, Any] = {"verdict_vs_constant": (vs or {}).get("verdict")}
    for key in HEADLINE:
        d = (vs or {}).get(key) or {}
        for part, suffix in (("mean", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high")):
            out[f"{key}_minus_constant{suffix}"] = d.get(part)
    return out
