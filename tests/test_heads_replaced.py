"""A heads folder replaced by another run (fit-head --force) while compare or explain reads it is
refused, not read as a mix of the two runs' heads or files."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

import laya_inspect.compare.loaded as loaded
import laya_inspect.head_dir.folder as folder
from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.errors import CacheError

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def heads(digits_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "heads"
    fast = ["--epochs", "2", "--lr", "1e-2", "--batch-size", "64", "--no-probe", "--seeds", "2"]
    result = CliRunner().invoke(app, ["fit-head", str(digits_cache), "--head", "laya", *fast, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def run(heads: Path, tmp_path: Path) -> Iterator[Path]:
    out = tmp_path / "heads"
    shutil.copytree(heads, out)
    yield out


def swap(out: Path) -> None:
    """What fit-head --force does to its output: the old folder moved aside, the new one renamed in."""
    new = out.with_name("new")
    shutil.copytree(out, new)
    os.replace(out, out.with_name("old"))
    os.replace(new, out)


def seeds(out: Path) -> list[Path]:
    return [out / "laya" / "seed_0", out / "laya" / "seed_1"]


def test_a_run_swapped_in_between_two_heads_is_refused(
    run: Path, digits_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []

    def load_then_swap(*args: Any, **kwargs: Any) -> Any:
        got = folder.load_head(*args, **kwargs)
        calls.append(args)
        if len(calls) == 1:
            swap(run)
        return got

    monkeypatch.setattr(loaded, "load_head", load_then_swap)
    with FeatureStore(digits_cache) as store, pytest.raises(CacheError, match="replaced by another run"):
        loaded.load_heads(seeds(run), store, False, CPU)


def test_a_run_swapped_in_before_the_warnings_are_read_is_refused(run: Path, digits_cache: Path) -> None:
    with FeatureStore(digits_cache) as store:
        got = loaded.load_heads(seeds(run), store, False, CPU)
        swap(run)
        with pytest.raises(CacheError, match=r"seed_0 was replaced by another run while it was read"):
            loaded.head_warnings(got, store, "test")


def test_config_and_weights_of_two_runs_are_refused(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = folder.read_weights

    def swap_then_read(d: Path) -> Any:
        swap(run)
        return read(d)

    monkeypatch.setattr(folder, "read_weights", swap_then_read)
    with pytest.raises(CacheError, match="fit-head --force"):
        folder.load_head(seeds(run)[0])


def test_an_untouched_run_loads(run: Path, digits_cache: Path) -> None:
    with FeatureStore(digits_cache) as store:
        got = loaded.load_heads(seeds(run), store, False, CPU)
        loaded.head_warnings(got, store, "test")
    assert sorted(got) == ["laya-seed_0", "laya-seed_1"]


def test_prune_early_exit_and_diagnose_refuse_seeds_of_two_runs(run: Path, digits_cache: Path) -> None:
    """The multi-seed readers of beyond/ opened each seed on its own: a fit-head --force swapped in between
    seed_0 and seed_1 gave one result of two runs' seeds. trust_lines, which each command reads at its end,
    refuses a seed folder replaced since it was opened; an untouched run still reads."""
    import laya_inspect.beyond.common as common

    with FeatureStore(digits_cache) as store:
        test = common.load_split(store, "test", CPU)
        opened = [common.open_weighted_head(d, store, command="prune") for d in seeds(run)]
        common.trust_lines(store, [(d, c) for d, (_, c) in zip(seeds(run), opened)], test)  # nothing replaced
        swap(run)
        with pytest.raises(CacheError, match=r"seed_0 was replaced by another run while it was read"):
            common.trust_lines(store, [(d, c) for d, (_, c) in zip(seeds(run), opened)], test)


def test_a_head_folder_that_is_not_there_is_named_as_such(tmp_path: Path, digits_cache: Path) -> None:
    """Review: a missing head folder read as "replaced by another run while it was read (fit-head --force?)"
    through the library; load_head's own error names it."""
    from laya_inspect.errors import NotFoundError

    with FeatureStore(digits_cache) as store, pytest.raises(NotFoundError, match="does not exist"):
        loaded.load_heads([tmp_path / "nope"], store, False, CPU)
