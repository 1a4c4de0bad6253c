"""early-exit: the exit rules by hand, a planted head that reads only layer 1 exits every input at
depth 1 (and one that reads only the last layer never exits early), the command end to end on the
digits cache, and one failing invocation per error class."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers import (
    drawn_figures,
    fit_quickly,
    legend_entry,
    page_said,
    record_forked,
    settings_given,
    settings_said,
    write_cache,
)
from typer.testing import CliRunner

from laya_inspect.beyond.costs import ASSUMED
from laya_inspect.beyond.early_exit import (
    NEVER,
    ExitConfig,
    exit_depths,
    frontier_area,
    held_out_area,
    mass_beyond,
    simulate_early_exit,
    sweep,
    threshold_grid,
)
from laya_inspect.beyond.exit_heldout import MIN_FOLD_ROWS, crossfit_area, held_out, small_folds, two_folds
from laya_inspect.beyond.refit import Budget
from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.head_dir import cache_identity, save_head
from laya_inspect.heads import LayaHead

runner = CliRunner()
ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
NO_PLOTS = "--no-plots (no effect on the numbers)"  # named among the settings given, changing no number


def test_exit_depths_by_hand():
    conf = np.array([[0.9, 0.95, 0.99], [0.4, 0.8, 0.7], [0.1, 0.2, 0.3]])
    mass = np.array([[0.5, 0.1, 0.0], [0.5, 0.5, 0.0], [0.01, 0.5, 0.0]])
    assert exit_depths(conf, None, 0.85, 0.0).tolist() == [0, 2, 2]
    assert exit_depths(conf, None, 0.8, 0.0).tolist() == [0, 1, 2]
    assert exit_depths(None, mass, 0.0, 0.2).tolist() == [1, 2, 0]
    assert exit_depths(conf, mass, 0.95, 0.2).tolist() == [1, 2, 0]  # either rule
    assert exit_depths(conf, mass, NEVER, 0.0).tolist() == [2, 2, 2]  # neither fires: the last depth


def test_mass_beyond_and_frontier_by_hand():
    w = np.array([[0.5, 0.3, 0.2]])
    assert mass_beyond(w) == pytest.approx(np.array([[0.5, 0.2, 0.0]]))
    # points (compute, accuracy): the best accuracy within each budget, averaged over [0.2, 1]
    area = frontier_area([0.2, 0.6, 1.0, 0.5], [0.8, 0.9, 0.85, 0.7], 0.2, 1.0)
    assert area == pytest.approx((0.8 * 0.4 + 0.9 * 0.4) / 0.8)
    t, eps = threshold_grid(5)
    assert t[0] == 0.0 and t[-1] == NEVER and len(t) == 5 and np.all(np.diff(t) > 0)
    assert eps[0] == 0.0 and eps[-1] == NEVER and len(eps) == 5


def planted(first: bool) -> LayaHead:
    """α one-hot on layer 1 (``first``) or on the last of three layers, for every input, exactly."""
    head = LayaHead([2, 2, 2], 2, d_star=2, tau=1.0, score_width=2)
    with torch.no_grad():
        for p in head.parameters():
            p.zero_()
        for g in head.adapters:
            g.weight.copy_(torch.eye(2))
        head.scorer[2].bias.copy_(torch.tensor([0.0, -1e4, -1e4] if first else [-1e4, -1e4, 0.0]))
        head.classifier.weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
    return head.eval()


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """Three 2-D layers; the class is the sign of layer 1's first feature (the others are noise)."""
    rng = np.random.default_rng(0)
    splits = {}
    for name, n in (("train", 300), ("test", 200)):
        feats = [rng.normal(size=(n, 2)).astype(np.float32) for _ in range(3)]
        splits[name] = (feats, (feats[0][:, 0] < 0).astype(np.int64))
    return write_cache(tmp_path_factory.mktemp("exit") / "c.h5", splits, layer_names=["l1", "l2", "l3"])


@pytest.mark.parametrize("first", [True, False])
def test_a_head_reading_only_layer_1_exits_at_depth_1(cache, tmp_path, first):
    with FeatureStore(cache) as store:
        head_dir = save_head(tmp_path / "head", planted(first), meta=cache_identity(store))
        config = ExitConfig(seeds=1, thresholds=5, costs="shapes", device="cpu", plots=False)
        s = simulate_early_exit(head_dir, store, config, Budget(epochs=3), out_dir=tmp_path / "out").summary
    alpha = [p for p in s["points"] if p["rule"] == "alpha"]
    assert [p["epsilon"] for p in alpha] == [0.0, 1e-4, 1e-2, 1.0, NEVER]
    if first:
        assert s["alpha_mass"]["mean_beyond_depth"] == {"l1": 0.0, "l2": 0.0, "l3": 0.0}
        # every ε > 0 exits every input at depth 1; ε = 0 never fires, so all go to the end
        assert [p["mean_depth"] for p in alpha] == [3.0, 1.0, 1.0, 1.0, 1.0]
    else:
        assert s["alpha_mass"]["mean_beyond_depth"] == {"l1": 1.0, "l2": 1.0, "l3": 0.0}
        assert [p["mean_depth"] for p in alpha] == [3.0, 3.0, 3.0, 3.0, 1.0]
    fixed = [p for p in s["points"] if p["rule"] == "fixed"]
    assert [p["mean_depth"] for p in fixed] == [1.0, 2.0, 3.0]
    assert fixed[0]["compute_used"] < fixed[1]["compute_used"] < fixed[2]["compute_used"] == 1.0


# -- the command ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def laya_dir(digits_cache, tmp_path_factory) -> Path:
    with FeatureStore(digits_cache) as store:
        head = fit_quickly("laya", store, 60)
        return save_head(tmp_path_factory.mktemp("exit-heads") / "laya", head, meta=cache_identity(store))


def test_the_settings_line_states_the_seed_of_the_train_limit_rows(digits_cache, laya_dir, tmp_path):
    """--seed draws --train-limit's rows, so it decides the numbers there and is stated with the limit."""
    args = ["early-exit", str(laya_dir), "--cache", str(digits_cache), "--seeds", "1", "--epochs", "2"]
    args += ["--thresholds", "5", "--train-limit", "200", "--seed", "4", "--device", "cpu", "--no-plots"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "ee")], env=ENV)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert (
        "settings given: refits ≤ 2 epochs · ≤ 200 train rows · 5 thresholds · 1 seed · row seed 4 · device cpu · "
        f"{NO_PLOTS}; " in said
    )


def test_a_given_seed_without_train_limit_is_named_as_deciding_nothing(digits_cache, laya_dir, tmp_path):
    """--seed draws --train-limit's rows only: without a limit it decides nothing, yet the line read "settings,
    all left at their defaults" over it. Every given setting is named, the idle ones marked; --workers and
    --threads change no number and say so. `report DIR` restates the line."""
    out = tmp_path / "ee"
    args = ["early-exit", str(laya_dir), "--cache", str(digits_cache), "--seeds", "1", "--epochs", "2"]
    args += ["--thresholds", "5", "--seed", "5", "--workers", "1", "--threads", "1", "--device", "cpu"]
    result = runner.invoke(app, [*args, "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    line = settings_said(result.output)
    assert settings_given(result.output)[-3:] == [
        "--seed 5 (decides nothing here: no --train-limit)",
        "--workers 1 (no effect on the numbers)",
        "--threads 1 (no effect on the numbers)",
    ], line
    assert "row seed" not in line
    report = runner.invoke(app, ["report", str(out)], env=ENV)
    assert report.exit_code == 0, report.output
    assert settings_said(report.output) == line


def test_the_settings_line_states_given_splits_and_costs_and_report_restates_it(digits_cache, laya_dir, tmp_path):
    """A given --train-split (the refits' rows), --test-split (the rows measured) or --costs (the compute
    read) decides early-exit's numbers: the line states them, and `report DIR` and report.html restate
    the line the command printed, those left at their defaults said apart."""
    out = tmp_path / "ee"
    args = ["early-exit", str(laya_dir), "--cache", str(digits_cache), "--seeds", "1", "--epochs", "2"]
    args += ["--thresholds", "5", "--train-split", "test", "--test-split", "train", "--costs", "shapes"]
    result = runner.invoke(app, [*args, "--device", "cpu", "--no-plots", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    line = settings_said(result.output)
    given, left = line.removeprefix("settings given: ").split("; left at their defaults: ")
    assert given.endswith(f" · train split test · test split train · costs shapes · device cpu · {NO_PLOTS}")
    assert "lr 0.003" in left.split(" · ")
    report = runner.invoke(app, ["report", str(out), "--html"], env=ENV)
    assert report.exit_code == 0, report.output
    assert settings_said(report.output) == line
    assert line in page_said(out / "report.html")
    # and the verdict's lines, its notes on the questions read apart among them (they were left out)
    notes = [n for n in result.output.splitlines() if n.startswith("• note: ")]
    assert notes and all(n in report.output.splitlines() for n in notes), report.output


@pytest.mark.slow
def test_early_exit_command_on_digits(digits_cache, laya_dir, tmp_path):
    out = tmp_path / "ee"
    args = ["early-exit", str(laya_dir), "--cache", str(digits_cache), "--seeds", "2", "--epochs", "10"]
    result = runner.invoke(app, [*args, "--thresholds", "11", "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    assert "confidence+alpha" in result.output and "held-out area" in result.output
    s = json.loads((out / "summary.json").read_text())
    rules = {"fixed", "random", "confidence", "alpha", "confidence+alpha", "confidence+alpha_oracle"}
    assert set(s["rules"]) == rules
    said = " ".join(result.output.split())  # the settings behind the numbers, read before them
    p, wd = s["budget"]["epochs_patience"][1], s["budget"]["weight_decay"]
    given = "settings given: refits ≤ 10 epochs · 11 thresholds · 2 seeds · device cpu; "
    first = said.index(given + f"left at their defaults: patience {p} · lr 0.003 · weight decay {wd:g}")
    assert first < said.index("held-out area")
    assert all(len(r["area_held_out"]["values"]) == 2 for r in s["rules"].values())
    assert len(s["verdict"]) == 8 and len(s["fits"]) == 2 * 3
    assert "random (reference: no information)" in result.output and "held out" in result.output
    assert "are read apart, each at 95% for its own comparisons" in " ".join(result.output.split())
    assert f"note: {s['family_rule']}" in " ".join(result.output.split())  # how many each family counts
    for p in s["points"]:
        assert 0 <= p["accuracy"] <= 1 and 1 <= p["mean_depth"] <= 3
    # the confidence sweep runs from "every input exits at depth 1" to "none exits early"
    conf = [p for p in s["points"] if p["rule"] == "confidence" and p["seed"] == 0]
    assert conf[0]["mean_depth"] == 1.0 and conf[-1]["mean_depth"] == 3.0
    for name in ("points.csv", "curves.csv", "areas.csv", "comparisons.csv", "fits.csv"):
        assert (out / name).is_file()
    assert (out / "plots" / "early_exit_accuracy_vs_compute.png").stat().st_size > 1000


def test_early_exit_errors(digits_cache, laya_dir, tmp_path):
    base = ["early-exit", str(laya_dir), "--cache", str(digits_cache), "--device", "cpu"]
    bad = runner.invoke(app, [*base, "--epsilon", "2"], env=ENV)
    assert bad.exit_code == 1 and "--epsilon must be in [0, 1], got 2.0" in bad.output
    nocache = runner.invoke(app, ["early-exit", str(laya_dir), "--cache", str(tmp_path / "none.h5")], env=ENV)
    assert nocache.exit_code == 1 and "no feature cache" in nocache.output
    split = runner.invoke(app, [*base, "--test-split", "valid", "--out", str(tmp_path / "o")], env=ENV)
    assert split.exit_code == 1 and "no split 'valid'" in split.output
    with FeatureStore(digits_cache) as store:
        one = LayaHead(store.widths[:1], 10)
        one_dir = save_head(tmp_path / "one", one, meta=cache_identity(store))
    wrong = runner.invoke(app, ["early-exit", str(one_dir), "--cache", str(digits_cache)], env=ENV)
    assert wrong.exit_code == 1 and "widths" in wrong.output
    assert not (tmp_path / "o").exists()


def test_per_depth_heads_are_read_against_the_given_head(cache, tmp_path):
    """The depth-L heads see every layer the given head sees: far below it, they are under-trained
    and the run says so; with the default budget they reach it on this easy task."""
    with FeatureStore(cache) as store:
        head_dir = save_head(tmp_path / "head", planted(True), meta=cache_identity(store))
        config = ExitConfig(seeds=2, thresholds=5, costs="shapes", device="cpu", plots=False)
        weak = Budget(epochs=1, patience=1, lr=1e-5)
        s = simulate_early_exit(head_dir, store, config, weak, out_dir=tmp_path / "weak").summary
        ok = simulate_early_exit(head_dir, store, config, Budget(), out_dir=tmp_path / "ok").summary
    assert s["refit_check"]["given_head_test_acc"] == 1.0 and s["refit_check"]["under_trained"]
    assert s["warnings"] and "fall short of the given head" in s["warnings"][0]
    assert "Warning: the refits fall short" in (tmp_path / "weak" / "report.html").read_text(encoding="utf-8")
    assert not ok["refit_check"]["under_trained"]
    # the seeds agree to the row on these planted rows, so only the test rows' sampling is warned of
    assert [w for w in ok["warnings"] if not w.startswith("test sampling:")] == []
    assert ok["refit_check"]["refit_all_layers_test_acc"]["mean"] > 0.98


def test_folds_too_small_to_read_a_difference_are_warned_of(tmp_path):
    """QA: 47 test rows were split into two halves for held-out thresholds without a word; fit-head
    warns of 19 validation rows. A fold below MIN_FOLD_ROWS is warned of and recorded with the folds."""
    rng = np.random.default_rng(0)
    splits = {}
    for name, n in (("train", 300), ("test", 47)):
        feats = [rng.normal(size=(n, 2)).astype(np.float32) for _ in range(3)]
        splits[name] = (feats, (feats[0][:, 0] < 0).astype(np.int64))
    small = write_cache(tmp_path / "small.h5", splits, layer_names=["l1", "l2", "l3"])
    config = ExitConfig(seeds=1, thresholds=5, costs="shapes", device="cpu", plots=False)
    with FeatureStore(small) as store:
        head_dir = save_head(tmp_path / "head", planted(True), meta=cache_identity(store))
        s = simulate_early_exit(head_dir, store, config, Budget(epochs=3), out_dir=tmp_path / "o").summary
    h = s["held_out"]
    assert sorted(h["fold_sizes"]["0"]) == [23, 24] and h["min_fold_rows"] == MIN_FOLD_ROWS > 24
    assert h["folds_too_small"].startswith("the held-out areas split the test rows into two folds, the smaller of 23")
    assert h["folds_too_small"] in s["warnings"]
    saved = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert saved["held_out"]["folds_too_small"] == h["folds_too_small"]
    assert small_folds([[100, 100]]) is None  # the fixture's 200 test rows: folds of 100 say nothing


def test_random_exit_lands_between_the_fixed_depths():
    """Two depths, wrong at depth 1 and right at depth 2: fixed depth's step frontier credits nothing
    below full compute (area 0), while exiting at random depths, which uses no information about the
    input, reaches every mix in between (the QA finding: a rule could beat fixed depth by mixing alone)."""
    n = 4000
    labels = np.zeros(n, dtype=np.int64)
    preds = np.stack([np.ones(n, dtype=np.int64), labels], axis=1)  # (N, 2): wrong, then right
    conf = np.full((n, 2), 0.9)
    used = np.array([0.5, 1.0])
    grid = threshold_grid(41)
    pts = {r: sweep(r, preds, conf, labels, used, {}, grid, 0.05) for r in ("fixed", "random")}
    area = {
        r: frontier_area([p["compute_used"] for p in v], [p["accuracy"] for p in v], 0.5, 1.0) for r, v in pts.items()
    }
    assert area["fixed"] == 0.0
    assert area["random"] > 0.3
    # each random point is the mix it draws: accuracy = share exiting at depth 2 = (compute − 0.5) / 0.5
    for p in pts["random"]:
        assert p["accuracy"] == pytest.approx((p["compute_used"] - 0.5) / 0.5)


@pytest.fixture(scope="module")
def last_layer_run(cache, tmp_path_factory) -> tuple[dict[str, Any], Path]:
    """α on the last layer only (it never fires), compute left to ``auto`` on a cache whose model
    (``test:mlp``) cannot be counted."""
    tmp = tmp_path_factory.mktemp("last")
    with FeatureStore(cache) as store:
        head_dir = save_head(tmp / "head", planted(False), meta=cache_identity(store))
        config = ExitConfig(seeds=2, thresholds=11, costs="auto", device="cpu", plots=False)
        s = simulate_early_exit(head_dir, store, config, Budget(epochs=3), out_dir=tmp / "out").summary
    return s, tmp / "out"


def test_every_rule_is_read_against_random_exit(last_layer_run):
    s, out = last_layer_run
    assert list(s["comparisons"])[:4] == [
        "confidence vs random",
        "alpha vs random",
        "confidence+alpha vs random",
        "fixed vs random",
    ]
    assert len(s["rules"]["random"]["area_held_out"]["values"]) == 2 and "no information" in s["random_exit"]
    assert "held out" in s["selection"] and "validation rows" in s["selection"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "random (reference: no information)" in page and "Against random exit" in page


def test_random_exit_is_read_at_its_expectation_and_says_so(last_layer_run):
    """One draw of random scores per seed added most of the spread of every verdict against random exit
    (MobileNetV2 / CIFAR-10: confidence vs random +0.0329 [-0.082, +0.148], the rows allowing [+0.015,
    +0.051]). The reference is now its expectation: random's points are the mix of the fixed depths'
    accuracies the exit chances give, summary.json records it, and the reading says which reference a
    summary used, an older one (no `random_reference`) read as one draw per seed."""
    from laya_inspect.beyond.early_exit import random_exit_shares, threshold_grid
    from laya_inspect.report.reading import early_exit_reading

    s, out = last_layer_run
    assert s["random_reference"] == "expectation" and "expectation" in s["random_exit"]
    fixed = {p["seed"]: [] for p in s["points"]}
    for p in s["points"]:
        if p["rule"] == "fixed":
            fixed[p["seed"]].append(p["accuracy"])
    shares = random_exit_shares(threshold_grid(11)[0], len(s["fixed_depth"]))
    for seed, accs in fixed.items():
        drawn = [p["accuracy"] for p in s["points"] if p["rule"] == "random" and p["seed"] == seed]
        assert np.allclose(drawn, shares @ np.array(accs), atol=1e-12)
    lead = " ".join(early_exit_reading(s).lead)
    assert "the same sweep, at its expectation over the random scores)" in lead
    older = {k: v for k, v in s.items() if k != "random_reference"}
    assert "one draw of the random scores per seed" in " ".join(early_exit_reading(older).lead)
    assert "at its expectation over the random scores" in (out / "report.html").read_text(encoding="utf-8")


def test_a_rule_alpha_never_changes_is_not_compared(last_layer_run):
    """confidence+alpha is the confidence rule when α never fires: the run says so instead of "no
    detectable difference … +0.0000 [+0.0000, +0.0000]"."""
    s, out = last_layer_run
    comp = s["comparisons"]
    assert s["alpha_fired"] == {"epsilon": 0.05, "rows": 0, "oracle_rows": 0, "of": 200}
    said = "rule confidence+alpha is the confidence rule, as said above: nothing to compare with rule confidence"
    assert comp["confidence+alpha vs confidence"]["identical"]
    assert comp["confidence+alpha vs confidence"]["verdict"] == said and said in s["verdict"]
    oracle = comp["confidence+alpha_oracle vs confidence"]["verdict"]
    assert oracle.startswith("rule confidence+alpha_oracle is the confidence rule, as said above")
    assert not any("rule confidence+alpha and rule confidence:" in v for v in s["verdict"])
    assert "nothing to compare" in (out / "report.html").read_text(encoding="utf-8")


def test_confidence_alpha_against_random_where_alpha_never_fired_is_said_to_be_confidences(last_layer_run):
    """α never fired, so confidence+alpha is the confidence rule, yet "confidence+alpha vs random" was printed
    as a finding of its own ("rule confidence+alpha is not distinguishable from random exit: …", the same
    numbers as confidence's line above it). The line, report.html's row and its reading now say it is the
    confidence rule's comparison."""
    from laya_inspect.report.reading import early_exit_reading

    s, out = last_layer_run
    entry = s["comparisons"]["confidence+alpha vs random"]
    assert entry["same_as"] == "confidence vs random"
    assert entry["area_diff"] == s["comparisons"]["confidence vs random"]["area_diff"]
    said = (
        "α never fired at ε = 0.05, neither at an exit nor in the full forward pass (0 of 200 rows): confidence+alpha "
        "and confidence+alpha_oracle are the confidence rule, so confidence+alpha's comparison with random exit is "
        "confidence's (rule confidence's line against random exit, above), not a second finding"
    )
    assert entry["verdict"] == said and said in s["verdict"]
    # the line it points to is confidence's; the one right above it is alpha's ("the line above" sent there)
    lines = s["verdict"]
    pointed = lines.index(s["comparisons"]["confidence vs random"]["verdict"])
    assert pointed < lines.index(said), lines
    assert "the line above" not in said or pointed == lines.index(said) - 1, lines
    assert not any(v.startswith("rule confidence+alpha") and "random exit" in v for v in s["verdict"])
    lead = " ".join(early_exit_reading(s).lead)
    assert "confidence+alpha, the confidence rule here (α never fired at ε = 0.05, neither at an exit nor" in lead
    page = (out / "report.html").read_text(encoding="utf-8")
    assert (
        "confidence&#x27;s comparison: the same rule here" in page or "confidence's comparison: the same rule" in page
    )


def test_confidence_alpha_of_confidences_area_against_random_is_said_to_be_confidences(last_layer_run):
    """The digits demo's heads: α fired on 2 of 360 rows and left every seed's held-out area as confidence's,
    and "confidence+alpha vs random" repeated confidence's numbers as a finding of its own. Its line, the
    reading and report.html's row now say it has confidence's area, so its comparison is confidence's."""
    from laya_inspect.beyond.early_exit import exit_comparisons
    from laya_inspect.report.beyond import early_exit_sections
    from laya_inspect.report.html import Cell
    from laya_inspect.report.reading import early_exit_reading

    s, _ = last_layer_run
    areas = {r: e["area_held_out"]["values"] for r, e in s["rules"].items()}
    areas["confidence"] = areas["confidence+alpha"] = [0.9, 0.88]
    areas["random"] = [0.7, 0.69]
    points = [  # confidence+alpha's points move (α fired), its area does not
        {"rule": r, "seed": 0, "step": 0, "accuracy": 0.8, "compute_used": c, "mean_depth": 1.0}
        for r, c in (("confidence", 0.5), ("confidence+alpha", 0.45), ("confidence+alpha_oracle", 0.4))
    ]
    fired = {"epsilon": 0.05, "rows": 2, "oracle_rows": 3, "of": 360}
    comp = exit_comparisons(areas, points, fired)
    assert comp["confidence+alpha vs confidence"]["same_area"]
    entry = comp["confidence+alpha vs random"]
    assert entry["same_as"] == "confidence vs random" and entry["same_by"] == "area"
    assert entry["area_diff"] == comp["confidence vs random"]["area_diff"]
    assert entry["verdict"] == (
        "rule confidence+alpha has the same held-out area as confidence's on every seed (α fired at ε = 0.05 on 2 "
        "of 360 rows), so confidence+alpha's comparison with random exit is confidence's (rule confidence's line "
        "against random "
        "exit, above), not a second finding"
    )
    assert "the confidence rule" not in entry["verdict"]
    assert comp["confidence+alpha vs confidence"]["verdict"] == (  # α's firing said once, on the line above
        "rule confidence+alpha has the same held-out area as rule confidence on every seed, as said above: its "
        "points move, no step of the frontier does; nothing to compare"
    )
    summary = {**s, "comparisons": comp, "alpha_fired": fired, "verdict": [e["verdict"] for e in comp.values()]}
    lead = " ".join(early_exit_reading(summary).lead)
    assert (
        "confidence+alpha, of the same held-out area as confidence's on every seed (α fired at ε = 0.05 on 2 of "
        "360 rows), is confidence's comparison, not a second finding" in lead
    ), lead
    assert "confidence+alpha, the confidence rule here" not in lead
    rows = [r for sec in early_exit_sections(summary) for t in sec.tables for r in t.rows]
    cells = [c.text if isinstance(c, Cell) else c for r in rows for c in r]
    assert "confidence's comparison: the same area here" in cells
    assert "confidence's comparison: the same rule here" not in cells


def test_each_family_counts_every_comparison_it_asks_and_says_so():
    """The family sizes were the comparisons left after dropping those of the same rule or the same area,
    read off the very test rows compared, while the code said the family is fixed before the data. Now
    one rule: every comparison a question asks counts (4, 2, 2), and the run says so."""
    from laya_inspect.beyond.early_exit import exit_comparisons

    areas = {"random": [0.75, 0.651, 0.849], "confidence": [0.8, 0.7, 0.9], "alpha": [0.7, 0.6, 0.82]}
    areas |= {"fixed": areas["alpha"], "confidence+alpha": areas["confidence"]}  # alpha vs fixed: same area
    areas["confidence+alpha_oracle"] = [0.81, 0.7, 0.92]
    points = [
        {"rule": r, "seed": 0, "step": 0, "accuracy": 0.8, "compute_used": c, "mean_depth": 1.0}
        for r, c in (("confidence", 0.5), ("confidence+alpha", 0.5), ("confidence+alpha_oracle", 0.4))
    ]
    comp = exit_comparisons(areas, points, {"epsilon": 0.05, "rows": 0, "oracle_rows": 27, "of": 200})
    assert comp["alpha vs fixed"]["same_area"] and comp["confidence+alpha vs confidence"]["identical"]
    assert comp["confidence vs fixed"]["family"]["size"] == 2  # was 1: alpha vs fixed left out after looking
    assert comp["confidence+alpha_oracle vs confidence"]["family"]["size"] == 2  # was 1
    assert comp["confidence vs fixed"]["area_diff"]["confidence"] == 0.975
    assert "97.5% CI" in comp["confidence+alpha_oracle vs confidence"]["verdict"]
    assert comp["confidence vs random"]["family"]["size"] == 4
    from laya_inspect.beyond.exit_verdicts import FAMILY_RULE

    assert "fixed before the data (4 against random exit, 2 of confidence+α with confidence, 2 against" in FAMILY_RULE


def test_a_verdict_that_starts_with_alpha_keeps_its_alpha_in_the_reading(last_layer_run):
    """The reading capitalised a verdict that starts with α to "Α never fired …": Greek capital
    alpha, which reads as a Latin A, in report.html's first lines."""
    from laya_inspect.report.reading import early_exit_reading

    s, out = last_layer_run
    said = s["comparisons"]["confidence+alpha vs random"]["verdict"].split(":")[0]
    assert said.startswith("α never fired") and f"({said})" in " ".join(early_exit_reading(s).lead)
    assert "Α never fired" not in (out / "report.html").read_text(encoding="utf-8")


def test_compute_estimated_from_shapes_is_a_warning(last_layer_run):
    """As prune does: the reason sat only in costs.note."""
    s, out = last_layer_run
    assert s["costs"]["source"] == "shapes" and s["costs"]["note"]
    warned = [w for w in s["warnings"] if w.startswith("compute estimated from the cache's shapes (")]
    assert warned == [f"compute estimated from the cache's shapes ({ASSUMED}): {s['costs']['note']}"]
    assert "compute estimated from the cache" in (out / "report.html").read_text(encoding="utf-8")


def test_an_older_summary_without_random_exit_still_renders(cache, tmp_path):
    """Summaries written before the random-exit reference (no random rule, no "vs random" comparisons,
    no alpha_fired) are still read by ``laya-inspect report``."""
    from laya_inspect.report.beyond import early_exit_sections
    from laya_inspect.report.reading import early_exit_reading

    with FeatureStore(cache) as store:
        head_dir = save_head(tmp_path / "head", planted(True), meta=cache_identity(store))
        config = ExitConfig(seeds=2, thresholds=5, costs="shapes", device="cpu", plots=False)
        s = simulate_early_exit(head_dir, store, config, Budget(epochs=2), out_dir=tmp_path / "out").summary
    for key in ("random_exit", "selection", "alpha_fired", "held_out"):
        del s[key]
    s["rules"] = {r: {"area": e["area_in_sample"]} for r, e in s["rules"].items()}  # before the held-out area
    del s["rules"]["random"]
    s["comparisons"] = {k: {"area_diff": v["area_diff"], "verdict": v["verdict"]} for k, v in s["comparisons"].items()}
    s["comparisons"] = {k: v for k, v in s["comparisons"].items() if not k.endswith("vs random")}
    assert early_exit_sections(s)
    lead = early_exit_reading(s).lead  # the verdicts, then what they rest on (one fitted head's α)
    assert lead[-3].startswith("Adding α's mass beyond the exit depth") and lead[-1].startswith("α here is one")


def test_equal_areas_are_said_as_such_not_as_a_zero_interval():
    """Text's oracle fired on 27 of 200 rows and moved points but no frontier step: the areas were
    equal on every seed and the run read "no detectable difference … -0.0000 [-0.0000, +0.0000]"."""
    from laya_inspect.beyond.early_exit import exit_comparisons

    areas = {r: [0.8, 0.7, 0.9] for r in ("fixed", "random", "confidence", "alpha", "confidence+alpha")}
    areas["confidence+alpha_oracle"] = [0.8, 0.7 - 1e-16, 0.9]
    # +0.05 on average, spread over seeds, a little: with 3 seeds the 98.8% t-interval (one of the four rules
    # against random exit) is ±5.1 standard deviations of the differences wide
    areas["random"] = [0.75, 0.651, 0.849]
    points = [
        {"rule": r, "seed": 0, "step": 0, "accuracy": 0.8, "compute_used": c, "mean_depth": 1.0}
        for r, c in (("confidence", 0.5), ("confidence+alpha", 0.5), ("confidence+alpha_oracle", 0.4))
    ]
    comp = exit_comparisons(areas, points, {"epsilon": 0.05, "rows": 0, "oracle_rows": 27, "of": 200})
    assert comp["confidence+alpha vs random"]["verdict"].startswith("α never fired at ε = 0.05 (0 of 200 rows)")
    assert comp["confidence+alpha vs confidence"]["verdict"].startswith("rule confidence+alpha is the confidence rule")
    oracle = comp["confidence+alpha_oracle vs confidence"]
    assert oracle["same_area"] and oracle["verdict"] == (
        "rule confidence+alpha_oracle has the same held-out area as rule confidence on every seed (α of the full "
        "forward pass fired at ε = 0.05 on 27 of 200 rows): its points move, no step of the frontier does; nothing "
        "to compare"
    )
    assert comp["confidence vs random"]["verdict"].startswith("rule confidence beats random exit: +0.0500")


def test_a_real_difference_too_small_for_four_decimals_is_not_shown_as_zero():
    """The oracle used less compute at equal accuracy on one seed of 3 (held-out area +9.3e-06 there,
    float noise of 1e-16 on the others) and was printed "+0.0000 [-0.0000, +0.0000]", which reads as the
    same rule. Not round-off (10¹⁰ times it), so it stays a comparison, shown in e-notation."""
    from laya_inspect.beyond.early_exit import exit_comparisons
    from laya_inspect.report.reading import diff_text

    areas = {r: [0.97, 0.975, 0.9749] for r in ("fixed", "random", "alpha")}
    areas["confidence"] = areas["confidence+alpha"] = [0.9740092592592594, 0.9750000000000003, 0.9749691358024692]
    areas["confidence+alpha_oracle"] = [0.9740185185185185, 0.9749999999999999, 0.9749691358024689]
    points = [
        {"rule": r, "seed": 0, "step": 0, "accuracy": 0.97, "compute_used": c, "mean_depth": 1.0}
        for r, c in (("confidence", 0.5), ("confidence+alpha", 0.5), ("confidence+alpha_oracle", 0.4))
    ]
    comp = exit_comparisons(areas, points, {"epsilon": 0.05, "rows": 0, "oracle_rows": 97, "of": 360})
    oracle = comp["confidence+alpha_oracle vs confidence"]
    d = oracle["area_diff"]
    assert not oracle.get("same_area") and d["mean"] == pytest.approx(3.09e-06, abs=1e-8)
    assert "+0.0000" not in oracle["verdict"] and "+0.0000" not in diff_text(d), (oracle["verdict"], diff_text(d))
    span = f"{d['mean']:+.1e}, 97.5% CI [{d['ci_low']:+.1e}, {d['ci_high']:+.1e}]"
    assert span == "+3.1e-06, 97.5% CI [-1.6e-05, +2.2e-05]"
    assert oracle["verdict"].startswith(
        f"no detectable difference between rule confidence+alpha_oracle and rule confidence: {span}"
    )
    assert diff_text(d) == "+3.1e-06 [-1.6e-05, +2.2e-05]"
    assert diff_text({"mean": 0.0, "ci_low": -1e-17, "ci_high": 1e-17}) == "+0.0000 [+0.0000, +0.0000]"  # noise
    assert diff_text({"mean": 0.0116, "ci_low": 0.0009, "ci_high": 0.0223}) == "+0.0116 [+0.0009, +0.0223]"


def test_the_plots_draw_random_exit_as_the_reference(cache, tmp_path, monkeypatch):
    """Random exit, the reference every rule is read against, was drawn as one more rule: it is now
    grey and dashed, labelled "random exit (reference, …)", on both plots, at its mean curve over seeds."""
    from laya_inspect.beyond.outputs import exit_curves

    figures = drawn_figures(monkeypatch)
    with FeatureStore(cache) as store:
        head_dir = save_head(tmp_path / "head", planted(True), meta=cache_identity(store))
        config = ExitConfig(seeds=2, thresholds=5, costs="shapes", device="cpu", plots=True)
        s = simulate_early_exit(head_dir, store, config, Budget(epochs=3), out_dir=tmp_path / "out").summary
    assert set(figures) == {"early_exit_accuracy_vs_compute", "early_exit_accuracy_vs_depth"}
    assert figures["early_exit_accuracy_vs_depth"].axes[0].get_title() == "early exit: mean over 2 seeds; ε = 0.05"
    label = f"random exit (reference, expectation, held-out area {s['rules']['random']['area_held_out']['mean']:.4f})"
    plotted = (("early_exit_accuracy_vs_compute", "compute_used"), ("early_exit_accuracy_vs_depth", "mean_depth"))
    for name, x_key in plotted:
        ax = figures[name].axes[0]
        labels = [text.get_text() for text in ax.get_legend().get_texts()]
        assert label in labels, labels
        assert not any(lab.startswith("random (") for lab in labels)  # drawn once, as the reference
        line = legend_entry(ax, label)
        assert line.get_linestyle() == "--" and line.get_color() == "grey"
        curve = sorted(
            (c for c in exit_curves(s["points"]) if c["rule"] == "random"), key=lambda c: (c[x_key], c["accuracy_mean"])
        )
        assert list(line.get_xdata()) == pytest.approx([c[x_key] for c in curve])
        assert list(line.get_ydata()) == pytest.approx([c["accuracy_mean"] for c in curve])
        for rule in ("confidence", "alpha", "fixed"):  # the rules, solid and coloured
            drawn = next(lab for lab in labels if lab.startswith(f"{rule} (held-out area"))
            assert legend_entry(ax, drawn).get_linestyle() == "-"


# -- the held-out area (cross-fitted operating points) ----------------------------------------------


def test_held_out_area_of_the_confidence_rule_by_hand():
    """4 rows, 2 depths (compute 0.5 and 1.0), t ∈ {0, 0.8, never}; fold A = rows 0, 1.
    Fold A: t=0 → acc ½ at 0.5, t=0.8 → ½ at 0.75, never → 1 at 1.0. Fold B: ½ at 0.5, 1 at 0.75, ½ at 1.0.
    Chosen on A for c < 1 is t=0 (the tie at 0.75 goes to the cheaper point): ½ on B. Chosen on B is t=0
    below 0.75, then t=0.8: ½ on A both. Held out ½; in sample (all 4 rows: ½, ¾, ¾) 0.625."""
    preds = np.array([[0, 0], [1, 0], [1, 0], [0, 1]])
    conf = np.array([[0.7, 0.9], [0.9, 0.9], [0.7, 0.9], [0.9, 0.9]])
    labels = np.array([0, 0, 0, 0])
    used = np.array([0.5, 1.0])
    grid = (np.array([0.0, 0.8, NEVER]), np.array([0.0, NEVER]))
    fold = np.array([True, True, False, False])
    area, over, _ = held_out_area("confidence", preds, conf, labels, used, {}, grid, 0.05, fold)
    assert area == pytest.approx(0.5) and over == 0.0
    pts = sweep("confidence", preds, conf, labels, used, {}, grid, 0.05)
    in_sample = frontier_area([p["compute_used"] for p in pts], [p["accuracy"] for p in pts], 0.5, 1.0)
    assert in_sample == pytest.approx((0.5 * 0.25 + 0.75 * 0.25) / 0.5) == pytest.approx(0.625)


def test_crossfit_area_and_its_compute_overshoot_by_hand():
    """Chosen on A: point 0 for c < 0.7 (B: 0.6), point 1 from 0.7 (B: 0.7, at compute 0.9 on B, so
    0.9 − c over budget until c = 0.9: ∫ = 0.2²/2). Weighted by the rows scored when folds differ."""
    area, over = crossfit_area([0.5, 0.7, 1.0], [0.5, 0.8, 0.9], [0.5, 0.9, 1.0], [0.6, 0.7, 1.0], 0.5, 1.0)
    assert area == pytest.approx((0.6 * 0.2 + 0.7 * 0.3) / 0.5)
    assert over == pytest.approx(0.2**2 / 2 / 0.5)
    back, _ = crossfit_area([0.5, 0.9, 1.0], [0.6, 0.7, 1.0], [0.5, 0.7, 1.0], [0.5, 0.8, 0.9], 0.5, 1.0)
    assert back == pytest.approx((0.5 * 0.4 + 0.8 * 0.1) / 0.5)  # chosen on B: point 0, then point 1 from 0.9
    a = ([0.5, 0.7, 1.0], [0.5, 0.8, 0.9], 1)
    b = ([0.5, 0.9, 1.0], [0.6, 0.7, 1.0], 3)
    assert held_out(a, b, 0.5, 1.0)[0] == pytest.approx((3 * area + 1 * back) / 4)


def test_fixed_depth_held_out_equals_in_sample_when_the_folds_order_the_depths_alike():
    """Fixed depth has no threshold; its frontier picks the deepest affordable depth on both folds when
    accuracy rises with depth on both, so its held-out area is its in-sample one (folds of 2 and 3 rows,
    weighted by rows)."""
    labels = np.zeros(5, dtype=int)
    correct = np.array([[0, 1, 1], [0, 0, 1], [1, 1, 1], [0, 1, 1], [0, 0, 1]], dtype=bool)  # (N, L)
    preds = np.where(correct, 0, 1)
    fold = np.array([True, True, False, False, False])  # A: 0, ½, 1; B: ⅓, ⅔, 1
    used = np.array([0.2, 0.5, 1.0])
    grid = threshold_grid(5)
    conf = np.full((5, 3), 0.5)
    area, over, _ = held_out_area("fixed", preds, conf, labels, used, {}, grid, 0.05, fold)
    pts = sweep("fixed", preds, conf, labels, used, {}, grid, 0.05)
    in_sample = frontier_area([p["compute_used"] for p in pts], [p["accuracy"] for p in pts], 0.2, 1.0)
    assert area == pytest.approx(in_sample, abs=1e-12) and over == 0.0
    assert in_sample == pytest.approx((0.2 * 0.3 + 0.6 * 0.5) / 0.8)


def test_fixed_depth_held_out_is_lower_where_the_folds_order_the_depths_apart():
    """The frontier's max over the depths is itself a choice: where depth 1 beats depth 2 on fold A by
    chance and not on fold B, A's choice (depth 1) scores worse on B than the in-sample frontier says.
    (Depth L, at compute 1, is reached only at the budget c = 1 and adds nothing to any area.)"""
    labels = np.zeros(4, dtype=int)
    correct = np.array([[1, 1, 1], [1, 0, 1], [0, 1, 1], [0, 1, 1]], dtype=bool)  # A: 1, ½; B: 0, 1
    preds = np.where(correct, 0, 1)
    fold = np.array([True, True, False, False])
    used, conf, grid = np.array([0.2, 0.5, 1.0]), np.full((4, 3), 0.5), threshold_grid(5)
    area, *_ = held_out_area("fixed", preds, conf, labels, used, {}, grid, 0.05, fold)
    pts = sweep("fixed", preds, conf, labels, used, {}, grid, 0.05)
    in_sample = frontier_area([p["compute_used"] for p in pts], [p["accuracy"] for p in pts], 0.2, 1.0)
    assert in_sample == pytest.approx((0.5 * 0.3 + 0.75 * 0.5) / 0.8)
    # A → B: depth 1 throughout (0 on B); B → A: depth 1 (1 on A) below 0.5, then depth 2 (½ on A)
    assert area == pytest.approx((0 + (1 * 0.3 + 0.5 * 0.5)) / 2 / 0.8) and area < in_sample


def test_random_exit_at_its_expectation_has_no_lucky_thresholds():
    """Random exit is read at its expectation: its compute at each threshold is the same on every row, so
    where accuracy rises with depth both folds choose the same threshold at every budget, and its held-out
    area is its in-sample one on every seed (one draw per seed chose among its thresholds by chance: its
    in-sample area exceeded its held-out one by 0.005 or more on average over these 20 seeds)."""
    rng = np.random.default_rng(0)
    n, L = 300, 3
    labels = rng.integers(0, 4, n)
    used = np.array([0.3, 0.6, 1.0])
    grid = threshold_grid(41)
    gaps = []
    for seed in range(20):
        r = np.random.default_rng([seed, 1])
        preds = np.where(r.uniform(size=(n, L)) < np.array([0.6, 0.7, 0.8]), labels[:, None], (labels[:, None] + 1) % 4)
        conf = r.uniform(size=(n, L))
        fold = two_folds(labels, np.random.default_rng([seed, 2]))
        pts = sweep("random", preds, conf, labels, used, {}, grid, 0.05)
        in_sample = frontier_area([p["compute_used"] for p in pts], [p["accuracy"] for p in pts], 0.3, 1.0)
        area, *_ = held_out_area("random", preds, conf, labels, used, {}, grid, 0.05, fold)
        gaps.append(in_sample - area)
    assert np.abs(gaps).max() < 1e-12


def test_random_exit_is_the_mean_over_its_draws():
    """Each random-exit point is the mean over draws of uniform scores of the exit it gives, exactly: the
    chance of each exit depth (checked against 200,000 draws), and the points' accuracy and compute
    against the mean over 400 draws of 300 rows."""
    from laya_inspect.beyond.early_exit import exit_depths, random_exit_shares

    t_grid, _ = threshold_grid(9)
    shares = random_exit_shares(t_grid, 4)
    assert np.allclose(shares.sum(axis=1), 1.0)
    noise = np.random.default_rng(1).uniform(size=(200_000, 4))
    for t, share in zip(t_grid, shares):
        drawn = np.bincount(exit_depths(noise, None, t, 0.0), minlength=4) / len(noise)
        assert np.abs(drawn - share).max() < 0.004
    rng = np.random.default_rng(2)
    n = 300
    labels = rng.integers(0, 3, n)
    preds = np.where(rng.uniform(size=(n, 4)) < [0.4, 0.6, 0.7, 0.9], labels[:, None], (labels[:, None] + 1) % 3)
    used = np.array([0.25, 0.5, 0.75, 1.0])
    pts = sweep("random", preds, preds.astype(float), labels, used, {}, (t_grid, t_grid), 0.05)
    acc, run = np.zeros(len(t_grid)), np.zeros(len(t_grid))
    for _ in range(400):
        z = rng.uniform(size=(n, 4))
        for i, t in enumerate(t_grid):
            d = exit_depths(z, None, t, 0.0)
            acc[i] += (preds[np.arange(n), d] == labels).mean() / 400
            run[i] += used[d].mean() / 400
    assert np.abs(acc - [p["accuracy"] for p in pts]).max() < 0.005
    assert np.abs(run - [p["compute_used"] for p in pts]).max() < 0.005


def test_two_folds_balance_every_label():
    labels = np.array([0] * 7 + [1] * 4 + [2] * 1)
    fold = two_folds(labels, np.random.default_rng(3))
    assert abs(int(fold.sum()) - int((~fold).sum())) <= 1
    for c in (0, 1, 2):
        assert abs(int(fold[labels == c].sum()) - int((~fold[labels == c]).sum())) <= 1
    assert (two_folds(labels, np.random.default_rng(3)) == fold).all()  # seeded


def test_summary_records_both_areas_and_the_verdicts_read_the_held_out_one(last_layer_run):
    from laya_inspect.beyond.common import paired
    from laya_inspect.report.reading import early_exit_reading

    s, out = last_layer_run
    for e in s["rules"].values():
        assert len(e["area_held_out"]["values"]) == len(e["area_in_sample"]["values"]) == 2
        assert all(v >= 0 for v in e["compute_overshoot"]["values"])
    assert s["held_out"]["compared"] == "area_held_out" and "default_rng([0, refit seed, 10])" == s["held_out"]["folds"]
    assert all(sum(sizes) == 200 and abs(sizes[0] - sizes[1]) <= 1 for sizes in s["held_out"]["fold_sizes"].values())
    fixed = s["rules"]["fixed"]
    assert fixed["area_held_out"]["values"] == pytest.approx(fixed["area_in_sample"]["values"], abs=1e-12)
    rules = s["rules"]
    for name, c in s["comparisons"].items():
        a, b = name.split(" vs ")
        held = paired(rules[a]["area_held_out"]["values"], rules[b]["area_held_out"]["values"])
        assert c["area_diff"]["values"] == pytest.approx(held["values"])
        assert c["area_diff_in_sample"]["values"] == pytest.approx(
            paired(rules[a]["area_in_sample"]["values"], rules[b]["area_in_sample"]["values"])["values"]
        )
    said = s["comparisons"]["confidence vs random"]["verdict"]
    assert said in s["verdict"] and "(held-out area under accuracy–compute)" in said
    assert any("held-out area under accuracy–compute" in line for line in early_exit_reading(s).lead)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "held-out area (compared)" in page and "in-sample area (optimistic)" in page
    head = (out / "areas.csv").read_text().splitlines()[0]
    assert "area_held_out_mean" in head and "area_in_sample_mean" in head and "compute_overshoot_mean" in head


def test_each_comparison_names_its_family_level(last_layer_run):
    """The comparisons answer three questions, each a family drawn at 1 − 0.05/m over the comparisons
    it asks: summary.json, the verdict lines and report.html name the level."""
    from laya_inspect.report.reading import early_exit_reading

    s, out = last_layer_run
    comp = s["comparisons"]
    for e in comp.values():
        assert e["area_diff"]["confidence"] == e["family"]["confidence"] == 1 - 0.05 / e["family"]["size"]
    assert comp["confidence vs random"]["family"]["of"] == "rules compared with random exit"
    # every comparison a question asks counts, fixed before the data (here α never fires: two are no contest)
    sizes = {e["family"]["of"]: e["family"]["size"] for e in comp.values()}
    assert sizes == {
        "rules compared with random exit": 4,
        "comparisons of confidence+α with confidence": 2,
        "rules compared with fixed depth": 2,
    }
    for e in comp.values():
        drawn = not any(e.get(k) for k in ("identical", "same_area", "same_as"))  # same_as: confidence's line
        if drawn and e["area_diff"]["ci_low"] is not None:
            assert f"{e['family']['confidence'] * 100:.3g}% CI" in e["verdict"], e["verdict"]
    lead = " ".join(early_exit_reading(s).lead)
    page = (out / "report.html").read_text(encoding="utf-8")
    fam = comp["confidence vs random"]["family"]
    words = f"{fam['confidence'] * 100:.3g}% t-intervals (Bonferroni over the {fam['size']} rules compared with"
    assert words in lead and words in page
    # α never fires here, so two questions drew intervals (against random exit, against fixed depth):
    # the summary, the reading and the page say they are read apart, each held to 5% on its own
    apart = s["families_read_apart"]
    # QA (all-MiniLM-L6-v2): the note said "the 2 questions … these 6 lines" above 8 lines and 3 families;
    # its counts are now of the lines printed, and it names the question that drew no interval
    assert apart.startswith(f"these {len(s['verdict'])} lines answer the 3 questions (rules compared with random")
    assert "; 2 drew an interval (rules compared with random exit, rules compared with fixed depth) and are" in apart
    assert "not their 6 lines together (comparisons of confidence+α with confidence: no interval," in apart
    # the rate it names is of the two read (about 1 − 0.95²), the measured 15% is of all three
    assert "among the 2 questions' lines in about 10% of runs (15% of simulated runs with all three)" in apart
    assert apart[1:40] in " ".join(early_exit_reading(s).details) and apart[1:40] in page
    from laya_inspect.beyond.exit_verdicts import FAMILY_RULE

    assert s["family_rule"] == FAMILY_RULE and FAMILY_RULE in html.unescape(page)


def test_the_per_depth_refits_send_back_no_head(cache, tmp_path, monkeypatch):
    """early-exit reads a per-depth refit's test probabilities, never its head: the workers do not send
    the heads back to the parent (pickled, unpickled and kept for nothing)."""
    import laya_inspect.beyond.early_exit as early_exit

    received = record_forked(monkeypatch, early_exit)
    with FeatureStore(cache) as store:
        head_dir = save_head(tmp_path / "head", planted(True), meta=cache_identity(store))
        config = ExitConfig(seeds=2, thresholds=5, costs="shapes", device="cpu", workers=2, plots=False)
        simulate_early_exit(head_dir, store, config, Budget(epochs=3), out_dir=tmp_path / "out")
    assert len(received) == 6
    assert all(f.head is None and f.test_probs is not None for f in received)


def test_the_reading_says_alpha_is_one_fitted_heads_not_read_over_seeds():
    """early-exit's intervals run "over 3 seed(s)", the refits of the per-depth heads; α (the alpha and
    confidence+alpha rules) is the one given head's, so a line on α held for that fit only, and nothing
    said so: the page read "paired over 3 seed(s)" as α's seeds."""
    from laya_inspect.report.reading import early_exit_reading

    d = {"mean": 0.002, "ci_low": -0.02, "ci_high": 0.03, "values": [0.0, 0.002, 0.004]}
    s = {
        "head_dir": "heads/laya/seed_0",
        "seeds": [0, 1, 2],
        "config": {"epsilon": 0.05},
        "comparisons": {k: {"area_diff": d} for k in ("confidence+alpha vs confidence", "alpha vs fixed")},
        "fixed_depth": [],
    }
    first = early_exit_reading(s).lead[-1]  # right after the verdicts on α it qualifies
    assert first.startswith("α here is one fitted head's (heads/laya/seed_0): the 3 seeds the intervals run over")
    assert "hold for this fit of α only" in first and "the fit-head folder (or its laya/)" in first


def test_the_reading_says_what_the_seeds_of_one_heads_intervals_are():
    """With one head, early-exit's reading said "paired over 3 seed(s)" where the header and prune say
    the summary's own words, "3 refit seed(s), α from one head"; a summary without them keeps the count."""
    from laya_inspect.report.reading import early_exit_reading

    d = {"mean": 0.002, "ci_low": -0.02, "ci_high": 0.03, "values": [0.0, 0.002, 0.004]}
    s = {
        "head_dir": "heads/laya/seed_0",
        "seeds": [0, 1, 2],
        "seeds_how": "3 refit seed(s), α from one head",
        "config": {"epsilon": 0.05},
        "comparisons": {"confidence+alpha vs confidence": {"area_diff": d}},
        "fixed_depth": [],
    }
    said = " ".join(early_exit_reading(s).lead)
    assert "area under accuracy–compute, paired over 3 refit seed(s), α from one head, " in said, said
    del s["seeds_how"]  # a summary written before it
    assert "area under accuracy–compute, paired over 3 seeds, " in " ".join(early_exit_reading(s).lead)


@pytest.fixture(scope="module")
def two_laya_seeds(cache, tmp_path_factory) -> Path:
    """A fit-head output of two LAYA seeds that disagree: seed 0's α sits on layer 1 (every input may
    exit at depth 1), seed 1's on the last layer (none may), both recording their seed as fit-head does."""
    fit = tmp_path_factory.mktemp("exit-seeds") / "heads"
    with FeatureStore(cache) as store:
        for s, first in ((0, True), (1, False)):
            save_head(fit / "laya" / f"seed_{s}", planted(first), meta={**cache_identity(store), "seed": s})
    return fit


def test_a_fit_head_output_reads_every_laya_seed_each_alpha_with_its_seeds_refits(cache, two_laya_seeds, tmp_path):
    """early-exit refused a folder of several LAYA seeds, so its intervals "over seeds" ran over the refits
    with one fitted α. Given the fit-head output, seed s's refits are read with α of the head of seed s:
    seed 0's α rule exits every input at depth 1 for ε > 0, seed 1's never exits early."""
    with FeatureStore(cache) as store:
        config = ExitConfig(thresholds=5, costs="shapes", device="cpu", plots=False)
        s = simulate_early_exit(two_laya_seeds, store, config, Budget(epochs=3), out_dir=tmp_path / "out").summary
    assert s["seeds"] == [0, 1]
    laya = (two_laya_seeds / "laya").resolve()
    assert [(h["head_dir"], h["seed"]) for h in s["alpha_heads"]] == [
        (str(laya / "seed_0"), 0),
        (str(laya / "seed_1"), 1),
    ]
    assert s["head_dir"] == str(two_laya_seeds.resolve())
    depths = {
        seed: [p["mean_depth"] for p in s["points"] if p["rule"] == "alpha" and p["seed"] == seed] for seed in (0, 1)
    }
    assert depths == {0: [3.0, 1.0, 1.0, 1.0, 1.0], 1: [3.0, 3.0, 3.0, 3.0, 1.0]}
    assert [h["alpha_rows_fired"] for h in s["alpha_heads"]] == [200, 0]
    assert s["seeds_how"] == "over 2 fitted LAYA heads (seeds 0, 1), each α with its seed's refits"
    # each seed's refits are read against its own head: seed 1's reads the last layer, noise
    first, last = s["refit_check"]["given_heads_test_acc"]
    assert first == 1.0 and last < 0.6 and s["refit_check"]["given_head_test_acc"] == pytest.approx((first + last) / 2)
    reading = " ".join(page_said(tmp_path / "out" / "report.html").split())
    assert "α here is each of 2 fitted LAYA heads'" in reading and "over 2 fitted LAYA heads" in reading


def test_the_header_says_whose_seeds_the_intervals_run_over(cache, two_laya_seeds, tmp_path):
    """One head: the seeds are the refits' with α from that head; a fit-head output: its LAYA heads."""
    base = ["early-exit", "--cache", str(cache), "--thresholds", "5", "--epochs", "2", "--costs", "shapes"]
    base += ["--device", "cpu", "--no-plots"]
    one = runner.invoke(
        app, [*base, str(two_laya_seeds / "laya" / "seed_0"), "--seeds", "2", "--out", str(tmp_path / "a")], env=ENV
    )
    assert one.exit_code == 0, one.output
    assert "· 2 refit seeds, α from one head · compute shapes" in " ".join(one.output.split())
    both = runner.invoke(app, [*base, str(two_laya_seeds), "--out", str(tmp_path / "b")], env=ENV)
    assert both.exit_code == 0, both.output
    both_said = " ".join(both.output.split())
    assert "· over 2 fitted LAYA heads (seeds 0, 1), each α with its seed's refits ·" in both_said
    given = settings_said(both.output).split("; left at their defaults: ")[0]
    # the seeds were read from the folder, not given: the header names them, the settings line does not
    assert (
        given.endswith(f"costs shapes · device cpu · {NO_PLOTS}")
        and "LAYA heads" not in given
        and "3 seed(s)" not in both_said
    ), given
    assert "LAYA heads" not in settings_said(runner.invoke(app, ["report", str(tmp_path / "b")], env=ENV).output)
    assert "of 2 LAYA heads" not in page_said(tmp_path / "b" / "report.html")
    reading = " ".join(page_said(tmp_path / "b" / "report.html").split())
    assert "paired over 2 fitted LAYA heads (seeds 0, 1), each α with its seed's refits" in reading
    # the rules table's caption read "mean over seeds (over 2 fitted LAYA heads …)"
    assert "mean over seeds (2 fitted LAYA heads (seeds 0, 1), each α with its seed's refits)" in reading
    assert "over over" not in reading and "(over " not in reading
    said = page_said(tmp_path / "a" / "report.html")
    assert "2 refit seeds, α from one head, 95% t-intervals over seeds" in " ".join(said.split())
    # early-exit reads every seed of a fit-head folder itself: the advice is to give it one
    assert "give early-exit the fit-head folder (or its laya/) to read α of every seed" in " ".join(said.split())


def test_the_terminal_of_one_head_says_its_alpha_is_one_fit(cache, two_laya_seeds, tmp_path):
    """QA: report.html said that one head's α is one fit (the seeds the intervals run over are the
    per-depth heads' refits), the terminal did not: the command and `report DIR` print the page's
    sentence under the verdicts, and not where every LAYA seed of a fit-head folder was read."""
    from helpers import noted_under_verdicts

    from laya_inspect.report.reading import early_exit_reading

    base = ["early-exit", "--cache", str(cache), "--thresholds", "5", "--epochs", "2", "--costs", "shapes"]
    base += ["--device", "cpu", "--no-plots"]
    head = two_laya_seeds / "laya" / "seed_0"
    one = runner.invoke(app, [*base, str(head), "--seeds", "2", "--out", str(tmp_path / "a")], env=ENV)
    assert one.exit_code == 0, one.output
    said = " ".join(one.output.split())
    start = f"• note: α here is one fitted head's ({head.resolve()}): the 2 seeds the intervals run over are the "
    assert start + "per-depth heads' refits, not fits of α" in said
    again = runner.invoke(app, ["report", str(tmp_path / "a")], env=ENV)
    assert again.exit_code == 0, again.output
    noted_under_verdicts(one.output, tmp_path / "a", early_exit_reading, again.output)  # report.html's sentence
    both = runner.invoke(app, [*base, str(two_laya_seeds), "--out", str(tmp_path / "b")], env=ENV)
    assert both.exit_code == 0, both.output
    assert "one fitted head" not in " ".join(both.output.split())


def test_several_laya_heads_take_their_own_seeds(cache, two_laya_seeds, tmp_path):
    bad = runner.invoke(
        app,
        ["early-exit", str(two_laya_seeds), "--cache", str(cache), "--seeds", "4", "--out", str(tmp_path / "o")],
        env=ENV,
    )
    assert bad.exit_code == 1 and "--seeds 4 with 2 LAYA heads: the refit seeds are the heads' own (0, 1)" in bad.output
    assert not (tmp_path / "o").exists()


def test_laya_heads_that_held_out_other_rows_are_refused(cache, tmp_path):
    """Every seed's refits stop on one set of held-out rows: heads of two runs that held out others are refused."""
    fit = tmp_path / "heads"
    with FeatureStore(cache) as store:
        for s, fraction in ((0, 0.1), (1, 0.3)):
            meta = {**cache_identity(store), "seed": s, "split": {"val_fraction": fraction, "val_mode": "stratified"}}
            save_head(fit / "laya" / f"seed_{s}", planted(True), meta=meta)
    bad = runner.invoke(app, ["early-exit", str(fit), "--cache", str(cache), "--out", str(tmp_path / "o")], env=ENV)
    assert bad.exit_code == 1 and "held out other train rows than" in bad.output, bad.output


def test_laya_heads_of_fit_head_runs_with_other_settings_are_refused(cache, tmp_path):
    """The refits of every seed take the first head's settings: heads whose config.json differs in more
    than the seed (here the weight decay) are refused, naming both heads and what differs."""
    fit = tmp_path / "heads"
    with FeatureStore(cache) as store:
        for s, decay in ((0, 0.0), (1, 0.01)):
            meta = {**cache_identity(store), "seed": s, "training": {"weight_decay": decay}}
            save_head(fit / "laya" / f"seed_{s}", planted(True), meta=meta)
    bad = runner.invoke(app, ["early-exit", str(fit), "--cache", str(cache), "--out", str(tmp_path / "o")], env=ENV)
    said = " ".join(bad.output.split())
    assert bad.exit_code == 1, bad.output
    assert f"{fit / 'laya' / 'seed_0'} and {fit / 'laya' / 'seed_1'} record other settings than their seed" in said
    assert "(training.weight_decay 0.0 vs 0.01)" in said, said
    # the device a head was fitted on is no setting the refits take: one run's heads fitted on two devices pass
    same = tmp_path / "devices"
    with FeatureStore(cache) as store:
        for s, device in ((0, "cpu"), (1, "cuda")):
            meta = {**cache_identity(store), "seed": s, "device": device, "training": {"weight_decay": 0.01}}
            save_head(same / "laya" / f"seed_{s}", planted(True), meta=meta)
    args = ["--cache", str(cache), "--thresholds", "5", "--epochs", "2", "--costs", "shapes", "--device", "cpu"]
    ok = runner.invoke(app, ["early-exit", str(same), *args, "--no-plots", "--out", str(tmp_path / "d")], env=ENV)
    assert ok.exit_code == 0, ok.output


def test_the_refit_warning_names_each_laya_seeds_own_epochs(cache, tmp_path):
    """QA (all-MiniLM-L6-v2, 3 LAYA seeds that ran 299, 980 and 993 epochs): the under-trained refit
    warning said "the given head ran 299 epochs", seed 0's alone, of a run that reads every seed."""
    fit = tmp_path / "heads"
    with FeatureStore(cache) as store:
        for s, first in ((0, True), (1, False)):
            meta = {**cache_identity(store), "seed": s, "metrics": {"epochs_run": 40 + s}, "training": {"lr": 0.002}}
            save_head(fit / "laya" / f"seed_{s}", planted(first), meta=meta)
        config = ExitConfig(thresholds=5, costs="shapes", device="cpu", plots=False)
        s = simulate_early_exit(fit, store, config, Budget(epochs=1), out_dir=tmp_path / "out").summary
    (warned,) = [w for w in s["warnings"] if w.startswith("the refits fall short")]
    assert warned.endswith("(the given heads ran 40, 41 epochs at lr 0.002)")


def test_report_dir_restates_the_notes_that_read_the_verdict(digits_cache, laya_dir, tmp_path):
    """QA (all-MiniLM-L6-v2): `report DIR` of an early-exit folder reprinted its verdict lines without the
    notes the command printed under them (its 3 questions read apart, each at 95%, and how often a wrong
    "beats" comes among them): the verdicts without their family."""
    out = tmp_path / "ee"
    args = ["early-exit", str(laya_dir), "--cache", str(digits_cache), "--seeds", "1", "--epochs", "2"]
    result = runner.invoke(
        app, [*args, "--thresholds", "5", "--device", "cpu", "--no-plots", "--out", str(out)], env=ENV
    )
    assert result.exit_code == 0, result.output
    notes = [line for line in result.output.splitlines() if line.startswith("• note: ")]
    assert notes, result.output
    report = runner.invoke(app, ["report", str(out)], env=ENV)
    assert report.exit_code == 0, report.output
    bulleted = [line for line in report.output.splitlines() if line.startswith("• ")]
    assert bulleted == [line for line in result.output.splitlines() if line.startswith("• ")]


def test_an_interval_cut_to_0_1_is_said_to_be_cut() -> None:
    """QA (MobileNetV2 on CIFAR-10, 2 LAYA seeds): the fixed-depth table showed features.16's accuracy
    "0.4825 [0.0000, 1.0000]", a t-interval over 2 seeds cut to [0, 1] with no word of it (diagnose and
    compare say where they cut one)."""
    from laya_inspect.beyond.scoring import exit_cut_note
    from laya_inspect.compare.seeds import t_estimate

    wide, narrow = t_estimate([0.3, 0.665]), t_estimate([0.58, 0.60])
    s = {"fixed_depth": [{"layer": "features.16", "accuracy": wide}, {"layer": "features.18", "accuracy": narrow}]}
    s["rules"] = {"alpha": {"area_held_out": narrow, "area_in_sample": narrow}}
    note = exit_cut_note(s)
    assert note is not None and note.startswith("areas and accuracies: an interval reaching outside [0, 1]"), note
    assert f"(features.16 accuracy [{wide['ci_low']:+.2f}, {wide['ci_high']:+.2f}])" in note, note
    assert exit_cut_note({"fixed_depth": s["fixed_depth"][1:], "rules": s["rules"]}) is None


def test_alpha_fired_over_several_heads_is_said_per_head_not_as_one_heads(last_layer_run):
    """Given several LAYA heads, `alpha_fired` held the most rows of any one head, and the verdicts said
    "α fired … on 5 of 360 rows" as if of one head. They now give the range over the heads and each
    seed's count, which summary.json keeps in `by_seed`."""
    from laya_inspect.beyond.exit_verdicts import alpha_fired, exit_comparisons
    from laya_inspect.report.reading import early_exit_reading

    s, _ = last_layer_run
    areas = {r: e["area_held_out"]["values"] for r, e in s["rules"].items()}
    areas["confidence"] = areas["confidence+alpha"] = [0.9, 0.88]
    areas["random"] = [0.7, 0.69]
    points = [
        {"rule": r, "seed": 0, "step": 0, "accuracy": 0.8, "compute_used": c, "mean_depth": 1.0}
        for r, c in (("confidence", 0.5), ("confidence+alpha", 0.45), ("confidence+alpha_oracle", 0.4))
    ]
    heads = [
        {"seed": 0, "alpha_rows_fired": 2, "oracle_rows_fired": 3},
        {"seed": 1, "alpha_rows_fired": 5, "oracle_rows_fired": 3},
    ]
    fired = alpha_fired(heads, 0.05, 360)
    assert fired["by_seed"] == {"0": {"rows": 2, "oracle_rows": 3}, "1": {"rows": 5, "oracle_rows": 3}}
    assert fired["rows"] == 5 and fired["oracle_rows"] == 3
    comp = exit_comparisons(areas, points, fired)
    said = "α fired at ε = 0.05 on 2–5 of 360 rows across 2 LAYA heads (seed 0: 2, seed 1: 5)"
    assert said in comp["confidence+alpha vs random"]["verdict"]
    assert "as said above" in comp["confidence+alpha vs confidence"]["verdict"]  # each count said once
    summary = {**s, "comparisons": comp, "alpha_fired": fired, "verdict": [e["verdict"] for e in comp.values()]}
    lead = " ".join(early_exit_reading(summary).lead)
    assert "on 2–5 of 360 rows across 2 LAYA heads" in lead and "on 5 of 360 rows" not in lead
    one = exit_comparisons(areas, points, alpha_fired(heads[:1], 0.05, 360))
    assert "α fired at ε = 0.05 on 2 of 360 rows)" in one["confidence+alpha vs random"]["verdict"]


def test_one_seed_reading_names_no_level_of_intervals(cache, tmp_path):
    """With one refit seed report.html's first sentence read "(+0.0018 [n/a])" and "98.8% t-intervals
    (Bonferroni over the 4 rules …)" of intervals never drawn: it now gives one value each and says no
    verdict follows."""
    from laya_inspect.report.reading import early_exit_reading

    with FeatureStore(cache) as store:
        head_dir = save_head(tmp_path / "head", planted(True), meta=cache_identity(store))
        config = ExitConfig(seeds=1, thresholds=5, costs="shapes", device="cpu", plots=False)
        s = simulate_early_exit(head_dir, store, config, Budget(epochs=3), out_dir=tmp_path / "out").summary
    reading = early_exit_reading(s)
    said = " ".join(reading.lead + reading.details)
    assert "[n/a]" not in said and "t-intervals" not in said and "Bonferroni" not in said, said
    (first,) = [line for line in reading.lead if line.startswith("Against random exit")]
    assert "confidence − random exit = " in first and "one value, no interval, so no verdict" in first
    assert "from 1 refit seed, α from one head: one value" in first and "paired over" not in first, first
    assert first in page_said(tmp_path / "out" / "report.html")


def test_one_seeds_page_names_no_level_of_intervals(cache, tmp_path):
    """With one refit seed report.html's subtitle and caption still said "95% t-intervals over seeds" and
    "with the 95% t-interval" of intervals never drawn: they now say no interval is drawn."""
    with FeatureStore(cache) as store:
        head_dir = save_head(tmp_path / "head", planted(True), meta=cache_identity(store))
        config = ExitConfig(seeds=1, thresholds=5, costs="shapes", device="cpu", plots=False)
        simulate_early_exit(head_dir, store, config, Budget(epochs=3), out_dir=tmp_path / "out")
    said = page_said(tmp_path / "out" / "report.html")
    assert "t-interval" not in said and "one seed: no interval is drawn" in said, said


def test_one_seeds_tables_and_plots_show_each_value_alone(cache, tmp_path, monkeypatch):
    """With one refit seed report.html's tables showed every area, difference and accuracy as
    "0.9694 [n/a]" and the comparisons' verdict cells "—", and the plots' title "mean over 1 seed(s)":
    each cell now shows its one value, the verdict cells say no verdict follows, and the title says one seed.
    Over seeds, an interval across 0 read "no difference", which no interval shows: "not distinguishable"."""
    from laya_inspect.report.beyond import early_exit_sections
    from laya_inspect.report.html import Cell

    figures = drawn_figures(monkeypatch)
    with FeatureStore(cache) as store:
        head_dir = save_head(tmp_path / "head", planted(True), meta=cache_identity(store))
        config = ExitConfig(seeds=1, thresholds=5, costs="shapes", device="cpu", plots=True)
        s = simulate_early_exit(head_dir, store, config, Budget(epochs=3), out_dir=tmp_path / "out").summary
    said = page_said(tmp_path / "out" / "report.html")
    assert "[n/a]" not in said
    area = s["rules"]["confidence"]["area_held_out"]["mean"]
    assert f"<td>{area:.4f}</td>" in said
    # a comparison whose rules differ on the one seed: its value alone, and no verdict drawn from it
    one = {"n": 1, "mean": 0.0018, "ci_low": None, "ci_high": None}
    comp = {**s["comparisons"]["confidence vs random"], "area_diff": one, "same_area": False}
    tables = early_exit_sections({**s, "comparisons": {"confidence vs random": comp}})[0].tables
    (row,) = next(t for t in tables if t.id == "exit-comparisons").rows
    assert row[1:] == ["+0.0018", Cell("no verdict: one seed", "text")], row
    # over seeds, an interval across 0 detects no difference: it does not show there is none
    three = {"n": 3, "mean": 0.0036, "ci_low": -0.0095, "ci_high": 0.0166, "values": [0.001, 0.002, 0.0078]}
    comp = {**comp, "area_diff": three}
    tables = early_exit_sections({**s, "seeds": [0, 1, 2], "comparisons": {"confidence vs random": comp}})[0].tables
    (row,) = next(t for t in tables if t.id == "exit-comparisons").rows
    assert row[2] == Cell("not distinguishable", "text"), row
    assert "One seed here: each point is its one value" in said
    # the family's count sets the level of intervals: with none drawn, the caption does not say it
    assert s["family_rule"] not in said
    title = figures["early_exit_accuracy_vs_compute"].axes[0].get_title()
    assert title == "early exit: one seed; ε = 0.05", title


def test_one_seed_reads_as_one_seed_and_a_tiny_difference_as_itself(last_layer_run):
    """Run at --seeds 1, the verdicts and the reading said "the same held-out area as confidence's on
    every seed", and the reading printed a one-seed difference of -1.5e-05 as "-0.0000" (the terminal
    prints "-1.5e-05")."""
    from laya_inspect.beyond.early_exit import exit_comparisons
    from laya_inspect.report.reading import early_exit_reading, versus_text

    s, _ = last_layer_run
    areas = {r: [0.8] for r in ("fixed", "alpha", "confidence", "confidence+alpha", "confidence+alpha_oracle")}
    areas["random"] = [0.7]
    points = [
        {"rule": r, "seed": 0, "step": 0, "accuracy": 0.8, "compute_used": c, "mean_depth": 1.0}
        for r, c in (("confidence", 0.5), ("confidence+alpha", 0.45), ("confidence+alpha_oracle", 0.4))
    ]
    fired = {"epsilon": 0.05, "rows": 2, "oracle_rows": 3, "of": 360}
    comp = exit_comparisons(areas, points, fired)
    said = " ".join(e["verdict"] for e in comp.values())
    assert "every seed" not in said
    assert "the same held-out area as confidence's on the one seed run (α fired at ε = 0.05" in said
    assert "rule alpha has the same held-out area as rule fixed on the one seed run: its points move" in said
    summary = {**s, "comparisons": comp, "alpha_fired": fired, "verdict": [e["verdict"] for e in comp.values()]}
    lead = " ".join(early_exit_reading(summary).lead)
    assert "confidence+alpha, of the same held-out area as confidence's on the one seed run" in lead, lead
    assert "on every seed" not in lead
    tiny = {"mean": -1.5e-05, "ci_low": None, "ci_high": None, "n": 1, "values": [-1.5e-05]}
    assert versus_text("confidence+α", tiny, "confidence") == "confidence+α − confidence = -1.5e-05"
    plain = {"mean": 0.0028, "ci_low": None, "ci_high": None, "n": 1, "values": [0.0028]}
    assert versus_text("α", plain, "depth alone") == "α − depth alone = +0.0028"


def test_alpha_never_firing_is_said_once_and_each_line_names_its_null(last_layer_run):
    """α never fired, and the run said "α never fired at ε = 0.05 (0 of 200 rows)" on three lines, once
    per comparison it made the confidence rule's (against random exit, and the realisable and the
    full-pass rules against confidence). It is said once; the later lines point back to it, each still
    naming the rule it is read against."""
    from laya_inspect.report.reading import early_exit_reading

    s, out = last_layer_run
    assert s["alpha_fired"]["rows"] == 0 and s["alpha_fired"]["oracle_rows"] == 0
    lines = s["verdict"]
    assert sum("never fired" in line for line in lines) == 1, lines
    first = s["comparisons"]["confidence+alpha vs random"]["verdict"]
    assert first.startswith(
        "α never fired at ε = 0.05, neither at an exit nor in the full forward pass (0 of 200 rows): confidence+alpha "
        "and confidence+alpha_oracle are the confidence rule, so confidence+alpha's comparison with random exit is "
        "confidence's (rule confidence's line against random exit, above)"
    ), first
    for rule in ("confidence+alpha", "confidence+alpha_oracle"):
        said = s["comparisons"][f"{rule} vs confidence"]["verdict"]
        assert said == f"rule {rule} is the confidence rule, as said above: nothing to compare with rule confidence"
        assert lines.index(first) < lines.index(said)
    reading = early_exit_reading(s)
    assert sum("never fired" in line for line in [*reading.lead, *reading.details]) == 1


def test_the_compute_overshoot_column_is_explained_under_the_table_and_on_the_page(digits_cache, laya_dir, tmp_path):
    """QA: the terminal's table had a "compute overshoot" column that nothing on the terminal explained;
    a legend line under it says what it measures, as report.html's caption does."""
    out = tmp_path / "ee"
    args = ["early-exit", str(laya_dir), "--cache", str(digits_cache), "--seeds", "1", "--epochs", "2"]
    result = runner.invoke(
        app, [*args, "--thresholds", "5", "--no-plots", "--device", "cpu", "--out", str(out)], env=ENV
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "compute overshoot" in said and "compute overshoot: how far past each compute budget" in said, said
    from laya_inspect.report.reading import OVERSHOOT_LEGEND

    assert OVERSHOOT_LEGEND in said
    assert OVERSHOOT_LEGEND in " ".join(page_said(out / "report.html").split())


def test_fixed_depth_intervals_narrower_than_the_test_rows_allow_are_warned():
    """QA (MobileNetV2, 500 CIFAR-10 test rows, 3 seeds): the fixed-depth table read features.10
    0.482 [0.472, 0.492] over seeds with no word that the 500 shared test rows alone allow about
    ±0.044, as fit-head warns of its heads' accuracies."""
    from laya_inspect.beyond.common import estimate
    from laya_inspect.beyond.early_exit import fixed_sampling_warning

    fixed = [
        {"depth": 1, "layer": "features.0", "accuracy": estimate([0.31, 0.33, 0.20])},  # seeds wide enough
        {"depth": 2, "layer": "features.10", "accuracy": estimate([0.478, 0.482, 0.486])},
    ]
    (line,) = fixed_sampling_warning(fixed, 500)
    assert line.startswith("test sampling: the fixed-depth accuracies' 95% intervals over seeds cover")
    assert "of the 500 test rows, at 1 of 2 depths (at features.10: 0.482 [" in line
    assert "Wilson interval is [0.439, 0.526]" in line
    assert fixed_sampling_warning(fixed[:1], 500) == []
    assert fixed_sampling_warning([{**fixed[1], "accuracy": estimate([0.482])}], 500) == []  # one seed


# -- the test rows' own sampling beside the intervals over seeds ------------------------------------


@pytest.mark.parametrize("rule", ["fixed", "confidence", "random", "confidence+alpha"])
def test_each_rows_share_of_the_held_out_area_averages_to_that_area(rule):
    """The test rows' interval of an area difference reads each row's share of the held-out area: their
    mean over the rows is the area itself, for every rule and both folds' choices."""
    rng = np.random.default_rng(3)
    n, depths = 60, 3
    preds = rng.integers(0, 3, size=(n, depths))
    conf = rng.uniform(size=(n, depths))
    labels = rng.integers(0, 3, size=n)
    used = np.array([0.2, 0.6, 1.0])
    masses = {"alpha": rng.uniform(size=(n, depths)), "alpha_oracle": rng.uniform(size=(n, depths))}
    grid = threshold_grid(9)
    fold = two_folds(labels, rng)
    args = (rule, preds, conf, labels, used, masses, grid, 0.3, fold)
    area, _, shares = held_out_area(*args)
    assert shares.shape == (n,) and ((shares >= 0) & (shares <= 1 + 1e-12)).all()
    assert shares.mean() == pytest.approx(area, abs=1e-12)


def _rows_case(differ: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Three seeds whose confidence − random areas are +0.0100, +0.0101, +0.0102 (a narrow "beats"), on 200
    shared test rows: where ``differ``, 6 rows gained and 4 lost (the rows allow about ±0.04), else every
    row's share moved by the same +0.0101 (the rows allow nothing wider)."""
    from laya_inspect.beyond.exit_verdicts import exit_comparisons

    rules = ("fixed", "random", "confidence", "alpha", "confidence+alpha", "confidence+alpha_oracle")
    areas = {r: [0.8, 0.8, 0.8] for r in rules}
    areas["confidence"] = [0.81, 0.8101, 0.8102]
    base = np.full(200, 0.8)
    shares = {r: [base.copy() for _ in range(3)] for r in rules}
    for i, a in enumerate(areas["confidence"]):
        if differ:
            d = np.zeros(200)
            d[:6], d[6:10] = 1.0, -1.0
            d += (a - 0.8) - d.mean()
        else:
            d = np.full(200, a - 0.8)
        shares["confidence"][i] = base + d
    fired = {"epsilon": 0.05, "rows": 0, "oracle_rows": 0, "of": 200}
    comp = exit_comparisons(areas, [], fired, None, shares)
    return comp, comp["confidence vs random"]


def test_a_beats_the_test_rows_own_sampling_does_not_hold_is_withheld(last_layer_run):
    """The intervals over seeds are read on one shared set of test rows: 3 seeds agreeing on +0.0101 drew
    "rule confidence beats random exit" where 10 rows of 200 decide it and the rows alone allow ±0.04.
    The verdict is withheld in summary.json, the terminal's lines, the warnings, the reading and report.html."""
    from laya_inspect.beyond.exit_verdicts import rows_warning
    from laya_inspect.report.beyond import early_exit_sections
    from laya_inspect.report.html import Cell
    from laya_inspect.report.reading import early_exit_reading

    comp, entry = _rows_case(differ=True)
    rows = entry["test_rows"]
    assert rows["rows"] == 200 and rows["rows_differ"] == 200 and rows["dominates"] and rows["withheld"]
    assert rows["ci_low"] < 0 < rows["ci_high"] and rows["half_width"] > 20 * (
        entry["area_diff"]["ci_high"] - entry["area_diff"]["ci_low"]
    )
    assert entry["verdict"].startswith("no verdict on rule confidence against random exit: +0.0101, 98.8% CI over")
    assert "beats" not in entry["verdict"] and "add test rows" in entry["verdict"]
    warned = rows_warning(comp)
    assert (
        len(warned) == 1
        and "(confidence vs random, confidence vs fixed)" in warned[0]
        and "200 shared test rows" in warned[0]
    )
    s, _ = last_layer_run
    summary = {**s, "comparisons": comp, "verdict": [e["verdict"] for e in comp.values()]}
    lead = " ".join(early_exit_reading(summary).lead)
    assert "confidence − it = +0.0101" in lead and "no verdict: the 200 shared test rows alone allow ±0.0" in lead
    assert "confidence beats" not in lead, lead
    cells = [
        c.text if isinstance(c, Cell) else c
        for sec in early_exit_sections(summary)
        for t in sec.tables
        for r in t.rows
        for c in r
    ]
    assert "withheld: within the test rows' sampling" in cells
    assert any(str(c).endswith("over 200 rows (wider than the seeds' interval)") for c in cells)


def test_a_beats_the_test_rows_hold_stands():
    """Every row moved alike: the rows' own interval is no wider than the seeds', so the verdict stands."""
    from laya_inspect.beyond.exit_verdicts import rows_warning

    comp, entry = _rows_case(differ=False)
    assert not entry["test_rows"]["dominates"] and not entry["test_rows"]["withheld"]
    assert entry["verdict"].startswith("rule confidence beats random exit: +0.0101")
    assert rows_warning(comp) == []


def test_a_run_records_each_comparisons_test_rows_and_what_costs_auto_chose(last_layer_run):
    """summary.json keeps each compared pair's test-row interval and its rule; `--costs auto` said "costs
    auto" and never what it chose: the settings line now says "costs shapes (auto)", as "device cpu (auto)"."""
    from laya_inspect.report.settings import ONE_LINE, beyond_settings_line

    s, out = last_layer_run
    compared = [
        e for e in s["comparisons"].values() if not (e.get("identical") or e.get("same_area") or e.get("same_as"))
    ]
    assert compared and all(e["test_rows"]["rows"] == s["rows"]["test"] for e in compared)
    assert "test rows" in s["rows_rule"]
    assert s["config"]["costs"] == "auto" and s["costs"]["source"] == "shapes" and s["costs"]["asked"] == "auto"
    line = str(beyond_settings_line(s, ONE_LINE))
    assert "costs shapes (auto)" in line and "costs auto" not in line, line
    assert "costs shapes (auto)" in (out / "report.html").read_text(encoding="utf-8")


def test_comparisons_csv_says_why_a_verdict_was_withheld(last_layer_run, tmp_path):
    """comparisons.csv carried each verdict but not the test rows' interval it was withheld by: a CSV
    reader saw "no verdict" and no reason. It now holds the rows, the half-width, the bounds and `withheld`."""
    import csv

    from laya_inspect.beyond.outputs import write_early_exit

    comp, entry = _rows_case(differ=True)
    s, _ = last_layer_run
    summary = {**s, "comparisons": comp, "verdict": [e["verdict"] for e in comp.values()]}
    write_early_exit(tmp_path, summary, plots=False)
    with open(tmp_path / "comparisons.csv", encoding="utf-8") as f:
        rows = {r["comparison"]: r for r in csv.DictReader(f)}
    row = rows["confidence vs random"]
    assert row["test_rows"] == "200" and row["test_rows_withheld"] == "True"
    assert float(row["test_rows_half_width"]) == pytest.approx(entry["test_rows"]["half_width"])
    assert float(row["test_rows_ci_low"]) < 0 < float(row["test_rows_ci_high"])
    assert row["verdict"].startswith("no verdict")
    same = rows["confidence+alpha vs confidence"]  # of the same area: no rows' interval read
    assert same["test_rows"] == "" and same["test_rows_withheld"] == ""
