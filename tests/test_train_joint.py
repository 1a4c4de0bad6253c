"""`laya-inspect train`: a zoo backbone trained end to end; its checkpoint loads for extraction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers import extract_args
from typer.testing import CliRunner

from laya_inspect.cli import app

runner = CliRunner()
ENV = {"COLUMNS": "200"}


def _digits_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """64 test images (1, 8, 8) in [0, 1] and their labels, as `train` and `extract` see them."""
    from laya_inspect.data import load_data

    split = load_data("digits", splits=("test",)).splits["test"]
    x, y, _ = next(split.batches(64))
    return x, y


@pytest.mark.slow
def test_train_last_checkpoint_loads_with_identical_logits(tmp_path: Path) -> None:
    from laya_inspect.head_dir import head_from_checkpoint
    from laya_inspect.heads import LastLayerHead
    from laya_inspect.models import load_model
    from laya_inspect.training.joint import pooled_features

    ckpt = tmp_path / "mlp.pt"
    result = runner.invoke(
        app,
        ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "last", "--epochs", "2", "--out", str(ckpt)],
        env=ENV,
    )
    assert result.exit_code == 0, result.output
    assert "test accuracy" in result.stdout
    assert f"laya-inspect extract --model zoo:mlp --weights {ckpt} --data digits" in result.stdout
    obj = torch.load(ckpt, weights_only=True)
    assert obj["format"] == "laya-inspect-zoo" and obj["arch"] == "mlp"
    assert obj["kwargs"]["in_shape"] == [1, 8, 8] and obj["kwargs"]["num_classes"] == 10
    assert obj["data_spec"] == "digits" and obj["seed"] == 0 and obj["tool_version"]
    metrics = json.loads((tmp_path / "mlp.metrics.json").read_text())
    assert metrics["test_acc"] > 0.3 and metrics["epochs_run"] == 2  # chance is 0.1
    assert metrics["chance"] == pytest.approx(0.1, abs=0.01)
    # two epochs of a loss still falling: the one warning is that the epoch limit ended the training
    assert [w.split(" (")[0] for w in metrics["warnings"]] == ["epoch limit: seed 0"]
    assert obj["metrics"]["test_acc"] == metrics["test_acc"]

    loaded = load_model("zoo:mlp", weights=str(ckpt))
    assert loaded.module.kwargs == obj["kwargs"] and loaded.num_classes == 10
    assert loaded.default_layers == ["blocks.0", "blocks.1", "blocks.2"]
    x, y = _digits_batch()
    with torch.no_grad():
        logits = loaded.module(x)
        # the checkpoint's head is the trained LastLayer classifier: same logits from the pooled last block
        head = head_from_checkpoint(obj)
        assert isinstance(head, LastLayerHead) and obj["head"]["layer_names"] == loaded.default_layers
        hs = pooled_features(loaded.module, x)
        torch.testing.assert_close(head(hs).logits, logits, rtol=0, atol=0)
    assert float((logits.argmax(1) == y).float().mean()) > 0.3


@pytest.mark.slow
def test_train_laya_stores_its_head_and_alpha(tmp_path: Path) -> None:
    from laya_inspect.head_dir import head_from_checkpoint
    from laya_inspect.models import load_model
    from laya_inspect.training.joint import pooled_features

    ckpt = tmp_path / "laya.pt"
    result = runner.invoke(
        app,
        [
            "train",
            "--model",
            "zoo:mlp",
            "--data",
            "digits",
            "--head",
            "laya",
            "--epochs",
            "2",
            "--d-star",
            "16",
            "--lr",
            "1e-3",
            "--limit",
            "600",
            "--out",
            str(ckpt),
        ],
        env=ENV,
    )
    assert result.exit_code == 0, result.output
    assert "laya mean weight on test: blocks.0" in result.stdout
    obj = torch.load(ckpt, weights_only=True)
    head = head_from_checkpoint(obj)
    assert head.kind == "laya" and head.d_star == 16 and head.widths == [512, 256, 128]
    assert obj["metrics"]["backbone_head"]["trained"].startswith("linear probe")
    loaded = load_model("zoo:mlp", weights=str(ckpt))
    with torch.no_grad():
        alpha = head(pooled_features(loaded.module, _digits_batch()[0])).weights
    torch.testing.assert_close(alpha.sum(1), torch.ones(len(alpha)))
    again = runner.invoke(app, ["train", "--model", "zoo:mlp", "--data", "digits", "--out", str(ckpt)], env=ENV)
    assert again.exit_code == 1 and "--force" in again.stderr


def test_train_force_replaces_checkpoint_and_metrics_only_as_train_wrote_them(tmp_path: Path) -> None:
    """QA (data loss): --force took any zoo checkpoint for train's, so one the user re-saved (a state
    dict edited, the format kept) was replaced, as was a metrics file they annotated."""
    ckpt = tmp_path / "mlp.pt"
    args = ["train", "--model", "zoo:mlp", "--data", "digits", "--epochs", "1", "--limit", "200", "--out", str(ckpt)]
    assert runner.invoke(app, args, env=ENV).exit_code == 0
    assert runner.invoke(app, [*args, "--force"], env=ENV).exit_code == 0  # unchanged since written
    obj = torch.load(ckpt, weights_only=True)
    obj["note"] = "pruned by hand"
    torch.save(obj, ckpt)
    before = ckpt.read_bytes()
    again = runner.invoke(app, [*args, "--force"], env=ENV)
    assert again.exit_code == 1 and f"{ckpt} (changed since it was written)" in again.stderr, again.output
    assert ckpt.read_bytes() == before
    metrics = tmp_path / "mlp.metrics.json"
    ckpt.unlink()
    assert runner.invoke(app, args, env=ENV).exit_code == 0
    metrics.write_text(metrics.read_text().replace('"history"', '"my_note": 1, "history"'))
    noted = metrics.read_text()
    again = runner.invoke(app, [*args, "--force"], env=ENV)
    assert again.exit_code == 1 and f"{metrics} (changed since it was written)" in again.stderr, again.output
    assert metrics.read_text() == noted


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "torchvision:resnet18", "--data", "digits"], "train builds zoo backbones"),
        (["--model", "zoo:mlp", "--data", "digits", "--head", "lasst"], "--head must be one of last, laya"),
        (["--model", "zoo:mlpp", "--data", "digits"], "no zoo model 'mlpp'"),
        (["--model", "zoo:mlp", "--data", "digitz"], "no dataset 'digitz'"),
        (["--model", "zoo:bilstm", "--data", "digits"], "holds images, not texts"),
        (["--model", "zoo:mlp", "--data", "digits", "--init", "he"], "--init must be one of glorot, torch"),
        (["--model", "zoo:mlp", "--data", "digits", "--ln-eps", "0"], "--ln-eps must be a finite number > 0"),
        (["--model", "zoo:mlp", "--data", "digits", "--loss", "mse"], "--loss must be one of logits, probs"),
    ],
)
def test_train_errors_exit_1(tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["train", *args, "--epochs", "1", "--out", str(tmp_path / "x.pt")], env=ENV)
    assert result.exit_code == 1, result.output
    assert message in result.stderr


@pytest.mark.slow
def test_export_jointly_trained_laya_head_for_compare(tmp_path: Path) -> None:
    ckpt, cache, head_dir = tmp_path / "laya.pt", tmp_path / "f.h5", tmp_path / "head"
    res = runner.invoke(
        app,
        ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "laya", "--epochs", "2", "--out", str(ckpt)],
        env=ENV,
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        app,
        extract_args(ckpt, cache),
        env=ENV,
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["export-head", str(ckpt), "--cache", str(cache), "--out", str(head_dir)], env=ENV)
    assert res.exit_code == 0, res.output
    export = json.loads((head_dir / "export.json").read_text())
    # Same rows and features as the joint run: the exported head scores exactly what `train` measured.
    assert export["accuracy_on_cache"] == pytest.approx(export["joint_test_acc"], abs=1e-9)
    assert sum(export["mean_weights_on_cache"]) == pytest.approx(1.0)
    res = runner.invoke(
        app,
        [
            "compare",
            str(head_dir),
            "--cache",
            str(cache),
            "--method",
            "alpha,random",
            "--bootstrap",
            "50",
            "--no-plots",
            "--out",
            str(tmp_path / "cmp"),
        ],
        env=ENV,
    )
    assert res.exit_code == 0, res.output
    # A cache of other layers is refused.
    other = tmp_path / "g.h5"
    runner.invoke(
        app,
        [
            "extract",
            "--model",
            "zoo:mlp",
            "--weights",
            str(ckpt),
            "--data",
            "digits",
            "--layers",
            "-1",
            "--out",
            str(other),
            "--device",
            "cpu",
        ],
        env=ENV,
    )
    res = runner.invoke(app, ["export-head", str(ckpt), "--cache", str(other), "--out", str(tmp_path / "h2")], env=ENV)
    assert res.exit_code == 1 and "holds ['blocks.2']" in res.output


def test_keras_probability_loss_matches_cross_entropy_until_it_clips() -> None:
    from laya_inspect.training.loop import loss_fn as _loss

    y = torch.tensor([0, 1, 2])
    logits = torch.tensor([[1.0, 0.5, -0.2], [0.1, 2.0, 0.3], [-1.0, 0.0, 1.5]], requires_grad=True)
    torch.testing.assert_close(_loss(logits, y, "probs"), torch.nn.functional.cross_entropy(logits, y))
    # A row already right with p > 1 − 1e-7 is clipped: Keras gives it no gradient, cross-entropy still does.
    sure = torch.tensor([[30.0, 0.0, 0.0]], requires_grad=True)
    _loss(sure, torch.tensor([0]), "probs").backward()
    assert torch.count_nonzero(sure.grad) == 0
    sure2 = sure.detach().clone().requires_grad_(True)
    torch.nn.functional.cross_entropy(sure2, torch.tensor([0])).backward()
    assert torch.count_nonzero(sure2.grad) > 0


@pytest.mark.slow
def test_train_controls_reach_backbone_head_and_loss(tmp_path: Path) -> None:
    """--init torch, --ln-eps and --loss probs are what the checkpoint was built and trained with."""
    from laya_inspect.head_dir import head_from_checkpoint
    from laya_inspect.models import load_model

    ckpt = tmp_path / "c.pt"
    result = runner.invoke(
        app,
        [
            "train",
            "--model",
            "zoo:mlp",
            "--data",
            "digits",
            "--head",
            "laya",
            "--epochs",
            "1",
            "--d-star",
            "8",
            "--limit",
            "300",
            "--init",
            "torch",
            "--ln-eps",
            "1e-5",
            "--loss",
            "probs",
            "--out",
            str(ckpt),
        ],
        env=ENV,
    )
    assert result.exit_code == 0, result.output
    obj = torch.load(ckpt, weights_only=True)
    assert obj["kwargs"]["init"] == "torch" and obj["kwargs"]["ln_eps"] == 1e-5
    assert obj["training"]["loss"] == "probs" and head_from_checkpoint(obj).init == "torch"
    metrics = json.loads((tmp_path / "c.metrics.json").read_text())
    assert metrics["training"]["init"] == "torch" and metrics["training"]["ln_eps"] == 1e-5
    assert load_model("zoo:mlp", weights=str(ckpt)).module.blocks[0][1].eps == 1e-5


def _sentiment_csv(path: Path, n: int = 240) -> Path:
    """A two-class text table whose label is carried by a word anywhere in the sentence."""
    import random

    rng = random.Random(0)
    filler = "the a film plot actors story scene music ending was really quite".split()
    rows = ["text,label"]
    for i in range(n):
        label = i % 2
        words = rng.choices(filler, k=rng.randint(3, 12))
        words.insert(rng.randint(0, len(words)), rng.choice(["great", "wonderful"] if label else ["awful", "boring"]))
        rows.append(f"{' '.join(words)},{'pos' if label else 'neg'}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.slow
def test_train_bilstm_on_text_then_extract_with_its_vocabulary(tmp_path: Path) -> None:
    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.data import WordVocab
    from laya_inspect.head_dir import export_head

    data = f"csv:{_sentiment_csv(tmp_path / 'reviews.csv')}"
    ckpt = tmp_path / "bilstm.pt"
    result = runner.invoke(
        app,
        [
            "train",
            "--model",
            "zoo:bilstm",
            "--data",
            data,
            "--head",
            "laya",
            "--epochs",
            "8",
            "--lr",
            "3e-3",
            "--d-star",
            "16",
            "--out",
            str(ckpt),
        ],
        env=ENV,
    )
    assert result.exit_code == 0, result.output
    obj = torch.load(ckpt, weights_only=True)
    vocab = WordVocab(tuple(obj["vocab"]))
    assert obj["kwargs"]["vocab_size"] == vocab.size == 18  # 16 distinct words + padding + unknown
    metrics = json.loads((tmp_path / "bilstm.metrics.json").read_text())
    assert metrics["test_acc"] > 0.8, metrics["history"]  # one word decides the class: learnable

    cache = tmp_path / "bilstm.h5"
    ex = runner.invoke(
        app, ["extract", "--model", "zoo:bilstm", "--weights", str(ckpt), "--data", data, "--out", str(cache)], env=ENV
    )
    assert ex.exit_code == 0, ex.output
    with FeatureStore(cache) as store:
        assert store.layer_names == ["lstm1", "lstm2"]
        assert store.attrs["transforms"]["kind"] == "token_ids"
        assert store.attrs["transforms"]["vocab_sha256"] == vocab.sha256()
        summary = export_head(ckpt, store, tmp_path / "head")
    # the same ids through the same backbone: the exported head scores exactly what `train` measured
    assert summary["accuracy_on_cache"] == pytest.approx(metrics["test_acc"], abs=1e-9)


def test_train_on_rare_test_rows_points_to_macro_f1_rather_than_saying_the_model_did_not_learn(tmp_path: Path) -> None:
    """On 99:1 Fashion-MNIST `train` ended a zoo:mlp at test accuracy 0.994 (chance 0.990), macro-F1
    0.811, and said "the model did not learn": beating the majority class on 4 of 1000 rows is too few
    to read, not a proof of nothing learned. Here the minority class is 4 of 400 test rows and plain to
    tell apart, so the model gets it right, and the warning names its macro-F1 beside the majority
    rule's instead."""
    import numpy as np

    rng = np.random.default_rng(0)

    def images(y: np.ndarray) -> np.ndarray:
        return (y[:, None] * 200 + rng.integers(0, 50, (len(y), 16))).reshape(-1, 4, 4).astype(np.uint8)

    y_train, y_test = np.arange(200) % 2, (np.arange(400) % 100 == 0).astype(np.int64)
    data = tmp_path / "d.npz"
    np.savez(data, X_train=images(y_train), y_train=y_train, X_test=images(y_test), y_test=y_test)
    ckpt = tmp_path / "m.pt"
    args = ["train", "--model", "zoo:mlp", "--data", f"npz:{data}", "--epochs", "5", "--lr", "1e-2", "--out"]
    res = runner.invoke(app, [*args, str(ckpt)], env=ENV)
    assert res.exit_code == 0, res.output
    metrics = torch.load(ckpt, weights_only=True)["metrics"]
    assert metrics["test_acc"] == 1.0 and metrics["test_macro_f1"] == 1.0, metrics
    said = " ".join(res.stdout.split())
    assert "beats always answering that class on 4 of 400 test rows, fewer than 5" in said
    assert "the model did not learn" not in said
    assert "read its test macro-F1, 1.000, against 0.497 for always answering the majority class" in said
    assert any("macro-F1, 1.000" in w for w in metrics["warnings"])


def test_bilstm_without_its_vocabulary_is_refused(tmp_path: Path) -> None:
    data = f"csv:{_sentiment_csv(tmp_path / 'reviews.csv', n=20)}"
    res = runner.invoke(
        app,
        ["extract", "--model", "zoo:bilstm", "--random-init", "--data", data, "--out", str(tmp_path / "x.h5")],
        env=ENV,
    )
    assert res.exit_code == 1 and "needs the word vocabulary" in res.stderr


def test_a_backbone_trained_to_chance_is_a_warning_that_travels_into_its_caches(tmp_path: Path) -> None:
    """`train` once ended a zoo:cnn on 540 CIFAR-10 images at test accuracy 0.103 (chance 0.100) with
    exit code 0 and its "next: laya-inspect extract" line, and the cache said nothing either."""
    ckpt = tmp_path / "flat.pt"
    args = ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "laya", "--epochs", "1", "--lr", "1e-7"]
    result = runner.invoke(app, [*args, "--limit", "300", "--out", str(ckpt)], env=ENV)
    assert result.exit_code == 0, result.output
    assert "warning: near chance: test accuracy" in result.stdout and "the model did not learn" in result.stdout
    metrics = json.loads((tmp_path / "flat.metrics.json").read_text())
    assert metrics["test_acc"] < 0.2 and any(w.startswith("near chance") for w in metrics["warnings"])
    cache = tmp_path / "flat.h5"
    extracted = runner.invoke(app, extract_args(ckpt, cache), env=ENV)
    assert extracted.exit_code == 0, extracted.output
    from laya_inspect.cache.store import FeatureStore

    with FeatureStore(cache) as store:
        said = [w for w in store.attrs["warnings"] if "(from `laya-inspect train`): near chance" in w]
    assert said and str(ckpt) in said[0]


@pytest.mark.parametrize("head", ["laya", "last"])
def test_train_and_export_head_hold_a_class_with_no_training_rows_down(tmp_path: Path, head: str) -> None:
    """A class with test rows but no training rows: `train` said nothing of it and stored heads whose
    untrained output unit could win a row by luck. Its head (the one export-head writes too) now
    carries untrained_classes, as fit-head's do, and its metrics warn of the class."""
    import numpy as np

    from laya_inspect.head_dir import load_head

    rng = np.random.default_rng(0)

    def images(y: np.ndarray) -> np.ndarray:
        pixels = np.c_[np.eye(3)[y].repeat(5, 1) * 200, np.zeros(len(y))] + rng.integers(0, 50, (len(y), 16))
        return pixels.reshape(-1, 4, 4)  # greyscale 4×4

    y_train, y_test = np.arange(60) % 2 * 2, np.arange(15) % 3  # class 'b' only in the test split
    data = tmp_path / "d.npz"
    np.savez(data, X_train=images(y_train).astype(np.uint8), y_train=y_train, X_test=images(y_test).astype(np.uint8),
             y_test=y_test, class_names=np.array(["a", "b", "c"]))  # fmt: skip
    ckpt, cache = tmp_path / "m.pt", tmp_path / "f.h5"
    args = ["train", "--model", "zoo:mlp", "--data", f"npz:{data}", "--head", head, "--epochs", "2", "--out"]
    res = runner.invoke(app, [*args, str(ckpt), "--d-star", "8"], env=ENV)
    assert res.exit_code == 0, res.output
    assert "class(es) 'b' have test rows but no training rows" in " ".join(res.stdout.split())
    obj = torch.load(ckpt, weights_only=True)
    assert obj["head"]["config"]["untrained_classes"] == [1]
    assert any("no training rows" in w for w in obj["metrics"]["warnings"])
    # what the data said is printed and kept in the checkpoint's metrics, not left unsaid
    said = obj["metrics"]["data_warnings"]
    assert any("'b'" in w and "'train'" in w for w in said), said
    assert all(" ".join(w.split()) in " ".join(res.stdout.split()) for w in said)
    assert not any(w in obj["metrics"]["warnings"] for w in said)  # not carried into every cache
    extract = ["extract", "--model", "zoo:mlp", "--weights", str(ckpt), "--data", f"npz:{data}", "--device", "cpu"]
    assert runner.invoke(app, [*extract, "--out", str(cache)], env=ENV).exit_code == 0
    res = runner.invoke(app, ["export-head", str(ckpt), "--cache", str(cache), "--out", str(tmp_path / "h")], env=ENV)
    assert res.exit_code == 0, res.output
    exported = json.loads((tmp_path / "h" / "config.json").read_text())
    assert exported["kwargs"]["untrained_classes"] == [1]
    module, _ = load_head(tmp_path / "h")
    x = [torch.randn(64, w) * 10 for w in module.widths]
    assert (module(x).logits.argmax(1) != 1).all()
    # the backbone's own classifier (extract's model logits) never picks the class either
    from laya_inspect.models.zoo import model_from_checkpoint

    backbone = model_from_checkpoint(obj)
    with torch.no_grad():
        own = backbone(torch.rand(64, 1, 4, 4) * 10)
    assert (own.argmax(1) != 1).all() and (own[:, 1] <= -1e3).all()


def test_a_zoo_model_trained_on_non_square_images_extracts(tmp_path: Path) -> None:
    """The zoo input spec kept only the height, so extraction resized (3, 4, 1) images to 4×4 and the
    MLP rejected them ("mat1 and mat2 shapes cannot be multiplied"). It keeps both sides now."""
    import h5py
    import numpy as np

    from laya_inspect.models import load_model

    rng = np.random.default_rng(0)
    y = np.arange(40) % 2
    x = (rng.integers(0, 60, (40, 3, 4, 1)) + y[:, None, None, None] * 150).astype(np.uint8)  # (N, C, H, W)
    data = tmp_path / "d.npz"
    np.savez(data, X_train=x[:30], y_train=y[:30], X_test=x[30:], y_test=y[30:])
    ckpt, cache = tmp_path / "m.pt", tmp_path / "f.h5"
    train = ["train", "--model", "zoo:mlp", "--data", f"npz:{data}", "--epochs", "1", "--out", str(ckpt)]
    res = runner.invoke(app, train, env=ENV)
    assert res.exit_code == 0, res.output
    extract = ["extract", "--model", "zoo:mlp", "--weights", str(ckpt), "--data", f"npz:{data}", "--device", "cpu"]
    res = runner.invoke(app, [*extract, "--out", str(cache)], env=ENV)
    assert res.exit_code == 0, res.output
    with h5py.File(cache) as f:
        assert f["train/layer_000"].shape[0] == 30 and f["test/labels"].shape == (10,)
    spec = load_model("zoo:mlp", weights=ckpt).input_spec
    assert (spec.channels, spec.size, spec.width) == (3, 4, 1)


def test_train_leaves_validation_rows_of_a_class_it_cannot_learn_out_of_early_stopping(tmp_path: Path) -> None:
    """As fit-head: class 'b''s three train-split rows all go to validation, so no training row teaches
    it; those rows (never right, their loss ≈ 200) are left out of the loss that picks the epoch."""
    import numpy as np

    rng = np.random.default_rng(0)

    def images(y: np.ndarray) -> np.ndarray:
        pixels = np.c_[np.eye(3)[y].repeat(5, 1) * 200, np.zeros(len(y))] + rng.integers(0, 50, (len(y), 16))
        return pixels.reshape(-1, 4, 4).astype(np.uint8)

    y_train, y_test = np.r_[np.arange(60) % 2 * 2, 1, 1, 1], np.arange(15) % 3
    data = tmp_path / "d.npz"
    np.savez(data, X_train=images(y_train), y_train=y_train, X_test=images(y_test), y_test=y_test,
             class_names=np.array(["a", "b", "c"]))  # fmt: skip
    ckpt = tmp_path / "m.pt"
    args = ["train", "--model", "zoo:mlp", "--data", f"npz:{data}", "--head", "laya", "--epochs", "2", "--d-star", "8"]
    res = runner.invoke(app, [*args, "--val-fraction", "0.9", "--out", str(ckpt)], env=ENV)
    assert res.exit_code == 0, res.output
    metrics = torch.load(ckpt, weights_only=True)["metrics"]
    assert metrics["n_val_untrained_left_out"] == 3
    assert metrics["val_loss"] < 10, metrics["val_loss"]


def test_train_warns_a_model_above_the_majority_share_by_a_few_test_rows_near_chance() -> None:
    """train's gate read only chance + 0.1·(1 − chance): on 99:1 data a model at 0.998 against a majority
    share of 0.994 over 635 test rows passed, though it beats always answering the majority class on 3
    rows, which fit-head's gate and compare call near chance."""
    from laya_inspect.training.joint import _warnings

    probe = {"test_acc": 0.998}
    metrics = {"test_acc": 0.998, "chance": 0.994, "n_test": 635, "backbone_head": probe}
    said = _warnings(metrics)
    assert len(said) == 2 and all(w.startswith("near chance: test accuracy 0.998 vs chance 0.994") for w in said)
    assert all("on 2.54 of 635 test rows, fewer than 5" in w for w in said)
    assert "the model did not learn" in said[0] and "the backbone's own classifier" in said[1]
    # over ten times the test rows the same accuracy beats the majority class on 25 rows: no warning
    assert _warnings({**metrics, "n_test": 6350}) == []


def test_train_near_chance_advice_reads_the_epochs_each_run_used() -> None:
    """train's near-chance warning always said "(try another --lr or more --epochs)": a model that stopped
    early on patience would not use more --epochs, which fit-head's warning already says."""
    from laya_inspect.training.joint import _warnings

    probe = {"test_acc": 0.1, "converged": True}
    metrics = {"test_acc": 0.1, "chance": 0.1, "n_test": 200, "seed": 0, "epochs_run": 4, "backbone_head": probe}
    model, backbone = _warnings(metrics, epochs=30)
    assert "every seed stopped early on patience (4 of 30 epochs), so more --epochs will not" in model
    # the backbone's classifier is fitted to convergence on its own budget: the joint run's epochs decide
    assert "every seed stopped early on patience (4 of 30 epochs)" in backbone
    ran_all = _warnings({**metrics, "epochs_run": 30}, epochs=30)[1]
    assert "more --epochs" in ran_all and "seed 0 ran all 30 epochs" in ran_all


def test_a_short_joint_run_fits_the_backbone_classifier_on_its_own_budget(tmp_path: Path) -> None:
    """The backbone's own classifier (extract's model logits) was refit on the frozen last block with
    the joint run's --epochs and --lr: after `--epochs 3` on Fashion-MNIST it read test accuracy 0.108
    (LAYA 0.7635), a good block behind an unfitted classifier. It is now fitted to convergence on its
    own budget, and the checkpoint's classifier gives the accuracy train reports."""
    from laya_inspect.data import load_data
    from laya_inspect.models.zoo import model_from_checkpoint

    ckpt = tmp_path / "short.pt"
    args = ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "laya", "--epochs", "1", "--d-star", "16"]
    result = runner.invoke(app, [*args, "--limit", "600", "--out", str(ckpt)], env=ENV)
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "short.metrics.json").read_text())
    probe = metrics["backbone_head"]
    assert probe["test_acc"] > 0.7, probe  # chance is about 0.1; the joint model itself is lower after 1 epoch
    assert probe["converged"] and 0 < probe["iterations"] < 500 and "not the joint run's --epochs" in probe["fit"]
    assert not any("backbone's own classifier" in w for w in metrics["warnings"])
    assert f"test accuracy {probe['test_acc']:.4f}" in " ".join(result.stdout.split())
    obj = torch.load(ckpt, weights_only=True)
    backbone = model_from_checkpoint(obj).eval()
    test = load_data("digits", splits=("test",), limit=600).splits["test"]
    x, y, _ = next(test.batches(test.n))
    with torch.no_grad():
        acc = float((backbone(x).argmax(1) == y).double().mean())
    assert abs(acc - probe["test_acc"]) < 1e-9


def test_train_says_which_options_do_not_reach_a_bilstm_and_refuses_them_given(tmp_path: Path) -> None:
    """train's settings line and metrics listed `init` and LayerNorm ε for zoo:bilstm, which has no
    LayerNorm and always takes Keras' initialisation: --ln-eps 0.5 and --init torch ran and changed nothing."""
    data = f"csv:{_sentiment_csv(tmp_path / 'reviews.csv', n=80)}"
    base = ["train", "--model", "zoo:bilstm", "--data", data, "--epochs", "1", "--out", str(tmp_path / "b.pt")]
    refused = runner.invoke(app, [*base, "--ln-eps", "0.5"], env=ENV)
    assert refused.exit_code == 1 and "--ln-eps is not used by zoo:bilstm" in refused.stderr
    refused = runner.invoke(app, [*base, "--head", "last", "--init", "torch"], env=ENV)
    assert refused.exit_code == 1 and "--init torch is not used" in refused.stderr
    assert not (tmp_path / "b.pt").exists()
    ran = runner.invoke(app, [*base, "--head", "laya", "--d-star", "8", "--init", "torch"], env=ENV)
    assert ran.exit_code == 0, ran.output
    said = " ".join(ran.stdout.split())
    assert "LayerNorm ε not used by zoo:bilstm" in said and "LayerNorm ε 1e-3" not in said
    assert "init torch (the head's only: zoo:bilstm's own layers always take Keras' (glorot)" in said
    metrics = json.loads((tmp_path / "b.metrics.json").read_text())
    assert set(metrics["not_used"]) == {"ln_eps", "init"}


def test_export_head_compares_train_s_accuracy_only_on_the_same_split_and_rows(tmp_path: Path) -> None:
    """export-head printed "accuracy on train of f.h5 0.73 (train measured 0.70)" beside train's *test*
    accuracy, and set a cache of 300 test rows beside train's 600 without a word: the gap looked like the
    head's, while it was the rows'."""
    ckpt, cache = tmp_path / "m.pt", tmp_path / "f.h5"
    args = ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "laya", "--epochs", "1", "--d-star", "8"]
    assert runner.invoke(app, [*args, "--limit", "600", "--out", str(ckpt)], env=ENV).exit_code == 0
    assert runner.invoke(app, extract_args(ckpt, cache, "--limit", "300"), env=ENV).exit_code == 0
    export = ["export-head", str(ckpt), "--cache", str(cache), "--out"]
    res = runner.invoke(app, [*export, str(tmp_path / "h1"), "--split", "train"], env=ENV)
    assert res.exit_code == 0, res.output
    assert "train measured" not in res.stdout
    assert json.loads((tmp_path / "h1" / "export.json").read_text())["joint_test_acc"] is None
    res = runner.invoke(app, [*export, str(tmp_path / "h2")], env=ENV)
    assert res.exit_code == 0, res.output
    said = " ".join(res.stdout.split())
    assert "train measured" in said and "holds 300 rows of split 'test', but train measured its test" in said
    assert "extract with train's --limit 600" in said
    written = json.loads((tmp_path / "h2" / "export.json").read_text())["warnings"]
    assert len(written) == 1 and "300 rows" in written[0]


def test_the_probe_is_not_said_converged_when_it_ran_out_of_loss_evaluations(monkeypatch) -> None:
    """Review: L-BFGS also stops, silently, after max_eval loss evaluations; "converged" read only the
    iteration count, so a probe cut short by its evaluations was said to have converged."""
    from sklearn.datasets import load_digits
    from torch import nn

    from laya_inspect.training import joint

    digits = load_digits()
    x, y = torch.tensor(digits.data, dtype=torch.float32), torch.tensor(digits.target)
    monkeypatch.setattr(joint, "PROBE_MAX_EVAL", 4)  # fewer evaluations than iterations allow
    iterations, converged = joint.fit_linear(nn.Linear(64, 10), x, y, [])
    assert iterations < joint.PROBE_MAX_ITER and not converged
    monkeypatch.setattr(joint, "PROBE_MAX_EVAL", 2 * joint.PROBE_MAX_ITER)
    clf = nn.Linear(64, 10)
    iterations, converged = joint.fit_linear(clf, x, y, [])
    assert converged and iterations < joint.PROBE_MAX_ITER
    with torch.no_grad():
        assert float((clf(x).argmax(1) == y).double().mean()) > 0.95
