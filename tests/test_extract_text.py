"""Text through a Hugging Face encoder: features of a text do not depend on its batch's padding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laya_inspect.cache.extract import ExtractConfig, extract_features
from laya_inspect.cache.store import FeatureStore
from laya_inspect.errors import InputError

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "a",
    "cat",
    "sat",
    "on",
    "mat",
    "good",
    "bad",
    "movie",
    "was",
    "very",
    "not",
]
TEXTS = [
    ("the cat sat on the mat", 0),
    ("good movie", 1),
    ("the movie was very very bad", 0),
    ("not bad", 1),
    ("a cat", 0),
    ("the movie was good", 1),
    ("bad", 0),
    ("very good movie", 1),
]


@pytest.fixture(scope="module")
def text_setup(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("bert")
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(d))
    config = transformers.BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    model.save_pretrained(d / "model")
    tokenizer.save_pretrained(d / "model")
    rows = "".join(f'"{t}",{y},{"test" if i % 2 else "train"}\n' for i, (t, y) in enumerate(TEXTS))
    (d / "t.csv").write_text("text,label,split\n" + rows)
    return d, model, tokenizer


@pytest.mark.parametrize("pool", ["mean", "cls", "max", "last"])
def test_pooled_text_features_ignore_padding(text_setup, tmp_path, pool):
    d, model, tokenizer = text_setup
    out = tmp_path / "t.h5"
    extract_features(
        ExtractConfig(
            model=f"hf:{d / 'model'}",
            data=f"csv:{d / 't.csv'}",
            out=str(out),
            layers="-1",
            pool=pool,
            batch_size=4,
            device="cpu",
        )
    )
    with FeatureStore(out) as store:
        feats, index = store.layer("train", 0), store.index("train")
    for row, i in zip(feats, index):
        enc = tokenizer(TEXTS[i][0], return_tensors="pt")  # alone: no padding at all
        with torch.no_grad():
            h = model(**enc).last_hidden_state[0]  # (T, D)
        want = {"mean": h.mean(0), "cls": h[0], "max": h.amax(0), "last": h[-1]}[pool]
        np.testing.assert_allclose(row, want.numpy(), rtol=1e-4, atol=1e-5)


def test_flatten_refused_for_text(text_setup, tmp_path):
    d, _, _ = text_setup
    with pytest.raises(InputError, match="flatten"):
        extract_features(
            ExtractConfig(
                model=f"hf:{d / 'model'}",
                data=f"csv:{d / 't.csv'}",
                out=str(tmp_path / "t.h5"),
                pool="flatten",
                device="cpu",
            )
        )


def test_texts_longer_than_the_models_max_length_are_a_warning(text_setup):
    """Texts beyond max_length tokens were cut with no word; the warning counts them per split."""
    from types import SimpleNamespace

    from laya_inspect.data import load_data

    d, _, tokenizer = text_setup
    spec = SimpleNamespace(kind="text", channels=None, size=None, mean=None, std=None, max_length=6)
    b = load_data(f"csv:{d / 't.csv'}", input_spec=spec, tokenizer=tokenizer)
    said = [w for w in b.warnings if "longer than" in w]
    # train: "the cat sat on the mat" and "the movie was very very bad" are 8 tokens with [CLS] and [SEP]
    assert said == [
        f"dataset 'csv:{d / 't.csv'}': 2 of 4 texts of split 'train' are longer than 6 tokens (the longest 8); "
        "the model reads only their first 6"
    ]
    roomy = SimpleNamespace(**{**vars(spec), "max_length": 8})
    assert not [
        w for w in load_data(f"csv:{d / 't.csv'}", input_spec=roomy, tokenizer=tokenizer).warnings if "longer" in w
    ]
