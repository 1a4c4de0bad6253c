"""Checks on the texts of the requested splits, once a text dataset is loaded: how many tokens the
model's tokenizer makes of each text (some cut, some only its unknown token) and texts repeated
within a split or across splits; warnings (``DataBundle.warnings``) each."""

from __future__ import annotations

from typing import Any

import numpy as np


def token_counts(texts: list[str], tokenizer: Any) -> np.ndarray:
    """(N, 5) int64, per text: how many tokens ``tokenizer`` makes of it (special ones included,
    before any cut), how many of them are ordinary (special tokens aside), how many of those are
    its unknown token (0 for a tokenizer without one, see :func:`_unknown_id`), how many of the
    text's characters its unknown tokens stand for, and how many characters it has (whitespace
    aside). The fourth needs the character offsets only a fast tokenizer gives: 0 without them."""
    unk = _unknown_id(tokenizer)
    special = set(getattr(tokenizer, "all_special_ids", None) or ()) - {unk}
    out = np.zeros((len(texts), 5), dtype=np.int64)
    for s in range(0, len(texts), 1024):  # ids of one chunk at a time: no tensors, no padding
        part = list(texts[s : s + 1024])
        chunk, spans = _tokenized(part, tokenizer)
        for i, ids in enumerate(chunk):
            ordinary = [t for t in ids if t not in special]
            unknown = ordinary.count(unk) if unk is not None else 0
            hidden = sum(b - a for t, (a, b) in zip(ids, spans[i]) if t == unk) if spans is not None else 0
            out[s + i] = (len(ids), len(ordinary), unknown, hidden, sum(not c.isspace() for c in part[i]))
    return out


def _tokenized(texts: list[str], tokenizer: Any) -> tuple[list[list[int]], list[list[tuple[int, int]]] | None]:
    """Each text's token ids and each token's character span in it, or None for the spans of a
    tokenizer that gives none (a slow one)."""
    try:
        enc = tokenizer(texts, truncation=False, verbose=False, return_offsets_mapping=True)
        return enc["input_ids"], enc["offset_mapping"]
    except (NotImplementedError, TypeError, ValueError, KeyError):
        return tokenizer(texts, truncation=False, verbose=False)["input_ids"], None


def token_lengths(texts: list[str], tokenizer: Any) -> list[int]:
    """How many tokens ``tokenizer`` makes of each text, special ones included, before any cut."""
    return token_counts(texts, tokenizer)[:, 0].tolist()


def _unknown_id(tokenizer: Any) -> int | None:
    """The id of the token ``tokenizer`` puts for what its vocabulary lacks, or None where it has
    none, or where that token is its end of text too (GPT-2's, whose byte-level vocabulary never
    needs it for a character): then it never marks an unknown. Another special token set to the
    unknown one (a padding token, as Llama-family setups often do) leaves it marking unknowns."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None or unk == getattr(tokenizer, "eos_token_id", None):
        return None
    return int(unk)


def cut_texts(spec: str, split: str, counts: np.ndarray, max_length: int) -> list[str]:
    """A warning when texts of ``split`` are longer than ``max_length`` tokens: the model reads only
    their first ``max_length`` (``counts``: :func:`token_counts` of its texts)."""
    cut = counts[counts[:, 0] > max_length, 0]
    if not len(cut):
        return []
    return [
        f"dataset {spec!r}: {len(cut)} of {len(counts)} texts of split {split!r} are longer than {max_length} tokens "
        f"(the longest {int(cut.max())}); the model reads only their first {max_length}"
    ]


UNKNOWN_SHARE = 0.5  # of a split's ordinary tokens: beyond it the tokenizer hardly reads the language


def unknown_texts(
    spec: str, split: str, counts: np.ndarray, rows: np.ndarray, unk: str, *, lines: list[int] | None = None
) -> list[str]:
    """A warning when texts of ``split`` are nothing but the unknown token ``unk`` to the model's
    tokenizer (an emoji-only text, a script its vocabulary lacks): every such text reaches the model as
    the same few tokens. A milder one when more than UNKNOWN_SHARE of the split's ordinary tokens are
    ``unk``: most likely a tokenizer for another language. ``counts``: :func:`token_counts` of its
    texts; ``rows``: their source rows, the first few of which are named by their file line where
    ``lines`` gives each source row's (as the empty-text warning names them), else by the row itself."""
    out = []
    only = np.flatnonzero((counts[:, 1] > 0) & (counts[:, 2] == counts[:, 1]))  # empty texts have their own warning
    if len(only):
        out.append(
            f"dataset {spec!r}: {len(only)} of {len(counts)} texts of split {split!r} are only unknown tokens to the "
            f"model's tokenizer ({_named(only, rows, lines)}): their features describe {unk}, not the "
            "text; remove those rows, or use a model whose tokenizer reads them"
        )
    # a word over the tokenizer's length limit (WordPiece: 100 characters), an encoded blob: one [UNK]
    # for thousands of characters, in a text whose few other words still reach the model
    swallowed = np.flatnonzero((counts[:, 2] < counts[:, 1]) & (counts[:, 3] > UNKNOWN_SHARE * counts[:, 4]))
    if len(swallowed):
        first = swallowed[:1]
        chars = f"{int(counts[first[0], 3]):,} of its {int(counts[first[0], 4]):,} characters"
        where = f"{_named(first, rows, lines)}: {chars}"
        if len(swallowed) > 1:
            where = f"{_named(swallowed, rows, lines)}; at {_named(first, rows, lines)} {chars}"
        out.append(
            f"dataset {spec!r}: {len(swallowed)} of {len(counts)} texts of split {split!r} reach the model mostly as "
            f"the unknown token {unk} ({where}): a run the tokenizer cannot "
            "split (a word over its length limit, an encoded blob, a script it lacks) becomes one token, and their "
            "features describe the few words left; clean those texts or remove those rows"
        )
    ordinary, unknown = int(counts[:, 1].sum()), int(counts[:, 2].sum())
    if ordinary and unknown > UNKNOWN_SHARE * ordinary:
        out.append(
            f"dataset {spec!r}: {unknown} of the {ordinary} tokens of split {split!r} ({unknown / ordinary:.0%}, "
            f"special tokens aside) are the unknown token {unk}: is the model's tokenizer one for this language?"
        )
    return out


def _named(picked: np.ndarray, rows: np.ndarray, lines: list[int] | None) -> str:
    """ "lines 3, 5" (or "source rows 9, 11" where ``lines`` is None) of the first five ``picked`` texts."""
    named = [lines[r] for r in rows[picked[:5]].tolist()] if lines is not None else rows[picked[:5]].tolist()
    shown = ", ".join(map(str, named)) + (", …" if len(picked) > 5 else "")
    return (
        f"line{'s' * (len(picked) > 1)}" if lines is not None else f"source row{'s' * (len(picked) > 1)}"
    ) + f" {shown}"


def repeated_texts(spec: str, texts: dict[str, list[str]], labels: dict[str, np.ndarray]) -> list[str]:
    """A warning for each split whose texts repeat one of its own, then for each split whose texts
    also stand in the training split: a score on them is partly a score on rows the head trained on
    (and a repeat under another label is label noise)."""
    keys = {name: [" ".join(t.split()).lower() for t in part] for name, part in texts.items()}
    out = [w for name, k in keys.items() if (w := _repeated_within(spec, name, k, labels[name]))]
    if "train" not in texts:
        return out
    seen = {k: int(y) for k, y in zip(keys["train"], labels["train"])}
    for name, part in texts.items():
        if name == "train":
            continue
        same = [i for i, k in enumerate(keys[name]) if k and k in seen]  # empty texts have their own warning
        if not same:
            continue
        other = sum(1 for i in same if seen[keys[name][i]] != int(labels[name][i]))
        relabelled = f", {other} of them under another label" if other else ""
        out.append(
            f"dataset {spec!r}: {len(same)} of {len(part)} texts of split {name!r} also stand in split 'train' "
            f"(the same words, case and spacing aside{relabelled}): scores on {name!r} are partly scores on "
            "training rows; remove the repeats to read them as held out"
        )
    return out


def _repeated_within(spec: str, name: str, keys: list[str], labels: np.ndarray) -> str | None:
    """A warning when texts of one split (``keys``: each text's words, lower case) repeat an earlier
    text of it: a repeated row weighs twice in its accuracy (or its training), and one text under two
    labels caps the accuracy any head reaches."""
    first: dict[str, int] = {}
    again = other = 0
    for key, y in zip(keys, labels):
        if not key:  # empty texts have their own warning
            continue
        if key in first:
            again += 1
            other += first[key] != int(y)
        else:
            first[key] = int(y)
    if not again:
        return None
    relabelled = f", {other} of them under another label than the first (label noise no head can fit)" if other else ""
    return (
        f"dataset {spec!r}: {again} of {len(keys)} texts of split {name!r} repeat an earlier text of that split "
        f"(the same words, case and spacing aside{relabelled}): each repeat counts again in what is read on "
        f"{name!r}; remove the repeats to count each text once"
    )
