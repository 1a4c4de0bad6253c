"""Weights files: formats, wrappers, prefixes, strict loading, and refusing pickled models."""

from __future__ import annotations

import hashlib

import pytest
import torch
from safetensors.torch import save_file
from torch import nn

from laya_inspect.errors import InputError, NotFoundError, UnsafeCheckpointError
from laya_inspect.files import temp_file_name
from laya_inspect.models import load_model
from laya_inspect.models.weights import load_state_dict_strict, read_checkpoint, sha256_file, to_state_dict

pytest.importorskip("torchvision")
from torchvision.models import get_model  # noqa: E402


@pytest.fixture(scope="module")
def r18():
    torch.manual_seed(0)
    return get_model("resnet18", num_classes=7).eval()


@pytest.fixture(scope="module")
def x():
    return torch.rand(2, 3, 64, 64)


def logits_of(loaded, x):
    return loaded.run(x, [])[1]


# resnet18 (~2 s) only in the full run: mobilenet_v2 takes the same path in the fast loop
@pytest.mark.parametrize("arch", [pytest.param("resnet18", marks=pytest.mark.slow), "mobilenet_v2"])
def test_pth_safetensors_and_wrapped_dict_give_identical_logits(arch, x, tmp_path):
    torch.manual_seed(0)
    model = get_model(arch, num_classes=7).eval()
    state = model.state_dict()
    torch.save(state, tmp_path / "plain.pth")
    save_file({k: v.contiguous() for k, v in state.items()}, tmp_path / "w.safetensors")
    torch.save({"state_dict": {f"module.{k}": v for k, v in state.items()}, "epoch": 3}, tmp_path / "ddp.pt")
    torch.save({"model": {f"module._orig_mod.{k}": v for k, v in state.items()}}, tmp_path / "compiled.pt")
    save_file({f"_orig_mod.{k}": v.contiguous() for k, v in state.items()}, tmp_path / "compiled.safetensors")
    with torch.no_grad():
        expected = model(x)
    for name in ("plain.pth", "w.safetensors", "ddp.pt", "compiled.pt", "compiled.safetensors"):
        loaded = load_model(f"torchvision:{arch}", weights=tmp_path / name)
        assert loaded.num_classes == 7, name  # inferred from the checkpoint's classifier
        torch.testing.assert_close(logits_of(loaded, x), expected, rtol=0, atol=0, msg=name)
        assert loaded.weights_sha256 == hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()


def test_unwrap_order_and_prefix_stripping():
    t = torch.zeros(1)
    assert to_state_dict({"state_dict": {"module.a": t}, "model_ema": {"b": t}}) == {"a": t}
    assert to_state_dict({"model_ema": {"_orig_mod.module.c": t}, "optimizer": {"lr": 1.0}}) == {"c": t}
    with pytest.raises(InputError, match="optimizer"):
        to_state_dict({"optimizer": {"lr": 1.0}})


def test_checkpoints_as_people_save_them_load(tmp_path):
    """A model whose own submodule is named ``module`` was refused (every key lost its prefix); a
    checkpoint without BatchNorm's num_batches_tracked (PyTorch < 0.4.1, re-exports) was refused
    though torch's strict load takes it; the tutorial's ``model_state_dict`` and a step count beside
    the tensors were "a dict without model weights"."""
    from laya_inspect.models.weights import load_state_dict_strict

    class Wrap(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.module = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4))
            self.head = nn.Linear(4, 2)

    torch.manual_seed(0)
    src, dst = Wrap(), Wrap()
    state = src.state_dict()
    load_state_dict_strict(dst, to_state_dict(state))
    assert all(torch.equal(v, dst.state_dict()[k]) for k, v in state.items())
    old = {k: v for k, v in state.items() if not k.endswith("num_batches_tracked")}
    load_state_dict_strict(Wrap(), to_state_dict({"model_state_dict": old, "epoch": 3}))
    t = torch.ones(1)
    assert to_state_dict({"a.weight": t, "epoch": 3}) == {"a.weight": t}
    assert to_state_dict({"net": {"module.a": t}, "ema": {"b": t}}) == {"a": t}
    with pytest.raises(InputError, match="missing module.0.weight"):  # a real miss is still one
        load_state_dict_strict(Wrap(), {k: v for k, v in state.items() if k != "module.0.weight"})


def test_pickled_module_needs_trust(r18, x, tmp_path):
    path = tmp_path / "whole.pt"
    torch.save(r18, path)
    with pytest.raises(UnsafeCheckpointError, match="--trust-pickle"):
        load_model("torchvision:resnet18", weights=path)
    assert isinstance(read_checkpoint(path, trust_pickle=True), nn.Module)
    loaded = load_model("torchvision:resnet18", weights=path, trust_pickle=True)
    with torch.no_grad():
        torch.testing.assert_close(logits_of(loaded, x), r18(x), rtol=0, atol=0)


@pytest.mark.parametrize(
    "said",  # torch.load(weights_only=True) on a pickled module: torch 2.2/2.3, then today's wording
    ["Unsupported class torch.nn.modules.linear.Linear", "Unsupported global: GLOBAL torch.nn.Linear was not allowed"],
)
def test_a_pickled_module_is_named_so_in_each_torchs_words(tmp_path, monkeypatch, said):
    import pickle

    path = tmp_path / "whole.pt"
    torch.save({"w": torch.ones(1)}, path)

    def refuse(*args, **kwargs):
        if kwargs.get("weights_only"):
            raise pickle.UnpicklingError(f"Weights only load failed. ... Please file an issue.\n\n {said}")
        return "unpickled"

    monkeypatch.setattr(torch, "load", refuse)
    with pytest.raises(UnsafeCheckpointError, match="is a pickled model.*--trust-pickle"):
        read_checkpoint(path)
    assert read_checkpoint(path, trust_pickle=True) == "unpickled"


def test_missing_corrupt_and_mismatched_files(tmp_path):
    with pytest.raises(NotFoundError, match="no weights file"):
        load_model("torchvision:resnet18", weights=tmp_path / "nope.pth")
    own = temp_file_name("m.pt", 123)
    for name in (".x.h5.lock", own, "model.pt"):  # the run's own lock file listed first, QA
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(NotFoundError, match=r"no weights file .*; the folder holds: model\.pt$"):
        load_model("torchvision:resnet18", weights=tmp_path / "nope.pth")
    for name in (".x.h5.lock", own, "model.pt"):
        (tmp_path / name).unlink()
    (tmp_path / "junk.pth").write_bytes(b"not a checkpoint at all")
    with pytest.raises(InputError, match="not a readable"):
        load_model("torchvision:resnet18", weights=tmp_path / "junk.pth")
    (tmp_path / "junk.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(InputError):
        read_checkpoint(tmp_path / "junk.safetensors")
    torch.save(nn.Linear(3, 2).state_dict(), tmp_path / "other.pth")
    with pytest.raises(InputError, match=r"missing .*conv1\.weight.*unexpected weight, bias"):
        load_model("torchvision:resnet18", weights=tmp_path / "other.pth")


def test_shape_mismatch_names_the_key():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    state = {k: v for k, v in model.state_dict().items()}
    state["0.weight"] = torch.zeros(5, 3)
    with pytest.raises(InputError, match=r"0\.weight \(5, 3\) vs \(4, 3\)"):
        load_state_dict_strict(model, state)


def test_sha256_file(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    assert sha256_file(tmp_path / "f") == hashlib.sha256(b"abc").hexdigest()


def test_a_weights_file_is_read_as_what_its_bytes_are_whatever_its_name(tmp_path):
    """A torch.save file named .safetensors failed with "header too large", and a safetensors file
    named .pth with "Unsupported operand 144": two common mix-ups, both read now."""
    state = {"a": torch.arange(3.0)}
    torch.save(state, tmp_path / "saved.safetensors")
    save_file(state, tmp_path / "safe.pth")
    for name in ("saved.safetensors", "safe.pth"):
        assert torch.equal(read_checkpoint(tmp_path / name)["a"], state["a"]), name
    cut = (tmp_path / "safe.pth").read_bytes()[:20]
    (tmp_path / "cut.pth").write_bytes(cut)
    with pytest.raises(InputError, match=r"cut\.pth is not a readable \.safetensors file"):
        read_checkpoint(tmp_path / "cut.pth")


@pytest.mark.parametrize("name", ["w.safetensors", "w.pth"])
def test_a_safetensors_file_whose_header_length_starts_with_0x80_is_safetensors(tmp_path, name):
    """A safetensors file opens with its header's length, little-endian; one whose first byte is 0x80
    (timm's resnet50: 0x7080) was taken for a bare pickle and failed with "Unsupported operand 0"."""
    state = {"a": torch.arange(3.0)}
    for pad in range(512):
        save_file(state, tmp_path / name, metadata={"pad": "x" * pad})
        if (tmp_path / name).read_bytes()[0] == 0x80:
            break
    else:  # pragma: no cover - the header's length steps by 8 as the metadata grows
        pytest.fail("no metadata length gave a header length whose first byte is 0x80")
    assert torch.equal(read_checkpoint(tmp_path / name)["a"], state["a"])
