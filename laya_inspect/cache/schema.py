"""The cache's schema in one place: its version, chunking, layer dataset names and how attributes
are stored (JSON text for lists and dicts, "" for None), read by the writer, the shards and the store."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

SCHEMA_VERSION = 1
JSON_ATTRS = (
    "layer_names",
    "layer_types",
    "layer_pooling",
    "layer_shapes",
    "layer_roles",
    "transforms",
    "split_info",
    "class_names",
    "command",
)
# What defines the feature space a head is trained in; split sizes and limits are left out on purpose.
FINGERPRINT_KEYS = (
    "model_spec",
    "weights_sha256",
    "layer_names",
    "layer_pooling",
    "transforms",
    "data_spec",
    "class_names",
)
CHUNK_ROWS = 1024


def encode_attr(key: str, value: Any) -> Any:
    if key in JSON_ATTRS or isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    if value is None:
        return ""
    if isinstance(value, str):
        return str(value)  # plain str: h5py cannot store str subclasses such as torch's TorchVersion
    return value


def decode_attr(key: str, value: Any) -> Any:
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str) and value[:1] in "[{" and value[-1:] in "]}":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def layer_key(i: int) -> str:
    return f"layer_{i:03d}"
