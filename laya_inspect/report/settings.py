"""The one line that states the settings deciding a command's numbers, those left at their defaults
said apart: numbers read without them could come from any budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text


def _g(x: Any) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _seeds(seeds: list[Any]) -> str:
    """ "seeds 0 to 4" (no ellipsis: on the terminal "…" says a cell was cut), "seed 3", "seeds 0, 3, 7"."""
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"seeds {seeds[0]} to {seeds[-1]}"
    return f"seed{'s' * (len(seeds) != 1)} {', '.join(map(str, seeds)) or '—'}"


def fit_settings_line(summary: dict[str, Any], width: int = 100) -> Text | None:
    """The settings that decide a fit's numbers, those left at their defaults said apart: accuracies
    read without them could come from any budget. Optional settings show only when changed."""
    c = summary.get("config")
    if not isinstance(c, dict):
        return None
    t, hp = summary.get("training") or {}, summary.get("hparams") or {}
    grid = " (grid)" if c.get("grid") else ""
    seeds = c.get("seeds") or []
    val = f"validation {_g(c.get('val_fraction'))} of {c.get('train_split', 'train')}"
    items: list[tuple[tuple[str, ...], str, bool]] = [  # (fields, text, shown when left at default)
        (("d_star", "grid"), f"d*={_g(hp.get('d_star', c.get('d_star')))}{grid}", True),
        (("tau", "grid"), f"τ={_g(hp.get('tau', c.get('tau')))}{grid}", True),
        (("psi", "grid"), f"ψ {hp.get('psi', c.get('psi'))}{grid}", False),
        (("score_width", "grid"), f"scorer width {_g(hp.get('score_width'))}{grid}", False),
        (("standardize",), f"standardize {c.get('standardize')}", False),
        (("lr",), f"lr {_g(c.get('lr'))}", True),
        (("weight_decay",), f"weight decay {_g(c.get('weight_decay'))}", True),
        (("epochs",), f"≤ {_g(t.get('epochs', c.get('epochs')))} epochs", True),
        (("patience",), f"patience {_g(t.get('patience', c.get('patience')))}", True),
        (("monitor",), f"early stopping on validation {c.get('monitor')}", False),
        (("val_fraction", "train_split"), val, True),  # the text names the split the rows are drawn from
        (("test_split",), f"tested on {c.get('test_split')}", False),
        (("val_mode",), f"validation rows: {c.get('val_mode')}", False),
        (("split_seed",), f"split seed {_g(c.get('split_seed'))}", False),
        (("seeds",), _seeds(seeds), True),
        (("batch_size",), f"batch {_g(c.get('batch_size'))}", True),
        (
            ("device",),
            f"device {summary.get('device', c.get('device'))}" + " (auto)" * (c.get("device") == "auto"),
            True,
        ),
    ]
    defaults = summary.get("config_defaults")
    left = [  # None: a summary from before it recorded them, the values alone
        all(f in defaults for f in fs) if isinstance(defaults, list) else None for fs, _, _ in items
    ]
    return settings_line([(text, d) for (_, text, shown), d in zip(items, left) if shown or d is False], width)


def settings_line(items: Sequence[tuple[str, bool | None]], width: int = 100) -> Text:
    """The settings that decide a command's numbers, (text, left at its default) each, those left at
    their defaults said apart (None: not known, the values alone), within ``width`` columns."""
    if any(d is None for _, d in items):
        return _wrapped([("settings:", [text for text, _ in items])], width)
    given, kept = [text for text, d in items if not d], [text for text, d in items if d]
    if not given:
        return _wrapped([("settings, all left at their defaults:", kept)], width)
    return _wrapped([("settings given:", given), ("left at their defaults:", kept)], width)


def _wrapped(groups: list[tuple[str, list[str]]], width: int) -> Text:
    """Each group's label and items joined by " · ", the groups by "; ", broken only between items
    (a value never parted from its name) within ``width`` columns, continued two spaces in."""
    lines, line = [], ""
    for label, texts in groups:
        for i, text in enumerate(texts):
            piece = f"{label} {text}" if i == 0 else text
            sep = "" if not line.strip() else ("; " if i == 0 else " · ")
            if line.strip() and len(line) + len(sep) + len(piece) + 2 > width:  # 2: the separator left behind
                lines.append(line + sep.rstrip())
                line, sep = "  ", ""
            line += sep + piece
    return Text("\n".join([*lines, line]))
