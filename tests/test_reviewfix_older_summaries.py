"""`report DIR` on a prune, early-exit or diagnose summary lacking any one field: its stored verdict lines
and a note naming the field where the verdict rule reads it, never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_beyond2_verdicts import ENV, _flat, diagnosed_two_heads, pruned, runner  # noqa: F401  (pruned: a fixture)
from test_early_exit import cache, last_layer_run  # noqa: F401  (fixtures)

from laya_inspect.cli import app


@pytest.fixture(scope="module")
def diagnosed(digits_cache, tmp_path_factory) -> Path:
    """A real diagnose over two LAYA heads fitted on digits."""
    return diagnosed_two_heads(digits_cache, tmp_path_factory.mktemp("older-diagnose"))


def leaves(d: Any, at: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every leaf field's path; "*" for the items of a list of objects (the field of each item)."""
    if isinstance(d, dict) and d:
        return [p for k, v in d.items() for p in leaves(v, (*at, k))]
    if isinstance(d, list) and d and all(isinstance(x, dict) for x in d):
        return list(dict.fromkeys(p for x in d for p in leaves(x, (*at, "*"))))
    return [at] if at else []


def without(d: Any, path: tuple[str, ...]) -> None:
    """Delete the field at ``path`` from ``d`` (from every item where the path says "*")."""
    key, rest = path[0], path[1:]
    if key == "*":  # leaves() puts a key after every "*"
        for x in d:
            without(x, rest)
        return
    if not isinstance(d, dict) or key not in d:
        return
    if rest:
        without(d[key], rest)
    else:
        del d[key]


# the settings line above the verdict (report/settings.py) formats config.rank_rows without a check
SETTINGS_LINE = frozenset({("config", "rank_rows")})


def _report(folder: Path, older: dict[str, Any]) -> tuple[int, str, BaseException | None]:
    (folder / "summary.json").write_text(json.dumps(older))
    result = runner.invoke(app, ["report", str(folder)], env=ENV)
    return result.exit_code, _flat(result.output), result.exception


def _each_field_dropped(folder: Path, tmp_path: Path, skip: frozenset[tuple[str, ...]] = frozenset()) -> None:
    """`report DIR` on ``folder``'s summary with each leaf field dropped in turn: all of them read, and
    some were fields the verdict rule reads (their note checked)."""
    from laya_inspect.beyond import summary_verdict

    s = json.loads((folder / "summary.json").read_text())
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    bad, read = [], 0
    for path in leaves(s):
        if path == ("command",) or path in skip:  # command: what tells report a beyond folder from another
            continue
        older = json.loads(json.dumps(s))
        without(older, path)
        code, said, error = _report(copy, older)
        if code != 0 or "Traceback" in said or "KeyError" in said:
            bad.append(f"{'.'.join(path)}: exit {code}: {error!r} {said[-300:]}")
            continue
        lines, note = summary_verdict(older)
        if note is not None:  # the stored lines, and the field named beside them
            read += 1
            assert lines == s["verdict"] and f"lacks {path[-1]}" in note and note in said, (path, note)
    assert not bad, "\n".join(bad)
    assert read > 0  # some dropped field was one the verdict rule reads


@pytest.mark.slow
def test_a_prune_summary_lacking_any_field_reads(pruned, tmp_path):  # noqa: F811
    """Dropping chosen.found_by, all_layers_saved.flops_saved, alpha_heads' seed, … (fields the verdict
    rule reads that VERDICT_FIELDS did not list) made `report DIR` end in a raw KeyError traceback."""
    _each_field_dropped(pruned[0], tmp_path, skip=SETTINGS_LINE)


@pytest.mark.slow
def test_an_early_exit_summary_lacking_any_field_reads(last_layer_run, tmp_path):  # noqa: F811
    _each_field_dropped(last_layer_run[1], tmp_path)


@pytest.mark.slow
def test_a_diagnose_summary_lacking_any_field_reads(diagnosed, tmp_path):
    _each_field_dropped(diagnosed, tmp_path)


def test_a_prune_summary_lacking_rank_rows_reads(pruned, tmp_path):  # noqa: F811
    s = json.loads((pruned[0] / "summary.json").read_text())
    del s["config"]["rank_rows"]
    shutil.copytree(pruned[0], tmp_path / "older")
    code, said, error = _report(tmp_path / "older", s)
    if error is not None:
        raise error
    assert code == 0, said
