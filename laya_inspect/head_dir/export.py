"""export-head: the head `laya-inspect train` stored in a zoo checkpoint, written as a head directory
bound to the cache extracted from that same checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..cache.store import FeatureStore
from ..errors import InputError, UnsafeCheckpointError, suggest
from ..files import write_json
from ..heads import HEADS, Head
from ..out_dir import atomic_dir, check_out, with_run_notes
from .checks import build
from .folder import target_dir, write_head_files
from .match import cache_identity


def head_from_checkpoint(obj: dict[str, Any], *, source: str = "this zoo checkpoint") -> Head:
    """The jointly trained head stored in a zoo checkpoint (read with ``torch.load(weights_only=True)``)."""
    spec = obj.get("head") if isinstance(obj, dict) else None
    if not isinstance(spec, dict) or "kind" not in spec:
        raise InputError(f"{source} holds no head; it was not written by `laya-inspect train`")

    def fail(problem: str) -> InputError:
        return InputError(f"the head stored in {source} {problem}; train it again with `laya-inspect train`")

    kind, kwargs = spec["kind"], spec.get("config")
    if not isinstance(kind, str) or kind not in HEADS:
        raise fail(f"names an unknown head kind {kind!r} ({suggest(str(kind), HEADS.names())})")
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise fail("has no constructor arguments (config)")
    return build(kind, kwargs, spec.get("state_dict"), fail)


def _check_same_weights(checkpoint: str | Path, store: FeatureStore) -> None:
    """The cache must come from this very file: same layer names are not enough (another checkpoint
    of the same architecture has them too, and its features mean something else)."""
    from ..models.weights import sha256_file

    recorded = store.attrs.get("weights_sha256") or None
    actual = sha256_file(checkpoint)
    if recorded == actual:
        return
    spec, data = store.attrs.get("model_spec") or "zoo:<arch>", store.attrs.get("data_spec") or "<data>"
    fix = f"extract a cache from it: laya-inspect extract --model {spec} --weights {checkpoint} --data {data}"
    if recorded is None:
        raise InputError(
            f"{store.path} records no weights hash (it was extracted without --weights), so it is not a cache "
            f"of {checkpoint} (sha256 {actual}); {fix}"
        )
    raise InputError(
        f"{store.path} was extracted from weights with sha256 {recorded} "
        f"({store.attrs.get('weights_path') or 'path not recorded'}), but {checkpoint} has sha256 {actual}: "
        f"the head would read another network's features; {fix}"
    )


def export_head(
    checkpoint: str | Path, store: FeatureStore, out_dir: str | Path, *, split: str = "test", force: bool = False
) -> dict[str, Any]:
    """Write the jointly trained head of a `train` checkpoint as a head directory bound to ``store``.

    ``store`` must be the cache `extract` wrote from that same checkpoint (its ``weights_sha256`` is
    the checkpoint file's sha256, and its layers are the head's); the head's accuracy on the cache's
    ``split`` is returned beside the accuracy `train` measured (same rows and features give the same
    number), so `compare` can score the jointly trained α — the paper's setting. A non-empty
    ``out_dir`` is refused unless ``force``, which replaces it whole.
    """
    from ..models.weights import read_checkpoint

    target_dir(out_dir)  # a folder with a name of its own; the messages name --out as it was typed
    check_out(out_dir, force=force, command="export-head", inputs=[checkpoint, store.path])
    try:
        ckpt = read_checkpoint(checkpoint)
    except UnsafeCheckpointError:
        raise InputError(
            f"{checkpoint} is a pickled model, not a checkpoint written by `laya-inspect train`; export-head reads "
            "checkpoints weights-only and never runs code from them"
        ) from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != "laya-inspect-zoo":
        raise InputError(f"{checkpoint} is not a checkpoint written by `laya-inspect train`")
    head = head_from_checkpoint(ckpt, source=str(checkpoint))
    _check_same_weights(checkpoint, store)
    if list(ckpt["head"].get("layer_names", [])) != list(store.layer_names):
        raise InputError(
            f"the head in {checkpoint} reads {ckpt['head'].get('layer_names')}, "
            f"but {store.path} holds {store.layer_names}; extract those layers from that checkpoint"
        )
    metrics = {k: v for k, v in (ckpt.get("metrics") or {}).items() if k != "history"}
    meta = {
        **cache_identity(store),
        "seed": ckpt.get("seed"),
        "checkpoint": str(checkpoint),
        "source": "jointly trained head exported from a laya-inspect zoo checkpoint",
        "metrics": metrics,
    }
    hs = [torch.from_numpy(np.ascontiguousarray(x)) for x in store.layers(split)]
    labels = store.labels(split)
    with torch.no_grad():
        out = head(hs)
    training = ckpt.get("training")
    training = training if isinstance(training, dict) else {}
    tested = split == training.get("test_split", "test")  # train's test accuracy is of its test split only
    summary: dict[str, Any] = {
        "checkpoint": str(checkpoint),
        "cache": str(store.path),
        "kind": head.kind,
        "split": split,
        "n": int(len(labels)),
        "accuracy_on_cache": float((out.logits.argmax(1).numpy() == labels).mean()),
        "joint_test_acc": metrics.get("test_acc") if tested else None,
        "mean_weights_on_cache": None if out.weights is None else out.weights.mean(0).tolist(),
        "warnings": _other_rows(metrics, training, len(labels), split, store.path) if tested else [],
    }
    with atomic_dir(out_dir, force=force, command="export-head", inputs=[checkpoint, store.path]) as tmp:
        summary = with_run_notes(summary, tmp)  # what the cleanup before it kept, as fit-head's summary says it
        write_head_files(tmp, head, meta, {"export.json": lambda p: write_json(p, summary)})
    return summary


def _other_rows(metrics: dict[str, Any], training: dict[str, Any], n: int, split: str, cache: Path) -> list[str]:
    """A warning where the cache holds another number of test rows than train measured on (extract
    without train's --limit): the two accuracies then differ by their rows, not by the head."""
    n_test = metrics.get("n_test")
    if not isinstance(n_test, int) or n_test == n:
        return []
    limit = training.get("limit")
    same = f"extract with train's --limit {limit}" if limit is not None else "extract without --limit"
    return [
        f"{cache} holds {n} rows of split {split!r}, but train measured its test accuracy on {n_test}: the two "
        f"accuracies are of other rows, not of another head ({same} to read the same rows)"
    ]
