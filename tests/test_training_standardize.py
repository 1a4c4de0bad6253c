"""Standardisation stored in the head: training-split statistics against numpy, the scale floor, the
head directory round trip on raw features, and heads that learn the same whatever the feature scale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import write_cache

from laya_inspect.cache.store import FeatureStore
from laya_inspect.errors import InputError
from laya_inspect.head_dir import load_head
from laya_inspect.heads import HEADS, LayaHead, build_head
from laya_inspect.training.fit_head import FitConfig, fit_heads
from laya_inspect.training.loop import CacheRows, TensorRows, validation_split
from laya_inspect.training.standardize import SCALE_FLOOR, feature_moments, scales_for


def test_moments_match_numpy_in_memory_and_streamed(digits_cache: Path) -> None:
    rows = np.arange(0, 1347, 3)
    with FeatureStore(digits_cache) as store:
        expected = [a[rows].astype(np.float64) for a in store.layers("train")]
        for in_memory in (True, False):
            means, stds = feature_moments(
                CacheRows(store, "train", torch.device("cpu"), in_memory), rows, store.layer_names
            )
            for m, s, x in zip(means, stds, expected):
                np.testing.assert_allclose(m, x.mean(axis=0), rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(s, x.std(axis=0), rtol=1e-9, atol=1e-12)


def test_batch_merge_keeps_a_small_variance_under_a_large_mean() -> None:
    # float64 sums of squares would lose this variance (mean 1e6, std 1e-3) entirely.
    rng = np.random.default_rng(0)
    x = 1e6 + 1e-3 * rng.standard_normal((20_000, 2))
    rows = TensorRows([torch.from_numpy(x)], torch.zeros(len(x), dtype=torch.long))
    _, stds = feature_moments(rows, np.arange(len(x)), ["h"])
    np.testing.assert_allclose(stds[0], x.std(axis=0), rtol=1e-6)


def test_scales_floor_and_layer_mode() -> None:
    stds = [np.array([2.0, 0.0, 1e-9, 2.0]), np.zeros(3)]
    rms = np.sqrt(np.mean(stds[0] ** 2))
    feature = scales_for(stds, "feature")
    np.testing.assert_allclose(feature[0], [2.0, SCALE_FLOOR * rms, SCALE_FLOOR * rms, 2.0])
    np.testing.assert_array_equal(feature[1], np.ones(3))  # a constant layer is left unscaled
    layer = scales_for(stds, "layer")
    np.testing.assert_allclose(layer[0], np.full(4, rms))
    with pytest.raises(InputError, match="feature or layer"):
        scales_for(stds, "none")


def test_head_applies_the_stored_standardisation_to_raw_features() -> None:
    torch.manual_seed(0)
    head = LayaHead([3, 2], 4, d_star=5, standardize="feature")
    mean, scale = (
        [torch.tensor([1.0, -2.0, 3.0]), torch.tensor([10.0, 0.0])],
        [torch.tensor([2.0, 4.0, 0.5]), torch.ones(2)],
    )
    head.set_standardization(mean, scale)
    plain = LayaHead([3, 2], 4, d_star=5)
    plain.load_state_dict({k: v for k, v in head.state_dict().items() if not k.startswith("standardizers")})
    hs = [torch.randn(6, 3) * 7, torch.randn(6, 2)]
    expected = plain([(hs[0] - mean[0]) / scale[0], hs[1] - mean[1]])
    out = head(hs)
    torch.testing.assert_close(out.logits, expected.logits)
    torch.testing.assert_close(out.weights, expected.weights)
    assert head.config()["standardize"] == "feature" and "standardize" not in plain.config()
    with pytest.raises(InputError, match="scales finite and > 0"):
        head.set_standardization(mean, [torch.tensor([1.0, 0.0, 1.0]), torch.ones(2)])
    with pytest.raises(InputError, match="width 3"):
        head.set_standardization([torch.zeros(2), torch.zeros(2)], scale)
    with pytest.raises(InputError, match="built without standardize"):
        plain.set_standardization(mean, scale)
    with pytest.raises(InputError, match="standardize must be one of"):
        LayaHead([3], 2, standardize="z")


def test_config_and_state_rebuild_a_standardised_head_of_every_kind() -> None:
    torch.manual_seed(1)
    hs = [torch.randn(5, 3) * 100 + 50, torch.randn(5, 4)]
    for kind in HEADS.names():
        head = build_head(kind, [3, 4], 3, d_star=6, standardize="layer")
        head.set_standardization([h.mean(0) for h in hs], [h.std(0) + 1 for h in hs])
        clone = HEADS.get(kind)(**head.config())
        clone.load_state_dict(head.state_dict())
        torch.testing.assert_close(clone(hs).logits, head(hs).logits, rtol=0, atol=0)


@pytest.mark.slow
def test_saved_head_on_raw_cache_features_gives_the_training_logits(digits_cache: Path, tmp_path: Path) -> None:
    cfg = FitConfig(heads=("laya", "last"), seeds=(0,), d_star=8, epochs=2, probe=False)
    with FeatureStore(digits_cache) as store:
        result = fit_heads(store, cfg, out_dir=tmp_path / "fit")
        raw = [torch.from_numpy(a) for a in store.layers("test")]
        train = [a.astype(np.float64) for a in store.layers("train")]
        for r in result.runs:
            head, config = load_head(r.head_dir, store=store)
            assert config["kwargs"]["standardize"] == "feature"
            torch.testing.assert_close(head(raw).logits, r.module(raw).logits, rtol=0, atol=0)
            assert float((head(raw).logits.argmax(1).numpy() == store.labels("test")).mean()) == r.test_acc
            # the buffers are the statistics of the training rows, validation rows left out
            rows, _ = validation_split(store.labels("train"), 0.1, "stratified", 0)
            assert result.summary["standardization"]["rows"] == len(rows) < len(train[0])
            state = head.state_dict()
            for i, x in enumerate(train):
                np.testing.assert_allclose(
                    state[f"standardizers.{i}.mean"].numpy(), x[rows].mean(0), rtol=1e-5, atol=1e-6
                )
                floor = SCALE_FLOOR * np.sqrt(np.mean(x[rows].std(0) ** 2))
                expected = np.maximum(x[rows].std(0), floor)
                np.testing.assert_allclose(state[f"standardizers.{i}.scale"].numpy(), expected, rtol=1e-5)


@pytest.mark.slow
def test_a_feature_scale_of_1000_changes_nothing(tmp_path: Path) -> None:
    """The same features, and the same features × 1000 + 50: standardised heads train to the same
    predictions (what they see differs only by float rounding)."""
    rng = np.random.default_rng(0)
    y = np.arange(400) % 4
    x1 = np.eye(4)[y] + rng.normal(scale=0.8, size=(400, 4))
    x2 = np.tanh(x1 @ rng.normal(size=(4, 6)))
    feats = [x1.astype(np.float32), x2.astype(np.float32)]
    scaled = [(1000 * f + 50).astype(np.float32) for f in feats]
    preds = []
    for name, fs in (("unit", feats), ("scaled", scaled)):
        cache = write_cache(tmp_path / f"{name}.h5", {"train": (fs, y), "test": (fs, y)})
        cfg = FitConfig(heads=("last", "scalarmix"), seeds=(0,), d_star=8, epochs=30, probe=False)
        with FeatureStore(cache) as store:
            result = fit_heads(store, cfg, out_dir=tmp_path / f"fit-{name}")
        preds.append({r.head: r.test.preds for r in result.runs})
    for head in ("last", "scalarmix"):
        assert np.mean(preds[0][head] == preds[1][head]) > 0.98, head
