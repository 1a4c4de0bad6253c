"""`--help` must not pay for torch: the command line is built from torch-free config modules.

Checked by what a fresh interpreter has imported, not by timing (bench/cli_latency.py times it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

from laya_inspect import choices
from laya_inspect.cli import app
from laya_inspect.runtime import DEVICE_HELP

HEAVY = ("torch", "scipy", "matplotlib", "h5py", "captum", "sklearn", "torchvision", "transformers")
COMMANDS = [c.name for c in app.registered_commands]


def _imported_after(code: str) -> dict[str, bool]:
    probe = f"import sys, json\n{code}\nprint(json.dumps({{m: m in sys.modules for m in {list(HEAVY)!r}}}))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_registries_hold_exactly_the_names_the_options_list() -> None:
    from laya_inspect.compare.attribution import METHODS
    from laya_inspect.compare.lolo import ABLATIONS
    from laya_inspect.heads import HEADS

    assert tuple(HEADS.names()) == choices.HEAD_NAMES
    assert tuple(METHODS.names()) == choices.METHOD_NAMES
    assert tuple(ABLATIONS.names()) == choices.ABLATION_NAMES


def test_importing_the_cli_loads_no_heavy_module() -> None:
    loaded = _imported_after("import laya_inspect.cli")
    assert not any(loaded.values()), {m for m, v in loaded.items() if v}


def test_every_commands_help_runs_without_torch() -> None:
    code = (
        "from typer.testing import CliRunner\nfrom laya_inspect.cli import app\nr = CliRunner()\n"
        f"codes = [r.invoke(app, [c, '--help']).exit_code for c in {COMMANDS!r}]\n"
        "assert codes == [0] * len(codes), codes"
    )
    loaded = _imported_after(code)
    assert not any(loaded.values()), {m for m, v in loaded.items() if v}


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_an_example_short_flag_and_no_type_on_flags(command: str) -> None:
    long = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "100"})
    short = CliRunner().invoke(app, [command, "-h"], env={"COLUMNS": "100"})
    assert long.exit_code == 0 and short.exit_code == 0
    assert short.output == long.output
    assert "Example:" in long.output and f"laya-inspect {command}" in long.output
    assert "<bool>" not in long.output  # on/off flags take no value


def test_version_and_bare_help() -> None:
    from laya_inspect import __version__

    r = CliRunner().invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"laya-inspect {__version__}"
    r = CliRunner().invoke(app, ["-h"])
    assert r.exit_code == 0 and all(c in r.output for c in COMMANDS)


def test_an_unknown_head_name_is_refused_without_torch_with_the_valid_names() -> None:
    from laya_inspect.errors import NotFoundError
    from laya_inspect.training.fit_config import resolve_heads

    with pytest.raises(NotFoundError, match="did you mean 'laya'.*available: laya, last, concat, scalarmix"):
        resolve_heads(["lay"])


def test_the_cli_imports_on_a_typer_without_the_flag_column_hook() -> None:
    """cli/app.py hides "<bool>" beside flags by patching typer's TyperOption.display_type_rich,
    which typer 0.27 (inside our declared typer range) lacks: every command once failed at import there. Here
    the option class is one without the method while laya_inspect.cli is imported, then typer's own
    again to draw the help."""
    code = (
        "import sys\nimport typer.core\nreal = typer.core.TyperOption\n"
        "typer.core.TyperOption = type('TyperOption', (), {})\n"
        "from laya_inspect.cli import main\n"
        "typer.core.TyperOption = real\n"
        "sys.argv = ['laya-inspect', 'fit-head', '--help']\nmain()\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "--seeds" in res.stdout


def test_no_option_states_its_default_twice_and_every_device_option_reads_alike() -> None:
    """A comma-list option left empty names the config's default after its help, unless the help
    already says it (fit-head --seeds once read "(default 5) (default 0,1,2,3,4)"); every --device
    names the same devices."""
    import typer.main

    def walk(command: Any, name: str) -> Any:  # `check` is a group of commands
        yield name, command
        for sub, c in getattr(command, "commands", {}).items():
            yield from walk(c, f"{name} {sub}".strip())

    commands = dict(walk(typer.main.get_command(app), ""))
    options = [(n, p) for n, c in commands.items() for p in c.params if p.param_type_name == "option"]
    assert {"fit-head", "compare", "check planted"} <= set(commands) and len(options) > 100
    twice = [f"{n} {p.opts[0]}: {p.help}" for n, p in options if (p.help or "").lower().count("default") > 1]
    assert not twice, twice
    devices = {n: p.help for n, p in options if p.opts[0] == "--device"}  # demo's once said auto|cpu|cuda
    assert len(devices) >= 8 and set(devices.values()) == {DEVICE_HELP}, devices


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_terminal_that_cannot_show_greek_letters_still_gets_the_output(encoding: str) -> None:
    """α, ρ and — once ended every command in a UnicodeEncodeError (after its work was written) on an
    ASCII or Latin-1 stream; they print as "?" there."""
    env = {**os.environ, "PYTHONIOENCODING": encoding, "COLUMNS": "100"}
    run = subprocess.run(
        [sys.executable, "-m", "laya_inspect", "fit-head", "--help"], capture_output=True, env=env, check=False
    )
    assert run.returncode == 0, run.stderr.decode(encoding, "replace")[-300:]
    assert b"LAYA softmax temperature ?" in run.stdout and b"Traceback" not in run.stderr


def test_json_on_stdout_escapes_what_its_encoding_cannot_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from laya_inspect.cli.app import json_text

    for encoding, text in (("latin-1", '{\n  "\\u03b1": "\\u03c1"\n}'), ("utf-8", '{\n  "α": "ρ"\n}')):
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding=encoding))
        assert json_text({"α": "ρ"}) == text


def _examples() -> list[tuple[str, list[str]]]:
    """(command, argv) of each command's `Example:` lines, continuations joined."""
    import shlex

    import typer.main

    root = typer.main.get_command(app)
    found = []
    for name, command in getattr(root, "commands", {}).items():
        for sub in [command, *getattr(command, "commands", {}).values()]:
            doc = sub.help or ""
            if "Example:" not in doc:
                continue
            text = doc.split("Example:", 1)[1].split("\n\n", 1)[0].replace("\\\n", " ")
            argv = shlex.split(text)
            assert argv[0] == "laya-inspect", text
            found.append((name, argv[1:]))
    return found


def test_every_help_example_parses_and_extracts_layers_that_exist() -> None:
    """extract's example once read `--layers features.1:18`, which names no layer: the command
    refused its own example. Each example must parse; extract's --layers must resolve on the model
    it names (torchvision's mobilenet_v2, default layers features.0 … features.18)."""
    import typer.main

    from laya_inspect.layers import resolve_layers

    root = typer.main.get_command(app)
    examples = _examples()
    assert {c for c, _ in examples} >= {"extract", "fit-head", "compare", "prune", "check"}
    for name, argv in examples:
        command = root.commands[name]  # type: ignore[attr-defined]
        args = argv[1:]
        if hasattr(command, "commands"):  # a group: `check planted …`
            command, args = command.commands[args[0]], args[1:]
        command.make_context(name, list(args))  # an unknown option or a bad value raises here
    extract = next(argv for c, argv in examples if c == "extract")
    layers = extract[extract.index("--layers") + 1]
    default = [f"features.{i}" for i in range(19)]
    assert resolve_layers(layers, default, default) == default[1:]
