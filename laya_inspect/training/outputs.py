"""What `fit-head` writes: the output directory's files (layout in docs/FORMATS.md). Plain I/O."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..files import write_csv, write_json
from ..head_dir import save_head

# a run's metrics.json, in order; runs.csv|json add its head_dir
RUN_FIELDS = (
    "head",
    "seed",
    "val_acc",
    "val_loss",
    "test_acc",
    "test_macro_f1",
    "test_loss",
    "epochs_run",
    "best_epoch",
    "seconds",
)


def save_run(
    path: Path, r: Any, *, identity: dict[str, Any], split_info: dict[str, Any], training: dict[str, Any], device: str
) -> Path:
    metrics = {k: getattr(r, k) for k in RUN_FIELDS}
    meta = {
        **identity,
        "seed": r.seed,
        "hparams": r.hparams,
        "training": training,
        "split": split_info,
        "device": device,
        "history": r.history,
        "metrics": metrics,
    }
    files = {
        "metrics.json": lambda p: write_json(p, metrics),
        "train_log.csv": lambda p: write_csv(p, r.history),
    }
    save_head(path, r.module, meta=meta, files=files)
    return path


def summary_rows(heads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for h in heads:
        row: dict[str, Any] = {"head": h["head"], "n": h["n"], "seeds": " ".join(map(str, h["seeds"]))}
        for m in ("test_acc", "test_macro_f1"):
            for k in ("mean", "std", "ci_low", "ci_high"):
                row[f"{m}_{k}"] = h[m][k]
        for m in ("test_acc", "test_macro_f1"):
            d = (h.get("delta_vs_last") or {}).get(m) or {}
            for k in ("mean", "std", "ci_low", "ci_high"):
                row[f"delta_{m}_{k}"] = d.get(k)
        agreement = h.get("seed_agreement") or {}
        # each agreement beside its nulls (docs/METHOD.md, "Seed agreement"): a bare "ρ 0.9" or "99% of
        # rows" in a spreadsheet read as agreement about inputs where one profile per seed gives as much
        row["seed_rank_agreement"] = agreement.get("rank_agreement")
        row["seed_rank_agreement_constant"] = agreement.get("rank_agreement_constant")
        row["seed_top_layer_agreement"] = agreement.get("top_layer_agreement")
        row["seed_top_layer_agreement_constant"] = agreement.get("top_layer_agreement_constant")
        row["seed_top_layer_chance_shares"] = agreement.get("top_layer_chance_shares")
        row["warnings"] = " | ".join(h.get("warnings") or [])
        rows.append(row)
    return rows
