"""`laya-inspect fit-head` end to end on the real digits cache, and one failing call per error class."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
from itertools import takewhile
from pathlib import Path

import numpy as np
import pytest
from helpers import page_said
from typer.testing import CliRunner

from laya_inspect.cli import app

runner = CliRunner()
ENV = {"COLUMNS": "200"}
FAST = ["--epochs", "3", "--lr", "1e-2", "--batch-size", "32"]


@pytest.fixture(scope="module")
def fitted(digits_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("fit") / "heads"
    result = runner.invoke(
        app, ["fit-head", str(digits_cache), "--head", "all", "--seeds", "2", *FAST, "--out", str(out)], env=ENV
    )
    assert result.exit_code == 0, result.output
    return out, result


def _labels(out: Path) -> str:
    """The test labels of the cache the heads were fitted on, as JSON."""
    from laya_inspect.cache.store import FeatureStore

    cache = json.loads((out / "summary.json").read_text())["cache"]["cache_path"]
    with FeatureStore(cache) as store:
        return json.dumps(store.labels("test").tolist())


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_fit_head_writes_every_artifact(fitted: tuple[Path, object]) -> None:
    out, _ = fitted
    heads = ["laya", "last", "concat", "scalarmix"]
    for h in heads:
        for s in (0, 1):
            d = out / h / f"seed_{s}"
            config = json.loads((d / "config.json").read_text())
            assert config["kind"] == h and config["seed"] == s and config["hparams"]["d_star"] == 96
            assert config["training"]["epochs"] == 3 and len(config["history"]) >= 1
            assert (d / "weights.pt").stat().st_size > 0
            metrics = json.loads((d / "metrics.json").read_text())
            assert metrics["test_acc"] > 0.1 and metrics["epochs_run"] <= 3  # chance is 0.1
            log = _csv(d / "train_log.csv")
            assert [int(r["epoch"]) for r in log] == list(range(1, len(log) + 1))
    runs = json.loads((out / "runs.json").read_text())
    assert len(runs) == 8 and len(_csv(out / "runs.csv")) == 8
    assert {(r["head"], r["seed"]) for r in runs} == {(h, s) for h in heads for s in (0, 1)}
    summary = json.loads((out / "summary.json").read_text())
    rows = {r["head"]: r for r in summary["heads"]}
    assert list(rows) == heads
    for h, r in rows.items():
        assert r["n"] == 2 and r["test_acc"]["mean"] > 0.1
        assert r["test_acc"]["ci_low"] <= r["test_acc"]["mean"] <= r["test_acc"]["ci_high"]
        assert (r["delta_vs_last"] is None) == (h == "last")
    laya_runs = [x for x in runs if x["head"] == "laya"]
    last_runs = {x["seed"]: x for x in runs if x["head"] == "last"}
    expected = np.mean([x["test_acc"] - last_runs[x["seed"]]["test_acc"] for x in laya_runs])
    assert rows["laya"]["delta_vs_last"]["test_acc"]["mean"] == pytest.approx(expected)
    assert summary["split"]["n_val"] + summary["split"]["n_train"] == 1347
    summary_csv = _csv(out / "summary.csv")
    assert len(summary_csv) == 4
    assert {"warnings", "seed_rank_agreement", "seed_top_layer_agreement"} <= set(summary_csv[0])
    assert "seed_top_layer_agreement_constant" in summary_csv[0]
    # the quality gate: references, and per head its warnings and the seeds' agreement
    quality = summary["quality"]
    assert quality["chance"] == pytest.approx(np.bincount(np.asarray(json.loads(_labels(out)))).max() / 450)
    assert [p["layer"] for p in quality["probe"]["layers"]] == ["blocks.0", "blocks.1", "blocks.2"]
    for h, r in rows.items():
        assert isinstance(r["warnings"], list) and r["probe_reference"]["layer"]
        csv_row = next(c for c in summary_csv if c["head"] == h)
        assert csv_row["warnings"] == " | ".join(r["warnings"])
        assert (r["seed_agreement"] is None) == (h in ("last", "concat"))
    assert 0 <= rows["laya"]["seed_agreement"]["top_layer_agreement"] <= 1
    assert rows["laya"]["seed_agreement"]["top_layer_agreement_constant"] in (0.0, 1.0)  # one pair of seeds
    prof = json.loads((out / "profiles" / "profiles.json").read_text())["alpha"]["laya"]
    weights = rows["laya"]["layer_weights"]
    assert weights["per_seed"]["1"] == pytest.approx(prof["seed_means"][1]) and weights["pooled"] == pytest.approx(
        prof["mean"]
    )
    assert rows["last"]["layer_weights"] is None
    assert summary["training"]["epochs"] == 3 and summary["training"]["monitor"] == "loss"
    assert summary["standardization"]["mode"] == "feature"


@pytest.mark.slow
def test_alpha_profiles(fitted: tuple[Path, object]) -> None:
    out, _ = fitted
    prof = json.loads((out / "profiles" / "profiles.json").read_text())
    assert prof["layer_names"] == ["blocks.0", "blocks.1", "blocks.2"]
    laya = prof["alpha"]["laya"]
    assert sum(laya["mean"]) == pytest.approx(1.0, abs=1e-5)
    assert all(abs(sum(m) - 1) < 1e-5 for m in laya["seed_means"])
    groups = laya["class"]
    for c in range(10):
        assert groups["correct"]["count"][c] + groups["incorrect"]["count"][c] == groups["all"]["count"][c]
        assert sum(groups["all"]["mean"][c]) == pytest.approx(1.0, abs=1e-5)
    assert sum(groups["all"]["count"]) == 2 * 450  # pooled over the 2 seeds' test rows
    static = prof["static"]["scalarmix"]
    assert len(static["weights"]) == 2 and sum(static["mean"]) == pytest.approx(1.0, abs=1e-6)
    layer_rows = _csv(out / "profiles" / "layer_weights.csv")
    assert {(r["head"], r["kind"]) for r in layer_rows} == {("laya", "alpha"), ("scalarmix", "static")}
    assert len(_csv(out / "profiles" / "class_layer_alpha.csv")) == 3 * 10 * 3
    assert len(_csv(out / "profiles" / "static_weights.csv")) == 2 * 3
    assert len(_csv(out / "profiles" / "seed_layer_weights.csv")) == 2 * 2 * 3  # 2 heads × 2 seeds × 3 layers
    assert np.asarray(laya["seed_class"]).shape == (2, 10, 3)
    assert laya["seed_agreement"]["pairs"] == 1 and prof["static"]["scalarmix"]["seed_agreement"]["pairs"] == 1
    stems = ("layer_weights", "laya_class_all", "laya_class_correct", "laya_class_incorrect", "laya_seeds")
    for stem in (*stems, "scalarmix_seeds", "laya_class_all_seed0", "laya_class_all_seed1"):
        assert (out / "profiles" / f"{stem}.png").read_bytes()[:4] == b"\x89PNG"
        assert not (out / "profiles" / f"{stem}.svg").exists()  # SVG only with --svg


@pytest.mark.slow
def test_terminal_output(fitted: tuple[Path, object]) -> None:
    out, result = fitted
    text = result.stdout
    for h in ("laya", "last", "concat", "scalarmix", "accuracy", "macro-F1", "Δ acc vs last", "(baseline)"):
        assert h in text
    assert "laya α: blocks.0" in text and "(pooled over 2 seeds)" in text
    assert "  seed 0: blocks.0" in text and "  seed 1: blocks.0" in text and "seed agreement: per-row rank ρ" in text
    assert "one mean profile per seed for every row: ρ" in text.replace("\n", " ")
    assert "gate" in text and "reference: chance" in text
    assert "logistic probe on one layer, test accuracy: best by validation blocks." in text
    summary = json.loads((out / "summary.json").read_text())
    said = text.replace("\n", " ")
    for h in summary["heads"]:
        for w in h["warnings"]:
            # one warning several heads share is said once, naming them all ("warning last, concat: …")
            assert re.search(rf"warning (\w+, )*{h['head']}(, \w+)*: {re.escape(w[:40])}", said), w
    assert "summary.json" in text and "runs.csv" in text and "profiles" in text
    assert f"heads    {out}/<laya|last|concat|scalarmix>/" in text  # the final folder, not the temporary one
    assert "report   " in text and "report.html (open it in a browser)" in text.replace("\n", "")


def _settings(text: str) -> tuple[str, str]:
    """The settings line's two parts: what the command line gave, what it left at the default."""
    line = " ".join(text.split()).split("settings given: ", 1)[1]
    given, left = line.split("; left at their defaults: ", 1)
    return given, left.split(" device ")[0] + " device " + left.split(" device ")[1].split()[0]


@pytest.mark.slow
def test_terminal_states_the_settings_and_which_were_left_at_default(fitted: tuple[Path, object]) -> None:
    """Users read accuracies without the settings that produced them (those were only in summary.json):
    one line above the table names them, the defaults said apart, and `report` prints it again."""
    out, result = fitted
    summary = json.loads((out / "summary.json").read_text())
    assert {"d_star", "tau", "weight_decay", "patience", "val_fraction", "device"} <= set(summary["config_defaults"])
    assert not {"lr", "epochs", "batch_size", "seeds"} & set(summary["config_defaults"])
    text = result.stdout
    lines = text.splitlines()
    assert text.index("settings given: ") < text.index("Δ acc vs last")  # read before the numbers
    start = next(i for i, line in enumerate(lines) if line.startswith("settings given: "))
    block = [lines[start], *takewhile(lambda line: line.startswith("  "), lines[start + 1 :])]
    assert len(block) <= 3 and max(len(line) for line in block) <= 100, block  # a 200-column terminal too
    given, left = _settings(text)
    assert given == "lr 0.01 · ≤ 3 epochs · seeds 0, 1 · batch 32"
    patience = summary["training"]["patience"]  # the default rule's, more than the 3 epochs: it stops nothing
    assert patience >= 3
    stop = f"no early stop (patience {patience} ≥ the 2 epochs after the first)"
    assert left == f"d*=96 · τ=1.5 · weight decay 0.01 · {stop} · validation 0.1 of train · device cpu"
    again = runner.invoke(app, ["report", str(out)], env=ENV)
    assert again.exit_code == 0 and _settings(again.stdout) == (given, left)
    assert f"settings given: {given}; left at their defaults: {left}" in page_said(out / "report.html")


@pytest.mark.slow
def test_json_output_and_single_seed(digits_cache: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "fit-head",
            str(digits_cache),
            "--head",
            "laya,last",
            "--seed",
            "3",
            *FAST,
            "--d-star",
            "16",
            "--tau",
            "1.0",
            "--psi",
            "mlp",
            "--val-mode",
            "last",
            "--out",
            str(tmp_path / "o"),
            "--json",
        ],
        env=ENV,
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert [h["head"] for h in summary["heads"]] == ["laya", "last"]
    laya = summary["heads"][0]
    assert laya["n"] == 1 and laya["test_acc"]["ci_low"] is None and "undefined" in laya["test_acc"]["note"]
    assert summary["hparams"]["psi"] == "mlp" and summary["split"]["val_mode"] == "last"
    assert json.loads((tmp_path / "o" / "laya" / "seed_3" / "config.json").read_text())["kwargs"]["d_star"] == 16


def test_heads_on_some_of_the_caches_layers(digits_cache: Path, tmp_path: Path) -> None:
    """fit-head --layers: heads on the layers named, read so by compare; no re-extraction."""
    from laya_inspect.cache.store import FeatureStore

    with FeatureStore(digits_cache) as store:
        every = store.layer_names
    out = tmp_path / "o"
    args = ["fit-head", str(digits_cache), "--layers", "1:", "--head", "laya,last", "--seeds", "1", *FAST]
    result = runner.invoke(app, [*args, "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    assert f"2 of its {len(every)} layers" in " ".join(result.output.split())  # the table title, wrapped
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cache"]["layer_names"] == every[1:] and summary["cache"]["cache_layer_names"] == every
    assert summary["config"]["layers"] == "1:"
    config = json.loads((out / "laya" / "seed_0" / "config.json").read_text())
    assert config["layer_names"] == every[1:] and config["kwargs"]["widths"] == [32, 16]
    cmp = tmp_path / "c"
    res = runner.invoke(
        app,
        ["compare", str(out / "laya"), "--cache", str(digits_cache), "--method", "alpha", "--bootstrap", "20",
         "--no-plots", "--no-sanity", "--out", str(cmp)],
        env=ENV,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads((cmp / "summary.json").read_text())["heads"][0]["n_layers"] == 2
    bad = runner.invoke(app, ["fit-head", str(digits_cache), "--layers", "blocks.9", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 1 and "no layer 'blocks.9'" in bad.stderr


def test_layers_named_out_of_the_caches_order_are_read_in_its_order(digits_cache: Path, tmp_path: Path) -> None:
    """QA: fit-head --layers blocks.2,blocks.0 gave a 'last' head that read blocks.0."""
    out = tmp_path / "o"
    args = ["fit-head", str(digits_cache), "--layers", "blocks.2,blocks.0", "--head", "last", "--seeds", "1"]
    result = runner.invoke(app, [*args, *FAST, "--no-probe", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    said = (
        "--layers blocks.2,blocks.0 named the layers out of depth order; "
        "they are kept in the cache's order: blocks.0, blocks.2"
    )
    assert f"warning fit-head: {said}" in " ".join(result.output.split())
    assert json.loads((out / "summary.json").read_text())["warnings"] == [said]
    config = json.loads((out / "last" / "seed_0" / "config.json").read_text())
    assert config["layer_names"] == ["blocks.0", "blocks.2"] and config["kwargs"]["widths"] == [48, 16]
    # QA: report.html left it out, which the terminal printed; it leads the page's reading, as warnings do
    result = runner.invoke(app, ["report", str(out), "--html"], env=ENV)
    assert result.exit_code == 0, result.output
    page = html.unescape((out / "report.html").read_text(encoding="utf-8"))
    assert f'<p class="note">Warning: {said}.</p>' in page


@pytest.mark.parametrize(
    "layers, message",
    [
        ("blocks.9", "available: blocks.0, blocks.1, blocks.2; {cache} holds only these layers"),
        ("10:5", "layer range '10:5' selects none of the 3 layers of {cache}: blocks.0, blocks.1, blocks.2"),
        ("7", "valid are 0..2 or -3..-1 over the 3 layers of {cache}"),
    ],
)
def test_a_layer_the_cache_lacks_is_named_with_the_caches_layers(
    digits_cache: Path, tmp_path: Path, layers: str, message: str
) -> None:
    """QA: the line spoke of the model's default layers and of --list-layers, an option fit-head lacks."""
    result = runner.invoke(app, ["fit-head", str(digits_cache), "--layers", layers, "--out", str(tmp_path / "x")])
    assert result.exit_code == 1
    line = " ".join(result.stderr.split())
    assert message.format(cache=digits_cache) in line and "--list-layers" not in line and "model" not in line


def test_help_says_how_the_grid_picks() -> None:
    """QA: --help said the grid picks by validation accuracy; it picks by validation loss (--monitor)."""
    result = runner.invoke(app, ["fit-head", "--help"], env=ENV)
    text = " ".join(result.output.replace("│", " ").split())
    assert "by the lowest mean validation loss (with --monitor acc: the best mean validation accuracy)" in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--head", "lasst"], "no head 'lasst'; did you mean 'last'"),
        (["--tau", "0"], "--tau must be a finite number > 0, got 0.0"),
        (["--val-fraction", "1.5"], "--val-fraction must be in (0, 1)"),
        (["--train-split", "trian"], "no split 'trian'"),
        # QA: trained and "tested" on one split, the gate said ok
        (["--train-split", "test"], "--test-split must be another split than --train-split"),
    ],
)
def test_errors_exit_1_with_one_line(digits_cache: Path, tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["fit-head", str(digits_cache), *args, "--out", str(tmp_path / "x")], env=ENV)
    assert result.exit_code == 1, result.output
    assert message in result.stderr and "Traceback" not in result.output
    assert result.stderr.strip().count("\n") == 0


@pytest.mark.slow
def test_missing_cache_and_existing_out(digits_cache: Path, fitted: tuple[Path, object], tmp_path: Path) -> None:
    result = runner.invoke(app, ["fit-head", str(tmp_path / "none.h5")], env=ENV)
    assert result.exit_code == 1 and "no feature cache at" in result.stderr
    out, _ = fitted
    result = runner.invoke(app, ["fit-head", str(digits_cache), "--head", "last", "--out", str(out)], env=ENV)
    assert result.exit_code == 1 and "--force" in result.stderr


def test_usage_errors_exit_2(digits_cache: Path) -> None:
    for args in (["--seeds", "2", "--seed", "1"], ["--epochs", "many"], ["--val-mode", "random"], ["--bogus"]):
        result = runner.invoke(app, ["fit-head", str(digits_cache), *args], env=ENV)
        assert result.exit_code == 2, (args, result.output)


# -- `report` on hand-edited files: one line, never a traceback ------------------------------------

# (path in the file, value; DELETE removes the key): QA's reproductions first, then a fixed list of the
# edits a random fuzz of the files applies (a key removed; a string, number, null, {} or [] in its place)
DELETE = object()
SUMMARY_EDITS = [
    (("quality", "probe", "best_layer"), "blocks.7"),
    (("heads", 0, "test_macro_f1", "mean"), "x"),
    (("quality", "chance"), "x"),
    (("quality", "probe", "layers"), []),
    (("quality", "probe", "layers", 0), "x"),
    (("quality", "probe", "last_test_acc"), None),
    (("quality",), []),
    (("heads", 0, "test_acc", "ci_low"), {}),
    (("heads", 0, "test_acc", "values"), 3),
    (("heads", 0, "n"), "two"),
    (("heads", 0, "seeds"), 5),
    (("heads", 0, "warnings"), "x"),
    (("heads", 0, "delta_vs_last"), "x"),
    (("heads", 0, "seed_agreement", "seeds"), "x"),
    (("heads", 0, "seed_agreement", "top_layer_agreement"), []),
    (("heads", 0, "layer_weights", "pooled"), [0.5]),
    (("heads", 0, "layer_weights", "layers"), DELETE),
    (("heads", 0, "layer_weights", "per_seed", "0"), None),
    (("heads", 1), "x"),
    (("heads", 1, "head"), 3),
    (("cache",), "x"),
    (("cache", "cache_path"), 3),
    (("cache", "cache_layer_names"), 2),
    (("warnings",), {}),
    (("hparams",), []),
    (("split",), 1),
    (("config",), "x"),
    (("heads", 0, "test_macro_f1"), DELETE),
    (("quality", "probe"), DELETE),
]
DEMO_EDITS = [
    (("steps", 0, "seconds"), {}),
    (("steps", 0), "x"),
    (("steps",), "x"),
    (("steps", 0, "name"), []),
    (("steps", 0, "title"), 7),
    (("steps", 0, "command"), None),
    (("complete",), "no"),
    (("dataset",), "digits"),
    (("dataset", "description"), {}),
    (("budget_line",), 3),
    (("steps", 0, "seconds"), DELETE),
]
DEMO = {
    "kind": "laya-inspect-demo",
    "tool_version": "0.1.0",
    "complete": True,
    "dataset": {"name": "digits", "description": "scikit-learn's bundled digits", "spec": "digits"},
    "model": "zoo:mlp",
    "budget_line": "all 1,797 images; 1 seed (--quick)",
    "steps": [
        {"name": "train", "title": "train the backbone", "command": "laya-inspect train …", "seconds": 1.7},
        {"name": "extract", "title": "cache every layer", "command": "laya-inspect extract …", "seconds": None},
    ],
}


def _edited(src: Path, dst: Path, name: str, path: tuple, value: object) -> None:
    shutil.copytree(src, dst)
    data = json.loads((dst / name).read_text())
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    (dst / name).write_text(json.dumps(data))


def _one_line_or_fine(folder: Path) -> None:
    """`report` and `report --html` end in exit 0, or in exit 1 with one error line naming the file."""
    for extra in ([], ["--html"]):
        result = runner.invoke(app, ["report", str(folder), *extra], env=ENV)
        assert result.exit_code in (0, 1) and isinstance(result.exception, (SystemExit, type(None))), result.exception
        if result.exit_code == 1:
            errors = [line for line in result.output.splitlines() if line.startswith("error:")]
            assert len(errors) == 1 and str(folder) in errors[0] and "Traceback" not in result.output


def test_report_on_hand_edited_fit_summaries_says_one_line(fitted: tuple[Path, object], tmp_path: Path) -> None:
    """QA: report on a hand-edited summary.json ended in StopIteration, ValueError ("Unknown format
    code 'f'"), with and without --html."""
    out, _ = fitted
    for i, (path, value) in enumerate(SUMMARY_EDITS):
        _edited(out, tmp_path / f"s{i}", "summary.json", path, value)
        _one_line_or_fine(tmp_path / f"s{i}")
    result = runner.invoke(app, ["report", str(tmp_path / "s0")], env=ENV)
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "summary.json is not a valid fit-head summary" in said
    assert "summary.quality.probe.best_layer 'blocks.7' is none of its layers" in said
    result = runner.invoke(app, ["report", str(tmp_path / "s2"), "--html"], env=ENV)
    assert "summary.quality.chance is 'x', not a number" in " ".join(result.output.split())


def test_report_on_a_hand_edited_demo_record_says_one_line(tmp_path: Path) -> None:
    """QA: demo.json with steps[0].seconds = {} or steps[0] = "x" ended in TypeError / AttributeError."""
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "demo.json").write_text(json.dumps(DEMO))
    _one_line_or_fine(tmp_path / "demo")
    assert runner.invoke(app, ["report", str(tmp_path / "demo")], env=ENV).exit_code == 0
    for i, (path, value) in enumerate(DEMO_EDITS):
        _edited(tmp_path / "demo", tmp_path / f"d{i}", "demo.json", path, value)
        _one_line_or_fine(tmp_path / f"d{i}")
    result = runner.invoke(app, ["report", str(tmp_path / "d0")], env=ENV)
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "demo.json is not a valid demo record (demo.steps[0].seconds is {}" in said


def test_recorded_paths_lead_back_from_any_folder(
    digits_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """runs.json's head_dir and a head's cache_path were relative to where fit-head ran: read from
    another folder (a notebook, the report), they led nowhere."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(digits_cache, work / "features.h5")
    monkeypatch.chdir(work)
    args = ["fit-head", "features.h5", "--head", "last", "--seeds", "1", *FAST, "--out", "heads"]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    monkeypatch.chdir(tmp_path)
    (run,) = json.loads((work / "heads" / "runs.json").read_text())
    assert Path(run["head_dir"]).is_absolute() and (Path(run["head_dir"]) / "config.json").is_file()
    config = json.loads((Path(run["head_dir"]) / "config.json").read_text())
    summary = json.loads((work / "heads" / "summary.json").read_text())
    for path in (config["cache_path"], summary["cache"]["cache_path"]):
        assert Path(path) == work / "features.h5", path


def test_report_html_never_replaces_a_page_the_user_wrote(fitted: tuple[Path, object], tmp_path: Path) -> None:
    """Audit: `report DIR --html` wrote over any DIR/report.html: a user's own page beside a copied
    summary.json was lost. It replaces only a page its folder's marker lists or that carries the
    page's own mark, never a symlink."""
    from laya_inspect.out_dir import MARKER

    out, _ = fitted
    mine = tmp_path / "mine"
    shutil.copytree(out, mine)
    (mine / MARKER).unlink()  # the user's folder: a copied summary.json, not an output of ours
    ours = (mine / "report.html").read_bytes()
    (mine / "report.html").write_text("<html>my own notes</html>")
    result = runner.invoke(app, ["report", str(mine), "--html"], env=ENV)
    assert result.exit_code == 1 and "not a page laya-inspect wrote" in result.output, result.output
    assert (mine / "report.html").read_text() == "<html>my own notes</html>"
    (tmp_path / "notes.html").write_text("elsewhere")
    (mine / "report.html").unlink()
    (mine / "report.html").symlink_to(tmp_path / "notes.html")
    result = runner.invoke(app, ["report", str(mine), "--html"], env=ENV)
    assert result.exit_code == 1 and "symlink" in result.output, result.output
    assert (mine / "report.html").is_symlink() and (tmp_path / "notes.html").read_text() == "elsewhere"
    (mine / "report.html").unlink()
    (mine / "report.html").write_bytes(ours)  # a page laya-inspect wrote, by its mark
    assert runner.invoke(app, ["report", str(mine), "--html"], env=ENV).exit_code == 0
    assert runner.invoke(app, ["report", str(out), "--html"], env=ENV).exit_code == 0  # listed by its marker


def test_a_patience_of_at_least_the_epochs_reads_as_no_early_stop() -> None:
    """ "≤ 3 epochs · patience 37" read as if training could stop early; with a patience of at least the
    epochs after the first it cannot (the first epoch is always a new best, so the first stop comes after
    patience + 1 epochs: patience 2 of 3 epochs stops at the last one), and the line says so."""
    from laya_inspect.report.settings import fit_settings_line
    from laya_inspect.training.fit_config import FitConfig

    config = FitConfig(heads=("last",), seeds=(0,), epochs=3, device="cpu")
    stop = "no early stop (patience {} ≥ the 2 epochs after the first)"
    for patience, said in ((2, stop.format(2)), (37, stop.format(37)), (1, "patience 1")):
        summary = {"config": config.to_dict(), "config_defaults": ["patience"], "device": "cpu"}
        summary["training"] = {"epochs": 3, "patience": patience}
        line = " ".join(str(fit_settings_line(summary, 1000)).split())
        assert ("no early stop" in line) == (patience != 1), line  # 2 of 3 epochs: a stop comes at the last
        assert f"left at their defaults: {said}" in line, line


def test_the_settings_line_says_given_splits_apart_from_the_defaults() -> None:
    """fit-head --train-split test --test-split train: the validation rows drawn from the given train split
    are not "left at their defaults", and the split the accuracies are measured on is stated."""
    from laya_inspect.options import defaulted
    from laya_inspect.report.settings import fit_settings_line
    from laya_inspect.training.fit_config import FitConfig

    config = FitConfig(heads=("last",), seeds=(0,), train_split="test", test_split="train", device="cpu")
    summary = {"config": config.to_dict(), "config_defaults": defaulted(config), "device": "cpu"}
    line = " ".join(str(fit_settings_line(summary, 1000)).split())
    given, left = line.removeprefix("settings given: ").split("; left at their defaults: ")
    assert "validation 0.1 of test" in given and "tested on train" in given
    assert "validation" not in left and "tested" not in left


def test_fit_head_names_the_split_it_tested_on(tmp_path: Path) -> None:
    """`fit-head s.h5 --train-split Train --test-split valid` titled its table "s.h5 — test split, 2
    seeds", and so did report.html's table and the notebook's display of the result."""
    from helpers import write_cache
    from rich.console import Console

    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.training.fit_head import FitConfig, fit_heads

    rng = np.random.default_rng(0)

    def rows(n: int) -> tuple[list[np.ndarray], np.ndarray]:
        y = np.arange(n) % 2
        return [(y[:, None] + rng.normal(size=(n, 4))).astype(np.float32) for _ in range(2)], y

    cache = write_cache(tmp_path / "s.h5", {"Train": rows(60), "valid": rows(20), "test": rows(20)})
    out = tmp_path / "heads"
    args = ["fit-head", str(cache), "--train-split", "Train", "--test-split", "valid", "--seeds", "2", "--no-probe"]
    res = runner.invoke(app, [*args, "--head", "laya", *FAST, "--out", str(out)], env=ENV)
    assert res.exit_code == 0, res.output
    said = " ".join(res.stdout.split())
    assert "valid split, 2 seeds, 95% t-interval" in said and "test split" not in said
    assert runner.invoke(app, ["report", str(out), "--html"], env=ENV).exit_code == 0
    page = page_said(out / "report.html")
    assert "valid split, 2 seeds; intervals are 95% t-intervals over seeds" in page
    assert "mean weight per layer on the valid split (α" in page and "· valid split 20 rows" in page
    config = FitConfig(train_split="Train", test_split="valid", seeds=(0,), epochs=1, probe=False, heads=("laya",))
    with FeatureStore(cache) as store:
        result = fit_heads(store, config, out_dir=tmp_path / "nb")
    console = Console(record=True, width=200)
    console.print(result)
    assert "valid split" in console.export_text() and "test split" not in console.export_text()
