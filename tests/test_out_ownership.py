"""Output folders are laya-inspect's own only when its marker says so: `--force` replaces a folder
whole only when it is empty or every file in it was written by the same command, and never the
current folder, a folder above it, the home folder, a symlink, or a folder holding the run's inputs.
Each test that refuses compares the user's files byte for byte before and after."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from laya_inspect import __version__
from laya_inspect.cli import app
from laya_inspect.errors import InputError
from laya_inspect.files import lock_text
from laya_inspect.out_dir import MARKER, atomic_dir, check_out, foreign_files, read_marker, redigest, write_marker

runner = CliRunner()
ENV = {"COLUMNS": "300", "NO_COLOR": "1"}


def tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


def users_folder(path: Path) -> dict[str, str]:
    (path / "sub").mkdir(parents=True, exist_ok=True)
    (path / "notes.txt").write_text("mine")
    (path / "sub" / "x.txt").write_bytes(bytes(range(256)))
    return tree(path)


def written(path: Path, command: str = "fit-head", files: dict[str, str] | None = None) -> Path:
    with atomic_dir(path, force=True, command=command) as tmp:
        for name, text in (files or {"summary.json": "{}", "plots/a.png": "png"}).items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_text(text)
    return path


def test_the_marker_names_the_command_the_version_and_every_file(tmp_path):
    out = written(tmp_path / "out")
    marker = json.loads((out / MARKER).read_text())
    assert marker["written_by"] == "laya-inspect" and marker["command"] == "fit-head"
    assert marker["version"] == __version__ and marker["written"].endswith("+00:00")
    assert marker["files"] == ["plots", "plots/a.png", "summary.json"]
    assert foreign_files(out) == []


def test_stopped_between_the_two_renames_the_previous_folder_is_put_back(tmp_path, monkeypatch):
    """QA: Ctrl-C after the previous output was moved aside and before the new one took its name
    removed both: nothing was left under --out."""
    out = written(tmp_path / "out", files={"old.json": "1"})
    before = tree(out)
    real = os.replace

    def interrupted(src, dst):
        if Path(src).name.startswith(".out.tmp-"):
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        written(out, files={"new.json": "2"})
    monkeypatch.setattr(os, "replace", real)
    assert tree(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_force_replaces_a_folder_the_same_command_wrote_whole(tmp_path):
    out = written(tmp_path / "out", files={"old.json": "1", "plots/old.png": "x"})
    written(out, files={"new.json": "2"})
    assert sorted(tree(out)) == [MARKER, "new.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary folder or lock left


def test_force_refuses_a_folder_of_the_users_files(tmp_path):
    out = tmp_path / "results"
    before = users_folder(out)
    with pytest.raises(InputError, match=r"did not write \(notes.txt, sub/\)") as e:
        written(out)
    assert "choose another --out, or empty it yourself" in str(e.value)
    assert tree(out) == before


def test_force_names_the_command_whose_files_it_keeps(tmp_path):
    """A figure `explain` saved inside a fit-head output is laya-inspect's, but not fit-head's to delete:
    the refusal says "laya-inspect fit-head did not write", not that laya-inspect did not write it."""
    out = written(tmp_path / "heads")
    (out / "row3.png").write_text("a figure another command wrote here")
    with pytest.raises(InputError) as e:
        written(out)
    assert "holds files laya-inspect fit-head did not write (row3.png)" in str(e.value)
    assert (out / "row3.png").read_text() == "a figure another command wrote here"


def test_a_file_added_to_our_output_is_foreign(tmp_path):
    out = written(tmp_path / "out")
    (out / "plots" / "mine.png").write_text("the user's figure")
    assert foreign_files(out) == ["plots/mine.png"]
    before = tree(out)
    with pytest.raises(InputError, match="plots/mine.png"):
        written(out)
    assert tree(out) == before


def test_a_file_of_our_output_edited_by_hand_is_not_replaced(tmp_path):
    """QA: a summary.json edited by hand (notes added to it, numbers corrected) was deleted by the
    next --force, since the marker listed the name only."""
    out = written(tmp_path / "out", files={"summary.json": '{"acc": 0.9}', "plots/a.png": "png", "report.html": "p"})
    (out / "summary.json").write_text('{"acc": 0.8}')  # the same size: only the content tells
    (out / "report.html").write_text("rebuilt by report --html")
    redigest(out, ["report.html"])  # as report --html records the page it rebuilt in place: still ours
    before = tree(out)
    with pytest.raises(
        InputError, match=r"or that changed since it wrote them \(summary\.json \(changed since it was written\)\)"
    ):
        written(out)
    assert tree(out) == before
    (out / "summary.json").write_text('{"acc": 0.9}')  # put back as written: ours again
    written(out)
    assert (out / "summary.json").read_text() == "{}"


def test_a_report_page_edited_by_hand_is_not_deleted_by_force(tmp_path):
    """QA: report.html had no digest in the marker (report --html rebuilds it), so --force deleted a
    page the user had annotated by hand; report --html now records the digest of the page it rebuilds."""
    out = written(tmp_path / "out", files={"summary.json": "{}", "report.html": "<html>laya-inspect</html>"})
    (out / "report.html").write_text("<html>laya-inspect, with my notes</html>")
    with pytest.raises(InputError, match=r"report.html \(changed since it was written\)"):
        with atomic_dir(out, force=True, command="fit-head") as tmp:
            (tmp / "summary.json").write_text("{}")
    assert (out / "report.html").read_text() == "<html>laya-inspect, with my notes</html>"


def test_report_html_does_not_rebuild_over_a_page_edited_by_hand(tmp_path):
    """Audit: --force kept a report.html annotated by hand, yet `report DIR --html` rebuilt it over the
    notes (the page was listed, so it passed as laya-inspect's whatever it held now)."""
    from laya_inspect.report import refuse_foreign_page

    out = written(tmp_path / "out", files={"summary.json": "{}", "report.html": "<html>laya-inspect</html>"})
    refuse_foreign_page(out)  # as written: rebuilt
    (out / "report.html").write_text("<html>laya-inspect, with my notes</html>")
    with pytest.raises(InputError, match=r"report.html is not the page laya-inspect wrote \(changed since it was"):
        refuse_foreign_page(out)
    assert (out / "report.html").read_text() == "<html>laya-inspect, with my notes</html>"
    (out / "report.html").write_text("<html>laya-inspect</html>")  # put back as written: ours again
    refuse_foreign_page(out)


def test_a_marker_without_digests_still_marks_its_files(tmp_path):
    """A marker written before the digests (or by demo, ahead of its files) lists names only."""
    out = written(tmp_path / "out")
    marker = json.loads((out / MARKER).read_text())
    assert set(marker["sha256"]) == {"summary.json", "plots/a.png"}
    del marker["sha256"], marker["files_digest"]  # neither is in a marker written before them
    (out / MARKER).write_text(json.dumps(marker))
    assert foreign_files(out) == []
    # with no digest, only its time tells an edit: one after the marker file changed is the user's
    (out / "summary.json").write_text('{"edited": 1}')
    assert [f.split(" (")[0] for f in foreign_files(out)] == ["summary.json"]


def test_a_file_added_while_the_command_runs_is_not_lost(tmp_path):
    out = written(tmp_path / "out")
    with pytest.raises(InputError, match="late.txt"):
        with atomic_dir(out, force=True, command="fit-head") as tmp:
            (tmp / "summary.json").write_text("{}")
            (out / "late.txt").write_text("written by the user during the run")
    assert (out / "late.txt").read_text() == "written by the user during the run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_folder_another_command_wrote_is_refused(tmp_path):
    out = written(tmp_path / "out", command="compare")
    before = tree(out)
    with pytest.raises(InputError, match="laya-inspect compare`, not of fit-head"):
        written(out, command="fit-head")
    assert tree(out) == before


def test_a_marked_sub_folder_answers_for_its_own_files(tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    write_marker(out, "demo", files=["heads", "demo.json"])
    (out / "demo.json").write_text("{}")
    written(out / "heads")
    assert foreign_files(out) == []
    (out / "heads" / "x.txt").write_text("mine")
    (out / "stray.txt").write_text("mine")
    assert foreign_files(out) == ["heads/x.txt", "stray.txt"]


def test_the_tools_own_temporary_names_are_not_foreign(tmp_path):
    out = written(tmp_path / "out", files={"summary.json": "{}", "features.h5": "a cache", "heads/x.json": "{}"})
    (out / "features.h5.partial").write_bytes(b"\x89HDF\r\n\x1a\n a killed extract")  # HDF5, as extract's is
    (out / ".heads.lock").write_bytes(lock_text(123))
    (out / ".heads.tmp-123").mkdir()
    assert foreign_files(out) == []
    # QA: any *.partial counted as the tool's, so --force removed a user's notes.partial with the folder
    (out / "notes.partial").write_text("mine")
    assert foreign_files(out) == ["notes.partial"]


def test_a_users_file_named_like_a_lock_is_not_taken_for_one(tmp_path):
    """Audit: any `.NAME.lock` in an output counted as a lock the tool left, so `--force` deleted a
    user's `.budget.lock` with the folder. A lock holds its own line: anything else there is the user's."""
    out = written(tmp_path / "out", files={"summary.json": "{}", "heads/x.json": "{}"})
    (out / ".heads.lock").write_bytes(lock_text(4242))  # a killed run's lock of heads/ (listed): the tool's
    assert foreign_files(out) == []
    (out / ".budget.lock").write_text("held by the spreadsheet on the lab machine\n")
    (out / ".plots.lock").symlink_to(tmp_path)
    assert foreign_files(out) == [".budget.lock", ".plots.lock"]
    before = tree(out)
    with pytest.raises(InputError, match=r"did not write \(\.budget\.lock, \.plots\.lock\)"):
        written(out)  # --force
    assert tree(out) == before


def test_a_users_draft_named_after_a_file_of_the_output_is_not_a_partial_cache(tmp_path):
    """Audit: `FILE.partial` of any file the marker lists counted as extract's interrupted cache, so
    `fit-head --force` deleted a user's summary.json.partial (a draft) with the folder. Only an HDF5
    file (or an empty one, killed as it was made) is extract's partial cache now."""
    out = written(tmp_path / "out", files={"summary.json": "{}", "features.h5": "a cache"})
    (out / "summary.json.partial").write_text("my draft of the summary")
    (out / "features.h5.partial").write_text("my notes on the cache")
    assert foreign_files(out) == ["features.h5.partial", "summary.json.partial"]
    before = tree(out)
    with pytest.raises(InputError, match="did not write"):
        written(out)  # --force
    assert tree(out) == before
    for name in ("summary.json.partial", "features.h5.partial"):
        (out / name).unlink()
    (out / "features.h5.partial").write_bytes(b"")  # killed as it was created: nothing to lose
    assert foreign_files(out) == []


def test_an_unreadable_marker_marks_nothing(tmp_path):
    out = written(tmp_path / "out")
    (out / MARKER).write_text("{not json")
    assert read_marker(out) is None
    assert foreign_files(out) == [MARKER, "plots/", "summary.json"]


def test_a_body_that_fails_leaves_the_earlier_folder(tmp_path):
    out = written(tmp_path / "out")
    before = tree(out)
    with pytest.raises(RuntimeError):
        with atomic_dir(out, force=True, command="fit-head") as tmp:
            (tmp / "half.json").write_text("{")
            raise RuntimeError("killed half-way")
    assert tree(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("where", ["cwd", "parent", "home", "above home"])
def test_the_current_and_home_folders_and_those_above_are_refused(tmp_path, monkeypatch, where):
    home, cwd = tmp_path / "home" / "me", tmp_path / "work" / "here"
    for d in (home, cwd):
        d.mkdir(parents=True)
        (d / "keep.txt").write_text("mine")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    out = {"cwd": Path("."), "parent": Path(".."), "home": home, "above home": home.parent}[where]
    before = tree(tmp_path)
    with pytest.raises(InputError, match="folder; laya-inspect replaces its --out whole"):
        written(out)
    assert tree(tmp_path) == before


def test_the_current_folder_refused_to_demo_says_what_demo_does_with_its_out(tmp_path, monkeypatch):
    """Audit: demo's `--out .` was refused as "replaces its --out whole", which demo does not do: it
    writes its files and its marker inside the folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(InputError) as e:
        check_out(Path("."), force=False, command="demo", renamed=False)
    said = str(e.value)
    assert said.startswith("--out . is the current folder; laya-inspect demo marks its --out as its own output")
    assert "whole" not in said and "--out results" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_a_failed_write_names_the_path_asked_for_not_the_hidden_temporary_one(tmp_path):
    """Audit: a full disk during fit-head said "could not write OUT/.heads.tmp-PID/last/.seed_1.tmp-PID/
    summary.json.tmp-PID", three temporary names already removed when the user reads them."""
    import errno

    from laya_inspect.errors import WriteError
    from laya_inspect.files import write_with

    def full(path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    out = tmp_path / "heads"
    with pytest.raises(WriteError) as e:
        with atomic_dir(out, command="fit-head") as tmp:
            with atomic_dir(tmp / "last" / "seed_1", command="laya-inspect", lock=False) as inner:
                write_with(inner / "summary.json", full)
    assert str(e.value) == (
        f"could not write {out / 'last' / 'seed_1' / 'summary.json'}: {os.strerror(errno.ENOSPC)} (errno 28); "
        f"--out {out} was left as it was"
    )
    assert list(tmp_path.iterdir()) == []


def test_an_out_that_holds_is_or_lies_inside_an_input_is_refused(tmp_path):
    heads = written(tmp_path / "heads")
    cache = tmp_path / "data" / "features.h5"
    cache.parent.mkdir()
    cache.write_bytes(b"cache")
    with pytest.raises(InputError, match="holds this run's input"):
        check_out(tmp_path / "data", force=True, command="compare", inputs=[cache, heads])
    with pytest.raises(InputError, match="is this run's input"):
        check_out(heads, force=True, command="fit-head", inputs=[heads])
    with pytest.raises(InputError, match="lies inside this run's input"):
        check_out(heads / "cmp", force=True, command="compare", inputs=[cache, heads])
    with pytest.raises(InputError, match="is this run's input"):
        check_out(cache, force=True, command="explain", kind="file", inputs=[cache])
    assert check_out(tmp_path / "cmp", force=True, command="compare", inputs=[cache, heads, None]) == tmp_path / "cmp"


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_an_out_under_a_file_is_refused(tmp_path, kind):
    (tmp_path / "notes.txt").write_text("mine")
    for out in (tmp_path / "notes.txt" / "results", tmp_path / "notes.txt" / "a" / "b"):
        with pytest.raises(InputError, match=r"lies under .*notes\.txt, which is a file, not a folder"):
            check_out(out, force=True, command="compare", kind=kind)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert check_out(tmp_path / "new" / "results", force=False, command="compare", kind=kind)  # a folder to make


def test_a_mount_point_out_is_refused_before_any_work(tmp_path, monkeypatch):
    """A mount point as --out failed with EBUSY at the final rename, after all the work."""
    mounted = tmp_path / "disk"
    mounted.mkdir()
    real_ismount = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: Path(p) == mounted or real_ismount(p))
    with pytest.raises(InputError, match=r"is a mount point; .* give a folder inside it, e\.g\. --out .*disk/results"):
        check_out(mounted, force=True, command="fit-head")
    check_out(mounted / "results", force=False, command="fit-head")  # a folder inside it is fine


def test_a_symlinked_out_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    before = users_folder(target)
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(InputError, match="is a symlink"):
        written(tmp_path / "link")
    assert tree(target) == before and (tmp_path / "link").is_symlink()


def test_fit_head_force_replaces_its_own_earlier_output_and_nothing_else(digits_cache, tmp_path):
    out = tmp_path / "heads"
    fit = ["fit-head", str(digits_cache), "--seeds", "1", "--epochs", "1", "--out", str(out), "--workers", "1"]
    r = runner.invoke(app, [*fit, "--head", "scalarmix"], env=ENV)
    assert r.exit_code == 0, r.output
    assert read_marker(out)["command"] == "fit-head" and (out / "scalarmix" / "seed_0").is_dir()
    r = runner.invoke(app, [*fit, "--head", "last", "--force"], env=ENV)
    assert r.exit_code == 0, r.output
    assert not (out / "scalarmix").exists() and (out / "last" / "seed_0" / "config.json").is_file()
    (out / "notes.txt").write_text("mine")
    before = tree(out)
    r = runner.invoke(app, [*fit, "--head", "last", "--force"], env=ENV)
    assert r.exit_code == 1 and "notes.txt" in r.output and "Traceback" not in r.output
    assert tree(out) == before
    assert sorted(os.listdir(tmp_path)) == ["heads"]


# A single file carries no marker: `train --force` and `extract --overwrite` read what the file is
# (a zoo checkpoint, a laya-inspect cache) and replace nothing else, whatever its name.
TRAIN = ["train", "--model", "zoo:mlp", "--data", "digits", "--limit", "100", "--epochs", "1", "--device", "cpu"]
EXTRACT = ["extract", "--model", "zoo:mlp", "--random-init", "--data", "digits", "--limit", "50", "--device", "cpu"]


class _RunsCode:
    """A pickle that would create a file when unpickled: reading a user's file must not run it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def _users_files(tmp_path: Path) -> dict[str, Path]:
    import h5py
    import torch

    files = {"text": tmp_path / "notes.pt", "state_dict": tmp_path / "mine.pt", "pickle": tmp_path / "obj.pt"}
    files["text"].write_text("my notes")
    torch.save({"w": torch.zeros(2)}, files["state_dict"])
    torch.save(_RunsCode(tmp_path / "ran"), files["pickle"])
    files["hdf5"] = tmp_path / "mine.h5"
    with h5py.File(files["hdf5"], "w") as f:
        f.attrs["experiment"] = "mine"
        f["x"] = [1.0, 2.0]
    files["h5_text"] = tmp_path / "notes.h5"
    files["h5_text"].write_text("my notes")
    return files


@pytest.mark.parametrize("kind", ["text", "state_dict", "pickle", "hdf5"])
def test_train_force_never_replaces_a_users_file(tmp_path, kind):
    user = _users_files(tmp_path)[kind]
    before = user.read_bytes()
    r = runner.invoke(app, [*TRAIN, "--out", str(user), "--force"], env=ENV)
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    line = " ".join(r.output.split())
    assert f"--out {user} is not a checkpoint laya-inspect wrote" in line and "--force replaces only" in line
    assert user.read_bytes() == before and not (tmp_path / "ran").exists()
    assert not user.with_name(user.stem + ".metrics.json").exists()


def test_train_force_replaces_its_own_checkpoint_and_never_a_users_metrics(tmp_path):
    out = tmp_path / "model.pt"
    assert runner.invoke(app, [*TRAIN, "--out", str(out)], env=ENV).exit_code == 0
    first = out.read_bytes()
    r = runner.invoke(app, [*TRAIN, "--seed", "1", "--out", str(out), "--force"], env=ENV)
    assert r.exit_code == 0, r.output
    assert out.read_bytes() != first
    other = tmp_path / "other.pt"
    (tmp_path / "other.metrics.json").write_text('{"mine": 1}')
    r = runner.invoke(app, [*TRAIN, "--out", str(other)], env=ENV)
    assert r.exit_code == 1 and "other.metrics.json, which is not a metrics file laya-inspect train wrote" in " ".join(
        r.output.split()
    )
    assert not other.exists() and (tmp_path / "other.metrics.json").read_text() == '{"mine": 1}'


def test_a_file_saved_at_trains_out_during_training_is_not_replaced(tmp_path):
    """QA (race): train checked its --out only before training (the lock keeps out other runs, not a
    user's save); a checkpoint saved there while it trained was replaced at its end, --force or not."""
    from laya_inspect.training.joint import JointConfig, train_joint

    out = tmp_path / "model.pt"
    config = JointConfig(model="zoo:mlp", data="digits", limit=100, epochs=1, device="cpu")

    def users_save(event: dict) -> None:  # the user's own torch.save while the run trains
        if not out.exists():
            out.write_bytes(b"the user's own checkpoint")

    for overwrite in (False, True):
        with pytest.raises(InputError, match="exists; pass --force" if not overwrite else "not a checkpoint"):
            train_joint(config, out=out, progress=users_save, overwrite=overwrite)
        assert out.read_bytes() == b"the user's own checkpoint"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt"]
        out.unlink()


def test_train_force_on_a_full_disk_names_the_metrics_file_when_that_is_the_one_that_failed(tmp_path, monkeypatch):
    """QA: writing the metrics file's temporary copy failed (disk full) and the error named the
    checkpoint; the old checkpoint and metrics file stay as they were, with no temporary file."""
    import errno

    out = tmp_path / "model.pt"
    assert runner.invoke(app, [*TRAIN, "--out", str(out)], env=ENV).exit_code == 0
    before = tree(tmp_path)
    real = Path.write_bytes

    def full_disk(self, data):
        if self.name.startswith("model.metrics.json.tmp-"):
            with open(self, "wb"):  # created, then the write fails as write() does: naming no file
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    r = runner.invoke(app, [*TRAIN, "--seed", "1", "--out", str(out), "--force"], env=ENV)
    monkeypatch.setattr(Path, "write_bytes", real)
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    line = " ".join(r.output.split())
    metrics = tmp_path / "model.metrics.json"
    assert f"error: could not write {metrics}: No space left on device (errno 28)" in line, line
    assert tree(tmp_path) == before


def test_atomic_paths_names_the_file_whose_sync_failed(tmp_path, monkeypatch):
    """fsync() names no file either: the error names the file being synced, not the first one."""
    import errno

    from laya_inspect.errors import WriteError
    from laya_inspect.files import atomic_paths

    first, second = tmp_path / "a.pt", tmp_path / "a.metrics.json"
    synced = []

    def fsync(fd):
        synced.append(fd)
        if len(synced) == 2:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(WriteError) as e:
        with atomic_paths(first, second) as (tmp, tmp_second):
            tmp.write_bytes(b"checkpoint")
            tmp_second.write_bytes(b"{}")
    assert str(e.value) == f"could not write {second}: {os.strerror(errno.EIO)} (errno {errno.EIO})"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["h5_text", "hdf5", "state_dict"])
def test_extract_overwrite_never_replaces_a_users_file(tmp_path, kind):
    user = _users_files(tmp_path)[kind]
    before, names = user.read_bytes(), sorted(os.listdir(tmp_path))
    r = runner.invoke(app, [*EXTRACT, "--out", str(user), "--overwrite"], env=ENV)
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    line = " ".join(r.output.split())
    assert f"--out {user} is" in line and "not a cache laya-inspect wrote" in line
    assert "--overwrite replaces only a file laya-inspect extract wrote" in line
    assert user.read_bytes() == before and sorted(os.listdir(tmp_path)) == names  # no partial file or lock left


def test_extract_overwrite_never_replaces_a_cache_the_user_saved_data_into(tmp_path):
    """Audit: a cache extract wrote, to which the user had added a dataset of their own (annotations
    beside the rows), passed as extract's by its attributes alone and was replaced by --overwrite."""
    import h5py
    import numpy as np

    out = tmp_path / "features.h5"
    assert runner.invoke(app, [*EXTRACT, "--out", str(out)], env=ENV).exit_code == 0
    assert runner.invoke(app, [*EXTRACT, "--out", str(out), "--overwrite"], env=ENV).exit_code == 0  # as written
    with h5py.File(out, "a") as f:
        f["notes"] = np.arange(3)
        f["train/my_labels"] = np.arange(3)
    before = out.read_bytes()
    r = runner.invoke(app, [*EXTRACT, "--out", str(out), "--overwrite"], env=ENV)
    line = " ".join(r.output.split())
    assert r.exit_code == 1 and "holds what it does not write (/notes, /train/my_labels: added since)" in line, line
    assert out.read_bytes() == before


@pytest.mark.parametrize("edit", ["root_attribute", "label_value"])
def test_extract_overwrite_never_replaces_a_cache_edited_in_place(tmp_path, edit):
    """Audit: an attribute added at the cache's root, or a label changed in place, adds no group or
    dataset, and --overwrite replaced the cache, the edit lost, with exit 0."""
    import h5py

    out = tmp_path / "features.h5"
    assert runner.invoke(app, [*EXTRACT, "--out", str(out)], env=ENV).exit_code == 0
    assert runner.invoke(app, [*EXTRACT, "--out", str(out), "--overwrite"], env=ENV).exit_code == 0  # as written
    with h5py.File(out, "a") as f:
        if edit == "root_attribute":
            f.attrs["note"] = "checked by hand"
        else:
            f["train/labels"][0] = int(f["train/labels"][0]) + 1
    before = out.read_bytes()
    r = runner.invoke(app, [*EXTRACT, "--out", str(out), "--overwrite"], env=ENV)
    line = " ".join(r.output.split())
    assert r.exit_code == 1 and f"is not as laya-inspect wrote it: {out} (changed since it was written)" in line, line
    assert out.read_bytes() == before


def test_extract_overwrite_replaces_an_earlier_versions_cache_with_a_warning_and_records_the_new_one(tmp_path):
    """A cache written before extract recorded its caches has no record: --overwrite still replaces
    it (added groups and datasets still refused), says what it could not check, and records the new one."""
    import h5py

    from laya_inspect.cache.schema import decode_attr
    from laya_inspect.out_dir import read_record, record_of, unproven_file

    out = tmp_path / "features.h5"
    assert runner.invoke(app, [*EXTRACT, "--out", str(out)], env=ENV).exit_code == 0
    assert read_record(out) is not None and unproven_file(out) is None  # recorded as renamed into place
    record_of(out).unlink()  # as an earlier version left it
    r = runner.invoke(app, [*EXTRACT, "--out", str(out), "--overwrite"], env=ENV)
    assert r.exit_code == 0, r.output
    assert "an attribute or value edited inside it could not be seen" in " ".join(r.output.split()), r.output
    with h5py.File(out, "r") as f:  # the new cache says what its run replaced
        assert any("could not be seen" in w for w in decode_attr(f.attrs["overwrite_notes"]))
    assert read_record(out) is not None and unproven_file(out) is None


def test_extract_overwrite_of_an_unrecorded_cache_says_so_at_the_end_and_not_as_the_new_caches_warning(tmp_path):
    """QA: the note that --overwrite replaced a cache with no record reached the user only as a Python
    warning, not in extract's end-of-run warnings; and it was stored in the new cache's `warnings`,
    which fit-head, compare and report print again as a warning about this cache's data."""
    from laya_inspect.cache.extract import extract_features
    from laya_inspect.cache.extract_config import ExtractConfig
    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.head_dir.match import cache_warnings
    from laya_inspect.out_dir import record_of

    out = tmp_path / "features.h5"
    assert runner.invoke(app, [*EXTRACT, "--out", str(out)], env=ENV).exit_code == 0
    record_of(out).unlink()  # as an earlier version left it
    r = runner.invoke(app, [*EXTRACT, "--out", str(out), "--overwrite"], env=ENV)
    assert r.exit_code == 0, r.output
    line = " ".join(r.output.split())
    assert f"warning: {out} had no record beside it" in line, line  # in the end-of-run list
    assert line.count(f"{out} had no record beside it") == 1, line  # and only there
    with FeatureStore(out) as store:
        assert not [w for w in cache_warnings(store) if "record" in w]  # not a warning about this cache's data
        assert any("could not be seen" in n for n in store.attrs["overwrite_notes"])
    config = ExtractConfig(
        model="zoo:mlp", random_init=True, data="digits", limit=50, device="cpu", out=str(out), overwrite=True
    )
    record_of(out).unlink()
    result = extract_features(config)
    assert any(f"{out} had no record beside it" in w for w in result.warnings)  # the Python API's list too
    extract_features(config)  # recorded now: nothing to say
    with FeatureStore(out) as store:
        assert "overwrite_notes" not in store.attrs


def test_a_file_saved_at_extracts_out_while_it_runs_is_not_replaced_and_the_rows_are_kept(tmp_path):
    """QA (race): extract checked its --out only before its work; a file saved there while the rows
    were written was replaced by the finished cache, --overwrite or not."""
    from laya_inspect.cache.extract import ExtractConfig, extract_features
    from laya_inspect.cache.store import FeatureStore

    out = tmp_path / "features.h5"
    config = ExtractConfig(model="zoo:mlp", data="digits", random_init=True, limit=50, device="cpu", out=str(out))

    def users_save(event: dict) -> None:
        if not out.exists():
            out.write_bytes(b"the user's own file")

    for overwrite in (False, True):
        with pytest.raises(InputError, match="saved there while the cache was written"):
            extract_features(dataclasses.replace(config, overwrite=overwrite), progress=users_save)
        assert out.read_bytes() == b"the user's own file"
        out.unlink()
    extract_features(config)  # the user moved their file away: the kept rows finish the cache
    with FeatureStore(out) as store:
        assert store.n("train") == store.n("test") == 50
    # the cache and its record (what the next --overwrite checks): no partial file or lock left
    assert sorted(p.name for p in tmp_path.iterdir()) == [".features.h5.laya-inspect.json", "features.h5"]


def test_extract_overwrite_replaces_its_own_cache(tmp_path):
    import h5py

    out = tmp_path / "f.h5"
    assert runner.invoke(app, [*EXTRACT, "--out", str(out)], env=ENV).exit_code == 0
    r = runner.invoke(app, [*EXTRACT, "--limit", "40", "--out", str(out), "--overwrite"], env=ENV)
    assert r.exit_code == 0, r.output
    with h5py.File(out, "r") as f:
        assert f["test"].attrs["n"] == 40


def test_extract_overwrite_and_train_force_leave_a_file_another_output_lists(tmp_path, monkeypatch):
    """Audit: `extract --overwrite --out PLANTED/features.h5` replaced the cache a `check planted`
    output lists (its verdict then stood beside another cache, and its next --force refused the file
    as changed). A file another output lists is that output's now, as explain already said; a demo's
    backbone and cache stay replaceable, since the demo prints those steps to be rerun by hand."""
    monkeypatch.chdir(tmp_path)
    planted, demo = tmp_path / "planted", tmp_path / "demo"
    for folder in (planted, demo):
        assert runner.invoke(app, [*EXTRACT, "--out", str(folder / "features.h5")], env=ENV).exit_code == 0
    write_marker(planted, "check planted")
    write_marker(demo, "demo", files=["features.h5", "backbone.pt"])
    before = tree(planted)
    r = runner.invoke(app, [*EXTRACT, "--limit", "40", "--out", str(planted / "features.h5"), "--overwrite"], env=ENV)
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    line = " ".join(r.output.split())
    assert f"--out {planted / 'features.h5'} is part of the output of `laya-inspect check planted` in planted" in line
    assert "--overwrite replaces only a file laya-inspect extract wrote" in line
    assert tree(planted) == before
    r = runner.invoke(app, [*EXTRACT, "--limit", "40", "--out", str(demo / "features.h5"), "--overwrite"], env=ENV)
    assert r.exit_code == 0, r.output
    assert runner.invoke(app, [*TRAIN, "--out", str(demo / "backbone.pt")], env=ENV).exit_code == 0
    assert (
        runner.invoke(app, [*TRAIN, "--seed", "1", "--out", str(demo / "backbone.pt"), "--force"], env=ENV).exit_code
        == 0
    )


def test_the_notebook_extract_overwrite_never_replaces_a_users_file(tmp_path):
    import torch

    from laya_inspect.cache.extract import extract_features

    user = _users_files(tmp_path)["hdf5"]
    before = user.read_bytes()
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    batches = [(torch.randn(8, 4), torch.arange(8) % 2)]
    with pytest.raises(InputError, match="not a cache laya-inspect wrote"):
        extract_features(net, batches, layers=["0"], out=user, overwrite=True)
    assert user.read_bytes() == before


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_extract_never_deletes_or_writes_through_a_partial_file_it_did_not_write(tmp_path, overwrite):
    """`FILE.partial` is where extract resumes from: a user's file of that name, or a link there to a
    cache, is refused by name before any work, with or without --overwrite, and left as it is."""
    precious = tmp_path / "precious.h5"
    assert runner.invoke(app, [*EXTRACT, "--out", str(precious)], env=ENV).exit_code == 0
    (tmp_path / "out.h5.partial").write_text("notes")
    (tmp_path / "o2.h5.partial").symlink_to(precious.name)
    before = tree(tmp_path)
    for out, message in (("out.h5", "is not an HDF5 file"), ("o2.h5", "is a symlink (to precious.h5)")):
        r = runner.invoke(app, [*EXTRACT, "--out", str(tmp_path / out), *overwrite], env=ENV)
        assert r.exit_code == 1 and "Traceback" not in r.output, r.output
        line = " ".join(r.output.split())
        assert f"{tmp_path / out}.partial {message}" in line and "move it away yourself" in line, line
    assert tree(tmp_path) == before and (tmp_path / "o2.h5.partial").is_symlink()
    listed = [".precious.h5.laya-inspect.json", "o2.h5.partial", "out.h5.partial", "precious.h5"]  # and its record
    assert sorted(os.listdir(tmp_path)) == listed


@pytest.mark.parametrize(
    "command,example",
    [
        (["train", "--model", "zoo:mlp", "--data", "csv:absent.csv"], "model.pt"),
        (["extract", "--model", "zoo:mlp", "--weights", "absent.pt", "--data", "digits"], "features.h5"),
        (["explain", "absent-head", "--cache", "absent.h5", "--row", "0"], "figure.png"),
    ],
    ids=["train", "extract", "explain"],
)
@pytest.mark.parametrize("spelling", [["--out", "newdir/"], ["-o", "newdir/"], ["--out=newdir/"]])
def test_a_file_out_with_a_trailing_slash_is_refused_as_a_folder(tmp_path, monkeypatch, command, example, spelling):
    """Path("newdir/") is Path("newdir"): without this check a FILE named newdir was written where the
    user asked for a folder. Every command whose --out is one file refuses it before any work."""
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, [command[0], *spelling, *command[1:]], env=ENV)
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert f"error: --out newdir/ names a folder; give a file path such as newdir/{example}" in " ".join(
        r.output.split()
    )
    assert sorted(os.listdir(tmp_path)) == []


def _gone_pids(n: int = 1) -> list[int]:
    """``n`` PIDs that no process has now (counted down from the largest a process can have)."""
    found: list[int] = []
    for pid in range(2**22, 1, -1):  # Linux's PID_MAX_LIMIT
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            found.append(pid)
            if len(found) == n:
                return found
        except OSError:
            pass
    raise AssertionError("no free PID")


def test_force_never_deletes_or_moves_a_users_folder_named_like_a_killed_runs_old_output(tmp_path):
    """Audit: `fit-head --out fh1 --force` deleted the user's `.fh1.old-backup/` beside it (any
    `.OUT.old-*` was taken for a killed run's previous output), and a run on a new --out moved the
    user's `.newout.old-mine/` to `newout/`. Only `.OUT.old-PID` of a process that is gone is the tool's."""
    out = written(tmp_path / "fh1")
    backups = {}
    for name in (".fh1.old-backup", ".fh1.old-20240105", ".newout.old-mine"):
        backups[name] = users_folder(tmp_path / name)
    with atomic_dir(out, force=True, command="fit-head") as tmp:
        (tmp / "summary.json").write_text("{}")
    with atomic_dir(tmp_path / "newout", command="fit-head") as tmp:
        (tmp / "summary.json").write_text("{}")
    for name, before in backups.items():
        assert tree(tmp_path / name) == before, name
    assert foreign_files(tmp_path / "newout") == []


def test_a_killed_runs_old_output_is_still_put_back_or_removed(tmp_path):
    (pid,) = _gone_pids()
    old = written(tmp_path / f".out.old-{pid}", files={"old.json": "1"})
    before = tree(old)
    with atomic_dir(tmp_path / "other", command="fit-head") as tmp:  # another output's: left alone
        (tmp / "a").write_text("x")
    assert tree(old) == before
    with atomic_dir(tmp_path / "out", force=True, command="fit-head") as tmp:
        # the killed run's previous output was put back before the swap replaced it
        assert (tmp_path / "out" / "old.json").read_text() == "1"
        (tmp / "new.json").write_text("2")
    assert not old.exists() and (tmp_path / "out" / "new.json").read_text() == "2"


def test_a_killed_runs_old_output_whose_pid_was_reused_is_still_put_back(tmp_path):
    """A run killed between its two renames left `.out.old-PID`; by the next run another process has
    that PID (the parent of this test here). Only a holder of the output's lock swaps, so the folder
    is the killed run's: put back, not left hidden beside the output for good."""
    pid = os.getppid()
    old = written(tmp_path / f".out.old-{pid}", files={"old.json": "1"})
    with atomic_dir(tmp_path / "out", force=True, command="fit-head") as tmp:
        assert (tmp_path / "out" / "old.json").read_text() == "1"  # put back before the swap
        (tmp / "new.json").write_text("2")
    assert not old.exists() and (tmp_path / "out" / "new.json").read_text() == "2"


def test_stale_temporaries_are_only_the_tools_names_and_kinds(tmp_path):
    """Audit: a user's `results.tmp-20240105/` (a folder, dated) beside --out results was removed as a
    killed run's temporary. atomic_path's temporaries are files, atomic_dir's hidden folders."""
    from laya_inspect.files import remove_stale_temps, temp_file_name

    a, b, c, d, e = _gone_pids(5)
    users = {name: users_folder(tmp_path / name) for name in (f"results.tmp-{a}", "results.tmp-20240105")}
    (tmp_path / f".results.tmp-{a}.txt").write_text("mine")
    (tmp_path / f".results.tmp-{b}").write_text("a file, not the tool's folder")
    os.symlink(tmp_path / "results.tmp-20240105", tmp_path / f".results.tmp-{c}")
    (tmp_path / f".results.tmp-{d}").mkdir()  # a killed atomic_dir's
    (tmp_path / temp_file_name("results", e)).write_text("half a file")  # a killed atomic_path's
    removed = {p.name for p in remove_stale_temps(tmp_path / "results")}
    assert removed == {f".results.tmp-{d}", temp_file_name("results", e)}
    for name, before in users.items():
        assert tree(tmp_path / name) == before, name
    assert (tmp_path / f".results.tmp-{b}").read_text() == "a file, not the tool's folder"
    assert (tmp_path / f".results.tmp-{c}").is_symlink() and (tmp_path / f".results.tmp-{a}.txt").exists()


def test_a_dated_name_inside_an_output_is_the_users(tmp_path):
    """Audit: `notes.tmp-20240105` inside an earlier output counted as the tool's temporary file, so
    --force deleted it with the folder; no process has such a PID."""
    out = written(tmp_path / "out")
    (out / "notes.tmp-20240105").write_text("mine")
    (out / ".x.old-99999999").mkdir()
    assert foreign_files(out) == [".x.old-99999999/", "notes.tmp-20240105"]
    with pytest.raises(InputError, match="notes.tmp-20240105"):
        check_out(out, force=True, command="fit-head")


def test_the_lock_never_empties_or_removes_a_users_file_or_writes_through_a_link(tmp_path):
    """Audit: the lock `.OUT.lock` was opened with O_CREAT, truncated and written with the PID, then
    removed: a user's `.results.lock` beside `--out results` was lost, and a symlink there had the
    file it points to overwritten with the PID. Both are refused now, untouched."""
    from laya_inspect.files import output_lock

    (tmp_path / ".results.lock").write_text("my notes")
    with pytest.raises(InputError, match="not a lock file"):
        with atomic_dir(tmp_path / "results", command="fit-head"):
            pass
    assert (tmp_path / ".results.lock").read_text() == "my notes" and not (tmp_path / "results").exists()
    (tmp_path / "target.txt").write_text("the user's")
    os.symlink(tmp_path / "target.txt", tmp_path / ".other.lock")
    with pytest.raises(InputError, match="symlink"):
        with output_lock(tmp_path / "other"):
            pass
    assert (tmp_path / "target.txt").read_text() == "the user's" and (tmp_path / ".other.lock").is_symlink()
    (tmp_path / ".killed.lock").write_bytes(lock_text(12345))  # a killed run's lock: taken over, then removed
    with output_lock(tmp_path / "killed"):
        assert (tmp_path / ".killed.lock").read_bytes() == lock_text()
    assert not (tmp_path / ".killed.lock").exists()


def test_a_folder_inside_another_output_is_named_by_that_output(tmp_path, monkeypatch):
    """Audit: `compare --out demo/heads/concat --force` said the fit-head folder held "files
    laya-inspect did not write (seed_0/)", and `--out demo/heads/concat/seed_0` the output "of
    `laya-inspect laya-inspect`": both name the output they are part of now."""
    monkeypatch.chdir(tmp_path)
    with atomic_dir(tmp_path / "heads", command="fit-head") as tmp:
        with atomic_dir(tmp / "laya" / "seed_0", force=True, lock=False, flag="head directory") as head:
            (head / "config.json").write_text("{}")
    before = tree(tmp_path / "heads")
    for sub in ("heads/laya", "heads/laya/seed_0"):
        with pytest.raises(InputError) as e:
            check_out(tmp_path / sub, force=True, command="compare")
        said = str(e.value)
        assert "is part of the output of `laya-inspect fit-head` in heads" in said, said
        assert "did not write" not in said and "laya-inspect laya-inspect" not in said
    assert tree(tmp_path / "heads") == before


@pytest.mark.parametrize(
    "command", [["fit-head"], ["train"], ["export-head"], ["compare"], ["prune"], ["early-exit"], ["diagnose"]]
)
def test_force_help_says_it_replaces_only_what_the_tool_wrote(command):
    """Audit: `fit-head --help` said --force replaces --out "whole (every file in it)", `train --help`
    "overwrite --out if it exists": neither is what --force does (only laya-inspect's own output)."""
    r = runner.invoke(app, [*command, "--help"], env=ENV)
    line = " ".join(r.output.split("--force", 1)[1].split("│")[0].split())
    assert "wrote" in line, line
    assert "every file in it" not in r.output and "overwrite --out if it exists" not in r.output


def test_demo_writes_into_a_mount_point(tmp_path, monkeypatch):
    """demo writes its files inside --out (no rename of the folder), so a mount point is no reason to
    refuse it, as it was not before the mount-point check."""
    from laya_inspect.demo import DemoConfig, plan_demo

    mounted = tmp_path / "disk"
    mounted.mkdir()
    real_ismount = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: Path(p) == mounted or real_ismount(p))
    assert plan_demo(DemoConfig(quick=True, device="cpu", out=str(mounted))).out_dir == mounted


def test_a_single_file_rewritten_takes_away_what_a_killed_write_of_it_left(tmp_path):
    """QA (kill fuzz): `explain --out row.png --force` and `report DIR --html`, killed while writing,
    left `row.png.tmp-PID` beside the figure and `report.html.tmp-PID` inside DIR, and no later run
    removed them (only train did, for its checkpoint). Every atomic write of a file now removes its
    own name's temporaries of processes that are gone, and nothing else."""
    from laya_inspect.files import temp_file_name, write_text, write_with

    gone, other = _gone_pids(2)
    page, fig = tmp_path / "report.html", tmp_path / "row.png"
    (tmp_path / temp_file_name("report.html", gone)).write_text("<html>half a page")
    (tmp_path / temp_file_name("row.png", gone)).write_bytes(b"\x89PNG half")
    (tmp_path / f"row.png.tmp-{os.getppid()}").write_text("a running process's")  # not ours to take
    (tmp_path / "report.html.tmp-20240105").write_text("mine")  # no PID: a date
    (tmp_path / f"notes.txt.tmp-{other}").write_text("another file's, left alone")
    write_text(page, "<html></html>")
    write_with(fig, lambda p: p.write_bytes(b"\x89PNG"))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["report.html", "row.png", f"row.png.tmp-{os.getppid()}", "report.html.tmp-20240105", f"notes.txt.tmp-{other}"]
    )
    assert (tmp_path / "report.html.tmp-20240105").read_text() == "mine"


def test_a_users_file_under_a_plain_temporary_name_survives_a_write_of_its_output(tmp_path):
    """Audit: a user's `summary.json.tmp-123` or `features.h5.tmp-123` (123 no running process) was
    deleted by the next run writing summary.json or features.h5, without --force, on its name alone:
    the bytes of a temporary file are the writer's and prove nothing. The tool's temporary names now
    carry a check value of the name and the PID; a plain one is left and named in a warning."""
    import h5py

    from laya_inspect.files import atomic_path, temp_file_name, write_json

    gone, killed = _gone_pids(2)
    users = {tmp_path / f"summary.json.tmp-{gone}": b"my draft", tmp_path / f"features.h5.tmp-{gone}": b"my cache"}
    for path, data in users.items():
        path.write_bytes(data)
    (tmp_path / temp_file_name("features.h5", killed)).write_bytes(b"\x89HDF half")  # the tool's, killed
    with pytest.warns(UserWarning, match=rf"summary\.json\.tmp-{gone} is named like .* left as it is"):
        write_json(tmp_path / "summary.json", {"a": 1})
    with pytest.warns(UserWarning, match=rf"features\.h5\.tmp-{gone} is named like"):
        with atomic_path(tmp_path / "features.h5") as tmp:
            with h5py.File(tmp, "w") as f:
                f["x"] = [1, 2, 3]
    for path, data in users.items():
        assert path.read_bytes() == data
    kept = sorted(["summary.json", "features.h5", *(p.name for p in users)])
    assert sorted(p.name for p in tmp_path.iterdir()) == kept


def test_a_users_plain_temporary_name_inside_an_output_stops_force(tmp_path):
    """Audit: `summary.json.tmp-99999` inside an output whose marker lists summary.json passed as a killed
    rewrite of it, and --force deleted it; only a name with its check value is the tool's now."""
    from laya_inspect.files import temp_file_name

    with atomic_dir(tmp_path / "out", command="compare") as tmp:
        (tmp / "summary.json").write_text("[]")
    out = tmp_path / "out"
    (out / "summary.json.tmp-99999").write_text("mine")
    (out / temp_file_name("summary.json", 99998)).write_text("{half")  # a killed rewrite: the tool's
    assert foreign_files(out) == ["summary.json.tmp-99999"]
    with pytest.raises(InputError, match=r"summary\.json\.tmp-99999\); --force never deletes"):
        check_out(out, force=True, command="compare")
    assert (out / "summary.json.tmp-99999").read_text() == "mine"


def test_an_output_put_back_after_a_killed_swap_is_still_refused_without_force(tmp_path):
    """QA (kill fuzz): `export-head --force` killed between its two renames left the previous output as
    `.exp.old-PID`; the next `export-head --out exp` without --force put it back and then replaced it,
    so the earlier head was lost without --force. The put-back output is checked as any other is."""
    (pid,) = _gone_pids()
    old = written(tmp_path / f".out.old-{pid}", files={"old.json": "1"})
    ran = []
    with pytest.raises(InputError, match="--force"):
        with atomic_dir(tmp_path / "out", command="fit-head") as tmp:
            ran.append(tmp)
    assert ran == []  # refused before any work
    assert not old.exists() and (tmp_path / "out" / "old.json").read_text() == "1"
    assert foreign_files(tmp_path / "out") == []
    with atomic_dir(tmp_path / "out", force=True, command="fit-head") as tmp:  # with --force: replaced
        (tmp / "new.json").write_text("2")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [MARKER, "new.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_stopped_or_failed_write_leaves_no_empty_folder_it_created(tmp_path):
    """QA: a command stopped (Ctrl-C, SIGTERM) or failing before its output was in place, whose --out's
    folders did not exist, left them behind empty. The folders it created go with it where they are
    empty; once the output is in place, or beside a user's file, they stay."""
    from laya_inspect.files import atomic_path

    for name, write in (("folder", lambda out: atomic_dir(out)), ("file", lambda out: atomic_path(out))):
        with pytest.raises(KeyboardInterrupt):
            with write(tmp_path / name / "a" / "b" / "out"):
                raise KeyboardInterrupt
        assert not (tmp_path / name).exists(), name
    (tmp_path / "kept" / "a").mkdir(parents=True)
    (tmp_path / "kept" / "a" / "notes.txt").write_text("a user's file")
    with pytest.raises(KeyboardInterrupt):
        with atomic_dir(tmp_path / "kept" / "a" / "b" / "out"):
            raise KeyboardInterrupt
    assert sorted(p.name for p in (tmp_path / "kept" / "a").iterdir()) == ["notes.txt"]
    with atomic_dir(tmp_path / "done" / "a" / "out") as tmp:
        (tmp / "x.txt").write_text("x")
    assert (tmp_path / "done" / "a" / "out" / "x.txt").is_file()


def test_an_output_copied_in_during_a_run_without_force_is_not_replaced(tmp_path):
    """QA (race): a run on a new --out without --force, and while it ran the user copied an earlier
    output of the same command there (`cp -a old out`): at its end the run replaced that copy, as
    the check before the swap looked only for files the command did not write, not for --force."""
    import shutil

    shutil.copytree(written(tmp_path / "old", files={"first.json": "1"}), tmp_path / "keep")
    out = tmp_path / "out"
    with pytest.raises(InputError, match="pass --force"):
        with atomic_dir(out, command="fit-head") as tmp:
            (tmp / "second.json").write_text("2")
            shutil.copytree(tmp_path / "keep", out)
    assert (out / "first.json").read_text() == "1" and not (out / "second.json").exists()
    assert foreign_files(out) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["keep", "old", "out"]


def _large(tmp: Path, name: str, seed: int) -> bytes:
    """A file over the size the marker digests (compare's attributions.h5, a cache): its bytes."""
    from laya_inspect.out_dir import DIGEST_MAX_BYTES

    data = bytes([seed]) * (DIGEST_MAX_BYTES + 1024)
    (tmp / name).write_bytes(data)
    return data


def _clock_moves_past(path: Path) -> None:
    """Wait until a file written now gets another mtime than ``path``'s, as a user's later save does
    (a file system's timestamps may be as coarse as a kernel tick, or a second)."""
    probe = path.with_name(".probe")
    for _ in range(300):
        probe.write_bytes(b"")
        if probe.stat().st_mtime_ns != path.stat().st_mtime_ns:
            break
        time.sleep(0.01)
    probe.unlink()


def test_a_large_listed_file_the_user_replaced_or_edited_is_not_deleted_by_force(tmp_path):
    """QA: a file over 64 MiB has no digest in the marker, so --force deleted a user's own file saved
    under its listed name (attributions.h5), or the tool's file edited in place, with no word."""
    out = tmp_path / "out"
    with atomic_dir(out, command="compare") as tmp:
        _large(tmp, "attributions.h5", 1)
        (tmp / "summary.json").write_text("{}")
    assert foreign_files(out) == []
    with atomic_dir(out, force=True, command="compare") as tmp:  # the tool's own untouched file is replaced
        new = _large(tmp, "attributions.h5", 2)
    assert (out / "attributions.h5").read_bytes() == new
    _clock_moves_past(out / "attributions.h5")
    mine = _large(tmp_path, "mine.h5", 3)  # the same size, saved under the listed name
    os.replace(tmp_path / "mine.h5", out / "attributions.h5")
    refused = (
        r"did not write or that changed since it wrote them "
        r"\(attributions\.h5 \(changed since it was written, or copied"
    )
    with pytest.raises(InputError, match=refused):
        with atomic_dir(out, force=True, command="compare") as tmp:
            _large(tmp, "attributions.h5", 4)
    assert (out / "attributions.h5").read_bytes() == mine

    out = tmp_path / "out2"
    with atomic_dir(out, command="compare") as tmp:
        _large(tmp, "attributions.h5", 5)
    _clock_moves_past(out / "attributions.h5")
    with open(out / "attributions.h5", "r+b") as f:  # edited in place: same size, same inode
        f.seek(2 << 20)
        f.write(b"the user's edit")
    before = tree(out)
    with pytest.raises(InputError, match=refused):
        with atomic_dir(out, force=True, command="compare") as tmp:
            _large(tmp, "attributions.h5", 6)
    assert tree(out) == before


def test_a_refreshed_marker_vouches_for_a_large_file_rewritten_in_place_and_old_markers_keep_their_rule(tmp_path):
    """What refreshes digests (check planted's refresh_digests, report --html's redigest) records a
    large file it rewrote as the command's again; a marker written before sizes and times were recorded
    keeps its rule: a large listed file is not checked."""
    out = tmp_path / "out"
    with atomic_dir(out, command="compare") as tmp:
        _large(tmp, "attributions.h5", 1)
    _clock_moves_past(out / "attributions.h5")
    _large(out, "attributions.h5", 2)  # rewritten in place by the command itself
    assert foreign_files(out) != []
    redigest(out, ["attributions.h5"])
    assert foreign_files(out) == []
    marker = json.loads((out / MARKER).read_text())
    old = {k: v for k, v in marker.items() if k != "stat"}
    shown = {key: old.get(key) for key in ("command", "files", "sha256")}
    old["files_digest"] = hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()
    (out / MARKER).write_text(json.dumps(old))  # as the version before this change wrote it
    _clock_moves_past(out / "attributions.h5")
    _large(out, "attributions.h5", 3)
    assert foreign_files(out) == []


def test_a_link_under_a_listed_name_is_the_users_and_not_deleted_by_force(tmp_path):
    """QA: laya-inspect writes no links, yet a summary.json the user replaced by a link to their
    annotated copy, or a listed plots/ replaced by a link to their own folder, passed as the command's
    (the marker lists the name) and --force deleted the link."""
    theirs = users_folder(tmp_path / "theirs")
    for name, target in (("summary.json", tmp_path / "theirs" / "notes.txt"), ("plots", tmp_path / "theirs")):
        out = written(tmp_path / f"out-{name}")
        (out / name).unlink() if name == "summary.json" else shutil.rmtree(out / name)
        (out / name).symlink_to(target)
        assert foreign_files(out) == [f"{name} (a link or special file, which laya-inspect never writes)"]
        with pytest.raises(InputError, match=f"did not write \\({name} \\(a link"):
            written(out)
        assert (out / name).is_symlink() and os.readlink(out / name) == str(target)
    assert tree(tmp_path / "theirs") == theirs


def _listed_by_hand(out: Path, name: str) -> None:
    """List ``name`` in ``out``'s marker with no digest, the marker's own digest computed again as
    docs/FORMATS.md defines it (files_digest: SHA-256 of the JSON of command, files, sha256 and stat)."""
    marker = json.loads((out / MARKER).read_text())
    marker["files"] = sorted([*marker["files"], name])
    shown = {key: marker[key] for key in ("command", "files", "sha256", "stat")}
    marker["files_digest"] = hashlib.sha256(
        json.dumps(shown, sort_keys=True, ensure_ascii=False).encode("utf-8")
    ).hexdigest()
    (out / MARKER).write_text(json.dumps(marker))


def test_a_listed_file_the_marker_records_no_digest_of_is_not_deleted_by_force(tmp_path):
    """QA: a marker records the digest (or size and time) of every file its command wrote, yet a file
    it listed without one passed on its name alone: the user's file saved where a listed folder was
    (plots), or their notes.txt listed in a marker copied in with its digest computed again, went
    with --force."""
    out = written(tmp_path / "out")
    shutil.rmtree(out / "plots")
    (out / "plots").write_text("the user's file, where the plots folder was")
    _listed_by_hand(out, "notes.txt")
    (out / "notes.txt").write_text("mine")
    before = tree(out)
    assert [f.split(" (")[0] for f in foreign_files(out)] == ["notes.txt", "plots"]
    with pytest.raises(InputError, match=r"notes\.txt \(a file the marker records no digest of\)"):
        written(out)
    assert tree(out) == before


def test_an_out_through_a_linked_folder_and_dot_dot_is_written_where_it_was_checked(tmp_path):
    """QA: `--out link/../results`, link a symlink to a folder elsewhere, was checked where the system
    resolves it (beside the link's target) but written at the lexical ./results: --force replaced
    another output than the one named, and without --force the run failed only after its work."""
    (tmp_path / "elsewhere" / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere" / "deep")
    lexical = written(tmp_path / "results", files={"old.json": "the output the user did not name"})
    before = tree(lexical)
    named = tmp_path / "link" / ".." / "results"
    written(named, files={"new.json": "1"})
    written(named, files={"newer.json": "2"})  # --force replaces the folder it checked
    assert sorted(tree(tmp_path / "elsewhere" / "results")) == [MARKER, "newer.json"]
    assert tree(lexical) == before


@pytest.mark.parametrize("content", ["", "12345", "  4242\n"])
def test_a_users_empty_or_numeric_file_named_like_the_lock_is_never_taken_for_one(tmp_path, content):
    """Audit: an empty `.results.lock` beside `--out results` (or one holding only digits, as a
    killed run's lock once did) was taken for a stale lock, emptied, written and removed. Our lock
    holds its own line (marker, PID, machine, boot); anything else is refused, untouched."""
    from laya_inspect.files import output_lock

    (tmp_path / ".results.lock").write_text(content)
    with pytest.raises(InputError, match="not a lock file this laya-inspect wrote"):
        with output_lock(tmp_path / "results"):
            pass
    assert (tmp_path / ".results.lock").read_text() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == [".results.lock"]  # no parent, no temporary left


def test_a_lock_of_another_machine_or_a_dead_one_of_this_boot(tmp_path):
    """A lock whose PID is gone on this machine is a killed run's; one naming another machine and
    boot (a shared file system) is not ours to judge, so what sits beside it is refused, not deleted.
    One of another host name on this boot is another container on this kernel: its flock judges it."""
    import subprocess
    import sys

    from laya_inspect.files import dead_lock_pid

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    (tmp_path / ".a.lock").write_bytes(lock_text(child.pid))
    assert dead_lock_pid(tmp_path / ".a.lock") == child.pid
    other = lock_text(child.pid).replace(b" host=", b" host=elsewhere-")
    (tmp_path / ".b.lock").write_bytes(other.replace(b" boot=", b" boot=x"))
    assert dead_lock_pid(tmp_path / ".b.lock") is None
    (tmp_path / ".b.lock").write_bytes(other)
    assert dead_lock_pid(tmp_path / ".b.lock") == child.pid
    before_boot = lock_text(os.getppid()).replace(b" boot=", b" boot=x")  # a live PID, but from before a reboot
    (tmp_path / ".c.lock").write_bytes(before_boot)
    assert dead_lock_pid(tmp_path / ".c.lock") == os.getppid()


def test_the_lock_is_made_where_no_hard_link_can_be(tmp_path, monkeypatch):
    """A lock is written whole and linked into place; on a file system without hard links (FAT, some
    network ones: link() fails with EPERM) it is made in place, and a user's file there is still refused."""
    import errno

    from laya_inspect.files import output_lock

    def no_links(*args):
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(os, "link", no_links)
    with output_lock(tmp_path / "out"):
        assert (tmp_path / ".out.lock").read_bytes() == lock_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    (tmp_path / ".out.lock").write_text("")
    with pytest.raises(InputError, match="not a lock file"):
        with output_lock(tmp_path / "out"):
            pass
    assert (tmp_path / ".out.lock").read_text() == ""


def test_a_file_saved_under_the_locks_name_during_the_run_is_left(tmp_path):
    """Audit: the lock was removed by name when the run ended, so a file moved there during the run
    (the user's `.out.lock`, the old lock having been moved away) was deleted."""
    from laya_inspect.files import output_lock

    with output_lock(tmp_path / "out"):
        os.replace(tmp_path / ".out.lock", tmp_path / "moved.lock")
        (tmp_path / ".out.lock").write_text("mine")
    assert (tmp_path / ".out.lock").read_text() == "mine"


def test_an_output_copied_without_its_times_still_reads_as_the_commands(tmp_path):
    """QA: `report --html` refused to rebuild its own 6 MB page in a compare folder copied with `cp -r`:
    a file over the old 4 MiB was known by its size and mtime alone, which such a copy resets. Pages and
    summaries of that size are hashed now; a larger file's refusal says a copy without times does it too."""
    out = tmp_path / "out"
    with atomic_dir(out, command="compare") as tmp:
        (tmp / "report.html").write_bytes(b"<html>" + b"x" * (6 << 20))  # a page with its plots inlined
        _large(tmp, "attributions.h5", 1)
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, copy_function=shutil.copyfile)  # as `cp -r`: contents, not times
    _clock_moves_past(out / "attributions.h5")
    os.utime(copy / "report.html")
    os.utime(copy / "attributions.h5")
    assert foreign_files(copy) == [
        "attributions.h5 (changed since it was written, or copied without its times: `cp -a` keeps them)"
    ]
    (copy / "attributions.h5").unlink()  # the large file aside, the copied page is the command's
    assert foreign_files(copy) == []
