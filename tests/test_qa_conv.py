"""A user's own convnet as users save it: the ways in, and what each refusal tells them to do."""

from __future__ import annotations

import sys
import warnings

import pytest
import torch
from torch import nn

from laya_inspect.errors import InputError
from laya_inspect.models.weights import read_checkpoint


class SmallConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(x).mean((2, 3)))


def test_a_model_pickled_by_a_script_run_directly_says_how_to_save_it_instead(tmp_path, monkeypatch):
    # `python train.py` ending in torch.save(model) records the class as __main__.SmallConv,
    # which the tool's own __main__ does not hold
    main = sys.modules["__main__"]
    monkeypatch.setattr(SmallConv, "__module__", "__main__")
    monkeypatch.setattr(main, "SmallConv", SmallConv, raising=False)
    path = tmp_path / "full.pt"
    torch.save(SmallConv(), path)
    monkeypatch.delattr(main, "SmallConv")
    with pytest.raises(InputError) as caught:
        read_checkpoint(path, trust_pickle=True)
    said = str(caught.value)
    assert "could not be unpickled" in said
    assert "torch.save(model.state_dict(), FILE)" in said
    assert "python:MODULE:FACTORY --weights FILE" in said


def test_a_pickle_missing_an_ordinary_module_gets_no_word_about_main(tmp_path, monkeypatch):
    monkeypatch.setattr(SmallConv, "__module__", "qa_conv_gone")
    fake = type(sys)("qa_conv_gone")
    fake.SmallConv = SmallConv  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "qa_conv_gone", fake)
    path = tmp_path / "full.pt"
    torch.save(SmallConv(), path)
    monkeypatch.delitem(sys.modules, "qa_conv_gone")
    with pytest.raises(InputError) as caught:
        read_checkpoint(path, trust_pickle=True)
    assert "qa_conv_gone" in str(caught.value)
    assert "__main__" not in str(caught.value)


def test_a_traced_convnet_is_not_called_scripted_when_its_layers_cannot_be_read(tmp_path):
    from laya_inspect.models import load_model

    path = tmp_path / "traced.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit.* deprecation notices
        torch.jit.save(torch.jit.trace(SmallConv().eval(), torch.rand(2, 1, 8, 8)), str(path))
    loaded = load_model(f"torchscript:{path}")
    with pytest.raises(InputError) as caught:
        loaded.resolve_layers("all")
    said = str(caught.value)
    assert "this TorchScript SmallConv" in said
    assert "scripted" not in said
