"""compare names the compared rows that repeat one another by their file line where the cache records
the lines (``source_lines``: a CSV, TSV or JSONL file), as fit-head's quality gate does: it named them by
0-based source index, so over the same rows the two lines differed and both were printed."""

from __future__ import annotations

import json

import numpy as np
from helpers import write_cache
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.training.fit_head import FitConfig, fit_heads

ENV = {"COLUMNS": "300", "NO_COLOR": "1"}
# source rows 0-11 from line 2 on, a text over three lines before row 12, so row 12 starts on line 16
LINES = {"file": "reviews.csv", "runs": [[0, 2], [12, 16]]}


def test_compare_names_repeated_rows_by_their_line_as_fit_head_does(tmp_path):
    rng = np.random.default_rng(0)
    widths = (6, 5, 4)

    def rows(n):
        y = np.arange(n) % 3
        return [rng.normal(size=(n, w)).astype(np.float32) + y[:, None] for w in widths], y

    feats, y = rows(12)
    test = ([np.tile(f, (3, 1)) for f in feats], np.tile(y, 3))  # rows 12-35 repeat rows 0-11
    cache = write_cache(
        tmp_path / "c.h5",
        {"train": rows(60), "test": test},
        class_names=["a", "b", "c"],
        extra_attrs={"source_lines": LINES},
        indices={"train": np.arange(36, 96), "test": np.arange(36)},
    )
    with FeatureStore(cache) as store:
        fit_heads(store, FitConfig(seeds=(0,), epochs=2, probe=False, heads=("laya",)), out_dir=tmp_path / "h")
    fitted = json.loads((tmp_path / "h" / "summary.json").read_text())["quality"]["test_rows_repeated"]
    args = ["--method", "alpha,random", "--bootstrap", "200", "--no-plots", "--no-sanity"]
    res = CliRunner().invoke(
        app, ["compare", str(tmp_path / "h"), "--cache", str(cache), *args, "--out", str(tmp_path / "cmp")], env=ENV
    )
    assert res.exit_code == 0, res.output
    found = json.loads((tmp_path / "cmp" / "summary.json").read_text())["rows_repeated"]
    # row 12 repeats row 0: source index 12 starts on line 16, index 0 on line 2
    assert found["examples"][0] == {
        "row": 12,
        "index": 12,
        "first_row": 0,
        "first_index": 0,
        "line": 16,
        "first_line": 2,
    }
    assert found["file"] == "reviews.csv" and found == fitted  # the same helper over the same rows: the same record
    flat = " ".join(res.output.split())
    assert "row 12 (line 16 of reviews.csv) = row 0 (line 2 of reviews.csv)" in flat, res.output
    assert flat.count("repeat an earlier test row") == 1, res.output  # fit-head's line and compare's are one
