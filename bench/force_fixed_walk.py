"""What refusing an immutable output before the work costs --force: check_out on a marked output of
many files, with and without its walk for immutable or append-only entries (out_dir.refuse_fixed).
One thread, interleaved repeats, medians. Run: python bench/force_fixed_walk.py [N_FILES] [REPEATS]."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from laya_inspect import out_dir
from laya_inspect.out_dir import atomic_dir, check_out


def build(root: Path, n: int) -> Path:
    out = root / "demo"
    with atomic_dir(out, force=True, command="demo") as tmp:
        for i in range(n):  # a demo's shape: many small files in a few folders
            folder = tmp / f"part{i % 20}"
            folder.mkdir(exist_ok=True)
            (folder / f"f{i}.json").write_text("{}")
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    walk = out_dir.refuse_fixed
    with tempfile.TemporaryDirectory() as root:
        out = build(Path(root), n)
        times: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(repeats):
            for label in ("with", "without"):
                out_dir.refuse_fixed = walk if label == "with" else (lambda *a, **k: None)  # type: ignore[assignment]
                t = time.perf_counter()
                check_out(out, force=True, command="demo")
                times[label].append(time.perf_counter() - t)
        out_dir.refuse_fixed = walk
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        f"{n} files: check_out --force median {med['with']:.3f}s with the walk, {med['without']:.3f}s without; "
        f"ratio {med['with'] / med['without']:.2f}"
    )


if __name__ == "__main__":
    main()
