"""HTML building blocks of report.html and the page around them: escaped text, tables, figures, and
one self-contained document (styles inline, figures as data URIs, a Content-Security-Policy that
forbids every fetch, so the page opens offline and never reaches the network)."""

from __future__ import annotations

import dataclasses
import html
import json
import platform
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from .. import __version__
from ..errors import CacheError, LayaError
from ..options import command_line
from .cached import made_facts
from .figures import Figure
from .reading import Reading

T = TypeVar("T")

# No script, no fetch: images only from data: URIs, styles only from the page itself.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1a1a1a; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; }
h2 { font-size: 1.2rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
h3 { font-size: 1rem; margin: 1.4rem 0 .4rem; }
.sub { color: #555; margin-top: 0; }
.reading { font-size: 1.12rem; background: #f3f7fb; border-left: 4px solid #0072B2; padding: .7rem 1rem; }
.reading p { margin: .3rem 0; }
ul.details { color: #333; }
.table-box { max-width: 100%; overflow-x: auto; margin: .4rem 0 1rem; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
p.caption { color: #444; margin: .8rem 0 .3rem; max-width: 60rem; }
th, td { padding: .2rem .6rem; border-bottom: 1px solid #e3e3e3; text-align: right; white-space: nowrap; }
th { background: #f7f7f7; white-space: normal; vertical-align: bottom; }  /* a long heading wraps, numbers do not */
th.text, td.text { text-align: left; }
td.text { white-space: normal; min-width: 6rem; }
td.text:last-child { min-width: 14rem; }  /* a verdict squeezed to a word a line made rows a screen tall */
tr.ref td { color: #777; }
td.best { font-weight: 700; color: #006d2c; }
.note { color: #8a5a00; }
.legend { color: #555; font-size: .9rem; max-width: 60rem; }
figure { margin: 1rem 0 1.6rem; }
.figure-box { max-width: 100%; overflow-x: auto; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figure img.svg { width: 100%; }
@media (max-width: 48rem) {  /* a phone: a plot shrunk to the screen has unreadable labels */
  figure img, figure img.svg { max-width: none; width: var(--natural, auto); }  /* own size, scrolled */
}
figcaption { color: #444; font-size: .9rem; max-width: 60rem; }
pre { background: #f6f6f6; padding: .6rem .8rem; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
dl.prov { display: grid; grid-template-columns: max-content auto; gap: .2rem 1rem; }
dl.prov dt { color: #555; } dl.prov dd { margin: 0; font-family: ui-monospace, monospace; word-break: break-all; }
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


@dataclass
class Cell:
    text: str
    cls: str = ""  # "best", "text"


@dataclass
class Table:
    id: str
    columns: list[str]
    rows: list[list[Cell | str]]
    caption: str = ""
    row_classes: list[str] = field(default_factory=list)  # one per row ("ref" dims a reference row)
    text_columns: int = 1  # the leading columns that hold names, not numbers (aligned left)

    def _text_column(self, j: int) -> bool:
        # a column of words (a verdict, a gate) is aligned left like the names, its heading with it
        cells = [row[j] for row in self.rows if j < len(row)]
        return (
            j < self.text_columns or bool(cells) and all(isinstance(c, Cell) and "text" in c.cls.split() for c in cells)
        )

    def html(self) -> str:
        left = ' class="text"'
        head = "".join(f"<th{left if self._text_column(j) else ''}>{esc(c)}</th>" for j, c in enumerate(self.columns))
        body = []
        for i, row in enumerate(self.rows):
            cls = self.row_classes[i] if i < len(self.row_classes) else ""
            cells = []
            for j, c in enumerate(row):
                cell = c if isinstance(c, Cell) else Cell(str(c), "text" if j == 0 else "")
                attr = f' class="{cell.cls}"' if cell.cls else ""
                cells.append(f"<td{attr}>{esc(cell.text)}</td>")
            tr = f' class="{cls}"' if cls else ""
            body.append(f"<tr{tr}>{''.join(cells)}</tr>")
        # the caption sits above the table's box, not in it: it wraps at the page's width while a table
        # wider than the screen scrolls in its box, and the page itself never scrolls sideways
        caption = f'<p class="caption" id="{esc(self.id)}-caption">{esc(self.caption)}</p>' if self.caption else ""
        return (
            f'{caption}<div class="table-box"><table id="{esc(self.id)}">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        )


@dataclass
class Section:
    """A heading, optional lines of text (``notes`` in the warning colour), tables and a legend."""

    title: str
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    legend: str = ""

    def html(self) -> str:
        parts = [f"<h3>{esc(self.title)}</h3>"]
        parts += [f"<p>{esc(line)}</p>" for line in self.lines]
        parts += [t.html() for t in self.tables]
        if self.notes:
            parts.append('<ul class="note">' + "".join(f"<li>{esc(n)}</li>" for n in self.notes) + "</ul>")
        if self.legend:
            parts.append(f'<p class="legend">{esc(self.legend)}</p>')
        return "\n".join(parts)


@dataclass
class Page:
    title: str
    subtitle: str
    reading: Reading
    sections: list[Section]
    figures: list[tuple[str, list[Figure]]]  # (group title, figures)
    commands: list[tuple[str, str]]  # (what, command line)
    provenance: list[tuple[str, str]]
    settings: str = ""  # the settings line the command printed, on one line


def reading_html(reading: Reading) -> str:
    # a warning leads the reading in the warning colour: the numbers after it are read in its light
    lead = "".join(
        f'<p class="note">{esc(s)}</p>' if s.startswith("Warning:") else f"<p>{esc(s)}</p>" for s in reading.lead
    )
    details = "".join(f"<li>{esc(s)}</li>" for s in reading.details)
    return f'<div class="reading" id="reading">{lead}</div>' + (
        f'<ul class="details">{details}</ul>' if details else ""
    )


def figures_html(groups: Sequence[tuple[str, list[Figure]]]) -> str:
    if not any(figs for _, figs in groups):
        return "<p>No figures: this folder holds no plots (written with --no-plots).</p>"
    parts = []
    for title, figs in groups:
        if title:
            parts.append(f"<h3>{esc(title)}</h3>")
        for f in figs:
            size = f' class="svg" style="max-width: {f.width_px}px; --natural: {f.width_px}px"' if f.width_px else ""
            # in its own box: on a narrow screen the figure keeps its size and scrolls, its caption wraps
            parts.append(
                f'<figure><div class="figure-box"><img src="{f.src}" alt="{esc(f.alt)}"{size}></div>'
                f"<figcaption>{esc(f.caption)}</figcaption></figure>"
            )
    return "\n".join(parts)


def fragment(reading: Reading, sections: Sequence[Section]) -> str:
    """The reading and the tables alone, for a notebook cell (styles scoped by the cell's own tags)."""
    style = f"<style>{CSS.replace('body {', '.laya-report {')}</style>"
    return f'<div class="laya-report">{style}{reading_html(reading)}{"".join(s.html() for s in sections)}</div>'


def _fact(key: str, value: str) -> str:
    return f"<dt>{esc(key)}</dt><dd>{esc(value)}</dd>"


WRITTEN_BY = "page written by"  # the provenance fact every page carries (page_facts)
# what a page laya-inspect wrote holds, whatever its versions: how report --html knows its own page
PAGE_MARK = _fact(WRITTEN_BY, "laya-inspect ").removesuffix("</dd>").encode()
# The SHA-256 of the page without this line, in its head: in a folder no marker vouches for (a
# `cp out/* elsewhere/` leaves the hidden marker behind) the mark alone survived a user's notes, and
# `report --html` rebuilt the page over them.
SEAL_NAME = "laya-inspect-page-sha256"
_SEAL = re.compile(rb'<meta name="' + SEAL_NAME.encode() + rb'" content="([0-9a-f]{64})">\n')
_SEAL_AFTER = '<meta charset="utf-8">\n'


def seal(text: str) -> str:
    """``text``, a page :func:`render` made, with the SHA-256 of its bytes written into its head."""
    import hashlib

    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    head, sep, rest = text.partition(_SEAL_AFTER)
    return f'{head}{sep}<meta name="{SEAL_NAME}" content="{digest}">\n{rest}' if sep else text


def reseal(text: str) -> str:
    """A sealed page rewritten by laya-inspect itself (check planted names the folder a temporary one
    is renamed to), sealed again over what it holds now; a page without a seal is left as it is."""
    found = _SEAL.search(text.encode("utf-8"))
    if found is None:
        return text
    line = found[0].decode()
    return seal(text.replace(line, "", 1))


def page_unchanged(data: bytes) -> bool | None:
    """Whether the page ``data`` is as laya-inspect wrote it (its seal matches what it holds now); None
    for a page without a seal (one an earlier version wrote), of which nothing can tell."""
    import hashlib

    found = _SEAL.search(data)
    if found is None:
        return None
    return hashlib.sha256(data[: found.start()] + data[found.end() :]).hexdigest() == found[1].decode()


def render(page: Page) -> str:
    commands = "\n".join(f"<h3>{esc(what)}</h3><pre><code>{esc(cmd)}</code></pre>" for what, cmd in page.commands)
    prov = "".join(_fact(k, v) for k, v in page.provenance)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(page.title)}</title>
<style>{CSS}</style>
</head>
<body>
<h1>{esc(page.title)}</h1>
<p class="sub">{esc(page.subtitle)}</p>
{f'<p class="sub">{esc(page.settings)}</p>' if page.settings else ""}
{reading_html(page.reading)}
<h2 id="tables">Tables</h2>
{"".join(s.html() for s in page.sections)}
<h2 id="figures">Figures</h2>
{figures_html(page.figures)}
<h2 id="commands">Commands</h2>
{commands}
<h2 id="provenance">Provenance</h2>
<dl class="prov">{prov}</dl>
</body>
</html>
"""


def readable(kind: str, path: Path, draw: Callable[[], T], what: str) -> T:
    """``draw()``, its result; where it fails on what a hand-edited record holds, one CacheError line
    naming the folder. The readers (report/folders.py, compare/records.py) check each field the
    terminal and the page read; this is the last resort for a field or a combination they do not
    check, which is the file's damage, not a bug of the report: a traceback would tell the user less."""
    try:
        return draw()
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, StopIteration) as e:
        # a missing field is named as a field, not as Python's "KeyError: 'max_drop'"
        why = f"it lacks the field {e.args[0]!r}" if isinstance(e, KeyError) and e.args else f"{type(e).__name__}: {e}"
        raise CacheError(
            f"{path} holds a {kind} record {what} cannot read ({why}); rerun `laya-inspect {kind}` to rewrite it"
        ) from None


def page(kind: str, path: Path, shown: Path, title: str, build: Callable[[], dict[str, Any]]) -> str:
    """The page of the folder at ``path`` (named ``shown`` on it) from the parts ``build`` returns:
    its subtitle, reading, sections, figures, commands and provenance."""
    parts = readable(kind, path, build, "the page")
    parts["provenance"] = [*parts["provenance"], *page_facts()]
    return render(Page(title=f"{title}: {shown.name or shown}", **parts))


def cache_facts(
    path: str | None, recorded: list[tuple[str, str]], made: Mapping[str, Any] | None = None
) -> list[tuple[str, str]]:
    """What the cache file itself records, when it is still there; else what the summary recorded
    (``recorded``, and ``made``: the cache attributes it kept of how the features were made)."""
    from ..cache.store import FeatureStore
    from ..head_dir import cache_warnings

    try:
        if not path:
            raise FileNotFoundError("no path recorded")
        with FeatureStore(path) as store:
            attrs = store.attrs
            versions = (("laya-inspect", "tool_version"), ("torch", "torch_version"))
            facts = [
                ("cache fingerprint", store.fingerprint),
                ("backbone", str(attrs.get("model_spec"))),
                ("weights sha256", str(attrs.get("weights_sha256") or "none (random or built-in weights)")),
                ("data", str(attrs.get("data_spec"))),
                ("cache written by", ", ".join(f"{n} {attrs.get(k) or '(version not recorded)'}" for n, k in versions)),
                ("cache written at", str(attrs.get("created_at"))),
            ]
            facts += made_facts(attrs)
            if attrs.get("random_init"):
                facts.append(("note", "the backbone had random weights (--random-init)"))
            facts += [("cache warning", w) for w in cache_warnings(store)]
            return facts
    except (LayaError, OSError) as e:
        said = made_facts(made if isinstance(made, Mapping) else {})
        return [*recorded, *said, ("cache file", f"not read ({e}); the facts above are those the summary recorded")]


def page_facts() -> list[tuple[str, str]]:
    versions = []
    for pkg in ("numpy", "torch", "matplotlib"):
        try:
            versions.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            continue
    return [(WRITTEN_BY, f"laya-inspect {__version__}, Python {platform.python_version()}, {', '.join(versions)}")]


def cli_line(name: str, config_cls: type, config: dict[str, Any], **kw: Any) -> str:
    """The command line that rebuilds ``config``, or its JSON when this version cannot rebuild it."""
    fields = {f.name for f in dataclasses.fields(config_cls)}
    try:
        return shlex.join(command_line(name, config_cls(**{k: v for k, v in config.items() if k in fields}), **kw))
    except (LayaError, TypeError, ValueError):
        return f"laya-inspect {name} … with these settings: {json.dumps(config, ensure_ascii=False)}"
