"""A killed run's lock and the temporary file it made the lock under: which later runs take or sweep
them (a container's run of the same PID, another container on this kernel), and which never (a run on
another machine sharing the file system, whose flock may not be seen from here)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from laya_inspect.errors import LockedError
from laya_inspect.files import (
    dead_lock_pid,
    lock_text,
    output_lock,
    remove_stale_temps,
    stale_temps,
    temp_file_name,
)

BOOT = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
pytestmark = pytest.mark.skipif(not BOOT or sys.platform != "linux", reason="boot ids are Linux's")


def gone_pid() -> int:
    """The PID of a process that has ended."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    return int(proc.stdout)


def lock_of(pid: int, host: str | None = None, boot: str | None = None) -> bytes:
    line = lock_text(pid).decode()
    _, ours, our_boot = line.split()[2:5]
    line = line.replace(ours, f"host={host}" if host else ours).replace(our_boot, f"boot={boot}" if boot else our_boot)
    return line.encode()


def test_a_lock_temporary_left_under_this_pid_does_not_refuse_this_run(tmp_path: Path) -> None:
    """Audit: the lock was made under `.out.lock.tmp-PID-CHECK`, the same name for every process of a
    PID, with O_EXCL: a run killed between making and removing it refused every later run of that PID
    (PID 1 in every container) for good with "could not lock …: File exists"."""
    out = tmp_path / "out"
    left = tmp_path / temp_file_name(".out.lock", os.getpid())
    left.write_bytes(lock_text())
    with output_lock(out):
        assert left in stale_temps(out)  # the sweep knows it as the lock's temporary, nobody's now
        assert left in remove_stale_temps(out)
    assert not left.exists() and not (tmp_path / ".out.lock").exists()


def test_a_lock_temporary_is_swept_only_when_its_maker_is_gone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    dead = tmp_path / f"{temp_file_name('.out.lock', gone_pid())}-0123abcd"
    held = tmp_path / f"{temp_file_name('.out.lock', os.getpid())}-89abcdef"  # one being made: its flock held
    user = tmp_path / ".out.lock.tmp-12-notes"
    for p in (dead, held, user):
        p.write_bytes(b"")
    fd = os.open(held, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with output_lock(out):
            assert stale_temps(out) == [dead]
    finally:
        os.close(fd)
    assert held.exists() and user.exists()


def test_a_killed_runs_lock_from_another_container_on_this_kernel_is_known_as_such(tmp_path: Path) -> None:
    """Audit: only a lock naming this host was a killed run's, so a container with a new host name per
    run never knew its killed run's lock (--force refused it as the user's file). The boot id is this
    kernel's: its flock, free, says the run is gone."""
    lock, pid = tmp_path / ".out.lock", gone_pid()
    lock.write_bytes(lock_of(pid, host="container-1a2b"))
    assert dead_lock_pid(lock) == pid
    lock.write_bytes(lock_of(pid, boot="0" * 8))  # this host before a reboot: gone too
    assert dead_lock_pid(lock) == pid


def test_a_lock_of_another_machine_is_never_taken(tmp_path: Path) -> None:
    """Audit: a lock whose flock was free was taken over whatever host it named, where a comment said
    another machine's lock is never taken: on a network file system whose flocks are local only, a live
    run there holds a flock this machine does not see, and both wrote the output."""
    out, lock = tmp_path / "out", tmp_path / ".out.lock"
    theirs = lock_of(4242, host="lab-node-7", boot="f" * 36)
    lock.write_bytes(theirs)
    assert dead_lock_pid(lock) is None
    said = r"another machine, or this one under another host name \(PID 4242 on lab-node-7.*delete .*\.out\.lock"
    with pytest.raises(LockedError, match=said):
        with output_lock(out):
            pass
    assert lock.read_bytes() == theirs  # left as it was
    lock.write_bytes(lock_of(4242, host="container-1a2b"))  # this kernel's: its free flock says it is gone
    with output_lock(out):
        assert lock.read_bytes() == lock_text()


def test_a_lock_temporary_with_its_random_tail_is_named_as_the_tools() -> None:
    """Review: the lock's temporary gained a random tail, which out_dir's names of our temporaries did not
    know, so a leftover one was listed as a user's file and not named in the note on what a killed run left."""
    from laya_inspect.files import temp_file_name
    from laya_inspect.out_dir import temp_of

    made = f"{temp_file_name('.out.lock', 4242)}-0123abcd"
    assert temp_of(made) == [".out.lock"]
    assert temp_of(f"{temp_file_name('model.pt', 4242)}-0123abcd") == []  # only a lock's temporary has the tail
    assert temp_of(".out.lock.tmp-4242-00000000-0123abcd") == []  # a check value that is not ours
