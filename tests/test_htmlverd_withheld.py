"""`report DIR` and `report DIR --html` read a compare summary written before the verdicts over the seeds
of a head near chance were withheld (its pairs kept "better" or "no different") as compare writes it now:
"withheld", since the seeds' own caveats, kept in the summary, withhold every ranking."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from helpers import fit_quickly
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.head_dir import cache_identity, save_head
from laya_inspect.training.stats import outcome

runner = CliRunner()
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
ARGS = ["--method", "alpha,alpha-contrib,ig", "--limit", "60", "--n-steps", "4", "--bootstrap", "50"]


def test_an_older_summary_near_chance_reads_withheld_over_the_seeds(digits_cache: Path, tmp_path: Path) -> None:
    folder = tmp_path / "heads"
    with FeatureStore(digits_cache) as store:
        y = np.random.default_rng(0).permutation(store.labels("train"))
        for seed in (0, 1):
            head = fit_quickly("laya", store, 40, seed=seed, d_star=8, tau=1.5, labels=y)
            save_head(folder / "laya" / f"seed_{seed}", head, meta=cache_identity(store))
    out = tmp_path / "cmp"
    args = ["compare", str(folder), "--cache", str(digits_cache), *ARGS, "--no-plots", "--no-sanity"]
    result = runner.invoke(app, [*args, "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    s = json.loads((out / "summary.json").read_text())
    (group,) = s["across_seeds"]["groups"]
    assert all(any(e["caveats_per_seed"]) for e in group["ablations"].values())
    # back to the verdicts a summary written before kept: each pair's own word from its interval
    pairs = [est for e in group["ablations"].values() for p in e["vs_methods"].values() for est in p.values()]
    for est in pairs:
        est["verdict"] = outcome(est)
    older = {est["verdict"] for est in pairs}
    assert older & {"better", "no different", "worse"}, older
    (out / "summary.json").write_text(json.dumps(s))

    terminal = runner.invoke(app, ["report", str(out), "--html"], env=ENV)
    assert terminal.exit_code == 0, terminal.output
    page = (out / "report.html").read_text(encoding="utf-8")
    for said in (terminal.output, page):
        for word in older:
            assert f"{word} over the seeds" not in said
    table = terminal.output[terminal.output.index("across seeds: laya") :].splitlines()
    rows = [line for line in table if line.strip().startswith(("− ig", "− alpha-contrib"))]
    assert rows and all(line.rstrip().endswith("withheld") for line in rows), rows
    assert "withheld: a caveat withholds every ranking" in page
