"""Rich progress bars fed by the library's progress events."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .app import err_console


def make_progress(field: str = "rate", *, transient: bool = False) -> Progress:
    """Bars on stderr whose column after the count is a task's ``field``: ``rate`` (then the time
    remaining too) or a free-text ``info``."""
    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn()]
    columns += [TextColumn(f"{{task.fields[{field}]}}"), TimeElapsedColumn()]
    if field == "rate":
        columns.append(TimeRemainingColumn())
    return Progress(*columns, console=err_console, transient=transient)


@contextmanager
def row_progress(unit: str = "rows", *, transient: bool = False) -> Iterator[Callable[[dict[str, Any]], None]]:
    """Callback for `split` / `batch` events: one bar per split with rows per second.

    When stderr is not a terminal (a log file, CI) a bar would only appear at the end, so plain
    lines are printed instead, about every tenth of a split.
    """
    if not err_console.is_terminal:
        yield _plain_rows(unit)
        return
    with make_progress(transient=transient) as bar:
        tasks: dict[str, Any] = {}

        def on_event(event: dict[str, Any]) -> None:
            split = event.get("split", "")
            if event["event"] == "split":
                tasks[split] = bar.add_task(split, total=event["total"], completed=event.get("done", 0), rate="")
            elif event["event"] == "batch":
                task_id = tasks[split]
                bar.advance(task_id, event["rows"])
                speed = bar.tasks[task_id].speed
                bar.update(task_id, rate=f"{speed:,.0f} {unit}/s" if speed else "")

        yield on_event


def _plain_rows(unit: str) -> Callable[[dict[str, Any]], None]:
    state: dict[str, Any] = {}

    def on_event(event: dict[str, Any]) -> None:
        if event["event"] == "split":
            state.update(
                split=event["split"],
                total=event["total"],
                done=event.get("done", 0),
                start_done=event.get("done", 0),
                t0=time.perf_counter(),
                next=0,
            )
            err_console.print(f"{state['split']}: {state['done']:,}/{state['total']:,} {unit}", highlight=False)
        elif event["event"] == "batch":
            state["done"] += event["rows"]
            if state["done"] >= state["next"] or state["done"] >= state["total"]:
                seconds = time.perf_counter() - state["t0"]
                rate = (state["done"] - state["start_done"]) / seconds if seconds > 0 else 0.0
                err_console.print(
                    f"{state['split']}: {state['done']:,}/{state['total']:,} {unit} ({rate:,.0f} {unit}/s)",
                    highlight=False,
                )
                state["next"] = state["done"] + max(1, state["total"] // 10)

    return on_event


@contextmanager
def fit_progress() -> Iterator[Callable[[dict[str, Any]], None]]:
    """Two bars on stderr: runs done, and the current run's epochs with the training loss, the
    validation loss and accuracy, and the best epoch's monitored value."""
    if not err_console.is_terminal:  # a log file: one plain line per finished run instead of bars

        def on_line(e: dict[str, Any]) -> None:
            if e["event"] == "run_end":
                err_console.print(
                    f"{e.get('stage', 'fit')}: {e['head']} seed {e['seed']} done, best epoch {e['best_epoch']}: "
                    f"val loss {e['val_loss']:.4f}, val acc {e['val_acc']:.4f}",
                    highlight=False,
                )

        yield on_line
        return
    bar = make_progress("info", transient=True)
    with bar:
        tasks: dict[str, Any] = {}

        def on_event(e: dict[str, Any]) -> None:
            stage = e.get("stage", "fit")
            if e["event"] == "run_start":
                if stage not in tasks:
                    tasks[stage] = bar.add_task(
                        "grid search" if stage == "grid" else "runs", total=e.get("runs"), info=""
                    )
                if "epoch" in tasks:
                    bar.remove_task(tasks["epoch"])
                tasks["epoch"] = bar.add_task(f"{e['head']} seed {e['seed']}", total=e["epochs"], info="")
            elif e["event"] == "epoch":
                best = e["best_val_loss"] if e.get("monitor", "loss") == "loss" else e["best_val_acc"]
                bar.update(
                    tasks["epoch"],
                    completed=e["epoch"],
                    info=f"loss {e['loss']:.4f}  val loss {e['val_loss']:.4f}  val acc {e['val_acc']:.4f} "
                    f"(best {e.get('monitor', 'loss')} {best:.4f})",
                )
            elif e["event"] == "run_end":
                bar.advance(tasks[stage])
                bar.update(
                    tasks[stage],
                    info=f"last: {e['head']} seed {e['seed']} val loss {e['val_loss']:.4f} acc {e['val_acc']:.4f}",
                )

        yield on_event


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def step_progress() -> Callable[[dict[str, Any]], None]:
    """Plain lines on stderr for prune's, early-exit's and diagnose's events: each step as it starts,
    each head read, and each refit as it ends, counted with the time so far and left. Runs in forked
    workers report when they end, in any order, so ended runs are counted, not the indices of started ones."""
    state = {"done": 0, "t0": time.perf_counter()}

    def line(text: str) -> None:
        err_console.print(text, style="dim", highlight=False)

    def on_event(e: dict[str, Any]) -> None:
        if e["event"] == "step":
            state.update(done=0, t0=time.perf_counter())
            line(f"  {e['step']} …")
        elif e["event"] == "head":
            line(f"  head {e['index'] + 1}/{e['total']}: {e['head']}")
        elif e["event"] == "fitted":
            state["done"] += 1
            done, total = state["done"], e["total"]
            spent = time.perf_counter() - state["t0"]
            left = f", about {_clock(spent / done * (total - done))} left" if done < total else ""
            k = len(e["layers"])
            line(
                f"  refit {done}/{total} done: {k} layer{'s' * (k != 1)} at seed {e['seed']} ({e['seconds']:.0f} s); "
                f"{_clock(spent)} so far{left}"
            )

    return on_event
