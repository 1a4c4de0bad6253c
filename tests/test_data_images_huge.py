"""imagefolder: a file over PIL's pixel limit (its guard against decompression bombs) made PIL print
one unnamed warning on the terminal, which reached neither the cache nor the report. Real photos from
skimage.data; PIL's public limit lowered so that a small file stands for a 100-megapixel one."""

from __future__ import annotations

import warnings
from pathlib import Path

import h5py
import pytest
from PIL import Image
from typer.testing import CliRunner

from laya_inspect.cache.schema import decode_attr
from laya_inspect.cli import app
from laya_inspect.data import load_data

skdata = pytest.importorskip("skimage.data")

PHOTOS = ("astronaut", "chelsea", "coffee", "rocket")


@pytest.fixture
def photos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Four 32×32 photos in two classes and one 50×50 photo over a limit of 2,000 pixels (PIL warns
    between the limit and twice it, and refuses beyond)."""
    root = tmp_path / "photos"
    for i, name in enumerate(PHOTOS):
        f = root / ("cat" if i % 2 else "dog") / f"{name}.jpg"
        f.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(getattr(skdata, name)()).convert("RGB").resize((32, 32)).save(f, quality=95)
    Image.fromarray(skdata.coffee()).convert("RGB").resize((50, 50)).save(root / "cat" / "scan.jpg")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 2000)
    return root


def test_a_file_over_pils_pixel_limit_is_named_in_the_warnings(photos):
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)  # PIL's own, unnamed, must not escape
        b = load_data(f"imagefolder:{photos}", test_fraction=0.5, seed=0, image_size=32)
        for split in b.splits.values():
            split.fetch(split.index)  # the pixels decoded too
    said = [w for w in b.warnings if "PIL's limit" in w]
    assert len(said) == 1, b.warnings
    assert "1 of 5 image files exceed PIL's limit of 2,000 pixels" in said[0]
    assert "cat/scan.jpg (50×50)" in said[0] and "coffee.jpg" not in said[0]


def test_extract_records_it_in_the_cache_and_prints_no_unnamed_warning(photos, tmp_path):
    out = tmp_path / "f.h5"
    argv = ["extract", "--model", "torchvision:mobilenet_v3_small", "--random-init", "--data", f"imagefolder:{photos}"]
    argv += ["--image-size", "32", "--layers", "-1", "--device", "cpu", "--out", str(out)]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 0, res.output
    printed = " ".join(res.output.split())
    assert "cat/scan.jpg (50×50)" in printed
    assert "could be decompression bomb" not in printed
    with h5py.File(out, "r") as f:
        recorded = decode_attr(f.attrs["warnings"])
    assert any("cat/scan.jpg (50×50)" in w for w in recorded), recorded
