"""The generated prose under each section's "Discussion": what the numbers say, against the paper."""

from __future__ import annotations

import paper as P
from plans import CONTROLS, HEADS, Experiment

from .load import Ctx
from .tables import HEAD_LABEL

TOLERANCE = 0.015  # how close the joint Fashion-MNIST LAYA and LastLayer means must come to the paper's


def _best(stats: dict) -> str:
    if not stats:
        return "n/a"
    order = sorted(stats, key=lambda h: -stats[h]["acc"]["mean"])
    return " > ".join(f"{HEAD_LABEL[h]} {stats[h]['acc']['mean']:.4f}" for h in order)


def discuss_zoo(exp: Experiment, ctx: Ctx, f: dict) -> list[str]:
    """The discussion of a zoo experiment: accuracy against the paper, α, faithfulness, then the set-up."""
    b = [
        *_accuracy_points(exp, ctx, f),
        *_alpha_points(exp, ctx, f),
        *_faith_points(exp, f),
        *_setup_points(exp, ctx, f),
    ]
    return [f"- {x}" for x in b]


def _accuracy_points(exp: Experiment, ctx: Ctx, f: dict) -> list[str]:
    """Smoke-run note, gap to Table 1, the benchmark's bar, schedule, ranking, frozen vs joint."""
    s = exp.settings
    b: list[str] = []
    js, fs = f["jstats"], f["fstats"]
    ref = P.TABLE1[P.PAPER_ROW[exp.name]]
    same = P.SAME_DATA[exp.name]
    if ctx.quick:
        b.append(
            f"*Smoke run*: {f['n_train']:,} training rows, ≤ {s['epochs']} epochs, {s['seeds']} seeds. The "
            "numbers below only show that every step runs and every file is read; they say nothing about the "
            "paper."
        )
    if js and same:
        ins = [
            HEAD_LABEL[h]
            for h in js
            if js[h]["acc"].get("ci_low") is not None and js[h]["acc"]["ci_low"] <= ref[h][0] <= js[h]["acc"]["ci_high"]
        ]
        outs = [HEAD_LABEL[h] for h in js if HEAD_LABEL[h] not in ins]
        gaps = ", ".join(f"{HEAD_LABEL[h]} {js[h]['acc']['mean'] - ref[h][0]:+.4f}" for h in js)
        b.append(
            f"**Gap to Table 1 (joint).** Ours − paper: {gaps}. The paper's mean lies inside our 95% interval "
            f"for {', '.join(ins) or 'no head'}"
            + (f" and outside it for {', '.join(outs)}" if outs else "")
            + f". With {s['seeds']} seeds the t-interval is wide (t(0.975, {s['seeds'] - 1}) = "
            f"{_t(s['seeds']):.2f}), so 'inside' is a weak statement."
        )
        if exp.name == "fmnist" and not ctx.quick:
            checks = [(HEAD_LABEL[h], js[h]["acc"]["mean"] - ref[h][0]) for h in ("laya", "last") if h in js]
            b.append(
                f"**Bar of this benchmark** (joint LAYA and LastLayer within {TOLERANCE} of the paper's means): "
                + ", ".join(f"{n} {d:+.4f} {'within' if abs(d) <= TOLERANCE else '**outside**'}" for n, d in checks)
                + "."
            )
    if js:
        capped = sum(v["capped"] for v in js.values())
        total = sum(len(v["epochs_run"]) for v in js.values())
        stopped = sum(1 for v in js.values() for e in v["epochs_run"] if e < s["epochs"])
        line = (
            f"**Schedule.** {stopped} of {total} joint runs stopped early (patience {s['patience']}); "
            f"{capped} had their best validation accuracy in their last allowed epoch ({s['epochs']})"
        )
        line += (
            ": those were still improving when the cap stopped them, so their accuracy is a lower bound for "
            "this data size."
            if capped
            else ", so none was still improving when the cap came."
        )
        line += (
            f" Training rows: {f['n_train']:,} here against {P.PAPER_TRAIN_ROWS[P.PAPER_ROW[exp.name]]:,} in the "
            f"paper{'' if same else ' (IMDB)'}."
        )
        b.append(line)
        paper_order = " > ".join(f"{HEAD_LABEL[h]} {ref[h][0]:.4f}" for h in sorted(ref, key=lambda h: -ref[h][0]))
        line = f"**Ranking.** Ours (joint): {_best(js)}; paper{'' if same else ' (IMDB)'}: {paper_order}."
        d = js.get("laya", {}).get("delta")
        if d:
            line += (
                f" LAYA − LastLayer, paired by seed: {d['mean']:+.4f}"
                + (f" [{d['ci_low']:+.4f}, {d['ci_high']:+.4f}]" if d.get("ci_low") is not None else "")
                + f" (paper: {ref['laya'][0] - ref['last'][0]:+.4f})."
            )
        spread = max(v[0] for v in ref.values()) - min(v[0] for v in ref.values())
        big_std = max(v[1] for v in ref.values())
        if spread < big_std:
            line += (
                f" In the paper the four heads' means span {spread:.4f}, less than the largest seed std "
                f"({big_std:.4f}), so the order of the heads is not expected to reproduce exactly."
            )
        b.append(line)
    if fs and js:
        pairs = ", ".join(
            f"{HEAD_LABEL[h]} {fs[h]['acc']['mean']:.4f} vs {js[h]['acc']['mean']:.4f}"
            for h in HEADS
            if h in fs and h in js
        )
        b.append(
            f"**Frozen vs joint** (frozen vs joint mean accuracy): {pairs}. The frozen backbone was trained for "
            "LastLayer, so its last block is already the features a linear classifier needs; the other heads can "
            "only re-weight or mix layers that were shaped for that classifier, not shape them, which is why the "
            "frozen protocol is not the paper's Table 1 and should not be read as one. (The frozen `last` head "
            "is a fresh linear layer, not the backbone's own classifier: it has to be refitted within the "
            f"frozen schedule of ≤ {s['fit_epochs']} epochs.)"
        )
    return b


def _alpha_points(exp: Experiment, ctx: Ctx, f: dict) -> list[str]:
    """Where joint and frozen LAYA put their α, against the paper's deepest-layer value."""
    s = exp.settings
    al = f["alpha"]
    ja, fa = al.get("joint_alpha"), al.get("frozen_alpha")
    refa = P.ALPHA_DEEPEST.get(exp.name)
    if not (ja or fa):
        return []
    parts, deep = [], []
    if ja:
        top = max(range(len(ja)), key=lambda i: ja[i])
        deep = [
            m["test_mean_weights"][al["layers"][-1]] for m in f["runs"].get("laya", []) if m.get("test_mean_weights")
        ]
        spread = f"; per seed {min(deep):.2f} to {max(deep):.2f}" if len(deep) > 1 else ""
        parts.append(
            f"joint LAYA puts {ja[-1]:.2f} of its mass on the deepest layer (`{al['layers'][-1]}`) on "
            f"average over seeds{spread}, most on `{al['layers'][top]}` ({ja[top]:.2f})"
        )
    if fa:
        top = max(range(len(fa)), key=lambda i: fa[i])
        parts.append(f"frozen LAYA {fa[-1]:.2f} (most on `{al['layers'][top]}`, {fa[top]:.2f})")
    line = "**α profile.** " + "; ".join(parts) + (f". Paper: ≈ {refa:.2f} on the deepest layer." if refa else ".")
    if ja and refa:
        diff = ja[-1] - refa
        line += f" Our joint value is {abs(diff):.2f} {'below' if diff < 0 else 'above'} it"
        if diff < 0 and (ctx.quick or s["epochs"] < 50 or s["limit"] is not None):
            line += (
                f"; the shortened schedule is one candidate cause (α starts near uniform, 1/L = "
                f"{1 / len(ja):.2f}, and has had at most {-(-f['n_train'] // 128) * s['epochs']:,} updates), "
                "which only the paper's schedule can confirm."
            )
        elif diff < 0 and deep and max(deep) < refa:
            line += (
                f", and every one of our {len(deep)} seeds is below it too: not seed-to-seed spread, and with "
                "the paper's schedule not a short run either; what makes the paper's α deeper is not traced here "
                "(its α profile is not given per seed)."
            )
        else:
            line += "."
    if al.get("frozen_class_deep"):
        cd = al["frozen_class_deep"]
        line += (
            f" Class-wise (frozen), α on the deepest layer ranges from {min(cd):.2f} to {max(cd):.2f} across classes."
        )
    return [line]


def _faith_points(exp: Experiment, f: dict) -> list[str]:
    """Faithfulness and Deletion@1 of α on the LAYA head, joint then frozen; the two-layer caveat."""
    b: list[str] = []
    ff, jf = f["frozen_faith"], f["joint_faith"]
    for label, fi in (("joint", jf), ("frozen", ff)):
        if ("laya", "alpha") in fi:
            a = fi[("laya", "alpha")]
            others = ", ".join(
                f"`{m}` {fi[('laya', m)]['faith']:.3f}" for m in ("ig", "gradcam", "random") if ("laya", m) in fi
            )
            st = fi.get(("scalarmix", "static"))
            line = (
                f"**Faithfulness ({label}, LAYA head).** α {a['faith']:.3f} against {others}"
                + (f"; ScalarMix's static weights {st['faith']:.3f}" if st else "")
                + ". "
            )
            line += (
                f"Deletion@1 of α: {a['d1']:.3f} ({a['d1_frac']:.0%} of the oracle {fi[('laya', 'oracle')]:.3f}; "
                f"random {fi[('laya', 'random_at_1')]:.3f})."
            )
            b.append(line)
    if len(f["alpha"].get("layers") or []) == 2 and (ff or jf):
        b.append(
            "**Two layers.** With L = 2 a row's Spearman ρ is +1, −1 or undefined, so faithfulness is the share "
            "of rows whose layer order matches the LOLO effects minus the share where it does not: a coarse "
            "score, and a perfect 1.000 only says every row's larger score went to the layer with the larger "
            "effect."
        )
    return b


def _setup_points(exp: Experiment, ctx: Ctx, f: dict) -> list[str]:
    """The set-up's choices: validation split, PyTorch vs Keras (or the controlled run), per-data notes."""
    s = exp.settings
    b: list[str] = []
    nb = f.get("notebook")
    if nb and nb.get("last") and nb.get("stratified"):
        b.append(
            f"**Validation split.** The notebook's run (LAYA, seed 1337): test accuracy "
            f"{nb['last']['test_acc']:.4f} with the last 10% held out (Keras' `validation_split`), "
            f"{nb['stratified']['test_acc']:.4f} with a seeded stratified draw (difference "
            f"{nb['last']['test_acc'] - nb['stratified']['test_acc']:+.4f}); the notebook reports "
            f"{P.NOTEBOOK_SEED1337:.4f}. One run per split cannot separate the split's effect from seed-to-seed "
            f"noise (the paper's LAYA std is {P.TABLE1['fmnist']['laya'][1]:.4f}), and seed 1337 here does not "
            "draw the notebook's initial weights."
        )
    elif s.get("val_mode") == "stratified":
        b.append(
            "**Validation split.** The runs here hold out a seeded stratified 10% of the training rows "
            "(`--val-mode stratified`), not the last 10% as the Keras notebook does: the CIFAR-10 image folders "
            "list the rows class by class, so their last 10% would be a single class (laya-inspect refuses that)."
        )
    else:
        b.append(
            "**Validation split.** Every run here holds out the *last* 10% of the training rows "
            "(`--val-mode last`), as the Keras notebook does (laya-inspect's default is a seeded stratified "
            "draw). Early stopping picks the epoch on this split, so which rows it holds changes the chosen epoch "
            "and the test accuracy"
            + (
                "; the Fashion-MNIST section of a full run compares both splits on the notebook's seed."
                if exp.name != "fmnist" or ctx.quick
                else "."
            )
        )
    ci = f.get("controls") or {}
    if ci:
        b.append(discuss_controls(ci, f["jstats"], P.TABLE1[P.PAPER_ROW[exp.name]], quick=ctx.quick))
    else:
        keras = (
            "Glorot-uniform input kernels, orthogonal recurrent kernels, zero biases but a forget-gate bias of 1"
            if exp.name == "bilstm"
            else "Glorot-uniform kernels, zero biases, LayerNorm ε = 1e-3 instead of PyTorch's 1e-5, exact GELU"
        )
        b.append(
            f"**PyTorch vs Keras.** The zoo models and heads follow Keras' choices ({keras}); the loss is "
            "cross-entropy on logits, not Keras' clipped probabilities. What switching the initialisation, "
            "LayerNorm ε, loss and validation draw changes is measured on Fashion-MNIST (the controlled run of "
            "a full run). Not varied anywhere: Adam's ε (PyTorch 1e-8, Keras 1e-7) and the random streams "
            "(initial weights, batch order) — so seed S here is not the paper's seed S."
        )
    if exp.name == "bilstm":
        b.append(
            "**Text as word ids.** `train --model zoo:bilstm` builds the vocabulary from the training texts "
            "(most frequent words, at most 20,000; 0 = padding, 1 = unknown) and pads/truncates every text at "
            "the front to 200 ids, as Keras' IMDB pipeline does; the vocabulary is stored in the checkpoint and "
            "`extract` reuses it, so the frozen and exported heads see the very ids the backbone trained on. "
            "The descriptions are a few words long, so most of each sequence is padding: the forward LSTM reads "
            "the words last, the backward one first and then the padding. Embedding 128, LSTMs 64 per "
            "direction, sequence length 200 are our choices (not given by the paper)."
        )
    if exp.name == "cifar":
        b.append(
            "**JPEG CIFAR-10.** The images are the JPEG (quality 75) re-encoding of CIFAR-10 (shared/data), not "
            "the original binaries: train and test are both JPEG, so the comparison is self-consistent, but JPEG "
            "removes high-frequency detail and may cost some accuracy against the paper's PNG-exact data; not "
            "measured here. Learning rate 1e-3 (within the paper's [3e-4, 1e-3]) is our choice for the short "
            "schedule; the paper does not give CIFAR-10's. The CNN's widths, kernels and strides are not in the "
            "paper either: ours are laya-inspect's `zoo:cnn`."
        )
    return b


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
        parts.append(
            f"`{variant}` {HEAD_LABEL[head]} {d['mean']:+.4f}"
            + (f" [{d['ci_low']:+.4f}, {d['ci_high']:+.4f}]" if has_ci else "")
        )
        if not has_ci:
            continue
        need = -(js[head]["acc"]["mean"] - ref[head][0])
        label = f"`{variant}` on {HEAD_LABEL[head]}"
        (open_ if d["ci_low"] <= need <= d["ci_high"] else ruled_out).append(label)
        if not d["ci_low"] <= 0 <= d["ci_high"]:
            effects.append(f"{label} ({d['mean']:+.4f})")
    gaps = ", ".join(f"{HEAD_LABEL[h]} {js[h]['acc']['mean'] - ref[h][0]:+.4f}" for h in ("last", "laya") if h in js)
    line = (
        "**Controlled run (PyTorch vs Keras, loss, validation split).** Paired change of test accuracy when one "
        "group of choices is switched (variant − main run, same seeds, 95% t-interval): "
        + "; ".join(parts)
        + f". Closing the offsets of the main runs ({gaps}) takes a change of minus that much. "
    )
    if ruled_out:
        line += "Ruled out as the whole cause (the interval excludes the change needed): " + ", ".join(ruled_out) + ". "
    if open_:
        line += (
            "Not ruled out (the interval still reaches the change needed; more seeds would tell): "
            + ", ".join(open_)
            + ". "
        )
    line += (
        "Effects distinguishable from zero: " + ", ".join(effects) + ". "
        if effects
        else "No switch has an effect distinguishable from zero. "
    )
    line += (
        "Not varied: Adam's ε (PyTorch 1e-8, Keras 1e-7) and the random streams (initial weights, batch "
        "order), so seed S here is not the paper's seed S."
    )
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
        line = (
            f"**α over depth.** The three layers with the most mean α: {top3}; the last layer (`{names[-1]}`) gets "
            f"{fa[-1]:.3f} (uniform would be {1 / len(fa):.3f})."
        )
        if exp.name == "mobilenet":
            line += (
                f" Paper, {P.VIT_PROFILE}: on its frozen ViT, LAYA drew on intermediate blocks and left the last "
                f"one nearly unused; here the last block's share is {fa[-1]:.3f} "
                f"({'also nearly unused' if fa[-1] < 0.5 / len(fa) else 'not unused'})."
            )
        b.append(line)
    if ("laya", "alpha") in fi:
        a = fi[("laya", "alpha")]
        d1 = {
            m: fi[(k, m)]["d1"] for (k, m) in fi if isinstance(m, str) and k == "laya" and isinstance(fi[(k, m)], dict)
        }
        best = max(d1, key=d1.get) if d1 else None
        line = (
            f"**Deletion@1.** α {a['d1']:.3f} ({a['d1_frac']:.0%} of the oracle {fi[('laya', 'oracle')]:.3f}, "
            f"random {fi[('laya', 'random_at_1')]:.3f}); on the LAYA head the best method is `{best}`"
            f" ({d1[best]:.3f})."
        )
        b.append(line)
        b.append(
            f"**Faithfulness.** α {a['faith']:.3f}; "
            + ", ".join(
                f"`{m}` {fi[('laya', m)]['faith']:.3f}" for m in ("ig", "gradcam", "random") if ("laya", m) in fi
            )
            + "."
        )
    if exp.name == "text":
        b.append(
            "**Pooling.** Each layer is the masked mean over the text's tokens (`--pool mean`), as "
            "all-MiniLM-L6-v2 was trained for sentence embeddings; `--pool auto` would take the `[CLS]` position, "
            "which this model was not trained to summarise a text in."
        )
    return [f"- {x}" for x in b]
