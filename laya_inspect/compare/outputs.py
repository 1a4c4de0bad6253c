"""What `compare` writes and reads back: summary.json, summary.csv (long rows, :func:`csv_rows`) and
attributions.h5 (:func:`write_h5`), each written atomically. ``report OUT_DIR`` reads a run back with
:func:`load_summary`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np

from .. import __version__
from ..errors import CacheError, NotFoundError
from ..files import atomic_path, plain, write_csv

if TYPE_CHECKING:
    from .run import HeadResult

SCHEMA_VERSION = 1
RANDOM_ORDERS = 8  # seeded random orderings per sample for the random Deletion@k reference, 1 < k < L


def load_summary(out_dir: str | Path) -> dict[str, Any]:
    path = Path(out_dir) / "summary.json"
    if not path.exists():
        raise NotFoundError(f"no summary.json in {out_dir}; write one with `laya-inspect compare … --out {out_dir}`")
    try:
        summary = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise CacheError(f"{path} is not valid JSON ({e})") from None
    if summary.get("kind") != "laya-inspect-compare":
        raise CacheError(f"{path} is not a compare summary (kind {summary.get('kind')!r})")
    return summary


def csv_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Long format: one row per number (head, method, scope, metric, value, direction, provenance)."""
    const = {
        "ablation": summary["ablation"],
        "target": summary["target"],
        "baseline": summary["baseline"],
        "split": summary["split"],
        "n": summary["n"],
        "seed": summary["seed"],
        "cache_fingerprint": summary["cache"]["fingerprint"],
    }
    layers, dirs = summary["cache"]["layer_names"], summary["directions"]
    rows: list[dict[str, Any]] = []

    def add(h: dict, method: str, scope: str, metric: str, value: Any, direction_key: str | None = None) -> None:
        rows.append(
            {
                "head": h["name"],
                "head_dir": h["dir"],
                "kind": h["kind"],
                "method": method,
                "scope": scope,
                "metric": metric,
                "value": value,
                "direction": dirs.get(direction_key or metric, ""),
                **const,
            }
        )

    for h in summary["heads"]:
        add(h, "", "all", "accuracy", h["accuracy"])
        lolo = h["lolo"]
        for ref in ("oracle", "random"):
            add(h, ref, "all", f"{ref}_at_1", lolo[f"{ref}_at_1"])
            for k, v in enumerate(lolo[f"{ref}_curve"], 1):
                add(h, ref, f"k={k}", "deletion_curve", v)
        for i, v in enumerate(lolo["mean_effect"]):
            add(h, "lolo", f"layer:{layers[i]}", "mean_effect", v)
        for m, s in h["methods"].items():
            f = s["faithfulness"]
            add(h, m, "all", "faithfulness", f["mean"])
            for key in ("ci_low", "ci_high"):
                add(h, m, "all", f"faithfulness_{key}", f[key], "faithfulness")
            for key in ("n_valid", "n_undefined"):
                add(h, m, "all", f"faithfulness_{key}", f[key], "")
            add(h, m, "all", "deletion_at_1", s["deletion_at_1"])
            add(h, m, "all", "deletion_at_1_over_oracle", s["deletion_at_1_over_oracle"], "deletion_at_1")
            add(h, m, "all", "top_layer_agreement", s["top_layer_agreement"])
            add(h, m, "all", "n_top_ties", s["n_top_ties"], "")
            if s["ig_delta"]:
                add(h, m, "all", "ig_delta_abs_mean", s["ig_delta"]["abs_mean"])
                add(h, m, "all", "ig_delta_abs_max", s["ig_delta"]["abs_max"], "ig_delta_abs_mean")
            for k, v in enumerate(s["deletion_curve"], 1):
                add(h, m, f"k={k}", "deletion_curve", v)
            for i, v in enumerate(s["mean_score"]):
                add(h, m, f"layer:{layers[i]}", "mean_score", v, "")
        pc = h["per_class"]
        for c, cname in enumerate(pc["classes"]):
            scope = f"class:{cname}"
            add(h, "", scope, "n", pc["n"][c], "")
            add(h, "oracle", scope, "oracle_at_1", pc["oracle_at_1"][c])
            add(h, "random", scope, "random_at_1", pc["random_at_1"][c])
            for i, layer in enumerate(layers):
                add(h, "lolo", f"{scope}|layer:{layer}", "mean_effect", pc["mean_effect"][c][i])
                if pc["mean_weights"] is not None:
                    add(h, "weights", f"{scope}|layer:{layer}", "mean_weight", pc["mean_weights"][c][i], "")
            for m, s in pc["methods"].items():
                add(h, m, scope, "faithfulness", s["faithfulness"][c])
                add(h, m, scope, "faithfulness_n_valid", s["n_valid"][c], "")
                add(h, m, scope, "faithfulness_n_undefined", s["n_undefined"][c], "")
                add(h, m, scope, "deletion_at_1", s["deletion_at_1"][c])
                add(h, m, scope, "top_layer_agreement", s["top_layer_agreement"][c])
    return rows


def write_summary_csv(path: Path, summary: dict[str, Any]) -> Path:
    return write_csv(path, csv_rows(summary))


def _attrs(obj: h5py.HLObject, values: dict[str, Any]) -> None:
    for k, v in values.items():
        obj.attrs[k] = json.dumps(plain(v)) if isinstance(v, (dict, list, tuple)) or v is None else v


def write_h5(
    path: Path,
    results: list[HeadResult],
    rows: np.ndarray,
    labels: np.ndarray,
    means: list[np.ndarray] | None,
    summary: dict[str, Any],
) -> Path:
    """attributions.h5 (schema_version 1)::

    /                      attrs: schema_version, tool_version, cache_path, cache_fingerprint, split, n,
                                  ablation, target, baseline, seed, config (JSON), choices (JSON),
                                  layer_names, class_names (JSON), random_orders
    /rows (N,)             row indices into the cache split      /labels (N,) true labels
    /baselines/layer_000   (D_l,) train-split means b_i (when used)
    /heads/<head>/         attrs: dir, kind, head_config (JSON), methods_skipped (JSON)
      targets, preds (N,) · logits (N, C) · weights (N, L) (heads with weights) · p (N,)
      p_ablated, effects (N, L) · p_topk_oracle, p_topk_random (N, L), column k−1 = top-k ablated
      methods/<m>/scores (N, L), p_topk (N, L), delta (N,) for ig; attrs = every parameter
    """
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        _attrs(
            f,
            {
                "schema_version": SCHEMA_VERSION,
                "tool_version": __version__,
                "cache_path": summary["cache"]["path"],
                "cache_fingerprint": summary["cache"]["fingerprint"],
                "split": summary["split"],
                "n": summary["n"],
                "ablation": summary["ablation"],
                "target": summary["target"],
                "baseline": summary["baseline"],
                "seed": summary["seed"],
                "config": summary["config"],
                "choices": summary["choices"],
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
            _attrs(g, {"dir": r.head_dir, "kind": r.kind, "head_config": r.head_config, "methods_skipped": r.skipped})
            for key in (
                "targets",
                "preds",
                "logits",
                "weights",
                "p",
                "p_ablated",
                "effects",
                "p_topk_oracle",
                "p_topk_random",
            ):
                if getattr(r, key) is not None:
                    g[key] = getattr(r, key)
            for m, scores in r.scores.items():
                mg = g.create_group(f"methods/{m}")
                _attrs(mg, r.params[m])
                mg["scores"], mg["p_topk"] = scores, r.p_topk[m]
                for k, v in r.extras[m].items():
                    mg[k] = v
    return path
