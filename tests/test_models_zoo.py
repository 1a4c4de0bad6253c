"""The zoo backbones: architecture as the paper describes, features that reproduce logits, checkpoints."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from laya_inspect.errors import InputError, NotFoundError
from laya_inspect.layers import list_layers, pool, reduce_batch
from laya_inspect.models import build_zoo, load_model, save_zoo_checkpoint
from laya_inspect.models.zoo import ChannelLayerNorm


def test_mlp_architecture():
    m = build_zoo("mlp")
    assert [type(b).__name__ for b in m.blocks] == ["Sequential"] * 3
    assert [b[0].out_features for b in m.blocks] == [512, 256, 128]
    assert all(b[1].eps == 1e-3 and isinstance(b[2], nn.GELU) and b[2].approximate == "none" for b in m.blocks)
    assert (m.head.in_features, m.head.out_features) == (128, 10)
    assert m.kwargs == {
        "in_shape": [1, 28, 28],
        "num_classes": 10,
        "hidden": [512, 256, 128],
        "ln_eps": 1e-3,
        "init": "glorot",
    }
    assert all(b[0].bias.abs().sum() == 0 for b in m.blocks)  # Keras-like: zero biases
    bound = (6 / (784 + 512)) ** 0.5  # Glorot-uniform limit of the first kernel
    assert m.blocks[0][0].weight.abs().max() <= bound


def test_cnn_architecture():
    m = build_zoo("cnn")
    maps = m.features(torch.randn(2, 3, 32, 32))
    assert [tuple(f.shape[1:]) for f in maps] == [(64, 32, 32), (128, 16, 16), (256, 8, 8)]
    dw, pw, norm, act = m.stages[1][0]
    assert dw.groups == dw.in_channels == 64 and dw.stride == (2, 2) and pw.kernel_size == (1, 1)
    assert isinstance(norm, ChannelLayerNorm) and isinstance(act, nn.GELU)
    assert m.stages[0][0][0].stride == (1, 1) and m.stages[1][1][0].stride == (1, 1)


def test_channel_layernorm_normalises_each_position_over_channels():
    x = torch.randn(2, 6, 3, 3)
    y = ChannelLayerNorm(6, eps=1e-3)(x)
    torch.testing.assert_close(y.mean(1), torch.zeros(2, 3, 3), atol=1e-5, rtol=0)


def test_bilstm_architecture():
    m = build_zoo("bilstm", vocab_size=50)
    assert m.lstm1.bidirectional and m.lstm2.bidirectional and m.lstm1.hidden_size == 64
    assert m.embedding.weight.shape == (50, 128) and m.head.in_features == 128
    assert torch.all(m.lstm1.bias_ih_l0[64:128] == 1)  # Keras unit_forget_bias


@pytest.mark.parametrize(
    ("arch", "x"),
    [
        ("mlp", torch.rand(4, 1, 28, 28)),
        ("cnn", torch.rand(4, 3, 32, 32)),
        ("bilstm", torch.randint(0, 20000, (4, 11))),
    ],
)
def test_last_layer_pooled_through_head_reproduces_logits(arch, x):
    loaded = load_model(f"zoo:{arch}", random_init=True)
    raw, logits = loaded.run(x, loaded.default_layers)
    pooled, decided, _ = reduce_batch(raw, loaded.default_layers, "auto", loaded.module)
    last = loaded.default_layers[-1]
    torch.testing.assert_close(loaded.module.head(pooled[last]), logits, rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(logits, loaded.module(x), rtol=0, atol=0)  # hooked forward == plain forward
    assert set(decided.values()) == {{"mlp": "none", "cnn": "gap", "bilstm": "final_hidden"}[arch]}
    with torch.no_grad():
        features = loaded.module.features(x)
    for got, ref in zip(features, [pooled[n] for n in loaded.default_layers]):
        torch.testing.assert_close(got.mean((2, 3)) if got.ndim == 4 else got, ref, rtol=0, atol=0)


def test_zoo_loaded_model_description():
    mlp, bilstm = load_model("zoo:mlp", random_init=True), load_model("zoo:bilstm", random_init=True)
    assert mlp.default_layers == ["blocks.0", "blocks.1", "blocks.2"] and mlp.num_classes == 10
    assert (mlp.input_spec.kind, mlp.input_spec.channels, mlp.input_spec.size, mlp.input_spec.mean) == (
        "image",
        1,
        28,
        None,
    )
    assert bilstm.default_layers == ["lstm1", "lstm2"]
    assert (bilstm.input_spec.kind, bilstm.input_spec.max_length, bilstm.input_spec.vocab_size) == (
        "tokens",
        200,
        20000,
    )
    assert not mlp.module.training and not any(p.requires_grad for p in mlp.module.parameters())
    assert mlp.weights_sha256 is None and mlp.random_init and "random weights (--random-init" in mlp.warnings[0]
    # the random init is seeded: two loads agree
    again = load_model("zoo:mlp", random_init=True)
    torch.testing.assert_close(again.module.head.weight, mlp.module.head.weight, rtol=0, atol=0)


def test_zoo_without_weights_is_refused_unless_random_init_is_asked_for(tmp_path):
    with pytest.raises(InputError, match="zoo:mlp without --weights would be a randomly initialised.*--random-init"):
        load_model("zoo:mlp")
    path = save_zoo_checkpoint(tmp_path / "mlp.pt", build_zoo("mlp"))
    with pytest.raises(InputError, match="--random-init and --weights .* contradict"):
        load_model("zoo:mlp", weights=path, random_init=True)
    trained = load_model("zoo:mlp", weights=path)
    assert not trained.random_init and trained.warnings == []


def test_zoo_checkpoint_roundtrip_carries_kwargs(tmp_path):
    torch.manual_seed(1)
    model = build_zoo("cnn", num_classes=5, widths=(8, 16, 32), stem_width=4)
    path = save_zoo_checkpoint(tmp_path / "cnn.pt", model, {"metrics": {"acc": 0.5}, "epoch": 3})
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == "laya-inspect-zoo" and raw["arch"] == "cnn" and raw["epoch"] == 3
    loaded = load_model("zoo:cnn", weights=path)
    assert loaded.num_classes == 5 and loaded.module.kwargs["widths"] == [8, 16, 32]
    x = torch.rand(2, 3, 32, 32)
    torch.testing.assert_close(loaded.run(x, [])[1], model.eval()(x), rtol=0, atol=0)
    assert len(loaded.weights_sha256) == 64 and loaded.weights_path == str(path)


def _zoo_dict(**changes):
    obj = {"format": "laya-inspect-zoo", "arch": "mlp", "kwargs": build_zoo("mlp").kwargs}
    obj["state_dict"] = build_zoo("mlp").state_dict()
    obj.update(changes)
    return obj


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"arch": None}, r"without a known arch \(None\); valid: mlp, cnn, bilstm"),
        ({"arch": "rnn"}, r"without a known arch \('rnn'\)"),
        ({"kwargs": [1, 2]}, "without its kwargs dict or state_dict"),
        ({"state_dict": None}, "without its kwargs dict or state_dict"),
        ({"kwargs": {"hidden": [-4]}}, "do not build a zoo 'mlp'"),
        ({"kwargs": {"in_shape": [784]}}, r"takes images \(C, H, W\); its in_shape is \[784\]"),
        ({"state_dict": {"head.weight": torch.zeros(3)}}, "does not fit MLP: missing"),
        ({"vocab": [1, 2]}, "vocab is not a list of words"),
    ],
)
def test_tampered_zoo_checkpoints_are_one_line_errors_naming_the_file(tmp_path, changes, message):
    path = tmp_path / "tampered.pt"
    torch.save(_zoo_dict(**changes), path)
    with pytest.raises(InputError, match=message) as info:
        load_model("zoo:mlp", weights=path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_zoo_plain_state_dict_and_arch_mismatch(tmp_path):
    model = build_zoo("mlp")
    torch.save(model.state_dict(), tmp_path / "sd.pt")
    torch.testing.assert_close(load_model("zoo:mlp", weights=tmp_path / "sd.pt").module.head.bias, model.head.bias)
    save_zoo_checkpoint(tmp_path / "mlp.pt", model)
    with pytest.raises(InputError, match="zoo:mlp"):
        load_model("zoo:cnn", weights=tmp_path / "mlp.pt")


def test_zoo_errors():
    with pytest.raises(NotFoundError, match="did you mean 'mlp'"):
        load_model("zoo:mpl", random_init=True)
    with pytest.raises(InputError, match="arguments"):
        build_zoo("mlp", widths=(1, 2))
    with pytest.raises(ValueError, match="overwrite"):
        save_zoo_checkpoint("unused.pt", build_zoo("mlp"), {"arch": "x"})


def test_pool_of_bilstm_first_layer_is_its_final_hidden_state():
    m = build_zoo("bilstm", vocab_size=30).eval()
    x = torch.randint(0, 30, (3, 6))
    out = m.lstm1(m.embedding(x))
    torch.testing.assert_close(pool(out, "auto", m.lstm1)[0], m.features(x)[0], rtol=0, atol=0)


def test_list_layers_without_data_uses_a_dummy_batch():
    infos = {i.name: i for i in list_layers(load_model("zoo:cnn", random_init=True))}
    assert infos["stages.2"].shape == (256, 8, 8) and infos["stages.2"].default and infos["stages.2"].role == "block"
    assert infos["stem.0"].type == "Conv2d" and not infos["stem.0"].default
    tokens = {i.name: i.shape for i in list_layers(load_model("zoo:bilstm", random_init=True))}
    assert tokens["lstm2"] == (16, 128)


def test_zoo_init_glorot_zeroes_biases_torch_keeps_pytorch_defaults() -> None:
    from laya_inspect.errors import InputError
    from laya_inspect.models.zoo import build_zoo

    torch.manual_seed(0)
    glorot, plain = build_zoo("cnn", init="glorot"), build_zoo("cnn", init="torch")
    assert glorot.kwargs["init"] == "glorot" and plain.kwargs["init"] == "torch"
    assert torch.count_nonzero(glorot.head.bias) == 0 and torch.count_nonzero(plain.head.bias) > 0
    # PyTorch's Linear default is kaiming-uniform(a=√5): bound 1/√fan_in, tighter than glorot's here.
    bound = 1 / plain.head.in_features**0.5
    assert float(plain.head.weight.abs().max()) <= bound < float(glorot.head.weight.abs().max())
    with pytest.raises(InputError, match="init must be one of glorot, torch"):
        build_zoo("mlp", init="he")
