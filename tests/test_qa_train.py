"""What `laya-inspect train` tells a user about its own run, read as a user reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from laya_inspect.cli import app

runner = CliRunner()
ENV = {"COLUMNS": "200"}


def test_train_names_every_setting_and_says_which_were_left_at_their_defaults(tmp_path: Path) -> None:
    ckpt = tmp_path / "m.pt"
    args = ["train", "-m", "zoo:mlp", "-d", "digits", "--head", "laya", "--epochs", "1", "--lr", "0.001"]
    res = runner.invoke(app, [*args, "--limit", "200", "--device", "cpu", "--out", str(ckpt)], env=ENV)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("settings given:"))
    line, more = lines[at], lines[at + 1 :]
    while more and more[0].startswith("  "):  # a long line goes on two spaces in
        line, more = f"{line} {more[0].strip()}", more[1:]
    given, kept = line.removeprefix("settings given: ").split("; left at their defaults: ")
    assert given.split(" · ") == ["head laya", "lr 0.001", "≤ 1 epoch", "≤ 200 rows per split", "device cpu"]
    for default in ("d*=96", "τ=1.5", "init glorot", "batch 128", "seed 0", "loss on logits", "weight decay 0"):
        assert default in kept.split(" · ")
    assert "patience 5 (no early stop)" in kept  # 5 ≥ the epochs after the first: nothing stops early
    metrics = json.loads((tmp_path / "m.metrics.json").read_text())
    assert metrics["device"] == "cpu"
    assert "batch_size" in metrics["config_defaults"] and "lr" not in metrics["config_defaults"]


def test_export_head_example_reads_the_files_train_and_extract_examples_write() -> None:
    """A user copying the examples one after another: export-head's must name train's --out and
    the cache train's `next:` line has extract write beside it."""
    train_help = runner.invoke(app, ["train", "--help"], env=ENV).stdout
    export_help = runner.invoke(app, ["export-head", "--help"], env=ENV).stdout
    ckpt = Path(train_help.split("Example:", 1)[1].split("--out ", 1)[1].split()[0])
    example = export_help.split("Example:", 1)[1].split("laya-inspect export-head ", 1)[1].split()
    assert example[0] == str(ckpt)
    assert example[example.index("--cache") + 1] == str(ckpt.with_suffix(".h5"))


def test_train_next_step_extracts_the_rows_it_trained_and_tested_on(tmp_path: Path) -> None:
    ckpt = tmp_path / "m.pt"
    args = ["train", "-m", "zoo:mlp", "-d", "digits", "--epochs", "1", "--limit", "200", "--device", "cpu"]
    res = runner.invoke(app, [*args, "--out", str(ckpt)], env=ENV)
    assert res.exit_code == 0, res.output
    nxt = next(x for x in res.stdout.splitlines() if x.startswith("next: laya-inspect extract"))
    assert " --limit 200 --out " in nxt  # extract reads the 200 rows per split train read


def test_export_head_names_the_layer_of_each_mean_weight(tmp_path: Path) -> None:
    ckpt, cache = tmp_path / "m.pt", tmp_path / "m.h5"
    args = ["-m", "zoo:mlp", "-d", "digits", "--limit", "200", "--device", "cpu"]
    res = runner.invoke(app, ["train", *args, "--head", "laya", "--epochs", "1", "--out", str(ckpt)], env=ENV)
    assert res.exit_code == 0, res.output
    extract = ["extract", "--model", "zoo:mlp", "--weights", str(ckpt), "--data", "digits", "--limit", "200"]
    res = runner.invoke(app, [*extract, "--device", "cpu", "--out", str(cache)], env=ENV)
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["export-head", str(ckpt), "--cache", str(cache), "--out", str(tmp_path / "h")], env=ENV)
    assert res.exit_code == 0, res.output
    line = next(x for x in res.stdout.splitlines() if x.startswith("mean layer weights: "))
    named = [item.split(" ") for item in line.removeprefix("mean layer weights: ").split(" · ")]
    assert [n for n, _ in named] == ["blocks.0", "blocks.1", "blocks.2"]
    assert sum(float(w) for _, w in named) == pytest.approx(1.0, abs=2e-3)  # α sums to 1 on every row
