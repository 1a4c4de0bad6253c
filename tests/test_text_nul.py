"""A NUL character in a text table: a warning naming its lines, recorded in the cache, because BERT's
tokenizer deletes it and joins the words around it; a header of NULs (a UTF-16 file) is refused."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import tiny_bert

from laya_inspect.cache.extract import ExtractConfig, extract_features
from laya_inspect.cache.store import FeatureStore
from laya_inspect.data import load_data
from laya_inspect.data.words import WordVocab
from laya_inspect.errors import InputError

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "good", "bad", "movie"]
# the word vocabulary of zoo:bilstm, which splits a text at a NUL
TOKENS = SimpleNamespace(kind="tokens", channels=None, size=None, mean=None, std=None, max_length=8)
WORDS = WordVocab(("a", "b"))
ROWS = ["the cat,0", "good movie,1", '"cat\x00sat",0', "bad movie,0", "the movie,1", "good cat,1", "sat,0", "bad,1"]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("bert")
    _, tokenizer = tiny_bert(d, VOCAB)
    return d, tokenizer


def test_a_nul_inside_a_text_is_a_warning_in_the_cache(bert, tmp_path: Path) -> None:
    """("a\\x00b", a) went through with no word; BERT's tokenizer reads "cat\\x00sat" as one unknown word."""
    d, tokenizer = bert
    assert tokenizer.tokenize("cat\x00sat") == ["[UNK]"] and tokenizer.tokenize("cat sat") == ["cat", "sat"]
    (tmp_path / "t.csv").write_text("text,label\n" + "\n".join(ROWS) + "\n", encoding="utf-8")
    out = tmp_path / "t.h5"
    result = extract_features(
        ExtractConfig(model=f"hf:{d / 'model'}", data=f"csv:{tmp_path / 't.csv'}", out=str(out), device="cpu")
    )
    with FeatureStore(out) as store:
        said = [w for w in store.attrs["warnings"] if "NUL character" in w]
    assert len(said) == 1 and said == [w for w in result.warnings if "NUL character" in w]
    assert "1 of 8 rows hold a NUL character in their text (column 'text'; line 4)" in said[0]
    assert "replace it with a space or remove those rows" in said[0]


def test_a_nul_in_a_jsonl_text_is_said_and_a_clean_table_says_nothing(tmp_path: Path) -> None:
    lines = [f'{{"text": "{t}", "label": {i % 2}}}' for i, t in enumerate(["a", "b", "c\\u0000d", "e"] * 3)]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    b = load_data(f"jsonl:{tmp_path / 't.jsonl'}", input_spec=TOKENS, tokenizer=WORDS)
    (said,) = [w for w in b.warnings if "NUL character" in w]
    assert "3 of 12 rows" in said and "line 3, 7, 11" in said
    (tmp_path / "clean.csv").write_text("text,label\n" + "\n".join(["a,0", "b,1"] * 4) + "\n")
    assert not [
        w for w in load_data(f"csv:{tmp_path / 'clean.csv'}", input_spec=TOKENS, tokenizer=WORDS).warnings if "NUL" in w
    ]


def test_a_utf16_table_is_refused_as_utf16_not_as_a_missing_column(tmp_path: Path) -> None:
    """A UTF-16 file without a byte-order mark decodes as UTF-8 with a NUL after every ASCII character:
    the error was "no column 'text'; did you mean 't\\x00e\\x00x\\x00t\\x00'?"."""
    (tmp_path / "u.csv").write_bytes("text,label\ngood,pos\nbad,neg\n".encode("utf-16-le"))
    with pytest.raises(InputError, match=r"u\.csv:1: the header holds NUL bytes .* saved as UTF-16"):
        load_data(f"csv:{tmp_path / 'u.csv'}", input_spec=TOKENS, tokenizer=WORDS)
