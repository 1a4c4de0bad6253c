"""data/: what real and broken inputs become. Image files are converted one by one to the model's
channels (real photos from skimage.data), ``--resize crop`` is torchvision's evaluation transform to
the pixel, the bundle records its normalisation and carries warnings, labels outside the class list
are named, and every broken input is a LayaError that names what to fix."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from PIL import Image

from laya_inspect.data import load_data, plan_image_transform
from laya_inspect.data.transforms import IMAGENET_MEAN, IMAGENET_STD
from laya_inspect.data.words import WordVocab
from laya_inspect.errors import InputError, LayaError, NotFoundError

skdata = pytest.importorskip("skimage.data")


def spec(**kw):
    base = dict(kind="image", channels=None, size=None, mean=None, std=None, max_length=None)
    return SimpleNamespace(**{**base, **kw})


TOKENS = spec(kind="tokens", max_length=8)
VOCAB = WordVocab(("good", "bad"))


@pytest.fixture(scope="module")
def photos():
    """Real photos, cut to 96 × 128 (rows × columns) to keep the tests fast."""
    return {
        "astronaut": skdata.astronaut()[100:196, 150:278],  # RGB
        "camera": skdata.camera()[100:196, 150:278],  # greyscale
    }


def rows_of(bundle, split="train"):
    """Every row of a split in one batch: (inputs (N, C, H, W), source rows (N,))."""
    s = bundle.splits[split]
    x, _, idx = next(s.batches(s.n))
    return x, idx


def folder_tensors(root: Path, **kw) -> dict[str, torch.Tensor]:
    """Load an image folder (class folders a/ and b/) and return each file's cached tensor by file name."""
    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, **kw)
    files = sorted(str(p) for p in root.rglob("*") if p.is_file())
    out = {}
    for split in ("train", "test"):
        x, idx = rows_of(b, split)
        for t, i in zip(x, idx.tolist()):
            out[Path(files[i]).name] = t
    return out


def write(path: Path, im: Image.Image, **save) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    im.save(path, **save)
    return path


def unit(arr: np.ndarray) -> torch.Tensor:
    """(H, W[, C]) uint8 → (C, H, W) float in [0, 1], as ToTensor."""
    t = torch.from_numpy(np.asarray(arr, dtype=np.float32) / 255)
    return t[None] if t.ndim == 2 else t.permute(2, 0, 1)


# ----------------------------------------------------------------------------- colour, per file
@pytest.mark.parametrize("ext", ["png", "jpg"])
@pytest.mark.parametrize("channels", [None, 3])
def test_colour_photo_is_the_same_whatever_file_comes_first(tmp_path, photos, ext, channels):
    rgb, grey = Image.fromarray(photos["astronaut"]), Image.fromarray(photos["camera"])
    cached = []
    for order, names in enumerate([("0_camera", "1_astronaut"), ("1_camera", "0_astronaut")]):
        root = tmp_path / f"order{order}"
        for cls in ("a", "b"):  # two classes, so the seeded split has something to stratify
            write(root / cls / f"{names[0]}.{ext}", grey)
            write(root / cls / f"{names[1]}.{ext}", rgb)
        got = folder_tensors(root, input_spec=spec(channels=channels))
        colour = got[f"{names[1]}.{ext}"]
        cached.append(colour)
        assert colour.shape == (3, 96, 128)
        with Image.open(root / "a" / f"{names[1]}.{ext}") as f:
            assert torch.equal(colour, unit(np.asarray(f.convert("RGB"))))  # the file's own colours
        with Image.open(root / "a" / f"{names[0]}.{ext}") as f:
            assert torch.equal(got[f"{names[0]}.{ext}"], unit(np.asarray(f)).repeat(3, 1, 1))  # grey replicated
    assert torch.equal(cached[0], cached[1])
    assert cached[0].std(dim=0).mean() > 0.01  # really in colour, not three equal planes


def test_greyscale_model_gets_luma_of_colour_files(tmp_path, photos):
    rgb = Image.fromarray(photos["astronaut"])
    write(tmp_path / "a" / "rgb.png", rgb)
    write(tmp_path / "b" / "grey.png", Image.fromarray(photos["camera"]))
    got = folder_tensors(tmp_path, input_spec=spec(channels=1))
    r, g, b = (photos["astronaut"][..., i].astype(np.int64) for i in range(3))
    luma = (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16  # ITU-R 601-2 in PIL's fixed point
    assert got["rgb.png"].shape == (1, 96, 128)
    assert torch.equal(got["rgb.png"], unit(luma.astype(np.uint8)))
    assert torch.equal(got["grey.png"], unit(photos["camera"]))


def test_alpha_palette_cmyk_bilevel_and_16_bit_files(tmp_path, photos):
    rgb, grey = photos["astronaut"], photos["camera"]
    alpha = np.zeros(grey.shape, dtype=np.uint8)
    alpha[:, 64:] = 255  # left half transparent, right half opaque
    alpha[:8] = 128  # a half-transparent strip
    write(tmp_path / "a" / "rgba.png", Image.fromarray(np.dstack([rgb, alpha])))
    write(tmp_path / "a" / "la.png", Image.fromarray(np.dstack([grey, alpha])).convert("LA"))
    pal = Image.fromarray(rgb).quantize(64)
    write(tmp_path / "a" / "palette.png", pal)
    pal_t = pal.copy()
    pal_t.info["transparency"] = int(np.asarray(pal)[50, 10])  # one palette entry marked transparent
    write(tmp_path / "a" / "palette_t.png", pal_t)
    write(tmp_path / "b" / "cmyk.tif", Image.fromarray(rgb).convert("CMYK"))
    write(tmp_path / "b" / "bilevel.png", Image.fromarray(grey > 128))
    ramp = np.linspace(0, 65535, grey.size).astype(np.uint16).reshape(grey.shape)
    write(tmp_path / "b" / "ramp16.png", Image.fromarray(ramp))
    write(tmp_path / "b" / "camera16.png", Image.fromarray(grey.astype(np.uint16) * 257))
    with Image.open(tmp_path / "b" / "ramp16.png") as f:
        assert f.mode.startswith("I")  # really a 16-bit file

    got = folder_tensors(tmp_path, input_spec=spec(channels=3))
    a = alpha[..., None].astype(np.float64) / 255
    on_white = rgb * a + 255 * (1 - a)
    assert (got["rgba.png"] * 255 - unit(on_white) * 255).abs().max() <= 1.0  # PIL rounds in 8 bits
    assert torch.all(got["rgba.png"][:, 8:, :64] == 1.0)  # transparent → white
    assert torch.equal(got["rgba.png"][:, 8:, 64:], unit(rgb)[:, 8:, 64:])  # opaque → the photo
    assert torch.all(got["la.png"][:, 8:, :64] == 1.0)
    assert torch.equal(got["la.png"][:, 8:, 64:], unit(grey).repeat(3, 1, 1)[:, 8:, 64:])
    lut = np.array(pal.getpalette(), dtype=np.uint8).reshape(-1, 3)
    assert torch.equal(got["palette.png"], unit(lut[np.asarray(pal)]))  # palette looked up, in colour
    hole = np.asarray(pal) == pal_t.info["transparency"]
    assert torch.all(got["palette_t.png"].permute(1, 2, 0)[torch.from_numpy(hole)] == 1.0)
    assert torch.equal(got["cmyk.tif"], unit(rgb))  # PIL's CMYK (K = 0) round-trips exactly
    assert torch.equal(got["bilevel.png"], unit(np.where(grey > 128, 255, 0).astype(np.uint8)).repeat(3, 1, 1))
    want16 = torch.from_numpy(ramp.astype(np.float64) / 65535).float()
    assert got["ramp16.png"].dtype == torch.float32
    assert torch.equal(got["ramp16.png"], want16[None].repeat(3, 1, 1))  # all 16 bits, not clipped at 255
    assert torch.allclose(got["camera16.png"], unit(grey).repeat(3, 1, 1), atol=1e-7)

    grey_model = folder_tensors(tmp_path, input_spec=spec(channels=1))
    assert torch.equal(grey_model["ramp16.png"], want16[None])
    assert torch.all(grey_model["rgba.png"][:, 8:, :64] == 1.0)
    assert all(t.shape[0] == 1 for t in grey_model.values())


def test_folder_without_a_model_is_rgb_if_any_file_is_in_colour(tmp_path, photos):
    for cls in ("a", "b"):
        write(tmp_path / cls / "grey.png", Image.fromarray(photos["camera"]))
    assert {t.shape[0] for t in folder_tensors(tmp_path).values()} == {1}  # all grey: one channel
    write(tmp_path / "b" / "z_colour.png", Image.fromarray(photos["astronaut"]))
    b = load_data(f"imagefolder:{tmp_path}", test_fraction=0.5)
    assert {t.shape[0] for t in folder_tensors(tmp_path).values()} == {3}
    assert "each file converted on its own" in b.transforms["decode"]


# ----------------------------------------------------------------------------- --resize crop
CROP_SIZES = [224, 97, 40]


@pytest.mark.parametrize("name", ["astronaut", "coffee", "chelsea"])
def test_resize_crop_is_torchvision_eval_transform_to_the_pixel(tmp_path, name):
    T = pytest.importorskip("torchvision.transforms")
    v2 = pytest.importorskip("torchvision.transforms.v2")
    photo = getattr(skdata, name)()  # 512x512, 400x600, 300x451
    for cls in ("a", "b"):
        write(tmp_path / cls / f"{name}.png", Image.fromarray(photo))
    with Image.open(tmp_path / "a" / f"{name}.png") as f:
        pil = f.convert("RGB")
    for size in CROP_SIZES:
        b = load_data(
            f"imagefolder:{tmp_path}",
            test_fraction=0.5,
            input_spec=spec(channels=3, size=size, mean=IMAGENET_MEAN, std=IMAGENET_STD),
            resize="crop",
        )
        ours, _ = rows_of(b)
        v1 = T.Compose(
            [T.Resize(int(size / 0.875)), T.CenterCrop(size), T.ToTensor(), T.Normalize(IMAGENET_MEAN, IMAGENET_STD)]
        )(pil)
        new = v2.Compose(
            [
                v2.PILToTensor(),
                v2.ToPILImage(),
                v2.Resize(int(size / 0.875)),
                v2.CenterCrop(size),
                v2.ToImage(),
                v2.ToDtype(torch.float32, scale=True),
                v2.Normalize(IMAGENET_MEAN, IMAGENET_STD),
            ]
        )(pil)
        assert ours.shape == (1, 3, size, size)
        assert (ours[0] - v1).abs().max() < 1e-6
        assert (ours[0] - new).abs().max() < 1e-6
        assert b.transforms["resize"]["shorter_side"] == int(size / 0.875)


def test_resize_crop_on_float_images_follows_torchvision_on_tensors():
    tvf = pytest.importorskip("torchvision.transforms.v2.functional")
    photo = torch.from_numpy(skdata.chelsea()).permute(2, 0, 1).float() / 255  # 300 × 451: rounding matters
    t = plan_image_transform({"channels": 3, "size": (300, 451), "scale": "none"}, image_size=224, resize="crop")
    ref = tvf.center_crop(tvf.resize(photo[None], [256], antialias=True), [224, 224])
    assert tvf.resize(photo[None], [256]).shape[-1] == 384  # int(256 * 451 / 300): the width that was off by one
    assert (t(photo[None]) - ref).abs().max() < 1e-5


def test_resize_crop_for_a_greyscale_model_is_torchvision_grayscale_first(tmp_path):
    T = pytest.importorskip("torchvision.transforms")
    photo = skdata.coffee()
    for cls in ("a", "b"):
        write(tmp_path / cls / "coffee.jpg", Image.fromarray(photo), quality=90)
    b = load_data(f"imagefolder:{tmp_path}", test_fraction=0.5, input_spec=spec(channels=1, size=64), resize="crop")
    ours, _ = rows_of(b)
    with Image.open(tmp_path / "a" / "coffee.jpg") as f:
        ref = T.Compose([T.Grayscale(), T.Resize(73), T.CenterCrop(64), T.ToTensor()])(f.convert("RGB"))
    assert (ours[0] - ref).abs().max() < 1e-6


def stretch_warnings(b) -> list[str]:
    return [w for w in b.warnings if "--resize stretch" in w]


def test_default_stretch_warns_when_it_changes_photos_aspect_ratio(tmp_path):
    """coffee (400 × 600) and chelsea (300 × 451) are squeezed to 64 × 64 by the default; the square
    astronaut is not. --resize stretch (chosen) and --resize crop say nothing."""
    for name in ("coffee", "chelsea", "astronaut"):
        for cls in ("a", "b"):
            write(tmp_path / cls / f"{name}.png", Image.fromarray(getattr(skdata, name)()))
    model = spec(channels=3, size=64)
    (w,) = stretch_warnings(load_data(f"imagefolder:{tmp_path}", test_fraction=0.5, input_spec=model))
    assert "4 of 6 images read" in w and "300×451" in w and "400×600" in w and "64×64" in w
    assert "--resize crop (shorter side to 73" in w
    for chosen in ("stretch", "crop"):
        assert not stretch_warnings(
            load_data(f"imagefolder:{tmp_path}", test_fraction=0.5, input_spec=model, resize=chosen)
        )
    # a 300 × 451 target keeps the 3:2 photos' aspect ratio and squeezes the square one
    (w,) = stretch_warnings(
        load_data(f"imagefolder:{tmp_path}", test_fraction=0.5, input_spec=model, image_size=(300, 451))
    )
    assert "2 of 6 images read" in w and "e.g. 512×512)" in w and "300×451 input" in w
    # no target size: nothing is resized
    assert not stretch_warnings(
        load_data(f"imagefolder:{tmp_path}", test_fraction=0.5, input_spec=spec(channels=3), image_size=None)
    )


def test_stretch_warning_follows_the_models_own_preprocessing(tmp_path):
    """A model whose own preprocessing stretches (an HF ViT processor) gets no warning; one whose
    preprocessing centre-crops (torchvision and timm presets) is told so."""
    for cls in ("a", "b"):
        write(tmp_path / cls / "coffee.png", Image.fromarray(skdata.coffee()))
    folder = f"imagefolder:{tmp_path}"
    assert not stretch_warnings(
        load_data(folder, test_fraction=0.5, input_spec=spec(channels=3, size=64, resize="stretch"))
    )
    (w,) = stretch_warnings(load_data(folder, test_fraction=0.5, input_spec=spec(channels=3, size=64, resize="crop")))
    assert "the model's own preprocessing keeps the aspect ratio" in w


def test_default_stretch_of_square_photos_and_of_non_square_arrays(tmp_path):
    for cls in ("a", "b"):
        write(tmp_path / "sq" / cls / "astronaut.png", Image.fromarray(skdata.astronaut()))
    model = spec(channels=3, size=64)
    assert not stretch_warnings(load_data(f"imagefolder:{tmp_path / 'sq'}", test_fraction=0.5, input_spec=model))
    wide = np.random.default_rng(0).integers(0, 256, (8, 32, 64, 3), dtype=np.uint8)
    (w,) = stretch_warnings(
        load_data(npz(tmp_path, "w.npz", X=wide, y=np.arange(8) % 2), test_fraction=0.5, input_spec=model)
    )
    assert "its images (32×64, height×width)" in w


def test_stretch_is_judged_from_every_files_header(tmp_path):
    for i in range(300):  # more than the 256 a sample once held
        cls = ("a", "b")[i % 2]
        write(tmp_path / cls / f"{i}.png", Image.fromarray(np.zeros((10, 20 if i == 7 else 10, 3), np.uint8)))
    (said,) = stretch_warnings(
        load_data(f"imagefolder:{tmp_path}", test_fraction=0.5, input_spec=spec(channels=3, size=8))
    )
    assert "1 of 300 images read (headers only; height×width e.g. 10×20)" in said


# ----------------------------------------------------------------------------- normalisation, warnings
def test_the_no_normalisation_warning_does_not_say_float_images_were_scaled(tmp_path):
    """QA: float 0–255 images in an npz got two warnings that disagreed: one that floats are fed as they
    are, and one that the images were "only scaled to [0, 1]"."""
    x = np.random.default_rng(0).uniform(0, 255, (20, 3, 8, 8)).astype(np.float32)
    b = load_data(npz(tmp_path, "f.npz", X=x, y=np.arange(20) % 2), input_spec=spec(channels=3))
    said = [w for w in b.warnings if "no normalisation applied" in w]
    assert len(said) == 1 and "float arrays fed as they are" in said[0], b.warnings
    assert not any("only scaled to [0, 1]" in w for w in b.warnings)


def test_transforms_record_normalisation_and_warn_when_the_model_cannot_know(tmp_path):
    b = load_data("digits", input_spec=spec(channels=1))  # what python: and torchscript: models give
    norm = b.transforms["normalize"]
    assert norm["applied"] is False and norm["from"] == "unknown" and norm["mean"] is None
    assert len(b.warnings) == 1 and "no normalisation applied" in b.warnings[0]
    assert "--normalize imagenet" in b.warnings[0] and "--normalize none" in b.warnings[0]

    b = load_data("digits", input_spec=spec(channels=1), normalize="none")
    assert b.transforms["normalize"]["from"] == "option" and b.warnings == []
    b = load_data("digits")
    assert b.transforms["normalize"]["from"] == "no model" and b.warnings == []
    b = load_data("digits", input_spec=spec(channels=1, mean=(0.5,), std=(0.25,)))
    assert b.transforms["normalize"] == {"applied": True, "mean": [0.5], "std": [0.25], "from": "model"}
    assert b.warnings == []

    b = load_data("digits", normalize="0.5/0.25", input_spec=spec(channels=3))  # the CLI's MEAN/STD text
    x, _, _ = next(b.splits["test"].batches(4))
    raw, _, _ = next(load_data("digits", input_spec=spec(channels=3), normalize="none").splits["test"].batches(4))
    assert torch.allclose(x, (raw - 0.5) / 0.25)
    assert b.transforms["normalize"] == {"applied": True, "mean": [0.5] * 3, "std": [0.25] * 3, "from": "given"}
    b = load_data("digits", normalize="0.1,0.2,0.3/1,2,4", input_spec=spec(channels=3))
    assert b.transforms["normalize"]["std"] == [1.0, 2.0, 4.0]
    for bad, match in [("0.5/nan", "finite"), ("0.5/0", "positive"), ("0.5,x/1", "numbers"), ("imagenett", "imagenet")]:
        with pytest.raises(InputError, match=match):
            load_data("digits", normalize=bad)
    vectors = npz(tmp_path, "v.npz", X=np.random.default_rng(0).random((20, 3)), y=np.arange(20) % 2)
    with pytest.raises(InputError, match="normalize applies to images only"):
        load_data(vectors, normalize="imagenet")
    assert load_data(vectors, normalize="none").warnings == []


def test_every_bundle_has_warnings_and_they_are_json():
    b = load_data("digits")
    assert b.warnings == []
    json.dumps(b.warnings)


# ----------------------------------------------------------------------------- labels
def npz(tmp_path: Path, name: str, **arrays) -> str:
    np.savez(tmp_path / name, **arrays)
    return f"npz:{tmp_path / name}"


TEN = np.array([f"c{i}" for i in range(10)])


def test_float_images_outside_0_1_are_a_warning(tmp_path):
    """Float images are fed as they are; 0–255 floats, or images normalised already and then
    normalised again, once went through with no word."""
    rng = np.random.default_rng(0)
    y = np.arange(20) % 2

    def said(x: np.ndarray, name: str, **kw) -> list[str]:
        b = load_data(npz(tmp_path, name, X=x, y=y), test_fraction=0.5, **kw)
        return [w for w in b.warnings if "float images" in w]

    pixels = rng.uniform(0, 255, (20, 3, 8, 8)).astype(np.float32)
    (w,) = said(pixels, "p.npz")
    assert "0–255 pixels" in w and "[" in w
    standard = rng.normal(0, 1, (20, 8, 8, 3))
    assert "look normalised already" in said(standard, "s.npz")[0]
    assert said(standard, "s.npz", normalize="none") == []
    assert "normalised again with the imagenet mean/std" in said(standard, "s.npz", normalize="imagenet")[0]
    assert said(rng.uniform(0, 1, (20, 3, 8, 8)), "u.npz") == []
    assert said(rng.integers(0, 256, (20, 8, 8, 3)).astype(np.uint8), "b.npz") == []
    # QA: scikit-learn's digits kept as 0–16 floats were told to divide by 255 (pixels in [0, 0.063])
    digits16 = rng.integers(0, 17, (20, 3, 8, 8)).astype(np.float32)
    digits16[0, 0, 0, 0] = 16
    (w,) = said(digits16, "d16.npz")
    assert "[0, 16]" in w and "divide by their scale's maximum (16 here" in w and "look like 0–255" not in w, w
    # QA: 16-bit intensities (or 0–16 digits × 16 = 0–256) kept as floats were called "normalised already"
    for top, name in ((256.0, "d.npz"), (65535.0, "w.npz")):
        raw = rng.uniform(0, top, (20, 3, 8, 8)).astype(np.float32)
        raw[0, 0, 0, 0] = top
        for kw in ({}, {"normalize": "none"}, {"normalize": "imagenet"}):
            (w,) = said(raw, name, **kw)
            assert "normalised already" not in w and "normalised again" not in w and "raw intensities" in w, w
            assert "scale them to [0, 1]" in w


def test_labels_outside_the_class_list_are_named(tmp_path):
    y = np.repeat(np.arange(10), 5)
    x = np.zeros((51, 4), dtype=np.float32)
    with pytest.raises(InputError, match=r"label -3 at y\[50\] is outside the class list: valid labels are 0\.\.9"):
        load_data(npz(tmp_path, "neg.npz", X=x, y=np.r_[y, -3], class_names=TEN))
    with pytest.raises(InputError, match=r"label 1000 .* valid labels are 0\.\.9 \(10 class_names\); 49 more"):
        load_data(npz(tmp_path, "big.npz", X=x[:50], y=y + 1000, class_names=TEN))
    with pytest.raises(InputError, match=r"label -3 at y_test\[1\] is outside the class list"):
        load_data(npz(tmp_path, "s.npz", X_train=x[:50], y_train=y, X_test=x[:2], y_test=[1, -3]))
    msg = str(pytest.raises(InputError, load_data, npz(tmp_path, "neg2.npz", X=x, y=np.r_[y, -3])).value)
    assert "label -3" in msg and "0..9" in msg and "label 10" not in msg

    # no class names: labels are class indices, so 1000..1009 would leave 1000 classes empty: refused
    with pytest.raises(InputError, match=r"labels 1000–1009 .* 1000 of the 1010 classes .* renumber"):
        load_data(npz(tmp_path, "gap.npz", X=x[:50], y=y + 1000))
    # a few empty classes (labels 0..9 without 4) is a warning, not an error
    keep = y != 4
    b = load_data(npz(tmp_path, "hole.npz", X=x[:50][keep], y=y[keep]))
    assert b.num_classes == 10
    assert any("1 of 10" in w and "renumber" in w for w in b.warnings)


def test_text_labels_name_their_line(tmp_path):
    cases = {
        "neg.csv": ("text,label\ngood,0\nbad,1\nok,-3\n", r"neg\.csv: label -3 at line 4 is outside the class list"),
        "mixed.csv": (
            "text,label\ngood,0\nbad,1\nok,x\n",
            r"labels mix numbers and words \('0' at line 2, 'x' at line 4\)",
        ),
        "neg.jsonl": (
            '{"text": "good", "label": 0}\n\n{"text": "bad", "label": -3}\n',
            r"label -3 at line 3 is outside the class list",
        ),
        "frac.jsonl": ('{"text": "a", "label": 0}\n{"text": "b", "label": 0.5}\n', r"label 0\.5 at line 2 .*whole"),
        "nan.jsonl": (
            '{"text": "a", "label": 0}\n{"text": "b", "label": NaN}\n',
            r"label nan at line 2 is not a number",
        ),
        "list.jsonl": (
            '{"text": "a", "label": 0}\n{"text": "b", "label": [1]}\n',
            r"list\.jsonl:2: the label .* JSON list",
        ),
        "bad.jsonl": ('{"text": "a", "label": 0}\n{"text": "b", "label": 1}\n\n{oops\n', r"bad\.jsonl:4: not JSON"),
        "array.jsonl": ('{"text": "a", "label": 0}\n[1, 2]\n', r"array\.jsonl:2: expected a JSON object, got list"),
        "nolabel.csv": ("text,label\ngood,0\nbad,\n", r"nolabel\.csv:3: no label"),
    }
    for name, (content, match) in cases.items():
        (tmp_path / name).write_text(content)
        fmt = name.rsplit(".", 1)[1]
        with pytest.raises(InputError, match=match):
            load_data(f"{fmt}:{tmp_path / name}", input_spec=TOKENS, tokenizer=VOCAB)


def test_empty_texts_and_a_class_spelled_two_ways_are_warnings(tmp_path):
    """Messy text tables once went through with no word: an empty text embedded as the empty
    string, and 'science' / 'SCIENCE ' learnt as two classes."""
    rows = ["good,pos", ",neg", "bad,neg", "  ,pos", "fine,pos", "awful,NEG ", "nice,pos", "meh,neg"]
    (tmp_path / "t.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    b = load_data(f"csv:{tmp_path / 't.csv'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.25)
    empty = [w for w in b.warnings if "empty text" in w]
    assert len(empty) == 1 and "2 of 8 rows" in empty[0] and "line 3, 5" in empty[0]
    twice = [w for w in b.warnings if "differ only in case or spacing" in w]
    assert len(twice) == 1 and "'NEG' and 'neg'" in twice[0] and "pos" not in twice[0]
    (tmp_path / "clean.csv").write_text("text,label\n" + "\n".join(["good,pos", "bad,neg"] * 4) + "\n")
    clean = load_data(f"csv:{tmp_path / 'clean.csv'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.25)
    assert not [w for w in clean.warnings if "empty text" in w or "differ only" in w]


def test_the_empty_text_warning_counts_the_rows_that_limit_keeps(tmp_path):
    """QA: with --limit 1 the warning said "1 of 123 rows have an empty text" of a row the limit had
    left out: it now counts, and names, only the rows that were extracted."""
    rows = [",pos"] + [f"text {i},{'pos' if i % 2 else 'neg'}" for i in range(40)]
    (tmp_path / "t.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    spec = f"csv:{tmp_path / 't.csv'}"
    one = load_data(spec, splits=("train",), input_spec=TOKENS, tokenizer=VOCAB, limit=1)
    assert one.splits["train"].index.tolist() != [0]  # the empty row is not the one kept
    assert not [w for w in one.warnings if "empty text" in w], one.warnings
    two = load_data(spec, splits=("train",), input_spec=TOKENS, tokenizer=VOCAB, limit=2)
    assert 0 in two.splits["train"].index.tolist()
    (said,) = [w for w in two.warnings if "empty text" in w]
    assert "1 of 2 rows" in said and "line 2" in said
    every = load_data(spec, splits=("train", "test"), input_spec=TOKENS, tokenizer=VOCAB)
    (said,) = [w for w in every.warnings if "empty text" in w]
    assert "1 of 41 rows" in said and "line 2" in said


def test_single_class_data_is_refused_and_a_class_missing_from_a_split_is_a_warning(tmp_path, photos):
    x = np.zeros((41, 4), dtype=np.float32)
    with pytest.raises(InputError, match=r"has 1 class \('only'\); a classifier needs at least two"):
        load_data(npz(tmp_path, "one.npz", X=x, y=["only"] * 41))
    with pytest.raises(InputError, match="every row of split 'train', 'test' has the class 'c3'"):
        load_data(npz(tmp_path, "one_used.npz", X=x, y=np.full(41, 3), class_names=TEN))
    (tmp_path / "one.csv").write_text("text,label\n" + "good,1\n" * 6)
    with pytest.raises(InputError, match="has the class '1'"):
        load_data(f"csv:{tmp_path / 'one.csv'}", input_spec=TOKENS, tokenizer=VOCAB)
    write(tmp_path / "folder" / "only" / "a.png", Image.fromarray(photos["camera"]))
    write(tmp_path / "folder" / "only" / "b.png", Image.fromarray(photos["camera"]))
    with pytest.raises(InputError, match="has 1 class"):
        load_data(f"imagefolder:{tmp_path / 'folder'}")

    b = load_data(npz(tmp_path, "rare.npz", X=x, y=["cat"] * 20 + ["dog"] * 20 + ["rare"]), seed=0)
    where = "train" if 40 in b.splits["train"].index else "test"
    assert where == "train" and "class 'rare' has a single row, put with the training rows" in b.warnings[0]
    assert b.warnings[1:] == []  # that line says it has no test row: not a second one (QA)
    y = ["cat"] * 20 + ["dog"] * 20 + ["rare", "odd"]  # two classes in one split only: "have", QA
    arrays = {"X_train": np.concatenate([x, x[:1]]), "y_train": y, "X_test": x[:2], "y_test": ["cat", "dog"]}
    b = load_data(npz(tmp_path, "rare2.npz", **arrays), seed=0)
    assert any(" (2 of 4) have no rows in split " in w and "classes 'odd', 'rare'" in w for w in b.warnings), b.warnings


def test_labels_of_named_datasets_are_checked_against_their_classes(tmp_path):
    import pickle

    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    data = np.zeros((3, 3072), dtype=np.uint8)
    with open(folder / "test_batch", "wb") as f:
        pickle.dump({b"data": data, b"labels": [0, 1, 10]}, f)
    with pytest.raises(
        InputError, match=r"label 10 in split 'test' is outside the class list: valid labels are 0\.\.9"
    ):
        load_data(f"cifar10:{tmp_path}", splits=["test"])


# ----------------------------------------------------------------------------- broken inputs
def test_nonfinite_features_are_refused_unless_allowed(tmp_path):
    x = np.random.default_rng(0).random((40, 5))
    x[3, 1], x[7, 0], x[7, 4] = np.nan, np.inf, -np.inf
    spec_ = npz(tmp_path, "nan.npz", X=x, y=np.arange(40) % 2)
    with pytest.raises(
        InputError, match=r"3 of 200 values in X of .*nan\.npz are NaN or infinite \(first in row 3\)"
    ) as refused:
        load_data(spec_)
    # the refusal names the switch a command takes and the argument a Python call takes
    assert "--allow-nonfinite on the command line" in str(refused.value)
    assert "allow_nonfinite=True to ExtractConfig or load_data" in str(refused.value)
    b = load_data(spec_, allow_nonfinite=True)
    assert b.warnings == [
        f"3 of 200 values in X of {tmp_path / 'nan.npz'} are NaN or infinite; kept as asked (allow_nonfinite)"
    ]
    x[3, 1] = x[7, 0] = x[7, 4] = 1e300  # beyond float32: infinite once cast
    with pytest.raises(InputError, match="3 of 200 values"):
        load_data(npz(tmp_path, "big.npz", X=x, y=np.arange(40) % 2))
    imgs = np.random.default_rng(0).random((10, 4, 4)).astype(np.float32)
    imgs[2, 0, 0] = np.nan
    with pytest.raises(InputError, match=r"1 of 128 values in X_test .*\(first in row 2\)"):
        load_data(
            npz(tmp_path, "img.npz", X_train=imgs, y_train=np.arange(10) % 2, X_test=imgs[:8], y_test=np.arange(8) % 2)
        )


def test_broken_npz_files(tmp_path):
    y = np.arange(20) % 2
    x = np.zeros((20, 3), dtype=np.float32)
    (tmp_path / "empty.npz").write_bytes(b"")
    (tmp_path / "random.npz").write_bytes(np.random.default_rng(0).bytes(500))
    np.save(tmp_path / "single.npy", x)
    cases = [
        (f"npz:{tmp_path / 'empty.npz'}", InputError, "the file is empty"),
        (f"npz:{tmp_path / 'random.npz'}", InputError, "not an npz archive"),
        (f"npz:{tmp_path / 'single.npy'}", InputError, "a single .npy array"),
        (f"npz:{tmp_path / 'absent.npz'}", NotFoundError, "no npz file"),
        (f"npz:{tmp_path}", NotFoundError, "is a folder"),
        (npz(tmp_path, "nox.npz", features=x, y=y), InputError, "expected arrays X and y.*found features, y"),
        (npz(tmp_path, "noy.npz", X=x), InputError, "has X but no y"),
        (npz(tmp_path, "len.npz", X=x, y=y[:5]), InputError, "X has 20 rows but y has 5"),
        (npz(tmp_path, "str.npz", X=np.array([["a", "b"]] * 20), y=y), InputError, "X holds <U1 values, not numbers"),
        (npz(tmp_path, "cx.npz", X=x.astype(complex), y=y), InputError, "complex128 values, not numbers"),
        (npz(tmp_path, "scalar.npz", X=np.array(3.0), y=np.array(1)), InputError, r"X is shaped \(\)"),
        (
            npz(tmp_path, "y2.npz", X=x, y=np.zeros((20, 2))),
            InputError,
            r"y is shaped \(20, 2\); expected one label a row, shaped \(N,\)$",
        ),
        (npz(tmp_path, "hot.npz", X=x, y=np.eye(2)[y]), InputError, r"one-hot rows: store y.argmax\(1\)"),
        (npz(tmp_path, "w0.npz", X=np.zeros((20, 0)), y=y), InputError, "an empty feature axis"),
        (
            npz(tmp_path, "e.npz", X_train=x, y_train=y, X_test=x[:0], y_test=y[:0]),
            InputError,
            "split 'test' has no rows",
        ),
        (npz(tmp_path, "names.npz", X=x, y=y, class_names=["a", "a"]), InputError, "names 'a' twice"),
        (npz(tmp_path, "words.npz", X=x, y=["a", "b"] * 10, class_names=["a", "c"]), InputError, r"\['b'\] are not in"),
    ]
    np.savez(tmp_path / "obj.npz", X=np.array([{"a": 1}] * 20, dtype=object), y=y)
    cases.append((f"npz:{tmp_path / 'obj.npz'}", InputError, "object arrays, which are refused"))
    for spec_, error, match in cases:
        with pytest.raises(error, match=match):
            load_data(spec_)


def test_npz_arrays_that_would_be_left_unread_are_refused(tmp_path):
    """QA: an npz holding X/y beside X_train/y_train was read as the one pool X/y, the per-split arrays
    left unread with no word; one holding y_test with no X_test read as having no test split, so
    `extract --split train` ran on and the test labels were never read. Both are refused by name."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    img = (x.reshape(-1, 8, 8) * 15).astype(np.uint8)[:200]
    y = y[:200]
    both = npz(tmp_path, "both.npz", X=img, y=y, X_train=img[:150], y_train=y[:150])
    with pytest.raises(InputError, match="holds both X/y and per-split arrays"):
        load_data(both)
    lone = npz(tmp_path, "lone.npz", X_train=img[:150], y_train=y[:150], y_test=y[150:])
    with pytest.raises(InputError, match="no inputs X_test for y_test"):
        load_data(lone, splits="train")
    fine = npz(tmp_path, "fine.npz", X_train=img[:150], y_train=y[:150], X_test=img[150:], y_test=y[150:])
    assert load_data(fine, splits="train").splits["train"].n == 150


def test_float64_images_beyond_float32_are_refused_as_infinite_without_a_numpy_warning(tmp_path):
    """QA: float64 images holding a value beyond float32's range were refused as infinite, as they
    should be, but numpy's "overflow encountered in cast" was printed on the way, naming a file
    of the tool's own. Only the refusal is said now."""
    import warnings

    x = np.random.default_rng(0).random((20, 5, 5))
    x[3, 1, 1] = 1e300
    spec = npz(tmp_path, "big.npz", X=x, y=np.arange(20) % 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(InputError, match=r"1 of 500 values in X of .* are NaN or infinite \(first in row 3\)"):
            load_data(spec)


def test_npz_images_whose_channel_axis_could_be_first_or_last_are_read_first_with_a_warning(tmp_path):
    """QA: real digits at 4×4, stored channels-last as RGB (N, 4, 4, 3), were read with no word as
    4 channels (an alpha among them) of 4×3 pixels. Both axes could hold the channels, so the file is
    read as (N, C, H, W), as before, with a warning that names the other reading and its fix."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    small = (x.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)) * 15).astype(np.uint8)[:100]
    rgb = npz(tmp_path, "rgb.npz", X=np.repeat(small[..., None], 3, axis=-1), y=y[:100])
    b = load_data(rgb, seed=0)
    (said,) = [w for w in b.warnings if "could be the channels" in w]
    assert "X shaped (100, 4, 4, 3) is read as (N, C, H, W), 4 channel(s) of 4×3" in said, said
    assert "np.moveaxis(X, -1, 1)" in said
    first = npz(tmp_path, "first.npz", X=np.repeat(small[:, None], 3, axis=1), y=y[:100])  # (N, 3, 4, 4)
    assert [w for w in load_data(first, seed=0).warnings if "could be the channels" in w]
    wide = npz(tmp_path, "wide.npz", X=(x.reshape(-1, 8, 8, 1) * 15).astype(np.uint8)[:100], y=y[:100])
    assert not [w for w in load_data(wide, seed=0).warnings if "could be the channels" in w]


def test_a_split_of_one_class_at_99_percent_is_said_with_its_share_and_the_rows_left(tmp_path):
    """QA: a 99:1 problem (real digits, 'other' against sixteen zeros) gave heads 0.99 accuracy that
    read as learnt, where always answering the majority scores that much; the data now says each
    split's majority share and how few rows the other class leaves, as a warning extract records.
    A balanced two-class problem says nothing."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    img = (x.reshape(-1, 8, 8) * 15).astype(np.uint8)
    idx = np.concatenate([np.flatnonzero(y != 0)[:1584], np.flatnonzero(y == 0)[:16]])
    rare = npz(tmp_path, "rare.npz", X=img[idx], y=np.where(y[idx] == 0, "zero", "other"))
    said = [w for w in load_data(rare, seed=0).warnings if "always answering" in w]
    assert len(said) == 2 and "split 'test' is 99.1% class 'other' (317 of 320 rows, 3 of the" in said[1], said
    assert "scores 0.991 accuracy there" in said[1] and "rest on 3 rows" in said[1]
    two = npz(tmp_path, "two.npz", X=img[y < 2], y=y[y < 2])
    assert not [w for w in load_data(two, seed=0).warnings if "always answering" in w]


def test_broken_image_folders_name_the_file(tmp_path, photos):
    with pytest.raises(InputError, match="no class folders"):
        load_data(f"imagefolder:{tmp_path}")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(InputError, match="no image files"):
        load_data(f"imagefolder:{tmp_path}")
    for i in range(3):
        write(tmp_path / "a" / f"{i}.png", Image.fromarray(photos["astronaut"]))
        write(tmp_path / "b" / f"{i}.jpg", Image.fromarray(photos["astronaut"]), quality=80)
    whole = (tmp_path / "b" / "2.jpg").read_bytes()
    (tmp_path / "b" / "2.jpg").write_bytes(whole[:600])  # cut inside its header
    (tmp_path / "a" / "0.png").write_bytes(np.random.default_rng(0).bytes(2000))  # not an image
    with pytest.raises(InputError, match=r"2 of 6 image files .*: a/0\.png \(not an image PIL .*\), b/2\.jpg"):
        load_data(f"imagefolder:{tmp_path}", input_spec=spec(channels=3), test_fraction=0.5)
    (tmp_path / "a" / "0.png").unlink()
    (tmp_path / "b" / "2.jpg").write_bytes(whole[: len(whole) // 2])  # cut in its pixels: the header reads
    b = load_data(f"imagefolder:{tmp_path}", input_spec=spec(channels=3), test_fraction=0.5)
    seen = set()
    for split in b.splits.values():
        for row in range(split.n):
            one = split.index[row : row + 1]
            try:
                split.fetch(one)
            except InputError as e:
                assert "\n" not in str(e) and "replace or remove the file" in str(e)
                seen.add(Path(str(e).split("'")[1]).name)
    assert seen == {"2.jpg"}
    with pytest.raises(NotFoundError, match="is a file"):
        load_data(f"imagefolder:{tmp_path / 'a' / '1.png'}")
    (tmp_path / "c").mkdir()
    write(tmp_path / "c" / "float.tif", Image.fromarray(np.full((4, 4), 3.5, dtype=np.float32)))
    b = load_data(f"imagefolder:{tmp_path}", splits="train", input_spec=spec(channels=1), test_fraction=0.5)
    files = sorted(str(p) for p in tmp_path.rglob("*.*"))
    with pytest.raises(InputError, match=r"float\.tif: 32-bit float pixels must lie in \[0, 1\]"):
        b.splits["train"].fetch(np.array([files.index(str(tmp_path / "c" / "float.tif"))]))


def test_broken_text_tables_and_named_datasets(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "latin.csv").write_bytes("text,label\ncaf\xe9,1\n".encode("latin-1"))
    (tmp_path / "deep.jsonl").write_text("[" * 100_000 + "\n")
    gz = tmp_path / "fm"
    gz.mkdir()
    for stem in (
        "train-images-idx3-ubyte",
        "train-labels-idx1-ubyte",
        "t10k-images-idx3-ubyte",
        "t10k-labels-idx1-ubyte",
    ):
        (gz / f"{stem}.gz").write_bytes(b"\x1f\x8b\x08\x00broken")
    cifar = tmp_path / "cifar" / "cifar-10-batches-py"
    cifar.mkdir(parents=True)
    (cifar / "test_batch").write_bytes(np.random.default_rng(1).bytes(300))
    for spec_, match in [
        (f"csv:{tmp_path / 'empty.csv'}", "no data rows"),
        (f"csv:{tmp_path / 'latin.csv'}", "not a UTF-8 CSV"),
        (f"jsonl:{tmp_path / 'deep.jsonl'}", r"deep\.jsonl:1: not JSON"),
    ]:
        with pytest.raises(InputError, match=match):
            load_data(spec_, input_spec=TOKENS, tokenizer=VOCAB)
    with pytest.raises(InputError, match="damaged gzip file"):
        load_data(f"fashion-mnist:{gz}")
    with pytest.raises(InputError, match="not a CIFAR-10 python batch"):
        load_data(f"cifar10:{tmp_path / 'cifar'}", splits=["test"])


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file_is_one_line_with_the_errno(tmp_path):
    path = tmp_path / "locked.csv"
    path.write_text("text,label\na,0\nb,1\n")
    path.chmod(0)
    try:
        with pytest.raises(InputError, match=r"could not read .*locked\.csv: Permission denied \(errno 13\)"):
            load_data(f"csv:{path}", input_spec=TOKENS, tokenizer=VOCAB)
    finally:
        path.chmod(0o600)


def test_bad_arguments_are_input_errors():
    for kw, match in [
        (dict(image_size="abc"), "image size must be a whole number"),
        (dict(image_size=(3.5, 2)), "image size must be a whole number"),
        (dict(limit="x"), "limit must be a positive number"),
        (dict(limit=2.5), "limit must be a positive number"),
        (dict(test_fraction="x"), "test_fraction must be a number"),
    ]:
        with pytest.raises(LayaError, match=match):
            load_data("digits", **kw)
    with pytest.raises(InputError, match="not a usable path"):
        load_data("npz:" + "x" * 5000)
    with pytest.raises(NotFoundError, match="cannot expand its ~"):
        load_data("npz:~no-such-user-here/x.npz")


def _table(path, content: str):
    """The text source of ``content`` written to ``path``: (its texts in file order, its labels)."""
    from laya_inspect.data.text import load_csv, load_jsonl

    path.write_text(content, encoding="utf-8")
    load = load_jsonl if path.suffix == ".jsonl" else load_csv
    src = load(str(path), {"split_col": "split"}, seed=0, test_fraction=0.5)
    part = src.open("all")
    return part.fetch(np.arange(len(part.labels))), [src.class_names[i] for i in part.labels]


def test_messy_text_tables_are_read_whole_or_refused_at_the_line_that_breaks_them(tmp_path):
    """An unquoted comma moved a label into the text ('pos' lost, a class 'really nice' made), an
    unclosed quote swallowed 7 rows into one text with the last one's label, and a text over 128 KiB,
    a JSON text holding U+2028 or a NaN text were refused or read as "nan" — each with exit 0 or a
    wrong line."""
    rows = "".join(f"review {i} is fine,{'pos' if i % 2 else 'neg'},all\n" for i in range(20))
    ok = "text,label,split\n" + rows
    with pytest.raises(InputError, match=r"comma\.csv:22: 4 fields where the header has 3 \(extra 'all'\)"):
        _table(tmp_path / "comma.csv", ok + "Great, really nice,pos,all\n")
    with pytest.raises(InputError, match=r"twice\.csv:1: the header names column 'label' twice"):
        _table(tmp_path / "twice.csv", "text,label,label,split\n" + "a,pos,neg,all\n")
    lines = ok.splitlines()
    lines[9] = '"unterminated start of review,neg,all'
    with pytest.raises(InputError, match=r"quote\.csv:10: a quoted text opened here runs on, and its line 10"):
        _table(tmp_path / "quote.csv", "\n".join(lines) + "\n")
    # quoted properly, texts whose lines read as rows ("5,000 people …" with labels 1/3/5) are texts
    fine = 'label,text,split\n5,"5,000 people, a day.\n3,000 on Sundays.",all\n3,"clean,3",all\n1,bad,all\n'
    texts, labels = _table(tmp_path / "fine.csv", fine)
    assert texts[0] == "5,000 people, a day.\n3,000 on Sundays." and labels == ["5", "3", "1"]
    texts, labels = _table(tmp_path / "long.csv", ok + ("word " * 40_000) + ",pos,all\n")
    assert len(texts) == 21 and len(texts[-1]) == 200_000 and labels[-1] == "pos"
    multi = 'text,label,split\n"pros: fast\ncons: slow, but fine",pos,all\nbad,neg,all\n,pos,all\n'
    texts, labels = _table(tmp_path / "multi.csv", multi + "trailing comma,neg,all,\n")
    assert texts[0] == "pros: fast\ncons: slow, but fine" and labels == ["pos", "neg", "pos", "neg"]
    from laya_inspect.data.text import load_csv

    src = load_csv(str(tmp_path / "multi.csv"), {}, seed=0, test_fraction=0.5)
    assert src.row_warnings is not None and "line 5" in src.row_warnings(np.arange(4))[0]  # a two-line row before it
    with pytest.raises(InputError, match=r"late\.csv:2: no label"):
        _table(tmp_path / "late.csv", 'text,label,split\n"two\nlines",,all\nbad,neg,all\n')
    jsonl = "".join(
        json.dumps({"text": t, "label": y, "split": "all"}, ensure_ascii=False) + "\n"
        for t, y in [("a\u2028b", "pos"), ("c\u0085d", "neg"), ("e", "pos")]
    )
    texts, labels = _table(tmp_path / "sep.jsonl", jsonl)
    assert texts == ["a\u2028b", "c\u0085d", "e"] and labels == ["pos", "neg", "pos"]
    with pytest.raises(InputError, match=r"nan\.jsonl:2: no text"):
        _table(tmp_path / "nan.jsonl", jsonl.split("\n")[0] + '\n{"text": NaN, "label": "neg", "split": "all"}\n')


def test_a_csv_row_that_repeats_the_header_is_refused_at_its_line(tmp_path):
    """Two CSV files joined with `cat` leave the second header as a data row: it was read as the text
    'text' with a class 'label' of one row, a third class nobody has, with exit 0."""
    rows = "".join(f"review {i},{'pos' if i % 2 else 'neg'},all\n" for i in range(6))
    with pytest.raises(InputError, match=r"joined\.csv:8: this row repeats the header"):
        _table(tmp_path / "joined.csv", "text,label,split\n" + rows + "text,label,split\n" + rows)
    with pytest.raises(InputError, match=r"spaced\.csv:3: this row repeats the header"):
        _table(tmp_path / "spaced.csv", "text,label,split\nfirst,pos,all\n text , label ,split\n" + rows)
    texts, labels = _table(tmp_path / "ok.csv", "text,label,split\ntext,pos,all\n" + rows)  # one word alike: a row
    assert texts[0] == "text" and labels[0] == "pos"


def test_a_csv_separated_by_semicolons_or_tabs_is_named_as_such(tmp_path):
    """A spreadsheet saved with ';' (European Excel) gave one column 'text;label', and the error offered
    `?text_col=text;label`, which cannot help."""
    body = "".join(f"review {i};{'pos' if i % 2 else 'neg'};all\n" for i in range(6))
    with pytest.raises(InputError, match=r"semi\.csv:1: the header 'text;label;split' is one column.*';'"):
        _table(tmp_path / "semi.csv", "text;label;split\n" + body)
    with pytest.raises(InputError, match=r"tabs\.csv:1: the header .* is one column.*tab.*\.tsv"):
        _table(tmp_path / "tabs.csv", ("text;label;split\n" + body).replace(";", "\t"))


def test_a_jsonl_record_naming_a_key_twice_is_refused_at_its_line(tmp_path):
    """JSON lets a record name a key twice and Python keeps the last: {"label": "pos", "label": "neg"}
    was read as 'neg' with no word, whichever the writer meant."""
    label = ["neg", "pos"]
    ok = "".join(f'{{"text": "review {i}", "label": "{label[i % 2]}", "split": "all"}}\n' for i in range(6))
    twice = '{"text": "great", "label": "pos", "label": "neg", "split": "all"}\n'
    with pytest.raises(InputError, match=r"twice\.jsonl:7: the record names key 'label' twice"):
        _table(tmp_path / "twice.jsonl", ok + twice)
    nested = '{"text": "x", "label": "pos", "meta": {"label": 1}, "split": "all"}\n'
    texts, labels = _table(tmp_path / "ok.jsonl", ok + nested)
    assert texts[-1] == "x" and labels[-1] == "pos"  # the same key in a nested object is no repeat


def test_test_texts_that_repeat_a_training_text_are_a_warning(tmp_path):
    """A scraped table holds the same review twice; split at random, one copy lands in train and one
    in test, and the test accuracy is partly training accuracy, with no word."""
    rows = [f"review number {i} says {'good' if i % 2 else 'bad'}" for i in range(40)]
    table = [(t, "pos" if i % 2 else "neg", "train" if i < 30 else "test") for i, t in enumerate(rows)]
    table += [
        (rows[3].upper() + "  ", "pos", "test"),
        (rows[4], "pos", "test"),
        ("", "neg", "train"),
        ("", "pos", "test"),
    ]
    (tmp_path / "t.csv").write_text("text,label,split\n" + "".join(f"{t},{y},{s}\n" for t, y, s in table))
    b = load_data(f"csv:{tmp_path / 't.csv'}", input_spec=TOKENS, tokenizer=VOCAB)
    said = [w for w in b.warnings if "also stand in split 'train'" in w]
    assert len(said) == 1 and "2 of 13 texts of split 'test'" in said[0] and "1 of them under another label" in said[0]
    (tmp_path / "clean.csv").write_text("text,label,split\n" + "".join(f"{t},{y},{s}\n" for t, y, s in table[:40]))
    clean = load_data(f"csv:{tmp_path / 'clean.csv'}", input_spec=TOKENS, tokenizer=VOCAB)
    assert not [w for w in clean.warnings if "also stand in" in w]


def test_texts_repeated_within_one_split_are_a_warning_and_recorded(tmp_path):
    """QA: repeated texts were flagged only across splits; one text twice in the test split (counted
    twice) and one text under two labels in train (label noise) passed with no word. Each split's repeats
    are warned of, in the data's warnings that extract keeps in the cache, as the across-split one is."""
    rows = [f"review number {i} says {'good' if i % 2 else 'bad'}" for i in range(40)]
    table = [(t, "pos" if i % 2 else "neg", "train" if i < 30 else "test") for i, t in enumerate(rows)]
    table += [(rows[31], "pos", "test"), (" " + rows[2].title(), "pos", "train"), (rows[2], "neg", "train")]
    (tmp_path / "t.csv").write_text("text,label,split\n" + "".join(f"{t},{y},{s}\n" for t, y, s in table))
    b = load_data(f"csv:{tmp_path / 't.csv'}", input_spec=TOKENS, tokenizer=VOCAB)
    said = {w.split("texts of split ")[1].split()[0]: w for w in b.warnings if "repeat an earlier text" in w}
    assert "2 of 32 texts of split 'train' repeat an earlier text" in said["'train'"]
    assert "1 of them under another label than the first" in said["'train'"]
    assert "1 of 11 texts of split 'test' repeat an earlier text" in said["'test'"]
    assert "another label" not in said["'test'"]  # rows[31] twice, under its own label both times
    assert not [w for w in b.warnings if "also stand in" in w]  # no text crosses the splits here
    (tmp_path / "clean.csv").write_text("text,label,split\n" + "".join(f"{t},{y},{s}\n" for t, y, s in table[:40]))
    clean = load_data(f"csv:{tmp_path / 'clean.csv'}", input_spec=TOKENS, tokenizer=VOCAB)
    assert not [w for w in clean.warnings if "repeat an earlier text" in w]


def test_a_class_index_written_two_ways_is_a_warning_and_yes_no_labels_keep_their_words(tmp_path):
    """'02' and '2' were one class with no word; JSON's true/false became classes '0' and '1'."""
    rows = ["good,2", "bad,0", "ok,02", "fine,1", "meh,0", "nice,2", "poor,1", "so so,0"]
    (tmp_path / "t.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    b = load_data(f"csv:{tmp_path / 't.csv'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.25)
    assert b.class_names == ["0", "1", "2"]
    twice = [w for w in b.warnings if "written two ways" in w]
    assert len(twice) == 1 and "'2' (line 2) and '02' (line 4) are class 2" in twice[0], b.warnings
    (tmp_path / "same.csv").write_text("text,label\n" + "\n".join(r.replace(",02", ",2") for r in rows) + "\n")
    same = load_data(f"csv:{tmp_path / 'same.csv'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.25)
    assert not [w for w in same.warnings if "written two ways" in w]
    y = np.array(["1", "01", "0"] * 14)
    b = load_data(npz(tmp_path, "s.npz", X=np.zeros((42, 4), dtype=np.float32), y=y))
    assert any("'1' (y[0]) and '01' (y[1]) are class 1" in w for w in b.warnings), b.warnings

    lines = [json.dumps({"text": t, "label": i % 2 == 0}) for i, t in enumerate(["a", "b", "c", "d", "e", "f"])]
    (tmp_path / "yes.jsonl").write_text("\n".join(lines) + "\n")
    b = load_data(f"jsonl:{tmp_path / 'yes.jsonl'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.5)
    assert b.class_names == ["false", "true"]
    mixed = lines[:5] + [json.dumps({"text": "g", "label": 1})]
    (tmp_path / "mixed.jsonl").write_text("\n".join(mixed) + "\n")
    with pytest.raises(InputError, match=r"labels mix numbers and words \(1 at line 6, 'true' at line 1\)"):
        load_data(f"jsonl:{tmp_path / 'mixed.jsonl'}", input_spec=TOKENS, tokenizer=VOCAB)


def test_whole_numbers_written_with_a_decimal_point_are_class_indices(tmp_path):
    """QA: pandas writes an integer label column that held NaN as 0.0, 1.0, …, 10.0. Those labels were
    read as words sorted as text ('10.0' before '2.0': class 2 held label 10), so a model's own argmax
    disagreed with the cache's labels unnoticed; '0' beside '1.0' was refused as numbers mixed with
    words. They are class indices, as JSON's 1.0 is."""
    rows = [f"text {i},{i % 11}.0" for i in range(44)]
    (tmp_path / "p.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    b = load_data(f"csv:{tmp_path / 'p.csv'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.25)
    assert b.class_names == [str(i) for i in range(11)]
    split = b.splits["train"]
    assert all(int(y) == int(i) % 11 for y, i in zip(split.labels, split.index))  # row i had label i % 11
    mixed = ["good,0", "bad,1.0", "ok,1", "fine,0"] * 3
    (tmp_path / "m.csv").write_text("text,label\n" + "\n".join(mixed) + "\n")
    m = load_data(f"csv:{tmp_path / 'm.csv'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.25)
    assert m.class_names == ["0", "1"]
    assert any("'1.0' (line 3) and '1' (line 4) are class 1" in w for w in m.warnings), m.warnings
    (tmp_path / "f.csv").write_text("text,label\n" + "\n".join(["a,0", "b,1.5", "c,1"]) + "\n")
    with pytest.raises(InputError, match="mix numbers and words"):  # 1.5 names no class index
        load_data(f"csv:{tmp_path / 'f.csv'}", input_spec=TOKENS, tokenizer=VOCAB)


def test_a_whole_number_with_a_bare_decimal_point_is_the_class_index_1_0_is(tmp_path):
    """Review: "1." (numpy's and Fortran's printing of 1.0) was read as class 1 with no rule said. It is
    the rule for "1.0": a class index (as a word "10." sorted before "2."), and beside "1" or "1.0" one
    class index written two ways, with the warning that says so; "1.5" still names no class."""
    rows = [f"text {i},{i % 11}." for i in range(44)]
    (tmp_path / "p.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    b = load_data(f"csv:{tmp_path / 'p.csv'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.25)
    assert b.class_names == [str(i) for i in range(11)] and not [w for w in b.warnings if "two ways" in w]
    split = b.splits["train"]
    assert all(int(y) == int(i) % 11 for y, i in zip(split.labels, split.index))  # row i had label i % 11
    mixed = ["good,0", "bad,1.", "ok,1.0", "fine,1", "meh,0."] * 3
    (tmp_path / "m.csv").write_text("text,label\n" + "\n".join(mixed) + "\n")
    m = load_data(f"csv:{tmp_path / 'm.csv'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.25)
    assert m.class_names == ["0", "1"]
    (said,) = [w for w in m.warnings if "written two ways" in w]
    assert "'1.' (line 3) and '1.0' (line 4) and '1' (line 5) are class 1" in said, said
    assert "'0' (line 2) and '0.' (line 6) are class 0" in said, said
    (tmp_path / "f.csv").write_text("text,label\n" + "\n".join(["a,0", "b,1.5", "c,1."]) + "\n")
    with pytest.raises(InputError, match="mix numbers and words"):
        load_data(f"csv:{tmp_path / 'f.csv'}", input_spec=TOKENS, tokenizer=VOCAB)


def test_year_labels_in_a_text_file_are_refused_with_advice_a_text_file_can_follow(tmp_path):
    """QA: labels 1990, 2000, 2010 in a CSV were refused with "renumber the labels from 0 (or store
    class_names beside them)", advice only an npz can follow; a CSV or JSONL can write them as words."""
    rows = [f"doc {i},{1990 + 10 * (i % 3)}" for i in range(30)]
    (tmp_path / "y.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    with pytest.raises(InputError, match="renumber the labels from 0, or write the classes as words") as e:
        load_data(f"csv:{tmp_path / 'y.csv'}", input_spec=TOKENS, tokenizer=VOCAB)
    assert "class_names" not in str(e.value)
    x, y = np.zeros((30, 4), dtype=np.float32), np.array([1990, 2000, 2010] * 10)
    with pytest.raises(InputError, match="or store class_names beside them"):
        load_data(npz(tmp_path, "y.npz", X=x, y=y))


def test_a_yes_no_label_array_with_class_names_indexes_them(tmp_path):
    """Review: with class_names, a bool y went through the words "false"/"true", so an array of only
    True was read as class 0 (class_names[0]), not class 1."""
    x = np.zeros((20, 4), dtype=np.float32)
    y = np.array([True] * 14 + [False] * 6)
    both = load_data(npz(tmp_path, "b.npz", X=x, y=y, class_names=np.array(["no", "yes"])))
    assert both.class_names == ["no", "yes"]
    with pytest.raises(InputError, match="has the class 'yes'"):
        load_data(npz(tmp_path, "t.npz", X=x, y=np.ones(20, bool), class_names=np.array(["no", "yes"])))


def test_a_label_spelled_in_two_unicode_forms_is_one_class(tmp_path):
    """QA: a table whose 'café' labels came from two systems (decomposed, NFD, on some lines and
    composed, NFC, on others) got two classes that print alike, each half of the rows."""
    import unicodedata

    nfd, nfc = unicodedata.normalize("NFD", "café"), unicodedata.normalize("NFC", "café")
    rows = [f"text {i},{(nfd, nfc, 'bar')[i % 3]}" for i in range(12)]
    (tmp_path / "t.csv").write_text("text,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    b = load_data(f"csv:{tmp_path / 't.csv'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.25)
    assert b.class_names == ["bar", nfc]
    labels = np.concatenate([s.labels for s in b.splits.values()])
    assert sorted(np.bincount(labels).tolist()) == [4, 8]


def test_a_missing_label_word_stored_as_bytes_is_refused(tmp_path):
    """Review: an npz whose labels are byte strings (dtype S, as h5py and older numpy code write
    them) read b'NaN' as a class called 'NaN'; the same word as text was refused."""
    x = np.zeros((12, 4), dtype=np.float32)
    y = np.array([b"cat", b"dog"] * 5 + [b"NaN", b"null"])
    with pytest.raises(InputError, match=r"2 of 12 rows have no class \(b'NaN' at y\[10\], b'null' at y\[11\]\)"):
        load_data(npz(tmp_path, "bytes.npz", X=x, y=y))


def test_an_npz_label_spelled_in_two_unicode_forms_matches_its_class_name(tmp_path):
    """Review: with class_names, a label typed decomposed (NFD) beside a composed (NFC) class name was
    refused as "labels ['café'] are not in class_names ['bar', 'café']", two strings that print alike;
    without class_names the two forms were already one class."""
    import unicodedata

    nfd, nfc = unicodedata.normalize("NFD", "café"), unicodedata.normalize("NFC", "café")
    x = np.zeros((20, 4), dtype=np.float32)
    y = np.array([nfd, "bar"] * 5 + [nfc, "bar"] * 5)
    b = load_data(npz(tmp_path, "u.npz", X=x, y=y, class_names=np.array(["bar", nfd])))
    assert b.class_names == ["bar", nfc]
    labels = np.concatenate([s.labels for s in b.splits.values()])
    assert np.bincount(labels).tolist() == [10, 10]
    with pytest.raises(InputError, match="class_names names 'café' twice"):
        load_data(npz(tmp_path, "two.npz", X=x, y=y, class_names=np.array([nfc, "bar", nfd])))


def test_a_split_spelled_otherwise_than_the_requested_one_is_a_warning(tmp_path):
    """QA: a split column holding 'test' and 'Test' kept the 'test' rows and left the 'Test' ones out
    with no word (a third of the table, here), though they are most likely one split."""
    rows = [f"text {i},{'pos' if i % 2 else 'neg'},{['train', 'train', 'test', 'Test'][i % 4]}" for i in range(40)]
    (tmp_path / "t.csv").write_text("text,label,split\n" + "\n".join(rows) + "\n")
    b = load_data(f"csv:{tmp_path / 't.csv'}?split_col=split", input_spec=TOKENS, tokenizer=VOCAB)
    said = [w for w in b.warnings if "is not read" in w]
    assert len(said) == 1 and "split 'Test' (10 rows)" in said[0] and "'test' only in case" in said[0]
    both = load_data(
        f"csv:{tmp_path / 't.csv'}?split_col=split", splits="train,test,Test", input_spec=TOKENS, tokenizer=VOCAB
    )
    assert not [w for w in both.warnings if "is not read" in w]


def test_a_split_that_cannot_be_stratified_is_a_warning(tmp_path):
    """QA: an image folder or table with a class of one row was split at random, not stratified, with
    no word (only split_info's "stratified": false): each class's share of the test rows was left to
    chance, a rare class's few rows could all land on one side."""
    rows = [f"text {i},{'pos' if i % 2 else 'neg'}" for i in range(40)] + ["odd one,rare"]
    (tmp_path / "t.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    b = load_data(f"csv:{tmp_path / 't.csv'}", input_spec=TOKENS, tokenizer=VOCAB)
    said = [w for w in b.warnings if "single row" in w]
    assert len(said) == 1 and "class 'rare' has a single row, put with the training rows" in said[0]
    assert "no test row" in said[0] and b.split_info["stratified"] is True
    assert b.split_info["single_row_classes"] == [b.class_names.index("rare")]
    (tmp_path / "two.csv").write_text("text,label\n" + "\n".join(rows[:40]) + "\n")
    fine = load_data(f"csv:{tmp_path / 'two.csv'}", input_spec=TOKENS, tokenizer=VOCAB)
    assert not [w for w in fine.warnings if "stratified" in w or "single row" in w]
    (tmp_path / "ones.csv").write_text("text,label\n" + "\n".join(f"t {i},c{i}" for i in range(6)) + "\n")
    ones = load_data(f"csv:{tmp_path / 'ones.csv'}", input_spec=TOKENS, tokenizer=VOCAB)
    assert len([w for w in ones.warnings if "is random, not stratified" in w]) == 1


def test_a_file_not_in_utf8_is_refused_naming_its_line_and_the_fix(tmp_path):
    """QA: a Latin-1 CSV was refused with the decoder's "can't decode byte 0xe9 in position 289" (a
    byte count from the start of a read chunk, not the file) and no fix; a JSONL alike."""
    rows = [f"review {i},{'pos' if i % 2 else 'neg'}" for i in range(30)]
    rows[20] = "un caf\u00e9 tr\u00e8s bon,pos"
    (tmp_path / "latin.csv").write_bytes(("text,label\n" + "\n".join(rows) + "\n").encode("latin-1"))
    with pytest.raises(InputError, match=r"latin\.csv:22: byte 0xe9 .*not a UTF-8 CSV file.*save it as UTF-8"):
        load_data(f"csv:{tmp_path / 'latin.csv'}", input_spec=TOKENS, tokenizer=VOCAB)
    lines = [json.dumps({"text": f"r {i}", "label": i % 2}) for i in range(5)] + ['{"text": "caf\u00e9", "label": 0}']
    (tmp_path / "latin.jsonl").write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    with pytest.raises(InputError, match=r"latin\.jsonl:6: byte 0xe9 .*not a UTF-8 JSONL file"):
        load_data(f"jsonl:{tmp_path / 'latin.jsonl'}", input_spec=TOKENS, tokenizer=VOCAB)


def test_a_class_without_training_rows_is_said_to_be_one_no_head_can_predict(tmp_path):
    """QA: a split column whose test rows held a class the training rows lacked got the same line as a
    class missing from the test rows, "its per-class scores there are undefined", though no head
    fitted on the training split can ever predict it."""
    rows = [f"text {i},{'pos' if i % 2 else 'neg'},train" for i in range(20)]
    rows += [f"test {i},{['pos', 'neg', 'mid'][i % 3]},test" for i in range(9)]
    (tmp_path / "t.csv").write_text("text,label,split\n" + "\n".join(rows) + "\n")
    b = load_data(f"csv:{tmp_path / 't.csv'}?split_col=split", input_spec=TOKENS, tokenizer=VOCAB)
    said = [w for w in b.warnings if "no rows in split 'train'" in w]
    assert len(said) == 1 and "class 'mid'" in said[0] and "can never predict them" in said[0]


def test_labels_that_differ_only_in_surrounding_spaces_are_a_warning_in_the_data_and_the_cache(tmp_path):
    """QA: ' cat' and 'cat' were read as one class (labels are read stripped) with no word of it."""
    from laya_inspect.cache.extract import ExtractConfig, extract_features
    from laya_inspect.cache.store import FeatureStore

    rows = [f"text {i},{' cat' if i % 4 == 1 else 'cat' if i % 2 else 'dog'}" for i in range(12)]
    (tmp_path / "t.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    b = load_data(f"csv:{tmp_path / 't.csv'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.25)
    assert b.class_names == ["cat", "dog"]
    said = [w for w in b.warnings if "differ only in surrounding spaces" in w]
    want = "' cat' (3 rows, first line 3) and 'cat' (3 rows, first line 5) are class 'cat'"
    assert len(said) == 1 and want in said[0], b.warnings
    (tmp_path / "same.csv").write_text("text,label\n" + "\n".join(r.replace(", cat", ",cat") for r in rows) + "\n")
    same = load_data(f"csv:{tmp_path / 'same.csv'}", input_spec=TOKENS, tokenizer=VOCAB, test_fraction=0.25)
    assert not [w for w in same.warnings if "surrounding spaces" in w]
    y = np.array([" cat" if i % 4 == 1 else "cat" if i % 2 else "dog" for i in range(12)])
    data = npz(tmp_path, "s.npz", X=np.zeros((12, 784), dtype=np.float32), y=y)
    out = tmp_path / "c.h5"
    extract_features(ExtractConfig(model="zoo:mlp", data=data, out=str(out), random_init=True))
    with FeatureStore(out) as store:
        recorded = [w for w in store.attrs["warnings"] if "differ only in surrounding spaces" in w]
    assert len(recorded) == 1 and "' cat' (3 rows, first y[1]) and 'cat' (3 rows, first y[3])" in recorded[0]


def test_sixteen_bit_npz_images_are_refused_with_the_float_form_that_loads(tmp_path):
    """QA: uint16 images were refused as "must lie in 0..255" with no way forward."""
    from skimage import data as skdata

    grey = skdata.camera()[::32, ::32].astype(np.uint16) * 257  # 16×16, the full 16-bit range
    x = np.stack([np.roll(grey, i, axis=1) for i in range(8)])[:, None]
    y = np.arange(8) % 2
    with pytest.raises(InputError, match=r"uint16\); store deeper images as float in 0\.\.1 .*/ 65535") as e:
        load_data(npz(tmp_path, "deep.npz", X=x, y=y), test_fraction=0.5)
    assert "X.astype('float32') / 65535" in str(e.value)
    ds = load_data(npz(tmp_path, "float.npz", X=x.astype("float32") / 65535, y=y), test_fraction=0.5)
    assert sum(len(s.labels) for s in ds.splits.values()) == 8
