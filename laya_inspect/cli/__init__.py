"""The `laya-inspect` command: thin typer commands over the library.

Each command parses options, builds a config, calls one library function and prints. A
LayaError becomes one red line and exit code 1; click's usage errors exit 2; anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

# Each command module adds its commands to `app` as it is imported, in the order --help lists them.
from . import demo, extract, fit, compare, explain, beyond, check  # noqa: F401  # isort: skip
from .app import app, main

__all__ = ["app", "main"]
