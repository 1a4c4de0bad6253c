"""Extract throughput with 1 and 2 processes (torchrun, gloo, CPU), side by side (docs/SCALING.md).

Each case is a whole command, as a user runs it: ``python -m laya_inspect extract`` alone (1 torch
thread, then 2) and ``torchrun --nproc-per-node 2 -m laya_inspect extract`` (1 thread per process).
Two figures per case: rows/s as extract reports it (model and data loaded, rows written, shards
joined), and rows/s of the wall time of the whole command (interpreter start, imports, model
loading: paid once per process). Cases alternate, their order rotating each round; medians and
min–max over the rounds.

    python bench/scaling.py            # zoo MLP and zoo CNN over 10,000 Fashion-MNIST rows (minutes)
    python bench/scaling.py --smoke    # digits, one round, seconds: checks that it runs
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FMNIST = Path("/usr/share/datasets/fashion-mnist")
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
CASES = {
    "1 process × 1 thread": (1, 1),
    "1 process × 2 threads": (1, 2),
    "2 processes × 1 thread": (2, 1),
}


def command(procs: int, out: Path, model: str, data: str, limit: int) -> list[str]:
    launch = [sys.executable, "-m", "laya_inspect"]
    if procs > 1:
        launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={procs}"]
        launch += ["-m", "laya_inspect"]
    size = ["--image-size", "28"] if data == "digits" else []
    return [
        *launch, "extract", "--model", model, "--random-init", "--data", data, *size, "--split", "train",
        "--limit", str(limit), "--device", "cpu", "--out", str(out), "--overwrite",
    ]  # fmt: skip


def run_case(procs: int, threads: int, out: Path, model: str, data: str, limit: int) -> tuple[float, float]:
    """(rows/s reported by extract, rows/s of the whole command's wall time)."""
    env = {**ENV, "OMP_NUM_THREADS": str(threads)}
    t = time.perf_counter()
    res = subprocess.run(command(procs, out, model, data, limit), capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(f"extract failed ({procs} process(es)):\n{res.stderr[-2000:]}")
    text = " ".join(res.stdout.split())  # rich wraps long lines
    rows = int(re.search(r"wrote train: ([\d,]+) rows", text).group(1).replace(",", ""))  # type: ignore[union-attr]
    rate = float(re.search(r"\(([\d,.]+) rows/s", text).group(1).replace(",", ""))  # type: ignore[union-attr]
    return rate, rows / wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="digits, 1 round: checks the script runs (seconds)")
    p.add_argument("--repeats", type=int, default=3, help="interleaved rounds (default 3)")
    args = p.parse_args()
    data, limit, repeats = f"fashion-mnist:{FMNIST}", 10_000, args.repeats
    if args.smoke or not (FMNIST / "train-images-idx3-ubyte.gz").exists():
        data, limit = "digits", 1_000
    if args.smoke:
        repeats = 1
    one, five, fifteen = os.getloadavg()
    print("# extract throughput, 1 vs 2 processes (torchrun, gloo), CPU")
    print(
        f"# {os.cpu_count()} CPUs, machine load (1/5/15 min) {one:.2f} / {five:.2f} / {fifteen:.2f}; {repeats} round(s)"
    )
    models = ["zoo:mlp"] if args.smoke else ["zoo:mlp", "zoo:cnn"]
    with tempfile.TemporaryDirectory(prefix="laya-scaling-") as tmp:
        for model in models:
            got: dict[str, list[tuple[float, float]]] = {name: [] for name in CASES}
            names = list(CASES)
            for r in range(repeats):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    procs, threads = CASES[name]
                    got[name].append(run_case(procs, threads, Path(tmp) / "f.h5", model, data, limit))
            for name, values in got.items():
                inner = [v[0] for v in values]
                wall = [v[1] for v in values]
                print(
                    f"rows/s [{model}, {data.split(':')[0]} {limit:,} rows, {name}]: extract "
                    f"{statistics.median(inner):,.0f} ({min(inner):,.0f}–{max(inner):,.0f}), whole command "
                    f"{statistics.median(wall):,.0f} ({min(wall):,.0f}–{max(wall):,.0f})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
