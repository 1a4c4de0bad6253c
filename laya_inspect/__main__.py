"""`python -m laya_inspect` and the `laya-inspect` command. Ctrl-C and SIGTERM are handled from the
first line, before the command line's modules load (≈ 0.2 s): a signal then ends the run with the
usual line and the shell's exit code (130 for SIGINT, 143 for SIGTERM), and nothing has been written.
A signal once the command has returned, while the process exits, says that its work is complete;
the process then ends after its atexit callbacks, without the interpreter's teardown.
A closed stdout or stderr (`| head` left) is written to no more, quietly; the command finishes its
work and files, and exits 141 (128 + SIGPIPE, as a tool the pipe's signal ends) where it would have exited 0."""

from __future__ import annotations

import atexit
import io
import os
import sys
from typing import Any

from .runtime import (
    FINISHED_BEFORE,
    NOTHING_HALF_WRITTEN,
    StartStopped,
    exit_at_last,
    exit_when_finished,
    starting_signals,
)


def main(argv: list[str] | None = None) -> None:
    """Run one command line (``argv``, else ``sys.argv``) in this process. It raises SystemExit with the
    command's exit code, and the process's own exit stays the caller's."""
    _run(argv, own_process=False)


def command_line() -> None:
    """The `laya-inspect` script and `python -m laya_inspect`: the process is the command's, so once the
    command has finished its exit is ours (:func:`laya_inspect.runtime.exit_at_last`)."""
    atexit.register(exit_at_last)  # first registered, so it runs last
    sys.stdout, sys.stderr = _quiet_when_left(sys.stdout), _quiet_when_left(sys.stderr)
    _run(None, own_process=True)


def _run(argv: list[str] | None, own_process: bool) -> None:
    try:
        with starting_signals():
            from .cli import main as run  # the commands' modules load here

            try:
                run(argv)
            except SystemExit as e:
                if own_process:
                    for stream in (sys.stdout, sys.stderr):
                        stream.flush()  # a reader that left is known now, before the exit code is
                    code = 141 if _Left.reader_left and e.code in (0, None) else e.code  # 128 + SIGPIPE
                    exit_when_finished(code)
                    raise SystemExit(code) from None
                raise
            except OSError as e:
                if own_process:
                    _unwritable_output(e)
                raise
    except StartStopped as e:
        import signal

        word = "terminated" if e.signum == signal.SIGTERM else "interrupted"
        sys.stderr.write(f"{word}: {FINISHED_BEFORE if e.finished else NOTHING_HALF_WRITTEN}\n")
        if own_process:  # a command's exit code already kept for the process's end gives way to the signal's
            exit_when_finished(128 + e.signum)
        sys.exit(128 + e.signum)


def _unwritable_output(e: OSError) -> None:
    """One line instead of a traceback when output cannot be written for want of room (`> FILE` on a
    full disk): the files a command writes name their paths in their own errors, so what fails here
    without a name is its printed output."""
    import errno

    if e.filename is not None or e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return
    _to_devnull(sys.stdout.fileno())  # what is still pending goes nowhere at exit
    sys.stderr.write(f"error: could not write its output: {e.strerror} (errno {e.errno})\n")
    sys.exit(1)


class _Left(io.RawIOBase):
    """A stream's file descriptor that goes to /dev/null once its reader has left: a write to a closed
    pipe raised BrokenPipeError from whatever line printed, and a demo stopped there left its folder
    half-made."""

    reader_left = False  # any stream's, for the exit code

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def fileno(self) -> int:
        return self.fd

    def write(self, b: Any) -> int:
        data = memoryview(b)
        try:
            return os.write(self.fd, data)
        except BrokenPipeError:
            _Left.reader_left = True
            _to_devnull(self.fd)
            return len(data)


def _to_devnull(fd: int) -> None:
    """Point ``fd`` at /dev/null; the descriptor opened for it is closed, as dup2 made its copy."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def _quiet_when_left(stream: Any) -> Any:
    """``stream`` over :class:`_Left`, with its encoding, error policy and line buffering (a stream
    that is not a file's, or none, as it is)."""
    if not isinstance(stream, io.TextIOWrapper):
        return stream
    stream.flush()
    raw = io.BufferedWriter(_Left(stream.fileno()))
    return io.TextIOWrapper(raw, encoding=stream.encoding, errors=stream.errors, line_buffering=stream.line_buffering)


if __name__ == "__main__":
    command_line()
