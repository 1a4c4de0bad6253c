"""A trained head is a directory: config.json (constructor arguments, layer names, the fingerprint of
the cache and backbone it was trained on), weights.pt (a plain state_dict, loaded weights-only), and
whatever the trainer adds beside them (metrics.json, train_log.csv)."""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import torch

from . import __version__
from .errors import CacheError, NotFoundError
from .heads import HEADS, Head

HEAD_SCHEMA_VERSION = 1


def cache_identity(store: Any) -> dict[str, Any]:
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
    config = {"schema_version": HEAD_SCHEMA_VERSION, "tool_version": __version__, "kind": head.kind,
              "kwargs": head.config(), **meta}
    (out / "config.json").write_text(json.dumps(config, indent=2, default=str))
    torch.save(head.state_dict(), out / "weights.pt")
    return out


def read_head_config(head_dir: str | Path) -> dict[str, Any]:
    path = Path(head_dir) / "config.json"
    if not path.exists():
        raise NotFoundError(f"{head_dir} is not a head directory (no config.json); create one with `laya-inspect fit-head`")
    config = json.loads(path.read_text())
    if config.get("schema_version") != HEAD_SCHEMA_VERSION:
        raise CacheError(f"{path} has schema_version {config.get('schema_version')!r}; expected {HEAD_SCHEMA_VERSION}")
    return config


def load_head(head_dir: str | Path, *, store: Any = None, force: bool = False,
              map_location: str | torch.device = "cpu") -> tuple[Head, dict[str, Any]]:
    """Rebuild a head; with ``store``, refuse one trained on another cache's feature space."""
    config = read_head_config(head_dir)
    if store is not None and config.get("cache_fingerprint") != store.fingerprint:
        msg = (f"head {head_dir} was trained on a cache with fingerprint {config.get('cache_fingerprint')} "
               f"({config.get('cache_path')}), not on {store.path} (fingerprint {store.fingerprint}): "
               "different backbone, layers, pooling, transforms or data")
        if not force:
            raise CacheError(msg + "; pass --force to use it anyway")
        warnings.warn(msg, stacklevel=2)
    head = HEADS.get(config["kind"])(**config["kwargs"])
    state = torch.load(Path(head_dir) / "weights.pt", map_location=map_location, weights_only=True)
    head.load_state_dict(state)
    head.eval()
    return head, config
