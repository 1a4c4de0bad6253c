"""Every verdict against the constant rule is said alike in summary.json, the terminal and report.html:
each head's and each method's, the seeds' verdicts of each across-seed row with its verdict over the seeds, and
each pair of methods' verdict over the seeds, on a real compare run of
two LAYA seeds and a head that reads one layer (docs/METHOD.md, "The constant rule and paired verdicts")."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.compare.records import NOT_APPLICABLE, VERDICTS, inapplicable_said
from laya_inspect.report.across import OVER_WORDS, WORDS, rivals
from laya_inspect.report.html import slug

runner = CliRunner()


@pytest.fixture(scope="module")
def compared(digits_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers import fit_quickly

    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.compare.run import CompareConfig, compare_heads
    from laya_inspect.head_dir import cache_identity, save_head

    tmp = tmp_path_factory.mktemp("said")
    with FeatureStore(digits_cache) as store:
        meta = cache_identity(store) | {"trained_by": "test"}
        dirs = [
            save_head(tmp / k / f"seed_{s}", fit_quickly(k, store, 40, seed=s), meta=meta | {"seed": s})
            for k, s in (("laya", 0), ("laya", 1), ("last", 0))
        ]
        config = CompareConfig(
            limit=80, n_boot=50, n_steps=8, device="cpu", plots=False, sanity=False, methods=("alpha", "ig", "random")
        )
        compare_heads(dirs, store, config, out_dir=tmp / "out")
    return tmp / "out"


def _cells(page: str, table_id: str) -> list[list[str]]:
    """The body rows of report.html's table ``table_id``, each cell's text."""
    body = re.search(rf'<table id="{re.escape(table_id)}">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert body, table_id
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S)
    return [
        [
            " ".join(html.unescape(re.sub(r"<[^>]+>", "", c)).split())
            for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)
        ]
        for r in rows
    ]


def _page_word(vs: dict) -> str:
    word = str(vs.get("verdict"))
    return inapplicable_said(vs.get("note")) if word == NOT_APPLICABLE else VERDICTS.get(word, word)


@pytest.mark.slow
def test_each_head_and_methods_verdict_is_the_same_in_the_terminal_and_report_html(compared: Path) -> None:
    summary = json.loads((compared / "summary.json").read_text())
    page = (compared / "report.html").read_text()
    result = runner.invoke(app, ["report", str(compared)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    verdicts = set()
    for head in summary["heads"]:
        rows = {r[0]: r[-1] for r in _cells(page, f"constant-{slug(head['name'])}")}
        start = next(i for i, line in enumerate(lines) if line.startswith(f"{head['name']} ({head['kind']})"))
        table = next(i for i in range(start, len(lines)) if "method − constant rule" in lines[i])
        for m, s in head["methods"].items():
            vs = s["vs_constant"]
            verdicts.add(vs["verdict"])
            assert rows[m].startswith(_page_word(vs)), (head["name"], m, rows[m], vs["verdict"])
            word = WORDS.get(vs["verdict"], vs["verdict"])
            said = next(line for line in lines[table:] if line.split()[:1] == [m])
            assert said.rstrip().endswith(f" {word}"), (head["name"], m, said, vs["verdict"])
    # a head with no verdict (one layer read) and at least two verdicts on the others: "worse" and more
    assert NOT_APPLICABLE in verdicts and len(verdicts - {NOT_APPLICABLE}) >= 2, verdicts

    (group,) = summary["across_seeds"]["groups"]
    pairs = 0
    for a, entry in group["ablations"].items():
        rows = {r[0]: r[-1] for r in _cells(page, f"seeds-{slug(group['head'])}-{slug(a)}")}
        start = next(i for i, line in enumerate(lines) if line.startswith(f"across seeds: {group['head']}"))
        for m, row in entry["methods"].items():
            words = [VERDICTS[v] for v in row["verdicts"]]
            if len(set(words)) == 1:
                assert rows[m].startswith(f"{words[0]} (every seed)"), (m, rows[m], row["verdicts"])
            else:
                for seed, w in zip(group["seeds"], words):
                    assert f"{w}" in rows[m] and f"seed {seed}" in rows[m].replace("seeds", "seed"), (m, rows[m])
            short = [WORDS.get(v, v) for v in row["verdicts"]]
            at = next(i for i in range(start, len(lines)) if lines[i].split()[:1] == [m])
            below = next(line for line in lines[at:] if line.split()[:2] == ["−", "constant"])  # its difference row
            cell = f"{short[0]} (all)" if len(set(short)) == 1 else " / ".join(short)
            over = row["verdict_over_seeds"]  # the verdict over the seeds, where it is not every seed's word
            if over is not None and over != row["verdicts"][0]:
                cell += f", {OVER_WORDS.get(over, f'{over} over seeds')}"
                assert VERDICTS[row["verdicts"][0]] + " on each of the 2 seeds, but " in rows[m], (m, rows[m])
            assert below.rstrip().endswith(cell), (m, below, row["verdicts"])
            versus = {c[0]: c[-2] for c in _cells(page, f"seeds-{slug(group['head'])}-{slug(a)}")}
            for r, est in rivals(entry, m):  # each pair of methods' verdict over the seeds, the same in both
                pair = next(line for line in lines[at:] if line.split()[:2] == ["−", r])
                assert pair.rstrip().endswith(f" {est['verdict']}"), (m, r, pair)
                assert f"− {r}: " in versus[m] and f"; {est['verdict']} over the seeds (" in versus[m], versus[m]
                pairs += 1
    assert pairs, "no pair of methods read over the seeds"
