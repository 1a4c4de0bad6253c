"""A torchrun shard refused on resume says what resumes it, as a one-process resume does
(cache/partial.py): the same checkpoint bytes, the same data files, or the original command."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import h5py
import pytest

from laya_inspect.cache.partial import RERUN_REMEDY, WEIGHTS_REMEDY, data_remedy
from laya_inspect.cache.schema import encode_attr
from laya_inspect.cache.shards import _check_shard, _plan
from laya_inspect.errors import CacheError

STARTED: dict[str, Any] = {
    "command": "laya-inspect extract --model resnet18 --data digits --out c.h5",
    "shard": {"rank": 1, "world_size": 2, "rows": {"test": [64, 128]}},
    "weights_sha256": "a" * 64,
    "data_fingerprint": "f" * 16,
    "layer_pooling": {"layer4": "mean"},
    "transforms": {"kind": "image", "size": [8, 8]},
}


def _shard(path: Path) -> Path:
    """A shard file as rank 1 left it, with the attributes a resume checks."""
    with h5py.File(path, "w") as f:
        for key, value in STARTED.items():
            f.attrs[key] = encode_attr(key, value)
    return path


@pytest.mark.parametrize(
    "changed, remedy",
    [
        ({"weights_sha256": "b" * 64}, WEIGHTS_REMEDY),
        ({"data_fingerprint": "e" * 16}, data_remedy()),
        ({"data_fingerprint": "e" * 16, "weights_sha256": "b" * 64}, WEIGHTS_REMEDY),  # the weights first, as there
        ({"command": STARTED["command"] + " --limit 9", "weights_sha256": "b" * 64}, None),  # another command
    ],
)
def test_a_shard_refused_for_changed_files_says_what_resumes_it(
    tmp_path: Path, changed: dict[str, Any], remedy: str | None
) -> None:
    """It said "rerun the original command" where the checkpoint or the data had changed under that very command."""
    path = _shard(tmp_path / "rank-00001-of-00002.h5.partial")
    assert _check_shard(path, dict(STARTED)) == {}  # unchanged: resumed
    with pytest.raises(CacheError) as e:
        _check_shard(path, {**STARTED, **changed})
    said = str(e.value)
    if remedy is None:  # rerunning the command that started it is what resumes it
        assert said.endswith(RERUN_REMEDY), said
    else:
        assert said.endswith(remedy) and "rerun the original command" not in said, said


def _prepared(rows: int, **more: int) -> SimpleNamespace:
    """What planning the shards reads of a prepared run: each split's row count, the batch size."""
    splits = {"test": SimpleNamespace(n=rows), **{s: SimpleNamespace(n=n) for s, n in more.items()}}
    return SimpleNamespace(data=SimpleNamespace(splits=splits), batch_size=16)


def test_shards_started_on_other_rows_say_what_resumes_them(tmp_path: Path) -> None:
    """Other row counts come from other data or another --limit, which the original command, rerun, does
    not undo: the refusal says what does, as a one-process resume on changed data does."""
    config, world = SimpleNamespace(out=str(tmp_path / "c.h5"), overwrite=False, limit=None), SimpleNamespace(size=2)
    started, _ = _plan(config, world, _prepared(128))
    assert _plan(config, world, _prepared(128))[0] == started  # the same rows: resumed
    with pytest.raises(CacheError) as e:
        _plan(config, world, _prepared(100))
    said = str(e.value)
    assert "started on other rows ({'test': 128}, now {'test': 100})" in said, said
    assert said.endswith(data_remedy()) and RERUN_REMEDY not in said, said


def test_shards_started_with_another_split_or_limit_name_it(tmp_path: Path) -> None:
    """Audit: a resume with another --split, or another --limit, was told "the data or --limit changed"
    and to put the data files back. The manifest records --limit; the splits it names tell a changed
    --split; either is named with the flag that resumes it."""
    world = SimpleNamespace(size=2)
    config = SimpleNamespace(out=str(tmp_path / "c.h5"), overwrite=False, limit=100)
    _plan(config, world, _prepared(100, train=100))
    with pytest.raises(CacheError, match=r"--split changed \(started with --split test,train, now test\); rerun it "):
        _plan(config, world, _prepared(100))
    with pytest.raises(
        CacheError, match=r"--limit changed \(started with --limit 100, now 50\); rerun it with --limit"
    ):
        _plan(SimpleNamespace(**{**vars(config), "limit": 50}), world, _prepared(50, train=50))
    with pytest.raises(CacheError, match=r": the data changed; a data file's bytes"):
        _plan(config, world, _prepared(90, train=100))  # the same --limit: the data gave fewer rows


def test_a_shard_started_with_another_seed_names_the_flag(tmp_path: Path) -> None:
    """Audit: a torchrun resume with another --seed said only "was written with another command,
    data_fingerprint than this run's", where a one-process resume names "seed: 0 → 3"."""
    options = {"model": "resnet18", "data": "digits", "seed": 0}
    path = _shard(tmp_path / "rank-00001-of-00002.h5.partial")
    with h5py.File(path, "a") as f:
        f.attrs["command"] = encode_attr("command", options)
    changed = {"command": {**options, "seed": 3}, "data_fingerprint": "e" * 16}
    with pytest.raises(CacheError) as e:
        _check_shard(path, {**STARTED, **changed})
    said = str(e.value)
    assert f"{path} was started by a different command (seed: 0 → 3); " in said, said
    assert said.endswith(RERUN_REMEDY), said
