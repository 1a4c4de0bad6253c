"""explain names a row of a text table by its file line, as extract's warnings and errors do.

QA (all-MiniLM-L6-v2 on Debian package descriptions): extract warned "msg.csv: 2 of 156 rows have an
empty text (… line 153, 154)", while explain named the same row "source row 151", a 0-based count of
data rows that no editor shows; past a text holding newlines, a byte-order mark and CRLF line ends the
two numbers part further. The terminal header, --json and the figure now name the file line.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import write_cache
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.data import DATASETS
from laya_inspect.explain import explain_figure, explain_row

runner = CliRunner()
ENV = {"COLUMNS": "100"}

# package descriptions as `apt-cache show` prints them: a summary line, then paragraphs
DESCRIPTIONS = [
    ("GNU C Library: Shared libraries\nContains the standard libraries used by nearly all programs.", "libs"),
    ("command-line JSON processor\njq is like sed for JSON data.\n.\nIt is written in portable C.", "utils"),
    ("Python 3 module for YAML\nPyYAML is a YAML parser and emitter for Python.", "python"),
    ("GNU make utility to maintain groups of programs", "devel"),
]


def _texts(n: int) -> list[tuple[str, str]]:
    rows = [(f"{text} (package {i})", label) for i, (text, label) in ((i, DESCRIPTIONS[i % 4]) for i in range(n))]
    rows[18] = ("", rows[18][1])  # an empty text: extract's warning names its line
    return rows


def _table(tmp_path: Path, fmt: str, rows: list[tuple[str, str]]) -> tuple[Path, list[int]]:
    """``rows`` written as a user's file (CSV: byte-order mark, CRLF, quoted newlines; JSONL: blank
    lines between records), rows 16 on the test split, and the line each row starts on, counted by hand."""
    path = tmp_path / f"pkgs.{fmt}"
    starts, line = [], 2  # after the header (CSV) or the blank first line (JSONL)
    if fmt == "csv":
        with open(path, "w", newline="", encoding="utf-8-sig") as f:
            w = csv.writer(f, lineterminator="\r\n")
            w.writerow(["text", "label", "split"])
            for i, (text, label) in enumerate(rows):
                w.writerow([text, label, "test" if i >= 16 else "train"])
                starts.append(line)
                line += text.count("\n") + 1
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n")
            for i, (text, label) in enumerate(rows):
                split = "test" if i >= 16 else "train"
                f.write(json.dumps({"text": text, "label": label, "split": split}) + "\n" + "\n" * (i % 2))
                starts.append(line)
                line += 1 + i % 2
    return path, starts


def _cache_and_head(
    tmp_path: Path, data: str, labels: np.ndarray, test_rows: np.ndarray, names: list[str] | None = None
) -> tuple[Path, Path]:
    """A cache of random features over the file's rows (``test_rows`` the test split) and a head fitted on it."""
    from laya_inspect.training.fit_head import FitConfig, fit_heads

    n = len(labels)
    train_rows = np.setdiff1d(np.arange(n), test_rows)
    rng = np.random.default_rng(0)
    feats = [rng.normal(size=(n, 3)).astype("float32") + labels[:, None] for _ in range(2)]
    splits = {s: ([f[r] for f in feats], labels[r]) for s, r in (("train", train_rows), ("test", test_rows))}
    cache = write_cache(
        tmp_path / "f.h5", splits, data_spec=data, indices={"train": train_rows, "test": test_rows}, class_names=names
    )
    cfg = FitConfig(heads=("laya",), seeds=(0,), d_star=8, epochs=2, probe=False, device="cpu", val_fraction=0.25)
    with FeatureStore(cache) as store:
        (run,) = fit_heads(store, cfg, out_dir=tmp_path / "heads").runs
    return cache, run.head_dir


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_explain_names_a_text_row_by_its_file_line_everywhere(tmp_path: Path, fmt: str) -> None:
    rows = _texts(24)
    path, starts = _table(tmp_path, fmt, rows)
    names = sorted({label for _, label in rows})
    labels = np.array([names.index(label) for _, label in rows])
    test_rows = np.arange(16, 24)
    cache, head = _cache_and_head(tmp_path, f"{fmt}:{path}", labels, test_rows, names)
    row = 2  # test row 2 is source row 18, the empty text
    line = starts[18]
    assert line > 20  # past the texts' own newlines (CSV) and blank lines (JSONL): not source row + 2

    args = ["explain", str(head), "--cache", str(cache), "--row", str(row), "--draws", "2", "--device", "cpu"]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    said = f"line {line} of pkgs.{fmt}"
    assert f"({said}: ''): label" in result.output, result.output
    assert "source row 18" not in result.output

    result = runner.invoke(app, [*args, "--json"], env=ENV)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["source_row"] == 18 and out["source_line"] == line and out["input"]["file"] == f"pkgs.{fmt}"
    # the line the data's empty-text warning names, as extract prints it, is the same one
    src = DATASETS.get(fmt).load(str(path), {}, seed=0, test_fraction=0.2)
    (empty,) = src.row_warnings(np.arange(24))
    assert f"(column 'text'; line {line}):" in empty, empty

    with FeatureStore(cache) as store:
        e = explain_row(head, store, row=row, draws=2, device="cpu")
    titles = [ax.get_title() for ax in explain_figure(e).axes]
    assert any(said in " ".join(t.split()) for t in titles), titles


def test_a_row_of_a_source_that_is_no_file_of_lines_keeps_its_source_row(tmp_path: Path) -> None:
    """An array file has no lines: its row is still named by its source row, with no line or file."""
    data = tmp_path / "x.npz"
    np.savez(data, x=np.random.default_rng(0).normal(size=(24, 5)).astype("float32"), y=np.arange(24) % 2)
    cache, head = _cache_and_head(tmp_path, f"npz:{data}", np.arange(24) % 2, np.arange(16, 24))
    args = ["explain", str(head), "--cache", str(cache), "--row", "1", "--draws", "2", "--device", "cpu", "--json"]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["source_row"] == 17 and out["source_line"] is None and out["input"]["file"] is None
