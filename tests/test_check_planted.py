"""`check planted`: the whole pipeline on a backbone whose label lives in one tapped layer.

End to end through the command (cache from an nn.Module, fit-head, compare): IG on the LAYA head must
rank the signal layer first on ≥ 95% of rows (the lower end of its Wilson interval), and it must
follow the signal when the signal moves (so the check can fail for the right reason). The share and
its Wilson interval by hand; a pass read on the interval, not the share; every bad option one red
line and exit 1, before any work.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from laya_inspect.check.config import PlantedConfig, default_signal_layer
from laya_inspect.check.planted import (
    MethodShare,
    Share,
    constant_share,
    repoint,
    signal_first,
    top_layer_counts,
    verdict_lines,
)
from laya_inspect.cli import app
from laya_inspect.out_dir import read_marker
from laya_inspect.training.stats import wilson

runner = CliRunner()
ROWS = "200"  # seconds on two cores; IG still ranks the signal layer first on every row at this size


def _check(out: Path, *extra: str) -> tuple[Any, dict[str, Any]]:
    result = runner.invoke(app, ["check", "planted", "--rows", ROWS, "--device", "cpu", "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return result, json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _method(summary: dict[str, Any], method: str, head: str = "laya") -> dict[str, Any]:
    return next(m for m in summary["methods"] if (m["head"], m["method"]) == (head, method))


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("planted") / "out"
    result, summary = _check(out)
    return result, summary, out


def test_ig_ranks_the_planted_layer_first_and_the_summary_records_every_share(default_run) -> None:
    result, s, out = default_run
    c = s["construction"]
    assert c["signal_layer_resolved"] == 1 and c["signal_layer"] is None  # the default: (L − 1) // 2, not the last
    assert (c["seed"], c["layers"], c["noise"], c["rows"]) == (0, 4, 0.5, int(ROWS))
    assert c["signal_layer_name"] == "layers.1" and c["layer_names"] == [f"layers.{i}" for i in range(4)]
    ig = _method(s, "ig")
    assert ig["share"] >= 0.95 and ig["n"] == int(ROWS)
    assert s["passed"] is True and s["random_floor"] == 0.25
    methods = {(m["head"], m["method"]) for m in s["methods"]}
    assert {("laya", "alpha"), ("laya", "ig"), ("laya", "gradcam"), ("laya", "random")} <= methods
    assert {("scalarmix", "static"), ("scalarmix", "ig")} <= methods
    for m in s["methods"]:
        assert 0 <= m["ci_low"] <= m["share"] <= m["ci_high"] <= 1
        assert m["share"] == m["hits"] / m["n"] and sum(m["top_layer_counts"]) == m["n"]
    # random scores rank the signal layer first about 1/L of the time, far below the real methods
    assert abs(_method(s, "random")["share"] - s["random_floor"]) < 0.1
    assert s["effects"]["laya"]["share"] >= 0.95  # ablation confirms the planted answer
    assert s["compare"]["effect"] in ("logit", "prob") and s["compare"]["ablation"] == s["effects"]["laya"]["ablation"]
    # compare's constant rule, where its summary holds one, read per head (a fixed profile: all rows or none)
    compared = json.loads((out / "compare" / "summary.json").read_text(encoding="utf-8"))
    has_rule = {h["kind"] for h in compared["heads"] if "constant" in (h.get("references") or {})}
    assert set(s["constant"]) == has_rule
    for k in s["constant"].values():
        assert k["share"] in (0.0, 1.0) and k["n"] == int(ROWS)
    # the folder: the cache, both heads, compare's output, marked as check planted's
    assert (out / "features.h5").is_file() and (out / "compare" / "summary.json").is_file()
    assert (out / "heads" / "laya" / "seed_0").is_dir() and (out / "heads" / "scalarmix" / "seed_0").is_dir()
    assert read_marker(out)["command"] == "check planted"
    assert "IG" in result.output and re.search(r"random reference 1/L\s+0\.250", result.output)
    said = " ".join(result.output.split())  # the verdict's bullets wrap at the terminal's width
    assert "at least 95%, the pipeline finds the planted layer" in said
    # the null by its name, apart from the random attribution method
    assert "the random reference ranks it first on 1/L = 25.0% of rows in expectation" in said
    # the rule, recorded: the interval's lower end against the bar, for this one construction seed
    assert "lower end of the 95% Wilson interval" in s["pass_rule"] and s["construction_seeds"] == [0]
    assert s["against_bar"]["methods"]["laya/ig"] == "above" and _method(s, "ig")["ci_low"] >= s["pass_share"]
    assert s["ground_truth_at_bar"] is (s["against_bar"]["effects"]["laya"] == "above")
    assert "vs 95% bar" in result.output and "holds for construction seed 0 only" in said


def test_moving_the_signal_layer_moves_igs_top_layer(default_run, tmp_path) -> None:
    _, before, _ = default_run
    _, after = _check(tmp_path / "moved", "--signal-layer", "2")
    was, now = _method(before, "ig")["top_layer_counts"], _method(after, "ig")["top_layer_counts"]
    assert int(np.argmax(was)) == 1 and int(np.argmax(now)) == 2
    assert now[1] <= 0.05 * sum(now)  # the old signal layer is no longer first
    assert _method(after, "ig")["share"] >= 0.95 and after["construction"]["signal_layer_name"] == "layers.2"


def test_an_existing_output_is_refused_without_force_before_any_work(default_run) -> None:
    _, _, out = default_run
    result = runner.invoke(app, ["check", "planted", "--out", str(out)])
    assert result.exit_code == 1
    assert "--force" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--layers", "1"], "--layers must be a whole number from 2 to 16, got 1"),
        (["--layers", "3", "--signal-layer", "3"], "--signal-layer must be a layer index from 0 to 2"),
        (["--signal-layer", "-1"], "--signal-layer must be a layer index from 0 to 3"),
        (["--rows", "10"], "--rows must be a whole number from 40 to 100,000, got 10"),
        (["--noise", "0"], "--noise must be a finite number > 0"),
        (["--noise", "nan"], "--noise must be a finite number > 0"),
        (["--seed", "-1"], "--seed must be an integer from 0 to 2**32 - 1"),
        (
            ["--seeds", "0"],
            "--seeds must be a whole number from 1 to 20 (construction seeds --seed, --seed + 1, …), got 0",
        ),
        (["--seeds", "21"], "--seeds must be a whole number from 1 to 20"),
        (
            ["--seed", str(2**32 - 1), "--seeds", "2"],
            "--seeds must keep the last seed --seed + --seeds − 1 below 2**32",
        ),
        (["--device", "tpu"], "tpu"),
    ],
)
def test_bad_options_are_one_red_line(args: list[str], says: str, tmp_path) -> None:
    result = runner.invoke(app, ["check", "planted", "--out", str(tmp_path / "out"), *args])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[0].startswith("error:") and says in result.output, result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_cuda_device_that_is_not_here_is_refused_before_any_work(tmp_path) -> None:
    result = runner.invoke(app, ["check", "planted", "--device", "cuda", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and "no CUDA device is available" in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_an_output_that_is_a_file_is_refused(tmp_path) -> None:
    target = tmp_path / "taken"
    target.write_text("mine")
    result = runner.invoke(app, ["check", "planted", "--out", str(target)])
    assert result.exit_code == 1 and "is a file" in result.output
    assert target.read_text() == "mine"


def test_the_default_signal_layer_is_never_the_last() -> None:
    assert [default_signal_layer(n) for n in (2, 3, 4, 5, 8)] == [0, 1, 1, 2, 3]
    assert PlantedConfig(layers=6).signal == 2 and PlantedConfig(layers=6, signal_layer=5).signal == 5


def test_signal_first_counts_strict_wins_only() -> None:
    scores = np.array(
        [
            [0.1, 0.9, 0.0],  # signal first
            [0.5, 0.5, 0.0],  # tied at the top: not counted
            [0.9, 0.1, 0.0],  # another layer first
            [0.0, 0.0, 0.0],  # all equal: names no layer
            [np.nan, 1.0, 0.0],  # not finite: left out of n
        ]
    )
    assert signal_first(scores, 1) == Share(hits=1, n=4, tied=2)  # the two tied rows, counted apart
    # a tie credits each tied layer alike: row 2 half to layers 0 and 1, row 4 a third to each
    assert top_layer_counts(scores) == pytest.approx([1 + 1 / 2 + 1 / 3, 1 + 1 / 2 + 1 / 3, 1 / 3])


@pytest.mark.parametrize(
    ("ig_hits", "effect_hits", "says", "not_says"),
    [
        (400, 396, "at least 95%, the pipeline finds the planted layer", "missed"),
        (240, 396, "failed: the whole interval is below 95%", "missed"),
        (240, 280, "it is the fit that missed, not (only) IG", "at least 95%"),
    ],
)
def test_the_reading_tells_a_failing_method_from_a_failing_fit(ig_hits, effect_hits, says, not_says) -> None:
    methods = [
        MethodShare("laya", "ig", Share(ig_hits, 400), [0, ig_hits, 400 - ig_hits, 0]),
        MethodShare("laya", "alpha", Share(360, 400), [0, 360, 40, 0]),
    ]
    text = "\n".join(verdict_lines(methods, {"laya": Share(effect_hits, 400)}, {}, "layers.1", 4, "mean"))
    assert says in text and not_says not in text
    assert "α ranks it first on 90.0% of 400 rows" in text and "1/L = 25.0%" in text


def _reading(ig: Share, truth: Share, alpha: Share = Share(400, 400)) -> str:
    methods = [
        MethodShare("laya", "ig", ig, [0, ig.hits, ig.n - ig.hits, 0]),
        MethodShare("laya", "alpha", alpha, [0, alpha.hits, alpha.n - alpha.hits, 0]),
    ]
    return "\n".join(verdict_lines(methods, {"laya": truth}, {}, "layers.7", 16, "resample", seed=0))


def test_a_share_above_the_bar_whose_interval_reaches_below_it_does_not_pass() -> None:
    # QA's --layers 16 --noise 1 --seed 0: IG 96.0% of 400 rows [93.6%, 97.5%] passed on the point alone
    ig = Share(384, 400)
    assert ig.share >= 0.95 > ig.interval[0]
    text = _reading(ig, Share(400, 400))
    assert "at least 95%, the pipeline finds the planted layer" not in text
    assert "not passed: the interval reaches below 95%" in text
    from laya_inspect.check.planted import passed

    assert passed([MethodShare("laya", "ig", ig, [])]) is False
    assert passed([MethodShare("laya", "ig", Share(400, 400), [])]) is True  # [99.0%, 100%]: passes
    assert passed([MethodShare("laya", "ig", Share(200, 200), [])]) is True  # the tests' 200 rows: [98.1%, 100%]


def test_a_pass_where_the_ground_truth_is_below_the_bar_is_flagged_and_every_share_sits_beside_the_bar() -> None:
    # QA's seed 1: IG 97.2% [95.1%, 98.5%] passes, while LOLO ranks the layer first on 93.2% only
    text = _reading(Share(389, 400), Share(373, 400), alpha=Share(347, 400))
    assert "the pass is flagged: the LAYA head itself is not shown to rely on the signal layer" in text
    assert "α ranks it first on 86.8% of 400 rows [83.1%, 89.7%]: below the 95% bar" in text
    assert "LOLO effects (resample) rank it first on 93.2% of 400 rows [90.4%, 95.3%]: the planted answer as " in text
    assert "not shown to reach the 95% bar" in text
    assert "holds for construction seed 0 only" in text and "run several (--seeds 3)" in text
    assert "passed: the interval's lower end is at least 95%" in text
    # a pass on a ground truth at the bar carries no flag
    assert "flagged" not in _reading(Share(400, 400), Share(396, 400))


def test_the_constant_rule_scores_each_fold_with_its_own_profile() -> None:
    # fold 0 (2 rows) is scored by a profile that puts layer 1 first, fold 1 (3 rows) by one that ties
    rule = {"profiles": [[0.2, 0.5, 0.3], [0.4, 0.4, 0.2]], "fold_sizes": [2, 3], "source": "weights"}
    assert constant_share(rule, 1) == Share(hits=2, n=5, tied=3)  # fold 1 ties layer 1 for first: apart
    assert constant_share({**rule, "profiles": [[0.2, 0.5, 0.3], [None, None, None]]}, 1) == Share(hits=2, n=2)


def test_help_loads_no_torch() -> None:
    probe = (
        "import sys\nfrom typer.testing import CliRunner\nfrom laya_inspect.cli import app\n"
        "r = CliRunner().invoke(app, ['check', 'planted', '--help'])\n"
        "assert r.exit_code == 0 and 'Example:' in r.output, r.output\n"
        "print(sorted(m for m in ('torch', 'h5py', 'matplotlib', 'captum') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_wilson_interval_by_hand() -> None:
    z = 1.959963984540054
    low, high = wilson(0, 10)  # p = 0: [0, z² / (n + z²)]
    assert low == 0 and math.isclose(high, z * z / (10 + z * z))
    low, high = wilson(10, 10)  # p = 1: [n / (n + z²), 1]
    assert high == 1 and math.isclose(low, 10 / (10 + z * z))
    low, high = wilson(50, 100)  # symmetric about 1/2, half-width z·sqrt(1/4n + z²/4n²)/(1 + z²/n)
    half = z * math.sqrt(0.25 / 100 + z * z / (4 * 100**2)) / (1 + z * z / 100)
    assert math.isclose(low, 0.5 - half) and math.isclose(high, 0.5 + half)
    assert all(math.isnan(v) for v in wilson(0, 0))


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("planted-seeds") / "out"
    result, summary = _check(out, "--seeds", "2")
    return result, summary, out


def _across(summary: dict[str, Any], method: str, head: str = "laya") -> dict[str, Any]:
    return next(m for m in summary["across_seeds"]["methods"] if (m["head"], m["method"]) == (head, method))


def test_seeds_runs_each_construction_seed_as_its_own_check(default_run, two_seeds) -> None:
    _, one, _ = default_run
    _, s, out = two_seeds
    assert s["construction_seeds"] == [0, 1] and [p["seed"] for p in s["per_seed"]] == [0, 1]
    assert "seeds" not in s["construction"] and s["construction"]["seed"] == 0
    own = {}
    for p in s["per_seed"]:
        own[p["seed"]] = json.loads((out / p["folder"] / "summary.json").read_text(encoding="utf-8"))
        assert own[p["seed"]]["construction"]["seed"] == p["seed"] and own[p["seed"]]["construction_seeds"] == [
            p["seed"]
        ]
        for key in ("passed", "test_acc", "methods", "effects", "constant", "against_bar", "verdict"):
            assert p[key] == own[p["seed"]][key], key
        assert (out / p["folder"] / "heads" / "laya" / f"seed_{p['seed']}").is_dir()
    # seed 0 is today's one-seed run, share for share; seed 1 is another backbone, other rows and another fit
    assert s["per_seed"][0]["methods"] == one["methods"] and s["per_seed"][0]["effects"] == one["effects"]
    from laya_inspect.cache.store import FeatureStore

    with FeatureStore(out / "seed_0" / "features.h5") as a, FeatureStore(out / "seed_1" / "features.h5") as b:
        assert a.layer("test", 1).shape == b.layer("test", 1).shape
        assert not np.allclose(a.layer("test", 1), b.layer("test", 1))
    assert own[0]["test_acc"] != own[1]["test_acc"] or own[0]["effects"] != own[1]["effects"]
    assert read_marker(out)["command"] == "check planted"


def test_seeds_fail_when_one_seed_fails_and_the_summary_says_per_seed_and_across(two_seeds) -> None:
    # at the tests' 200 rows, seed 0's IG is at the bar and seed 1's (96.5%) interval reaches below it
    result, s, _ = two_seeds
    assert [p["passed"] for p in s["per_seed"]] == [True, False] and s["passed"] is False
    ig = _across(s, "ig")
    assert (ig["passed_on"], ig["of"], ig["failed_seeds"], ig["at_bar_on_every_seed"]) == (1, 2, [1], False)
    assert ig["shares"] == [_method(p, "ig")["share"] for p in s["per_seed"]]
    assert ig["against_bar"] == [p["against_bar"]["methods"]["laya/ig"] for p in s["per_seed"]]
    assert ig["against_bar"][0] == "above" and ig["against_bar"][1] != "above"
    random = _across(s, "random")  # the reference reads beside the bar on every seed: never at it
    assert random["passed_on"] == 0 and random["failed_seeds"] == [0, 1]
    assert all(abs(v - 0.25) < 0.1 for v in random["shares"])
    laya_constant = s["across_seeds"]["constant"]["laya"]["shares"]
    assert laya_constant == [p["constant"]["laya"]["share"] for p in s["per_seed"]]
    assert s["across_seeds"]["effects"]["laya"]["of"] == 2 and s["random_floor"] == 0.25
    assert "every construction seed" in s["pass_rule"] and s["files"]["seeds"] == {"0": "seed_0", "1": "seed_1"}
    text = "\n".join(s["verdict"])
    assert "at the 95% bar on 1 of 2 construction seeds (shares 100.0%, " in text
    assert (
        f"; not on seed 1 ({ig['against_bar'][1]}): not passed: a method passes only when it passes on every " in text
    )
    out = result.output
    assert re.search(r"seed 0\s+seed 1\s+at bar", out) and re.search(r"IG\s+1\.000\s+0\.\d+\*\s+1/2", out)
    assert re.search(r"random attribution\s+0\.\d+\*\s+0\.\d+\*\s+0/2", out)  # * : not at the bar on that seed
    assert "holds for construction seeds 0, 1 (each its own backbone" in out and "seed 0 only" not in out
    flat = " ".join(out.split())
    assert "the random reference ranks it first on 1/L = 25.0% of rows in expectation; random attribution on the " in (
        flat
    )
    assert "random scores" not in flat


def test_seeds_pass_when_every_seed_passes(tmp_path) -> None:
    # noise 0.7 on 200 rows: seeds 4 and 5 put IG at the bar (seeds 0 … 3 do not)
    result, s = _check(tmp_path / "out", "--noise", "0.7", "--seed", "4", "--seeds", "2")
    assert s["construction_seeds"] == [4, 5] and [p["passed"] for p in s["per_seed"]] == [True, True]
    ig = _across(s, "ig")
    assert (ig["passed_on"], ig["of"], ig["failed_seeds"], ig["at_bar_on_every_seed"]) == (2, 2, [], True)
    assert s["passed"] is True and ig["against_bar"] == ["above", "above"]
    said = " ".join(result.output.split())  # the verdict's bullets wrap at the terminal's width
    assert "at the 95% bar on 2 of 2 construction seeds" in said and "passed on every seed" in said
    assert re.search(r"IG\s+0\.9\d+\s+0\.9\d+\s+2/2", result.output)
    assert "holds for construction seeds 4, 5" in said


def _recorded_paths(out: Path) -> tuple[str, list[str]]:
    """Every text file's and attributions.h5's contents under ``out`` as one string, and the names of
    the files that mention a temporary folder (``.NAME.tmp-PID``)."""
    import h5py

    texts, stale = [], []
    for path in sorted(out.rglob("*")):
        if path.suffix in (".json", ".csv", ".html") and path.is_file():
            text = path.read_text(encoding="utf-8")
        elif path.name == "attributions.h5":
            with h5py.File(path) as f:
                text = " ".join(str(v) for obj in [f, *f["heads"].values()] for v in obj.attrs.values())
        else:
            continue
        texts.append(text)
        if re.search(r"\.tmp-\d+", text) or re.search(rb"\.tmp-\d+", path.read_bytes()):
            stale.append(str(path.relative_to(out)))
    return "\n".join(texts), stale


def test_the_paths_heads_and_compare_record_name_the_finished_folder(default_run, two_seeds) -> None:
    """The folder is built under a temporary name; what heads/ and compare/ record (runs.json's head
    folders, cache paths, the pages' "rebuild this page" commands, attributions.h5) names the folder
    as it is after the rename, and following it works."""
    for _, _, out in (default_run, two_seeds):
        text, stale = _recorded_paths(out)
        assert stale == [], stale
        assert str(out.resolve()) in text
    _, _, out = default_run
    runs = json.loads((out / "heads" / "runs.json").read_text(encoding="utf-8"))
    dirs = [Path(r["head_dir"]) for r in runs]
    assert dirs and all(d.is_dir() and (d / "config.json").is_file() for d in dirs)
    page = (out / "compare" / "report.html").read_text(encoding="utf-8")
    rebuild = re.search(r"laya-inspect report (\S+) --html", page)
    assert rebuild is not None and Path(rebuild.group(1)) == (out / "compare").resolve()


def test_force_can_replace_the_check_it_wrote(default_run, two_seeds) -> None:
    """Pointing the recorded paths at the renamed folder rewrites files of heads/ and compare/ after
    their markers took their digests: the markers are taken again, so `--force` does not see the
    check's own files as changed since they were written."""
    from laya_inspect.out_dir import foreign_files

    for _, _, out in (default_run, two_seeds):
        assert foreign_files(out) == []


def test_a_relative_out_keeps_recorded_paths_absolute(tmp_path, monkeypatch) -> None:
    """check planted --out runs/x: the paths rewritten from the temporary folder stay absolute (a head's
    cache_path is found again from any folder), not the relative --out as typed."""
    monkeypatch.chdir(tmp_path)
    tmp = Path(os.path.abspath("runs/.out.tmp-1"))  # as atomic_dir names it: absolute
    (tmp / "heads").mkdir(parents=True)
    (tmp / "heads" / "config.json").write_text(json.dumps({"cache_path": str(tmp / "features.h5")}), encoding="utf-8")
    repoint(tmp, Path("runs/out"))
    recorded = json.loads((tmp / "heads" / "config.json").read_text(encoding="utf-8"))["cache_path"]
    assert recorded == str(tmp_path.resolve() / "runs" / "out" / "features.h5")


def test_a_repointed_page_keeps_a_seal_that_matches_it(tmp_path) -> None:
    """A page names the folder it rebuilds from; the repoint rewrites it, so its seal (the SHA-256 of
    what it holds, which `report --html` checks in a folder without a marker) is written again: else
    the check's own page, copied out, read as one the user had changed."""
    from laya_inspect.report.html import page_unchanged, seal

    tmp = tmp_path / ".out.tmp-1"
    (tmp / "compare").mkdir(parents=True)
    page = tmp / "compare" / "report.html"
    text = f'<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n</head><body>laya-inspect report {tmp}</body>'
    page.write_text(seal(text), encoding="utf-8")
    assert page_unchanged(page.read_bytes()) is True
    repoint(tmp, tmp_path / "out")
    assert str(tmp) not in page.read_text(encoding="utf-8")
    assert page_unchanged(page.read_bytes()) is True


def test_attributions_h5_holds_no_trace_of_the_temporary_folder_after_the_repoint(tmp_path) -> None:
    """HDF5 does not reclaim a replaced attribute's space: an h5 file repointed in place would still
    hold the temporary folder's name in its bytes (a grep finds it). The repointed file holds only
    the finished folder's name, and every attribute, dataset and type reads back as written."""
    import h5py

    tmp, out = tmp_path / ".out.tmp-4242", tmp_path / "out"
    (tmp / "compare").mkdir(parents=True)
    h5 = tmp / "compare" / "attributions.h5"
    with h5py.File(h5, "w") as f:
        f.attrs["cache_path"] = str(tmp / "features.h5")
        f.attrs["seed"] = np.int64(3)
        group = f.create_group("heads/laya")
        group.attrs["head_dir"] = str(tmp / "heads" / "laya" / "seed_0")
        group.attrs["weights"] = np.arange(4, dtype=np.float32)
        group.create_dataset("scores", data=np.arange(12.0).reshape(3, 4), compression="gzip")
    repoint(tmp, out)
    data = h5.read_bytes()
    assert str(tmp).encode() not in data and b".out.tmp-4242" not in data
    with h5py.File(h5) as f:
        assert f.attrs["cache_path"] == str(out.resolve() / "features.h5")
        assert f.attrs["seed"] == 3 and f.attrs["seed"].dtype == np.int64
        group = f["heads/laya"]
        assert group.attrs["head_dir"] == str(out.resolve() / "heads" / "laya" / "seed_0")
        assert group.attrs["weights"].dtype == np.float32 and list(group.attrs["weights"]) == [0, 1, 2, 3]
        assert np.array_equal(group["scores"][()], np.arange(12.0).reshape(3, 4))
        assert group["scores"].compression == "gzip"
    assert sorted(p.name for p in h5.parent.iterdir()) == ["attributions.h5"]  # no temporary copy left


def test_a_kept_leftover_is_recorded_in_the_checks_summary(default_run, tmp_path) -> None:
    """Attack: `mkdir .out.old-4194303; echo x > .out.old-4194303/mine.txt; check planted --out out --force`
    kept the folder and said so on stderr only: summary.json had no warnings to name it in."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(default_run[2], out)
    assert default_run[1]["warnings"] == []
    mine = tmp_path / ".out.old-4194303"  # a number a PID can be, no process has here
    mine.mkdir()
    (mine / "mine.txt").write_text("x")
    _, summary = _check(out, "--force")
    (said,) = summary["warnings"]
    assert str(mine) in said and "left as it is" in said
    assert (mine / "mine.txt").read_text() == "x"


def test_seeds_near_chance_among_others_are_named_where_the_verdict_is_said_to_hold(default_run, tmp_path) -> None:
    """Across seeds, with the LAYA head near chance on some construction seeds only, the IG line said "not
    passed" but the last line said the verdict "holds for construction seeds 0, 1" without a word of the
    seed that tests nothing."""
    from laya_inspect.check.seeds import across_seeds, seeds_verdict_lines

    _, trained, _ = default_run
    _, drowned = _check(tmp_path / "out", "--noise", "20", "--seed", "1")
    assert "laya" in drowned["near_chance"] and not trained.get("near_chance")
    across = across_seeds([trained, drowned])
    assert across["near_chance_seeds"] == [1]
    last = seeds_verdict_lines(across, "layers.1", "resample")[-1]
    assert last.startswith("this verdict holds for construction seeds 0, 1"), last
    assert last.endswith("; on construction seed 1 the LAYA head is near chance, so that seed tests nothing"), last


def test_a_laya_head_near_chance_gets_no_verdict_not_a_failed_pipeline(tmp_path) -> None:
    """At --noise 20 the label is drowned and the LAYA head learns next to nothing: there is no planted
    layer in it for IG to find, so the run says "no verdict" (and does not pass), not that the pipeline
    fails to find the layer; across seeds too."""
    from laya_inspect.check.seeds import across_seeds, seeds_verdict_lines

    result, s = _check(tmp_path / "out", "--noise", "20")
    ig = s["verdict"][0]
    assert ig.startswith("IG on the LAYA head") and "no verdict: the LAYA head is near chance" in ig, ig
    assert "failed" not in ig and "does not find" not in ig
    assert ig in " ".join(result.output.split()) and not s["passed"]
    assert s["near_chance"]["laya"]["accuracy"] == pytest.approx(s["test_acc"]["laya"])
    across = across_seeds([s])
    assert across["near_chance_seeds"] == [0] and not across["passed"]
    (line,) = [v for v in seeds_verdict_lines(across, "layers.1", "resample") if v.startswith("IG")]
    assert "on seed 0 the LAYA head is near chance" in line and "passes only when" not in line
    # no line speaks of a verdict the run did not draw, here or across its one seed
    for said in (s["verdict"], seeds_verdict_lines(across, "layers.1", "resample")):
        assert not any("verdict holds" in v for v in said), said
        assert said[-1].startswith("no verdict on construction seed 0: the LAYA head is near chance"), said[-1]


def test_a_pass_the_constant_rule_also_reaches_is_not_read_as_per_input_attribution(default_run) -> None:
    """At the defaults IG, α and compare's constant rule (one profile for every row) all rank the signal
    layer first on every row: the pass said the pipeline finds the planted layer and nothing beside it
    said that one fixed profile does as well, so it read as a pass of per-input attribution. The pass
    line says it is not, and summary.json names the rule (a pass does not need IG to beat the constant)."""
    result, s, _ = default_run
    const = s["constant"]["laya"]
    assert s["passed"] is True and const["ci_low"] >= s["pass_share"]
    ig = s["verdict"][0]
    assert ig.startswith("IG on the LAYA head") and "passed: " in ig
    said = "; not a pass of per-input attribution: compare's constant rule (one profile for every row) reaches"
    assert said in ig and f"{const['share']:.1%} of {const['n']} rows" in ig, ig
    assert "cannot tell IG from one fixed profile" in " ".join(result.output.split())
    assert s["constant_at_bar"] is True
    assert s["pass_vs_constant"].startswith("not required: every row's planted answer is the same layer")


def test_the_random_line_gives_the_measured_random_share_beside_one_over_l(default_run) -> None:
    """One seed's random line gave 1/L alone; the measured share of random attribution on the LAYA head
    sits beside it, as the reading across seeds gives it."""
    _, s, _ = default_run
    random = _method(s, "random")
    (line,) = [v for v in s["verdict"] if v.startswith("the random reference")]
    low, high = random["ci_low"], random["ci_high"]
    measured = f"random attribution on the LAYA head did on {random['share']:.1%} of {random['n']} rows"
    assert line.endswith(f"; {measured} [{low:.1%}, {high:.1%}]"), line


def test_a_failing_ig_beside_a_constant_rule_at_the_bar_says_one_fixed_profile_does_better(tmp_path) -> None:
    """At --noise 1.5 the LAYA head learns the label (test accuracy well above chance), IG ranks the signal
    layer first on about two rows in three and the constant rule on every row: the failure says a fixed
    profile does better, so it is IG's per-input reading that misses, not the head's layer."""
    result, s = _check(tmp_path / "out", "--noise", "1.5")
    ig, const = _method(s, "ig"), s["constant"]["laya"]
    assert not s["passed"] and not s["near_chance"]
    assert const["ci_low"] >= s["pass_share"] and const["ci_low"] > ig["ci_high"]  # surely above IG on these rows
    line = s["verdict"][0]
    assert "failed: the whole interval is below 95%" in line
    assert line.endswith(
        f"; compare's constant rule (one profile for every row) does better ({const['share']:.1%}"
        f" of {const['n']} rows [{const['ci_low']:.1%}, {const['ci_high']:.1%}])"
    ), line
    assert "per-input attribution" not in line  # nothing passed, so no pass to qualify


def test_the_reading_across_seeds_says_a_pass_the_constant_rule_reaches_too(default_run) -> None:
    """Across seeds, as on one: IG passing on every seed where the constant rule reaches the bar on
    every seed too is a pass of the pipeline finding the layer, not of per-input attribution."""
    from laya_inspect.check.seeds import across_seeds, seeds_verdict_lines

    _, s, _ = default_run
    across = across_seeds([s])
    (line,) = [v for v in seeds_verdict_lines(across, "layers.1", "resample") if v.startswith("IG")]
    assert "passed on every seed" in line and "not a pass of per-input attribution" in line, line
    assert across["passed"] and across["constant_at_bar_on_every_seed"] is True


def test_a_near_chance_laya_head_whose_macro_f1_decides_is_not_said_to_have_learnt_nothing() -> None:
    """On 990:10 rows a LAYA head right on 4 of the 10 minority rows is near chance by its accuracy, but
    its macro-F1 (0.78 against 0.50) says it may have learned: IG's line names the macro-F1, as compare's
    caveat does, and does not say the head learnt next to nothing."""
    from laya_inspect.check.planted import near_chance_line
    from laya_inspect.compare.per_head import chance_check

    y = np.r_[np.zeros(990, int), np.ones(10, int)]
    p = np.r_[np.zeros(990, int), np.ones(4, int), np.zeros(6, int)]
    check = chance_check("laya", 0.994, y, preds=p)
    assert check["near_chance"]
    line = near_chance_line(Share(1000, 1000), "layers.1", check)
    assert "no verdict" in line and "accuracy alone cannot show whether the LAYA head learned" in line, line
    assert "learnt next to nothing" not in line, line
    nothing = chance_check("laya", 0.99, y, preds=np.zeros(1000, int))
    assert "learnt next to nothing" in near_chance_line(Share(1000, 1000), "layers.1", nothing)


def test_a_pass_of_alpha_the_constant_rule_reaches_too_is_said_to_be_no_finding(default_run) -> None:
    """The LAYA head's constant rule is the mean α: where it reaches the bar, α's and α-contrib's lines
    read "at the bar" alone, while IG's line said that the check cannot tell it from one fixed profile.
    Every method that passes beside the rule now says so, on one seed and across seeds."""
    from laya_inspect.check.seeds import across_seeds, seeds_verdict_lines

    _, s, _ = default_run
    assert s["constant"]["laya"]["ci_low"] >= s["pass_share"]  # the rule reaches the bar on this run
    for lines in (s["verdict"], seeds_verdict_lines(across_seeds([s]), "layers.1", "resample")):
        for name in ("α", "α-contrib"):
            (line,) = [v for v in lines if v.startswith(f"{name} ranks it first")]
            assert f"so this check cannot tell {name} from one fixed profile" in line, line


def test_the_constant_rule_rows_say_whether_they_reach_the_bar(default_run) -> None:
    """The tables left the constant rule's "vs bar" / "at bar" cell blank, while the bullets under them
    said that it reaches the bar (at the defaults it ranks the signal layer first on every row): the
    cell now says where its interval lies, as every method's does, and summary.json records it."""
    import io

    from rich.console import Console

    from laya_inspect.check.seeds import across_seeds
    from laya_inspect.cli.check import planted_table, seeds_table

    def rows(table: Any) -> list[str]:
        console = Console(file=io.StringIO(), width=200, color_system=None)
        console.print(table)
        return [line for line in console.file.getvalue().splitlines() if "constant rule" in line]  # type: ignore[attr-defined]

    _, s, _ = default_run
    assert s["constant_at_bar"] is True and s["against_bar"]["constant"]["laya"] == "above"
    (row,) = [r for r in rows(planted_table(s)) if r.split()[0] == "laya"]
    assert row.split()[-1] == "above", row
    across = across_seeds([s, s])
    assert across["constant"]["laya"]["passed_on"] == 2 and across["constant"]["laya"]["at_bar_on_every_seed"]
    seeds = {**s, "construction_seeds": [0, 1], "across_seeds": across}
    (row,) = [r for r in rows(seeds_table(seeds)) if r.split()[0] == "laya"]
    assert row.split()[-1] == "2/2", row


def test_the_reading_across_seeds_names_the_seeds_where_the_constant_rule_reaches_the_bar_too(default_run) -> None:
    """Across seeds the pass was qualified only when the constant rule reached the bar on every seed: on
    some seeds only, IG's and α's passes stood bare, though on those seeds one fixed profile did as well.
    Those seeds are now named, and summary.json keeps them (`constant_at_bar_seeds`)."""
    import copy

    from laya_inspect.check.seeds import across_seeds, seeds_verdict_lines

    _, s, _ = default_run
    assert s["constant_at_bar"] is True
    other = copy.deepcopy(s)  # a second seed whose constant rule falls short of the bar, IG still at it
    other["construction"]["seed"] = 1
    other["constant_at_bar"] = False
    other["against_bar"]["constant"]["laya"] = "straddles"
    across = across_seeds([s, other])
    assert across["constant_at_bar_seeds"] == [0] and across["constant_at_bar_on_every_seed"] is False
    lines = seeds_verdict_lines(across, "layers.1", "resample")
    for name in ("IG", "α", "α-contrib"):
        (line,) = [v for v in lines if v.startswith(f"{name} ")]
        assert line.endswith(
            "; on construction seed 0 compare's constant rule (one profile for every row) reaches the bar too, "
            f"so there this check cannot tell {name} from one fixed profile"
        ), line
