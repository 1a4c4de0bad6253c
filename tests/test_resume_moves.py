"""Resume attacked as a user would: the data folder with an image added, removed or renamed; other
--layers; the interrupted cache moved to another folder; the run resumed from another working folder.
Each either resumes into the very rows an uninterrupted run gives or is refused naming what changed.
Real data: CIFAR-10 JPEGs from ../shared/data (skipped where absent) through a zoo CNN."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers import stopped_after_first_batch

from laya_inspect import ExtractConfig, extract_features
from laya_inspect.cache.partial import partial_path
from laya_inspect.errors import CacheError


def _setup(cifar_cnn: Path, tmp_path: Path) -> ExtractConfig:
    data, weights = tmp_path / "data", tmp_path / "w.pt"
    shutil.copytree(cifar_cnn / "source", data)
    shutil.copy(cifar_cnn / "cnn.pt", weights)
    return ExtractConfig(
        model="zoo:cnn",
        weights=str(weights),
        data=f"imagefolder:{data}",
        out=str(tmp_path / "c.h5"),
        splits=("test",),
        batch_size=4,
        device="cpu",
    )


def _same_rows(a: str | Path, b: str | Path) -> None:
    with h5py.File(a, "r") as x, h5py.File(b, "r") as y:
        names = [n for n in x["test"] if isinstance(x["test"][n], h5py.Dataset)]
        assert names and names == [n for n in y["test"] if isinstance(y["test"][n], h5py.Dataset)]
        for n in names:
            assert np.array_equal(x["test"][n][...], y["test"][n][...]), n


@pytest.mark.parametrize("change", ["added", "removed", "renamed"])
def test_a_folder_with_an_image_added_removed_or_renamed_is_refused(cifar_cnn, tmp_path, change):
    config = _setup(cifar_cnn, tmp_path)
    stopped_after_first_batch(config)
    folder = tmp_path / "data" / "automobile"
    one = sorted(folder.iterdir())[-1]
    if change == "added":
        shutil.copy(one, folder / "zz-extra.jpg")
    elif change == "removed":
        one.unlink()
    else:
        one.rename(folder / "zz-renamed.jpg")
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = str(e.value)
    assert "other" in said and "--overwrite" in said, said


def test_other_layers_are_refused_naming_them(cifar_cnn, tmp_path):
    config = _setup(cifar_cnn, tmp_path)
    stopped_after_first_batch(config)
    with pytest.raises(CacheError, match=r"different command \(layers: "):
        extract_features(dataclasses.replace(config, layers=("stages.0",)))


def test_a_moved_interrupted_cache_and_another_working_folder_resume_into_the_same_rows(
    cifar_cnn, tmp_path, monkeypatch
):
    config = _setup(cifar_cnn, tmp_path)
    whole = dataclasses.replace(config, out=str(tmp_path / "whole.h5"))
    extract_features(whole)
    stopped_after_first_batch(config)
    moved = tmp_path / "elsewhere" / "c.h5"
    moved.parent.mkdir()
    shutil.move(partial_path(config.out), partial_path(moved))
    monkeypatch.chdir(moved.parent)
    result = extract_features(dataclasses.replace(config, out=str(moved)))
    assert 0 < result.resumed_from["test"] < result.rows["test"]
    _same_rows(whole.out, moved)
