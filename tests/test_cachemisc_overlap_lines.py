"""fit-head's quality gate names a repeated test row, and a test row that is a training row, by its file
line where the cache records the lines (a CSV, TSV or JSONL file), as extract and explain name such rows:
it said "source index 17", a 0-based count of data rows no editor shows, which parts further from the
line past each text over several lines. Elsewhere (an image folder, an older cache) the index stays.
A real CSV of texts with quoted newlines, through a BiLSTM `train` fitted for one epoch (identical texts
give identical rows)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import h5py
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.training.overlap import overlap_warning, repeated_warning

runner = CliRunner()
ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "400"}
TEXTS = [
    "GNU C Library: Shared libraries\nContains the standard libraries used by nearly all programs.",
    "command-line JSON processor\njq is like sed for JSON data.\n.\nIt is written in portable C.",
    "Python 3 module for YAML\nPyYAML is a YAML parser and emitter for Python.",
    "GNU make utility to maintain groups of programs",
]

COLOURS = ["red", "green", "blue", "amber", "violet"]
NUMBERS = ["one", "two", "three", "four", "five", "six", "seven", "eight"]


def _table(tmp_path: Path) -> tuple[Path, list[int]]:
    """40 texts (rows 30 on in the test split) whose test row 36 repeats test row 33 and test row 38
    repeats training row 5; and the line each row starts on, counted by hand."""
    # each text its own words, every one of them in the training rows (an unknown word reads as any other)
    words = [f"{TEXTS[i % 4]} {COLOURS[i % 5]} {NUMBERS[i % 8]}" for i in range(40)]
    rows = [(words[i], "ab"[i % 2], "test" if i >= 30 else "train") for i in range(40)]
    rows[36] = rows[33]
    rows[38] = (rows[5][0], rows[5][1], "test")
    path, starts, line = tmp_path / "pkgs.csv", [], 2
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label", "split"])
        for text, label, split in rows:
            w.writerow([text, label, split])
            starts.append(line)
            line += text.count("\n") + 1
    return path, starts


def test_fit_head_names_repeated_and_overlapping_rows_by_their_csv_line(tmp_path):
    path, starts = _table(tmp_path)
    cache, weights = tmp_path / "c.h5", tmp_path / "b.pt"
    # the word vocabulary a BiLSTM reads comes with train's checkpoint
    trained = runner.invoke(
        app,
        ["train", "--model", "zoo:bilstm", "--data", f"csv:{path}", "--epochs", "1", "--out", str(weights)],
        env=ENV,
    )
    assert trained.exit_code == 0, trained.output
    extract = [
        "extract",
        "--model",
        "zoo:bilstm",
        "--weights",
        str(weights),
        "--data",
        f"csv:{path}",
        "--out",
        str(cache),
    ]
    done = runner.invoke(app, extract, env=ENV)
    assert done.exit_code == 0, done.output
    fit = ["fit-head", str(cache), "--head", "laya", "--seeds", "1", "--epochs", "2", "--out", str(tmp_path / "h")]
    fitted = runner.invoke(app, fit, env=ENV)
    assert fitted.exit_code == 0, fitted.output
    said = " ".join(fitted.output.split())
    # row 36 of the file is test row 6, and its source index 36 lies past 28 texts of two to four lines
    assert f"row 6 (line {starts[36]} of pkgs.csv) = row 3 (line {starts[33]} of pkgs.csv)" in said
    assert f"test row 8 (line {starts[38]} of pkgs.csv) = train row 5 (line {starts[5]} of pkgs.csv)" in said
    assert starts[36] != 36 + 2  # the index plus the header is not the line here
    quality = json.loads((tmp_path / "h" / "summary.json").read_text())["quality"]
    assert quality["test_rows_repeated"]["examples"][0]["line"] == starts[36]
    assert quality["test_rows_in_train"]["examples"][0]["train_line"] == starts[5]
    with h5py.File(cache, "r") as f:
        assert json.loads(f.attrs["source_lines"])["file"] == "pkgs.csv"


def test_without_recorded_lines_the_rows_are_named_by_source_index():
    from laya_inspect.training.overlap import with_lines

    found = {"split": "test", "rows": 1, "of": 9, "distinct": 8}
    found["examples"] = [{"row": 4, "index": 40, "first_row": 1, "first_index": 10}]
    assert with_lines(found, None, {"index": "line"}) is found  # an image folder, a cache written before
    assert "row 4 (source index 40) = row 1 (source index 10)" in repeated_warning(found)
    # a run of lines restarting at row 12 (a text over three lines before it)
    lined = with_lines(found, {"file": "t.tsv", "runs": [[0, 2], [12, 16]]}, {"index": "line", "first_index": "fl"})
    assert lined["examples"][0]["line"] == 44 and lined["examples"][0]["fl"] == 12
    pair = {"train_split": "train", "test_split": "test", "rows": 1, "of": 9, "share": 1 / 9, "other_label": 0}
    pair["examples"] = [{"test_row": 0, "test_index": 30, "train_row": 2, "train_index": 2}]
    assert "test row 0 (source index 30) = train row 2 (source index 2)" in overlap_warning(pair)
