"""How the cached features were made, in words for report.html's provenance: the layers with their
pooling, and the inputs (image size, resize fit, colour, normalisation and where it came from; a text's
tokenizer and token limit), from a cache's attributes or from what a summary kept of them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_NAMED_LAYERS = 6  # more are shown as the first three, "…" and the last two, with their count
COLOUR = {1: "greyscale (1 channel)", 3: "RGB (3 channels)"}
PRESET_SOURCES = ("torchvision", "timm")  # sources whose mean/std are the architecture's, whatever the weights
FIT_WORDS = {"stretch": " (straight to the size)", "crop": " (shorter side scaled, centre crop)"}  # extract's too


def made_facts(attrs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """How the cached features were made, from the cache's attributes (or those a summary recorded of
    them): the layers with their pooling, and the inputs (image size, resize fit, colour mode,
    normalisation and where it came from; for text the tokenizer and its token limit). A reader needs
    them to read a layer's score: the same backbone gives other features under another pooling or
    normalisation."""
    facts = []
    names = attrs.get("layer_names")
    if isinstance(names, (list, tuple)) and names:
        facts.append(("layers", layers_fact([str(n) for n in names], attrs.get("layer_pooling"))))
    transforms = attrs.get("transforms")
    if isinstance(transforms, Mapping):
        facts.append(("inputs", inputs_fact(transforms, attrs.get("config_defaults"), attrs.get("model_spec"))))
    return facts


def layers_fact(names: list[str], pooling: Any) -> str:
    """ "blocks.0, blocks.1, blocks.2; pooling none"; a pooling that changes along the layers is named with
    the layers it applies to, and more than MAX_NAMED_LAYERS names are shortened around "…"."""

    def span(first: int, last: int) -> str:
        if last - first + 1 > MAX_NAMED_LAYERS:
            return f"{', '.join(names[first : first + 3])}, …, {', '.join(names[last - 1 : last + 1])}"
        return ", ".join(names[first : last + 1])

    count = f"{len(names)} layers: " if len(names) > MAX_NAMED_LAYERS else ""
    shown = f"{count}{span(0, len(names) - 1)}"
    if not isinstance(pooling, (list, tuple)) or len(pooling) != len(names):
        return f"{shown}; pooling not recorded"
    runs: list[list[int]] = []  # [first, last] of each run of one pooling
    for i, p in enumerate(pooling):
        if runs and pooling[runs[-1][0]] == p:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    if len(runs) == 1:
        return f"{shown}; pooling {pooling[0]}"
    return f"{shown}; pooling " + ", ".join(f"{pooling[a]} ({_ends(names, a, b)})" for a, b in runs)


def _ends(names: list[str], first: int, last: int) -> str:
    """The layers first … last of one pooling, by their ends."""
    between = last - first + 1
    if between > 2:
        return f"{names[first]} … {names[last]}, {between} layers"
    return ", ".join(names[first : last + 1])


def inputs_fact(transforms: Mapping[str, Any], defaults: Any, model_spec: Any = None) -> str:
    """The input transforms a cache records, in extract's settings words; "(default)" marks an extract
    option left at its default (``config_defaults``), so a reader can tell a chosen resize or
    normalisation from an inherited one."""
    from ..data.transforms import NORMALIZE_SOURCES

    left = set(defaults) if isinstance(defaults, (list, tuple)) else set()

    def default(option: str) -> str:
        return " (default)" if option in left else ""

    kind = transforms.get("kind")
    if kind == "image":
        out = transforms.get("output") or []
        parts = ["image " + ("×".join(map(str, out[1:])) if len(out) == 3 else "of its own size")]
        resize = transforms.get("resize")
        if isinstance(resize, Mapping):
            frm = resize.get("from")
            frm = "×".join(map(str, frm)) if isinstance(frm, list) else str(frm)
            kept = FIT_WORDS["stretch" if resize.get("fit") == "stretch" else "crop"]
            parts.append(f"resized from {frm} by {resize.get('fit')}{kept}{default('resize')}")
        channels = transforms.get("channels")
        if isinstance(channels, Mapping):
            parts.append(f"colour {channels.get('from')}→{channels.get('to')} channels ({channels.get('how')})")
        elif out:
            parts.append(f"read as {COLOUR.get(out[0], f'{out[0]} channels')}")
        if transforms.get("scale"):
            parts.append(f"scaled {transforms['scale']}")
        norm = transforms.get("normalize")
        if isinstance(norm, Mapping) and norm.get("applied"):
            source = NORMALIZE_SOURCES.get(str(norm.get("from")), str(norm.get("from")))
            # a torchvision or timm preset belongs to the architecture, not to the user's own weights
            own_weights = bool(left) and "weights" not in left
            if norm.get("from") == "model" and own_weights and str(model_spec).split(":", 1)[0] in PRESET_SOURCES:
                source = "the model's: its architecture's preset, assumed for --weights"
            parts.append(f"normalize mean {norm.get('mean')} / std {norm.get('std')} ({source}){default('normalize')}")
        elif isinstance(norm, Mapping):
            why = str(norm.get("why") or norm.get("from")).removeprefix("none: ")
            parts.append(f"no normalisation ({why}){default('normalize')}")
        else:
            parts.append("normalisation not recorded")
        return "; ".join(parts)
    if kind == "text":
        tokenizer = f"{transforms.get('tokenizer')} ({transforms.get('name_or_path')}"
        tokenizer += f", sha256 {transforms['sha256']})" if transforms.get("sha256") else ")"
        cut = ", longer texts truncated" if transforms.get("truncation") else ""
        pad = f"; {transforms['pad']}" if transforms.get("pad") else ""
        return (
            f"text, tokenizer {tokenizer}; token limit {transforms.get('max_length')}{cut}; "
            f"padding {transforms.get('padding')}{pad}"
        )
    if kind == "token_ids":
        return (
            f"word ids, vocabulary of {transforms.get('vocab_size')} (sha256 {transforms.get('vocab_sha256')}); "
            f"token limit {transforms.get('max_length')}, padding and truncating {transforms.get('padding')}"
        )
    return "; ".join(f"{k} {v}" for k, v in transforms.items())
