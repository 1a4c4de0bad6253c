"""Image models from torchvision and timm: architecture by name, weights from a local file."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from torch import Tensor, nn

from ..data.transforms import IMAGENET_MEAN, IMAGENET_STD
from ..errors import NotFoundError, suggest
from ..layers import mean_after
from ..runtime import seeded
from .base import (
    SOURCES,
    Adapter,
    InputSpec,
    LoadedModel,
    LoadOptions,
    Record,
    blocks_of,
    freeze,
    keeps_random_init,
    last_linear,
)
from .weights import load_state_dict_strict, read_weights, to_state_dict, under_prefix


def _import(name: str, extra: str):
    try:
        return __import__(name)
    except ImportError as e:
        raise NotFoundError(
            f"model source needs {name!r}, which is not installed ({e}); pip install 'laya-inspect[{extra}]'"
        ) from None


def _classes_in_state(
    model: nn.Module, state: Mapping[str, Tensor] | None, classifier: str | None = None
) -> int | None:
    """The class count the checkpoint's classifier was trained for, when it differs from the model's.

    ``-1``: the checkpoint has no classifier weights at all (a headless backbone).
    """
    if state is None:
        return None
    if classifier is None:
        head = last_linear(model)
        if head is None:
            return None
        classifier = head[0]
    key = f"{classifier}.weight"
    if key not in state:
        return -1 if f"{classifier}.weight" in model.state_dict() else None
    own = model.state_dict().get(key)
    if own is None or state[key].ndim != own.ndim:  # not a classifier of another width: the strict load says why
        return None
    return int(state[key].shape[0]) if state[key].shape[0] != own.shape[0] else None


def _build(
    factory: Callable[..., nn.Module],
    name: str,
    options: LoadOptions,
    classifier: Callable[[nn.Module], str | None] = lambda _m: None,
    headless: bool = False,
) -> tuple[nn.Module, str | None]:
    """``factory(name)`` with ``options.weights`` loaded strictly, and the weights' sha256. A checkpoint
    whose classifier has another class count rebuilds the model for it; one without a classifier
    (``-1``) builds it headless when ``headless``."""
    state, sha = None, None
    if options.weights is not None:
        obj, sha = read_weights(options.weights, trust_pickle=options.trust_pickle)
        state = to_state_dict(obj, source=options.weights)
    with seeded():
        model = factory(name)
        if state is not None:  # a wrapper's prefix (a Lightning module's, transformers' TimmWrapper's) first
            state = dict(under_prefix(model.state_dict(), state, str(options.weights)))
        k = _classes_in_state(model, state, classifier(model))
        if k is not None and (k > 0 or headless):
            model = factory(name, num_classes=max(k, 0))
    if state is not None:
        load_state_dict_strict(model, state, source=str(options.weights))
    return model, sha


# ---------------------------------------------------------------------------------------------
# torchvision


def torchvision_blocks(model: nn.Module) -> list[str]:
    """ResNets: ``layer1..layer4``; a ``features`` Sequential: its max-pools (VGG, AlexNet: the end
    of each block) or else its children (MobileNet, EfficientNet, ConvNeXt…); ViT: the encoder
    layers; otherwise top-level children with parameters, classifier excluded."""
    names = dict(model.named_modules())
    resnet = [f"layer{i}" for i in range(1, 5) if f"layer{i}" in names]
    if resnet:
        return resnet
    features = names.get("features")
    if isinstance(features, nn.Sequential):
        children = [(f"features.{n}", m) for n, m in features.named_children()]
        pools = [n for n, m in children if isinstance(m, nn.MaxPool2d)]
        return pools or [n for n, _ in children]
    layers = names.get("encoder.layers")
    if isinstance(layers, (nn.Sequential, nn.ModuleList)):
        return [f"encoder.layers.{n}" for n, _ in layers.named_children()]
    return blocks_of(model)


@SOURCES.register("torchvision")
def load_torchvision(name: str, options: LoadOptions) -> LoadedModel:
    """``torchvision:NAME`` built with ``weights=None`` (never downloads), then ``weights`` loaded
    strictly; a checkpoint whose classifier has another class count rebuilds the model for it.
    Without ``weights`` only with ``random_init``."""
    _import("torchvision", "vision")
    from torchvision import models as tvm

    if name not in tvm.list_models():
        raise NotFoundError(f"no torchvision model {name!r}; {suggest(name, tvm.list_models())}")
    random_init = keeps_random_init(f"torchvision:{name}", options)
    model, sha = _build(lambda n, **kw: tvm.get_model(n, weights=None, **kw), name, options)
    size, mean, std, resize = 224, IMAGENET_MEAN, IMAGENET_STD, None
    try:  # the preset's crop size and normalisation, from torchvision's metadata (no download)
        kw = tvm.get_model_weights(name).DEFAULT.transforms.keywords
        size, mean, std = kw.get("crop_size", size), tuple(kw.get("mean", mean)), tuple(kw.get("std", std))
        resize = "crop" if "crop_size" in kw else None
    except (ValueError, AttributeError, KeyError):
        pass
    head = last_linear(model)
    return LoadedModel(
        module=freeze(model, options.device),
        spec=f"torchvision:{name}",
        source="torchvision",
        input_spec=InputSpec(kind="image", channels=3, size=int(size), mean=mean, std=std, resize=resize),
        default_layers=torchvision_blocks(model),
        num_classes=head[1].out_features if head else None,
        weights_path=options.weights,
        weights_sha256=sha,
        device=options.device,
        random_init=random_init,
    )


# ---------------------------------------------------------------------------------------------
# timm


def timm_blocks(model: nn.Module) -> list[str]:
    """``feature_info`` module names (timm's own stage outputs), else ``blocks.*`` / ``stages.*``."""
    names = dict(model.named_modules())
    info = [f.get("module") for f in getattr(model, "feature_info", None) or [] if isinstance(f, dict)]
    if info and all(n in names for n in info):
        return list(dict.fromkeys(cast(list[str], info)))  # each one is a module name
    for container in ("blocks", "stages", "layers"):
        if isinstance(names.get(container), (nn.Sequential, nn.ModuleList)):
            return [f"{container}.{n}" for n, _ in names[container].named_children()]
    return blocks_of(model)


class TimmAdapter(Adapter):
    """Models with ``output_fmt == "NHWC"`` (Swin, MambaOut…) give channels-last stage maps; they are
    reported as (N, C, H, W), so pooling and shapes mean the same as for every other model."""

    def __init__(self, nhwc: dict[str, int]) -> None:
        self.nhwc = nhwc  # stage name → channels

    def forward(self, module: nn.Module, inputs: Any, names: Sequence[str], record: Record, want_virtual: bool) -> Any:
        def to_nchw(name: str, m: nn.Module, out: Any) -> None:
            c = self.nhwc.get(name)
            if c is not None and isinstance(out, Tensor) and out.ndim == 4 and out.shape[-1] == c:
                out = out.permute(0, 3, 1, 2)
            record(name, m, out)

        return super().forward(module, inputs, names, to_nchw, want_virtual)


def _timm_classifier(model: nn.Module) -> str | None:
    """The classifier module named in the model's ``pretrained_cfg``, if the model has it."""
    classifier = cast(dict[str, Any], model.pretrained_cfg).get("classifier")
    classifier = classifier[0] if isinstance(classifier, (list, tuple)) else classifier
    return classifier if classifier in dict(model.named_modules()) else None


def _timm_sequence_pool(model: Any) -> str:
    """A ViT whose head pools its tokens by the mean: token 0 is no summary, and the mean is taken,
    as timm's own head takes it, after the class and register tokens unless it includes them."""
    if getattr(model, "global_pool", None) not in TOKEN_MEANS:
        return "cls"
    include = bool(getattr(model, "pool_include_prefix", False))
    return mean_after(0 if include else int(getattr(model, "num_prefix_tokens", 0) or 0))


TOKEN_MEANS = ("avg", "avgmax", "max", "map")  # timm global_pool values that pool a ViT's tokens, not token 0


@SOURCES.register("timm")
def load_timm(name: str, options: LoadOptions) -> LoadedModel:
    """``timm:NAME`` with ``pretrained=False``, then ``weights``; the class count follows the
    checkpoint's classifier (0 = headless when the checkpoint has none). Without ``weights`` only
    with ``random_init``."""
    timm = _import("timm", "vision")
    if not timm.is_model(name):
        raise NotFoundError(f"no timm model {name!r}; {suggest(name, timm.list_models())}")
    random_init = keeps_random_init(f"timm:{name}", options)
    factory = lambda n, **kw: timm.create_model(n, pretrained=False, **kw)  # noqa: E731
    model, sha = _build(factory, name, options, _timm_classifier, headless=True)
    cfg = cast(dict[str, Any], model.pretrained_cfg)
    c, h, _w = cfg.get("input_size", (3, 224, 224))
    num_classes = getattr(model, "num_classes", None) or None
    nhwc = {}
    if getattr(model, "output_fmt", "NCHW") == "NHWC":
        info = cast(list[dict[str, Any]], model.feature_info)
        nhwc = {f["module"]: f["num_chs"] for f in info if "module" in f and "num_chs" in f}
    return LoadedModel(
        module=freeze(model, options.device),
        spec=f"timm:{name}",
        source="timm",
        adapter=TimmAdapter(nhwc),
        input_spec=InputSpec(
            kind="image",
            channels=c,
            size=h,
            mean=tuple(cfg.get("mean", IMAGENET_MEAN)),
            std=tuple(cfg.get("std", IMAGENET_STD)),
            resize={"center": "crop", "squash": "stretch"}.get(cfg.get("crop_mode", "center")),
        ),
        default_layers=timm_blocks(model),
        num_classes=num_classes,
        sequence_pool=_timm_sequence_pool(model),
        weights_path=options.weights,
        weights_sha256=sha,
        device=options.device,
        random_init=random_init,
    )
