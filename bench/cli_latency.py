"""How long the command line takes before and around the work: ``laya-inspect --help`` (time and peak
memory) and the demo end to end (docs/PERFORMANCE.md).

Rows of the performance table printed here:

* ``laya-inspect --help``: wall seconds and peak resident memory of a fresh process (target < 1 s),
  beside a bare ``python -c pass`` and ``python -c "import torch"`` (what any command that runs a
  model pays);
* ``laya-inspect demo --quick`` and ``demo`` on a quiet machine (targets < 8 s / < 15 s); not run
  with --smoke (they take tens of seconds).

    python bench/cli_latency.py            # every row (about a minute)
    python bench/cli_latency.py --smoke    # --help and the interpreter rows only
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _bench


def run(*argv: str) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MB) of one fresh process; fails loudly."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_bench.ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err[-2000:]}")
    return took, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def main() -> None:
    args = _bench.parser(__doc__).parse_args()
    _bench.start(args, "the command line's own cost")
    py = sys.executable
    mem: dict[str, float] = {}

    def case(name: str, *argv: str):
        def go() -> float:
            took, mem[name] = run(*argv)
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
        with tempfile.TemporaryDirectory() as tmp:
            demo = [py, "-m", "laya_inspect", "demo", "--device", "cpu", "--force", "--out"]
            times = _bench.interleave(
                {
                    "quick": case("quick", *demo, str(Path(tmp) / "q"), "--quick"),
                    "full": case("full", *demo, str(Path(tmp) / "f")),
                },
                max(1, args.repeats // 2),
                warmup=False,
            )
        _bench.seconds("laya-inspect demo --quick", times["quick"], "< 8 s on a quiet machine")
        _bench.seconds("laya-inspect demo", times["full"], "< 15 s on a quiet machine")
    print(f"# {_bench.load()}")


if __name__ == "__main__":
    main()
