"""What `compare` accepts as heads: head directories, and fit-head output folders expanded to every
head directory in them (docs/METHOD.md, "Across seeds").

A fit-head output holds ``<head>/seed_<S>/`` head directories; it expands to all of them, the heads
in the order its summary.json lists them (the others by name), each head's seeds in increasing
order. A folder of one head's seeds (``<head>/`` holding ``seed_<S>/``) expands the same way. Any
other folder without a config.json is refused in one line; a path that does not exist, or a damaged
head directory, is left to :func:`laya_inspect.head_dir.read_head_config` to name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError

SEED_DIR = re.compile(r"seed_(\d+)")
CONFIG = "config.json"


def _seed_dirs(folder: Path) -> list[Path]:
    """``folder``'s ``seed_<S>/`` head directories, by increasing S."""
    found = [
        (int(m.group(1)), p)
        for p in folder.iterdir()
        if p.is_dir() and (m := SEED_DIR.fullmatch(p.name)) and (p / CONFIG).is_file()
    ]
    return [p for _, p in sorted(found)]


def _listed_heads(folder: Path) -> list[str]:
    """The head names fit-head's summary.json lists, in its order ([] when it has none to read)."""
    try:
        heads = json.loads((folder / "summary.json").read_text(encoding="utf-8")).get("heads")
        return [h["head"] for h in heads if isinstance(h, dict) and isinstance(h.get("head"), str)]
    except (OSError, ValueError, AttributeError, TypeError):
        return []


def fit_head_dirs(folder: Path) -> list[Path]:
    """Every head directory of a fit-head output (``<head>/seed_<S>/``) or of one head's seeds
    (``seed_<S>/``), in a stable order; [] when ``folder`` holds neither."""
    own = _seed_dirs(folder)
    if own:
        return own
    by_head = {p.name: dirs for p in folder.iterdir() if p.is_dir() and (dirs := _seed_dirs(p))}
    listed = [h for h in _listed_heads(folder) if h in by_head]
    order = listed + sorted(h for h in by_head if h not in listed)
    return [d for h in order for d in by_head[h]]


def expand_head_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """``paths`` with every fit-head output folder replaced by its head directories (a head
    directory, or a path that is not a folder, kept as given); a folder that is neither a head
    directory nor a fit-head output raises :class:`InputError`."""
    out: list[Path] = []
    for given in paths:
        p = Path(given)
        if not p.is_dir() or (p / CONFIG).exists():
            out.append(p)
            continue
        found = fit_head_dirs(p)
        if not found:
            raise InputError(
                f"{p} is neither a head directory (no {CONFIG}) nor a fit-head output (no <head>/seed_<S>/ head "
                "directories in it); give a folder that `laya-inspect fit-head` wrote, or its <head>/seed_<S>/ folders"
            )
        out += found
    return out
