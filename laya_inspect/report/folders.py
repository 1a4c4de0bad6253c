"""What the page reads: a fit-head folder (summary.json, runs.json, profiles/), a compare folder
(summary.json of kind ``laya-inspect-compare``, plots/) or a demo folder (demo.json, with its
heads/ and compare/ folders). Every file is checked as it is read, so a missing or damaged one
ends in one LayaError line that names it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CacheError, NotFoundError

USAGE = "give a folder written by `laya-inspect fit-head`, `compare` or `demo`"


@dataclass
class FitFolder:
    path: Path
    summary: dict[str, Any]
    runs: list[dict[str, Any]]
    profiles: dict[str, Any] | None
    figures: list[Path] = field(default_factory=list)  # profiles/*.png
    kind: str = "fit-head"


@dataclass
class CompareFolder:
    path: Path
    summary: dict[str, Any]
    figures: list[Path] = field(default_factory=list)  # plots/*.png
    kind: str = "compare"


@dataclass
class DemoFolder:
    path: Path
    record: dict[str, Any]  # demo.json
    backbone: dict[str, Any] | None
    fit: FitFolder | None
    compare: CompareFolder | None
    kind: str = "demo"


Folder = FitFolder | CompareFolder | DemoFolder


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CacheError(f"{path} is not valid JSON ({e}); rerun the command that wrote it") from None
    except OSError as e:
        raise CacheError(f"cannot read {path}: {e.strerror or e}") from None


def pngs(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.png")) if folder.is_dir() else []


def _check_fit(summary: Any, path: Path) -> dict[str, Any]:
    heads = summary.get("heads") if isinstance(summary, dict) else None
    if not isinstance(heads, list) or not heads:
        raise CacheError(f"{path} lists no heads; rerun `laya-inspect fit-head` to rewrite it")
    for i, h in enumerate(heads):
        if not isinstance(h, dict) or not isinstance(h.get("head"), str) or not isinstance(h.get("test_acc"), dict):
            raise CacheError(
                f"{path}: heads[{i}] lacks its name or test accuracy; rerun `laya-inspect fit-head` to rewrite it"
            )
    return summary


def fit_kind(summary: Any) -> bool:
    """A fit-head summary: a list of heads, each with its test accuracy (it has no ``kind`` field)."""
    heads = summary.get("heads") if isinstance(summary, dict) else None
    return isinstance(heads, list) and bool(heads) and isinstance(heads[0], dict) and "test_acc" in heads[0]


def read_fit(folder: Path) -> FitFolder:
    path = folder / "summary.json"
    if not path.is_file():
        raise NotFoundError(f"no summary.json in {folder}; {USAGE}")
    summary = _check_fit(read_json(path), path)
    runs_path = folder / "runs.json"
    runs = read_json(runs_path) if runs_path.is_file() else []
    if not isinstance(runs, list):
        raise CacheError(f"{runs_path} is not a list of runs; rerun `laya-inspect fit-head` to rewrite it")
    prof_path = folder / "profiles" / "profiles.json"
    profiles = read_json(prof_path) if prof_path.is_file() else None
    if profiles is not None and not isinstance(profiles, dict):
        raise CacheError(f"{prof_path} is not a profiles object; rerun `laya-inspect fit-head` to rewrite it")
    return FitFolder(folder, summary, runs, profiles, pngs(folder / "profiles"))


def read_compare(folder: Path) -> CompareFolder:
    from ..compare.records import load_summary

    return CompareFolder(folder, load_summary(folder), pngs(folder / "plots"))


def read_demo(folder: Path) -> DemoFolder:
    record = read_json(folder / "demo.json")
    if not isinstance(record, dict) or record.get("kind") != "laya-inspect-demo":
        raise CacheError(f"{folder / 'demo.json'} is not a demo record; rerun `laya-inspect demo` to rewrite it")
    metrics = folder / "backbone.metrics.json"
    backbone = read_json(metrics) if metrics.is_file() else None
    fit = read_fit(folder / "heads") if (folder / "heads" / "summary.json").is_file() else None
    compare = read_compare(folder / "compare") if (folder / "compare" / "summary.json").is_file() else None
    return DemoFolder(folder, record, backbone if isinstance(backbone, dict) else None, fit, compare)


def folder_kind(folder: str | Path) -> str:
    """ "fit-head", "compare" or "demo", from the files the folder holds."""
    path = Path(folder)
    if not path.exists():
        raise NotFoundError(f"no folder {path}, so no summary.json or demo.json to read; {USAGE}")
    if not path.is_dir():
        raise NotFoundError(f"{path} is a file; {USAGE}")
    if (path / "demo.json").is_file():
        return "demo"
    summary_path = path / "summary.json"
    if not summary_path.is_file():
        raise NotFoundError(f"no summary.json or demo.json in {path}; {USAGE}")
    summary = read_json(summary_path)
    if isinstance(summary, dict) and summary.get("kind") == "laya-inspect-compare":
        return "compare"
    if fit_kind(summary):
        return "fit-head"
    kind = summary.get("kind") if isinstance(summary, dict) else type(summary).__name__
    raise CacheError(f"{summary_path} is neither a fit-head nor a compare summary (kind {kind!r}); {USAGE}")


def read_folder(folder: str | Path) -> Folder:
    path = Path(folder)
    kind = folder_kind(path)
    if kind == "demo":
        return read_demo(path)
    return read_compare(path) if kind == "compare" else read_fit(path)
