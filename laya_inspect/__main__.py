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
    if argv is None:  # the process's own command line (not a caller's in-process run): its exit is ours
        atexit.register(exit_at_last)  # first registered, so it runs last
    try:
        with starting_signals():
            from .cli import main as run  # the commands' modules load here

            try:
                run(argv)
            except SystemExit as e:
                if argv is None:
                    exit_when_finished(e.code)
                raise
    except StartStopped as e:
        import signal

        word = "terminated" if e.signum == signal.SIGTERM else "interrupted"
        sys.stderr.write(f"{word}: {FINISHED_BEFORE if e.finished else NOTHING_HALF_WRITTEN}\n")
        if argv is None:  # a command's exit code already kept for the process's end gives way to the signal's
            exit_when_finished(128 + e.signum)
        sys.exit(128 + e.signum)


if __name__ == "__main__":
    main()
