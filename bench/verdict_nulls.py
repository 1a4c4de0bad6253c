"""Verdicts read against their null, measured and left as they are (docs/METHOD.md):

* compare's "removing X changes the prediction most" (``lolo.top_lead``): every layer's LOLO effect
  equal in truth (a row effect shared by every layer plus each layer's own noise, 200 rows,
  --bootstrap 1000); wrong when the lead of the largest mean effect over the runner-up reads "better".
  The pair is picked after the fact, but the interval holds: 5% at L = 2 (the two-sided interval read
  one way), less beyond.
* fit-head's "seeds at chance" warning: 3 seeds whose α picks its top layer independently per row;
  wrong when the warning does not fire (the seeds then read as agreeing beyond chance).
* compare's verdict against the constant rule, per method (its three scores a family at 98.3%):
  4 methods equal in truth to the rule, 200 rows; the share of runs where the first method, and where
  any of the 4, reads "beats", "worse" or "mixed". Each method's verdict is its own claim; the
  methods are not one family.

    python bench/verdict_nulls.py            # 1,000 runs each, 333 for the constant rule (minutes)
    python bench/verdict_nulls.py --smoke    # a few runs: checks that it runs
"""

from __future__ import annotations

import numpy as np
from _nulls import flags

from laya_inspect.compare.paired import versus_constant
from laya_inspect.compare.scores import top_lead
from laya_inspect.training.quality import agreement_at_chance
from laya_inspect.training.stats import outcome, seed_agreement


def lead_said(run: int, n_layers: int, n: int = 200) -> bool:
    rng = np.random.default_rng(run)
    e = rng.normal(size=(n, 1)) + rng.normal(size=(n, n_layers))
    order = np.argsort(-e.mean(axis=0), kind="stable")
    d = top_lead(e, order, [f"l{i}" for i in range(n_layers)], n_boot=1000, seed=run)
    return outcome(d) == "better"


def chance_missed(run: int, n_layers: int, n: int) -> bool:
    rng = np.random.default_rng(run)
    agree = seed_agreement([rng.dirichlet(np.ones(n_layers), size=n) for _ in range(3)])
    return agreement_at_chance({**agree, "rows": n}) is None


def constant_said(run: int, methods: int = 4, n: int = 200) -> tuple[bool, bool]:
    rng = np.random.default_rng(run)
    shared = rng.normal(size=(n, 3))

    def rows() -> dict[str, np.ndarray]:
        v = shared + rng.normal(size=(n, 3))
        return {
            "top_layer_agreement": (v[:, 0] > 0).astype(np.float64),
            "deletion_at_1": 1.0 + 0.5 * v[:, 1],
            "oracle_at_1": np.full(n, 2.0),
            "faithfulness": np.tanh(0.3 * v[:, 2]),
        }

    rule = rows()
    words = [
        versus_constant(rows(), rule, circular=False, caveat=False, n_boot=1000, seed=run)["verdict"]
        for _ in range(methods)
    ]
    said = [w in ("beats", "worse", "mixed") for w in words]
    return said[0], any(said)


def main() -> None:
    runs = 10 if flags(__doc__).smoke else 1000
    for n_layers in (2, 3, 5):
        rate = sum(lead_said(t, n_layers) for t in range(runs)) / runs
        print(f"top_lead, {n_layers} layers equal in truth: 'changes the prediction most' in {rate:.3f} of {runs}")
    for n_layers, n in ((5, 200), (5, 1000)):
        rate = sum(chance_missed(t, n_layers, n) for t in range(runs)) / runs
        print(f"seeds at chance, {n_layers} layers, {n} rows, independent seeds: not warned in {rate:.3f} of {runs}")
    said = [constant_said(t) for t in range(runs // 3)]
    first, any_ = (sum(s[i] for s in said) / len(said) for i in (0, 1))
    print(
        f"constant rule, 4 methods equal to it: a verdict for one in {first:.3f}, for any in {any_:.3f} of {len(said)}"
    )


if __name__ == "__main__":
    main()
