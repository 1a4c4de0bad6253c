"""Helpers the tests share: a cache written straight from arrays, a head fitted in a second, a LAYA head
worked out on paper, and a plain reference implementation of the leave-one-layer-out effects."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from laya_inspect.compare.lolo import _np, _prepare
from laya_inspect.heads import Head

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def write_cache(
    path: Path,
    splits: dict[str, tuple[list[np.ndarray], np.ndarray]],
    *,
    class_names: list[str] | None = None,
    layer_names: list[str] | None = None,
    model_spec: str = "test:mlp",
    data_spec: str = "test",
    extra_attrs: dict[str, Any] | None = None,
    indices: dict[str, np.ndarray] | None = None,
    overwrite: bool = False,
    allow_nonfinite: bool = False,
) -> Path:
    """Write a complete schema-1 cache straight from arrays (for tests of the later stages)."""
    from laya_inspect.cache.writer import FeatureWriter

    first = next(iter(splits.values()))[0]
    names = layer_names or [f"blocks.{i}" for i in range(len(first))]
    n_classes = int(max(int(y.max()) for _, y in splits.values())) + 1
    attrs = {
        "model_spec": model_spec,
        "model_source": "test",
        "weights_sha256": None,
        "layer_names": names,
        "layer_types": ["Sequential"] * len(names),
        "layer_pooling": ["none"] * len(names),
        "layer_shapes": [[f.shape[1]] for f in first],
        "layer_roles": {},
        "data_spec": data_spec,
        "transforms": {},
        "split_info": {},
        "class_names": class_names or [str(i) for i in range(n_classes)],
        "seed": 0,
        "torch_version": torch.__version__,
        "created_at": "test",
        "command": {"test": True},
        **(extra_attrs or {}),
    }
    with FeatureWriter(
        path,
        attrs=attrs,
        split_sizes={s: len(y) for s, (_, y) in splits.items()},
        widths=[f.shape[1] for f in first],
        num_logits=None,
        overwrite=overwrite,
        allow_nonfinite=allow_nonfinite,
    ) as w:
        for split, (feats, labels) in splits.items():
            w.append(split, feats, labels, (indices or {}).get(split, np.arange(len(labels))))
        w.finish()
    return path


def extract_args(weights: Path, out: Path, *extra: str) -> list[str]:
    """`extract` of the digits through the zoo MLP checkpoint ``weights`` into ``out``, on the CPU."""
    return ["extract", "--model", "zoo:mlp", "--weights", str(weights), "--data", "digits", "--out", str(out),
            "--device", "cpu", *extra]  # fmt: skip


def fit_quickly(
    kind: str, store, steps: int = 30, *, seed: int = 0, d_star: int = 16, tau: float = 1.0, labels=None
) -> Head:
    """A tiny full-batch Adam loop on the cache's train split (or on ``labels`` in its place, permuted
    ones for a head near chance): a head that beats chance in about a second."""
    from laya_inspect.heads import build_head

    torch.manual_seed(seed)
    head = build_head(kind, store.widths, store.num_classes, d_star=d_star, tau=tau)
    hs = [torch.from_numpy(h) for h in store.layers("train")]
    y = torch.from_numpy(store.labels("train") if labels is None else labels)
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(head(hs).logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return head.eval()


def paper_laya():
    """A LAYA head worked out on paper: two 1-D layers, z_i = h_i, α = softmax([ln 3, 0]) = [3/4, 1/4] for
    every input, logits = [a, −a] with a = ¾h₁ + ¼h₂, so p_0 = σ(2a) and p_1 = σ(−2a)."""
    import math

    from laya_inspect.heads import LayaHead

    head = LayaHead([1, 1], 2, d_star=1, tau=1.0, score_width=2)
    with torch.no_grad():
        for p in head.parameters():
            p.zero_()
        for g in head.adapters:
            g.weight.fill_(1.0)
        head.scorer[2].bias.copy_(torch.tensor([math.log(3.0), 0.0]))
        head.classifier.weight.copy_(torch.tensor([[1.0], [-1.0]]))
    return head.double().eval()


def lolo_effects_loop(
    head: Head, hs: Sequence[Tensor], target, ablation: str = "mean", baselines: Sequence | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plain reference for :func:`lolo_effects`: one forward pass per ablated layer, no stacking."""
    abl, hs, target, base = _prepare(head, hs, target, ablation, baselines)
    rows = torch.arange(len(target), device=target.device)
    with torch.no_grad():
        p = torch.softmax(head(hs).logits, -1)[rows, target]
        cols = []
        for i in range(len(hs)):
            if abl.name == "drop":
                keep = torch.ones(len(target), len(hs), dtype=hs[0].dtype, device=hs[0].device)
                keep[:, i] = 0
                out = head(hs, keep=keep)
            else:
                changed = list(hs)
                changed[i] = (base[i] if abl.name == "mean" else torch.zeros_like(hs[i][0])).expand_as(hs[i])
                out = head(changed)
            cols.append(torch.softmax(out.logits, -1)[rows, target])
    p_np, pa_np = _np(p), _np(torch.stack(cols, dim=1))
    return p_np, pa_np, p_np[:, None] - pa_np


def need_timm_model(name: str) -> Any:
    """timm, or a skip where it is missing or lacks one of its tiny test models (timm 1.0.3, our floor,
    has none)."""
    import pytest

    timm = pytest.importorskip("timm")
    if not timm.is_model(name):
        pytest.skip(f"timm {timm.__version__} has no {name!r} model")
    return timm


def resplit(store, seed: int) -> tuple[dict, dict]:
    """The cache's rows of every split pooled and split again at the same sizes with ``seed`` (as
    extract with another split --seed does): (splits, their source indices)."""
    feats = [np.concatenate([store.layer(s, i) for s in store.splits]) for i in range(len(store.layer_names))]
    labels = np.concatenate([store.labels(s) for s in store.splits])
    order = np.arange(len(labels)) if seed == 0 else np.random.default_rng(seed).permutation(len(labels))
    out, where, start = {}, {}, 0
    for s in store.splits:
        rows = order[start : start + len(store.labels(s))]
        start += len(rows)
        out[s], where[s] = ([f[rows] for f in feats], labels[rows]), rows
    return out, where


def other_rows_caches(src: Path, folder: Path) -> tuple[Path, Path, Path]:
    """Three caches of ``src``'s features: its rows (a.h5), the same rows split again with another seed
    (b.h5: the same fingerprint, other rows), and a.h5's splits written in the reverse order (c.h5)."""
    from laya_inspect.cache.store import FeatureStore

    with FeatureStore(src) as store:
        (splits, rows), (moved, moved_rows) = resplit(store, 0), resplit(store, 1)
    first = write_cache(folder / "a.h5", splits, indices=rows)
    other = write_cache(folder / "b.h5", moved, indices=moved_rows)
    return first, other, write_cache(folder / "c.h5", dict(reversed(splits.items())), indices=rows)


def drawn_figures(monkeypatch) -> dict[str, Any]:
    """The matplotlib Figures laya_inspect.beyond.plots saves, by file stem, as they are drawn (the PNG
    files are still written): what a test reads the plotted lines and labels from."""
    from laya_inspect.beyond import plots

    figures: dict[str, Any] = {}
    save = plots._save

    def keep(fig, path):
        figures[Path(path).stem] = fig
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    return figures


def legend_entry(ax, label: str):
    """The artist ``ax`` drew under legend label ``label`` (a Line2D, or an errorbar's data line), or None."""
    for container in ax.containers:
        if container.get_label() == label:
            return container.lines[0]
    return next((line for line in ax.get_lines() if line.get_label() == label), None)


def class_blob_cache(path: Path, y_train: np.ndarray, y_test: np.ndarray, seed: int = 0) -> Path:
    """A two-layer cache whose rows sit near their class's corner (one-hot × 3 plus unit noise; the
    second layer its tanh): a few rows that any head separates, for label-layout tests (a class only in
    the test split, a class whose one training row goes to validation)."""
    rng = np.random.default_rng(seed)
    classes = int(max(y_train.max(), y_test.max())) + 1

    def feats(y: np.ndarray) -> list[np.ndarray]:
        a = (np.eye(classes)[y] * 3 + rng.normal(size=(len(y), classes))).astype(np.float32)
        return [a, np.tanh(a)]

    return write_cache(path, {"train": (feats(y_train), y_train), "test": (feats(y_test), y_test)})


def record_forked(monkeypatch: Any, module: Any) -> list[Any]:
    """Every result ``module``'s calls to ``run_forked`` hand back to the parent, in order (the real
    ``run_forked`` still runs)."""
    received: list[Any] = []
    real = module.run_forked

    def recorded(items: Any, work: Any, workers: int, emit: Any) -> Any:
        out = real(items, work, workers, emit)
        received.extend(out)
        return out

    monkeypatch.setattr(module, "run_forked", recorded)
    return received


def tiny_bert(d: Path, vocab: Sequence[str], layers: int = 1, **config: Any) -> tuple[Any, Any]:
    """A small random BERT encoder (hidden 16, 2 heads) and its word-piece tokenizer over ``vocab``, saved
    as one Hugging Face folder at ``d / "model"`` (``hf:`` takes it); seeded, so every run builds the same."""
    import transformers

    (d / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(d))
    settings = dict(hidden_size=16, num_hidden_layers=layers, num_attention_heads=2, intermediate_size=32) | config
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(vocab_size=len(vocab), **settings)).eval()
    model.save_pretrained(d / "model")
    tokenizer.save_pretrained(d / "model")
    return model, tokenizer


def settings_said(output: str) -> str:
    """The settings line a command printed (its continuation lines joined), spaces normalised."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("settings"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return " ".join(" ".join(lines[start:end]).split())


def settings_given(output: str) -> list[str]:
    """The settings a printed settings line names as given, in its order."""
    return settings_said(output).removeprefix("settings given: ").split("; left at their defaults: ")[0].split(" · ")


def page_said(page: Path) -> str:
    """report.html's text, entities undone and spaces normalised: what a reader sees, to look a line up in."""
    import html

    return " ".join(html.unescape(page.read_text()).split())


def noted_under_verdicts(output: str, out: Path, reading: Any, report: str) -> None:
    """The sentence of report.html's reading (``reading`` of ``out``'s summary.json) that starts "α here"
    is a note the command printed (``output``) under every verdict line, and `report DIR` (``report``) again."""
    import json

    said = " ".join(output.split())
    s = json.loads((out / "summary.json").read_text())
    (note,) = [line for line in reading(s).lead if line.startswith("α here")]
    at = said.index("• note: " + note)
    assert s["verdict"] and all(said.index(v) < at for v in s["verdict"])
    assert "• note: " + note in " ".join(report.split()), report


class HookWatch:
    """The forward hooks and pre-hooks registered on any module inside :func:`watch_hooks`, each counting
    its calls: a hook left on a module fires on that module's next forward pass."""

    def __init__(self) -> None:
        self.registered = 0
        self.calls = 0

    def fired_after(self, module: torch.nn.Module, *inputs: Any) -> int:
        """How many of the watched hooks fire on one more forward pass of ``module``: 0 once all are removed."""
        before = self.calls
        with torch.no_grad():
            module(*inputs)
        return self.calls - before


@contextmanager
def watch_hooks() -> Iterator[HookWatch]:
    """Count the forward hooks registered inside the block and their calls from then on, through the
    public ``register_forward_hook`` and ``register_forward_pre_hook``. Each hook runs inside a counting
    wrapper, one frame more between the module's call and the hook: not for a test of where an error
    raised in a hook is said to come from."""
    import pytest

    watch = HookWatch()

    def counted(register: Any) -> Any:
        def wrapped(module: torch.nn.Module, hook: Any, *args: Any, **kwargs: Any) -> Any:
            def counting(*hook_args: Any, **hook_kwargs: Any) -> Any:
                watch.calls += 1
                return hook(*hook_args, **hook_kwargs)

            handle = register(module, counting, *args, **kwargs)
            watch.registered += 1
            return handle

        return wrapped

    with pytest.MonkeyPatch.context() as patch:
        for name in ("register_forward_hook", "register_forward_pre_hook"):
            patch.setattr(torch.nn.Module, name, counted(getattr(torch.nn.Module, name)))
        yield watch


def digits_test_config(model: str, out: Path) -> Any:
    """An extraction of digits' test split through ``model`` (random weights: the code is what is tested)
    into ``out``, in batches of 16, on the CPU."""
    from laya_inspect import ExtractConfig

    return ExtractConfig(
        model=model, random_init=True, data="digits", out=str(out), splits=("test",), batch_size=16, device="cpu"
    )


def stopped_after_first_batch(config: Any) -> None:
    """Run extract with ``config`` and stop it after its first batch, as Ctrl-C would: its rows stay on disk."""
    import pytest

    from laya_inspect import extract_features
    from laya_inspect.cache.partial import rows_on_disk

    def stop(event):
        if event.get("event") == "batch":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        extract_features(config, progress=stop)
    assert not Path(config.out).exists() and (rows_on_disk(config.out) or {}).get("test")


def figures_saved_by(tmp_path: Path, monkeypatch: Any, module: Any, attr: str) -> Path:
    """A folder that gets one file per figure ``module.attr`` saves, named "PID-stem" by the process that
    saved it (a forked worker's memory does not come back to the parent; its files do)."""
    import os

    pids = tmp_path / "pids"
    pids.mkdir()
    real = getattr(module, attr)

    def save(fig: Any, stem: Any, *args: Any, **kwargs: Any) -> Any:
        (pids / f"{os.getpid()}-{Path(stem).name}").touch()
        return real(fig, stem, *args, **kwargs)

    monkeypatch.setattr(module, attr, save)
    return pids
