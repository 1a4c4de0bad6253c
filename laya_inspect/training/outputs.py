"""What `fit-head` writes: the output directory's files (layout in training/fit_head.py). Plain I/O."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..files import write_csv, write_json
from ..head_dir import save_head

OUR_FILES = ("runs.csv", "runs.json", "summary.csv", "summary.json", "grid.csv", "grid.json", "profiles")


def prepare_out(out: Path, heads: Sequence[str], overwrite: bool) -> None:
    existing = [p for p in [*(out / h for h in heads), *(out / n for n in OUR_FILES)] if p.exists()]
    if existing and not overwrite:
        raise InputError(
            f"{out} already holds fit-head results ({', '.join(p.name for p in existing[:4])}); "
            "pass --force to overwrite them, or choose another --out"
        )
    for p in existing:  # only what fit-head writes; anything else in out_dir is left alone
        if p.name == "profiles":
            shutil.rmtree(p)
        elif p.is_dir():
            for sub in p.glob("seed_*"):
                if sub.is_dir():
                    shutil.rmtree(sub)
        else:
            p.unlink()
    out.mkdir(parents=True, exist_ok=True)


def save_run(
    path: Path, r: Any, *, identity: dict[str, Any], split_info: dict[str, Any], training: dict[str, Any], device: str
) -> Path:
    metrics = {
        "head": r.head,
        "seed": r.seed,
        "val_acc": r.val_acc,
        "test_acc": r.test_acc,
        "test_macro_f1": r.test_macro_f1,
        "test_loss": r.test_loss,
        "epochs_run": r.epochs_run,
        "best_epoch": r.best_epoch,
        "seconds": r.seconds,
    }
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
    save_head(path, r.module, meta=meta)
    write_json(path / "metrics.json", metrics)
    write_csv(path / "train_log.csv", r.history)
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
        rows.append(row)
    return rows


def write_grid(out: Path, grid: dict[str, Any]) -> dict[str, Path]:
    rows = [
        {
            k: (
                " ".join(f"{v:.6f}" for v in e[k])
                if k == "val_acc"
                else " ".join(map(str, e[k]))
                if k == "seeds"
                else e[k]
            )
            for k in e
        }
        for e in grid["configs"]
    ]
    return {"grid_json": write_json(out / "grid.json", grid), "grid_csv": write_csv(out / "grid.csv", rows)}
