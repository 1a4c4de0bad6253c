"""An output folder and whose it is: the marker a command writes into what it made, the --out
checks every command runs before any work (never a user's folder, never an input, never under a
file), :func:`atomic_dir` that builds a folder beside its target and swaps it in, and the stale
temporary names a killed run leaves. ``--force`` replaces only what the marker lists and what is
unchanged since it was written (docs/RELIABILITY.md).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from .errors import InputError, WriteError, os_message
from .files import (
    LOCK_MAX_BYTES,
    TEMP_MARK,
    dead_lock_pid,
    keep_folder_mode,
    lock_content,
    make_temp_dir,
    output_lock,
    pid_named,
    pid_of,
    remove_stale_temps,
    remove_tree,
    sha256_file,
    special_file,
    temp_dir_marked,
    temp_file_name,
    temp_file_pid,
    utc_now,
    warn_kept,
    write_json,
)

MARKER = ".laya-inspect.json"
# Names laya-inspect itself leaves beside or inside an output while it writes (locks, temporary
# files and folders, a killed run's half-renamed folder). Extract's partial cache is its own only as
# FILE.partial of a FILE the marker lists, and only an HDF5 file (_partial_cache).
# the last form also with a lock temporary's random tail (files.py: .OUT.lock.tmp-PID-CHECK-RANDOM)
_OWN_TEMP = re.compile(r"^\.(.+)\.lock$|^\.(.+)\.(tmp|old)-([0-9]+)$|^(.+)\.tmp-[0-9]+-[0-9a-f]{8}(-[0-9a-f]{8})?$")


def temp_of(name: str) -> list[str]:
    """The names ``name`` is a lock or temporary name of, as laya-inspect gives them (``.OUT.lock``,
    ``.OUT.tmp-PID``, ``OUT.tmp-PID-CHECK`` with its check value (a lock's also with a random tail),
    ``.OUT.old-PID``, PID a number a process can have): none for any other name, a plain
    ``OUT.tmp-PID`` file included (a user's ``notes.tmp-1`` is theirs: :func:`~laya_inspect.files.temp_file_pid`)."""
    m = _OWN_TEMP.match(name)
    if m is None:
        return []
    lock, folder, _kind, folder_pid, file, tail = m.groups()
    if lock is not None:
        return [lock]
    if folder is not None:
        if pid_of(folder_pid) is None:
            return []
        return [folder]
    if tail is not None and not file.endswith(".lock"):  # only a lock's temporary carries the tail
        return []
    return [file] if temp_file_pid(file, name.removesuffix(tail or "")) is not None else []


def own_temp(name: str) -> bool:
    """Whether ``name`` is a name laya-inspect gives its lock files and temporary files and folders
    (:func:`temp_of`), whatever it is of."""
    return bool(temp_of(name))


_SHOWN = 3  # foreign entries named in a refusal


def read_marker(folder: str | Path) -> dict[str, Any] | None:
    """The marker a laya-inspect command wrote into ``folder`` (docs/FORMATS.md), or None."""
    try:
        data = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("written_by") != "laya-inspect"
        or not isinstance(data.get("files"), list)
    ):
        return None
    return data


# Files up to this size get their SHA-256 in the marker, so that --force sees a summary (or a page)
# edited by hand, and a copy made without its times (cp -r) still reads as the command's; larger ones
# (caches, attributions) are not read again to be hashed: their size and mtime are recorded instead,
# which a file saved under the name, or one edited in place, changes. 64 MiB: a report page with its
# plots inlined runs to several MiB, and hashing 64 MiB takes a fraction of a second.
# Not the inode: a copy of the output (cp -a, a restored backup) would lose its files to no edit.
DIGEST_MAX_BYTES = 64 << 20
_EDITED = " (changed since it was written)"
# a large file is known by its size and mtime only, which a copy without its times changes too
_RESTAMPED = " (changed since it was written, or copied without its times: `cp -a` keeps them)"
_NOT_OURS = " (a link or special file, which laya-inspect never writes)"
_UNRECORDED = " (a file the marker records no digest of)"
_EDITED_NOTE = " or that changed since it wrote them"


def write_marker(
    folder: str | Path, command: str, files: Sequence[str] | None = None, *, digest: Iterable[str] = ()
) -> Path:
    """Mark ``folder`` as written by ``command``: the marker names the command, the version, the time
    and the files the command wrote there (every path under ``folder`` now, with the SHA-256 of each
    file of at most DIGEST_MAX_BYTES: :func:`foreign_files` says a file whose content changed since;
    or ``files``, named ahead of writing them, without digests but for those of them in ``digest``);
    a larger file gets its size and mtime instead."""
    from . import __version__

    root = Path(folder)
    if files is None:  # the folder is complete (a list given ahead names files still to be written: demo)
        # the mark of a temporary folder (:func:`atomic_dir`) is removed before the swap: not the output's
        files = [r for p in sorted(root.rglob("*")) if (r := p.relative_to(root).as_posix()) not in (MARKER, TEMP_MARK)]
        digests, stats = _digests(root, files)
    else:
        digests, stats = _digests(root, [f for f in digest if f in files])
    record = {
        "written_by": "laya-inspect",
        "command": command,
        "version": __version__,
        "written": utc_now(),
        "files": sorted(files),
        "sha256": digests,
        "stat": stats,
    }
    return write_json(root / MARKER, record | {"files_digest": _record_digest(record)})


def _record_digest(marker: dict[str, Any]) -> str:
    """SHA-256 of what a marker says is the command's (its command, files and their digests), so that
    a marker edited by hand to list a user's file is not trusted (:func:`foreign_files`). ``stat`` only
    where recorded: a marker written before it keeps its digest."""
    shown = {key: marker.get(key) for key in ("command", "files", "sha256", *(["stat"] if "stat" in marker else []))}
    return hashlib.sha256(json.dumps(shown, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _intact(marker: dict[str, Any]) -> bool:
    """Whether ``marker`` lists what the command wrote it with: one without a digest of its list (an
    earlier version's) is taken as it is, its files held to their time instead (:func:`_edited`)."""
    return "files_digest" not in marker or marker["files_digest"] == _record_digest(marker)


def _digests(root: Path, files: Iterable[str]) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """The SHA-256 of each of ``files`` of at most DIGEST_MAX_BYTES, and the size and mtime of each larger one."""
    found, stats = {}, {}
    for rel in files:
        p = root / rel
        if p.is_file() and not p.is_symlink():
            if (st := p.stat()).st_size <= DIGEST_MAX_BYTES:
                found[rel] = sha256_file(p)
            else:
                stats[rel] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    return found, stats


def record_of(path: str | Path) -> Path:
    """Where laya-inspect records what it wrote as the single file ``path``: ``.NAME.laya-inspect.json``
    beside it (a file carries no marker, and its mark inside stays in a copy a user annotated)."""
    return Path(path).with_name(f".{Path(path).name}{MARKER}")


def take_record(path: Path, command: str, written: dict[Path, Path]) -> dict[str, Any] | None:
    """Call inside the atomic write of ``path`` (and its companions), each target of ``written`` mapped to
    its finished temporary file: records their digests, taken of those temporary files (no file saved
    there since the work began can be taken for the tool's), beside ``path`` before the renames, with
    the previous record's as ``before``: a run killed part-way leaves each file old or new, and --force
    knows both. Returns the record :func:`put_record` writes once all are renamed. None for a file a
    folder's marker lists, or one written into (a folder of) a folder :func:`atomic_dir` builds: that
    marker answers for it."""
    if claimed_by(path) is not None or any(temp_dir_marked(folder) for folder in path.resolve().parents):
        return None
    record: dict[str, Any] = {"written_by": "laya-inspect", "command": command, "written": utc_now()}
    record |= {"file": path.name, "sha256": {}, "stat": {}}
    for target, tmp in written.items():
        sums, stats = _digests(tmp.parent, [tmp.name])
        name = Path(os.path.relpath(target, path.parent)).as_posix()  # a companion may sit in a folder beside it
        record["sha256"] |= {name: sums[tmp.name]} if tmp.name in sums else {}
        record["stat"] |= {name: stats[tmp.name]} if tmp.name in stats else {}
    prior = read_record(path)
    before = {"before": {k: prior[k] for k in ("sha256", "stat")}} if prior is not None else {}
    put_record(path, record | before)
    return record


def put_record(path: Path, record: dict[str, Any] | None) -> None:
    if record is not None:
        write_json(record_of(path), record)


def read_record(path: Path) -> dict[str, Any] | None:
    """The record :func:`take_record` made of ``path``, or None (none, a link, a user's file by its name)."""
    rec = record_of(path)
    try:
        data = None if rec.is_symlink() else json.loads(rec.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("written_by") != "laya-inspect" or data.get("file") != path.name:
        return None
    return data if all(isinstance(data.get(k), dict) for k in ("sha256", "stat")) else None


_MAGIC = ((b"\x89HDF\r\n\x1a\n", "an HDF5 file"), (b"PK\x03\x04", "a zip file (a PyTorch checkpoint's format)"))
_WROTE = {"extract": "a cache", "train": "a checkpoint", "explain": "a figure"}


def what_is(path: Path) -> str:
    """What an existing output of the wrong kind is, for its refusal: whose output it is where
    laya-inspect recorded it, else what its first bytes say (a user's cache or checkpoint)."""
    if path.is_dir():
        marker = read_marker(path)
        head = (path / "config.json").is_file() and (path / "weights.pt").is_file()
        what = "a head directory" if head else "a folder"
        by = marker and marker.get("command")  # a folder built inside another's output is marked "laya-inspect"
        return f"{what} laya-inspect {'' if by == 'laya-inspect' else f'{by} '}wrote" if by else what
    if special := special_file(path):
        return special
    record = read_record(path)
    try:
        with path.open("rb") as f:
            magic = f.read(8)
    except OSError:
        magic = b""
    what = next((said for sig, said in _MAGIC if magic.startswith(sig)), "a file")
    if record is None:
        return what
    return f"{_WROTE.get(record['command'], 'a file')} laya-inspect {record['command']} wrote"


def _said(path: Path) -> str:
    return "" if (what := what_is(path)) in ("a file", "a folder") else f" ({what})"


def unproven_file(path: Path) -> str | None:
    """None when the single file ``path`` and each companion its record lists are as laya-inspect wrote
    them (same SHA-256, or for a large file size and mtime, as a folder's marker proves its files; or
    as its previous record says, where a killed run left one), else what is wrong, naming the file: the
    tool's mark inside a figure survives a user's edits."""
    record = read_record(path)
    if record is None:
        return (
            f"has no record beside it ({record_of(path).name}) of what laya-inspect wrote, so nothing shows it "
            "is unchanged (an earlier version wrote none)"
        )
    before = record.get("before")
    states = [record, *([before] if isinstance(before, dict) else [])]
    states = [st for st in states if all(isinstance(st.get(k), dict) for k in ("sha256", "stat"))]
    for name in dict.fromkeys([path.name, *(n for st in states for key in ("sha256", "stat") for n in st[key])]):
        entry = path.parent / name
        if name != path.name and not os.path.lexists(entry):
            continue  # a companion removed since: nothing of it to lose
        said = [
            _edited(entry, name, st, record_of(path)) for st in states if name in st["sha256"] or name in st["stat"]
        ]
        if "" not in said:
            return f"is not as laya-inspect wrote it: {entry}{said[0] if said else _UNRECORDED}"
    return None


def refresh_digests(folder: str | Path) -> None:
    """Record again the digests of every marked folder under ``folder`` (itself included), for a
    command that rewrote files of outputs it wrote (check planted points their recorded paths at
    the folder they are renamed to); the rest of each marker is kept."""
    for path in sorted(Path(folder).rglob(MARKER)):
        redigest(path.parent)


def redigest(folder: str | Path, files: Sequence[str] | None = None) -> None:
    """Record again the digests of ``files`` (default: every file) that ``folder``'s marker lists and
    its command rewrote in place (`report --html` its page), or the size and mtime of a larger one;
    the rest of the marker is kept, the record of a listed file that is gone included."""
    marker = read_marker(folder)
    if marker is not None and isinstance(marker.get("sha256"), dict):
        # a listed file the user deleted keeps its record: a file saved under its name later is theirs
        listed = [f for f in marker["files"] if (files is None or f in files) and os.path.lexists(Path(folder) / f)]
        record = dict(marker)
        new: tuple[dict[str, Any], ...] = _digests(Path(folder), listed)
        for key, fresh in zip(("sha256", "stat"), new, strict=True):
            old = marker.get(key)
            kept = old if isinstance(old, dict) else {}
            record[key] = {k: v for k, v in kept.items() if k not in listed} | fresh
        if _intact(marker) and "files_digest" in marker:  # an edited marker stays untrusted
            record["files_digest"] = _record_digest(record)
        write_json(Path(folder) / MARKER, record)


def changed_since_written(folder: str | Path, rel: str, marker: dict[str, Any]) -> str:
    """What ``folder/rel``, a file ``folder``'s ``marker`` lists, is instead of what its command wrote, in
    words ("" when unchanged): the rule of --force (:func:`foreign_files`) for a command that rewrites
    one listed file in place (`report --html` its page, which replaced one annotated by hand)."""
    if not _intact(marker):
        return "listed by a marker changed since laya-inspect wrote it"
    return _edited(Path(folder) / rel, rel, marker, Path(folder) / MARKER).strip(" ()")


def _edited(entry: Path, rel: str, marker: dict[str, Any] | None, marker_path: Path) -> str:
    """What ``entry``, a file ``marker`` lists, is instead of what the command wrote ("" when it is
    that): a file whose content no longer has the SHA-256 the marker records (a summary edited by
    hand, another file saved under its name), or for a larger file, no longer the size and mtime it
    records (a file saved under its name, one edited in place); under a marker an earlier version wrote (no
    ``files_digest``, so an edit to its list is not seen), also a file without a digest there that
    changed after the marker was written: a user's file, listed by hand, is newer than the marker;
    under one that records every file (``stat``; not a demo's), a file it records nothing of. A link
    or special file is never what the command wrote."""
    digests, stats = ((marker or {}).get(key) for key in ("sha256", "stat"))
    want = digests.get(rel) if isinstance(digests, dict) else None
    was = stats.get(rel) if isinstance(stats, dict) else None
    if entry.is_symlink() or not entry.is_file():
        # laya-inspect writes neither: one under a listed name (a summary replaced by a link to the
        # user's annotated copy) is the user's, and --force deleted it
        return _NOT_OURS
    try:
        if isinstance(want, str):
            return _EDITED if entry.stat().st_size > DIGEST_MAX_BYTES or sha256_file(entry) != want else ""
        if isinstance(was, dict):
            st = entry.stat()
            return _RESTAMPED if {"size": st.st_size, "mtime_ns": st.st_mtime_ns} != was else ""
        if marker is not None and "files_digest" not in marker and not _before(entry, marker, marker_path):
            return _NEWER
        if (
            marker is not None
            and {"files_digest", "stat"} <= marker.keys()
            and marker.get("command") not in STEPS_REWRITE
        ):
            # such a marker records every file its command wrote (a demo's names listed ahead aside): a
            # file it lists without a record is one saved where a folder was, or listed by hand
            return _UNRECORDED
    except OSError:
        return _EDITED
    return ""


# The marker's time is in whole seconds, written after every file it lists; a file system's clock may
# lag the process's a little (a network mount).
_CLOCK_SLACK_S = 2.0
_NEWER = " (newer than the marker, which an earlier version wrote without a digest)"


def _before(entry: Path, marker: dict[str, Any], marker_path: Path) -> bool:
    """Whether ``entry`` last changed (its ctime, which no tool sets back) before ``marker`` was written:
    before the end of its ``written`` second, and not after the marker file itself last changed. The
    second alone let a file saved in the seconds after the run (a name listed ahead, a marker written
    by hand with the time of day) pass; the file system's own times, to the nanosecond, do not."""
    from datetime import datetime

    try:
        written = datetime.fromisoformat(str(marker.get("written"))).timestamp()
    except ValueError:  # no time: nothing tells the command's files from others
        return False
    changed = entry.lstat().st_ctime_ns
    return changed / 1e9 < written + 1 + _CLOCK_SLACK_S and changed <= marker_path.lstat().st_ctime_ns


def foreign_files(folder: str | Path) -> list[str]:
    """Paths under ``folder`` (relative, sorted) that no laya-inspect marker claims: everything in an
    unmarked folder; in a marked one, what was added after the command wrote it. A marked sub-folder
    (a head directory, a demo's heads/) answers for its own content."""
    root = Path(folder)
    return sorted(_foreign(root, root, read_marker(root)))


def _foreign(root: Path, here: Path, marker: dict[str, Any] | None) -> list[str]:
    if marker is not None and here == root and not _intact(marker):
        raise InputError(
            f"{root / MARKER} was changed since laya-inspect wrote it (the files it lists no longer match "
            f"the digest it records), so --force cannot tell which files in {root} laya-inspect wrote and "
            f"deletes none: move what you keep out of {root} and remove the folder yourself, or choose another output"
        )
    owned = set(marker["files"]) if marker else set()
    found: list[str] = []
    for entry in sorted(here.iterdir()):
        if entry.name == MARKER and marker is not None and here == root:
            continue
        rel = entry.relative_to(root).as_posix()
        partial = rel.endswith(".partial") and rel.removesuffix(".partial") in owned
        if (
            _own_temp_entry(entry, root, owned, marker)
            or (partial and _partial_cache(entry))
            or _killed_run_left(entry)
        ):
            continue
        if rel not in owned:
            found.append(rel + ("/" if entry.is_dir() and not entry.is_symlink() else ""))
        elif entry.is_dir() and not entry.is_symlink():
            inner = read_marker(entry)
            if inner is not None:
                found += [f"{rel}/{p}" for p in _foreign(entry, entry, inner)]
            else:
                found += _foreign(root, entry, marker)
        elif what := _edited(entry, rel, marker, root / MARKER):
            found.append(rel + what)
    return found


def _own_temp_entry(entry: Path, root: Path, owned: set[str], marker: dict[str, Any] | None) -> bool:
    """A lock or temporary name (:func:`temp_of`) of a path the marker lists, or of the marker itself:
    inside an output the tool writes nothing else, so a user's ``notes.tmp-1`` is theirs (1 can be a
    PID; --force deleted it with the folder). A lock's is told by content too: a lock holds its line
    (:func:`~laya_inspect.files.lock_text`), so a user's ``.heads.lock`` holding anything else is
    theirs. Never a link, nor a folder of a path the marker records as a file (digest, or size and
    time): the tool's temporary folders are of folders, so a user's ``.summary.json.tmp-7/`` is theirs."""
    rels = {(entry.parent / name).relative_to(root).as_posix() for name in temp_of(entry.name)}
    if entry.is_symlink() or not any(rel in owned or rel == MARKER for rel in rels):
        return False
    if entry.name.endswith(".lock"):
        try:
            return entry.is_file() and entry.stat().st_size <= LOCK_MAX_BYTES and lock_content(entry.read_bytes())
        except OSError:
            return False
    if entry.is_dir():
        record = marker or {}
        files = {f for key in ("sha256", "stat") if isinstance(record.get(key), dict) for f in record[key]}
        return not any(rel in files or rel == MARKER for rel in rels) and _holds_only_own(entry)
    return True


def _holds_only_own(folder: Path) -> bool:
    """Whether ``folder``, named as a temporary folder of a listed one, holds nothing but what
    laya-inspect wrote: nothing at all (killed as it was made), or what its own intact marker lists
    unchanged (a swap's previous output). The name alone was taken as proof, and --force deleted a
    user's ``.plots.tmp-123/mine.png`` with the folder around it. A temporary folder the tool made
    carries its mark (:func:`~laya_inspect.files.make_temp_dir`)."""
    if temp_dir_marked(folder):
        return True
    try:
        return not foreign_files(folder)
    except (InputError, OSError):  # its marker was edited: nothing in it is known to be the tool's
        return False


def _killed_run_left(entry: Path) -> bool:
    """Whether ``entry`` is the lock or temporary file or folder of a killed run writing an output that
    lies inside this one (`compare --out heads/cmp`, killed with SIGKILL): only both together prove it,
    the lock ``.X.lock`` holding the PID of a run that is gone (:func:`dead_lock_pid`) beside
    ``.X.tmp-PID`` or ``X.tmp-PID-CHECK`` of that PID. Not ``.X.old-PID``: the previous output of a swap
    cut short, which the next run on X puts back."""
    for target in temp_of(entry.name):
        if entry.name == f".{target}.old-{entry.name.rpartition('-')[2]}":
            return False
        pid = dead_lock_pid(entry.parent / f".{target}.lock")
        if pid is None:
            continue
        temps = [entry.parent / f".{target}.tmp-{pid}", entry.parent / temp_file_name(target, pid)]
        temps = [t for t in temps if t.exists() and not t.is_symlink()]
        if temps and (entry.name == f".{target}.lock" or entry in temps):
            return True
    return False


def _partial_cache(entry: Path) -> bool:
    """Whether ``entry`` (``FILE.partial`` of a ``FILE`` the marker lists) can be extract's interrupted
    cache: a plain file that starts as HDF5 does, or an empty one (killed as it was made). A user's
    ``summary.json.partial`` (a draft) is not: --force deleted it with the folder. Only the signature
    is read, as a killed run's partial file may be too damaged for libhdf5."""
    from .cache.schema import HDF5_SIGNATURE

    if entry.is_symlink() or not entry.is_file():
        return False
    try:
        with open(entry, "rb") as f:
            return f.read(len(HDF5_SIGNATURE)) in (HDF5_SIGNATURE, b"")
    except OSError:
        return False


def spec_paths(spec: str | None) -> list[Path]:
    """The file or folder a data spec names (``imagefolder:DIR``, ``csv:FILE``, a bare path), where one
    exists: an input an output must not overwrite or be written into."""
    if not spec:
        return []
    return [p for p in {Path(spec), Path(spec.partition(":")[2])} if str(p) not in ("", ".") and p.exists()]


def refuse_symlink(path: str | Path, flag: str = "--out") -> Path:
    """Refuse an output that is a symlink: what it points to is not the run's to replace."""
    out = Path(path)
    if out.is_symlink():
        raise InputError(
            f"{flag} {out} is a symlink (to {os.readlink(out)}); laya-inspect does not write through links: "
            f"give the real path, or another {flag}"
        )
    return out


def refuse_non_utf8(path: str | Path, inputs: Iterable[str | Path | None] = (), flag: str = "--out") -> None:
    """Refuse an output or input path whose name is not UTF-8 (bytes another locale wrote, which Python
    keeps as surrogates): every output records its paths and command line in UTF-8 (summary.json, the
    marker, a cache's attributes), which cannot hold them, so the run failed with a traceback after all
    its work."""
    for given, said in [(path, flag), *((p, "this run's input") for p in inputs if p is not None)]:
        text = os.fsdecode(given)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(text).decode("utf-8", "backslashreplace")
            way = f"rename it, or choose another {flag}" if said == flag else "rename it"
            raise InputError(
                f"{said} {shown} is not a UTF-8 name, and laya-inspect records the paths of a run in UTF-8 "
                f"(summary.json, the output's marker): {way}"
            ) from None


def file_out(text: str, example: str, flag: str = "--out") -> Path:
    """The path of an output that is one file, from the text as the user typed it: a trailing slash
    means a folder (``Path`` would drop it and write a file under the folder's name), so it is refused."""
    if text.endswith(("/", os.sep)) or (os.altsep is not None and text.endswith(os.altsep)):
        raise InputError(f"{flag} {text} names a folder; give a file path such as {Path(text) / example}")
    return Path(text)


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_out(
    path: str | Path,
    *,
    force: bool,
    command: str | None,
    inputs: Iterable[str | Path | None] = (),
    flag: str = "--out",
    kind: str = "folder",
    owned: Callable[[Path], str | None] | None = None,
    force_flag: str = "--force",
    renamed: bool = True,
    recorded: bool = False,
) -> Path:
    """Refuse, before any work, an output that would lose something that is not this run's to lose:
    a symlink; the current folder, one above it, the home folder or one above it; an output that
    holds, is, or lies inside one of the run's ``inputs``; a file where a folder is wanted (or the
    reverse); a non-empty folder unless ``force`` and every file in it was written by ``command``
    (its marker, :func:`foreign_files`); and with ``force``, an existing file unless ``owned(path)``
    says laya-inspect wrote it (it returns None, else what the file is instead) and no other output
    lists it (:func:`claimed_by`; a demo's, whose printed steps rewrite its files, aside). ``kind``: ``folder``
    or ``file``; an existing file without ``force`` is the caller's to refuse or resume. ``renamed``:
    the folder is written whole and renamed into place (:func:`atomic_dir`), so a mount point is
    refused; False for a command that writes inside the folder (demo). ``recorded``: the file's writer
    records it beside it (:func:`take_record`), and ``force`` replaces it only as recorded. A path that is
    not UTF-8 is refused too (:func:`refuse_non_utf8`). Returns ``path``."""
    refuse_non_utf8(path, inputs, flag)
    out = refuse_symlink(path, flag)
    _refuse_file_above(out, flag)
    if kind == "file" and out.is_dir():
        raise InputError(f"{flag} {out} is a folder{_said(out)}; give a file name such as {out / 'out'}")
    if kind == "folder" and out.exists() and not out.is_dir():
        raise InputError(f"{flag} {out} is a file{_said(out)}; give a folder")
    real = out.resolve()
    if kind == "folder":
        cwd, home = Path.cwd().resolve(), Path.home().resolve()
        if _under(cwd, real) or _under(home, real):
            where = "the current folder" if real == cwd else "the home folder" if real == home else "a folder above"
            where += "" if real in (cwd, home) else " the current or the home folder"
            # demo writes inside its folder: it would mark the user's folder its own output instead
            does = (
                f"laya-inspect replaces its {flag} whole"
                if renamed
                else f"{_writer(command)} marks its {flag} as its own output and writes its files into it"
            )
            raise InputError(f"{flag} {out} is {where}; {does}: give a new sub-folder, e.g. {flag} {out / 'results'}")
    # a rename onto a mount point fails; checked after the folders above, which say more of / or a home
    if renamed and kind == "folder" and out.is_dir() and os.path.ismount(out):
        raise InputError(
            f"{flag} {out} is a mount point; laya-inspect writes its {flag} whole and renames it into place, "
            f"which a mount point refuses: give a folder inside it, e.g. {flag} {out / 'results'}"
        )
    for given in inputs:
        if given is None or not Path(given).exists():  # a spec that names no file on this machine
            continue
        src = Path(given).resolve()
        if _under(src, real):
            what = "is" if src == real else "holds"
            raise InputError(f"{flag} {out} {what} this run's input {given}; choose an {flag} outside it")
        if src.is_dir() and _under(real, src):
            raise InputError(f"{flag} {out} lies inside this run's input {given}; choose an {flag} outside it")
    if kind == "folder" and out.is_dir() and any(out.iterdir()):
        if not force:
            raise InputError(
                f"{flag} {out} is not empty; pass --force to replace it (only a folder laya-inspect wrote), "
                f"or choose another {flag}"
            )
        _check_ours(out, command, flag)
    record = record_of(out)
    if recorded and os.path.lexists(record) and read_record(out) is None:  # a user's file under its name
        raise InputError(
            f"{flag} {out} is recorded in {record}, which is not a record laya-inspect wrote; laya-inspect "
            f"never replaces it: move it away, or choose another {flag}"
        )
    if kind == "file" and force and out.exists():
        # Only the file's content says which command's kind it is, so a command that cannot tell
        # (no ``owned``) replaces nothing; and only its record (``recorded``), that it is unchanged.
        why = owned(out) if owned is not None else "may not be laya-inspect's"
        claim = claimed_by(out) if why is None else None
        if claim is not None and claim[1].get("command") not in STEPS_REWRITE:
            why = _part_of(claim)  # a check planted's cache: its verdict would be of another file
        elif why is None and claim is None and recorded:
            why = unproven_file(out)
        if why is not None:
            raise InputError(
                f"{flag} {out} {why}; {force_flag} replaces only a file {_writer(command)} wrote: "
                f"choose another {flag}, or move it away yourself"
            )
    refuse_fixed(out, f"{flag} {out}", f"choose another {flag}")
    return out


# FS_IOC_GETFLAGS of linux/fs.h (what `lsattr` reads) and its FS_IMMUTABLE_FL | FS_APPEND_FL bits
_GETFLAGS, _FIXED = 0x80086601, 0x10 | 0x20


def fixed(path: Path) -> bool:
    """Whether ``path`` (not followed) is immutable or append-only (``chattr +i`` / ``+a``): not even
    root may rename or delete it. False where the file system or the platform cannot say."""
    import sys

    if sys.platform != "linux" or path.is_symlink() or not (path.is_file() or path.is_dir()):
        return False
    import fcntl
    import struct

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        flags = struct.unpack("i", fcntl.ioctl(fd, _GETFLAGS, bytes(8))[:4])[0]
    except OSError:  # a file system without these attributes
        return False
    finally:
        os.close(fd)
    return bool(flags & _FIXED)


def refuse_fixed(path: Path, said: str, other: str = "choose another --out") -> None:
    """Refuse, before the work, an existing ``path`` laya-inspect would replace, delete or append to:
    immutable or append-only itself (the swap's rename would fail once all the work was done), or
    holding such a file or folder (the previous output could not be deleted after the swap, and would
    be left beside it). ``said`` names it in the refusal (``--out OUT``, extract's unfinished cache
    beside it), ``other`` is the way out besides `chattr`."""
    if path.is_symlink() or not path.exists():
        return
    found = [path] if fixed(path) else []
    if not found and path.is_dir():
        for folder, dirs, files in os.walk(path):
            found += [p for p in (Path(folder) / n for n in [*dirs, *files]) if fixed(p)][:1]
            if found:
                break
    if found:
        where = " is" if found[0] == path else f" holds {found[0]}, which is"
        raise InputError(
            f"{said}{where} immutable or append-only (`lsattr -d {found[0]}` shows i or a), so laya-inspect "
            f"could not replace it: `chattr -i -a {found[0]}` first, or {other}"
        )


# Outputs whose files the steps they print may rewrite one by one (`train --force --out
# DEMO/backbone.pt`; `report` then says what is stale). A file another output lists is that output's:
# a command that writes one file does not replace it on its own.
STEPS_REWRITE = ("demo",)


def _refuse_file_above(out: Path, flag: str) -> None:
    """Refuse an output under a path that is a file (``notes.txt/results``), or in a folder this process
    may not write in (read-only, another user's, a read-only mount): no folder can be made there, and
    the lock or temporary name beside the output would fail only after the run's work (compare's
    attributions), naming the lock."""
    for above in Path(os.path.abspath(out)).parents:
        if above.exists():
            if not above.is_dir():
                raise InputError(
                    f"{flag} {out} lies under {above}, which is a file, not a folder; choose another {flag}"
                )
            denied = unwritable(above)
            if denied is not None:
                raise InputError(f"{os_message(denied, f'{flag} {out}: cannot write in')}; choose another {flag}")
            return


def unwritable(folder: Path) -> OSError | None:
    """The error a file made in the existing ``folder`` would meet (a read-only mount, a folder this
    process may not write in), for a refusal before any work; None where one can be made."""
    if os.access(folder, os.W_OK | os.X_OK):
        return None
    try:
        code = errno.EROFS if os.statvfs(folder).f_flag & os.ST_RDONLY else errno.EACCES
    except OSError:
        code = errno.EACCES
    return OSError(code, os.strerror(code), str(folder))


def claimed_by(path: str | Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest folder above ``path`` whose marker lists it, and that marker: the file is then part
    of the output of the command the marker names. None for a file no marker claims."""
    real = Path(path).resolve()
    for folder in real.parents:
        marker = read_marker(folder)
        if marker is not None:
            return (folder, marker) if real.relative_to(folder).as_posix() in marker["files"] else None
    return None


def _check_ours(out: Path, command: str | None, flag: str) -> None:
    marker = read_marker(out)
    if marker is not None and command is not None and marker.get("command") != command:
        raise InputError(
            f"{flag} {out} {_whose(out, marker, command)}; "
            f"--force replaces only a folder the same command wrote: choose another {flag}"
        )
    if marker is None and any(out.iterdir()):
        claim = claimed_by(out)  # a folder inside another output (a fit-head output's demo/heads/laya)
        if claim is not None:
            raise InputError(
                f"{flag} {out} {_part_of(claim)}; --force replaces only a whole folder "
                f"{command or 'laya-inspect'} wrote: choose another {flag}"
            )
    foreign = foreign_files(out)
    if foreign:
        shown = ", ".join(foreign[:_SHOWN]) + (f" and {len(foreign) - _SHOWN} more" if len(foreign) > _SHOWN else "")
        edited = _EDITED_NOTE if any(f.endswith((_EDITED, _RESTAMPED, _NEWER)) for f in foreign) else ""
        raise InputError(
            f"{flag} {out} holds files {_writer(command)} did not write{edited} ({shown}); --force never deletes them: "
            f"choose another {flag}, or empty it yourself{_left_note(out, foreign)}{_old_lock_note(out, foreign)}"
        )


def _old_lock_note(out: Path, foreign: Sequence[str]) -> str:
    """What to do with foreign entries named as a lock (``.X.lock``) that hold what an older laya-inspect
    wrote there (its PID alone, or nothing): a run on X refuses them too (:func:`~laya_inspect.files.output_lock`),
    so only the user can remove them. A lock name holding anything else is left unsaid: it may be notes."""
    old = []
    for rel in foreign:
        entry = out / rel
        if (
            rel.endswith("/")
            or entry.is_symlink()
            or not _OWN_TEMP.match(entry.name)
            or not entry.name.endswith(".lock")
        ):
            continue
        try:
            text = entry.read_bytes()[: LOCK_MAX_BYTES + 1] if entry.is_file() else b"-"
        except OSError:
            continue
        if len(text) <= LOCK_MAX_BYTES and (not text.strip() or text.strip().isdigit()):
            old.append(rel)
    if not old:
        return ""
    named = ", ".join((out / rel).as_posix() for rel in old[:_SHOWN])
    return (
        f"; {named} holds no line 'laya-inspect lock pid=…', as a lock an older laya-inspect left holds its PID "
        "alone or nothing: delete it if an older laya-inspect left it, move it away if it is yours"
    )


def _left_note(out: Path, foreign: Sequence[str]) -> str:
    """What to do with foreign entries named as a laya-inspect run's temporary names (:func:`temp_of`)
    whose lock does not prove them a killed run's (:func:`_killed_run_left`): the run on that output
    clears them, or puts back the previous output a swap cut short left as ``.X.old-PID``."""
    targets = []
    for rel in foreign:
        folder, _, name = rel.rstrip("/").rpartition("/")
        entry = out / folder / name
        # a link, or a folder holding what laya-inspect cannot show is its own, is kept by that run too
        # (a folder named in a warning), so it is not said to clear it: the user would rerun it and meet
        # this refusal again
        if entry.is_symlink() or rel.endswith("/") and not _holds_only_own(entry):
            continue
        # a listed path's temporary name is refused for what it holds (:func:`_holds_only_own`), and a
        # run on that path would delete it with the user's files inside
        targets += [(out / folder / t).as_posix() for t in temp_of(name)[:1] if claimed_by(out / folder / t) is None]
    if not targets:
        return ""
    named = ", ".join(sorted(set(targets))[:_SHOWN])
    return (
        f"; those named as laya-inspect's temporary files are of {named}: the command that writes it clears "
        f"them when run on it again (and puts back an output its killed run had moved aside)"
    )


def _writer(command: str | None) -> str:
    """Who wrote what --force may replace: the command, not laya-inspect at large (another command's
    figure saved inside this output is laya-inspect's, yet not this command's to delete)."""
    return f"laya-inspect {command}" if command and command != "laya-inspect" else "laya-inspect"


def _whose(out: Path, marker: dict[str, Any], command: str) -> str:
    """Whose output the marked folder ``out`` is, in words: a head directory (marked by no command of
    its own) is named by the output that holds it."""
    if marker.get("command") == "laya-inspect":
        claim = claimed_by(out)
        if claim is not None:
            return _part_of(claim)
        return (
            "holds a head directory laya-inspect wrote"
            if (out / "config.json").exists()
            else ("holds a folder laya-inspect wrote")
        )
    return f"holds the output of `laya-inspect {marker.get('command')}`, not of {command}"


def _part_of(claim: tuple[Path, dict[str, Any]]) -> str:
    folder, marker = claim
    try:
        shown = folder.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        shown = str(folder)
    return f"is part of the output of `laya-inspect {marker.get('command')}` in {shown}"


@contextmanager
def atomic_dir(
    path: str | Path,
    *,
    force: bool = False,
    command: str | None = None,
    inputs: Iterable[str | Path | None] = (),
    flag: str = "--out",
    lock: bool = True,
    mark: bool = True,
) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``path``; when the body returns, the folder is marked as
    ``command``'s (:func:`write_marker`) and replaces ``path`` whole. An existing ``path`` is replaced
    only with ``force`` and only when laya-inspect wrote every file in it (:func:`check_out`, checked
    again just before the swap, so a file added during the run is not lost). When the body raises, the
    temporary folder is removed and ``path`` is left as it was. ``mark=False``: the body writes the
    marker itself (a demo's lists its names, and leaves the files its printed steps rewrite undigested).
    What the cleanup of killed runs' leftovers warned (a folder kept as not the tool's) is added to the
    ``warnings`` of its summary.json after the body (export-head, whose record is export.json, records it
    itself); the body reads it first with :func:`run_notes` (a page
    built inside the body says it too)."""
    inputs = list(inputs)
    check_out(path, force=force, command=command, inputs=inputs, flag=flag)
    # the folder check_out checked: "link/../x" is where the link points, not the lexical ./x (which
    # --force replaced instead); "x/.." has no name of its own for the temporary siblings
    out = Path(os.path.realpath(path))
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    with output_lock(out) if lock else nullcontext():
        with warnings.catch_warnings(record=True) as cleanup:
            warnings.simplefilter("always")
            put_back = _remove_stale(out)
        # said once, here, and kept in the new output's summary: stderr alone scrolls away
        notes = [str(w.message) for w in cleanup]
        for w in cleanup:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if put_back:  # a killed swap's previous output is back: checked as any --out is (no --force)
            check_out(path, force=force, command=command, inputs=inputs, flag=flag)
        # one left above as not the tool's, under this process's own PID (in a container each run may be
        # PID 1): the cleanup below would otherwise remove it as this run's own
        for taken in (tmp, old):
            if os.path.lexists(taken):
                raise InputError(
                    f"{taken} is where laya-inspect (PID {os.getpid()}) builds or moves aside {flag} {path}, "
                    f"and it holds what laya-inspect cannot show is its own: move it away, or choose another {flag}"
                )
        try:
            make_temp_dir(tmp)
            _NOTES[tmp] = notes
            if out.is_dir():  # a folder the user made (a shared one) keeps its mode and group
                keep_folder_mode(tmp, out.stat(), building=True)
            yield tmp
            if notes and mark:  # a body that wrote its own marker recorded its files' digests
                record_notes(tmp / "summary.json", notes)
            if mark:
                write_marker(tmp, command or "laya-inspect")
            # from here the output's own marker vouches for the folder (a demo's body wrote its own)
            (tmp / TEMP_MARK).unlink(missing_ok=True)
            if out.exists() or out.is_symlink():  # made during the run (a copy, a link): --force as at the start
                check_out(out, force=force, command=command, flag=flag)
            if out.is_dir():
                keep_folder_mode(tmp, out.stat(), building=False)
            if out.exists():
                os.replace(out, old)
            os.replace(tmp, out)
        except (OSError, WriteError) as e:  # a full disk names a file in the temporary folder, removed below
            said = os_message(e) if isinstance(e, OSError) else str(e)
            # named by the path the user asked for: the hidden temporary folder is gone when they read it
            said = re.sub(re.escape(str(tmp)) + r"(?![0-9])", lambda _: str(Path(path)), said)
            # a folder written inside another output's temporary folder (a head directory: no lock of
            # its own) is not one the user named: that output's line says what was kept
            raise WriteError(f"{said}; {flag} {path} was left as it was" if lock else said) from None
        finally:
            _NOTES.pop(tmp, None)
            if old.exists() and not out.exists():  # stopped between the two renames: the old one goes back
                os.replace(old, out)
            if tmp.exists():
                remove_tree(tmp, f"the unfinished {flag} {path}")
            if old.exists() and _holds_only_own(old):
                remove_tree(old, f"the previous {flag} {path}, replaced")
            elif old.exists():  # written into the output after its last check, before the rename
                _warn_added(old, flag, path)


def _warn_added(old: Path, flag: str, path: str | Path) -> None:
    """Say that the previous output, moved aside as ``old`` by the swap, was kept: something was
    written into it after its last check (another command's figure saved there meanwhile)."""
    try:
        shown = ", ".join(foreign_files(old)[:_SHOWN])
    except (InputError, OSError):  # its marker was edited: nothing in it is known to be the tool's
        shown = "its marker was changed"
    warnings.warn(
        f"{old} is the previous {flag} {path}, replaced, and it holds what laya-inspect did not write, added "
        f"after {flag} was checked ({shown}), so it was left as it is: move what you keep out of it, then delete it",
        stacklevel=4,
    )


# what each atomic_dir's cleanup warned, by the temporary folder it builds: read by the body's writers
_NOTES: dict[Path, list[str]] = {}


def run_notes(folder: str | Path) -> list[str]:
    """What the cleanup before the output now being built in the temporary ``folder`` warned (a killed
    run's leftover kept as not the tool's), for a writer inside :func:`atomic_dir`'s body to record or
    show; [] for any other folder."""
    return list(_NOTES.get(Path(os.path.realpath(folder)), []))


def with_run_notes(record: dict[str, Any], folder: str | Path) -> dict[str, Any]:
    """``record`` (a summary being written or read inside :func:`atomic_dir`'s body) with the
    :func:`run_notes` of ``folder`` after its own ``warnings``, as the finished output's file will list
    them; ``record`` itself where there are none."""
    notes = run_notes(folder)
    if not notes or not isinstance(record.get("warnings", []), list):
        return record
    said = list(record.get("warnings") or [])
    return record | {"warnings": [*said, *(n for n in notes if n not in said)]}


def record_notes(summary: Path, notes: Sequence[str]) -> None:
    """Add ``notes`` to the ``warnings`` of the output's ``summary`` (what a command's summary.json
    lists as what its run warned about), when the command wrote one that has that list; a note the body
    recorded itself (:func:`run_notes`) is not added twice."""
    try:
        record = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # no summary (a head directory inside an output): the warning on stderr says it
        return
    if isinstance(record, dict) and isinstance(record.get("warnings"), list):
        new = [n for n in notes if n not in record["warnings"]]
        if new:
            write_json(summary, record | {"warnings": [*record["warnings"], *new]})


def _remove_stale(out: Path) -> bool:
    """Temporary folders and files of killed runs on this output (we hold its lock). A run killed
    between the two renames left the previous output as ``.OUT.old-PID``: put back where ``out`` is
    missing, else removed. Only that exact name with a number a PID can be, a real folder that holds
    nothing laya-inspect did not write (empty, or what its intact marker lists, as the previous
    output was when --force let it be replaced): a user's ``.OUT.old-backup``, or a ``.OUT.old-123``
    of their own files, is neither moved nor deleted, but named in a warning. Whether that PID runs
    now is not asked: only a run holding this output's lock swaps it, and we hold it, so a live
    process under that PID is another one that got the number since (the leftover would otherwise
    stay, hidden, for good). Returns whether a previous output was put back."""
    remove_stale_temps(out, vouched=_holds_only_own)
    put_back = False
    for p in moved_aside(out):
        if not _holds_only_own(p):
            warn_kept(p, out)
        elif not out.exists() and not out.is_symlink():
            os.replace(p, out)
            put_back = True
        else:
            remove_tree(p, f"the previous output of {out}, which a killed run had moved aside")
    return put_back


def moved_aside(out: str | Path) -> list[Path]:
    """The folders ``.OUT.old-PID`` beside output ``out``: where a run killed between the two renames of
    :func:`atomic_dir` left the previous output (real folders, PID a number a process can have)."""
    target = Path(out)
    return pid_named(target, f".{target.name}.old-", folder=True, dead_only=False)
