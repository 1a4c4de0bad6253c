"""What scikit-learn and scipy now compute for the tool: macro-F1's refusals and a hand-checked value,
and the validation/test rows the seeded split draws, pinned to the rows the tool drew before it called
scikit-learn (so caches and heads split then keep their rows)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from laya_inspect.data.base import stratified_split
from laya_inspect.data.sources import _digits_arrays
from laya_inspect.errors import InputError
from laya_inspect.training.stats import macro_f1


def test_macro_f1_by_hand() -> None:
    # class 0: F1 2·1/(2+1); class 1: 2·1/(1+3); class 2, never predicted: 0
    assert macro_f1(np.array([0, 0, 1, 2]), np.array([0, 1, 1, 1])) == pytest.approx((2 / 3 + 1 / 2 + 0) / 3)
    assert macro_f1([3, 3], [3, 3]) == 1.0
    # class 2 absent from the test labels: a stray prediction of it is a miss of class 1, not a
    # third class at F1 0 (which moved a score from 1.0 to 0.66 on one seed and not another)
    y = np.array([0] * 30 + [1] * 30)
    p = y.copy()
    p[0] = 2
    assert macro_f1(y, p) == pytest.approx((2 * 29 / (29 + 30) + 1.0) / 2)  # the union: 0.66


def test_macro_f1_refuses_mismatched_or_empty_input() -> None:
    with pytest.raises(InputError, match="3 labels but 2 predictions"):
        macro_f1([0, 1, 1], [0, 1])
    with pytest.raises(InputError, match="no predictions to score"):
        macro_f1([], [])


@pytest.mark.parametrize(
    ("seed", "fraction", "n_test", "first", "digest"),
    [
        (0, 0.2, 360, [21, 24, 28, 34, 35, 37, 39, 42], "2fbaae31b8c6aad1"),
        (1, 0.25, 450, [9, 10, 17, 22, 26, 27, 30, 33], "e43cafef96bd0d56"),
    ],
)
def test_the_digits_split_keeps_the_rows_drawn_before(
    seed: int, fraction: float, n_test: int, first: list[int], digest: str
) -> None:
    _, labels = _digits_arrays()
    rows, info = stratified_split(labels, test_fraction=fraction, seed=seed)
    test = rows["test"]
    assert test.dtype == np.int64 and len(test) == n_test and test[:8].tolist() == first
    assert hashlib.sha256(test.tobytes()).hexdigest()[:16] == digest
    assert np.array_equal(np.sort(np.concatenate([rows["train"], test])), np.arange(len(labels)))
    assert (info["method"], info["stratified"], info["n_source"]) == ("stratified", True, 1797)
    assert (info["seed"], info["test_fraction"]) == (seed, fraction)


def test_a_class_of_one_leaves_the_other_classes_stratified() -> None:
    """QA: one class of a single row made the whole split random (rows [1, 4, 5] to test here: class
    0's share of the test rows left to chance). Now the other classes are split as on their own and
    the single row goes where round(test_fraction) of one row says (as fit-head's validation draw)."""
    labels = np.array([0] * 5 + [1] + [2] * 4)
    others = np.flatnonzero(labels != 1)
    alone, _ = stratified_split(labels[others], test_fraction=0.3, seed=3)
    rows, info = stratified_split(labels, test_fraction=0.3, seed=3)
    assert rows["test"].tolist() == others[alone["test"]].tolist()
    assert rows["train"].tolist() == sorted([*others[alone["train"]].tolist(), 5])
    assert set(labels[rows["test"]]) == {0, 2}
    assert info["method"] == "stratified" and info["stratified"] is True and info["n_source"] == 10
    assert (info["single_row_classes"], info["single_rows_in"]) == ([1], "train")
    rows, info = stratified_split(labels, test_fraction=0.7, seed=3)
    assert 5 in rows["test"] and info["single_rows_in"] == "test"


def test_only_classes_of_one_fall_back_to_the_random_split() -> None:
    rows, info = stratified_split(np.array([0, 1, 2, 3]), test_fraction=0.5, seed=3)
    assert info["method"] == "random" and info["stratified"] is False and "single_row_classes" not in info
    assert sorted([*rows["train"], *rows["test"]]) == [0, 1, 2, 3]


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_a_split_with_no_class_of_one_is_scikit_learns_byte_for_byte(seed: int) -> None:
    from sklearn.model_selection import train_test_split

    labels = np.random.default_rng(seed).integers(0, 4, size=60)
    labels[:8] = [0, 0, 1, 1, 2, 2, 3, 3]  # every class at least twice
    for fraction in (0.1, 0.25, 0.5):
        rows, info = stratified_split(labels, test_fraction=fraction, seed=seed)
        train, test = train_test_split(np.arange(60), test_size=fraction, random_state=seed, stratify=labels)
        assert rows["test"].tobytes() == np.sort(test).astype(np.int64).tobytes()
        assert rows["train"].tobytes() == np.sort(train).astype(np.int64).tobytes()
        assert "single_row_classes" not in info


def test_a_split_that_leaves_no_training_rows_is_refused() -> None:
    with pytest.raises(InputError, match="leaves no training rows"):
        stratified_split(np.array([0, 1, 0, 1]), test_fraction=0.9, seed=0)
    with pytest.raises(InputError, match="between 0 and 1"):
        stratified_split(np.array([0, 1, 0, 1]), test_fraction=1.0, seed=0)


def test_digits_pixels_and_labels() -> None:
    pixels, labels = _digits_arrays()
    assert pixels.shape == (1797, 64) and pixels.dtype == np.float64 and pixels.min() == 0 and pixels.max() == 16
    assert labels.dtype == np.int64 and np.bincount(labels).tolist()[:3] == [178, 182, 177]
