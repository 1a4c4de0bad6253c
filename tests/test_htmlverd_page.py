"""`report DIR --html` builds a prune page's verdict lines from summary.json's fields, as `report DIR`
prints them, not from the lines an older laya-inspect stored."""

from __future__ import annotations

import html
import json
from pathlib import Path

from helpers import fit_quickly
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.head_dir import cache_identity, save_head

runner = CliRunner()
ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "300"}


def _flat(text: str) -> str:
    return " ".join(html.unescape(text).split())


def test_report_html_rebuilds_prune_verdicts_from_the_fields(digits_cache, tmp_path: Path) -> None:
    with FeatureStore(digits_cache) as store:
        meta = cache_identity(store)
        for s in (0, 1):
            head = fit_quickly("laya", store, seed=s)
            save_head(tmp_path / "heads" / "laya" / f"seed_{s}", head, meta={**meta, "seed": s})
    out = tmp_path / "prune"
    args = ["prune", str(tmp_path / "heads"), "--cache", str(digits_cache), "--ks", "1", "--epochs", "2"]
    args += ["--costs", "shapes", "--no-plots", "--device", "cpu", "--out", str(out)]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    s = json.loads((out / "summary.json").read_text())
    (i,) = [j for j, v in enumerate(s["verdict"]) if v.startswith("alpha: smallest set")]
    rebuilt = s["verdict"][i]
    s["verdict"][i] = "OLDER: alpha keeps 1 layer"
    (out / "summary.json").write_text(json.dumps(s))
    again = runner.invoke(app, ["report", str(out), "--html"], env=ENV)
    assert again.exit_code == 0, again.output
    page = _flat((out / "report.html").read_text(encoding="utf-8"))
    assert rebuilt in page and "OLDER" not in page
