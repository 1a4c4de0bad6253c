"""Image input on real photos (skimage.data): a photo beyond twice PIL's pixel limit is refused with the
limit and the way out, and the default --resize stretch is said when the model's own preprocessing
centre-crops, square images included."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from laya_inspect.data import load_data
from laya_inspect.errors import ImageFileError
from laya_inspect.models.base import InputSpec

skdata = pytest.importorskip("skimage.data")


def jpeg_bytes(photo: np.ndarray, **save) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(photo).save(buf, "JPEG", **save)
    return buf.getvalue()


def folder(tmp_path: Path, damaged: bytes) -> Path:
    """Two class folders of real photos as JPEGs, and one more file, ``damaged``."""
    root = tmp_path / "photos"
    for i, name in enumerate(("astronaut", "chelsea", "rocket", "coffee")):
        f = root / ("cat" if i % 2 else "dog") / f"{name}.jpg"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(jpeg_bytes(np.asarray(Image.fromarray(getattr(skdata, name)()).resize((48, 48)))))
    (root / "dog" / "damaged.jpg").write_bytes(damaged)
    return root


def test_a_photo_beyond_twice_pils_limit_is_refused_with_the_limit(tmp_path, monkeypatch):
    root = folder(tmp_path, jpeg_bytes(skdata.coffee()))  # 600×400: 240,000 pixels
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 50_000)  # PIL refuses beyond 100,000
    with pytest.raises(ImageFileError) as e:
        load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, image_size=32)
    said = str(e.value)
    assert "dog/damaged.jpg (240,000 pixels, beyond the 100,000 (twice PIL.Image.MAX_IMAGE_PIXELS)" in said
    assert "shrink it first" in said and "DOS attack" not in said


CROPPING = InputSpec(kind="image", channels=3, size=64, mean=(0.5,) * 3, std=(0.25,) * 3, resize="crop")


def square_folder(tmp_path: Path) -> Path:
    root = tmp_path / "square"
    for i, name in enumerate(("astronaut", "chelsea", "rocket", "coffee")):
        f = root / ("cat" if i % 2 else "dog") / f"{name}.jpg"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(jpeg_bytes(np.asarray(Image.fromarray(getattr(skdata, name)()).resize((32, 32)))))
    return root


def test_square_images_stretched_for_a_cropping_model_are_said(tmp_path):
    root = square_folder(tmp_path)
    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, input_spec=CROPPING)
    said = [w for w in b.warnings if "takes the centre 64×64" in w]
    assert len(said) == 1, b.warnings
    assert "shorter side to 73" in said[0] and "--resize crop" in said[0]
    assert b.transforms["resize"]["fit"] == "stretch"


@pytest.mark.parametrize("resize", ["stretch", "crop"])
def test_a_resize_given_is_not_warned(tmp_path, resize):
    b = load_data(f"imagefolder:{square_folder(tmp_path)}", test_fraction=0.5, input_spec=CROPPING, resize=resize)
    assert not [w for w in b.warnings if "takes the centre" in w]


def test_a_model_that_does_not_crop_is_not_warned(tmp_path):
    plain = InputSpec(kind="image", channels=3, size=64, mean=(0.5,) * 3, std=(0.25,) * 3, resize="stretch")
    b = load_data(f"imagefolder:{square_folder(tmp_path)}", test_fraction=0.5, input_spec=plain)
    assert not [w for w in b.warnings if "takes the centre" in w]
