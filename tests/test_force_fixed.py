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


def _digits_checkpoint(path: Path) -> Path:
    import torch

    from laya_inspect.models.zoo import build_zoo, save_zoo_checkpoint

    torch.manual_seed(0)
    save_zoo_checkpoint(path, build_zoo("mlp", in_shape=(1, 8, 8), num_classes=10), {})
    return path


@pytest.mark.parametrize("where", ["partial", "shard"])
def test_an_immutable_unfinished_cache_or_shard_is_refused_before_the_work(tmp_path: Path, where: str) -> None:
    """Audit: an immutable OUT.partial was found only when the resume opened it (after the model was
    loaded), or at the final rename; an immutable shard in OUT.shards/ only once --overwrite's whole
    extraction was done and the old shards could not be removed."""
    from laya_inspect.cache.extract import extract_features
    from laya_inspect.cache.extract_config import ExtractConfig
    from laya_inspect.cache.partial import partial_path
    from laya_inspect.cache.shards import shard_dir

    ckpt = _digits_checkpoint(tmp_path / "mlp.pt")
    out = tmp_path / "f.h5"
    config = dict(model="zoo:mlp", weights=str(ckpt), data="digits", limit=40, batch_size=40, device="cpu")
    extract_features(ExtractConfig(**config, out=str(out)))
    if where == "partial":  # a whole cache under the partial name reads as an interrupted one, resumed
        target = partial_path(out)
        os.replace(out, target)
    else:
        shard_dir(out).mkdir()
        target = shard_dir(out) / "rank-00000-of-00002.h5"
        shutil.copyfile(out, target)
    before = target.read_bytes()
    if not _chattr("+i", target):
        pytest.skip("chattr is not available here")
    try:
        with pytest.raises(InputError, match=rf"{target.name}.* immutable .*`chattr -i -a {target}` first"):
            extract_features(ExtractConfig(**config, out=str(out), overwrite=where == "shard"))
    finally:
        _chattr("-i", target)
    assert target.read_bytes() == before
    extract_features(ExtractConfig(**config, out=str(out), overwrite=True))  # cleared: goes through
    assert out.is_file() and not os.path.lexists(partial_path(out)) and not shard_dir(out).exists()
