"""What prune, early-exit and diagnose say while they run and beside their numbers: each refit counted as
it ends (forked workers included), an interval past its range cut to it in words the rest of the tool
uses, a tie on every seed said as no spread, and a page for a summary that lacks a field the verdict reads."""

from __future__ import annotations

import html
import json
import shutil
import time

from rich.console import Console
from test_beyond2_verdicts import ENV, _flat, _rewrite, pruned, runner  # noqa: F401  (pruned: a fixture)
from test_early_exit import cache, last_layer_run  # noqa: F401  (fixtures)

from laya_inspect.cli import app
from laya_inspect.workers import run_forked

CUT = "the t-interval over the seeds is too wide for its score's range, shown cut to it"


def _slow_second(i: int, x: float, emit) -> float:
    time.sleep(x)
    emit({"event": "ended", "i": i})
    return time.perf_counter()


def test_forked_runs_report_each_run_as_it_ends_not_once_every_run_has():
    """prune on a 19-layer backbone printed nothing for 906 s after "rankings …": the workers' events
    came back only once every refit had ended (concurrent.futures.wait's FIRST_EXCEPTION waits for all
    unless one fails)."""
    seen: dict[int, float] = {}
    ends = run_forked([0.0, 3.0], _slow_second, 2, lambda e: seen.setdefault(e["i"], time.perf_counter()))
    assert seen[0] < ends[1] - 1.0  # the quick run's event arrived while the slow one still ran


def test_prune_says_how_many_refits_and_counts_each_as_it_ends(pruned):  # noqa: F811
    out, run = pruned
    said = _flat(run["output"])
    s = json.loads((out / "summary.json").read_text())
    n = len({(tuple(f["layers"]), f["seed"]) for f in s["fits"]})
    assert f"refits: {n} (layer set, seed) pairs, " in said and "rankings' top-k sets at 2 k (3, 1)" in said
    assert said.count(" done: ") == n and f"refit {n}/{n} done: " in said and "so far" in said


def _comparisons():
    """Early-exit's comparisons over 2 seeds, alpha − random as a MobileNet run read it (−0.0127 and
    −0.0737: the 98.75% t-interval [−1.5948, +1.5084], past the range of a difference of two areas)."""
    from laya_inspect.beyond.exit_verdicts import exit_comparisons

    base = [0.70, 0.71]
    shift = {
        "random": (0, 0),
        "alpha": (-0.01271077957251554, -0.07365011983343861),
        "fixed": (-0.01, -0.02),
        "confidence": (0.02, 0.04),
    }
    shift |= {"confidence+alpha": (0.02, 0.04), "confidence+alpha_oracle": (0.02, 0.04)}
    areas = {r: [b + d for b, d in zip(base, ds)] for r, ds in shift.items()}
    fired = {"epsilon": 0.05, "rows": 0, "oracle_rows": 0, "of": 500}
    return exit_comparisons(areas, [], fired, in_sample=areas)


def test_an_early_exit_difference_past_its_range_is_cut_to_it_and_said_so():
    """early-exit printed "alpha vs random −0.0432 [−1.5948, +1.5084]" in the terminal and report.html,
    for a difference of two areas each in [0, 1], where diagnose cut its own silently."""
    from laya_inspect.beyond.scoring import diff_cut_note

    entry = _comparisons()["alpha vs random"]
    d = entry["area_diff"]
    assert (d["ci_low"], d["ci_high"], d["clipped"]) == (-1.0, 1.0, True)
    assert round(d["t_low"], 4) == -1.5948 and round(d["t_high"], 4) == 1.5084
    assert entry["area_diff_in_sample"]["clipped"]
    assert f"-0.0432, 98.8% CI [-1.0000, +1.0000] ({CUT})" in entry["verdict"]
    note = diff_cut_note({"command": "early-exit", "comparisons": {"alpha vs random": entry}})
    assert note is not None and "shown cut to [−1, 1]" in note and "alpha vs random [-1.59, +1.51]" in note


def test_the_early_exit_page_says_where_it_cut_a_difference(last_layer_run):  # noqa: F811
    from laya_inspect.report.beyond import beyond_page

    s, out = last_layer_run
    s = json.loads(json.dumps(s))
    s["comparisons"]["alpha vs random"] = _comparisons()["alpha vs random"]
    page = _flat(html.unescape(beyond_page(out, s)))
    assert "area differences: an interval reaching outside [−1, 1] is shown cut to [−1, 1]" in page
    assert "alpha vs random [-1.59, +1.51]" in page and "[-1.5948" not in page


def test_a_diagnose_difference_cut_to_its_range_says_so_in_its_verdict(tmp_path):
    """diagnose printed "alpha_entropy … 98.8% CI [−1.0000, +1.0000]" with the cut said only below the table."""
    from test_beyond2_verdicts import diagnosed_two_heads
    from test_prune import _planted_cache

    from laya_inspect.beyond.diagnose import auroc_diff, verdict_lines

    cache_path, _ = _planted_cache(tmp_path, 300, seed=0)
    out = diagnosed_two_heads(cache_path, tmp_path)
    s = json.loads((out / "summary.json").read_text())
    d = auroc_diff([0.62, 0.74], [0.86, 0.87], 0.9875)
    assert d["clipped"]
    s["errors"]["diff_vs_msp"]["alpha_entropy − msp"] = d
    for h in s["heads"]:
        h["n_errors"] = max(h["n_errors"], 20)
        h["n_test"] = max(h["n_test"], 200)
    line = next(v for v in verdict_lines(s) if "alpha_entropy and msp" in v or "alpha_entropy is" in v)
    assert "[-1.0000, +1.0000] (the t-interval over the heads is too wide for its score's range, shown cut to it)" in (
        line
    )


def test_a_reference_the_same_on_every_seed_is_said_to_have_no_spread(pruned):  # noqa: F811
    """prune's random reference on digits showed "0.9741 [0.9741, 0.9741]": every random set scored alike,
    a real tie, whose zero-width interval read as certainty."""
    from laya_inspect.cli.beyond import prune_table
    from laya_inspect.report.beyond import prune_sections

    out, _ = pruned
    s = json.loads((out / "summary.json").read_text())
    est = {"n": 2, "mean": 0.9741, "std": 0.0, "ci_low": 0.9741, "ci_high": 0.9741, "values": [0.9741, 0.9741]}
    s["per_ranking"]["random"]["mean_test_acc_over_k"] = est
    console = Console(width=300, record=True)
    console.print(prune_table(s, out))
    said = "0.9741 (the same on every seed: no spread)"
    assert said in console.export_text() and "[0.9741, 0.9741]" not in console.export_text()
    (ranks,) = prune_sections(s)[0].tables
    assert any(said in str(getattr(c, "text", c)) for row in ranks.rows for c in row)


def test_a_page_for_a_prune_summary_lacking_max_drop_names_the_field_not_a_key_error(pruned, tmp_path):  # noqa: F811
    """`report DIR --html` refused with "(KeyError: 'max_drop')" where the terminal showed the stored lines
    and named the field."""
    out, _ = pruned
    copy = tmp_path / "older"
    shutil.copytree(out, copy)
    _rewrite(copy / "summary.json", lambda s: s["config"].pop("max_drop"))
    page = runner.invoke(app, ["report", str(copy), "--html"], env=ENV)
    assert page.exit_code == 0, page.output
    text = _flat(html.unescape((copy / "report.html").read_text(encoding="utf-8")))
    assert "lacks max_drop (in config): its stored verdict lines are shown" in text and "KeyError" not in text
