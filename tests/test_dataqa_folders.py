"""imagefolder: on real CIFAR-10 JPEGs (../shared/data) and PIL-written photos: one large photo among
a thousand squares is said (its aspect ratio and its shrinking, every header judged, no sample), images
in a sub-folder of a class folder are said with the class they joined, and CMYK JPEGs converted to RGB
are named as greyscale and transparent files are."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from PIL import Image

from laya_inspect.data import load_data
from laya_inspect.models.base import InputSpec

skdata = pytest.importorskip("skimage.data")
CIFAR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "cifar10-jpeg.tar.gz"


def cifar_folder(root: Path, n: int, classes: tuple[str, ...] = ("airplane", "truck")) -> Path:
    """``n`` CIFAR-10 training JPEGs of each of ``classes``, as they are in the archive."""
    if not CIFAR.is_file():
        pytest.skip(f"{CIFAR} is absent (see ../shared/data/README.md)")
    taken = dict.fromkeys(classes, 0)
    with tarfile.open(CIFAR) as tar:
        for member in tar:
            parts = member.name.split("/")
            if member.isfile() and parts[0] == "train" and taken.get(parts[1], n) < n and parts[2].endswith(".jpg"):
                out = root / parts[1] / parts[2]
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(tar.extractfile(member).read())
                taken[parts[1]] += 1
                if min(taken.values()) == n:
                    break
    assert min(taken.values()) == n
    return root


def photo_jpeg(path: Path, size: tuple[int, int], mode: str = "RGB") -> None:
    """skimage's coffee photo resized to ``size`` (W, H), as a JPEG in ``mode``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(skdata.coffee()).resize(size).convert(mode).save(path, "JPEG", quality=80)


def test_one_large_photo_among_a_thousand_cifar_squares_is_said(tmp_path):
    root = cifar_folder(tmp_path / "c", 512)
    photo_jpeg(root / "truck" / "phone.jpg", (6000, 4000))
    b = load_data(f"imagefolder:{root}", test_fraction=0.2, seed=0, image_size=32)
    stretched = [w for w in b.warnings if "another aspect ratio" in w]
    assert len(stretched) == 1 and "1 of 1025 images read (headers only; height×width e.g. 4000×6000)" in stretched[0]
    shrunk = [w for w in b.warnings if "shrunk" in w]
    assert len(shrunk) == 1, b.warnings
    assert "1 of 1025 image files are shrunk 8× or more to the model's 32×32 input" in shrunk[0]
    assert "truck/phone.jpg (4000×6000)" in shrunk[0]


def test_a_folder_of_photos_all_far_larger_than_the_input_is_not_said_shrunk(tmp_path):
    for i in range(4):
        photo_jpeg(tmp_path / "p" / ("a", "b")[i % 2] / f"{i}.jpg", (600, 400))
    b = load_data(f"imagefolder:{tmp_path / 'p'}", test_fraction=0.5, seed=0, image_size=32)
    assert not [w for w in b.warnings if "shrunk" in w]


def test_images_in_a_sub_folder_of_a_class_folder_are_said_with_their_class(tmp_path):
    root = cifar_folder(tmp_path / "c", 20)
    for i in range(3):  # a user's extra trucks, dropped in a folder of their own inside truck/
        photo_jpeg(root / "truck" / "extra" / f"{i}.jpg", (32, 32))
    photo_jpeg(root / "airplane" / "old" / "deep" / "0.jpg", (32, 32))
    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0)
    assert b.class_names == ["airplane", "truck"]  # still read so: the folder names the class
    (said,) = [w for w in b.warnings if "sub-folders of class folders" in w]
    assert "4 image(s) in sub-folders of class folders are read as the class that holds them" in said
    assert "airplane/old/: 1 into 'airplane', truck/extra/: 3 into 'truck'" in said
    assert "move it up beside the class folders" in said


def test_class_folders_without_sub_folders_say_nothing_of_them(tmp_path):
    b = load_data(f"imagefolder:{cifar_folder(tmp_path / 'c', 20)}", test_fraction=0.5, seed=0)
    assert not [w for w in b.warnings if "sub-folder" in w]


def test_cmyk_jpegs_converted_to_rgb_are_named(tmp_path):
    root = cifar_folder(tmp_path / "c", 20)
    photo_jpeg(root / "truck" / "print.jpg", (32, 32), mode="CMYK")
    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0)
    (said,) = [w for w in b.warnings if "CMYK" in w]
    assert "1 of 41 image files are CMYK, converted to RGB by PIL's plain formula" in said
    assert "truck/print.jpg" in said
    # a greyscale model: the file is named among those read in colour, not twice
    grey = InputSpec(kind="image", channels=1, size=32, mean=(0.5,), std=(0.25,), resize="stretch")
    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, input_spec=grey)
    assert not [w for w in b.warnings if "CMYK" in w]
    (colour,) = [w for w in b.warnings if "converted to greyscale" in w]
    assert "41 of 41 image files are in colour" in colour


def test_a_folder_without_cmyk_files_says_nothing_of_cmyk(tmp_path):
    b = load_data(f"imagefolder:{cifar_folder(tmp_path / 'c', 20)}", test_fraction=0.5, seed=0)
    assert not [w for w in b.warnings if "CMYK" in w]
