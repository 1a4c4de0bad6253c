"""imagecsv:FILE.jsonl: image paths listed one JSON object a line (path, label, split keys), read as the
CSV list is, on real CIFAR-10 JPEGs; a missing file is named by its JSONL line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import test_data_imagecsv
import torch
from test_data_imagecsv import IMAGE_MODEL, every_row

from laya_inspect.data import load_data
from laya_inspect.errors import InputError

cifar = test_data_imagecsv.cifar  # 40 CIFAR-10 test JPEGs (4 of each class), a fixture the tests take by name


def _write_jsonl(path: Path, records: list[dict], blank_after: int | None = None) -> None:
    lines = [json.dumps(r) for r in records]
    if blank_after is not None:
        lines.insert(blank_after, "")
    path.write_text("\n".join(lines) + "\n")


def test_a_jsonl_list_of_cifar_jpegs_reads_as_the_csv_list_does(cifar):
    """QA: imagecsv: read CSV/TSV only; a .jsonl list was read as CSV and refused for a column named
    '{"path": ...'. The same files listed in JSONL and CSV give the same pixels, labels and splits."""
    files = sorted(cifar.glob("test/*/*.jpg"))
    split = ["train" if i % 4 else "test" for i in range(len(files))]
    recs = [{"path": str(f.relative_to(cifar)), "label": f.parent.name, "split": s} for f, s in zip(files, split)]
    _write_jsonl(cifar / "list.jsonl", recs)
    rows = [f"{r['path']},{r['label']},{r['split']}" for r in recs]
    (cifar / "list.csv").write_text("path,label,split\n" + "\n".join(rows) + "\n")
    listed = load_data(f"imagecsv:{cifar / 'list.jsonl'}", input_spec=IMAGE_MODEL)
    table = load_data(f"imagecsv:{cifar / 'list.csv'}", input_spec=IMAGE_MODEL)
    assert listed.kind == "image" and len(listed.class_names) == 10 and listed.class_names == table.class_names
    assert listed.split_info["method"] == "native" and listed.splits["test"].n == 10 and listed.splits["train"].n == 30
    a, b = every_row(listed), every_row(table)
    assert sorted(a) == sorted(b) == list(range(40))
    for i in a:
        assert a[i][0] == b[i][0] and torch.equal(a[i][1], b[i][1])


def test_jsonl_keys_are_chosen_as_csv_columns_are(cifar):
    files = sorted(cifar.glob("test/*/*.jpg"))[:12]
    recs = [{"file": str(f), "animal": f.parent.name} for f in files]  # absolute paths, no split key
    _write_jsonl(cifar / "keys.jsonl", recs)
    b = load_data(f"imagecsv:{cifar / 'keys.jsonl'}?path_col=file&label_col=animal", test_fraction=0.5, seed=1)
    assert b.split_info["method"] != "native" and sum(s.n for s in b.splits.values()) == 12
    with pytest.raises(InputError, match=r"no column 'path' for path_col.*imagecsv:FILE\?path_col=NAME"):
        load_data(f"imagecsv:{cifar / 'keys.jsonl'}?label_col=animal")


def test_a_missing_file_is_named_by_its_jsonl_line(cifar, tmp_path):
    """The line counts the blank line before it, as an editor does; the message says the JSONL file's folder."""
    files = sorted(cifar.glob("test/*/*.jpg"))[:6]
    recs = [{"path": str(f), "label": f.parent.name} for f in files]
    recs[4]["path"] = "gone/0000.jpg"
    _write_jsonl(tmp_path / "l.jsonl", recs, blank_after=2)
    with pytest.raises(InputError, match=r"1 of 6 .*line 6 'gone/0000.jpg' \(no such file\).*JSONL file's folder"):
        load_data(f"imagecsv:{tmp_path / 'l.jsonl'}")


def test_a_jsonl_line_that_is_no_object_or_has_a_list_for_path_is_refused_by_line(cifar, tmp_path):
    f = str(sorted(cifar.glob("test/*/*.jpg"))[0])
    (tmp_path / "a.jsonl").write_text(json.dumps({"path": f, "label": "x"}) + "\n" + json.dumps([f, "y"]) + "\n")
    with pytest.raises(InputError, match=r"a.jsonl:2: expected a JSON object"):
        load_data(f"imagecsv:{tmp_path / 'a.jsonl'}")
    (tmp_path / "b.jsonl").write_text(json.dumps({"path": [f], "label": "x"}) + "\n")
    with pytest.raises(InputError, match=r"b.jsonl:1: the image path \(column 'path'\) is a JSON list"):
        load_data(f"imagecsv:{tmp_path / 'b.jsonl'}")


def test_a_jsonl_file_listed_twice_is_warned_with_its_lines(cifar, tmp_path):
    files = sorted(cifar.glob("test/*/*.jpg"))[:6]
    recs = [{"path": os.path.relpath(f, tmp_path), "label": f.parent.name} for f in files]
    recs.append({"path": recs[0]["path"], "label": "other"})
    _write_jsonl(tmp_path / "t.jsonl", recs)
    b = load_data(f"imagecsv:{tmp_path / 't.jsonl'}", test_fraction=0.5)
    assert any("listed on several lines (lines 1, 7)" in w and "1 of them under two labels" in w for w in b.warnings)
