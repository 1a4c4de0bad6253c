"""The `laya-inspect` command: thin typer commands over the library.

Each command parses options, builds a config, calls one library function and prints. A
LayaError becomes one red line and exit code 1; click's usage errors exit 2; anything else is a bug
and keeps its traceback.
"""
from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from ..errors import LayaError

console = Console()
err_console = Console(stderr=True)


class _Group(TyperGroup):
    """Turns a LayaError raised by any command into one red line and exit code 1."""

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except LayaError as e:
            fail(str(e))


app = typer.Typer(
    cls=_Group,
    name="laya-inspect",
    help="Which layers of a frozen network does each prediction rely on? extract → fit-head → compare.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="print the version and exit", is_eager=True),
) -> None:
    """Which layers of a frozen network does each prediction rely on? extract → fit-head → compare."""
    if version:
        from .. import __version__

        console.print(f"laya-inspect {__version__}")
        raise typer.Exit(0)


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(1)


def main(argv: list[str] | None = None) -> None:
    try:
        app(args=argv, standalone_mode=True)
    except LayaError as e:  # pragma: no cover - _Group normally turns it into exit 1 first
        err_console.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        sys.exit(1)


# Each command module adds its commands to `app`, so it is imported after `app` exists.
from . import commands  # noqa: E402,F401
