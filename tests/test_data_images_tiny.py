"""imagefolder: a file far smaller than the rest (a 1×1 icon, a 4×4 thumbnail) is enlarged to the
model's input like any other and becomes a flat patch of one or a few colours. Real photos from
skimage.data, through the public loader and the extract command."""

from __future__ import annotations

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


def folder(root: Path, side: int = 32) -> None:
    """Two classes of real photos at side × side, saved as JPEG."""
    for i, name in enumerate(PHOTOS):
        f = root / ("cat" if i % 2 else "dog") / f"{name}.jpg"
        f.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(getattr(skdata, name)()).convert("RGB").resize((side, side)).save(f, quality=95)


def enlarged(root: Path, size: int) -> list[str]:
    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, image_size=size)
    return [w for w in b.warnings if "enlarged" in w]


def test_a_file_far_smaller_than_the_rest_is_counted_and_named(tmp_path):
    """QA: a 1×1 PNG and a 4×4 thumbnail in a folder of 32×32 photos were read at 32×32, each a flat
    patch of colour, with no word (the stretch warning looks at the aspect ratio only: both are square)."""
    root = tmp_path / "photos"
    folder(root)
    assert enlarged(root, 32) == []
    Image.fromarray(skdata.coffee()).convert("RGB").resize((1, 1)).save(root / "cat" / "tiny.png")
    Image.fromarray(skdata.chelsea()).convert("RGB").resize((4, 4)).save(root / "dog" / "thumb.png")
    said = enlarged(root, 32)
    assert len(said) == 1, said
    assert "2 of 6 image files are enlarged 4× or more to the model's 32×32 input" in said[0]
    assert "cat/tiny.png (1×1)" in said[0] and "dog/thumb.png (4×4)" in said[0] and "coffee.jpg" not in said[0]
    # a smaller input keeps the thumbnail within 4× of it; the 1×1 file is still blown up
    assert "1 of 6" in enlarged(root, 12)[0]


def test_a_folder_of_small_images_all_brought_to_a_large_input_says_nothing(tmp_path):
    """8×8 photos read at 64×64, every one alike, is what --image-size is for."""
    root = tmp_path / "small"
    folder(root, side=8)
    assert enlarged(root, 64) == []


def test_extract_records_the_warning_in_the_cache(tmp_path):
    root = tmp_path / "photos"
    folder(root)
    Image.fromarray(skdata.coffee()).convert("RGB").resize((1, 1)).save(root / "cat" / "tiny.png")
    out = tmp_path / "f.h5"
    argv = ["extract", "--model", "torchvision:mobilenet_v3_small", "--random-init", "--data", f"imagefolder:{root}"]
    argv += ["--image-size", "32", "--layers", "-1", "--device", "cpu", "--out", str(out)]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 0, res.output
    assert "cat/tiny.png (1×1)" in " ".join(res.output.split())
    with h5py.File(out, "r") as f:
        recorded = decode_attr(f.attrs["warnings"])
    assert any("cat/tiny.png (1×1)" in w for w in recorded)
