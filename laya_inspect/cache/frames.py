"""pandas views of a cache and of a comparison, for notebook users (``FeatureStore.to_pandas``,
``CompareResult.to_pandas``). pandas is optional: ``pip install pandas`` (or the ``notebook`` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError, name_of
from .writer import numbering_warning

if TYPE_CHECKING:
    import pandas as pd

    from ..compare.run import CompareResult
    from .store import FeatureStore


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise InputError("to_pandas needs pandas: pip install pandas (or laya-inspect[notebook])") from None
    return pandas


def store_frame(
    store: FeatureStore, split: str, *, features: bool = False, layers: Sequence[int | str] | None = None
) -> pd.DataFrame:
    """One row per sample of ``split``: its position, source index, label and class name, the
    backbone's logits' argmax when cached (``model_pred``, in the model's class numbering: where that is
    not the data's, by extract's rule, a warning is raised and kept in ``frame.attrs["warnings"]``), and
    with ``features=True`` one column per feature of each layer, named ``LAYER[i]`` (all layers, or
    ``layers``)."""
    pd = _pandas()
    if split not in store.splits:
        raise InputError(f"no split {split!r} in {store.path}; it has {', '.join(store.splits)}")
    labels = store.labels(split)
    names = store.class_names
    data: dict[str, Any] = {
        "split": split,
        "row": np.arange(len(labels)),
        "index": store.index(split),
        "label": labels,
        "class": [name_of(names, y) for y in labels],
    }
    logits = store.logits(split)
    said: list[str] = []
    if logits is not None:
        data["model_pred"] = pred = logits.argmax(axis=1)
        # extract's own rule: model_pred beside label invites `label == model_pred`, which is garbage where
        # the logits count the model's classes, not the data's
        said = numbering_warning(logits.shape[1], names or [], [int((pred == labels).sum()), len(labels)])
    frame = pd.DataFrame(data)
    if said:
        import warnings

        warnings.warn(f"{store.path} {split}: model_pred: {said[0]}", stacklevel=3)
        frame.attrs["warnings"] = said
    if features:
        wanted = [store.layer_index(x) for x in layers] if layers is not None else range(len(store.layer_names))
        blocks = []
        for i in wanted:
            x = store.layer(split, i)
            cols = [f"{store.layer_names[i]}[{j}]" for j in range(x.shape[1])]
            blocks.append(pd.DataFrame(x, columns=cols))
        frame = pd.concat([frame, *blocks], axis=1)
    return frame


def compare_frame(result: CompareResult) -> pd.DataFrame:
    """Per-sample scores in long form: one row per (head, ablation, sample, layer) with the sample's
    target and prediction, the layer's effect under that ablation (p − p with the layer removed) and
    every method's score of the layer (columns named after the methods; NaN where a method was skipped)."""
    pd = _pandas()
    frames = []
    for h in result.heads:
        layers = list(result.summary.get("cache", {}).get("layer_names") or [])
        for ablation, m in h.measured.items():
            n, num_layers = m.effects.shape
            names = layers if len(layers) == num_layers else [str(i) for i in range(num_layers)]
            data: dict[str, Any] = {
                "head": h.name,
                "ablation": ablation,
                "row": np.repeat(np.arange(n), num_layers),
                "layer": np.tile(np.asarray(names, dtype=object), n),
                "target": np.repeat(h.targets, num_layers),
                "pred": np.repeat(h.preds, num_layers),
                "p": np.repeat(m.p, num_layers),
                "effect": m.effects.reshape(-1),
            }
            for method, scores in h.scores.items():
                data[method] = np.asarray(scores, dtype=float).reshape(-1)
            frames.append(pd.DataFrame(data))
    if not frames:
        raise InputError("this comparison holds no per-sample scores")
    return pd.concat(frames, ignore_index=True)
