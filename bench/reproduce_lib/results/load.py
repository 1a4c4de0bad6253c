"""Reading what the runs left: JSON files, step records, the joint runs' metrics, the machine."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

from plans import HEADS, Experiment
from runner import Runner


def load(path: Any) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError, TypeError):
        return None


class Ctx:
    def __init__(self, mode: str, mode_dir: Path, images: Path, results: Path) -> None:
        self.mode, self.mode_dir, self.images, self.results = mode, mode_dir, images, results
        self.runner = Runner(mode_dir, echo=False)
        self.copied: list[Path] = []
        self.stale: list[str] = []  # steps whose record is not this plan's command and inputs

    @property
    def quick(self) -> bool:
        return self.mode == "quick"

    def record(self, step: Any) -> dict | None:
        return self.runner.read_record(step)

    def image(self, src: Path, name: str, alt: str) -> str | None:
        """Copy a CLI plot into docs/results (shrunk to a small palette PNG) and return its markdown."""
        if not Path(src).exists():
            return None
        self.images.mkdir(parents=True, exist_ok=True)
        dst = self.images / name
        try:
            from PIL import Image

            im = Image.open(src).convert("RGB")
            if im.width > 900:
                im = im.resize((900, round(im.height * 900 / im.width)), Image.LANCZOS)
            im.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(dst, optimize=True)
        except Exception:  # noqa: BLE001 (Pillow missing or failing: copy as is)
            shutil.copyfile(src, dst)
        self.copied.append(dst)
        rel = os.path.relpath(dst, self.results.parent)
        return f"![{alt}]({rel})"


def joint_runs(exp: Experiment) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {h: [] for h in HEADS}
    for (head, _seed), path in sorted(exp.paths.get("joint_metrics", {}).items(), key=lambda kv: (kv[0][0], kv[0][1])):
        m = load(path)
        if m:
            out[head].append(m)
    return out


def machine_info() -> dict[str, str]:
    """The machine the steps run on (recorded by each invocation into <work>/<mode>/machine.json)."""
    import torch

    import laya_inspect

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--", "laya_inspect"], capture_output=True, text=True
            ).stdout.strip()
        )
    except OSError:
        commit, dirty = "?", False
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (CPU only)"
    mem = "?"
    try:
        kb = int(
            next(
                line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")
            ).split()[1]
        )
        mem = f"{kb / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return {
        "CPU": f"{cpu}, {os.cpu_count()} logical cores visible (shared with other jobs)",
        "threads per step": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '1')}",
        "memory": mem,
        "GPU": gpu,
        "Python / torch": f"{platform.python_version()} / {torch.__version__}",
        "laya-inspect": f"{laya_inspect.__version__} (git {commit}{', laya_inspect/ modified' if dirty else ''})",
        "OS": platform.platform(),
        "recorded": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
    }
