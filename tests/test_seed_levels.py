"""The across-seed tables name the level their intervals of a difference to the constant rule were drawn
at, read from the estimates themselves (docs/METHOD.md, "Across seeds"): a compare summary written before
those were drawn at each seed's verdict's level holds them at 95% with no ``confidence``, and `report`
still reads it. fixtures/compare_across_seeds_95.json is such a summary's ``across_seeds``, written by
laya-inspect at commit 13cbc65 (`demo`, trimmed to one head, one ablation and two methods)."""

from __future__ import annotations

import html
import json
from pathlib import Path

from test_compare_seeds import _beats_by, _render, _with_ig
from test_seed_verdicts import _wide

from laya_inspect.compare.seeds import across_seeds, csv_rows, difference_level, ranged_note
from laya_inspect.report.across import seed_sections, seed_tables
from laya_inspect.report.html import Section

OLD = Path(__file__).resolve().parent.parent / "fixtures" / "compare_across_seeds_95.json"


def _old() -> dict:
    return json.loads(OLD.read_text(encoding="utf-8"))


def _page(section: Section) -> str:
    return " ".join(html.unescape(section.html()).split())


def test_an_old_summary_s_differences_are_labelled_95_percent() -> None:
    summary = _old()
    (entry,) = summary["across_seeds"]["groups"][0]["ablations"].values()
    assert "confidence" not in entry["methods"]["alpha"]["faithfulness_minus_constant"]
    assert difference_level(entry) == "95%"
    terminal = _wide(seed_tables(summary))
    assert "mean ± t half-width over seeds, 95%; below, each seed's value" in terminal
    assert "98.3%" not in terminal
    assert "98.3%" not in " ".join(_render(seed_tables(summary, brief=True)).split())
    note = ranged_note(entry) or ""
    assert "the t-interval over 3 seeds at 95% (" in note  # cut intervals: the note names the level
    assert "98.3%" not in note
    (section,) = seed_sections(summary)
    page = _page(section)
    assert "[two-sided t-interval, 95%]" in page
    assert "for a difference to the constant rule alike" in page
    assert "98.3%" not in page


def test_a_new_summary_s_differences_are_labelled_at_their_own_level() -> None:
    """The same labels over a summary built now: the differences at 1 − 0.05/3, said as 98.3%."""
    summary = {"across_seeds": across_seeds([_beats_by(s, d) for s, d in enumerate((0.2, 0.3, 0.4))], [0, 1, 2])}
    (entry,) = summary["across_seeds"]["groups"][0]["ablations"].values()
    assert difference_level(entry) == "98.3%"
    assert "95% (98.3% for − constant, the verdicts' level)" in _wide(seed_tables(summary))
    (section,) = seed_sections(summary)
    page = _page(section)
    assert "95%; 98.3% for a difference to the constant rule" in page
    assert "each seed's own level for a difference (98.3% to the constant rule)" in page


def test_summary_csv_tells_a_score_s_level_from_a_difference_s() -> None:
    """Each estimate over the seeds has its interval's confidence beside it, and each pair of methods'
    difference in ρ over the seeds its rows and its verdict."""
    heads = [_with_ig(_beats_by(s, d), d - 0.3, d - 0.2) for s, d in enumerate((0.2, 0.3, 0.4))]
    across = across_seeds(heads, [0, 1, 2])
    rows = csv_rows({"across_seeds": across, "directions": {"faithfulness": "higher"}})
    seeds = {(r["method"], r["metric"]): r for r in rows if r["scope"] == "seeds"}
    assert seeds[("alpha", "faithfulness_confidence")]["value"] == 0.95
    assert seeds[("alpha", "faithfulness_minus_constant_confidence")]["value"] == 1 - 0.05 / 3
    pairs = across["groups"][0]["ablations"]["mean"]["vs_methods"]["alpha"]
    assert list(pairs) == ["ig"]
    for r, est in pairs.items():
        assert seeds[("alpha", f"faithfulness_minus_{r}_mean")]["value"] == est["mean"]
        assert seeds[("alpha", f"faithfulness_minus_{r}_confidence")]["value"] == est["confidence"]
        assert seeds[("alpha", f"verdict_vs_{r}")]["text"] == est["verdict"]
        assert seeds[("alpha", f"verdict_vs_{r}")]["value"] is None
    keys = [(r["method"], r["scope"], r["metric"]) for r in rows if r["method"]]
    assert len(keys) == len(set(keys))  # each row keeps a key of its own


def test_an_old_summary_s_beats_over_the_seeds_is_read_again_under_todays_rule() -> None:
    """QA: a summary written before "mixed" kept "beats" over the seeds where one score's interval lay above
    0 and another's below; the report showed "beats (all)" with no word. Such a summary's word is worked
    out again from the intervals it holds; one written now keeps its own."""
    from laya_inspect.compare.seeds import kept_verdict_over_seeds
    from laya_inspect.report.across import not_over_seeds

    summary = _old()
    (entry,) = summary["across_seeds"]["groups"][0]["ablations"].values()
    alpha = entry["methods"]["alpha"]
    assert alpha["verdict_over_seeds"] == "beats" and kept_verdict_over_seeds(alpha) == "beats"
    alpha["deletion_at_1_over_oracle_minus_constant"].update(ci_low=-0.3, ci_high=-0.1, mean=-0.2)
    assert alpha["verdict_over_seeds"] == "beats"  # as the old summary kept it
    assert kept_verdict_over_seeds(alpha) == "mixed"
    assert "disagree in sign" in (not_over_seeds(alpha) or ""), not_over_seeds(alpha)
    assert "mixed" in _wide(seed_tables(summary))
    new = across_seeds([_beats_by(s, d) for s, d in enumerate((0.3, 0.35, 0.4))], [0, 1, 2])
    (row,) = [m for e in new["groups"][0]["ablations"].values() for k, m in e["methods"].items() if k == "alpha"]
    row["faithfulness_minus_constant"]["ci_low"] = -1.0  # a kept word is not worked out again
    assert kept_verdict_over_seeds(row) == row["verdict_over_seeds"]
