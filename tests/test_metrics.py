"""metrics.py: exact numbers by hand, agreement with scipy's spearmanr, the undefined-row policy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from laya_inspect.compare import metrics as M


def _scipy_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input warning: we only want its NaN
        for x, y in zip(a, b):
            out.append(stats.spearmanr(x, y).statistic)
    return np.array(out, dtype=float)


def test_spearman_matches_scipy_row_by_row_with_ties_and_constant_rows():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, size=(300, 6)).astype(float)  # many ties, some constant rows
    e = rng.normal(size=(300, 6))
    e[::7] = np.round(e[::7])  # ties on the effects side too
    e[5] = 0.25  # a constant effects row
    a[9] = 1.0  # a constant scores row
    ours, ref = M.spearman_rows(a, e), _scipy_rows(a, e)
    assert np.array_equal(np.isnan(ours), np.isnan(ref))
    assert np.isnan(ours[5]) and np.isnan(ours[9])
    np.testing.assert_allclose(ours[~np.isnan(ours)], ref[~np.isnan(ref)], atol=1e-12)


def test_faithfulness_counts_undefined_rows_and_excludes_them():
    scores = np.array([[1, 2, 3], [3, 2, 1], [1, 1, 1], [0, 5, 1]], dtype=float)
    effects = np.array([[0.1, 0.2, 0.3], [0.1, 0.2, 0.3], [0.3, 0.2, 0.1], [2, 2, 2]], dtype=float)
    f = M.faithfulness(scores, effects, n_boot=500, seed=3)
    assert (f.n_valid, f.n_undefined) == (2, 2)
    assert f.mean == pytest.approx(0.0)  # (+1 + −1) / 2; the constant rows are not averaged in as 0
    assert f.ci_low <= f.mean <= f.ci_high and -1 <= f.ci_low and f.ci_high <= 1
    assert M.faithfulness(scores, effects, n_boot=500, seed=3) == f  # seeded


def test_faithfulness_bootstrap_is_percentile_of_resampled_valid_rows():
    rng = np.random.default_rng(1)
    scores, effects = rng.normal(size=(50, 4)), rng.normal(size=(50, 4))
    f = M.faithfulness(scores, effects, n_boot=300, seed=7)
    rho = M.spearman_rows(scores, effects)
    boot = np.random.default_rng(7)
    means = [rho[boot.integers(0, 50, size=50)].mean() for _ in range(300)]
    assert (f.ci_low, f.ci_high) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert f.mean == pytest.approx(rho.mean())


def test_faithfulness_without_valid_rows_or_bootstrap():
    f = M.faithfulness(np.ones((3, 4)), np.random.default_rng(0).normal(size=(3, 4)), n_boot=100)
    assert np.isnan(f.mean) and f.n_valid == 0 and f.n_undefined == 3 and np.isnan(f.ci_low)
    g = M.faithfulness(np.eye(3), np.eye(3), n_boot=0)
    assert g.mean == pytest.approx(1.0) and np.isnan(g.ci_low) and np.isnan(g.ci_high)


def test_deletion_oracle_random_agreement_by_hand():
    # e = p − p_ablated; sample 0: layer 2 matters most; sample 1: layer 0.
    p = np.array([0.9, 0.8])
    p_abl = np.array([[0.8, 0.7, 0.3], [0.2, 0.8, 0.6]])
    effects = p[:, None] - p_abl  # [[.1, .2, .6], [.6, 0, .2]]
    scores = np.array(
        [
            [0.1, 0.5, 0.4],  # top layer 1 → drop .2
            [0.7, 0.2, 0.1],
        ]
    )  # top layer 0 → drop .6
    np.testing.assert_allclose(M.deletion_at_k(scores, p, p_abl), [0.2, 0.6])
    np.testing.assert_allclose(M.oracle_at_1(effects), [0.6, 0.6])
    np.testing.assert_allclose(M.random_at_1(effects), [0.3, 0.8 / 3])
    np.testing.assert_array_equal(M.top_layer_agreement(scores, effects), [False, True])
    # oracle's Deletion@1 is the oracle
    np.testing.assert_allclose(M.deletion_at_k(effects, p, p_abl), M.oracle_at_1(effects))
    p_topk = np.array([[0.7, 0.2, 0.1], [0.2, 0.1, 0.1]])
    np.testing.assert_allclose(M.deletion_curve(p, p_topk), [(0.2 + 0.6) / 2, (0.7 + 0.7) / 2, (0.8 + 0.7) / 2])


def test_ties_break_to_the_lower_layer():
    scores = np.array([[0.5, 0.5, 0.1], [0.1, 0.3, 0.3], [1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(M.top_order(scores)[:, 0], [0, 1, 0])
    np.testing.assert_array_equal(M.top_order(scores), [[0, 1, 2], [1, 2, 0], [0, 1, 2]])
    np.testing.assert_array_equal(M.tied_top_rows(scores), [True, True, True])


def test_per_class_means_and_faithfulness():
    values = np.array([[1.0, 0.0], [3.0, 2.0], [5.0, 5.0]])
    classes = np.array([0, 0, 2])
    out = M.per_class(values, classes, 3)
    np.testing.assert_allclose(out[0], [2.0, 1.0])
    assert np.isnan(out[1]).all()
    np.testing.assert_allclose(out[2], [5.0, 5.0])
    scores = np.array([[1.0, 2.0], [2.0, 1.0], [1.0, 1.0]])
    effects = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    pc = M.per_class_faithfulness(scores, effects, classes, 3)
    assert pc["n_valid"] == [2, 0, 0] and pc["n_undefined"] == [0, 0, 1]
    assert pc["mean"][0] == pytest.approx(0.0) and np.isnan(pc["mean"][1]) and np.isnan(pc["mean"][2])


def test_directions_are_stated():
    for key in ("faithfulness", "deletion_at_1", "top_layer_agreement", "ig_delta_abs_mean"):
        assert "better" in M.DIRECTIONS[key]


def test_directions_speak_of_the_effect_measured():
    """QA: with --effect logit (the default) summary.json and report.html said "drop of p_c" and
    "probability units" of effects measured on the target logit."""
    from laya_inspect.report.reading import relied_on

    logit, prob = M.directions("logit"), M.directions("prob")
    assert prob == M.DIRECTIONS and "p_c" in prob["deletion_at_1"]
    assert not any("p_c" in v or "probability units" in v for v in logit.values())
    assert "drop of the target logit z_c" in logit["deletion_at_1"] and "logit units" in logit["mean_effect"]
    head = {"name": "laya", "lolo": {"most_relied_on": [{"layer": "b2", "mean_effect": 3.79}]}}
    assert relied_on(head, "logit").endswith("(mean drop of the target logit +3.790).")
    assert relied_on(head).endswith("(mean drop of p +3.790).")


# ------------------------------------------------------------------------------ near-ties


def test_tolerant_ranks_are_average_ranks_at_zero_and_group_near_ties():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 4, size=(200, 7)).astype(float)
    np.testing.assert_array_equal(M.tolerant_ranks(x, 0.0), stats.rankdata(x, axis=1))
    # 0, 1e-7 and 5e-7 chain into one group (neighbours ≤ 1e-6 apart); 1 and 1 + 2e-7 form another
    y = np.array([[5e-7, 1.0, 0.0, 1 + 2e-7, 1e-7]])
    np.testing.assert_array_equal(M.tolerant_ranks(y, 1e-6), [[2, 4.5, 2, 4.5, 2]])
    np.testing.assert_array_equal(M.tolerant_ranks(y, 0.0), stats.rankdata(y, axis=1))


def test_near_tied_effects_count_as_ties_in_rho():
    scores = np.array([[3.0, 2.0, 1.0]])
    noisy = np.array([[0.5, 2e-9, 1e-9]])  # the two small effects differ by float64 noise only
    assert M.spearman_rows(scores, noisy)[0] == pytest.approx(1.0)  # exact: ordering noise earns +1
    assert M.spearman_rows(scores, noisy, tol=1e-6)[0] == pytest.approx(np.sqrt(3) / 2)  # tied
    # rows whose effects are all within the tolerance are undefined, like constant rows
    flat = np.array([[1e-9, 3e-9, 0.0]])
    assert not np.isnan(M.spearman_rows(scores, flat)[0]) and np.isnan(M.spearman_rows(scores, flat, 1e-6)[0])
    f = M.faithfulness(np.vstack([scores, scores]), np.vstack([noisy, flat]), n_boot=0, tol=1e-6)
    assert (f.n_valid, f.n_undefined, f.tie_tolerance) == (1, 1, 1e-6)


def test_near_tie_shares_by_hand():
    e = np.array(
        [
            [0.0, 1e-8, 2e-8],  # all tied
            [0.4, 0.4 + 1e-7, 0.1],  # top tied
            [0.5, 0.2, 0.2 + 1e-9],  # two small ones tied
            [0.5, 0.3, 0.1],  # no tie
        ]
    )
    ties = M.near_ties(e, 1e-6)
    assert (ties["all_tied_rows"], ties["top_tied_rows"], ties["any_tied_rows"]) == (1, 2, 3)
    assert ties["top_tied_share"] == 0.5 and ties["n_rows"] == 4
    np.testing.assert_array_equal(M.tied_rows(e, 1e-6), [True, False, False, False])
    np.testing.assert_array_equal(M.top_tied_rows(e, 0.0), [False, False, False, False])


def test_top_layer_agreement_accepts_a_layer_tied_with_the_top():
    e = np.array([[0.4, 0.4 + 1e-7, 0.1], [0.4, 0.6, 0.1]])
    scores = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(M.top_layer_agreement(scores, e), [False, False])
    np.testing.assert_array_equal(M.top_layer_agreement(scores, e, tol=1e-6), [True, False])


# ------------------------------------------------------------------------------ references, subsets, curves


def test_one_hot_top_and_what_it_earns_at_three_layers():
    e = np.array([[0.1, 0.7, 0.3], [0.9, 0.2, 0.1]])
    np.testing.assert_array_equal(M.one_hot_top(e), [[0, 1, 0], [1, 0, 0]])
    tied = np.array([[0.5, 0.5 + 1e-7, 0.1], [-0.2, 0.0, 0.0]])  # a tied top: every tied layer is marked
    np.testing.assert_array_equal(M.one_hot_top(tied, 1e-6), [[1, 1, 0], [0, 1, 1]])
    np.testing.assert_allclose(M.spearman_rows(M.one_hot_top(tied, 1e-6), tied, 1e-6), 1.0)
    # knowing only the top layer of three untied effects earns ρ = √3/2 ≈ 0.866 on every row
    np.testing.assert_allclose(M.spearman_rows(M.one_hot_top(e), e), np.sqrt(3) / 2)


def test_pearson_rows_match_scipy_and_mark_constant_rows():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(40, 6)), rng.normal(size=(40, 6))
    x[3] = 2.0
    y[5] = y[5, 0] + np.linspace(0, 1e-8, 6)  # spans less than the tolerance
    r = M.pearson_rows(x, y, tol_y=1e-6)
    for i in range(40):
        if i in (3, 5):
            assert np.isnan(r[i])
        else:
            assert r[i] == pytest.approx(stats.pearsonr(x[i], y[i]).statistic, abs=1e-12)


def test_subset_faithfulness_by_hand():
    subsets = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 1, 1]], dtype=bool)
    scores = np.array([[3.0, 1.0, 0.0]])
    np.testing.assert_array_equal(M.subset_sums(scores, subsets), [[3, 1, 4, 1]])
    additive = np.array([[0.3, 0.1, 0.4, 0.1]])  # effects = 0.1 × summed scores: r = 1
    f = M.subset_faithfulness(scores, subsets, additive, n_boot=0)
    assert f.mean == pytest.approx(1.0) and f.n_valid == 1
    reversed_ = np.array([[0.1, 0.3, 0.0, 0.3]])
    assert M.subset_faithfulness(scores, subsets, reversed_, n_boot=0).mean < -0.9
    flat = M.subset_faithfulness(scores, subsets, np.full((1, 4), 0.2), n_boot=0)
    assert flat.n_valid == 0 and flat.n_undefined == 1 and np.isnan(flat.mean)


def test_insertion_curve_and_areas_by_hand():
    p_keep = np.array([[0.5, 0.7, 0.9], [0.3, 0.5, 0.9]])
    np.testing.assert_allclose(M.insertion_curve(p_keep), [0.4, 0.6, 0.9])
    assert M.curve_area(np.array([0.4, 0.6, 0.9])) == pytest.approx(0.5)  # k = L left out
    assert np.isnan(M.curve_area(np.array([0.4])))


def test_a_tie_at_the_top_earns_a_share_of_the_credit_not_the_shallowest_layers():
    """QA: a row whose scores tie was credited by its first (shallowest) tied layer, so an
    uninformative method (every score equal) scored 1 wherever layer 0 had the largest effect. A row
    with k tied top layers now earns the share of them that hold the largest effect."""
    e = np.array([[0.9, 0.1, 0.0], [0.1, 0.9, 0.0], [0.1, 0.9, 0.0], [0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])
    scores = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(M.top_layer_agreement(scores, e), [1 / 3, 1 / 2, 1 / 2, 1.0, 2 / 3])
    # an uninformative method on rows whose shallowest layer matters most earns a random pick's credit
    flat = np.zeros((100, 4))
    shallow = np.tile([1.0, 0.2, 0.1, 0.0], (100, 1))
    assert M.top_layer_agreement(flat, shallow).mean() == pytest.approx(0.25)
    assert M.tied_top_rows(flat).sum() == 100  # the count of tied rows is kept beside it
    # untied rows: 1 or 0, as before
    np.testing.assert_array_equal(M.top_layer_agreement(np.eye(3), np.eye(3)[[0, 2, 2]]), [1.0, 0.0, 1.0])


def test_deletion_at_1_of_a_tie_at_the_top_is_the_mean_drop_of_the_tied_layers():
    """Deletion@1 took the first (shallowest) of the layers tied at the top score, so a method whose
    scores all tie scored the shallowest layer's drop. It is now the mean drop over the tied layers,
    the expected value of a uniform pick among them (the ties top-layer agreement shares among)."""
    p = np.array([1.0, 1.0, 1.0, 1.0])
    p_abl = np.array([[0.1, 0.7, 0.9], [0.1, 0.7, 0.9], [0.1, 0.7, 0.9], [0.1, 0.7, 0.9]])  # drops .9 .3 .1
    scores = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0], [0.0, 2.0, 2.0], [0.0, 2.0, 1.0]])
    np.testing.assert_allclose(M.deletion_at_k(scores, p, p_abl), [1.3 / 3, 0.6, 0.2, 0.3])
    # an uninformative method on rows whose shallowest layer matters most earns a random pick's drop
    e = np.tile([1.0, 0.2, 0.1, 0.0], (50, 1))
    flat = np.zeros((50, 4))
    np.testing.assert_allclose(M.deletion_at_k(flat, np.ones(50), 1.0 - e), M.random_at_1(e))
    # untied rows: the top-scored layer's drop, as before
    np.testing.assert_allclose(M.deletion_at_k(np.eye(3), p[:3], p_abl[:3]), [0.9, 0.3, 0.1])
