"""examples/digits_notebook.py runs cell by cell as a notebook would (one namespace, the last
expression of a cell displayed), on the quick budget, and leaves what it says it writes."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "digits_notebook.py"


def cells(path: Path) -> list[str]:
    """The code cells of a percent-format script (markdown cells left out)."""
    parts = re.split(r"^# %%.*$", path.read_text(encoding="utf-8"), flags=re.M)
    heads = re.findall(r"^# %%(.*)$", path.read_text(encoding="utf-8"), flags=re.M)
    return [body for head, body in zip(heads, parts[1:]) if "[markdown]" not in head and body.strip()]


def run_cell(source: str, namespace: dict[str, Any]) -> Any:
    """Execute a cell; return the value of its last line when that is an expression (what Jupyter shows)."""
    tree = ast.parse(source)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    body = ast.Module(body=tree.body[:-1] if last else tree.body, type_ignores=[])
    exec(compile(body, str(EXAMPLE), "exec"), namespace)
    return eval(compile(ast.Expression(last.value), str(EXAMPLE), "eval"), namespace) if last else None


def test_example_is_a_percent_format_notebook() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert text.startswith("# %% [markdown]") and len(cells(EXAMPLE)) >= 6
    for name in ("extract_features", "fit_heads", "compare_heads", "FeatureStore", "ExtractConfig"):
        assert name in text


@pytest.mark.slow
def test_example_runs_cell_by_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "example"
    monkeypatch.setenv("LAYA_EXAMPLE_OUT", str(out))
    monkeypatch.setenv("LAYA_EXAMPLE_QUICK", "1")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    shown, printed = [], io.StringIO()
    with contextlib.redirect_stdout(printed):
        for source in cells(EXAMPLE):
            value = run_cell(source, namespace)
            if value is not None:
                shown.append(value)
    text = printed.getvalue()
    assert re.search(r"laya: test accuracy 0\.\d{3} over 1 seed", text)
    assert re.search(r"alpha: faithfulness ρ [+-]\d\.\d\d, top-layer agreement \d+%", text)
    assert "-0.0000" not in text
    for rel in (
        "features.h5",
        "heads/summary.json",
        "heads/report.html",
        "compare/report.html",
        "compare/summary.json",
    ):
        assert (out / rel).is_file(), rel
    # the compare result shows itself in a notebook: the page's reading and tables
    page = [v._repr_html_() for v in shown if hasattr(v, "_repr_html_")]
    assert page and "picks the same top layer" in page[0] and "<table" in page[0]
