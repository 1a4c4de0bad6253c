"""Layer-weight profiles of fitted heads on the test split: what the heads say about the layers.

- α heads (LAYA; the weights change with the input): per seed, the mean α per layer and the class ×
  layer mean α; pooled over seeds, the mean ± std of α per layer over the test rows of every seed
  (and the spread of the per-seed means), and class × layer mean α for all, correctly and
  incorrectly classified rows (class = the true label). Pooled numbers can hide seeds that disagree
  (one-hot by class in each seed, uniform once pooled): ``seed_agreement`` (stats.seed_agreement)
  says how far the seeds agree row by row.
- static heads (ScalarMix): the softmax of the learned scalars, per seed, mean ± std over seeds.

Written as profiles.json, four CSV files and the plots of ``profile_plots`` (PNG and SVG).
Shapes: N test rows, S seeds, L layers, C classes. A class with no rows in a group is NaN (null in
JSON, empty in CSV, blank in the heatmap), never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..files import write_csv, write_json
from .stats import chance_text, constant_agreement, percent, seed_agreement

if TYPE_CHECKING:
    from ..cache.store import FeatureStore

GROUPS = ("all", "correct", "incorrect")


def class_layer_mean(
    weights: np.ndarray, labels: np.ndarray, num_classes: int, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(C, L) mean of ``weights`` (N, L) over the rows of each class (within ``mask``), and (C,) counts."""
    keep = np.ones(len(labels), dtype=bool) if mask is None else mask
    means = np.full((num_classes, weights.shape[1]), np.nan)
    counts = np.zeros(num_classes, dtype=np.int64)
    for c in range(num_classes):
        rows = keep & (labels == c)
        counts[c] = int(rows.sum())
        if counts[c]:
            means[c] = weights[rows].mean(axis=0)
    return means, counts


def alpha_profile(
    weights: Sequence[np.ndarray], preds: Sequence[np.ndarray], labels: np.ndarray, num_classes: int
) -> dict[str, Any]:
    """Profile of per-input weights: ``weights`` and ``preds`` one (N, L) / (N,) array per seed."""
    w_all = np.concatenate([np.asarray(w, dtype=np.float64) for w in weights])  # (S·N, L)
    y_all = np.tile(np.asarray(labels), len(weights))
    correct = np.concatenate([np.asarray(p) == np.asarray(labels) for p in preds])
    seed_means = np.stack([np.asarray(w, dtype=np.float64).mean(axis=0) for w in weights])  # (S, L)
    out: dict[str, Any] = {
        "rows": int(len(w_all)),
        "mean": w_all.mean(axis=0),
        "std": w_all.std(axis=0, ddof=1) if len(w_all) > 1 else np.full(w_all.shape[1], np.nan),
        "seed_means": seed_means,
        "seed_std": seed_means.std(axis=0, ddof=1) if len(seed_means) > 1 else np.full(seed_means.shape[1], np.nan),
        "seed_class": np.stack(
            [class_layer_mean(np.asarray(w, dtype=np.float64), np.asarray(labels), num_classes)[0] for w in weights]
        ),  # (S, C, L): each seed's class × layer mean α over all its test rows
        "seed_agreement": seed_agreement(weights),
        "class": {},
    }
    for group, mask in (("all", None), ("correct", correct), ("incorrect", ~correct)):
        means, counts = class_layer_mean(w_all, y_all, num_classes, mask)
        out["class"][group] = {"mean": means, "count": counts}
    return out


def static_profile(static: Sequence[np.ndarray]) -> dict[str, Any]:
    """Profile of input-independent weights (ScalarMix): one (L,) row per seed."""
    w = np.stack([np.asarray(s, dtype=np.float64) for s in static])  # (S, L)
    return {
        "weights": w,
        "seed_agreement": seed_agreement([row[None, :] for row in w]),
        "mean": w.mean(axis=0),
        "std": w.std(axis=0, ddof=1) if len(w) > 1 else np.full(w.shape[1], np.nan),
    }


def class_names(store: FeatureStore) -> list[str]:
    """The store's class names, or "0" … "C−1" when it records none (or not one per class)."""
    names = store.class_names
    return names if len(names) == store.num_classes else [str(i) for i in range(store.num_classes)]


def compute_profiles(runs: Sequence[Any], *, layer_names: Sequence[str], class_names: Sequence[str]) -> dict[str, Any]:
    """Profiles of every weighted head in ``runs`` (train.RunResult: .head, .seed, .test, .static_weights)."""
    heads = list(dict.fromkeys(r.head for r in runs))
    alpha, static = {}, {}
    for h in heads:
        rs = [r for r in runs if r.head == h and r.test is not None]
        if not rs:
            continue
        if all(r.static_weights is not None for r in rs):
            static[h] = {"seeds": [r.seed for r in rs], **static_profile([r.static_weights for r in rs])}
        elif all(r.test.weights is not None for r in rs):
            labels = rs[0].test.labels
            alpha[h] = {
                "seeds": [r.seed for r in rs],
                "n_test": int(len(labels)),
                **alpha_profile([r.test.weights for r in rs], [r.test.preds for r in rs], labels, len(class_names)),
            }
    return {
        "layer_names": list(layer_names),
        "class_names": list(class_names),
        "alpha": alpha,
        "static": static,
        "class_of_row": "true label",
        "pooled_over_seeds": True,
        "pooling": "mean, std and class pool the test rows of every seed; seed_means and seed_class are per seed",
    }


def profile_lines(profiles: dict[str, Any]) -> list[str]:
    """The pooled line of the first α head (else static), then one line per seed and the seeds'
    agreement: what the terminal prints after a fit."""
    names = profiles["layer_names"]

    def fmt(values: Any) -> str:
        return " · ".join(f"{n} {m:.3f}" for n, m in zip(names, values))

    for kind, table, per_seed in (("α", profiles["alpha"], "seed_means"), ("static w", profiles["static"], "weights")):
        for h, p in table.items():
            seeds = p["seeds"]
            pooled = f" (pooled over {len(seeds)} seeds)" if len(seeds) > 1 else ""
            lines = [f"{h} {kind}: {fmt(p['mean'])}{pooled}"]
            if len(seeds) > 1:
                lines += [f"  seed {s}: {fmt(row)}" for s, row in zip(seeds, p[per_seed])]
                a = p.get("seed_agreement")
                if a and kind == "α":
                    if "top_layer_agreement_constant" not in a:  # written before it was recorded
                        a = {**a, **constant_agreement(p[per_seed])}
                    top = percent(a["top_layer_agreement"])
                    lines.append(
                        f"  seed agreement: per-row rank ρ {_rho(a.get('rank_agreement'))} · same top layer on "
                        f"{top} of rows ({chance_text(a)}; " + _constant_agreement(a) + ")"
                    )
            return lines
    return []


def _rho(value: Any) -> str:
    return "n/a" if value is None or np.isnan(value) else f"{value:.2f}"


def _constant_agreement(a: dict[str, Any]) -> str:
    """The constant rule beside the seeds' agreement: each seed's mean profile used for every row."""
    top = a["top_layer_agreement_constant"]
    return f"one mean profile per seed for every row: ρ {_rho(a.get('rank_agreement_constant'))}, {percent(top)}"


def _csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    return write_csv(path, [dict(zip(header, r)) for r in rows], columns=header)


def write_profiles(
    out_dir: str | Path,
    profiles: dict[str, Any],
    *,
    formats: Sequence[str] = ("png",),
    split: str = "test",
    workers: int | None = None,
) -> dict[str, Path]:
    """Write profiles.json, layer_weights.csv, class_layer_alpha.csv, static_weights.csv and the plots, whose
    labels name ``split``, the split the heads were tested on; ``workers``: the most figure processes at
    once (plots.plot_profiles)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names, classes = profiles["layer_names"], profiles["class_names"]
    files: dict[str, Path] = {}
    files["profiles_json"] = write_json(out / "profiles.json", profiles)
    layer_rows = []
    for h, p in profiles["alpha"].items():
        layer_rows += [
            [h, "alpha", n, float(p["mean"][i]), float(p["std"][i]), float(p["seed_std"][i])]
            for i, n in enumerate(names)
        ]
    for h, p in profiles["static"].items():
        layer_rows += [
            [h, "static", n, float(p["mean"][i]), float("nan"), float(p["std"][i])] for i, n in enumerate(names)
        ]
    files["layer_weights_csv"] = _csv(
        out / "layer_weights.csv", ["head", "kind", "layer", "mean", "std_over_rows", "std_over_seeds"], layer_rows
    )
    class_rows = []
    for h, p in profiles["alpha"].items():
        for group in GROUPS:
            g = p["class"][group]
            for c, cname in enumerate(classes):
                class_rows += [
                    [h, group, cname, int(g["count"][c]), n, float(g["mean"][c, i])] for i, n in enumerate(names)
                ]
    files["class_layer_csv"] = _csv(
        out / "class_layer_alpha.csv", ["head", "group", "class", "n", "layer", "mean_alpha"], class_rows
    )
    seed_rows = [
        [h, kind, s, n, float(p[per_seed][k, i])]
        for kind, per_seed in (("alpha", "seed_means"), ("static", "weights"))
        for h, p in profiles[kind].items()
        for k, s in enumerate(p["seeds"])
        for i, n in enumerate(names)
    ]
    files["seed_layer_csv"] = _csv(
        out / "seed_layer_weights.csv", ["head", "kind", "seed", "layer", "mean_weight"], seed_rows
    )
    static_rows = [[h, s, n, w] for h, kind, s, n, w in seed_rows if kind == "static"]
    files["static_csv"] = _csv(out / "static_weights.csv", ["head", "seed", "layer", "weight"], static_rows)
    from .plots import plot_profiles

    return {**files, **plot_profiles(out, profiles, formats, split, workers)}
