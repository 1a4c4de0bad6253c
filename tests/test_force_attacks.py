"""Outputs attacked as a user meets them: names other locales wrote, outputs beside and inside the
inputs. Each refusal comes before any work and leaves every file as it was."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from helpers import class_blob_cache
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.errors import InputError
from laya_inspect.out_dir import check_out, refuse_non_utf8

runner = CliRunner()
ENV = {"COLUMNS": "300", "NO_COLOR": "1"}
# a name written in Latin-1 ("café"), as Python holds bytes that are not UTF-8: a surrogate
LATIN1 = os.fsdecode(b"caf\xe9")


def cache(folder: Path) -> Path:
    y = np.arange(40) % 2
    return class_blob_cache(folder / "features.h5", y, y)


def test_an_out_whose_name_is_not_utf8_is_refused_before_the_work(tmp_path, monkeypatch):
    """QA: fit-head --out with a Latin-1 name fitted every head, then failed with a UnicodeEncodeError
    traceback writing summary.json (which records the path in UTF-8)."""
    monkeypatch.chdir(tmp_path)
    features = cache(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    res = runner.invoke(app, ["fit-head", str(features), "--head", "last", "--seeds", "1", "--epochs", "1",
                              "--device", "cpu", "--no-probe", "--out", LATIN1], env=ENV)  # fmt: skip
    assert res.exit_code == 1, res.output
    assert "caf\\xe9 is not a UTF-8 name" in " ".join(res.output.split())
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing made, not even a lock


@pytest.mark.parametrize("where", ["out", "input"])
def test_check_out_refuses_a_path_that_is_not_utf8(tmp_path, where):
    out, given = (tmp_path / LATIN1, tmp_path / "in") if where == "out" else (tmp_path / "out", tmp_path / LATIN1)
    with pytest.raises(InputError, match="not a UTF-8 name") as refused:
        check_out(out, force=False, command="compare", inputs=[given])
    # the way out names --out only where --out is the name at fault
    assert ("choose another --out" in str(refused.value)) == (where == "out"), refused.value
    check_out(tmp_path / "café", force=False, command="compare", inputs=[tmp_path / "données"])  # UTF-8 is fine
    refuse_non_utf8(os.fsencode(tmp_path / "café"))  # a bytes path is read as the OS names it, not refused
