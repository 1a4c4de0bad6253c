"""An output that cannot be replaced (immutable or append-only, `chattr +i` / `+a`) is refused
before the work, not found at the final swap once all of it is done (docs/METHOD.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from laya_inspect.errors import InputError
from laya_inspect.out_dir import atomic_dir, check_out, fixed


def _chattr(flag: str, path: Path) -> bool:
    """Set or clear an attribute; False where this machine cannot (not root, no chattr, a file system
    without attributes)."""
    if shutil.which("chattr") is None or os.geteuid() != 0:
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


def _written(path: Path, text: str) -> None:
    with atomic_dir(path, force=True, command="fit-head") as tmp:
        (tmp / "plots").mkdir()
        (tmp / "summary.json").write_text(text)


@pytest.mark.parametrize("flag, inside", [("+i", ""), ("+a", ""), ("+i", "summary.json"), ("+a", "plots")])
def test_an_immutable_or_append_only_output_is_refused_before_the_work(tmp_path: Path, flag: str, inside: str) -> None:
    """Audit: fit-head --force on an immutable --out failed only at the final swap ("could not write …:
    Operation not permitted"), all its work lost; an immutable file inside it let the swap through, then
    left the old output as `.OUT.old-PID` beside the new one, with advice (chmod) that could not help."""
    out = tmp_path / "out"
    _written(out, "old")
    target = out / inside if inside else out
    if not _chattr(flag, target):
        pytest.skip("chattr is not available here")
    try:
        assert fixed(target)
        worked = []
        with pytest.raises(InputError, match=rf"immutable or append-only .*`chattr -i -a {target}` first"):
            with atomic_dir(out, force=True, command="fit-head"):
                worked.append(True)
        assert worked == []  # refused before the body ran
    finally:
        _chattr(flag.replace("+", "-"), target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and (out / "summary.json").read_text() == "old"
    _written(out, "new")  # cleared: replaced as before
    assert (out / "summary.json").read_text() == "new" and not fixed(out)


def test_an_immutable_file_output_is_refused_before_the_work(tmp_path: Path) -> None:
    """extract --overwrite, export and explain --out replace one file: a rename over it fails too."""
    cache = tmp_path / "c.h5"
    cache.write_text("a cache")
    if not _chattr("+i", cache):
        pytest.skip("chattr is not available here")
    try:
        with pytest.raises(InputError, match="immutable"):
            check_out(cache, force=True, command="extract", kind="file", owned=lambda p: None)
    finally:
        _chattr("-i", cache)
    assert check_out(cache, force=True, command="extract", kind="file", owned=lambda p: None) == cache
