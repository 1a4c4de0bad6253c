"""`train` on an image folder whose images have several sizes is refused with a way out that `train`
can take: it has no --image-size, so telling it to pass one sent the user to an option it refuses.
Real data: CIFAR-10 JPEGs from ../shared/data (skipped where absent), some of them shrunk."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from laya_inspect.cli import app

TARBALL = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "cifar10-jpeg.tar.gz"
PER_CLASS = 6


def _mixed_folder(root: Path) -> Path:
    """Two class folders of CIFAR-10 JPEGs, every other one shrunk from 32×32 to 24×24."""
    from PIL import Image

    taken: dict[str, int] = {}
    with tarfile.open(TARBALL) as tar:
        for member in tar:
            parts = member.name.split("/")
            if len(parts) != 3 or parts[0] != "train" or not member.isfile():
                continue
            cls = parts[1]
            if cls not in ("airplane", "automobile") or taken.get(cls, 0) == PER_CLASS:
                continue
            image = Image.open(io.BytesIO(tar.extractfile(member).read()))
            if taken.get(cls, 0) % 2:
                image = image.resize((24, 24))
            (root / cls).mkdir(parents=True, exist_ok=True)
            image.save(root / cls / parts[2])
            taken[cls] = taken.get(cls, 0) + 1
            if len(taken) == 2 and min(taken.values()) == PER_CLASS:
                break
    return root


def test_train_on_images_of_several_sizes_names_what_train_can_do(tmp_path):
    if not TARBALL.is_file():
        pytest.skip(f"{TARBALL} is absent (see ../shared/data/README.md)")
    folder = _mixed_folder(tmp_path / "mixed")
    args = ["train", "--model", "zoo:cnn", "--data", f"imagefolder:{folder}", "--epochs", "1"]
    result = CliRunner().invoke(app, [*args, "--val-fraction", "0.3", "--out", str(tmp_path / "j.pt")])
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "different sizes (24x24, 32x32)" in said
    assert "`train` reads each image at its own size and has no option to resize them" in said
    assert "bring the image files to one size first" in said
    # the option is named as extract's, never as one train takes
    assert "pass an image size (image_size / --image-size)" not in said
    refused = CliRunner().invoke(app, [*args, "--image-size", "32"])
    assert refused.exit_code == 2 and "No such option" in refused.output
