"""prune's α-vs-ranking verdicts read beside the test rows' own sampling (docs/METHOD.md, "Prune")."""

from __future__ import annotations

import numpy as np

from laya_inspect.beyond.prune import _compare_rankings

N = 200  # shared test rows
SEEDS = [0, 1, 2, 3, 4]


def _setup(gains: list[int], disagree: int) -> tuple[dict, dict, dict]:
    """Two layers; α keeps layer 0 at k = 1, depth keeps layer 1. At seed i, depth answers rows
    [0, 100) right, α the rows shifted by ``disagree`` plus ``gains[i]`` more: α − depth is
    gains[i] / N on seed i, and the two sets answer about 2·disagree rows differently."""
    ranked = {"alpha": {s: [0, 1] for s in SEEDS}, "depth": {s: [1, 0] for s in SEEDS}}
    results, rights = {}, {}
    for s, g in zip(SEEDS, gains):
        depth = np.zeros(N, bool)
        depth[:100] = True
        alpha = np.zeros(N, bool)
        alpha[disagree : 100 + disagree + g] = True
        every = np.ones(N, bool)
        for layers, right in (((0,), alpha), ((1,), depth), ((0, 1), every)):
            rights[layers, s] = right
            results[layers, s] = (0.5, float(right.mean()))
    return ranked, results, rights


def test_alpha_beats_depth_over_seeds_within_the_rows_sampling_is_withheld():
    ranked, results, rights = _setup([1, 2, 1, 2, 1], disagree=20)
    _, vs = _compare_rankings(ranked, results, [1], SEEDS, None, n_layers=2, rights=rights)
    e = vs["depth"]
    d, rows = e["mean_test_acc_over_k_diff"], e["test_rows"]
    assert d["ci_low"] > 0  # over seeds alone, α beats depth
    assert rows["rows"] == N and rows["seeds"] == len(SEEDS)
    assert abs(rows["mean"] - d["mean"]) < 1e-12  # the rows' mean is the same difference
    assert rows["dominates"] and rows["holds_zero"] and rows["withheld"]
    assert rows["half_width"] > 0.05  # ~43 of 200 rows differ: ±0.06
    assert e["verdict"].startswith("no verdict on the α ranking against the depth ranking"), e["verdict"]
    assert "beats" not in e["verdict"] and f"{N} shared test rows" in e["verdict"]


def test_alpha_beats_depth_past_the_rows_sampling_says_its_width():
    ranked, results, rights = _setup([40, 41, 40, 41, 40], disagree=5)
    _, vs = _compare_rankings(ranked, results, [1], SEEDS, None, n_layers=2, rights=rights)
    e = vs["depth"]
    rows = e["test_rows"]
    assert rows["dominates"] and not rows["holds_zero"] and not rows["withheld"]
    assert e["verdict"].startswith("the α ranking beats the depth ranking"), e["verdict"]
    assert f"the {N} shared test rows alone allow (±{rows['half_width']:.4f}" in e["verdict"]


def test_rows_far_narrower_than_the_seeds_add_nothing():
    # every row answered alike but the gained ones: the rows' interval is no wider than the seeds'
    ranked, results, rights = _setup([2, 30, 2, 30, 2], disagree=0)
    _, vs = _compare_rankings(ranked, results, [1], SEEDS, None, n_layers=2, rights=rights)
    e = vs["depth"]
    assert not e["test_rows"]["dominates"] and not e["test_rows"]["withheld"]
    assert "shared test rows" not in e["verdict"], e["verdict"]


def test_report_says_a_withheld_alpha_verdict_as_withheld(tmp_path):
    """A real prune run; its α − depth entry is set to the one _compare_rankings gives over 200 rows that
    the seeds read as "beats" and the rows do not: report.html's lead and table withhold it (the
    terminal's line is the entry's verdict, read above)."""
    import html
    import json

    from test_prune import ENV, _planted_cache, runner

    from laya_inspect.beyond.prune import PruneConfig, prune_layers
    from laya_inspect.beyond.refit import Budget
    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.cli import app
    from laya_inspect.report.reading import prune_reading

    cache, head_dir = _planted_cache(tmp_path, 300, seed=0)
    config = PruneConfig(seeds=2, ks=(1,), max_drop=0.05, costs="shapes", device="cpu", plots=False)
    with FeatureStore(cache) as store:
        s = prune_layers(head_dir, store, config, Budget(epochs=2), out_dir=tmp_path / "out").summary
    assert "rows_rule" in s and all("test_rows" in v for v in s["alpha_vs"].values())
    ranked, results, rights = _setup([1, 2, 1, 2, 1], disagree=20)
    _, vs = _compare_rankings(ranked, results, [1], SEEDS, None, n_layers=2, rights=rights)
    s["alpha_vs"]["depth"] = vs["depth"]
    lead = next(x for x in prune_reading(s).lead if x.startswith("Ranking layers by α"))
    assert f"no verdict: the {N} shared test rows alone allow ±" in lead, lead
    assert "beats depth" not in lead, lead
    (tmp_path / "out" / "summary.json").write_text(json.dumps(s))
    result = runner.invoke(app, ["report", str(tmp_path / "out"), "--html"], env=ENV)
    assert result.exit_code == 0, result.output
    page = html.unescape((tmp_path / "out" / "report.html").read_text(encoding="utf-8"))
    assert "withheld: within the test rows' sampling" in page
    # the terminal's table marks the withheld difference too (it showed the bare interval)
    from rich.console import Console

    from laya_inspect.cli.beyond import prune_table

    console = Console(width=200, record=True, color_system=None)
    console.print(prune_table(s, head_dir))
    rows = {line.split()[0]: line for line in console.export_text().splitlines() if line.strip()}
    assert "(withheld: test rows)" in rows["depth"], rows
    assert "withheld" not in rows.get("deepest", ""), rows
