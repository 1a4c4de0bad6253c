"""data/: properties. Whatever the spec string or the file's content, ``load_data`` either gives a
bundle whose batches can be read, or raises the project's LayaError: never another exception."""

from __future__ import annotations

import io
import json
import string
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from laya_inspect.data import DATASETS, DataBundle, load_data
from laya_inspect.data.words import WordVocab
from laya_inspect.errors import LayaError

FAST = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
TOKENS = SimpleNamespace(kind="tokens", channels=None, size=None, mean=None, std=None, max_length=8)
VOCAB = WordVocab(("good", "bad", "a"))


def loads_or_refuses(spec: str, **kw) -> DataBundle | None:
    """The property: a bundle whose every split yields a batch, or a LayaError (one line); never
    anything else. Returns the bundle, or None when refused."""
    try:
        bundle = load_data(spec, **kw)
        for split in bundle.splits.values():
            assert split.n > 0 and set(split.labels.tolist()) <= set(range(bundle.num_classes))
            next(split.batches(8))  # image files are read here: a broken one is refused here
    except LayaError as e:
        assert str(e) and "\n" not in str(e)
        return None
    assert isinstance(bundle.warnings, list) and all(isinstance(w, str) and "\n" not in w for w in bundle.warnings)
    assert bundle.num_classes >= 2
    json.dumps(bundle.transforms)
    return bundle


# ----------------------------------------------------------------------------- spec strings
@pytest.fixture(scope="module")
def valid_files(tmp_path_factory) -> dict[str, str]:
    """One valid file of each kind, so that generated specs also reach the loading paths."""
    from PIL import Image

    root = tmp_path_factory.mktemp("valid")
    np.savez(root / "v.npz", X=np.random.default_rng(0).random((12, 3)), y=np.arange(12) % 3)
    (root / "t.csv").write_text(
        "text,label,split\n" + "".join(f"good a,{i % 2},{'train' if i < 6 else 'test'}\n" for i in range(10))
    )
    (root / "t.jsonl").write_text("".join(json.dumps({"text": "bad", "label": i % 2}) + "\n" for i in range(10)))
    for cls in ("a", "b"):
        (root / "imgs" / cls).mkdir(parents=True)
        for i in range(2):
            Image.fromarray(np.full((4, 4, 3), 60 * i, dtype=np.uint8)).save(root / "imgs" / cls / f"{i}.png")
    return {
        "npz": str(root / "v.npz"),
        "csv": str(root / "t.csv"),
        "jsonl": str(root / "t.jsonl"),
        "imagefolder": str(root / "imgs"),
    }


PATHLIKE = st.text(alphabet=string.ascii_letters + string.digits + "._-~ /\\:?&=%", max_size=30)
QUERY = st.one_of(
    st.just(""),
    st.sampled_from(["?text_col=text", "?split_col=nope", "?x=1"]),
    st.text(alphabet=string.ascii_letters + "=&?_ ", max_size=20).map(lambda q: "?" + q),
)


VALID_SPEC = st.tuples(
    st.sampled_from(["npz", "csv", "jsonl", "imagefolder", "digits"]),
    st.sampled_from(["", "", "", "?split_col=split", "?text_col=text&label_col=label", "?split_col=nope"]),
)
ANY_SPEC = st.tuples(
    st.sampled_from([*DATASETS.names(), "", "mnist", "NPZ", " csv"]),
    st.sampled_from([":", "", "::"]),
    PATHLIKE,
    QUERY,
)


@FAST
@given(case=st.one_of(VALID_SPEC, ANY_SPEC))
def test_any_spec_string_loads_or_is_a_laya_error(tmp_path_factory, valid_files, case):
    if len(case) == 2:  # a valid spec, maybe with options its kind does not take
        kind, query = case
        spec = f"{kind}{query}" if kind == "digits" else f"{kind}:{valid_files[kind]}{query}"
    else:
        prefix, colon, path, query = case
        assume(".." not in path and not path.lstrip().startswith(("/", "~", "\\")))
        kind = prefix.strip().lower()
        arg = f"{tmp_path_factory.getbasetemp()}/specs/{path}"  # paths stay inside the tests' own folder
        if kind in ("fashion-mnist", "cifar10"):
            arg = f"{tmp_path_factory.getbasetemp()}/absent"  # never the real (large) datasets
        spec = f"{prefix}{colon}{arg}{query}"
    text = kind in ("csv", "jsonl")
    loads_or_refuses(
        spec, splits=("test",), limit=4, input_spec=TOKENS if text else None, tokenizer=VOCAB if text else None
    )


# ----------------------------------------------------------------------------- npz content
DTYPES = st.sampled_from(["uint8", "int64", "float32", "float64", "bool", "U2", "complex64", "int8", "float16"])


def arrays(max_rows: int = 12):
    shape = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=max_rows)
    return DTYPES.flatmap(lambda dt: hnp.arrays(np.dtype(dt), shape))


KEYS = st.sampled_from(["X", "y", "X_train", "y_train", "X_test", "y_test", "class_names", "x", "Y", "other"])


@FAST
@given(content=st.dictionaries(KEYS, arrays(), max_size=5))
def test_any_npz_content_loads_or_is_a_laya_error(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("npz") / "data.npz"
    np.savez(path, **content)
    loads_or_refuses(f"npz:{path}", limit=6)
    loads_or_refuses(f"npz:{path}", allow_nonfinite=True, input_spec=SimpleNamespace(kind="image", channels=3, size=4))


LABELS = st.one_of(
    st.lists(st.integers(0, 3), min_size=1, max_size=30),  # class indices
    st.lists(st.sampled_from(["cat", "dog", "cow"]), min_size=1, max_size=30),  # words
    st.lists(st.integers(-3, 12), min_size=1, max_size=30),  # some negative or beyond the names
    st.lists(st.one_of(st.integers(0, 3), st.sampled_from(["cat", "dog"])), min_size=1, max_size=30),  # mixed
)


@FAST
@given(
    n=st.integers(2, 30),
    width=st.integers(1, 6),
    labels=LABELS,
    names=st.one_of(
        st.none(), st.none(), st.lists(st.sampled_from(["cat", "dog", "cow", "0"]), max_size=4, unique=True)
    ),
    nan_at=st.one_of(st.none(), st.none(), st.integers(0, 29)),
)
def test_shaped_npz_loads_its_labels_exactly_or_is_a_laya_error(tmp_path_factory, n, width, labels, names, nan_at):
    """Closer to real files than arbitrary arrays: when (N, D) features load, every row keeps its own label."""
    x = np.random.default_rng(0).random((n, width))
    if nan_at is not None and nan_at < n:
        x[nan_at, 0] = np.nan
    raw = (labels * n)[:n]
    y = np.array([str(v) for v in raw]) if any(isinstance(v, str) for v in raw) else np.array(raw)
    arrays = {"X": x, "y": y, **({"class_names": np.array(names, dtype=str)} if names is not None else {})}
    path = tmp_path_factory.mktemp("npz") / "shaped.npz"
    np.savez(path, **arrays)
    bundle = loads_or_refuses(f"npz:{path}")
    if bundle is None:
        return
    for split in bundle.splits.values():
        got = [bundle.class_names[c] for c in split.labels]
        want = [names[int(v)] if names and y.dtype.kind == "i" else str(v) for v in y[split.index]]
        assert got == want
        feats, _, idx = next(split.batches(64))
        assert np.allclose(feats.numpy(), x[idx.numpy()].astype(np.float32))


# ----------------------------------------------------------------------------- csv and jsonl content
CELL = st.one_of(st.text(max_size=8), st.integers(-5, 20).map(str), st.sampled_from(["good", "bad", "nan", "", '"']))
GOOD_TABLE = st.lists(  # header text,label,split and rows a loader should take
    st.tuples(st.sampled_from(["good", "bad a", "", "a, b"]), st.sampled_from(["0", "1", "2"]), st.just("train")),
    min_size=4,
    max_size=14,
)
ANY_TABLE = st.lists(st.lists(CELL, max_size=4), max_size=14)


@FAST
@given(
    table=st.one_of(GOOD_TABLE, ANY_TABLE, st.binary(max_size=60)),
    header=st.sampled_from([["text", "label", "split"], ["text", "label"], ["review", "label", "x"], []]),
    query=st.sampled_from(["", "", "?text_col=review", "?split_col=split", "?label_col=x"]),
)
def test_any_csv_content_loads_or_is_a_laya_error(tmp_path_factory, table, header, query):
    import csv

    path = tmp_path_factory.mktemp("csv") / "data.csv"
    if isinstance(table, bytes):
        path.write_bytes(table)
    else:
        out = io.StringIO()
        csv.writer(out).writerows([header, *table])
        path.write_text(out.getvalue(), encoding="utf-8")
    split = "train" if "split" in header and query in ("", "?split_col=split") else "train,test"
    loads_or_refuses(f"csv:{path}{query}", splits=split, input_spec=TOKENS, tokenizer=VOCAB)


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.floats(allow_nan=True), st.text(max_size=6)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
GOOD_RECORD = st.fixed_dictionaries({"text": st.sampled_from(["good", "bad a", ""]), "label": st.integers(0, 2)})
RECORD = st.fixed_dictionaries(
    {}, optional={"text": JSON_VALUES, "label": JSON_VALUES, "split": st.sampled_from(["train", "test", 3])}
)


@FAST
@given(
    lines=st.one_of(
        st.lists(GOOD_RECORD.map(json.dumps), min_size=4, max_size=14),
        st.lists(
            st.one_of(
                GOOD_RECORD.map(json.dumps), RECORD.map(json.dumps), JSON_VALUES.map(json.dumps), st.text(max_size=20)
            ),
            max_size=14,
        ),
    )
)
def test_any_jsonl_content_loads_or_is_a_laya_error(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("jsonl") / "data.jsonl"
    path.write_text("\n".join(line.replace("\n", " ").replace("\r", " ") for line in lines), encoding="utf-8")
    loads_or_refuses(f"jsonl:{path}", input_spec=TOKENS, tokenizer=VOCAB)


# ----------------------------------------------------------------------------- image files
@FAST
@given(
    blobs=st.lists(st.binary(min_size=0, max_size=200), min_size=1, max_size=4),
    keep_png_header=st.booleans(),
)
def test_any_image_file_bytes_load_or_are_a_laya_error(tmp_path_factory, blobs, keep_png_header):
    from PIL import Image

    root = tmp_path_factory.mktemp("imgs")
    good = io.BytesIO()
    Image.fromarray(np.arange(48, dtype=np.uint8).reshape(4, 4, 3)).save(good, format="PNG")
    for cls in ("a", "b"):
        Path(root / cls).mkdir()
        (root / cls / "good.png").write_bytes(good.getvalue())
        for i, blob in enumerate(blobs):
            data = good.getvalue()[:16] + blob if keep_png_header else blob
            (root / cls / f"blob{i}.png").write_bytes(data)
    loads_or_refuses(f"imagefolder:{root}", input_spec=SimpleNamespace(kind="image", channels=3, size=4))


@pytest.mark.parametrize("mode", ["1", "L", "LA", "P", "RGB", "RGBA", "CMYK", "I;16", "I", "F", "YCbCr", "HSV"])
def test_every_pil_mode_becomes_one_or_three_channels(tmp_path, mode):
    from PIL import Image

    arr = np.random.default_rng(0).integers(0, 256, (6, 5, 3), dtype=np.uint8)
    im = Image.fromarray(arr).convert(mode) if mode not in ("I;16", "I", "F") else None
    if mode in ("I;16", "I"):
        im = Image.fromarray(arr[..., 0].astype(np.uint16) * 257)
    if mode == "F":
        im = Image.fromarray(arr[..., 0].astype(np.float32) / 255)
    ext = "tif" if mode in ("CMYK", "F", "I", "YCbCr", "HSV") else "png"
    if mode == "I":
        im = im.convert("I")
    if mode in ("YCbCr", "HSV"):
        ext = "tif" if mode == "YCbCr" else "png"
    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        try:
            im.save(tmp_path / cls / f"img.{ext}")
        except (OSError, KeyError, ValueError):
            pytest.skip(f"PIL cannot save mode {mode} as .{ext}")
    try:
        with Image.open(tmp_path / "a" / f"img.{ext}") as back:
            back.load()
    except OSError:  # Pillow 9.1 writes a YCbCr TIFF it then calls truncated (laya-inspect refuses it too)
        pytest.skip(f"PIL cannot read back its own mode {mode} .{ext}")
    for channels in (1, 3):
        b = load_data(
            f"imagefolder:{tmp_path}", test_fraction=0.5, input_spec=SimpleNamespace(kind="image", channels=channels)
        )
        x, _, _ = next(b.splits["train"].batches(1))
        assert x.shape == (1, channels, 6, 5) and x.dtype.is_floating_point
        assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
