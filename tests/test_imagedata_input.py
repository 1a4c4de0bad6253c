"""Image input on real photos (skimage.data, CIFAR-10 JPEGs from ../shared/data): a JPEG damaged in the
middle is refused naming the file (PIL decodes it without a word into wrong pixels), a photo beyond
twice PIL's pixel limit is refused with the limit and the way out, and the default --resize stretch
is said when the model's own preprocessing centre-crops, square images included."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.data import load_data
from laya_inspect.data.jpeg import damage
from laya_inspect.errors import ImageFileError
from laya_inspect.models.base import InputSpec

skdata = pytest.importorskip("skimage.data")
CIFAR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "cifar10-jpeg.tar.gz"


def jpeg_bytes(photo: np.ndarray, **save) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(photo).save(buf, "JPEG", **save)
    return buf.getvalue()


def garbled(data: bytes, seed: int = 0, n: int = 32) -> bytes:
    """``n`` bytes in the middle of the compressed data overwritten (not cut: the file keeps its length)."""
    out = bytearray(data)
    mid = len(out) // 2
    out[mid : mid + n] = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()
    return bytes(out)


def folder(tmp_path: Path, damaged: bytes) -> Path:
    """Two class folders of real photos as JPEGs, one of them damaged."""
    root = tmp_path / "photos"
    for i, name in enumerate(("astronaut", "chelsea", "rocket", "coffee")):
        f = root / ("cat" if i % 2 else "dog") / f"{name}.jpg"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(jpeg_bytes(np.asarray(Image.fromarray(getattr(skdata, name)()).resize((48, 48)))))
    (root / "dog" / "damaged.jpg").write_bytes(damaged)
    return root


def decode_all(bundle) -> None:
    for split in bundle.splits.values():
        for i in range(len(split.index)):
            split.fetch(split.index[i : i + 1])


def test_pil_decodes_the_damaged_photo_silently_into_other_pixels():
    """What the refusal is for: PIL neither raises nor warns, and the pixels differ from the damage on."""
    clean = jpeg_bytes(skdata.coffee(), quality=90)
    with Image.open(io.BytesIO(garbled(clean))) as im:
        bad = np.asarray(im.convert("RGB"), dtype=int)
    good = np.asarray(Image.open(io.BytesIO(clean)).convert("RGB"), dtype=int)
    assert (np.abs(bad - good).max(axis=2) > 32).mean() > 0.05


def test_a_jpeg_damaged_mid_file_is_refused_naming_the_file_and_libjpegs_words(tmp_path):
    root = folder(tmp_path, garbled(jpeg_bytes(skdata.coffee(), quality=90)))
    bundle = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, image_size=32)
    with pytest.raises(ImageFileError, match="its JPEG data is damaged") as e:
        decode_all(bundle)
    assert e.value.path.endswith("dog/damaged.jpg")
    assert "damaged.jpg: its JPEG data is damaged (libjpeg: Corrupt JPEG data: " in str(e.value)


def test_a_damaged_progressive_jpeg_is_refused_too(tmp_path):
    progressive = jpeg_bytes(skdata.coffee(), progressive=True)
    assert damage(progressive) == ""
    root = folder(tmp_path, garbled(progressive))
    bundle = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, image_size=32)
    with pytest.raises(ImageFileError, match=r"its JPEG data is damaged \(libjpeg: Corrupt JPEG data"):
        decode_all(bundle)


def cmyk_jpeg(photo: np.ndarray, **save) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(photo).convert("CMYK").save(buf, "JPEG", **save)
    return buf.getvalue()


def ycck_jpeg(photo: np.ndarray) -> bytes:
    """CMYK pixels stored as YCCK, as libjpeg-turbo writes CMYK (PIL writes them as plain CMYK)."""
    import simplejpeg

    cmyk = np.ascontiguousarray(np.asarray(Image.fromarray(photo).convert("CMYK")))
    return simplejpeg.encode_jpeg(cmyk, quality=85, colorspace="CMYK", colorsubsampling="444")


@pytest.mark.parametrize("kind", ["grey", "cmyk", "ycck"])
def test_damaged_grey_and_cmyk_jpegs_are_refused(kind):
    made = {"grey": lambda: jpeg_bytes(skdata.camera()), "cmyk": lambda: cmyk_jpeg(skdata.coffee())}
    clean = made.get(kind, lambda: ycck_jpeg(skdata.coffee()))()
    seed = 1  # an overwrite libjpeg notices in each (some fall back into step unnoticed)
    assert damage(clean) == "" and damage(garbled(clean, seed)).startswith("Corrupt JPEG data")
    with Image.open(io.BytesIO(clean)) as im:
        assert im.mode == ("L" if kind == "grey" else "CMYK")


def test_a_jpeg_cut_short_is_still_refused_as_truncated(tmp_path):
    clean = jpeg_bytes(skdata.coffee(), quality=90)
    assert all(damage(clean[:n]) == "" for n in (300, 1000, len(clean) // 2))  # PIL says it, not the check
    root = folder(tmp_path, clean[: len(clean) // 2])
    bundle = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, image_size=32)
    with pytest.raises(ImageFileError, match="truncated") as e:
        decode_all(bundle)
    assert e.value.path.endswith("dog/damaged.jpg")


def test_what_libjpeg_turbo_does_not_read_is_left_to_pil():
    assert damage(b"\x89PNG\r\n\x1a\n") == ""  # not a JPEG: libjpeg-turbo's error is not damage


@pytest.mark.parametrize(
    "save",
    [
        {},
        {"quality": 95, "subsampling": 0},
        {"subsampling": 1},
        {"optimize": True},
        {"progressive": True},
        {"restart_marker_rows": 1},
    ],
)
def test_clean_jpegs_pass(save):
    for name in ("coffee", "chelsea", "camera"):
        assert damage(jpeg_bytes(getattr(skdata, name)(), **save)) == "", (name, save)
    assert damage(cmyk_jpeg(skdata.coffee(), **save)) == "", save


def test_clean_grey_and_cmyk_folders_are_read_as_pil_reads_them(tmp_path):
    root = tmp_path / "mixed"
    for i, name in enumerate(("astronaut", "chelsea", "rocket", "coffee")):
        f = root / ("cat" if i % 2 else "dog") / f"{name}.jpg"
        f.parent.mkdir(parents=True, exist_ok=True)
        photo = np.asarray(Image.fromarray(getattr(skdata, name)()).resize((48, 48)))
        f.write_bytes(cmyk_jpeg(photo) if i < 2 else jpeg_bytes(np.asarray(Image.fromarray(photo).convert("L"))))
    bundle = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, image_size=48)
    decode_all(bundle)  # nothing refused


def test_real_cifar_jpegs_pass():
    if not CIFAR.is_file():
        pytest.skip(f"{CIFAR} is absent (see ../shared/data/README.md)")
    seen = 0
    with tarfile.open(CIFAR) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".jpg"):
                data = tar.extractfile(member).read()
                assert damage(data) == "", member.name
                seen += 1
                if seen == 1000:
                    break
    assert seen == 1000


def test_extract_refuses_a_damaged_jpeg_in_one_line(tmp_path):
    root = folder(tmp_path, garbled(jpeg_bytes(skdata.coffee(), quality=90)))
    argv = ["extract", "--model", "torchvision:mobilenet_v3_small", "--random-init", "--data", f"imagefolder:{root}"]
    argv += ["--image-size", "32", "--layers", "-1", "--device", "cpu", "--out", str(tmp_path / "f.h5")]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 1, res.output
    printed = " ".join(res.output.split())
    assert "damaged.jpg" in printed and "its JPEG data is damaged (libjpeg: Corrupt JPEG data" in printed
    assert "Traceback" not in res.output


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
