"""What `compare` writes: summary.json, summary.csv (long rows, :func:`csv_rows`) and attributions.h5
(:func:`write_h5`), each written atomically. A summary read back is checked by records.py."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..files import artifact_header, plain, write_bytes
from .effects import RANDOM_ORDERS
from .per_head import HeadResult
from .seeds import CSV_REFERENCES, cell
from .seeds import csv_rows as across_seed_rows

RANDOM_ORDERING = CSV_REFERENCES["random"]
SCHEMA_VERSION = 2  # 2: several ablations, references, subset faithfulness, insertion curves, caveats


def csv_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Long format: one row per number (head, ablation, method, scope, metric, value, direction,
    circular, provenance). Per class, and the head's accuracy: the first ablation."""
    const = {k: summary[k] for k in ("target", "baseline", "split", "n", "seed")}
    const["cache_fingerprint"] = summary["cache"]["fingerprint"]
    layers, dirs = summary["cache"]["layer_names"], summary["directions"]
    rows: list[dict[str, Any]] = []

    def add(
        h: dict,
        abl: str,
        method: str,
        scope: str,
        metric: str,
        value: Any,
        direction_key: str | None = None,
        circular: str | None = None,
    ) -> None:
        rows.append(
            {
                "head": h["name"],
                "head_dir": h["dir"],
                "kind": h["kind"],
                "ablation": abl,
                "method": method,
                "scope": scope,
                "metric": metric,
                **cell(value),
                "direction": dirs.get(direction_key or metric, ""),
                "circular": circular or "",
                **const,
            }
        )

    def scores(h: dict, abl: str, name: str, s: dict, circular: str | None = None) -> None:
        def put(metric: str, value: Any, direction: str | None = None) -> None:
            add(h, abl, name, "all", metric, value, direction, circular)

        for key in ("faithfulness", "subset_faithfulness"):
            f = s[key]
            put(key, f["mean"])
            for part in ("ci_low", "ci_high"):
                put(f"{key}_{part}", f[part], key)
            for part in ("n_valid", "n_undefined"):
                put(f"{key}_{part}", f[part], "")
        keys = ("top_layer_agreement", "deletion_at_1", "deletion_area", "insertion_area", "deletion_at_1_over_oracle")
        for key in keys:
            put(key, s[key])
        for key in ("n_top_ties", "n_rows_scored", "n_rows_nonfinite"):
            if key in s:
                put(key, s[key], "")
        if s.get("ig_delta"):
            put("ig_delta_abs_mean", s["ig_delta"]["abs_mean"])
            put("ig_delta_abs_max", s["ig_delta"]["abs_max"], "ig_delta_abs_mean")
        vs = s.get("vs_constant") or {}
        for key, d in vs.items():  # method − constant, paired (docs/METHOD.md, "The constant rule")
            if isinstance(d, dict):
                for part, suffix in (("mean", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high")):
                    put(f"{key}_minus_constant{suffix}", d[part], key)
                put(f"{key}_minus_constant_n", d["n"], "")
        if vs.get("verdict"):
            put("verdict_vs_constant", vs["verdict"], "")
        profile = s.get("profile") or {}
        for k, values in enumerate(profile.get("profiles") or []):
            for i, v in enumerate(values):
                add(h, abl, name, f"fold:{k}|layer:{layers[i]}", "constant_profile", v, "", circular)
        for curve, direction in (("deletion_curve", "deletion_curve"), ("insertion_curve", "insertion_curve")):
            for k, v in enumerate(s.get(curve) or [], 1):
                add(h, abl, name, f"k={k}", curve, v, direction, circular)
        for i, v in enumerate(s.get("mean_score") or []):
            add(h, abl, name, f"layer:{layers[i]}", "mean_score", v, "", circular)

    for h in summary["heads"]:
        add(h, summary["ablation"], "", "all", "accuracy", h["accuracy"])  # head-level rows carry the first ablation
        for abl, a in h["ablations"].items():
            lolo = a["lolo"]
            add(h, abl, "oracle", "all", "oracle_at_1", lolo["oracle_at_1"])
            add(h, abl, RANDOM_ORDERING, "all", "random_at_1", lolo["random_at_1"])
            # the random ordering's curves and areas are the same numbers as its reference rows': written there
            for kind, curve in (("deletion_curve", "oracle_curve"), ("insertion_curve", "oracle_insertion_curve")):
                for k, v in enumerate(lolo[curve], 1):
                    add(h, abl, "oracle", f"k={k}", kind, v)
                area = kind.replace("_curve", "_area")
                add(h, abl, "oracle", "all", area, lolo[f"oracle_{area}"])
            for i, v in enumerate(lolo["mean_effect"]):
                add(h, abl, "lolo", f"layer:{layers[i]}", "mean_effect", v)
            near = lolo["near_ties"]
            for tie in ("all", "top", "any"):
                add(h, abl, "lolo", "all", f"near_tie_{tie}_share", near[f"{tie}_tied_share"], "near_tie_share")
            add(h, abl, "lolo", "all", "tie_tolerance", near["tolerance"], "")
            add(h, abl, "lolo", "all", "mean_max_abs_effect", lolo["mean_max_abs_effect"], "")
            for m, s in a["methods"].items():
                scores(h, abl, m, s, s.get("circular"))
            for ref, s in a["references"].items():
                scores(h, abl, CSV_REFERENCES.get(ref, ref), s)
            for key, t in a["best_tests"].items():  # why a lead is (not) marked best
                for against in ("runner_up", "constant"):
                    d = t.get(f"vs_{against}")
                    for part in ("mean", "ci_low", "ci_high") if d else ():
                        add(h, abl, t["leader"], "all", f"{key}_lead_minus_{against}_{part}", d[part], key)
                add(h, abl, t["leader"], "all", f"{key}_marked_best", int(bool(t.get("marked"))), "")
            for k, c in enumerate(a["caveats"], 1):  # numbered: each row keeps a key of its own
                add(h, abl, "", "all", f"caveat_{k}", c, "")
        pc = h["per_class"]
        abl = pc["ablation"]
        for c, cname in enumerate(pc["classes"]):
            scope = f"class:{cname}"
            add(h, abl, "", scope, "n", pc["n"][c], "")
            add(h, abl, "oracle", scope, "oracle_at_1", pc["oracle_at_1"][c])
            add(h, abl, RANDOM_ORDERING, scope, "random_at_1", pc["random_at_1"][c])
            for i, layer in enumerate(layers):
                add(h, abl, "lolo", f"{scope}|layer:{layer}", "mean_effect", pc["mean_effect"][c][i])
                if pc["mean_weights"] is not None:
                    add(h, abl, "weights", f"{scope}|layer:{layer}", "mean_weight", pc["mean_weights"][c][i], "")
            for m, s in pc["methods"].items():
                add(h, abl, m, scope, "faithfulness", s["faithfulness"][c])
                add(h, abl, m, scope, "faithfulness_n_valid", s["n_valid"][c], "")
                add(h, abl, m, scope, "faithfulness_n_undefined", s["n_undefined"][c], "")
                add(h, abl, m, scope, "deletion_at_1", s["deletion_at_1"][c])
                add(h, abl, m, scope, "top_layer_agreement", s["top_layer_agreement"][c])
        for method, scope, metric, value in sanity_rows(summary, h["name"]):  # docs/METHOD.md, "Sanity checks"
            add(h, summary["ablation"], method, scope, metric, value, "")
    return rows + across_seed_rows(summary)  # mean, t-interval and each seed's value (scopes seeds, seed:<S>)


def sanity_rows(summary: dict[str, Any], head: str) -> list[tuple[str, str, str, Any]]:
    """One head's sanity checks as (method, scope "sanity:<check>", metric, value) rows; none without them."""
    s = ((summary.get("sanity") or {}).get("heads") or {}).get(head)
    if not s:
        return []
    data = s["data"]
    keys = ("accuracy", "real_accuracy", "chance", "near_chance_bound", "verdict")
    out: list[tuple[str, str, str, Any]] = [("", "sanity:labels", k, data[k]) for k in keys]
    for check, methods in [*((st["step"], st["methods"]) for st in s["model"]), ("labels", data["methods"])]:
        for m, c in methods.items():
            r, scope = c["rank_correlation"], f"sanity:{check}"
            for k in ("mean", "ci_low", "ci_high"):
                out.append((m, scope, "rank_correlation" + ("" if k == "mean" else f"_{k}"), r[k]))
            out.append((m, scope, "rank_correlation_verdict", c["verdict"]))
            out.append((m, scope, "faithfulness", c["faithfulness"]["mean"]))
    return out


def _attrs(obj: h5py.HLObject, values: dict[str, Any]) -> None:
    for k, v in values.items():
        obj.attrs[k] = json.dumps(plain(v)) if isinstance(v, (dict, list, tuple)) or v is None else v


# summary.json's fields that attributions.h5 repeats as root attributes, in this order
ROOT_ATTRS = "split n ablation ablations target effect baseline seed tie_tolerance config choices".split()


def write_h5(
    path: Path,
    results: list[HeadResult],
    rows: np.ndarray,
    labels: np.ndarray,
    means: list[np.ndarray] | None,
    summary: dict[str, Any],
) -> Path:
    """attributions.h5, schema_version 2: its layout is docs/FORMATS.md's."""
    by_head = {h["name"]: h for h in summary["heads"]}
    # Built in memory, then written in one atomic write: h5py writing straight to a full disk
    # fails in its destructors (and can crash the process) instead of raising one OSError.
    image = io.BytesIO()
    with h5py.File(image, "w") as f:
        _attrs(
            f,
            {
                **artifact_header(schema=SCHEMA_VERSION),
                "cache_path": summary["cache"]["path"],
                "cache_fingerprint": summary["cache"]["fingerprint"],
                **{k: summary[k] for k in ROOT_ATTRS},
                "random_orders": RANDOM_ORDERS,
                "layer_names": summary["cache"]["layer_names"],
                "class_names": summary["cache"]["class_names"],
            },
        )
        f["rows"], f["labels"] = rows.astype(np.int64), labels
        if means is not None:
            g = f.create_group("baselines")
            g.attrs["what"] = "mean of h_i over the train split"
            for i, b in enumerate(means):
                g[f"layer_{i:03d}"] = b
        for r in results:
            g = f.create_group(f"heads/{r.name}")
            attrs = {"dir": r.head_dir, "kind": r.kind, "head_config": r.head_config, "methods_skipped": r.skipped}
            _attrs(g, attrs | {"ablations_skipped": r.ablations_skipped})
            first = r.primary
            arrays = {k: getattr(r, k) for k in ("targets", "preds", "logits", "weights")}
            arrays |= {k: getattr(first, k) for k in ("p", "p_ablated", "effects")}
            arrays |= {"p_topk_oracle": first.oracle.p_topk, "p_topk_random": first.random.p_topk}
            for key, v in arrays.items():
                if v is not None:
                    g[key] = v
            for m, scores in r.scores.items():
                mg = g.create_group(f"methods/{m}")
                _attrs(mg, r.params[m])
                mg["scores"], mg["p_topk"] = scores, r.curves[first.ablation][m][0]
                for k, v in r.extras[m].items():
                    mg[k] = v
            for a, meas in r.measured.items():
                info = by_head[r.name]["ablations"][a]
                ag = g.create_group(f"ablations/{a}")
                _attrs(ag, {k: info[k] for k in ("description", "circular", "caveats")} | {"params": meas.params})
                for key in ("p", "p_ablated", "effects", "finite", "subsets", "p_subsets"):
                    ag[key] = getattr(meas, key)
                for ref in ("oracle", "random", "top1_only"):
                    rr = getattr(meas, ref)
                    rg = ag.create_group(f"references/{ref}")
                    rg["scores"], rg["p_topk"], rg["p_keep"] = rr.scores, rr.p_topk, rr.p_keep
                for m, (p_topk, p_keep) in r.curves[a].items():
                    mg = ag.create_group(f"methods/{m}")
                    mg["p_topk"], mg["p_keep"] = p_topk, p_keep
    return write_bytes(path, image.getvalue())
