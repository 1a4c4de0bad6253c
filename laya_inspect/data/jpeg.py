"""A JPEG's compressed data walked against its own Huffman tables, no pixel decoded: whether every
block decodes and the data ends where its last block does.

PIL decodes a JPEG whose bytes were damaged in the middle (a bad disk sector, a broken download, a
bit flipped in transit) without a word: libjpeg's "Corrupt JPEG data" warnings are silenced inside
PIL, which offers no public way to read them, and the photo comes back with garbage from the damage
on. :func:`damage` finds what libjpeg would warn of, in baseline and extended sequential Huffman JPEGs
(what cameras, phones and PIL write): a code the tables do not hold, a block of more than 64
coefficients, data that ends before the last block or runs on past it, restart markers out of
order. A progressive or arithmetic-coded JPEG is not walked (its markers only are read).
"""

from __future__ import annotations

import functools
import re

import numpy as np

# a marker inside a scan ends it, except a stuffed 0xFF00 and the restart markers RST0-7
_SCAN_END = re.compile(rb"\xff(?![\x00\xd0-\xd7])")
_RESTART = re.compile(rb"\xff([\xd0-\xd7])")
_SEQUENTIAL = (0xC0, 0xC1)  # baseline and extended sequential, Huffman-coded
_OTHER_FRAMES = (0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF)


class _Damaged(Exception):
    def __init__(self, why: str, at: int) -> None:
        super().__init__(why)
        self.why, self.at = why, at


@functools.lru_cache(maxsize=64)
def _table(spec: bytes) -> list[int]:
    """One Huffman table (its 16 counts, then its symbols) → a 16-bit lookup: entry = length << 8 |
    symbol, 0 where no code starts with those bits. Cached: the files of one camera or encoder share
    their tables."""
    counts = spec[:16]
    symbols = spec[16:]
    lookup = [0] * 65536
    code, k = 0, 0
    for length, n in enumerate(counts, start=1):
        for _ in range(n):
            if code >= 1 << length:  # more codes than the length holds: the table itself is damaged
                raise _Damaged("a Huffman table with more codes than its lengths allow", 0)
            lo = code << (16 - length)
            lookup[lo : lo + (1 << (16 - length))] = [length << 8 | symbols[k]] * (1 << (16 - length))
            code, k = code + 1, k + 1
        code <<= 1
    return lookup


CHUNK = 1 << 16  # bytes of windows made at a time (a list of Python ints: 36 bytes each)
MCU_BYTES = 4096  # more than the longest MCU a file can hold (10 blocks of 64 codes of 27 bits)


def _windows(data: bytes, lo: int) -> list[int]:
    """For each byte from ``lo`` on (up to CHUNK + MCU_BYTES of them, and 8 past the end), the 32 bits
    that start there, zeros past the end: libjpeg reads zeros there too."""
    part = data[lo : lo + CHUNK + MCU_BYTES]
    a = np.frombuffer(part + b"\x00" * 11, np.uint8).astype(np.uint32)
    return ((a[:-3] << 24) | (a[1:-2] << 16) | (a[2:-1] << 8) | a[3:]).tolist()


def _walk(data: bytes, start: int, mcus: int, blocks: list[tuple[list[int], list[int]]]) -> None:
    """Decode ``mcus`` MCUs of one restart interval (unstuffed ``data``); each MCU is ``blocks``, a
    (DC lookup, AC lookup) per block. Raises _Damaged with the byte offset (``start`` + its own)."""
    try:
        _blocks(data, start, mcus, blocks)
    except IndexError:  # past the zeros after the data, within one MCU
        raise _Damaged("data that ends before its last block", start + len(data)) from None


def _blocks(data: bytes, start: int, mcus: int, blocks: list[tuple[list[int], list[int]]]) -> None:
    end = len(data) * 8
    pos, base = 0, 0
    win = _windows(data, 0)
    for _ in range(mcus):
        if (pos >> 3) - base > CHUNK:
            base = pos >> 3
            win = _windows(data, base)
        if pos > end:
            raise _Damaged("data that ends before its last block", start + len(data))
        for dc, ac in blocks:
            entry = dc[(win[(pos >> 3) - base] >> (16 - (pos & 7))) & 0xFFFF]
            if not entry:
                raise _Damaged("a code its Huffman tables do not hold", start + (pos >> 3))
            pos += (entry >> 8) + (entry & 0x0F)  # the code, then the difference's bits
            k = 1
            while k < 64:
                entry = ac[(win[(pos >> 3) - base] >> (16 - (pos & 7))) & 0xFFFF]
                if not entry:
                    raise _Damaged("a code its Huffman tables do not hold", start + (pos >> 3))
                size = entry & 0x0F
                pos += (entry >> 8) + size
                if size:
                    k += ((entry >> 4) & 0x0F) + 1
                elif entry & 0xF0 == 0xF0:  # sixteen zeros
                    k += 16
                else:  # end of block
                    break
            if k > 64:
                raise _Damaged("a block of more than 64 coefficients", start + (pos >> 3))
    if pos > end:
        raise _Damaged("data that ends before its last block", start + len(data))
    if end - pos >= 8:
        raise _Damaged(f"{(end - pos) // 8} bytes of data after its last block", start + (pos >> 3))


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _scan(data: bytes, at: int, frame: dict, tables: dict, header: bytes, restart: int) -> None:
    comps = [(header[1 + 2 * i], header[2 + 2 * i]) for i in range(header[0])]
    x, y, sampling = frame["x"], frame["y"], frame["sampling"]
    hmax = max(h for h, _ in sampling.values())
    vmax = max(v for _, v in sampling.values())
    try:
        if len(comps) == 1:  # one component: its blocks one by one, whatever its sampling
            cid, td = comps[0]
            h, v = sampling[cid]
            mcus = _ceil(_ceil(x * h, hmax), 8) * _ceil(_ceil(y * v, vmax), 8)
            blocks = [(tables[0, td >> 4], tables[1, td & 15])]
        else:
            mcus = _ceil(x, 8 * hmax) * _ceil(y, 8 * vmax)
            blocks = [
                (tables[0, td >> 4], tables[1, td & 15])
                for cid, td in comps
                for _ in range(sampling[cid][0] * sampling[cid][1])
            ]
    except KeyError:
        raise _Damaged("a scan that names a component or table the file does not define", at) from None
    cuts = list(_RESTART.finditer(data))
    per = restart if restart else mcus
    if len(cuts) != _ceil(mcus, per) - 1:
        raise _Damaged(f"{len(cuts)} restart markers where its {mcus} MCUs need {_ceil(mcus, per) - 1}", at)
    for n, m in enumerate(cuts):
        if m.group(1)[0] != 0xD0 + n % 8:
            raise _Damaged("restart markers out of order", at + m.start())
    bounds = [0, *(m.start() for m in cuts)]
    ends = [*(m.start() for m in cuts), len(data)]
    for n, (lo, hi) in enumerate(zip(bounds, ends)):
        lo += 2 if n else 0
        count = min(per, mcus - n * per)
        _walk(data[lo:hi].replace(b"\xff\x00", b"\xff"), at + lo, count, blocks)


def damage(data: bytes) -> str:
    """What is wrong with a sequential Huffman JPEG's compressed data, with the byte where it was
    found ("" for a file that decodes cleanly, and for one not walked: not a JPEG, progressive,
    arithmetic-coded, cut short, which PIL refuses itself)."""
    if not data.startswith(b"\xff\xd8"):
        return ""
    tables: dict[tuple[int, int], list[int]] = {}
    frame: dict = {}
    restart = 0
    i = 2
    try:
        while i + 4 <= len(data):
            if data[i] != 0xFF:
                raise _Damaged("bytes between its segments", i)
            marker = data[i + 1]
            if marker == 0xFF:  # fill byte
                i += 1
                continue
            if marker == 0xD9:  # end of image
                return ""
            if marker == 0x01 or 0xD0 <= marker <= 0xD7:
                i += 2
                continue
            length = int.from_bytes(data[i + 2 : i + 4], "big")
            if i + 2 + length > len(data):  # cut short: PIL refuses it itself, saying so
                return ""
            body = data[i + 4 : i + 2 + length]
            if marker in _OTHER_FRAMES:
                return ""
            if marker == 0xC4:
                j = 0
                while j < len(body):
                    used = 16 + sum(body[j + 1 : j + 17])
                    tables[body[j] >> 4, body[j] & 15] = _table(bytes(body[j + 1 : j + 1 + used]))
                    j += 1 + used
            elif marker in _SEQUENTIAL:
                n = body[5]
                frame = {
                    "y": int.from_bytes(body[1:3], "big"),
                    "x": int.from_bytes(body[3:5], "big"),
                    "sampling": {body[6 + 3 * c]: (body[7 + 3 * c] >> 4, body[7 + 3 * c] & 15) for c in range(n)},
                }
            elif marker == 0xDD:
                restart = int.from_bytes(body[:2], "big")
            elif marker == 0xDA:
                start = i + 2 + length
                found = _SCAN_END.search(data, start)
                if found is None:  # cut short: PIL refuses it itself
                    return ""
                if frame and frame["y"] > 0 and frame["x"] > 0:  # a height given later (DNL) is not walked
                    _scan(data[start : found.start()], start, frame, tables, body, restart)
                i = found.start()
                continue
            i += 2 + length
    except _Damaged as e:
        return f"{e.why}, at byte {e.at:,} of {len(data):,}"
    except (IndexError, ValueError, ZeroDivisionError):
        return f"segments that do not parse, near byte {i:,} of {len(data):,}"
    return ""


def refuse_damaged(path: str) -> None:
    """An ImageFileError naming ``path`` when its JPEG data is damaged (:func:`damage`)."""
    from ..errors import ImageFileError

    with open(path, "rb") as f:
        why = damage(f.read())
    if why:
        raise ImageFileError(
            f"{path}: its JPEG data is damaged ({why}): PIL decodes such a file without a word, into wrong pixels "
            "from the damage on; replace the file (or remove it), then run again",
            path,
        )
