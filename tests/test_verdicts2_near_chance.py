"""Two seeds of a head near chance (fit on shuffled digits labels): each seed's verdicts are withheld, and
so is every verdict read over the seeds, the paired differences between methods included; the terminal's
first sentence leads with the near-chance caveat, not with α's agreement."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import fit_quickly
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.head_dir import cache_identity, save_head

runner = CliRunner()
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
ARGS = ["--method", "alpha,alpha-contrib,ig", "--limit", "60", "--n-steps", "4", "--bootstrap", "50"]


@pytest.fixture(scope="module")
def near_chance(digits_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict, str]:
    folder = tmp_path_factory.mktemp("verdicts2") / "heads"
    with FeatureStore(digits_cache) as store:
        y = np.random.default_rng(0).permutation(store.labels("train"))
        for seed in (0, 1):
            head = fit_quickly("laya", store, 40, seed=seed, d_star=8, tau=1.5, labels=y)
            save_head(folder / "laya" / f"seed_{seed}", head, meta=cache_identity(store))
    out = folder.parent / "cmp"
    args = ["compare", str(folder), "--cache", str(digits_cache), *ARGS, "--no-plots", "--no-sanity"]
    result = runner.invoke(app, [*args, "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    return result.output, summary, (out / "report.html").read_text()


def test_no_method_is_ranked_over_the_seeds_of_a_head_near_chance(near_chance: tuple[str, dict, str]) -> None:
    output, summary, page = near_chance
    assert all(h["chance"]["near_chance"] for h in summary["heads"])
    (group,) = summary["across_seeds"]["groups"]
    pairs = [est for entry in group["ablations"].values() for p in entry["vs_methods"].values() for est in p.values()]
    assert pairs and {est["verdict"] for est in pairs} == {"withheld"}, pairs
    for said in (output, page):
        for word in ("better", "no different", "worse"):
            assert f"{word} over the seeds" not in said
    table = output[output.index("across seeds: laya") :].splitlines()
    rows = [line for line in table if line.strip().startswith(("− ig", "− alpha-contrib"))]
    assert rows and all(line.rstrip().endswith("withheld") for line in rows), rows
    assert "withheld: a caveat withholds every ranking" in page


def test_the_terminal_leads_with_the_near_chance_caveat(near_chance: tuple[str, dict, str]) -> None:
    output, _, _ = near_chance
    near = output.index("near chance on the compared rows")
    assert near < output.index("picks the same top layer"), output[: near + 200]
