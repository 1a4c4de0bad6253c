"""compare on a head near chance (fit on shuffled labels): faithfulness to its computation is still
defined, but "beats the constant rule" beside a head that learnt nothing reads as an explanation to
trust, so its verdicts and "best" are withheld, the caveat printed beside the verdict table and kept
in summary.json (the scores and their intervals stay); a head that learnt keeps its verdicts."""

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
from laya_inspect.training.quality import CHANCE_GAP

runner = CliRunner()
ENV = {"COLUMNS": "300", "NO_COLOR": "1"}
ARGS = ["--method", "alpha,random", "--limit", "120", "--bootstrap", "200", "--no-plots", "--no-sanity"]


def _fit(store: FeatureStore, folder: Path, shuffle: bool) -> Path:
    y = np.random.default_rng(0).permutation(store.labels("train")) if shuffle else None
    head = fit_quickly("laya", store, 40, d_star=8, tau=1.5, labels=y)
    return save_head(folder / ("shuffled" if shuffle else "real"), head, meta=cache_identity(store))


@pytest.fixture(scope="module")
def runs(digits_cache, tmp_path_factory):
    folder = tmp_path_factory.mktemp("near_chance")
    out = {}
    with FeatureStore(digits_cache) as store:
        heads = {k: _fit(store, folder, k == "shuffled") for k in ("real", "shuffled")}
    for k, head in heads.items():
        res = runner.invoke(
            app,
            ["compare", str(head), "--cache", str(digits_cache), *ARGS, "--out", str(folder / f"compare-{k}")],
            env=ENV,
        )
        assert res.exit_code == 0, res.output
        out[k] = (res.output, json.loads((folder / f"compare-{k}" / "summary.json").read_text()))
    return out


def test_a_head_near_chance_gets_no_verdict_and_the_caveat_is_beside_the_verdicts(runs):
    output, summary = runs["shuffled"]
    head = summary["heads"][0]
    verdicts = {m: s["vs_constant"]["verdict"] for m, s in head["methods"].items()}
    assert set(verdicts.values()) == {"withheld"}, verdicts
    chance = head["chance"]
    # the rule fit-head's gate applies, here to the compared rows
    assert head["accuracy"] < chance["chance"] + CHANCE_GAP * (1 - chance["chance"])
    assert chance["near_chance"] and "withheld" in chance["policy"]
    assert head["methods"]["alpha"]["vs_constant"]["faithfulness"]["ci_low"] is not None  # the numbers stay
    assert head["best"] == {} and chance["caveat"] in head["caveats"]
    table = output.index("method − constant rule")
    assert "near chance on the compared rows" in output[table:]  # beside the verdicts, not only among warnings
    assert "beats" not in output[table : output.index("near chance on the compared rows", table)]


def test_a_head_that_learnt_keeps_its_verdicts(runs):
    _, summary = runs["real"]
    head = summary["heads"][0]
    assert not head["chance"]["near_chance"] and head["chance"]["caveat"] is None
    assert head["methods"]["alpha"]["vs_constant"]["verdict"] != "withheld"


def test_chance_is_the_splits_not_the_limit_subsets(runs, digits_cache):
    """--limit 120 compares a seeded subset whose majority share is not the split's: chance (and so the
    near-chance lines) is read from the split's labels, so it does not move with --limit (before, the
    subset's: "(chance 0.200)" on 40 rows of a split whose chance is 0.100)."""
    from laya_inspect.compare.draws import seeded_rows
    from laya_inspect.training.chance import chance_level

    with FeatureStore(digits_cache) as store:
        split = chance_level(store.labels("test"))
        subset = chance_level(store.labels("test", seeded_rows(store.n("test"), 120, 0)))
    assert abs(subset - split) > 0.01  # the subset's own share would differ
    for _, summary in runs.values():
        assert summary["heads"][0]["chance"]["chance"] == pytest.approx(split)
