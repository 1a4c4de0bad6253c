"""examples/digits_notebook.py and examples/own_model_notebook.py run cell by cell as a notebook would
(one namespace, the last expression of a cell displayed), on the quick budget, and leave what they
say they write."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "digits_notebook.py"
OWN_MODEL = EXAMPLE.with_name("own_model_notebook.py")


def cells(path: Path) -> list[str]:
    """The code cells of a percent-format script (markdown cells left out)."""
    parts = re.split(r"^# %%.*$", path.read_text(encoding="utf-8"), flags=re.M)
    heads = re.findall(r"^# %%(.*)$", path.read_text(encoding="utf-8"), flags=re.M)
    return [body for head, body in zip(heads, parts[1:]) if "[markdown]" not in head and body.strip()]


def run_cell(source: str, namespace: dict[str, Any], path: Path = EXAMPLE) -> Any:
    """Execute a cell; return the value of its last line when that is an expression (what Jupyter shows)."""
    tree = ast.parse(source)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    body = ast.Module(body=tree.body[:-1] if last else tree.body, type_ignores=[])
    exec(compile(body, str(path), "exec"), namespace)
    return eval(compile(ast.Expression(last.value), str(path), "eval"), namespace) if last else None


def run_notebook(path: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], list[Any], str]:
    """Every code cell of ``path`` in one namespace on the quick budget, writing under ``out``: the
    namespace, the values the cells displayed, and what they printed."""
    monkeypatch.setenv("LAYA_EXAMPLE_OUT", str(out))
    monkeypatch.setenv("LAYA_EXAMPLE_QUICK", "1")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    shown, printed = [], io.StringIO()
    with contextlib.redirect_stdout(printed):
        for source in cells(path):
            value = run_cell(source, namespace, path)
            if value is not None:
                shown.append(value)
    return namespace, shown, printed.getvalue()


def test_example_is_a_percent_format_notebook() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert text.startswith("# %% [markdown]") and len(cells(EXAMPLE)) >= 6
    for name in ("extract_features", "fit_heads", "compare_heads", "FeatureStore", "ExtractConfig"):
        assert name in text


@pytest.mark.slow
def test_example_runs_cell_by_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "example"
    _, shown, text = run_notebook(EXAMPLE, out, monkeypatch)
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


@pytest.mark.slow
def test_own_model_example_runs_from_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "own"
    namespace, shown, text = run_notebook(OWN_MODEL, out, monkeypatch)
    assert "cached ['conv1', 'conv2', 'conv3'] widths [16, 32, 32] pooled ['gap', 'gap', 'gap']" in text
    assert re.search(r"laya: test accuracy 0\.\d{3}", text)
    scores = namespace["scores"]  # the per-sample DataFrame: 150 rows × 3 layers under the mean ablation
    assert len(scores) == 150 * 3 and {"alpha", "ig", "random", "effect"} <= set(scores.columns)
    np = pytest.importorskip("numpy")
    assert np.allclose(scores.groupby("row")["alpha"].sum(), 1.0, atol=1e-5)  # α sums to 1 over layers
    assert (out / "compare" / "report.html").is_file()
    assert any(hasattr(v, "_repr_html_") for v in shown)
    # in a terminal the result objects print as the commands' tables
    from rich.console import Console

    console = Console(width=100, record=True, file=io.StringIO())
    console.print(namespace["fit"], namespace["result"])
    text = console.export_text()
    # one seed: its accuracy with the test rows' Wilson interval, marked (rows), then macro-F1 and Δ vs last
    row = r"laya +0\.\d{3} \[0\.\d{3}, [01]\.\d{3}\] \(rows\) +0\.\d{3} +[+-]0\.\d{3}"
    assert re.search(row, text) and "Δ acc vs last" in text, text
    assert "alpha" in text and "top-1 only" in text
