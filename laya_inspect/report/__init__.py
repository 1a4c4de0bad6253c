"""report.html: one self-contained page of a fit-head, compare or demo folder.

The page leads with a plain reading of the result computed from its numbers (reading.py), then the
tables, the figures (the folder's PNG plots, or figures drawn here as SVG, inlined as data URIs),
the exact commands and the provenance (cache fingerprint, weights hash, versions). It has no
script and fetches nothing (its Content-Security-Policy forbids it), so it opens offline.

:func:`write_report_html` writes it atomically into the folder; ``laya-inspect report DIR --html``
rebuilds it. :func:`summary_html` / :func:`fit_summary_html` give the reading and the tables alone,
what a result object shows in a notebook (``_repr_html_``).
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from ..errors import InputError, os_message
from ..files import output_lock, special_file, write_with
from ..out_dir import changed_since_written, read_marker, redigest, unwritable
from .folders import folder_kind, read_folder
from .html import PAGE_MARK, fragment, page, page_unchanged, seal
from .reading import compare_reading, fit_reading
from .sections import compare_page_parts, compare_sections, demo_page_parts, fit_page_parts, fit_sections
from .stale import stale_inputs

__all__ = ["build_page", "fit_summary_html", "folder_kind", "summary_html", "write_report_html"]

REPORT_NAME = "report.html"
TITLES = {"fit-head": "fit-head", "compare": "compare", "demo": "laya-inspect demo"}


def build_page(folder: str | Path, *, as_dir: str | Path | None = None, figures: bool = True) -> str:
    """The page of ``folder`` as HTML text. ``as_dir``: the path the folder will have when it is being
    written under a temporary name (the commands on the page name it); ``figures=False`` leaves
    the figures out."""
    path = Path(folder)
    shown = Path(as_dir) if as_dir is not None else path
    f = read_folder(path)
    builder = {"fit-head": fit_page_parts, "compare": compare_page_parts, "demo": demo_page_parts}[f.kind]

    def parts() -> dict[str, Any]:
        out: dict[str, Any] = builder(f, shown, figures)  # type: ignore[operator]
        # results read from files replaced since (a demo step rerun by hand) lead the page, in warning colour
        out["reading"].lead[:0] = [f"Warning: {line}." for line in stale_inputs(f)]
        out["commands"].append(("rebuild this page", f"laya-inspect report {shown} --html"))
        return out

    return page(f.kind, path, shown, TITLES[f.kind], parts)


_EDITED_PAGE = "is not the page laya-inspect wrote (changed since it was written: its seal no longer matches)"
_UNSEALED_PAGE = (
    "is a page an earlier laya-inspect wrote without a seal, and no marker in its folder records it, so "
    "nothing shows it is unchanged"
)


def refuse_foreign_page(folder: str | Path, flag: str = "DIR") -> None:
    """Refuse, before ``report --html`` rebuilds it, a ``folder/report.html`` laya-inspect did not
    write: one the folder's marker does not list and that does not carry the page's own mark (a
    user's page beside a copied summary.json), or whose seal no longer matches what it holds (a page
    copied out of its output and annotated; one an earlier version wrote has no seal); one the marker
    lists and changed since; a symlink or a FIFO, socket or device; and a folder it cannot be written in."""
    page = Path(folder) / REPORT_NAME
    denied = unwritable(Path(folder)) if Path(folder).is_dir() else None
    if denied is not None:  # else the page is built, then fails on its temporary name
        raise InputError(
            f"{os_message(denied, f'--html cannot write {page}: cannot write in')}; make the folder writable, "
            f"or copy it and run the report on the copy (without --html, `report {folder}` only reads it)"
        )
    if not page.exists() and not page.is_symlink():
        return
    why = None
    if page.is_symlink():
        why = f"is a symlink (to {os.readlink(page)})"
    elif special := special_file(page):
        why = f"is {special}, not a page laya-inspect wrote"
    elif page.is_file():
        marker = read_marker(folder)
        if marker is None or REPORT_NAME not in marker["files"]:
            try:
                data = page.read_bytes()
            except OSError as e:
                raise InputError(f"{page} cannot be read ({e.strerror or e})") from None
            # no marker answers for the page (`cp out/* notes/` leaves the hidden marker behind): only
            # its seal shows it unchanged, as the mark alone survives a user's notes
            unchanged = page_unchanged(data) if PAGE_MARK in data else False
            if unchanged is False:
                why = "is not a page laya-inspect wrote" if PAGE_MARK not in data else _EDITED_PAGE
            elif unchanged is None:
                why = _UNSEALED_PAGE
        elif changed := changed_since_written(folder, REPORT_NAME, marker):
            why = f"is not the page laya-inspect wrote ({changed})"  # annotated by hand: the rebuild lost the notes
    if why is not None:
        raise InputError(
            f"{page} {why}; --html replaces only the report.html laya-inspect wrote: "
            f"move it away, or run the report on another {flag}"
        )


def write_report_html(
    folder: str | Path, *, as_dir: str | Path | None = None, figures: bool = True, locked: bool = False
) -> Path:
    """Write ``folder/report.html`` (atomically) from what the fit-head, compare or demo folder holds;
    return its path. ``as_dir`` and ``figures`` as in :func:`build_page`. It holds the folder's lock, the
    one every writer of it takes (fit-head --force, `report DIR --html`), so the page is not built from a
    folder being swapped: LockedError while another holds it. ``locked``: the caller holds it already
    (the demo, `report DIR --html`); a second take in the same process would refuse its own page."""
    with page_lock(folder, locked):
        return write_page(folder, build_page(folder, as_dir=as_dir, figures=figures))


def page_lock(folder: str | Path, locked: bool) -> AbstractContextManager[None]:
    """The lock every writer of ``folder`` takes, held while its page is built and written; none where
    the caller holds it already (``locked``: the command writing the folder, `report DIR --html`), as a
    second take in the same process would refuse its own page."""
    return nullcontext() if locked else output_lock(os.path.realpath(folder))


def write_page(folder: str | Path, text: str) -> Path:
    # checked again as the page is written: one the user saved while it was built is theirs
    refuse_foreign_page(folder)

    def write(tmp: Path) -> None:
        tmp.write_bytes(seal(text).encode("utf-8"))
        # and once more just before the rename: one saved while the page was written is refused by name
        refuse_foreign_page(folder)

    page = write_with(Path(folder) / REPORT_NAME, write)
    redigest(folder, [REPORT_NAME])  # a rebuilt page stays --force's to replace; one edited by hand does not
    return page


def summary_html(summary: dict[str, Any]) -> str:
    """A compare summary's reading and tables as an HTML fragment (for ``_repr_html_``)."""
    return fragment(compare_reading(summary), compare_sections(summary))


def fit_summary_html(summary: dict[str, Any], runs: list[dict[str, Any]] | None = None) -> str:
    """A fit-head summary's reading and tables as an HTML fragment (for ``_repr_html_``)."""
    return fragment(fit_reading(summary), fit_sections(summary, runs or []))
