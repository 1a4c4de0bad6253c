"""bench/trust.py runs the real CLI end to end and writes its page and the marked block of a RESULTS
page; bench/reproduce keeps that block and the paper's settings. Numbers and timings are never
asserted (they are the run's findings)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "reproduce_lib"))
plans = pytest.importorskip("plans")

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
BEGIN, END = "<!-- trust:begin -->", "<!-- trust:end -->"
PAGE_HEADINGS = [
    "# How far to trust α: four backbones, default heads",
    "## Four backbones, default heads",
    "## How far to trust α",
    "## Plain reading",
    "## The paper's faithfulness figures",
    "## Commands and wall times",
    "## Machine",
]
RESULTS = "# Reproduction results\n\n## Summary\n\n| a | b |\n|---|---|\n\n## 1. First experiment\n\nbody\n"


def _options(cmd: list[str]) -> dict[str, str]:
    return {a: b for a, b in zip(cmd, cmd[1:]) if a.startswith("--")}


@pytest.mark.parametrize("mode", ["quick", "full", "paper"])
def test_the_reproduction_keeps_the_papers_settings_and_runs_every_ablation(mode: str, tmp_path: Path) -> None:
    steps = [s.cmd for e in plans.plan(mode, tmp_path, for_display=True) for s in e.steps]
    by = {c: [cmd for cmd in steps if cmd[:2] == ["laya-inspect", c]] for c in ("train", "fit-head", "compare")}
    assert all(by.values())
    assert all(_options(cmd)["--monitor"] == "acc" for cmd in by["train"])
    assert all(_options(cmd)["--monitor"] == "acc" for cmd in by["fit-head"])
    assert all(_options(cmd)["--standardize"] == "none" for cmd in by["fit-head"])
    # fit-head's defaults (lr 1e-3, weight decay 1e-2) are not the paper's: the reproduction names its own.
    assert all(_options(cmd)["--weight-decay"] == "0" and "--lr" in cmd for cmd in by["fit-head"])
    assert all(_options(cmd)["--ablation"] == "all" for cmd in by["compare"])


def test_rewriting_the_reproduction_page_keeps_the_trust_block_after_the_summary(tmp_path: Path) -> None:
    from results import write_report

    block = f"{BEGIN}\n## How far to trust α\n\n| kept | verbatim |\n{END}"
    results = tmp_path / "RESULTS.md"
    results.write_text(f"# old\n\n## Summary\n\nold\n\n## 1. old\n\n{block}\n\n## Machine\n")
    exps = plans.plan("quick", tmp_path / "work", for_display=True)
    write_report(
        exps,
        mode="quick",
        work=tmp_path / "work",
        mode_dir=tmp_path / "work" / "quick",
        results=results,
        images=tmp_path / "images",
        device=None,
        overrides={},
    )
    text = results.read_text()
    assert text.count(block) == 1
    assert text.index("## Summary") < text.index(block) < text.index("\n## 1. ")


def test_no_table_or_difference_uses_the_unsourced_paper_figures() -> None:
    """The faithfulness and Deletion@1 figures once attributed to the paper have unknown definitions: they
    appear in one sentence (paper.UNSOURCED), never in a "paper" column or an "α − paper" difference."""
    import paper
    from results.tables import FAITH_HEADER

    assert "paper" not in FAITH_HEADER
    assert not [n for n in dir(paper) if n.startswith(("FAITH", "DELETION1"))]
    writers = [*(ROOT / "bench" / "reproduce_lib" / "results").glob("*.py"), ROOT / "bench" / "trust.py"]
    for path in writers:
        text = path.read_text()
        for figure in ("0.8575", "0.5787", "0.89,", "α − paper"):
            assert figure not in text, (path.name, figure)
    assert "0.8575" in paper.UNSOURCED and "unknown definitions" in paper.UNSOURCED


@pytest.mark.slow
def test_smoke_run_writes_every_section_and_the_results_block(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text(RESULTS)
    cmd = [sys.executable, str(ROOT / "bench" / "trust.py"), "--smoke", "--work", str(tmp_path / "w")]
    res = subprocess.run([*cmd, "--results", str(results)], capture_output=True, text=True, env=ENV, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    page = (tmp_path / "w" / "TRUST.md").read_text()
    lines = page.splitlines()
    for heading in PAGE_HEADINGS:
        assert heading in lines, heading
    assert "laya-inspect fit-head" in page and "laya-inspect compare" in page
    assert "; constant " in page  # the seeds' agreement beside each seed's mean profile for every row
    text = results.read_text()
    assert text.index("## Summary") < text.index(BEGIN) < text.index(END) < text.index("## 1. First experiment")
    block = text[text.index(BEGIN) : text.index(END)]
    for heading in ("## How far to trust α", "### Four backbones, default heads", "### Plain reading"):
        assert heading in block.splitlines(), heading
    assert "quoted in a summary of the paper, with unknown definitions" in block
    assert "each seed's mean profile for every row: " in block  # the plain reading's seeds line, beside its null

    # Rewriting from the same work folder replaces the block instead of adding a second one.
    again = subprocess.run(
        [*cmd, "--report-only", "--results", str(results)], capture_output=True, text=True, env=ENV, timeout=300
    )
    assert again.returncode == 0, again.stderr[-3000:]
    text = results.read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert text.endswith("## 1. First experiment\n\nbody\n")


def test_the_full_table_keeps_the_random_method_beside_the_random_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """compare's headline holds the random method (seeded noise) and the random reference (a random
    ordering) under the one name `random`: TRUST.md's methods × ablations table keyed its rows by
    (ablation, name), so the reference's row took the method's place and the method's numbers were lost."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_trust", ROOT / "bench" / "trust.py")
    assert spec is not None and spec.loader is not None
    trust = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_trust", trust)  # its dataclasses look their module up
    spec.loader.exec_module(trust)

    def row(method: str, reference: bool, rho: float) -> dict:
        scores = dict.fromkeys(("subset_faithfulness", "deletion_at_1_over_oracle", "deletion_area"), 0.5)
        return {
            "head": "laya",
            "ablation": "mean",
            "method": method,
            "reference": reference,
            "circular": None,
            "best": [],
            "faithfulness": rho,
            "faithfulness_ci_low": rho - 0.01,
            "faithfulness_ci_high": rho + 0.01,
            "top_layer_agreement": 0.5,
            "insertion_area": 0.5,
            **scores,
        }

    c = {"headline": [row("alpha", False, 0.7), row("random", False, 0.044), row("random", True, -0.07)]}
    lines = trust.full_table(c, {"name": "laya", "ablations": {}})
    said = [[cell.strip() for cell in line.split("|")[2:4]] for line in lines if line.startswith("| mean |")]
    assert said == [
        ["alpha", "0.700 [0.69, 0.71]"],
        ["random", "0.044 [0.03, 0.05]"],
        ["random (ref.)", "-0.070 [-0.08, -0.06]"],
    ]


def test_the_reading_calls_laya_under_trained_only_where_the_gate_shows_it_below_the_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """QA (all-MiniLM-L6-v2): LAYA's mean was more than the margin under the probe, but its gap's interval
    over seeds included 0; fit-head's gate says "not shown below the probe", and so does the reading."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("bench_trust", ROOT / "bench" / "trust.py")
    assert spec is not None and spec.loader is not None
    trust = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_trust", trust)  # its dataclasses look their module up
    spec.loader.exec_module(trust)
    heads = tmp_path / "heads"
    heads.mkdir()
    ref = {"layer": "hidden_states.6", "test_acc": 0.933, "margin": 0.03, "chosen_by": "the last layer"}
    laya = {"head": "laya", "test_acc": {"mean": 0.894}, "warnings": [], "seed_agreement": None}
    laya["probe_reference"] = {**ref, "reading": "not shown below the probe"}
    (heads / "summary.json").write_text(json.dumps({"heads": [laya]}), encoding="utf-8")
    said = " ".join(trust.reading(trust.Backbone("minilm", "MiniLM", heads=heads, compare=tmp_path / "none")))
    assert "(not shown below it: the gap's interval over seeds includes 0)" in said and "under-trained" not in said
    laya["probe_reference"]["reading"] = "below the probe"
    (heads / "summary.json").write_text(json.dumps({"heads": [laya]}), encoding="utf-8")
    said = " ".join(trust.reading(trust.Backbone("minilm", "MiniLM", heads=heads, compare=tmp_path / "none")))
    assert "the LAYA head with defaults is below the probe minus the margin (beyond its seeds' spread)" in said
