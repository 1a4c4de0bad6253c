"""`report DIR --html` as a writer of DIR: it takes the folder's lock, and a page saved while it writes
is refused by name; what a run's cleanup kept is said on the page it writes."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import laya_inspect.report as report
from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.files import output_lock
from laya_inspect.training.fit_head import FitConfig, fit_heads

runner = CliRunner()
FIT = FitConfig(heads=("laya",), seeds=(0,), epochs=2, lr=1e-2, batch_size=64, probe=False)


@pytest.fixture
def fitted(digits_cache: Path, tmp_path: Path) -> Path:
    with FeatureStore(digits_cache) as store:
        fit_heads(store, FIT, out_dir=tmp_path / "fh")
    return tmp_path / "fh"


def test_report_html_is_refused_while_another_writer_holds_the_folder(fitted: Path) -> None:
    """Attack: `fit-head … --out fh --force` and `report fh --html` at once: the report took no lock, so
    it read a folder being swapped and wrote its page into whichever folder stood there then."""
    page = fitted / "report.html"
    before = page.read_bytes()
    with output_lock(fitted):  # the lock fit-head --force (or another report --html) holds on fh
        result = runner.invoke(app, ["report", str(fitted), "--html"], env={"COLUMNS": "120"})
    assert result.exit_code == 1, result.output
    assert "is being written by another laya-inspect process" in " ".join(result.output.split())
    assert page.read_bytes() == before
    assert not (fitted.parent / ".fh.lock").exists()
    result = runner.invoke(app, ["report", str(fitted), "--html"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output  # the lock is gone with its holder


def test_the_library_call_is_refused_while_another_writer_holds_the_folder(fitted: Path) -> None:
    """Attack: a script's `write_report_html(fh)` while `fit-head … --out fh --force` swaps the folder:
    only `report --html` took the lock, the library call built its page from whatever stood there. It
    takes the lock too; a caller that holds it already says so (``locked=True``) and is not refused."""
    from laya_inspect.errors import LockedError

    page = fitted / "report.html"
    before = page.read_bytes()
    with output_lock(fitted):  # the lock fit-head --force holds on fh
        with pytest.raises(LockedError, match="is being written by another laya-inspect process"):
            report.write_report_html(fitted)
        assert page.read_bytes() == before
        assert report.write_report_html(fitted, locked=True) == page  # the holder writes its own page
    assert not (fitted.parent / ".fh.lock").exists()
    assert report.write_report_html(fitted) == page  # the lock is gone with its holder, and this call's too
    assert not (fitted.parent / ".fh.lock").exists()


def test_a_page_saved_while_report_html_writes_is_refused_not_overwritten(fitted: Path, monkeypatch) -> None:
    """Attack: a user saved their annotated report.html after `report --html` had checked the page and
    before it renamed its own over it: the user's page was replaced. Checked again just before the rename."""
    page = fitted / "report.html"
    sealed = report.seal

    def user_saves_meanwhile(text: str) -> str:  # the page is being written when the user saves theirs
        page.write_text("<p>my notes</p>", encoding="utf-8")
        return sealed(text)

    monkeypatch.setattr(report, "seal", user_saves_meanwhile)
    result = runner.invoke(app, ["report", str(fitted), "--html"], env={"COLUMNS": "120"})
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert f"{page} is not a page laya-inspect wrote" in said or f"{page} is not the page" in said, said
    assert page.read_text(encoding="utf-8") == "<p>my notes</p>"
    assert sorted(p.name for p in fitted.iterdir() if ".tmp-" in p.name) == []


def test_a_kept_leftover_is_said_on_fit_heads_page_and_in_its_summary(fitted: Path, digits_cache: Path) -> None:
    """Attack: `mkdir .fh.old-424243; echo x > .fh.old-424243/mine.txt; fit-head … --out fh --force`:
    summary.json named the kept folder, but report.html, built before that note was added, did not."""
    mine = fitted.parent / ".fh.old-4194303"  # a number a PID can be, no process has here
    mine.mkdir()
    (mine / "mine.txt").write_text("x")
    with pytest.warns(UserWarning, match="left as it is"), FeatureStore(digits_cache) as store:
        fit_heads(store, FIT, out_dir=fitted, overwrite=True)
    recorded = json.loads((fitted / "summary.json").read_text())["warnings"]
    assert [w for w in recorded if str(mine) in w] and len(recorded) == len(set(recorded))
    shown = " ".join(html.unescape((fitted / "report.html").read_text(encoding="utf-8")).split())
    assert str(mine) in shown and (mine / "mine.txt").read_text() == "x"
    assert os.listdir(mine) == ["mine.txt"]
