"""Text tables: ``csv:FILE`` (``.tsv``: tab-separated) and ``jsonl:FILE`` (one JSON object a line).

Columns are ``text`` and ``label`` unless the spec names others in a query string, the one place
options go (so the spec stored with cached features says everything):

    csv:reviews.csv?text_col=review&label_col=sentiment
    jsonl:data.jsonl?split_col=fold

Options: ``text_col`` (default ``text``), ``label_col`` (default ``label``), ``split_col`` (default
``split``). Rows with a split column are grouped by its values (native splits, e.g. train/test);
without one, train/test come from a seeded stratified split. Labels that are all non-negative
integers keep their values (class names "0".."max"); words become the sorted distinct values;
negative numbers, fractions, NaN, and numbers mixed with words are refused, naming the line.
``index`` is the 0-based data row in the file (header and blank lines not counted); error messages
name the file's line (``FILE:LINE``).
Texts are tokenised per batch by the model's tokenizer (see ``transforms.TextTransform``).
"""

from __future__ import annotations

import csv
import json
import math
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, suggest
from .base import Source, SplitSource, encode_labels, index_spellings, read_failed, stratified_split, user_path

TEXT_OPTIONS = ("text_col", "label_col", "split_col")


# Python's csv refuses a field over 128 KiB; a long review or article is no error here (the tokenizer
# cuts it, with a warning)
FIELD_LIMIT = 2**31 - 1


def _read_csv(path: Path) -> tuple[list[str], list[dict], list[int]]:
    """(columns, rows, the line each row starts on). A row with more fields than the header (an
    unquoted delimiter in a text), a row that repeats the header (files joined with theirs) or a
    header that names a column twice is refused, naming the line."""
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    what = "TSV" if delimiter == "\t" else "CSV"
    rows, lines = [], []
    limit = csv.field_size_limit(FIELD_LIMIT)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f, delimiter=delimiter)
            columns = list(reader.fieldnames or [])
            if any("\x00" in c for c in columns):  # UTF-16 read as UTF-8: a NUL after every ASCII character
                raise InputError(
                    f"{path}:1: the header holds NUL bytes ({columns[0][:16]!r}…): the file looks saved as UTF-16; "
                    f"save it as UTF-8, e.g. `iconv -f utf-16 -t utf-8 {path.name}`"
                )
            twice = sorted({c for c in columns if columns.count(c) > 1 and c.strip()})
            if twice:
                raise InputError(f"{path}:1: the header names column {twice[0]!r} twice; rename one")
            other = [c for c in (",", ";", "\t", "|") if c != delimiter and len(columns) == 1 and c in columns[0]]
            if other:
                said = "a tab" if other[0] == "\t" else repr(other[0])
                raise InputError(
                    f"{path}:1: the header {columns[0]!r} is one column: the file is separated by {said}, not by "
                    f"{'tabs' if delimiter == chr(9) else 'commas'}; save it comma-separated as .csv "
                    "(or tab-separated as .tsv)"
                )
            end = reader.line_num
            for row in reader:
                extra_fields = row.pop(None, None) or []  # what DictReader files under None: fields past the header
                values = [v for v in (*row.values(), *extra_fields) if isinstance(v, str)]
                # line_num is the record's last line; a quote left open to the end of the file also took
                # in the last line's own newline, so never before the line after the last record
                start = max(reader.line_num - sum(v.count("\n") for v in values), end + 1)
                end = reader.line_num
                extra = [v for v in extra_fields if v.strip()]
                if extra:
                    raise InputError(
                        f"{path}:{start}: {len(columns) + len(extra)} fields where the header has {len(columns)} "
                        f"(extra {extra[0]!r}): a text holding a {'tab' if delimiter == chr(9) else 'comma'} "
                        'must be quoted ("…")'
                    )
                if columns and [(row.get(c) or "").strip() for c in columns] == [c.strip() for c in columns]:
                    raise InputError(
                        f"{path}:{start}: this row repeats the header ({delimiter.join(columns)}): files joined "
                        "with their headers? remove the line"
                    )
                rows.append(row)
                lines.append(start)
            return columns, rows, lines
    except UnicodeDecodeError:
        raise _not_utf8(path, what) from None
    except csv.Error as e:
        raise InputError(f"{path}: not a readable UTF-8 {what} file ({e})") from None
    except OSError as e:
        raise read_failed(e) from None
    finally:
        csv.field_size_limit(limit)


def _no_header(columns: list[str], rows: list[dict], path: Path) -> str:
    """What to add to "no column 'text'" when the header reads as a data row: a file saved without its
    header line lends its first record's text and label as the column names, which the user never wrote."""
    again = [c for c in columns if c.strip() and any((r.get(c) or "").strip() == c.strip() for r in rows)]
    if not again:
        return ""
    return (
        f"; its line 1 reads as a data row ({again[0]!r} is also a value of that column below it): the file "
        f"has no header line? add one naming the columns, e.g. `text,label`, as the first line of {path.name}"
    )


def _not_utf8(path: Path, what: str) -> InputError:
    """The first byte of ``path`` that is not UTF-8, by its line (the decoder's own position counts
    bytes from the start of whatever chunk it was reading), and the fix."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
        where = f"{path}:"
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        where = f"{path}:{line}: byte 0x{data[e.start]:02x} ({e.reason}):"
    return InputError(
        f"{where} not a UTF-8 {what} file; a spreadsheet or an older editor saved it in another encoding "
        f"(Latin-1, Windows-1252): save it as UTF-8, e.g. `iconv -f cp1252 -t utf-8 {path.name}`"
    )


def _unclosed_quote(rows: list[dict], lines: list[int], text_col: str, label_col: str, path: Path, sep: str) -> None:
    """Refuse a text that runs over lines which read as rows of their own ("…,neg") in a file that
    does not parse strictly: a quote that is not closed swallows the rows after it into one text,
    with the label of the last, where a closed one ends at '",' (a quote inside is written "")."""
    labels = {str(r.get(label_col) or "").strip() for r in rows} - {""}
    columns = list(rows[0])
    at = columns.index(label_col)
    for i, r in enumerate(rows):
        text = str(r.get(text_col) or "")
        if "\n" not in text:
            continue
        for k, inner in enumerate(text.split("\n")[:-1]):
            fields = inner.split(sep)
            if len(fields) == len(columns) and fields[at].strip() in labels:
                if _strict(path, sep):  # every quote closed: the lines are the text's own
                    return
                raise InputError(
                    f"{path}:{lines[i]}: a quoted text opened here runs on, and its line {lines[i] + k} reads "
                    f"as a row of its own ({inner[-40:]!r}): close the quote (a quote inside a quoted text "
                    'is written "")'
                )


class _KeyTwice(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, refusing a key named twice in it (json keeps the last one silently)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _KeyTwice(k)
        out[k] = v
    return out


def _read_jsonl(path: Path) -> tuple[list[str], list[dict], list[int]]:
    rows, columns, linenos = [], {}, []
    try:
        # on "\n" alone: splitlines() also breaks at U+2028, U+0085, … which JSON strings may hold raw
        lines = path.read_text(encoding="utf-8-sig").split("\n")
    except UnicodeDecodeError:
        raise _not_utf8(path, "JSONL") from None
    except OSError as e:
        raise read_failed(e) from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line, object_pairs_hook=_once)
        except _KeyTwice as e:
            raise InputError(
                f"{path}:{lineno}: the record names key {e.key!r} twice, and only one value can be meant; "
                "remove the other"
            ) from None
        except (json.JSONDecodeError, RecursionError) as e:
            msg = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deeply"
            raise InputError(f"{path}:{lineno}: not JSON ({msg}); fix or remove the line") from None
        if not isinstance(rec, dict):
            raise InputError(f"{path}:{lineno}: expected a JSON object, got {type(rec).__name__}")
        rows.append(rec)
        linenos.append(lineno)
        columns.update(dict.fromkeys(rec))
    return list(columns), rows, linenos


def _column(rows: list[dict], col: str, *, path: Path, what: str, lines: list[int]) -> list:
    out = []
    for i, r in enumerate(rows):
        v = r.get(col)
        if isinstance(v, float) and not math.isfinite(v) and what == "text":  # JSON's NaN: no text, not "nan"
            v = None
        if v is None or (isinstance(v, str) and not v.strip() and what != "text"):
            raise InputError(f"{path}:{lines[i]}: no {what} (column {col!r})")
        if isinstance(v, (dict, list)):
            kind = type(v).__name__
            raise InputError(f"{path}:{lines[i]}: the {what} (column {col!r}) is a JSON {kind}, not a value")
        out.append(v)
    return out


@dataclass
class Table:
    """A csv or jsonl file read for one value column (texts, image paths) and its labels and splits:
    ``groups`` split name → its rows, ``info`` how the splits were made."""

    path: Path
    lines: list[int]
    values: list
    raw_labels: list
    labels: np.ndarray
    class_names: list[str]
    groups: dict[str, np.ndarray]
    info: dict


def read_table(
    path_arg: str, options: dict, *, seed: int, test_fraction: float, fmt: str, spec: str, value: tuple[str, str, str]
) -> Table:
    """Read ``path_arg`` as ``fmt`` ("csv" or "jsonl"), its value column named by the option ``value[0]``
    (default ``value[1]``, ``value[2]`` in messages), ``label_col`` and ``split_col``; ``spec`` is the
    spec's prefix, for the messages that say how to choose a column."""
    path = user_path(path_arg, folder=False, what=f"{fmt} file")
    columns, rows, lines = (_read_csv if fmt == "csv" else _read_jsonl)(path)
    if not rows:
        raise InputError(f"{path}: no data rows")
    value_key, value_default, what = value
    value_col, label_col = options.get(value_key, value_default), options.get("label_col", "label")
    split_col = options.get("split_col", "split")
    for key, col in ((value_key, value_col), ("label_col", label_col)):
        if col not in columns:
            raise InputError(
                f"{path}: no column {col!r} for {key}; {suggest(col, columns)} (choose with {spec}:FILE?{key}=NAME)"
                + (_no_header(columns, rows, path) if fmt == "csv" else "")
            )
    if "split_col" in options and split_col not in columns:
        raise InputError(f"{path}: no column {split_col!r} for split_col; {suggest(split_col, columns)}")
    if fmt == "csv":
        _unclosed_quote(rows, lines, value_col, label_col, path, "\t" if path.suffix.lower() == ".tsv" else ",")
    values = _column(rows, value_col, path=path, what=what, lines=lines)
    raw_labels = _column(rows, label_col, path=path, what="label", lines=lines)
    labels, class_names = encode_labels(raw_labels, where=str(path), locate=lambda i: f"line {lines[i]}")
    if split_col in columns:
        parts = [str(p).strip() for p in _column(rows, split_col, path=path, what="split", lines=lines)]
        groups = {s: np.array([i for i, p in enumerate(parts) if p == s], dtype=np.int64) for s in dict.fromkeys(parts)}
        info: dict = {"method": "native", "split_col": split_col}
    else:
        groups, info = stratified_split(labels, test_fraction=test_fraction, seed=seed)
    return Table(path, lines, values, raw_labels, labels, class_names, groups, info)


def _load_table(path_arg: str, options: dict, *, seed: int, test_fraction: float, fmt: str, **_unused: Any) -> Source:
    text_col = options.get("text_col", "text")
    t = read_table(
        path_arg, options, seed=seed, test_fraction=test_fraction, fmt=fmt, spec=fmt, value=("text_col", "text", "text")
    )
    path, lines, labels, groups = t.path, t.lines, t.labels, t.groups
    texts = [str(v) for v in t.values]
    return Source(
        kind="text",
        class_names=t.class_names,
        split_names=list(groups),
        open=lambda s: SplitSource(
            labels=labels[groups[s]], rows=groups[s], fetch=lambda q: [texts[i] for i in q.tolist()]
        ),
        split_info=t.info,
        location=str(path),
        warnings=index_spellings(t.raw_labels, where=str(path), locate=lambda i: f"line {lines[i]}"),
        row_warnings=lambda rows: [
            *_empty_texts(texts, rows, path, lines, text_col),
            *_nul_texts(texts, rows, path, lines, text_col),
        ],
        lines=lines,
    )


EMPTY_TEXT = "features describe the empty string, not an input"  # of a row whose text is empty or blank


def _text_rows(
    texts: list[str], rows: np.ndarray, path: Path, lines: list[int], col: str, odd: Callable[[str], bool], said: str
) -> list[str]:
    """A warning naming the lines of those of ``rows`` (the rows in use, after --limit) whose text is
    ``odd``: "{path}: 2 of 8 rows {said}"."""
    held = sorted(lines[i] for i in rows.tolist() if odd(texts[i]))
    if not held:
        return []
    shown = ", ".join(map(str, held[:5])) + (", …" if len(held) > 5 else "")
    head, _, tail = said.partition(": ")
    return [f"{path}: {len(held)} of {len(rows)} rows {head} (column {col!r}; line {shown}): {tail}"]


def _empty_texts(texts: list[str], rows: np.ndarray, path: Path, lines: list[int], col: str) -> list[str]:
    """A warning when some of ``rows`` have no text: their features describe the empty string."""
    said = f"have an empty text: their {EMPTY_TEXT}; remove those rows or fill them in"
    return _text_rows(texts, rows, path, lines, col, blank_text, said)


def blank_text(text: str) -> bool:
    """Whether ``text`` shows nothing: only spaces, control and format characters. str.strip keeps a
    zero-width space or a byte-order mark (a file joined after its BOM), which a tokenizer drops
    (all-MiniLM-L6-v2's reads "\u200b" as [CLS] [SEP]), so such a row is an empty one."""
    return all(c.isspace() or unicodedata.category(c) in ("Cc", "Cf") for c in text)


def _nul_texts(texts: list[str], rows: np.ndarray, path: Path, lines: list[int], col: str) -> list[str]:
    """A warning when some of ``rows`` hold a NUL character, a mark of a damaged or mis-encoded row
    rather than of a text. It is a warning, not a refusal, as an empty or a cut text is: the row is
    still read, but what the model reads of it depends on its tokenizer (BERT's normaliser deletes it
    and joins the words around it, "cat\x00sat" becoming one unknown word; a byte-level BPE keeps it as
    a token; the word vocabulary splits there), which this reader does not see."""
    said = (
        "hold a NUL character in their text: a damaged or mis-encoded row? the model's tokenizer may delete it "
        "and join the words around it (BERT's does) or read it as a token; replace it with a space or remove "
        "those rows"
    )
    return _text_rows(texts, rows, path, lines, col, lambda t: "\x00" in t, said)


def _strict(path: Path, sep: str) -> bool:
    """Whether the file parses with every quote closed and followed by a delimiter or a line end."""
    limit = csv.field_size_limit(FIELD_LIMIT)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            for _ in csv.reader(f, delimiter=sep, strict=True):
                pass
    except csv.Error:
        return False
    finally:
        csv.field_size_limit(limit)
    return True


load_csv = partial(_load_table, fmt="csv")
load_jsonl = partial(_load_table, fmt="jsonl")
