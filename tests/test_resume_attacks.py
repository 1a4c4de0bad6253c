"""An extraction stopped after its first rows, then run again with the same command over files that
changed behind it: a refusal that says what to do. Rerunning "the original command" is what the user
just did, so the refusal names what would let it resume (the same bytes, the same files) instead.
Real data: CIFAR-10 JPEGs from ../shared/data (skipped where absent) through a zoo CNN."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from helpers import stopped_after_first_batch

from laya_inspect import ExtractConfig, extract_features
from laya_inspect.cache.partial import partial_path
from laya_inspect.errors import CacheError


def _config(cifar_cnn: Path, data: Path, out: Path, weights: Path) -> ExtractConfig:
    return ExtractConfig(
        model="zoo:cnn",
        weights=str(weights),
        data=f"imagefolder:{data}",
        out=str(out),
        splits=("test",),
        batch_size=4,
        device="cpu",
    )


def _copy(cifar_cnn: Path, tmp_path: Path) -> tuple[Path, Path]:
    data, weights = tmp_path / "data", tmp_path / "w.pt"
    shutil.copytree(cifar_cnn / "source", data)
    shutil.copy(cifar_cnn / "cnn.pt", weights)
    return data, weights


def test_a_touched_data_file_resumes_and_one_of_other_bytes_is_refused(cifar_cnn, tmp_path):
    """A file only touched (the same bytes, another time) is the same data: its sha256, recorded at the
    start, lets the run resume into the rows an uninterrupted run gives. One of the same size with other
    bytes is refused, and so is a touched file where the record predates the bytes' sha256."""
    data, weights = _copy(cifar_cnn, tmp_path)
    whole = _config(cifar_cnn, data, tmp_path / "whole.h5", weights)
    extract_features(whole)
    config = _config(cifar_cnn, data, tmp_path / "c.h5", weights)
    stopped_after_first_batch(config)
    one = sorted((data / "airplane").iterdir())[-1]
    kept, original = one.stat(), one.read_bytes()
    os.utime(one, ns=(kept.st_atime_ns, kept.st_mtime_ns + 10**9))  # the same bytes, another time
    with h5py.File(partial_path(config.out), "r") as f:
        content = f.attrs["data_content"]
    with h5py.File(partial_path(config.out), "a") as f:  # as an extraction started before the record
        del f.attrs["data_content"]
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = str(e.value)
    assert "other data" in said and "did not record the files' bytes" in said and "--overwrite" in said, said
    assert "rerun the original command" not in said, said  # that is the command refused here
    with h5py.File(partial_path(config.out), "a") as f:
        f.attrs["data_content"] = content
    one.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))  # the same size, other bytes
    with pytest.raises(CacheError, match="other data"):
        extract_features(config)
    assert partial_path(config.out).exists()  # a refusal leaves the rows as they were
    one.write_bytes(original)  # the same bytes again, at a new time: resumes
    result = extract_features(config)
    assert 0 < result.resumed_from["test"] < result.rows["test"]
    with h5py.File(whole.out, "r") as a, h5py.File(config.out, "r") as b:
        for name in a["test"]:
            if isinstance(a["test"][name], h5py.Dataset):
                assert np.array_equal(a["test"][name][...], b["test"][name][...]), name


def test_files_over_the_content_cap_are_not_hashed_and_a_touched_one_is_refused_saying_so(
    cifar_cnn, tmp_path, monkeypatch
):
    """Review: every extraction read and hashed every data file before it started (ImageNet: its whole
    size read twice). Above CONTENT_CAP bytes of files none is hashed (data_content ""), and a resume tells
    the files apart by sizes and times alone: a touched one is refused, saying why."""
    from laya_inspect.cache import partial

    data, weights = _copy(cifar_cnn, tmp_path)
    cap = sum(p.stat().st_size for p in data.rglob("*") if p.is_file()) - 1
    monkeypatch.setattr(partial, "CONTENT_CAP", cap)
    config = _config(cifar_cnn, data, tmp_path / "c.h5", weights)
    stopped_after_first_batch(config)
    with h5py.File(partial_path(config.out), "r") as f:
        assert f.attrs["data_content"] == ""
    one = sorted((data / "airplane").iterdir())[-1]
    kept = one.stat()
    os.utime(one, ns=(kept.st_atime_ns, kept.st_mtime_ns + 10**9))  # the same bytes, another time
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = " ".join(str(e.value).split())
    assert "other data" in said and f"more than {cap:,} bytes of files" in said and "--overwrite" in said, said
    os.utime(one, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    result = extract_features(config)
    assert 0 < result.resumed_from["test"] < result.rows["test"]


def test_a_checkpoint_saved_again_with_the_same_values_is_refused_naming_its_bytes(cifar_cnn, tmp_path):
    data, weights = _copy(cifar_cnn, tmp_path)
    config = _config(cifar_cnn, data, tmp_path / "c.h5", weights)
    stopped_after_first_batch(config)
    saved = torch.load(weights, weights_only=True)
    saved["state_dict"] = dict(reversed(list(saved["state_dict"].items())))  # same values, other bytes
    torch.save(saved, weights)
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = str(e.value)
    assert "other weights" in said and "bytes" in said and "--overwrite" in said, said
    assert "rerun the original command" not in said, said
    shutil.copy(cifar_cnn / "cnn.pt", weights)  # the very bytes it was started from: resumes
    assert extract_features(config).resumed_from.get("test")


def test_a_resume_with_normalize_none_names_the_option_it_changed(cifar_cnn, tmp_path):
    """--normalize left out is recorded as not given, --normalize none as the word "none": both were
    shown as "none", so the refusal named no option."""
    data, weights = _copy(cifar_cnn, tmp_path)
    config = _config(cifar_cnn, data, tmp_path / "c.h5", weights)
    stopped_after_first_batch(config)
    with pytest.raises(CacheError, match=r"started by a different command \(normalize: not given → none\)"):
        extract_features(dataclasses.replace(config, normalize="none"))
