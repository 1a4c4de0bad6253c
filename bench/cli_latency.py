"""How long the command line takes before and around the work: ``laya-inspect --help`` (time and peak
memory) and the demo end to end (docs/PERFORMANCE.md).

Rows of the performance table printed here:

* ``laya-inspect --help``: wall seconds and peak resident memory of a fresh process (target < 1 s),
  beside a bare ``python -c pass`` and ``python -c "import torch"`` (what any command that runs a
  model pays);
* ``laya-inspect demo --quick`` and ``demo`` on a quiet machine (targets < 12 s / < 20 s); not run
  with --smoke (they take tens of seconds).

    python bench/cli_latency.py            # every row (about a minute)
    python bench/cli_latency.py --smoke    # --help and the interpreter rows only
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _bench

# A child's ru_maxrss starts from its parent's resident size at fork (this script has torch loaded,
# ≈ 500 MB), so peak memory is read through a bare Python launcher instead: its children start small.
PEAK = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def run(*argv: str, timed: Callable[[], None] | None = None) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MB) of one fresh process; fails loudly. ``timed`` reads the
    timed run's own files before the second run (for its peak memory) writes them again."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_bench.ENV)
    _, status, _ = os.wait4(proc.pid, 0)
    took = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err[-2000:]}")
    if timed is not None:
        timed()
    peak = subprocess.run([sys.executable, "-c", PEAK, *argv], capture_output=True, text=True, env=_bench.ENV)
    return took, int(peak.stdout.split()[-1]) / 1024  # ru_maxrss is in KiB on Linux


def main() -> None:
    args = _bench.parser(__doc__).parse_args()
    _bench.start(args, "the command line's own cost")
    py = sys.executable
    mem: dict[str, float] = {}

    def case(name: str, *argv: str, timed: Callable[[], None] | None = None):
        def go() -> float:
            took, mem[name] = run(*argv, timed=timed)
            return took

        return go

    cases = {
        "python": case("python", py, "-c", "pass"),
        "torch": case("torch", py, "-c", "import torch"),
        "help": case("help", py, "-m", "laya_inspect", "--help"),
    }
    times = _bench.interleave(cases, args.repeats)
    _bench.seconds(f"laya-inspect --help (peak memory {mem['help']:.0f} MB)", times["help"], "< 1 s")
    _bench.seconds(f"python -c 'import torch' (peak memory {mem['torch']:.0f} MB)", times["torch"])
    _bench.ratio("help/bare-python-startup", times["help"], times["python"])
    if args.smoke:
        _bench.skip("demo --quick / demo", "not run with --smoke (tens of seconds each)")
    else:
        steps: dict[str, dict[str, list[float]]] = {"quick": {}, "full": {}}

        def demo(name: str, out: Path, *extra: str):
            record: dict[str, Any] = {}

            def read() -> None:  # the timed run's demo.json, before the peak-memory run writes its own
                record.update(json.loads((out / "demo.json").read_text()))

            run_it = case(
                name,
                py,
                "-m",
                "laya_inspect",
                "demo",
                "--device",
                "cpu",
                "--force",
                "--out",
                str(out),
                *extra,
                timed=read,
            )

            def go() -> float:
                took = run_it()
                for s in record["steps"]:  # each step's own seconds; the rest is start-up and the summary
                    steps[name].setdefault(s["name"], []).append(s["seconds"])
                steps[name].setdefault("start-up, printing, report", []).append(took - record["seconds"])
                return took

            return go

        with tempfile.TemporaryDirectory() as tmp:
            times = _bench.interleave(
                {"quick": demo("quick", Path(tmp) / "q", "--quick"), "full": demo("full", Path(tmp) / "f")},
                max(1, args.repeats // 2),
                warmup=False,
            )
        _bench.seconds("laya-inspect demo --quick", times["quick"], "< 12 s on a quiet machine")
        _bench.seconds("laya-inspect demo", times["full"], "< 20 s on a quiet machine")
        for name, parts in steps.items():
            print(
                f"# demo{' --quick' if name == 'quick' else ''} medians: "
                + ", ".join(f"{k} {statistics.median(v):.1f} s" for k, v in parts.items())
            )
    print(f"# {_bench.load()}")


if __name__ == "__main__":
    main()
