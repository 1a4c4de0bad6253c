"""A resume refused because the cache's weights_sha256 changed names the files that digest covers, from
the command the cache records: with python:FILE.py:factory that is the model's own file (its code), and
--weights where one was given; it said "the checkpoint behind --weights changed" where no --weights was
given. The cache records the file's absolute path (model_file) beside the path as typed (model_spec): a
relative path resumed from another folder reads another file of that name."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import h5py
import pytest
import torch
from helpers import stopped_after_first_batch

from laya_inspect import ExtractConfig, extract_features
from laya_inspect.cache.partial import WEIGHTS_REMEDY, partial_path
from laya_inspect.cache.schema import encode_attr
from laya_inspect.cache.shards import _check_shard
from laya_inspect.errors import CacheError
from laya_inspect.models import load_model

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "digits_convnet.py"
EDIT = (b"nn.ReLU()", b"nn.GELU()", 1)  # the same parameters: a checkpoint still fits


def _config(out: Path, weights: Path | None = None) -> ExtractConfig:
    return ExtractConfig(
        model="python:mynet.py:build",
        weights=None if weights is None else str(weights),
        random_init=weights is None,
        data="digits",
        out=str(out),
        splits=("test",),
        batch_size=16,
        device="cpu",
    )


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """Folder a holding mynet.py, folder b holding an edited mynet.py; the run starts in a."""
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
        shutil.copy(FIXTURE, folder / "mynet.py")
    (b / "mynet.py").write_bytes(FIXTURE.read_bytes().replace(*EDIT))
    monkeypatch.chdir(a)
    return a, b


def test_a_resume_from_another_folder_names_the_model_file_it_reads_not_weights(folders, tmp_path):
    a, b = folders
    config = _config(tmp_path / "c.h5")
    stopped_after_first_batch(config)
    os.chdir(b)  # the same command, from a folder whose mynet.py is another file
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = str(e.value)
    said = " ".join(said.split())
    assert f"it read the model file {a / 'mynet.py'}, and this run reads {b / 'mynet.py'} (rerun from" in said, said
    assert "--weights" not in said, said  # BASE: "the checkpoint behind --weights changed", with none given
    os.chdir(a)
    result = extract_features(config)
    assert result.resumed_from.get("test")
    with h5py.File(config.out, "r") as f:
        assert f.attrs["model_spec"] == "python:mynet.py:build"  # as typed
        assert f.attrs["model_file"] == str(a / "mynet.py")  # where it was read


def test_a_file_and_a_checkpoint_are_told_apart_by_the_recorded_code(folders, tmp_path):
    """One digest covers both; the sha256 of each code file, recorded, says the code changed, and that the
    checkpoint may have too. A cache recording no code files names either, as one digest cannot tell."""
    a, _ = folders
    torch.save(load_model("python:mynet.py:build", random_init=True).module.state_dict(), a / "w.pt")
    config = _config(tmp_path / "c.h5", weights=a / "w.pt")
    stopped_after_first_batch(config)
    (a / "mynet.py").write_bytes(FIXTURE.read_bytes().replace(*EDIT))
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = " ".join(str(e.value).split())
    assert (
        f"the model's code changed: mynet.py (edited) (the checkpoint behind --weights {a / 'w.pt'} may have too"
    ) in said, said
    (a / "mynet.py").write_bytes(FIXTURE.read_bytes())
    state = torch.load(a / "w.pt", weights_only=True)
    torch.save(dict(reversed(list(state.items()))), a / "w.pt")  # the same code, other checkpoint bytes
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = " ".join(str(e.value).split())
    assert "other weights (sha256 " in said and f": the checkpoint behind --weights {a / 'w.pt'} changed;" in said
    with h5py.File(partial_path(config.out), "a") as f:  # as written before the code files were recorded
        del f.attrs["model_code"]
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = " ".join(str(e.value).split())
    assert (
        f"the model file mynet.py (read from {a / 'mynet.py'}) or the checkpoint behind --weights {a / 'w.pt'} "
        "changed (the cache records one digest of both)"
    ) in said, said


def test_a_module_names_the_checkpoint_and_a_torchrun_shard_names_the_file(tmp_path, monkeypatch):
    """python:pkg.module:factory has no file in its digest: the checkpoint alone is named. A shard of a
    torchrun run refused for its weights said "was written with another weights_sha256 than this run's"."""
    monkeypatch.chdir(tmp_path)
    started = {
        "command": {"model": "python:nets/mynet.py:build", "weights": None, "seed": 0},
        "shard": {"rank": 1, "world_size": 2, "rows": {"test": [64, 128]}},
        "weights_sha256": "a" * 64,
        "data_fingerprint": "f" * 16,
        "layer_pooling": ["mean"],
        "transforms": {"kind": "image"},
    }
    path = tmp_path / "rank-00001-of-00002.h5.partial"
    with h5py.File(path, "w") as f:
        for key, value in started.items():
            f.attrs[key] = encode_attr(key, value)
    with pytest.raises(CacheError) as e:
        _check_shard(path, {**started, "weights_sha256": "b" * 64})
    said = str(e.value)
    where = tmp_path / "nets" / "mynet.py"
    assert f"{path} was started from other weights (sha256 aaaaaaaaaaaa…, now bbbbbbbbbbbb…): " in said, said
    assert f"the model file nets/mynet.py (read from {where}) changed; {WEIGHTS_REMEDY}" in said, said
    with h5py.File(path, "a") as f:  # started from another folder: the file it read is named beside this one's
        f.attrs["model_file"] = encode_attr("model_file", "/elsewhere/nets/mynet.py")
    with pytest.raises(CacheError) as e:
        _check_shard(path, {**started, "weights_sha256": "b" * 64, "model_file": str(where)})
    said = " ".join(str(e.value).split())
    assert f"it read the model file /elsewhere/nets/mynet.py, and this run reads {where} (rerun from" in said, said

    from laya_inspect.cache.partial import resume_problem

    module = {**started, "command": {"model": "python:nets.mynet:build", "weights": "w.pt"}, "layer_names": []}
    problem, _ = resume_problem(module, {**module, "weights_sha256": "b" * 64}, []) or ("", "")
    assert problem.endswith("the checkpoint behind --weights w.pt changed"), problem
