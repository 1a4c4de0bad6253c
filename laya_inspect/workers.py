"""Independent runs in forked worker processes on this machine's CPUs: fit-head's (head, seed) runs,
prune's and early-exit's refits, compare's heads and figures.

A head run is a few thousand tiny optimizer steps, each too small for a second torch thread to help
(docs/PERFORMANCE.md), so a machine with several cores is used by running several runs at once, one
per process. The workers are multiprocessing processes started with the ``fork`` method: they inherit
the feature rows already in memory, the imported torch and the job itself (a closure need not be
picklable), so a worker starts in milliseconds instead of the seconds a fresh interpreter needs to
import torch. Each has its own two pipes, read by the calling thread alone, with no thread of the
pool's own: the standard ``ProcessPoolExecutor`` reads every result on a thread of its own, which a
worker killed halfway through sending its result (Ctrl-C) left reading forever, and the command waited
on that thread at exit. Each run seeds itself, so a run's numbers do not depend on which
process ran it or on how many there were.

Forking is used only where it is safe: on Linux, for CPU work, with nothing read from an open HDF5
file inside the run (a streamed cache stays in one process). Progress events a worker emits are sent
back with its result and replayed in the parent, in the order the runs finish.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import select
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

from .errors import LayaError
from .runtime import Progress, set_threads, usable_cpus

T = TypeVar("T")
R = TypeVar("R")
WORKERS_FLAG = "--workers"

_PR_SET_PDEATHSIG = 1


def can_fork() -> bool:
    """Whether worker processes may be forked here (Linux: fork is the platform's own start method)."""
    return sys.platform.startswith("linux")


def default_workers(runs: int, threads: int) -> int:
    """How many runs at once when ``--workers`` is not given: the usable CPUs ÷ the threads each run
    uses, at most the number of runs, at least 1."""
    return max(1, min(runs, usable_cpus() // max(1, threads)))


def cpu_workers(requested: int | None, device: Any, runs: int) -> int:
    """Processes for ``runs`` independent training runs on ``device``: ``requested``, or by default
    :func:`default_workers`; always 1 off the CPU (a forked child cannot use its parent's CUDA context)
    or where forking is unsafe."""
    if str(device) != "cpu" or not can_fork() or runs < 2:
        return 1
    import torch

    return min(runs, requested or default_workers(runs, torch.get_num_threads()))


def plot_workers(items: int) -> int:
    """Processes for drawing ``items`` independent groups of figures: one per usable CPU, at most the
    items; 1 where forking is unsafe (not Linux, or CUDA already started in this process)."""
    if not can_fork() or items < 2:
        return 1
    import torch

    if torch.cuda.is_initialized():  # a forked child cannot use the parent's CUDA context
        return 1
    return default_workers(items, 1)


def die_with_parent(parent: int) -> None:
    """In a forked child: be killed when the process ``parent`` ends (Linux's PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # no prctl here: nothing to bind to
        pass
    if os.getppid() != parent:  # the parent was gone before the line above took effect
        os._exit(1)


def finishes_in(seconds: float, work: Callable[[], Any]) -> bool:
    """Whether ``work()``, run in a forked child, ends (returns or raises) within ``seconds``; a child
    still running then is killed. For C code that can loop forever, which no Python code in this
    process could interrupt. True without trying where forking is unsafe (not Linux)."""
    if not can_fork():
        return True
    parent = os.getpid()
    done, alive = os.pipe()  # the child's end closes when it exits: the parent wakes at once
    try:
        pid = os.fork()
    except OSError:  # no memory or process left for a child: read without the deadline
        os.close(done)
        os.close(alive)
        return True
    if pid == 0:  # the child: nothing it does may reach the parent's files, output or exit code
        try:
            os.close(done)
            die_with_parent(parent)
            work()
        finally:
            os._exit(0)
    os.close(alive)
    try:
        ended = bool(select.select([done], [], [], seconds)[0])
    finally:
        os.close(done)
    if not ended:
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):  # a caller that ignores SIGCHLD has it reaped already
        os.waitpid(pid, 0)
    return ended


class RemoteTraceback(Exception):
    """A failed run's traceback in its worker, chained to its error raised here (the error's
    ``__cause__``), so that a bug's traceback shows where in the run it happened."""

    def __str__(self) -> str:
        return f"\n{self.args[0]}"


def _outcome(i: int, items: Sequence[Any], work: Callable[..., Any]) -> bytes:
    """One run in a worker, as the bytes sent back: ``(result, events, None)``, or ``(None, [], (error,
    traceback))``. Plain pickle bytes: multiprocessing's own pickler would hand torch tensors over through
    shared-memory files, which a small /dev/shm (a container's 64 MB) or a file-size limit makes fail."""
    events: list[dict[str, Any]] = []
    try:
        return pickle.dumps((work(i, items[i], events.append), events, None), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as e:  # the run's own error, or its result's that cannot be pickled
        told = "".join(traceback.format_exception(e))
        try:
            sent = pickle.dumps((None, [], (e, told)), protocol=pickle.HIGHEST_PROTOCOL)
            pickle.loads(sent)  # an error that cannot be rebuilt here would be rebuilt nowhere
            return sent
        except Exception:
            return pickle.dumps((None, [], (RuntimeError(f"{type(e).__name__}: {e}"), told)))


def _serve(parent: int, items: Sequence[Any], work: Callable[..., Any], tasks: Connection, results: Connection) -> None:
    """A worker's life: the runs its command hands it, one at a time, until told to stop (None). It
    dies with the command that forked it (a killed fit-head must not leave orphans that train on,
    holding its output's lock: Linux's PR_SET_PDEATHSIG). Ctrl-C is the command's to act on, which
    kills its workers: a worker ignores it. It runs one torch thread: a child forked after the parent's
    OpenMP pool has run cannot start a pool of its own, its first parallel operation with two threads
    or more waits forever (seen with a library caller that had left torch at its default threads), and a
    head's steps gain nothing from a second thread anyway."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    set_threads(1)
    with contextlib.suppress(EOFError, OSError):  # the command closed its end: nothing more to do
        while (i := tasks.recv()) is not None:
            results.send_bytes(_outcome(i, items, work))


DIED = b""  # what a worker that died has sent: no pickle is empty


def _died() -> LayaError:
    return LayaError(
        f"a worker process died before its run finished (killed, or out of memory); rerun with {WORKERS_FLAG} 1 "
        "to fit the runs one after another in this process"
    )


class _Worker:
    """One forked worker and its two pipes. Each pipe's other end is in the worker alone (this process
    closes its copy at once, before the next worker is forked), so a worker that dies while sending
    ends the read here (end of file) instead of leaving it waiting for bytes that will never come."""

    def __init__(self, parent: int, items: Sequence[Any], work: Callable[..., Any]) -> None:
        task_out, self.tasks = multiprocessing.Pipe(duplex=False)
        self.results, result_in = multiprocessing.Pipe(duplex=False)
        context = multiprocessing.get_context("fork")  # inherits items and work as they are: nothing pickled
        self.process = context.Process(target=_serve, args=(parent, items, work, task_out, result_in))
        self.running: int | None = None
        self._theirs = (task_out, result_in)

    def start(self) -> None:
        try:
            self.process.start()
        finally:
            for end in self._theirs:
                end.close()

    def hand(self, i: int) -> None:
        try:
            self.tasks.send(i)
        except OSError:  # its end is closed: it died
            raise _died() from None
        self.running = i

    def receive(self, ready: list[Any]) -> bytes | None:
        """The bytes of its run if it has sent them whole, None if not yet, DIED if it has died."""
        if self.results not in ready:
            return DIED if self.process.sentinel in ready else None  # ended, and nothing left to read
        try:
            return self.results.recv_bytes()
        except (EOFError, OSError):  # ended before or while sending
            return DIED

    def ask_to_stop(self) -> None:
        with contextlib.suppress(OSError):  # it has died already
            self.tasks.send(None)

    def close(self) -> None:
        """Kills the worker if it still runs and waits until it is gone."""
        if self.process.pid is not None:  # it started
            with contextlib.suppress(OSError, ValueError):
                self.process.kill()
                self.process.join()
                self.process.close()
        self.tasks.close()
        self.results.close()


def _end(pool: list[_Worker], kill: bool) -> None:
    """Ends every worker of ``pool`` (at once if ``kill``, else once it has read the stop) and waits until
    they are gone: the command's cleanup (removing the output's temporary folder) must not race a worker
    still writing a figure into it. Ctrl-C while they end kills them."""
    try:
        if not kill:
            for w in pool:
                w.ask_to_stop()
            for w in pool:
                w.process.join()
    finally:
        for w in pool:
            w.close()


def run_forked(items: Sequence[T], work: Callable[[int, T, Progress], R], workers: int, emit: Progress) -> list[R]:
    """``work(i, items[i], emit)`` for every item, in ``workers`` forked processes at once (1, or a
    platform without fork: a plain loop here); the results in item order. The first run that fails
    stops the runs not yet started and its error is raised here, as itself, once the runs in flight end.

    Ctrl-C (or the command's SIGTERM, raised as KeyboardInterrupt) kills the workers at once, the runs in
    flight and those queued, and is raised here as soon as they are gone. Every pipe is read by this
    thread alone and a dead worker's pipe reads as ended, so nothing waits on a worker killed halfway
    through sending its result (the standard ``ProcessPoolExecutor`` reads results on a thread of its own,
    which such a kill left reading forever, and the command with it, at exit)."""
    if workers <= 1 or len(items) <= 1 or not can_fork():
        return [work(i, item, emit) for i, item in enumerate(items)]
    done: dict[int, R] = {}
    queued = iter(range(len(items)))
    pool: list[_Worker] = []
    failed: BaseException | None = None
    killed = True
    try:
        for _ in range(min(workers, len(items))):
            pool.append(_Worker(os.getpid(), items, work))  # listed before it starts: killed whatever happens
            pool[-1].start()
            pool[-1].hand(next(queued))
        while busy := [(w, i) for w in pool if (i := w.running) is not None]:
            ready = wait([w.results for w, _ in busy] + [w.process.sentinel for w, _ in busy])
            for w, i in busy:
                sent = w.receive(ready)
                if sent == DIED:
                    if failed is not None:  # the first failure, told first
                        raise failed
                    raise _died()
                if sent is None:
                    continue
                w.running = None
                result, events, error = pickle.loads(sent)
                if error is not None:
                    if not isinstance(error[0], Exception):  # a worker's Ctrl-C, SystemExit: stop all now
                        raise error[0]
                    error[0].__cause__ = RemoteTraceback(error[1])
                    failed = failed or error[0]
                    continue
                for e in events:  # each run's events as it ends
                    emit(e)
                done[i] = result
                if failed is None and (nxt := next(queued, None)) is not None:
                    w.hand(nxt)
        killed = False
    finally:
        _end(pool, kill=killed)
    if failed is not None:
        raise failed
    return [done[i] for i in range(len(items))]
