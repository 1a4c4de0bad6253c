"""`report` says when the files a folder's results were computed from were replaced since: a demo's
step rerun by hand (`extract --overwrite --out DEMO/features.h5`, `train --force --out
DEMO/backbone.pt`) left the heads, the comparison and the page of the earlier file, and `report`
reprinted them with no word of it (the page even showed the new cache's fingerprint beside them)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from helpers import write_cache
from typer.testing import CliRunner

from laya_inspect.cli import app

runner = CliRunner()
ENV = {"COLUMNS": "300", "NO_COLOR": "1"}


def _splits(seed: int) -> dict[str, tuple[list[np.ndarray], np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = {}
    for name, n in (("train", 120), ("test", 60)):
        labels = rng.integers(0, 2, n)
        out[name] = ([(rng.normal(size=(n, 4)) + labels[:, None]).astype(np.float32) for _ in range(3)], labels)
    return out


def _said(args: list[str]) -> str:
    r = runner.invoke(app, args, env=ENV)
    assert r.exit_code == 0, r.output
    return " ".join(r.output.split())


def test_report_says_the_cache_changed_since_fit_head_and_compare_read_it(tmp_path: Path) -> None:
    cache = write_cache(tmp_path / "f.h5", _splits(0), extra_attrs={"weights_sha256": "a" * 64})
    heads, scores = tmp_path / "heads", tmp_path / "cmp"
    fit = ["fit-head", str(cache), "--head", "laya", "--seeds", "1", "--epochs", "2", "--out", str(heads)]
    assert runner.invoke(app, fit, env=ENV).exit_code == 0
    head = str(heads / "laya" / "seed_0")
    compare = ["compare", head, "--cache", str(cache), "--method", "alpha", "--no-sanity", "--no-plots"]
    assert runner.invoke(app, [*compare, "--out", str(scores)], env=ENV).exit_code == 0
    for folder in (heads, scores):  # the cache they read: nothing to say
        assert "changed since" not in _said(["report", str(folder)])
    recorded = json.loads((scores / "summary.json").read_text())["heads"][0]["head_weights_sha256"]
    assert isinstance(recorded, str) and len(recorded) == 64

    # the heads refitted into the same folder (`fit-head --force`, other epochs): compare's scores are of the old ones
    assert runner.invoke(app, [*fit[:-2], "--epochs", "4", "--force", "--out", str(heads)], env=ENV).exit_code == 0
    said = _said(["report", str(scores)])
    assert f"warning: head {head} was refitted since compare scored it for {scores}" in said, said
    assert "changed since" not in said  # the cache is the same
    assert "refitted" not in _said(["report", str(heads)])

    # another backbone's features at the same path (what `extract --overwrite` of a retrained backbone writes)
    cache.unlink()
    write_cache(cache, _splits(0), extra_attrs={"weights_sha256": "b" * 64})
    said = _said(["report", str(heads)])
    assert f"warning: {cache} changed since fit-head fitted the heads in {heads} on it" in said, said
    assert "weights_sha256" in said and "rerun fit-head on it" in said
    said = _said(["report", str(scores)])
    assert f"warning: {cache} changed since compare read it for {scores}" in said, said
    assert "its scores are of the earlier cache" in said
    assert runner.invoke(app, ["report", str(scores), "--html"], env=ENV).exit_code == 0
    page = (scores / "report.html").read_text(encoding="utf-8")
    assert f'<p class="note">Warning: {cache} changed since compare read it' in page

    # the same features of other rows (another --limit or split seed): fit-head's rows tell them apart
    cache.unlink()
    write_cache(cache, _splits(1), extra_attrs={"weights_sha256": "a" * 64})
    said = _said(["report", str(heads)])
    assert f"warning: {cache} changed since fit-head" in said and "holds other rows now" in said, said


def test_report_of_a_demo_says_its_backbone_was_retrained_after_the_cache(tmp_path: Path) -> None:
    from laya_inspect.report.folders import DemoFolder
    from laya_inspect.report.stale import stale_inputs

    demo = tmp_path / "demo"
    train = ["train", "--model", "zoo:mlp", "--data", "digits", "--limit", "100", "--epochs", "1", "--device", "cpu"]
    extract = ["extract", "--model", "zoo:mlp", "--data", "digits", "--limit", "100", "--device", "cpu"]
    backbone, cache = demo / "backbone.pt", demo / "features.h5"
    assert runner.invoke(app, [*train, "--out", str(backbone)], env=ENV).exit_code == 0
    assert runner.invoke(app, [*extract, "--weights", str(backbone), "--out", str(cache)], env=ENV).exit_code == 0
    folder = DemoFolder(demo, {}, None, None, None)
    assert stale_inputs(folder) == []
    r = runner.invoke(app, [*train, "--seed", "1", "--force", "--out", str(backbone)], env=ENV)
    assert r.exit_code == 0, r.output
    [line] = stale_inputs(folder)
    assert line.startswith(f"{backbone} changed since {cache} was extracted from it (weights sha256 "), line
    assert f"`laya-inspect demo --force --out {demo}`" in line
    meta = json.loads((demo / "backbone.metrics.json").read_text())
    assert meta["training"]["seed"] == 1  # the retrained backbone is what stands there now
