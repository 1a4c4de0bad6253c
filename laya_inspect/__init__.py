"""laya-inspect: which layers of a frozen network does each prediction rely on?

checkpoint → :func:`extract_features` (HDF5 cache of every chosen layer, :class:`FeatureStore`) →
:func:`fit_heads` (LAYA and the baseline heads over seeds; :func:`train_joint` trains a zoo backbone
with its head end to end) → :func:`compare_heads` (α beside Integrated Gradients, Grad-CAM, static
weights and random, scored against leave-one-layer-out effects). Definitions: docs/METHOD.md.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Re-exported lazily, so `import laya_inspect` stays cheap (no torch, captum or matplotlib until used).
# No name here equals a submodule's, so `from laya_inspect import X` always gives the object.
_EXPORTS = {
    "LayaHead": "heads",
    "LastLayerHead": "heads",
    "ConcatHead": "heads",
    "ScalarMixHead": "heads",
    "HEADS": "heads",
    "build_head": "heads",
    "FeatureStore": "cache.store",
    "load_head": "head_dir",
    "save_head": "head_dir",
    "export_head": "head_dir",
    "LayaError": "errors",
    "load_model": "models",
    "load_data": "data",
    "ExtractConfig": "cache.extract",
    "extract_features": "cache.extract",
    "FitConfig": "training.fit_head",
    "fit_heads": "training.fit_head",
    "JointConfig": "training.joint",
    "train_joint": "training.joint",
    "CompareConfig": "compare.run",
    "compare_heads": "compare.run",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'laya_inspect' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
