"""compare over five real seeds of a LAYA head on digits, read at 80 and 100 columns: the headline says
when its interval over the seeds was cut to the score's range, as the across-seed table does, and the
across-seed table's verdict cell breaks between the seeds' verdicts, never inside one, nor a method's
name, at 80 columns, while at 100 it keeps its one line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from laya_inspect.report.across import WORDS, fit_width, seed_tables
from laya_inspect.report.reading import compare_headline, compare_reading, percent

SEEDS = 5
# the across-seed table's note on an interval cut to its score's range (its brief view's words)
CUT_SAID = "the t-interval over the seeds is too wide for its score's range, shown cut to it"


@pytest.fixture(scope="module")
def five_seeds(digits_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    """summary.json of `compare` over 5 seeds of a briefly fitted LAYA head (their verdicts against the
    constant rule differ: "identical" on some seeds, "worse" on others), and what it printed through a
    pipe at COLUMNS=80."""
    from helpers import fit_quickly

    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.head_dir import cache_identity, save_head

    root = tmp_path_factory.mktemp("five")
    with FeatureStore(digits_cache) as store:
        dirs = [
            save_head(
                root / "laya" / f"seed_{s}",
                fit_quickly("laya", store, 30, seed=s),
                meta={**cache_identity(store), "seed": s},
            )
            for s in range(SEEDS)
        ]
    args = [*map(str, dirs), "--cache", str(digits_cache), "--method", "alpha", "--ablation", "mean", "--limit", "60"]
    args += ["--n-steps", "4", "--bootstrap", "100", "--no-sanity", "--no-plots", "--device", "cpu"]
    env = {**os.environ, "COLUMNS": "80", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "laya_inspect", "compare", *args, "--out", str(root / "out")]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads((root / "out" / "summary.json").read_text(encoding="utf-8")), r.stdout


def _row(summary: dict, method: str = "alpha") -> dict:
    (group,) = summary["across_seeds"]["groups"]
    assert group["seeds"] == list(range(SEEDS))
    return group["ablations"]["mean"]["methods"][method]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_headline_says_its_interval_was_cut_as_the_table_does(five_seeds: tuple[dict, str]) -> None:
    summary, printed = five_seeds
    agree, rho = _row(summary)["top_layer_agreement"], _row(summary)["faithfulness"]
    assert agree["clipped"] and agree["ci_high"] == 1.0 and agree["t_high"] > 1, agree  # the case this reads
    assert not rho.get("clipped"), rho
    first = compare_headline(summary)[0]
    shown = f"{percent(agree['mean'])} [{percent(agree['ci_low'])}, 100%]"
    assert f"on {shown} of inputs ({CUT_SAID}; the constant rule: " in first, first
    assert f"faithfulness ρ {rho['mean']:.2f} [{rho['ci_low']:.2f}, {rho['ci_high']:.2f}] (top-1 only" in first
    assert first.count(CUT_SAID) == 1, first  # ρ's interval and the differences' were not cut: nothing said there
    # the table's note under it says the same words, and so do the terminal's headline and report.html's reading
    assert f"across seeds: {CUT_SAID}: alpha top-layer agreement" in _flat(_table(summary, 80, brief=True)), summary
    assert _flat(first) in _flat(printed)
    assert compare_reading(summary).lead[0] == first


def _table(summary: dict, width: int, brief: bool) -> str:
    from rich.console import Console
    from rich.table import Table

    screen = io.StringIO()
    console = Console(file=screen, width=width, color_system=None)
    for r in seed_tables(summary, brief):
        console.print(fit_width(r, console) if isinstance(r, Table) else r)
    return screen.getvalue()


def _verdict_cell(text: str) -> tuple[list[str], list[str]]:
    """The " − constant" row's verdict cell, line by line, and the method column of the same lines."""
    lines = text.splitlines()
    at = next(line for line in lines if line.rstrip().endswith("verdicts")).index("verdicts")
    first = next(i for i, line in enumerate(lines) if line[:at].strip().startswith("−"))
    cell, names = [], []
    for line in lines[first:]:
        if not line[at:].strip() or (cell and line[:at].strip().startswith(("−", "top-1", "random", "constant"))):
            break
        cell.append(line[at:].strip())
        names.append(line[: line.index("  ", 2)].strip() if "  " in line[2:] else line.strip())
    return cell, names


@pytest.mark.parametrize("brief", [True, False])
def test_five_seeds_verdicts_are_each_whole_at_80_columns(five_seeds: tuple[dict, str], brief: bool) -> None:
    summary, printed = five_seeds
    said = [WORDS.get(v, v) for v in _row(summary)["verdicts"]]
    assert len(said) == SEEDS and len(set(said)) > 1, said  # the seeds' verdicts differ: one cell holds all five
    text = _table(summary, 80, brief)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in text, text
    cell, names = _verdict_cell(text)
    assert " ".join(cell) == " / ".join(said), text  # every seed's verdict, in order
    # the cell breaks after a " /" only, so each line starts with a whole verdict
    assert all(line.endswith(" /") for line in cell[:-1]) and len(cell) > 1, cell
    assert names[0] == "− constant", text  # the row's name whole, not "−" over "constant"
    # no name broken to make room: "−" over "constant", "top-1" over "only" (BASE's 80-column table)
    rows = [line.strip() for line in lines]
    assert all(r.startswith("− constant") for r in rows if r.startswith("−")), text
    assert all(r.startswith("top-1 only") for r in rows if r.startswith("top-1")), text
    assert _verdict_cell(printed)[0] == _verdict_cell(_table(summary, 80, False))[0]  # the command's own print


def test_at_100_columns_the_verdicts_keep_one_line(five_seeds: tuple[dict, str]) -> None:
    summary, _ = five_seeds
    said = [WORDS.get(v, v) for v in _row(summary)["verdicts"]]
    for brief in (True, False):
        cell, names = _verdict_cell(_table(summary, 100, brief))
        assert cell == [" / ".join(said)] and names[0] == "− constant", cell
