"""A trained head is a directory: config.json (constructor arguments, layer names, the fingerprint of
the cache and backbone it was trained on), weights.pt (a plain state_dict, loaded weights-only), and
whatever the trainer adds beside them (metrics.json, train_log.csv).

Saving, loading and checking head directories, and :func:`export_head`, which turns the head that
`laya-inspect train` stored in a zoo checkpoint into such a directory. A head directory is written
whole under a temporary name and renamed into place, so a killed run leaves the old directory or
the new one; loading checks every file and ends in one :class:`CacheError` line for any damage.

common.py (file names, the one-line refusal) ← checks.py (config.json fields, weights against them)
← match.py (a head and the cache it is read on) ← folder.py (save, read, load) ← export.py (a zoo
checkpoint's head); this module only gathers what the rest of laya-inspect reads."""

from __future__ import annotations

from .common import CONFIG, HEAD_SCHEMA_VERSION, WEIGHTS
from .export import export_head, head_from_checkpoint
from .folder import (
    identity,
    load_head,
    read_head_config,
    refuse_repeats,
    refuse_replaced,
    save_head,
    store_for_heads,
    training_settings,
)
from .match import (
    cache_identity,
    cache_warnings,
    fit_warnings,
    other_cache,
    split_rows,
    trained_split,
    unchecked_rows,
    what_differs,
)

__all__ = [
    "CONFIG",
    "HEAD_SCHEMA_VERSION",
    "WEIGHTS",
    "cache_identity",
    "cache_warnings",
    "export_head",
    "fit_warnings",
    "head_from_checkpoint",
    "identity",
    "load_head",
    "other_cache",
    "read_head_config",
    "refuse_repeats",
    "refuse_replaced",
    "save_head",
    "split_rows",
    "store_for_heads",
    "trained_split",
    "training_settings",
    "unchecked_rows",
    "what_differs",
]
