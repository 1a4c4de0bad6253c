"""An extraction stopped after its first rows, then run again with the same command over files that
changed behind it: a refusal that says what to do. Rerunning "the original command" is what the user
just did, so the refusal names what would let it resume (the same bytes, the same files) instead.
Real data: CIFAR-10 JPEGs from ../shared/data (skipped where absent) through a zoo CNN."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tarfile
from pathlib import Path

import pytest
import torch

from laya_inspect import ExtractConfig, extract_features
from laya_inspect.cache.partial import partial_path, rows_on_disk
from laya_inspect.errors import CacheError

TARBALL = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "cifar10-jpeg.tar.gz"
PER_CLASS = 12


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A folder of 24 CIFAR-10 JPEGs in two classes, and a zoo CNN checkpoint."""
    from laya_inspect.models.zoo import build_zoo, save_zoo_checkpoint

    if not TARBALL.is_file():
        pytest.skip(f"{TARBALL} is absent (see ../shared/data/README.md)")
    d = tmp_path_factory.mktemp("work")
    taken: dict[str, int] = {}
    with tarfile.open(TARBALL) as tar:  # the first classes of train/ come first: stop once both are read
        for member in tar:
            parts = member.name.split("/")
            if len(parts) == 3 and parts[0] == "train" and member.isfile() and parts[1] in ("airplane", "automobile"):
                if taken.get(parts[1], 0) < PER_CLASS:
                    target = d / "source" / parts[1] / parts[2]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(tar.extractfile(member).read())
                    taken[parts[1]] = taken.get(parts[1], 0) + 1
            if len(taken) == 2 and min(taken.values()) == PER_CLASS:
                break
    torch.manual_seed(0)
    save_zoo_checkpoint(d / "cnn.pt", build_zoo("cnn", in_shape=(3, 32, 32), num_classes=2), {})
    return d


def _config(work: Path, data: Path, out: Path, weights: Path) -> ExtractConfig:
    return ExtractConfig(
        model="zoo:cnn",
        weights=str(weights),
        data=f"imagefolder:{data}",
        out=str(out),
        splits=("test",),
        batch_size=4,
        device="cpu",
    )


def _stopped(config: ExtractConfig) -> None:
    """Run ``config`` and stop it after its first batch, as Ctrl-C would."""

    def stop(event):
        if event.get("event") == "batch":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        extract_features(config, progress=stop)
    assert not Path(config.out).exists() and (rows_on_disk(config.out) or {}).get("test")


def _copy(work: Path, tmp_path: Path) -> tuple[Path, Path]:
    data, weights = tmp_path / "data", tmp_path / "w.pt"
    shutil.copytree(work / "source", data)
    shutil.copy(work / "cnn.pt", weights)
    return data, weights


def test_a_touched_data_file_is_refused_naming_modification_times_and_the_original_files_resume(work, tmp_path):
    data, weights = _copy(work, tmp_path)
    config = _config(work, data, tmp_path / "c.h5", weights)
    _stopped(config)
    one = next((data / "airplane").iterdir())
    kept = one.stat()
    os.utime(one, ns=(kept.st_atime_ns, kept.st_mtime_ns + 10**9))  # the same bytes, another time
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = str(e.value)
    assert "other data" in said and "modification times" in said and "--overwrite" in said, said
    assert "rerun the original command" not in said, said  # that is the command refused here
    assert partial_path(config.out).exists()  # a refusal leaves the rows as they were
    os.utime(one, ns=(kept.st_atime_ns, kept.st_mtime_ns))  # put back as it was: resumes
    result = extract_features(config)
    assert 0 < result.resumed_from["test"] < result.rows["test"]


def test_a_checkpoint_saved_again_with_the_same_values_is_refused_naming_its_bytes(work, tmp_path):
    data, weights = _copy(work, tmp_path)
    config = _config(work, data, tmp_path / "c.h5", weights)
    _stopped(config)
    saved = torch.load(weights, weights_only=True)
    saved["state_dict"] = dict(reversed(list(saved["state_dict"].items())))  # same values, other bytes
    torch.save(saved, weights)
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = str(e.value)
    assert "other weights" in said and "bytes" in said and "--overwrite" in said, said
    assert "rerun the original command" not in said, said
    shutil.copy(work / "cnn.pt", weights)  # the very bytes it was started from: resumes
    assert extract_features(config).resumed_from.get("test")


def test_a_resume_with_normalize_none_names_the_option_it_changed(work, tmp_path):
    """--normalize left out is recorded as not given, --normalize none as the word "none": both were
    shown as "none", so the refusal named no option."""
    data, weights = _copy(work, tmp_path)
    config = _config(work, data, tmp_path / "c.h5", weights)
    _stopped(config)
    with pytest.raises(CacheError, match=r"started by a different command \(normalize: not given → none\)"):
        extract_features(dataclasses.replace(config, normalize="none"))
