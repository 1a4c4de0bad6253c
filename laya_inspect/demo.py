"""`laya-inspect demo`: the whole pipeline on an embedded default, with no data to find and no network.

Four steps, each the library call behind one command, run with the configs of :class:`DemoPlan`;
each step's equivalent command line is built from the same config object (:func:`command_line`), so
what the demo prints is what it ran::

    1 train     zoo:mlp (512-256-128) with its own classifier (the LastLayer head), end to end → backbone.pt
    2 extract   every block of the frozen backbone, train and test rows                       → features.h5
    3 fit-head  LAYA, LastLayer, Concat, ScalarMix over seeds 0 … N−1                           → heads/
    4 compare   α, IG, Grad-CAM, static weights, random, LOLO-scored, on every head and seed     → compare/
                (compare over the fit-head folder: each verdict read across the seeds)

``demo.json`` in the output directory records the config, the dataset preset and budget (what
``--quick`` changed), every command line, each step's seconds and the key numbers.
Datasets are presets in :data:`DEMO_DATASETS`: ``digits`` (scikit-learn's bundled 1,797 8×8 images)
and ``fashion-mnist`` (the Debian IDX files, on a subset and a short epoch budget).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import DatasetMissingError, InputError
from .files import artifact_header, output_lock, write_json
from .options import command_line, defaulted
from .out_dir import atomic_dir, check_out, read_marker, run_notes, write_marker
from .registry import Registry
from .runtime import Progress, check_device, no_progress, set_threads

if TYPE_CHECKING:  # the stages are imported when a demo is planned, so `laya-inspect --help` stays quick
    from .cache.extract import ExtractConfig
    from .compare.run import CompareConfig
    from .training.fit_head import FitConfig
    from .training.joint import JointConfig

MODEL = "zoo:mlp"  # Flatten → 512 → 256 → 128 (Linear, LayerNorm, GELU) → classifier: the paper's MLP
StepCallback = Callable[["DemoStep"], None]


@dataclass(frozen=True)
class DemoBudget:
    """How much work each step does."""

    limit: int | None  # rows per split (seeded stratified subset); None = every row
    train_epochs: int  # backbone, at most (early stopping, patience 5)
    fit_epochs: int  # each head, at most (early stopping, patience 5)
    seeds: int  # heads fitted with seeds 0 … seeds−1, every one compared
    compare_limit: int | None  # test rows compared (seeded subset); None = all
    n_steps: int  # Integrated Gradients steps
    n_boot: int  # bootstrap resamples of the faithfulness interval


@dataclass(frozen=True)
class DemoPreset:
    name: str
    description: str
    default: DemoBudget
    quick: DemoBudget
    takes_root: bool = False  # fashion-mnist:ROOT; --data-root
    note: str = ""  # how the budget departs from the paper's setting


ALL_HEADS = ("laya", "last", "concat", "scalarmix")
DEMO_DATASETS: Registry[DemoPreset] = Registry("demo dataset")
DEMO_DATASETS.add(
    "digits",
    DemoPreset(
        "digits",
        "scikit-learn's bundled digits: 1,797 real 8×8 images of handwritten digits, 10 classes",
        default=DemoBudget(None, 60, 50, 3, None, 50, 1000),
        quick=DemoBudget(None, 10, 30, 1, None, 16, 200),
    ),
)
DEMO_DATASETS.add(
    "fashion-mnist",
    DemoPreset(
        "fashion-mnist",
        "Fashion-MNIST: 28×28 greyscale clothing images, 10 classes",
        default=DemoBudget(10000, 15, 20, 3, 1000, 50, 1000),
        quick=DemoBudget(3000, 5, 10, 1, 300, 16, 200),
        takes_root=True,
        note="the paper trains on all 60,000 images for up to 50 epochs with 5 seeds; drop --limit and raise "
        "--epochs / --seeds in the printed commands for that",
    ),
)


@dataclass(frozen=True)
class DemoConfig:
    dataset: str = "digits"
    data_root: str | None = None
    out: str | None = None  # None: a fresh ./laya-demo-<dataset>[-2, -3, …]
    force: bool = False  # write into a non-empty --out, overwriting the demo's own files there
    seed: int = 0  # the backbone's initialisation and shuffling, and compare's seed
    seeds: int | None = None  # heads fitted with seeds 0 … N−1 (None: the preset's)
    epochs: int | None = None  # the most epochs of the backbone and of each head (None: the preset's)
    quick: bool = False
    device: str = "auto"
    threads: int | None = None  # torch CPU threads (None: runtime.set_threads' default for head-sized work)


@dataclass(frozen=True)
class DemoStep:
    """One step: ``seconds`` is None when it starts, and set (with ``numbers``) when it has finished."""

    index: int
    total: int
    name: str  # the command: train | extract | fit-head | compare
    title: str
    argv: tuple[str, ...]
    seconds: float | None = None
    numbers: dict[str, Any] = field(default_factory=dict)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


@dataclass(frozen=True)
class DemoPlan:
    config: DemoConfig
    preset: DemoPreset
    budget: DemoBudget
    out_dir: Path
    data_spec: str
    rows: dict[str, int]  # train / test rows after the subset
    rows_source: dict[str, int]  # train / test rows in the dataset
    train: JointConfig
    extract: ExtractConfig
    fit: FitConfig
    compare: CompareConfig
    paths: dict[str, Path]

    def steps(self) -> list[DemoStep]:
        p, b = self.paths, self.budget
        seeds = f"seed {self.fit.seeds[0]}" if len(self.fit.seeds) == 1 else f"seeds 0 … {len(self.fit.seeds) - 1}"
        todo = [
            (
                "train",
                f"train the backbone: {MODEL} (512-256-128) with its own classifier, end to end, "
                f"≤ {b.train_epochs} epochs; then it stays frozen",
                command_line("train", self.train, out=p["backbone"], force=self.config.force),
            ),
            (
                "extract",
                "extract every block of the frozen backbone for the train and test rows",
                command_line("extract", self.extract),
            ),
            (
                "fit-head",
                f"fit LAYA and the three baselines on the frozen features, ≤ {b.fit_epochs} epochs, {seeds}",
                command_line("fit-head", self.fit, positional=[p["features"]], out=p["heads"], force=self.config.force),
            ),
            (
                "compare",
                f"score α, IG, Grad-CAM, static weights and random against leave-one-layer-out effects "
                f"(every head, {seeds})",
                command_line(
                    "compare",
                    self.compare,
                    positional=[p["heads"]],  # the fit-head folder: compare takes each <head>/seed_<S>/ in it
                    extra=["--cache", str(p["features"])],
                    out=p["compare"],
                ),
            ),
        ]
        return [DemoStep(i + 1, len(todo), name, title, tuple(argv)) for i, (name, title, argv) in enumerate(todo)]

    def budget_line(self) -> str:
        b, r = self.budget, self.rows
        if r == self.rows_source:
            rows = f"all {r['train'] + r['test']:,} images ({r['train']:,} train / {r['test']:,} test)"
        else:
            rows = (
                " / ".join(
                    f"all {r[s]:,} {s}" if r[s] == self.rows_source[s] else f"{r[s]:,} of {self.rows_source[s]:,} {s}"
                    for s in ("train", "test")
                )
                + " images (seeded stratified subset)"
            )
        compared = "every test row" if b.compare_limit is None else f"{min(b.compare_limit, r['test']):,} test rows"
        return (
            f"{rows}; backbone ≤ {b.train_epochs} epochs, heads ≤ {b.fit_epochs} epochs (early stopping), "
            f"{b.seeds} seed{'s' * (b.seeds > 1)}; compare on {compared}, IG {b.n_steps} steps, "
            f"{b.n_boot:,} bootstrap resamples" + (" (--quick)" if self.config.quick else "")
        )


@dataclass
class DemoResult:
    out_dir: Path
    plan: DemoPlan
    steps: list[DemoStep]
    backbone: dict[str, Any]  # the backbone's test metrics (backbone.metrics.json)
    fit_summary: dict[str, Any]  # heads/summary.json
    profiles: dict[str, Any] | None  # α / static weight profiles (heads/profiles/profiles.json)
    compare_summary: dict[str, Any]  # compare/summary.json
    files: dict[str, Any]  # name → Path, or list of Paths for plots
    numbers: dict[str, Any]  # the key numbers, as written to demo.json
    seconds: float


# ------------------------------------------------------------------------------------ plan and run
def default_out_dir(dataset: str, base: Path | None = None) -> Path:
    """``laya-demo-<dataset>``, or ``-2``, ``-3``, … : the first that does not exist or is an empty folder."""
    base = Path(".") if base is None else base
    for k in range(1, 10_000):
        path = base / (f"laya-demo-{dataset}" + ("" if k == 1 else f"-{k}"))
        if not path.exists() or (path.is_dir() and not any(path.iterdir())):
            return path
    raise InputError(f"no free laya-demo-{dataset}-N folder in {base}; pass --out DIR")


def plan_demo(config: DemoConfig) -> DemoPlan:
    """Check the config and that the dataset is here, pick the output folder, build every step's config.
    Writes nothing."""
    from .cache.extract import ExtractConfig
    from .compare.run import CompareConfig
    from .data import load_data
    from .training.fit_head import FitConfig
    from .training.joint import JointConfig

    preset = DEMO_DATASETS.get(config.dataset)
    check_device(config.device)
    if config.seeds is not None and config.seeds < 1:
        raise InputError(f"--seeds must be ≥ 1, got {config.seeds}")
    if config.data_root is not None and not preset.takes_root:
        takes = [n for n in DEMO_DATASETS.names() if DEMO_DATASETS.get(n).takes_root]
        raise InputError(
            f"--data-root does not apply to {config.dataset!r} (it is bundled); it does to: {', '.join(takes)}"
        )
    budget = preset.quick if config.quick else preset.default
    if config.seeds is not None:
        budget = dataclasses.replace(budget, seeds=config.seeds)
    if config.epochs is not None:
        if config.epochs < 1:
            raise InputError(f"--epochs must be ≥ 1, got {config.epochs}")
        budget = dataclasses.replace(budget, train_epochs=config.epochs, fit_epochs=config.epochs)
    if config.out is None:
        out = default_out_dir(config.dataset)
    else:
        # --force builds the new demo beside the previous one and renames it into place (run_demo)
        out = check_out(config.out, force=config.force, command="demo", inputs=[config.data_root], renamed=config.force)
        check_step_folders(out)
    spec = preset.name if config.data_root is None else f"{preset.name}:{config.data_root}"
    train = JointConfig(
        model=MODEL,
        data=spec,
        head="last",
        seed=config.seed,
        epochs=budget.train_epochs,
        limit=budget.limit,
        device=config.device,
    )
    try:  # the dataset is here (a missing one stops the demo before it writes anything)
        bundle = load_data(spec, splits=(train.train_split, train.test_split), limit=budget.limit, seed=train.data_seed)
    except DatasetMissingError as e:
        raise DatasetMissingError(f"{e}; for the demo, give that folder as --data-root DIR") from None
    paths = {
        "backbone": out / "backbone.pt",
        "backbone_metrics": out / "backbone.metrics.json",
        "features": out / "features.h5",
        "heads": out / "heads",
        "compare": out / "compare",
        "demo_json": out / "demo.json",
    }
    extract = ExtractConfig(
        model=MODEL,
        data=spec,
        out=str(paths["features"]),
        weights=str(paths["backbone"]),
        layers="all",
        limit=budget.limit,
        seed=train.data_seed,
        device=config.device,
        overwrite=config.force,
    )
    fit = FitConfig(heads=ALL_HEADS, seeds=tuple(range(budget.seeds)), epochs=budget.fit_epochs, device=config.device)
    compare = CompareConfig(
        methods=("all",),
        limit=budget.compare_limit,
        seed=config.seed,
        n_steps=budget.n_steps,
        n_boot=budget.n_boot,
        device=config.device,
    )
    splits = ("train", "test")
    return DemoPlan(
        config=config,
        preset=preset,
        budget=budget,
        out_dir=out,
        data_spec=spec,
        rows={s: bundle.splits[s].n for s in splits},
        rows_source={s: int(bundle.split_info["splits"][s]["n_source"]) for s in splits},
        train=train,
        extract=extract,
        fit=fit,
        compare=compare,
        paths=paths,
    )


def check_step_folders(out: Path) -> None:
    """Refuse an output of another command where the demo's fit-head and compare steps write (heads/,
    compare/): `demo --force` removed a prune output put at compare/ with the rest, which
    `compare --force` itself refuses. Their own markers answer for their files (check_out). Likewise a
    file where the demo writes that is not laya-inspect's (a user's backbone.pt, or their page saved
    into a demo killed before its marker vouched for one): refused before any work, and again before
    the new demo replaces the previous one."""
    from .cache.schema import not_a_cache
    from .models.zoo import not_a_zoo_checkpoint
    from .training.joint import not_a_metrics_file

    checks = (
        ("backbone.pt", not_a_zoo_checkpoint),
        ("backbone.metrics.json", not_a_metrics_file),
        ("features.h5", not_a_cache),
        ("report.html", _not_a_page),
        ("demo.json", _not_a_record),
    )
    for name, owned in checks:
        path = out / name
        if path.is_symlink():
            why: str | None = f"is a symlink (to {os.readlink(path)})"
        else:
            why = "is a folder" if path.is_dir() else owned(path) if path.exists() else None
        if why is not None:
            raise InputError(
                f"{path} {why}; `demo --force` replaces only what laya-inspect wrote there: "
                "move it away, or choose another --out"
            )

    for name, command in (("heads", "fit-head"), ("compare", "compare")):
        marker = read_marker(out / name) if not (out / name).is_symlink() else None
        if marker is not None and marker.get("command") != command:
            raise InputError(
                f"--out {out} holds the output of `laya-inspect {marker.get('command')}` in {out / name}, where "
                f"the demo's {command} step writes; --force replaces only what the demo's steps wrote: "
                "move it away, or choose another --out"
            )


def _not_a_page(path: Path) -> str | None:
    from .report.html import PAGE_MARK

    return None if PAGE_MARK in path.read_bytes() else "is not a page laya-inspect wrote"


def _not_a_record(path: Path) -> str | None:
    try:
        kind = json.loads(path.read_text(encoding="utf-8")).get("kind")
    except (ValueError, AttributeError):
        kind = None
    return None if kind == "laya-inspect-demo" else "is not a demo.json laya-inspect wrote"


def run_demo(
    config: DemoConfig,
    *,
    on_step: StepCallback | None = None,
    progress: Progress | None = None,
    plan: DemoPlan | None = None,
) -> DemoResult:
    """Run the four steps of :func:`plan_demo` into its output folder; ``on_step`` hears of each step as it
    starts and when it is done, ``progress`` gets the steps' own progress events. ``plan``: the one
    :func:`plan_demo` already made of ``config`` (it is not checked and loaded twice). Without
    ``--force`` the demo writes into its new folder, so a demo stopped part-way keeps the steps it
    finished; with it, the new demo is built beside the previous one and replaces it only once
    complete (:func:`~laya_inspect.out_dir.atomic_dir`), so a run stopped part-way leaves that one whole."""
    if plan is None or plan.config != config:
        plan = plan_demo(config)
    inputs = [config.data_root]
    if not config.force:
        # one demo at a time on a folder; checked again: another demo may have filled it since the plan
        with output_lock(plan.out_dir):
            check_out(plan.out_dir, force=False, command="demo", inputs=inputs, renamed=False)
            return _run_demo(config, plan, on_step, progress)
    with atomic_dir(plan.out_dir, force=True, command="demo", inputs=inputs, mark=False) as tmp:
        check_step_folders(plan.out_dir)
        result = _run_demo(config, _relocated(plan, tmp), on_step, progress, shown=plan)
        check_step_folders(plan.out_dir)  # a file saved where the demo writes while it ran is not replaced
    return result


def _relocated(plan: DemoPlan, tmp: Path) -> DemoPlan:
    """``plan`` with its folder moved to ``tmp``, the temporary folder beside it, named as ``plan``
    names its folder (relative, through a link) where that is the same folder, so that the paths its
    steps record differ from the demo's only in the folder's name (:func:`_repointed`)."""
    named = plan.out_dir.with_name(tmp.name)
    root = named if os.path.realpath(named) == str(tmp) else tmp

    def at(path: str | Path) -> Path:
        return root / Path(path).relative_to(plan.out_dir)

    paths = {k: at(v) for k, v in plan.paths.items()}
    return dataclasses.replace(
        plan,
        out_dir=root,
        paths=paths,
        extract=dataclasses.replace(plan.extract, out=str(paths["features"]), weights=str(paths["backbone"])),
    )


def _run_demo(
    config: DemoConfig,
    plan: DemoPlan,
    on_step: StepCallback | None,
    progress: Progress | None,
    shown: DemoPlan | None = None,
) -> DemoResult:
    """The steps of ``plan``, into its folder; ``shown``: the plan whose folder that one is renamed to
    (`demo --force`), whose paths are printed and recorded."""
    from .cache.extract import extract_features
    from .cache.store import FeatureStore
    from .compare.run import compare_heads
    from .training.fit_head import fit_heads
    from .training.joint import train_joint

    shown = shown or plan

    # every step is small (an MLP and heads on it): the thread default for head-sized work, which
    # keeps a busy machine from slowing the run many times over (docs/PERFORMANCE.md, "--threads")
    set_threads(config.threads)
    tell = on_step or (lambda s: None)
    emit = progress or no_progress
    p, force = plan.paths, config.force
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    # marked before the first write, with every name the demo may write there, so a demo killed
    # half-way can be rerun with --force (its sub-folders carry their own commands' markers)
    names = [*(q.name for q in p.values()), "report.html"]
    write_marker(plan.out_dir, "demo", files=names)
    notes = run_notes(plan.out_dir)  # what --force's cleanup kept beside the previous demo, said in demo.json
    steps = shown.steps()
    done: list[DemoStep] = []
    # before any step: a demo killed in its first one says it did not finish
    write_json(p["demo_json"], _record(shown, done, {}, {}, complete=False, warnings=notes))
    t_start = time.perf_counter()

    def run(step: DemoStep, fn: Callable[[], Any], numbers: Callable[[Any], dict[str, Any]]) -> Any:
        tell(step)
        t0 = time.perf_counter()
        out = fn()
        finished = dataclasses.replace(step, seconds=time.perf_counter() - t0, numbers=numbers(out))
        done.append(finished)
        write_json(
            p["demo_json"], _record(shown, done, {}, {}, complete=False, warnings=notes)
        )  # a demo killed later says so
        tell(finished)
        return out

    joint = run(
        steps[0],
        lambda: train_joint(plan.train, out=p["backbone"], progress=emit, overwrite=force),
        lambda r: {
            k: r.metrics.get(k) for k in ("test_acc", "test_macro_f1", "best_epoch", "epochs_run", "n_test", "chance")
        },
    )
    ext = run(
        steps[1],
        lambda: extract_features(plan.extract, progress=emit),
        lambda r: {"layers": r.layer_names, "widths": r.widths, "rows": r.rows},
    )
    with FeatureStore(p["features"]) as store:
        fit = run(
            steps[2],
            lambda: fit_heads(store, plan.fit, out_dir=p["heads"], progress=emit, overwrite=force),
            lambda r: {
                "test_acc": {h["head"]: h["test_acc"]["mean"] for h in r.summary["heads"]},
                **_accuracy_nulls(r.summary),
            },
        )
        cmp = run(
            steps[3],
            lambda: compare_heads(
                [p["heads"]], store, plan.compare, out_dir=p["compare"], progress=emit, overwrite=force
            ),
            lambda r: _faithfulness(r.summary),
        )

    files: dict[str, Any] = {
        **p,
        "report": plan.out_dir / "report.html",
        "fit_summary": fit.files["summary_json"],
        "runs": fit.files["runs_csv"],
        "attributions": p["compare"] / "attributions.h5",
        "compare_summary": p["compare"] / "summary.json",
        "profile_plots": sorted(v for v in fit.files.values() if v.suffix == ".png"),
        "compare_plots": sorted(f for f in cmp.files if f.suffix == ".png"),
    }

    def moved(path: Path) -> Path:
        return shown.out_dir / path.relative_to(plan.out_dir)

    files = {k: [moved(f) for f in v] if isinstance(v, list) else moved(v) for k, v in files.items()}
    profiles = fit.profiles
    numbers = {
        "backbone_test_acc": joint.metrics["test_acc"],
        "layers": ext.layer_names,
        "widths": ext.widths,
        "head_test_acc": done[2].numbers["test_acc"],
        "alpha_mean": _profile(profiles, "alpha", "laya", ext.layer_names),
        "scalarmix_weights": _profile(profiles, "static", "scalarmix", ext.layer_names),
        **done[3].numbers,  # compare's: faithfulness, faithfulness_constant, faithfulness_seeds
    }
    seconds = time.perf_counter() - t_start
    write_json(p["demo_json"], _record(shown, done, numbers, files, complete=True, warnings=notes, seconds=seconds))
    from .report import write_report_html

    write_report_html(plan.out_dir, as_dir=shown.out_dir, locked=True)  # run_demo holds the folder's lock
    if shown is not plan:  # built beside the previous demo: what its files record names the demo's folder
        from .check.planted import repoint

        repoint(plan.out_dir, shown.out_dir)
    # demo.json and the page are the demo's alone: their digests keep a copy edited by hand from the
    # next --force. The backbone, its metrics and the cache are left undigested: the demo prints their
    # steps to be rerun by hand, and those steps' own checks say whose the files are (report says what
    # is stale then).
    write_marker(plan.out_dir, "demo", files=names, digest=[p["demo_json"].name, "report.html"])
    fit_summary, compare_summary = (
        json.loads(f.read_text(encoding="utf-8")) for f in (p["heads"] / "summary.json", p["compare"] / "summary.json")
    )  # as written, with the paths in the demo's folder
    fit_summary, compare_summary = (_demo_advice(x, plan.budget) for x in (fit_summary, compare_summary))
    return DemoResult(
        out_dir=shown.out_dir,
        plan=shown,
        steps=done,
        backbone=joint.metrics,
        fit_summary=fit_summary,
        profiles=profiles,
        compare_summary=compare_summary,
        files=files,
        numbers=numbers,
        seconds=seconds,
    )


def _demo_advice(said: dict[str, Any], budget: DemoBudget) -> dict[str, Any]:
    """``said`` (a summary as read) with the epoch-limit advice of train and fit-head put as the demo's
    own, which the demo prints: it has --epochs (for both), not --lr. The files keep their command's."""
    from .training.joint import TRAIN_ADVICE
    from .training.quality import EPOCH_ADVICE

    text = json.dumps(said)
    for advice, epochs in ((TRAIN_ADVICE, budget.train_epochs), (EPOCH_ADVICE, budget.fit_epochs)):
        text = text.replace(advice, f"run the demo again with more --epochs (now {epochs})")
    return dict(json.loads(text))


def _accuracy_nulls(fit: dict[str, Any]) -> dict[str, Any]:
    """What the heads' accuracies are read against, as fit-head's gate reads them: ``chance`` (the majority
    class's share) and ``probe`` (the reference probe's layer and test accuracy; absent without one)."""
    q = fit.get("quality") or {}
    probe = q.get("probe") or {}
    said: dict[str, Any] = {"chance": q.get("chance")}
    if probe.get("reference_layer") is not None:
        said["probe"] = {"layer": probe["reference_layer"], "test_acc": probe.get("reference_test_acc")}
    return said


def _profile(profiles: dict[str, Any] | None, kind: str, head: str, layers: list[str]) -> dict[str, float] | None:
    p = (profiles or {}).get(kind, {}).get(head)
    return None if p is None else {n: float(v) for n, v in zip(layers, p["mean"])}


def _faithfulness(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``faithfulness``: head name → method → mean faithfulness ρ; ``faithfulness_constant``: head name →
    the constant rule's (the null beside the methods'); ``faithfulness_seeds``: :func:`_over_seeds`."""
    heads = summary["heads"]
    return {
        "faithfulness": {h["name"]: {m: s["faithfulness"]["mean"] for m, s in h["methods"].items()} for h in heads},
        "faithfulness_constant": {h["name"]: _reference_of(h, "constant") for h in heads},
        "faithfulness_seeds": _over_seeds(summary),
    }


def _reference_of(head: dict[str, Any], name: str) -> float | None:
    """A reference's (constant, top1_only) mean faithfulness ρ on a compared head (None without one)."""
    return (((head.get("references") or {}).get(name) or {}).get("faithfulness") or {}).get("mean")


def _over_seeds(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """fit-head head (laya, …) → ``heads`` (its compared seeds' names), ``faithfulness`` (method → the
    mean ρ over those seeds with its 95% t-interval, cut to [−1, 1] where it reaches past, and each seed's
    value: compare.seeds.ranged, as compare's across-seed table reads it; no interval for one seed) and
    ``constant`` and ``top1_only`` (the same of the constant rule and of top-1 only)."""
    from .compare.seeds import head_name, ranged

    by: dict[str, list[dict[str, Any]]] = {}
    for h in summary["heads"]:
        by.setdefault(head_name(h.get("dir") or "", h["name"]), []).append(h)
    return {
        name: {
            "heads": [h["name"] for h in heads],
            "faithfulness": {
                m: ranged("faithfulness", [h["methods"][m]["faithfulness"]["mean"] for h in heads])
                for m in heads[0]["methods"]
                if all(m in h["methods"] for h in heads)
            },
            "constant": ranged("faithfulness", [_reference_of(h, "constant") for h in heads]),
            **(
                {"top1_only": ranged("faithfulness", [_reference_of(h, "top1_only") for h in heads])}
                if any("top1_only" in (h.get("references") or {}) for h in heads)
                else {}
            ),
        }
        for name, heads in by.items()
    }


def _record(
    plan: DemoPlan,
    steps: list[DemoStep],
    numbers: dict[str, Any],
    files: dict[str, Any],
    *,
    complete: bool,
    seconds: float | None = None,
    warnings: Sequence[str] = (),
) -> dict[str, Any]:
    return {
        **artifact_header("laya-inspect-demo"),
        "complete": complete,
        "config": dataclasses.asdict(plan.config),
        # the settings left at their defaults, which the page's settings line says apart
        "config_defaults": defaulted(plan.config),
        "out_dir": str(plan.out_dir),
        "dataset": {
            "name": plan.preset.name,
            "description": plan.preset.description,
            "spec": plan.data_spec,
            "rows": plan.rows,
            "note": plan.preset.note,
        },
        "model": MODEL,
        "quick": plan.config.quick,
        "budget": dataclasses.asdict(plan.budget),
        "budget_line": plan.budget_line(),
        "steps": [
            {
                "name": s.name,
                "title": s.title,
                "command": s.command,
                "argv": list(s.argv),
                "seconds": s.seconds,
                "numbers": s.numbers,
            }
            for s in [*steps, *plan.steps()[len(steps) :]]
        ],
        "numbers": numbers,
        "files": files,
        "seconds": seconds,
        "warnings": list(warnings),
    }
