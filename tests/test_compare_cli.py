"""compare / report end to end on the digits cache: every artifact, numbers recomputable from the
HDF5 file, the same table from files, and one failing invocation per error class."""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from helpers import fit_quickly, page_said, settings_said, write_cache
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.compare import metrics as M
from laya_inspect.compare.run import CompareConfig, compare_heads
from laya_inspect.head_dir import cache_identity, save_head

runner = CliRunner()
HEADS = ("laya", "scalarmix", "last")


@pytest.fixture(scope="module")
def head_dirs(digits_cache, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("heads")
    with FeatureStore(digits_cache) as store:
        meta = cache_identity(store) | {"trained_by": "test"}
        return {k: save_head(root / k, fit_quickly(k, store, 40), meta=meta) for k in HEADS}


@pytest.fixture(scope="module")
def run(digits_cache, head_dirs, tmp_path_factory):
    out = tmp_path_factory.mktemp("compare") / "out"
    args = [
        "compare",
        *[str(head_dirs[k]) for k in HEADS],
        "--cache",
        str(digits_cache),
        "--method",
        "all",
        "--limit",
        "120",
        "--bootstrap",
        "200",
        "--seed",
        "3",
        "--out",
        str(out),
        "--device",
        "cpu",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return out, result


@pytest.mark.slow
def test_compare_writes_every_artifact(run, head_dirs, digits_cache):
    out, result = run
    summary = json.loads((out / "summary.json").read_text())
    with FeatureStore(digits_cache) as store:
        assert summary["cache"]["fingerprint"] == store.fingerprint
    assert (summary["ablation"], summary["target"], summary["baseline"], summary["n"]) == (
        "resample",  # the defaults: IG from the train mean, removal by resampling (not circular)
        "pred",
        "mean",
        120,
    )
    assert summary["head_dirs"] == [str(head_dirs[k]) for k in HEADS]
    assert set(summary["directions"]) >= {"faithfulness", "deletion_at_1", "top_layer_agreement", "ig_delta_abs_mean"}
    heads = {h["name"]: h for h in summary["heads"]}
    assert list(heads) == list(HEADS)
    assert set(heads["laya"]["methods"]) == {"alpha", "alpha-contrib", "ig", "gradcam", "random"}
    assert set(heads["scalarmix"]["methods"]) == {"ig", "gradcam", "static", "random"}
    assert set(heads["last"]["methods"]) == {"ig", "gradcam", "random"}
    assert set(heads["last"]["methods_skipped"]) == {"alpha", "alpha-contrib", "static"}
    assert heads["laya"]["methods"]["ig"]["ig_delta"]["abs_mean"] < 1e-3
    assert len(heads["laya"]["per_class"]["mean_weights"]) == 10

    rows = list(csv.DictReader(open(out / "summary.csv")))
    assert {r["ablation"] for r in rows} == {"resample"} and {r["cache_fingerprint"] for r in rows} == {
        summary["cache"]["fingerprint"]
    }
    faith = [
        r
        for r in rows
        if r["head"] == "laya" and r["method"] == "alpha" and r["metric"] == "faithfulness" and r["scope"] == "all"
    ]
    assert float(faith[0]["value"]) == pytest.approx(heads["laya"]["methods"]["alpha"]["faithfulness"]["mean"])
    assert "higher is better" in faith[0]["direction"]

    plots = sorted(p.name for p in (out / "plots").iterdir())
    for head in HEADS:
        for kind in ("profile", "ranks", "deletion", "lolo_by_class"):
            assert f"{head}_{kind}.png" in plots and f"{head}_{kind}.svg" not in plots  # SVG only with --svg
    assert "laya_weights_by_class.png" in plots and "last_weights_by_class.png" not in plots
    assert "faithfulness" in result.output and "changes the prediction most (mean drop of" in result.output


@pytest.mark.slow
def test_each_summary_csv_key_names_one_row_and_the_random_method_is_told_from_the_random_ordering(run):
    """QA: the random method (seeded noise) and the random reference (a random ordering) were both
    written as method "random": two rows per (head, ablation, method, scope, metric), nothing to say
    which was which; the reference's deletion/insertion curves and areas were written twice more."""
    out, _ = run
    summary = json.loads((out / "summary.json").read_text())
    rows = list(csv.DictReader(open(out / "summary.csv")))
    key = ("head", "head_dir", "ablation", "method", "scope", "metric")
    counts = Counter(tuple(r[k] for k in key) for r in rows)  # caveats numbered: caveat_1, caveat_2, …
    assert [k for k, n in counts.items() if n > 1] == []
    for h in summary["heads"]:
        for name, side in (("random", "methods"), ("random_ordering", "references")):
            found = [
                r["value"]
                for r in rows
                if (r["head"], r["ablation"], r["method"], r["scope"], r["metric"])
                == (h["name"], summary["ablation"], name, "all", "faithfulness")
            ]
            assert [float(v) for v in found] == pytest.approx([h[side]["random"]["faithfulness"]["mean"]]), side
        lolo = h["lolo"]
        ordering = {
            r["metric"]: float(r["value"])
            for r in rows
            if (r["head"], r["method"], r["scope"], r["ablation"])
            == (h["name"], "random_ordering", "all", summary["ablation"])
        }
        assert ordering["random_at_1"] == pytest.approx(lolo["random_at_1"])
        assert ordering["deletion_area"] == pytest.approx(lolo["random_deletion_area"])


@pytest.mark.slow
def test_every_number_recomputes_from_the_h5_file(run):
    out, _ = run
    summary = json.loads((out / "summary.json").read_text())
    with h5py.File(out / "attributions.h5", "r") as f:
        assert f.attrs["ablation"] == "resample" and f.attrs["target"] == "pred" and f.attrs["seed"] == 3
        assert f["rows"].shape == (120,) and len(f["baselines"]) == 3
        for head in summary["heads"]:
            g = f["heads"][head["name"]]
            p, p_abl, e = g["p"][()], g["p_ablated"][()], g["effects"][()]
            np.testing.assert_allclose(e, p[:, None] - p_abl)
            np.testing.assert_array_equal(g["targets"][()], g["preds"][()])  # --target pred
            assert head["lolo"]["oracle_at_1"] == pytest.approx(M.oracle_at_1(e).mean())
            assert head["lolo"]["random_at_1"] == pytest.approx(M.random_at_1(e).mean())
            for m, s in head["methods"].items():
                scores = g[f"methods/{m}/scores"][()]
                fa = M.faithfulness(scores, e, n_boot=200, seed=3, tol=summary["tie_tolerance"])
                assert s["faithfulness"]["mean"] == pytest.approx(fa.mean)
                assert s["faithfulness"]["ci_low"] == pytest.approx(fa.ci_low)
                assert s["deletion_at_1"] == pytest.approx(M.deletion_at_k(scores, p, p_abl).mean())
                assert s["deletion_curve"][0] == pytest.approx(s["deletion_at_1"])
                assert s["deletion_at_1"] <= head["lolo"]["oracle_at_1"] + 1e-12
                assert s["deletion_curve"] == pytest.approx(M.deletion_curve(p, g[f"methods/{m}/p_topk"][()]).tolist())
            assert "n_steps" in g["methods/ig"].attrs and "relu_attributions" in g["methods/gradcam"].attrs
            # the last head ignores every layer but the last: IG's planted structure
            if head["kind"] == "last":
                np.testing.assert_allclose(g["methods/ig/scores"][()][:, :2], 0, atol=1e-7)
                np.testing.assert_allclose(e[:, :2], 0, atol=1e-7)


@pytest.mark.slow
def test_report_reprints_the_summary(run):
    out, result = run
    rep = runner.invoke(app, ["report", str(out)])
    assert rep.exit_code == 0, rep.output
    assert rep.output in result.output  # the same renderables from summary.json
    as_json = runner.invoke(app, ["report", str(out), "--json"])
    assert json.loads(as_json.output)["kind"] == "laya-inspect-compare"


@pytest.mark.slow
def test_compare_json_and_options(digits_cache, head_dirs, tmp_path):
    args = [
        "compare",
        str(head_dirs["laya"]),
        "--cache",
        str(digits_cache),
        "--method",
        "alpha,ig",
        "--method",
        "random",
        "--ablation",
        "drop",
        "--target",
        "true",
        "--baseline",
        "zero",
        "--limit",
        "40",
        "--n-steps",
        "8",
        "--internal-batch-size",
        "64",
        "--relu",
        "--bootstrap",
        "0",
        "--out",
        str(tmp_path),
        "--json",
        "--no-plots",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["ablation"], summary["target"], summary["baseline"]) == ("drop", "true", "zero")
    assert summary["config"]["methods_resolved"] == ["alpha", "ig", "random"]
    assert summary["heads"][0]["methods"]["ig"]["params"]["n_steps"] == 8
    assert summary["heads"][0]["methods"]["alpha"]["faithfulness"]["ci_low"] is None
    assert not (tmp_path / "plots").exists()


def test_the_settings_line_states_grad_cams_relu_and_report_restates_it(digits_cache, head_dirs, tmp_path):
    """--relu changes Grad-CAM's scores (its negative ones become 0) and was said only in summary.json:
    the settings line states it where Grad-CAM ran, IG's baseline only where IG did, the given ones said
    apart; `report DIR` and report.html restate the line compare printed."""
    out = tmp_path / "out"
    args = ["compare", str(head_dirs["laya"]), "--cache", str(digits_cache), "--method", "gradcam,random"]
    args += ["--relu", "--limit", "40", "--bootstrap", "0", "--no-sanity", "--no-plots", "--device", "cpu"]
    result = runner.invoke(app, [*args, "--out", str(out)], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    line = settings_said(result.output)
    given, left = line.removeprefix("settings given: ").split("; left at their defaults: ")
    assert given.split(" · ") == ["Grad-CAM with ReLU", "bootstrap 0"], given
    assert left.split(" · ")[:3] == ["target pred", "effect logit", "ablation resample"] and "IG" not in line
    report = runner.invoke(app, ["report", str(out), "--html"], env={"COLUMNS": "100"})
    assert report.exit_code == 0, report.output
    assert settings_said(report.output) == line
    assert line in page_said(out / "report.html")


@pytest.mark.parametrize(
    "case,message",
    [
        ("unknown_method", "no attribution method 'gradcm'; did you mean 'gradcam'"),
        ("drop_on_last", "'drop' ablation needs a head with aggregation weights"),
        ("alpha_on_last", "'alpha' is defined for none of the heads"),
        ("missing_head", "is not a head directory"),
        ("mismatched_cache", "pass --allow-other-cache to use it anyway"),
        ("out_not_empty", "is not empty; pass --force to replace it"),
        ("bad_ablation", "no ablation 'resampel'; did you mean 'resample'"),
        ("mix_on_last", "'mix' ablation needs a head with aggregation weights"),
        ("missing_cache", "no feature cache"),
        ("bad_split", "no split 'valid'"),
        ("bad_target", "target must be one of pred, true"),
        ("negative_seed", "--seed must be an integer from 0 to 2**64 - 1, got -1"),
    ],
)
def test_errors_exit_1_with_their_message(case, message, digits_cache, head_dirs, tmp_path):
    last, cache = str(head_dirs["last"]), str(digits_cache)
    extra: list[str] = []
    if case == "mismatched_cache":
        rng = np.random.default_rng(0)
        other = write_cache(
            tmp_path / "other.h5",
            {"train": ([rng.normal(size=(20, 4)).astype("float32")] * 3, np.arange(20) % 10)},
            layer_names=["a", "b", "c"],
        )
        cache = str(other)
    args = {
        "unknown_method": [last, "--method", "gradcm"],
        "drop_on_last": [last, "--ablation", "drop"],
        "alpha_on_last": [last, "--method", "alpha"],
        "missing_head": [str(tmp_path / "nope")],
        "mismatched_cache": [last],
        "missing_cache": [last],
        "bad_split": [last, "--split", "valid"],
        "bad_target": [last, "--target", "label"],
        "out_not_empty": [last],
        "bad_ablation": [last, "--ablation", "mean,resampel"],
        "mix_on_last": [last, "--ablation", "mix"],
        "negative_seed": [last, "--seed", "-1"],
    }[case]
    if case == "out_not_empty":
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "mine.txt").write_text("keep")
    if case == "missing_cache":
        cache = str(tmp_path / "nope.h5")
    result = runner.invoke(app, ["compare", *args, "--cache", cache, "--out", str(tmp_path / "out"), *extra])
    assert result.exit_code == 1, result.output
    assert "error:" in result.output and message in " ".join(result.output.split())
    assert "Traceback" not in result.output
    if case == "out_not_empty":
        assert [p.name for p in (tmp_path / "out").iterdir()] == ["mine.txt"]
    else:
        assert not (tmp_path / "out").exists()


def test_usage_errors_exit_2_and_report_of_nothing_exits_1(head_dirs, tmp_path):
    assert runner.invoke(app, ["compare", str(head_dirs["last"])]).exit_code == 2  # no --cache
    assert runner.invoke(app, ["compare", str(head_dirs["last"]), "--cache", "x", "--limit", "many"]).exit_code == 2
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 1 and "no summary.json" in result.output


def test_library_force_and_progress(digits_cache, head_dirs, tmp_path):
    events = []
    with FeatureStore(digits_cache) as store:
        res = compare_heads(
            [head_dirs["scalarmix"]],
            store,
            CompareConfig(methods=("static",), limit=30, n_boot=50, plots=False),
            out_dir=tmp_path,
            progress=events.append,
        )
    assert [e["event"] for e in events][:2] == ["head", "step"]
    assert res.heads[0].scores["static"].shape == (30, 3)
    names = {"attributions.h5", "summary.json", "summary.csv", "sanity.h5", "report.html"}  # sanity: on by default
    assert {p.name for p in res.files} == names


def test_library_writes_every_plot_of_a_small_run(digits_cache, head_dirs, tmp_path):
    """compare.plots in the fast loop: one small run of a weighted head, every figure as PNG and (svg=True) SVG."""
    with FeatureStore(digits_cache) as store:
        res = compare_heads(
            [head_dirs["scalarmix"]],
            store,
            CompareConfig(methods=("static", "random"), limit=30, n_boot=0, svg=True),
            out_dir=tmp_path,
        )
    plots = {p.relative_to(tmp_path).as_posix() for p in res.files if p.parent.name == "plots"}
    kinds = ("profile", "deletion", "lolo_by_class", "ranks", "weights_by_class")
    assert plots == {f"plots/scalarmix_{k}.{ext}" for k in kinds for ext in ("png", "svg")}
    assert all((tmp_path / p).stat().st_size > 0 for p in plots)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_compare_on_cuda_matches_cpu(digits_cache, head_dirs, tmp_path):
    summaries = {}
    for device in ("cpu", "cuda"):
        with FeatureStore(digits_cache) as store:
            res = compare_heads(
                [head_dirs["laya"]],
                store,
                CompareConfig(methods=("all",), limit=60, n_boot=50, device=device, plots=False),
                out_dir=tmp_path / device,
            )
        summaries[device] = res.summary["heads"][0]
    for m, s in summaries["cpu"]["methods"].items():
        assert summaries["cuda"]["methods"][m]["deletion_at_1"] == pytest.approx(s["deletion_at_1"], abs=1e-4)


def test_the_default_pair_is_not_circular():
    """compare's and explain's defaults read IG against a removal it does not integrate along
    (docs/METHOD.md, "The default pair: IG from the mean, removal by resampling")."""
    import inspect

    from laya_inspect.cli.explain import explain_command
    from laya_inspect.compare.config import CompareConfig
    from laya_inspect.compare.scores import circular_reason

    c = CompareConfig()
    assert (c.baseline, c.ablation) == ("mean", "resample")
    assert circular_reason("ig", c.ablation, {"baseline": c.baseline}) is None
    params = inspect.signature(explain_command).parameters
    explain = (params["baseline"].default.default, params["ablation"].default.default)
    assert explain == (c.baseline, c.ablation)
    assert all(circular_reason(m, c.ablation, {"baseline": c.baseline}) is None for m in ("alpha", "gradcam"))


def test_the_same_head_given_twice_is_one_line_before_any_work(head_dirs, digits_cache, tmp_path):
    """Not scored twice as laya-seed_0 and laya-seed_0-2: as a directory, another spelling of its path, or a
    copy of its weights."""
    laya = head_dirs["laya"]
    copy = tmp_path / "copy"
    shutil.copytree(laya, copy)
    for twice, says in [
        ([laya, laya], f"{laya} is given twice; compare would score it twice under two names"),
        ([laya, laya / ".." / laya.name], "is given twice"),
        ([laya, copy], f"{copy} and {laya} are the same head"),
    ]:
        out = tmp_path / "out"
        args = ["compare", *map(str, twice), "--cache", str(digits_cache), "--device", "cpu", "--out", str(out)]
        result = runner.invoke(app, args, env={"COLUMNS": "300"})
        assert result.exit_code == 1, result.output
        assert says in " ".join(result.output.split()) and "Traceback" not in result.output, result.output
        assert not out.exists()


def test_a_method_tied_in_score_is_read_at_the_mean_of_its_tied_layers(digits_cache, head_dirs, tmp_path):
    """Grad-CAM with --relu scores 0 on every layer of many rows. Deletion@1 and the deletion curve
    took the shallowest of the tied layers there; both now take the expected value over the ties,
    so the curve's k = 1 is Deletion@1 and a row whose scores all tie reads as a random ordering."""
    with FeatureStore(digits_cache) as store:
        res = compare_heads(
            [head_dirs["last"]],
            store,
            CompareConfig(methods=("gradcam",), relu=True, target="0", limit=60, n_boot=0, plots=False),
            out_dir=tmp_path,
        )
    h = res.heads[0]
    (a,) = h.measured
    m, scores, (p_topk, _) = h.measured[a], h.scores["gradcam"], h.curves[a]["gradcam"]
    flat = (scores == scores.max(axis=1, keepdims=True)).all(axis=1)
    assert flat.sum() >= 5  # rows whose every score ties at 0
    said = res.summary["heads"][0]["methods"]["gradcam"]  # summary.json says how many rows tie and the rule
    assert said["n_curve_ties"] >= flat.sum() and said["curve_ties"].startswith("exact")
    np.testing.assert_allclose(m.p - p_topk[:, 0], M.deletion_at_k(scores, m.p, m.p_ablated), rtol=0, atol=1e-12)
    np.testing.assert_allclose(M.deletion_at_k(scores, m.p, m.p_ablated)[flat], M.random_at_1(m.effects)[flat])
    # 1 < k < L: the mean over every k of the layers (each measured among the subsets)
    sizes = m.subsets.sum(axis=1)
    for k in range(2, scores.shape[1]):
        mean_k = m.p_subsets[:, sizes == k].mean(axis=1)
        np.testing.assert_allclose(p_topk[flat, k - 1], mean_k[flat], rtol=0, atol=1e-12)


@pytest.mark.parametrize("width", [80, 100])
def test_the_settings_line_wraps_its_items_whole_at_80_and_100_columns(width):
    """QA: at 80 columns compare's line left "seed 0 ·" alone on a line and the terminal cut the long
    bootstrap item at column 80 with no indent: an item longer than a line follows the one before it and
    breaks between its own words, every line within the width, the words as on one line."""
    from laya_inspect.report.settings import ONE_LINE, compare_settings_line

    config = {"n_boot": 1000, "n_steps": 50, "relu": False, "methods_resolved": ["alpha", "ig", "gradcam"]}
    summary = {"target": "pred", "effect": "logit", "ablation": "resample", "baseline": "mean", "seed": 0, "n": 450}
    summary |= {"config": config, "heads": [{"paired": {"n_boot": 10_000, "ci_low": 0.0}}]}
    summary["config_defaults"] = ["target", "effect", "ablation", "baseline", "n_steps", "relu", "seed", "n_boot"]
    lines = str(compare_settings_line(summary, width)).splitlines()
    assert all(len(line) <= width for line in lines), lines
    assert all(line.startswith("  ") for line in lines[1:]), lines
    assert not any(line.strip().removesuffix(" ·") == "seed 0" for line in lines), lines  # never alone
    one = str(compare_settings_line(summary, ONE_LINE))
    boot = one[one.index("bootstrap 1000") :]
    if len(boot) + 4 <= width:  # a line of its own holds it: whole on one
        assert any(line.strip() == boot for line in lines), lines
    else:  # longer than a line: it follows "seed 0" and its words flow on
        assert any("seed 0 · bootstrap 1000 (up to 10,000" in line for line in lines), lines
    assert " ".join(" ".join(lines).split()) == one and "bootstrap 1000 (up to 10,000 for a paired" in one
