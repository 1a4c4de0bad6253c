"""fit-head's library (laya_inspect.training.fit_head): learning, determinism, early stopping, streaming,
the grid, save → load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import class_blob_cache, write_cache

from laya_inspect.cache.store import FeatureStore
from laya_inspect.errors import CacheError, InputError, NotFoundError
from laya_inspect.head_dir import load_head
from laya_inspect.training.fit_head import FitConfig, fit_heads, fit_one, resolve_heads
from laya_inspect.training.loop import CacheRows, evaluate, validation_split


@pytest.fixture(autouse=True, scope="module")
def _one_thread():  # noqa: ANN202 - tiny heads: one thread is faster and steadier on a shared machine
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def toy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three separable Gaussian blobs seen through two 'layers' (6 and 4 features)."""
    rng = np.random.default_rng(0)

    def split(n: int) -> tuple[list[np.ndarray], np.ndarray]:
        y = rng.integers(0, 3, n)
        centres = np.eye(3)[y] * 3.0
        l1 = np.concatenate([centres, rng.normal(size=(n, 3))], 1) + rng.normal(scale=0.5, size=(n, 6))
        l2 = np.tanh(l1[:, :4])
        return [l1.astype(np.float32), l2.astype(np.float32)], y

    return write_cache(tmp_path_factory.mktemp("toy") / "toy.h5", {"train": split(300), "test": split(120)})


def _fit(store: FeatureStore, kind: str, seed: int, config: FitConfig, in_memory: bool = True):  # noqa: ANN202
    train = CacheRows(store, "train", torch.device("cpu"), in_memory)
    test = CacheRows(store, "test", torch.device("cpu"), in_memory)
    tr, va = validation_split(train.labels, config.val_fraction, config.val_mode, config.split_seed)
    return fit_one(
        kind,
        seed,
        config.head_hparams(),
        train=train,
        train_rows=tr,
        val_rows=va,
        num_classes=store.num_classes,
        config=config,
        test=test,
    )


def test_loss_falls_and_the_toy_is_learnt(toy_cache: Path) -> None:
    cfg = FitConfig(d_star=8, lr=3e-2, batch_size=32, epochs=6, patience=6)
    with FeatureStore(toy_cache) as store:
        for kind in ("laya", "last", "concat", "scalarmix"):
            r = _fit(store, kind, 0, cfg)
            losses = [h["train_loss"] for h in r.history]
            assert losses[-1] < 0.7 * losses[0], (kind, losses)
            assert r.test_acc > 0.9 and r.val_acc > 0.9, kind


def test_same_seed_same_weights_other_seed_differs(toy_cache: Path) -> None:
    cfg = FitConfig(d_star=8, lr=1e-2, batch_size=32, epochs=3)
    with FeatureStore(toy_cache) as store:
        a, b, c = (_fit(store, "laya", s, cfg) for s in (7, 7, 8))
    for k, v in a.module.state_dict().items():
        assert torch.equal(v, b.module.state_dict()[k]), k
    assert a.history == [dict(h, seconds=a.history[i]["seconds"]) for i, h in enumerate(b.history)]
    assert (a.test_acc, a.test_macro_f1, a.best_epoch) == (b.test_acc, b.test_macro_f1, b.best_epoch)
    np.testing.assert_array_equal(a.test.weights, b.test.weights)
    assert not torch.equal(a.module.classifier.weight, c.module.classifier.weight)


def test_streaming_gives_the_same_run_as_memory(toy_cache: Path) -> None:
    cfg = FitConfig(d_star=8, lr=1e-2, batch_size=32, epochs=2)
    with FeatureStore(toy_cache) as store:
        mem, stream = _fit(store, "scalarmix", 3, cfg, True), _fit(store, "scalarmix", 3, cfg, False)
    for k, v in mem.module.state_dict().items():
        torch.testing.assert_close(v, stream.module.state_dict()[k])
    assert mem.test_acc == stream.test_acc


@pytest.mark.parametrize("monitor", ["loss", "acc"])
def test_early_stopping_restores_the_best_epoch(toy_cache: Path, monitor: str) -> None:
    # A large learning rate makes the validation numbers jump about, so patience ends the run.
    cfg = FitConfig(d_star=8, lr=0.3, epochs=40, patience=3, monitor=monitor)
    with FeatureStore(toy_cache) as store:
        r = _fit(store, "concat", 0, cfg)
        train = CacheRows(store, "train", torch.device("cpu"), True)
        _, val = validation_split(train.labels, cfg.val_fraction, cfg.val_mode, cfg.split_seed)
        restored = evaluate(r.module, train, val)
    best = r.history[r.best_epoch - 1]
    key = (
        (lambda h: (-h["val_loss"], h["val_acc"])) if monitor == "loss" else (lambda h: (h["val_acc"], -h["val_loss"]))
    )
    assert r.best_epoch == 1 + max(range(len(r.history)), key=lambda i: (key(r.history[i]), -i))
    assert r.epochs_run == r.best_epoch + 3 < 40  # stopped by patience
    assert (r.val_loss, r.val_acc) == (best["val_loss"], best["val_acc"])
    assert restored.loss == pytest.approx(best["val_loss"], rel=1e-6) and restored.acc == best["val_acc"]


def test_validation_split() -> None:
    y = np.repeat(np.arange(4), [50, 30, 10, 10])
    tr, va = validation_split(y, 0.1, "stratified", 0)
    assert sorted(np.concatenate([tr, va]).tolist()) == list(range(100))
    assert np.bincount(y[va]).tolist() == [5, 3, 1, 1]
    tr2, va2 = validation_split(y, 0.1, "stratified", 0)
    np.testing.assert_array_equal(va, va2)
    assert not np.array_equal(va, validation_split(y, 0.1, "stratified", 1)[1])
    mixed = np.random.default_rng(0).permutation(y)  # 'last' needs rows not ordered by class
    tr, va = validation_split(mixed, 0.1, "last", 0)  # Keras: split at round(n·0.9)
    assert va.tolist() == list(range(90, 100)) and tr.tolist() == list(range(90))
    with pytest.raises(InputError, match="validation"):
        validation_split(np.zeros(3, dtype=np.int64), 0.1, "stratified", 0)


def test_config_validation() -> None:
    with pytest.raises(InputError, match="tau"):
        FitConfig(tau=0)
    with pytest.raises(InputError, match="val-fraction"):
        FitConfig(val_fraction=1.0)
    with pytest.raises(NotFoundError, match="available: laya, last, concat, scalarmix"):
        FitConfig(heads=("lasts",))
    with pytest.raises(InputError, match="--grid"):
        FitConfig(heads=("last",), grid=True)
    assert FitConfig(seeds=[1, 2]).seeds == (1, 2)
    assert resolve_heads(["laya,last", "all"]) == ("laya", "last", "concat", "scalarmix")
    with pytest.raises(NotFoundError, match="did you mean 'concat'"):
        resolve_heads(["concta"])


def test_save_load_identical_logits_and_cache_check(toy_cache: Path, digits_cache: Path, tmp_path: Path) -> None:
    cfg = FitConfig(heads=("laya", "scalarmix"), seeds=(0,), d_star=8, lr=1e-2, batch_size=32, epochs=2)
    with FeatureStore(toy_cache) as store:
        result = fit_heads(store, cfg, out_dir=tmp_path / "fit")
        hs = [torch.from_numpy(a) for a in store.layers("test")]
        for r in result.runs:
            head, config = load_head(r.head_dir, store=store)
            torch.testing.assert_close(head(hs).logits, r.module(hs).logits, rtol=0, atol=0)
            assert config["seed"] == 0 and config["cache_fingerprint"] == store.fingerprint
            assert config["metrics"]["test_acc"] == r.test_acc
            assert len(config["history"]) == r.epochs_run
        with pytest.raises(InputError, match="--force"):
            fit_heads(store, cfg, out_dir=tmp_path / "fit")  # results there already
    with FeatureStore(digits_cache) as other:
        with pytest.raises(CacheError, match="fingerprint"):
            load_head(result.runs[0].head_dir, store=other)
        # force only warns about the fingerprint; layers of other widths cannot be read at all
        with pytest.warns(UserWarning, match="fingerprint"), pytest.raises(CacheError, match="widths"):
            load_head(result.runs[0].head_dir, store=other, force=True)


@pytest.mark.parametrize("monitor", ["loss", pytest.param("acc", marks=pytest.mark.slow)])
def test_tiny_grid_selects_the_best_mean_validation_metric(toy_cache: Path, tmp_path: Path, monitor: str) -> None:
    cfg = FitConfig(
        heads=("laya", "concat"),
        seeds=(0, 1, 2),
        grid=True,
        grid_d_star=(2, 8),
        grid_tau=(1.0,),
        grid_psi=("identity",),
        grid_width_factors=(1, 2),
        grid_seeds=2,
        lr=1e-2,
        batch_size=64,
        epochs=2,
        monitor=monitor,
        probe=False,
    )
    events: list[dict] = []
    with FeatureStore(toy_cache) as store:
        result = fit_heads(store, cfg, out_dir=tmp_path / "g", progress=events.append)
    grid = json.loads((tmp_path / "g" / "grid.json").read_text())
    assert len(grid["configs"]) == 4 and all(len(c["val_acc"]) == len(c["val_loss"]) == 2 for c in grid["configs"])
    if monitor == "loss":
        best = min(grid["configs"], key=lambda c: c["val_loss_mean"])
    else:
        best = max(grid["configs"], key=lambda c: c["val_acc_mean"])
    assert best["chosen"] and grid["chosen"]["d_star"] == best["d_star"]
    assert ("validation loss" in grid["selection"]) == (monitor == "loss")
    assert grid["chosen"]["score_width"] == best["width_factor"] * best["d_star"]
    assert (tmp_path / "g" / "grid.csv").read_text().count("\n") == 5
    assert result.hparams["d_star"] == best["d_star"]
    assert all(r.module.d_star == best["d_star"] for r in result.runs)
    assert len(result.runs) == 6
    assert sum(e["event"] == "run_end" and e["stage"] == "grid" for e in events) == 8


def test_val_mode_last_refuses_class_ordered_rows():
    from laya_inspect.errors import InputError
    from laya_inspect.training.loop import validation_split

    ordered = np.repeat(np.arange(10), 100)  # an ImageFolder: class by class
    with pytest.raises(InputError, match="hold only 1 of the 10 classes.*stratified"):
        validation_split(ordered, 0.1, "last", 0)
    shuffled = np.random.default_rng(0).permutation(ordered)
    train, val = validation_split(shuffled, 0.1, "last", 0)
    np.testing.assert_array_equal(val, np.arange(900, 1000))
    train, val = validation_split(ordered, 0.1, "stratified", 0)
    assert len(np.unique(ordered[val])) == 10


def test_test_rows_with_nonfinite_features_are_refused(tmp_path) -> None:
    """QA: a cache extracted with --allow-nonfinite whose test split held one NaN row gave laya
    "0.810 · gate ok" with α NaN on every layer and the NaN row counted in the accuracy."""
    rng = np.random.default_rng(0)
    splits = {}
    for name, n in (("train", 120), ("test", 60)):
        feats = [rng.normal(size=(n, 3)).astype(np.float32) for _ in range(2)]
        splits[name] = (feats, (feats[1][:, 0] > 0).astype(np.int64))
    cache = write_cache(tmp_path / "c.h5", splits)
    import h5py

    with h5py.File(cache, "r+") as f:  # one NaN row written after extract, which would have refused it
        f["test/layer_001"][5] = np.nan
    config = FitConfig(heads=("laya",), seeds=(0,), epochs=2, probe=False)
    with FeatureStore(cache) as store, pytest.raises(InputError, match="1 of the 60 rows of split 'test'") as e:
        fit_heads(store, config, out_dir=tmp_path / "h")
    assert not (tmp_path / "h").exists()
    # QA: the advice was always "re-extract without --allow-nonfinite", for a cache that never used it too
    assert "the file was changed after extract" in str(e.value) and "re-extract the cache without" not in str(e.value)
    splits["test"][0][1][5] = np.nan  # as extract --allow-nonfinite caches it, and counts it
    flagged = write_cache(tmp_path / "f.h5", splits, allow_nonfinite=True)
    with FeatureStore(flagged) as store, pytest.raises(InputError, match="1 of the 60 rows") as e:
        fit_heads(store, config, out_dir=tmp_path / "h")
    said = "re-extract the cache without --allow-nonfinite (extract cached them under it, values per layer: "
    assert said + "{'blocks.1': 3})" in str(e.value)


def test_training_rows_with_nonfinite_features_get_the_caches_own_advice(tmp_path) -> None:
    """QA: NaN training rows in the standardisation and the probe said only "re-extract the cache",
    where fit-head's test-row check says what the cache records (extract's --allow-nonfinite count)."""
    rng = np.random.default_rng(0)
    splits = {}
    for name, n in (("train", 120), ("test", 60)):
        feats = [rng.normal(size=(n, 3)).astype(np.float32) for _ in range(2)]
        splits[name] = (feats, (feats[1][:, 0] > 0).astype(np.int64))
    splits["train"][0][0][7] = np.nan
    cache = write_cache(tmp_path / "c.h5", splits, allow_nonfinite=True)
    said = "re-extract the cache without --allow-nonfinite (extract cached them under it, values per layer: "
    config = FitConfig(heads=("laya",), seeds=(0,), epochs=2, probe=False)
    with FeatureStore(cache) as store:
        with pytest.raises(InputError, match="--standardize none") as e:
            fit_heads(store, config, out_dir=tmp_path / "h")
        assert said in str(e.value)
        from laya_inspect.training.quality import layer_probes

        train_rows, val_rows = validation_split(store.labels("train"), 0.1, "stratified", 0)
        with pytest.raises(InputError, match="--no-probe") as e:
            layer_probes(store, train_split="train", test_split="test", train_rows=train_rows, val_rows=val_rows)
        assert said in str(e.value)


def test_fit_head_marks_classes_without_training_rows_untrained(tmp_path: Path) -> None:
    """A test class with no training rows: every saved head knows it never learnt it, so no seed
    can score its rows as hits by the luck of an untrained output unit."""
    y_train, y_test = np.arange(40) % 2 * 2, np.arange(12) % 3  # class 1 only in the test split
    cache = class_blob_cache(tmp_path / "c.h5", y_train, y_test)
    cfg = FitConfig(heads=("laya", "last"), seeds=(0, 1), d_star=8, epochs=3, probe=False, device="cpu")
    with FeatureStore(cache) as store:
        result = fit_heads(store, cfg, out_dir=tmp_path / "fit")
        hs = [torch.from_numpy(a) for a in store.layers("test")]
        for r in result.runs:
            head, config = load_head(r.head_dir, store=store)
            assert config["kwargs"]["untrained_classes"] == [1]
            assert (head(hs).logits.argmax(1) != 1).all()
            assert r.test_acc <= 8 / 12


def test_a_class_whose_only_training_row_went_to_validation_is_flagged(tmp_path: Path) -> None:
    """A class with one row in the train split that the stratified draw holds out for validation has
    no training rows left: its heads can never predict it, and the gate now says so."""
    y_train = np.r_[np.arange(40) % 2 * 2, 1]  # class 1: one row, held out at --val-fraction 0.6
    y_test = np.arange(12) % 3
    cache = class_blob_cache(tmp_path / "c.h5", y_train, y_test)
    cfg = FitConfig(heads=("last",), seeds=(0,), epochs=2, probe=False, device="cpu", val_fraction=0.6)
    with FeatureStore(cache) as store:
        result = fit_heads(store, cfg, out_dir=tmp_path / "fit")
    (said,) = [h["warnings"] for h in result.summary["heads"] if h["head"] == "last"]
    assert any(w.startswith("class(es) '1' have test rows but no training rows") for w in said), said


def test_a_class_whose_only_training_row_validation_took_is_said_so_with_the_fix(tmp_path: Path) -> None:
    """QA: with --val-mode last on a folder listed class by class, the one image of class 'frog' in
    the train split went to validation; the gate said "'frog' have test rows but no training rows",
    as if the data lacked them, not naming the validation rows that took it, nor the fix."""
    y_train = np.r_[np.arange(40) % 2 * 2, 1]  # class 1: one row, the last: --val-mode last takes it
    cache = class_blob_cache(tmp_path / "c.h5", y_train, np.arange(12) % 3)
    cfg = FitConfig(heads=("last",), seeds=(0,), epochs=2, probe=False, device="cpu", val_mode="last")
    with FeatureStore(cache) as store:
        result = fit_heads(store, cfg, out_dir=tmp_path / "fit")
    (said,) = [h["warnings"] for h in result.summary["heads"] if h["head"] == "last"]
    (line,) = [w for w in said if w.startswith("class(es) '1' have test rows but no training rows")]
    assert "the training split has 1 row of them, all taken as validation rows" in line
    assert "--val-mode stratified" in line


def test_validation_rows_of_a_class_with_no_training_rows_do_not_steer_early_stopping(tmp_path: Path) -> None:
    """Class 1's rows all went to validation: no head can get them right, and their loss (the logit
    held 200 below the rest) grew with the other logits' spread, so the validation loss that picks
    the epoch was about 200 on them. They are left out of validation, and the summary says how many."""
    y_train = np.r_[np.arange(60) % 2 * 2, 1, 1, 1]  # class 1: three rows, all held out at --val-fraction 0.9
    y_test = np.arange(12) % 3
    cache = class_blob_cache(tmp_path / "c.h5", y_train, y_test)
    cfg = FitConfig(heads=("laya",), seeds=(0,), d_star=8, epochs=3, probe=False, device="cpu", val_fraction=0.9)
    with FeatureStore(cache) as store:
        result = fit_heads(store, cfg, out_dir=tmp_path / "fit")
    split = result.summary["split"]
    assert split["n_val_untrained_left_out"] == 3
    assert all(r.val_loss < 2 for r in result.runs), [r.val_loss for r in result.runs]  # 11.8 before


def test_validation_taking_every_row_of_all_but_one_class_is_refused_in_the_users_words(tmp_path: Path) -> None:
    """Two classes, the second's one training row held out for validation: the training rows hold one
    class. fit-head refused with "untrained_classes [1] leave fewer than 2 of 2 classes", an argument
    the user never gave; it says what happened and what to change, before any head is fitted."""
    y_train, y_test = np.r_[np.zeros(40, dtype=np.int64), 1], np.arange(12) % 2
    cache = class_blob_cache(tmp_path / "c.h5", y_train, y_test)
    cfg = FitConfig(heads=("last",), seeds=(0,), epochs=2, probe=False, device="cpu", val_fraction=0.6)
    with FeatureStore(cache) as store, pytest.raises(InputError) as said:
        fit_heads(store, cfg, out_dir=tmp_path / "fit")
    assert "untrained_classes" not in str(said.value)
    assert "validation" in str(said.value) and "--val-fraction" in str(said.value)
    assert not (tmp_path / "fit").exists()


def test_a_class_with_few_training_rows_and_a_small_validation_split_are_flagged(tmp_path: Path) -> None:
    """A class with 1 training row and 6 validation rows: the head still fits, but the gate says that
    the class rests on one input and that 6 rows are too few to pick the epoch and the probe's layer,
    in summary.json beside the head's other warnings."""
    rng = np.random.default_rng(0)
    y_train = np.r_[np.arange(40) % 2 * 2, 1]  # class 1: one row, kept for training at --val-fraction 0.15
    y_test = np.arange(12) % 3

    def feats(y: np.ndarray) -> list[np.ndarray]:
        a = (np.eye(3)[y] * 3 + rng.normal(size=(len(y), 3))).astype(np.float32)
        return [a, np.tanh(a)]

    cache = write_cache(tmp_path / "c.h5", {"train": (feats(y_train), y_train), "test": (feats(y_test), y_test)})
    cfg = FitConfig(heads=("last",), seeds=(0,), epochs=2, probe=True, device="cpu", val_fraction=0.15)
    with FeatureStore(cache) as store:
        result = fit_heads(store, cfg, out_dir=tmp_path / "fit")
    assert result.summary["split"]["n_val"] < 20
    saved = json.loads((tmp_path / "fit" / "summary.json").read_text())
    (said,) = [h["warnings"] for h in saved["heads"] if h["head"] == "last"]
    assert any("fewer than 5 training rows: '1' (1)" in w for w in said), said
    assert any(w.startswith(f"only {result.summary['split']['n_val']} validation rows") for w in said), said
    assert any("the probe's best layer" in w for w in said), said
