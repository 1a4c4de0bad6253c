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


def test_a_class_of_one_falls_back_to_the_random_split_drawn_before() -> None:
    labels = np.array([0] * 5 + [1] + [2] * 4)
    rows, info = stratified_split(labels, test_fraction=0.3, seed=3)
    assert rows["test"].tolist() == [1, 4, 5] and rows["train"].tolist() == [0, 2, 3, 6, 7, 8, 9]
    assert info["method"] == "random" and info["stratified"] is False


def test_a_split_that_leaves_no_training_rows_is_refused() -> None:
    with pytest.raises(InputError, match="leaves no training rows"):
        stratified_split(np.array([0, 1, 0, 1]), test_fraction=0.9, seed=0)
    with pytest.raises(InputError, match="between 0 and 1"):
        stratified_split(np.array([0, 1, 0, 1]), test_fraction=1.0, seed=0)


def test_digits_pixels_and_labels() -> None:
    pixels, labels = _digits_arrays()
    assert pixels.shape == (1797, 64) and pixels.dtype == np.float64 and pixels.min() == 0 and pixels.max() == 16
    assert labels.dtype == np.int64 and np.bincount(labels).tolist()[:3] == [178, 182, 177]
