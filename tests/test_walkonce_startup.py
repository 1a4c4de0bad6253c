"""What extract does before its first row: an image folder is listed once, and both records of its files
(the sizes' and times', data_fingerprint; the bytes', data_content) are of that one listing; the refusal of
a resume on changed data names the hashing cap from the constant itself; and a torchrun shard refused for
a digest that cannot be compared says so as a one-process resume does. Real data: CIFAR-10 JPEGs from
../shared/data (skipped where absent) through a zoo CNN."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import h5py
import pytest
import torch

from laya_inspect import ExtractConfig
from laya_inspect.cache import partial, rows
from laya_inspect.cache.schema import encode_attr
from laya_inspect.cache.shards import _check_shard
from laya_inspect.errors import CacheError


def _config(cifar_cnn: Path, folder: Path, tmp_path: Path) -> ExtractConfig:
    return ExtractConfig(
        model="zoo:cnn",
        weights=str(cifar_cnn / "cnn.pt"),
        data=f"imagefolder:{folder}",
        out=str(tmp_path / "c.h5"),
        splits=("test",),
        batch_size=4,
        device="cpu",
    )


def _records(config: ExtractConfig) -> tuple[str, str]:
    attrs = rows.prepare(config, torch.device("cpu")).attrs
    return attrs["data_fingerprint"], attrs["data_content"]


def test_each_image_file_is_looked_at_once_for_the_records(cifar_cnn, tmp_path, monkeypatch):
    """Review: before the first row, every file of an image folder was looked at three times besides
    its bytes (a stat and an is_file to sum the sizes against the hashing cap, another stat for the
    sizes' and times' record), on top of the loader's own listing."""
    folder = tmp_path / "cifar"
    shutil.copytree(cifar_cnn / "source", folder)
    images = sorted(str(p) for p in folder.rglob("*") if p.is_file())
    seen: list[str] = []
    stat, load = os.stat, rows.load_data

    def counted(path: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(path))
        return stat(path, *args, **kwargs)

    def loaded_uncounted(*args: Any, **kwargs: Any) -> Any:  # the loader's own listing is not the records'
        monkeypatch.setattr(os, "stat", stat)
        try:
            return load(*args, **kwargs)
        finally:
            monkeypatch.setattr(os, "stat", counted)

    monkeypatch.setattr(rows, "load_data", loaded_uncounted)
    monkeypatch.setattr(os, "stat", counted)
    fingerprint, content = _records(_config(cifar_cnn, folder, tmp_path))
    monkeypatch.undo()
    assert sorted(p for p in seen if p.startswith(str(folder) + os.sep)) == images
    assert fingerprint and content and fingerprint != content


def test_both_records_are_of_one_look_at_the_files_when_one_changes_meanwhile(cifar_cnn, tmp_path, monkeypatch):
    """A file touched while the bytes were being hashed (a sync, a copy in progress) made the sizes' and
    times' record of another folder than the bytes' record: two records that no resume could match
    together."""
    folder = tmp_path / "cifar"
    shutil.copytree(cifar_cnn / "source", folder)
    config = _config(cifar_cnn, folder, tmp_path)
    before = _records(config)
    last = sorted((folder / "automobile").iterdir())[-1]
    kept = last.stat()
    hashed = rows.sha256_file

    def touching_meanwhile(path: Path) -> str:
        os.utime(last, ns=(kept.st_atime_ns, kept.st_mtime_ns + 10**9))
        return hashed(path)

    monkeypatch.setattr(rows, "sha256_file", touching_meanwhile)
    during = _records(config)
    monkeypatch.undo()
    assert last.stat().st_mtime_ns != kept.st_mtime_ns  # it was touched while the records were made
    assert during == before  # both of the files as they were looked at, before the touch


@pytest.mark.parametrize("cap, said", [(1 << 30, "1 GiB"), (512 << 20, "512 MiB"), (1000, "1,000 bytes")])
def test_the_refusal_of_changed_data_names_the_cap_the_constant_holds(monkeypatch, cap, said):
    """It said "more than 1 GiB" as a literal: a cap changed in the code would leave the message saying
    the old one."""
    monkeypatch.setattr(partial, "CONTENT_CAP", cap)
    old = {
        "command": {"model": "zoo:cnn", "data": "imagefolder:cifar"},
        "layer_names": ["conv1"],
        "weights_sha256": "a" * 64,
        "data_fingerprint": "f" * 16,
        "layer_pooling": ["mean"],
        "transforms": {},
        "model_code": {},
        "model_file": "",
    }
    problem, remedy = partial.resume_problem(old, {**old, "data_fingerprint": "e" * 16}, ["conv1"]) or ("", "")
    assert "other data" in problem and f"more than {said} of files" in remedy, remedy


def test_a_shard_whose_digest_covered_the_model_file_alone_says_the_digests_cannot_be_compared(tmp_path):
    """A torchrun resume of shards started by a laya-inspect whose digest of python:FILE.py covered that
    file alone gave the remedy of a changed checkpoint ("put that file back"), which cannot help; one
    process said the two digests cannot be compared and to start again."""
    net = tmp_path / "net.py"
    started: dict[str, Any] = {
        "command": {"model": f"python:{net}:build", "weights": None, "data": "digits"},
        "shard": {"rank": 0, "world_size": 2, "rows": {"test": [0, 64]}},
        "layer_names": ["conv1"],
        "weights_sha256": "a" * 64,
        "data_fingerprint": "f" * 16,
        "layer_pooling": ["mean"],
        "transforms": {"kind": "image"},
        "model_file": str(net),
    }
    path = tmp_path / "rank-00000-of-00002.h5.partial"
    with h5py.File(path, "w") as f:
        for key, value in started.items():
            f.attrs[key] = encode_attr(key, value)
    now = {**started, "weights_sha256": "b" * 64, "model_code": {"net.py": "c" * 64, "blocks.py": "d" * 64}}
    problem, remedy = partial.resume_problem({**started, "model_code": ""}, now, ["conv1"]) or ("", "")
    assert "cannot be compared" in problem and remedy == "pass --overwrite to start again", (problem, remedy)
    with pytest.raises(CacheError) as e:
        _check_shard(path, now)
    assert str(e.value) == f"{path} {problem}; {remedy}"
