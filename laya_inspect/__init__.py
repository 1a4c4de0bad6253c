"""laya-inspect: which layers of a frozen network does each prediction rely on?

checkpoint → extract (HDF5 cache of every chosen layer) → fit-head (LAYA + baselines) → compare
(α vs Integrated Gradients, Grad-CAM, static weights, scored against leave-one-layer-out effects).
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# Re-exported lazily, so `import laya_inspect` stays cheap (no captum or matplotlib until used).
_EXPORTS = {
    "LayaHead": "heads", "LastLayerHead": "heads", "ConcatHead": "heads", "ScalarMixHead": "heads",
    "HEADS": "heads", "FeatureStore": "store", "load_head": "headio", "LayaError": "errors",
    "load_model": "models", "load_data": "data",
    "ExtractConfig": "extract", "extract": "extract",
    "FitConfig": "train", "fit_heads": "train",
    "CompareConfig": "compare", "compare": "compare",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'laya_inspect' has no attribute {name!r}")
