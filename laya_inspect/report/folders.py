"""What the page reads: a fit-head folder (summary.json, runs.json, profiles/), a compare folder
(summary.json of kind ``laya-inspect-compare``, plots/) or a demo folder (demo.json, with its
heads/ and compare/ folders). Every file is checked as it is read, the fields the terminal and the
page read each with its type (as compare/records.py checks a compare summary), so a missing, damaged
or hand-edited one ends in one LayaError line that names it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..compare.records import BadField, checked_field, load_summary, read_json
from ..errors import CacheError, NotFoundError
from ..out_dir import moved_aside, with_run_notes

USAGE = "give a folder written by `laya-inspect fit-head`, `compare`, `demo`, `prune`, `early-exit` or `diagnose`"


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
    try:
        _fit_fields(summary)
    except BadField as e:
        raise CacheError(
            f"{path} is not a valid fit-head summary ({e}); rerun `laya-inspect fit-head` to rewrite it"
        ) from None
    return summary


def _some(obj: dict[str, Any], key: str, kind: Any, where: str) -> Any:
    """``obj[key]`` checked against ``kind`` (as compare's ``checked_field``) where it is there and not null; the
    renderers read an absent or null field as "—" or nothing."""
    return None if obj.get(key) is None else checked_field(obj, key, kind, where)


def _estimate(d: dict[str, Any] | None, where: str) -> None:
    """A fit-head estimate (mean, std, 95% interval and the seeds' values): numbers or null."""
    for k in ("mean", "std", "ci_low", "ci_high"):
        _some(d or {}, k, "num", where)
    _some(d or {}, "values", "nums", where)


def _fit_fields(s: dict[str, Any]) -> None:
    """What the terminal (report/terminal.py) and the page (report/sections.py, reading.py, figures.py)
    read of a fit-head summary, each with its type; numbers may be null."""
    cache = _some(s, "cache", dict, "summary") or {}
    for k in ("cache_warnings", "layer_names", "cache_layer_names"):
        _some(cache, k, "strs", "summary.cache")
    _some(cache, "cache_path", str, "summary.cache")
    _some(cache, "backbone", dict, "summary.cache")
    for k in ("config", "hparams", "split"):
        _some(s, k, dict, "summary")
    _some(s, "warnings", "strs", "summary")
    widths = set()
    for i, h in enumerate(s["heads"]):
        where = f"summary.heads[{i}]"
        _some(h, "n", int, where)
        _some(h, "seeds", list, where)
        _some(h, "warnings", "strs", where)
        _estimate(h["test_acc"], f"{where}.test_acc")
        _estimate(_some(h, "test_macro_f1", dict, where), f"{where}.test_macro_f1")
        delta = _some(h, "delta_vs_last", dict, where) or {}
        _estimate(_some(delta, "test_acc", dict, f"{where}.delta_vs_last"), f"{where}.delta_vs_last.test_acc")
        agree = _some(h, "seed_agreement", dict, where) or {}
        _some(agree, "seeds", int, f"{where}.seed_agreement")
        for k in ("top_layer_agreement", "top_layer_agreement_constant", "top_layer_chance", "top_layer_chance_shares"):
            _some(agree, k, "num", f"{where}.seed_agreement")
        weights = _some(h, "layer_weights", dict, where) or {}
        here = f"{where}.layer_weights"
        layers = _some(weights, "layers", "strs", here) or []
        rows = {"pooled": _some(weights, "pooled", "nums", here)}
        rows |= {f"per_seed.{k}": v for k, v in (_some(weights, "per_seed", dict, here) or {}).items()}
        for k, row in rows.items():
            if row is not None and len(checked_field(rows, k, "nums", here)) != len(layers):
                raise BadField(f"{here}.{k} has {len(row)} values for {len(layers)} layers")
        if rows["pooled"]:
            widths.add(len(layers))
    if len(widths) > 1:
        raise BadField(f"the heads' layer_weights cover {' and '.join(map(str, sorted(widths)))} layers")
    quality = _some(s, "quality", dict, "summary") or {}
    _some(quality, "chance", "num", "summary.quality")
    probe = _some(quality, "probe", dict, "summary.quality")
    if probe:
        here = "summary.quality.probe"
        _some(probe, "model", str, here)
        for k in ("best_test_acc", "last_test_acc", "reference_test_acc", "val_rows"):
            _some(probe, k, "num", here)
        _some(probe, "best_val_tied", "strs", here)
        names = []
        for i, p in enumerate(checked_field(probe, "layers", list, here)):
            names.append(checked_field(p, "layer", str, f"{here}.layers[{i}]"))
            for k in ("val_acc", "test_acc"):
                _some(p, k, "num", f"{here}.layers[{i}]")
        if checked_field(probe, "best_layer", str, here) not in names:
            raise BadField(f"{here}.best_layer {probe['best_layer']!r} is none of its layers ({', '.join(names)})")
        if _some(probe, "reference_layer", str, here) not in (None, *names):
            raise BadField(f"{here}.reference_layer {probe['reference_layer']!r} is none of its layers")


def _check_runs(runs: Any, path: Path) -> list[dict[str, Any]]:
    """runs.json: one object per (head, seed), its numbers numbers or null (the page's "Runs" table)."""
    try:
        if not isinstance(runs, list):
            raise BadField("it is not a list")
        for i, r in enumerate(runs):
            if not isinstance(r, dict):
                raise BadField(f"runs[{i}] is not an object")
            for k in ("test_acc", "test_macro_f1", "val_acc", "val_loss", "seconds"):
                _some(r, k, "num", f"runs[{i}]")
    except BadField as e:
        raise CacheError(
            f"{path} is not a valid list of runs ({e}); rerun `laya-inspect fit-head` to rewrite it"
        ) from None
    return runs


def _check_demo(record: Any, path: Path) -> dict[str, Any]:
    """demo.json: what the terminal and the page read of it, each with its type."""
    if not isinstance(record, dict) or record.get("kind") != "laya-inspect-demo":
        raise CacheError(f"{path} is not a demo record; rerun `laya-inspect demo` to rewrite it")
    try:
        _some(record, "complete", bool, "demo")
        _some(record, "warnings", "strs", "demo")
        for k in ("budget_line", "model"):
            _some(record, k, str, "demo")
        dataset = _some(record, "dataset", dict, "demo") or {}
        for k in ("spec", "description"):
            _some(dataset, k, str, "demo.dataset")
        for i, step in enumerate(_some(record, "steps", list, "demo") or []):
            if not isinstance(step, dict):
                raise BadField(f"demo.steps[{i}] is {step!r}, not an object")
            for k in ("name", "title", "command"):
                _some(step, k, str, f"demo.steps[{i}]")
            _some(step, "seconds", "num", f"demo.steps[{i}]")
    except BadField as e:
        raise CacheError(f"{path} is not a valid demo record ({e}); rerun `laya-inspect demo` to rewrite it") from None
    return record


def fit_kind(summary: Any) -> bool:
    """A fit-head summary: a list of heads, each with its test accuracy (it has no ``kind`` field)."""
    heads = summary.get("heads") if isinstance(summary, dict) else None
    return isinstance(heads, list) and bool(heads) and isinstance(heads[0], dict) and "test_acc" in heads[0]


def read_fit(folder: Path) -> FitFolder:
    path = folder / "summary.json"
    if not path.is_file():
        raise NotFoundError(f"no summary.json in {folder}; {USAGE}")
    # inside a run's temporary folder, what its cleanup warned is said on the page as in summary.json
    summary = with_run_notes(_check_fit(read_json(path), path), folder)
    runs_path = folder / "runs.json"
    runs = _check_runs(read_json(runs_path), runs_path) if runs_path.is_file() else []
    prof_path = folder / "profiles" / "profiles.json"
    profiles = read_json(prof_path) if prof_path.is_file() else None
    if profiles is not None and not isinstance(profiles, dict):
        raise CacheError(f"{prof_path} is not a profiles object; rerun `laya-inspect fit-head` to rewrite it")
    return FitFolder(folder, summary, runs, profiles, pngs(folder / "profiles"))


def read_compare(folder: Path) -> CompareFolder:
    return CompareFolder(folder, with_run_notes(load_summary(folder), folder), pngs(folder / "plots"))


def read_demo(folder: Path) -> DemoFolder:
    record = _check_demo(read_json(folder / "demo.json"), folder / "demo.json")
    metrics = folder / "backbone.metrics.json"
    backbone = read_json(metrics) if metrics.is_file() else None
    fit = read_fit(folder / "heads") if (folder / "heads" / "summary.json").is_file() else None
    compare = read_compare(folder / "compare") if (folder / "compare" / "summary.json").is_file() else None
    return DemoFolder(folder, record, backbone if isinstance(backbone, dict) else None, fit, compare)


def folder_kind(folder: str | Path) -> str:
    """ "fit-head", "compare" or "demo", from the files the folder holds."""
    path = Path(folder)
    if not path.exists():
        aside = moved_aside(path)
        if aside:  # a run killed between its two renames: the previous output is whole, under another name
            raise NotFoundError(
                f"no folder {path}, but {aside[-1]} holds the output a killed run on {path} had moved aside: "
                f"read it there (report {aside[-1]}), or run the command that wrote {path} again, which puts "
                f"it back first"
            )
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
    inside = _readable_inside(path)
    where = f"; the folders inside it that report reads: {', '.join(inside)}" if inside else ""
    raise CacheError(f"{summary_path} is neither a fit-head nor a compare summary (kind {kind!r}){where}; {USAGE}")


def _readable_inside(path: Path) -> list[str]:
    """The folders one or two levels below ``path`` holding a fit-head, compare or demo output (`check
    planted` writes its heads/ and compare/ there, per seed in seed_<N>/), so a refusal can name them."""
    found = [*path.glob("*/summary.json"), *path.glob("*/*/summary.json"), *path.glob("*/demo.json")]
    return sorted(str(f.parent) for f in found if f.is_file())[:8]


def read_folder(folder: str | Path) -> Folder:
    path = Path(folder)
    kind = folder_kind(path)
    if kind == "demo":
        return read_demo(path)
    return read_compare(path) if kind == "compare" else read_fit(path)
