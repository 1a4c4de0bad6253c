"""What every stage shares at run time: one device rule, CPU threads, seeded construction, a prefetching
iterator, the progress type.

Devices: ``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda`` or ``cuda:N``, the same for every
command. :func:`check_device` validates the spelling (configs call it in ``__post_init__``);
:func:`pick_device` also checks that the device exists. torch is imported only when a device is picked,
so validating a config stays cheap.

Threads: every command that runs torch calls :func:`set_threads` with its ``--threads`` value (None
when not given) before it starts; the defaults are explained in docs/PERFORMANCE.md.

Signals: :func:`starting_signals` handles Ctrl-C and SIGTERM while the command line starts, before a
command handles them itself (``__main__.py``, cli/app.py).
"""

from __future__ import annotations

import os
import queue
import re
import signal
import sys
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .errors import InputError

if TYPE_CHECKING:
    import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda", "cuda:N")
DEVICE_HELP = "auto (CUDA when available) | cpu | cuda | cuda:N"
THREADS_FLAG = "--threads"
THREADS_HELP = (
    "torch CPU threads (default: $OMP_NUM_THREADS if set, else for heads half the usable CPUs, 1 to 4, "
    "and for a backbone forward all usable CPUs but one, at most one per core)"
)
THREAD_WORK = ("head", "backbone")

# A stage reports what it is doing as dict events ({"event": "epoch", ...}); the CLI renders them.
Progress = Callable[[dict[str, Any]], None]


def no_progress(_event: dict[str, Any]) -> None:
    """The progress callback of a caller that does not listen."""


def check_device(name: str) -> str:
    """``name`` if it is a device this tool accepts, else an InputError naming the valid ones."""
    if name in ("auto", "cpu", "cuda") or re.fullmatch(r"cuda:\d+", str(name)):
        return name
    raise InputError(f"--device must be one of {', '.join(DEVICE_CHOICES)}, got {name!r}")


def pick_device(name: str = "auto") -> torch.device:
    """The torch device for ``name``; asking for CUDA where there is none is an InputError."""
    import torch

    check_device(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError(f"--device {name} was asked for, but no CUDA device is available; use --device cpu")
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise InputError(
                f"--device {name}: only {torch.cuda.device_count()} CUDA device(s) here "
                f"(cuda:0 … cuda:{torch.cuda.device_count() - 1})"
            )
    return torch.device(name)


@contextmanager
def seeded(seed: int = 0) -> Iterator[None]:
    """Run the body with torch's CPU generator seeded, and restore the caller's generator state after:
    what is built inside is the same for the same seed, and nothing outside is disturbed."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, which containers and taskset narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_TORCH_DEFAULT: list[int] = []  # torch's own thread count (one per physical core), read once


def default_threads(work: str = "head") -> int:
    """Threads for ``work`` when none are asked for. ``head``: half the usable CPUs, 1 to 4, since a
    head's matmuls are too small to gain from more, and a second thread on a busy core made IG 17×
    slower; ``backbone``: every usable CPU but one, which is left to the thread decoding the next
    batch and to the HDF5 writes, and at most torch's own default (docs/PERFORMANCE.md)."""
    import torch

    if work not in THREAD_WORK:
        raise InputError(f"thread work must be one of {', '.join(THREAD_WORK)}, got {work!r}")
    if not _TORCH_DEFAULT:
        _TORCH_DEFAULT.append(torch.get_num_threads())
    cpus = usable_cpus()
    if work == "backbone":
        return max(1, min(cpus - 1, _TORCH_DEFAULT[0]))
    return max(1, min(4, cpus // 2))


def set_threads(n: int | None = None, *, work: str = "head") -> int:
    """Set torch's intra-op CPU threads and numpy/scipy's BLAS threads for this process to ``n`` and
    return the number set.

    ``None``: ``$OMP_NUM_THREADS`` when the environment sets it, else :func:`default_threads` of
    ``work`` ("head" or "backbone"). ``n < 1`` is an InputError naming ``--threads``."""
    import torch

    if n is None:
        env = os.environ.get("OMP_NUM_THREADS", "").strip()
        n = int(env) if env.isdigit() and int(env) >= 1 else default_threads(work)
    elif isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"{THREADS_FLAG} must be a whole number ≥ 1, got {n!r}")
    else:
        default_threads(work)  # checks the spelling of work
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    # numpy/scipy's BLAS keeps its own pool (one thread per core): scikit-learn's layer probes ran
    # 7-10x slower with two BLAS threads on a busy 2-core machine than with one
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n, user_api="blas")
    return n


_DONE = object()


def prefetch(items: Iterable[Any], ahead: int = 2) -> Generator[Any, None, None]:
    """Yield ``items`` in order while a background thread produces up to ``ahead`` of the next ones,
    so reading and decoding the next batch overlaps the forward pass of this one (PIL and torch
    release the GIL while they decode and resize). ``ahead=0``: no thread, the items as they come.

    An exception raised while producing an item is raised here, in the consumer, as itself, when
    that item is due; closing the generator early (an error in the consumer) stops the thread."""
    if ahead < 1:
        yield from items
        return
    q: queue.Queue[tuple[Any, BaseException | None]] = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if not _put(q, (item, None), stop):
                    return
        except BaseException as e:  # noqa: BLE001  (handed to the consumer, which raises it)
            _put(q, (None, e), stop)
            return
        _put(q, (_DONE, None), stop)

    worker = threading.Thread(target=produce, name="laya-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item, error = q.get()
            if error is not None:
                raise error
            if item is _DONE:
                return
            yield item
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting on a full queue, then let it end
            try:
                q.get(timeout=0.05)
            except queue.Empty:
                pass
        worker.join()


def _put(q: queue.Queue, entry: tuple[Any, BaseException | None], stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            q.put(entry, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


# Signals while the command line starts. A command handles Ctrl-C and SIGTERM from when it is invoked
# (cli/app.py); before that the command line loads its modules and parses the options (≈ 0.2 s).
NOTHING_HALF_WRITTEN = (
    "every output is written whole or not at all, so nothing half-written is left; run the same command again"
)


# what the line says of a signal once the command has returned: its results are printed and written
FINISHED_BEFORE = "the command had finished before it: what it printed and wrote is complete"


class StartStopped(BaseException):
    """Ctrl-C or SIGTERM while the command line starts, before a command handles them (or after it
    has returned: ``finished``). Not a KeyboardInterrupt: click turns one raised outside a command
    into "Aborted!" and exit code 1."""

    def __init__(self, signum: int, finished: bool = False) -> None:
        super().__init__(signum)
        self.signum = signum
        self.finished = finished


_finished = threading.Event()  # set by command_finished, cleared where starting_signals begins


def command_finished() -> None:
    """Said by the command line once a command has returned: a signal from here on, while the process
    exits, finds its work done, and its line must not ask for the command to be run again."""
    _finished.set()


def _stop_starting(signum: int, frame: Any) -> None:
    raise StartStopped(signum, _finished.is_set())


_guarded: dict[int, Any] = {}  # signal → the handler starting_signals replaced, while it is on


@contextmanager
def starting_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`StartStopped` in the block, the command line's first lines:
    a signal while its modules load ends it with the usual line and exit code, not with Python's
    traceback (SIGINT) or a death by the signal (SIGTERM, exit -15). Left alone: a signal set to be
    ignored or handled by whoever started the process, SIGTERM under torchrun (a rank dies of it at
    once, cli/app.py), and any signal off the main thread."""
    _finished.clear()
    if threading.current_thread() is threading.main_thread():
        ranks = os.environ.get("WORLD_SIZE", "").strip() not in ("", "1")
        for signum, usual in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
            if signal.getsignal(signum) is usual and not (ranks and signum == signal.SIGTERM):
                _guarded[signum] = signal.signal(signum, _stop_starting)
    try:
        yield
    finally:
        for guarded, before in list(_guarded.items()):
            signal.signal(guarded, _say_finished if _exit_code else before)
        _guarded.clear()


# The exit code of a finished command while its process exits (:func:`exit_when_finished`), else empty.
_exit_code: list[int] = []


def exit_when_finished(code: Any) -> None:
    """Said by the process's own command line as a command's exit code leaves it. Once the command
    has finished, the interpreter's teardown (torch unloading: seconds) runs no Python code, so a
    Ctrl-C there killed the process silently (exit -2). Instead a signal from here on says the
    results are complete (exit 128 + N), and :func:`exit_at_last` ends the process after the atexit
    callbacks, skipping that teardown: every output is already written, synced and closed."""
    if _finished.is_set() and (code is None or isinstance(code, int)):
        _exit_code[:] = [code or 0]


def _say_finished(signum: int, frame: Any) -> None:
    word = "terminated" if signum == signal.SIGTERM else "interrupted"
    _flush(sys.stdout)
    os.write(2, f"{word}: {FINISHED_BEFORE}\n".encode())
    os._exit(128 + signum)


def exit_at_last() -> None:
    """An atexit callback, registered before any other so that it runs last: a finished command's
    process ends here with its exit code (:func:`exit_when_finished`); any other exits as usual, as
    does one measured by coverage, whose callback (registered at start-up, before this one) saves its data."""
    if not _exit_code or "coverage" in sys.modules:
        return

    # logging imported before command_line() registered this callback: its own flush would run after it, never
    if "logging" in sys.modules:
        import logging

        logging.shutdown()
    _flush(sys.stdout)
    _flush(sys.stderr)
    os._exit(_exit_code[0])


def _flush(stream: Any) -> None:
    try:
        stream.flush()
    except (AttributeError, OSError, ValueError):  # closed, a pipe whose reader left, or none
        pass


@contextmanager
def ctrl_c_as_before() -> Iterator[None]:
    """Inside :func:`starting_signals`, for a command's run: Ctrl-C raises KeyboardInterrupt again, as
    the commands and the library expect, and the guard is back after. SIGTERM needs nothing here: the
    command's own handler (cli/app.py) replaces the guard's for the run and puts it back after."""
    held = signal.SIGINT in _guarded
    if held:
        signal.signal(signal.SIGINT, _guarded[signal.SIGINT])
    try:
        yield
    finally:
        if held:
            signal.signal(signal.SIGINT, _stop_starting)
