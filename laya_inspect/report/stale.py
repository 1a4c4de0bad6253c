"""Whether a folder's results were computed from the files that stand at the paths it recorded now.

A demo prints each step's command so that one step can be rerun by hand (`train --force --out
DEMO/backbone.pt`, `extract --overwrite --out DEMO/features.h5`); until the steps after it are rerun
too, the heads, the comparison and the page are of the earlier file. `report` reads the recorded
results, so it says so: the cache's fingerprint and rows against those fit-head and compare
recorded, each compared head's weights.pt against the digest compare recorded (`fit-head --force`
into the same folder), and a demo's backbone against the weights its cache was extracted from. A file that is
gone says nothing (a folder copied to another machine keeps the paths of the first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import LayaError
from ..files import sha256_file
from .folders import CompareFolder, DemoFolder, FitFolder


def stale_inputs(folder: FitFolder | CompareFolder | DemoFolder) -> list[str]:
    """One line for each input of ``folder``'s results that is no longer the file they were computed
    from; empty when every recorded input is the same (or cannot be found)."""
    demo = folder.path if isinstance(folder, DemoFolder) else None
    if isinstance(folder, FitFolder):
        return _fit(folder, demo)
    if isinstance(folder, CompareFolder):
        return _compare(folder, demo)
    lines = _backbone(folder)
    if folder.fit is not None:
        lines += _fit(folder.fit, demo)
    if folder.compare is not None:
        lines += _compare(folder.compare, demo)
    return lines


def _rerun(demo: Path | None, step: str) -> str:
    if demo is not None:
        return f"rerun the demo's steps after it, or `laya-inspect demo --force --out {demo}`"
    return f"rerun {step} on it to refresh them"


def _store(path: Any) -> Any:
    """The cache at ``path`` opened, or None where there is none to read."""
    from ..cache.store import FeatureStore

    if not isinstance(path, str) or not Path(path).is_file():
        return None
    try:
        return FeatureStore(path)
    except (LayaError, OSError):
        return None


def _recorded(summary: dict[str, Any], key: str) -> tuple[dict[str, Any], Any]:
    """What ``summary`` recorded of its cache, and that cache opened where it still is (else None)."""
    cache = summary.get("cache")
    cache = cache if isinstance(cache, dict) else {}
    return cache, _store(cache.get(key))


def _fit(folder: FitFolder, demo: Path | None) -> list[str]:
    from ..head_dir import split_rows, what_differs

    cache, store = _recorded(folder.summary, "cache_path")
    if store is None:
        return []
    with store:
        path, recorded = cache["cache_path"], cache.get("cache_fingerprint")
        if recorded not in store.fingerprints:
            differs = what_differs(cache, store)
            said = f"fingerprint {recorded} then, {store.fingerprint} now: {differs}"
        else:
            rows = cache.get("cache_rows")
            moved = (
                [s for s in rows if s in store.splits and rows[s] != split_rows(store, s)]
                if isinstance(rows, dict)
                else []
            )
            if not moved:
                return []
            said = f"split {', '.join(moved)} holds other rows now"
    return [
        f"{path} changed since fit-head fitted the heads in {folder.path} on it ({said}); their numbers are of "
        f"the earlier cache: {_rerun(demo, 'fit-head')}"
    ]


def _compare(folder: CompareFolder, demo: Path | None) -> list[str]:
    cache, store = _recorded(folder.summary, "path")
    lines = _refitted(folder, demo)
    if store is None:
        return lines
    with store:
        recorded = cache.get("fingerprint")
        if recorded in store.fingerprints:
            return lines
        now = store.fingerprint
    return [
        f"{cache['path']} changed since compare read it for {folder.path} (fingerprint {recorded} then, {now} "
        f"now); its scores are of the earlier cache: {_rerun(demo, 'compare')}",
        *lines,
    ]


def _refitted(folder: CompareFolder, demo: Path | None) -> list[str]:
    """The compared heads whose weights.pt is no longer the one compare scored (a summary written
    before compare recorded it says nothing)."""
    from ..compare.per_head import weights_sha256

    moved = []
    for head in folder.summary.get("heads") or []:
        recorded = head.get("head_weights_sha256") if isinstance(head, dict) else None
        if isinstance(recorded, str):
            now = weights_sha256(head.get("dir"))
            if now is not None and now != recorded:
                moved.append(str(head.get("dir")))
    if not moved:
        return []
    return [
        f"head {', '.join(moved)} was refitted since compare scored it for {folder.path}; its scores are of the "
        f"earlier head: {_rerun(demo, 'compare')}"
    ]


def _backbone(folder: DemoFolder) -> list[str]:
    """The demo's backbone against the weights its cache records it was extracted from."""
    weights, features = folder.path / "backbone.pt", folder.path / "features.h5"
    store = _store(str(features))
    if store is None or not weights.is_file() or weights.is_symlink():
        return []
    with store:
        recorded = store.attrs.get("weights_sha256")
    if not isinstance(recorded, str):
        return []
    try:
        now = sha256_file(weights)
    except OSError:
        return []
    if now == recorded:
        return []
    return [
        f"{weights} changed since {features} was extracted from it (weights sha256 {recorded[:16]}… then, "
        f"{now[:16]}… now); the cache and everything after it are of the earlier backbone: "
        f"{_rerun(folder.path, 'extract')}"
    ]
