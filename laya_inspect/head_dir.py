"""A trained head is a directory: config.json (constructor arguments, layer names, the fingerprint of
the cache and backbone it was trained on), weights.pt (a plain state_dict, loaded weights-only), and
whatever the trainer adds beside them (metrics.json, train_log.csv).

Saving, loading and checking head directories, and :func:`export_head`, which turns the head that
`laya-inspect train` stored in a zoo checkpoint into such a directory."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import __version__
from .errors import CacheError, InputError, NotFoundError
from .files import write_json, write_text, write_with
from .heads import HEADS, Head
from .store import FeatureStore

HEAD_SCHEMA_VERSION = 1


def cache_identity(store: FeatureStore) -> dict[str, Any]:
    """What a head records about the cache it was trained on."""
    return {
        "cache_fingerprint": store.fingerprint,
        "cache_path": str(store.path),
        "layer_names": store.layer_names,
        "class_names": store.class_names,
        "backbone": {"model_spec": store.attrs.get("model_spec"), "weights_sha256": store.attrs.get("weights_sha256")},
    }


def save_head(out_dir: str | Path, head: Head, *, meta: dict[str, Any]) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = {
        "schema_version": HEAD_SCHEMA_VERSION,
        "tool_version": __version__,
        "kind": head.kind,
        "kwargs": head.config(),
        **meta,
    }
    write_text(out / "config.json", json.dumps(config, indent=2, default=str))
    write_with(out / "weights.pt", lambda tmp: torch.save(head.state_dict(), tmp))
    return out


def read_head_config(head_dir: str | Path) -> dict[str, Any]:
    path = Path(head_dir) / "config.json"
    if not path.exists():
        raise NotFoundError(
            f"{head_dir} is not a head directory (no config.json); create one with `laya-inspect fit-head`"
        )
    config = json.loads(path.read_text())
    if config.get("schema_version") != HEAD_SCHEMA_VERSION:
        raise CacheError(f"{path} has schema_version {config.get('schema_version')!r}; expected {HEAD_SCHEMA_VERSION}")
    return config


def load_head(
    head_dir: str | Path,
    *,
    store: FeatureStore | None = None,
    force: bool = False,
    map_location: str | torch.device = "cpu",
) -> tuple[Head, dict[str, Any]]:
    """Rebuild a head; with ``store``, refuse one trained on another cache's feature space."""
    config = read_head_config(head_dir)
    if store is not None and config.get("cache_fingerprint") != store.fingerprint:
        msg = (
            f"head {head_dir} was trained on a cache with fingerprint {config.get('cache_fingerprint')} "
            f"({config.get('cache_path')}), not on {store.path} (fingerprint {store.fingerprint}): "
            "different backbone, layers, pooling, transforms or data"
        )
        if not force:
            raise CacheError(msg + "; pass --force to use it anyway")
        warnings.warn(msg, stacklevel=2)
    head = HEADS.get(config["kind"])(**config["kwargs"])
    state = torch.load(Path(head_dir) / "weights.pt", map_location=map_location, weights_only=True)
    head.load_state_dict(state)
    head.eval()
    return head, config


def head_from_checkpoint(obj: dict[str, Any]) -> Head:
    """The jointly trained head stored in a zoo checkpoint (read with ``torch.load(weights_only=True)``)."""
    spec = obj.get("head")
    if not isinstance(spec, dict) or "kind" not in spec:
        raise InputError("this zoo checkpoint holds no head; it was not written by `laya-inspect train`")
    head = HEADS.get(spec["kind"])(**spec["config"])
    head.load_state_dict(spec["state_dict"])
    return head.eval()


def export_head(
    checkpoint: str | Path, store: FeatureStore, out_dir: str | Path, *, split: str = "test"
) -> dict[str, Any]:
    """Write the jointly trained head of a `train` checkpoint as a head directory bound to ``store``.

    ``store`` must be the cache `extract` wrote from that same checkpoint: the head's layers must be
    the cache's, and the head's accuracy on the cache's ``split`` is returned beside the accuracy
    `train` measured (same rows and features give the same number), so `compare` can score the
    jointly trained α — the paper's setting.
    """
    from .models.weights import read_checkpoint

    ckpt = read_checkpoint(checkpoint)
    if not isinstance(ckpt, dict) or ckpt.get("format") != "laya-inspect-zoo":
        raise InputError(f"{checkpoint} is not a checkpoint written by `laya-inspect train`")
    head = head_from_checkpoint(ckpt)
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
    save_head(out_dir, head, meta=meta)
    hs = [torch.from_numpy(np.ascontiguousarray(x)) for x in store.layers(split)]
    labels = store.labels(split)
    with torch.no_grad():
        out = head(hs)
    summary = {
        "checkpoint": str(checkpoint),
        "cache": str(store.path),
        "kind": head.kind,
        "split": split,
        "n": int(len(labels)),
        "accuracy_on_cache": float((out.logits.argmax(1).numpy() == labels).mean()),
        "joint_test_acc": metrics.get("test_acc"),
        "mean_weights_on_cache": None if out.weights is None else out.weights.mean(0).tolist(),
    }
    write_json(Path(out_dir, "export.json"), summary)
    return summary
