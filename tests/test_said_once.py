"""A warning that fit-head's quality gate gives every head of a run (too few rows, classes without
training rows) is printed once on the terminal, naming the heads it applies to; the outputs keep a
record per head."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from laya_inspect.report.terminal import gate_lines

FEW = "the test split has 15 rows (fewer than 20): its accuracy moves in steps of 0.07"
UNLEARNABLE = "class(es) '7' have test rows but no training rows: no head can predict them"


def _text(lines: list) -> str:
    console = Console(file=io.StringIO(), width=400, color_system=None)
    for line in lines:
        console.print(line)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_fit_head_prints_a_warning_of_every_head_once() -> None:
    summary = {
        "heads": [
            {"head": "laya", "warnings": ["seeds disagree", UNLEARNABLE, FEW]},
            {"head": "last", "warnings": [UNLEARNABLE, FEW]},
            {"head": "scalarmix", "warnings": [UNLEARNABLE, FEW]},
        ]
    }
    text = _text(gate_lines(summary))
    assert text.count(FEW) == 1 and text.count(UNLEARNABLE) == 1, text
    assert f"warning laya, last, scalarmix: {FEW}" in text and "warning laya: seeds disagree" in text


def test_compare_and_diagnose_print_what_fit_head_said_of_several_heads_once(tmp_path: Path, capsys) -> None:
    from laya_inspect.cli.app import warn
    from laya_inspect.head_dir import fit_warnings

    said = {"laya": [UNLEARNABLE, "seeds disagree", FEW], "scalarmix": [UNLEARNABLE, FEW]}
    heads = [{"head": h, "seeds": [0], "warnings": w} for h, w in said.items()]
    (tmp_path / "summary.json").write_text(json.dumps({"cache": {"cache_fingerprint": "f"}, "heads": heads}))
    config = {"cache_fingerprint": "f", "seed": 0}
    lines = [w for h in said for w in fit_warnings(tmp_path / h / "seed_0", config)]  # as compare gathers them
    assert len(lines) == 5
    warn([*lines, "the test split has 15 rows"])
    out: list[str] = []
    for line in capsys.readouterr().out.splitlines():  # a warning wider than the terminal goes on two spaces in
        if line.startswith("  "):
            out[-1] += " " + line.strip()
        elif line:
            out.append(line)
    where = tmp_path.resolve() / "summary.json"
    assert out == [
        f"warning: fit-head said of laya, scalarmix ({where}): {UNLEARNABLE}",
        f"warning: fit-head said of laya ({where}): seeds disagree",
        f"warning: fit-head said of laya, scalarmix ({where}): {FEW}",
        "warning: the test split has 15 rows",
    ]


def test_a_caveat_merged_over_seeds_names_each_seed_s_own_ablations() -> None:
    """QA: with several ablations, a caveat two seeds share under different ablations was printed
    once as "caveat (laya-seed_0, seed_1; zero)", the first seed's ablations given for both; only
    a caveat said under the same ablations is merged, and each line names its own ablations."""
    from laya_inspect.report.terminal import caveat_lines, shared_caveats

    few = "only 12 rows scored (fewer than 20): a bootstrap interval over so few rows is not drawn"
    heads = [
        {"name": "laya-seed_0", "ablations": {"zero": {"caveats": [few]}, "mean": {}}},
        {"name": "laya-seed_1", "ablations": {"zero": {}, "mean": {"caveats": [few]}}},
        {"name": "laya-seed_2", "ablations": {"zero": {"caveats": [few]}, "mean": {}}},
    ]
    shared = shared_caveats(heads)
    said = [_text(caveat_lines(h, shared)).strip() for h in heads]
    assert said == [f"caveat (laya-seed_0, seed_2; zero): {few}", f"caveat (mean): {few}", ""], said


def test_what_fit_head_said_of_the_test_split_is_left_out_where_the_run_says_it_itself(tmp_path: Path) -> None:
    """QA: diagnose on a 15-row test split printed fit-head's "the test split has 15 rows …" (read back
    as "fit-head said …") and its own, differently worded, version of the same point. The run's own line
    is kept on the terminal and in report.html's reading; summary.json keeps both records."""
    from laya_inspect.compare.records import FIT_SAID, said_once
    from laya_inspect.report.reading import _warnings
    from laya_inspect.training.quality import few_rows

    theirs = few_rows(15, "test", "and the interval over seeds leaves out the sampling of the test rows")
    mine = few_rows(15, "test", "and the intervals, over seeds or resampled rows, rest on a handful of rows")
    assert theirs and mine and theirs != mine
    said = FIT_SAID.format(head="laya", summary=str(tmp_path / "summary.json"), warning=theirs)
    other = FIT_SAID.format(head="laya", summary=str(tmp_path / "summary.json"), warning="seeds disagree: …")
    assert said_once([other, said, mine]) == [other, mine]
    assert _warnings({"warnings": [other, said, mine]}) == [f"Warning: {other}.", f"Warning: {mine}."]
    assert said_once([said]) == [said]  # alone, fit-head's line is said


def test_a_class_of_one_row_is_warned_of_once_on_either_side_of_the_split(tmp_path: Path) -> None:
    """QA (all-MiniLM-L6-v2 on a review CSV whose class '3' had one row): extract said "class '3' has
    a single row, put with the training rows …: it has no test row" and, two lines on, "class '3'
    (1 of 4) has no rows in split 'test'"; fit-head repeated both. One line says it, on either side."""
    from types import SimpleNamespace

    from laya_inspect.data import load_data
    from laya_inspect.data.words import WordVocab

    rows = [f"good film {i},{i % 3}" for i in range(30)] + ["lonely review,3"]
    (tmp_path / "t.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    spec, vocab = SimpleNamespace(kind="tokens", max_length=8), WordVocab(("good", "film"))
    for fraction, side, missing in [(0.2, "training", "test"), (0.6, "test", "training")]:
        data = load_data(f"csv:{tmp_path / 't.csv'}", input_spec=spec, tokenizer=vocab, test_fraction=fraction)
        said = [w for w in data.warnings if "class '3'" in w]
        assert len(said) == 1 and f"a single row, put with the {side} rows" in said[0], data.warnings
        assert f"it has no {missing} row" in said[0], said
    assert "no head fitted on the training rows can predict it" in said[0], said
