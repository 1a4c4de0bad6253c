"""fit-head warns when the epoch limit, not early stopping, ended a seed's training: it ran all
--epochs and its best validation epoch lies fewer than --patience epochs before the end."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import page_said
from typer.testing import CliRunner

from laya_inspect.cli import app

runner = CliRunner()
ENV = {"COLUMNS": "200"}


def _fit(cache: Path, out: Path, *extra: str) -> tuple[str, dict, dict]:
    """fit-head's `last` head on one seed: the terminal output, summary.json's head row and the run's metrics."""
    args = ["fit-head", str(cache), "--head", "last", "--seeds", "1", "--batch-size", "32", "--no-probe"]
    result = runner.invoke(app, [*args, *extra, "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    metrics = json.loads((out / "last" / "seed_0" / "metrics.json").read_text())
    return result.output, summary["heads"][0], metrics


def _limit(warnings: list[str]) -> list[str]:
    return [w for w in warnings if w.startswith("epoch limit")]


def test_a_fit_still_improving_at_the_epoch_limit_is_warned(digits_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "heads"
    said, head, metrics = _fit(digits_cache, out, "--epochs", "3", "--patience", "5", "--lr", "1e-3")
    # the premise: the validation loss still fell at the last epoch the limit allowed
    assert metrics["epochs_run"] == 3 and metrics["best_epoch"] == 3
    (warning,) = _limit(head["warnings"])
    assert "seed 0 (best epoch 3 of 3)" in warning
    assert "more --epochs" in warning and "higher --lr" in warning
    assert "epoch limit: seed 0 (best epoch 3 of 3)" in " ".join(said.split())
    page = runner.invoke(app, ["report", str(out), "--html"], env=ENV)
    assert page.exit_code == 0, page.output
    assert "epoch limit: seed 0 (best epoch 3 of 3)" in page_said(out / "report.html")


def test_a_fit_that_stops_on_patience_is_not_warned(digits_cache: Path, tmp_path: Path) -> None:
    _, head, metrics = _fit(digits_cache, tmp_path / "early", "--epochs", "300", "--patience", "2", "--lr", "0.3")
    ran, best = metrics["epochs_run"], metrics["best_epoch"]
    assert ran < 300 and ran - best == 2  # stopped by its patience, well before the limit
    assert _limit(head["warnings"]) == []
    # The same run with the limit at the epoch the stopper stopped it: it uses every epoch, but its best
    # lies a whole patience before the end, so the stopper, not the limit, ended it.
    _, head, again = _fit(digits_cache, tmp_path / "edge", "--epochs", str(ran), "--patience", "2", "--lr", "0.3")
    assert (again["epochs_run"], again["best_epoch"]) == (ran, best)
    assert _limit(head["warnings"]) == []
    # one epoch fewer: its best now lies within the patience of the end, and that is warned
    _, head, short = _fit(digits_cache, tmp_path / "short", "--epochs", str(ran - 1), "--patience", "2", "--lr", "0.3")
    assert (short["epochs_run"], short["best_epoch"]) == (ran - 1, best)
    assert [f"seed 0 (best epoch {best} of {ran - 1})" in w for w in _limit(head["warnings"])] == [True]
