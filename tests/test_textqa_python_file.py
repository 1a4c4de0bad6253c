"""python:path/to/file.py:factory: a model defined in a file named by its path (not only a module on
sys.path), run under a name of its own; the file's sha256 is part of the cache's weights_sha256, so an
interrupted extraction over an edited file is refused as one over a changed checkpoint is."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch
from helpers import digits_test_config, stopped_after_first_batch

from laya_inspect import extract_features
from laya_inspect.errors import CacheError, InputError, NotFoundError
from laya_inspect.models import load_model, sha256_file
from laya_inspect.models.weights import sha256_files

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "digits_convnet.py"


def _net(folder: Path, name: str = "mynet.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURE, folder / name)
    return folder / name


def test_a_file_path_loads_its_factory_and_records_the_file_digest(tmp_path):
    """QA: python:/path/mynet.py:build was refused ("python: takes a module name, not a file path")."""
    file = _net(tmp_path / "models")
    loaded = load_model(f"python:{file}:build", random_init=True)
    assert loaded.num_classes == 10 and loaded.input_spec.channels == 1 and loaded.input_spec.size == 8
    assert loaded.weights_sha256 == sha256_file(file)
    out = loaded.module(torch.zeros(2, 1, 8, 8))
    assert out.shape == (2, 10)


def test_a_relative_path_is_taken_from_the_current_folder_and_its_siblings_import(tmp_path, monkeypatch):
    """The file's folder is searched first for what it imports (a helper beside it), and sys.path is
    restored after; a user file named json.py never replaces the json module."""
    (tmp_path / "nets").mkdir()
    (tmp_path / "nets" / "blocks_laya_qa.py").write_text("from torch import nn\nWIDTH = 3\n")
    (tmp_path / "nets" / "json.py").write_text(
        "from torch import nn\nfrom blocks_laya_qa import WIDTH\ndef build():\n    return nn.Linear(WIDTH, 2)\n"
    )
    monkeypatch.chdir(tmp_path)
    before = list(sys.path)
    loaded = load_model("python:nets/json.py:build", random_init=True)
    assert loaded.num_classes == 2 and loaded.module.in_features == 3
    assert sys.path == before and sys.modules["json"] is json


def test_weights_and_file_both_count_in_the_digest(tmp_path):
    file = _net(tmp_path)
    torch.manual_seed(0)
    model = load_model(f"python:{file}:build", random_init=True).module
    torch.save(model.state_dict(), tmp_path / "w.pt")
    loaded = load_model(f"python:{file}:build", weights=str(tmp_path / "w.pt"))
    assert loaded.weights_sha256 == sha256_files([file, tmp_path / "w.pt"])
    assert loaded.weights_sha256 not in (sha256_file(file), sha256_file(tmp_path / "w.pt"))


def test_a_missing_file_a_folder_and_a_failing_file_are_refused_by_name(tmp_path):
    with pytest.raises(NotFoundError, match=r"no Python file .*absent\.py"):
        load_model(f"python:{tmp_path / 'absent.py'}:build", random_init=True)
    (tmp_path / "d.py").mkdir()
    with pytest.raises(InputError, match=r"is a folder; give the \.py file"):
        load_model(f"python:{tmp_path / 'd.py'}:build", random_init=True)
    (tmp_path / "bad.py").write_text("x = 1\nraise ValueError('no model here')\n")
    with pytest.raises(InputError, match=r"importing .*bad\.py.* failed at .*bad\.py:2: .*no model here"):
        load_model(f"python:{tmp_path / 'bad.py'}:build", random_init=True)
    file = _net(tmp_path / "ok")
    with pytest.raises(NotFoundError, match=r"has no factory 'buld'.*build"):
        load_model(f"python:{file}:buld", random_init=True)


def test_a_resume_over_an_edited_file_is_refused_as_over_a_changed_checkpoint(tmp_path):
    """Provenance: the code builds the network; an edit between an interrupted extract and its resume
    would join rows of two networks in one cache. The original bytes put back resume it."""
    file = _net(tmp_path)
    original = file.read_bytes()
    config = digits_test_config(f"python:{file}:build", tmp_path / "f.h5")
    stopped_after_first_batch(config)
    file.write_bytes(original.replace(b"nn.Conv2d(1, 8, 3, padding=1)", b"nn.Conv2d(1, 8, 3, padding=1, bias=False)"))
    with pytest.raises(CacheError, match=r"other weights"):
        extract_features(config)
    file.write_bytes(original)
    assert extract_features(config).resumed_from.get("test")
