"""extract_features(model, batches, layers=..., out=...): the in-memory path, checked against a plain
forward of the same module, and FeatureStore.to_pandas."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import watch_hooks
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from laya_inspect import FeatureStore, extract_features
from laya_inspect.errors import InputError, LayaError, NotFoundError


def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    x, y = load_digits(return_X_y=True)
    return torch.tensor(x / 16.0, dtype=torch.float32).view(-1, 1, 8, 8), torch.tensor(y)


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(256, 12), nn.Tanh(), nn.Linear(12, 10)
    )


def test_rows_equal_a_plain_forward_and_the_cache_reads_back(tmp_path: Path) -> None:
    x, y = _digits()
    net = _net().train()
    loaders = {
        "train": DataLoader(TensorDataset(x[:1000], y[:1000]), batch_size=97),
        "test": DataLoader(TensorDataset(x[1000:], y[1000:]), batch_size=128),
    }
    result = extract_features(net, loaders, layers=["1", "4"], out=tmp_path / "f.h5")
    assert net.training  # put back in the mode it was in
    assert result.rows == {"train": 1000, "test": 797} and result.pooling == ["gap", "none"]
    with torch.no_grad():
        net.eval()
        relu = net[1](net[0](x[1000:]))
        tanh = net[4](net[3](net[2](relu)))
    with FeatureStore(result.path) as store:
        assert store.layer_names == ["1", "4"] and store.widths == [4, 12]
        np.testing.assert_allclose(store.layer("test", 0), relu.mean(dim=(2, 3)).numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(store.layer("test", 1), tanh.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(store.labels("train"), y[:1000].numpy())
        assert store.attrs["model_spec"].endswith("Sequential") and len(store.attrs["weights_sha256"]) == 64
        frame = store.to_pandas("test", features=True, layers=["4"])
        assert list(frame.columns[:5]) == ["split", "row", "index", "label", "class"]
        assert frame.shape == (797, 5 + 12) and frame["label"].tolist() == y[1000:].tolist()
        np.testing.assert_allclose(frame[[f"4[{j}]" for j in range(12)]].to_numpy(), store.layer("test", 1))


def test_dict_batches_with_keyword_inputs_and_the_weights_hash(tmp_path: Path) -> None:
    class Keyword(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(3, 5)
            self.b = nn.Linear(5, 2)

        def forward(self, features: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
            return self.b(self.a(features) * scale[:, None])

    torch.manual_seed(0)
    model = Keyword()
    batches = [{"features": torch.randn(4, 3), "scale": torch.ones(4), "labels": torch.tensor([0, 1, 1, 0])}] * 3
    one = extract_features(model, batches, layers="a,b", out=tmp_path / "one.h5", split="train")
    assert one.rows == {"train": 12} and one.widths == [5, 2]
    with torch.no_grad():
        model.b.weight.add_(1.0)
    two = extract_features(model, batches, layers=["a", "b"], out=tmp_path / "two.h5", split="train")
    with FeatureStore(one.path) as s1, FeatureStore(two.path) as s2:
        assert s1.attrs["weights_sha256"] != s2.attrs["weights_sha256"]  # other weights, other provenance
        np.testing.assert_array_equal(s1.layer("train", "a"), s2.layer("train", "a"))


def test_bad_calls_are_refused_with_what_is_wrong(tmp_path: Path) -> None:
    x, y = _digits()
    net = _net()
    good = [(x[:8], y[:8])]
    with pytest.raises(NotFoundError, match=r"no layer '9' in Sequential; .*available: 0, 1, 2, 3, 4, 5"):
        extract_features(net, good, layers=["9"], out=tmp_path / "a.h5")
    with pytest.raises(InputError, match="labels must be a 1-D array of class indices"):
        extract_features(net, [(x[:8], y[:8].float())], layers=["1"], out=tmp_path / "b.h5")
    with pytest.raises(InputError, match=r"a batch must be \(inputs, labels, \.\.\.\)"):
        extract_features(net, [x[:8]], layers=["1"], out=tmp_path / "c.h5")
    with pytest.raises(InputError, match="gave no rows"):
        extract_features(net, {"train": good, "test": []}, layers=["1"], out=tmp_path / "d.h5")
    with pytest.raises(InputError, match="takes no batches or options"):
        from laya_inspect.cache.extract_config import ExtractConfig

        extract_features(ExtractConfig(model="zoo:mlp", data="digits", out=str(tmp_path / "e.h5")), good)
    extract_features(net, good, layers=["1"], out=tmp_path / "f.h5")
    with pytest.raises(LayaError, match="already a complete cache"):  # a complete cache is never replaced silently
        extract_features(net, good, layers=["1"], out=tmp_path / "f.h5")
    extract_features(net, good, layers=["1"], out=tmp_path / "f.h5", overwrite=True)


def test_layers_are_cached_in_the_order_the_forward_computes_them(tmp_path: Path) -> None:
    """Not the order named, nor the order the modules were registered in: a block after its parts."""

    class Late(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.out = nn.Linear(12, 10)  # registered first, run last
            self.block = nn.Sequential(nn.Flatten(), nn.Linear(64, 12), nn.Tanh())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(self.block(x))

    x, y = _digits()
    batches = [(x[:200], y[:200])]
    result = extract_features(Late(), batches, layers=["out", "block", "block.1"], out=tmp_path / "f.h5")
    assert result.layer_names == ["block.1", "block", "out"] and result.widths == [12, 12, 10]
    assert result.warnings[0] == (
        "--layers out,block,block.1 named the layers out of depth order; "
        "they are kept in the order the model computes them: block.1, block, out"
    )
    assert len(result.warnings) == 2 and result.warnings[1].startswith("out has one value per class")  # its logits
    with FeatureStore(result.path) as store, torch.no_grad():
        assert store.layer_names == result.layer_names and store.attrs["warnings"] == result.warnings
        np.testing.assert_allclose(store.layer("train", -1), Late()(x[:200]).numpy(), rtol=1e-6, atol=1e-6)
    again = extract_features(Late(), batches, layers="block.1,block,out", out=tmp_path / "g.h5")
    assert again.layer_names == result.layer_names and again.warnings == result.warnings[1:]


def test_a_layer_that_gives_one_row_for_every_input_is_a_warning_in_the_result_and_the_cache(tmp_path: Path) -> None:
    """QA: extract warned about a layer pooled to one row for every input, the notebook path did not:
    the same check, named with its pooling and the keywords to change here."""

    class Tokens(nn.Module):  # token 0 a learned class token that sees no input, as a ViT's embeddings' is
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.cls = nn.Parameter(torch.randn(1, 1, 8))
            self.proj = nn.Linear(64, 8)
            self.embed = nn.Identity()
            self.mix = nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            tokens = self.proj(x.view(len(x), 8, 8).repeat(1, 1, 8))  # (B, 8, 8)
            seq = self.embed(torch.cat([self.cls.expand(len(x), 1, 8), tokens], dim=1))
            return self.mix(seq + seq.mean(dim=1, keepdim=True))  # token 0 now sees the others

    x, y = _digits()
    batches = [(x[i : i + 50], y[i : i + 50]) for i in range(0, 200, 50)]
    result = extract_features(Tokens(), batches, layers=["embed", "mix"], pool="cls", out=tmp_path / "f.h5")
    said = "embed (pooled by cls) gives the same row for every input"
    ours = [w for w in result.warnings if "the same row for every input" in w]
    assert len(ours) == 1 and ours[0].startswith(said), result.warnings
    assert 'another pool (pool="mean")' in ours[0] and ours[0].endswith("leave it out of layers")
    with FeatureStore(result.path) as store:
        assert [w for w in store.attrs["warnings"] if "the same row for every input" in w] == ours
        embed, mix = store.layer("train", 0), store.layer("train", 1)
    assert np.abs(embed - embed[0]).max() == 0 and np.ptp(mix, axis=0).max() > 1e-3  # mix: not named


def test_a_constant_layer_is_named_in_float16_too_and_a_nan_row_hides_no_variation(tmp_path: Path) -> None:
    """Review: the same-row check compared the float32 rows with the first row rounded to float16, so
    under dtype="float16" no layer was ever named; and a NaN value (allow_nonfinite) left its whole
    batch out of the check, so a varying layer with a NaN in every batch was named."""

    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.varies = nn.Linear(64, 8)
            self.fixed = nn.Linear(64, 8)
            self.tail = nn.Identity()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x.flatten(1)
            h = self.varies(x)
            self.fixed(x * 0)  # the same row for every input
            return self.tail(torch.where(x[:, :1] > 100, torch.full_like(h, float("nan")), h))

    x, y = _digits()
    batches = [(x[i : i + 50], y[i : i + 50]) for i in range(0, 200, 50)]
    half = extract_features(Two(), batches, layers=["varies", "fixed"], dtype="float16", out=tmp_path / "h.h5")
    named = [w for w in half.warnings if "the same row for every input" in w]
    assert len(named) == 1 and named[0].startswith("fixed (pooled by"), half.warnings
    x = x.clone()
    x[1::50, 0, 0, 0] = 1000.0  # one row of every batch gives NaN in tail
    nan = extract_features(
        Two(),
        [(x[i : i + 50], y[i : i + 50]) for i in range(0, 200, 50)],
        layers=["tail"],
        out=tmp_path / "n.h5",
        allow_nonfinite=True,
    )
    assert not [w for w in nan.warnings if "the same row for every input" in w], nan.warnings
    # the library call's refusal names the argument it takes, not the command's flag
    with pytest.raises(InputError, match=r"or pass allow_nonfinite=True to cache them") as refused:
        extract_features(Two(), [(x[:50], y[:50])], layers=["tail"], out=tmp_path / "r.h5")
    assert "--allow-nonfinite" not in str(refused.value)


def test_two_layers_that_hold_the_same_values_are_a_warning_at_extract_in_the_result_and_the_cache(
    tmp_path: Path,
) -> None:
    """QA: a stage and its last block (one tensor under two names) were cached without a word; only
    fit-head said so, later. Both extract paths now say it, and record it in the cache."""
    from laya_inspect.cache.extract import ExtractConfig
    from laya_inspect.cache.extract import extract_features as extract_command

    config = ExtractConfig(
        model="zoo:mlp", data="digits", layers="blocks.0,blocks.0.2,blocks.1", random_init=True, limit=60,
        out=str(tmp_path / "c.h5"), device="cpu",
    )  # fmt: skip
    said = "layers that hold the same values (blocks.0.2 = blocks.0; their first 8 rows are equal)"
    result = extract_command(config)
    assert [w for w in result.warnings if w.startswith(said)], result.warnings
    with FeatureStore(result.path) as store:
        assert [w for w in store.attrs["warnings"] if w.startswith(said) and "leave one out with --layers" in w]
    apart = extract_command(
        ExtractConfig(**{**vars(config), "layers": "blocks.0,blocks.1", "out": str(tmp_path / "a.h5")})
    )
    assert not [w for w in apart.warnings if "hold the same values" in w]

    x, y = _digits()
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 12), nn.Sequential(nn.Tanh()), nn.Linear(12, 10))
    result = extract_features(net, [(x[:50], y[:50])], layers=["1", "2.0", "2"], out=tmp_path / "f.h5")
    ours = [w for w in result.warnings if "hold the same values (2.0 = 2;" in w]
    assert len(ours) == 1 and ours[0].endswith("leave one out of layers"), result.warnings
    with FeatureStore(result.path) as store:
        assert [w for w in store.attrs["warnings"] if "hold the same values" in w] == ours


def test_the_models_logits_as_a_layer_are_a_warning_from_a_module_too(tmp_path: Path) -> None:
    """QA: `extract` warns when a chosen layer is the model's logits (one value per class, what its
    forward returns); extract_features(model, batches) cached them without a word."""
    x, y = _digits()
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 12), nn.Tanh(), nn.Linear(12, 10))
    result = extract_features(net, [(x[:50], y[:50])], layers=["1", "3"], out=tmp_path / "f.h5")
    ours = [w for w in result.warnings if "one value per class" in w]
    assert len(ours) == 1 and ours[0].startswith("3 has one value per class (10, the data's class count)")
    assert ours[0].endswith("leave it out of layers unless that is meant"), ours
    with FeatureStore(result.path) as store:
        assert [w for w in store.attrs["warnings"] if "one value per class" in w] == ours
    hidden = extract_features(net, [(x[:50], y[:50])], layers=["1", "2"], out=tmp_path / "h.h5")
    assert not [w for w in hidden.warnings if "one value per class" in w]


def test_a_model_that_returns_a_dict_has_its_logits_cached_and_named_as_a_layer(tmp_path: Path, monkeypatch) -> None:
    """QA: a user's convnet whose forward returns {"logits": …, "feats": …} (`extract --model
    python:…`) had no logits in the cache, and its classifier chosen as a layer got no "most likely
    its logits" warning, which the same network returning the tensor (or a tuple) gets; nor did it
    from extract_features(model, batches)."""
    from laya_inspect.cache.extract import ExtractConfig

    (tmp_path / "dictnet.py").write_text(
        "import torch\nfrom torch import nn\n\n"
        "class Dict(nn.Module):\n"
        "    input_spec = {'kind': 'image', 'channels': 1, 'size': 8}\n\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.body, self.fc = nn.Sequential(nn.Flatten(), nn.Linear(64, 12), nn.Tanh()), nn.Linear(12, 10)\n\n"
        "    def forward(self, x):\n"
        "        h = self.body(x)\n"
        "        return {'feats': h, 'logits': self.fc(h)}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    from dictnet import Dict  # type: ignore[import-not-found]

    torch.manual_seed(0)
    net = Dict()
    torch.save(net.state_dict(), tmp_path / "w.pt")
    config = ExtractConfig(model="python:dictnet:Dict", weights="w.pt", data="digits", layers="body.2,fc",
                           limit=60, splits=("test",), out="f.h5", device="cpu")  # fmt: skip
    x, y = _digits()
    module = extract_features(net, [(x[:50], y[:50])], layers=["body.2", "fc"], out="m.h5")
    for result in (extract_features(config), module):
        ours = [w for w in result.warnings if "one value per class" in w]
        assert len(ours) == 1 and ours[0].startswith("fc has one value per class (10, the data's class count)"), ours
    with FeatureStore(tmp_path / "f.h5") as store, torch.no_grad():
        rows = torch.from_numpy(store.layer("test", "body.2"))
        np.testing.assert_allclose(store.logits("test"), net.fc(rows).numpy(), rtol=1e-5, atol=1e-5)


def test_a_layer_read_after_its_conv_records_the_conv_s_unit_and_the_shapes_estimate_counts_it(tmp_path: Path) -> None:
    """A ReLU read after a conv and its norm recorded 0 parameters, its own, so the shapes estimate
    of backbone compute took the unit for a per-element op and missed the conv's multiply-adds."""
    from laya_inspect.beyond.costs import costs_from_shapes

    x, y = _digits()
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.GroupNorm(2, 4), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 1), nn.ReLU()
    )
    batches = [(x[:64], y[:64])]
    extract_features(net, batches, layers=["2", "5"], out=tmp_path / "units.h5")
    with FeatureStore(tmp_path / "units.h5") as store:
        assert store.attrs["layer_types"] == ["ReLU", "ReLU"] and store.attrs["layer_ops"] == ["Conv2d", "Conv2d"]
        # 3×3 conv 1→4 with bias and its norm's scale and shift; after the pool, the 1×1 conv 4→6
        assert store.attrs["layer_params"] == [1 * 4 * 9 + 4 + 2 * 4, 4 * 6 + 6]
        costs = costs_from_shapes(store)
        # a row's multiply-adds: each kernel (not its bias or norm) at each position of its conv's map
        assert store.attrs["layer_macs"] == [1 * 4 * 9 * 64, 4 * 6 * 16]
    # each conv's multiply-adds at each of its outputs (8×8 and 4×4 positions), not one FLOP per element, nor
    # one per bias or norm parameter
    assert costs.flops_total == 2 * 36 * 64 + 2 * 24 * 16

    # each module read alone keeps its own count and class: the conv's figures are not counted twice
    extract_features(net, batches, layers=["0", "1", "2"], out=tmp_path / "each.h5")
    with FeatureStore(tmp_path / "each.h5") as store:
        assert store.attrs["layer_params"] == [40, 8, 0]
        assert store.attrs["layer_ops"] == ["Conv2d", "GroupNorm", "ReLU"]


def test_a_layer_s_multiply_adds_are_its_weights_at_each_output_position_or_unknown() -> None:
    """The cache's layer_macs: a linear map's matrix at each of its 5 positions (not its bias); an embedding
    table's lookups are no multiply-adds: 0 (it was None, and a module holding one unknown)."""
    from laya_inspect.models.sizes import call_order, layer_macs

    net = nn.Sequential(nn.Embedding(50, 8), nn.Linear(8, 4))
    with call_order(net) as calls, torch.no_grad():
        net(torch.zeros(2, 5, dtype=torch.long))
    assert layer_macs(calls, {}, {"0": net[0], "1": net[1], "all": net}) == {"0": 0, "1": 8 * 4 * 5, "all": 8 * 4 * 5}


class _PooledLSTM(nn.Module):
    """Token ids → embeddings → LSTM(8, 6) → max over the 10 steps → Linear(6, 3)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb, self.lstm = nn.Embedding(50, 8), nn.LSTM(8, 6, batch_first=True)
        self.pool, self.fc = nn.AdaptiveMaxPool1d(1), nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.emb(x))
        return self.fc(self.pool(out.transpose(1, 2)).squeeze(-1))


def test_an_lstm_read_after_its_pool_over_the_steps_is_counted_at_its_steps(tmp_path: Path) -> None:
    """An LSTM's gates are no output channels; its multiply-adds are its weight matrices' entries at each of
    its 10 steps (layer_macs), so read after a max over them it counts at its steps, not at the pool's (6, 1)
    output, which _channels takes for 6 positions, and without its biases."""
    from laya_inspect.beyond.costs import costs_from_shapes

    torch.manual_seed(0)
    tokens, labels = torch.randint(0, 50, (12, 10)), torch.arange(12) % 3
    extract_features(_PooledLSTM(), [(tokens, labels)], layers=["emb", "pool"], out=tmp_path / "l.h5")
    with FeatureStore(tmp_path / "l.h5") as store:
        attrs, costs = store.attrs, costs_from_shapes(store)
    assert attrs["layer_shapes"] == [[10, 8], [6, 1]] and attrs["layer_ops"] == ["Embedding", "LSTM"]
    assert attrs["layer_macs"] == [0, 4 * 6 * (8 + 6) * 10] and attrs["layer_op_shapes"] == [None, None]
    assert attrs["layer_params"] == [50 * 8, 4 * 6 * (8 + 6) + 2 * 4 * 6]  # its gates' weights and both biases
    assert costs.flops_total == 2 * 4 * 6 * (8 + 6) * 10  # the table lookup none


def test_a_module_holding_a_torchscript_part_is_cached(tmp_path: Path) -> None:
    """extract_features on a module with a scripted submodule ended in a RuntimeError
    ("register_forward_pre_hook is not supported on ScriptModules") from the hooks that count a unit's
    parameters: a TorchScript module takes none, and is left out of that count."""
    x, y = _digits()
    torch.manual_seed(0)
    net = nn.Sequential(torch.jit.script(nn.Conv2d(1, 4, 3)), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 10))
    with watch_hooks() as watch:
        extract_features(
            net, {"train": [(x[:32], y[:32])], "test": [(x[32:64], y[32:64])]}, layers=["1"], out=tmp_path / "s.h5"
        )
    with torch.no_grad():
        expected = net.eval()[:2](x[32:64]).mean(dim=(2, 3)).numpy()
    with FeatureStore(tmp_path / "s.h5") as store:
        np.testing.assert_allclose(store.layer("test", 0), expected, rtol=1e-6, atol=1e-6)
        # the scripted conv, called from Python, is seen through torch's global hooks: the ReLU's unit holds it
        assert store.attrs["layer_ops"] == ["Conv2d"] and store.attrs["layer_params"] == [1 * 4 * 9 + 4]
    assert watch.registered and watch.fired_after(net, x[:2]) == 0


def test_a_unit_holding_a_torchscript_part_counts_its_multiply_adds(tmp_path: Path) -> None:
    """A scripted Linear takes no hooks, so its multiply-adds were counted as 0: the ReLU's unit got the
    first Linear's alone, too low but not zero, and the shapes estimate used it. Called from Python, it is
    seen through torch's global module hooks: the unit counts both Linears."""
    from laya_inspect.beyond.costs import costs_from_shapes
    from laya_inspect.models.sizes import call_order, layer_macs

    x, y = _digits()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), torch.jit.script(nn.Linear(16, 16)), nn.ReLU())
    extract_features(net, [(x[:32], y[:32])], layers=["3"], out=tmp_path / "u.h5")
    with FeatureStore(tmp_path / "u.h5") as store:
        attrs, costs = store.attrs, costs_from_shapes(store)
    assert attrs["layer_ops"] == ["Linear"] and attrs["layer_macs"] == [64 * 16 + 16 * 16]
    assert costs.flops_total == 2 * (64 * 16 + 16 * 16)  # not the first Linear's alone
    # a module read alone that holds the scripted part: both Linears, its plain sibling alone
    with call_order(net) as calls, torch.no_grad():
        net(x[:2])
    assert layer_macs(calls, {}, {"1": net[1], "all": net}) == {"1": 64 * 16, "all": 64 * 16 + 16 * 16}


def test_a_module_run_at_several_places_is_said_in_the_result_and_the_cache(tmp_path: Path) -> None:
    """extract_features on a net that uses one ReLU after each layer stored the ReLU's last run alone
    under its name with no word, where `extract` on the same net warns: the warning is in both now."""
    x, y = _digits()
    torch.manual_seed(0)
    act = nn.ReLU()
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), act, nn.Linear(32, 16), act, nn.Linear(16, 10))
    said = "layer(s) '2' (2 times) ran more than once in one forward pass (one module used at several places)"
    result = extract_features(net, {"train": [(x[:32], y[:32])]}, layers=["1", "2", "3"], out=tmp_path / "s.h5")
    assert [w for w in result.warnings if w.startswith(said)] != []
    with FeatureStore(tmp_path / "s.h5") as store:
        assert store.layer_names == ["1", "3", "2"] and store.widths == [32, 16, 16]
        assert [w for w in store.attrs["warnings"] if w.startswith(said)] != []
    once = extract_features(net, {"train": [(x[:32], y[:32])]}, layers=["1", "3"], out=tmp_path / "t.h5")
    assert not [w for w in once.warnings if "more than once" in w]


def test_a_module_with_batchnorm_is_cached_and_its_hash_reads_the_norm_s_step_count(tmp_path: Path) -> None:
    """extract_features on any module holding a BatchNorm ended in a RuntimeError ("self.dim() cannot
    be 0 to view Long as Byte"): its num_batches_tracked, a 0-dim integer, was hashed as bytes."""
    x, y = _digits()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    extract_features(net, [(x[:32], y[:32])], layers=["2"], out=tmp_path / "a.h5")
    net[1].num_batches_tracked += 1  # the only change: the hash still tells the two weights apart
    extract_features(net, [(x[:32], y[:32])], layers=["2"], out=tmp_path / "b.h5")
    with torch.no_grad():
        expected = net.eval()(x[:32]).mean(dim=(2, 3)).numpy()  # the ReLU's map, averaged over its positions
    with FeatureStore(tmp_path / "a.h5") as a, FeatureStore(tmp_path / "b.h5") as b:
        np.testing.assert_allclose(a.layer("train", 0), expected, rtol=1e-6, atol=1e-6)
        assert a.attrs["weights_sha256"] != b.attrs["weights_sha256"]


def test_a_module_run_at_several_places_is_said_from_a_module_too(tmp_path: Path) -> None:
    """QA: a net that reuses one activation module after each layer cached, through the Python API,
    only the last run's output under that module's name with no word, where `extract` warns. The
    same warning is now in the result and the cache; a module run once says nothing."""
    x, y = _digits()
    torch.manual_seed(0)
    act = nn.ReLU()  # built once, used after each layer
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), act, nn.Linear(32, 16), act, nn.Linear(16, 10))
    batches = [(x[:64], y[:64]), (x[64:128], y[64:128])]
    result = extract_features(net, batches, layers=["1", "2", "3"], out=tmp_path / "f.h5")
    said = "layer(s) '2' (2 times) ran more than once in one forward pass (one module used at several places)"
    assert [w for w in result.warnings if "more than once" in w][0].startswith(said), result.warnings
    with FeatureStore(result.path) as store:
        assert store.layer_names == ["1", "3", "2"] and store.widths == [32, 16, 16]
        assert any(w.startswith(said) for w in store.attrs["warnings"])
    once = extract_features(net, batches, layers=["1", "3"], out=tmp_path / "g.h5")
    assert not any("more than once" in w for w in once.warnings)


def test_batches_of_one_class_are_refused_and_a_99_percent_class_is_said(tmp_path: Path) -> None:
    """QA: through the Python API, batches whose labels were all one class were cached with no word
    (the data sources refuse them), and a 99:1 split gave no warning of its majority share."""
    x, y = _digits()
    net = _net()
    with pytest.raises(InputError, match="every row of the batches has the class '0'"):
        extract_features(net, [(x[:64], torch.zeros(64, dtype=torch.long))], layers=["1"], out=tmp_path / "a.h5")
    rare = torch.cat([torch.nonzero(y != 0)[:198, 0], torch.nonzero(y == 0)[:2, 0]])
    result = extract_features(net, [(x[rare], (y[rare] == 0).long())], layers=["1"], out=tmp_path / "b.h5")
    said = "split 'train' is 99.0% class '0' (198 of 200 rows, 2 of the other classes)"
    assert any(said in w for w in result.warnings), result.warnings
    with FeatureStore(result.path) as store:
        assert any(said in w for w in store.attrs["warnings"])
