"""One command as several processes, launched by ``torchrun`` (torch.distributed): who this process is,
which rows are its own, and agreement on success.

``torchrun`` (or any launcher that sets the same variables, e.g. ``srun`` on Slurm) gives each process
``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``. Without them (or with
``WORLD_SIZE=1``) the world is one process and nothing here touches torch.distributed, so every command
runs as it always did. The process group uses gloo on CPU and, when the stage runs on CUDA, NCCL for
CUDA tensors beside gloo for the small Python objects the stages exchange (:func:`agree`).

Rows are shared out by :func:`shard_ranges`: contiguous, disjoint, in rank order, computed from the
row count alone, so another launcher (a Slurm array, Ray) can drive the same contract.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from . import errors
from .errors import InputError, LayaError

T = TypeVar("T")
R = TypeVar("R")
# How long a process waits for the others at a meeting point. Ranks finish their shards at different
# times (a resumed rank has less left), so this is generous; a rank that dies is noticed by torchrun,
# which stops the others at once. Override with LAYA_DIST_TIMEOUT_S.
TIMEOUT_S = 6 * 3600


@dataclass(frozen=True)
class World:
    """This process's place among the ``size`` processes of one command (``size == 1``: alone)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    backend: str = ""  # "" when alone

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1


def env_world() -> World:
    """The world torchrun's environment variables describe (torch is not imported)."""
    raw = {k: os.environ.get(k, "").strip() for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    if raw["WORLD_SIZE"] in ("", "1"):
        return World()
    try:
        size, rank = int(raw["WORLD_SIZE"]), int(raw["RANK"])
        local = int(raw["LOCAL_RANK"] or rank)
    except ValueError:
        raise InputError(
            f"WORLD_SIZE={raw['WORLD_SIZE']!r}, RANK={raw['RANK']!r}, LOCAL_RANK={raw['LOCAL_RANK']!r} are not "
            "whole numbers; launch with torchrun, which sets them"
        ) from None
    if not 0 <= rank < size:
        raise InputError(f"RANK={rank} is outside WORLD_SIZE={size}; launch with torchrun, which sets them")
    return World(rank=rank, size=size, local_rank=local)


def is_main_process() -> bool:
    """Whether this process should speak to the user (rank 0, or alone); never raises."""
    try:
        return env_world().is_main
    except InputError:
        return True


def device_for(name: str, world: World) -> str:
    """``auto``/``cuda`` under torchrun mean this process's own GPU, ``cuda:LOCAL_RANK``; a named
    ``cuda:N`` or ``cpu`` is taken as given."""
    if not world.distributed or name not in ("auto", "cuda"):
        return name
    import torch

    if name == "cuda" or torch.cuda.is_available():
        return f"cuda:{world.local_rank}"
    return name


@contextmanager
def session(device: str = "auto") -> Iterator[World]:
    """Join the process group for the body when launched by torchrun (gloo on CPU; NCCL beside gloo
    when ``device`` is CUDA), and leave it after. A group the caller already started is used as it is."""
    world, joined = _join(device)
    try:
        yield world
    finally:
        if joined:
            import torch.distributed as dist

            dist.destroy_process_group()


def join_world(device: str = "auto") -> World:
    """Like :func:`session`, for a stage that stays in the group until the process ends (the group
    is left at exit): the world, joined if torchrun launched this process and nobody joined yet."""
    world, joined = _join(device)
    if joined:
        import atexit

        import torch.distributed as dist

        atexit.register(lambda: dist.destroy_process_group() if dist.is_initialized() else None)
    return world


def _join(device: str) -> tuple[World, bool]:
    """This process's world, in the process group when torchrun launched it; True when it joined here."""
    world = env_world()
    if not world.distributed:
        return world, False
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return replace(world, backend=str(dist.get_backend())), False
    mine = device_for(device, world)
    cuda = mine.startswith("cuda")
    backend = "cpu:gloo,cuda:nccl" if cuda else "gloo"
    if cuda:  # cuda:N named by the user puts every process on GPU N, not on GPU LOCAL_RANK
        torch.cuda.set_device(torch.device(mine))
    timeout = _dt.timedelta(seconds=float(os.environ.get("LAYA_DIST_TIMEOUT_S", TIMEOUT_S)))
    dist.init_process_group(backend, timeout=timeout)
    return replace(world, backend=backend), True


def agree(world: World, work: Callable[[], T]) -> list[T]:
    """Run ``work`` on every process and return every process's result, in rank order, once all have
    succeeded. When one fails, every process raises: the failed one its own error, the others the same
    kind of error naming that rank, so no process waits forever for one that gave up."""
    if not world.distributed:
        return [work()]
    import torch.distributed as dist

    failure: tuple[str, str] | None = None
    value: Any = None
    error: BaseException | None = None
    try:
        value = work()
    except LayaError as e:
        failure, error = (type(e).__name__, str(e)), e
    except Exception as e:  # a bug: the others stop too, this process keeps its traceback
        failure, error = ("", f"{type(e).__name__}: {e}"), e
    gathered: list[Any] = [None] * world.size
    dist.all_gather_object(gathered, (failure, value))
    if error is not None:
        raise error
    for rank, (other, _) in enumerate(gathered):
        if other is not None:
            kind = getattr(errors, other[0], None) if other[0] else None
            cls = kind if isinstance(kind, type) and issubclass(kind, LayaError) else LayaError
            raise cls(f"process {rank} of {world.size} failed: {other[1]}")
    return [v for _, v in gathered]


def shard_ranges(n: int, size: int, align: int = 1) -> list[tuple[int, int]]:
    """Rank r's rows are ``[start, stop)`` of entry r: contiguous, disjoint, covering ``0..n`` in rank
    order, as even as they can be with every boundary but the last a multiple of ``align``. With
    ``align`` the batch size, each process runs exactly the batches one process would."""
    if n < 0 or size < 1 or align < 1:
        raise InputError(f"cannot share {n} rows among {size} processes in blocks of {align}")
    # boundary r is r·n/size rounded to the nearest multiple of align, in integers
    bounds = [min(n, align * ((2 * n * r + size * align) // (2 * size * align))) for r in range(size)] + [n]
    bounds[0] = 0
    return [(bounds[r], bounds[r + 1]) for r in range(size)]


def spread(world: World, items: Sequence[T], work: Callable[[int, T], R]) -> list[R]:
    """``work(i, items[i])`` for every item, item i on rank ``i % size``; every process gets every
    result, in item order (through :func:`agree`, so one failure stops all). Alone: a plain loop."""
    mine = lambda: [(i, work(i, item)) for i, item in enumerate(items) if i % world.size == world.rank]  # noqa: E731
    done = dict(pair for part in agree(world, mine) for pair in part)
    return [done[i] for i in range(len(items))]
