"""data/: the image transform (exact numbers, PIL agreement) and csv/jsonl text tables."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from PIL import Image

from laya_inspect.data import load_data, plan_image_transform
from laya_inspect.data.transforms import IMAGENET_MEAN, IMAGENET_STD, LUMA, tokenizer_digest
from laya_inspect.errors import InputError


def spec(**kw):
    base = dict(kind="image", channels=None, size=None, mean=None, std=None, max_length=None)
    return SimpleNamespace(**{**base, **kw})


GRAY = {"channels": 1, "size": (2, 2), "scale": "uint8/255"}
RGB = {"channels": 3, "size": (2, 2), "scale": "uint8/255"}


# ----------------------------------------------------------------------------- image transform
def test_raw_images_only_scaled():
    t = plan_image_transform(GRAY)
    x = torch.tensor([[[[0, 51], [255, 102]]]], dtype=torch.uint8)
    assert torch.equal(t(x), torch.tensor([[[[0.0, 0.2], [1.0, 0.4]]]]))
    assert t.describe() == {
        "kind": "image",
        "scale": "uint8/255",
        "channels": None,
        "resize": None,
        "normalize": {
            "applied": False,
            "mean": None,
            "std": None,
            "from": "no model",
            "why": "none: no model given",
        },
        "output": [1, 2, 2],
    }
    f = torch.rand(2, 1, 2, 2)
    assert torch.equal(plan_image_transform({**GRAY, "scale": "none"})(f), f)  # floats kept as is


def test_gray_to_rgb_and_normalise_exact():
    t = plan_image_transform(GRAY, input_spec=spec(channels=3, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25)))
    x = torch.tensor([[[[0, 255], [51, 102]]]], dtype=torch.uint8)
    out = t(x)
    want = torch.tensor([[-2.0, 2.0], [-1.2, -0.4]])
    assert out.shape == (1, 3, 2, 2)
    for c in range(3):
        assert torch.allclose(out[0, c], want, atol=1e-6)
    d = t.describe()
    assert d["channels"] == {"from": 1, "to": 3, "how": "replicate"}
    assert d["normalize"] == {"applied": True, "mean": [0.5] * 3, "std": [0.25] * 3, "from": "model"}


def test_rgb_to_gray_luminance_exact():
    t = plan_image_transform(RGB, input_spec=spec(channels=1))
    x = torch.zeros(1, 3, 2, 2, dtype=torch.uint8)
    x[0, 0, 0, 0] = 255  # pure red
    x[0, 1, 0, 1] = 255  # pure green
    x[0, 2, 1, 0] = 255  # pure blue
    x[0, :, 1, 1] = 255  # white
    out = t(x)
    assert out.shape == (1, 1, 2, 2)
    assert torch.allclose(out[0, 0], torch.tensor([[LUMA[0], LUMA[1]], [LUMA[2], sum(LUMA)]]), atol=1e-6)


def test_normalize_option_overrides_model():
    x = torch.full((1, 3, 2, 2), 255, dtype=torch.uint8)
    t = plan_image_transform(RGB, input_spec=spec(mean=(0.5,) * 3, std=(0.5,) * 3), normalize="imagenet")
    want = [(1 - m) / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD)]
    assert torch.allclose(t(x)[0, :, 0, 0], torch.tensor(want), atol=1e-6)
    assert t.describe()["normalize"]["from"] == "imagenet"
    half = spec(mean=(0.5,) * 3, std=(0.5,) * 3)
    assert plan_image_transform(RGB, input_spec=half, normalize="none").mean is None
    t = plan_image_transform(RGB, normalize=(0.5, 2.0))  # one number for every channel
    assert torch.allclose(t(x), torch.full((1, 3, 2, 2), 0.25))
    with pytest.raises(InputError, match="did you mean 'imagenet'"):
        plan_image_transform(RGB, normalize="imagenett")
    with pytest.raises(InputError, match="3 channels"):
        plan_image_transform(RGB, normalize=((0.5, 0.5), (1.0, 1.0)))


def test_resize_matches_pil_bilinear():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (32, 32), dtype=np.uint8)
    t = plan_image_transform({"channels": 1, "size": (32, 32)}, image_size=16)
    ours = t(torch.from_numpy(img)[None, None])[0, 0].numpy()
    ref = np.asarray(Image.fromarray(img.astype(np.float32) / 255, mode="F").resize((16, 16), Image.BILINEAR))
    assert ours.shape == (16, 16)
    assert np.abs(ours - ref).max() < 1e-3  # torch's antialiased bilinear follows PIL's
    t = plan_image_transform({"channels": 1, "size": (4, 4)}, input_spec=spec(size=32), image_size=(6, 10))
    const = torch.full((2, 1, 4, 4), 0.3)
    assert torch.allclose(t(const), torch.full((2, 1, 6, 10), 0.3), atol=1e-6)  # image_size wins
    assert t.describe()["resize"] == {
        "from": [4, 4],
        "to": [6, 10],
        "mode": "bilinear",
        "antialias": True,
        "fit": "stretch",
    }


def test_resize_crop_keeps_aspect_like_torchvision_eval():
    tvf = pytest.importorskip("torchvision.transforms.v2.functional")
    x = torch.rand(2, 3, 32, 48)
    t = plan_image_transform({"channels": 3, "size": (32, 48), "scale": "none"}, image_size=14, resize="crop")
    # torchvision's recipe at this scale: shorter side to 14 / 0.875 = 16, then the centre 14 × 14
    ref = tvf.center_crop(tvf.resize(x, [16], antialias=True), [14, 14])
    assert torch.allclose(t(x), ref, atol=1e-5)
    stretched = plan_image_transform({"channels": 3, "size": (32, 48), "scale": "none"}, image_size=14)(x)
    assert not torch.allclose(stretched, ref, atol=1e-2)
    assert t.describe()["resize"]["fit"] == "crop" and t.describe()["resize"]["crop_fraction"] == 0.875
    with pytest.raises(InputError, match="resize crop needs a target size"):
        plan_image_transform(RGB, resize="crop")
    with pytest.raises(InputError, match="resize must be one of stretch, crop"):
        plan_image_transform(RGB, image_size=4, resize="pad")


def test_rgba_and_impossible_channels():
    t = plan_image_transform({"channels": 4, "size": (1, 1)}, input_spec=spec(channels=3))
    x = torch.tensor([[[[255]], [[0]], [[0]], [[9]]]], dtype=torch.uint8)
    assert torch.equal(t(x), torch.tensor([[[[1.0]], [[0.0]], [[0.0]]]]))
    assert t.describe()["channels"]["how"] == "drop alpha"
    with pytest.raises(InputError, match="cannot turn 3-channel images into 2"):
        plan_image_transform(RGB, input_spec=spec(channels=2))


# ----------------------------------------------------------------------------- text tables
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "movie", "was", "good", "bad", "great"]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("tok")
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    # from a folder: the constructor's vocab argument changed name between transformers 4 and 5
    return transformers.BertTokenizerFast.from_pretrained(str(folder), do_lower_case=True)


def ids(*words):
    return [VOCAB.index(w) for w in words]


def _load_text_csv(path, columns, rows, tokenizer):
    """Write ``rows`` (text, label) under the header ``columns`` (text column, label column), each text
    quoted, and load the file as a text dataset with the test tokenizer."""
    text_col, label_col = columns
    path.write_text(f"{text_col},{label_col}\n" + "".join(f'"{t}",{lab}\n' for t, lab in rows))
    return load_data(
        f"csv:{path}?text_col={text_col}&label_col={label_col}",
        tokenizer=tokenizer,
        input_spec=spec(kind="text", max_length=8),
        seed=0,
    )


def test_csv_words_labels_seeded_split(tmp_path, tokenizer):
    rows = [("the movie was good", "pos"), ("the movie was bad", "neg")] * 5
    b = _load_text_csv(tmp_path / "reviews.csv", ("review", "sentiment"), rows, tokenizer)
    assert b.kind == "text" and b.class_names == ["neg", "pos"]
    assert b.split_info["method"] == "stratified" and (b.splits["train"].n, b.splits["test"].n) == (8, 2)
    assert sorted(b.splits["test"].labels.tolist()) == [0, 1]
    enc, y, idx = next(b.splits["test"].batches(2))
    # padded to the batch's longest text (6 tokens), not to max_length
    assert set(enc) >= {"input_ids", "attention_mask"} and enc["input_ids"].shape == (2, 6)
    for k in range(2):
        last = "good" if int(idx[k]) % 2 == 0 else "bad"
        assert int(y[k]) == (1 if last == "good" else 0)
        want = ids("[CLS]", "the", "movie", "was", last, "[SEP]")
        assert enc["input_ids"][k].tolist() == want
        assert enc["attention_mask"][k].tolist() == [1] * 6
    assert b.transforms == {
        "kind": "text",
        "tokenizer": type(tokenizer).__name__,
        "name_or_path": tokenizer.name_or_path,
        "sha256": tokenizer_digest(tokenizer),  # what the tokenizer does, whatever its path
        "max_length": 8,
        "padding": "longest",
        "truncation": True,
    }
    assert len(b.transforms["sha256"]) == 16
    json.dumps(b.transforms), json.dumps(b.split_info)  # JSON-able, as the feature cache stores them


def test_jsonl_split_column_int_labels_and_truncation(tmp_path, tokenizer):
    recs = [
        {"text": "great " * 20, "label": 2, "split": "train"},
        {"text": "the movie", "label": 0, "split": "train"},
        {"text": "bad", "label": 0, "split": "test"},
        {"text": "good movie", "label": 2, "split": "test"},
    ]
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n\n")
    b = load_data(f"jsonl:{path}", tokenizer=tokenizer, splits=("train", "test"))
    assert b.class_names == ["0", "1", "2"] and b.split_info["method"] == "native"
    assert b.splits["test"].index.tolist() == [2, 3] and b.splits["test"].labels.tolist() == [0, 2]
    enc, _, _ = next(b.splits["train"].batches(2))
    assert enc["input_ids"].shape == (2, 22)  # the longest text, well under the default max_length
    assert int(enc["attention_mask"][0].sum()) == 22 and int(enc["attention_mask"][1].sum()) == 4
    enc, _, _ = next(b.splits["test"].batches(2))
    assert enc["input_ids"][1, :4].tolist() == ids("[CLS]", "good", "movie", "[SEP]")


def test_text_errors(tmp_path, tokenizer):
    path = tmp_path / "t.csv"
    path.write_text("text,label\nthe movie,1\nbad,0\ngood,1\nthe,0\n")
    with pytest.raises(InputError, match="needs a tokenizer, i.e. an hf: text model"):
        load_data(f"csv:{path}")
    with pytest.raises(InputError, match="model takes images"):
        load_data(f"csv:{path}", tokenizer=tokenizer, input_spec=spec(kind="image"))
    with pytest.raises(InputError, match="no option 'text'; did you mean 'text_col'"):
        load_data(f"csv:{path}?text=review", tokenizer=tokenizer)
    with pytest.raises(InputError, match="no column 'review' for text_col.*available: text, label"):
        load_data(f"csv:{path}?text_col=review", tokenizer=tokenizer)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a", "label": 1}\n{oops\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:2: not JSON"):
        load_data(f"jsonl:{bad}", tokenizer=tokenizer)
    with pytest.raises(InputError, match="image size, resize and normalize do not apply"):
        load_data(f"csv:{path}", tokenizer=tokenizer, image_size=32)
    with pytest.raises(InputError, match="image size, resize and normalize do not apply"):
        load_data(f"csv:{path}", tokenizer=tokenizer, resize="crop")


@pytest.mark.parametrize("missing", ["NaN", "nan", "NA", "NULL", "N/A"])
def test_a_missing_label_word_is_refused_naming_the_file_and_lines(tmp_path, tokenizer, missing):
    """QA: a CSV label NaN became a class called 'NaN' (only a later "no rows in test" hinted at it)."""
    rows = [("the movie was good", "pos"), ("the movie was bad", "neg")] * 5 + [("the movie was", missing)] * 2
    path = tmp_path / "reviews.csv"
    with pytest.raises(InputError) as e:
        _load_text_csv(path, ("review", "sentiment"), rows, tokenizer)
    said = str(e.value)
    assert str(path) in said and "2 of 12 rows have no class" in said
    assert f"{missing!r} at line 12" in said and f"{missing!r} at line 13" in said


def test_a_class_named_none_is_a_class_not_a_missing_label(tmp_path, tokenizer):
    """Review: "none" was refused as a missing value, so a severity column none/minor/severe that had
    loaded before could not be read at all; it is a word a real class is often named."""
    rows = [("it is fine", "none"), ("a small dent", "minor"), ("it is broken", "severe")] * 6
    bundle = _load_text_csv(tmp_path / "damage.csv", ("text", "severity"), rows, tokenizer)
    assert bundle.class_names == ["minor", "none", "severe"]
