"""Test rows that are training rows: QA's messy image folder held 6 of its 54 test images as byte-for-byte
copies of training files; their cached features equal the training rows', and the test accuracy was
partly a training accuracy with no word from extract or fit-head (only links between split folders
were said). fit-head's quality gate finds such rows in the cache, for every data source."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import write_cache

from laya_inspect.cache.store import FeatureStore
from laya_inspect.training.fit_head import FitConfig, fit_heads
from laya_inspect.training.loop import CacheRows

ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
CPU = torch.device("cpu")

MODEL = """
import torch


class Net(torch.nn.Module):
    input_spec = {"kind": "image", "channels": 1, "size": 8, "unnormalized": True}

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(1, 6, 3, padding=1), torch.nn.ReLU())
        self.mid = torch.nn.Sequential(torch.nn.Conv2d(6, 8, 3, stride=2, padding=1), torch.nn.ReLU())
        self.top = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(8 * 16, 24), torch.nn.ReLU())
        self.fc = torch.nn.Linear(24, 3)

    def forward(self, x):
        return self.fc(self.top(self.mid(self.stem(x))))


def make():
    return Net()
"""


def digits_folder(root: Path) -> list[tuple[Path, Path]]:
    """scikit-learn's real 8x8 digits 0, 1, 2 as PNG files in train/ and test/ class folders (20 and
    16 per class), then 6 training files copied into test/ (QA's 6 of 54): four under their own
    class, two under another. Returns the (training file, test copy) pairs."""
    from PIL import Image
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    counts = {"train": [0, 0, 0], "test": [0, 0, 0]}
    for img, label in zip(x, y):
        if label > 2:
            continue
        split = "train" if counts["train"][label] < 20 else "test" if counts["test"][label] < 16 else None
        if split is None:
            continue
        path = root / split / f"d{label}" / f"{counts[split][label]:03d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray((img * 255 / 16).astype(np.uint8).reshape(8, 8)).save(path)
        counts[split][label] += 1
    pairs = []
    into_classes = [("d0", "d0"), ("d1", "d1"), ("d2", "d2"), ("d0", "d0"), ("d1", "d2"), ("d2", "d0")]
    for k, (cls, into) in enumerate(into_classes):
        src = root / "train" / cls / f"{k:03d}.png"
        dst = root / "test" / into / f"copy{k}.png"
        shutil.copyfile(src, dst)
        pairs.append((src, dst))
    return pairs


def test_image_files_copied_into_the_test_folder_are_said_by_fit_head(tmp_path: Path, monkeypatch) -> None:
    """The QA case end to end, on real digits: extract an image folder whose test split holds copies of
    training files, fit heads, and read the warning in summary.json, the terminal and report.html."""
    from typer.testing import CliRunner

    from laya_inspect.cli import app

    digits_folder(tmp_path / "data")
    (tmp_path / "dupnet_model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    cache = tmp_path / "f.h5"
    res = runner.invoke(
        app,
        ["extract", "--model", "python:dupnet_model:make", "--random-init", "--data",
         f"imagefolder:{tmp_path / 'data'}", "--out", str(cache), "--device", "cpu"],
        env=ENV,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    with FeatureStore(cache) as store:
        assert store.n("train") == 60 and store.n("test") == 54
    out = tmp_path / "heads"
    res = runner.invoke(
        app,
        ["fit-head", str(cache), "--head", "laya,last", "--seeds", "1", "--epochs", "2", "--no-probe",
         "--out", str(out)],
        env=ENV,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    for h in summary["heads"]:
        said = [w for w in h["warnings"] if "are identical to rows of the 'train' split" in w]
        assert len(said) == 1 and said[0].startswith("6 of 54 test rows (11%)"), h["warnings"]
        assert "2 of them carry another label there" in said[0]
    found = summary["quality"]["test_rows_in_train"]
    assert (found["rows"], found["of"], found["other_label"]) == (6, 54, 2)
    assert found["share"] == pytest.approx(6 / 54)
    with FeatureStore(cache) as store:  # each example names a test row and a training row with the same features
        for e in found["examples"]:
            assert e["test_index"] == store.index("test")[e["test_row"]]
            for i in range(len(store.layer_names)):
                test_row, train_row = store.layer("test", i, [e["test_row"]]), store.layer("train", i, [e["train_row"]])
                assert np.array_equal(test_row, train_row)
    assert "6 of 54 test rows (11%) are identical" in " ".join(res.output.split())
    assert "6 of 54 test rows (11%) are identical" in (out / "report.html").read_text()
    # a source index names no file: the warning says how to find it, and that command names the copy
    row = found["examples"][0]["test_row"]
    said = next(w for w in summary["heads"][0]["warnings"] if "are identical" in w)
    assert f"`laya-inspect explain HEAD --row {row}` names the test row's file" in said
    head = next(p for p in out.rglob("config.json") if p.parent.parent.name == "laya").parent
    shown = runner.invoke(app, ["explain", str(head), "--cache", str(cache), "--row", str(row)], env=ENV)
    assert shown.exit_code == 0, shown.output
    assert "copy" in " ".join(shown.output.split()).split("): label")[0], shown.output


def two_splits(rng: np.random.Generator, n_train: int = 90, n_test: int = 30) -> dict:
    """Three layers of distinct rows: a class token's embedding (one row for every input), and two
    that carry the class."""
    y = np.arange(n_train + n_test) % 3
    cls = np.tile(np.array([[0.5, -1.0, 2.0, 0.25]], np.float32), (len(y), 1))
    a = (rng.normal(size=(len(y), 6)) + y[:, None]).astype(np.float32)
    b = (rng.normal(size=(len(y), 5)) - y[:, None]).astype(np.float32)
    return {
        "train": ([cls[:n_train], a[:n_train], b[:n_train]], y[:n_train]),
        "test": ([cls[n_train:], a[n_train:], b[n_train:]], y[n_train:]),
    }


def test_rows_equal_at_every_layer_are_found_and_only_those(tmp_path: Path) -> None:
    """Test rows 3 and 7 are training rows 10 and 40 at every layer (row 7 under another label); row 12
    equals training row 20 at every layer but one feature of the last; every row equals every other
    at the class token's layer. Exactly rows 3 and 7 are found."""
    from laya_inspect.training.overlap import rows_in_train

    splits = two_splits(np.random.default_rng(0))
    (tr, ytr), (te, yte) = splits["train"], splits["test"]
    for t, j in ((3, 10), (7, 40), (12, 20)):
        for i in range(3):
            te[i][t] = tr[i][j]
    te[2][12, 4] = np.nextafter(te[2][12, 4], np.float32(np.inf))  # one ulp away: not the same row
    yte[3], yte[7] = ytr[10], (ytr[40] + 1) % 3
    cache = write_cache(tmp_path / "c.h5", splits, layer_names=["embeddings", "block1", "block2"])
    with FeatureStore(cache) as store:
        for in_memory in (True, False):
            found = rows_in_train(CacheRows(store, "train", CPU, in_memory), CacheRows(store, "test", CPU, in_memory))
            assert found is not None
            assert (found["rows"], found["of"], found["other_label"]) == (2, 30, 1)
            assert [(e["test_row"], e["train_row"]) for e in found["examples"]] == [(3, 10), (7, 40)]
            labels = [(e["test_label"], e["train_label"]) for e in found["examples"]]
            assert labels == [(yte[3], ytr[10]), (yte[7], ytr[40])]


def test_a_constant_layer_alone_makes_no_row_a_training_row(tmp_path: Path) -> None:
    """A cache whose only shared layer is a class token's embedding (the same row for every input)
    says nothing of test rows in training, and summary.json records none."""
    cache = write_cache(tmp_path / "c.h5", two_splits(np.random.default_rng(1)), layer_names=["embeddings", "b1", "b2"])
    with FeatureStore(cache) as store:
        fit_heads(store, FitConfig(seeds=(0,), epochs=2, probe=False, heads=("laya",)), out_dir=tmp_path / "heads")
    summary = json.loads((tmp_path / "heads" / "summary.json").read_text())
    assert summary["quality"]["test_rows_in_train"] is None
    assert summary["quality"]["constant_layers"] == ["embeddings"]
    assert not [w for h in summary["heads"] for w in h["warnings"] if "identical to rows" in w]


def test_a_layer_left_out_with_layers_is_not_read(tmp_path: Path) -> None:
    """Identity is asked of the layers the heads read: test rows equal to training rows on
    block1 and block2 but not on the embeddings are training rows to heads fitted with
    --layers block1,block2, and not to heads that read every layer."""
    from laya_inspect.training.overlap import rows_in_train

    rng = np.random.default_rng(2)
    splits = two_splits(rng)
    splits["train"][0][0] = rng.normal(size=splits["train"][0][0].shape).astype(np.float32)  # no longer constant
    (tr, _), (te, _) = splits["train"], splits["test"]
    te[1][:4], te[2][:4] = tr[1][:4], tr[2][:4]
    cache = write_cache(tmp_path / "c.h5", splits, layer_names=["embeddings", "block1", "block2"])
    with FeatureStore(cache) as store:
        assert rows_in_train(CacheRows(store, "train", CPU, True), CacheRows(store, "test", CPU, True)) is None
        config = FitConfig(seeds=(0,), epochs=2, probe=False, heads=("laya",), layers="block1,block2")
        fit_heads(store, config, out_dir=tmp_path / "h")
    found = json.loads((tmp_path / "h" / "summary.json").read_text())["quality"]["test_rows_in_train"]
    assert (found["rows"], found["of"], found["other_label"]) == (4, 30, 0)


def test_test_rows_that_repeat_one_another_are_said_and_recorded(tmp_path: Path) -> None:
    """QA: a test split of 10 digits each repeated 20 times (200 rows) got compare's "beats" verdicts
    and a starred best from bootstraps over 200 rows, with no word that they were 10 inputs (only
    copies of training rows were said). Rows 5 and 9 repeat row 2 and row 11 repeats row 4 at every
    layer; row 13 equals row 6 but for one ulp of one feature: not a repeat."""
    splits = two_splits(np.random.default_rng(3))
    te = splits["test"][0]
    for t, first in ((5, 2), (9, 2), (11, 4), (13, 6)):
        for i in range(3):
            te[i][t] = te[i][first]
    te[1][13, 0] = np.nextafter(te[1][13, 0], np.float32(np.inf))
    cache = write_cache(tmp_path / "c.h5", splits, layer_names=["embeddings", "block1", "block2"])
    with FeatureStore(cache) as store:
        fit_heads(store, FitConfig(seeds=(0,), epochs=2, probe=False, heads=("laya",)), out_dir=tmp_path / "h")
    summary = json.loads((tmp_path / "h" / "summary.json").read_text())
    said = [w for w in summary["heads"][0]["warnings"] if "repeat an earlier test row" in w]
    assert len(said) == 1 and said[0].startswith("3 of 30 test rows (10%)") and "27 distinct inputs" in said[0]
    assert summary["quality"]["test_rows_repeated"]["distinct"] == 27

    from laya_inspect.training.overlap import repeated_rows

    with FeatureStore(cache) as store:
        for in_memory in (True, False):
            found = repeated_rows(CacheRows(store, "test", CPU, in_memory))
            assert found is not None
            assert (found["rows"], found["of"], found["distinct"]) == (3, 30, 27)
            assert [(e["row"], e["first_row"]) for e in found["examples"]] == [(5, 2), (9, 2), (11, 4)]
        assert repeated_rows(CacheRows(store, "train", CPU, True)) is None  # the training rows are distinct
