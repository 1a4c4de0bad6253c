"""fit-head on imbalanced classes (laya_inspect.training.classes): each head's per-class F1 and recall
in summary.json, the weakest class named in a gate note, and the probe check reading macro-F1 there.
Real data: Fashion-MNIST from the Debian package with 'Shirt' cut to 5% of the rows, else scikit-learn's
digits with one class cut to 5%."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from helpers import write_cache
from sklearn.metrics import f1_score, recall_score

from laya_inspect.cache.store import FeatureStore
from laya_inspect.data.sources import FASHION_MNIST_CLASSES, FASHION_MNIST_ROOT, read_idx
from laya_inspect.training.fit_head import FitConfig, fit_heads
from laya_inspect.training.quality import head_quality

FMNIST = Path(FASHION_MNIST_ROOT)


def _rows(x: np.ndarray, y: np.ndarray, per_class: int, rare: int, rare_rows: int, seed: int) -> np.ndarray:
    """A seeded draw of ``per_class`` rows of every class but ``rare``, which gets ``rare_rows``."""
    rng = np.random.default_rng(seed)
    picks = [
        rng.choice(np.flatnonzero(y == c), rare_rows if c == rare else per_class, replace=False) for c in range(10)
    ]
    return np.sort(np.concatenate(picks))


@pytest.fixture(scope="module")
def imbalanced_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Real images through a fixed, seeded 2-layer GELU network, one class at 5% of the rows of each split."""
    if (FMNIST / "train-images-idx3-ubyte.gz").is_file():
        xs = {
            s: read_idx(FMNIST / f"{p}-images-idx3-ubyte.gz").reshape(-1, 784) / 255.0
            for s, p in (("train", "train"), ("test", "t10k"))
        }
        ys = {
            s: read_idx(FMNIST / f"{p}-labels-idx1-ubyte.gz").astype(np.int64)
            for s, p in (("train", "train"), ("test", "t10k"))
        }
        names, rare = FASHION_MNIST_CLASSES, 6
        sizes = {"train": (200, 95), "test": (100, 47)}  # 95 / (9·200 + 95) = 5.0%
    else:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        x, y = load_digits(return_X_y=True)
        tr, te = train_test_split(np.arange(len(y)), test_size=0.4, stratify=y, random_state=0)
        xs, ys = {"train": x[tr] / 16.0, "test": x[te] / 16.0}, {"train": y[tr], "test": y[te]}
        names, rare = [str(c) for c in range(10)], 8
        sizes = {"train": (100, 47), "test": (60, 28)}
    gen = torch.Generator().manual_seed(0)
    d = xs["train"].shape[1]
    weights = [torch.randn(d, 64, generator=gen) / d**0.5, torch.randn(64, 32, generator=gen) / 8.0]
    splits = {}
    for i, split in enumerate(("train", "test")):
        keep = _rows(xs[split], ys[split], *sizes[split][:1], rare, sizes[split][1], seed=i)
        h, feats = torch.tensor(xs[split][keep], dtype=torch.float32), []
        for w in weights:
            h = torch.nn.functional.gelu(h @ w)
            feats.append(h.numpy())
        splits[split] = (feats, ys[split][keep])
    cache = write_cache(tmp_path_factory.mktemp("cache") / "imbalanced.h5", splits, class_names=names)
    return cache, names[rare]


@pytest.fixture(scope="module")
def fitted(imbalanced_cache: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, Path]:
    cache, rare = imbalanced_cache
    out = tmp_path_factory.mktemp("fit") / "heads"
    config = FitConfig(heads=("laya", "last"), seeds=(0, 1), epochs=15, patience=5, workers=1)
    with FeatureStore(cache) as store:
        fit_heads(store, config, out_dir=out)
    return json.loads((out / "summary.json").read_text()), rare, out


def test_summary_json_gives_each_head_its_per_class_f1_and_recall_over_seeds(fitted: tuple[dict, str, Path]) -> None:
    summary, rare, out = fitted
    runs = json.loads((out / "runs.json").read_text())
    balance = summary["quality"]["class_balance"]
    assert balance["imbalanced"] and balance["smallest"] == rare
    assert balance["smallest_share"] < 0.5 / 10
    for h in summary["heads"]:
        block = h["per_class"]
        assert (
            block["classes"][block["classes"].index(rare)] == rare
            and sum(block["support"]) == summary["split"]["n_test"]
        )
        f1 = np.array(block["f1"]["mean"])
        assert f1.shape == (10,) and np.all((f1 >= 0) & (f1 <= 1))
        assert np.all(np.array(block["f1"]["min"]) <= f1) and np.all(f1 <= np.array(block["f1"]["max"]))
        # their mean over classes is each seed's macro-F1, averaged: the same number the table shows
        assert f1.mean() == pytest.approx(h["test_macro_f1"]["mean"], abs=1e-9)
        assert block["weakest"]["f1"] == pytest.approx(f1.min())
    per_seed = {r["seed"]: r["test_macro_f1"] for r in runs if r["head"] == "laya"}
    assert len(per_seed) == 2


def test_the_weakest_class_is_named_in_a_gate_note_on_imbalanced_classes(fitted: tuple[dict, str, Path]) -> None:
    summary, rare, _ = fitted
    for h in summary["heads"]:
        weak = h["per_class"]["weakest"]
        notes = [n for n in h["gate_notes"] if n.startswith("weakest class")]
        assert len(notes) == 1 and repr(weak["class"]) in notes[0] and "imbalanced classes" in notes[0]
        assert f"{weak['f1']:.3f}" in notes[0]


def test_the_weakest_class_note_reaches_the_terminal_and_the_page(fitted: tuple[dict, str, Path]) -> None:
    from laya_inspect.report.terminal import gate_lines

    summary, _, out = fitted
    lines = [str(t) for t in gate_lines(summary)]
    assert any(line.startswith("note laya: weakest class") for line in lines)
    # macro-F1's references stand beside the accuracy's: the majority class's and the probe's
    q = summary["quality"]
    assert f"macro-F1 {q['majority_macro_f1']:.3f} always answering the majority class" in lines[0]
    assert f"{q['probe']['reference_test_macro_f1']:.3f} for the reference probe" in lines[0]
    assert "weakest class" in (out / "report.html").read_text()


def test_per_class_scores_agree_with_scikit_learn_and_leave_an_absent_class_undefined() -> None:
    from laya_inspect.training.classes import per_class_scores

    y = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    p = np.array([0, 1, 0, 1, 2, 2, 2, 0, 2])
    f1, recall = per_class_scores(y, p, 4)
    assert np.allclose(f1[:3], f1_score(y, p, labels=[0, 1, 2], average=None))
    assert np.allclose(recall[:3], recall_score(y, p, labels=[0, 1, 2], average=None))
    assert np.isnan(f1[3]) and np.isnan(recall[3])


def test_balanced_classes_name_a_class_only_when_its_f1_is_far_below_the_others() -> None:
    from laya_inspect.training.classes import class_balance, weakest, weakest_note

    names = ["a", "b", "c"]
    balance = class_balance(np.repeat([0, 1, 2], 10), names)
    assert not balance["imbalanced"]

    def block(f1: list[float]) -> dict:
        per = {"classes": names, "support": [10, 10, 10], "f1": {"mean": f1, "std": [0.0] * 3}}
        per["recall"] = {"mean": f1}
        return per | {"weakest": weakest(per)}

    assert weakest_note(block([0.9, 0.85, 0.8]), balance, 1) is None
    note = weakest_note(block([0.9, 0.85, 0.5]), balance, 1)
    assert note is not None and "'c'" in note and "below the others'" in note


def test_imbalanced_classes_name_no_weakest_class_of_a_head_that_has_none() -> None:
    """Review: on 95/95/5 test rows a head with one error on a big class read "weakest class 'a' (imbalanced
    classes): F1 0.995 … vs mean F1 0.997 …; accuracy and macro-F1 hide it". Imbalance lowers the gap that
    names a class, it does not name one that is no weaker than the rest."""
    from laya_inspect.training.classes import class_balance, weakest, weakest_note

    names = ["a", "b", "c"]
    balance = class_balance(np.repeat([0, 1, 2], [95, 95, 5]), names)
    assert balance["imbalanced"]

    def block(f1: list[float]) -> dict:
        per = {"classes": names, "support": [95, 95, 5], "f1": {"mean": f1, "std": [0.0] * 3}}
        per["recall"] = {"mean": f1}
        return per | {"weakest": weakest(per)}

    assert weakest_note(block([0.995, 0.997, 1.0]), balance, 1) is None
    note = weakest_note(block([0.95, 0.96, 0.8]), balance, 1)  # 0.155 below: named on imbalanced classes only
    assert note is not None and "'c'" in note and "hide" not in note, note
    assert weakest_note(block([0.95, 0.96, 0.8]), class_balance(np.repeat([0, 1, 2], 10), names), 1) is None


def test_on_imbalanced_classes_a_head_below_the_probes_macro_f1_is_below_the_probe() -> None:
    """Accuracy level with the probe, macro-F1 0.10 under it: below the probe only where the classes are imbalanced."""
    probe = {
        "layers": [{"layer": "a", "val_acc": 0.8, "test_acc": 0.75, "test_macro_f1": 0.72}],
        "best_layer": "a",
    }
    runs = [
        SimpleNamespace(
            seed=s, test=None, test_acc=0.75, test_macro_f1=0.62 + 0.001 * s, epochs_run=5, static_weights=None
        )
        for s in range(3)
    ]
    kw = dict(test_acc=0.75, test_f1=0.621, chance=0.2, probe=probe, layer_names=["a"], epochs=5)
    balanced = head_quality("laya", runs, **kw)
    assert not balanced["warnings"] and "reading" not in balanced["probe_reference"]
    skewed = head_quality("laya", runs, **kw, imbalanced=True)
    assert (
        skewed["probe_reference"]["reading"] == "below the probe"
        and skewed["probe_reference"]["metric"] == "test_macro_f1"
    )
    assert len(skewed["warnings"]) == 1 and "test macro-F1 0.621 vs 0.720" in skewed["warnings"][0]


def _table(page: str, table_id: str) -> str:
    """The HTML of one table of a page, found by its id."""
    start = page.index(f'<table id="{table_id}"')
    return page[start : page.index("</table>", start)]


def test_report_html_has_a_per_class_table_and_the_probes_macro_f1(fitted: tuple[dict, str, Path]) -> None:
    """The page had no per-class table and no probe macro-F1 although summary.json held both: on imbalanced
    classes it shows each class's test rows with each head's mean F1 and recall, the rare class among them."""
    summary, rare, out = fitted
    page = (out / "report.html").read_text(encoding="utf-8")
    classes = _table(page, "fit-classes")
    laya = next(h for h in summary["heads"] if h["head"] == "laya")["per_class"]
    i = laya["classes"].index(rare)
    assert f">{rare}<" in classes and ">laya F1<" in classes and ">last recall<" in classes
    assert f">{laya['f1']['mean'][i]:.3f}<" in classes and f">{laya['support'][i]}<" in classes
    probe = _table(page, "fit-probe")
    first = summary["quality"]["probe"]["layers"][0]
    assert ">test macro-F1<" in probe and f">{first['test_macro_f1']:.3f}<" in probe


def test_the_per_class_table_follows_the_gate_notes_rule() -> None:
    """Shown only where the gate names a weakest class (imbalanced, or one class far below the others), and
    on many classes only those of lowest F1, the weakest among them."""
    from laya_inspect.report.classes import CLASS_ROWS, class_table
    from laya_inspect.training.classes import class_balance, weakest

    def head(f1: list[float]) -> dict:
        names = [f"c{c}" for c in range(len(f1))]
        per = {"classes": names, "support": [10] * len(f1), "f1": {"mean": f1}, "recall": {"mean": f1}}
        return {"head": "laya", "n": 2, "per_class": per | {"weakest": weakest(per)}}

    balanced = class_balance(np.repeat([0, 1, 2], 10), ["c0", "c1", "c2"])
    assert class_table([head([0.9, 0.85, 0.8])], balanced, "test split") == []
    (table,) = class_table([head([0.9, 0.85, 0.5])], balanced, "test split")
    assert [r[0] for r in table.rows] == ["c0", "c1", "c2"] and "'c2'" in table.caption
    many = [0.9 - 0.01 * c for c in range(30)]
    many[3] = 0.2
    wide = class_balance(np.repeat(np.arange(30), 10), [f"c{c}" for c in range(30)])
    (table,) = class_table([head(many)], wide, "test split")
    assert len(table.rows) == CLASS_ROWS and table.rows[0][0] == "c3" and "20 of 30 classes" in table.caption
