"""Word ids for the zoo BiLSTM: vocabulary order, unknown words, front padding and truncation."""

from __future__ import annotations

import pytest
import torch

from laya_inspect.data.words import OOV, PAD, TokenIdTransform, WordVocab
from laya_inspect.errors import InputError


def test_vocab_ranks_by_count_then_alphabet_and_caps_its_size():
    v = WordVocab.fit(["b a a", "c b a", "d"], size=4)  # counts a 3, b 2, c 1, d 1: room for 2 words
    assert v.words == ("a", "b") and v.size == 4
    assert v.ids("A b C") == [2, 3, OOV]  # lower-cased; c did not make the cut
    assert WordVocab.fit(["z y", "y z"], size=10).words == ("y", "z")  # equal counts: alphabetical


def test_encode_pads_and_truncates_at_the_front_like_keras():
    v = WordVocab(("one", "two", "three"))
    ids = v.encode(["one two", "one two three one two", ""], max_length=4)
    assert ids.dtype == torch.long
    assert ids.tolist() == [[PAD, PAD, 2, 3], [3, 4, 2, 3], [PAD] * 4]  # the last words are kept
    t = TokenIdTransform(v, 4)
    assert torch.equal(t(["one two"]), ids[:1])
    d = t.describe()
    assert d["kind"] == "token_ids" and d["vocab_size"] == 5 and d["padding"] == d["truncating"] == "pre"
    assert d["vocab_sha256"] != WordVocab(("one", "two")).sha256()


def test_vocab_errors():
    with pytest.raises(InputError, match="size ≥ 3"):
        WordVocab.fit(["a"], size=2)
    with pytest.raises(InputError, match="no words"):
        WordVocab.fit(["", "!!"], size=10)
