"""Every headline number beside its null (docs/METHOD.md): fit-head's summary.csv keeps the constant
rule and chance beside the seeds' agreement; check planted across seeds names the seeds where the
constant rule reaches the bar too."""

from __future__ import annotations

import numpy as np

from laya_inspect.training.outputs import summary_rows
from laya_inspect.training.stats import seed_agreement


def _head(agreement: dict) -> dict:
    acc = {"mean": 0.9, "std": 0.01, "ci_low": 0.88, "ci_high": 0.92}
    return {"head": "laya", "n": 2, "seeds": [0, 1], "test_acc": acc, "test_macro_f1": acc, "seed_agreement": agreement}


def test_summary_csv_row_keeps_every_agreement_beside_its_constant_rule_and_chance() -> None:
    rng = np.random.default_rng(0)
    # two seeds that both put most rows on layer 2: high agreement, which one profile per seed gives too
    ws = [rng.dirichlet([1, 1, 8], size=200) for _ in range(2)]
    agreement = seed_agreement(ws)
    assert agreement is not None
    row = summary_rows([_head(agreement)])[0]
    assert row["seed_rank_agreement"] == agreement["rank_agreement"]
    assert row["seed_rank_agreement_constant"] == agreement["rank_agreement_constant"] > 0.99
    assert row["seed_top_layer_agreement_constant"] == 1.0
    assert row["seed_top_layer_chance_shares"] == agreement["top_layer_chance_shares"]
    assert 0 < row["seed_top_layer_chance_shares"] < 1
