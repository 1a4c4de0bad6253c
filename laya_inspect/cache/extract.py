"""`extract`: run data through a frozen model and stream the chosen layers into one HDF5 cache."""

from __future__ import annotations

import time
from typing import Any

import torch

from ..data import load_data
from ..distributed import env_world, session
from ..errors import CacheError, InputError
from ..files import output_lock
from ..layers import list_layers
from ..models import load_model
from ..out_dir import check_out, spec_paths
from ..runtime import Progress, no_progress, pick_device
from .extract_config import RANDOM_WITHOUT_WEIGHTS, ExtractConfig, ExtractResult
from .partial import refuse_foreign_partial, refuse_reserved_name
from .rows import prepare, result_of, to_device, write_cache
from .shards import (
    drop_stale_shards,
    extract_sharded,
    finish_swap,
    refuse_foreign_shards,
    refuse_sharded_leftovers,
    staging_dir,
)
from .writer import refuse_not_a_file, unproven_cache


def extract_features(
    config: ExtractConfig | torch.nn.Module,
    batches: Any = None,
    *,
    progress: Progress | None = None,
    **options: Any,
) -> ExtractResult:
    """Run ``config.data`` through the frozen ``config.model`` and write the chosen layers to ``config.out``.

    Given an ``nn.Module`` instead of a config, the notebook path: ``extract_features(model, batches,
    layers=[...], out=...)`` with any iterable of ``(inputs, labels)`` batches, or ``{split: iterable}``
    (:func:`laya_inspect.cache.module_extract.extract_from_module`, which takes the other keywords).

    The output is locked for the whole run (a second writer is refused with this one's PID); rows go
    to ``<out>.partial``, renamed to ``out`` once complete (see :mod:`laya_inspect.cache.writer`). Launched
    by torchrun, each process writes its own shard of every split and rank 0 joins them into ``out``
    (see :mod:`laya_inspect.cache.shards`).
    """
    if isinstance(config, torch.nn.Module):
        from .module_extract import extract_from_module

        return extract_from_module(config, batches, **options)
    if batches is not None or options:
        raise InputError("extract_features(config) takes no batches or options; they belong in ExtractConfig")
    refuse_reserved_name(config.out)
    refuse_not_a_file(config.out)
    mended = None
    # a swap a stopped --overwrite under torchrun left half done; under torchrun, rank 0 mends it once it
    # holds the lock for the run
    if not env_world().distributed and staging_dir(config.out).is_dir():
        with output_lock(config.out):
            refuse_foreign_shards(config.out)  # the mend removes the old shards' folder: never a user's file
            mended = finish_swap(config.out)
    if mended is not None and not config.overwrite:  # the cache there is whole again, and not to be replaced
        raise CacheError(f"{mended}; {config.out} is a complete cache: pass --overwrite to write a new one")
    check_out(
        config.out,
        force=config.overwrite,
        command="extract",
        kind="file",
        inputs=[config.weights, *spec_paths(config.data)],
        owned=unproven_cache,
        force_flag="--overwrite",
    )
    refuse_foreign_partial(config.out)  # neither resumed nor replaced: a link, or a file not laya-inspect's
    refuse_foreign_shards(config.out)  # where the shards' folder would be: a user's file
    with session(config.device) as world:
        if world.distributed:
            return extract_sharded(config, world, progress or no_progress)
        with output_lock(config.out):
            refuse_sharded_leftovers(config)
            result = _extract(config, progress or no_progress)
            result.warnings += [mended] if mended else []
            if config.overwrite:
                result.warnings += drop_stale_shards(config.out)  # a folder holding a user's file is kept
            return result


def _extract(config: ExtractConfig, emit: Progress) -> ExtractResult:
    prep = prepare(config, pick_device(config.device))
    start_time = time.perf_counter()
    written, resumed, nonfinite = write_cache(
        config, prep, config.out, prep.data.splits, emit, attrs=prep.attrs, overwrite=config.overwrite
    )
    return result_of(config, prep, written, resumed, nonfinite, time.perf_counter() - start_time)


def list_model_layers(
    *,
    model: str,
    data: str | None,
    weights: str | None = None,
    trust_pickle: bool = False,
    trust_remote_code: bool = False,
    random_init: bool = False,
    image_size: int | None = None,
    normalize: str | None = None,
    resize: str | None = None,
    device: str = "auto",
):
    """Each candidate layer's name, type and output shape from one dry batch."""
    dev = pick_device(device)
    loaded = load_model(
        model,
        weights=weights,
        trust_pickle=trust_pickle,
        trust_remote_code=trust_remote_code,
        # listing caches nothing, and random weights name the same layers
        random_init=random_init or (weights is None and model.split(":", 1)[0] in RANDOM_WITHOUT_WEIGHTS),
        device=str(dev),
    )
    inputs = None
    if data is not None:
        bundle = load_data(
            data,
            splits=("test",),
            limit=2,
            seed=0,
            input_spec=loaded.input_spec,
            tokenizer=loaded.tokenizer,
            image_size=image_size,
            normalize=normalize,
            resize=resize,
        )
        split = next(iter(bundle.splits.values()))
        inputs, _, _ = next(iter(split.batches(2)))
        inputs = to_device(inputs, dev)
    return loaded, list_layers(loaded, inputs)
