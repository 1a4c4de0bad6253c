"""A text encoder on messy real-ish files, as a user runs it: what extract says of the texts it read."""

from __future__ import annotations

import json

import pytest
from helpers import settings_said, tiny_bert
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app

runner = CliRunner()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "movie", "very", "not"]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("bert")
    tiny_bert(d, VOCAB, layers=1, max_position_embeddings=16)  # the tokenizer takes the model's 16 positions
    return d / "model"


def _extract(bert, tmp_path, rows: list[tuple[str, str]]):
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps({"text": t, "label": y, "split": s}) + "\n" for t, (y, s) in rows))
    out = tmp_path / "f.h5"
    args = ["extract", "--model", f"hf:{bert}", "--data", f"jsonl:{data}", "--out", str(out), "--device", "cpu"]
    result = runner.invoke(app, args, env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    with FeatureStore(out) as store:
        return result.output, store.attrs["transforms"], list(store.attrs["warnings"])


def _rows(texts: list[str]) -> list[tuple[str, tuple[str, str]]]:
    return [(t, ("pos" if i % 2 else "neg", "test" if i % 3 == 2 else "train")) for i, t in enumerate(texts)]


def test_extract_says_texts_are_cut_at_the_models_length_and_records_it(bert, tmp_path):
    """The settings line names the token limit left at its default ("texts cut at 16 tokens"), and the
    texts it cut are a warning printed and kept in the cache, which records the limit itself."""
    long = " ".join(["very"] * 30) + " good movie"  # 32 words + [CLS] and [SEP]
    output, transforms, warnings = _extract(bert, tmp_path, _rows([long, "good movie", "bad movie", "not bad"] * 2))
    assert "texts cut at 16 tokens" in settings_said(output).split("; left at their defaults: ")[1]
    assert transforms["max_length"] == 16
    cut = [w for w in warnings if "longer than 16 tokens" in w]
    assert cut == [
        f"dataset 'jsonl:{tmp_path / 't.jsonl'}': 2 of 6 texts of split 'train' are longer than 16 tokens "
        "(the longest 34); the model reads only their first 16"
    ]
    assert "longer than 16 tokens" in " ".join(output.split())


def test_texts_of_only_invisible_characters_are_empty_ones(bert, tmp_path):
    """QA (all-MiniLM-L6-v2): a text of zero-width spaces or a stray byte-order mark, which str.strip
    keeps, tokenises to [CLS] [SEP] alone, the empty string's features, and was read with no word."""
    texts = ["good movie", "\u200b\u200b", "bad movie", "\ufeff", "not bad", "very good", "\u200d \x7f", "bad"]
    _, _, warnings = _extract(bert, tmp_path, _rows(texts))
    empty = [w for w in warnings if "have an empty text" in w]
    assert len(empty) == 1 and "3 of 8 rows have an empty text (column 'text'; line 2, 4, 7)" in empty[0], warnings


def test_a_csv_saved_without_its_header_line_is_said_so(tmp_path):
    """QA (Debian package descriptions by Section, the header line left out): extract said "no column
    'text' for text_col; available: collection of roundrobin utilities, python", the first record's
    text and label read as column names, and nothing said why. It now says the file seems to have no
    header line."""
    from laya_inspect.data import DATASETS
    from laya_inspect.errors import InputError

    rows = [
        ("collection of roundrobin utilities", "python"),
        ("GNU C Library: Shared libraries", "libs"),
        ("Python 3 module for YAML", "python"),
        ("command-line JSON processor", "utils"),
    ]
    data = tmp_path / "pkgs.csv"
    data.write_text("".join(f"{t},{y}\r\n" for t, y in rows), encoding="utf-8")
    with pytest.raises(InputError) as e:
        DATASETS.get("csv").load(str(data), {}, seed=0, test_fraction=0.2)
    said = str(e.value)
    assert "no column 'text' for text_col" in said
    assert "its line 1 reads as a data row ('python' is also a value of that column below it)" in said
    assert "has no header line?" in said
    # a header that names other columns is no data row: no such guess
    data.write_text("review,sentiment\r\n" + "".join(f"{t},{y}\r\n" for t, y in rows), encoding="utf-8")
    with pytest.raises(InputError) as e:
        DATASETS.get("csv").load(str(data), {}, seed=0, test_fraction=0.2)
    assert "no header line" not in str(e.value)
