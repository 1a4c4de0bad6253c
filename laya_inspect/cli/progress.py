"""Rich progress bars fed by the library's progress events."""
from __future__ import annotations

from contextlib import contextmanager
from collections.abc import Iterator
from typing import Any, Callable

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from . import err_console


def make_progress(*, transient: bool = False) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn(),
        console=err_console, transient=transient,
    )


@contextmanager
def row_progress(unit: str = "rows", *, transient: bool = False) -> Iterator[Callable[[dict[str, Any]], None]]:
    """Callback for `split` / `batch` events: one bar per split with rows per second."""
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
