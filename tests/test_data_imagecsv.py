"""imagecsv:FILE: image files listed in a CSV with their labels, the layout many real datasets ship in
("path,label", paths relative to the CSV's folder). Real CIFAR-10 JPEGs and skimage photos, read
through the public loader; the refusals and hints for the layouts that imagefolder and csv do not read."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from laya_inspect.cache.rows import data_fingerprint
from laya_inspect.data import load_data
from laya_inspect.errors import ImageFileError, InputError, NotFoundError
from laya_inspect.models.base import InputSpec

skdata = pytest.importorskip("skimage.data")

CIFAR_TAR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "cifar10-jpeg.tar.gz"
PHOTOS = ("astronaut", "chelsea", "coffee", "rocket")
IMAGE_MODEL = InputSpec(kind="image", channels=3, size=32, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))


def photo(name: str, size: tuple[int, int] = (40, 40)) -> Image.Image:
    return Image.fromarray(getattr(skdata, name)()).convert("RGB").resize(size)


def photos_csv(root: Path, n: int = 8, header: str = "path,label", split: bool = False) -> Path:
    """root/images/<i>.png (skimage photos, two classes) and root/list.csv naming them relatively."""
    (root / "images").mkdir(parents=True)
    lines = [header + (",split" if split else "")]
    for i in range(n):
        photo(PHOTOS[i % len(PHOTOS)]).save(root / "images" / f"{i}.png")
        lines.append(
            f"images/{i}.png,{'cat' if i % 2 else 'dog'}" + (f",{'test' if i < 2 else 'train'}" if split else "")
        )
    (root / "list.csv").write_text("\n".join(lines) + "\n")
    return root / "list.csv"


def every_row(bundle) -> dict[int, tuple[int, torch.Tensor]]:
    out = {}
    for split in bundle.splits.values():
        for x, y, idx in split.batches(4):
            for k in range(len(y)):
                out[int(idx[k])] = (int(y[k]), x[k])
    return out


@pytest.fixture(scope="module")
def cifar(tmp_path_factory) -> Path:
    """40 CIFAR-10 test JPEGs (4 of each class) unpacked as an image folder."""
    if not CIFAR_TAR.exists():
        pytest.skip(f"{CIFAR_TAR} is absent")
    root = tmp_path_factory.mktemp("cifar")
    with tarfile.open(CIFAR_TAR) as tar:
        wanted = [
            m
            for m in tar.getmembers()
            if m.name.startswith("test/") and m.name.endswith(("/0000.jpg", "/0001.jpg", "/0002.jpg", "/0003.jpg"))
        ]
        tar.extractall(root, members=wanted, filter="data")
    return root


def test_cifar_jpegs_listed_in_a_csv_read_as_the_image_folder_reads_them(cifar):
    """QA: a CSV of paths and labels could not be read at all. The same 40 files read through a CSV
    (relative paths, a split column) and through imagefolder: give the same pixels and labels."""
    files = sorted(cifar.glob("test/*/*.jpg"))
    rows = [f"{f.relative_to(cifar)},{f.parent.name},test" for f in files]
    (cifar / "labels.csv").write_text("file,animal,split\n" + "\n".join(rows) + "\n")
    listed = load_data(
        f"imagecsv:{cifar / 'labels.csv'}?path_col=file&label_col=animal", splits="test", input_spec=IMAGE_MODEL
    )
    folder = load_data(f"imagefolder:{cifar}", splits="test", input_spec=IMAGE_MODEL)
    assert listed.kind == "image" and listed.class_names == folder.class_names
    assert listed.split_info["method"] == "native" and listed.splits["test"].n == 40
    a, b = every_row(listed), every_row(folder)
    assert sorted(a) == list(range(40))
    for i, f in enumerate(files):  # imagefolder lists the same sorted files in the same order
        assert a[i][0] == b[i][0] == folder.class_names.index(f.parent.name)
        assert torch.equal(a[i][1], b[i][1])
    assert listed.location == str(cifar)


def test_without_a_split_column_rows_are_split_as_image_folders_are(tmp_path):
    csv = photos_csv(tmp_path)
    b = load_data(f"imagecsv:{csv}", test_fraction=0.5, seed=3)
    assert b.split_info["method"] != "native" and b.splits["train"].n == b.splits["test"].n == 4
    assert b.class_names == ["cat", "dog"]
    assert sorted(np.concatenate([s.index for s in b.splits.values()]).tolist()) == list(range(8))


def test_absolute_paths_and_tsv(tmp_path):
    photos_csv(tmp_path)
    rows = [f"{tmp_path / 'images' / f'{i}.png'}\t{i % 2}" for i in range(8)]
    (tmp_path / "abs.tsv").write_text("path\tlabel\n" + "\n".join(rows) + "\n")
    b = load_data(f"imagecsv:{tmp_path / 'abs.tsv'}", test_fraction=0.5)
    assert sum(s.n for s in b.splits.values()) == 8 and b.class_names == ["0", "1"]


def test_a_missing_file_is_named_with_its_csv_line(tmp_path):
    csv = photos_csv(tmp_path)
    os.remove(tmp_path / "images" / "2.png")
    with pytest.raises(InputError, match=r"line 4 'images/2.png' \(no such file\).*relative to the CSV's folder"):
        load_data(f"imagecsv:{csv}")


def test_a_windows_path_is_said(tmp_path):
    csv = photos_csv(tmp_path)
    csv.write_text(csv.read_text().replace("images/", "images\\"))
    with pytest.raises(InputError, match=r"write them with '/'"):
        load_data(f"imagecsv:{csv}")


def test_a_damaged_image_is_named_before_any_work(tmp_path):
    csv = photos_csv(tmp_path)
    (tmp_path / "images" / "5.png").write_bytes(b"not a png")
    with pytest.raises(ImageFileError, match=r"images/5.png"):
        load_data(f"imagecsv:{csv}", test_fraction=0.5)


def test_greyscale_and_transparent_files_among_colour_are_warned(tmp_path):
    csv = photos_csv(tmp_path)
    photo("coffee").convert("L").save(tmp_path / "images" / "1.png")
    photo("rocket").convert("RGBA").save(tmp_path / "images" / "3.png")
    b = load_data(f"imagecsv:{csv}", test_fraction=0.5)
    said = " ".join(b.warnings)
    assert "greyscale" in said and "transparen" in said
    assert all(x.shape[0] == 3 for _, x in every_row(b).values())


def test_a_file_listed_twice_under_two_labels_is_warned(tmp_path):
    csv = photos_csv(tmp_path)
    csv.write_text(csv.read_text() + "images/0.png,cat\n")
    b = load_data(f"imagecsv:{csv}", test_fraction=0.5)
    assert any("listed on several lines (lines 2, 10)" in w and "1 of them under two labels" in w for w in b.warnings)


def test_the_fingerprint_a_resume_must_match_sees_a_changed_image_and_csv(tmp_path):
    """Provenance: a resumed extract compares the data fingerprint; a changed image or CSV must change it."""
    csv = photos_csv(tmp_path, split=True)
    spec = f"imagecsv:{csv}"
    before = data_fingerprint(load_data(spec, splits="train", limit=2, input_spec=IMAGE_MODEL))
    assert data_fingerprint(load_data(spec, splits="train", limit=2, input_spec=IMAGE_MODEL)) == before
    photo("chelsea").save(tmp_path / "images" / "7.png")  # a row the first batches do not read
    os.utime(tmp_path / "images" / "7.png", ns=(1, 1))
    changed = data_fingerprint(load_data(spec, splits="train", limit=2, input_spec=IMAGE_MODEL))
    assert changed != before
    csv.write_text(csv.read_text().replace("images/7.png,cat", "images/6.png,cat"))
    assert data_fingerprint(load_data(spec, splits="train", limit=2, input_spec=IMAGE_MODEL)) != changed


def test_a_csv_of_image_paths_read_as_text_says_how_to_read_the_images(tmp_path):
    """QA: csv:paths.csv?text_col=path with an image model said only "use an hf: text model"."""
    csv = photos_csv(tmp_path)
    with pytest.raises(InputError, match=r"its texts are image file paths: read the images with imagecsv:FILE"):
        load_data(f"csv:{csv}?text_col=path", input_spec=IMAGE_MODEL)


def test_csv_with_path_col_points_to_imagecsv(tmp_path):
    csv = photos_csv(tmp_path)
    with pytest.raises(InputError, match=r"read them with imagecsv:FILE\?path_col="):
        load_data(f"csv:{csv}?path_col=path")


def test_a_folder_of_text_files_says_imagefolder_reads_images_only(tmp_path):
    for c in ("pos", "neg"):
        (tmp_path / c).mkdir()
        (tmp_path / c / "a.txt").write_text("a fine film")
    with pytest.raises(InputError, match=r"text files, which imagefolder: does not read.*CSV.*JSONL"):
        load_data(f"imagefolder:{tmp_path}")


def test_tsv_says_that_csv_reads_tab_separated_files(tmp_path):
    with pytest.raises(NotFoundError, match=r"csv:FILE.tsv reads a tab-separated file"):
        load_data(f"tsv:{tmp_path / 'x.tsv'}")


def test_images_of_several_sizes_with_no_target_size_are_refused_before_batching(tmp_path):
    csv = photos_csv(tmp_path)
    photo("camera", (64, 48)).save(tmp_path / "images" / "4.png")
    with pytest.raises(InputError, match=r"2 sizes.*48×64: 1 \(e.g. images/4.png\).*--image-size"):
        load_data(f"imagecsv:{csv}", test_fraction=0.5, batched=True)
    assert sum(s.n for s in load_data(f"imagecsv:{csv}", test_fraction=0.5, image_size=32).splits.values()) == 8


def test_a_copy_listed_under_another_label_names_the_csv(tmp_path):
    """QA: the warning for one image's bytes under two labels said "image folder <folder>" of a CSV."""
    csv = photos_csv(tmp_path, split=True)
    (tmp_path / "images" / "copy.png").write_bytes((tmp_path / "images" / "0.png").read_bytes())  # 0.png is a dog
    csv.write_text(csv.read_text() + "images/copy.png,cat,test\n")  # 0.png's split
    b = load_data(f"imagecsv:{csv}")
    said = [w for w in b.warnings if "byte-for-byte copies" in w]
    assert said and said[0].startswith(f"{csv}: 1 file(s)") and "image folder" not in said[0], b.warnings


def test_train_help_says_image_files_listed_in_a_csv_are_read():
    """train reads imagecsv: as extract does (zoo:cnn on CIFAR-10 JPEGs of one size); its --data help said
    no image files at all."""
    import subprocess
    import sys

    said = subprocess.run(
        [sys.executable, "-m", "laya_inspect", "train", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    ).stdout
    assert "imagecsv:FILE" in said and "imagefolder:DIR" in said, said
