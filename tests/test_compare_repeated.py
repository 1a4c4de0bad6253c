"""compare says when the rows it compares repeat one another (a head from export-head has no fit-head
summary to say it), as a caveat beside the verdicts: no verdict changes."""

from __future__ import annotations

import json

import numpy as np
from helpers import fit_quickly, write_cache
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.head_dir import cache_identity, save_head

runner = CliRunner()
ENV = {"COLUMNS": "300", "NO_COLOR": "1"}
ARGS = ["--method", "alpha,random", "--bootstrap", "200", "--no-plots", "--no-sanity"]


def _cache(path, distinct: int, copies: int):
    rng = np.random.default_rng(0)
    widths, n_train = (6, 5, 4), 60

    def rows(n):
        y = np.arange(n) % 3
        return [rng.normal(size=(n, w)).astype(np.float32) + y[:, None] for w in widths], y

    train = rows(n_train)
    feats, y = rows(distinct)
    test = ([np.tile(f, (copies, 1)) for f in feats], np.tile(y, copies))
    return write_cache(path, {"train": train, "test": test}, class_names=["a", "b", "c"])


def _head(cache, folder):
    with FeatureStore(cache) as store:
        head = fit_quickly("laya", store, 30, d_star=4, tau=1.5)
        return save_head(folder / "head", head, meta=cache_identity(store))  # as export-head: no fit-head summary


def _compare(head, cache, out):
    res = runner.invoke(app, ["compare", str(head), "--cache", str(cache), *ARGS, "--out", str(out)], env=ENV)
    assert res.exit_code == 0, res.output
    return res.output, json.loads((out / "summary.json").read_text())


def _verdicts(summary):
    return [(m, s["vs_constant"]["verdict"]) for h in summary["heads"] for m, s in h["methods"].items()]


def test_repeated_compared_rows_are_said_once_recorded_and_change_no_verdict(tmp_path, monkeypatch):
    cache = _cache(tmp_path / "c.h5", distinct=12, copies=10)
    head = _head(cache, tmp_path)
    output, summary = _compare(head, cache, tmp_path / "cmp")
    found = summary["rows_repeated"]
    assert (found["rows"], found["of"], found["distinct"], found["split"]) == (108, 120, 12, "test")
    assert found["examples"][0] == {"row": 12, "index": 12, "first_row": 0, "first_index": 0}
    line = next(w for w in summary["head_warnings"] if "repeat an earlier test row" in w)
    flat = " ".join(output.split())
    assert flat.count("repeat an earlier test row") == 1 and "12 distinct inputs" in flat, output
    assert "12 distinct inputs" in (tmp_path / "cmp" / "report.html").read_text()
    assert line.startswith("108 of 120 test rows")
    # the same run without the check: the same verdicts (a caveat, not a withholding)
    import laya_inspect.compare.run as run

    monkeypatch.setattr(run, "repeated_compared", lambda *a: (None, []))
    _, without = _compare(head, cache, tmp_path / "cmp-without")
    assert without["rows_repeated"] is None and _verdicts(without) == _verdicts(summary)


def test_distinct_compared_rows_say_nothing(tmp_path):
    cache = _cache(tmp_path / "c.h5", distinct=90, copies=1)
    output, summary = _compare(_head(cache, tmp_path), cache, tmp_path / "cmp")
    assert summary["rows_repeated"] is None and "repeat an earlier" not in output


def test_fit_heads_line_and_compares_own_over_the_same_rows_are_said_once(tmp_path):
    from laya_inspect.training.fit_head import FitConfig, fit_heads

    cache = _cache(tmp_path / "c.h5", distinct=12, copies=10)
    with FeatureStore(cache) as store:
        fit_heads(store, FitConfig(seeds=(0,), epochs=2, probe=False, heads=("laya",)), out_dir=tmp_path / "h")
    fitted = json.loads((tmp_path / "h" / "summary.json").read_text())["quality"]["test_rows_repeated"]
    output, summary = _compare(tmp_path / "h", cache, tmp_path / "cmp")
    assert summary["rows_repeated"] == fitted  # the same helper over the same rows: the same record
    assert sum("repeat an earlier test row" in w for w in summary["head_warnings"]) == 2  # the outputs keep both
    assert " ".join(output.split()).count("repeat an earlier test row") == 1, output


def test_fit_heads_line_is_left_out_where_compare_says_it_of_other_rows(tmp_path):
    """QA: compare --limit read 50 of fit-head's 120 test rows and printed fit-head's "108 of 120 test
    rows repeat …" and its own "38 of 50 test rows repeat …": one caveat said twice. The terminal says
    compare's own, of the rows it read; summary.json keeps both."""
    from laya_inspect.training.fit_head import FitConfig, fit_heads

    cache = _cache(tmp_path / "c.h5", distinct=12, copies=10)
    with FeatureStore(cache) as store:
        fit_heads(store, FitConfig(seeds=(0,), epochs=2, probe=False, heads=("laya",)), out_dir=tmp_path / "h")
    out = tmp_path / "cmp"
    res = runner.invoke(
        app, ["compare", str(tmp_path / "h"), "--cache", str(cache), *ARGS, "--limit", "50", "--out", str(out)], env=ENV
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    found = summary["rows_repeated"]
    assert found["of"] == 50 and 0 < found["rows"] < 50
    assert sum("repeat an earlier test row" in w for w in summary["head_warnings"]) == 2  # the outputs keep both
    flat = " ".join(res.output.split())
    assert flat.count("repeat an earlier test row") == 1, res.output
    assert f"{found['rows']} of 50 test rows" in flat and "108 of 120" not in flat, res.output
