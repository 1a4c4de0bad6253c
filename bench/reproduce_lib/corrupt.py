#!/usr/bin/env python3
"""A corrupted copy of a cache's test images, as an npz that `laya-inspect extract --data npz:FILE` reads.

The rows are exactly those of the cache's test split (its stored source index), taken from the data
spec and seed the cache records, so the corrupted cache holds the same images, damaged:

    python bench/reproduce_lib/corrupt.py --cache runs/trust/fmnist/features.h5 --kind noise --severity 2 --out F.npz

Kinds and severities 1 / 2 / 3 (pixels in [0, 1]; in the spirit of ImageNet-C, scaled to 8–32 px images):
``noise`` Gaussian noise of σ 0.08 / 0.18 / 0.38; ``blur`` Gaussian blur of σ 0.5 / 1.0 / 1.5 px;
``jpeg`` JPEG at quality 50 / 20 / 8 (8-bit images only); ``clean`` the images unchanged (a control:
the same images through the npz path must show no shift). Seeded (``--seed``, default 0).
It also prints the extract options that reproduce the cache's own transforms (``--print-extract``).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

SEVERITY = {
    "noise": (0.08, 0.18, 0.38),
    "blur": (0.5, 1.0, 1.5),
    "jpeg": (50, 20, 8),
}
KINDS = ("clean", *SEVERITY)  # clean: the images unchanged, a control (its shift should be nil)


def test_images(cache: Path) -> tuple[np.ndarray, np.ndarray, list[str], dict[str, Any]]:
    """(images (N, C, H, W) uint8 or float32 in [0, 1], labels (N,), class names, the cache's extract
    command) of the cache's test rows, read again from the data the cache was extracted from."""
    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.data import DATASETS, parse_spec

    with FeatureStore(cache) as store:
        cmd = dict(store.attrs["command"])
        index, labels, names = store.index("test"), store.labels("test"), store.class_names
        info = store.attrs["split_info"]
    prefix, arg, opts = parse_spec(cmd["data"])
    if prefix == "digits":
        # digits has no native split: the cache's index counts rows of the whole set
        from sklearn.datasets import load_digits

        d = load_digits()
        x = (d.images / 16.0).astype(np.float32)[:, None][index]
        y = d.target.astype(np.int64)[index]
    else:
        src = DATASETS.get(prefix).load(arg, opts, seed=int(cmd["seed"]), test_fraction=info.get("test_fraction", 0.2))
        split = src.open("test")
        fetched = split.fetch(index)
        x = np.stack([np.asarray(t) for t in fetched]) if isinstance(fetched, list) else np.asarray(fetched)
        y = np.asarray(split.labels)[index]
    if not np.array_equal(y, labels):
        raise SystemExit(f"{cache}: the rows read again do not carry the cache's labels; is the data the same?")
    return x, y, names, cmd


def corrupt(x: np.ndarray, kind: str, severity: int, seed: int = 0) -> np.ndarray:
    """``x`` (N, C, H, W), uint8 or float in [0, 1], corrupted; same dtype back."""
    if kind == "clean":
        return x.copy()
    level = SEVERITY[kind][severity - 1]
    is_uint8 = x.dtype == np.uint8
    f = x.astype(np.float32) / 255.0 if is_uint8 else x.astype(np.float32)
    if kind == "noise":
        f = f + np.random.default_rng(seed).normal(0.0, level, size=f.shape).astype(np.float32)
    elif kind == "blur":
        from scipy.ndimage import gaussian_filter

        f = gaussian_filter(f, sigma=(0, 0, level, level), mode="nearest")
    else:
        if not is_uint8:
            raise SystemExit("jpeg needs 8-bit images; this cache's data is float")
        f = _jpeg(x, int(level)).astype(np.float32) / 255.0
    f = np.clip(f, 0.0, 1.0)
    return np.round(f * 255.0).astype(np.uint8) if is_uint8 else f


def _jpeg(x: np.ndarray, quality: int) -> np.ndarray:
    from PIL import Image

    out = np.empty_like(x)
    for i, img in enumerate(x):
        hwc = img.transpose(1, 2, 0)
        pil = Image.fromarray(hwc[..., 0] if hwc.shape[2] == 1 else hwc)
        buf = io.BytesIO()
        pil.save(buf, format="JPEG", quality=quality)
        dec = np.asarray(Image.open(io.BytesIO(buf.getvalue())))
        out[i] = (dec[..., None] if dec.ndim == 2 else dec).transpose(2, 0, 1)
    return out


def extract_options(cmd: dict[str, Any]) -> list[str]:
    """The extract options, other than --data, --split, --limit and --out, that the cache was written with."""
    argv = ["--model", cmd["model"]]
    if cmd.get("weights"):
        argv += ["--weights", str(cmd["weights"])]
    for key, flag in (("layers", "--layers"), ("pool", "--pool"), ("dtype", "--dtype"), ("resize", "--resize")):
        argv += [flag, str(cmd[key])] if cmd.get(key) is not None else []
    for key, flag in (("image_size", "--image-size"), ("normalize", "--normalize")):
        argv += [flag, str(cmd[key])] if cmd.get(key) is not None else []
    argv += ["--trust-pickle"] if cmd.get("trust_pickle") else []
    return argv


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache", required=True, type=Path)
    p.add_argument("--kind", choices=KINDS)
    p.add_argument("--severity", type=int, choices=(1, 2, 3), default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path)
    p.add_argument("--print-extract", action="store_true", help="print the cache's extract options (JSON) and stop")
    a = p.parse_args(argv)
    if a.print_extract:
        from laya_inspect.cache.store import FeatureStore

        with FeatureStore(a.cache) as store:
            print(json.dumps(extract_options(dict(store.attrs["command"]))))
        return 0
    if a.kind is None or a.out is None:
        p.error("--kind and --out are needed")
    x, y, names, _ = test_images(a.cache)
    bad = corrupt(x, a.kind, a.severity, a.seed)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.with_name(a.out.name + ".tmp.npz")
    np.savez(tmp, X_test=bad, y_test=y, class_names=np.array(names))
    tmp.replace(a.out)
    change = float(np.abs(bad.astype(np.float32) - x.astype(np.float32)).mean() / (255.0 if x.dtype == np.uint8 else 1))
    what = a.kind if a.kind == "clean" else f"{a.kind} severity {a.severity}"
    print(f"wrote {a.out}: {len(y)} test images, {what}, mean |change| {change:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
