"""What extract warned about a cache (random weights, a backbone `train` left at chance, …) is read
beside every result computed from it: fit-head's, compare's and explain's terminal, their
summary.json (explain's --json) and report.html."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
from helpers import write_cache
from typer.testing import CliRunner, Result

from laya_inspect.cli import app

runner = CliRunner()
ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
SAID = "flat.pt (from `laya-inspect train`): near chance: test accuracy 0.103 vs chance 0.100 (majority class)"


def _fitted(tmp_path: Path, said: list[str]) -> tuple[Path, Result]:
    """A cache that records ``said`` as extract's warnings (its label: the sign of a feature of the
    last layer), and fit-head's run of one LAYA head on it into ``tmp_path / "h"``."""
    rng = np.random.default_rng(0)
    splits = {}
    for name, n in (("train", 200), ("test", 100)):
        feats = [rng.normal(size=(n, 4)).astype(np.float32) for _ in range(3)]
        splits[name] = (feats, (feats[2][:, 0] > 0).astype(np.int64))
    cache = write_cache(tmp_path / "c.h5", splits, extra_attrs={"warnings": said})
    fit = ["fit-head", str(cache), "--head", "laya", "--seeds", "1", "--epochs", "3", "--out", str(tmp_path / "h")]
    fitted = runner.invoke(app, fit, env=ENV)
    assert fitted.exit_code == 0, fitted.output
    return cache, fitted


def test_the_caches_warnings_travel_into_fit_head_and_compare(tmp_path: Path) -> None:
    cache, fit = _fitted(tmp_path, [SAID])
    assert f"warning cache: {SAID}" in fit.stdout
    fitted = json.loads((tmp_path / "h" / "summary.json").read_text())
    assert fitted["cache"]["cache_warnings"] == [SAID]
    head_config = json.loads((tmp_path / "h" / "laya" / "seed_0" / "config.json").read_text())
    assert head_config["cache_warnings"] == [SAID]
    assert "cache warning" in (tmp_path / "h" / "report.html").read_text(encoding="utf-8")

    args = ["compare", str(tmp_path / "h" / "laya" / "seed_0"), "--cache", str(cache), "--method", "alpha"]
    compared = runner.invoke(app, [*args, "--no-sanity", "--no-plots", "--out", str(tmp_path / "c")], env=ENV)
    assert compared.exit_code == 0, compared.output
    assert f"warning cache: {SAID}" in compared.stdout
    said = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert said["cache"]["warnings"] == [SAID]
    assert all(w.startswith("fit-head said of laya") for w in said["head_warnings"])
    page = (tmp_path / "c" / "report.html").read_text(encoding="utf-8")
    assert "cache warning" in page and "flat.pt (from `laya-inspect train`)" in page
    again = runner.invoke(app, ["report", str(tmp_path / "c")], env=ENV)
    assert again.exit_code == 0 and f"warning cache: {SAID}" in again.stdout

    one = ["explain", str(tmp_path / "h" / "laya" / "seed_0"), "--cache", str(cache), "--row", "0", "--n-steps", "4"]
    explained = runner.invoke(app, one, env=ENV)
    assert explained.exit_code == 0, explained.output
    assert f"warning cache: {SAID}" in explained.stdout
    as_json = runner.invoke(app, [*one, "--json"], env=ENV)
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["cache_warnings"][0] == SAID


def test_what_fit_head_said_of_a_head_travels_into_compare_and_the_beyond_commands(tmp_path: Path) -> None:
    """QA: fit-head's quality gate said "α constant across inputs" and "seeds disagree" in its own
    summary, and compare and diagnose then scored those heads with no word of it. Labels here are
    noise, so every head is near chance; compare and early-exit say so, once for all seeds, and a
    head directory moved out of its fit-head folder is read without it."""
    rng = np.random.default_rng(1)
    splits = {}
    for name, n in (("train", 240), ("test", 120)):
        splits[name] = ([rng.normal(size=(n, 4)).astype(np.float32) for _ in range(3)], rng.integers(0, 2, n))
    cache = write_cache(tmp_path / "c.h5", splits)
    fit = ["fit-head", str(cache), "--head", "laya", "--seeds", "2", "--epochs", "3", "--out", str(tmp_path / "h")]
    assert runner.invoke(app, fit, env=ENV).exit_code == 0
    said = json.loads((tmp_path / "h" / "summary.json").read_text())["heads"][0]["warnings"]
    assert any("near chance" in w for w in said), said
    want = [f"fit-head said of laya ({tmp_path / 'h' / 'summary.json'}): {w}" for w in said]

    heads = [str(tmp_path / "h" / "laya" / f"seed_{s}") for s in (0, 1)]
    args = ["compare", *heads, "--cache", str(cache), "--method", "alpha", "--no-sanity", "--no-plots"]
    compared = runner.invoke(app, [*args, "--out", str(tmp_path / "c")], env=ENV)
    assert compared.exit_code == 0, compared.output
    said = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert said["head_warnings"] == want and said["cache"]["warnings"] == []
    assert "warning head: fit-head said of laya" in " ".join(compared.stdout.split())
    page = (tmp_path / "c" / "report.html").read_text(encoding="utf-8")
    assert '<p class="note">Warning: fit-head said of laya' in page and "near chance" in page

    exit_args = ["early-exit", heads[0], "--cache", str(cache), "--seeds", "1", "--epochs", "2", "--no-plots"]
    exited = runner.invoke(app, [*exit_args, "--out", str(tmp_path / "e")], env=ENV)
    assert exited.exit_code == 0, exited.output
    assert [w for w in json.loads((tmp_path / "e" / "summary.json").read_text())["warnings"] if "fit-head" in w] == want

    one = ["explain", heads[1], "--cache", str(cache), "--row", "0", "--n-steps", "4", "--json"]
    explained = runner.invoke(app, one, env=ENV)
    assert explained.exit_code == 0, explained.output
    as_json = json.loads(explained.stdout)
    assert as_json["head_warnings"] == want and as_json["cache_warnings"] == []

    moved = tmp_path / "moved"
    (tmp_path / "h" / "laya" / "seed_0").rename(moved)
    alone = runner.invoke(app, ["compare", str(moved), *args[3:], "--out", str(tmp_path / "c2")], env=ENV)
    assert alone.exit_code == 0, alone.output
    assert json.loads((tmp_path / "c2" / "summary.json").read_text())["head_warnings"] == []


def test_a_cache_warning_that_begins_with_head_is_said_of_the_cache(tmp_path: Path) -> None:
    """A warning the backbone's loader gave about its own classifier head (here its first word) was
    shown as "warning head:", a line about a fitted head, because the label was guessed from the
    line's first words; what extract recorded is said of the cache wherever it is shown."""
    heady = "head weights newly initialised by the model's factory (classifier.weight): its logits are untrained"
    cache, fitted = _fitted(tmp_path, [heady])
    assert f"warning cache: {heady}" in fitted.stdout and "warning head" not in fitted.stdout

    head = str(tmp_path / "h" / "laya" / "seed_0")
    one = ["explain", head, "--cache", str(cache), "--row", "0", "--n-steps", "4"]
    explained = runner.invoke(app, one, env=ENV)
    assert explained.exit_code == 0, explained.output
    assert f"warning cache: {heady}" in explained.stdout and f"warning head: {heady}" not in explained.stdout
    as_json = json.loads(runner.invoke(app, [*one, "--json"], env=ENV).stdout)
    assert as_json["cache_warnings"] == [heady] and heady not in as_json["head_warnings"]

    # compare on the head's training split, so that a line is said of the head too
    args = ["compare", head, "--cache", str(cache), "--method", "alpha", "--split", "train", "--no-sanity"]
    compared = runner.invoke(app, [*args, "--no-plots", "--out", str(tmp_path / "c")], env=ENV)
    assert compared.exit_code == 0, compared.output
    summary = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert summary["cache"]["warnings"] == [heady]
    assert heady not in summary["head_warnings"]
    assert summary["head_warnings"][-1].startswith("head laya-seed_0 was trained on split 'train'")
    for shown in (compared.stdout, runner.invoke(app, ["report", str(tmp_path / "c")], env=ENV).stdout):
        assert f"warning cache: {heady}" in shown and "warning head: head laya-seed_0 was" in shown
    page = (tmp_path / "c" / "report.html").read_text(encoding="utf-8")
    assert page.index(f"Warning: {html.escape(heady)}") < page.index("Warning: head laya-seed_0 was trained")


def test_a_compare_summary_written_before_head_warnings_reads_as_it_did() -> None:
    """Summaries written before `head_warnings` kept every line in cache.warnings, the cache's first;
    they are read as then, a line about a head told by its first words (and so a cache warning that
    begins with "head" is read as a head's, as it was)."""
    from laya_inspect.compare.records import compare_warnings

    cache = ["no normalisation known", "head weights newly initialised"]
    heads = ["fit-head said of laya (h/summary.json): near chance", "head laya-seed_0 was trained on split 'test'"]
    old = {"cache": {"warnings": [*cache, *heads]}}  # as the previous version wrote it
    assert compare_warnings(old) == [("cache", cache[0]), ("head", cache[1]), ("head", heads[0]), ("head", heads[1])]
    new = {"cache": {"warnings": cache}, "head_warnings": ["seeds disagree on laya", *heads]}
    assert compare_warnings(new) == [
        *(("cache", w) for w in cache),
        *(("head", w) for w in ["seeds disagree on laya", *heads]),
    ]
    assert compare_warnings({"cache": {}}) == compare_warnings({"cache": {"warnings": []}, "head_warnings": []}) == []


def test_a_head_not_shown_below_the_probe_is_said_so_wherever_it_is_read(tmp_path: Path) -> None:
    """fit-head's gate reads a head under the probe whose gap over seeds includes 0 as "not shown below
    the probe", a note of its own summary only: compare then stated the head's accuracy and verdicts
    with no word of it. The note now travels with the head like the gate's warnings."""
    from helpers import page_said

    cache, _ = _fitted(tmp_path, [])
    fit = ["fit-head", str(cache), "--head", "laya", "--seeds", "2", "--epochs", "2", "--out", str(tmp_path / "h2")]
    assert runner.invoke(app, fit, env=ENV).exit_code == 0
    summary_path = tmp_path / "h2" / "summary.json"
    fitted = json.loads(summary_path.read_text())
    (laya,) = fitted["heads"]
    note = (
        "not shown below the probe: test accuracy 0.800 vs 0.900 for a logistic regression on layer2 alone, but "
        "the gap over 2 seeds, -0.100 [-0.900, +0.700] (95% t-interval), includes 0; more seeds would tell"
    )  # as the gate writes it (training/quality.py)
    laya["probe_reference"] = {**(laya.get("probe_reference") or {}), "reading": "not shown below the probe"}
    laya["gate_notes"] = [note]
    summary_path.write_text(json.dumps(fitted))
    want = f"fit-head said of laya ({summary_path}): {note}"

    heads = [str(tmp_path / "h2" / "laya" / f"seed_{s}") for s in (0, 1)]
    args = ["compare", *heads, "--cache", str(cache), "--method", "alpha", "--no-sanity", "--no-plots"]
    compared = runner.invoke(app, [*args, "--out", str(tmp_path / "c")], env=ENV)
    assert compared.exit_code == 0, compared.output
    assert want in json.loads((tmp_path / "c" / "summary.json").read_text())["head_warnings"]
    assert "not shown below the probe" in " ".join(compared.stdout.split())
    assert "not shown below the probe: test accuracy 0.800" in page_said(tmp_path / "c" / "report.html")
    again = runner.invoke(app, ["report", str(tmp_path / "c")], env=ENV)
    assert again.exit_code == 0 and "not shown below the probe" in " ".join(again.stdout.split())
    # a gate that read the head as above the probe carries no such note
    laya["probe_reference"]["reading"] = "above the probe"
    summary_path.write_text(json.dumps(fitted))
    alone = runner.invoke(app, [*args, "--out", str(tmp_path / "c2")], env=ENV)
    assert alone.exit_code == 0, alone.output
    assert not any("probe" in w for w in json.loads((tmp_path / "c2" / "summary.json").read_text())["head_warnings"])


def test_a_kept_leftover_beside_compares_output_is_named_in_its_summary(tmp_path: Path) -> None:
    """Review: `compare --out c --force` beside a user's `.c.old-99999/` kept the folder and said so
    on stderr only: compare's summary.json had no top-level `warnings` for the note to join."""
    cache, _ = _fitted(tmp_path, [])
    out = tmp_path / "c"
    args = ["compare", str(tmp_path / "h" / "laya" / "seed_0"), "--cache", str(cache), "--method", "alpha"]
    args += ["--no-sanity", "--no-plots", "--out", str(out)]
    assert runner.invoke(app, args, env=ENV).exit_code == 0
    mine = tmp_path / ".c.old-99999"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    again = runner.invoke(app, [*args, "--force"], env=ENV)
    assert again.exit_code == 0, again.output
    summary = json.loads((out / "summary.json").read_text())
    (said,) = summary["warnings"]
    assert str(mine) in said and "left as it is" in said
    assert (mine / "notes.txt").read_text() == "mine"
    shown = runner.invoke(app, ["report", str(out)], env=ENV)
    assert shown.exit_code == 0 and "warning compare:" in shown.stdout and mine.name in shown.stdout
