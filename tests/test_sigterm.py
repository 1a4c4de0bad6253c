"""SIGTERM (`kill PID`, `docker stop`, a scheduler's preemption) ends a command as Ctrl-C does: the
cleanup runs (no temporary file or folder left, no worker left running), one "terminated: …" line
says what is left on disk, and the exit code is the shell's for SIGTERM, 143. Real subprocesses,
signalled once a progress line shows the work has started."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from laya_inspect.cli import app

pytestmark = pytest.mark.slow
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
CLI = [sys.executable, "-m", "laya_inspect"]

# A digits MLP whose every forward pass takes 20 ms: extract's 25 batches of 8 a split last 0.5 s each, long
# enough to be signalled in the middle, short enough for a test.
SLOW_MODEL = """
import time
import torch


class Slow(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.Linear(16, 8))
        self.head = torch.nn.Linear(8, 10)
        self.input_spec = {"kind": "image", "channels": 1, "size": 8}
        self.default_layers = ["blocks.0", "blocks.1"]

    def forward(self, x):
        time.sleep(0.02)
        return self.head(self.blocks(x.flatten(1)))


def build():
    return Slow()
"""


def ctrl_c_as_at_a_terminal() -> None:
    """The child's Ctrl-C as a shell at a terminal gives it: a suite run in the background of a script
    (`pytest &`, nohup) hands its children SIGINT ignored, which Python then keeps, and the tool rightly
    leaves a signal its starter ignores alone, so the tests below would read that choice as a failure."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Running:
    """A command run in the background, its stderr read line by line as it comes."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            args, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=ctrl_c_as_at_a_terminal,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)

    def wait_for(self, pattern: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                assert self.proc.poll() is None, f"ended before {pattern!r}: {''.join(self.err)}"
                continue
            self.err.append(line)
            if re.search(pattern, line):
                return
        raise AssertionError(f"no line matching {pattern!r} in {timeout} s: {''.join(self.err)}")

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        code = self.proc.wait(timeout=timeout)
        time.sleep(0.1)  # the reader thread takes the last lines
        while not self.lines.empty():
            self.err.append(self.lines.get())
        return code, "".join(self.err)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for a reaper (a container's PID 1 may never reap one)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _temporary(folder: Path) -> list[str]:
    # a folder's temporary name ends in its PID, a file's in its check value after it
    named = re.compile(r"\.tmp-\d+(-[0-9a-f]{8})?$")
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if named.search(p.name))


def _terminated_line(err: str) -> str:
    last = err.strip().splitlines()[-1]
    assert last.startswith("terminated: "), err[-3000:]
    return last


def test_sigterm_during_extract_keeps_the_rows_and_the_same_command_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "slow_model.py").write_text(SLOW_MODEL)
    args = [*CLI, "extract", "--model", "python:slow_model:build", "--random-init", "--data", "digits",
            "--limit", "200", "--batch-size", "8", "--out", "c.h5", "--device", "cpu"]  # fmt: skip
    run = Running(args, tmp_path)
    run.wait_for(r"^train: (?!0/)\d+/200 rows")  # rows are being written
    run.proc.send_signal(signal.SIGTERM)
    code, err = run.finish()
    assert code == 143, (code, err[-3000:])
    from laya_inspect.cli.app import INTERRUPTED

    assert _terminated_line(err) == f"terminated: {INTERRUPTED['extract']}"
    assert "Traceback" not in err, err
    assert (tmp_path / "c.h5.partial").is_file() and not (tmp_path / "c.h5").exists()
    assert _temporary(tmp_path) == []
    monkeypatch.chdir(tmp_path)  # the same command again, here (one interpreter's start less)
    again = CliRunner().invoke(app, args[len(CLI) :], env={"COLUMNS": "200"})
    assert again.exit_code == 0, again.output[-3000:]
    assert re.search(r"resumed from the rows already written \(train: [1-9][\d,]* rows", again.output), again.output
    assert (tmp_path / "c.h5").is_file() and not (tmp_path / "c.h5.partial").exists()


def test_sigterm_during_fit_head_with_workers_leaves_no_worker_and_no_temporary_folder(
    digits_cache: Path, tmp_path: Path
) -> None:
    out = tmp_path / "runs" / "heads"  # a folder made for --out goes with the run (it was left empty)
    args = [*CLI, "fit-head", str(digits_cache), "--head", "laya", "--seeds", "3", "--workers", "3",
            "--epochs", "400", "--patience", "400", "--out", str(out)]  # fmt: skip
    run = Running(args, tmp_path)
    deadline = time.monotonic() + 60
    while len(workers := _children(run.proc.pid)) < 3:  # the three runs have started
        assert time.monotonic() < deadline and run.proc.poll() is None, run.finish()[1][-3000:]
        time.sleep(0.05)
    time.sleep(0.5)  # into their training
    run.proc.send_signal(signal.SIGTERM)
    code, err = run.finish(timeout=20)  # promptly: not after the runs in flight or queued
    assert code == 143, (code, err[-3000:])
    from laya_inspect.cli.app import INTERRUPTED

    assert _terminated_line(err) == f"terminated: {INTERRUPTED[None]}"
    assert "Traceback" not in err and "error:" not in err, err
    deadline = time.monotonic() + 5  # a worker killed with its parent may take a moment to go
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [w for w in workers if _alive(w)] == []
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_handler_is_the_command_s_only_and_a_forked_child_is_killed_by_sigterm(tmp_path: Path) -> None:
    """The library installs nothing; the command restores the handler it found, and a child it forks
    (a worker) dies of SIGTERM instead of running the parent's cleanup."""
    from laya_inspect.cli.app import sigterm_like_ctrl_c

    mine = lambda signum, frame: None  # noqa: E731
    previous = signal.signal(signal.SIGTERM, mine)
    try:
        import laya_inspect.workers  # noqa: F401

        assert signal.getsignal(signal.SIGTERM) is mine
        with sigterm_like_ctrl_c() as handler:
            assert signal.getsignal(signal.SIGTERM) is handler
            pid = os.fork()
            if pid == 0:  # the child: wait to be signalled
                time.sleep(10)
                os._exit(0)
            time.sleep(0.2)
            os.kill(pid, signal.SIGTERM)
            _, status = os.waitpid(pid, 0)
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_sigterm_a_supervisor_set_to_be_ignored_stays_ignored() -> None:
    """Review: some supervisors start a process with SIGTERM ignored; the command took it back."""
    from laya_inspect.cli.app import sigterm_like_ctrl_c

    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with sigterm_like_ctrl_c() as handler:
            assert handler is None and signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)


# The child signals itself at the moment the command line starts loading its commands (an audit hook
# on that import), as `python -m laya_inspect` is run: no timing, so the test cannot land elsewhere.
SIGNAL_AT_START = """
import os, runpy, signal, sys

def hook(event, args):
    if event == "import" and args[0] == "laya_inspect.cli" and not sent:
        sent.append(1)
        os.kill(os.getpid(), signal.{sig})

sent = []
sys.addaudithook(hook)
sys.argv = ["laya-inspect", "check", "planted", "--rows", "200", "--device", "cpu", "--out", {out!r}]
runpy.run_module("laya_inspect", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize(("sig", "code", "word"), [("SIGTERM", 143, "terminated"), ("SIGINT", 130, "interrupted")])
def test_a_signal_while_the_command_line_starts_ends_it_as_one_during_a_command(tmp_path, sig, code, word):
    """QA: SIGTERM or Ctrl-C in the first ≈ 0.2 s, while the command line loads its modules, ended it
    by the signal itself (exit -15, or -2 after a KeyboardInterrupt traceback): the handling was put in
    place only once a command was invoked. Now it is the usual line and exit code, and nothing is written."""
    out = tmp_path / "runs" / "planted"
    script = SIGNAL_AT_START.format(sig=sig, out=str(out))
    done = subprocess.run(
        [sys.executable, "-c", script], env=ENV, capture_output=True, text=True, timeout=60,
        preexec_fn=ctrl_c_as_at_a_terminal,
    )  # fmt: skip
    from laya_inspect.cli.app import INTERRUPTED

    assert done.returncode == code, (done.returncode, done.stderr[-2000:])
    assert done.stderr == f"{word}: {INTERRUPTED[None]}\n"
    assert not (tmp_path / "runs").exists()


def test_ctrl_c_during_a_command_is_still_the_command_s_to_handle(tmp_path: Path) -> None:
    """The start-up guard hands Ctrl-C back to the command while it runs: a KeyboardInterrupt that
    extract turns into its own line (the rows kept in the .partial file), not the start-up's."""
    (tmp_path / "slow_model.py").write_text(SLOW_MODEL)
    args = [*CLI, "extract", "--model", "python:slow_model:build", "--random-init", "--data", "digits",
            "--limit", "200", "--batch-size", "8", "--out", "c.h5", "--device", "cpu"]  # fmt: skip
    run = Running(args, tmp_path)
    run.wait_for(r"^train: (?!0/)\d+/200 rows")  # rows are being written
    run.proc.send_signal(signal.SIGINT)
    code, err = run.finish()
    from laya_inspect.cli.app import INTERRUPTED

    assert code == 130, (code, err[-3000:])
    assert err.strip().splitlines()[-1] == f"interrupted: {INTERRUPTED['extract']}", err[-3000:]
    assert (tmp_path / "c.h5.partial").is_file() and _temporary(tmp_path) == []


# The child signals itself as the command's invoke returns (a profile hook on that return): the moment
# a Ctrl-C lands once the results are printed and written, while the process exits; no timing.
SIGNAL_AFTER_FINISH = """
import os, runpy, signal, sys

def hook(frame, event, arg):
    if event == "return" and frame.f_code.co_name == "invoke" and frame.f_code.co_filename.endswith("app.py"):
        sys.setprofile(None)
        os.kill(os.getpid(), signal.SIGINT)

sys.setprofile(hook)
sys.argv = ["laya-inspect", "check", "planted", "--rows", "200", "--device", "cpu", "--out", {out!r}]
runpy.run_module("laya_inspect", run_name="__main__", alter_sys=True)
"""


def test_ctrl_c_once_the_command_has_finished_does_not_say_its_work_was_lost(tmp_path: Path) -> None:
    """QA: Ctrl-C just after a command printed its results said "interrupted: … nothing half-written is
    left; run the same command again", as if the run were lost. Its outputs are complete: the line says
    so (exit 130 still, the shell's code for the signal)."""
    out = tmp_path / "planted"
    script = SIGNAL_AFTER_FINISH.format(out=str(out))
    done = subprocess.run(
        [sys.executable, "-c", script], env=ENV, capture_output=True, text=True, timeout=120,
        preexec_fn=ctrl_c_as_at_a_terminal,
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert "wrote" in done.stderr and not any("run the same command again" in line for line in lines), lines[-3:]
    from laya_inspect.runtime import FINISHED_BEFORE

    assert lines[-1] == f"interrupted: {FINISHED_BEFORE}", done.stderr[-2000:]
    assert done.returncode == 130 and (out / "summary.json").is_file()


# The child signals itself as laya-inspect's main returns, its exit code on the way out: the moment a
# Ctrl-C lands while the interpreter tears down (torch unloading takes seconds); no timing.
SIGNAL_WHILE_EXITING = """
import os, runpy, signal, sys

def hook(frame, event, arg):
    if event == "return" and frame.f_code.co_name == {at!r} and frame.f_code.co_filename.endswith({where!r}):
        sys.setprofile(None)
        os.kill(os.getpid(), signal.SIGINT)

sys.setprofile(hook)
sys.argv = ["laya-inspect", "train", "--model", "zoo:mlp", "--data", "digits", "--limit", "100", "--epochs", "1",
            "--device", "cpu", "--out", {out!r}]
runpy.run_module("laya_inspect", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize(
    "at, where",
    [
        ("command_line", "__main__.py"),
        # the last moment before the exit-time handler is set: the command's exit code is already kept
        # for the process's end, which must give the signal's code instead (it gave 0)
        ("exit_when_finished", "runtime.py"),
    ],
)
def test_ctrl_c_while_the_process_exits_says_the_results_are_complete(tmp_path: Path, at: str, where: str) -> None:
    """QA: Ctrl-C about a second after a command printed its results, while the interpreter unloaded
    torch, ended the process by the signal (exit -2) with no line at all. It says the results are
    complete, with the shell's exit code for the signal."""
    out = tmp_path / "ckpt.pt"
    done = subprocess.run(
        [sys.executable, "-c", SIGNAL_WHILE_EXITING.format(out=str(out), at=at, where=where)], env=ENV,
        capture_output=True,
        text=True, timeout=120, preexec_fn=ctrl_c_as_at_a_terminal,
    )  # fmt: skip
    from laya_inspect.runtime import FINISHED_BEFORE

    assert done.returncode == 130, (done.returncode, done.stderr[-2000:])
    assert done.stderr.strip().splitlines()[-1] == f"interrupted: {FINISHED_BEFORE}", done.stderr[-2000:]
    assert out.is_file() and "next:" in done.stdout


CALLER_OF_MAIN = """
import atexit, sys
from laya_inspect.__main__ import main
sys.argv = ["laya-inspect", "extract", "--model", "zoo:mlp", "--list-layers"]
try:
    main()
except SystemExit as e:
    print("command exit", e.code)
atexit.register(lambda: print("caller's atexit ran"))
sys.exit(3)
"""


def test_a_program_that_calls_main_keeps_its_own_exit() -> None:
    """Review: main() called without arguments by another program armed the command line's early
    exit, so that program's later sys.exit(3) ended the process with the command's 0. Only the
    `laya-inspect` script and `python -m laya_inspect` (command_line) own the process's exit."""
    done = subprocess.run([sys.executable, "-c", CALLER_OF_MAIN], env=ENV, capture_output=True, text=True, timeout=120)
    assert "command exit 0" in done.stdout and "caller's atexit ran" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 3, (done.returncode, done.stderr[-2000:])


def test_output_to_a_full_disk_is_one_line_not_a_traceback() -> None:
    """Review: `laya-inspect --help > /dev/full` (stdout on a full disk) ended in a traceback."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "laya_inspect", "--help"], env=ENV, stdout=full, stderr=subprocess.PIPE,
            text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == "error: could not write its output: No space left on device (errno 28)", done.stderr
