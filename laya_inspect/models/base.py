"""What every model source returns: a frozen module, what it expects as input, and its layer names."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import torch
from torch import Tensor, nn

from ..errors import InputError, LayaError
from ..layers import forward_answer, hooks, module_kind, resolve_layers, snapshot
from ..registry import Registry
from .weights import first_line


@dataclass(frozen=True)
class LoadOptions:
    """How :func:`~laya_inspect.models.load_model` may load: the weights file, and what the user allowed.

    ``random_init``: a source whose weights come only from ``weights`` (torchvision, timm, python,
    zoo) may keep its random initialisation when ``weights`` is None. ``trust_pickle``: a weights file
    holding a pickled module may be unpickled (runs code from it). ``trust_remote_code``: a Hugging
    Face directory's own Python code may run. ``search_dir``: the folder a ``python:`` spec's module
    is imported from first (None: the current directory, as extract does).
    """

    weights: str | None = None
    trust_pickle: bool = False
    random_init: bool = False
    trust_remote_code: bool = False
    device: str = "cpu"
    search_dir: str | None = None


# what an adapter reports each hooked layer's output to: record(name, module, output)
Record = Callable[[str, nn.Module, Any], None]
# name → loader(name_after_prefix, options: LoadOptions) -> LoadedModel
SOURCES: Registry[Callable[[str, LoadOptions], LoadedModel]] = Registry("model source")


def keeps_random_init(spec: str, options: LoadOptions) -> bool:
    """For sources that are random without ``weights``: True when the random init is kept (allowed by
    ``random_init``), False when weights will be loaded; refused without either."""
    if options.weights is not None:
        return False
    if not options.random_init:
        raise InputError(
            f"{spec} without --weights would be a randomly initialised network (nothing is downloaded); "
            "pass --weights FILE, or --random-init if you mean to analyse random weights"
        )
    return True


def carries_weights(spec: str, options: LoadOptions) -> None:
    """Sources whose file or directory holds the weights cannot honour ``random_init``."""
    if options.random_init:
        raise InputError(
            f"{spec} loads the weights saved with it, so --random-init does not apply; "
            "drop --random-init (it is for torchvision:, timm:, python: and zoo: models without --weights)"
        )


@dataclass(frozen=True)
class InputSpec:
    """What the model expects; ``data/`` turns raw samples into exactly this.

    ``kind``: "image" (float (N, C, H, W)), "text" (a tokenizer's dict of tensors) or "tokens"
    (integer ids (N, T) without a tokenizer, e.g. the zoo BiLSTM). ``size``: square side or None
    (keep). ``mean``/``std``: per-channel normalisation after scaling to [0, 1], or None (only
    scale). ``unnormalized``: True when the model is known to take inputs only scaled to [0, 1]
    (so no mean/std is right, not unknown). ``max_length``: tokens per text. ``vocab_size``: id
    range for "tokens" models. ``padding``: what the loader changed so that texts pad (None:
    nothing). ``resize``: how the model's own preprocessing reaches ``size``: "stretch" (straight
    there) or "crop" (shorter side, then the centre), None when it does not say.
    """

    kind: str = "image"
    channels: int | None = None
    size: int | None = None
    width: int | None = None  # a non-square input's width (size is then its height); None: square
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    unnormalized: bool = False
    max_length: int | None = None
    vocab_size: int | None = None
    resize: str | None = None  # the model's own way to its size: "stretch" or "crop"; None: not known
    padding: str | None = None  # how texts are padded where the tokenizer alone would not do (the cache records it)

    @property
    def hw(self) -> tuple[int, int] | None:
        """(H, W) the input is resized to, or None (keep). ``size`` may itself be (H, W), as a python:
        model's ``input_spec`` dict may give it."""
        if self.size is None:
            return None
        if isinstance(self.size, (tuple, list)) and len(self.size) == 2:
            return (self.size[0], self.size[1])
        return (self.size, self.width if self.width is not None else self.size)


class Adapter:
    """How to call one kind of model and read what it returns. The default fits plain modules
    whose output is their logits (N, C) when they have a classifier."""

    virtual_names: tuple[str, ...] = ()  # layer names read from the output, not from hooks
    # whether virtual_names stand in depth order (hidden_states.K); if not, the order --layers names them
    virtual_in_depth_order = True
    virtual_returned = False  # whether virtual_names are what forward returns (a tuple's outputs.K)
    hook_hint = ""  # appended to the error when a hook never fired

    def hookable(self, module: nn.Module) -> list[str]:
        """Module names whose outputs :meth:`forward` can report."""
        return [n for n, _ in module.named_modules() if n]

    def forward(self, module: nn.Module, inputs: Any, names: Sequence[str], record: Record, want_virtual: bool) -> Any:
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
        out = forward_answer(output)
        if isinstance(out, Tensor) and out.ndim == 2 and out.shape[1] == num_classes:
            return out
        return None


def describe_inputs(inputs: Any) -> str:
    """``float32 (2, 1, 28, 28)`` or ``input_ids (2, 7), attention_mask (2, 7)``: a batch for a message."""
    if isinstance(inputs, Tensor):
        return f"{str(inputs.dtype).removeprefix('torch.')} {tuple(inputs.shape)}"
    if isinstance(inputs, Mapping):
        return ", ".join(f"{k} {describe_inputs(v)}" for k, v in inputs.items()) or "an empty dict"
    return type(inputs).__name__


# A module call starts at the public Module.__call__ (whatever torch names the function behind it) and
# reaches forward and the hooks through other frames of the same file: both found from __call__ alone.
_MODULE_CALL = nn.Module.__call__.__code__
_TORCH_MODULE_FILE = _MODULE_CALL.co_filename
_OWN_DIR = str(Path(__file__).parents[1]) + os.sep


def raised_by_model(tb: TracebackType | None) -> bool:
    """True when the traceback's error was raised inside a module call (the model rejecting its
    input), not by laya-inspect's own code around it: adapters before the call, or forward hooks,
    which ``nn.Module`` calls from the same place as ``forward``."""
    inside = False
    after_call = False
    while tb is not None:
        code = tb.tb_frame.f_code
        if code is _MODULE_CALL:
            inside = after_call = True
        elif after_call and code.co_filename == _TORCH_MODULE_FILE:
            pass  # torch's own steps from the call to forward or a hook
        else:
            if after_call and code.co_filename.startswith(_OWN_DIR) and code.co_name != "forward":
                return False  # a hook of ours, called by the module
            after_call = False
        tb = tb.tb_next
    return inside


@dataclass
class LoadedModel:
    """A frozen model ready for extraction (see docs/ARCHITECTURE.md, "models/").

    ``weights_sha256`` identifies the weights the module holds, so a cache and a checkpoint can be
    checked against each other: the sha256 hex digest of the weights file's bytes (as
    :func:`~laya_inspect.models.sha256_file` computes it); when several files hold them (a Hugging
    Face directory's weight files, sorted by name, then ``weights`` if given; a TorchScript archive
    then ``weights``) the sha256 over ``name NUL hexdigest`` of each file in that order
    (:func:`~laya_inspect.models.weights.sha256_files`). The same bytes always give the same
    digest. None only for a random initialisation (``random_init=True``, never from a file).

    ``random_init``: the module kept its random initialisation (allowed with ``random_init=True``);
    ``warnings`` then says so, for the caller to print and store with its output.
    """

    module: nn.Module
    spec: str
    source: str
    input_spec: InputSpec
    default_layers: list[str]
    num_classes: int | None = None
    tokenizer: Any = None
    weights_path: str | None = None
    weights_sha256: str | None = None
    # python:FILE.py: the files of the model's code weights_sha256 covers, {path from FILE.py's folder: sha256}
    code_files: dict[str, str] = field(default_factory=dict)
    device: str = "cpu"
    layer_roles: dict[str, str] = field(default_factory=dict)  # e.g. {"hidden_states.0": "embeddings"}
    adapter: Adapter = field(default_factory=Adapter)
    image_processor: Any = None
    random_init: bool = False
    warnings: list[str] = field(default_factory=list)
    default_layers_how: str = ""  # the rule that picked default_layers, where a fallback did (blocks_how)
    sequence_pool: str = "cls"  # what --pool auto takes of a token sequence: "mean", or "mean[K:]" after K front tokens
    # ... of the embeddings' sequence (layer_roles), when sequence_pool takes one token: there token 0
    # is a class token's embedding alone, the same row for every input
    embeddings_pool: str | None = None
    # modules whose weights the files lack (a Hugging Face folder's pooler): random, never read as layers
    untrained: tuple[str, ...] = ()

    def sequence_for(self, layer: str) -> str:
        """What ``--pool auto`` takes of ``layer``'s token sequence (see ``sequence_pool``)."""
        if self.embeddings_pool is not None and self.layer_roles.get(layer) == "embeddings":
            return self.embeddings_pool
        return self.sequence_pool

    def candidate_layers(self) -> list[str]:
        """Every name ``--layers`` accepts: virtual names first, then the module paths it can hook."""
        return list(self.adapter.virtual_names) + self.adapter.hookable(self.module)

    def resolve_layers(self, requested: str | Sequence[str]) -> list[str]:
        """:func:`~laya_inspect.layers.resolve_layers` over this model's layers, with its own hint when
        nothing can be selected (e.g. TorchScript, which takes no hooks)."""
        names = resolve_layers(requested, self.candidate_layers(), self.default_layers, hint=self.adapter.hook_hint)
        read = [n for n in names if n in self.adapter.virtual_names]
        hooked = [n for n in names if n not in read]
        if read and hooked:
            raise InputError(
                f"--layers mixes {read[0]!r}, read from the output of {self.spec}, with the module {hooked[0]!r}: "
                "which of them is deeper cannot be told, and a cache keeps its layers in depth order; "
                "extract them into two caches"
            )
        random = [n for n in names for u in self.untrained if n == u or n.startswith(u + ".")]
        if random:
            raise InputError(
                f"layer {random[0]!r} of {self.spec} holds values its weight files do not have (transformers "
                f"filled {', '.join(self.untrained)} with random numbers); read other layers"
            )
        return names

    def expects(self) -> str | None:
        """What the model takes, in words, as far as ``input_spec`` knows it."""
        spec = self.input_spec
        if spec.kind == "tokens":
            upper = f" in 0..{spec.vocab_size - 1}" if spec.vocab_size else ""
            return f"token ids (N, T){upper}"
        if spec.kind == "text":
            return "tokenised text (input_ids, attention_mask)"
        if spec.channels is None and spec.size is None:
            return None
        h, w = spec.hw or ("?", "?")
        return f"images (N, {spec.channels or '?'}, {h}, {w})"

    def role(self, name: str) -> str:
        """``embeddings`` / ``block`` / ``module``: what a layer is, for the cache's ``layer_roles``."""
        return self.layer_roles.get(name) or ("block" if name in self.default_layers else "module")

    def to_device(self, inputs: Any) -> Any:
        if isinstance(inputs, Tensor):
            return inputs.to(self.device)
        if isinstance(inputs, Mapping):
            return {k: v.to(self.device) if isinstance(v, Tensor) else v for k, v in inputs.items()}
        return inputs

    def example_inputs(self, n: int = 2, length: int | None = None) -> Any:
        """A dummy batch shaped as ``input_spec`` asks (for ``--list-layers`` without data), or
        None when the spec leaves the shape open (an image model without a size); ``length``: the
        tokens of each text (special ones included), else a short example's."""
        spec = self.input_spec
        if spec.kind == "image":
            if spec.hw is None:
                return None
            return torch.full((n, spec.channels or 3, *spec.hw), 0.5)
        if spec.kind == "text" and self.tokenizer is not None:
            if length is None:
                return dict(self.tokenizer(["an example"] * n, padding=True, return_tensors="pt"))
            # words enough to fill ``length`` tokens, cut there: every token real, none padding
            text = " ".join(["example"] * length)
            cut = {"truncation": True, "max_length": length, "padding": "max_length"}
            return dict(self.tokenizer([text] * n, return_tensors="pt", **cut))
        length = length or min(spec.max_length or 16, 16)
        ids = torch.ones(n, length, dtype=torch.long)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)} if spec.kind == "text" else ids

    def forward(self, inputs: Any, names: Sequence[str], record: Record, want_virtual: bool) -> Any:
        """The adapter's forward on ``inputs`` (moved to the device), reporting ``names`` to ``record``.

        An error the model itself raises on these inputs (a shape it cannot take, ids out of its
        vocabulary, running out of memory) becomes an :class:`InputError` naming the input and what
        the model expects; errors in laya-inspect's own code around the call propagate unchanged.
        """
        try:
            return self.adapter.forward(self.module, self.to_device(inputs), names, record, want_virtual)
        except LayaError:
            raise
        except Exception as e:
            if not raised_by_model(e.__traceback__):
                raise
            got = describe_inputs(inputs)
            # torch.OutOfMemoryError (any device) came in torch 2.3; before it, only torch.cuda's existed
            if isinstance(e, getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)) or (
                "can't allocate memory" in str(e)  # the CPU's
            ):
                cpu = " (or --device cpu)" if str(self.device).startswith("cuda") else ""
                raise InputError(
                    f"{self.spec} ran out of memory on {self.device} with a batch of {got}; "
                    f"pass a smaller --batch-size{cpu}"
                ) from e
            expects, fix = self.expects(), self._channels_fix(inputs, e)
            raise InputError(
                f"{self.spec} rejected its input {got}: {first_line(e).rstrip('.') if fix else first_line(e)}"
                + (f"; it expects {expects}" if expects else "")
                + fix
            ) from e

    def _channels_fix(self, inputs: Any, e: BaseException) -> str:
        """The fix, when a model that does not state its input channels (a TorchScript file, a
        Python model without ``input_spec``) rejected images for their channel count: the data are
        converted to a model's channels (greyscale repeated to RGB) only when the model states them."""
        import re

        if self.input_spec.kind != "image" or self.input_spec.channels is not None or not isinstance(inputs, Tensor):
            return ""
        found = re.search(r"to have (\d+) channels, but got (\d+) channels", str(e))
        if inputs.ndim != 4 or found is None or int(found[2]) != inputs.shape[1]:
            return ""
        want, got = int(found[1]), int(found[2])
        return (
            f"; the images have {got} channel{'s' * (got != 1)} and its first convolution takes {want}, but "
            f"{self.spec} does not state its input channels, so they are fed as they are (laya-inspect converts "
            "images to a model's channels, greyscale repeated to RGB, only for a model that states them): write "
            f"the images with {want} channels (an npz: X repeated along its channel axis; a folder: its files "
            f"saved as {'RGB' if want == 3 else 'greyscale'}), or load it with a python: factory whose model "
            f"carries input_spec = {{'kind': 'image', 'channels': {want}}}"
        )

    def run(self, inputs: Any, layer_names: Sequence[str]) -> tuple[dict[str, Any], Tensor | None]:
        """One forward pass under ``torch.no_grad()``: ``({name: raw output}, logits (N, C) | None)``,
        the outputs in depth order: hooked modules in the order the forward made them (a module run
        twice where its last output was made), outputs read from the model's output by their index.

        Inputs the model rejects raise :class:`InputError` (see :meth:`forward`).
        """
        virtual = set(self.adapter.virtual_names)
        wanted_virtual = [n for n in layer_names if n in virtual]
        hooked = [n for n in layer_names if n not in virtual]
        raw: dict[str, Any] = {}

        def record(name: str, _m: nn.Module, out: Any) -> None:
            raw.pop(name, None)  # a second call moves the name to where its output now stands
            raw[name] = snapshot(out)

        with torch.no_grad():
            out = self.forward(inputs, hooked, record, bool(wanted_virtual))
        silent = [n for n in hooked if n not in raw]
        if silent:
            raise InputError(
                f"layer(s) {', '.join(map(repr, silent))} did not run in the forward pass of {self.spec}, "
                f"so their hooks saw nothing{self.adapter.hook_hint}"
            )
        # hidden_states.K: the output of the K-th block, in depth order; a tuple's outputs.K: as asked
        in_order = self.adapter.virtual_names if self.adapter.virtual_in_depth_order else wanted_virtual
        for name in in_order:
            if name in wanted_virtual:
                raw[name] = self.adapter.virtual(out, name)
        return raw, self.adapter.logits(out, self.num_classes)


def rerun_warning(runs: Mapping[str, int]) -> list[str]:
    """A warning for chosen layers whose module ran more than once in one forward pass (one module used
    at several places, as a user's net may reuse one activation): only its last output is read."""
    again = [f"{name!r} ({n} times)" for name, n in runs.items() if n > 1]
    if not again:
        return []
    return [
        f"layer(s) {', '.join(again)} ran more than once in one forward pass (one module used at several "
        "places): only the last run's output is read and stored under that name, the earlier ones are not; "
        "to read each place, give each its own module (or choose the modules around it)"
    ]


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
        if module_kind(m) == "Linear":  # TorchScript copies too
            found = (name, m)
    return found


UNITS_HOW = (
    "one per unit of the nn.Sequential (a child with parameters that is not a norm layer, and the children after "
    "it), taken after its norm and activation (its last child that is not a flatten or dropout); the classifier's "
    "unit left out"
)
CHILDREN_HOW = "the top-level children holding parameters, the classifier left out"


def blocks_of(module: nn.Module) -> list[str]:
    """Fallback default layers: a plain Sequential's units, else top-level children with parameters,
    classifier excluded."""
    return default_blocks(module)[0]


def default_blocks(module: nn.Module) -> tuple[list[str], str]:
    """:func:`blocks_of`'s layers and the rule that picked them, in words (UNITS_HOW or CHILDREN_HOW)."""
    units = _units(module)
    return (units, UNITS_HOW) if units else (_children(module), CHILDREN_HOW)


def _units(module: nn.Module) -> list[str]:
    """The last child of each unit of a plain Sequential, in order; [] for any other module. A conv
    and its own BatchNorm are one unit, read after its activation: tapping each parameterised child
    took a conv before its norm and the norm before its ReLU, two layers of one unit."""
    if module_kind(module) != "Sequential":
        return []
    units: list[list[str]] = []
    for name, m in module.named_children():
        starts = any(True for _ in m.parameters()) and "Norm" not in module_kind(m)
        if starts:
            units.append([name])
        elif units:  # parameter-free children before the first unit belong to none
            units[-1].append(name)
    head = last_linear(module)
    if len(units) > 1 and head is not None and units[-1][0] == head[0].split(".")[0]:
        units = units[:-1]
    return [next((n for n in reversed(unit) if not _reshapes(module, n)), unit[0]) for unit in units]


def _reshapes(module: nn.Module, name: str) -> bool:
    """A child that only reshapes or drops out (the identity in eval): tapped, a conv unit's map would
    reach the cache flattened, its spatial layout lost to --pool."""
    kind = module_kind(getattr(module, name))
    return kind in ("Flatten", "Unflatten", "Identity") or kind.startswith("Dropout")


def _children(module: nn.Module) -> list[str]:
    head = last_linear(module)
    head_top = head[0].split(".")[0] if head else None
    names = [n for n, m in module.named_children() if any(True for _ in m.parameters())]
    if len(names) > 1 and head_top in names and names[-1] == head_top:
        names = names[:-1]
    return names or [n for n, _ in module.named_children()]
