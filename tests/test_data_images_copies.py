"""imagefolder: the same image saved under two class folders of one split is one input read under two
labels, and split folders named training/testing are splits, not classes. Real photos from
skimage.data, through the public loader."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

from laya_inspect.data import load_data

skdata = pytest.importorskip("skimage.data")


def folder(root: Path) -> None:
    for i, name in enumerate(("astronaut", "chelsea", "coffee", "rocket")):
        f = root / ("cat" if i % 2 else "dog") / f"{name}.jpg"
        f.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(getattr(skdata, name)()).convert("RGB").resize((32, 32)).save(f, quality=95)


def copies(root: Path) -> list[str]:
    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0)
    return [w for w in b.warnings if "byte-for-byte copies" in w]


def test_a_file_copied_into_another_class_folder_is_said(tmp_path):
    """QA: cat/chelsea.jpg copied as dog/maybe_dog.jpg was read as a cat row and a dog row, the same
    pixels under two labels, with no word (only links between class folders were said)."""
    root = tmp_path / "photos"
    folder(root)
    assert copies(root) == []
    shutil.copy(root / "cat" / "chelsea.jpg", root / "dog" / "maybe_dog.jpg")
    said = copies(root)
    assert len(said) == 1 and "1 file(s)" in said[0] and "cat/chelsea.jpg = dog/maybe_dog.jpg" in said[0], said


def test_copies_within_one_class_and_across_splits_are_not_this_warning(tmp_path):
    """A copy inside one class is a repeat, not a label conflict; a copy in train/ and test/ is a test
    row the heads were trained on, which fit-head finds from the cached features."""
    root = tmp_path / "photos"
    for split in ("train", "test"):
        folder(root / split)
    shutil.copy(root / "train" / "cat" / "chelsea.jpg", root / "train" / "cat" / "again.jpg")
    assert copies(root) == []
    os.remove(root / "train" / "cat" / "again.jpg")
    os.replace(root / "test" / "cat" / "chelsea.jpg", root / "test" / "dog" / "chelsea.jpg")
    assert copies(root) == []  # its twin is in train/ only: not one split's two labels


def test_training_and_testing_folders_are_splits_not_classes(tmp_path):
    """QA: DIR/training/{cat,dog} and DIR/testing/{cat,dog} (a layout data sites ship) were read as two
    classes, 'testing' and 'training', with a warning only: every head then learnt which folder a photo
    came from. They are splits; the default train,test is refused naming them."""
    from laya_inspect.errors import NotFoundError

    root = tmp_path / "photos"
    for split in ("training", "testing"):
        folder(root / split)
    with pytest.raises(NotFoundError, match="available: training, testing"):
        load_data(f"imagefolder:{root}", seed=0)
    b = load_data(f"imagefolder:{root}", splits=("training", "testing"), seed=0)
    assert b.class_names == ["cat", "dog"] and {k: s.n for k, s in b.splits.items()} == {"training": 4, "testing": 4}
