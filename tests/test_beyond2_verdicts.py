"""`report DIR` rebuilds prune's and diagnose's verdict lines from the summary's fields (an older
summary's stored lines are shown with a note only where a field is missing); prune's saving at a set
each LAYA head keeps differently is said to be a mean over those sets; diagnose's test-rows clause
follows its verdict and AUROC without repeating the interval."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from helpers import fit_quickly
from test_prune import planted_laya
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.head_dir import cache_identity, save_head

runner = CliRunner()
ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "300"}


def diagnosed_two_heads(cache_path: Path, tmp_path: Path) -> Path:
    """The folder of a `diagnose` run over two LAYA heads (seeds 0 and 1) fitted on ``cache_path``."""
    with FeatureStore(cache_path) as store:
        meta = cache_identity(store)
        dirs = [save_head(tmp_path / f"seed_{s}", fit_quickly("laya", store, seed=s), meta=meta) for s in (0, 1)]
    out = tmp_path / "diag"
    args = ["diagnose", *map(str, dirs), "--cache", str(cache_path), "--bootstrap", "50", "--device", "cpu"]
    result = runner.invoke(app, [*args, "--no-plots", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    return out


def _flat(text: str) -> str:
    return " ".join(text.split())


def _rewrite(path: Path, edit) -> None:
    s = json.loads(path.read_text())
    edit(s)
    path.write_text(json.dumps(s))


@pytest.fixture(scope="module")
def pruned(tmp_path_factory) -> tuple[Path, dict]:
    """A real prune over two LAYA heads whose α keep different single layers at k = 1 (seed 0: l1,
    seed 1: l3), on a planted cache; --max-drop 0.9 lets every set stay within it."""
    from test_prune import _planted_cache

    root = tmp_path_factory.mktemp("beyond2-prune")
    cache, _ = _planted_cache(root, 400, seed=0)
    fit = root / "heads"
    with FeatureStore(cache) as store:
        for s, alpha in ((0, [0.6, 0.4, 0.0]), (1, [0.0, 0.4, 0.6])):
            save_head(fit / "laya" / f"seed_{s}", planted_laya(alpha), meta={**cache_identity(store), "seed": s})
    out = root / "prune"
    args = ["prune", str(fit), "--cache", str(cache), "--ks", "1", "--epochs", "2", "--costs", "shapes"]
    args += ["--max-drop", "0.9", "--no-plots", "--device", "cpu", "--out", str(out)]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    return out, {"output": result.output}


def test_a_mean_over_different_sets_names_them_in_the_terminal_summary_and_page(pruned):
    """alpha's smallest set within --max-drop read "keeps 1 layer, saving x% FLOPs", a mean over heads that
    keep different layers; it now says so and which sets, with each one's saving."""
    out, run = pruned
    s = json.loads((out / "summary.json").read_text())
    (one,) = [p for p in s["points"] if p["ranking"] == "alpha" and p["k"] == 1]
    assert one["layers_by_seed"] == {"0": ["l1"], "1": ["l3"]}
    saved = one["flops_saved_by_seed"]
    assert saved["0"] > saved["1"]  # keeping l1 runs less of the backbone than keeping l3
    assert one["flops_saved"] == pytest.approx((saved["0"] + saved["1"]) / 2)
    (line,) = [v for v in s["verdict"] if v.startswith("alpha: smallest set")]
    sets = f"seed 0: l1, {100 * saved['0']:.1f}%; seed 1: l3, {100 * saved['1']:.1f}%"
    mean = f"saving {100 * one['flops_saved']:.1f}% FLOPs"
    assert f"{mean} (the mean over different sets, each head's own: {sets})" in line
    assert line in _flat(run["output"])
    page = _flat(html.unescape((out / "report.html").read_text(encoding="utf-8")))
    assert "(mean over different sets)" in page  # the table's cell
    assert f"alpha's FLOPs saved at its smallest set, {100 * one['flops_saved']:.1f}%, is the mean over" in page
    assert sets in page


def test_report_rebuilds_prune_verdicts_from_the_fields_not_the_stored_lines(pruned, tmp_path):
    """`report DIR` printed summary.json's stored verdict lines, so an older summary kept its older
    wording; it now rebuilds them by the run's rule, and shows stored lines (with a note) only where a
    field the rule reads is missing."""
    import shutil

    out, _ = pruned
    copy = tmp_path / "prune"
    shutil.copytree(out, copy)
    s = json.loads((copy / "summary.json").read_text())
    (i,) = [j for j, v in enumerate(s["verdict"]) if v.startswith("alpha: smallest set")]
    rebuilt = s["verdict"][i]

    def older(s: dict) -> None:
        s["verdict"][i] = "OLDER: alpha keeps 1 layer, saving 55.8% FLOPs"

    _rewrite(copy / "summary.json", older)
    again = runner.invoke(app, ["report", str(copy)], env=ENV)
    assert again.exit_code == 0, again.output
    said = _flat(again.output)
    assert rebuilt in said and "OLDER" not in said and "as summary.json stores them" not in said
    # a summary without a field the rule reads: its stored lines, said to be so, naming the field in words
    _rewrite(copy / "summary.json", lambda s: s["alpha_vs"]["random"].pop("verdict"))
    older = "note: this summary was written by an older laya-inspect and lacks verdict (in alpha_vs.random)"
    shown = "its stored verdict lines are shown; rerun prune to read them by today's rule"
    stored = runner.invoke(app, ["report", str(copy)], env=ENV)
    assert stored.exit_code == 0, stored.output
    said = _flat(stored.output)
    assert "OLDER: alpha keeps 1 layer, saving 55.8% FLOPs" in said
    assert f"{older}: {shown}" in said and "KeyError" not in said
    page = runner.invoke(app, ["report", str(copy), "--html"], env=ENV)
    assert page.exit_code == 0, page.output
    text = _flat(html.unescape((copy / "report.html").read_text(encoding="utf-8")))
    assert "OLDER: alpha keeps 1 layer, saving 55.8% FLOPs" in text
    assert f"{older.removeprefix('note: ')}: {shown}" in text
    _rewrite(copy / "summary.json", lambda s: s["config"].pop("max_drop"))  # every missing field named
    stored = runner.invoke(app, ["report", str(copy)], env=ENV)
    assert f"{older}, max_drop (in config): {shown}" in _flat(stored.output)


def test_a_complete_summary_reads_by_the_rule_and_its_errors_are_not_taken_for_an_older_one(pruned):
    """Any KeyError or TypeError of the rule read as "an older summary", so a bug in a verdict rule showed
    the stored lines and a raw "KeyError: 'max_drop'"; only fields missing from VERDICT_FIELDS' list do now."""
    from laya_inspect.beyond import prune, summary_verdict

    out, _ = pruned
    s = json.loads((out / "summary.json").read_text())
    assert summary_verdict(s) == (prune.verdict_lines(s), None)  # today's summary lacks none of the fields
    s["alpha_vs"]["random"]["verdict"] = None  # every field there, one the rule cannot read: an error, raised
    with pytest.raises(TypeError):
        summary_verdict(s)


def test_report_rebuilds_diagnose_verdicts_from_the_fields(digits_cache, tmp_path):
    """The same for diagnose, on two LAYA heads fitted on digits."""
    out = diagnosed_two_heads(digits_cache, tmp_path)
    first = json.loads((out / "summary.json").read_text())["verdict"][0]
    _rewrite(out / "summary.json", lambda s: s["verdict"].__setitem__(0, "OLDER: error detection"))
    again = runner.invoke(app, ["report", str(out)], env=ENV)
    assert again.exit_code == 0, again.output
    assert first in _flat(again.output) and "OLDER" not in again.output


def test_all_layers_as_the_only_set_within_max_drop_is_said_to_be_nothing_to_prune(pruned):
    """A small CNN on CIFAR-10 JPEGs kept no smaller set within --max-drop, and prune read "keep stages.0,
    stages.1, stages.2 (3 of 3 layers), found by alpha, scalarmix, lolo, depth, deepest", again as "most
    compute saved", and once per ranking: the reference itself, as a finding of every ranking. The run's
    summary, with its sets below all layers put outside --max-drop, reads as that run's did."""
    from laya_inspect.beyond import summary_verdict

    out, _ = pruned
    s = json.loads((out / "summary.json").read_text())
    n = len(s["cache"]["layer_names"])
    for p in s["points"]:
        p["within_max_drop"] = p["k"] == n
    (every,) = [p for p in s["points"] if p["ranking"] == "alpha" and p["k"] == n]
    s["chosen"] = s["cheapest"] = {**every, "found_by": list(s["rankings"])}
    s["withheld"] = {}
    lines, note = summary_verdict(s)
    assert note is None
    assert f"no layer set but all {n} stays within --max-drop: nothing to prune" in lines, lines
    assert not [v for v in lines if v.startswith(("keep ", "most compute saved", "alpha: smallest set"))], lines
