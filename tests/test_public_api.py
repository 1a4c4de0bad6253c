"""The public surface: what `laya_inspect` exports, the CLI's version and help, one device rule for every
config, config fields ↔ command-line options, and the file writers' policy (NaN, atomic replacement)."""

from __future__ import annotations

import ast
import csv
import dataclasses
import importlib
import inspect
import json
import math
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

import laya_inspect
from laya_inspect.cli import app
from laya_inspect.errors import InputError
from laya_inspect.files import atomic_path, write_csv, write_json, write_text
from laya_inspect.options import Missing, default_of

ENV = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
COMMANDS = [
    *("demo", "extract", "fit-head", "train", "export-head", "compare", "report", "explain"),
    *("prune", "early-exit", "diagnose", "check"),
]
EXTRACT_REQUIRED = {"model": "zoo:mlp", "data": "digits", "out": "x.h5"}


def _invoke(args: list[str]):  # noqa: ANN202
    return CliRunner().invoke(app, args, env=ENV)


def _config(name: str) -> type:
    module, _, cls = name.rpartition(".")
    return getattr(importlib.import_module(f"laya_inspect.{module}") if module else laya_inspect, cls)


def _build(name: str, **kwargs):  # noqa: ANN003, ANN202
    extra = EXTRACT_REQUIRED if name == "ExtractConfig" else {}
    return _config(name)(**extra, **kwargs)


# ---------------------------------------------------------------------------------------------- exports


def test_every_exported_name_resolves() -> None:
    assert "__version__" in laya_inspect.__all__
    for name in laya_inspect.__all__:
        assert getattr(laya_inspect, name) is not None, name
    assert sorted(dir(laya_inspect)) == sorted(laya_inspect.__all__)
    with pytest.raises(AttributeError):
        laya_inspect.no_such_name  # noqa: B018


def test_the_four_stage_functions_are_functions() -> None:
    from laya_inspect import compare_heads, extract_features, fit_heads, train_joint

    for fn in (extract_features, compare_heads, fit_heads, train_joint):
        assert inspect.isfunction(fn), fn
        assert not inspect.ismodule(fn)


def test_no_export_shadows_a_submodule() -> None:
    submodules = {m.name for m in pkgutil.iter_modules(laya_inspect.__path__)}
    assert {"cli", "compare", "training", "cache", "heads"} <= submodules  # the walk found the package
    assert not submodules & set(laya_inspect.__all__)


# ---------------------------------------------------------------------------------------------- version


def test_version_with_cli_runner() -> None:
    r = _invoke(["--version"])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == f"laya-inspect {laya_inspect.__version__}"


def test_version_in_a_subprocess() -> None:
    env = {**os.environ, **ENV}
    r = subprocess.run(
        [sys.executable, "-m", "laya_inspect", "--version"], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"laya-inspect {laya_inspect.__version__}"


# ---------------------------------------------------------------------------------------------- help


def _click_command(command: str):  # noqa: ANN202
    found = typer.main.get_command(app)
    for word in command.split():  # a group's command: "check planted"
        found = found.commands[word]
    return found


def test_help_lists_every_command() -> None:
    r = _invoke(["--help"])
    assert r.exit_code == 0, r.output
    for command in COMMANDS:
        assert command in r.output
    assert set(typer.main.get_command(app).commands) == set(COMMANDS)


@pytest.mark.parametrize("command", [c if c != "check" else "check planted" for c in COMMANDS])
def test_command_help_shows_its_options(command: str) -> None:
    r = _invoke([*command.split(), "--help"])
    assert r.exit_code == 0, r.output
    assert "--help" in r.output
    options = [p for p in _click_command(command).params if isinstance(p, typer.core.TyperOption)]
    assert options, command
    for p in options:
        for spelling in [*p.opts, *p.secondary_opts]:
            if spelling.startswith("--"):
                assert spelling in r.output, f"{command} --help lacks {spelling}"


# ---------------------------------------------------------------------------------------------- devices

CONFIGS = ["ExtractConfig", "FitConfig", "JointConfig", "CompareConfig"]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("device", ["auto", "cpu", "cuda", "cuda:1"])
def test_every_config_accepts_the_same_devices(config: str, device: str) -> None:
    assert _build(config, device=device).device == device


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("device", ["tpu", "cuda:x"])
def test_every_config_refuses_the_same_devices(config: str, device: str) -> None:
    with pytest.raises(InputError, match="--device"):
        _build(config, device=device)


def test_pick_device_refuses_cuda_without_cuda() -> None:
    import torch

    from laya_inspect.runtime import pick_device

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(InputError, match="--device"):
        pick_device("cuda:0")
    assert pick_device("cpu") == torch.device("cpu")
    assert pick_device("auto") == torch.device("cpu")


# ---------------------------------------------------------------------------------------------- options

# (command, the config whose flagged fields it must offer): "beyond.config.Budget" names a class in
# laya_inspect.beyond.config. prune's and early-exit's report.html rebuilds their command from
# Budget's fields, so a field without its option there once made that command line fail.
COMMAND_OF = [
    ("extract", "ExtractConfig"),
    ("fit-head", "FitConfig"),
    ("train", "JointConfig"),
    ("compare", "CompareConfig"),
    ("prune", "beyond.config.PruneConfig"),
    ("prune", "beyond.config.Budget"),
    ("early-exit", "beyond.config.ExitConfig"),
    ("early-exit", "beyond.config.Budget"),
    ("diagnose", "beyond.config.DiagnoseConfig"),
]


def _overridden(command: str) -> set[str]:
    """The config fields whose typer default the command sets itself: ``opt(Config, "field", default=…)``
    in its signature (it spells the value otherwise, or requires it)."""
    [fn] = [c.callback for c in app.registered_commands if c.name == command]
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return {
        node.args[1].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "opt"
        and any(k.arg == "default" for k in node.keywords)
    }


def _flagged(config: type) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(config) if f.metadata.get("flag")]


@pytest.mark.parametrize(("command", "name"), COMMAND_OF)
def test_every_config_flag_is_an_option_of_its_command(command: str, name: str) -> None:
    config = _config(name)
    fields = _flagged(config)
    assert len(fields) >= 5
    r = _invoke([command, "--help"])
    assert r.exit_code == 0, r.output
    for f in fields:
        for spelling in f.metadata["flag"].split("/"):
            assert spelling in r.output, f"{command} --help lacks {spelling} ({config.__name__}.{f.name})"


@pytest.mark.parametrize(("command", "name"), COMMAND_OF)
def test_typer_defaults_are_the_config_defaults(command: str, name: str) -> None:
    config = _config(name)
    params = {}
    for p in _click_command(command).params:
        for spelling in getattr(p, "opts", []):
            params[spelling] = p
    overridden = _overridden(command)
    configs = [_config(n) for c, n in COMMAND_OF if c == command]  # prune: PruneConfig and Budget
    assert overridden <= {f.name for c in configs for f in _flagged(c)}
    checked = 0
    for f in _flagged(config):
        p = params[f.metadata["flag"].partition("/")[0]]
        if f.name in overridden:
            continue
        want = default_of(config, f.name)
        if want is Missing:
            assert p.required, f"{command} {p.opts}: the config has no default, so the option must be required"
        else:
            assert p.default == want, f"{command} {p.opts}: typer default {p.default!r}, config {want!r}"
        checked += 1
    assert checked >= 5


# ---------------------------------------------------------------------------------------------- files


def test_write_json_writes_nan_and_inf_as_null(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "a.json",
        {"nan": float("nan"), "inf": float("inf"), "np": np.float64("nan"), "ok": 1.5, "xs": [1.0, math.nan]},
    )
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"nan": None, "inf": None, "np": None, "ok": 1.5, "xs": [1.0, None]}


def test_write_csv_writes_nan_and_none_as_empty_cells(tmp_path: Path) -> None:
    rows = [{"a": 1, "b": float("nan"), "c": None}, {"a": np.float32("nan"), "b": 2.5, "c": "x"}]
    path = write_csv(tmp_path / "a.csv", rows)
    with open(path, newline="") as fh:
        got = list(csv.reader(fh))
    assert got == [["a", "b", "c"], ["1", "", ""], ["", "2.5", "x"]]


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = write_text(tmp_path / "out.txt", "old\n")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_path(target) as tmp:
            tmp.write_text("half of the new")
            raise RuntimeError("boom")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
