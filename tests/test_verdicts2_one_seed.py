"""What one run rests on is said where its number is: compare's note that its verdicts read one fitted
seed comes right after the headline that gives them, as report.html's reading has it, not after the tables;
train's test accuracy comes with its test rows' 95% interval and chance beside it. Real runs on digits."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import fit_quickly
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.head_dir import cache_identity, save_head
from laya_inspect.training.stats import wilson

runner = CliRunner()
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}


def test_the_one_seed_note_follows_the_headline(digits_cache: Path, tmp_path: Path) -> None:
    with FeatureStore(digits_cache) as store:
        head = save_head(tmp_path / "laya", fit_quickly("laya", store, 40, d_star=8), meta=cache_identity(store))
    args = ["compare", str(head), "--cache", str(digits_cache), "--method", "alpha,ig", "--limit", "60"]
    args += ["--n-steps", "4", "--bootstrap", "50", "--no-plots", "--no-sanity", "--device", "cpu"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "cmp")], env=ENV)
    assert result.exit_code == 0, result.output
    out = result.output
    note = out.index("note: the verdicts above read one fitted seed of laya")
    assert out.index("picks the same top layer") < note < out.index("compare: 60 test rows"), out
    assert out.count("read one fitted seed") == 1


def test_train_gives_its_test_accuracy_with_the_rows_interval_and_chance(tmp_path: Path) -> None:
    ckpt = tmp_path / "z.pt"
    args = ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "laya", "--epochs", "1", "--limit", "300"]
    result = runner.invoke(app, [*args, "--out", str(ckpt)], env=ENV)
    assert result.exit_code == 0, result.output
    m = json.loads(ckpt.with_suffix(".metrics.json").read_text())
    low, high = wilson(m["test_acc"] * m["n_test"], m["n_test"])
    said = (
        f"test accuracy {m['test_acc']:.4f} [{low:.3f}, {high:.3f}] over {m['n_test']} test rows (95% Wilson), "
        f"chance {m['chance']:.3f}"
    )
    assert said in " ".join(result.output.split()), result.output
    assert re.search(r"test accuracy \d\.\d{4}, ", result.output) is None  # no bare accuracy left
