"""Options with a range are refused up front, each with one line that names the flag, the range and the
value: a seed outside what its generators take (--seed on every seeded command), and sizes far beyond
any real use (--bootstrap, --permutations, --n-steps, --thresholds, --rows) that would otherwise end in
a MemoryError traceback or an out-of-memory kill. A MemoryError that gets through anyway is one line too."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.errors import InputError

runner = CliRunner()
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
BIG = str(2**64)


def _one_line(result, says: str) -> None:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert says in " ".join(result.output.split()), result.output


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    """Each seeded command with what it needs before its options (paths that need not exist: the
    options are checked first)."""
    head, cache, out = str(tmp_path / "head"), str(tmp_path / "c.h5"), str(tmp_path / "out")
    return {
        "compare": ["compare", head, "--cache", cache, "--out", out],
        "prune": ["prune", head, "--cache", cache, "--out", out],
        "early-exit": ["early-exit", head, "--cache", cache, "--out", out],
        "diagnose": ["diagnose", head, "--cache", cache, "--out", out],
        "extract": ["extract", "--model", "zoo:mlp", "--data", "digits", "--out", str(tmp_path / "f.h5")],
        "fit-head": ["fit-head", cache, "--out", out],
        "train": ["train", "--model", "zoo:mlp", "--data", "digits", "--out", str(tmp_path / "z.pt")],
        "check": ["check", "planted", "--out", out],
    }


# extract's seed also draws scikit-learn's train/test split (random_state: 0 … 2**32 − 1), and check
# planted's keeps to the same range; the others feed torch and numpy only (0 … 2**64 − 1).
LIMITS = {"extract": "2**32 - 1", "check": "2**32 - 1"}


SEEDED = ["compare", "prune", "early-exit", "diagnose", "extract", "fit-head", "train", "check"]


@pytest.mark.parametrize("command", SEEDED)
@pytest.mark.parametrize("seed", ["-1", BIG])
def test_a_seed_out_of_range_is_one_line_on_every_seeded_command(command: str, seed: str, tmp_path: Path) -> None:
    args = _commands(tmp_path)[command]
    result = runner.invoke(app, [*args, "--seed", seed], env=ENV)
    _one_line(result, f"--seed must be an integer from 0 to {LIMITS.get(command, '2**64 - 1')}, got {seed}")
    assert not (tmp_path / "out").exists()


def test_extract_refuses_a_seed_that_fits_torch_but_not_scikit_learn(tmp_path: Path) -> None:
    args = _commands(tmp_path)["extract"]
    _one_line(runner.invoke(app, [*args, "--seed", str(2**32)], env=ENV), "2**32 - 1, got 4294967296")


def test_the_largest_seed_is_accepted_by_every_config() -> None:
    from laya_inspect.beyond.config import DiagnoseConfig, ExitConfig, PruneConfig
    from laya_inspect.cache.extract_config import ExtractConfig
    from laya_inspect.compare.config import CompareConfig

    for config in (CompareConfig, PruneConfig, ExitConfig, DiagnoseConfig):
        assert config(seed=2**64 - 1).seed == 2**64 - 1
        with pytest.raises(InputError, match=r"--seed must be an integer from 0 to 2\*\*64 - 1, got 1844674407"):
            config(seed=2**64)
    assert ExtractConfig(model="zoo:mlp", data="digits", out="f.h5", seed=2**32 - 1).seed == 2**32 - 1
