"""bench/beyond.py: the corrupted copies it extracts (by hand), the marked block it writes into a
RESULTS page (and that bench/reproduce keeps), and its --smoke run end to end through the real CLI.
Numbers are never asserted beyond the control (an unchanged copy shows no shift): they are the run's
findings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "reproduce_lib"))
corrupt_mod = pytest.importorskip("corrupt")
page = pytest.importorskip("beyond_page")

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}


def test_corruptions_keep_shape_and_dtype_and_change_what_they_say() -> None:
    rng = np.random.default_rng(1)
    x8 = rng.integers(0, 256, size=(6, 1, 12, 12), dtype=np.uint8)
    xf = rng.random(size=(4, 3, 8, 8)).astype(np.float32)
    assert np.array_equal(corrupt_mod.corrupt(x8, "clean", 2), x8)
    for x in (x8, xf):
        for kind in ("noise", "blur"):
            worse = [corrupt_mod.corrupt(x, kind, s) for s in (1, 2, 3)]
            assert all(w.shape == x.shape and w.dtype == x.dtype for w in worse)
            change = [np.abs(w.astype(np.float64) - x).mean() for w in worse]
            assert 0 < change[0] < change[1] < change[2]  # severity orders the damage
    assert np.array_equal(corrupt_mod.corrupt(x8, "noise", 2, seed=3), corrupt_mod.corrupt(x8, "noise", 2, seed=3))
    blurred = corrupt_mod.corrupt(xf, "blur", 3)
    assert blurred.std() < xf.std() and abs(blurred.mean() - xf.mean()) < 0.02  # smooths, keeps the level
    j = corrupt_mod.corrupt(np.repeat(x8, 3, axis=1), "jpeg", 3)
    assert j.shape == (6, 3, 12, 12) and j.dtype == np.uint8 and not np.array_equal(j, np.repeat(x8, 3, axis=1))
    with pytest.raises(SystemExit, match="8-bit"):
        corrupt_mod.corrupt(xf, "jpeg", 1)


def test_extract_options_rebuild_the_caches_own_model_and_transforms() -> None:
    cmd = {
        "model": "torchvision:mobilenet_v2",
        "weights": "w.pth",
        "layers": "all",
        "pool": "auto",
        "dtype": "float32",
        "resize": "stretch",
        "image_size": 96,
        "normalize": None,
        "trust_pickle": False,
    }
    argv = corrupt_mod.extract_options(cmd)
    assert argv[:4] == ["--model", "torchvision:mobilenet_v2", "--weights", "w.pth"]
    assert "--image-size" in argv and argv[argv.index("--image-size") + 1] == "96"
    assert "--normalize" not in argv and "--trust-pickle" not in argv  # the model's own default, as extracted


def test_the_block_goes_after_the_trust_block_and_is_replaced_in_place(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    trust = "<!-- trust:begin -->\n## How far to trust α\n<!-- trust:end -->"
    results.write_text(f"# R\n\n## Summary\n\ns\n\n{trust}\n\n## 1. First\n\nbody\n")
    page.put_block(results, f"{page.BEGIN}\nfirst\n{page.END}")
    text = results.read_text()
    assert text.index("<!-- trust:end -->") < text.index(page.BEGIN) < text.index("## 1. First")
    page.put_block(results, f"{page.BEGIN}\nsecond\n{page.END}")
    text = results.read_text()
    assert "second" in text and "first" not in text and text.count(page.BEGIN) == 1
    assert text.startswith("# R\n\n## Summary\n\ns\n\n" + trust) and text.endswith("## 1. First\n\nbody\n")


def test_bench_reproduce_keeps_the_beyond_block(tmp_path: Path) -> None:
    from results.write import BEYOND_BEGIN, BEYOND_END, kept_trust_block

    assert (BEYOND_BEGIN, BEYOND_END) == (page.BEGIN, page.END)
    results = tmp_path / "RESULTS.md"
    results.write_text(f"# R\n\n<!-- trust:begin -->\nt\n<!-- trust:end -->\n\n{page.BEGIN}\nb\n{page.END}\n\n## 1.\n")
    assert kept_trust_block(results, BEYOND_BEGIN, BEYOND_END) == [page.BEGIN, "b", page.END, ""]
    assert kept_trust_block(results) == ["<!-- trust:begin -->", "t", "<!-- trust:end -->", ""]


@pytest.mark.slow
def test_smoke_run_writes_every_folder_page_and_block(tmp_path: Path) -> None:
    work = tmp_path / "b"
    res = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "beyond.py"), "--smoke", "--work", str(work)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=900,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    d = work / "convnet"
    for folder in ("prune", "early-exit", "diagnose", "shift/clean"):
        assert (d / folder / "summary.json").is_file() and (d / folder / "report.html").is_file(), folder
    text = (work / "RESULTS.md").read_text()
    assert text.count(page.BEGIN) == 1 and text.count(page.END) == 1
    for heading in ("## Beyond attribution: prune, early exit, diagnose", "### At a glance", "**prune**"):
        assert heading in text
    for line in ("**early-exit**", "**diagnose**", "**diagnose --against**", "### Commands and wall times"):
        assert line in text
    # the reading leads with its warnings (what fit-head said of the tiny heads), then α's verdict
    assert "SMOKE RUN" in text and "laya-inspect prune " in text and "Reading: " in text
    assert "Ranking layers by α" in text
    # the control: the unchanged images through the npz → extract path show no shift at all
    clean = json.loads((d / "shift" / "clean" / "summary.json").read_text())["shift"]
    assert all(h["permutation"]["p_value"] == 1.0 for h in clean["heads"])
    assert clean["pooled"]["detect_auroc"]["alpha_divergence"]["mean"] == pytest.approx(0.5, abs=0.01)
    # a second run reuses every finished step
    again = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "beyond.py"), "--smoke", "--work", str(work)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert again.returncode == 0 and "[run]" not in again.stdout and again.stdout.count("[reuse]") == 9


def test_results_page_cells_say_not_distinguishable_as_report_html_does() -> None:
    """docs/RESULTS.md's beyond table read "no difference" where report.html's cell reads "not
    distinguishable": an interval that holds 0 shows no difference, it does not show there is none."""
    holds_zero = {"mean": 0.01, "ci_low": -0.02, "ci_high": 0.04}
    assert page.word(holds_zero) == "not distinguishable"
    assert page.word(holds_zero, alpha=False) == "not distinguishable"
    assert page.word({"mean": 0.03, "ci_low": 0.01, "ci_high": 0.05}) == "**α better**"


def test_results_page_heads_the_mean_over_k_column_with_the_k_tried_as_prune_does(tmp_path: Path) -> None:
    """docs/RESULTS.md's prune table headed its column "mean test acc over k < 19" where prune tried
    k = 1 to 3, 5, 8, 12, 16 alone; prune's own table names the k it averaged over, and the page copies it."""
    from test_prune import _planted_cache

    from laya_inspect.beyond.config import PruneConfig
    from laya_inspect.beyond.prune import prune_layers
    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.report.beyond import prune_sections

    cache, head_dir = _planted_cache(tmp_path, 400, seed=0)
    config = PruneConfig(refit=False, ks=[1], max_drop=0.05, costs="shapes", device="cpu", plots=False)
    with FeatureStore(cache) as store:
        s = prune_layers(head_dir, store, config, out_dir=tmp_path / "out").summary
    tool = next(t for t in prune_sections(s)[0].tables if t.id == "prune-rankings")
    over_k = next(c for c in tool.columns if c.startswith("mean test acc over "))
    assert over_k == "mean test acc over k = 1 of 3 layers"  # k = 2 was not tried
    header = next(line for line in page._prune(s, [], "planted") if line.startswith("| ranking |"))
    assert f"| {over_k} |" in header


def test_the_block_names_the_commit_its_steps_ran_at(tmp_path: Path) -> None:
    """The trust block named the commit its steps ran at and the beyond block did not, so a page rerun in
    part could not say which of its figures were new; the beyond block names the commits of its steps."""
    from types import SimpleNamespace

    from runner import Runner, Step

    work = tmp_path / "w"
    steps = [Step(f"convnet.{t}", ["laya-inspect", t], [], "convnet", t) for t in ("prune", "diagnose", "early-exit")]
    runner = Runner(work, echo=False)
    runner.steps_dir.mkdir(parents=True)
    for st, rec in zip(
        steps, ({"commit": "abc1234"}, {"commit": "abc1234"}, {"commit": "def5678", "status": "failed"})
    ):
        (runner.steps_dir / f"{st.name}.json").write_text(json.dumps({"status": "ok", "wall_s": 30.0, **rec}))
    out = {c: work / c for c in ("prune", "early-exit", "diagnose")}
    b = SimpleNamespace(name="convnet", title="t", skip=None, cache=work / "c.h5", laya=[work / "h" / "seed_0"])
    b.__dict__.update(steps=steps, outs=out, shifts=[])
    text = page.block([b], runner, work, smoke=False, load=lambda p: None)
    assert "(1.5 min of steps at commit `abc1234`, OMP_NUM_THREADS=1," in text  # the failed step's commit is not said
