"""A model at chance on its own task is said at extraction: a small convnet trained on scikit-learn's real
digits with its own normalisation, extracted without it, predicts one class for every row; the cache
records each split's top-1 agreement of the model's predictions with the labels and warns once."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

from laya_inspect.cache.extract import ExtractConfig, extract_features  # noqa: E402
from laya_inspect.cache.store import FeatureStore  # noqa: E402
from laya_inspect.training.chance import chance_level, is_near_chance  # noqa: E402

DIGIT_NET = """
import torch
from torch import nn

MEAN, STD = 0.485, 0.229  # the normalisation it is trained with: ImageNet's, not the digits' own


def build():
    m = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
        nn.Linear(32, 10),
    )
    m.input_spec = {"kind": "image", "channels": 1, "size": 8}
    return m


def train(path):
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (torch.tensor(d.data / 16, dtype=torch.float32).reshape(-1, 1, 8, 8) - MEAN) / STD
    y = torch.tensor(d.target)
    torch.manual_seed(0)
    m = build()
    opt = torch.optim.Adam(m.parameters(), 3e-2)
    for _ in range(30):
        opt.zero_grad()
        nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
    torch.save(m.state_dict(), path)
"""

SAID = "the model is near chance on its own task"


@pytest.fixture(scope="module")
def digit_net(tmp_path_factory):
    """The folder holding the module and its trained weights (net.pt)."""
    import sys

    folder = tmp_path_factory.mktemp("digitnet")
    (folder / "qa_digit_net.py").write_text(DIGIT_NET)
    sys.path.insert(0, str(folder))
    try:
        import qa_digit_net

        qa_digit_net.train(folder / "net.pt")
        yield folder
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("qa_digit_net", None)


def _extract(folder, out, monkeypatch, **kw):
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    config = ExtractConfig(
        model="python:qa_digit_net:build", weights="net.pt", data="digits", out=str(out), device="cpu", **kw
    )
    result = extract_features(config)
    with FeatureStore(out) as store:
        top1 = store.attrs.get("model_top1")
        recorded = list(store.attrs.get("warnings") or [])
        own = {s: float(np.mean(store.logits(s).argmax(1) == store.labels(s))) for s in store.splits}
        majority = {s: chance_level(store.labels(s)) for s in store.splits}
    return result, top1, recorded, own, majority


def test_a_model_at_chance_on_its_own_task_is_warned_of_once_and_its_top1_recorded(digit_net, tmp_path, monkeypatch):
    """QA: a user's convnet trained with its own normalisation, extracted without --normalize, had only
    the generic "no normalisation applied" warning, while the cache's own logits gave it top-1 0.108
    (chance 0.100). Each split's top-1 is now recorded, and one warning names the likely causes."""
    result, top1, recorded, own, majority = _extract(digit_net, tmp_path / "raw.h5", monkeypatch)
    assert set(top1) == {"train", "test"}
    for split, got in top1.items():  # what the cache's own logits and labels give
        assert got["top1"] == pytest.approx(own[split]) and got["majority"] == pytest.approx(majority[split])
        assert got["hits"] == round(own[split] * got["rows"]) and is_near_chance(got["top1"], got["majority"])
    (ours,) = [w for w in result.warnings if SAID in w]
    assert ours in recorded  # so fit-head, compare and report carry it
    assert "normalisation mean/std, here none" in ours and "--normalize" in ours
    assert "colour mode, here 1 channel" in ours and "size, here 8 px" in ours and "class_names[k]" in ours
    for split, got in top1.items():
        assert f"{got['hits']} of {got['rows']} {split} rows" in ours
    # the class-numbering warning judges the same agreement: not said a second time
    assert [w for w in result.warnings if "class numbering" in w or "top class" in w] == [ours]


def test_a_model_that_does_its_task_is_recorded_without_a_warning(digit_net, tmp_path, monkeypatch):
    result, top1, recorded, own, _ = _extract(
        digit_net, tmp_path / "norm.h5", monkeypatch, normalize="0.485/0.229", splits=("test",)
    )
    assert set(top1) == {"test"} and top1["test"]["top1"] == pytest.approx(own["test"]) and own["test"] > 0.5
    assert not is_near_chance(top1["test"]["top1"], top1["test"]["majority"], top1["test"]["rows"])
    assert not [w for w in result.warnings + recorded if SAID in w or "class numbering" in w]


def test_a_resumed_extraction_counts_the_logits_a_killed_run_wrote(tmp_path):
    """The agreement of the logits with the labels counted only the rows of the run that finished the
    cache: a run killed after most rows judged the model on the few left."""
    from laya_inspect.cache.writer import FeatureWriter

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=50)
    logits = np.eye(3, dtype=np.float32)[labels]
    logits[40:] = np.roll(logits[40:], 1, axis=1)  # right on the first 40 rows, wrong on the last 10
    rows = rng.normal(size=(50, 2)).astype(np.float32)

    def writer():
        return FeatureWriter(
            tmp_path / "c.h5", attrs={"command": {}, "layer_names": ["a"], "class_names": list("xyz")},
            split_sizes={"train": 50}, widths=[2], num_logits=3,
        )  # fmt: skip

    with writer() as w:  # killed after 40 rows: the partial file keeps them
        w.append("train", [rows[:40]], labels[:40], np.arange(40), logits[:40])
    with writer() as w:
        assert w.n_written("train") == 40
        w.append("train", [rows[40:]], labels[40:], np.arange(40, 50), logits[40:])
        assert w.logit_agreement() == [40, 50]
        assert w.split_agreement() == {"train": [40, 50]}


def test_logits_of_a_train_checkpoints_unlearnt_classifier_are_not_blamed_on_the_inputs():
    """QA: a `laya-inspect train` checkpoint carries the backbone's own classifier, fitted on the frozen last
    block, and train's warning where it did not learn. The cache's near-chance warning then guessed at the
    inputs' normalisation, which was wrong: it names train's warning as the cause instead, and says what a
    classifier fitted to convergence at chance does tell (the last block may not separate the classes)."""
    from types import SimpleNamespace

    from laya_inspect.cache.rows import own_task
    from laya_inspect.training.chance import CLASSIFIER_NOT_LEARNED

    labels = np.repeat(np.arange(10), 10)
    transforms = {"kind": "image", "output": [1, 28, 28], "normalize": {"applied": False}}
    data = SimpleNamespace(class_names=[str(k) for k in range(10)], transforms=transforms)
    counts, splits = {"test": [10, 100]}, {"test": SimpleNamespace(labels=labels)}
    carried = f"joint.pt (from `laya-inspect train`): warning: near chance: {CLASSIFIER_NOT_LEARNED} …"
    record, said = own_task(SimpleNamespace(data=data, warnings=[carried]), splits, counts)
    assert record["test"]["top1"] == 0.1 and len(said) == 1
    assert "warned did not learn" in said[0] and "normalisation" not in said[0], said
    assert "may not separate these classes" in said[0] and "say nothing of the layers" not in said[0], said
    # QA: a checkpoint of an older train, whose classifier had the joint run's --epochs/--lr, was said to be
    # "fitted on its own budget" with a block that "may not separate these classes": false for that checkpoint
    older = "joint.pt (from `laya-inspect train`): warning: near chance: the backbone's own classifier, refit on its"
    _, old = own_task(
        SimpleNamespace(data=data, warnings=[older + " frozen last block, did not learn …"]), splits, counts
    )
    assert "an older `laya-inspect train`" in old[0] and "own budget" not in old[0] and "separate" not in old[0], old
    assert "train again with this version" in old[0], old
    # without train's warning the inputs' preparation is what it names
    _, guessed = own_task(SimpleNamespace(data=data, warnings=[]), splits, counts)
    assert len(guessed) == 1 and "normalisation mean/std, here none" in guessed[0], guessed


def test_on_imbalanced_rows_the_own_task_warning_says_accuracy_alone_cannot_tell():
    """Review: on 950/50 labels a model right on 954 of 1000 (minority recall 0.28) read "near chance … Most
    likely its inputs are prepared unlike its training": accuracy near the majority share cannot tell such a
    model from a useless one. The warning says so and names what to check, not a likely cause."""
    from types import SimpleNamespace

    from laya_inspect.cache.rows import own_task

    transforms = {"kind": "image", "output": [1, 28, 28], "normalize": {"applied": False}}
    data = SimpleNamespace(class_names=["a", "b"], transforms=transforms)
    splits = {"test": SimpleNamespace(labels=np.repeat([0, 1], [950, 50]))}
    _, said = own_task(SimpleNamespace(data=data, warnings=[]), splits, {"test": [954, 1000]})
    assert len(said) == 1 and "accuracy alone cannot tell" in said[0] and "Most likely" not in said[0], said
    balanced = {"test": SimpleNamespace(labels=np.repeat(np.arange(10), 100))}
    data10 = SimpleNamespace(class_names=[str(k) for k in range(10)], transforms=transforms)
    _, plain = own_task(SimpleNamespace(data=data10, warnings=[]), balanced, {"test": [103, 1000]})
    assert len(plain) == 1 and "cannot tell" not in plain[0] and "Check whether" in plain[0], plain
