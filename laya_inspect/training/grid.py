"""`fit-head --grid`: LAYA's hyper-parameter grid (docs/METHOD.md, "Heads"), searched on the
validation rows before the real runs, and the files it writes."""

from __future__ import annotations

from collections.abc import Callable
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from ..files import write_csv, write_json
from ..runtime import Progress, no_progress
from .fit_config import HEAD_HPARAMS


def grid_search(
    config: Any, *, fit_one: Callable[..., Any], progress: Progress | None = None, **common: Any
) -> dict[str, Any]:
    """Every (d*, τ, ψ, width) over the first ``grid_seeds`` seeds; the configuration with the best
    mean validation ``--monitor`` metric at the best epoch wins (loss: lowest; acc: highest; ties:
    the first in grid order). ``config`` is a FitConfig; ``fit_one`` fits one (head, seed) run
    (fit_head.fit_one, handed in so this module does not import its caller); ``common`` goes to it."""
    emit = progress or no_progress
    seeds = config.seeds[: config.grid_seeds]
    combos = list(product(config.grid_d_star, config.grid_tau, config.grid_psi, config.grid_width_factors))
    entries, total, done = [], len(combos) * len(seeds), 0
    for d_star, tau, psi, factor in combos:
        hp = {
            **config.head_hparams(),
            "d_star": int(d_star),
            "tau": float(tau),
            "psi": psi,
            "score_width": int(factor * d_star),
        }
        accs, losses = [], []
        for seed in seeds:
            done += 1
            tag = {"stage": "grid", "run": done, "runs": total}
            r = fit_one("laya", seed, hp, config=config, progress=emit, tag=tag, **common)
            accs.append(r.val_acc)
            losses.append(r.val_loss)
        entries.append(
            {
                **{k: hp[k] for k in HEAD_HPARAMS},
                "width_factor": int(factor),
                "seeds": list(seeds),
                "val_acc": accs,
                "val_acc_mean": float(np.mean(accs)),
                "val_acc_std": float(np.std(accs, ddof=1)) if len(accs) > 1 else None,
                "val_loss": losses,
                "val_loss_mean": float(np.mean(losses)),
            }
        )
    if config.monitor == "loss":
        best = min(range(len(entries)), key=lambda i: (entries[i]["val_loss_mean"], i))
    else:
        best = max(range(len(entries)), key=lambda i: (entries[i]["val_acc_mean"], -i))
    chosen = {k: entries[best][k] for k in ("d_star", "tau", "psi", "score_width")}
    for i, e in enumerate(entries):
        e["chosen"] = i == best
    metric = "lowest mean validation loss" if config.monitor == "loss" else "best mean validation accuracy"
    return {
        "selection": f"{metric} over seeds at each run's best epoch (ties: first in grid order)",
        "applied_to": "laya; d_star also to concat and scalarmix",
        "chosen": chosen,
        "configs": entries,
    }


def write_grid(out: Path, grid: dict[str, Any]) -> dict[str, Path]:
    rows = []
    for e in grid["configs"]:
        row = {k: " ".join(f"{v:.6f}" for v in e[k]) if k in ("val_acc", "val_loss") else e[k] for k in e}
        rows.append({**row, "seeds": " ".join(map(str, e["seeds"]))})
    return {"grid_json": write_json(out / "grid.json", grid), "grid_csv": write_csv(out / "grid.csv", rows)}
