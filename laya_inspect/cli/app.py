"""The typer app every command module registers on, its console, and the option and error helpers:
`cli/*` imports from here, never from the package, so the command modules and the package that
loads them import in one direction."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import MISSING
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

from ..errors import LayaError, os_message
from ..options import default_of, field_of
from ..runtime import NOTHING_HALF_WRITTEN, THREADS_FLAG, THREADS_HELP, command_finished, ctrl_c_as_before

STARTED = time.perf_counter()  # as near the process's start as the command can see: before torch and the rest
console = Console()
err_console = Console(stderr=True)

# What sizes each command's memory, for the one line a MemoryError becomes (the options' own bounds
# catch a typo up front; this is for a large run on a small machine).
MEMORY_OPTIONS = {
    "extract": "--batch-size or --limit",
    "fit-head": "--batch-size, --workers or --seeds",
    "train": "--batch-size or --limit",
    "compare": "--limit, --batch-size, --internal-batch-size, --bootstrap, --n-steps or --workers",
    "explain": "--n-steps",
    "prune": "--rank-rows, --train-limit, --batch-size or --workers",
    "early-exit": "--thresholds, --train-limit, --batch-size or --workers",
    "diagnose": "--bootstrap or --permutations",
    "check": "--rows",
    "demo": "--quick",
}


def memory_message(command: str | None) -> str:
    lower = MEMORY_OPTIONS.get(command or "", "the options that size the run (--limit, --batch-size)")
    return f"out of memory{f' in {command}' if command else ''}: lower {lower}, or run on a machine with more memory"


INTERRUPTED = {
    None: NOTHING_HALF_WRITTEN,
    "extract": "the rows written so far are kept in the cache's .partial file; run the same command again to "
    "resume from them",
    "demo": "each step the demo finished is kept whole and demo.json says which; run it again with --force to "
    "start over",
}


class Stopped(KeyboardInterrupt):
    """Ctrl-C or SIGTERM raised again by a command that has looked at what it left on disk: ``said``
    replaces the command's line in INTERRUPTED (extract stopped before any row was written)."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``docker stop``, a scheduler's preemption), raised by the command's handler
    wherever the command is, as Python raises KeyboardInterrupt for Ctrl-C: the same ``finally``
    blocks run (temporary files and folders removed, extract's rows kept in its .partial), and no
    ``except Exception`` in the library can swallow it."""


class _OnSigterm:
    """The command's SIGTERM handler: raises :class:`Terminated` once; a second SIGTERM while the
    command unwinds is ignored, so it cannot cut the cleanup short (SIGKILL still ends it at once)."""

    def __init__(self) -> None:
        self.received = False

    def __call__(self, signum: int, frame: Any) -> None:
        if not self.received:
            self.received = True
            raise Terminated


_handler: _OnSigterm | None = None  # the one installed now, read in a forked child


def _child_default() -> None:
    """In every child forked while the command's handler is installed (fit-head's workers, the cache
    reader's probe): SIGTERM kills it as it would have before, instead of running the parent's cleanup
    and printing its line. Such a child still dies with the command (PR_SET_PDEATHSIG, workers.py)."""
    if _handler is not None and signal.getsignal(signal.SIGTERM) is _handler:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


_at_fork_registered = False


@contextlib.contextmanager
def sigterm_like_ctrl_c() -> Iterator[_OnSigterm | None]:
    """SIGTERM handled as Ctrl-C for the block, the previous handler restored after it. Only the
    command line installs it (a library caller's own handling is left alone); not off the main
    thread, where Python cannot set a handler."""
    global _handler, _at_fork_registered
    # under torchrun SIGTERM comes from torchrun itself, when another rank has failed: a rank waiting in a
    # collective runs no Python code, so a handler would hold it until torchrun's SIGKILL; it dies at once
    ranks = os.environ.get("WORLD_SIZE", "").strip() not in ("", "1")
    main = threading.current_thread() is threading.main_thread()
    # a supervisor that set SIGTERM to be ignored meant it: the command does not take it back
    if not main or ranks or signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        yield None
        return
    if not _at_fork_registered:  # once a process: a hook cannot be taken back, and does nothing once restored
        os.register_at_fork(after_in_child=_child_default)
        _at_fork_registered = True
    handler, outer = _OnSigterm(), _handler
    previous = signal.signal(signal.SIGTERM, handler)
    _handler = handler
    try:
        yield handler
    finally:
        signal.signal(signal.SIGTERM, previous)
        _handler = outer


def _stopped(command: str | None, signalled: bool, said: str | None = None) -> None:
    """Ctrl-C or SIGTERM: one line saying what is left on disk (``said``, else the command's line in
    INTERRUPTED), with the shell's exit code for the signal (130 for SIGINT, 143 for SIGTERM)."""
    said = said or INTERRUPTED.get(command, INTERRUPTED[None])
    word, code = ("terminated", 128 + signal.SIGTERM) if signalled else ("interrupted", 128 + signal.SIGINT)
    stderr_line(word, said, "yellow")
    raise typer.Exit(code) from None


class _BlankHelpType:
    """-h/--help without typer's "<bool>" beside it: a flag takes no value, and an empty metavar (the
    documented name of an option's value) leaves that column blank, as on every other flag here."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option


class _Command(_BlankHelpType, TyperCommand):
    pass


class _Group(_BlankHelpType, TyperGroup):
    """Turns a LayaError raised by any command, an OS error on a named path (full disk, no
    permission) or a MemoryError into one red line and exit code 1; Ctrl-C into one line, exit 130,
    and SIGTERM into the same line as "terminated", exit 143."""

    def invoke(self, ctx: Any) -> Any:  # typer >= 0.24 passes its vendored click Context
        with ctrl_c_as_before(), sigterm_like_ctrl_c() as sigterm:

            def after_sigterm() -> None:  # an error on the way out of a terminated run (a worker killed with it)
                if sigterm is not None and sigterm.received:
                    _stopped(ctx.invoked_subcommand, True)

            try:
                done = super().invoke(ctx)
                command_finished()  # its results are out: a Ctrl-C from here on loses nothing
                return done
            except LayaError as e:
                after_sigterm()
                fail(str(e))
            except OSError as e:
                after_sigterm()
                if e.filename is None:  # not about a path the user named: a bug, keep the traceback
                    raise
                fail(os_message(e, "could not access"))
            except MemoryError:
                after_sigterm()
                # not a bug but a run too large for this machine: the traceback would say nothing more, and
                # the memory it held is free again once the stack has unwound
                fail(memory_message(ctx.invoked_subcommand))
            except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM through the handler above
                said = e.said if isinstance(e, Stopped) else None
                _stopped(ctx.invoked_subcommand, bool(sigterm and sigterm.received), said)


class _HelpGroup(_BlankHelpType, TyperGroup):
    pass


class Typer(typer.Typer):
    """typer's app whose commands and groups show -h/--help as the flag it is (see _BlankHelpType)."""

    def __init__(self, *args: Any, cls: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, cls=cls or _HelpGroup, **kwargs)

    def command(self, *args: Any, cls: Any = None, **kwargs: Any) -> Any:
        return super().command(*args, cls=cls or _Command, **kwargs)


app = Typer(
    cls=_Group,
    name="laya-inspect",
    help="Which layers of a frozen network does each prediction rely on? extract → fit-head → compare.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        console.print(f"laya-inspect {__version__}", highlight=False)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", metavar="", help="print the version and exit", is_eager=True, callback=_print_version
    ),
) -> None:
    """Which layers of a frozen network does each prediction rely on? extract → fit-head → compare."""
    from ..distributed import is_main_process

    console.quiet = not is_main_process()  # under torchrun, rank 0 speaks for every process
    warnings.formatwarning = _one_line  # a user reads "warning: …", not the library's source line


def _one_line(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    return f"warning: {message}\n"


def opt(
    config: type,
    name: str,
    *aliases: str,
    default: Any = MISSING,
    help: str | None = None,
    parser: Callable[[str], Any] | None = None,
) -> Any:
    """The typer option of config field ``name``: its flag, help and default as the config declares
    them (``default``/``help`` only where the command line spells the value differently; ``parser``:
    what turns the typed text into the value, e.g. :func:`out_file`)."""
    f = field_of(config, name)
    config_default = default_of(config, name)
    value = config_default if default is MISSING else default
    if value is None and isinstance(config_default, tuple) and "default" not in f.metadata["help"]:
        # a comma list, empty here: say what it means, unless the field's help already does
        help = help or f"{f.metadata['help']} (default {','.join(map(str, config_default))})"
    choices = f.metadata.get("choices")

    def one_of(given: Any) -> Any:
        if choices and given is not None and given not in choices:
            raise typer.BadParameter(f"choose from {', '.join(choices)}")
        return given

    return typer.Option(
        ... if value is MISSING else value,
        f.metadata["flag"],
        *aliases,
        help=help or f.metadata["help"],
        show_default=True,
        # typer's help prints "<bool>" beside an on/off flag, as if it took a value: an empty metavar (the
        # documented name of an option's value) leaves that column blank, as every flag of the cli/ does
        metavar="" if isinstance(value, bool) else None,
        callback=one_of if choices else None,
        parser=parser,
    )


THREADS = typer.Option(None, THREADS_FLAG, help=THREADS_HELP)  # the commands whose config has no threads field


def out_file(example: str) -> Callable[[str], Path]:
    """The parser of every ``--out`` that names one file (train's checkpoint, extract's cache, explain's
    figure): it sees the text as typed, before typer's Path would drop a trailing slash, and refuses
    one (``out_dir.file_out``): "--out newdir/ names a folder; give a file path such as newdir/``example``"."""

    def parse(text: str) -> Path:
        from ..out_dir import file_out

        return file_out(text, example)

    return parse


def from_options(config: type, given: dict[str, Any], **changes: Any) -> Any:
    """``config`` built from a command's parameters (``given``: its ``locals()``) named like its fields;
    ``changes`` for values the command line spells differently."""
    names = {f.name for f in dataclasses.fields(config)}
    return config(**{**{k: v for k, v in given.items() if k in names}, **changes})


def comma_list(value: str, cast: Callable[[str], Any], option: str, what: str = "a comma-separated list") -> Any:
    try:
        return tuple(cast(v.strip()) for v in value.split(",") if v.strip())
    except ValueError:
        raise typer.BadParameter(f"expected {what}, got {value!r}", param_hint=option) from None


_HELD = "\ue000"  # a private-use character: a space that textwrap does not break at, put back before printing
_LAYER_COUNTS = re.compile(r"\bk = [\d, to—]+? of \d+ layers")  # report/reading.py's ks_text: "k = 1, 2 of 3 layers"


def _held_together(part: str, room: int) -> str:
    """``part`` with the spaces inside each "k = 1, 2 of 3 layers" held, so a line never ends "k = 1,"
    and reads "2 of 3 layers" below; one longer than a line (``room``) may still break."""
    return _LAYER_COUNTS.sub(lambda m: m[0].replace(" ", _HELD) if len(m[0]) <= room else m[0], part)


def wrapped(
    text: str, *, lead: str = "", style: str | None = None, err: bool = False, lead_style: str | None = None
) -> None:
    """``text`` after ``lead`` ("warning: ", "• ") in lines of the console's width, broken only between
    words (never inside "k = 1, 2 of 3 layers") and continued two spaces in: a path, or any word longer
    than a line, stays whole on a line of its own (the terminal's own wrap, which a pipe's reader never
    gets, broke such lines anywhere).
    ``lead_style`` colours the lead alone ("error:" in red, the message plain)."""
    import textwrap

    out = err_console if err else console
    first = True
    for part in (lead + text).splitlines() or [""]:
        indent = part[: len(part) - len(part.lstrip())] + "  "
        part = _held_together(part, out.width - len(indent))
        # break_on_hyphens=False: runs/early-exit and --train-split stay whole
        lines = textwrap.wrap(part, out.width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
        for line in (line.replace(_HELD, " ") for line in lines or [""]):
            said = Text(line, style=style or "")
            if first and lead_style and line.startswith(lead):
                said.stylize(lead_style, 0, len(lead.rstrip()))
            first = False
            out.print(said, highlight=False, soft_wrap=True)


def stderr_line(word: str, text: str, style: str) -> None:
    """ "``word``: ``text``" on stderr, the word in ``style``: one line where stderr is a pipe or a file, so
    a log keeps one line per error or stop; at a terminal wrapped between words to its width, as every
    other line is, instead of the terminal breaking it mid-word."""
    if err_console.is_terminal:
        wrapped(text, lead=f"{word}: ", lead_style=style, err=True)
    else:
        err_console.print(Text.assemble((f"{word}:", style), f" {text}"), highlight=False, soft_wrap=True)


def warn(warnings: list[str] | None) -> None:
    """One "warning: …" paragraph each, in the warning colour; fit-head's warning said of several heads
    once (:func:`~laya_inspect.compare.records.said_once`)."""
    from ..compare.records import said_once

    for w in said_once(warnings or []):
        wrapped(w, lead="warning: ", style="yellow")


def bullets(lines: list[str], warnings: list[str] | None = None) -> None:
    """A result's verdict, one bullet a paragraph, after its ``warnings``: a verdict is read only beside
    what it cannot be trusted for."""
    warn(warnings)
    for line in lines:
        wrapped(line, lead="• ")


def titled_table(title: str, *columns: str, left: int = 1, wrap: bool = True) -> Table:
    """A command's table: its title on the left, a rule under the header, the first ``left`` columns
    aligned left and the rest right; the first column never wraps (no column with ``wrap=False``)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for i, c in enumerate(columns):
        table.add_column(c, justify="left" if i < left else "right", no_wrap=i == 0 or not wrap)
    return table


def show(renderable: Any, out: Console | None = None) -> None:
    """A renderable on stdout (``out``: another console); a table first sized to the terminal so that no
    cell is cut to "…"."""
    from ..report.across import fit_width

    out = out or console
    out.print(fit_width(renderable, out) if isinstance(renderable, Table) else renderable)


def dim(text: str, *, err: bool = False) -> None:
    """One dim line on stdout (``err``: stderr): a step, a note, what was written."""
    wrapped(text, style="dim", err=err)


def fail(message: str) -> None:
    stderr_line("error", message, "bold red")
    raise typer.Exit(1)


def json_text(obj: Any, **options: Any) -> str:
    """``obj`` as indented JSON for stdout: characters its encoding cannot hold (α, ρ, — on an ASCII or
    Latin-1 stream) as \\u escapes, which every JSON reader turns back into the same text."""
    try:
        "α—ρ".encode(getattr(sys.stdout, "encoding", None) or "ascii")
        ascii_only = False
    except (UnicodeEncodeError, LookupError):
        ascii_only = True
    return json.dumps(obj, indent=2, ensure_ascii=ascii_only, **options)


def _tolerant_output() -> None:
    """A stream whose encoding cannot hold α, ρ or — (an ASCII or Latin-1 locale, a redirect on Windows)
    prints "?" for them, instead of the command ending in a UnicodeEncodeError after its work is written."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="replace")


def main(argv: list[str] | None = None) -> None:
    _tolerant_output()
    try:
        app(args=argv, standalone_mode=True)
    except LayaError as e:  # pragma: no cover - _Group normally turns it into exit 1 first
        stderr_line("error", str(e), "bold red")
        sys.exit(1)
