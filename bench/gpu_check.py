"""The GPU path, checked end to end against the CPU (issue "Scale out with torchrun, and a GPU path").

Runs each stage as the command a user types, once with ``--device cpu`` (the reference) and once on
the device under test, and checks the results agree within the tolerance stated beside each check:

* extract, zoo MLP on digits (28 px): every layer, max |Δ| / max |x| ≤ 1e-4 (float32 matmuls);
* extract, MobileNetV2 (random weights, 64 px): ≤ 1e-2 (cuDNN runs float32 convolutions as TF32);
* extract --amp (bfloat16 autocast) against float32 on the device: ≤ 5e-2 (8-bit mantissa);
* extract by 2 processes (torchrun; NCCL beside gloo) against 1 process on the device: ≤ 1e-6;
* fit-head (laya, last; 2 seeds): test accuracy of each run within 0.03 of the CPU's (training
  amplifies last-bit differences, so trajectories part a little);
* compare (the CPU's heads on the CPU's cache): every float array of attributions.h5, max |Δ| ≤ 1e-3;
* train (joint zoo MLP + LAYA, 3 epochs): test accuracy within 0.05 of the CPU's.

It also records extract throughput (rows/s, as extract reports it) on each device. Under 8 minutes
on one GPU. The report (markdown) goes to ``--report`` (default ``docs/gpu-check-DATE-DEVICE.md``);
the exit status is 1 when any check fails.

    python bench/gpu_check.py                  # on a machine with a GPU
    python bench/gpu_check.py --smoke          # CPU against CPU, tiny sizes: checks the script runs
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}


class Check:
    def __init__(self, work: Path, device: str, smoke: bool) -> None:
        self.work, self.device, self.smoke = work, device, smoke
        self.rows: list[tuple[str, str, str, bool]] = []  # check, tolerance, measured, ok
        self.speed: list[tuple[str, str, float]] = []  # what, device, rows/s

    def cli(self, *args: str, procs: int = 1) -> str:
        launch = [sys.executable, "-m", "laya_inspect"]
        if procs > 1:
            launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={procs}"]
            launch += ["-m", "laya_inspect"]
        t = time.perf_counter()
        res = subprocess.run([*launch, *args], capture_output=True, text=True, env=ENV, cwd=self.work)
        if res.returncode != 0:
            raise SystemExit(f"failed after {time.perf_counter() - t:.0f} s: {' '.join(args)}\n{res.stderr[-3000:]}")
        return " ".join(res.stdout.split())

    def record(self, name: str, tolerance: float, measured: float, *, higher_is_worse: bool = True) -> None:
        ok = bool(measured <= tolerance) if higher_is_worse else bool(measured >= tolerance)
        self.rows.append((name, f"≤ {tolerance:g}", f"{measured:.3g}", ok))

    def extract(self, out: str, model: str, size: int, limit: int, device: str, *extra: str, procs: int = 1) -> None:
        text = self.cli(
            "extract", "--model", model, "--random-init", "--data", "digits", "--image-size", str(size),
            "--limit", str(limit), "--device", device, "--out", out, "--overwrite", *extra, procs=procs,
        )  # fmt: skip
        rate = re.search(r"\(([\d,.]+) rows/s", text)
        label = (
            f"extract {model} {size}px" + (" --amp" if "--amp" in extra else "") + (f" ×{procs}" if procs > 1 else "")
        )
        self.speed.append((label, device, float(rate.group(1).replace(",", "")) if rate else float("nan")))


def max_rel(a_path: Path, b_path: Path) -> float:
    """Largest max |Δ| / max |x| over every layer (and logits) of two caches with the same rows."""
    worst = 0.0
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        for split in a:
            assert np.array_equal(a[split]["index"][()], b[split]["index"][()]), "rows differ"
            for key in a[split]:
                if key.startswith("layer_") or key == "logits":
                    x, y = a[split][key][()].astype(np.float64), b[split][key][()].astype(np.float64)
                    worst = max(worst, float(np.abs(x - y).max() / max(np.abs(x).max(), 1e-12)))
    return worst


def max_abs_h5(a_path: Path, b_path: Path) -> float:
    worst = 0.0
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        names: list[str] = []
        a.visit(names.append)
        for name in names:
            x = a[name]
            if isinstance(x, h5py.Dataset) and np.issubdtype(x.dtype, np.floating):
                u, v = x[()].astype(np.float64), b[name][()].astype(np.float64)
                both = np.isfinite(u) & np.isfinite(v)
                if not np.array_equal(np.isfinite(u), np.isfinite(v)):
                    return float("inf")
                worst = max(worst, float(np.abs(u[both] - v[both]).max(initial=0.0)))
    return worst


def accuracies(folder: Path) -> dict[str, float]:
    return {f"{r['head']}/{r['seed']}": float(r["test_acc"]) for r in json.loads((folder / "runs.json").read_text())}


def run(check: Check, dev: str) -> None:
    """Every check; files of the reference (CPU) are named ``*-ref``, of the device under test ``*-dut``."""
    w, smoke = check.work, check.smoke
    # CPU against CPU (--smoke): each command once, the device under test reading the reference's files
    dut = "ref" if dev == "cpu" else "dut"
    both = (("ref", "cpu"),) if dev == "cpu" else (("ref", "cpu"), ("dut", dev))
    n_mlp, n_cnn, px = (200, 16, 32) if smoke else (1797, 1000, 64)
    for tag, d in both:
        check.extract(f"mlp-{tag}.h5", "zoo:mlp", 28, n_mlp, d)
    check.record("extract zoo MLP, max|Δ|/max|x|", 1e-4, max_rel(w / "mlp-ref.h5", w / f"mlp-{dut}.h5"))
    for tag, d in both:
        check.extract(f"mnv2-{tag}.h5", "torchvision:mobilenet_v2", px, n_cnn, d)
    check.record("extract MobileNetV2, max|Δ|/max|x|", 1e-2, max_rel(w / "mnv2-ref.h5", w / f"mnv2-{dut}.h5"))
    check.extract("mlp-amp.h5", "zoo:mlp", 28, n_mlp, dev, "--amp")
    check.record("extract --amp vs float32, max|Δ|/max|x|", 5e-2, max_rel(w / f"mlp-{dut}.h5", w / "mlp-amp.h5"))
    shared = dev if dev == "cpu" or _gpus() >= 2 else "cuda:0"  # one GPU: both processes on it
    check.extract("mlp-x2.h5", "zoo:mlp", 28, n_mlp, shared, procs=2)
    check.record("extract 2 processes vs 1, max|Δ|/max|x|", 1e-6, max_rel(w / f"mlp-{dut}.h5", w / "mlp-x2.h5"))

    epochs = "2" if smoke else "5"
    for tag, d in both:
        check.cli("fit-head", "mlp-ref.h5", "--head", "laya,last", "--seeds", "2", "--epochs", epochs, "--no-probe",
                  "--device", d, "--out", f"fit-{tag}", "--force")  # fmt: skip
    a, b = accuracies(w / "fit-ref"), accuracies(w / f"fit-{dut}")
    check.record("fit-head test accuracy, max |Δ| over runs", 0.03, max(abs(a[k] - b[k]) for k in a))

    heads = ["fit-ref/laya/seed_0", "fit-ref/last/seed_0"]
    for tag, d in both:
        check.cli("compare", "-c", "mlp-ref.h5", *heads, "--limit", "100" if smoke else "300", "--no-plots",
                  "--device", d, "--out", f"cmp-{tag}", "--force")  # fmt: skip
    check.record(
        "compare attributions.h5, max |Δ|",
        1e-3,
        max_abs_h5(w / "cmp-ref/attributions.h5", w / f"cmp-{dut}/attributions.h5"),
    )

    acc = {}
    for tag, d in both:
        limit = "400" if smoke else "1797"
        check.cli("train", "--model", "zoo:mlp", "--data", "digits", "--head", "laya", "--epochs", "3",
                  "--limit", limit, "--device", d, "--out", f"joint-{tag}.pt", "--force")  # fmt: skip
        acc[tag] = _joint_accuracy(w, f"joint-{tag}.pt")
    check.record("train (joint) test accuracy, |Δ|", 0.05, abs(acc["ref"] - acc[dut]))


def _joint_accuracy(work: Path, ckpt: str) -> float:
    for path in sorted(work.glob(f"{Path(ckpt).stem}*.json")):
        data = json.loads(path.read_text())
        for key in ("test_acc", "test_accuracy", "accuracy"):
            if isinstance(data.get(key), (int, float)):
                return float(data[key])
        if isinstance(data.get("test"), dict) and "acc" in data["test"]:
            return float(data["test"]["acc"])
    raise SystemExit(f"no test accuracy found beside {ckpt} in {work}")


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def report(check: Check, dev: str, seconds: float) -> str:
    import torch

    name = torch.cuda.get_device_name(0) if dev.startswith("cuda") else "CPU (smoke: CPU against CPU)"
    lines = [
        f"# GPU check, {_dt.date.today().isoformat()}, {name}",
        "",
        f"`python bench/gpu_check.py{' --smoke' if check.smoke else ''}`: torch {torch.__version__}, "
        f"{os.cpu_count()} CPUs, {seconds:.0f} s in all. Reference: the same command with `--device cpu`.",
        "",
        "| check | tolerance | measured | ok |",
        "|---|---|---|---|",
        *(f"| {c} | {t} | {m} | {'yes' if ok else '**no**'} |" for c, t, m, ok in check.rows),
        "",
        "| extract throughput | device | rows/s |",
        "|---|---|---|",
        *(f"| {what} | {d} | {r:,.0f} |" for what, d, r in check.speed),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="CPU against CPU, tiny sizes: checks the script runs")
    p.add_argument("--device", default="cuda", help="device under test (default cuda)")
    p.add_argument("--report", type=Path, default=None, help="markdown report (default docs/gpu-check-DATE-DEVICE.md)")
    args = p.parse_args()
    dev = "cpu" if args.smoke else args.device
    if dev.startswith("cuda") and not _gpus():
        raise SystemExit("no CUDA device here: run with --smoke for the CPU check, or on a machine with a GPU")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="laya-gpu-check-") as tmp:
        check = Check(Path(tmp), dev, args.smoke)
        run(check, dev)
        text = report(check, dev, time.perf_counter() - t0)
    out = args.report
    if out is None and not args.smoke:  # a smoke run writes its report only where asked
        out = REPO / "docs" / f"gpu-check-{_dt.date.today().isoformat()}-{dev.replace(':', '')}.md"
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    print(text)
    sys.exit(0 if all(ok for *_, ok in check.rows) else 1)


if __name__ == "__main__":
    main()
