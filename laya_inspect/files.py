"""Every file the tool writes goes through here: plain values, and atomic writers.

Atomic: each writer writes ``<name>.tmp-<pid>-<check>`` (:func:`temp_file_name`) beside the target,
flushes and fsyncs it, then renames it over the target, so a reader (or a killed run) sees the old
file or the new one, never half of one; a whole output folder is built the same way by
``out_dir.atomic_dir``. An OS error (full disk, no permission) becomes one :class:`WriteError` line
naming the path and the errno, with the temporary file removed. :func:`output_lock` keeps two runs
from writing one output. One policy for numbers JSON and CSV cannot hold: NaN and ±inf become
``null`` in JSON and an empty cell in CSV.
"""

from __future__ import annotations

import csv
import datetime
import glob
import io
import json
import math
import os
import re
import secrets
import shutil
import stat
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError, LockedError, WriteError, os_message


def plain(v: Any) -> Any:
    """dicts (keys as str), lists, str, int, float, bool, None only: numpy arrays and scalars become
    Python values, tuples lists, paths str, and NaN/±inf None (JSON has no such numbers)."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return plain(v.tolist())
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, Path):
        return str(v)
    return v


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the body returns, the file written there replaces
    ``path`` in one rename. When the body raises, the temporary file is removed and ``path`` is left
    as it was. For writers that take a file name (h5py, torch.save, savefig)."""
    with atomic_paths(path) as (tmp,):
        yield tmp


@contextmanager
def atomic_paths(*paths: str | Path) -> Iterator[tuple[Path, ...]]:
    """:func:`atomic_path` for files that belong together (a checkpoint and its metrics): one temporary
    name each, and when the body returns the old files after the first are removed, then each new
    one renamed over its target, the first first (the temporary files of these names that a killed
    run left, :func:`remove_stale_temps`, are removed before). So a run killed at any moment leaves
    the old set, the new set, or a first file (old or new) without the rest: never a new file beside
    an old one it does not belong with. When the body raises, the temporary files are removed and the old set
    is left as it was."""
    targets = [Path(p) for p in paths]
    for target in targets:
        if target.is_dir():
            # report --html's page has no name of the user's choosing: they can only move the folder
            raise InputError(f"{target} is a folder where a file is to be written; move it away, or write elsewhere")
        try:  # what a killed write of this file left beside it (its process is gone): not left for good
            remove_stale_temps(target)
        except OSError:  # one that cannot be removed does not stop this write
            pass
    tmps = tuple(t.with_name(temp_file_name(t.name, os.getpid())) for t in targets)
    syncing: Path | None = None  # the target whose temporary file is being synced, once the body returned
    made: list[Path] = []
    try:
        for t in targets:
            made += make_parents(t)
        yield tmps
        for tmp, target in zip(tmps, targets):
            if tmp.exists():
                syncing = target
                with open(tmp, "rb+") as f:
                    os.fsync(f.fileno())
                keep_file_mode(tmp, target)  # after the sync: a read-only mode would refuse to reopen it
        for target in targets[1:]:  # the old companions go before the first file is replaced
            target.unlink(missing_ok=True)
        for tmp, target in zip(tmps, targets):
            os.replace(tmp, target)
    except OSError as e:
        # named by the file asked for, not its temporary name (removed below); write() and fsync() name
        # no file: the one being synced, else the one the body was writing
        named = dict(zip(map(str, tmps), targets)).get(str(e.filename), e.filename) if e.filename else None
        failed = named or syncing or _written_last(tmps, targets)
        raise WriteError(os_message(OSError(e.errno, e.strerror or str(e), str(failed)))) from None
    finally:
        for tmp in tmps:
            if tmp.exists():
                tmp.unlink()
        remove_empty(made)


def _written_last(tmps: Sequence[Path], targets: Sequence[Path]) -> Path:
    """The target whose temporary file the body of :func:`atomic_paths` wrote last: the one changed
    last (the later one where the clock cannot tell them apart, as files are written in order), the
    first target where the body made none."""
    found, when = targets[0], -1
    for tmp, target in zip(tmps, targets):
        try:
            changed = tmp.stat().st_mtime_ns
        except OSError:
            continue
        if changed >= when:
            found, when = target, changed
    return found


def keep_file_mode(tmp: Path, target: Path) -> None:
    """Give the new file ``tmp`` the group and permission bits of the file it replaces (a checkpoint
    or cache made group-writable in a shared folder stays so after --force/--overwrite); a new file
    keeps the process's defaults."""
    import stat

    try:
        like = target.stat()
    except OSError:  # no file there yet
        return
    _take_group_and_mode(tmp, like.st_gid, stat.S_IMODE(like.st_mode))


def _take_group_and_mode(path: Path, gid: int, mode: int) -> None:
    """``path`` takes group ``gid`` where the process may give it (it belongs to it, or is root) and
    ``mode`` where the file system keeps modes: one that refuses them (a FAT drive, some network mounts)
    must not fail a write at its very end, after all its work, for the mode alone."""
    try:
        os.chown(path, -1, gid)
    except OSError:  # not a group of this user's: the process's group stays
        pass
    try:
        os.chmod(path, mode)
    except OSError:
        pass


def keep_folder_mode(folder: Path, like: os.stat_result, *, building: bool) -> None:
    """Give ``folder`` the group and permission bits of the folder it is to replace (``like``, its
    stat): a shared folder (group-writable, setgid) must stay so after the swap. The group is
    changed only where the process may (it belongs to it, or is root). ``building``: the body still
    writes into ``folder``, so its owner keeps rwx until the last call (and setgid, set now, gives
    what is written the folder's group)."""
    import stat

    mode = stat.S_IMODE(like.st_mode)
    _take_group_and_mode(folder, like.st_gid, mode | stat.S_IRWXU if building else mode)


def sha256_file(path: str | Path, *, chunk: int = 1 << 20) -> str:
    """The sha256 hex digest of a file's bytes, read in chunks (what a cache's ``weights_sha256``
    records for one weights file, and a marker for each file it lists)."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def special_file(path: str | Path, *, follow: bool = False) -> str | None:
    """What ``path`` is where it is a FIFO, a socket or a device, else None (a file, a folder, a link
    or nothing). A check that reads an existing output to tell whether it is the tool's asks first:
    opening a FIFO blocks until a writer comes, so the run would hang before its work; and
    laya-inspect writes none of these, so none is its to replace. ``follow``: for an input, which is
    read through a link, what the link leads to."""
    try:
        mode = (os.stat if follow else os.lstat)(path).st_mode
    except OSError:
        return None
    return next((what for test, what in _SPECIAL if test(mode)), None)


def utc_now() -> str:
    """When an artifact is written: UTC, to the second, in ISO 8601 ("2026-01-31T12:00:00+00:00")."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def artifact_header(
    kind: str | None = None, *, schema: int | None = None, command: str | None = None, dated: bool = False
) -> dict[str, Any]:
    """The keys an artifact (a summary.json, a head's config, a file's attributes) opens with, those
    asked for, always in this order: ``schema_version``, ``kind``, ``tool_version``, ``created_at``
    (:func:`utc_now`, when ``dated``), ``command``. Readers and docs/FORMATS.md rely on the names."""
    from . import __version__

    return {
        **({} if schema is None else {"schema_version": schema}),
        **({} if kind is None else {"kind": kind}),
        "tool_version": __version__,
        **({"created_at": utc_now()} if dated else {}),
        **({} if command is None else {"command": command}),
    }


def write_bytes(path: str | Path, data: bytes) -> Path:
    return write_with(path, lambda tmp: tmp.write_bytes(data))


def write_text(path: str | Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def json_bytes(obj: Any) -> bytes:
    """``obj`` as indented UTF-8 JSON after :func:`plain` (so NaN is null): what :func:`write_json` writes."""
    return (json.dumps(plain(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def write_json(path: str | Path, obj: Any) -> Path:
    """``obj`` as indented UTF-8 JSON after :func:`plain` (so NaN is null)."""
    return write_bytes(path, json_bytes(obj))


def csv_cell(v: Any) -> Any:
    if v is None or (isinstance(v, (float, np.floating)) and not math.isfinite(float(v))):
        return ""
    return v.item() if isinstance(v, np.generic) else v


def write_csv(path: str | Path, rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> Path:
    """One row per dict; the columns are every key in first-seen order (or ``columns``)."""
    cols = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=cols)
    w.writeheader()
    for r in rows:
        w.writerow({k: csv_cell(v) for k, v in r.items()})
    return write_text(path, buf.getvalue())


def write_with(path: str | Path, writer: Callable[[Path], Any]) -> Path:
    """``writer(tmp)`` writes the file, which then replaces ``path`` atomically."""
    with atomic_path(path) as tmp:
        writer(tmp)
    return Path(path)


_SYNC_FILE_RANGE_WRITE = 2
_sync_file_range: list[Any] = []  # libc's sync_file_range, looked up once (None where there is none)


def start_writeback(fd: int) -> None:
    """Ask the kernel to start writing the file's changed pages to disk now, without waiting (Linux's
    ``sync_file_range``; elsewhere nothing). The disk then writes while the run goes on, so the fsync
    that makes the finished file durable waits only for the last pages. Advisory: errors are ignored."""
    if not _sync_file_range:
        import ctypes

        try:
            fn = ctypes.CDLL(None, use_errno=True).sync_file_range
            fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
        except (AttributeError, OSError, TypeError):  # no such function here (not Linux)
            fn = None
        _sync_file_range.append(fn)
    fn = _sync_file_range[0]
    if fn is not None:
        fn(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)  # 0, 0: the whole file


# Lock descriptors this process holds. A forked child (a worker process, a DataLoader worker) closes
# its copies at once: an flock lasts while any process keeps the descriptor open, so a worker still
# dying after its killed command would otherwise refuse the user's immediate rerun.
_HELD: set[int] = set()


def _drop_inherited_locks() -> None:
    for fd in _HELD:
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_inherited_locks)


# A lock file holds one line, ``laya-inspect lock pid=PID host=HOST boot=BOOT``: a user's file under
# the lock's name (empty, or holding only digits, as the tool's first locks did) is told from ours and
# never emptied nor removed, and a lock of another machine sharing the file system is never taken for
# a killed run's (:func:`elsewhere`): its PID is not ours to ask about, and on a network file system
# whose flocks are local only, its live holder's flock is not seen from here.
LOCK_MAX_BYTES = 256
_LOCK_LINE = re.compile(rb"laya-inspect lock pid=([0-9]{1,7}) host=(\S{1,200}) boot=(\S{1,64})\n?")


def _host() -> str:
    import socket

    return re.sub(r"\s", "_", socket.gethostname()) or "?"


def _boot() -> str:
    """This boot's id (Linux): a PID from before a reboot names no running process; "?" elsewhere."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or "?"
    except OSError:
        return "?"


def elsewhere(owner: tuple[int, str, str]) -> bool:
    """Whether the lock of ``owner`` (:func:`lock_owner`) may be another machine's, whose flock this
    process may not see. One written under this kernel (its boot id: any container on it, whatever its
    host name) is judged by its flock, as is one of this host from before a reboot (gone); one of
    another host and another (or unknown) boot id never is: a run in a fresh machine or container
    cannot be told from a live run on another machine, so such a lock is refused, never taken."""
    boot = _boot()
    return not (boot != "?" and owner[2] == boot) and owner[1] != _host()


def lock_text(pid: int | None = None) -> bytes:
    """What :func:`output_lock` writes in its lock file: a marker, the PID (this process's unless
    ``pid``), this machine's name and boot id."""
    return f"laya-inspect lock pid={os.getpid() if pid is None else pid} host={_host()} boot={_boot()}\n".encode()


def lock_owner(data: bytes) -> tuple[int, str, str] | None:
    """The PID, machine and boot id a lock file of :func:`output_lock` holds; None for anything else."""
    m = _LOCK_LINE.fullmatch(data) if len(data) <= LOCK_MAX_BYTES else None
    pid = pid_of(m.group(1).decode()) if m else None
    if m is None or pid is None:
        return None
    return pid, m.group(2).decode(errors="replace"), m.group(3).decode(errors="replace")


def holder(data: bytes) -> str:
    """Who holds a lock whose file holds ``data``, in words: its PID (and machine, where another), or
    what the file holds instead, as an older laya-inspect wrote it (its PID alone, or nothing)."""
    owner = lock_owner(data)
    if owner is not None:
        return f"PID {owner[0]}" + (f" on {owner[1]}" if owner[1] != _host() else "")
    text = data.decode("utf-8", "backslashreplace").strip()
    if text.isdigit() and len(text) <= 7:
        return f"PID {text}, an older laya-inspect: its lock file holds only the PID"
    if not text:
        return "an older laya-inspect: its lock file is empty, with no PID"
    shown = text[:40] + ("…" if len(text) > 40 else "")
    return f"PID unknown: its lock file holds {shown!r}, not a line 'laya-inspect lock pid=…'"


def lock_content(data: bytes) -> bool:
    """Whether ``data`` is what a lock file of :func:`output_lock` holds (:func:`lock_text`)."""
    return lock_owner(data) is not None


def make_parents(path: str | Path) -> list[Path]:
    """Create the missing folders above output ``path``; returns those it created, deepest first,
    for :func:`remove_empty` once the output is written or given up."""
    missing, folder = [], Path(os.path.abspath(path)).parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return missing


def remove_empty(folders: Sequence[Path]) -> None:
    """Remove each of ``folders`` (deepest first) that is empty: a run stopped or failed before its
    output was in place leaves no empty folder it created (one holding the output, or anything else,
    stays)."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (the output, a user's file, another run's), or gone
            pass


@contextmanager
def output_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on output ``path`` (a hidden ``.<name>.lock`` file beside it holding
    :func:`lock_text`) for the whole body; a second writer is refused with the holder's PID. Forked
    children do not share the lock, so it ends with the process that took it."""
    target = Path(path)
    lock = target.with_name(f".{target.name}.lock")
    if lock.is_symlink():  # opening it would truncate what it points to
        raise InputError(
            f"{lock} is a symlink (to {os.readlink(lock)}), where laya-inspect keeps the lock of {target}; "
            "move it away, or choose another output"
        )
    made: list[Path] = []
    try:
        made = make_parents(target)
        fd = _take_lock(lock, target)
    except BaseException as e:
        remove_empty(made)
        if isinstance(e, OSError):
            raise WriteError(os_message(e, "could not lock")) from None
        raise
    owner = os.getpid()
    _HELD.add(fd)
    try:
        yield
    finally:
        if os.getpid() == owner:  # a forked child leaving this block must not free its parent's lock
            _HELD.discard(fd)
            try:
                mine, now = os.fstat(fd), os.lstat(lock)
                if (mine.st_dev, mine.st_ino) == (now.st_dev, now.st_ino):  # not a file saved there since
                    lock.unlink()
            except OSError:
                pass
            os.close(fd)
            remove_empty(made)


def _take_lock(lock: Path, target: Path) -> int:
    """A descriptor of ``lock`` holding its flock and this run's :func:`lock_text`. A new lock is
    written whole under a temporary name and linked into place, so no run ever sees one empty; an
    existing one is taken over only when no process holds its flock and it holds a lock's line."""
    import fcntl

    nofollow = getattr(os, "O_NOFOLLOW", 0)
    while True:
        fd = _new_lock(lock)
        if fd is not None:
            return fd
        try:
            fd = os.open(lock, os.O_RDWR | nofollow)
        except FileNotFoundError:  # its holder just removed it: make it anew
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            data = os.pread(fd, LOCK_MAX_BYTES + 1, 0)
            os.close(fd)
            raise LockedError(
                f"{target} is being written by another laya-inspect process ({holder(data)}); "
                f"wait for it to finish or choose another output (lock file {lock})"
            ) from None
        # The holder before us may have removed the lock file after we opened it: lock again.
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            continue
        data = os.pread(fd, LOCK_MAX_BYTES + 1, 0)
        owner = lock_owner(data)
        if owner is None:
            os.close(fd)  # a user's file under the lock's name: neither emptied nor removed
            raise InputError(
                f"{lock} is not a lock file this laya-inspect wrote (one holds a line 'laya-inspect lock "
                f"pid=…'), and laya-inspect keeps the lock of {target} there; move it away if it is yours, "
                "delete it if an older laya-inspect left it, or choose another output"
            )
        if elsewhere(owner):
            os.close(fd)
            raise LockedError(
                f"{target} is locked by a laya-inspect run on another machine, or this one under another host name "
                f"({holder(data)}, boot {owner[2]}), "
                f"whose lock cannot be seen from here on a shared file system; if no run there is writing it "
                f"(a killed run, e.g. in an earlier container), delete {lock}; or choose another output"
            )
        os.ftruncate(fd, 0)
        os.pwrite(fd, lock_text(), 0)
        return fd


def _new_lock(lock: Path) -> int | None:
    """A descriptor of a new ``lock`` this run made and holds, or None where one exists already."""
    import fcntl

    # a random tail: a killed run's temporary, left under a name another process of the same PID
    # (PID 1 in every container) would make, must not refuse that process for good
    temp = lock.with_name(f"{temp_file_name(lock.name, os.getpid())}-{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else knows this file yet
        os.write(fd, lock_text())
        try:
            os.link(temp, lock)  # fails where any file (a user's, a symlink) has the name: nothing replaced
        except FileExistsError:
            os.close(fd)
            return None
        except OSError:  # a file system without hard links (FAT, some network ones): made in place
            os.close(fd)
            return _new_lock_in_place(lock)
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        raise
    finally:
        try:
            os.unlink(temp)
        except OSError:
            pass
    return fd


def _new_lock_in_place(lock: Path) -> int | None:
    """:func:`_new_lock` where no hard link can be made: the lock is made under its own name, so for an
    instant it is empty, and a run that finds it so is refused (never the user's file lost)."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, lock_text())
    except BaseException:
        os.close(fd)
        raise
    return fd


def dead_lock_pid(lock: Path) -> int | None:
    """The PID a lock file of :func:`output_lock` holds when the run that wrote it is gone: its process
    no longer exists and no process holds its flock (a run killed with SIGKILL leaves the file). None
    for any other file: a symlink, a user's file, a lock a running writer holds, another machine's
    (:func:`elsewhere`)."""
    try:
        if lock.is_symlink() or not lock.is_file() or lock.stat().st_size > LOCK_MAX_BYTES:
            return None
        owner = lock_owner(lock.read_bytes())
        if owner is None or elsewhere(owner):
            return None
        # a PID of this host and boot is asked about; another container's is not in our PID space,
        # and one from before this boot is gone: the flock alone says
        if owner[1] == _host() and owner[2] == _boot() and running(owner[0]):
            return None
    except OSError:
        return None
    return owner[0] if flock_free(lock) else None


def flock_free(path: Path) -> bool:
    """Whether no process holds a flock on ``path`` (a link, or a file that cannot be opened: False)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a shared lock: taken only when no writer holds it
    except OSError:
        return False
    finally:
        os.close(fd)  # closing the descriptor releases the shared lock
    return True


# Linux never gives a process a larger PID (PID_MAX_LIMIT, 2**22): ``notes.tmp-20240105`` is a date
# the user wrote, not a PID the tool did.
PID_MAX = 2**22


def pid_of(text: str) -> int | None:
    """``text`` as a PID the tool may have put in a temporary name (1 … 2**22, digits only), else None."""
    if not re.fullmatch(r"[0-9]{1,7}", text):
        return None
    pid = int(text)
    return pid if 0 < pid <= PID_MAX else None


def running(pid: int) -> bool:
    """Whether a process ``pid`` other than this one exists (one of another user's counts: it may not
    be signalled). This process's own PID is not: the caller holds the output's lock and has not yet
    made its own temporary, so one under its PID was left by a killed run that had the same PID (in a
    container every run may be PID 1)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists
        return True
    return True


def temp_check(name: str, pid: int) -> str:
    """The check value in the name of the temporary file of ``name`` written by process ``pid``: 8 hex
    digits of the SHA-256 of both. The file's bytes are the writer's (h5py, torch.save, savefig), so
    only its name can say it is the tool's, and a user's ``model.pt.tmp-1`` was taken for one and deleted."""
    import hashlib

    return hashlib.sha256(f"{name}\0{pid}".encode()).hexdigest()[:8]


def temp_file_name(name: str, pid: int) -> str:
    """The name :func:`atomic_paths` writes ``name`` under in process ``pid``: ``NAME.tmp-PID-CHECK``."""
    return f"{name}.tmp-{pid}-{temp_check(name, pid)}"


def temp_file_pid(name: str, entry: str) -> int | None:
    """The PID in ``entry`` when it is a temporary file name of ``name`` the tool gives
    (:func:`temp_file_name`, its check value matching), else None."""
    head, _, rest = entry.rpartition(".tmp-")
    pid_text, _, check = rest.partition("-")
    pid = pid_of(pid_text) if head == name else None
    return pid if pid is not None and check == temp_check(name, pid) else None


def stale_temps(path: str | Path) -> list[Path]:
    """The temporary files and folders a killed run may have left for output ``path``: the file
    ``NAME.tmp-PID-CHECK`` (:func:`atomic_path`, its check value matching) and the folder
    ``.NAME.tmp-PID`` (:func:`atomic_dir`) beside it whose PID is no running process. Nothing else is
    ever named, whatever it looks like: not a plain ``NAME.tmp-PID`` file (a user's, or an older
    version's: :func:`unproven_temps`), not a folder under the file's name nor a file under the
    folder's, not a symlink, not a number no process can have (``results.tmp-20240105``, a date). A
    folder named so is removed only when it proves itself the tool's (:func:`remove_stale_temps`)."""
    target = Path(path)
    prefix = f"{target.name}.tmp-"
    files = pid_named(target, prefix, folder=False, pid_in=lambda rest: temp_file_pid(target.name, prefix + rest))
    return sorted(files + lock_temps(target) + pid_named(target, f".{target.name}.tmp-", folder=True))


def lock_temps(target: Path) -> list[Path]:
    """The temporary files a run killed while it made the lock of ``target`` left
    (``.NAME.lock.tmp-PID-CHECK-RANDOM``, or without the random tail as before): named so, their
    PID no running process, and no process holding their flock (their maker holds it throughout)."""
    lock = target.with_name(f".{target.name}.lock")
    prefix = f"{lock.name}.tmp-"

    def pid_in(rest: str) -> int | None:
        name = prefix + rest
        if re.fullmatch(r".*-[0-9a-f]{8}-[0-9a-f]{8}", rest):
            name = name.rpartition("-")[0]
        return temp_file_pid(lock.name, name)

    return [p for p in pid_named(lock, prefix, folder=False, pid_in=pid_in) if flock_free(p)]


def unproven_temps(path: str | Path) -> list[Path]:
    """Files beside output ``path`` named ``NAME.tmp-PID`` without a check value, PID no running
    process: the temporary name of an older laya-inspect, or a user's own file. Nothing tells them
    apart, so they are left and named in a warning (:func:`remove_stale_temps`)."""
    return pid_named(Path(path), f"{Path(path).name}.tmp-", folder=False)


def pid_named(
    target: Path,
    prefix: str,
    *,
    folder: bool,
    dead_only: bool = True,
    pid_in: Callable[[str], int | None] = pid_of,
) -> list[Path]:
    """The real files (``folder``: folders) beside ``target`` named ``prefix`` then what ``pid_in`` reads
    a PID from, links never, sorted; ``dead_only``: only those whose PID runs no process."""
    found = []
    for p in target.parent.glob(glob.escape(prefix) + "*"):
        pid = pid_in(p.name[len(prefix) :])
        if pid is None or (dead_only and running(pid)) or p.is_symlink():
            continue
        if p.is_dir() if folder else p.is_file():
            found.append(p)
    return sorted(found)


# Written into a temporary folder the moment it is made (:func:`make_temp_dir`): the name and the PID
# alone prove nothing, as a user's `.cmp.tmp-123/` bears both, and a rerun deleted it with their files.
TEMP_MARK = ".laya-inspect.tmp"
_TEMP_MARK_MAX_BYTES = 256


def make_temp_dir(folder: Path) -> None:
    """Create the temporary folder ``folder`` (``.NAME.tmp-PID``) and put the tool's mark in it at once:
    a run killed after this leaves a folder :func:`remove_stale_temps` knows as its own; one killed
    before the mark is written leaves an empty folder, which is removed as well."""
    folder.mkdir(parents=True)
    mark = json.dumps({"written_by": "laya-inspect", "temporary": folder.name, "pid": os.getpid()})
    (folder / TEMP_MARK).write_text(mark + "\n", encoding="utf-8")


def temp_dir_marked(folder: Path) -> bool:
    """Whether ``folder`` carries the mark :func:`make_temp_dir` wrote when it made a folder of this
    name: a plain small file naming the folder and the PID in its name."""
    mark = folder / TEMP_MARK
    try:
        if mark.is_symlink() or not mark.is_file() or mark.stat().st_size > _TEMP_MARK_MAX_BYTES:
            return False
        data = json.loads(mark.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    pid = pid_of(folder.name.rpartition("-")[2])
    return (
        isinstance(data, dict)
        and data.get("written_by") == "laya-inspect"
        and data.get("temporary") == folder.name
        and data.get("pid") == pid
    )


def remove_tree(folder: Path, what: str) -> bool:
    """Remove ``folder``, the tool's own; returns whether it is gone. One holding a folder this process
    may not write in (the user made ``plots/`` read-only) is left whole, and said in a warning naming it
    and why: removed in part, it lost the marks that prove it the tool's, and no later run could remove
    it either."""
    blocked = next((Path(d) for d, _, _ in os.walk(folder) if not os.access(d, os.W_OK | os.X_OK)), None)
    if blocked is None:
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder):
            return True
        try:
            shutil.rmtree(folder)  # again, to learn why: the first pass removed all it could
            return True
        except OSError as e:
            why = os_message(e)
    else:
        why = f"{blocked} is read-only"
    warnings.warn(
        f"{folder} ({what}) could not be removed: {why}; laya-inspect leaves it: make it writable "
        f"(chmod -R u+w {folder}) and delete it yourself",
        stacklevel=3,
    )
    return False


def remove_stale_temps(path: str | Path, *, vouched: Callable[[Path], bool] | None = None) -> list[Path]:
    """Remove :func:`stale_temps` of ``path`` (call it holding :func:`output_lock` on ``path``); returns
    them. A folder goes only when it is the tool's: ``vouched`` says so (out_dir's test: also one its own
    intact marker lists all of), by default only an empty one or one carrying the mark of
    :func:`make_temp_dir`; any other is left as it is
    and named in a warning, as is a file named as an older version's temporary file
    (:func:`unproven_temps`), and one that could not be removed: none of these is returned."""
    for p in unproven_temps(path):
        warnings.warn(
            f"{p} is named like a file an older laya-inspect left while it wrote {path}, but nothing shows it "
            f"is not yours, so it was left as it is: delete it if it is not yours",
            stacklevel=2,
        )
    removed = []
    for p in stale_temps(path):
        if p.is_dir() and not p.is_symlink():
            if not (vouched or _marked_or_empty)(p):
                warn_kept(p, Path(path))
            elif remove_tree(p, f"a temporary folder a killed run on {path} left"):
                removed.append(p)
            continue
        try:
            p.unlink(missing_ok=True)
        except OSError as e:  # the others are still cleared; this one is said, not listed as removed
            warnings.warn(f"{os_message(e, 'could not remove')}, a killed run's temporary file of {path}", stacklevel=2)
            continue
        removed.append(p)
    return removed


def _marked_or_empty(folder: Path) -> bool:
    """A temporary folder known as the tool's by itself: it carries the mark, or was killed as it was made."""
    try:
        return temp_dir_marked(folder) or not any(folder.iterdir())
    except OSError:
        return False


def warn_kept(folder: Path, target: Path) -> None:
    """Say that ``folder``, named as a killed run's temporary folder of ``target``, was left alone."""
    warnings.warn(
        f"{folder} is named like a folder laya-inspect leaves while it writes {target}, but it holds files "
        f"laya-inspect cannot show are its own, so it was left as it is: move it away, or delete it if it "
        f"is not yours",
        stacklevel=3,
    )
