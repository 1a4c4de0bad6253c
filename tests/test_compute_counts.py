"""Extract's record of each layer's compute (layer_params, layer_macs) against hand counts: recurrent
modules of every kind, and models holding TorchScript parts (docs/METHOD.md, "Backbone compute")."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from laya_inspect import FeatureStore, extract_features
from laya_inspect.beyond.costs import costs_from_shapes
from laya_inspect.models.sizes import call_order, layer_macs


class _FinalState(nn.Module):
    """An LSTM whose final hidden state, not its steps, is what the classifier reads."""

    def __init__(self, **kw: int | bool) -> None:
        super().__init__()
        self.rnn, self.fc = nn.LSTM(8, 6, batch_first=True, **kw), nn.Linear(6, 2)  # type: ignore[arg-type]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, (h, _) = self.rnn(x)
        return self.fc(h[-1])


def _gates(kind: str) -> int:
    return {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize(("layers", "bidirectional", "batch_first"), [(1, False, True), (2, True, False)])
def test_a_recurrent_module_s_multiply_adds_are_its_weight_matrices_at_each_step(
    kind: str, layers: int, bidirectional: bool, batch_first: bool
) -> None:
    """By hand: each layer, each direction, at each of the 7 steps multiplies its input (8 wide, or both
    directions' 5 below it) and its hidden state (5) by gates × 5 rows; biases are no multiply-adds. An
    LSTM's layer_macs was null (its gates are no output channels) and the shapes estimate took its
    parameters, biases included, at each step."""
    torch.manual_seed(0)
    m = getattr(nn, kind)(8, 5, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
    x = torch.rand(3, 7, 8) if batch_first else torch.rand(7, 3, 8)
    dirs = 2 if bidirectional else 1
    wide = [8] + [5 * dirs] * (layers - 1)
    by_hand = 7 * sum(dirs * _gates(kind) * 5 * (w + 5) for w in wide)
    with call_order(m) as calls, torch.no_grad():
        m(x)
    assert layer_macs(calls, {}, {"rnn": m}) == {"rnn": by_hand}


def test_an_lstm_cell_and_a_packed_sequence_count_their_real_steps() -> None:
    """A cell runs one step per row; a packed batch of lengths 7, 4 and 2 runs 13 row-steps over 3 rows."""
    torch.manual_seed(0)
    cell, lstm = nn.LSTMCell(6, 5), nn.LSTM(6, 5)
    packed = nn.utils.rnn.pack_padded_sequence(torch.rand(7, 3, 6), [7, 4, 2])
    with call_order(cell) as cells, call_order(lstm) as steps, torch.no_grad():
        cell(torch.rand(3, 6))
        lstm(packed)
    assert layer_macs(cells, {}, {"c": cell}) == {"c": 4 * 5 * (6 + 5)}
    assert layer_macs(steps, {}, {"l": lstm}) == {"l": -(-4 * 5 * (6 + 5) * 13 // 3)}  # rounded up


@pytest.mark.parametrize(("kw", "by_hand"), [({}, 4 * 6 * (8 + 6)), ({"num_layers": 2}, 4 * 6 * (8 + 6 + 6 + 6))])
def test_a_final_state_lstm_is_counted_at_its_steps(tmp_path: Path, kw: dict[str, int], by_hand: int) -> None:
    """An LSTM whose forward returns (out, (h, c)) and whose classifier reads h: its 10 steps' multiply-adds,
    and the shapes estimate's FLOPs are twice them and the classifier's."""
    torch.manual_seed(0)
    x, y = torch.rand(12, 10, 8), torch.arange(12) % 2
    extract_features(_FinalState(**kw), [(x, y)], layers=["rnn"], out=tmp_path / "f.h5")
    with FeatureStore(tmp_path / "f.h5") as store:
        attrs, costs = store.attrs, costs_from_shapes(store)
    assert attrs["layer_macs"] == [10 * by_hand]
    assert costs.flops_total == 2 * 10 * by_hand


def test_a_unit_holding_a_scripted_part_counts_its_parameters_and_multiply_adds(tmp_path: Path) -> None:
    """A scripted Linear(32, 15) takes no hooks of its own, so the ReLU read after it counted 288 parameters,
    the plain Linear(8, 32)'s alone, of the 783 it runs; read with the ReLU before it, each unit holds its
    own Linear."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), torch.jit.script(nn.Linear(32, 15)), nn.ReLU())
    x, y = torch.rand(12, 8), torch.arange(12) % 2
    extract_features(net, [(x, y)], layers=["3"], out=tmp_path / "one.h5")
    extract_features(net, [(x, y)], layers=["1", "3"], out=tmp_path / "two.h5")
    with FeatureStore(tmp_path / "one.h5") as one, FeatureStore(tmp_path / "two.h5") as two:
        assert one.attrs["layer_params"] == [8 * 32 + 32 + 32 * 15 + 15]
        assert one.attrs["layer_macs"] == [8 * 32 + 32 * 15] and one.attrs["layer_ops"] == ["Linear"]
        assert two.attrs["layer_params"] == [8 * 32 + 32, 32 * 15 + 15]
        assert two.attrs["layer_macs"] == [8 * 32, 32 * 15]


def test_a_scripted_part_run_inside_another_s_graph_leaves_its_work_unknown() -> None:
    """A scripted Sequential called whole runs its Linears inside its graph, where no hook sees them: its
    parameters are all counted, as one op, and its multiply-adds are unknown (None), not 0."""
    torch.manual_seed(0)
    inner = torch.jit.script(nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 4)))
    net = nn.Sequential(inner, nn.ReLU())
    with call_order(net) as calls, torch.no_grad():
        net(torch.rand(2, 8))
    assert calls.params(0) == 8 * 4 + 4 + 4 * 4 + 4
    assert layer_macs(calls, {}, {"0": inner, "all": net}) == {"0": None, "all": None}


def test_a_scripted_sequential_s_units_hold_their_linear_layers(tmp_path: Path) -> None:
    """A TorchScript archive of a Sequential is run child by child: each ReLU read after its Linear held 0
    parameters and 0 multiply-adds, so the shapes estimate counted the backbone as per-element ops."""
    from laya_inspect.cache.extract import ExtractConfig
    from laya_inspect.cache.extract import extract_features as extract

    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 15), nn.ReLU(), nn.Linear(15, 10))
    torch.jit.save(torch.jit.script(net.eval()), tmp_path / "s.pt")
    out = tmp_path / "s.h5"
    extract(ExtractConfig(model=f"torchscript:{tmp_path / 's.pt'}", data="digits", layers="all", out=str(out)))
    with FeatureStore(out) as store:
        assert store.attrs["layer_params"] == [64 * 32 + 32, 32 * 15 + 15]
        assert store.attrs["layer_macs"] == [64 * 32, 32 * 15] and store.attrs["layer_ops"] == ["Linear", "Linear"]


def test_a_unit_whose_work_is_not_seen_is_counted_at_its_op_s_map(tmp_path: Path) -> None:
    """A scripted Sequential runs its conv inside its graph: the unit's multiply-adds are not known, so the
    cache records the map its op made (layer_op_shapes), and the shapes estimate counts the unit's
    parameters at its 6 × 6 positions, not the pool's 3 × 3."""
    torch.manual_seed(0)
    net = nn.Sequential(torch.jit.script(nn.Sequential(nn.Conv2d(1, 4, 3))), nn.ReLU(), nn.MaxPool2d(2))
    x, y = torch.rand(12, 1, 8, 8), torch.arange(12) % 2
    extract_features(net, [(x, y)], layers=["2"], out=tmp_path / "p.h5")
    with FeatureStore(tmp_path / "p.h5") as store:
        attrs, costs = store.attrs, costs_from_shapes(store)
    assert attrs["layer_macs"] == [None] and attrs["layer_op_shapes"] == [[4, 6, 6]]
    assert attrs["layer_params"] == [4 * 9 + 4] and costs.flops_total == 2 * (4 * 9 + 4) * 36


class _Attend(nn.Module):
    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, batch_first=batch_first)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x, x, x)[0]


def _kinds() -> list[tuple[str, nn.Module, tuple[torch.Tensor, ...], int]]:
    """(name, module, its input, one row's multiply-adds by hand): sequences of 10 steps, 16 wide."""
    attention = 4 * 16 * 16 * 10 + 2 * 10 * 10 * 16  # four projections at each step; scores and weighted sum
    return [
        ("transposed conv", nn.ConvTranspose2d(4, 8, 3), (torch.rand(2, 4, 5, 5),), 4 * 8 * 9 * 25),
        ("strided 1-d", nn.ConvTranspose1d(4, 6, 3, stride=2), (torch.rand(2, 4, 7),), 4 * 6 * 3 * 7),
        ("grouped", nn.ConvTranspose2d(4, 8, 3, groups=2), (torch.rand(2, 4, 5, 5),), 4 * 4 * 9 * 25),
        ("embedding", nn.Embedding(50, 8), (torch.randint(0, 50, (2, 10)),), 0),
        ("bilinear", nn.Bilinear(4, 5, 3), (torch.rand(2, 4), torch.rand(2, 5)), 4 * 5 * 3),
        ("attention", _Attend(True), (torch.rand(2, 10, 16),), attention),
        ("attention, steps first", _Attend(False), (torch.rand(10, 2, 16),), attention),
        (
            "encoder layer",
            nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True),
            (torch.rand(2, 10, 16),),
            attention + 2 * 16 * 32 * 10,
        ),
    ]


@pytest.mark.parametrize(("name", "module", "given", "by_hand"), _kinds(), ids=[k[0] for k in _kinds()])
def test_layer_macs_and_the_model_count_match_a_hand_count(name, module, given, by_hand) -> None:
    """A transposed conv's weight rows are its input's channels, attention's joint projection is 3 × its
    output's width, and an encoder layer in eval mode runs its fast path, calling none of its submodules:
    layer_macs was null (or 0 for the encoder layer), and torch's FlopCounterMode counted 0 for attention
    and the Bilinear. Both now count what a hand count does."""
    from torch.utils.flop_counter import FlopCounterMode

    module.eval()
    with call_order(module) as calls, torch.no_grad():
        module(*given)
    assert layer_macs(calls, {}, {"m": module}) == {"m": by_hand}
    from laya_inspect.models.work import missed_flops

    counter = FlopCounterMode(display=False)
    with missed_flops(module, counter.get_total_flops) as flops, counter, torch.no_grad():
        module(*given)
    assert flops() == 2 * 2 * by_hand  # two rows, 2 FLOPs a multiply-add


def test_attention_counted_by_torch_is_not_counted_twice() -> None:
    """With gradients on, attention runs its projections as matmuls torch's counter sees: nothing is added."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from laya_inspect.models.work import missed_flops

    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True).eval()
    counter = FlopCounterMode(display=False)
    with sdpa_kernel(SDPBackend.MATH), missed_flops(layer, counter.get_total_flops) as flops, counter:
        layer(torch.rand(2, 10, 16))
    assert flops() == counter.get_total_flops() == 2 * 2 * (4 * 16 * 16 * 10 + 2 * 10 * 10 * 16 + 2 * 16 * 32 * 10)


def test_a_weight_that_did_not_run_leaves_the_count_unknown() -> None:
    """A module whose Linear did not run where a hook saw it (a fast path that calls none of its
    submodules, or a branch not taken): its multiply-adds are not known, not counted as 0."""

    class Skips(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.used, self.unused = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.used(x)

    net = Skips()
    with call_order(net) as calls, torch.no_grad():
        net(torch.rand(2, 4))
    assert layer_macs(calls, {}, {"used": net.used, "all": net}) == {"used": 16, "all": None}


def _scripted_cache(tmp_path: Path) -> Path:
    from laya_inspect.cache.extract import ExtractConfig
    from laya_inspect.cache.extract import extract_features as extract

    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 15), nn.ReLU(), nn.Linear(15, 10))
    torch.jit.save(torch.jit.script(net.eval()), tmp_path / "s.pt")
    out = tmp_path / "s.h5"
    extract(ExtractConfig(model=f"torchscript:{tmp_path / 's.pt'}", data="digits", layers="all", out=str(out)))
    return out


def test_a_scripted_sequential_s_layer_types_are_its_children_s_classes(tmp_path: Path) -> None:
    """Every layer of a TorchScript archive was recorded as a RecursiveScriptModule (--layers all: each
    unit's ReLU): each now has the class its TorchScript copy keeps."""
    with FeatureStore(_scripted_cache(tmp_path)) as store:
        assert store.layer_names == ["2", "4"] and store.attrs["layer_types"] == ["ReLU", "ReLU"]


def test_the_model_count_runs_a_scripted_sequential_child_by_child(tmp_path: Path) -> None:
    """--costs model refused a TorchScript archive; a scripted Sequential runs child by child from Python,
    where torch's global hooks place each child: by hand, each Linear's weights once per row."""
    from laya_inspect.beyond.costs import backbone_costs

    sizes = [64 * 32 + 32, 32 * 15 + 15, 15 * 10 + 10]
    with FeatureStore(_scripted_cache(tmp_path)) as store:
        costs = backbone_costs(store, "model")
    assert costs.source == "model" and costs.params_total == sum(sizes)
    assert costs.flops_total == 2 * (64 * 32 + 32 * 15 + 15 * 10)
    # after each unit's ReLU: the Linear layers after it
    assert list(costs.params_after) == [sum(sizes[1:]), sizes[2]]
    assert list(costs.flops_after) == [2 * (32 * 15 + 15 * 10), 2 * 15 * 10]


def test_the_model_count_refuses_a_scripted_recurrent_part(tmp_path: Path) -> None:
    """A scripted LSTM's matmuls are not seen by torch's counter, nor can they be added by hand (it takes no
    hooks of its own): the count is refused, not given low."""
    from laya_inspect.beyond.costs import backbone_costs
    from laya_inspect.errors import InputError

    class _Steps(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.GRU(8, 8, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.rnn(x.reshape(len(x), 8, 8))[0][:, -1]

    torch.jit.save(torch.jit.script(nn.Sequential(_Steps(), nn.Linear(8, 10)).eval()), tmp_path / "r.pt")
    from laya_inspect.cache.extract import ExtractConfig
    from laya_inspect.cache.extract import extract_features as extract

    out = tmp_path / "r.h5"
    extract(ExtractConfig(model=f"torchscript:{tmp_path / 'r.pt'}", data="digits", layers="0", out=str(out)))
    with FeatureStore(out) as store, pytest.raises(InputError, match="GRU"):
        backbone_costs(store, "model")


class _MyRNN(nn.LSTM):
    """An LSTM under another class name."""


class _Rows(nn.Module):
    """A digit's 64 pixels as 8 steps of 8."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(-1, 8, 8)


class _Last(nn.Module):
    """An LSTM's output at its last step."""

    def forward(self, out: tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        return out[0][:, -1]


class _OwnLSTM(nn.Module):
    """A module that calls torch.lstm itself, holding no nn.LSTM."""

    def __init__(self) -> None:
        super().__init__()
        self.w_ih, self.w_hh = nn.Parameter(torch.rand(24, 8)), nn.Parameter(torch.rand(24, 6))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        h = torch.zeros(1, x.shape[0], 6)
        out = torch.lstm(x, [h, h], [self.w_ih, self.w_hh], False, 1, 0.0, False, False, True)
        return out[0], (out[1], out[2])


@pytest.mark.parametrize(
    ("archive", "named"),
    [
        (lambda net: torch.jit.trace(net, torch.rand(2, 64), check_trace=False), "_MyRNN"),
        (torch.jit.script, "_OwnLSTM"),
    ],
)
def test_the_model_count_refuses_a_scripted_recurrent_part_under_any_class_name(tmp_path: Path, archive, named) -> None:
    """A TorchScript LSTM was known by its class name: a subclass of nn.LSTM named otherwise, or a module
    calling torch.lstm itself, was counted without its matmuls. The ops of its graph name it."""
    from laya_inspect.beyond.costs import backbone_costs
    from laya_inspect.cache.extract import ExtractConfig
    from laya_inspect.cache.extract import extract_features as extract
    from laya_inspect.errors import InputError

    part = _MyRNN(8, 6, batch_first=True) if named == "_MyRNN" else _OwnLSTM()
    net = nn.Sequential(_Rows(), part, _Last(), nn.Linear(6, 10)).eval()
    torch.jit.save(archive(net), tmp_path / "r.pt")
    out = tmp_path / "r.h5"
    extract(ExtractConfig(model=f"torchscript:{tmp_path / 'r.pt'}", data="digits", out=str(out)))
    with FeatureStore(out) as store, pytest.raises(InputError, match=rf"1 \({named}: aten::lstm\)"):
        backbone_costs(store, "model")
