"""What `fit-head` writes: the output directory's files (layout in docs/FORMATS.md). Plain I/O."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..files import write_csv, write_json
from ..head_dir import save_head
from .chance import is_near_chance
from .quality import BELOW_PROBE
from .stats import rows_paired, wilson

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


def add_test_rows(heads: list[dict[str, Any]], runs: list[Any], chance: float, n_test: int) -> None:
    """Each head fitted on one seed gets ``test_rows``: its accuracy and differences with the 95% intervals
    its ``n_test`` test rows give, where one seed gives none over seeds (docs/METHOD.md): to
    last, the paired interval over the same rows (stats.rows_paired); to the probe and chance, fixed
    values, the head's Wilson interval less the value. Run after the gate, which sets probe_reference.
    Each head beside a `last` gets ``baseline_near_chance``: whether last is itself near chance by the
    gate's rule, where a difference to it says little of what the head learned; and ``baseline_below_probe``:
    whether the gate read last below the probe on its own layer, where a difference to it measures how
    under-fitted last is as much as what the head adds."""
    last = {r.seed: r.test for r in runs if r.head == "last" and r.test is not None}
    base = next((h["test_acc"]["mean"] for h in heads if h["head"] == "last"), None)
    # last under-fitted: the gate reads it below a probe on the one layer it reads
    below = any((h.get("probe_reference") or {}).get("reading") == BELOW_PROBE for h in heads if h["head"] == "last")
    for h in heads:
        if base is not None and h["head"] != "last":
            h["baseline_near_chance"] = is_near_chance(float(base), chance, n_test or None)
            h["baseline_below_probe"] = below
        mine = [r.test for r in runs if r.head == h["head"] and r.test is not None]
        if h.get("n") != 1 or len(mine) != 1 or not n_test:
            continue
        acc = float(h["test_acc"]["mean"])
        low, high = wilson(acc * n_test, n_test)
        record: dict[str, Any] = {"rows": n_test, "confidence": 0.95}
        record["test_acc"] = {"mean": acc, "ci_low": low, "ci_high": high, "rows": n_test, "method": "wilson"}
        seed = h["seeds"][0]
        if h["head"] != "last" and seed in last:
            paired = rows_paired([mine[0].preds == mine[0].labels], [last[seed].preds == last[seed].labels])
            record["vs_last"] = paired and paired | {"method": "paired wald"}
        probe = (h.get("probe_reference") or {}).get("test_acc")
        for key, ref in (("vs_probe", probe), ("vs_chance", chance)):
            if ref is not None:
                gap = {"mean": acc - ref, "ci_low": low - ref, "ci_high": high - ref, "reference": ref}
                record[key] = gap | {"rows": n_test, "method": "wilson less the reference"}
        h["test_rows"] = record
