"""One exception family for every user-facing error.

The CLI turns a :class:`LayaError` into one red line and exit code 1; any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence


class LayaError(Exception):
    """Base of all errors a user can cause and fix (bad names, files, values)."""


class NotFoundError(LayaError):
    """A named thing (layer, model, dataset, file, registry entry) does not exist."""


class InputError(LayaError):
    """A value or file is present but unusable (wrong shape, bad spec, bad option)."""


class ImageFileError(InputError):
    """An image file that cannot be read (or a few, named in the message); ``path`` is the first."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # so that it crosses a process boundary whole
        return type(self), (str(self), self.path)


class CacheError(LayaError):
    """A feature cache or head directory is incomplete, of another schema, or mismatched."""


class DatasetMissingError(NotFoundError):
    """A known dataset's files are not on this machine; the message says how to get them."""


class WriteError(LayaError):
    """An output could not be written (full disk, no permission, a file where a folder should be);
    nothing partial is left under the output's name."""


class LockedError(LayaError):
    """Another process is writing the same output."""


# What torch.load(weights_only=True) says when a file holds a pickled Python object: "Unsupported
# global: GLOBAL …" and "Trying to call reduce …" today, "Unsupported class …" before torch 2.4.
PICKLED_OBJECT = re.compile(r"GLOBAL|call reduce|[Uu]nsupported class")


class UnsafeCheckpointError(LayaError):
    """A checkpoint needs full unpickling, which runs code; refused without --trust-pickle."""


def os_message(e: OSError, action: str = "could not write") -> str:
    """One line for an OS error: what failed, on which path, and the errno."""
    path = e.filename if e.filename is not None else "?"
    code = f"errno {e.errno}" if e.errno is not None else type(e).__name__
    return f"{action} {path}: {e.strerror or e} ({code})"


def few(items: Sequence[str], n: int) -> str:
    """The first ``n`` of ``items``, comma-separated, and ", … (K in all)" when there are more."""
    return ", ".join(items[:n]) + (f", … ({len(items)} in all)" if len(items) > n else "")


def name_of(names: Sequence[str], i: int) -> str:
    """Class or layer ``i``'s name, or its number where ``names`` has none for it (a cache written
    without class names, or naming fewer than its labels reach)."""
    return str(names[i]) if 0 <= i < len(names) else str(int(i))


def class_label(names: Sequence[str], c: int) -> str:
    """Class ``c`` for a message that needs its number: "3 ('cat')", or "3" where it has no name."""
    return f"{int(c)} ({names[c]!r})" if 0 <= c < len(names) else str(int(c))


def suggest(name: str, choices: Iterable[str], *, limit: int = 20) -> str:
    """Return "did you mean 'x'? available: a, b, c" for an error message."""
    choices = [str(c) for c in choices]
    close = difflib.get_close_matches(str(name), choices, n=3, cutoff=0.5)
    shown = few(choices, limit)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return f"{hint}available: {shown or '(none)'}"
