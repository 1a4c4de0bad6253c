"""Options declared once: each config field names its command-line flag and help in its metadata.

A library config (``FitConfig``, ``JointConfig``, ``ExtractConfig``, ``CompareConfig``) declares a field
with :func:`option`; the CLI builds each typer option from that field (flag, help, default), and
:func:`command_line` builds the ``laya-inspect COMMAND …`` argv that makes the command rebuild a given
config. So a default, a flag or a help text lives in one place. :func:`check` turns a config's
``(ok, field, what)`` rules into an InputError that names the flag and the bad value.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .errors import InputError

# field metadata keys: flag ("--lr", or "--on/--off" for a bool that can be turned off), help,
# always (always written by command_line), argv (value → the option's text, or None to leave it out),
# choices (the only values the command line accepts)
Missing = dataclasses.MISSING


def option(
    default: Any = Missing,
    *,
    flag: str,
    help: str,
    always: bool = False,
    argv: Callable[[Any], str | None] | None = None,
    choices: Sequence[str] | None = None,
) -> Any:
    """A dataclass field that is also a command-line option (see the module docstring). ``choices``:
    the command line refuses any other value as a usage error."""
    meta = {"flag": flag, "help": help, "always": always, "argv": argv, "choices": choices}
    return dataclasses.field(default=default, metadata=meta)


def field_of(config: Any, name: str) -> dataclasses.Field:
    for f in dataclasses.fields(config):
        if f.name == name:
            return f
    raise KeyError(f"{getattr(config, '__name__', type(config).__name__)} has no field {name!r}")


def default_of(config: Any, name: str) -> Any:
    f = field_of(config, name)
    if f.default is not Missing:
        return f.default
    if f.default_factory is not Missing:
        return f.default_factory()
    return Missing


def defaulted(config: Any) -> list[str]:
    """The names of ``config``'s fields that hold their declared default (a field with none never does),
    summary.json's ``config_defaults``: the settings lines say these apart from the ones a user chose."""
    out = []
    for f in dataclasses.fields(config):
        default = default_of(type(config), f.name)
        if default is not Missing and bool(getattr(config, f.name) == default):
            out.append(f.name)
    return out


def check(config: Any, rules: Iterable[tuple[bool, str, str]]) -> None:
    """Raise InputError for the first rule ``(ok, field, what)`` that fails: "--flag what, got value"."""
    for ok, name, what in rules:
        if not ok:
            value = getattr(config, name)
            shown = list(value) if isinstance(value, tuple) else value
            flag = field_of(config, name).metadata.get("flag")  # '--relu' of '--relu/--no-relu'
            raise InputError(f"{flag.partition('/')[0] if flag else name} {what}, got {shown!r}")


# The seeds every command draws from: torch.manual_seed and numpy's default_rng take 0 … 2**64 − 1 (numpy
# takes larger ones too, but a larger one cannot be stored in an HDF5 or written back by torch).
SEED_LIMIT = 2**64
# scikit-learn's random_state (extract's seeded train/test split of a dataset without one) takes 0 … 2**32 − 1.
SKLEARN_SEED_LIMIT = 2**32


# Upper bounds of the options that size a run's work, far above any real use (the defaults are 1,000
# resamples, 50 IG steps, 41 thresholds): a typo beyond them would end in an out-of-memory kill or
# hours of work instead of a result, so the configs refuse it up front.
MAX_RESAMPLES = 100_000  # --bootstrap (compare, diagnose) and --permutations (diagnose)


def within(value: int | None, low: int, high: int) -> bool:
    """``low`` ≤ value ≤ ``high`` (None, an option left at "none", passes)."""
    return value is None or low <= value <= high


def range_text(low: int, high: int) -> str:
    """What such an option must be, for an error message: "must be a whole number from 1 to 10,000"."""
    return f"must be a whole number from {low:,} to {high:,}"


def seed_ok(value: Any, limit: int = SEED_LIMIT) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and 0 <= int(value) < limit


def seed_range(limit: int = SEED_LIMIT) -> str:
    """What a seed must be, for an error message: "must be an integer from 0 to 2**64 - 1"."""
    return f"must be an integer from 0 to 2**{limit.bit_length() - 1} - 1"


def check_seed(seed: Any, flag: str = "--seed", limit: int = SEED_LIMIT) -> int:
    """``seed``, or the one-line InputError of a seed outside 0 … ``limit`` − 1, for a command whose
    seed is an argument rather than a config field (numpy would raise deep inside)."""
    if not seed_ok(seed, limit):
        raise InputError(f"{flag} {seed_range(limit)}, got {seed}")
    return int(seed)


def seed_rule(config: Any, name: str = "seed", *, limit: int = SEED_LIMIT) -> tuple[bool, str, str]:
    """The :func:`check` rule of a seed field: an integer from 0 to ``limit`` − 1, refused up front
    instead of where the seed is first drawn from (a traceback, or after the work is done)."""
    return seed_ok(getattr(config, name), limit), name, seed_range(limit)


def tuples(config: Any) -> None:
    """Store every list field of a frozen config as a tuple (hashable, and equal however it was given)."""
    for f in dataclasses.fields(config):
        v = getattr(config, f.name)
        if isinstance(v, list):
            object.__setattr__(config, f.name, tuple(v))


def _text(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)


def command_line(
    command: str,
    config: Any,
    *,
    positional: Sequence[str | Path] = (),
    extra: Sequence[str] = (),
    force: bool = False,
    out: Path | None = None,
) -> list[str]:
    """The ``laya-inspect COMMAND …`` argv that makes the command build ``config`` (with these
    positional arguments and ``extra`` options before the config's). An option is written when its
    value differs from the field's default, or when its field is marked ``always``. A field without a
    flag must keep its default, else ValueError: the line would not rebuild the config."""
    argv = ["laya-inspect", command, *map(str, positional), *extra]
    last: list[str] = []  # --out goes at the end, where a reader looks for it
    for f in dataclasses.fields(config):
        value, default = getattr(config, f.name), default_of(type(config), f.name)
        flag = f.metadata.get("flag")
        if not flag:
            if value != default:
                raise ValueError(f"`laya-inspect {command}` has no option for {f.name}={value!r}")
            continue
        if value == default and not f.metadata.get("always"):
            continue
        if isinstance(value, bool):
            on, _, off = flag.partition("/")
            if not value and not off:
                raise ValueError(f"`laya-inspect {command}` cannot turn {on} off")
            argv.append(on if value else off)
            continue
        text = f.metadata["argv"](value) if f.metadata.get("argv") else (None if value is None else _text(value))
        if text is not None:
            (last if flag == "--out" else argv).extend([flag, text])
    if force:
        argv.append("--force")
    if out is not None:
        last += ["--out", str(out)]
    return argv + last
