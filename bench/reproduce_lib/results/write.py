"""Assemble docs/RESULTS.md: header, summary, the experiments' sections, commands and wall times, machine."""

from __future__ import annotations

import datetime as _dt
import json
import shlex
from pathlib import Path

import paper as P
from plans import Experiment, plan
from runner import WEIGHTS_NOTE, portable

from .load import Ctx, joint_runs, load, machine_info
from .sections import mobilenet_section, text_section, zoo_section
from .tables import code, describe, f4, rows_text, step_table, table

HOW_TO_RUN = [
    "bench/reproduce --quick                      # smoke run: every step on tiny subsets (minutes)",
    "bench/reproduce                              # full mode: reduced schedules on CPU (hours; resumable)",
    "bench/reproduce --only cifar --cifar-limit 5000 --cifar-epochs 30   # one experiment, bigger",
    "bench/reproduce --mode paper --device cuda   # the paper's schedule, on a GPU",
    "bench/reproduce --report-only                # rewrite this page from the outputs in --work",
]


def machine(mode_dir: Path) -> list[str]:
    info = load(mode_dir / "machine.json")
    note = "as recorded by the last invocation that ran steps"
    if not info:
        info, note = machine_info(), "the machine that wrote this page (no record from the run)"
    return [f"({note})", "", *table(["", ""], [[k, v] for k, v in info.items()])]


def gpu_commands(device: str | None) -> list[str]:
    exps = plan("paper", Path("runs/reproduce"), "cuda", for_display=True)
    out = [
        "## Full paper schedule on a GPU",
        "",
        "The paper's schedule (all training rows, ≤ 50 epochs with patience 5, 5 seeds; MobileNetV2 on all of "
        "CIFAR-10 at 224 px) does not fit two shared CPU cores. On a machine with a CUDA GPU:",
        "",
        *code(
            [
                "bench/reproduce --mode paper --device cuda            # every experiment",
                "bench/reproduce --mode paper --device cuda --only cifar",
            ]
        ),
        "",
        "which runs these commands (CIFAR-10 shown; Fashion-MNIST is the same with `zoo:mlp`):",
        "",
        "<details><summary>CIFAR-10, paper schedule</summary>",
        "",
    ]
    cf = next(e for e in exps if e.name == "cifar")
    out += code([st.cmd_str for st in cf.steps])
    out += ["", "</details>", ""]
    return out


def write_report(
    exps: list[Experiment],
    *,
    mode: str,
    work: Path,
    mode_dir: Path,
    results: Path,
    images: Path,
    device: str | None,
    overrides: dict,
    plan_args: list[str] | None = None,
) -> Path:
    ctx = Ctx(mode, mode_dir, images, results)
    inv = load(mode_dir / "last_invocation.json") or {}
    invs = []
    try:
        invs = [json.loads(line) for line in (mode_dir / "invocations.jsonl").read_text().splitlines() if line.strip()]
    except OSError:
        pass
    body: list[str] = []
    walls: dict[str, float] = {}
    cmd_sections: list[str] = []
    counted: set[str] = set()
    number = 0
    for exp in exps:
        number += 1
        if exp.name in P.PAPER_ROW:
            sec, _ = zoo_section(exp, ctx, number)
        elif exp.name == "mobilenet":
            sec, _ = mobilenet_section(exp, ctx, number)
        else:
            sec, _ = text_section(exp, ctx, number)
        body += sec
        st, total = step_table(exp, ctx, counted)
        walls[exp.name] = total
        cmd_sections += [f"### {number}. {exp.title}", "", *st, ""]
    now = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    plan_cmd = " ".join(["bench/reproduce", *map(shlex.quote, plan_args or [])])
    stale = (
        f" **{len(ctx.stale)} step(s) are stale** (marked below): their outputs come from another command."
        if ctx.stale
        else " Every step listed below ran with exactly the command shown for it."
    )
    head = [
        "# Reproduction results",
        "",
        f"Generated on {now} from the files the `laya-inspect` CLI wrote under `{mode_dir}` for the plan of "
        f"`{plan_cmd}` ({len(invs) or 1} invocation(s) filled that folder, one or more experiments each, side by "
        f"side; `{mode_dir}/invocations.jsonl` lists them).{stale} Every number below is read from those files; "
        "the paper's numbers are typed once in `bench/reproduce_lib/paper.py`. "
        f"`{plan_cmd}` regenerates it (finished steps are reused); `--report-only` rewrites this page alone.",
        "",
    ]
    if mode == "quick":
        head += [
            "> **SMOKE RUN (`--quick`).** Tiny subsets, 1–2 seeds, a few epochs: this page shows that every step "
            "of the benchmark runs end to end and that the report is generated from its outputs. **None of its "
            "numbers is a reproduction of the paper.** Run `bench/reproduce` (full mode: reduced schedules, "
            "hours on 2 cores) or `bench/reproduce --mode paper --device cuda` for numbers that mean something.",
            "",
        ]
    elif mode == "full":
        head += [
            "> **Full mode on a 2-core CPU**: Fashion-MNIST runs the paper's schedule; CIFAR-10's joint protocol "
            "is reduced (subset, fewer epochs and seeds, stated in its section); MobileNetV2 and text use "
            "subsets; the BiLSTM runs 3 seeds on a text table that is not the paper's IMDB. Each section says "
            "what was reduced.",
            "",
        ]
    head += [
        "How to run it (from the repository root, in the project's virtual environment):",
        "",
        *code(HOW_TO_RUN),
        "",
        "## Summary",
        "",
    ]
    srows = []
    titles = {
        "fmnist": "Fashion-MNIST (zoo MLP)",
        "cifar": "CIFAR-10 (zoo CNN)",
        "mobilenet": "MobileNetV2 frozen, CIFAR-10",
        "text": "Text (MiniLM, Debian descriptions)",
        "bilstm": "Text (zoo BiLSTM, Debian descriptions)",
    }
    for exp in exps:
        srows.append([titles[exp.name], _summary_line(exp), f"{walls.get(exp.name, 0) / 60:.1f}"])
    head += table(["experiment", "what was measured", "step wall time (min)"], srows)
    total_wall = sum(walls.values())
    head += [
        "",
        f"Total wall time of all steps: {total_wall / 60:.1f} min"
        + (
            f"; the last `bench/reproduce` invocation took {inv['wall_s'] / 60:.1f} min, running "
            f"{len(inv.get('steps_ran', []))} step(s) and reusing {len(inv.get('steps_reused', []))} finished "
            "one(s)"
            if inv.get("wall_s") is not None and "steps_ran" in inv
            else f"; the last `bench/reproduce` invocation took {inv['wall_s'] / 60:.1f} min"
            if inv.get("wall_s") is not None
            else ""
        )
        + (f"; {len(invs)} invocation(s) built this work directory." if invs else "."),
        "",
    ]
    if inv.get("failures"):
        head += ["**Failed steps:** " + "; ".join(f"{k}: {v}" for k, v in inv["failures"].items()), ""]
    tail = [
        "## Commands and wall times",
        "",
        "Each step is one subprocess; its command line, wall time and log are in "
        f"`{mode_dir}/steps/` and `{mode_dir}/logs/`. {WEIGHTS_NOTE}",
        "",
        *cmd_sections,
        *gpu_commands(device),
        "## Machine",
        "",
        *machine(mode_dir),
        "",
    ]
    # bench/trust.py owns the block between the trust markers, bench/beyond.py the one between the beyond
    # markers: both kept verbatim, right after the summary.
    kept = kept_trust_block(results) + kept_trust_block(results, BEYOND_BEGIN, BEYOND_END)
    text = portable("\n".join(head + kept + body + tail).rstrip() + "\n")
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(text)
    return results


TRUST_BEGIN, TRUST_END = "<!-- trust:begin -->", "<!-- trust:end -->"
BEYOND_BEGIN, BEYOND_END = "<!-- beyond:begin -->", "<!-- beyond:end -->"


def kept_trust_block(results: Path, begin: str = TRUST_BEGIN, end: str = TRUST_END) -> list[str]:
    """The lines of ``results`` from the ``begin`` marker to the ``end`` marker (both kept), then a blank
    line; none when the page or either marker is missing."""
    try:
        old = results.read_text(encoding="utf-8")
    except OSError:
        return []
    i = old.find(begin)
    j = old.find(end, i + 1) if i >= 0 else -1
    return [*old[i : j + len(end)].split("\n"), ""] if 0 <= i < j else []


def _summary_line(exp: Experiment) -> str:
    if exp.name in P.PAPER_ROW:
        runs = joint_runs(exp)
        laya = runs.get("laya") or []
        if not laya:
            return "not run"
        acc = describe([m["test_acc"] for m in laya])
        pm = P.TABLE1[P.PAPER_ROW[exp.name]]["laya"][0]
        # A reduced run (a subset of rows or fewer epochs than the paper's 50) is no reproduction: its gap to
        # the paper measures the reduction, so no Δ is printed for it.
        reduced = exp.settings["limit"] is not None or exp.settings["epochs"] < P.PAPER_EPOCHS
        paper = (
            f"other data than the paper's IMDB row, {pm:.4f} there"
            if not P.SAME_DATA[exp.name]
            else f"paper {pm:.4f} on all {P.PAPER_TRAIN_ROWS[P.PAPER_ROW[exp.name]]:,} training rows and "
            f"{P.PAPER_EPOCHS} epochs; no Δ: at this size the gap measures the reduction, not the reproduction"
            if reduced
            else f"paper {pm:.4f}, Δ {acc['mean'] - pm:+.4f}"
        )
        return (
            f"joint LAYA acc {f4(acc['mean'])} ({paper}, {len(laya)} seed(s), "
            f"{rows_text(exp.settings['limit'])}, ≤ {exp.settings['epochs']} epochs)"
        )
    fsum = load(exp.paths["frozen_heads"] / "summary.json")
    if not fsum:
        return "not run" + (f" ({exp.skip_reason})" if exp.skip_reason else "")
    laya = next((h for h in fsum["heads"] if h["head"] == "laya"), None)
    last = next((h for h in fsum["heads"] if h["head"] == "last"), None)
    cmp = load(exp.paths["frozen_compare"] / "summary.json")
    d1 = None
    if cmp:
        h = next((h for h in cmp["heads"] if h["kind"] == "laya"), None)
        d1 = h["methods"]["alpha"]["deletion_at_1"] if h and "alpha" in h["methods"] else None
    return (
        f"frozen LAYA acc {f4(laya['test_acc']['mean']) if laya else 'n/a'} vs LastLayer "
        f"{f4(last['test_acc']['mean']) if last else 'n/a'}; α Deletion@1 {f4(d1, 3)}"
    )
