"""The paper's own backbones (MLP, depthwise-separable CNN, BiLSTM), with self-describing checkpoints.

Each model records its constructor arguments in ``.kwargs`` (JSON-able: lists, not tuples), and
``save_zoo_checkpoint`` writes them beside the weights, so a checkpoint rebuilds its own
architecture: ``{"format": "laya-inspect-zoo", "arch", "kwargs", "state_dict", ...extra}``.

Initialisation follows Keras defaults (``init="glorot"``), the framework the paper's models come from: Glorot-uniform
kernels and zero biases for Linear/Conv; LSTMs get Glorot-uniform input kernels, orthogonal
recurrent kernels and zero biases except the forget gate's, which is 1; embeddings
uniform(-0.05, 0.05). Normalisation layers use LayerNorm with eps=1e-3 (Keras' default).
``init="torch"`` keeps PyTorch's own layer initialisation instead (for controlled comparisons).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, BinaryIO, cast

import torch
from torch import Tensor, nn

from ..choices import INITS
from ..errors import InputError
from ..files import special_file
from ..registry import Registry
from .weights import load_state_dict_strict, to_state_dict

ZOO: Registry[type[nn.Module]] = Registry("zoo model")
FORMAT = "laya-inspect-zoo"


def _arguments(given: dict[str, Any]) -> dict[str, Any]:
    """A constructor's arguments from its ``locals()`` taken before it binds any other name, JSON-able
    (lists, not tuples)."""
    named = {k: v for k, v in given.items() if k not in ("self", "__class__")}  # __class__: super()'s cell
    return {k: list(v) if isinstance(v, (tuple, list)) else v for k, v in named.items()}


def _init(module: nn.Module, init: str) -> None:
    if init not in INITS:
        raise InputError(f"init must be one of {', '.join(INITS)}, got {init!r}")
    if init == "glorot":
        _keras_init(module)


def _keras_init(module: nn.Module) -> None:
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.uniform_(m.weight, -0.05, 0.05)
        elif isinstance(m, nn.LSTM):
            for name, p in m.named_parameters():
                if name.startswith("weight_ih"):
                    nn.init.xavier_uniform_(p)  # (4H, in): same fans as Keras' (in, 4H) kernel
                elif name.startswith("weight_hh"):
                    nn.init.orthogonal_(p)
                elif name.startswith("bias_ih"):
                    nn.init.zeros_(p)
                    p.data[m.hidden_size : 2 * m.hidden_size] = 1.0  # gate order i, f, g, o
                elif name.startswith("bias_hh"):
                    nn.init.zeros_(p)  # PyTorch adds both biases; Keras has one


def _chain(h: Tensor, blocks: nn.ModuleList) -> list[Tensor]:
    """Run ``h`` through ``blocks`` in turn; every block's output."""
    out = []
    for block in blocks:
        h = block(h)
        out.append(h)
    return out


@ZOO.register("mlp")
class MLP(nn.Module):
    """Flattened image → 512 → 256 → 128 (Linear → LayerNorm → GELU each) → ``head``.

    ``blocks.i`` (an ``nn.Sequential``) outputs the post-GELU vector (N, D_i).
    """

    arch = "mlp"

    def __init__(
        self,
        in_shape=(1, 28, 28),
        num_classes: int = 10,
        hidden=(512, 256, 128),
        ln_eps: float = 1e-3,
        init: str = "glorot",
    ) -> None:
        super().__init__()
        self.kwargs = _arguments(locals())
        self.flatten = nn.Flatten()
        widths = [math.prod(in_shape), *hidden]
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(a, b), nn.LayerNorm(b, eps=ln_eps), nn.GELU()) for a, b in zip(widths, widths[1:])
        )
        self.head = nn.Linear(widths[-1], num_classes)
        _init(self, init)

    def features(self, x: Tensor) -> list[Tensor]:
        """Each block's output, [(N, D_i)]."""
        return _chain(self.flatten(x), self.blocks)

    def forward(self, x: Tensor) -> Tensor:  # (N, C, H, W) → (N, num_classes)
        return self.head(self.features(x)[-1])


class ChannelLayerNorm(nn.LayerNorm):
    """LayerNorm over the channels at each position of an (N, C, H, W) map, like Keras'
    ``LayerNormalization(axis=-1)`` on NHWC (not GroupNorm(1, C), which also mixes positions)."""

    def forward(self, x: Tensor) -> Tensor:
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def _separable(c_in: int, c_out: int, stride: int, eps: float) -> nn.Sequential:
    """Depthwise 3×3 (no bias) → pointwise 1×1 → channel LayerNorm → GELU, like Keras SeparableConv2D."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_in, 3, stride=stride, padding=1, groups=c_in, bias=False),
        nn.Conv2d(c_in, c_out, 1),
        ChannelLayerNorm(c_out, eps=eps),
        nn.GELU(),
    )


@ZOO.register("cnn")
class CNN(nn.Module):
    """CIFAR-style: ``stem`` (3×3 conv → LN → GELU), three depthwise-separable ``stages.i``
    (two units each; the first unit of stages 1–2 has stride 2), ``head`` on the GAP of the last stage.

    Each stage outputs (N, widths[i], H_i, W_i); extraction's ``auto`` pooling takes its GAP.
    """

    arch = "cnn"

    def __init__(
        self,
        in_shape=(3, 32, 32),
        num_classes: int = 10,
        stem_width: int = 32,
        widths=(64, 128, 256),
        ln_eps: float = 1e-3,
        init: str = "glorot",
    ) -> None:
        super().__init__()
        self.kwargs = _arguments(locals())
        self.stem = nn.Sequential(
            nn.Conv2d(in_shape[0], stem_width, 3, padding=1), ChannelLayerNorm(stem_width, eps=ln_eps), nn.GELU()
        )
        stages, c = [], stem_width
        for i, w in enumerate(widths):
            stages.append(nn.Sequential(_separable(c, w, 1 if i == 0 else 2, ln_eps), _separable(w, w, 1, ln_eps)))
            c = w
        self.stages = nn.ModuleList(stages)
        self.head = nn.Linear(c, num_classes)
        _init(self, init)

    def features(self, x: Tensor) -> list[Tensor]:
        """Each stage's map, [(N, widths[i], H_i, W_i)]."""
        return _chain(self.stem(x), self.stages)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x)[-1].mean((2, 3)))


@ZOO.register("bilstm")
class BiLSTM(nn.Module):
    """Token ids (N, T) → ``embedding`` → bidirectional ``lstm1`` (per-step outputs) → bidirectional
    ``lstm2`` → ``head`` on lstm2's final hidden state, both directions concatenated (N, 2·hidden)."""

    arch = "bilstm"

    def __init__(
        self, vocab_size: int = 20000, embed_dim: int = 128, hidden: int = 64, num_classes: int = 2, max_len: int = 200
    ) -> None:
        super().__init__()
        self.kwargs = _arguments(locals())
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        self.lstm1 = nn.LSTM(embed_dim, hidden, batch_first=True, bidirectional=True)
        self.lstm2 = nn.LSTM(2 * hidden, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, num_classes)
        _keras_init(self)

    @staticmethod
    def final_hidden(h_n: Tensor) -> Tensor:
        """(2, N, H) → (N, 2H): forward direction then backward."""
        return h_n.permute(1, 0, 2).reshape(h_n.shape[1], -1)

    def features(self, x: Tensor) -> list[Tensor]:
        """Each LSTM's final hidden state, [(N, 2·hidden)]."""
        seq, (h1, _) = self.lstm1(self.embedding(x))
        _, (h2, _) = self.lstm2(seq)
        return [self.final_hidden(h1), self.final_hidden(h2)]

    def forward(self, x: Tensor) -> Tensor:  # (N, T) int64 → (N, num_classes)
        return self.head(self.features(x)[-1])


DEFAULT_LAYERS = {
    "mlp": lambda m: [f"blocks.{i}" for i in range(len(m.blocks))],
    "cnn": lambda m: [f"stages.{i}" for i in range(len(m.stages))],
    "bilstm": lambda m: ["lstm1", "lstm2"],
}


def build_zoo(name: str, **kwargs: Any) -> nn.Module:
    """A zoo backbone with Keras-style random weights; unknown kwargs raise :class:`InputError`."""
    cls = ZOO.get(name)
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise InputError(f"zoo model {name!r} does not take these arguments: {e}") from None


def save_zoo_checkpoint(
    path: str | Path | BinaryIO, model: nn.Module, extra: dict[str, Any] | None = None
) -> Path | BinaryIO:
    """Write ``{"format", "arch", "kwargs", "state_dict", **extra}``; readable with ``weights_only=True``
    as long as ``extra`` holds only plain values (numbers, strings, lists, dicts, tensors). ``path``
    may be a binary buffer (to serialise in memory and write the bytes atomically)."""
    extra = dict(extra or {})
    clash = {"format", "arch", "kwargs", "state_dict"} & set(extra)
    if clash:
        raise ValueError(f"extra keys {sorted(clash)} would overwrite the checkpoint's own")
    if isinstance(path, (str, Path)):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    kwargs = cast(dict[str, Any], model.kwargs)  # every zoo model sets .kwargs
    torch.save({"format": FORMAT, "arch": model.arch, "kwargs": dict(kwargs), "state_dict": state, **extra}, path)
    return path


def is_zoo_checkpoint(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("format") == FORMAT


def not_a_zoo_checkpoint(path: Path) -> str | None:
    """None when ``path`` is a zoo checkpoint laya-inspect wrote (``train --force`` may replace it),
    else what it is instead. Read with ``weights_only=True``: a pickle in it runs no code."""
    if special := special_file(path):
        return f"is {special}, not a checkpoint laya-inspect wrote"
    try:
        with open(path, "rb") as f:
            obj = torch.load(f, map_location="cpu", weights_only=True)
    except Exception:  # text, safetensors, a pickled object, a damaged file: anything torch will not read safely
        return "is not a checkpoint laya-inspect wrote (torch.load with weights_only=True cannot read it)"
    if not is_zoo_checkpoint(obj):
        return f'is not a checkpoint laya-inspect wrote (it has no "format": "{FORMAT}")'
    return None


def model_from_checkpoint(obj: dict[str, Any], *, expected: str | None = None, source: str = "checkpoint") -> nn.Module:
    """Rebuild a zoo model from a checkpoint dict (already read with ``weights_only=True``).

    A checkpoint whose ``arch``, ``kwargs`` or ``state_dict`` is missing or does not build the
    model raises :class:`InputError` naming ``source``.
    """
    arch, kwargs, state = obj.get("arch"), obj.get("kwargs", {}), obj.get("state_dict")
    if not isinstance(arch, str) or arch not in ZOO:
        valid = ", ".join(ZOO.names())
        raise InputError(f"{source} is a zoo checkpoint without a known arch ({arch!r}); valid: {valid}")
    if expected is not None and arch != expected:
        raise InputError(f"{source} holds a zoo {arch!r} model, not {expected!r}; load it with zoo:{arch}")
    if not isinstance(kwargs, dict) or not isinstance(state, dict):
        raise InputError(f"{source} is a zoo checkpoint without its kwargs dict or state_dict; write it again")
    kwargs = {str(k): tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    try:
        model = build_zoo(arch, **kwargs)
    except (TypeError, ValueError, RuntimeError) as e:  # values of the right names that build nothing
        raise InputError(f"{source}: its kwargs {kwargs} do not build a zoo {arch!r}: {e}") from None
    load_state_dict_strict(model, to_state_dict(state, source=source), source=source)
    return model
