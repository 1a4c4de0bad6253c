"""QA (all-MiniLM-L6-v2 on Debian package descriptions): a 50,014-character row reached the model as
"[UNK] very long row" (WordPiece gives up on a word over 100 characters) and no warning said so; the
"longer than 256 tokens" one cannot, as it is four tokens. Texts that reach the model mostly as the
unknown token are now named by line."""

from __future__ import annotations

import test_unknown_tokens
from test_unknown_tokens import TEXT, _csv

from laya_inspect.data import load_data

minilm = test_unknown_tokens.minilm  # all-MiniLM-L6-v2's own tokenizer, a fixture the tests take by name


def test_a_text_whose_characters_are_mostly_one_unknown_token_is_named_by_line(minilm, tmp_path):
    blob = "x" * 50000 + " very long row"
    assert minilm.convert_ids_to_tokens(minilm(blob)["input_ids"]) == ["[CLS]", "[UNK]", "very", "long", "row", "[SEP]"]
    rows = [
        ("a good movie", 1, "train"),
        (blob, 0, "train"),
        ("A tool: " + "QUJD" * 300 + " end", 1, "train"),  # base64 pasted into a description
        ("a good movie 🎵", 1, "train"),  # one unknown character among known words: read
        ("the cat sat on the mat", 0, "test"),
    ]
    spec = _csv(tmp_path / "t.csv", rows)
    said = [w for w in load_data(spec, input_spec=TEXT, tokenizer=minilm).warnings if "mostly as" in w]
    assert said == [
        f"dataset {spec!r}: 2 of 4 texts of split 'train' reach the model mostly as the unknown token [UNK] "
        "(lines 3, 4; at line 3 50,000 of its 50,011 characters): a run the tokenizer cannot split (a word over "
        "its length limit, an encoded blob, a script it lacks) becomes one token, and their features describe the "
        "few words left; clean those texts or remove those rows"
    ]


def test_one_such_text_is_named_once(minilm, tmp_path):
    rows = [("a good movie", 1, "train"), ("y" * 300 + " ok", 0, "train"), ("a bad movie", 0, "test")]
    spec = _csv(tmp_path / "t.csv", rows)
    (said,) = [w for w in load_data(spec, input_spec=TEXT, tokenizer=minilm).warnings if "mostly as" in w]
    assert "1 of 2 texts of split 'train'" in said and "[UNK] (line 3: 300 of its 302 characters)" in said, said


def test_texts_the_tokenizer_reads_draw_no_such_warning(minilm, tmp_path):
    rows = [("a good movie 🎵", 1, "train"), ("the cat sat", 0, "train"), ("a bad movie", 0, "test")]
    spec = _csv(tmp_path / "t.csv", rows)
    assert not [w for w in load_data(spec, input_spec=TEXT, tokenizer=minilm).warnings if "unknown" in w]
