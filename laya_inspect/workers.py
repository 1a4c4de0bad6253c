"""Independent runs in forked worker processes on this machine's CPUs: fit-head's (head, seed) runs,
prune's and early-exit's refits, compare's heads and figures.

A head run is a few thousand tiny optimizer steps, each too small for a second torch thread to help
(docs/PERFORMANCE.md), so a machine with several cores is used by running several runs at once, one
per process. The pool is the standard library's ``ProcessPoolExecutor`` with the ``fork`` start
method: the workers inherit the feature rows already in memory, the imported torch and the job itself
(a closure need not be picklable), so a worker starts in milliseconds instead of the seconds a fresh
interpreter needs to import torch. Each run seeds itself, so a run's numbers do not depend on which
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
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from .errors import LayaError
from .runtime import Progress, set_threads, usable_cpus

T = TypeVar("T")
R = TypeVar("R")
WORKERS_FLAG = "--workers"

_PR_SET_PDEATHSIG = 1
# A worker's job, (items, work): set in each worker by _start_worker, from the pool's initargs, which a
# forked worker inherits without pickling them.
_JOB: list[Any] = []


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


def _start_worker(parent: int, items: Sequence[Any], work: Callable[..., Any]) -> None:
    """Once per worker: it keeps its job (``items``, ``work``); it dies with the command that forked it
    (a killed fit-head must not leave orphans that train on, holding its output's lock: Linux's
    PR_SET_PDEATHSIG, which the standard pool does not set); and it runs one torch thread. A child
    forked after the parent's OpenMP pool has run cannot start a pool of its own: its first parallel
    operation with two threads or more waits forever (seen with a library caller that had left torch at
    its default threads). A head's steps gain nothing from a second thread anyway."""
    die_with_parent(parent)
    set_threads(1)
    _JOB[:] = [items, work]


def _child(i: int) -> bytes:
    items, work = _JOB
    events: list[dict[str, Any]] = []
    result = work(i, items[i], events.append)
    # Plain pickle bytes: multiprocessing's own pickler would hand torch tensors over through shared-memory
    # files, which a small /dev/shm (a container's 64 MB) or a file-size limit makes fail.
    return pickle.dumps((result, events), protocol=pickle.HIGHEST_PROTOCOL)


def _kill_workers(pool: ProcessPoolExecutor, before: set[Any]) -> None:
    """Ends ``pool``'s workers at once, the runs in flight and those queued, and waits until they are
    gone: leaving the pool's block would otherwise run every queued run first, and the command's cleanup
    (removing the output's temporary folder) must not race a worker still writing a figure into it.
    The workers are the children multiprocessing started since ``before`` (its public record, not the
    pool's private one)."""
    processes = [p for p in multiprocessing.active_children() if p not in before]
    for p in processes:
        with contextlib.suppress(OSError, ValueError):
            p.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            p.join()


def run_forked(items: Sequence[T], work: Callable[[int, T, Progress], R], workers: int, emit: Progress) -> list[R]:
    """``work(i, items[i], emit)`` for every item, in ``workers`` forked processes at once (1, or a
    platform without fork: a plain loop here); the results in item order. The first run that fails
    cancels the runs not yet started and its error is raised here, as itself, once the runs in flight end."""
    if workers <= 1 or len(items) <= 1 or not can_fork():
        return [work(i, item, emit) for i, item in enumerate(items)]
    done: dict[int, R] = {}
    before = set(multiprocessing.active_children())
    try:
        with ProcessPoolExecutor(
            max_workers=min(workers, len(items)),
            mp_context=multiprocessing.get_context("fork"),
            initializer=_start_worker,
            initargs=(os.getpid(), items, work),
        ) as pool:
            futures = {pool.submit(_child, i): i for i in range(len(items))}
            pending = set(futures)
            try:
                while pending:
                    # each run's events as it ends: FIRST_EXCEPTION waits for every run unless one fails
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for f in finished:
                        if f.exception() is not None:
                            for other in pending:
                                other.cancel()
                            raise f.exception()  # type: ignore[misc]
                        result, events = pickle.loads(f.result())
                        for e in events:
                            emit(e)
                        done[futures[f]] = result
            except KeyboardInterrupt:  # Ctrl-C or the command's SIGTERM: stop now, not after every queued run
                _kill_workers(pool, before)
                raise
    except BrokenProcessPool:
        raise LayaError(
            f"a worker process died before its run finished (killed, or out of memory); rerun with {WORKERS_FLAG} 1 "
            "to fit the runs one after another in this process"
        ) from None
    return [done[i] for i in range(len(items))]
