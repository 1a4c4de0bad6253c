"""The cache and head the attribution and training benches share, built once under the system's temp
folder (never the repository): zoo MLP hidden states of real Fashion-MNIST (sklearn digits when
Fashion-MNIST is not installed), and a LAYA head fitted on them for one epoch."""

from __future__ import annotations

from pathlib import Path

import _bench


def feature_cache(rows: int) -> tuple[Path, str]:
    """A complete cache with ``rows`` train and ``rows`` test rows (at most what the data has); and the
    data it came from, in words."""
    from laya_inspect.cache.extract import ExtractConfig, extract_features

    spec = _bench.fmnist_spec() or "digits"
    name = "fmnist" if spec != "digits" else "digits"
    out = _bench.SCRATCH / f"{name}-mlp-{rows}.h5"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        extract_features(
            ExtractConfig(model="zoo:mlp", random_init=True, data=spec, out=str(out), limit=rows, device="cpu")
        )
    return out, f"zoo MLP (random init) on {'Fashion-MNIST' if name == 'fmnist' else 'sklearn digits'}"


def fitted_head(cache: Path) -> Path:
    """A LAYA head directory fitted on ``cache`` for one epoch (fit-head's defaults otherwise)."""
    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.training.fit_head import FitConfig, fit_heads

    out = cache.with_suffix(".heads")
    head_dir = out / "laya" / "seed_0"
    if not (head_dir / "config.json").exists():
        with FeatureStore(cache) as store:
            fit_heads(
                store, FitConfig(heads=("laya",), seeds=(0,), epochs=1, device="cpu"), out_dir=out, overwrite=True
            )
    return head_dir
