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


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["compare", "--bootstrap", "1000000000"],
            "--bootstrap must be a whole number from 0 to 100,000, got 1000000000",
        ),
        (["compare", "--n-steps", "1000000000"], "--n-steps must be a whole number from 1 to 10,000, got 1000000000"),
        (["diagnose", "--bootstrap", "1000000000"], "--bootstrap must be a whole number from 0 to 100,000"),
        (["diagnose", "--permutations", "1000000000"], "--permutations must be a whole number from 1 to 100,000"),
        (
            ["early-exit", "--thresholds", "100000000"],
            "--thresholds must be a whole number from 3 to 10,000, got 100000000",
        ),
        (["check", "--rows", "1000000000"], "--rows must be a whole number from 40 to 100,000, got 1000000000"),
    ],
)
def test_a_size_far_beyond_any_real_use_is_one_line_before_any_work(args: list[str], says: str, tmp_path) -> None:
    command, *options = args
    result = runner.invoke(app, [*_commands(tmp_path)[command], *options], env=ENV)
    _one_line(result, says)
    assert not (tmp_path / "out").exists()


def test_the_bounds_themselves_are_accepted() -> None:
    from laya_inspect.beyond.config import DiagnoseConfig, ExitConfig
    from laya_inspect.check.config import PlantedConfig
    from laya_inspect.compare.config import CompareConfig

    assert CompareConfig(n_boot=100_000, n_steps=10_000).n_boot == 100_000
    assert DiagnoseConfig(n_boot=100_000, permutations=100_000).permutations == 100_000
    assert ExitConfig(thresholds=10_000).thresholds == 10_000
    assert PlantedConfig(rows=100_000).rows == 100_000


def _check_raising(exc: type[BaseException], monkeypatch, tmp_path):
    """`check planted` run through the command line with its library call raising ``exc``."""
    import laya_inspect.check.planted as planted

    def raising(*args, **kwargs):
        raise exc

    monkeypatch.setattr(planted, "run_planted", raising)
    return runner.invoke(app, _commands(tmp_path)["check"], env=ENV)


def test_a_memory_error_in_a_command_is_one_line_that_names_what_to_lower(monkeypatch, tmp_path) -> None:
    result = _check_raising(MemoryError, monkeypatch, tmp_path)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: out of memory in check: lower --rows, or run on a machine with more memory"], (
        result.output
    )


def test_ctrl_c_is_one_line_that_says_what_is_left_with_exit_code_130(tmp_path, monkeypatch) -> None:
    """QA: Ctrl-C ended extract, fit-head and compare with exit 130 and no word of what was left on disk."""
    result = _check_raising(KeyboardInterrupt, monkeypatch, tmp_path)
    assert result.exit_code == 130 and "Traceback" not in result.output, result.output
    said = result.stderr.splitlines()[-1]  # after the command's own first line
    assert said.startswith("interrupted: every output is written whole or not at all"), said
    # QA: "FILE.partial" was printed as such, and the demo was told to rerun the command its --out refuses
    from laya_inspect.cli.app import INTERRUPTED

    assert "FILE" not in said and ".partial" in INTERRUPTED["extract"] and "--force" in INTERRUPTED["demo"]


def test_the_python_api_checks_the_seeds_and_explain_its_steps_as_the_command_line_does(tmp_path) -> None:
    """Review: FitConfig(seeds=(2**64,)) ended in an overflow inside a forked worker, JointConfig's
    data_seed 2**40 in scikit-learn's traceback, and explain's --n-steps had no upper bound."""
    from laya_inspect.explain import explain_row
    from laya_inspect.training.fit_head import FitConfig
    from laya_inspect.training.joint import JointConfig

    for bad in ((2**64,), (-1,)):
        with pytest.raises(InputError, match="--seeds must be an integer from 0 to 2\\*\\*64 - 1"):
            FitConfig(heads=("last",), seeds=bad)
    with pytest.raises(InputError, match="data_seed must be an integer from 0 to 2\\*\\*32 - 1"):
        JointConfig(model="zoo:mlp", data="digits", data_seed=2**40)
    with pytest.raises(InputError, match="--n-steps must be a whole number from 1 to 10,000, got 1000000000"):
        explain_row("unused", None, row=0, n_steps=1_000_000_000)  # type: ignore[arg-type]


def test_every_command_names_what_sizes_its_memory() -> None:
    from laya_inspect.cli.app import MEMORY_OPTIONS, memory_message

    commands = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    # every command but the two that read a folder or a head and hold nothing large (report, export-head)
    assert set(MEMORY_OPTIONS) == commands - {"report", "export-head"}
    assert memory_message("compare").startswith("out of memory in compare: lower --limit, --batch-size")


def test_the_diagnose_bootstrap_draws_in_blocks_the_same_resamples_as_all_at_once() -> None:
    import numpy as np

    from laya_inspect.beyond.scoring import auroc, bootstrap_auc

    rng = np.random.default_rng(0)
    y, s = rng.integers(0, 2, 3001), rng.normal(size=3001)  # 666 resamples a block: 3 blocks
    rows = np.random.default_rng([4, 7]).integers(0, len(y), size=(1500, len(y)))
    whole = [auroc(y[r], s[r]) for r in rows]
    assert bootstrap_auc(y, s, n_boot=1500, seed=4)["values"] == whole
