"""compare's sanity checks (docs/METHOD.md, "Sanity checks"): model randomisation changes α and leaves
the trained head alone, a head fitted on permuted labels is near chance where the real one is not, a
degenerate α is reported as undefined, --no-sanity writes no "sanity", and the CLI prints both checks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import fit_quickly
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.compare import metrics as M
from laya_inspect.compare import sanity as S
from laya_inspect.compare.attribution import AttributionOptions, attribute
from laya_inspect.compare.run import CompareConfig, compare_heads
from laya_inspect.head_dir import cache_identity, save_head

runner = CliRunner()


@pytest.fixture(scope="module")
def trained(digits_cache):
    with FeatureStore(digits_cache) as store:
        head = fit_quickly("laya", store, 40)
        hs = [torch.from_numpy(h) for h in store.layers("test")]
        labels = store.labels("test").astype(np.int64)
    return head, hs, labels


def _state(head):
    return {k: v.detach().clone() for k, v in head.state_dict().items()}


def test_reinitialised_alpha_differs_and_trained_head_is_untouched(trained):
    head, hs, labels = trained
    before = _state(head)
    target = labels
    alpha = attribute("alpha", head, hs, target).scores
    new = S.fresh(head, S.seeds(0)["init_seed"])
    steps = S.cascade(head)
    assert [s for s, _ in steps] == ["top", "all"]
    assert not any(n.startswith("adapters.") for n in steps[0][1]) and any(n.startswith("scorer.") for n in steps[0][1])
    for _, names in steps:
        rand = S.randomised(head, new, names)
        alpha_r = attribute("alpha", rand, hs, target).scores
        rank = M.summarise_rows(M.spearman_rows(alpha_r, alpha, 0.0), n_boot=200, seed=0)
        assert rank.n_valid > 0.9 * len(labels)
        assert rank.mean < 0.5, rank  # far from the 1.0 an unchanged α gives
        holds = rank.ci_low <= 0 <= rank.ci_high or max(-rank.ci_low, rank.ci_high) <= S.band(alpha.shape[1])
        inside = -S.THRESHOLD < rank.ci_low and rank.ci_high < S.THRESHOLD
        expected = (
            "low" if holds else "partly kept" if inside else "high" if abs(rank.mean) >= S.THRESHOLD else "unclear"
        )
        assert S.verdict(rank, alpha.shape[1]) == expected
    after = _state(head)
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)  # the trained head's weights, bit for bit
    # the same α compared with itself: ρ = 1, "high"
    same = M.summarise_rows(M.spearman_rows(alpha, alpha, 0.0), n_boot=100, seed=0)
    assert same.mean == pytest.approx(1.0) and S.verdict(same, alpha.shape[1]) == "high"


def _noise_heads_versus(rows: int, n_layers: int = 5, head_seed: int = 1, init_seed: int = 123) -> dict:
    """The α check of a LAYA head on ``rows`` rows of i.i.d. noise layers against a fully re-initialised
    copy (random LOLO effects, 200 resamples)."""
    from laya_inspect.heads import LayaHead

    gen = torch.Generator().manual_seed(0)
    hs = [torch.randn(rows, 8, generator=gen) for _ in range(n_layers)]
    target = np.zeros(rows, dtype=np.int64)
    torch.manual_seed(head_seed)
    head = LayaHead([8] * n_layers, 3, d_star=8).eval()
    other = S.randomised(head, S.fresh(head, init_seed), [n for _, names in S.cascade(head)[-1:] for n in names])
    a = attribute("alpha", head, hs, target).scores
    effects = np.random.default_rng(0).random(a.shape)
    return S.Trained(hs, target, {"alpha": a}, effects, AttributionOptions(), 200, 0).versus(other)["alpha"]


def test_unrelated_heads_on_noise_agree_a_little_and_do_not_pass():
    """Two LAYA heads of different seeds on i.i.d. noise layers still rank the layers a little alike, as
    they read the same rows: ρ +.10 [+.05, +.14] over 400 rows, away from the random reference's 0 and
    beyond ±6/(L(L²−1)) = ±0.05 for 5 layers, so "partly kept", not passed, the reference in its note
    (before, any interval inside ±0.5 read "low" and passed)."""
    out = _noise_heads_versus(400)
    rank = out["rank_correlation"]
    assert 0 < rank["ci_low"] and rank["ci_high"] < 0.5, out
    assert out["verdict"] == "partly kept" and out["passed"] is False
    assert out["note"] == _kept_note(rank, 3, "0.050"), out


def _kept_note(rank: dict, places: int, band: str) -> str:
    """A "partly kept" note: ρ and its interval in ``places`` decimals, then the band it missed."""
    mean, lo, hi = (f"{rank[k]:+.{places}f}" for k in ("mean", "ci_low", "ci_high"))
    return f"ρ {mean} [{lo}, {hi}]: its interval neither holds the random reference's 0 nor stays within ±{band}"


def test_a_partly_kept_note_reads_the_interval_its_verdict_was_given_on():
    """The verdict is read on the interval, and so is its note: a mean inside ±6/(L(L²−1)) = ±0.25 (3
    layers) with an upper bound past it is "partly kept" for the bound, and the note said "ρ +0.17
    against the random reference's 0, beyond ±0.25" of that mean, which is not beyond it."""
    out = _noise_heads_versus(200, n_layers=3, head_seed=2)
    rank = out["rank_correlation"]
    assert 0 < rank["ci_low"] and abs(rank["mean"]) < S.band(3) < rank["ci_high"], out
    assert out["verdict"] == "partly kept" and out["passed"] is False
    assert out["note"] == _kept_note(rank, 2, "0.25"), out


def test_a_partly_kept_note_gives_a_narrow_band_in_significant_digits():
    """From 11 layers the band ±6/(L(L²−1)) is under 0.005, and the note said "beyond ±0.00"; for 12
    it is ±0.0035, and ρ and its interval come with as many decimals, so they can be read against it."""
    out = _noise_heads_versus(200, n_layers=12, init_seed=8)
    rank = out["rank_correlation"]
    assert out["verdict"] == "partly kept" and 0 < rank["ci_low"], out
    assert out["note"] == _kept_note(rank, 4, "0.0035"), out


def test_a_partly_kept_note_without_an_interval_reads_the_one_number():
    """One profile for every row has no interval (ρ is one number): the note reads that number against
    both nulls, and with 2 layers (no band) against 0 alone."""
    one = M.Faithfulness(0.3, float("nan"), float("nan"), n_valid=256, n_undefined=0, n_boot=0, seed=0)
    assert S.verdict(one, 3) == "partly kept"
    assert S.partly_kept(one, 3) == "ρ +0.30: neither the random reference's 0 nor within ±0.25"
    assert (
        S.partly_kept(_rank(0.3, 0.2, 0.4), 2)
        == "ρ +0.30 [+0.20, +0.40]: its interval does not hold the random reference's 0"
    )


def _rank(mean: float, low: float, high: float) -> M.Faithfulness:
    return M.Faithfulness(mean, low, high, n_valid=256, n_undefined=0, n_boot=1000, seed=0)


def test_interval_away_from_zero_is_partly_kept_not_passed():
    """The null of "the ranking ignores what the head learned" is ρ 0 (the random reference's): the
    audit's gradcam +.37 [+.29, +.44] on a randomised head lies inside ±0.5 yet far from 0, so it is
    "partly kept", not "low" (before, any interval inside ±0.5 passed)."""
    assert S.verdict(_rank(0.37, 0.29, 0.44), 3) == "partly kept"
    assert S.verdict(_rank(0.37, 0.29, 0.44), 12) == "partly kept"
    assert S.verdict(_rank(0.05, -0.03, 0.12), 12) == "low"  # holds 0
    assert S.band(3) == pytest.approx(0.25) and S.band(4) == pytest.approx(0.1)
    assert S.verdict(_rank(0.12, 0.03, 0.20), 3) == "low"  # away from 0, within ±6/(L(L²−1)) = ±0.25
    assert S.verdict(_rank(0.12, 0.03, 0.20), 4) == "partly kept"  # the band is ±0.1 for 4 layers
    assert S.verdict(_rank(0.45, 0.40, 0.55), 3) == "unclear" and S.verdict(_rank(0.7, 0.6, 0.8), 3) == "high"


def test_too_few_rows_are_no_pass():
    """compare reads no verdict on fewer than MIN_ROWS rows (a percentile bootstrap over them is no
    95% interval); the sanity check read "low" (passed) there, from an interval over 12 rows."""
    from laya_inspect.choices import MIN_ROWS

    out = _noise_heads_versus(12)
    assert out["rank_correlation"]["n_valid"] == 12 < MIN_ROWS
    assert out["verdict"] == "too few rows" and out["passed"] is False


def test_no_resamples_are_no_pass():
    """With --bootstrap 0 compare reads no method against the constant rule ("untested"), but the
    sanity check read the mean alone against ±0.5 and passed it ("low") with no interval at all."""
    from laya_inspect.heads import LayaHead

    gen = torch.Generator().manual_seed(0)
    hs = [torch.randn(400, 8, generator=gen) for _ in range(5)]
    target = np.zeros(400, dtype=np.int64)
    torch.manual_seed(1)
    head = LayaHead([8] * 5, 3, d_star=8).eval()
    other = S.randomised(head, S.fresh(head, 123), [n for _, names in S.cascade(head)[-1:] for n in names])
    a = attribute("alpha", head, hs, target).scores
    effects = np.random.default_rng(0).random(a.shape)
    out = S.Trained(hs, target, {"alpha": a}, effects, AttributionOptions(), 0, 0).versus(other)["alpha"]
    assert abs(out["rank_correlation"]["mean"]) < 0.15 and np.isnan(out["rank_correlation"]["ci_low"])
    assert out["verdict"] == "untested" and out["passed"] is False


def test_scalarmix_weights_near_uniform_are_undefined_and_one_profile_has_no_interval():
    """QA: a permuted-label ScalarMix head's weights lay within 0.4% of 1/7 (fit-head calls that "still
    uniform"); ranked anyway, they gave ρ −0.61 with a 95% interval [−0.61, −0.61] "over 256 rows", one
    profile repeated, read "high" (failed), while an exactly uniform profile was "undefined"."""
    from laya_inspect.heads import ScalarMixHead

    gen = torch.Generator().manual_seed(0)
    hs = [torch.randn(64, 4, generator=gen) for _ in range(7)]
    target = np.zeros(64, dtype=np.int64)

    def mix(scalars):
        head = ScalarMixHead([4] * 7, 3).eval()
        with torch.no_grad():
            head.scalars.copy_(torch.tensor(scalars))
        return head

    trained = mix([2.0, 1.5, 1.0, 0.5, 0.0, -0.5, -1.0])
    scores = attribute("static", trained, hs, target).scores
    effects = np.random.default_rng(0).random(scores.shape)
    reader = S.Trained(hs, target, {"static": scores}, effects, AttributionOptions(), 200, 0)
    near = reader.versus(mix([0.003, -0.002, 0.001, 0.0, -0.001, 0.002, -0.003]))["static"]
    assert near["verdict"] == "undefined" and near["passed"] is False
    assert near["note"].startswith("the randomised weights stay within 10% of 1/7")
    assert near["rank_correlation"]["n_valid"] == 0
    far = reader.versus(mix([-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0]))["static"]  # reversed: ρ −1, one profile
    assert far["verdict"] == "high" and far["rank_correlation"]["mean"] == pytest.approx(-1.0)
    assert far["rank_correlation"]["n_boot"] == 0 and far["note"].startswith("one profile for every row")
    rho = np.array([0.2, -0.1])  # attributions that vary over rows: read as before
    assert S.one_profile(rho, np.array([[0.1, 0.9], [0.8, 0.2]]), np.array([[0.5, 0.5], [0.4, 0.6]]))[1] is None


def test_near_uniform_scalarmix_weights_have_no_faithfulness_either():
    """QA (MobileNetV2 on CIFAR-10 JPEGs): the permuted-label ScalarMix head's weights lay within 1% of
    1/19; the sanity table said "no ranking of the layers" and ρ "—", yet showed faith −.30 from
    ranking those same weights, while the exactly uniform re-initialised ones read "—"."""
    from laya_inspect.heads import ScalarMixHead

    gen = torch.Generator().manual_seed(0)
    hs = [torch.randn(64, 4, generator=gen) for _ in range(7)]
    target = np.zeros(64, dtype=np.int64)
    head = ScalarMixHead([4] * 7, 3).eval()
    scores = attribute("static", head, hs, target).scores
    effects = np.tile(np.arange(7.0), (64, 1)) + np.random.default_rng(0).random((64, 7))  # deeper: larger
    reader = S.Trained(hs, target, {"static": scores}, effects, AttributionOptions(), 200, 0)
    with torch.no_grad():
        head.scalars.copy_(torch.tensor([-0.003, -0.002, -0.001, 0.0, 0.001, 0.002, 0.003]))  # by depth, 0.6%
    near = reader.versus(head)["static"]
    assert near["note"].startswith("the randomised weights stay within 10% of 1/7")
    assert np.isnan(near["faithfulness"]["mean"]) and near["faithfulness"]["n_valid"] == 0, near["faithfulness"]


def test_degenerate_alpha_is_undefined_not_low(trained):
    """A head whose α is the same for every layer (scorer zeroed): every row's ranking is undefined,
    reported as such, never as a pass."""
    head, hs, labels = trained
    flat = S.randomised(head, head, [])
    with torch.no_grad():
        for p in flat.scorer.parameters():
            p.zero_()
    alpha = attribute("alpha", flat, hs, labels).scores
    assert np.allclose(alpha, 1 / 3)
    effects = np.random.default_rng(0).random(alpha.shape)
    out = S.Trained(hs, labels, {"alpha": alpha}, effects, AttributionOptions(), 50, 0).versus(flat)["alpha"]
    assert out["verdict"] == "undefined" and out["passed"] is False
    assert out["rank_correlation"]["n_valid"] == 0 and out["rank_correlation"]["n_undefined"] == len(labels)


def test_permuted_labels_head_is_near_chance(digits_cache, trained):
    head, hs, labels = trained
    with FeatureStore(digits_cache) as store:
        s = S.seeds(0)
        rows = S.training_rows(store, "train", s["permutation_seed"])
        settings = S.training_settings({})
        seeds = {"permutation_seed": s["permutation_seed"], "fit_seed": s["fit_seed"]}
        perm, info = S.permuted_head(head, rows, settings, **seeds)
    acc = float((S._predict(perm, hs, 512)[0] == labels).mean())
    real = float((S._predict(head, hs, 512)[0] == labels).mean())
    chance = np.bincount(labels).max() / len(labels)
    binomial = chance + 1.96 * np.sqrt(chance * (1 - chance) / len(labels))
    assert real > 0.8 > binomial, real  # the real head has learned the digits
    assert acc <= chance + 0.5 * (real - chance), (acc, chance, real)  # kept less than half the real gain
    assert acc < 0.25, acc  # and on this cache it is in fact close to chance (0.10)
    assert 1 <= info["epochs_run"] <= S.EPOCHS and info["settings"]["source"].startswith("fit-head's defaults")


def test_a_head_at_chance_passes_no_permuted_label_check(digits_cache, trained):
    """QA: a LAYA head at chance (0.12, chance 0.14: the real verdict "near chance", the check's own
    verdict "undefined") still read "low", passed, for every method's permuted-label row: two heads
    that both learned nothing from the labels rank the layers unalike, which says nothing about
    whether a method reads what the head learned from them."""
    head, hs, labels = trained
    with FeatureStore(digits_cache) as store:
        rows = S.training_rows(store, "train", 0)
    target = labels
    scores = {"alpha": attribute("alpha", head, hs, target).scores}
    effects = np.random.default_rng(0).random(scores["alpha"].shape)
    reader = S.Trained(hs, target, scores, effects, AttributionOptions(), 100, 0)
    chance = float(np.bincount(labels).max() / len(labels))
    out = S.data_randomisation(head, {}, rows, hs, labels, reader, chance, {})
    assert out["real_verdict"] == "near chance" and out["verdict"] == "undefined" and not out["passed"]
    alpha = out["methods"]["alpha"]
    assert alpha["verdict"] == "undefined" and alpha["passed"] is False
    assert alpha["note"].startswith("the real head is not above chance")
    assert np.isfinite(alpha["rank_correlation"]["mean"])  # the correlation is kept, only not read


def test_the_permuted_label_head_holds_out_as_many_rows_as_the_head_did(digits_cache, trained):
    """compare died on a 9-row training split ("leaves 9 training and 0 validation rows"): its
    permuted-label head held out a fixed 10%, where the head had been fitted with --val-fraction 0.3."""
    from laya_inspect.errors import InputError

    head, _, _ = trained
    assert S.training_settings({"split": {"val_fraction": 0.3}})["val_fraction"] == 0.3
    assert S.training_settings({"split": {"val_fraction": "x"}})["val_fraction"] == 0.1
    with FeatureStore(digits_cache) as store:
        feats, labels = S.training_rows(store, "train", 0)
    pick = np.flatnonzero(labels < 2)[:9]
    rows = ([f[pick] for f in feats], labels[pick])
    seeds = {"permutation_seed": 1, "fit_seed": 2}
    with pytest.raises(InputError, match="0 validation rows"):
        S.permuted_head(head, rows, S.training_settings({}), **seeds)
    _, info = S.permuted_head(head, rows, S.training_settings({"split": {"val_fraction": 0.3}}), **seeds)
    assert info["val_fraction"] == 0.3 and info["n_val"] >= 2 and info["n_train"] + info["n_val"] == 9


def _heads(digits_cache, root: Path) -> list[Path]:
    with FeatureStore(digits_cache) as store:
        return [
            save_head(root / k, fit_quickly(k, store, 40), meta=cache_identity(store) | {"trained_by": "test"})
            for k in ("laya", "last")
        ]


@pytest.fixture(scope="module")
def head_dirs(digits_cache, tmp_path_factory):
    return _heads(digits_cache, tmp_path_factory.mktemp("heads"))


def test_no_sanity_leaves_no_key(digits_cache, head_dirs, tmp_path):
    config = CompareConfig(limit=60, n_boot=0, device="cpu", plots=False, sanity=False, methods=("alpha",))
    with FeatureStore(digits_cache) as store:
        result = compare_heads(head_dirs[:1], store, config, out_dir=tmp_path / "out")
    assert "sanity" not in result.summary
    assert "sanity" not in json.loads((tmp_path / "out" / "summary.json").read_text())


@pytest.mark.slow
def test_compare_cli_writes_and_prints_sanity(digits_cache, head_dirs, tmp_path):
    out = tmp_path / "out"
    args = ["compare", *map(str, head_dirs), "--cache", str(digits_cache), "--limit", "150", "--bootstrap", "200"]
    result = runner.invoke(app, [*args, "--out", str(out), "--device", "cpu", "--no-plots"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    sanity = summary["sanity"]
    assert sanity["choices"]["threshold"] == S.THRESHOLD and sanity["choices"]["epochs"] == S.EPOCHS
    laya = sanity["heads"]["laya"]
    assert set(laya["methods"]) == {"alpha", "alpha-contrib", "ig", "gradcam"}
    assert [s["step"] for s in laya["model"]] == ["top", "all"]
    for step in laya["model"]:
        assert set(step["methods"]) == set(laya["methods"])
        alpha = step["methods"]["alpha"]
        assert alpha["rank_correlation"]["mean"] < 0.5
        assert alpha["verdict"] in ("low", "partly kept", "unclear", "high")
        assert alpha["passed"] == (alpha["verdict"] == "low")
        assert alpha["trained_faithfulness"]["mean"] == pytest.approx(
            summary["heads"][0]["methods"]["alpha"]["faithfulness"]["mean"]
        )
    data = laya["data"]
    assert data["verdict"] == "near chance" and data["real_verdict"] == "above chance"
    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.training.chance import chance_level

    with FeatureStore(digits_cache) as store:  # the split's majority share, not the --limit 150 subset's
        assert data["chance"] == pytest.approx(chance_level(store.labels("test")))
    assert len(data["weight_profile"]) == 3 and abs(sum(data["weight_profile"]) - 1) < 1e-6
    assert set(data["methods"]) == set(laya["methods"])
    last = sanity["heads"]["last"]
    assert [s["step"] for s in last["model"]] == ["top"] and last["data"]["weight_profile"] is None
    text = result.output
    assert "sanity" in text and "permuted labels" in text and "re-initialised" in text
    block = text.splitlines()[next(i for i, line in enumerate(text.splitlines()) if ": sanity (" in line) :]
    assert max(len(line) for line in block) <= 80 and "…" not in "\n".join(block), text
    rows = [line.split() for line in block if line.split()[:1] == ["alpha"]]
    assert rows and rows[0][1] == "top", block
    assert " ".join(rows[0][4:-2]) in ("low", "partly kept", "high", "unclear", "undefined"), block
    csv_text = (out / "summary.csv").read_text()
    # every sanity number recomputes from attributions.h5 (the trained head) and sanity.h5 (the randomised ones)
    import h5py

    with h5py.File(out / "attributions.h5") as a, h5py.File(out / "sanity.h5") as z:
        rows = z["heads/laya/rows"][()]
        trained = a["heads/laya/methods/alpha/scores"][()][rows]
        effects = a["heads/laya/effects"][()][rows]
        for check, entry in [("top", laya["model"][0]["methods"]), ("labels", laya["data"]["methods"])]:
            randomised = z[f"heads/laya/{check}/alpha"][()]
            rho = M.spearman_rows(randomised, trained, 0.0)
            assert np.nanmean(rho) == pytest.approx(entry["alpha"]["rank_correlation"]["mean"], abs=1e-12)
            faith = M.faithfulness(randomised, effects, n_boot=0, tol=summary["tie_tolerance"])
            assert faith.mean == pytest.approx(entry["alpha"]["faithfulness"]["mean"], abs=1e-12)
        accuracy = (z["heads/laya/labels/preds"][()] == a["labels"][()]).mean()
        assert accuracy == pytest.approx(data["accuracy"]) and len(rows) == laya["rows"] == 150
    assert summary["files"]["sanity"] == "sanity.h5" and "sanity.h5" in text.split("wrote")[-1]
    assert "sanity:top" in csv_text and "sanity:labels" in csv_text and "rank_correlation_verdict" in csv_text
    assert (out / "report.html").read_text().count("Sanity") >= 1


@pytest.mark.parametrize(
    "heads",
    [{"laya": {"model": "top", "data": {}}}, {"laya": {"model": [], "data": {"methods": {}, "accuracy": "high"}}}],
)
def test_damaged_sanity_is_refused_in_one_line(heads):
    from laya_inspect.errors import CacheError
    from laya_inspect.report.sanity import html_section, terminal_block

    summary = {"heads": [], "sanity": {"choices": {"threshold": 0.5}, "heads": heads}}
    for render in (terminal_block, html_section):
        with pytest.raises(CacheError, match=r"summary.json: sanity\.heads\.laya.* rerun `laya-inspect compare`"):
            render(summary)
    assert terminal_block({"heads": []}) == [] and html_section({"heads": []}) is None  # --no-sanity, older runs


def test_heads_of_different_seeds_each_meet_their_own_null(digits_cache, tmp_path):
    """compare's sanity checks drew the re-initialisation and the label permutation from compare's --seed
    alone: every head seed met the same permuted-label head, one draw of the null repeated."""
    with FeatureStore(digits_cache) as store:
        meta = cache_identity(store) | {"trained_by": "test"}
        heads = [fit_quickly("laya", store, steps) for steps in (40, 41)]
        dirs = [save_head(tmp_path / f"seed_{s}", h, meta=meta | {"seed": s}) for s, h in enumerate(heads)]
        config = CompareConfig(limit=60, n_boot=0, device="cpu", plots=False, methods=("alpha",), workers=1)
        summary = compare_heads(dirs, store, config, out_dir=tmp_path / "out").summary
    (a, b), drawn = summary["sanity"]["heads"].values(), [S.seeds(0, s) for s in (0, 1)]
    assert [a["seeds"], b["seeds"]] == drawn and drawn[0] != drawn[1]
    assert "init_seed" not in summary["sanity"]["choices"] and "fit seed" in summary["sanity"]["choices"]["seeds"]
    import h5py

    with h5py.File(tmp_path / "out" / "sanity.h5") as z:
        preds = [z[f"heads/{name}/labels/preds"][()] for name in summary["sanity"]["heads"]]
    assert not np.array_equal(*preds)
    assert S.seeds(0) == S.seeds(0, None) and S.head_seed({"seed": True}) is None and S.head_seed({"seed": 3}) == 3


def test_the_real_heads_near_chance_names_its_own_bound(digits_cache, trained):
    """QA (MiniLM on 21 test texts): "near-chance bound 0.310); the real head 0.381 (near chance)" read
    as a contradiction: 0.310 is the permuted head's bound, and the real head's (chance + 1.96 SE,
    0.420 there) was not said."""
    from laya_inspect.report.sanity import data_line

    head, hs, labels = trained
    with FeatureStore(digits_cache) as store:
        rows = S.training_rows(store, "train", 0)
    scores = {"alpha": attribute("alpha", head, hs, labels).scores}
    effects = np.random.default_rng(0).random(scores["alpha"].shape)
    reader = S.Trained(hs, labels, scores, effects, AttributionOptions(), 100, 0)
    chance = float(np.bincount(labels).max() / len(labels))
    real = chance + 0.6 * 1.96 * np.sqrt(chance * (1 - chance) / len(labels))  # above the permuted bound
    out = S.data_randomisation(head, {}, rows, hs, labels, reader, real, {})
    bound = chance + 1.96 * np.sqrt(chance * (1 - chance) / len(labels))
    line = data_line(out, "laya")
    assert out["real_verdict"] == "near chance" and f"near chance: not above {bound:.3f}" in line, line
    assert out["real_above_bound"] == pytest.approx(bound)


def test_a_head_that_reads_one_layer_is_not_applicable_not_passed(digits_cache, head_dirs, tmp_path):
    """A 'last' head reads one layer: Grad-CAM and IG of the trained head and of any randomised copy are
    0 on every other layer, so each row's ρ is ±1 from one sign and its mean reads the signs (the demo's
    'last' head read "4 of 4 low", passed). Every check reads "not applicable", neither passed nor
    failed, in summary.json, the terminal and report.html; a LAYA head beside it is read as before."""
    from rich.console import Console

    from laya_inspect.report.sanity import html_section, terminal_block

    config = CompareConfig(limit=80, n_boot=50, device="cpu", plots=False, methods=("gradcam", "ig"), workers=1)
    with FeatureStore(digits_cache) as store:
        summary = compare_heads(head_dirs, store, config, out_dir=tmp_path / "out").summary
    laya, last = summary["sanity"]["heads"]["laya"], summary["sanity"]["heads"]["last"]
    checks = [*last["model"][0]["methods"].values(), *last["data"]["methods"].values()]
    assert len(checks) == 4 and all(c["verdict"] == "not applicable" and c["passed"] is None for c in checks)
    assert all("the one the head reads" in c["note"] for c in checks)
    assert last["layers_read"] == [2] and laya["layers_read"] == [0, 1, 2]
    assert last["data"]["verdict"] in ("near chance", "above chance")  # its accuracy is still read against chance
    laya_checks = [c for step in laya["model"] for c in step["methods"].values()]
    assert all(c["verdict"] != "not applicable" and isinstance(c["passed"], bool) for c in laya_checks)
    for brief in (True, False):
        console = Console(width=80, record=True, color_system=None)
        for r in terminal_block(summary, brief):
            console.print(r)
        text = " ".join(console.export_text().split())
        assert "not applicable (the head reads one layer)" in text, text
        assert "last: 0 of" not in text
    section = html_section(summary)
    assert section is not None
    last_table = next(t for t in section.tables if t.caption.startswith("last:"))
    assert "not applicable (the head reads one layer)" in last_table.caption


def test_compare_finds_the_layers_each_head_reads_once(digits_cache, head_dirs, tmp_path, monkeypatch):
    """compare finds the layers each head's logits depend on once, on the rows the sanity checks compare,
    and hands that answer to the checks: one layer test per head, not a second one inside the checks over
    the same rows, and the head's record and its sanity record say the same layers."""
    tested: list[int] = []
    real = S.layers_read

    def counted(head, hs):
        tested.append(len(hs[0]))
        return real(head, hs)

    monkeypatch.setattr(S, "layers_read", counted)
    config = CompareConfig(limit=60, n_boot=20, device="cpu", plots=False, methods=("gradcam",), workers=1)
    with FeatureStore(digits_cache) as store:
        summary = compare_heads(head_dirs, store, config, out_dir=tmp_path / "out").summary
    assert tested == [60, 60]  # one test per head (laya, last), on the 60 compared rows
    read = {h["name"]: h["layers_read"] for h in summary["heads"]}
    assert read == {"laya": [0, 1, 2], "last": [2]}
    assert {name: h["layers_read"] for name, h in summary["sanity"]["heads"].items()} == read


def test_a_passed_heads_line_gives_the_bound_permuted_labels_were_read_against():
    """QA: the one-line view said "permuted labels near chance (0.211 vs 0.103)", which reads as twice chance
    called near it; the rule is chance plus half the real head's gain (here 0.540), which the line now gives."""
    from laya_inspect.report.sanity import passed

    check = {"verdict": "low", "rank_correlation": {"mean": 0.01, "ci": [-0.1, 0.1]}}
    data = {"verdict": "near chance", "accuracy": 0.211, "chance": 0.103, "near_chance_bound": 0.540}
    line = passed("laya-seed_1", [("ig", "top", check)], data)
    assert line is not None
    assert "(0.211 vs chance 0.103, below its bound 0.540)" in line.plain, line.plain


def test_two_layers_unchanged_ranking_is_not_low():
    """With 2 layers the band 6/(L(L²−1)) is 1, every ρ: a ranking the randomisation left unchanged
    (ρ +1 on every row, interval [1, 1]) read "low", passed. With 2 layers the interval must hold 0."""
    rng = np.random.default_rng(0)
    scores = rng.random((64, 2))
    rank = M.summarise_rows(M.spearman_rows(scores, scores, 0.0), n_boot=200, seed=0)
    assert (rank.ci_low, rank.ci_high) == (1.0, 1.0)
    assert S.band(2) == 0.0 and S.verdict(rank, 2) == "high"
    assert S.verdict(_rank(0.3, 0.2, 0.4), 2) == "partly kept"  # away from 0: no band to stay within
    assert S.verdict(_rank(0.05, -0.1, 0.2), 2) == "low"  # holds 0


def test_an_interval_holding_zero_but_reaching_the_threshold_is_unclear():
    """Holding 0 is not enough: [−0.2, +0.9] reaches the "high" zone, so the randomised ranking may
    still follow the trained one; it reads "unclear", not "low"."""
    assert S.verdict(_rank(0.35, -0.2, 0.9), 5) == "unclear"
    assert S.verdict(_rank(-0.35, -0.9, 0.2), 5) == "unclear"
    assert S.verdict(_rank(0.0, -0.5, 0.4), 5) == "unclear"  # reaches −0.5 itself
    assert S.verdict(_rank(0.1, -0.2, 0.45), 5) == "low"


def test_a_partly_kept_check_shows_its_interval_in_the_one_line_view():
    from laya_inspect.report.sanity import passed

    data = {"verdict": "near chance", "accuracy": 0.1, "chance": 0.1, "near_chance_bound": 0.5}
    kept = {"verdict": "partly kept", "rank_correlation": {"mean": 0.37, "ci_low": 0.29, "ci_high": 0.44}}
    low = {"verdict": "low", "rank_correlation": {"mean": 0.01, "ci_low": -0.1, "ci_high": 0.1}}
    line = passed("laya", [("gradcam", "top", kept), ("ig", "top", low)], data)
    assert line is not None and "1 partly kept (gradcam top +.37 [+.29,+.44])" in line.plain, line.plain
