"""Hugging Face ``transformers`` models from a local directory (``save_pretrained``), never the hub.

Layers: the virtual names ``hidden_states.0 … hidden_states.K`` (``output_hidden_states=True``;
0 is the embeddings, K the last block) plus every dotted module path for hooks.

A directory with its own Python code (an ``auto_map`` in its configs, or ``*.py`` files) would
make transformers run that code; it is refused unless the caller passes ``trust_remote_code=True``,
and transformers always gets ``trust_remote_code`` explicitly, so it never asks on the terminal.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..errors import InputError, NotFoundError, few
from ..layers import mean_after
from .base import SOURCES, Adapter, InputSpec, LoadedModel, LoadOptions, blocks_of, carries_weights, freeze
from .weights import first_line, load_weights, sha256_file, sha256_files, step_counter

HEADS = (
    "ForSequenceClassification",
    "ForImageClassification",
    "ForImageClassificationWithTeacher",
)  # classes whose output has class logits
WEIGHT_GLOBS = ("*.safetensors", "pytorch_model*.bin")
# configs whose ``auto_map`` makes transformers import classes from the directory's own .py files
CODE_CONFIGS = (
    "config.json",
    "tokenizer_config.json",
    "preprocessor_config.json",
    "processor_config.json",
    "image_processor_config.json",
    "feature_extractor_config.json",
)


class HFAdapter(Adapter):
    """Calls ``model(**tokens)`` or ``model(pixel_values=images)`` and reads ``hidden_states``/``logits``."""

    def __init__(self, n_hidden: int, accepted: set[str] | None) -> None:
        self.virtual_names = tuple(f"hidden_states.{k}" for k in range(n_hidden))
        self.accepted = accepted  # forward's keyword names; None = it takes **kwargs

    def call(self, module: nn.Module, inputs: Any, want_virtual: bool) -> Any:
        if isinstance(inputs, Tensor):
            inputs = {"pixel_values": inputs}
        if self.accepted is not None:  # e.g. token_type_ids for a model without them
            inputs = {k: v for k, v in inputs.items() if k in self.accepted}
        return module(**inputs, output_hidden_states=want_virtual, return_dict=True)

    def virtual(self, output: Any, name: str) -> Any:
        states = getattr(output, "hidden_states", None)
        if states is None:  # an encoder-decoder classifier (BART's): its encoder's
            states = getattr(output, "encoder_hidden_states", None)
        k = int(name.rsplit(".", 1)[1])
        if states is None or not -len(states) <= k < len(states):
            got = "none" if states is None else f"{len(states)} (hidden_states.0..{len(states) - 1})"
            raise InputError(f"layer {name!r}: the model returned {got} hidden states")
        return states[k]

    def logits(self, output: Any, num_classes: int | None) -> Tensor | None:
        return getattr(output, "logits", None) if num_classes is not None else None


def _n_hidden(config: Any) -> int:
    """How many hidden states ``output_hidden_states`` returns: embeddings + one per block/stage."""
    for attr in ("num_hidden_layers", "num_stages"):
        n = getattr(config, attr, None)
        if isinstance(n, int) and n > 0:
            return n + 1
    depths = getattr(config, "depths", None)
    return len(depths) + 1 if isinstance(depths, (list, tuple)) else 0


def _count_hidden(model: nn.Module, spec: InputSpec, tokenizer: Any, accepted: set[str] | None) -> int | None:
    """How many hidden states the model returns on one small input: its own count, where the config's
    says otherwise (EfficientNet's ``num_hidden_layers`` counts sub-blocks) or nothing (MobileNetV2).
    None when the model cannot be run so (no tokenizer, no image size)."""
    if spec.kind == "image" and spec.hw:
        inputs: dict[str, Any] = {"pixel_values": torch.zeros(1, spec.channels or 3, *spec.hw)}
    elif spec.kind == "text" and tokenizer is not None:
        inputs = dict(tokenizer(["a b"], return_tensors="pt"))
    else:
        return None
    device = next(model.parameters(), torch.empty(0)).device  # on the device it will run on
    inputs = {k: v.to(device) for k, v in inputs.items() if accepted is None or k in accepted}
    try:
        with torch.no_grad():
            out = model(**inputs, output_hidden_states=True, return_dict=True)
    except Exception:  # noqa: BLE001  the config's count stands; extract's own run says what fails
        return None
    states = getattr(out, "hidden_states", None) or getattr(out, "encoder_hidden_states", None)
    return len(states) if isinstance(states, (tuple, list)) and states else None


# where a model keeps what reads its hidden states: weights missing there spoil no hidden state
HEAD_PARTS = frozenset(
    ("pooler", "classifier", "pre_classifier", "score", "head", "cls", "lm_head", "classification_head")
    + ("distillation_classifier", "cls_classifier")
)


def _untrained(info: Mapping[str, Any], full: nn.Module, used: nn.Module, d: Path) -> list[str]:
    """The modules of ``used`` whose weights the folder lacks (transformers fills them with random
    values): refused in the body, whose hidden states they would spoil; a head's parts (a pooler,
    a classifier) named, for the loader to keep out of layers and logits."""
    tensors = {**dict(full.named_parameters()), **dict(full.named_buffers())}

    def ids(module: nn.Module) -> set[int]:
        return {id(t) for t in module.parameters()} | {id(t) for t in module.buffers()}

    mine, base = ids(used), ids(getattr(full, "base_model", full))
    missing = sorted(
        k for k in info.get("missing_keys") or () if k in tensors and id(tensors[k]) in mine and not step_counter(k)
    )

    # the head's own: outside the base model (XLNet's logits_proj), or a pooler/classifier in it
    body = [k for k in missing if id(tensors[k]) in base and not HEAD_PARTS & set(k.split(".")[:-1])]
    if body:
        raise InputError(
            f"{d}: its weight files hold no values for {len(body)} of the model's tensors ({few(body, 3)}), which "
            "transformers would fill with random numbers (layers that config.json names and the weights lack, or "
            "weights of another model); give a folder whose weights match its config.json"
        )
    parts = set()
    for k in missing:
        names = k.split(".")
        cut = max((i for i, n in enumerate(names[:-1]) if n in HEAD_PARTS), default=0)
        parts.add(".".join(names[: cut + 1]))
    return sorted(parts)


def _accepted(module: nn.Module) -> set[str] | None:
    params = inspect.signature(module.forward).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def _optional(loader: Any, directory: Path, trust_remote_code: bool) -> Any:
    """A tokenizer or image processor when the directory has one, else None."""
    try:
        return loader.from_pretrained(str(directory), local_files_only=True, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError):
        return None


def custom_code(directory: Path) -> list[str]:
    """What in ``directory`` would run its own code when loaded: ``.py`` files and ``auto_map`` entries."""
    found = sorted(p.name for p in directory.glob("*.py") if p.is_file())
    for name in CODE_CONFIGS:
        try:
            data = json.loads((directory / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):  # absent, or unreadable: transformers reports config.json itself
            continue
        if isinstance(data, dict) and data.get("auto_map"):
            found.append(f"auto_map in {name}")
    return found


def _encoder_class(transformers: Any, config: Any) -> Any:
    """The encoder-only class a directory was saved from (``T5EncoderModel``: loading it as the whole
    encoder-decoder would initialise a decoder at random), else ``AutoModel``."""
    named = [a for a in (config.architectures or []) if a.endswith("EncoderModel") and hasattr(transformers, a)]
    return getattr(transformers, named[0]) if named else transformers.AutoModel


def _auto_head(transformers: Any, config: Any) -> Any:
    """The Auto class for a custom-code classifier named in ``auto_map``, else None."""
    names = getattr(config, "auto_map", None) or {}
    for auto in ("AutoModelForSequenceClassification", "AutoModelForImageClassification"):
        if auto in names:
            return getattr(transformers, auto)
    return None


def _dims(value: Any) -> dict:
    return dict(value) if value else {}  # a dict, or transformers' SizeDict (its unset keys left out)


def _image_spec(config: Any, processor: Any) -> InputSpec:
    """Channels, size and mean/std from the config and image processor; ``resize`` from how the
    processor resizes: a shortest edge keeps the aspect ratio (ConvNeXt's processor squashes to a
    square from 384 up), a height and width stretch (whatever crop follows, as DeiT's)."""
    channels = int(getattr(config, "num_channels", 3))
    size = getattr(config, "image_size", None)
    mean = std = (0.5,) * channels
    resize = None
    if processor is not None:
        scaled = _dims(getattr(processor, "size", None))
        dims = _dims(getattr(processor, "crop_size", None) if getattr(processor, "do_center_crop", False) else None)
        dims = dims or scaled
        size = dims.get("height") or dims.get("shortest_edge") or size
        edge = scaled.get("shortest_edge")
        if edge:
            resize = "stretch" if getattr(processor, "crop_pct", None) is not None and edge >= 384 else "crop"
        elif scaled.get("height"):
            resize = "stretch"
        mean = tuple(getattr(processor, "image_mean", None) or mean)
        std = tuple(getattr(processor, "image_std", None) or std)
    size = size[0] if isinstance(size, (list, tuple)) else size
    size = int(size) if size else None
    return InputSpec(kind="image", channels=channels, size=size, mean=mean, std=std, resize=resize)


def _sentence_length(d: Path) -> int | None:
    """``max_seq_length`` of a sentence-transformers folder (sentence_bert_config.json): the length
    its sentence embeddings were trained at, where sentence-transformers itself cuts texts."""
    try:
        value = json.loads((d / "sentence_bert_config.json").read_text()).get("max_seq_length")
    except (OSError, ValueError, AttributeError):  # no such file, not JSON, not an object
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


# sentence-transformers' Pooling modes (1_Pooling/config.json) as --pool rules
SENTENCE_POOLS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_lasttoken": "last",
}


def _sentence_pool(d: Path) -> str | None:
    """How a sentence-transformers folder's own Pooling module reads the tokens (modules.json, then
    its config.json): "mean" for all-MiniLM-L6-v2. None for another folder, or modes we do not have."""
    try:
        modules = json.loads((d / "modules.json").read_text())
        path = next(m["path"] for m in modules if str(m.get("type", "")).endswith(".Pooling"))
        modes = json.loads((d / str(path) / "config.json").read_text())
        on = {k for k, v in modes.items() if str(k).startswith("pooling_mode_") and v is True}
    except (OSError, ValueError, AttributeError, KeyError, TypeError, StopIteration):
        return None
    rules = {SENTENCE_POOLS.get(k) for k in on}
    return rules.pop() if len(rules) == 1 and None not in rules else None


# Special tokens a tokenizer without a padding token (GPT-2, Llama, …) is padded with: padded
# positions are masked, so any token of the vocabulary serves; these exist in it.
PAD_STANDINS = ("eos_token", "bos_token", "unk_token", "sep_token")


def _pad_on_the_right(tokenizer: Any, model: nn.Module, d: Path) -> str | None:
    """Make ``tokenizer`` pad on the right with a token it has; a note of what changed, or None.

    Decoder tokenizers name no padding token, and some pad on the left, which moves a text's
    positions with the longest text of its batch. A classifier finds each text's last token by
    ``config.pad_token_id``, so that is made the token the tokenizer pads with.
    """
    notes = []
    config = getattr(model, "config", None)
    named = getattr(config, "pad_token_id", None)
    if tokenizer.pad_token is None:
        if isinstance(named, int) and 0 <= named < len(tokenizer):
            tokenizer.pad_token = tokenizer.convert_ids_to_tokens(named)
            notes.append(f"padded with the model's pad token {tokenizer.pad_token!r} (the tokenizer names none)")
        else:
            role = next((r for r in PAD_STANDINS if getattr(tokenizer, r, None) is not None), None)
            if role is None:
                raise InputError(
                    f"{d}: the tokenizer names no padding token and no end-of-text, start or unknown token to pad "
                    "with; set tokenizer.pad_token and save it with save_pretrained"
                )
            tokenizer.pad_token = getattr(tokenizer, role)
            kind = role.removesuffix("_token")
            notes.append(f"padded with the {kind} token {tokenizer.pad_token!r} (the tokenizer names none)")
    if getattr(tokenizer, "padding_side", "right") != "right":
        tokenizer.padding_side = "right"
        notes.append("padded on the right (the tokenizer pads on the left)")
    if config is not None and named != tokenizer.pad_token_id:
        if named is not None:
            notes.append(f"the model's pad_token_id {named} set to the tokenizer's {tokenizer.pad_token_id}")
        config.pad_token_id = tokenizer.pad_token_id
    return "; ".join(notes) or None


def _reads_left_to_right(model: nn.Module, config: Any, adapter: Adapter) -> bool | None:
    """True when a text model's first position sees no later token (a decoder: GPT-2, Llama, …):
    two 4-token inputs that differ after their first token give it the same last hidden state.
    None when the model does not take them."""
    device = next(model.parameters()).device
    special = {getattr(config, k, None) for k in ("bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id")}
    words = [i for i in range(int(getattr(config, "vocab_size", None) or 8)) if i not in special][:7]
    words += [0] * (7 - len(words))
    rows = [[words[0], *words[1:4]], [words[0], *words[4:7]]]
    eos = getattr(config, "eos_token_id", None)
    vocab = getattr(config, "vocab_size", None)
    if isinstance(eos, int) and (not isinstance(vocab, int) or 0 <= eos < vocab):
        rows = [[*r, eos] for r in rows]  # one end token each: a BART classifier reads it and wants one
    first_rows = []
    try:  # one text a call: a decoder classifier without a pad token refuses batches of two
        for row in rows:
            ids = torch.tensor([row], device=device)
            with torch.no_grad():
                out = adapter.call(model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}, True)
            first_rows.append(adapter.virtual(out, "hidden_states.-1")[0, 0].float())
    except Exception:  # noqa: BLE001 - any failure means: not known
        return None
    first = torch.stack(first_rows)
    return bool(torch.allclose(first[0], first[1], rtol=1e-4, atol=1e-6 * float(first.abs().max()) + 1e-8))


def _leading_specials(tokenizer: Any) -> int:
    """How many of its own special tokens the tokenizer puts before a text's first word (BERT's
    [CLS], RoBERTa's and Llama's <s>: 1; T5, GPT-2: 0): where the text's own tokens start."""
    try:
        ids = list(tokenizer("a text")["input_ids"])
        plain = list(tokenizer("a text", add_special_tokens=False)["input_ids"])
    except (TypeError, ValueError, KeyError, IndexError):
        return 0
    special = set(tokenizer.all_special_ids)
    for k in range(len(ids) - len(plain) + 1):
        if ids[k : k + len(plain)] == plain:
            return k if all(i in special for i in ids[:k]) else 0
    n = 0  # the words read otherwise beside special tokens (a SentencePiece prefix): count those in front
    while n < len(ids) - len(plain) and ids[n] in special and ids[n] != tokenizer.unk_token_id:
        n += 1
    return n


def _sequence_pool(
    model: nn.Module, config: Any, tokenizer: Any, adapter: Adapter, d: Path, classifier: bool = False
) -> str:
    """What ``--pool auto`` takes of a token sequence. A sentence-transformers folder's own pooling
    where it names one. Token 0 where it stands for the text: the tokenizer puts its own special
    token first and the model is known to read in both directions. A decoder classifier
    (``classifier``: GPT2ForSequenceClassification, LlamaForSequenceClassification) the last token
    before the padding, the one position its own head reads and the only one that has seen the whole
    text. Otherwise the mean: T5's encoder starts with the first word; a decoder's start token
    (Llama's <s>) has seen nothing else, so it is the same for every text and the mean leaves it
    out. An image model whose pooler averages its patches (BEiT's ``use_mean_pooling``) takes them
    after its class token."""
    if tokenizer is None:
        return mean_after(1) if getattr(config, "use_mean_pooling", False) else "cls"
    own = _sentence_pool(d)
    if own is not None:
        return own
    lead = _leading_specials(tokenizer)
    if not lead and not classifier:
        return "mean"
    one_way = _reads_left_to_right(model, config, adapter)
    if one_way and classifier:
        return "last"
    if not lead:
        return "mean"
    return "cls" if one_way is False else mean_after(lead) if one_way else "mean"


def _check_inputs(model: nn.Module, config: Any, d: Path) -> None:
    """Refuse what extract cannot feed: an audio model, or several towers that take their inputs at once."""
    name = type(model).__name__
    if getattr(config, "model_type", None) == "timm_wrapper":  # its hidden states are not offered
        arch = getattr(config, "architecture", None) or "NAME"
        raise InputError(
            f"{d} holds a timm model saved by transformers ({name}); read it as one, layer by layer: "
            f"--model timm:{arch} --weights {d / 'model.safetensors'}"
        )
    main = getattr(model, "main_input_name", "input_ids")
    if main not in ("input_ids", "pixel_values"):
        raise InputError(
            f"{d} holds {name}, which takes {main} (audio or another kind of input); laya-inspect reads "
            "image models (pixel_values) and text models (input_ids)"
        )
    towers = [k.removesuffix("_config") for k in ("text_config", "vision_config", "audio_config")]
    towers = [t for t in towers if getattr(config, f"{t}_config", None) is not None]
    takes = set(inspect.signature(model.forward).parameters)
    if len(towers) > 1 and {"input_ids", "pixel_values"} <= takes:
        raise InputError(
            f"{d} holds {name}, a {' and '.join(towers)} model that takes both inputs at once; save the one "
            f"tower to read on its own (e.g. {name.removesuffix('Model')}VisionModel.from_pretrained(DIR)"
            ".save_pretrained(OUT)) and pass that folder"
        )


def _embeddings_pool(rule: str, tokenizer: Any) -> str | None:
    """What ``auto`` takes of the embeddings (``hidden_states.0``) where ``rule`` takes one token:
    that token's embedding sees no other token (BERT's [CLS] is the same row for every text), so the
    mean, after a text's own leading special tokens."""
    if rule not in ("cls", "last"):
        return None
    return mean_after(_leading_specials(tokenizer)) if tokenizer is not None else "mean"


def _positions(config: Any, model: nn.Module | None) -> int | None:
    """How many positions a text may take: ``max_position_embeddings``, less the ``padding_idx + 1``
    that RoBERTa-style embeddings number their positions from."""
    n = getattr(config, "max_position_embeddings", None)
    embeddings = getattr(getattr(model, "base_model", model), "embeddings", None)
    pad = getattr(getattr(embeddings, "position_embeddings", None), "padding_idx", None)
    return n - (pad + 1) if isinstance(n, int) and isinstance(pad, int) and pad >= 0 else n


def _text_spec(
    config: Any, tokenizer: Any, d: Path, padding: str | None = None, model: nn.Module | None = None
) -> InputSpec:
    limits = [
        512,
        _positions(config, model),
        getattr(tokenizer, "model_max_length", None),
        _sentence_length(d),
    ]
    top = min(int(x) for x in limits if isinstance(x, (int, float)) and 0 < x < 1e6)
    return InputSpec(kind="text", max_length=top, padding=padding)


def _dtype_keyword(version: str) -> str:
    """``from_pretrained``'s name for the weights' dtype: ``dtype`` since transformers 4.56, when
    ``torch_dtype`` became deprecated; the older releases take only ``torch_dtype``."""
    major, minor = (int(v) for v in re.findall(r"\d+", version)[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


@SOURCES.register("hf")
def load_hf(directory: str, options: LoadOptions) -> LoadedModel:
    """``hf:DIR``: the class named in ``config.architectures`` when it is a sequence/image classifier
    (so logits exist), else ``AutoModel``; loaded in float32 with ``local_files_only=True``. The
    directory holds the weights (``random_init`` does not apply); ``weights`` (optional) are loaded
    on top. ``weights_sha256`` covers the directory's weight files (sorted by name), then ``weights``.
    Custom code needs ``trust_remote_code``.
    """
    try:
        import transformers
    except ImportError as e:
        raise NotFoundError(f"hf: models need 'transformers' ({e}); pip install 'laya-inspect[text]'") from None
    spec = f"hf:{directory}"
    carries_weights(spec, options)
    d = Path(directory).expanduser()
    if not (d / "config.json").is_file():
        raise NotFoundError(
            f"no Hugging Face model directory {directory!r} (expected {d / 'config.json'}; models are never downloaded)"
        )
    trust = options.trust_remote_code
    code = custom_code(d)
    if code and not trust:
        raise InputError(
            f"{d} holds its own code ({', '.join(code)}); loading it runs that code. "
            "Pass --trust-remote-code if you trust it"
        )
    try:
        config = transformers.AutoConfig.from_pretrained(str(d), local_files_only=True, trust_remote_code=trust)
    except Exception as e:  # invalid JSON, an unknown model_type, custom code transformers found itself
        hint = "" if trust else " (if it needs its own code: --trust-remote-code, when you trust it)"
        raise InputError(f"{d / 'config.json'} does not load: {first_line(e)}{hint}") from None
    heads = [a for a in (config.architectures or []) if a.endswith(HEADS) and hasattr(transformers, a)]
    auto_head = _auto_head(transformers, config) if trust else None
    cls = getattr(transformers, heads[0]) if heads else auto_head or _encoder_class(transformers, config)
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()  # the library does not print
    try:
        float32: dict[str, Any] = {_dtype_keyword(transformers.__version__): torch.float32}
        model, info = cls.from_pretrained(
            str(d), local_files_only=True, trust_remote_code=trust, output_loading_info=True, **float32
        )
    except OSError as e:
        raise NotFoundError(f"cannot load the weights in {d}: {first_line(e)}") from None
    except Exception as e:  # corrupt or mismatched weight files end in many error types
        raise InputError(f"cannot load the model in {d}: {first_line(e)}") from None
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()
    _check_inputs(model, config, d)
    warnings = []
    full = model
    if getattr(config, "is_encoder_decoder", False) and (heads or auto_head):
        warnings.append(
            f"{d} is an encoder-decoder classifier ({type(model).__name__}): its layers here are its encoder's "
            "hidden states; its decoder, which its classification head reads, is not among them"
        )
    elif getattr(config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
        model = model.get_encoder()  # an encoder-decoder (T5, BART) read as a text encoder: its encoder
    # --weights, loaded strictly below, fills every tensor the folder lacks
    untrained = _untrained(info, full, model, d) if isinstance(info, Mapping) and options.weights is None else []
    if untrained:
        warnings.append(
            f"{d}: {', '.join(untrained)} {'is' if len(untrained) == 1 else 'are'} not in its weight files "
            f"(transformers filled {'it' if len(untrained) == 1 else 'them'} with random values): not read as layers"
            + (", and no logits are cached" if heads or auto_head else "")
        )
    files = sorted(p for g in WEIGHT_GLOBS for p in d.glob(g))
    files = files or sorted(p for p in d.iterdir() if p.is_file())  # weights in a format the globs miss
    digests = [sha256_file(p) for p in files]
    if options.weights is not None:
        digests.append(load_weights(model, options.weights, trust_pickle=options.trust_pickle))
        files.append(Path(options.weights))
    # an image classifier on one tower of a two-tower config (CLIPForImageClassification): that tower's
    looks = getattr(config, "vision_config", None) if getattr(model, "main_input_name", "") == "pixel_values" else None
    looks = looks or config
    # a ResNet's or RegNet's config names no image size: what the model takes says it
    is_image = getattr(model, "main_input_name", "") == "pixel_values" or getattr(looks, "image_size", None) is not None
    tokenizer = None if is_image else _optional(transformers.AutoTokenizer, d, trust)
    processor = _optional(transformers.AutoImageProcessor, d, trust) if is_image else None
    padding = _pad_on_the_right(tokenizer, model, d) if tokenizer is not None else None
    input_spec = _image_spec(looks, processor) if is_image else _text_spec(config, tokenizer, d, padding, model)
    accepted = _accepted(model)
    module = freeze(model, options.device)
    counted = _count_hidden(module, input_spec, tokenizer, accepted)
    adapter = HFAdapter(counted if counted is not None else _n_hidden(looks), accepted)
    roles = {name: "embeddings" if k == 0 else "block" for k, name in enumerate(adapter.virtual_names)}
    logits = bool(heads or auto_head) and not untrained
    rule = _sequence_pool(module, config, tokenizer, adapter, d, logits)
    return LoadedModel(
        module=module,
        spec=spec,
        source="hf",
        input_spec=input_spec,
        default_layers=list(adapter.virtual_names) or blocks_of(model),
        num_classes=int(config.num_labels) if logits else None,
        tokenizer=tokenizer,
        image_processor=processor,
        weights_path=options.weights or str(d),
        weights_sha256=sha256_files(files, digests),
        device=options.device,
        layer_roles=roles,
        adapter=adapter,
        sequence_pool=rule,
        embeddings_pool=_embeddings_pool(rule, tokenizer),
        warnings=warnings,
        untrained=tuple(untrained),
    )
