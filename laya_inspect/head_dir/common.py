"""What every part of a head directory shares: its file names and the one line a damaged file ends in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import CacheError

HEAD_SCHEMA_VERSION = 1
CONFIG, WEIGHTS = "config.json", "weights.pt"
REWRITE = "write it again with `laya-inspect fit-head` or `laya-inspect export-head`"
FileWriter = Callable[[Path], object]


def bad(where: Path | str, problem: str, fix: str = REWRITE) -> CacheError:
    return CacheError(f"{where} {problem}; {fix}")


def one_line(e: BaseException | str, limit: int = 160) -> str:
    """An exception's message (or any text) on one line, cut at ``limit`` characters."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
