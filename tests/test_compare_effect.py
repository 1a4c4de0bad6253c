"""compare --effect logit|prob: the recombined and the stacked passes agree on logits, measure() and the
references use the chosen quantity, and end to end the value is recorded (summary.json, attributions.h5,
the terminal header), p is the target logit or probability of the stored logits, Deletion@1 and the
oracle are read from it; `compare --method alpha-contrib` runs and is marked circular with mix."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from helpers import fit_quickly, settings_said
from test_compare_factored import CASES, _case, _sets
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.compare import metrics as M
from laya_inspect.compare.config import CompareConfig
from laya_inspect.compare.effects import Remover, measure
from laya_inspect.compare.lolo import ablate_sets
from laya_inspect.errors import InputError
from laya_inspect.head_dir import cache_identity, save_head

runner = CliRunner()


@pytest.mark.parametrize(("kind", "ablation", "psi"), [c for c in CASES if c[2] == "identity"])
def test_recombined_parts_equal_the_stacked_forward_on_logits(kind, ablation, psi):
    head, hs, means, donors, target = _case(kind, psi)
    sets = _sets(len(target), len(hs))
    kw = {"batch_size": 7, "donors": donors, "draws": 3, "seed": 1, "effect": "logit"}
    fast = ablate_sets(head, hs, target, sets, ablation, means, **kw)
    slow = ablate_sets(head, hs, target, sets, ablation, means, stacked=True, **kw)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    # the intact column of the LOLO set is the target logit itself
    with torch.no_grad():
        logits = head(hs).logits.double().numpy()
    np.testing.assert_allclose(fast[0][:, 0], logits[np.arange(len(target)), target], atol=1e-12)


def test_measure_reads_everything_from_the_chosen_quantity():
    head, hs, means, _, target = _case("laya")
    logit = measure(Remover(head, hs, target, "mean", baselines=means, effect="logit"), seed=0)
    prob = measure(Remover(head, hs, target, "mean", baselines=means, effect="prob"), seed=0)
    assert logit.params["effect"] == "logit" and prob.params["effect"] == "prob"
    with torch.no_grad():
        logits = head(hs).logits.double()
    rows = np.arange(len(target))
    np.testing.assert_allclose(logit.p, logits.numpy()[rows, target], atol=1e-12)
    np.testing.assert_allclose(prob.p, torch.softmax(logits, -1).numpy()[rows, target], atol=1e-12)
    for m in (logit, prob):  # the oracle's first point is the largest effect of the same quantity
        np.testing.assert_allclose(m.p - m.oracle.p_topk[:, 0], M.oracle_at_1(m.effects), atol=1e-12)
    assert np.abs(logit.effects - prob.effects).max() > 1e-3


def test_config_refuses_an_unknown_effect():
    assert CompareConfig().effect == "logit"
    with pytest.raises(InputError, match="--effect must be one of logit, prob, got 'probability'"):
        CompareConfig(effect="probability")


@pytest.fixture(scope="module")
def laya_dir(digits_cache, tmp_path_factory) -> Path:
    with FeatureStore(digits_cache) as store:
        head = fit_quickly("laya", store, 40)
        return save_head(tmp_path_factory.mktemp("heads") / "laya", head, meta=cache_identity(store))


def _compare(digits_cache: Path, head: Path, out: Path, *extra: str):
    args = ["compare", str(head), "--cache", str(digits_cache), "--limit", "60", "--bootstrap", "50"]
    result = runner.invoke(
        app, [*args, "--seed", "1", "--no-plots", "--device", "cpu", "--out", str(out), *extra], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    return result, json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("effect", ["logit", "prob", None])
def test_effect_end_to_end(digits_cache, laya_dir, tmp_path, effect):
    extra = [] if effect is None else ["--effect", effect]
    result, summary = _compare(digits_cache, laya_dir, tmp_path / "out", "--method", "alpha,ig", *extra)
    want = effect or "logit"  # the default
    assert summary["effect"] == want and summary["config"]["effect"] == want
    given, _, left = settings_said(result.output).partition("; left at their defaults: ")
    # stated either way; a value equal to the default reads as left at it
    assert f"effect {want}" in (left if want == "logit" else given), (given, left)
    assert "subset ρ chance floor (the random reference's)" in result.output
    head = summary["heads"][0]
    assert head["lolo"]["params"]["effect"] == want
    with h5py.File(tmp_path / "out" / "attributions.h5", "r") as f:
        assert f.attrs["effect"] == want
        g = f["heads"][head["name"]]
        logits, targets, p, p_abl = g["logits"][()], g["targets"][()], g["p"][()], g["p_ablated"][()]
    rows = np.arange(len(targets))
    if want == "logit":
        np.testing.assert_allclose(p, logits[rows, targets], rtol=1e-6, atol=1e-6)
    else:
        e = np.exp(logits - logits.max(1, keepdims=True))
        np.testing.assert_allclose(p, (e / e.sum(1, keepdims=True))[rows, targets], rtol=1e-6, atol=1e-6)
    effects = p[:, None] - p_abl
    assert head["lolo"]["oracle_at_1"] == pytest.approx(M.oracle_at_1(effects).mean())
    with h5py.File(tmp_path / "out" / "attributions.h5", "r") as f:
        scores = f["heads"][head["name"]]["methods/ig/scores"][()]
    assert head["methods"]["ig"]["deletion_at_1"] == pytest.approx(M.deletion_at_k(scores, p, p_abl).mean())
    assert 0 <= head["mean_p"] <= 1  # a probability whatever the effect


def test_bad_effect_is_a_usage_error(digits_cache, laya_dir, tmp_path):
    args = ["compare", str(laya_dir), "--cache", str(digits_cache), "--effect", "logits", "--out", str(tmp_path / "o")]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 2 and "Invalid value for '--effect': choose from logit, prob" in result.output


def test_compare_alpha_contrib_end_to_end(digits_cache, laya_dir, tmp_path):
    out = tmp_path / "out"
    result, summary = _compare(digits_cache, laya_dir, out, "--method", "alpha-contrib", "--ablation", "mean,mix")
    head = summary["heads"][0]
    assert head["methods_run"] == ["alpha-contrib"] and "alpha-contrib" in result.output
    by_abl = head["ablations"]
    assert by_abl["mean"]["methods"]["alpha-contrib"]["circular"] is None
    assert "alpha-contrib" in by_abl["mix"]["circular"]
    with h5py.File(out / "attributions.h5", "r") as f:
        g = f["heads"][head["name"]]
        scores, logits, targets = g["methods/alpha-contrib/scores"][()], g["logits"][()], g["targets"][()]
        mix_effects = g["ablations/mix/effects"][()]
    # Σ_i α_i ⟨W_c, z_i⟩ = f_c − b_c (the head's classifier bias, read from its weights file)
    bias = torch.load(laya_dir / "weights.pt", weights_only=True)["classifier.bias"].double().numpy()
    rows = np.arange(len(targets))
    np.testing.assert_allclose(scores.sum(1), logits[rows, targets] - bias[targets], rtol=1e-4, atol=1e-4)
    # under mix with the logit effect the method is the effect itself (float32 scores, float64 effects)
    np.testing.assert_allclose(scores, mix_effects, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("effect", ["logit", "prob"])
def test_explain_measures_what_compare_measures(digits_cache, laya_dir, tmp_path, effect):
    from laya_inspect.compare.run import compare_heads
    from laya_inspect.explain import explain_row

    row = 5
    with FeatureStore(digits_cache) as store:
        # a deterministic removal: resample's explain averages more donors than compare's row does
        e = explain_row(laya_dir, store, row=row, n_steps=4, device="cpu", effect=effect, ablation="mean")
        config = CompareConfig(methods=("alpha",), effect=effect, ablation="mean", n_boot=0, plots=False, device="cpu")
        compare_heads([laya_dir], store, config, out_dir=tmp_path / "cmp")
    with h5py.File(tmp_path / "cmp" / "attributions.h5", "r") as f:
        np.testing.assert_allclose(e.effects, f["heads/laya/effects"][row], rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(e.p_ablated, f["heads/laya/p_ablated"][row], rtol=1e-6, atol=1e-9)
    assert e.effect == effect and e.to_dict()["effect"] == effect
    assert e.p == pytest.approx(e.probs[e.target])  # the probability, whatever the effect
