"""imagefolder: folders as people's disks hold them. Hidden files and folders (thumbnails, notebook
checkpoints, macOS '._' sidecars) are not photos, links that loop or lead into another class folder
are not followed, and a phone photo stored sideways is read upright, as a viewer shows it. Real
photos from skimage.data, through the public loader."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps

from laya_inspect.data import load_data
from laya_inspect.data.headers import file_header
from laya_inspect.errors import InputError

skdata = pytest.importorskip("skimage.data")

PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "cat", "camera")


def photo(name: str, size: tuple[int, int] = (48, 48)) -> Image.Image:
    """A small RGB copy of a skimage photo, size (W, H)."""
    return Image.fromarray(getattr(skdata, name)()).convert("RGB").resize(size)


def save_jpg(path: Path, im: Image.Image, **kw) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    im.save(path, quality=95, **kw)


def row_count(root: Path) -> int:
    """How many rows ``imagefolder:root`` lists (no pixels read)."""
    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0)
    return sum(split.n for split in b.splits.values())


def all_rows(root: Path, **kw):
    """(labels by row, pixels by row, the bundle) of every row of ``imagefolder:root``, read one at a
    time (sizes may differ)."""
    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, **kw)
    rows = {}
    for split in b.splits.values():
        for x, y, idx in split.batches(1):
            rows[int(idx[0])] = (int(y[0]), x[0])
    order = sorted(rows)
    return [rows[r][0] for r in order], [rows[r][1] for r in order], b


# ----------------------------------------------------------------------------- hidden files
def test_hidden_files_and_folders_are_left_out_and_counted(tmp_path):
    """QA: cat/.thumbnails/x.jpg, dog/.ipynb_checkpoints/x.jpg and cat/.hidden.jpg became silent extra
    rows, and a macOS '._' sidecar (not an image) aborted the run. The hidden files here are real
    photos of the *other* class, so a row read from one of them would carry a wrong label."""
    clean, messy = tmp_path / "clean", tmp_path / "messy"
    for root in (clean, messy):
        for i, name in enumerate(PHOTOS[:3]):
            save_jpg(root / "cat" / f"{i}_{name}.jpg", photo(name))
        for i, name in enumerate(PHOTOS[3:]):
            save_jpg(root / "dog" / f"{i}_{name}.jpg", photo(name))
    save_jpg(messy / "cat" / ".thumbnails" / "x.jpg", photo("rocket"))
    save_jpg(messy / "dog" / ".ipynb_checkpoints" / "x.jpg", photo("astronaut"))
    save_jpg(messy / "cat" / ".hidden.jpg", photo("camera"))
    save_jpg(messy / "cat" / "sub" / ".deep" / "y.jpg", photo("coffee"))  # at every depth
    # an AppleDouble sidecar: macOS metadata under the photo's name, not a JPEG
    (messy / "dog" / "._0_rocket.jpg").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ")
    (messy / "dog" / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")  # not an image: passed over quietly

    want_labels, want_pixels, _ = all_rows(clean)
    assert row_count(messy) == 6  # was 11: five hidden files listed as photos
    labels, pixels, b = all_rows(messy)  # the '._' file once aborted here
    assert len(labels) == 6 and labels == want_labels == [0, 0, 0, 1, 1, 1]
    assert all(torch.equal(a, w) for a, w in zip(pixels, want_pixels))
    (said,) = [w for w in b.warnings if "hidden folder" in w]
    assert "2 hidden image file(s) and 3 hidden folder(s) (names starting with '.')" in said
    assert "cat/.hidden.jpg" in said and "left out" in said and ".DS_Store" not in said
    assert str(messy) in said and "\n" not in said


# ----------------------------------------------------------------------------- links
def two_classes(root: Path, n: int = 4) -> None:
    for i in range(n):
        save_jpg(root / "cat" / f"{i}.jpg", photo(PHOTOS[i]))
        save_jpg(root / "dog" / f"{i}.jpg", photo(PHOTOS[-1 - i]))


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="needs symbolic links")
@pytest.mark.parametrize(("name", "target"), [("self", "."), ("up", ".."), ("deep/back", "../..")])
def test_links_that_loop_back_are_not_followed(tmp_path, name, target):
    """QA: `ln -s . dog/self` listed dog's 4 images 41 times each (168 rows instead of 8) and
    `ln -s .. dog/up` gave cat's images the label dog too (3,608 rows)."""
    root = tmp_path / "data"
    two_classes(root)
    want_labels, want_pixels, _ = all_rows(root)
    (root / "dog" / name).parent.mkdir(exist_ok=True)
    os.symlink(target, root / "dog" / name)
    assert row_count(root) == 8
    labels, pixels, b = all_rows(root)
    assert labels == want_labels == [0] * 4 + [1] * 4
    assert all(torch.equal(a, w) for a, w in zip(pixels, want_pixels))
    (said,) = [w for w in b.warnings if "loop back" in w]
    assert "1 linked folder(s)" in said and f"dog/{name}" in said


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="needs symbolic links")
def test_links_to_files_and_folders_still_followed_but_never_into_another_class(tmp_path):
    """Linked files and folders outside the class folders are read (as before); a link into a
    sibling class folder would give cat's photos the label 'dog', and a second link to the same file
    would list it twice: neither is read, and both are said."""
    root, extra = tmp_path / "data", tmp_path / "extra"
    two_classes(root)
    save_jpg(extra / "more_dogs" / "a.jpg", photo("coffee", (40, 40)))
    save_jpg(extra / "more_dogs" / "b.jpg", photo("chelsea", (40, 40)))
    save_jpg(extra / "lone_cat.jpg", photo("cat", (40, 40)))
    os.symlink(extra / "more_dogs", root / "dog" / "more")
    os.symlink(extra / "lone_cat.jpg", root / "cat" / "linked.jpg")
    os.symlink(root / "cat", root / "dog" / "kitties")
    os.symlink("0.jpg", root / "dog" / "again.jpg")  # the same file as dog/0.jpg
    assert row_count(root) == 11  # was 17: cat's 5 photos again as dog, and dog/0.jpg twice
    labels, pixels, b = all_rows(root)
    assert labels == [0] * 5 + [1] * 6  # cat: 4 + linked.jpg; dog: 4 + more/a, more/b
    assert sum(p.shape[-1] == 40 for p in pixels) == 3  # the three linked photos, each once
    assert [p.shape[-1] for p in pixels[:5]] == [48] * 4 + [40] and [p.shape[-1] for p in pixels[-2:]] == [40, 40]
    (crossed,) = [w for w in b.warnings if "another class folder" in w]
    assert "dog/kitties" in crossed and "not followed" in crossed
    (twice,) = [w for w in b.warnings if "second time" in w]
    assert "1 file(s)" in twice and "(dog/again.jpg)" in twice  # QA: which link to remove was not said


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="needs symbolic links")
def test_a_file_linked_into_another_split_or_class_is_said(tmp_path):
    """A test class folder that is a link to the training one (a disk short of space) made every test
    row a training row, and a photo linked into a second class was read under two labels, with no
    word: both are warnings now, with an example of each."""
    root = tmp_path / "data"
    two_classes(root / "train")
    save_jpg(root / "test" / "dog" / "9.jpg", photo("coffee"))
    os.symlink(root / "train" / "cat", root / "test" / "cat")
    os.symlink(root / "train" / "cat" / "0.jpg", root / "train" / "dog" / "cat0.jpg")
    b = load_data(f"imagefolder:{root}")
    assert {n: s.n for n, s in b.splits.items()} == {"train": 9, "test": 5}
    (splits,) = [w for w in b.warnings if "two split folders" in w]
    assert splits.startswith(f"image folder {root}: 4 file(s)") and "train/cat/0.jpg and test/cat/0.jpg" in splits
    (labels,) = [w for w in b.warnings if "two class folders" in w]
    assert "1 file(s)" in labels and "train/cat/0.jpg and train/dog/cat0.jpg" in labels


def test_folders_without_links_say_nothing_of_shared_files(tmp_path):
    root = tmp_path / "data"
    two_classes(root / "train")
    two_classes(root / "test", n=2)
    assert not [w for w in load_data(f"imagefolder:{root}").warnings if "stand in two" in w]


# ----------------------------------------------------------------------------- EXIF orientation
@pytest.mark.parametrize("orientation", [3, 6, 8])
def test_exif_orientation_is_applied_as_a_viewer_shows_the_photo(tmp_path, orientation):
    """QA: a 160×96 phone photo tagged orientation 6 (stored sideways) was read as stored, its
    features at cosine 0.5–0.7 from the upright photo's. Read now as PIL's exif_transpose shows it,
    and its size from the header (the stretch warning's) is the upright one."""
    exif = Image.Exif()
    exif[0x0112] = orientation  # EXIF Orientation
    save_jpg(tmp_path / "a" / "phone.jpg", photo("astronaut", (160, 96)), exif=exif.tobytes())
    with Image.open(tmp_path / "a" / "phone.jpg") as f:
        upright = ImageOps.exif_transpose(f)  # the decoded pixels, turned: saved losslessly
    (tmp_path / "b").mkdir()
    upright.save(tmp_path / "b" / "upright.png")
    shape = (96, 160) if orientation == 3 else (160, 96)
    assert file_header(str(tmp_path / "a" / "phone.jpg")).size == shape
    labels, pixels, b = all_rows(tmp_path)
    assert labels == [0, 1]
    phone, want = pixels
    assert tuple(want.shape) == (3, *shape)
    assert tuple(phone.shape) == (3, *shape) and torch.equal(phone, want)
    assert "EXIF orientation" in b.transforms["decode"]


def test_a_class_folder_named_train_is_a_class_not_a_split(tmp_path):
    """Classes bus, car and train, where car keeps its photos in sub-folders: the folders holding
    sub-folders were taken for splits ("no split 'test'…; available: train, car")."""
    for i, name in enumerate(PHOTOS[:2]):
        save_jpg(tmp_path / "bus" / f"{i}.jpg", photo(name))
        save_jpg(tmp_path / "car" / "red" / f"{i}.jpg", photo(name))
        save_jpg(tmp_path / "train" / f"{i}.jpg", photo(name))
    save_jpg(tmp_path / "train" / "old" / "2.jpg", photo("cat"))
    labels, _, b = all_rows(tmp_path)
    assert b.class_names == ["bus", "car", "train"] and sorted(labels) == [0, 0, 1, 1, 2, 2, 2]
    split = tmp_path / "split"
    for part in ("train", "test"):
        for c, name in (("bus", "rocket"), ("car", "coffee")):
            save_jpg(split / part / c / "0.jpg", photo(name))
    assert sorted(load_data(f"imagefolder:{split}").splits) == ["test", "train"]


def test_a_photo_with_a_damaged_exif_entry_is_read_and_a_turned_tiff_is_not_turned_twice(tmp_path):
    """ImageOps.exif_transpose re-writes the EXIF and stopped the run with struct.error on an entry
    whose type does not fit its tag; PIL opens a TIFF already turned, and file_size turned it again."""
    im = photo("chelsea", (40, 20))
    exif = Image.Exif()
    exif[0x0112] = 6
    exif[0x010F] = "Cam"
    raw = exif.tobytes()
    at = raw.index(b"\x01\x0f\x00\x02")  # the 0x010F (Make, ASCII) entry made 0x0103 (Compression)
    save_jpg(tmp_path / "a" / "bad.jpg", im, exif=raw[:at] + b"\x01\x03" + raw[at + 2 :])
    save_jpg(tmp_path / "b" / "ok.jpg", im)
    _, pixels, _ = all_rows(tmp_path)
    assert sorted(tuple(p.shape) for p in pixels) == [(3, 20, 40), (3, 40, 20)]  # the damaged one turned
    im.save(tmp_path / "t.tif", exif=exif.tobytes())
    assert file_header(str(tmp_path / "t.tif")).size == (40, 20)


def test_a_split_folder_holding_a_stray_image_is_still_a_split(tmp_path):
    """A preview.png left in train/ made train/ a class folder, and the split was lost."""
    for part in ("train", "test"):
        for c, name in (("bus", "rocket"), ("car", "coffee")):
            save_jpg(tmp_path / part / c / "0.jpg", photo(name))
    save_jpg(tmp_path / "train" / "preview.jpg", photo("cat"))
    b = load_data(f"imagefolder:{tmp_path}")
    assert sorted(b.splits) == ["test", "train"] and b.class_names == ["bus", "car"]


def test_images_beside_the_class_folders_are_said_to_be_left_out(tmp_path):
    """QA: 50 photos dropped in the folder's root beside cat/ and ship/ (and a preview in train/ beside
    its class folders) were left out without a word in the terminal or the cache."""
    for part in ("train", "test"):
        for c, name in (("bus", "rocket"), ("car", "coffee")):
            save_jpg(tmp_path / part / c / "0.jpg", photo(name))
    save_jpg(tmp_path / "train" / "preview.jpg", photo("cat"))
    save_jpg(tmp_path / "stray.png", photo("chelsea"))
    (tmp_path / "notes.txt").write_text("not an image")
    b = load_data(f"imagefolder:{tmp_path}")
    assert sum(split.n for split in b.splits.values()) == 4  # still left out: no folder gives them a label
    (said,) = [w for w in b.warnings if "outside the class folders" in w]
    assert "2 image file(s)" in said and "stray.png" in said and "train/preview.jpg" in said
    assert "notes.txt" not in said and "\n" not in said


def test_a_folder_with_every_image_in_a_class_folder_says_nothing_of_loose_images(tmp_path):
    two_classes(tmp_path, n=2)
    b = load_data(f"imagefolder:{tmp_path}", test_fraction=0.5, seed=0)
    assert not [w for w in b.warnings if "outside the class folders" in w]


def test_class_folders_holding_only_sub_folders_are_said_to_be_read_as_one_class(tmp_path):
    """QA: animals/{cat,dog}/ and vehicles/{ship,plane}/ were read as two classes, animals and vehicles,
    with no word; a class folder with images of its own beside sub-folders (cat/nested/) gets the warning
    of images merged from sub-folders instead."""
    for group, kinds in (("animals", ("cat", "dog")), ("vehicles", ("ship", "plane"))):
        for k, name in zip(kinds, PHOTOS):
            for i in range(2):
                save_jpg(tmp_path / "grouped" / group / k / f"{i}.jpg", photo(name))
    b = load_data(f"imagefolder:{tmp_path / 'grouped'}", test_fraction=0.5, seed=0)
    assert b.class_names == ["animals", "vehicles"]  # still read so: the folder names the classes
    (said,) = [w for w in b.warnings if "sub-folders" in w]
    assert (
        "2 class folder(s) hold no image of their own" in said
        and "animals/: cat, dog all read as class 'animals'" in said
    )
    for i, name in enumerate(PHOTOS[:4]):
        save_jpg(tmp_path / "mixed" / "cat" / f"{i}.jpg", photo(name))
        save_jpg(tmp_path / "mixed" / "dog" / f"{i}.jpg", photo(name))
    save_jpg(tmp_path / "mixed" / "cat" / "nested" / "a" / "0.jpg", photo("coffee"))
    save_jpg(tmp_path / "mixed" / "cat" / "other" / "0.jpg", photo("rocket"))
    b = load_data(f"imagefolder:{tmp_path / 'mixed'}", test_fraction=0.5, seed=0)
    assert not [w for w in b.warnings if "hold no image of their own" in w]
    (said,) = [w for w in b.warnings if "sub-folders" in w]
    assert "2 image(s) in sub-folders of class folders" in said


def test_images_of_several_sizes_for_a_model_that_states_none_are_refused_before_any_work(tmp_path):
    """QA: a user's convnet (TorchScript, no input size) over 40 CIFAR JPEGs and two photos: with
    --batch-size 1 the photos were cached at 512×512 beside 32×32 rows with exit 0, and with larger
    batches the run stopped part-way. Refused now before any row, naming the sizes; --image-size reads them."""
    import warnings

    from laya_inspect.cache.extract import extract_features
    from laya_inspect.cache.extract_config import ExtractConfig

    for c, name in (("bus", "rocket"), ("car", "coffee")):
        for i in range(20):
            save_jpg(tmp_path / "data" / c / f"{i:02d}.jpg", photo(name, (32, 32)))
    save_jpg(tmp_path / "data" / "bus" / "big.jpg", photo("astronaut", (64, 64)))
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 3)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.jit.save(torch.jit.script(net), str(tmp_path / "net.pt"))
    common = dict(model=f"torchscript:{tmp_path / 'net.pt'}", data=f"imagefolder:{tmp_path / 'data'}", device="cpu")
    common |= dict(normalize="none", batch_size=1, seed=0)  # seed 0: the photo is a training row after the 8th
    sizes = r"41 images have 2 sizes, height×width \(32×32: 40 \(e\.g\. bus/00\.jpg\), 64×64: 1 "
    with pytest.raises(InputError, match=sizes):
        extract_features(ExtractConfig(**common, out=str(tmp_path / "mixed.h5")))
    assert not list(tmp_path.glob("mixed.h5*"))
    extract_features(ExtractConfig(**common, image_size=32, out=str(tmp_path / "one.h5")))
    b = load_data(f"imagefolder:{tmp_path / 'data'}", test_fraction=0.5, seed=0)  # one row at a time: kept
    assert {tuple(x.shape[-2:]) for s in b.splits.values() for x, _, _ in s.batches(1)} == {(32, 32), (64, 64)}


# ----------------------------------------------------------------------------- broken and paged files
def _extract(root: Path, out: Path, *extra: str):
    from typer.testing import CliRunner

    from laya_inspect.cli import app

    argv = ["extract", "--model", "torchvision:mobilenet_v3_small", "--random-init", "--data", f"imagefolder:{root}"]
    argv += ["--image-size", "32", "--layers", "-1", "--batch-size", "2", "--device", "cpu", "--out", str(out)]
    return CliRunner().invoke(app, [*argv, *extra])


def test_files_that_cannot_be_opened_are_named_together_before_any_pixel_is_read(tmp_path, monkeypatch):
    """QA: a zero-byte file and a truncated JPEG each stopped extract after rows had been decoded, one
    per run. Every file whose header cannot be read is now named in one error before any pixel is
    decoded (a JPEG cut short, whose header reads, is not among them)."""
    from laya_inspect.data import images
    from laya_inspect.errors import InputError

    root = tmp_path / "photos"
    two_classes(root, n=6)
    (root / "cat" / "empty.jpg").write_bytes(b"")  # a copy that never finished
    (root / "dog" / "notes.png").write_text("not a picture")
    (root / "dog" / "noise.jpg").write_bytes(os.urandom(3000))
    cut = root / "cat" / "1.jpg"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    decoded = []
    monkeypatch.setattr(images, "read_image", lambda path, channels: decoded.append(path))
    with pytest.raises(InputError) as caught:
        load_data(f"imagefolder:{root}", test_fraction=0.5)
    said = str(caught.value)
    assert "3 of 15 image files to read cannot be opened" in said and not decoded and "\n" not in said
    assert "cat/empty.jpg (empty, 0 bytes), dog/noise.jpg (not an image PIL can identify), dog/notes.png (" in said
    assert "1.jpg" not in said and "replace or remove them" in said
    for name in ("cat/empty.jpg", "dog/notes.png", "dog/noise.jpg"):
        (root / name).unlink()
    for i in range(7):  # more than are named: the first few, and how many in all
        (root / "dog" / f"empty{i}.png").write_bytes(b"")
    with pytest.raises(InputError, match=r"7 of 19 .*dog/empty4.png \(empty, 0 bytes\), … \(7 in all\)"):
        load_data(f"imagefolder:{root}", test_fraction=0.5)
    assert load_data(f"imagefolder:{root}", test_fraction=0.5, limit=2).splits  # a --limit leaving them out
    assert not decoded


def test_extract_names_broken_files_before_any_work_and_a_file_cut_short_says_how_to_start_again(tmp_path):
    """End to end: a file whose header cannot be read stops extract before anything is written; a JPEG
    cut short stops it at its batch, and the error says to run again with --overwrite, which the
    changed folder then needs."""
    root = tmp_path / "photos"
    for split, n in (("train", 6), ("test", 2)):
        two_classes(root / split, n=n)
    (root / "test" / "dog" / "empty.png").write_bytes(b"")
    res = _extract(root, tmp_path / "f.h5")
    assert res.exit_code == 1 and "1 of 17 image files" in res.output and "test/dog/empty.png" in res.output
    assert not list(tmp_path.glob("f.h5*"))  # refused before any work: nothing to resume or overwrite
    (root / "test" / "dog" / "empty.png").unlink()
    cut = root / "train" / "dog" / "5.jpg"  # the last training row: past the rows read before the run
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    res = _extract(root, tmp_path / "f.h5")
    said = " ".join(res.output.split())
    assert res.exit_code == 1 and "dog/5.jpg': image file is truncated" in said
    assert "replace or remove the file, then run the same command again with --overwrite" in said
    assert (tmp_path / "f.h5.partial").exists()
    cut.unlink()
    res = _extract(root, tmp_path / "f.h5")
    assert res.exit_code == 1 and "--overwrite to start again" in res.output  # as said: the folder changed
    res = _extract(root, tmp_path / "f.h5", "--overwrite")
    assert res.exit_code == 0, res.output


def test_a_tiff_of_several_pages_is_read_as_its_first_and_said(tmp_path):
    """QA: a multi-page TIFF was read as its first page without a word. skimage's multipage.tif
    (2 pages, 15 × 10) is said, by name and page count; a TIFF with a thumbnail page is not."""
    import shutil

    root = tmp_path / "photos"
    two_classes(root)
    shutil.copy(Path(skdata.data_dir) / "multipage.tif", root / "dog" / "pages.tif")
    tifffile = pytest.importorskip("tifffile")  # writes the reduced-resolution flag PIL does not
    big = np.asarray(photo("chelsea"))
    tifffile.imwrite(root / "cat" / "thumbnailed.tif", big, photometric="rgb")
    tifffile.imwrite(root / "cat" / "thumbnailed.tif", big[::6, ::6], photometric="rgb", subfiletype=1, append=True)
    with Image.open(root / "cat" / "thumbnailed.tif") as im:
        assert im.n_frames == 2
    b = load_data(f"imagefolder:{root}", test_fraction=0.5)
    (said,) = [w for w in b.warnings if "several pages" in w]
    assert said == (
        f"dataset 'imagefolder:{root}': 1 file(s) hold several pages, and only the first page of each is read "
        "(e.g. dog/pages.tif, 2 pages); save each page as its own file to include the others"
    )


def test_a_file_cut_short_says_how_many_rows_were_written_before_it(tmp_path):
    """The error of a file cut short spoke of "the rows written so far" without a count; it counts them
    (the rows of the batches before the file's)."""
    root = tmp_path / "photos"
    for split, n in (("train", 6), ("test", 2)):
        two_classes(root / split, n=n)
    cut = root / "train" / "dog" / "5.jpg"  # the last training row: past the rows read before the run
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    said = " ".join(_extract(root, tmp_path / "g.h5").output.split())
    assert "dog/5.jpg': image file is truncated" in said and "the 10 rows written so far" in said, said


@pytest.mark.parametrize("colour_last", [False, True])
def test_each_files_header_is_opened_once_before_any_pixel_is_read(tmp_path, monkeypatch, colour_last):
    """A folder whose model does not say its channels: the headers read to find them (every file of a
    greyscale folder) are the ones checked before any work, not opened a second time (2,000 small
    greyscale PNGs: 4,000 opens before). The channels found are as before: 1 for a greyscale folder,
    3 when one file is in colour, even the last one listed."""
    rng = np.random.default_rng(0)
    root = tmp_path / "grey"
    for c in ("a", "b"):
        (root / c).mkdir(parents=True)
        for i in range(5):
            Image.fromarray(rng.integers(0, 255, (8, 8), dtype=np.uint8), "L").save(root / c / f"{i}.png")
    if colour_last:
        photo("coffee", (8, 8)).save(root / "b" / "9.png")
    opened: list[str] = []
    real_open = Image.open
    monkeypatch.setattr(Image, "open", lambda fp, *a, **k: opened.append(str(fp)) or real_open(fp, *a, **k))
    bundle = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0)
    files = sorted(str(p) for p in root.rglob("*.png"))
    assert sorted(set(opened)) == files and len(opened) == len(files), sorted(opened)
    x, _, _ = next(iter(bundle.splits["train"].batches(2)))
    assert x.shape[1] == (3 if colour_last else 1)


@pytest.mark.parametrize("mode", ["L", "I;16", "RGB", "F"])
@pytest.mark.parametrize("orientation", [2, 6, 7])
def test_a_turned_tiff_is_read_upright_at_its_own_depth_or_refused_never_scrambled(tmp_path, mode, orientation):
    """QA: a greyscale TIFF (8- or 16-bit) of EXIF orientation 5-8 came out of Pillow 13 in a buffer of
    the wrong shape, its pixels scrambled, and was read so with no word. Each TIFF is read as a viewer
    shows it (16-bit values / 65535, float as is, never through 8 bits), or refused by name."""
    from laya_inspect.data.images import read_image
    from laya_inspect.errors import ImageFileError

    stored = np.arange(24).reshape(4, 6)
    arr = {
        "L": (stored * 10).astype(np.uint8),
        "I;16": (stored * 2800 + 1).astype(np.uint16),  # up to 64,401: more than 8 bits
        "RGB": np.repeat((stored * 10).astype(np.uint8)[..., None], 3, axis=2),
        "F": (stored / 30).astype(np.float32),
    }[mode]
    exif = Image.Exif()
    exif[0x0112] = orientation
    path = tmp_path / "t.tif"
    Image.fromarray(arr).save(path, exif=exif.tobytes())
    grey = (arr if arr.ndim == 2 else arr[..., 0]).astype(np.float64) / (65535.0 if mode == "I;16" else 1.0)
    want = {2: grey[:, ::-1], 6: np.rot90(grey, -1), 7: grey[::-1, ::-1].T}[orientation]
    try:
        got = read_image(str(path), 1)[0].double().numpy()
    except ImageFileError as e:
        assert mode in ("L", "I;16") and str(path) in str(e) and "save it upright" in str(e), str(e)
        return
    assert got.shape == want.shape and np.allclose(got, want, atol=1e-6), (got, want)


def test_a_class_folder_named_in_two_unicode_forms_is_one_class(tmp_path):
    """QA (a CIFAR-10 folder copied from a Mac): train/café written decomposed (NFD, as macOS names
    it) and test/café composed (NFC) were two classes that print alike: every test 'café' row was of
    a class with no training rows, and the warnings named 'café' twice."""
    import unicodedata

    for part, form in (("train", "NFD"), ("test", "NFC")):
        for i, name in enumerate(PHOTOS[:2]):
            save_jpg(tmp_path / part / unicodedata.normalize(form, "café") / f"{i}.jpg", photo(name))
            save_jpg(tmp_path / part / "dog" / f"{i}.jpg", photo(PHOTOS[2 + i]))
    b = load_data(f"imagefolder:{tmp_path}")
    assert b.class_names == ["café", "dog"] and unicodedata.is_normalized("NFC", b.class_names[0])
    for split in b.splits.values():
        assert sorted(int(y) for _, ys, _ in split.batches(8) for y in ys) == [0, 0, 1, 1]
    assert not any("no rows" in w for w in b.warnings)


def test_a_file_name_with_a_newline_is_named_on_one_line(tmp_path):
    """QA: an empty file named "e\\nmpty.jpg" split the one-line error in two ("… train/dog/e" and
    "mpty.jpg (empty, 0 bytes) …"); a name that does not print is now shown quoted, with escapes."""
    from laya_inspect.errors import InputError

    root = tmp_path / "photos"
    two_classes(root, n=4)
    (root / "cat" / "e\nmpty.jpg").write_bytes(b"")
    with pytest.raises(InputError) as caught:
        load_data(f"imagefolder:{root}", test_fraction=0.5)
    said = str(caught.value)
    assert "\n" not in said and "'cat/e\\nmpty.jpg' (empty, 0 bytes)" in said


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="needs symbolic links")
def test_a_dangling_symlink_is_named_as_a_link_to_a_target_that_does_not_exist(tmp_path):
    """QA: a symlink whose target was gone was reported as "No such file or directory", though its
    name stands in the folder; the error now says it is a link, and where to."""
    from laya_inspect.errors import InputError, NotFoundError

    root = tmp_path / "photos"
    two_classes(root)
    gone = tmp_path / "moved" / "5.jpg"
    os.symlink(gone, root / "cat" / "5.jpg")
    with pytest.raises(InputError) as caught:
        load_data(f"imagefolder:{root}", test_fraction=0.5)
    said = str(caught.value)
    assert f"cat/5.jpg (a symlink to {gone}, which does not exist)" in said and "No such file" not in said
    os.symlink(tmp_path / "moved", tmp_path / "linked")
    with pytest.raises(NotFoundError, match="is a symlink to .*moved, which does not exist"):
        load_data(f"imagefolder:{tmp_path / 'linked'}", test_fraction=0.5)


# ----------------------------------------------------------------------------- colour and greyscale mixed
def test_files_converted_across_colour_are_counted_and_named(tmp_path):
    """QA: a folder mixing greyscale (skimage's camera, a photo saved as L) and colour JPEGs was read
    with each file converted to the model's channels and nothing said: greyscale photos replicated to
    RGB beside colour ones, or colour photos read by luma for a greyscale model, with no word of how many."""
    root = tmp_path / "mixed"
    save_jpg(root / "a" / "camera.jpg", Image.fromarray(skdata.camera()).resize((48, 48)))
    save_jpg(root / "a" / "astronaut_grey.jpg", photo("astronaut").convert("L"))
    for name in ("chelsea", "coffee"):
        save_jpg(root / "a" / f"{name}.jpg", photo(name))
    for name in PHOTOS[3:5]:
        save_jpg(root / "b" / f"{name}.JPG", photo(name))

    def said(channels):
        b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, input_spec=image_spec(channels))
        return [w for w in b.warnings if "image files are" in w]

    rgb, grey, own = said(3), said(1), said(None)
    assert rgb == own and len(rgb) == 1, rgb
    assert "2 of 6 image files are greyscale, replicated to RGB" in rgb[0]
    assert "a/astronaut_grey.jpg, a/camera.jpg" in rgb[0] and "chelsea" not in rgb[0]
    assert len(grey) == 1 and "4 of 6 image files are in colour, converted to greyscale by luma" in grey[0]
    assert "b/cat.JPG" in grey[0] and "camera" not in grey[0]
    # a wholly greyscale folder read as RGB is what the replication is for: nothing to say
    for f in [*root.glob("*/*.jpg"), *root.glob("*/*.JPG")]:
        Image.open(f).convert("L").save(f)
    assert said(3) == []


def image_spec(channels):
    from types import SimpleNamespace

    hw = (48, 48)
    return SimpleNamespace(
        kind="image", channels=channels, size=hw, hw=hw, mean=None, std=None, max_length=None, resize=None
    )


def test_files_with_transparency_beside_opaque_ones_are_counted_and_named(tmp_path):
    """QA: a CIFAR-like folder holding a PNG with an alpha channel (here transparent throughout, as an
    export of a mask can be) was read as a blank white image, composited on white, with no word, beside
    opaque photos; a palette PNG with a transparent colour likewise. They are now counted and named; a
    folder whose every file is transparent (icons) is read one way throughout and says nothing."""
    root = tmp_path / "clear"
    for name in PHOTOS[:4]:
        save_jpg(root / ("a" if name < "coffee" else "b") / f"{name}.jpg", photo(name))
    rgba = np.dstack([np.asarray(photo("coffee")), np.zeros((48, 48), np.uint8)])
    Image.fromarray(rgba, "RGBA").save(root / "a" / "mask.png")
    keyed = photo("rocket").convert("P")
    keyed.save(root / "b" / "keyed.png", transparency=0)

    def said():
        b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, input_spec=image_spec(3))
        return [w for w in b.warnings if "image files are" in w]

    (line,) = said()
    assert "2 of 6 image files are transparent in part or whole, composited on white" in line, line
    assert "a/mask.png, b/keyed.png" in line and "chelsea" not in line
    _, pixels, _ = all_rows(root, input_spec=image_spec(3))
    assert sum(bool((x == 1.0).all()) for x in pixels) == 1  # the mask: the blank white input said
    for f in root.glob("*/*.jpg"):
        f.unlink()
    assert said() == []


def test_files_with_no_extension_in_a_class_folder_are_said_not_to_be_read(tmp_path):
    """QA: a photo saved without an extension (as a download script may name it) beside JPEGs in a class
    folder was left out of the rows with no word, where an image in a format not read (.gif) is
    counted and named. Files with no extension are now counted and named too."""
    root = tmp_path / "bare"
    for name in PHOTOS[:4]:
        save_jpg(root / ("a" if name < "coffee" else "b") / f"{name}.jpg", photo(name))
    photo("rocket").save(root / "a" / "IMG_0412", format="JPEG")
    (root / "b" / "README").write_text("photos from the shoot")
    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0)
    assert sum(split.n for split in b.splits.values()) == 4
    (line,) = [w for w in b.warnings if "no extension" in w]
    assert "2 file(s) in the class folders have no extension and are not read (a/IMG_0412, b/README)" in line
    (root / "a" / "IMG_0412").rename(root / "a" / "IMG_0412.jpg")
    (root / "b" / "README").unlink()
    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0)
    assert sum(split.n for split in b.splits.values()) == 5 and not [w for w in b.warnings if "extension" in w]


def test_greyscale_and_rgb_files_with_a_colour_marked_transparent_are_composited_on_white(tmp_path):
    """QA: a PNG in greyscale or RGB may mark one colour transparent (a tRNS chunk) instead of carrying
    an alpha channel; such files were read with that colour as it was stored (black here) where alpha
    and palette files are composited on white, and were not named beside the opaque photos."""
    root = tmp_path / "keyed"
    for name in PHOTOS[:4]:
        save_jpg(root / ("a" if name < "coffee" else "b") / f"{name}.jpg", photo(name))
    rgb = np.asarray(photo("coffee")).copy()
    rgb[:, :24] = 0  # the left half in the colour marked transparent
    Image.fromarray(rgb, "RGB").save(root / "a" / "rgb.png", transparency=(0, 0, 0))
    grey = np.asarray(photo("rocket").convert("L")).copy()
    grey[:, :24] = 0
    Image.fromarray(grey, "L").save(root / "b" / "grey.png", transparency=0)
    deep = (grey.astype(np.uint16) * 257).astype(np.uint16)  # 16-bit greyscale, its 0 marked transparent
    Image.fromarray(deep).save(root / "b" / "deep.png", transparency=0)
    assert {Image.open(root / "b" / "deep.png").mode, Image.open(root / "a" / "rgb.png").mode} == {"I;16", "RGB"}

    b = load_data(f"imagefolder:{root}", test_fraction=0.5, seed=0, input_spec=image_spec(3))
    (line,) = [w for w in b.warnings if "transparent in part or whole" in w]
    assert "3 of 7 image files are transparent in part or whole, composited on white" in line, line
    assert "a/rgb.png, b/deep.png, b/grey.png" in line and "chelsea" not in line
    _, pixels, _ = all_rows(root, input_spec=image_spec(3))
    halves = [x for x in pixels if bool((x[:, :, :24] == 1.0).all())]
    assert len(halves) == 3  # the keyed halves read white, in 8-bit RGB, 8-bit and 16-bit greyscale
    assert all(float(x[:, :, 24:].min()) < 1.0 for x in halves)  # the rest of each file as it was


def test_a_size_in_a_message_says_which_side_is_the_height(tmp_path):
    """QA: a folder of CIFAR JPEGs with some saved 48 wide × 40 high was refused as holding "40×48"
    images, and warned of "e.g. 40×48" aspect ratios, where Pillow, file managers and `file` say 48×40
    (width first): the messages now say height×width."""
    from laya_inspect.data.headers import refuse_mixed_sizes

    for i in range(3):
        save_jpg(tmp_path / "cat" / f"{i}.jpg", photo("chelsea", (32, 32)))
    save_jpg(tmp_path / "cat" / "wide.jpg", photo("chelsea", (48, 40)))  # 48 wide, 40 high
    headers = [file_header(str(p)) for p in sorted((tmp_path / "cat").iterdir())]
    assert {h.size for h in headers} == {(32, 32), (40, 48)}  # (height, width), as the cache stores shapes
    with pytest.raises(InputError, match=r"4 images have 2 sizes, height×width \(32×32: 3 .*, 40×48: 1 "):
        refuse_mixed_sizes("imagefolder:x", str(tmp_path), headers)
    from types import SimpleNamespace

    from laya_inspect.data.checks import stretched_images

    square = SimpleNamespace(size=(32, 32), resize="stretch")
    (said,) = stretched_images("imagefolder:x", square, {}, [h.size for h in headers])
    assert "1 of 4 images read (headers only; height×width e.g. 40×48)" in said
