"""layers.py: resolving names, hook ownership, pooling — exact numbers on tiny modules."""

from __future__ import annotations

import pytest
import torch
from helpers import watch_hooks
from torch import nn

from laya_inspect.errors import InputError, NotFoundError
from laya_inspect.layers import (
    LayerInfo,
    capture,
    depth_order,
    hooks,
    list_layers,
    patch_grid,
    pool,
    reduce_batch,
    resolve_layers,
)

DEFAULT = ["layer1", "layer2", "layer3", "layer4"]
CANDIDATES = ["conv1", "bn1", *DEFAULT, "layer1.0", "layer1.0.conv1", "fc"]


def tiny() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 3))


# ---------------------------------------------------------------------------------------------
# resolve_layers


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ("layer2", ["layer2"]),
        ("-1", ["layer4"]),
        ("0,-1", ["layer1", "layer4"]),
        ("1:3", ["layer2", "layer3"]),
        ("::2", ["layer1", "layer3"]),
        ("-2:", ["layer3", "layer4"]),
        ("all", DEFAULT),
        ("conv1, layer1.0.conv1 ,fc", ["conv1", "layer1.0.conv1", "fc"]),
        (["fc", "0"], ["fc", "layer1"]),
        (["fc,0", "-1"], ["fc", "layer1", "layer4"]),  # list items may hold comma lists too
        ("::-2", ["layer4", "layer2"]),
        (":", DEFAULT),
        ("1::", ["layer2", "layer3", "layer4"]),
    ],
)
def test_resolve_layers(request_, expected):
    assert resolve_layers(request_, CANDIDATES, DEFAULT) == expected


def test_resolve_layers_typo_suggests_close_match():
    with pytest.raises(NotFoundError, match="did you mean 'layer4'"):
        resolve_layers("layr4", CANDIDATES, DEFAULT)


@pytest.mark.parametrize("bad", ["4", "-5"])
def test_resolve_layers_index_out_of_range(bad):
    with pytest.raises(NotFoundError, match="out of range"):
        resolve_layers(bad, CANDIDATES, DEFAULT)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("", "no layers requested"),
        (" , ", "no layers requested"),
        ("5:9", "selects none of the model's 4 default layers: layer1, layer2"),
        ("::0", "step 0"),
        ("all,layer4", r"selects 'layer4' more than once \(by 'all' and 'layer4'\).*'all' already stands"),
        ("fc,fc", r"selects 'fc' more than once \(twice by 'fc'\)"),
        ("0,layer1", r"selects 'layer1' more than once \(by '0' and 'layer1'\)"),
        ("0:2,1", r"selects 'layer2' more than once \(by '0:2' and '1'\)"),
    ],
)
def test_resolve_layers_refuses_empty_and_repeated_selections(bad, message):
    with pytest.raises(InputError, match=message) as info:
        resolve_layers(bad, CANDIDATES, DEFAULT)
    assert "\n" not in str(info.value)


def test_resolve_layers_from_a_model_without_default_layers_says_what_it_found():
    hint = "; TorchScript takes no Python hooks"
    for request in ("all", "0", "1:3"):
        with pytest.raises(InputError, match="has none; TorchScript takes no Python hooks; run with --list-layers"):
            resolve_layers(request, [], [], hint=hint)
    with pytest.raises(InputError, match="has none; it has 2 other layer names; run with --list-layers"):
        resolve_layers("all", ["a", "b"], [])
    assert resolve_layers("b", ["a", "b"], []) == ["b"]  # names still work
    with pytest.raises(NotFoundError, match=r"no layer 'c'; available: \(none\); run with --list-layers"):
        resolve_layers("c", [], [])


def test_resolve_layers_index_message_lists_the_default_layers():
    with pytest.raises(NotFoundError, match=r"valid are 0..3 or -4..-1 over the model's 4 default layers: layer1"):
        resolve_layers("7", CANDIDATES, DEFAULT)


def test_resolve_layers_names_what_it_picks_from_when_told():
    cache = ["blocks.0", "blocks.1", "blocks.2"]
    words = {"among": "the 3 layers of c.h5", "more": "c.h5 holds only these layers"}
    with pytest.raises(InputError, match=r"^layer range '10:5' selects none of the 3 layers of c.h5: blocks.0,"):
        resolve_layers("10:5", cache, cache, **words)
    with pytest.raises(NotFoundError, match=r"available: blocks.0, blocks.1, blocks.2; c.h5 holds only these layers$"):
        resolve_layers("blocks.9", cache, cache, **words)


def test_depth_order_sorts_by_the_order_given_and_says_so_only_when_it_moved_a_layer():
    order = ["layer1", "layer2", "layer3", "layer4"]
    assert depth_order(["layer2", "layer4"], order, "the model's order") == (["layer2", "layer4"], None)
    names, said = depth_order(["layer4", "layer1", "layer3"], order, "the model's order")
    assert names == ["layer1", "layer3", "layer4"]
    assert said == (
        "--layers layer4,layer1,layer3 named the layers out of depth order; "
        "they are kept in the model's order: layer1, layer3, layer4"
    )


# ---------------------------------------------------------------------------------------------
# capture


def test_capture_matches_plain_forward_and_removes_hooks():
    model, x = tiny(), torch.randn(5, 4)
    expected = model(x)
    with watch_hooks() as watch, capture(model, ["0", "2"]) as got:
        out = model(x)
    assert watch.registered == 2 and watch.fired_after(model, x) == 0
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    torch.testing.assert_close(got["2"], expected, rtol=0, atol=0)
    torch.testing.assert_close(got["0"], model[0](x), rtol=0, atol=0)


def test_capture_removes_hooks_after_exception_and_does_not_swallow_it():
    model, x = tiny(), torch.randn(2, 4)
    with watch_hooks() as watch, pytest.raises(ZeroDivisionError):
        with capture(model, ["0", "1", "2"]):
            model(x)
            assert watch.calls == 3
            1 / 0  # noqa: B018
    assert watch.fired_after(model, x) == 0


def test_capture_removes_hooks_when_forward_fails():
    model = tiny()
    with watch_hooks() as watch, pytest.raises(RuntimeError):
        with capture(model, ["0"]):
            model(torch.randn(2, 5))  # wrong width
    assert watch.registered == 1 and watch.fired_after(model, torch.randn(2, 4)) == 0


def test_capture_unknown_name_registers_nothing():
    model = tiny()
    with watch_hooks() as watch, pytest.raises(NotFoundError, match="did you mean '2'"):
        with capture(model, ["0", "22"]):
            pass
    assert watch.registered == 0


def test_capture_holds_the_outputs_in_the_order_the_forward_made_them():
    """A block's output comes after its parts'; a module run twice stands where it last ran."""

    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.shared = nn.Linear(4, 4)
            self.block = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.shared(self.block(self.shared(x)))

    with capture(model := Twice(), ["block", "shared", "block.0"]) as raw:
        model(torch.ones(2, 4))
    assert list(raw) == ["block.0", "block", "shared"]


def test_capture_survives_inplace_ops():
    """Linear 0's output is rewritten in place by ReLU(inplace=True); the capture must keep it."""
    model, x = tiny(), torch.randn(64, 4)
    with capture(model, ["0"]) as got:
        model(x)
    pre = model[0](x)
    assert (pre < 0).any()
    torch.testing.assert_close(got["0"], pre, rtol=0, atol=0)


def test_hooks_callback_sees_module_and_output():
    model, seen, x = tiny(), [], torch.randn(3, 4)
    with watch_hooks() as watch:
        with hooks(model, ["1"], lambda name, m, out: seen.append((name, type(m).__name__, tuple(out.shape)))):
            model(x)
    assert seen == [("1", "ReLU", (3, 8))]
    assert watch.registered == 1 and watch.fired_after(model, x) == 0 and len(seen) == 1


# ---------------------------------------------------------------------------------------------
# pool


def test_pool_4d_auto_is_gap():
    x = torch.arange(2 * 3 * 2 * 2, dtype=torch.float32).reshape(2, 3, 2, 2)
    out, how = pool(x)
    assert how == "gap"
    torch.testing.assert_close(out, x.mean((2, 3)))
    assert out[0, 0].item() == 1.5  # mean of 0, 1, 2, 3
    for method, ref in [("max", x.amax((2, 3))), ("mean", x.mean((2, 3))), ("flatten", x.reshape(2, 12))]:
        got, decided = pool(x, method)
        assert decided == method
        torch.testing.assert_close(got, ref)


def test_pool_3d_sequences():
    x = torch.randn(2, 5, 4)
    assert pool(x)[1] == "cls"
    torch.testing.assert_close(pool(x)[0], x[:, 0])
    torch.testing.assert_close(pool(x, "mean")[0], x.mean(1))
    torch.testing.assert_close(pool(x, "max")[0], x.amax(1))
    torch.testing.assert_close(pool(x, "last")[0], x[:, -1])
    torch.testing.assert_close(pool(x, "flatten")[0], x.reshape(2, 20))


@pytest.mark.parametrize(
    ("tokens", "image_hw", "grid"),
    [
        (196, (224, 224), True),  # ViT-S/16's 14 × 14 patches, no class token (MLP-Mixer, a mean-pooled ViT)
        (197, (224, 224), False),  # + a class token
        (198, (224, 224), False),  # + class and distillation tokens (DeiT)
        (201, (224, 224), False),  # + class token and 4 registers
        (3136, (224, 224), True),  # Swin's first stage, 56 × 56
        (280, (224, 320), True),  # 14 × 20 patches of a 224 × 320 image
        (281, (224, 320), False),
        (280, (224, 224), False),  # a grid of another shape than the image
        (484, (336, 368), False),  # 21 × 23 patches + a class token = 22²: no whole stride gives 22 × 22
        (260, (256, 256), False),  # 16 × 16 patches + 4 registers
        (1, (8, 8), True),  # one patch
    ],
)
def test_patch_grid_tells_patches_alone_from_patches_behind_a_class_token(tokens, image_hw, grid):
    assert patch_grid(tokens, image_hw) is grid


def test_pool_3d_auto_of_an_images_patches_is_their_mean():
    """Token 0 of patches with no class token is the image's top-left patch: auto takes their mean
    instead; a sequence behind a class token, and a text (no image size), keep token 0."""
    x = torch.arange(2 * 17 * 3, dtype=torch.float32).reshape(2, 17, 3)
    patches = x[:, 1:]  # 16 = 4 × 4 patches of a 32 × 32 image
    out, how = pool(patches, "auto", image_hw=(32, 32))
    assert how == "mean" and torch.equal(out, patches.mean(1))
    out, how = pool(x, "auto", image_hw=(32, 32))
    assert how == "cls" and torch.equal(out, x[:, 0])
    assert pool(patches, "auto")[1] == "cls"
    assert pool(patches, "cls", image_hw=(32, 32))[1] == "cls"  # asked for: kept
    _, decided, _ = reduce_batch({"p": patches, "c": x}, ["p", "c"], "auto", {}, image_hw=(32, 32))
    assert decided == {"p": "mean", "c": "cls"}


def test_the_models_mean_after_its_front_tokens_skips_them_and_the_padding():
    """``sequence="mean[1:]"`` (a decoder's start token): the mean over each text's tokens after
    token 0; a text that is its start token alone keeps it rather than becoming zeros."""
    x = torch.randn(3, 4, 5)
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]])
    rows, decided = pool(x, "auto", sequence="mean[1:]", mask=mask)
    assert decided == "mean[1:]"
    torch.testing.assert_close(rows, torch.stack([x[0, 1:3].mean(0), x[1, 0], x[2, 1:].mean(0)]))
    torch.testing.assert_close(pool(x, "auto", sequence="mean[2:]")[0], x[:, 2:].mean(1))
    assert pool(x, "mean")[1] == "mean" and pool(x[:, :1], "auto", sequence="mean[1:]")[0].shape == (3, 5)


def test_pool_3d_masked_skips_padding():
    x = torch.randn(2, 4, 3)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    torch.testing.assert_close(pool(x, "mean", mask=mask)[0][0], x[0, :2].mean(0))
    torch.testing.assert_close(pool(x, "last", mask=mask)[0], torch.stack([x[0, 1], x[1, 3]]))
    torch.testing.assert_close(pool(x, "max", mask=mask)[0][0], x[0, :2].amax(0))
    left = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])  # left padding: last real token is still the last
    torch.testing.assert_close(pool(x, "last", mask=left)[0][0], x[0, 3])
    # bfloat16 (module outputs under --amp) holds 395 and 396 as one number: the index is an integer
    long_ = torch.randn(1, 400, 2).to(torch.bfloat16)
    mask400 = torch.zeros(1, 400, dtype=torch.long)
    mask400[0, :397] = 1
    torch.testing.assert_close(pool(long_, "last", mask=mask400)[0][0], long_[0, 396].float())


def test_pool_of_a_layer_whose_token_count_differs_from_the_mask():
    """Funnel merges tokens (its layer has fewer positions than the padded texts) and Longformer pads
    further inside (more): the mask was dropped, and mean/last read the padding silently."""
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    merged = torch.randn(2, 2, 3)
    with pytest.raises(InputError, match="2 positions where the padded texts have 4 tokens.*--pool cls"):
        pool(merged, "mean", mask=mask)
    torch.testing.assert_close(pool(merged, "cls", mask=mask)[0], merged[:, 0])  # token 0 needs no mask
    torch.testing.assert_close(pool(merged, "mean", mask=torch.ones(2, 4))[0], merged.mean(1))  # no padding
    longer = torch.randn(2, 6, 3)
    torch.testing.assert_close(pool(longer, "mean", mask=mask)[0][0], longer[0, :2].mean(0))
    torch.testing.assert_close(pool(longer, "last", mask=mask)[0][1], longer[1, 3])
    # a text alone (no padding of ours) leaves the model's own padding out all the same
    torch.testing.assert_close(pool(longer, "mean", mask=torch.ones(2, 4))[0], longer[:, :4].mean(1))


def test_pool_2d_passes_through_and_dtype_is_float():
    x = torch.randn(3, 7, dtype=torch.float64)
    for method in ("auto", "mean", "max", "cls", "last"):
        out, how = pool(x, method)
        assert how == "none" and out.dtype == torch.float32 and out.shape == (3, 7)
    assert pool(torch.randn(3, 7, dtype=torch.float16))[0].dtype == torch.float32


def test_pool_tuple_uses_first_tensor():
    x = torch.randn(2, 6, 4)
    out, how = pool((x, None, torch.randn(9)))
    assert how == "cls"
    torch.testing.assert_close(out, x[:, 0])
    torch.testing.assert_close(pool({"a": x})[0], x[:, 0])


class _ScoreFirst(nn.Module):
    """A user's block that returns what it computed in its own order: a dict with an auxiliary loss
    first, or a tuple with a per-row score before the feature map."""

    def __init__(self, order: str) -> None:
        super().__init__()
        self.order, self.conv = order, nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> object:
        y = torch.relu(self.conv(x))
        if self.order == "dict":
            return {"aux_loss": y.square().mean(), "features": y}
        return y.mean((1, 2, 3)), y


def test_a_blocks_auxiliary_loss_is_passed_over_and_a_score_before_its_features_refused():
    """QA: a user's convnet whose block returned {"aux_loss": scalar, "features": map} stopped extract
    with a bare IndexError (the scalar was pooled); one returning (score per row, map) was stored as a
    layer of width 1, its score, with no word. The scalar holds nothing per row and is passed over;
    the score first is refused, naming what the output holds."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, 8)
    net = nn.Sequential(_ScoreFirst("dict"))
    with capture(net, ["0"]) as raw:
        feats = net(x)["features"]
    pooled, decided, shapes = reduce_batch(raw, ["0"], "auto", net)
    torch.testing.assert_close(pooled["0"], feats.mean((2, 3)))
    assert decided == {"0": "gap"} and shapes == {"0": (4, 8, 8)}
    net = nn.Sequential(_ScoreFirst("tuple"))
    with capture(net, ["0"]) as raw:
        net(x)
    with pytest.raises(InputError, match=r"layer '0': .*one number per row first \(N,\) and an \(N, 4, 8, 8\) tensor"):
        reduce_batch(raw, ["0"], "auto", net)
    with pytest.raises(InputError, match="no tensor with a batch axis"):
        pool(torch.tensor(1.0))


@pytest.mark.parametrize(("kind", "batch_first"), [("LSTM", True), ("LSTM", False), ("GRU", True)])
def test_pool_rnn_final_hidden_state_both_directions(kind, batch_first):
    torch.manual_seed(0)
    rnn = getattr(nn, kind)(3, 5, num_layers=2, bidirectional=True, batch_first=batch_first)
    x = torch.randn(4, 7, 3)
    output = rnn(x if batch_first else x.transpose(0, 1))
    out, how = pool(output, "auto", rnn)
    assert how == "final_hidden" and out.shape == (4, 10)
    seq = output[0] if batch_first else output[0].transpose(0, 1)  # (N, T, 2H)
    # forward direction ends at the last step, the backward one at the first
    torch.testing.assert_close(out, torch.cat([seq[:, -1, :5], seq[:, 0, 5:]], 1))
    torch.testing.assert_close(pool(output, "mean", rnn)[0], seq.mean(1))
    assert pool(output, "last", rnn)[0].shape == (4, 10)


def test_pool_unidirectional_rnn():
    rnn = nn.LSTM(3, 5, batch_first=True)
    output = rnn(torch.randn(2, 4, 3))
    torch.testing.assert_close(pool(output, "auto", rnn)[0], output[0][:, -1])


def test_pool_errors():
    with pytest.raises(InputError, match="gap"):
        pool(torch.randn(2, 5, 4), "gap")
    with pytest.raises(InputError, match="cls"):
        pool(torch.randn(2, 3, 4, 4), "cls")
    with pytest.raises(NotFoundError, match="did you mean 'mean'"):
        pool(torch.randn(2, 3), "meen")
    with pytest.raises(InputError, match="no tensor"):
        pool((None, "x"))


def test_reduce_batch_pools_records_and_names_the_layer_on_error():
    rnn = nn.LSTM(3, 4, batch_first=True, bidirectional=True)
    raw = {"conv": torch.randn(2, 6, 5, 5), "rnn": rnn(torch.randn(2, 9, 3)), "vec": torch.randn(2, 3)}
    pooled, decided, shapes = reduce_batch(raw, ["conv", "rnn", "vec"], "auto", {"rnn": rnn})
    assert {k: tuple(v.shape) for k, v in pooled.items()} == {"conv": (2, 6), "rnn": (2, 8), "vec": (2, 3)}
    assert decided == {"conv": "gap", "rnn": "final_hidden", "vec": "none"}
    assert shapes == {"conv": (6, 5, 5), "rnn": (9, 8), "vec": (3,)}
    _, decided, _ = reduce_batch(raw, ["conv", "vec"], {"conv": "max"}, {})
    assert decided == {"conv": "max", "vec": "none"}
    with pytest.raises(InputError, match="layer 'vec'.*gap"):
        reduce_batch(raw, ["vec"], "gap", {})
    with pytest.raises(InputError, match="produced no output"):
        reduce_batch(raw, ["missing"], "auto", {})


def test_list_layers_plain_module():
    infos = list_layers(tiny(), torch.randn(2, 4))
    assert infos == [LayerInfo("0", "Linear", (8,)), LayerInfo("1", "ReLU", (8,)), LayerInfo("2", "Linear", (3,))]


def test_a_module_named_by_a_number_is_selected_with_name_prefix():
    """An nn.Sequential's children are named "0", "3", "7": 7 is an index, name:7 the module "7"."""
    candidates, default = ["0", "3", "7", "11"], ["3", "7"]
    assert resolve_layers("name:7,name:11", candidates, default) == ["7", "11"]
    assert resolve_layers("1", candidates, default) == ["7"]  # an index still
    with pytest.raises(NotFoundError, match="give name:11 for the module named '11'"):
        resolve_layers("11", candidates, default)
    with pytest.raises(NotFoundError, match="no layer '12'"):
        resolve_layers("name:12", candidates, default)
