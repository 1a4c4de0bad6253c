"""The beyond block of docs/RESULTS.md that bench/beyond.py writes: per backbone, whether α beats its
baseline without α in prune, early-exit and diagnose (misclassification and shift), with the paired
difference and its interval over seeds (at its family's level: docs/METHOD.md, "Families of
comparisons"), the plain reading the command's report.html leads with,
and the exact commands with their wall times. Every number is read from the folders the CLI wrote."""

from __future__ import annotations

import datetime as _dt
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner import WEIGHTS_NOTE, portable

from laya_inspect.beyond.costs import smallest_k_text, smallest_within
from laya_inspect.files import write_text
from laya_inspect.report.reading import (
    PRUNE_NAMES,
    diagnose_reading,
    diff_text,
    early_exit_reading,
    held_out_areas,
    interval,
    ks_text,
    num,
    outcome,
    prune_reading,
    same_sets,
)
from laya_inspect.training.stats import tied

BEGIN, END = "<!-- beyond:begin -->", "<!-- beyond:end -->"
WORD = {"better": "**α better**", "worse": "**α worse**", "no different": "not distinguishable", "undecided": "—"}


def word(d: dict[str, Any] | None, alpha: bool = True, sets: bool | None = None) -> str:
    """The verdict cell; ``alpha=False`` for a comparison of two rules that both do without α; ``sets``:
    whether prune's two rankings keep the same layer sets (summary.json's record, never read off equal
    accuracies: different sets can score alike on every seed)."""
    if sets:
        return "same layer sets"
    if sets is False and tied(d):
        return "no verdict: different sets, same accuracy on every seed"
    text = WORD[outcome(d)]
    return text if alpha else text.replace("α ", "first ")


def table(cols: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows] + [""]


def est(d: dict[str, Any] | None, digits: int = 4) -> str:
    if not d or d.get("mean") is None:
        return "—"
    return f"{num(d['mean'], digits)} {interval(d, digits)}"


def _prune(s: dict[str, Any], glance: list[list[Any]], name: str) -> list[str]:
    rows = []
    for r, e in s["rankings"].items():
        if not e["applies"]:
            rows.append([f"`{r}`", "—", "—", "—", "—", "does not apply"])
            continue
        best = smallest_within(s, r)
        d = (s["alpha_vs"].get(r) or {}).get("mean_test_acc_over_k_diff")
        rows.append(
            [
                f"`{r}`",
                "—" if best is None else f"{smallest_k_text(best)} ({best['flops_saved']:.1%})",
                "—" if best is None else est(best["test_acc"]),
                est((s["per_ranking"].get(r) or {}).get("mean_test_acc_over_k")),
                "(α)" if r == "alpha" else diff_text(d),
                "" if r == "alpha" else word(d, sets=same_sets(s, r)),
            ]
        )
        if r != "alpha":
            said = word(d, sets=same_sets(s, r))
            glance.append([name, "prune", f"rank layers: α vs {PRUNE_NAMES.get(r, r)}", diff_text(d), said])
    rand = (s["alpha_vs"].get("random") or {}).get("mean_test_acc_over_k_diff")
    if s.get("random_reference"):  # the reference α is read against first: what a random order keeps
        area = (s["per_ranking"].get("random") or {}).get("mean_test_acc_over_k")
        rows.append(["random reference", "—", "—", est(area), diff_text(rand), word(rand)])
        first = next((i for i, g in enumerate(glance) if g[:2] == [name, "prune"]), len(glance))
        glance.insert(first, [name, "prune", "rank layers: α vs a random ranking", diff_text(rand), word(rand)])
    cols = [
        "ranking",
        f"smallest k within {s['config']['max_drop']:g} (FLOPs saved)",
        "test acc there",
        # the k tried below L, as prune's own table heads it: --ks or the coarse grid may skip some
        f"mean test acc over {ks_text(s['ks'], len(s['cache']['layer_names']))}",
        "α − ranking",
        "",
    ]
    lead = (
        f"**prune** ({s['mode']}, {len(s['seeds'])} seeds, k ∈ {', '.join(map(str, s['ks']))}; all layers: "
        f"test accuracy {est(s['reference']['test_acc'])}):"
    )
    return [lead, "", *table(cols, rows), "Reading: " + " ".join(prune_reading(s).lead), ""]


def _exit(s: dict[str, Any], glance: list[list[Any]], name: str) -> list[str]:
    held = held_out_areas(s)
    rules = {r: est(e["area_held_out"] if held else e["area"]) for r, e in s["rules"].items()}
    comps = s["comparisons"]

    def verdict(c: str, v: dict[str, Any]) -> str:  # a rule that is another one (α never fired): no verdict
        return "identical rules" if v.get("identical") else word(v["area_diff"], alpha="alpha" in c)

    rows = [[c, diff_text(v["area_diff"]), verdict(c, v)] for c, v in comps.items()]
    alone = ("alpha vs random", "exit: α alone vs random exit") if "alpha vs random" in comps else (
        "alpha vs fixed", "exit: α alone vs fixed depth")  # fmt: skip
    for key, what in (("confidence+alpha vs confidence", "exit: confidence+α vs confidence"), alone):  # fmt: skip
        d = comps[key]["area_diff"]
        glance.append([name, "early-exit", what, diff_text(d), verdict(key, comps[key])])
    lead = (
        f"**early-exit** ({len(s['seeds'])} seeds, ε = {s['config']['epsilon']:g}; "
        f"{'held-out ' if held else ''}area under accuracy–compute: "
        + "; ".join(f"`{r}` {v}" for r, v in rules.items())
        + "):"
    )
    return [lead, "", *table(["comparison", f"{'held-out ' if held else ''}area difference", ""], rows),
            "Reading: " + " ".join(early_exit_reading(s).lead), ""]  # fmt: skip


def _diagnose(s: dict[str, Any], glance: list[list[Any]], name: str) -> list[str]:
    e = s["errors"]
    rows = []
    for score, auc in e["auroc"].items():
        d = e["diff_vs_msp"].get(f"{score} − msp")
        rows.append(
            [f"`{score}`", est(auc, 3), est(e["aupr"].get(score), 3), "(baseline)" if score == "msp" else
             diff_text(d, 3), "" if score == "msp" else WORD[outcome(d)]]
        )  # fmt: skip
        if score in ("alpha_divergence", "msp+alpha"):
            glance.append([name, "diagnose", f"errors: {score} vs msp (AUROC)", diff_text(d, 3), WORD[outcome(d)]])
    lead = f"**diagnose**, misclassified test rows ({len(s['heads'])} LAYA seeds, {e['interval']}):"
    cols = ["score", "AUROC", "AUPR", "AUROC − msp", ""]
    return [lead, "", *table(cols, rows), "Reading: " + diagnose_reading(s).lead[0], ""]


def _shift(b: Any, glance: list[list[Any]], load: Callable[[Path], Any]) -> list[str]:
    rows, tally = [], {"better": 0, "worse": 0, "no different": 0, "undecided": 0}
    control, inverted = "", []
    worst: tuple[float, str, dict[str, Any]] | None = None
    for sh in b.shifts:
        s = load(sh["out"] / "summary.json")
        if not s or "shift" not in s:
            rows.append([sh["tag"], "not run", "", "", "", "", ""])
            continue
        pooled, heads = s["shift"]["pooled"], s["shift"]["heads"]
        auc, diffs = pooled["detect_auroc"], pooled["detect_diff"]
        d_div, d_ent = diffs.get("alpha_divergence − msp"), diffs.get("alpha_entropy − msp")
        acc = sum(h["accuracy_other"] for h in heads) / len(heads)
        p = max(h["permutation"]["p_value"] for h in heads)
        rows.append(
            [
                "clean copy (control)" if sh["kind"] == "clean" else f"{sh['kind']} {sh['severity']}",
                num(acc, 3),
                est(auc.get("msp"), 3),
                est(auc.get("alpha_divergence"), 3),
                # the control's differences are float rounding of the same images (±1e-4): no verdict words
                diff_text(d_div, 3) + ("" if sh["kind"] == "clean" else f" {WORD[outcome(d_div)]}"),
                diff_text(d_ent, 3) + ("" if sh["kind"] == "clean" else f" {WORD[outcome(d_ent)]}"),
                f"{p:.3g}",
            ]
        )
        if sh["kind"] == "clean":
            m_msp, m_div = ((auc.get(k) or {}).get("mean") for k in ("msp", "alpha_divergence"))
            control = (
                f" Control, the unchanged images through the same npz → extract path: msp AUROC {num(m_msp, 3)}, "
                f"α divergence {num(m_div, 3)}, permutation p {p:.3g} (0.5 and a large p: the pipeline adds no shift)."
            )
        else:
            tally[outcome(d_div)] += 1
            if (auc.get("msp") or {}).get("ci_high", 1.0) < 0.5:
                inverted.append(f"{sh['kind']} {sh['severity']} (msp AUROC {num(auc['msp']['mean'], 3)})")
            m = (d_div or {}).get("mean")
            if m is not None and (worst is None or abs(m) > abs(worst[0])):
                worst = (m, f"{sh['kind']} {sh['severity']}", d_div or {})
    if not rows:
        return []
    n = sum(tally.values())
    reading = (
        f"Reading: α divergence tells the corrupted copy from the clean test rows better than max softmax "
        f"probability in {tally['better']} of {n} corruptions, worse in {tally['worse']}, with no detectable "
        f"difference in {tally['no different']}"
        + (f"; the largest difference is {worst[1]} ({diff_text(worst[2], 3)})" if worst else "")
        + "."
        + (
            f" Where msp's AUROC is below 0.5 — {', '.join(inverted)} — the heads are *more* confident on the "
            "corrupted rows: α divergence wins there against msp read the usual way, but msp read the other way "
            "round (1 − AUROC) would win."
            if inverted
            else ""
        )
        + control
    )
    if worst:
        counts = f"better {tally['better']}, worse {tally['worse']}, tie {tally['no different']}"
        glance.append([b.name, "diagnose", f"shift ({n} corruptions): α divergence vs msp (AUROC)", counts, ""])
    cols = [
        "corrupted copy",
        "accuracy on it",
        "AUROC msp",
        "AUROC α divergence",
        "α divergence − msp",
        "α entropy − msp",
        "permutation p (max over seeds)",
    ]
    head = (
        "**diagnose --against** a corrupted copy of the same test rows (`bench/reproduce_lib/corrupt.py`; noise σ "
        "0.08/0.18/0.38, blur σ 0.5/1.0/1.5 px, JPEG quality 50/20/8 for severities 1/2/3); positive = a row of the "
        "copy; t-intervals over seeds:"
    )
    return [head, "", *table(cols, rows), reading, ""]


def block(bbs: list[Any], runner: Any, work: Path, *, smoke: bool, load: Callable[[Path], Any]) -> str:
    now = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    glance: list[list[Any]] = []
    body: list[str] = []
    cmds: list[str] = []
    total = 0.0
    ran_at: list[str] = []  # the commits the finished steps ran at: what every number of the block comes from
    for i, b in enumerate(bbs, 1):
        body += [f"### {i}. {b.title}", ""]
        if b.skip:
            body += [f"Not run: {b.skip}.", ""]
            continue
        sums = {c: load(o / "summary.json") for c, o in b.outs.items()}
        fitted = load(b.laya[0].parent.parent / "summary.json") or {}
        accs = ", ".join(
            f"{h['head']} {num(h['test_acc']['mean'], 4)}" for h in fitted.get("heads") or [] if h.get("test_acc")
        )
        body.append(
            f"Cache `{b.cache}`; LAYA heads {', '.join(f'`{p.name}`' for p in b.laya)} under `{b.laya[0].parent}`"
            + (f" (`fit-head`'s test accuracy on this cache, mean over seeds: {accs})" if accs else "")
            + f"; each command's folder under `{work / b.name}` also holds report.html, the CSV tables and plots/."
        )
        body.append("")
        for c, fn in (("prune", _prune), ("early-exit", _exit), ("diagnose", _diagnose)):
            body += fn(sums[c], glance, b.name) if sums[c] else [f"**{c}**: not run.", ""]
        body += _shift(b, glance, load)
        for st in b.steps:
            rec = runner.read_record(st) or {}
            wall = rec.get("wall_s")
            total += wall or 0.0
            if rec.get("status") == "ok":
                ran_at.append(rec.get("commit") or "unrecorded")
            cmds.append(f"{shlex.join(st.cmd)}  # {'not run' if wall is None else f'{wall:.0f} s'}")
    head = [
        "## Beyond attribution: prune, early exit, diagnose",
        "",
        f"Written by `bench/beyond.py{' --smoke' if smoke else ''}` on {now} from the files the CLI wrote under "
        f"`{work}` ({total / 60:.1f} min of steps at commit "
        f"{', '.join(f'`{c}`' for c in dict.fromkeys(ran_at)) or 'none yet'}, OMP_NUM_THREADS=1, on the machine "
        "named at the end of this page), "
        "on the caches and LAYA heads of `bench/trust.py`. Each use of α is measured against a baseline that does "
        "not use α; **α better** / **α worse** only when the t-interval over seeds of the paired difference "
        'excludes 0, drawn at 1 − 0.05/m over the m comparisons of its family (docs/METHOD.md, "Families of '
        'comparisons"). Definitions: docs/METHOD.md, "Beyond attribution". Plots are not committed: each command\'s '
        "folder holds them, inlined in its report.html.",
        "",
    ]
    if smoke:
        head += ["> **SMOKE RUN**: a tiny digits model, 2 seeds, a few epochs. None of its numbers means anything.", ""]
    columns = ["backbone", "command", "α against", "α − baseline [CI at its family's level]", ""]
    head += ["### At a glance", "", *table(columns, glance)]
    tail = ["### Commands and wall times", "", WEIGHTS_NOTE, "", "<details><summary>every step, in order</summary>",
            "", "```bash", *cmds, "```", "", "</details>"]  # fmt: skip
    return portable("\n".join([BEGIN, *head, *body, *tail, END]))


def put_block(results: Path, text: str) -> None:
    """Replace the beyond block of ``results``, or insert it right after the trust block (else after the
    "## Summary" section, else at the end)."""
    page = results.read_text(encoding="utf-8") if results.exists() else ""
    i, j = page.find(BEGIN), page.find(END)
    if 0 <= i < j:
        page = page[:i] + text + page[j + len(END) :]
    else:
        trust_end = page.find("<!-- trust:end -->")
        if trust_end >= 0:
            at = trust_end + len("<!-- trust:end -->")
            page = page[:at] + "\n\n" + text + page[at:]
        else:
            start = page.find("\n## Summary")
            nxt = page.find("\n## ", start + 1) if start >= 0 else -1
            at = nxt + 1 if nxt >= 0 else len(page)
            page = page[:at] + text + "\n\n" + page[at:]
    write_text(results, page)
