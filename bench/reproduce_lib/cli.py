"""bench/reproduce: run the reproduction benchmark and write docs/RESULTS.md (see --help)."""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import os
import signal
import sys
import time
from pathlib import Path

from plans import EXPERIMENTS, SETTINGS, plan, tiny_bert_fallback
from runner import Runner, StepFailed, thread_env

ROOT = Path(__file__).resolve().parents[2]

EPILOG = """
modes:
  --quick        smoke run: tiny subsets, 2 seeds, a few epochs (about ten minutes on 2 CPU cores)
  (default)      full: reduced schedules that fit a 2-core CPU machine (hours; see the report)
  --mode paper   the paper's schedule (all data, 50 epochs, 5 seeds): for a GPU, with --device cuda

Steps whose outputs exist (same command, finished) are reused: an interrupted run resumes.
Examples:
  bench/reproduce --quick
  bench/reproduce --only cifar
  bench/reproduce --mode paper --device cuda --work /data/runs/reproduce
  bench/reproduce --quick --report-only      # rewrite RESULTS.md from what is already in --work
"""


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/reproduce",
        description="Reproduce the paper's experiments with the "
        "laya-inspect CLI and write docs/RESULTS.md from the files it writes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="smoke run (same as --mode quick)")
    p.add_argument("--mode", choices=tuple(SETTINGS), default=None, help="quick | full (default) | paper")
    p.add_argument(
        "--work",
        default=None,
        help="where each step's outputs go (default: runs/reproduce in the repository; a sub-folder per mode)",
    )
    p.add_argument(
        "--only",
        action="append",
        choices=EXPERIMENTS,
        help="run only this experiment (repeatable); the report still shows every experiment found in --work",
    )
    p.add_argument("--results", default=None, help="report to write (default: docs/RESULTS.md in the repository)")
    p.add_argument("--images", default=None, help="where the report's PNGs go (default: results/ beside it)")
    p.add_argument("--device", default=None, help="passed to every laya-inspect command (auto|cpu|cuda)")
    p.add_argument("--seeds", type=int, help="override the number of seeds of every experiment")
    p.add_argument("--cifar-limit", type=int, help="override the CIFAR-10 subset (rows per split) of experiment 2")
    p.add_argument("--cifar-epochs", type=int, help="override the CIFAR-10 joint-training epochs")
    p.add_argument("--report-only", action="store_true", help="run nothing; rewrite the report from --work")
    p.add_argument("--dry-run", action="store_true", help="print every step's command, run nothing")
    a = p.parse_args(argv)
    if a.quick and a.mode not in (None, "quick"):
        p.error("--quick and --mode disagree")
    a.mode = "quick" if a.quick else (a.mode or "full")
    return a


def _rel(path: str) -> Path:
    """A path given on the command line, relative to the repository root when it lies inside it."""
    p = Path(path).expanduser()
    p = p if p.is_absolute() else (Path(os.environ.get("REPRODUCE_CWD", os.getcwd())) / p)
    p = p.resolve()
    try:
        return p.relative_to(ROOT)
    except ValueError:
        return p


def overrides(a: argparse.Namespace) -> dict:
    o: dict = {e: {} for e in EXPERIMENTS}
    if a.seeds:
        for e in ("fmnist", "cifar", "bilstm"):
            o[e]["seeds"] = a.seeds
        for e in EXPERIMENTS:
            o[e]["fit_seeds"] = a.seeds
    o["cifar"].update(limit=a.cifar_limit, epochs=a.cifar_epochs)
    return o


def plan_args(argv: list[str] | None) -> list[str]:
    """The options that shape the plan (what a reader reruns): without --only, --report-only, --dry-run."""
    args, out, skip = list(sys.argv[1:] if argv is None else argv), [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("--report-only", "--dry-run"):
            continue
        if a == "--only":
            skip = True
            continue
        if a.startswith("--only="):
            continue
        out.append(a)
    return out


def _sigterm(signum, frame):  # noqa: ANN001
    raise KeyboardInterrupt  # subprocess.run then kills the running step before we leave


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    signal.signal(signal.SIGTERM, _sigterm)
    os.environ.setdefault("REPRODUCE_CWD", os.getcwd())
    work = _rel(a.work) if a.work else Path("runs/reproduce")
    results = _rel(a.results) if a.results else Path("docs/RESULTS.md")
    images = _rel(a.images) if a.images else results.parent / "results"
    os.chdir(ROOT)
    # Every step finds this interpreter's laya-inspect and python first, with one thread each.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ.update(thread_env())
    mode_dir = work / a.mode
    exps = plan(a.mode, work, a.device, overrides(a))
    runner = Runner(mode_dir, dry_run=a.dry_run)
    t0 = time.perf_counter()
    failures: dict[str, str] = {}
    if not a.report_only:
        if not a.dry_run:
            from results import machine_info

            mode_dir.mkdir(parents=True, exist_ok=True)
            (mode_dir / "machine.json").write_text(json.dumps(machine_info(), indent=2) + "\n")
        print(
            f"bench/reproduce: mode {a.mode}, work {mode_dir}, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}",
            flush=True,
        )
        for exp in exps:
            if a.only and exp.name not in a.only:
                continue
            if exp.skip_reason:
                print(f"[skip]  {exp.name}: {exp.skip_reason}", flush=True)
                continue
            print(f"== {exp.name}: {exp.title}", flush=True)
            if not a.dry_run:
                runner.lock(exp.name)
            try:
                run_experiment(runner, exp)
            except StepFailed as e:
                failures[exp.name] = str(e)
                print(f"[fail]  {exp.name}: {e}", file=sys.stderr, flush=True)
            except KeyboardInterrupt:
                print("interrupted: run the same command again to resume", file=sys.stderr)
                return 130
        run_info = {
            "mode": a.mode,
            "argv": sys.argv[1:],
            "wall_s": round(time.perf_counter() - t0, 1),
            "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "only": a.only,
            "failures": failures,
            "steps_ran": runner.ran,
            "steps_reused": runner.reused,
        }
        if not a.dry_run:
            mode_dir.mkdir(parents=True, exist_ok=True)
            runs_log = mode_dir / "invocations.jsonl"
            with open(runs_log, "a") as fh:
                fh.write(json.dumps(run_info) + "\n")
            (mode_dir / "last_invocation.json").write_text(json.dumps(run_info, indent=2) + "\n")
    if a.dry_run:
        return 0
    from results import write_report

    write_report(
        exps,
        mode=a.mode,
        work=work,
        mode_dir=mode_dir,
        results=results,
        images=images,
        device=a.device,
        overrides=overrides(a),
        plan_args=plan_args(argv),
    )
    print(f"wrote {results}", flush=True)
    return 1 if failures else 0


def run_experiment(runner: Runner, exp) -> None:  # noqa: ANN001
    """Run the experiment's steps in order; for text, fall back to a tiny random BERT when the
    all-MiniLM-L6-v2 package cannot be installed or unpacked (the report says so plainly)."""
    if exp.name != "text":
        for step in exp.steps:
            runner.run(step)
        return
    steps = {s.name: s for s in exp.steps}
    runner.run(steps["text.data"])
    try:
        if importlib.util.find_spec("all_minilm_l6_v2") is None:
            runner.run(steps["text.install-model"])
            importlib.invalidate_caches()
        runner.run(steps["text.model"])
    except StepFailed as e:
        reason = str(e)
        tiny_bert_fallback(exp, reason)
        note = Path(exp.paths["model_dir"]).parent / "FALLBACK.json"
        note.write_text(json.dumps({"reason": reason}, indent=2) + "\n")
        steps = {s.name: s for s in exp.steps}
        runner.run(steps["text.model"])
    for name in ("text.extract", "text.fit-head", "text.compare"):
        runner.run(steps[name])
