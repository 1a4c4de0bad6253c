"""Every model source loads a real instance offline: torchvision, timm, hf, torchscript, python."""

from __future__ import annotations

import json
import os
import shutil
import warnings

import numpy as np
import pytest
import torch
from helpers import need_timm_model, watch_hooks
from torch import nn

from laya_inspect.errors import InputError, NotFoundError
from laya_inspect.layers import list_layers, reduce_batch, resolve_layers
from laya_inspect.models import SOURCES, load_model

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def frozen(loaded) -> bool:
    return not loaded.module.training and not any(p.requires_grad for p in loaded.module.parameters())


def test_unknown_prefix_lists_valid_ones():
    with pytest.raises(NotFoundError, match="did you mean 'timm'.*torchvision, timm, hf, torchscript, python, zoo"):
        load_model("tim:resnet18")
    with pytest.raises(NotFoundError, match="needs a source prefix"):
        load_model("resnet18")
    assert set(SOURCES.names()) == {"torchvision", "timm", "hf", "torchscript", "python", "zoo"}


# ---------------------------------------------------------------------------------------------
# torchvision


def test_torchvision_resnet_and_mobilenet_describe_themselves():
    pytest.importorskip("torchvision")
    r18 = load_model("torchvision:resnet18", random_init=True)
    assert r18.default_layers == ["layer1", "layer2", "layer3", "layer4"] and r18.num_classes == 1000
    spec = r18.input_spec
    assert (spec.kind, spec.channels, spec.size, spec.mean, spec.std) == (
        "image",
        3,
        224,
        (0.485, 0.456, 0.406),
        (0.229, 0.224, 0.225),
    )
    assert frozen(r18) and r18.weights_sha256 is None
    mnv2 = load_model("torchvision:mobilenet_v2", random_init=True)
    assert mnv2.default_layers == [f"features.{i}" for i in range(19)]
    x = torch.rand(2, 3, 64, 64)
    raw, logits = mnv2.run(x, ["features.3", "classifier.1"])
    pooled, decided, shapes = reduce_batch(raw, list(raw), "auto", mnv2.module)
    assert decided == {"features.3": "gap", "classifier.1": "none"} and shapes["features.3"] == (24, 16, 16)
    torch.testing.assert_close(pooled["classifier.1"], logits, rtol=0, atol=0)


def test_torchvision_unknown_name():
    pytest.importorskip("torchvision")
    with pytest.raises(NotFoundError, match="did you mean 'resnet18'"):
        load_model("torchvision:resnet81", random_init=True)


# ---------------------------------------------------------------------------------------------
# timm


def test_timm_vit_with_weights_and_headless(tmp_path):
    timm = need_timm_model("test_vit")
    torch.manual_seed(0)
    ref = timm.create_model("test_vit", pretrained=False, num_classes=5).eval()
    torch.save({"state_dict": ref.state_dict()}, tmp_path / "vit.pth")
    loaded = load_model("timm:test_vit", weights=tmp_path / "vit.pth")
    assert loaded.num_classes == 5 and loaded.default_layers[:2] == ["blocks.0", "blocks.1"]
    c, size = loaded.input_spec.channels, loaded.input_spec.size
    assert (c, size, loaded.input_spec.mean) == (
        3,
        ref.pretrained_cfg["input_size"][1],
        tuple(ref.pretrained_cfg["mean"]),
    )
    x = torch.rand(2, c, size, size)
    raw, logits = loaded.run(x, ["blocks.0", loaded.default_layers[-1]])
    with torch.no_grad():
        torch.testing.assert_close(logits, ref(x), rtol=0, atol=0)
    pooled, decided, _ = reduce_batch(raw, list(raw), "auto", loaded.module)
    assert set(decided.values()) == {"cls"}
    headless = {k: v for k, v in ref.state_dict().items() if not k.startswith("head.")}
    torch.save(headless, tmp_path / "backbone.pth")
    bare = load_model("timm:test_vit", weights=tmp_path / "backbone.pth")
    assert bare.num_classes is None and bare.run(x, [])[1] is None


def test_timm_weights_under_a_wrappers_prefix(tmp_path):
    """transformers' TimmWrapper (and a Lightning module) keep a timm model's weights under its
    attribute (``timm_model.``): the class count was not found, the model was built headless, and
    every key was missing. An hf: folder of one says how to read it as timm."""
    transformers = pytest.importorskip("transformers")
    timm = need_timm_model("test_resnet")
    torch.manual_seed(0)
    ref = timm.create_model("test_resnet", pretrained=False, num_classes=3).eval()
    torch.save({f"timm_model.{k}": v for k, v in ref.state_dict().items()}, tmp_path / "wrapped.pth")
    loaded = load_model("timm:test_resnet", weights=tmp_path / "wrapped.pth")
    assert loaded.num_classes == 3 and any("under 'timm_model.'" in w for w in loaded.warnings)
    x = torch.rand(1, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded.run(x, [])[1], ref(x), rtol=0, atol=0)
    config = transformers.TimmWrapperConfig(architecture="test_resnet", num_labels=3)
    transformers.TimmWrapperForImageClassification(config).save_pretrained(tmp_path / "hf")
    with pytest.raises(InputError, match=r"--model timm:test_resnet --weights .*model\.safetensors"):
        load_model(f"hf:{tmp_path / 'hf'}")


def test_timm_resnet_default_layers_from_feature_info():
    need_timm_model("test_resnet")
    loaded = load_model("timm:test_resnet", random_init=True)
    assert loaded.default_layers == ["act1", "layer1", "layer2", "layer3", "layer4"]
    with pytest.raises(NotFoundError, match="did you mean 'test_resnet'"):
        load_model("timm:test_resnett", random_init=True)


# ---------------------------------------------------------------------------------------------
# Hugging Face


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("bert")
    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "the",
        "a",
        "cat",
        "sat",
        "on",
        "mat",
        "good",
        "movie",
        "##s",
    ]
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(d / "vocab.txt"))
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=3,
    )
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config).eval()
    model.save_pretrained(d / "model")
    tokenizer.save_pretrained(d / "model")
    return d / "model", model


def test_hf_bert_text_classifier(bert_dir):
    path, ref = bert_dir
    loaded = load_model(f"hf:{path}")
    assert loaded.default_layers == ["hidden_states.0", "hidden_states.1", "hidden_states.2"]
    assert loaded.role("hidden_states.0") == "embeddings" and loaded.role("hidden_states.2") == "block"
    assert loaded.num_classes == 3 and loaded.input_spec.kind == "text" and loaded.input_spec.max_length == 64
    assert loaded.tokenizer is not None and frozen(loaded) and len(loaded.weights_sha256) == 64
    batch = dict(loaded.tokenizer(["the cat sat on the mat", "good movies"], padding=True, return_tensors="pt"))
    names = resolve_layers("all,bert.encoder.layer.1", loaded.candidate_layers(), loaded.default_layers)
    raw, logits = loaded.run(batch, names)
    with torch.no_grad():
        expected = ref(**batch)
    torch.testing.assert_close(logits, expected.logits, rtol=0, atol=0)
    layer_out = raw["bert.encoder.layer.1"]
    layer_out = layer_out[0] if isinstance(layer_out, tuple) else layer_out
    torch.testing.assert_close(layer_out, raw["hidden_states.2"], rtol=0, atol=0)  # hook == hidden state
    pooled, decided, shapes = reduce_batch(raw, names, "auto", loaded.module, mask=batch["attention_mask"])
    assert decided["hidden_states.0"] == "cls" and pooled["hidden_states.2"].shape == (2, 32)
    assert shapes["hidden_states.1"] == (batch["input_ids"].shape[1], 32)
    infos = {i.name: i for i in list_layers(loaded, batch)}
    assert infos["hidden_states.0"].role == "embeddings" and infos["hidden_states.0"].default
    assert infos["bert.encoder.layer.0"].shape == (batch["input_ids"].shape[1], 32)
    dry = {i.name: i.shape for i in list_layers(loaded)}  # dummy batch from the tokenizer
    assert dry["hidden_states.2"][1] == 32
    assert list(loaded.run(batch, ["hidden_states.2", "hidden_states.0"])[0]) == ["hidden_states.0", "hidden_states.2"]
    with pytest.raises(InputError, match=r"mixes 'hidden_states.0', read from the output .* 'bert.encoder.layer.1'"):
        loaded.resolve_layers("bert.encoder.layer.1,0")  # which is deeper cannot be told


def test_a_sentence_transformers_folder_cuts_texts_where_it_was_trained(bert_dir, tmp_path):
    """all-MiniLM-L6-v2's sentence_bert_config.json says max_seq_length 256 while its tokenizer allows
    512: texts were read up to 512 tokens, beyond what the sentence embeddings were trained on."""
    import shutil

    path, _ = bert_dir
    d = tmp_path / "st"
    shutil.copytree(path, d)
    (d / "sentence_bert_config.json").write_text('{"max_seq_length": 16, "do_lower_case": false}')
    assert load_model(f"hf:{d}").input_spec.max_length == 16
    (d / "sentence_bert_config.json").write_text('{"max_seq_length": 4096}')  # never above the model's own
    assert load_model(f"hf:{d}").input_spec.max_length == 64
    (d / "sentence_bert_config.json").write_text("not json")
    assert load_model(f"hf:{d}").input_spec.max_length == 64


def test_hf_vit_image_classifier(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = transformers.ViTConfig(
        image_size=16,
        patch_size=8,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=4,
    )
    torch.manual_seed(0)
    ref = transformers.ViTForImageClassification(config).eval()
    ref.save_pretrained(tmp_path)
    loaded = load_model(f"hf:{tmp_path}")
    spec = loaded.input_spec
    assert (spec.kind, spec.channels, spec.size, spec.mean) == ("image", 3, 16, (0.5, 0.5, 0.5))
    x = torch.rand(2, 3, 16, 16)
    raw, logits = loaded.run(x, ["hidden_states.0", "hidden_states.2"])
    with torch.no_grad():
        torch.testing.assert_close(logits, ref(pixel_values=x).logits, rtol=0, atol=0)
    assert raw["hidden_states.2"].shape == (2, 5, 32)  # CLS + 4 patches
    # an image processor saved beside the model decides size and normalisation
    transformers.ViTImageProcessor(
        size={"height": 16, "width": 16}, image_mean=[0.4] * 3, image_std=[0.2] * 3
    ).save_pretrained(tmp_path)
    spec = load_model(f"hf:{tmp_path}").input_spec
    assert (spec.size, spec.mean, spec.std) == (16, (0.4,) * 3, (0.2,) * 3)


def test_hf_audio_models_and_two_tower_models_are_refused_in_one_line(tmp_path):
    """Wav2Vec2 was refused as "the model takes text" and CLIPModel failed inside its forward with
    "'NoneType' object has no attribute 'shape'": neither says what to do."""
    transformers = pytest.importorskip("transformers")
    small = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32}
    audio = transformers.Wav2Vec2Config(
        **small, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=4
    )
    transformers.Wav2Vec2Model(audio).save_pretrained(tmp_path / "w2v")
    with pytest.raises(InputError, match="takes input_values .* reads image models"):
        load_model(f"hf:{tmp_path / 'w2v'}")
    towers = transformers.CLIPConfig(
        text_config={**small, "vocab_size": 20, "max_position_embeddings": 16},
        vision_config={**small, "image_size": 16, "patch_size": 8},
    )
    transformers.CLIPModel(towers).save_pretrained(tmp_path / "clip")
    with pytest.raises(InputError, match="a text and vision model .* CLIPVisionModel.from_pretrained"):
        load_model(f"hf:{tmp_path / 'clip'}")
    # one tower's classifier on the same config takes images alone: read as an image model
    towers.id2label = {0: "a", 1: "b"}
    transformers.CLIPForImageClassification(towers).save_pretrained(tmp_path / "clip-clf")
    clf = load_model(f"hf:{tmp_path / 'clip-clf'}")
    assert (clf.input_spec.kind, clf.input_spec.size, clf.num_classes) == ("image", 16, 2)
    assert clf.default_layers == ["hidden_states.0", "hidden_states.1", "hidden_states.2"]


def test_hf_weights_the_folder_lacks_are_refused_or_kept_out(bert_dir, tmp_path):
    """A folder whose weights lack two of its encoder layers (or a config that names more layers
    than the weights hold) was cached with those layers filled at random by transformers, with
    random_init False and no warning; a pooler the weights lack was read as a layer."""
    transformers = pytest.importorskip("transformers")
    from safetensors.torch import load_file, save_file

    path, _ = bert_dir
    broken = tmp_path / "broken"
    shutil.copytree(path, broken)
    state = load_file(broken / "model.safetensors")
    save_file({k: v for k, v in state.items() if ".layer.1." not in k}, broken / "model.safetensors")
    with pytest.raises(InputError, match=r"hold no values for \d+ of the model's tensors .*bert\.encoder\.layer\.1"):
        load_model(f"hf:{broken}")
    more = tmp_path / "more"
    shutil.copytree(path, more)
    config = json.loads((more / "config.json").read_text())
    (more / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 4}))
    with pytest.raises(InputError, match="layer.2"):
        load_model(f"hf:{more}")
    no_pooler = tmp_path / "no-pooler"
    shutil.copytree(path, no_pooler)
    save_file({k: v for k, v in state.items() if ".pooler." not in k}, no_pooler / "model.safetensors")
    loaded = load_model(f"hf:{no_pooler}")
    assert loaded.untrained == ("bert.pooler",) and loaded.num_classes is None  # its logits read the pooler
    assert any("bert.pooler is not in its weight files" in w for w in loaded.warnings)
    assert loaded.resolve_layers("all") == ["hidden_states.0", "hidden_states.1", "hidden_states.2"]
    with pytest.raises(InputError, match="'bert.pooler.dense' .* random numbers"):
        loaded.resolve_layers("bert.pooler.dense")
    assert transformers.BertForSequenceClassification.from_pretrained(no_pooler) is not None


def test_hf_head_weights_a_folder_or_its_checkpoint_may_lack(bert_dir, tmp_path):
    """What a folder of base weights under a classifier's config lacks lies outside the base model
    (XLNet's logits_proj, BERT's classifier): a head, not a body, so no refusal; --weights that fill
    it leave nothing untrained; BatchNorm's step counter is no weight."""
    transformers = pytest.importorskip("transformers")
    path, _ = bert_dir
    config = json.loads((path / "config.json").read_text())
    torch.manual_seed(0)
    xlnet = tmp_path / "xlnet"
    transformers.XLNetModel(
        transformers.XLNetConfig(d_model=16, n_layer=2, n_head=2, d_inner=32, vocab_size=config["vocab_size"])
    ).save_pretrained(xlnet)
    saved = json.loads((xlnet / "config.json").read_text())
    (xlnet / "config.json").write_text(json.dumps({**saved, "architectures": ["XLNetForSequenceClassification"]}))
    loaded = load_model(f"hf:{xlnet}")
    assert set(loaded.untrained) == {"logits_proj", "sequence_summary"} and loaded.num_classes is None
    assert loaded.default_layers == ["hidden_states.0", "hidden_states.1", "hidden_states.2"]
    base = tmp_path / "base"
    transformers.BertModel(transformers.BertConfig(**{**config, "architectures": None})).save_pretrained(base)
    (base / "config.json").write_text(json.dumps({**config, "architectures": ["BertForSequenceClassification"]}))
    assert load_model(f"hf:{base}").untrained == ("classifier",)
    tuned = transformers.BertForSequenceClassification(transformers.BertConfig(**config))
    torch.save(tuned.state_dict(), tmp_path / "tuned.pt")
    filled = load_model(f"hf:{base}", weights=tmp_path / "tuned.pt")
    assert filled.untrained == () and filled.num_classes == 3 and not filled.warnings
    resnet = tmp_path / "resnet"
    transformers.ResNetModel(
        transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1])
    ).save_pretrained(resnet)
    from safetensors.torch import load_file, save_file

    state = load_file(resnet / "model.safetensors")
    save_file({k: v for k, v in state.items() if "num_batches_tracked" not in k}, resnet / "model.safetensors")
    assert load_model(f"hf:{resnet}").untrained == ()


def test_hf_image_models_whose_config_names_no_size_and_counts_no_layers(tmp_path):
    """ResNet's config has no image_size: it was taken for a text model and refused on images.
    MobileNetV2's config counts no layers: --layers all was the whole backbone, one layer.
    EfficientNet's num_hidden_layers counts sub-blocks: the default layers named states it lacks."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    resnet = transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_labels=3)
    transformers.ResNetForImageClassification(resnet).save_pretrained(tmp_path / "resnet")
    transformers.ConvNextImageProcessor(size={"shortest_edge": 32}).save_pretrained(tmp_path / "resnet")
    loaded = load_model(f"hf:{tmp_path / 'resnet'}")
    assert (loaded.input_spec.kind, loaded.input_spec.size) == ("image", 32)
    assert loaded.default_layers == ["hidden_states.0", "hidden_states.1", "hidden_states.2"]
    mobile = transformers.MobileNetV2Config(image_size=32, depth_multiplier=0.25, num_labels=3)
    ref = transformers.MobileNetV2ForImageClassification(mobile).eval()
    ref.save_pretrained(tmp_path / "mobile")
    loaded = load_model(f"hf:{tmp_path / 'mobile'}")
    x = torch.rand(1, 3, 32, 32)
    with torch.no_grad():
        states = ref(pixel_values=x, output_hidden_states=True).hidden_states
    assert len(states) > 2 and loaded.default_layers == [f"hidden_states.{k}" for k in range(len(states))]
    raw, _ = loaded.run(x, loaded.default_layers)
    for k, state in enumerate(states):
        torch.testing.assert_close(raw[f"hidden_states.{k}"], state)


def test_hf_roberta_positions_start_after_its_padding_index(tmp_path, bert_dir):
    """RoBERTa numbers its positions from padding_idx + 1: with max_position_embeddings 66 and a
    tokenizer that states no length, texts of 66 tokens failed inside the model ("index 66 is out
    of bounds"); they are cut at 64."""
    transformers = pytest.importorskip("transformers")
    path, _ = bert_dir
    config = transformers.RobertaConfig(
        vocab_size=14,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=66,
        pad_token_id=1,
    )
    d = tmp_path / "roberta"
    transformers.RobertaModel(config).save_pretrained(d)
    for name in ("vocab.txt", "tokenizer_config.json", "tokenizer.json", "special_tokens_map.json"):
        if (path / name).is_file():
            shutil.copy(path / name, d)
    settings = json.loads((d / "tokenizer_config.json").read_text())
    settings.pop("model_max_length", None)
    (d / "tokenizer_config.json").write_text(json.dumps(settings))
    loaded = load_model(f"hf:{d}")
    assert loaded.input_spec.max_length == 64
    batch = dict(loaded.tokenizer(["the cat " * 60], truncation=True, max_length=64, return_tensors="pt"))
    loaded.run(batch, ["hidden_states.1"])  # 64 tokens run


def test_hf_missing_directory(tmp_path):
    with pytest.raises(NotFoundError, match="never downloaded"):
        load_model(f"hf:{tmp_path / 'absent'}")


# ---------------------------------------------------------------------------------------------
# TorchScript


class TwoOutputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 6)
        self.head = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.body(x))
        return self.head(h), h


def _jit_save(module: nn.Module, path, example=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)  # a module traced in training mode
        scripted = torch.jit.trace(module, example) if example is not None else torch.jit.script(module)
        torch.jit.save(scripted, str(path))
    return path


def test_torchscript_sequential_layers_run_child_by_child(tmp_path):
    torch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 3)).eval()
    for how, example in (("script", None), ("trace", torch.rand(2, 4))):
        loaded = load_model(f"torchscript:{_jit_save(ref, tmp_path / f'{how}.pt', example)}")
        # one tap per unit, after its activation (Linear, ReLU → "1"); the classifier's unit left out
        assert loaded.default_layers == ["1", "2"] and loaded.num_classes == 3 and frozen(loaded)
        x = torch.rand(5, 4)
        raw, logits = loaded.run(x, ["0", "2.1", "3"])
        with torch.no_grad():
            torch.testing.assert_close(logits, ref(x), rtol=0, atol=0)
            torch.testing.assert_close(raw["2.1"], ref[2](ref[1](ref[0](x))), rtol=0, atol=0)
            torch.testing.assert_close(raw["3"], logits, rtol=0, atol=0)
        infos = {i.name: i.shape for i in list_layers(loaded, x)}
        assert infos["2.1"] == (8,) and infos["2"] == (8,)


def test_torchscript_tuple_outputs_and_clear_error_for_hooks(tmp_path):
    torch.manual_seed(0)
    ref = TwoOutputs().eval()
    x = torch.rand(3, 4)
    for path in (_jit_save(ref, tmp_path / "s.pt"), _jit_save(ref, tmp_path / "t.pt", x)):
        loaded = load_model(f"torchscript:{path}")
        assert loaded.default_layers == [] and loaded.num_classes is None  # a tuple's order is no depth
        raw, logits = loaded.run(x, ["outputs.1"])
        assert logits is None
        with torch.no_grad():
            torch.testing.assert_close(raw["outputs.1"], torch.relu(ref.body(x)), rtol=0, atol=0)
        with pytest.raises(InputError, match="TorchScript takes no Python hooks.*outputs.0, outputs.1"):
            loaded.run(x, ["body"])


class ThreeOutputs(nn.Module):
    """Returns (logits, first hidden, second hidden): the tuple's order is not the depth order."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.head = nn.Linear(4, 6), nn.Linear(6, 5), nn.Linear(5, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a = torch.relu(self.a(x))
        b = torch.relu(self.b(a))
        return self.head(b), a, b


class LogitsLast(ThreeOutputs):
    """Returns (first hidden, second hidden, logits): the logits need not come first."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a = torch.relu(self.a(x))
        b = torch.relu(self.b(a))
        return a, b, self.head(b)


def test_torchscript_tuple_hint_names_no_layers_that_hold_the_logits(tmp_path):
    """QA: the refusal of a tuple's outputs gave "e.g. --layers outputs.1,outputs.2", right only where the
    logits come first: for (h1, h2, logits) it read the logits. It names no outputs to pick and says how
    to tell the logits, which --list-layers shows: the output whose last dimension is the class count."""
    torch.manual_seed(0)
    loaded = load_model(f"torchscript:{_jit_save(LogitsLast().eval(), tmp_path / 'last.pt')}")
    with pytest.raises(InputError) as e:
        loaded.resolve_layers("all")
    said = str(e.value)
    assert "(outputs.0, outputs.1, outputs.2)" in said and "nor which is the logits" in said
    assert "e.g. --layers" not in said and "--list-layers shows each output's shape" in said
    shapes = {i.name: i.shape for i in list_layers(loaded, torch.rand(2, 4))}
    assert shapes == {"outputs.0": (6,), "outputs.1": (5,), "outputs.2": (3,)}  # the logits: 3 classes, last


def test_torchscript_tuple_order_is_no_depth_order(tmp_path):
    """QA: a forward returning (logits, a, b, c) with no --layers read the logits (outputs.0) as the
    shallowest layer. Without --layers it is refused naming the outputs and how to choose; with
    --layers the cache keeps them in the order named (shallowest first), not the tuple's."""
    from laya_inspect.cache.extract import extract_features
    from laya_inspect.cache.extract_config import ExtractConfig
    from laya_inspect.cache.store import FeatureStore

    torch.manual_seed(0)
    path = _jit_save(ThreeOutputs().eval(), tmp_path / "three.pt")
    loaded = load_model(f"torchscript:{path}")
    with pytest.raises(InputError) as e:
        loaded.resolve_layers("all")
    said = str(e.value)
    assert "(outputs.0, outputs.1, outputs.2)" in said and "says nothing about which is deeper" in said
    assert "leave out the logits, the output whose last dimension is the number of classes" in said
    raw, _ = loaded.run(torch.rand(2, 4), ["outputs.2", "outputs.1"])
    assert list(raw) == ["outputs.2", "outputs.1"]
    rng = np.random.default_rng(0)
    arrays = {f"x_{s}": rng.normal(size=(n, 4)).astype(np.float32) for s, n in (("train", 12), ("test", 6))}
    np.savez(tmp_path / "d.npz", **arrays, y_train=np.arange(12) % 3, y_test=np.arange(6) % 3)
    out = tmp_path / "c.h5"
    common = dict(model=f"torchscript:{path}", data=f"npz:{tmp_path / 'd.npz'}", device="cpu")
    result = extract_features(ExtractConfig(**common, layers="outputs.2,outputs.1", out=str(out)))
    with FeatureStore(out) as store:
        assert store.layer_names == ["outputs.2", "outputs.1"]
    assert not any("out of depth order" in w for w in result.warnings)
    assert not any("one value per class" in w for w in result.warnings)
    # QA: --layers outputs.0,... took the logits as the shallowest layer with no word
    logit = extract_features(ExtractConfig(**common, layers="outputs.0,outputs.1", out=str(tmp_path / "l.h5")))
    said = "outputs.0 has one value per class (3, the data's class count) and is what the model's forward returns"
    assert [w for w in logit.warnings if w.startswith(said) and "most likely its logits" in w], logit.warnings
    with FeatureStore(tmp_path / "l.h5") as store:
        assert [w for w in store.attrs["warnings"] if w.startswith(said)]


def test_a_hooked_layer_that_is_the_models_logits_is_a_warning(tmp_path):
    """The classifier's own output asked for as a layer is said to be the logits; its input is not."""
    from laya_inspect.cache.extract import extract_features
    from laya_inspect.cache.extract_config import ExtractConfig

    common = dict(model="zoo:mlp", data="digits", random_init=True, limit=40, device="cpu")
    result = extract_features(ExtractConfig(**common, layers="blocks.2,head", out=str(tmp_path / "h.h5")))
    assert [w for w in result.warnings if w.startswith("head has one value per class (10, the data's class count)")]
    result = extract_features(ExtractConfig(**common, layers="blocks.1,blocks.2", out=str(tmp_path / "b.h5")))
    assert not [w for w in result.warnings if "one value per class" in w]


class NormNet(nn.Module):
    """A small convnet with batch norm and dropout, as users save their own."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
        self.drop, self.fc = nn.Dropout(p), nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.conv(x).mean((2, 3))
        return self.fc(self.drop(h)), h


def test_a_torchscript_file_traced_in_training_mode_is_refused(tmp_path):
    """QA: a convnet traced before model.eval() kept batch norm's batch statistics in its graph, and
    .eval() on the loaded file could not undo it: each row's features depended on its batch (and
    dropout on chance), cached with exit 0. Refused now; scripted or traced in eval mode it loads."""
    torch.manual_seed(0)
    x = torch.rand(6, 3, 8, 8)
    state = NormNet().state_dict()

    def saved(name: str, train: bool, how: str, p: float = 0.5):
        net = NormNet(p)
        net.load_state_dict(state)
        return _jit_save(net.train(train), tmp_path / name, x if how == "trace" else None)

    traced_train = saved("trace_train.pt", True, "trace")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        raw = torch.jit.load(str(traced_train)).eval()
    with torch.no_grad():  # what the refusal guards against: one row, two batches, two features
        assert not torch.allclose(raw(x)[1][:1], raw(x[:2])[1][:1])
    with pytest.raises(InputError, match=r"traced in training mode: 1 batch_norm op\(s\) and 1 dropout op\(s\)"):
        load_model(f"torchscript:{traced_train}")
    for name, train, how, p in (
        ("s.pt", True, "script", 0.5),
        ("t.pt", False, "trace", 0.5),
        ("d.pt", True, "script", 0.0),
    ):
        loaded = load_model(f"torchscript:{saved(name, train, how, p)}")
        whole, _ = loaded.run(x, ["outputs.1"])
        alone, _ = loaded.run(x[:2], ["outputs.1"])
        torch.testing.assert_close(whole["outputs.1"][:2], alone["outputs.1"], rtol=1e-5, atol=1e-6)


def test_a_batch_norm_without_running_statistics_is_refused_for_what_it_is(tmp_path):
    """A BatchNorm with track_running_stats=False uses each batch's statistics in eval mode too, so its
    trace fixes the training flag on even after model.eval(): the refusal said "traced in training mode"
    and to trace again after model.eval(), which the user had done and which changes nothing."""
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, track_running_stats=False), nn.ReLU()).eval()
    x = torch.rand(6, 3, 8, 8)
    path = _jit_save(net, tmp_path / "eval_no_stats.pt", x)
    with torch.no_grad():  # the harm is real in eval mode: one row, two batches, two outputs
        assert not torch.allclose(net(x)[:1], net(x[:2])[:1])
    with pytest.raises(InputError) as e:
        load_model(f"torchscript:{path}")
    said = str(e.value)
    assert "1 batch_norm op(s) of its graph keep no running statistics" in said, said
    assert "track_running_stats=False" in said and "traced in training mode" not in said, said


def test_torchscript_errors(tmp_path):
    with pytest.raises(NotFoundError):
        load_model(f"torchscript:{tmp_path / 'none.pt'}")
    torch.save({"a": torch.zeros(1)}, tmp_path / "plain.pt")
    with pytest.raises(InputError, match="not a TorchScript archive"):
        load_model(f"torchscript:{tmp_path / 'plain.pt'}")


# ---------------------------------------------------------------------------------------------
# python:pkg.module:factory

FACTORY = """
import torch
from torch import nn

def make():
    m = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    m.input_spec = {"kind": "image", "channels": 1, "size": 8}
    return m

def scripted_inside():
    return nn.Sequential(torch.jit.script(nn.Linear(2, 2)), nn.ReLU())

NOT_A_MODEL = 3
def not_a_model():
    return NOT_A_MODEL
"""


@pytest.fixture()
def factory_module(tmp_path, monkeypatch):
    name = f"laya_test_factory_{tmp_path.name}".replace("-", "_")
    (tmp_path / f"{name}.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_python_factory_with_weights(factory_module, tmp_path):
    loaded = load_model(f"python:{factory_module}:make", random_init=True)
    assert loaded.default_layers == ["1"] and loaded.num_classes == 5  # after the ReLU, not the flatten
    assert (loaded.input_spec.channels, loaded.input_spec.size) == (1, 8)
    trained = {k: torch.randn_like(v) for k, v in loaded.module.state_dict().items()}
    torch.save(trained, tmp_path / "w.pt")
    again = load_model(f"python:{factory_module}:make", weights=tmp_path / "w.pt")
    torch.testing.assert_close(again.module[3].weight, trained["3.weight"], rtol=0, atol=0)
    x = torch.rand(2, 1, 8, 8)
    raw, logits = again.run(x, ["0", "3"])
    assert raw["0"].shape == (2, 4, 6, 6) and logits.shape == (2, 5)
    assert {i.name: i.shape for i in list_layers(again)}["0"] == (4, 6, 6)  # size from the module's input_spec


def test_a_lightning_checkpoint_loads_its_model_and_says_so(factory_module, tmp_path):
    """A Lightning module keeps the model under its attribute (``model.``) beside a loss's buffer: it
    was refused as missing every key. Now read from under the prefix, with a recorded warning; a
    second copy under another prefix is refused, and an EMA copy beside the weights is named."""
    plain = load_model(f"python:{factory_module}:make", random_init=True).module.state_dict()
    trained = {f"model.{k}": torch.randn_like(v) for k, v in plain.items()}
    ckpt = {"state_dict": {**trained, "loss.weight": torch.ones(5)}, "epoch": 3, "pytorch-lightning_version": "2.4"}
    torch.save(ckpt, tmp_path / "last.ckpt")
    loaded = load_model(f"python:{factory_module}:make", weights=tmp_path / "last.ckpt")
    torch.testing.assert_close(loaded.module[3].weight, trained["model.3.weight"], rtol=0, atol=0)
    assert any("under 'model.'" in w and "loss.weight" in w for w in loaded.warnings), loaded.warnings
    both = {**trained, **{k.replace("model.", "ema."): v for k, v in trained.items()}}
    torch.save({"state_dict": both}, tmp_path / "two.ckpt")
    with pytest.raises(InputError, match="several prefixes.*'model.', 'ema.'|several prefixes.*'ema.', 'model.'"):
        load_model(f"python:{factory_module}:make", weights=tmp_path / "two.ckpt")
    flat = {k.removeprefix("model."): v for k, v in trained.items()}
    torch.save({"state_dict": flat, "state_dict_ema": plain}, tmp_path / "ema.pth")
    loaded = load_model(f"python:{factory_module}:make", weights=tmp_path / "ema.pth")
    torch.testing.assert_close(loaded.module[3].weight, flat["3.weight"], rtol=0, atol=0)
    assert any("'state_dict', 'state_dict_ema'" in w for w in loaded.warnings), loaded.warnings


def test_python_factory_errors(factory_module):
    with pytest.raises(NotFoundError, match="cannot import"):
        load_model("python:no_such_pkg_xyz.mod:make", random_init=True)
    with pytest.raises(NotFoundError, match="did you mean 'make'"):
        load_model(f"python:{factory_module}:mkae", random_init=True)
    with pytest.raises(InputError, match="not a torch.nn.Module"):
        load_model(f"python:{factory_module}:not_a_model", random_init=True)
    with pytest.raises(InputError, match="pkg.module:factory"):
        load_model(f"python:{factory_module}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        loaded = load_model(f"python:{factory_module}:scripted_inside", random_init=True)
    with watch_hooks() as watch, pytest.raises(InputError, match="layer '0' cannot be hooked"):
        loaded.run(torch.rand(1, 2), ["1", "0"])  # the ReLU's hook, registered first, is removed
    assert watch.registered == 1 and watch.fired_after(loaded.module, torch.rand(1, 2)) == 0


@pytest.mark.parametrize(
    ("version", "keyword"),
    [
        ("4.40.0", "torch_dtype"),
        ("4.55.4", "torch_dtype"),
        ("4.56.0", "dtype"),
        ("4.57.0.dev0", "dtype"),
        ("5.25.0", "dtype"),
    ],
)
def test_hf_weights_dtype_keyword_follows_the_transformers_release(version, keyword):
    """transformers < 4.56 refuses `dtype=` ("BertModel.__init__() got an unexpected keyword argument 'dtype'")."""
    from laya_inspect.models.hf import _dtype_keyword

    assert _dtype_keyword(version) == keyword
