"""A JPEG's compressed data checked by libjpeg-turbo (the ``simplejpeg`` package) before PIL decodes it.

PIL decodes a JPEG whose bytes were damaged in the middle (a bad disk sector, a broken download, a
bit flipped in transit) without a word: libjpeg's "Corrupt JPEG data" warnings are silenced inside
PIL, which offers no public way to read them, and the photo comes back with garbage from the damage
on. simplejpeg's strict decode raises them instead. It decodes at an eighth of the size (libjpeg
still reads every coefficient; only the inverse DCT is cut short), so the check costs about what
PIL's own decode does; PIL still decodes the pixels that are used. Baseline, extended and
progressive JPEGs are all checked. A file libjpeg-turbo cannot read at all (a sampling layout it
does not name, a file cut short) is left to PIL, which decodes it or refuses it itself.
"""

from __future__ import annotations

DAMAGED = "Corrupt JPEG data"  # how every libjpeg warning of damaged compressed data begins (jerror.h)
# decode to the file's own colour space: no colour conversion the check does not need
_DECODE_AS = {"Gray": "gray", "CMYK": "cmyk", "YCCK": "cmyk"}


def damage(data: bytes) -> str:
    """libjpeg's warning of damaged compressed data in a JPEG ("" when it has none, and for a file
    libjpeg-turbo does not read, or warns of something else)."""
    import simplejpeg  # type: ignore[import-untyped]

    try:
        colour = simplejpeg.decode_jpeg_header(data, strict=True)[2]
        simplejpeg.decode_jpeg(data, colorspace=_DECODE_AS.get(colour, "rgb"), min_factor=8, strict=True)
    except ValueError as e:
        said = str(e)
        return said if said.startswith(DAMAGED) else ""
    return ""


def refuse_damaged(path: str) -> None:
    """An ImageFileError naming ``path`` when its JPEG data is damaged (:func:`damage`)."""
    from ..errors import ImageFileError

    with open(path, "rb") as f:
        why = damage(f.read())
    if why:
        raise ImageFileError(
            f"{path}: its JPEG data is damaged (libjpeg: {why}): PIL decodes such a file without a word, into "
            "wrong pixels from the damage on; replace the file (or remove it), then run again",
            path,
        )
