"""What extract warned about a cache (random weights, a backbone `train` left at chance, …) is read
beside every result computed from it: fit-head's, compare's and explain's terminal, their
summary.json (explain's --json) and report.html."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from helpers import write_cache
from typer.testing import CliRunner

from laya_inspect.cli import app

runner = CliRunner()
ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
SAID = "flat.pt (from `laya-inspect train`): near chance: test accuracy 0.103 vs chance 0.100 (majority class)"


def test_the_caches_warnings_travel_into_fit_head_and_compare(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    splits = {}
    for name, n in (("train", 200), ("test", 100)):
        feats = [rng.normal(size=(n, 4)).astype(np.float32) for _ in range(3)]
        splits[name] = (feats, (feats[2][:, 0] > 0).astype(np.int64))
    cache = write_cache(tmp_path / "c.h5", splits, extra_attrs={"warnings": [SAID]})
    fit = runner.invoke(
        app,
        ["fit-head", str(cache), "--head", "laya", "--seeds", "1", "--epochs", "3", "--out", str(tmp_path / "h")],
        env=ENV,
    )
    assert fit.exit_code == 0, fit.output
    assert f"warning cache: {SAID}" in fit.stdout
    fitted = json.loads((tmp_path / "h" / "summary.json").read_text())
    assert fitted["cache"]["cache_warnings"] == [SAID]
    head_config = json.loads((tmp_path / "h" / "laya" / "seed_0" / "config.json").read_text())
    assert head_config["cache_warnings"] == [SAID]
    assert "cache warning" in (tmp_path / "h" / "report.html").read_text(encoding="utf-8")

    args = ["compare", str(tmp_path / "h" / "laya" / "seed_0"), "--cache", str(cache), "--method", "alpha"]
    compared = runner.invoke(app, [*args, "--no-sanity", "--no-plots", "--out", str(tmp_path / "c")], env=ENV)
    assert compared.exit_code == 0, compared.output
    assert f"warning cache: {SAID}" in compared.stdout
    assert json.loads((tmp_path / "c" / "summary.json").read_text())["cache"]["warnings"] == [SAID]
    page = (tmp_path / "c" / "report.html").read_text(encoding="utf-8")
    assert "cache warning" in page and "flat.pt (from `laya-inspect train`)" in page
    again = runner.invoke(app, ["report", str(tmp_path / "c")], env=ENV)
    assert again.exit_code == 0 and f"warning cache: {SAID}" in again.stdout

    one = ["explain", str(tmp_path / "h" / "laya" / "seed_0"), "--cache", str(cache), "--row", "0", "--n-steps", "4"]
    explained = runner.invoke(app, one, env=ENV)
    assert explained.exit_code == 0, explained.output
    assert f"warning cache: {SAID}" in explained.stdout
    as_json = runner.invoke(app, [*one, "--json"], env=ENV)
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["cache_warnings"] == [SAID]
