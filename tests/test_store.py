"""The HDF5 cache: exact round trip, partial reads, refusal of incomplete files, resume rules."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from helpers import write_cache

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cache.writer import FeatureWriter
from laya_inspect.errors import CacheError, NotFoundError


def _arrays(seed: int = 0, n: int = 37):
    rng = np.random.default_rng(seed)
    feats = [rng.normal(size=(n, d)).astype(np.float32) for d in (5, 3, 8)]
    return feats, rng.integers(0, 4, size=n)


def test_round_trip_is_exact(tmp_path):
    feats, y = _arrays()
    path = write_cache(tmp_path / "c.h5", {"train": (feats, y), "test": ([f[::-1] for f in feats], y[::-1])})
    with FeatureStore(path) as store:
        assert store.splits == ["test", "train"]
        assert store.widths == [5, 3, 8]
        assert store.layer_names == ["blocks.0", "blocks.1", "blocks.2"]
        for i, f in enumerate(feats):
            np.testing.assert_array_equal(store.layer("train", i), f)
        np.testing.assert_array_equal(store.layer("train", "blocks.2"), feats[2])
        np.testing.assert_array_equal(store.labels("train"), y)
        np.testing.assert_array_equal(store.index("train"), np.arange(len(y)))
        padded = store.padded("train")
        assert padded.shape == (37, 3, 8)
        np.testing.assert_array_equal(padded[:, 1, :3], feats[1])
        assert not padded[:, 1, 3:].any()


def test_row_selection_keeps_requested_order(tmp_path):
    feats, y = _arrays()
    path = write_cache(tmp_path / "c.h5", {"train": (feats, y)})
    rows = np.array([7, 2, 2, 30])
    with FeatureStore(path) as store:
        np.testing.assert_array_equal(store.layer("train", 0, rows), feats[0][rows])
        np.testing.assert_array_equal(store.labels("train", slice(3, 9)), y[3:9])
        chunks = list(store.iter_chunks("train", chunk_rows=10))
        assert [c[0] for c in chunks] == [slice(0, 10), slice(10, 20), slice(20, 30), slice(30, 37)]
        np.testing.assert_array_equal(np.concatenate([c[1][1] for c in chunks]), feats[1])


def test_unknown_layer_and_split_name_close_matches(tmp_path):
    feats, y = _arrays()
    path = write_cache(tmp_path / "c.h5", {"train": (feats, y)})
    with FeatureStore(path) as store:
        with pytest.raises(NotFoundError, match="did you mean 'blocks.1'"):
            store.layer("train", "block.1")
        with pytest.raises(NotFoundError, match="did you mean 'train'"):
            store.labels("trian")


def _writer(path, overwrite=False, command=None):
    return FeatureWriter(
        path,
        attrs={"layer_names": ["a", "b"], "command": command or {"x": 1}},
        split_sizes={"train": 10},
        widths=[2, 3],
        num_logits=None,
        overwrite=overwrite,
    )


def test_incomplete_file_is_refused_and_resumable(tmp_path):
    path = tmp_path / "c.h5"
    w = _writer(path)
    w.append("train", [np.ones((4, 2)), np.ones((4, 3))], np.zeros(4, int), np.arange(4))
    w.close()  # as if killed after the first batch
    assert not path.exists()  # only a complete cache gets the final name
    with pytest.raises(CacheError, match="interrupted .*train: 4/10 rows"):
        FeatureStore(path)
    with pytest.raises(CacheError, match="different command"):
        _writer(path, command={"x": 2})
    w = _writer(path)
    assert w.n_written("train") == 4
    w.append("train", [np.full((6, 2), 2.0), np.full((6, 3), 2.0)], np.ones(6, int), np.arange(4, 10))
    w.finish()
    w.close()
    with FeatureStore(path) as store:
        np.testing.assert_array_equal(store.layer("train", 0)[:, 0], [1] * 4 + [2] * 6)
    with pytest.raises(CacheError, match="already a complete cache"):
        _writer(path)
    w = _writer(path, overwrite=True)
    assert w.n_written("train") == 0
    w.close()


def test_finish_refuses_short_split_and_overflow(tmp_path):
    w = _writer(tmp_path / "c.h5")
    with pytest.raises(CacheError, match="has 0 of 10 rows"):
        w.finish()
    from laya_inspect.errors import InputError

    with pytest.raises(InputError, match="more than the 10 planned"):
        w.append("train", [np.ones((11, 2)), np.ones((11, 3))], np.zeros(11, int), np.arange(11))
    w.close()


def test_other_schema_version_refused(tmp_path):
    feats, y = _arrays()
    path = write_cache(tmp_path / "c.h5", {"train": (feats, y)})
    with h5py.File(path, "a") as f:
        f.attrs["schema_version"] = 99
    with pytest.raises(CacheError, match="schema_version 99"):
        FeatureStore(path)


def test_missing_file_is_not_found(tmp_path):
    with pytest.raises(NotFoundError, match="laya-inspect extract"):
        FeatureStore(tmp_path / "nope.h5")


def test_fingerprint_ignores_split_sizes_but_not_layers(tmp_path):
    feats, y = _arrays()
    a = write_cache(tmp_path / "a.h5", {"train": (feats, y)})
    b = write_cache(tmp_path / "b.h5", {"train": ([f[:20] for f in feats], y[:20])})
    c = write_cache(tmp_path / "c.h5", {"train": (feats, y)}, layer_names=["x", "y", "z"])
    with FeatureStore(a) as sa, FeatureStore(b) as sb, FeatureStore(c) as sc:
        assert sa.fingerprint == sb.fingerprint
        assert sa.fingerprint != sc.fingerprint


def test_an_amp_cache_has_its_own_fingerprint_and_an_old_cache_keeps_its_own(tmp_path):
    """--amp rows are other features: a head must not pass between an --amp and a float32 cache
    unnoticed. A float32 cache, and one written before `compute_dtype` existed, keep the fingerprint
    they had (67eaab44b742aea9, what the code before gave these arrays), so their heads still match."""
    feats, y = _arrays()
    fingerprints = {}
    for name, compute in [("before", None), ("float32", "float32"), ("bf16", "bfloat16 (autocast)")]:
        extra = {} if compute is None else {"compute_dtype": compute}
        path = write_cache(tmp_path / f"{name}.h5", {"train": (feats, y)}, extra_attrs=extra)
        with FeatureStore(path) as store:
            assert ("compute_dtype" in store.attrs) == (compute is not None)
            fingerprints[name] = store.fingerprint
    assert fingerprints["before"] == fingerprints["float32"] == "67eaab44b742aea9"
    assert fingerprints["bf16"] != fingerprints["float32"]


def _as_written_before(path) -> None:
    """The cache as laya-inspect c07d7e7 wrote it: no fingerprint_version, no attributes' digest."""
    with h5py.File(path, "a") as f:
        for key in ("fingerprint_version", "attrs_sha256"):
            f.attrs.pop(key, None)


def test_an_amp_cache_written_before_keeps_its_fingerprint_and_its_heads(tmp_path):
    """c07d7e7 already wrote compute_dtype "bfloat16 (autocast)" into --amp caches and left it out of
    the fingerprint; heads fitted there must still match. 67eaab44b742aea9 is what c07d7e7's own code
    gives this cache (run from a worktree of it). The same cache written now has the --amp one."""
    feats, y = _arrays()
    amp = {"compute_dtype": "bfloat16 (autocast)"}
    old = write_cache(tmp_path / "old.h5", {"train": (feats, y)}, extra_attrs=amp)
    _as_written_before(old)
    new = write_cache(tmp_path / "new.h5", {"train": (feats, y)}, extra_attrs=amp)
    with FeatureStore(old) as before, FeatureStore(new) as now:
        assert before.fingerprint == "67eaab44b742aea9"
        assert now.attrs["fingerprint_version"] >= 2 and now.fingerprint != before.fingerprint


def test_a_partial_cache_of_before_resumed_keeps_the_fingerprint_it_would_have_had(tmp_path):
    """The marker is written when a cache is created, not when it is finished: a run of c07d7e7 killed
    part-way and resumed now makes a cache with c07d7e7's fingerprint (its attributes are sealed)."""
    feats, y = _arrays()
    attrs = {"layer_names": ["a", "b", "c"], "command": {"x": 1}, "model_spec": "test:mlp"}

    def writer(name, **extra):
        sizes = {"train": 37}
        return FeatureWriter(
            tmp_path / name, attrs={**attrs, **extra}, split_sizes=sizes, widths=[5, 3, 8], num_logits=None
        )

    with writer("c.h5", compute_dtype="bfloat16 (autocast)") as w:
        w.append("train", [f[:20] for f in feats], y[:20], np.arange(20))
    _as_written_before(tmp_path / "c.h5.partial")
    with writer("c.h5", compute_dtype="bfloat16 (autocast)") as w:
        w.append("train", [f[20:] for f in feats], y[20:], np.arange(20, 37))
        w.finish()
    with writer("f32.h5") as w:
        w.append("train", feats, y, np.arange(37))
        w.finish()
    with FeatureStore(tmp_path / "c.h5") as resumed, FeatureStore(tmp_path / "f32.h5") as f32:
        assert resumed.fingerprint == f32.fingerprint  # c07d7e7 left compute_dtype out
        assert "fingerprint_version" not in resumed.attrs and "attrs_sha256" in resumed.attrs


def test_a_missing_cache_with_torchrun_shards_beside_it_names_them(tmp_path) -> None:
    (tmp_path / "f.h5.shards").mkdir()
    with pytest.raises(CacheError, match=r"under torchrun is running or was interrupted \(f\.h5\.shards\)"):
        FeatureStore(tmp_path / "f.h5")


def test_a_view_of_some_layers_reads_them_with_their_attributes_and_the_caches_fingerprint(tmp_path):
    """keep_layers: what prune's head of the kept layers is read through."""
    from laya_inspect.errors import InputError

    rng = np.random.default_rng(0)
    feats = [rng.normal(size=(5, w)).astype(np.float32) for w in (2, 3, 4)]
    cache = write_cache(
        tmp_path / "c.h5",
        {"train": (feats, np.arange(5) % 2)},
        layer_names=["a", "b", "c"],
        extra_attrs={"layer_roles": {"a": "stem", "b": "mid", "c": "last"}, "layer_pooling": ["gap", "none", "cls"]},
    )
    with FeatureStore(cache) as store:
        view = store.keep_layers(["a", "c"])
        assert view.layer_names == ["a", "c"] and view.widths == [2, 4] and view.whole is store
        assert view.fingerprint == store.fingerprint and store.layer_names == ["a", "b", "c"]
        np.testing.assert_array_equal(view.layer("train", "c"), feats[2])
        np.testing.assert_array_equal(view.layers("train")[1], store.layer("train", 2))
        assert view.padded("train").shape == (5, 2, 4) and view.nbytes("train") == 5 * (2 + 4) * 4
        assert view.attrs["layer_shapes"] == [[2], [4]] and view.attrs["layer_pooling"] == ["gap", "cls"]
        assert view.attrs["layer_roles"] == {"a": "stem", "c": "last"}
        assert view.keep_layers(["c"]).layer_names == ["c"] and view.keep_layers(["c"]).whole is store
        with pytest.raises(NotFoundError):
            view.layer("train", "b")
        with pytest.raises(InputError, match="distinct"):
            store.keep_layers(["a", "a"])
