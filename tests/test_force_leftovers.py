"""What --force and the atomic swap treat as the tool's own: a replaced folder's mode and group, the
temporary names inside an output, and a marker edited by hand."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import numpy as np
import pytest

from laya_inspect.errors import InputError, os_message
from laya_inspect.files import lock_text, temp_file_name
from laya_inspect.out_dir import MARKER, atomic_dir, foreign_files, redigest, refresh_digests, write_marker


def written(path: Path, files: dict[str, str] | None = None) -> Path:
    with atomic_dir(path, force=True, command="fit-head") as tmp:
        for name, text in (files or {"summary.json": "{}", "plots/a.png": "png"}).items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_text(text)
    return path


def test_a_folder_that_existed_keeps_its_mode_and_group(tmp_path):
    """Audit: a pre-created `--out` of mode 2770 (setgid, group-writable: a shared lab folder) came
    back 0755 after the swap, as the folder built beside it had the process's defaults."""
    out = tmp_path / "shared"
    out.mkdir()
    group = os.getgid() if os.geteuid() != 0 else 4321  # root may give it any group
    os.chown(out, -1, group)
    os.chmod(out, 0o2770)
    written(out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o2770 and out.stat().st_gid == group
    # what the command wrote inside took the folder's group, as setgid means
    assert (out / "summary.json").stat().st_gid == group and (out / "plots").stat().st_gid == group
    os.chmod(out, 0o750)  # --force replacing the tool's own earlier output keeps its mode too
    written(out, {"summary.json": "[]"})
    assert stat.S_IMODE(out.stat().st_mode) == 0o750 and (out / "summary.json").read_text() == "[]"
    fresh = written(tmp_path / "new")  # a new folder gets the process's defaults, as before
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o777 & ~_umask()


def test_a_file_that_existed_keeps_its_mode_and_group(tmp_path):
    """Audit: a checkpoint or cache of mode 0660 in a shared folder came back 0644 when train --force or
    extract --overwrite replaced it: the temporary file renamed over it had the process's defaults."""
    from laya_inspect.files import atomic_paths, write_text

    target = tmp_path / "backbone.pt"
    target.write_text("old")
    group = os.getgid() if os.geteuid() != 0 else 4321
    os.chown(target, -1, group)
    os.chmod(target, 0o660)
    write_text(target, "new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o660 and target.stat().st_gid == group
    assert target.read_text() == "new"
    fresh = write_text(tmp_path / "new.json", "{}")  # a new file keeps the process's defaults
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~_umask()
    os.chmod(target, 0o640)  # a set of files: each keeps its own
    with atomic_paths(target, tmp_path / "metrics.json") as (a, b):
        a.write_text("newer")
        b.write_text("{}")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_cache_replaced_by_overwrite_keeps_its_mode(tmp_path):
    """extract --overwrite renames its finished partial file over the old cache: the old one's mode stays."""
    from helpers import write_cache

    feats = [np.zeros((4, 3), dtype="float32")]
    split = {"train": (feats, np.array([0, 1, 0, 1])), "test": (feats, np.array([0, 1, 0, 1]))}
    cache = write_cache(tmp_path / "c.h5", split)
    os.chmod(cache, 0o660)
    write_cache(cache, split, overwrite=True)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o660


def test_a_file_system_that_refuses_modes_does_not_fail_the_write(tmp_path, monkeypatch):
    """Keeping a replaced file's or folder's mode must not end a run that did all its work with an
    error where the file system refuses chmod (a FAT drive, some network mounts): the write stands."""
    from laya_inspect.files import write_text

    target = tmp_path / "backbone.pt"
    target.write_text("old")
    out = written(tmp_path / "out")

    def refuse(path, mode, **kwargs):
        raise PermissionError(1, "Operation not permitted", str(path))

    monkeypatch.setattr(os, "chmod", refuse)
    write_text(target, "new")
    written(out, {"summary.json": "[]"})
    assert target.read_text() == "new" and (out / "summary.json").read_text() == "[]"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_users_small_numbered_temporary_name_inside_an_output_is_theirs(tmp_path):
    """Audit: `notes.tmp-1` inside an output was taken for a temporary file a killed run left (1 can
    be a PID), so --force deleted it. The tool's temporary names inside an output are those of the
    paths its marker lists (and of the marker itself)."""
    out = written(tmp_path / "out")
    (out / "notes.tmp-1").write_text("mine")
    (out / ".notes.tmp-2").mkdir()
    (out / ".notes.old-3").mkdir()
    (out / ".notes.lock").write_text("4242")
    (out / temp_file_name("summary.json", 99999)).write_text("{half")  # a killed rewrite of a listed file: the tool's
    (out / ".plots.tmp-123").mkdir()  # plots/ is listed
    (out / temp_file_name(MARKER, 77)).write_text("{")  # a killed rewrite of the marker
    assert foreign_files(out) == [".notes.lock", ".notes.old-3/", ".notes.tmp-2/", "notes.tmp-1"]
    with pytest.raises(InputError, match=r"did not write \(\.notes\.lock, .* and 1 more\)"):
        written(out)
    assert (out / "notes.tmp-1").read_text() == "mine"


def test_what_a_killed_run_inside_an_output_left_does_not_stop_force(tmp_path):
    """Audit: `compare --out heads/cmp` killed with SIGKILL left `.cmp.lock` and `.cmp.tmp-PID/` in
    heads/, and `fit-head --out heads --force` refused them as the user's. The lock holding the PID
    of a run that is gone, beside that PID's temporary name, proves them a killed run's; anything
    short of that stays refused, with what to do."""
    import subprocess
    import sys

    out = written(tmp_path / "out")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    pid = child.pid  # a process that is gone
    (out / f".cmp.tmp-{pid}" / "plots").mkdir(parents=True)
    (out / f".cmp.tmp-{pid}" / "attributions.h5").write_bytes(b"half")
    (out / ".cmp.lock").write_bytes(lock_text(pid))
    (out / temp_file_name("fig.png", pid)).write_text("half a figure")  # a killed explain --out out/fig.png
    (out / ".fig.png.lock").write_bytes(lock_text(pid))
    assert foreign_files(out) == []
    written(out, {"summary.json": "[]"})
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "summary.json"]

    (out / f".cmp.tmp-{pid}").mkdir()  # without its lock: only named like one
    (out / f".old.old-{pid}").mkdir()  # a swap cut short: the previous output of out/old, put back by its next run
    (out / ".old.lock").write_bytes(lock_text(pid))
    (out / f".live.tmp-{os.getppid()}").mkdir()  # a run still writing out/live (a process that exists)
    (out / ".live.lock").write_bytes(lock_text(os.getppid()))
    live = os.getppid()
    assert foreign_files(out) == sorted(
        [f".cmp.tmp-{pid}/", ".live.lock", f".live.tmp-{live}/", ".old.lock", f".old.old-{pid}/"]
    )
    with pytest.raises(
        InputError, match=r"temporary files are of .*out/cmp, .*out/live, .*out/old: the command that writes it"
    ):
        written(out)
    assert (out / f".old.old-{pid}").is_dir() and (out / f".cmp.tmp-{pid}").is_dir()


def test_a_write_that_fails_names_the_output_left_as_it_was(tmp_path):
    """A full disk in compare, prune, diagnose or early-exit named a file inside the hidden temporary
    folder alone (`.cmp.tmp-PID/attributions.h5: File too large`), not that --out was kept (fit-head
    said so on its own); a head directory written inside another output adds nothing of its own."""
    from laya_inspect.errors import WriteError
    from laya_inspect.files import write_text

    out = written(tmp_path / "out")
    before = (out / "summary.json").read_text()
    with pytest.raises(WriteError, match=r"File too large \(errno 27\); --out .*out was left as it was$"):
        with atomic_dir(out, force=True, command="fit-head") as tmp:
            raise WriteError(os_message(OSError(27, "File too large", str(tmp / "attributions.h5"))))
    assert (out / "summary.json").read_text() == before
    with pytest.raises(WriteError, match=r"errno 13\)$"):
        with atomic_dir(tmp_path / "head", force=True, lock=False, flag="head directory") as tmp:
            write_text(tmp / "config.json", "{}")
            raise WriteError(os_message(PermissionError(13, "Permission denied", str(tmp / "weights.pt"))))


def _edit_marker(out: Path, change) -> None:
    marker = json.loads((out / MARKER).read_text())
    change(marker)
    (out / MARKER).write_text(json.dumps(marker))


def test_a_marker_edited_to_list_a_users_file_is_not_trusted(tmp_path):
    """Audit: a marker edited by hand to list a user's file made --force delete that file with the
    folder. The marker records a digest of what it lists; one that no longer matches is refused."""
    out = written(tmp_path / "out")
    (out / "mine.csv").write_text("data")
    _edit_marker(out, lambda m: m["files"].append("mine.csv"))
    with pytest.raises(InputError, match=r"out/\.laya-inspect\.json was changed"):
        written(out)
    assert (out / "mine.csv").read_text() == "data"
    # a marked sub-folder's marker (a head directory's) is checked the same way
    outer = tmp_path / "outer"
    with atomic_dir(outer, command="demo") as tmp:
        (tmp / "heads").mkdir()
        (tmp / "heads" / "x.json").write_text("{}")
        write_marker(tmp / "heads", "laya-inspect")
    (outer / "heads" / "mine.txt").write_text("data")
    assert foreign_files(outer) == ["heads/mine.txt"]
    _edit_marker(outer / "heads", lambda m: m["files"].append("mine.txt"))
    with pytest.raises(InputError, match=r"heads/\.laya-inspect\.json was changed"):
        foreign_files(outer)


def test_markers_of_earlier_versions_and_refreshed_digests_still_work(tmp_path):
    out = written(tmp_path / "out")
    _edit_marker(out, lambda m: m.pop("files_digest"))  # as versions before the digest wrote it
    assert foreign_files(out) == []
    written(out, {"summary.json": "[]"})  # --force replaces it as before
    assert (out / "summary.json").read_text() == "[]"
    (out / "summary.json").write_text('{"edited": true}')
    refresh_digests(out)  # a command that rewrote its own files records them again: still trusted
    assert foreign_files(out) == []


def test_a_users_file_listed_in_an_earlier_versions_marker_is_not_deleted(tmp_path, monkeypatch):
    """Audit: a marker written before `files_digest` was trusted whole, so a user who added their own
    file's name to its list had that file deleted by --force. Under such a marker a listed file that
    changed after the marker was written (a digest aside) is not the command's."""
    import time

    from laya_inspect import out_dir

    monkeypatch.setattr(out_dir, "_CLOCK_SLACK_S", 0.0, raising=False)  # the test's clock and its file system's agree
    out = written(tmp_path / "out")
    _edit_marker(out, lambda m: m.pop("files_digest"))
    written_at = json.loads((out / MARKER).read_text())["written"]
    while time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()) <= written_at:  # the marker's second is over
        time.sleep(0.05)
    (out / "mine.csv").write_text("data")
    _edit_marker(out, lambda m: m["files"].append("mine.csv"))
    assert foreign_files(out) == ["mine.csv (newer than the marker, which an earlier version wrote without a digest)"]
    with pytest.raises(InputError, match=r"did not write or that changed since it wrote them \(mine\.csv \(newer"):
        written(out)
    assert (out / "mine.csv").read_text() == "data"
    _edit_marker(out, lambda m: m.pop("sha256"))  # the oldest markers record no digests at all
    (out / "plots" / "mine.png").write_text("png")
    _edit_marker(out, lambda m: m["files"].append("plots/mine.png"))
    assert [f.split(" ")[0] for f in foreign_files(out)] == ["mine.csv", "plots/mine.png"]
    (out / "mine.csv").unlink()
    (out / "plots" / "mine.png").unlink()
    written(out, {"summary.json": "[]"})  # the command's own untouched files are replaced as before
    assert (out / "summary.json").read_text() == "[]"


def test_a_users_file_saved_just_after_an_earlier_versions_marker_is_not_deleted(tmp_path):
    """Audit: under a marker without `files_digest` a listed file without a digest was the command's
    if it changed before the marker's second ended plus 2 s of clock slack, so a user's file saved in
    those seconds under a name the marker lists (a marker written by hand with the time of day, as
    an earlier version would have) was deleted by --force. A file newer than the marker file is not
    the command's, whatever the marker says of its time."""
    from laya_inspect.files import utc_now

    out = tmp_path / "out"
    out.mkdir()
    marker = {"written_by": "laya-inspect", "command": "fit-head", "version": "0.1.0", "written": utc_now()}
    (out / MARKER).write_text(json.dumps(marker | {"files": ["mine.csv"], "sha256": {}}))
    (out / "mine.csv").write_text("data")  # saved within the second the marker names
    assert foreign_files(out) == ["mine.csv (newer than the marker, which an earlier version wrote without a digest)"]
    with pytest.raises(InputError, match=r"did not write or that changed since it wrote them \(mine\.csv \(newer"):
        written(out)
    assert (out / "mine.csv").read_text() == "data"


def test_a_listed_file_the_user_deleted_keeps_its_record_when_digests_are_recorded_again(tmp_path):
    """Audit: recording the digests again (`check planted`, `report --html`) dropped the digest of a
    listed file the user had deleted while its name stayed listed, so a file the user saved under
    that name later was deleted by --force with no check."""
    for refresh in (refresh_digests, lambda out: redigest(out, ["summary.json"])):
        out = written(tmp_path / "out")
        (out / "summary.json").unlink()
        refresh(out)
        (out / "summary.json").write_text('{"mine": true}')
        assert foreign_files(out) == ["summary.json (changed since it was written)"]
        with pytest.raises(InputError, match=r"did not write or that changed since it wrote them \(summary\.json"):
            written(out)
        assert (out / "summary.json").read_text() == '{"mine": true}'
        (out / "summary.json").unlink()


@pytest.fixture
def user_dir(tmp_path):
    """A folder a user who is not root works in: under root, one nobody owns and can reach (pytest's
    tmp_path lies under a folder only root may enter)."""
    if os.geteuid() != 0:
        yield tmp_path
        return
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="laya-user-"))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def _as_a_user(folder: Path, body) -> str:
    """Run ``body()`` as a user who is not root (a forked child drops to nobody when the tests run as
    root, where permission bits bind no one); returns what it raised, or "" when it returned."""
    if os.geteuid() != 0:
        try:
            body()
        except Exception as e:  # noqa: BLE001 - the test reads the message
            return f"{type(e).__name__}: {e}"
        return ""
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, 65534, 65534)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        said = ""
        try:
            os.setgid(65534)
            os.setuid(65534)
            body()
        except BaseException as e:  # noqa: BLE001
            said = f"{type(e).__name__}: {e}"
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        said = f.read().decode()
    os.waitpid(pid, 0)
    return said


def test_an_output_in_a_folder_the_user_cannot_write_in_is_refused_before_any_work(user_dir):
    """Audit: compare into a read-only folder computed every attribution, then failed at the end with
    "could not lock ro/.cmp.lock: Permission denied"; check_out, run before any work, refuses it."""
    from laya_inspect.out_dir import check_out

    (user_dir / "ro").mkdir()
    os.chmod(user_dir / "ro", 0o555)
    for out, kind in ((user_dir / "ro" / "cmp", "folder"), (user_dir / "ro" / "new" / "deeper", "folder"),
                      (user_dir / "ro" / "fig.png", "file")):  # fmt: skip
        said = _as_a_user(
            user_dir, lambda out=out, kind=kind: check_out(out, force=False, command="compare", kind=kind)
        )
        assert said.startswith(f"{InputError.__name__}: --out {out}: cannot write in {user_dir / 'ro'}"), said
        assert "errno 13" in said
    assert list((user_dir / "ro").iterdir()) == []
    assert _as_a_user(user_dir, lambda: check_out(user_dir / "cmp", force=False, command="compare")) == ""


def test_a_read_only_file_is_replaced_and_stays_read_only(user_dir):
    """Review: keeping a replaced file's mode gave the temporary file 0444 before it was opened again
    to be synced, so a user's read-only checkpoint or cache (chmod a-w) failed train --force or
    extract --overwrite at the very end with 'could not write backbone.pt.tmp-PID: Permission denied'."""
    from helpers import write_cache

    from laya_inspect.files import write_text

    target = user_dir / "backbone.pt"
    target.write_text("old")
    feats = [np.zeros((4, 3), dtype="float32")]
    split = {"train": (feats, np.array([0, 1, 0, 1])), "test": (feats, np.array([0, 1, 0, 1]))}
    cache = write_cache(user_dir / "c.h5", split)
    os.chmod(target, 0o444)
    os.chmod(cache, 0o444)
    assert _as_a_user(user_dir, lambda: write_text(target, "new")) == ""
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o444
    assert _as_a_user(user_dir, lambda: write_cache(cache, split, overwrite=True)) == ""
    assert stat.S_IMODE(cache.stat().st_mode) == 0o444


def test_report_html_in_a_folder_the_user_cannot_write_in_is_refused_before_any_work(user_dir):
    """Audit: `report DIR --html` on a read-only DIR printed the report and built the page, then failed
    naming `report.html.tmp-PID`; it is refused first, naming report.html and the folder."""
    from laya_inspect.report import refuse_foreign_page

    folder = user_dir / "heads"
    folder.mkdir()
    (folder / "summary.json").write_text("{}")
    os.chmod(folder, 0o555)
    said = _as_a_user(user_dir, lambda: refuse_foreign_page(folder))
    assert said.startswith(
        f"{InputError.__name__}: --html cannot write {folder / 'report.html'}: cannot write in {folder}"
    ), said
    assert "errno 13" in said and ".tmp-" not in said
    assert sorted(p.name for p in folder.iterdir()) == ["summary.json"]
    os.chmod(folder, 0o755)
    assert _as_a_user(user_dir, lambda: refuse_foreign_page(folder)) == ""


def test_a_link_or_a_folder_under_a_temporary_name_of_a_listed_file_is_not_deleted_by_force(tmp_path):
    """QA: a name laya-inspect gives its temporary files passed as its own whatever it was: a user's
    folder `.summary.json.tmp-77/` (the tool's temporary folders are of folders, and summary.json is a
    file the marker records) or a link `summary.json.tmp-123` went with --force."""
    out = tmp_path / "out"
    with atomic_dir(out, command="fit-head") as tmp:
        (tmp / "summary.json").write_text("{}")
        (tmp / "plots").mkdir()
    (tmp_path / "keep.txt").write_text("mine")
    (out / "summary.json.tmp-123").symlink_to(tmp_path / "keep.txt")
    (out / ".summary.json.tmp-77").mkdir()
    (out / ".summary.json.tmp-77" / "thesis.tex").write_text("mine")
    (out / ".plots.tmp-78").mkdir()  # a listed folder's: the tool's
    assert [f.split(" ")[0] for f in foreign_files(out)] == [".summary.json.tmp-77/", "summary.json.tmp-123"]
    with pytest.raises(InputError, match="summary.json.tmp-123"):
        with atomic_dir(out, force=True, command="fit-head") as tmp:
            (tmp / "summary.json").write_text("{}")
    assert (out / ".summary.json.tmp-77" / "thesis.tex").read_text() == "mine"
    assert (out / "summary.json.tmp-123").is_symlink()


def test_a_temporary_name_of_a_listed_folder_holding_a_users_file_is_not_deleted_by_force(tmp_path):
    """Audit: `.plots.tmp-123/` and `.plots.old-5/` inside an output passed as the tool's leftovers by
    their names alone (plots/ is listed), so `compare --force` deleted a user's figure kept in one.
    Empty, or the intact previous output a cut-short swap left, they are still the tool's."""
    out = written(tmp_path / "out")
    for name in (".plots.tmp-123", ".plots.old-5"):
        (out / name).mkdir()
        (out / name / "mine.png").write_text("mine")
    (out / ".plots.tmp-124").mkdir()  # killed as it was made
    written(out / ".plots.old-6")  # a swap's previous output, marked and unchanged
    assert foreign_files(out) == [".plots.old-5/", ".plots.tmp-123/"]
    with pytest.raises(InputError, match=r"\.plots\.old-5/, \.plots\.tmp-123/\); --force never deletes them") as e:
        written(out)
    assert "clears them" not in str(e.value)  # a run on out/plots would delete them with the user's file
    assert (out / ".plots.tmp-123" / "mine.png").read_text() == "mine"
    assert (out / ".plots.old-5" / "mine.png").read_text() == "mine"


def test_a_refusal_says_a_rerun_clears_only_the_temporary_folders_a_rerun_removes(tmp_path):
    """A user's `.cmp.tmp-123/mine.png` inside an output refused --force with "the command that writes
    out/cmp clears them when run on it again", but that run keeps a folder holding what it cannot show is
    its own (and says so), so the user met the same refusal and advice again. Only an empty or marked one
    (what a killed run leaves, and the run removes) is still said to be cleared."""
    from laya_inspect.files import make_temp_dir

    out = written(tmp_path / "out")
    users = out / ".cmp.tmp-123"
    users.mkdir()
    (users / "mine.png").write_text("mine")
    with pytest.raises(InputError, match=r"\.cmp\.tmp-123/\); --force never deletes them") as e:
        written(out)
    assert "clears them" not in str(e.value)
    with pytest.warns(UserWarning, match="left as it is"):  # what that rerun does with it
        with atomic_dir(out / "cmp", command="compare") as tmp:
            (tmp / "summary.json").write_text("{}")
    assert (users / "mine.png").read_text() == "mine"
    users.rename(tmp_path / "kept")
    (out / ".cmp.tmp-125").symlink_to(tmp_path / "kept")  # a link under such a name: never removed either
    with pytest.raises(InputError, match=r"\(\.cmp\.tmp-125, cmp/\); --force never deletes them") as e:
        written(out)
    assert "clears them" not in str(e.value)
    (out / ".cmp.tmp-125").unlink()
    make_temp_dir(out / f".cmp.tmp-{os.getpid()}")  # as a killed run under this PID left it: marked
    with pytest.raises(InputError, match=rf"temporary files are of {re.escape(str(out / 'cmp'))}: .* clears them"):
        written(out)


def _killed(out: Path, *, mid_swap: bool = False, files: dict[str, str] | None = None) -> int:
    """Run ``atomic_dir(out)`` in a child process killed (``os._exit``: no cleanup runs) while its body
    writes, or with ``mid_swap`` between the two renames; returns the PID, which is gone by then."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            if mid_swap:
                real = os.replace
                mine = os.path.realpath(out)

                def replace(src, dst):  # the first of the two renames, then killed
                    real(src, dst)
                    if os.path.realpath(dst) != mine and os.path.realpath(src) == mine:
                        os._exit(0)

                os.replace = replace
            with atomic_dir(out, force=True, command="fit-head") as tmp:
                for name, text in (files or {"summary.json": "{}", "plots/a.png": "png"}).items():
                    (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                    (tmp / name).write_text(text)
                if not mid_swap:
                    os._exit(0)
        finally:
            os._exit(1)
    os.waitpid(pid, 0)
    return pid


def test_a_users_folder_named_like_a_killed_runs_temporary_folder_is_kept_and_named(tmp_path):
    """Attack: `mkdir .cmp2.tmp-123; echo mine > .cmp2.tmp-123/MINE.txt`, then `compare --out cmp2`
    (no --force) exited 0 and MINE.txt was gone: a hidden name and a PID no process has were taken for
    proof of a killed run's folder. The same for `.cmp2.old-123/`, deleted beside an existing output,
    or moved in place of a missing one. Only a folder that proves itself the tool's goes now."""
    out = written(tmp_path / "out")
    pid = _killed(tmp_path / "gone")  # a real killed run's folder, to compare with
    users = [tmp_path / f".out.tmp-{pid}", tmp_path / f".out.old-{pid}", tmp_path / f".new.old-{pid}"]
    for folder in users:
        folder.mkdir()
        (folder / "MINE.txt").write_text("mine")
    with pytest.warns(UserWarning, match="left as it is") as said:
        with atomic_dir(out, force=True, command="fit-head") as tmp:
            (tmp / "summary.json").write_text("{}")
    kept = sorted(str(w.message).split(" ")[0] for w in said)
    assert kept == [str(tmp_path / f".out.old-{pid}"), str(tmp_path / f".out.tmp-{pid}")]
    with pytest.warns(UserWarning, match=rf"\.new\.old-{pid} .*left as it is"):
        with atomic_dir(tmp_path / "new", command="fit-head") as tmp:
            (tmp / "summary.json").write_text("{}")
    for folder in users:
        assert (folder / "MINE.txt").read_text() == "mine", folder
    assert foreign_files(tmp_path / "new") == []


@pytest.mark.parametrize("kind", ["tmp", "old"])
def test_a_users_folder_under_this_processs_own_temporary_name_is_refused_not_removed(tmp_path, kind):
    """A user's `.out.tmp-1/` where every run is PID 1 (a container): left by the stale cleanup as not
    the tool's, then the run's own cleanup removed it as its temporary folder after failing to make
    that folder. It is refused before any work now, untouched."""
    out = written(tmp_path / "out")
    mine = tmp_path / f".out.{kind}-{os.getpid()}"
    mine.mkdir()
    (mine / "MINE.txt").write_text("mine")
    ran = []
    with pytest.warns(UserWarning, match="left as it is"), pytest.raises(InputError, match="move it away"):
        with atomic_dir(out, force=True, command="fit-head") as tmp:
            ran.append(tmp)
    assert ran == [] and (mine / "MINE.txt").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "plots", "summary.json"]


def test_a_killed_runs_own_temporary_and_previous_folders_are_still_removed_or_put_back(tmp_path):
    """What a killed run really left carries the tool's mark or marker: its temporary folder is
    removed, and a swap cut short puts the previous output back, as before."""
    out = written(tmp_path / "out", files={"old.json": "1"})
    pid = _killed(out)
    assert (tmp_path / f".out.tmp-{pid}" / "plots" / "a.png").exists()
    with atomic_dir(out, force=True, command="fit-head") as tmp:
        assert not (tmp_path / f".out.tmp-{pid}").exists()
        (tmp / "old.json").write_text("2")
    pid = _killed(out, mid_swap=True, files={"new.json": "3"})
    assert not out.exists() and (tmp_path / f".out.old-{pid}" / "old.json").read_text() == "2"
    with atomic_dir(out, force=True, command="fit-head") as tmp:
        assert (out / "old.json").read_text() == "2"  # put back before the swap
        (tmp / "new.json").write_text("4")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_previous_output_that_cannot_be_removed_is_named_in_a_warning(user_dir):
    """Attack: with `chmod a-w compare/plots`, `compare --force` exited 0 and left a hidden
    `.compare.old-PID/` no later run could remove, without a word. Now each run says which folder
    it leaves and why."""
    out = written(user_dir / "out")

    def replace() -> None:
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with atomic_dir(out, force=True, command="fit-head") as tmp:
                (tmp / "summary.json").write_text("{}")
        raise RuntimeError(" | ".join(str(w.message) for w in caught))

    os.chmod(out / "plots", 0o555)
    said = _as_a_user(user_dir, replace)
    (left,) = [p for p in user_dir.iterdir() if p.name.startswith(".out.old-")]
    why = rf"RuntimeError: {re.escape(str(left))} \(.*\) could not be removed: .*/plots is read-only.*"
    assert re.fullmatch(why, said), said
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "summary.json"]
    said = _as_a_user(user_dir, replace)  # the next run cannot remove it either, and says so again
    assert re.fullmatch(why, said), said


def test_a_leftover_that_cannot_be_removed_is_not_reported_removed(user_dir):
    """Audit: remove_stale_temps returned a killed run's temporary folder it could not remove (its
    plots/ read-only) among those it removed, while the folder stayed."""
    from laya_inspect.files import remove_stale_temps

    out = user_dir / "out"
    pid = _killed(out)
    left = user_dir / f".out.tmp-{pid}"
    os.chmod(left / "plots", 0o555)

    def clear() -> None:
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            removed = remove_stale_temps(out)
        raise RuntimeError(f"{[p.name for p in removed]} | " + " | ".join(str(w.message) for w in caught))

    said = _as_a_user(user_dir, clear)
    assert said.startswith("RuntimeError: [] | ") and "could not be removed" in said, said
    assert (left / "plots" / "a.png").exists()


def test_report_on_an_output_a_killed_swap_moved_aside_names_where_it_is(tmp_path):
    """Attack: after a kill between the two renames (`compare/` missing, `.compare.old-PID/` holding
    it), `report compare` said only "no folder": it names the folder and that a rerun puts it back."""
    from typer.testing import CliRunner

    from laya_inspect.cli import app

    out = written(tmp_path / "out")
    pid = _killed(out, mid_swap=True)
    r = CliRunner().invoke(app, ["report", str(out)], env={"COLUMNS": "300", "NO_COLOR": "1"})
    assert r.exit_code == 1
    said = " ".join(r.output.split())
    assert f".out.old-{pid} holds the output a killed run on {out} had moved aside" in said, said
    assert "puts it back" in said


def test_a_file_written_into_the_output_just_before_the_swap_is_kept_with_the_previous_output(tmp_path, monkeypatch):
    """Attack: `explain --out P/fig.png` landing in P while `prune --force --out P` swapped P: the figure,
    saved after the last check of P and before its rename aside, was deleted with the previous output."""
    import laya_inspect.out_dir as out_dir

    out = written(tmp_path / "out")
    keep_mode = out_dir.keep_folder_mode

    def figure_lands(tmp, st, *, building):  # the last step before the rename aside
        if not building:
            (out / "fig.png").write_text("mine")
        keep_mode(tmp, st, building=building)

    monkeypatch.setattr(out_dir, "keep_folder_mode", figure_lands)
    with pytest.warns(UserWarning, match=r"fig\.png\).*left as it is"):
        with atomic_dir(out, force=True, command="fit-head") as tmp:
            (tmp / "summary.json").write_text("{}")
    old = tmp_path / f".out.old-{os.getpid()}"
    assert (old / "fig.png").read_text() == "mine"
    assert foreign_files(out) == []


def test_a_kept_leftover_is_named_in_the_new_outputs_summary_warnings(tmp_path):
    """Attack: `mv fh .fh.old-424243; echo x > .fh.old-424243/mine.txt; fit-head … --out fh --force`
    kept the folder and said so on stderr only: the new summary.json's warnings did not name it."""
    out = written(tmp_path / "out", {"summary.json": '{"warnings": ["earlier"]}'})
    pid = _killed(tmp_path / "gone")
    mine = tmp_path / f".out.old-{pid}"
    mine.mkdir()
    (mine / "mine.txt").write_text("x")
    with pytest.warns(UserWarning, match="left as it is") as said:
        with atomic_dir(out, force=True, command="fit-head") as tmp:
            (tmp / "summary.json").write_text('{"warnings": ["its own"]}')
    assert len(said) == 1
    recorded = json.loads((out / "summary.json").read_text())["warnings"]
    assert recorded == ["its own", str(said[0].message)] and str(mine) in recorded[1]
    assert foreign_files(out) == [] and (mine / "mine.txt").read_text() == "x"
    (mine / "mine.txt").rename(tmp_path / "mine.txt")  # the user took their file: a run with nothing kept adds nothing
    with atomic_dir(out, force=True, command="fit-head") as tmp:
        (tmp / "summary.json").write_text('{"warnings": []}')
    assert json.loads((out / "summary.json").read_text())["warnings"] == []


@pytest.mark.parametrize("held, said", [("12345", "PID 12345, an older laya-inspect"), ("", "lock file is empty")])
def test_a_writer_of_an_older_version_is_named_by_what_its_lock_holds(tmp_path, held, said):
    """Audit: a run waiting on an older laya-inspect's lock (its PID alone, or nothing) said "(PID ?)"."""
    import fcntl

    from laya_inspect.errors import LockedError
    from laya_inspect.files import output_lock

    lock = tmp_path / ".c.h5.lock"
    lock.write_text(held)
    with open(lock, "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # the older version, still writing
        with pytest.raises(LockedError, match=re.escape(said)):
            with output_lock(tmp_path / "c.h5"):
                pass
    assert lock.read_text() == held


@pytest.mark.parametrize("held", ["12345", ""])
def test_an_older_versions_lock_inside_an_output_is_named_with_what_to_do(tmp_path, held):
    """Audit: --force over an output holding an older version's lock of a listed folder (its PID alone)
    listed it as "did not write (.heads.lock)" without saying it may be deleted, as --out's refusal does."""
    out = tmp_path / "out"
    with atomic_dir(out, force=True, command="fit-head") as tmp:
        (tmp / "heads").mkdir()
        (tmp / "heads" / "a.txt").write_text("x")
    (out / ".heads.lock").write_text(held)
    with pytest.raises(InputError, match=r"\(\.heads\.lock\).*delete it if an older laya-inspect left it"):
        with atomic_dir(out, force=True, command="fit-head"):
            pass
    assert (out / ".heads.lock").read_text() == held and (out / "heads" / "a.txt").read_text() == "x"
    (out / ".heads.lock").write_text("my notes")  # a user's: not told to delete it
    with pytest.raises(InputError) as e:
        with atomic_dir(out, force=True, command="fit-head"):
            pass
    assert "delete it if" not in str(e.value)
