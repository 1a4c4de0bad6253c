"""What every model source returns: a frozen module, what it expects as input, and its layer names."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from ..errors import InputError
from ..layers import hooks, snapshot
from ..registry import Registry

# name → loader(name_after_prefix, *, weights, trust_pickle, device) -> LoadedModel
SOURCES: Registry[Callable[..., LoadedModel]] = Registry("model source")

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class InputSpec:
    """What the model expects; ``data/`` turns raw samples into exactly this.

    ``kind``: "image" (float (N, C, H, W)), "text" (a tokenizer's dict of tensors) or "tokens"
    (integer ids (N, T) without a tokenizer, e.g. the zoo BiLSTM). ``size``: square side or None
    (keep). ``mean``/``std``: per-channel normalisation after scaling to [0, 1], or None (only
    scale). ``max_length``: tokens per text. ``vocab_size``: id range for "tokens" models.
    """

    kind: str = "image"
    channels: int | None = None
    size: int | None = None
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    max_length: int | None = None
    vocab_size: int | None = None


class Adapter:
    """How to call one kind of model and read what it returns. The default fits plain modules
    whose output is their logits (N, C) when they have a classifier."""

    virtual_names: tuple[str, ...] = ()  # layer names read from the output, not from hooks
    hook_hint = ""  # appended to the error when a hook never fired

    def hookable(self, module: nn.Module) -> list[str]:
        """Module names whose outputs :meth:`forward` can report."""
        return [n for n, _ in module.named_modules() if n]

    def forward(
        self,
        module: nn.Module,
        inputs: Any,
        names: Sequence[str],
        record: Callable[[str, nn.Module, Any], None],
        want_virtual: bool,
    ) -> Any:
        """Call the model once, reporting each named module's output to ``record``; return the output."""
        with hooks(module, names, record):
            return self.call(module, inputs, want_virtual)

    def call(self, module: nn.Module, inputs: Any, want_virtual: bool) -> Any:
        if isinstance(inputs, Mapping):
            if "input_ids" in inputs:  # token models take the ids alone
                return module(inputs["input_ids"])
            if len(inputs) == 1:
                return module(next(iter(inputs.values())))
            return module(**inputs)
        return module(inputs)

    def virtual(self, output: Any, name: str) -> Any:
        raise KeyError(name)

    def logits(self, output: Any, num_classes: int | None) -> Tensor | None:
        if num_classes is None:
            return None
        out = output[0] if isinstance(output, (tuple, list)) and output else output
        if isinstance(out, Tensor) and out.ndim == 2 and out.shape[1] == num_classes:
            return out
        return None


@dataclass
class LoadedModel:
    """A frozen model ready for extraction (see docs/ARCHITECTURE.md, "models/")."""

    module: nn.Module
    spec: str
    source: str
    input_spec: InputSpec
    default_layers: list[str]
    num_classes: int | None = None
    tokenizer: Any = None
    weights_path: str | None = None
    weights_sha256: str | None = None
    device: str = "cpu"
    layer_roles: dict[str, str] = field(default_factory=dict)  # e.g. {"hidden_states.0": "embeddings"}
    adapter: Adapter = field(default_factory=Adapter)
    image_processor: Any = None

    def candidate_layers(self) -> list[str]:
        """Every name ``--layers`` accepts: virtual names first, then dotted module paths."""
        return list(self.adapter.virtual_names) + [n for n, _ in self.module.named_modules() if n]

    def role(self, name: str) -> str:
        """``embeddings`` / ``block`` / ``module``: what a layer is, for the cache's ``layer_roles``."""
        return self.layer_roles.get(name) or ("block" if name in self.default_layers else "module")

    def to_device(self, inputs: Any) -> Any:
        if isinstance(inputs, Tensor):
            return inputs.to(self.device)
        if isinstance(inputs, Mapping):
            return {k: v.to(self.device) if isinstance(v, Tensor) else v for k, v in inputs.items()}
        return inputs

    def example_inputs(self, n: int = 2) -> Any:
        """A dummy batch shaped as ``input_spec`` asks (for ``--list-layers`` without data), or
        None when the spec leaves the shape open (an image model without a size)."""
        spec = self.input_spec
        if spec.kind == "image":
            if spec.size is None:
                return None
            return torch.full((n, spec.channels or 3, spec.size, spec.size), 0.5)
        if spec.kind == "text" and self.tokenizer is not None:
            return dict(self.tokenizer(["an example"] * n, padding=True, return_tensors="pt"))
        length = min(spec.max_length or 16, 16)
        ids = torch.ones(n, length, dtype=torch.long)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)} if spec.kind == "text" else ids

    def run(self, inputs: Any, layer_names: Sequence[str]) -> tuple[dict[str, Any], Tensor | None]:
        """One forward pass under ``torch.no_grad()``: ``({name: raw output}, logits (N, C) | None)``."""
        virtual = set(self.adapter.virtual_names)
        wanted_virtual = [n for n in layer_names if n in virtual]
        hooked = [n for n in layer_names if n not in virtual]
        raw: dict[str, Any] = {}
        with torch.no_grad():
            out = self.adapter.forward(
                self.module,
                self.to_device(inputs),
                hooked,
                lambda n, _m, o: raw.__setitem__(n, snapshot(o)),
                bool(wanted_virtual),
            )
        silent = [n for n in hooked if n not in raw]
        if silent:
            raise InputError(
                f"layer(s) {', '.join(map(repr, silent))} did not run in the forward pass of {self.spec}, "
                f"so their hooks saw nothing{self.adapter.hook_hint}"
            )
        for name in wanted_virtual:
            raw[name] = self.adapter.virtual(out, name)
        return {n: raw[n] for n in layer_names}, self.adapter.logits(out, self.num_classes)


def freeze(module: nn.Module, device: str | torch.device) -> nn.Module:
    """Eval mode, no gradients, on ``device``."""
    module = module.to(device).eval()
    for p in module.parameters():
        p.requires_grad_(False)
    return module


def last_linear(module: nn.Module) -> tuple[str, nn.Linear] | None:
    """The last ``nn.Linear`` in definition order: usually the classifier."""
    found = None
    for name, m in module.named_modules():
        if isinstance(m, nn.Linear) or getattr(m, "original_name", None) == "Linear":  # TorchScript copies too
            found = (name, m)
    return found


def blocks_of(module: nn.Module) -> list[str]:
    """Fallback default layers: top-level children with parameters, classifier excluded."""
    head = last_linear(module)
    head_top = head[0].split(".")[0] if head else None
    names = [n for n, m in module.named_children() if any(True for _ in m.parameters())]
    if len(names) > 1 and head_top in names and names[-1] == head_top:
        names = names[:-1]
    return names or [n for n, _ in module.named_children()]
