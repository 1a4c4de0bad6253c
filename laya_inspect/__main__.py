"""`python -m laya_inspect` and the `laya-inspect` command. Ctrl-C and SIGTERM are handled from the
first line, before the command line's modules load (≈ 0.2 s): a signal then ends the run with the
usual line and the shell's exit code (130 for SIGINT, 143 for SIGTERM), and nothing has been written.
A signal once the command has returned, while the process exits, says that its work is complete;
the process then ends after its atexit callbacks, without the interpreter's teardown."""

from __future__ import annotations

import atexit
import sys

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
    _run(None, own_process=True)


def _run(argv: list[str] | None, own_process: bool) -> None:
    try:
        with starting_signals():
            from .cli import main as run  # the commands' modules load here

            try:
                run(argv)
            except SystemExit as e:
                if own_process:
                    exit_when_finished(e.code)
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
    full disk) or a reader (`| head` left): the files a command writes name their paths in their own
    errors, so what fails here without a name is its printed output. No line for a reader that left."""
    import errno
    import os

    if e.filename is not None or e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EPIPE):
        return
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is still pending goes nowhere at exit
    if e.errno != errno.EPIPE:
        sys.stderr.write(f"error: could not write its output: {e.strerror} (errno {e.errno})\n")
    sys.exit(1)


if __name__ == "__main__":
    command_line()
