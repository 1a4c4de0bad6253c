"""Plain values for JSON files and weights-only checkpoints."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np


def plain(v: Any) -> Any:
    """dicts (keys as str), lists, str, int, float, bool, None only: numpy arrays and scalars become
    Python values, tuples lists, paths str, and NaN/±inf None (JSON has no such numbers)."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return plain(v.tolist())
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, Path):
        return str(v)
    return v
