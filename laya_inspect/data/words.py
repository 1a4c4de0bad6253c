"""Word ids for models that read integer tokens (the zoo BiLSTM), the way Keras' IMDB pipeline
makes them: lower-cased words; the ``size − 2`` most frequent words of the training texts get ids
2, 3, … (ties in alphabetical order), 0 is padding and 1 any other word. Every sequence is padded
and truncated at the *front* to ``max_length`` (Keras' ``pad_sequences`` defaults), so a text's
last words are always kept and end the sequence, where an RNN's final hidden state reads them.

The vocabulary travels with the model: ``laya-inspect train`` writes it into the zoo checkpoint
and ``extract`` reads it back, so both see the same ids.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import torch

from ..errors import InputError

PAD, OOV = 0, 1
WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


@dataclass(frozen=True)
class WordVocab:
    """``words[i]`` has id ``i + 2``."""

    words: tuple[str, ...]

    @classmethod
    def fit(cls, texts: Iterable[str], size: int) -> WordVocab:
        if size < 3:
            raise InputError(f"a word vocabulary needs room for padding, unknown and one word: size ≥ 3, got {size}")
        counts = Counter(w for t in texts for w in words(t))
        if not counts:
            raise InputError("the training texts hold no words to build a vocabulary from")
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: size - 2]
        return cls(tuple(w for w, _ in ranked))

    @property
    def size(self) -> int:
        return len(self.words) + 2

    def ids(self, text: str) -> list[int]:
        index = self._index
        return [index.get(w, OOV) for w in words(text)]

    @cached_property
    def _index(self) -> dict[str, int]:
        return {w: i + 2 for i, w in enumerate(self.words)}

    def encode(self, texts: Sequence[str], max_length: int) -> torch.Tensor:
        """(B, max_length) int64: ids padded and truncated at the front."""
        out = torch.full((len(texts), max_length), PAD, dtype=torch.long)
        for row, text in enumerate(texts):
            ids = self.ids(text)[-max_length:]
            if ids:
                out[row, max_length - len(ids) :] = torch.tensor(ids, dtype=torch.long)
        return out

    def sha256(self) -> str:
        return hashlib.sha256("\n".join(self.words).encode()).hexdigest()


@dataclass(frozen=True)
class TokenIdTransform:
    """A list of B strings → (B, max_length) int64 word ids (see the module docstring)."""

    vocab: WordVocab
    max_length: int

    def __call__(self, texts: list[str]) -> torch.Tensor:
        return self.vocab.encode(list(texts), self.max_length)

    def describe(self) -> dict:
        return {
            "kind": "token_ids",
            "vocab_size": self.vocab.size,
            "vocab_sha256": self.vocab.sha256(),
            "max_length": self.max_length,
            "lowercase": True,
            "pattern": WORD.pattern,
            "padding": "pre",
            "truncating": "pre",
            "pad_id": PAD,
            "oov_id": OOV,
        }
