"""What replaced scikit-learn and scipy.stats on the commands' path gives their numbers exactly, and
a fit with its probes in a worker leaves both out of the command's own process (≈ 1 s of start-up)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import fit_in_fresh_process
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats
from sklearn.datasets import load_digits
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split

from laya_inspect.data.base import stratified_split
from laya_inspect.data.sources import _digits_arrays
from laya_inspect.errors import InputError
from laya_inspect.ranks import average_ranks, t_quantile
from laya_inspect.training.stats import macro_f1
from laya_inspect.workers import can_fork

# few distinct values, so ties are common; NaN now and then
values = st.sampled_from([0.0, 1.0, 2.0, -1.5, 3.25, np.nan])


@settings(max_examples=200, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(0, 6), st.integers(0, 7)), elements=values),
    st.sampled_from([0, 1, -1]),
)
def test_average_ranks_equal_scipys_rankdata(x: np.ndarray, axis: int) -> None:
    got, want = average_ranks(x, axis=axis), stats.rankdata(x, axis=axis)
    assert got.shape == want.shape and got.dtype == np.float64
    assert np.array_equal(got, want, equal_nan=True)


def test_average_ranks_of_three_axes_and_of_a_vector() -> None:
    x = np.random.default_rng(0).integers(0, 3, size=(4, 5, 6)).astype(float)
    for axis in (0, 1, 2):
        assert np.array_equal(average_ranks(x, axis=axis), stats.rankdata(x, axis=axis))
    assert np.array_equal(average_ranks([3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0])
    with pytest.raises(ValueError):
        average_ranks(np.float64(1.0))


@pytest.mark.parametrize("df", [1, 2, 4, 9, 29, 1000])
@pytest.mark.parametrize("p", [0.5, 0.9, 0.975, 0.995])
def test_t_quantile_equals_scipys(p: float, df: int) -> None:
    assert t_quantile(p, df) == stats.t.ppf(p, df)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 8)), min_size=1, max_size=60))
def test_macro_f1_equals_sklearns(pairs: list[tuple[int, int]]) -> None:
    y, p = (np.array(v) for v in zip(*pairs))
    assert macro_f1(y, p) == f1_score(y, p, average="macro", zero_division=0)


def test_macro_f1_refuses_mismatched_or_empty_input() -> None:
    with pytest.raises(InputError, match="3 labels but 2 predictions"):
        macro_f1([0, 1, 1], [0, 1])
    with pytest.raises(InputError):
        macro_f1([], [])


@settings(max_examples=300, deadline=None)
@given(
    st.integers(2, 200),
    st.integers(1, 12),
    st.sampled_from([0.1, 0.2, 0.25, 0.3, 0.5, 0.8, 0.97]),
    st.integers(0, 2**31 - 1),
    st.booleans(),
)
def test_stratified_split_picks_sklearns_rows(n: int, k: int, fraction: float, seed: int, ordered: bool) -> None:
    y = np.random.default_rng(seed).integers(0, k, n)
    if ordered:
        y = np.sort(y)
    rows = np.arange(n)
    strat = np.unique(y, return_counts=True)[1].min() >= 2
    try:
        try:
            if not strat:
                raise ValueError
            tr, te = train_test_split(rows, test_size=fraction, random_state=seed, stratify=y)
        except ValueError:
            strat = False
            tr, te = train_test_split(rows, test_size=fraction, random_state=seed)
    except ValueError:  # no training rows left: refused here too
        with pytest.raises(InputError):
            stratified_split(y, test_fraction=fraction, seed=seed)
        return
    got, info = stratified_split(y, test_fraction=fraction, seed=seed)
    assert np.array_equal(got["train"], np.sort(tr)) and np.array_equal(got["test"], np.sort(te))
    assert info["stratified"] == strat


def test_digits_are_read_as_sklearn_loads_them() -> None:
    pixels, labels = _digits_arrays()
    d = load_digits()
    assert np.array_equal(pixels, d.data) and np.array_equal(labels, d.target) and labels.dtype == np.int64


@pytest.mark.skipif(not can_fork(), reason="the probes run in a forked worker on Linux only")
def test_a_fit_with_workers_leaves_sklearn_and_scipy_stats_out_of_the_command(digits_cache, tmp_path) -> None:  # noqa: ANN001
    body = """
        for w in (2, 1):
            config = FitConfig(heads=('laya', 'last'), seeds=(0,), epochs=2, workers=w)
            r = fit_heads(store, config, out_dir=out + str(w))
            loaded = sorted(m for m in ('sklearn', 'scipy.stats') if m in sys.modules)
            print(json.dumps([w, loaded, r.summary['quality']['probe']]))
    """
    lines = fit_in_fresh_process(digits_cache, tmp_path / "heads", body, timeout=600)
    (w2, loaded2, probe2), (w1, loaded1, probe1) = (json.loads(line) for line in lines[-2:])
    assert loaded2 == [], loaded2  # the probes' scikit-learn was imported in the worker only
    assert "sklearn" in loaded1  # in one process, the probes import it here
    assert probe2 == probe1 and probe1["layers"]  # the same probes either way
