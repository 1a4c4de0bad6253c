#!/usr/bin/env python3
"""Beyond attribution: `prune`, `early-exit` and `diagnose` through the real `laya-inspect` CLI on the
caches bench/trust.py built, each against its baseline without α, then the marked block of
docs/RESULTS.md, every number read from the files the CLI wrote (definitions: docs/METHOD.md,
"Beyond attribution").

Per backbone: `prune` on the seed-0 LAYA head (ScalarMix's seed-0 head as one more ranking),
`early-exit` on the same head, `diagnose` on every LAYA seed; then corrupted copies of the cache's
test images (bench/reproduce_lib/corrupt.py: Gaussian noise, blur, JPEG at several severities, and
an unchanged copy as a control), each extracted with the cache's own model and options and compared
with `diagnose --against`. Each step is a subprocess (OMP_NUM_THREADS=1, HF_HUB_OFFLINE=1); a finished
step (same command, outputs present, inputs unchanged) is reused.

    bench/beyond.py                       # fmnist, mobilenet, convnet from runs/trust into runs/beyond
    bench/beyond.py --only fmnist         # one backbone; the block still shows every backbone in --work
    bench/beyond.py --report-only         # rewrite the block from what is in --work
    bench/beyond.py --smoke --work /tmp/b # builds a tiny digits cache itself; writes /tmp/b/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "reproduce_lib"))

from beyond_page import BEGIN, END, block, put_block  # noqa: E402
from corrupt import extract_options  # noqa: E402
from runner import Runner, Step, StepFailed, thread_env  # noqa: E402

from laya_inspect.files import write_text  # noqa: E402

BACKBONES = ("fmnist", "mobilenet", "convnet")
TITLES = {
    "fmnist": "Fashion-MNIST, zoo MLP (3 blocks), frozen cache of bench/trust.py",
    "mobilenet": "ImageNet MobileNetV2, every block (19), on CIFAR-10 JPEGs at 96 px",
    "convnet": "sklearn digits, the fixture convnet (2 conv blocks)",
}
SETTINGS: dict[str, dict[str, Any]] = {
    # a shift run on 2 × 10,000 rows and 3 heads costs about a CPU minute: noise at three severities,
    # blur at two (JPEG is measured on MobileNetV2)
    "fmnist": dict(
        prune=["--seeds", "3", "--max-drop", "0.005"],
        exit=["--seeds", "3"],
        shifts=[("noise", 1), ("noise", 2), ("noise", 3), ("blur", 1), ("blur", 3)],
    ),
    # 19 layers: every k would be up to 19 × 5 layer sets to refit; seven k keep it to minutes on one core.
    "mobilenet": dict(
        prune=["--ks", "1,2,3,5,8,12,16", "--seeds", "3", "--max-drop", "0.005"],
        exit=["--seeds", "3"],
        shifts=[(k, s) for k in ("noise", "blur", "jpeg") for s in (1, 3)],
    ),
    # float pixels (sklearn's /16): no JPEG
    "convnet": dict(
        prune=["--seeds", "3", "--max-drop", "0.005"],
        exit=["--seeds", "3"],
        shifts=[(k, s) for k in ("noise", "blur") for s in (1, 2, 3)],
    ),
}
SMOKE = dict(
    prune=["--seeds", "2", "--epochs", "2"],
    exit=["--seeds", "2", "--epochs", "2", "--thresholds", "5"],
    diag=["--permutations", "50", "--bootstrap", "50"],
    shifts=[],  # the unchanged copy alone: the corruptions themselves are tested by hand
)


@dataclass
class Backbone:
    name: str
    title: str
    cache: Path
    laya: list[Path] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    outs: dict[str, Path] = field(default_factory=dict)  # "prune", "early-exit", "diagnose" → --out
    shifts: list[dict[str, Any]] = field(default_factory=list)  # kind, severity, out
    skip: str | None = None


def _step(b: Backbone, what: str, cmd: list[Any], outputs: list[Path], **kw: Any) -> None:
    b.steps.append(Step(f"{b.name}.{what}", [str(c) for c in cmd], outputs, b.name, what, **kw))


def _commands(b: Backbone, work: Path, smoke: bool, extract: list[str] | None) -> None:
    """prune, early-exit, diagnose, then one corrupted copy → extract → diagnose --against per shift."""
    s = SMOKE if smoke else SETTINGS[b.name]
    diag_opts = SMOKE["diag"] if smoke else []
    d, cache, head = work / b.name, b.cache, b.laya[0]
    b.outs = {c: d / c for c in ("prune", "early-exit", "diagnose")}
    smix = b.cache.parent / "heads" / "scalarmix" / "seed_0"
    prune = ["laya-inspect", "prune", head, "--cache", cache, "--scalarmix", smix, *s["prune"]]
    _step(b, "prune", [*prune, "--out", b.outs["prune"]], [b.outs["prune"] / "summary.json"], clean=[b.outs["prune"]])
    ee = ["laya-inspect", "early-exit", head, "--cache", cache, *s["exit"], "--out", b.outs["early-exit"]]
    _step(b, "early-exit", ee, [b.outs["early-exit"] / "summary.json"], clean=[b.outs["early-exit"]])
    diag = ["laya-inspect", "diagnose", *b.laya, "--cache", cache, *diag_opts]
    out = b.outs["diagnose"]
    _step(b, "diagnose", [*diag, "--out", out], [out / "summary.json"], clean=[out])
    if extract is None:
        return
    for kind, sev in [("clean", 0), *s["shifts"]]:
        tag = "clean" if kind == "clean" else f"{kind}-{sev}"
        npz, h5, out = d / "corrupt" / f"{tag}.npz", d / "corrupt" / f"{tag}.h5", d / "shift" / tag
        cor = ["python", "bench/reproduce_lib/corrupt.py", "--cache", cache, "--kind", kind, "--out", npz]
        _step(b, f"corrupt.{tag}", [*cor, *(["--severity", sev] if sev else [])], [npz])
        ext = ["laya-inspect", "extract", *extract, "--data", f"npz:{npz}", "--split", "test", "--out", h5]
        _step(b, f"extract.{tag}", ext, [h5], resumable=True)
        _step(b, f"shift.{tag}", [*diag, "--against", h5, "--out", out], [out / "summary.json"], clean=[out])
        b.shifts.append({"kind": kind, "severity": sev, "out": out, "tag": tag})


def plan(work: Path, trust: Path, smoke: bool) -> list[Backbone]:
    if smoke:
        d = work / "convnet"
        b = Backbone("convnet", "sklearn digits, the fixture convnet (SMOKE: 3 epochs, 2 seeds)", d / "features.h5")
        b.laya = [d / "heads" / "laya" / f"seed_{i}" for i in range(2)]
        ck = d / "convnet.pt"
        _step(
            b, "backbone", ["python", "bench/reproduce_lib/prep.py", "digits-convnet", "--out", ck, "--epochs", 3], [ck]
        )
        ext = ["--model", "python:fixtures.digits_convnet:build", "--weights", ck, "--normalize", "none"]
        _step(b, "extract", ["laya-inspect", "extract", *ext, "--data", "digits", "--out", b.cache], [b.cache])
        heads = d / "heads"
        fit = ["laya-inspect", "fit-head", b.cache, "--head", "laya,scalarmix", "--seeds", 2, "--epochs", 5]
        _step(b, "fit-head", [*fit, "--out", heads], [heads / "summary.json"], clean=[heads], mkdirs=[d])
        _commands(b, work, True, [str(x) for x in ext])
        return [b]
    out = []
    for name in BACKBONES:
        cache = trust / name / "features.h5"
        b = Backbone(name, TITLES[name], cache)
        b.laya = sorted((trust / name / "heads" / "laya").glob("seed_*"), key=lambda p: int(p.name.split("_")[1]))
        if not cache.exists() or not b.laya:
            b.skip = f"no cache or LAYA heads under {trust / name}: run bench/trust.py --only {name} first"
            out.append(b)
            continue
        from laya_inspect.cache.store import FeatureStore

        with FeatureStore(cache) as store:
            extract = extract_options(dict(store.attrs["command"]))
        _commands(b, work, False, extract)
        out.append(b)
    return out


def load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="bench/beyond.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--work", default=None, help="where the steps write (default runs/beyond; --smoke: required)")
    p.add_argument("--trust", default="runs/trust", help="bench/trust.py's work folder: the caches and heads")
    p.add_argument("--only", action="append", choices=BACKBONES, help="run only this backbone (repeatable)")
    p.add_argument("--smoke", action="store_true", help="a tiny digits cache built here (a test of the pipeline)")
    p.add_argument("--report-only", action="store_true", help="run nothing; rewrite the block from --work")
    p.add_argument(
        "--results",
        default=None,
        help="RESULTS.md whose beyond block to rewrite (default docs/RESULTS.md; --smoke: WORK/RESULTS.md)",
    )
    a = p.parse_args(argv)
    if a.smoke and not a.work:
        p.error("--smoke needs --work (it must not overwrite runs/beyond)")
    work = Path(a.work).resolve() if a.work else ROOT / "runs" / "beyond"
    results = Path(a.results) if a.results else (work / "RESULTS.md" if a.smoke else ROOT / "docs" / "RESULTS.md")
    os.chdir(ROOT)  # bench/reproduce_lib/… by relative path; python:fixtures… imports from here
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ.update(thread_env(), MPLBACKEND="Agg")
    try:
        work = work.relative_to(ROOT)  # shorter commands in the block
    except ValueError:
        pass
    trust = Path(a.trust)
    bbs, runner, failed = plan(work, trust, a.smoke), Runner(work), {}
    if not a.report_only:
        work.mkdir(parents=True, exist_ok=True)
        for b in bbs:
            if (a.only and b.name not in a.only) or b.skip:
                print(f"[skip]  {b.name}" + (f": {b.skip}" if b.skip else ""), flush=True)
                continue
            runner.lock(b.name)
            lost: set[str] = set()  # outputs of failed steps: a step that reads one does not run
            for st in b.steps:
                if lost & set(st.cmd):
                    print(f"[skip]  {st.name}: it reads what a failed step did not write", flush=True)
                    continue
                try:
                    runner.run(st)
                except StepFailed as e:
                    failed[st.name] = str(e)
                    lost |= {str(o) for o in st.outputs} | {str(o.parent) for o in st.outputs}
                    print(f"[fail]  {st.name}: {e}", file=sys.stderr, flush=True)
    if a.smoke and not results.exists():
        write_text(results, f"# Results (smoke)\n\n## Summary\n\n{BEGIN}\n{END}\n")
    put_block(results, block(bbs, runner, work, smoke=a.smoke, load=load))
    print(f"wrote the beyond block of {results}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
