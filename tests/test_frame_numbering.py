"""FeatureStore.to_pandas put `model_pred` (the model's class numbering) beside `label` (the data's)
with no word: QA's own 4-class convnet on a 5-class folder gave `(label == model_pred).mean()` 0.307,
a backbone accuracy computed from garbage. extract warned; the frame now warns too, by extract's rule."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from test_rows_in_train import MODEL

from laya_inspect import ExtractConfig, extract_features
from laya_inspect.cache.store import FeatureStore

pytest.importorskip("pandas")


def _cache(tmp_path: Path, model: str, data: str) -> Path:
    (tmp_path / "frames_net.py").write_text(model)
    out = tmp_path / "c.h5"
    spec = f"python:{tmp_path / 'frames_net.py'}:make"
    extract_features(ExtractConfig(model=spec, random_init=True, data=data, out=str(out), limit=60, device="cpu"))
    return out


def test_model_pred_in_another_numbering_than_the_labels_warns(tmp_path: Path) -> None:
    cache = _cache(tmp_path, MODEL, "digits")  # 3 logits, 10 classes
    with FeatureStore(cache) as store:
        with pytest.warns(UserWarning, match="the model gives 3 logits per row and the data has 10 classes"):
            frame = store.to_pandas("test")
    assert "model_pred" in frame and frame.attrs["warnings"][0].startswith("the model gives 3 logits")


TRAINED = """
import numpy as np
import torch


class Net(torch.nn.Module):
    input_spec = {"kind": "image", "channels": 1, "size": 8, "unnormalized": True}

    def __init__(self):
        super().__init__()
        self.flat = torch.nn.Flatten()
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(self.flat(x))


def make():
    net, saved = Net(), np.load(__file__.replace(".py", ".npz"))
    net.fc.weight.data, net.fc.bias.data = torch.tensor(saved["w"]), torch.tensor(saved["b"])
    return net
"""


def test_model_pred_in_the_datas_numbering_is_given_without_a_word(tmp_path: Path) -> None:
    """A linear model trained on the digits' own pixels (scikit-learn), in the data's class order."""
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    x, y = load_digits(return_X_y=True)
    fit = LogisticRegression(max_iter=2000).fit(x / 16.0, y)
    np.savez(tmp_path / "frames_net.npz", w=fit.coef_.astype(np.float32), b=fit.intercept_.astype(np.float32))
    cache = _cache(tmp_path, TRAINED, "digits")
    with FeatureStore(cache) as store, warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning here would be a false alarm
        frame = store.to_pandas("test")
    assert "warnings" not in frame.attrs and (frame["label"] == frame["model_pred"]).mean() > 0.5
