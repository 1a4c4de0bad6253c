"""The cache fingerprint a head is checked against: where a setting came from (transforms.normalize's
from/why) does not change it in a cache written now (fingerprint_version 3), a cache written before
keeps the fingerprint it had and its heads, and a head refused on another cache is told which part
of the fingerprint differs."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from helpers import write_cache

from laya_inspect.cache.store import FeatureStore
from laya_inspect.errors import CacheError
from laya_inspect.head_dir import CONFIG, cache_identity, load_head, other_cache, save_head
from laya_inspect.heads import build_head

UNKNOWN = {
    "applied": False,
    "mean": None,
    "std": None,
    "from": "unknown",
    "why": "none: the model states no mean/std and --normalize was not given",
}
OPTION = {"applied": False, "mean": None, "std": None, "from": "option", "why": "none: --normalize none"}
MEAN_STD = {"applied": True, "mean": [0.5], "std": [0.25], "from": "given"}


def _cache(path: Path, normalize: dict | None = None, **kw) -> Path:
    rng = np.random.default_rng(0)
    feats = [rng.normal(size=(24, d)).astype(np.float32) for d in (5, 3)]
    y = np.arange(24) % 3
    transforms = {"kind": "image", "scale": "uint8/255", "normalize": normalize or UNKNOWN}
    return write_cache(path, {"train": (feats, y)}, extra_attrs={"transforms": transforms}, **kw)


def _as_version(path: Path, version: int | None) -> Path:
    """The cache as an older laya-inspect wrote it: fingerprint_version 2 (or none), no attributes' digest
    (it would name the edit as damage)."""
    with h5py.File(path, "a") as f:
        f.attrs.pop("attrs_sha256", None)
        if version is None:
            f.attrs.pop("fingerprint_version", None)
        else:
            f.attrs["fingerprint_version"] = version
    return path


def _head(path: Path, cache: Path, *, old: bool = False) -> Path:
    """A head saved on ``cache``; ``old``: its config as heads were written before they recorded the
    fingerprint's inputs."""
    torch.manual_seed(0)
    with FeatureStore(cache) as store:
        head = save_head(path, build_head("last", store.widths, store.num_classes), meta=cache_identity(store))
    if old:
        config = json.loads((head / CONFIG).read_text())
        config.pop("cache_fingerprint_inputs", None)
        (head / CONFIG).write_text(json.dumps(config))
    return head


def _refusal(head: Path, cache: Path) -> str:
    with FeatureStore(cache) as store:
        with pytest.raises(CacheError) as e:
            load_head(head, store=store)
    return str(e.value)


def test_where_a_setting_came_from_leaves_the_fingerprint_of_a_new_cache_alone(tmp_path):
    a = _cache(tmp_path / "unknown.h5", UNKNOWN)
    b = _cache(tmp_path / "option.h5", OPTION)
    c = _cache(tmp_path / "mean_std.h5", MEAN_STD)
    with FeatureStore(a) as sa, FeatureStore(b) as sb, FeatureStore(c) as sc:
        assert sa.fingerprint == sb.fingerprint
        assert sa.attrs["fingerprint_version"] == 3
        assert sa.attrs["transforms"]["normalize"]["from"] == "unknown"  # still recorded, only not hashed
        assert sa.fingerprint != sc.fingerprint  # other rows
    head = _head(tmp_path / "h", a)
    with FeatureStore(b) as sb:
        assert load_head(head, store=sb)[1]["cache_fingerprint"] == sb.fingerprint


@pytest.mark.parametrize("version", [None, 2])
def test_a_cache_written_before_keeps_its_fingerprint_and_its_heads(tmp_path, version):
    """The digits below are what the code before fingerprint_version 3 gives these caches (run from a
    checkout of it): such caches and the heads fitted on them keep matching."""
    old = {
        name: _as_version(_cache(tmp_path / f"{name}.h5", normalize), version)
        for name, normalize in [("unknown", UNKNOWN), ("option", OPTION)]
    }
    with FeatureStore(old["unknown"]) as su, FeatureStore(old["option"]) as so:
        assert su.fingerprint == "3c3e8420476eb419"
        assert so.fingerprint == "f739f3ed1db1f9d6"
    for name, path in old.items():
        for is_old in (True, False):
            head = _head(tmp_path / f"h-{name}-{is_old}", path, old=is_old)
            with FeatureStore(path) as store:
                assert other_cache(head, json.loads((head / CONFIG).read_text()), store) is None
                load_head(head, store=store)


def test_a_head_is_told_which_part_of_the_fingerprint_differs(tmp_path):
    a = _cache(tmp_path / "a.h5")
    head = _head(tmp_path / "h", a)
    a.unlink()  # the head's record alone says it
    line = _refusal(head, _cache(tmp_path / "other_data.h5", data_spec="other data"))
    assert "data_spec: test (head's cache) vs other data (this cache)" in line
    assert "different backbone" not in line
    line = _refusal(head, _cache(tmp_path / "mean_std.h5", MEAN_STD))
    assert "transforms.normalize.applied: false (head's cache) vs true (this cache)" in line
    line = _refusal(head, _cache(tmp_path / "layers.h5", layer_names=["x", "y"]))
    assert 'layer_names: ["blocks.0", "blocks.1"] (head\'s cache) vs ["x", "y"] (this cache)' in line
    # what the head records hashes to its fingerprint
    from laya_inspect.cache.fingerprint import fingerprint_of  # here: the code before had no such module

    config = json.loads((head / CONFIG).read_text())
    assert fingerprint_of(config["cache_fingerprint_inputs"]) == config["cache_fingerprint"]


def test_an_old_head_on_an_old_cache_is_told_it_is_only_provenance(tmp_path, monkeypatch):
    """The QA case: a head fitted on a cache extracted without --normalize, and the same rows extracted
    with --normalize none. Its cache, found where the head says, names the part."""
    monkeypatch.chdir(tmp_path)
    old = _as_version(_cache(Path("cnn.h5"), UNKNOWN), 2)
    head = _head(tmp_path / "h", old, old=True)
    line = _refusal(head, _cache(tmp_path / "normnone.h5", OPTION))
    assert "only where a setting came from differs" in line
    assert "transforms.normalize.from: unknown (head's cache) vs option (this cache)" in line


def test_an_old_head_whose_cache_is_gone_names_what_it_recorded_or_the_way_to_check(tmp_path):
    a = _cache(tmp_path / "a.h5")
    head = _head(tmp_path / "h", a, old=True)
    a.unlink()
    line = _refusal(head, _cache(tmp_path / "other_model.h5", model_spec="test:cnn"))
    assert "model_spec: test:mlp (head's cache) vs test:cnn (this cache)" in line
    line = _refusal(head, _cache(tmp_path / "other_data.h5", data_spec="other data"))
    assert "layer_pooling, transforms, data_spec, widths or compute_dtype (--amp) differs" in line
    assert "fingerprint_inputs" in line


def test_a_head_of_an_older_cache_loads_on_a_re_extraction_of_the_same_cache(tmp_path):
    """Review: version 3 leaves provenance out of the fingerprint, so an identical re-extraction got a
    new one, and every head fitted before was refused on it ("fit the head again")."""
    for version in (None, 2):
        old = _as_version(_cache(tmp_path / f"old{version}.h5"), version)
        head = _head(tmp_path / f"h{version}", old, old=True)
        again = _cache(tmp_path / f"again{version}.h5")  # the same inputs, written now (version 3)
        with FeatureStore(old) as a, FeatureStore(again) as b:
            assert a.fingerprint != b.fingerprint and a.fingerprint in b.fingerprints
            load_head(head, store=b)
            assert other_cache(head, json.loads((head / CONFIG).read_text()), b) is None
    with FeatureStore(_cache(tmp_path / "other.h5", data_spec="other data")) as c:  # other rows: refused
        assert _refusal(head, c.path).count("data_spec") == 1


def test_a_head_loads_on_its_cache_extracted_with_another_split_as_well(tmp_path):
    """Review: a cache re-extracted with one more split (--split train,val,test) has the head's
    fingerprint (splits are left out of it); the head was refused, config.json blamed, even with force."""
    rng = np.random.default_rng(0)
    feats = [rng.normal(size=(24, d)).astype(np.float32) for d in (5, 3)]
    y = np.arange(24) % 3
    a = write_cache(tmp_path / "a.h5", {"train": (feats, y), "test": (feats, y)})
    b = write_cache(tmp_path / "b.h5", {"train": (feats, y), "val": (feats, y), "test": (feats, y)})
    head = _head(tmp_path / "h", a)
    with FeatureStore(b) as store:
        assert store.fingerprint == FeatureStore(a).fingerprint
        load_head(head, store=store)
