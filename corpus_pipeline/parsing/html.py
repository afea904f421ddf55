"""HTML strategy: walk the DOM in reading order and emit typed rows.

Only what a reader sees is kept: scripts, styles, form controls, hidden elements and clearly
identifiable page chrome (edit links, citation superscripts) are dropped before the walk, so
search never indexes them. Wikipedia's navboxes are *not* dropped: their tables (authority
control) are part of the expected content.

The same walker serves raw HTML blocks inside Markdown (`emit_html_fragment`), and
`table_grid_from_element` is the single HTML-table → `TableGrid` conversion.
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
from dataclasses import dataclass, field, replace
from pathlib import Path

import lxml.html
from lxml import etree

from corpus_pipeline.contracts import LinkSpan, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.tables import GridBuilder, TableCell, TableGrid
from corpus_pipeline.parsing.text import decode_bytes

HtmlElement = lxml.html.HtmlElement

_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_DROP_TAGS = frozenset(
    {
        "script", "style", "noscript", "template", "head", "title", "meta", "link", "base",
        "iframe", "object", "embed", "canvas", "svg", "audio", "video", "source", "track",
        "map", "area", "button", "input", "select", "option", "optgroup", "datalist",
        "textarea", "output", "progress", "meter",
    }
)  # fmt: skip
# Class tokens of page chrome that is never content (MediaWiki edit links, skip links).
_DROP_CLASSES = frozenset({"mw-editsection", "mw-jump-link"})
# Superscripts with these classes are citation markers ([1]) or maintenance tags.
_DROP_SUP_CLASSES = frozenset({"reference", "noprint"})
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center", "dd",
        "details", "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
        "form", "header", "hgroup", "hr", "html", "legend", "li", "main", "menu", "nav", "ol",
        "p", "pre", "search", "section", "summary", "table", "tbody", "td", "tfoot", "th",
        "thead", "tr", "ul", *_HEADINGS,
    }
)  # fmt: skip
_LIST_TAGS = frozenset({"ul", "ol", "dl", "menu"})
# Inside a list item these start their own rows after the item's text.
_DEFERRED_IN_ITEM = frozenset({*_LIST_TAGS, "table", "pre", "blockquote", "figure", *_HEADINGS})
_HIDDEN_STYLE = re.compile(r"(?:display\s*:\s*none|visibility\s*:\s*hidden)", re.IGNORECASE)
_META_CHARSET = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE
)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_INVISIBLE = str.maketrans({"\u00ad": None, "\u200b": None, "\ufeff": None})
_MAX_SPAN = 1000


# --------------------------------------------------------------------------- inline text


@dataclass(frozen=True)
class PendingImage:
    """An image met inside a block; handled after the block's text row is emitted."""

    src: str
    alt: str
    location: str


@dataclass
class InlineText:
    """Accumulates rendered inline text with collapsed whitespace and exact link offsets.

    Whitespace is collapsed while appending (not afterwards), so the offsets recorded for
    links are offsets into the final row text. `preserve` keeps whitespace (for <pre>).
    """

    preserve: bool = False
    images: list[PendingImage] = field(default_factory=list)
    _parts: list[str] = field(default_factory=list)
    _length: int = 0
    _last: str = ""
    _pending_space: bool = False
    _links: list[tuple[int, int, str]] = field(default_factory=list)

    def add(self, text: str | None) -> None:
        if not text:
            return
        text = text.translate(_INVISIBLE)
        if self.preserve:
            self._append(text.replace("\r\n", "\n").replace("\r", "\n"))
            return
        for token in re.split(r"(\s+)", text):
            if not token:
                continue
            if token.isspace():
                self._pending_space = self._length > 0
                continue
            if self._pending_space and self._last not in ("\n", " "):
                self._append(" ")
            self._pending_space = False
            self._append(token)

    def newline(self) -> None:
        """A hard line break (<br>, Markdown hard break)."""
        if self._length > 0 or self.preserve:
            self._append("\n")
        self._pending_space = False

    def soft_break(self, separator: str) -> None:
        """Boundary of a block element inside inline content: a space or a single newline."""
        if self.preserve:
            if self._length > 0 and self._last != "\n":
                self._append("\n")
            return
        if separator == "\n":
            if self._length > 0 and self._last != "\n":
                self._append("\n")
            self._pending_space = False
        elif self._length > 0:
            self._pending_space = True

    def mark(self) -> int:
        return self._length

    def link(self, start: int, target: str) -> None:
        """Record a link whose text was appended since `mark()` returned `start`."""
        if target:
            self._links.append((start, self._length, target))

    def result(self) -> tuple[str, list[LinkSpan]]:
        """The row text (outer whitespace stripped) and link spans into it."""
        raw = "".join(self._parts)
        if self.preserve:
            raw = raw.removeprefix("\n")
        lead = len(raw) - len(raw.lstrip())
        text = raw.strip()
        links: list[LinkSpan] = []
        for raw_start, raw_end, target in self._links:
            start = max(raw_start - lead, 0)
            end = min(raw_end - lead, len(text))
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if end > start:
                links.append(LinkSpan(start=start, end=end, target=target))
        return text, links

    def _append(self, text: str) -> None:
        self._parts.append(text)
        self._length += len(text)
        self._last = text[-1]


# --------------------------------------------------------------------------- images


def decode_data_uri(src: str) -> bytes | None:
    """Bytes of a `data:` URI, or None when it is not one or is malformed."""
    if not src.lower().startswith("data:") or "," not in src:
        return None
    header, _, payload = src[5:].partition(",")
    if header.lower().endswith(";base64"):
        try:
            return base64.b64decode("".join(payload.split()), validate=False)
        except (binascii.Error, ValueError):
            return None
    return urllib.parse.unquote_to_bytes(payload)


def emit_pending_image(
    ctx: ParseContext, image: PendingImage, base_dir: Path | None = None
) -> None:
    """Store an embedded (`data:`) image; other sources usually cannot be read: keep the alt text.

    Remote URLs are never fetched (no network while parsing). A relative path is only read
    when `base_dir` is given and the file really sits inside it (the source is normally
    stored alone, so this mostly fails). Diagnostics name the location, never the URL.
    """
    alt = " ".join(image.alt.split())
    src = image.src.strip()
    if src.lower().startswith("data:"):
        data = decode_data_uri(src)
        if data is None:
            ctx.diagnostics.add(
                "parse",
                "image.bad_data_uri",
                f"embedded image at {image.location} is malformed; its alt text is kept",
                lost="image",
            )
        elif ctx.emit_image(data, alt, image.location) is not None:
            return
    else:
        local = _local_file(src, base_dir)
        if local is not None and ctx.emit_image(local, alt, image.location) is not None:
            return
        if local is None:
            kind = "missing" if not src else "remote" if _REMOTE.match(src) else "relative"
            ctx.diagnostics.add(
                "parse",
                "image.unavailable",
                f"{kind} image source at {image.location} not stored",
                lost="image",
            )
    if alt:
        ctx.emit(RowType.PARAGRAPH, alt, image.location)


_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//|^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def _local_file(src: str, base_dir: Path | None) -> bytes | None:
    if base_dir is None or not src or _REMOTE.match(src):
        return None
    relative = urllib.parse.unquote(src.split("#", 1)[0].split("?", 1)[0])
    try:
        base = base_dir.resolve()
        path = (base / relative).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            return None
        return path.read_bytes()
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class _RawCell:
    text: str
    rowspan: int
    colspan: int
    header: bool


def table_grid_from_element(el: HtmlElement) -> TableGrid:
    """An HTML <table> as a `TableGrid`: spans honoured, nested tables flattened into cell text.

    Rows that hold only rowspanning cells and leave columns empty (a year cell alone in its
    own <tr>, as pivot tables are often written) are folded into the next row, and rowspans
    that overrun the table are clamped, so the grid matches what the author meant.
    """
    rows: list[list[_RawCell]] = []
    head_rows = 0
    for tr, in_thead in _table_rows(el):
        cells = [_raw_cell(cell) for cell in tr if _tag(cell) in ("td", "th")]
        if not cells:
            continue
        rows.append(cells)
        if in_thead and head_rows == len(rows) - 1:
            head_rows += 1
    rows, head_rows = _fold_spanner_rows(rows, head_rows)
    builder = GridBuilder(max_rows=len(rows))
    for r, cells in enumerate(rows):
        for cell in cells:
            builder.add(r, cell.text, cell.rowspan, cell.colspan, cell.header)
    grid = builder.build(caption=_caption_of(el), header_rows=0)
    grid.header_rows = _header_rows(grid.rows(), head_rows)
    return grid


def _table_rows(table: HtmlElement) -> list[tuple[HtmlElement, bool]]:
    """The table's own <tr>s in source order (not those of nested tables)."""
    out: list[tuple[HtmlElement, bool]] = []
    for child in table:
        tag = _tag(child)
        if tag == "tr":
            out.append((child, False))
        elif tag in ("thead", "tbody", "tfoot"):
            out.extend((tr, tag == "thead") for tr in child if _tag(tr) == "tr")
    return out


def _raw_cell(cell: HtmlElement) -> _RawCell:
    buf = InlineText()
    _collect_children(cell, buf, separator="\n", with_images=False)
    text, _ = buf.result()
    return _RawCell(
        text=text,
        rowspan=_span(cell.get("rowspan")),
        colspan=_span(cell.get("colspan")),
        header=_tag(cell) == "th",
    )


def _span(value: str | None) -> int:
    try:
        span = int((value or "1").strip())
    except ValueError:
        return 1
    # rowspan="0" means "to the end of the section": the grid clamp handles it.
    return _MAX_SPAN if span == 0 else max(1, min(span, _MAX_SPAN))


def _fold_spanner_rows(
    rows: list[list[_RawCell]], head_rows: int
) -> tuple[list[list[_RawCell]], int]:
    """Fold rows that hold only rowspanning cells and leave columns empty into the next row."""
    rows = [list(r) for r in rows]
    changed = True
    while changed:
        changed = False
        width, covered = _coverage(rows)
        for i in range(len(rows) - 1):
            if all(c.rowspan > 1 for c in rows[i]) and covered[i] < width:
                # Cells anchored above that span through row i lose that row.
                for j in range(i):
                    rows[j] = [
                        replace(c, rowspan=c.rowspan - 1) if j + c.rowspan > i else c
                        for c in rows[j]
                    ]
                moved = [replace(c, rowspan=c.rowspan - 1) for c in rows[i]]
                rows[i + 1] = moved + rows[i + 1]
                del rows[i]
                if i < head_rows:
                    head_rows -= 1
                changed = True
                break
    return rows, head_rows


def _coverage(rows: list[list[_RawCell]]) -> tuple[int, list[int]]:
    """Table width and the number of occupied columns per row (HTML placement rules)."""
    occupied: set[tuple[int, int]] = set()
    n = len(rows)
    for r, cells in enumerate(rows):
        col = 0
        for cell in cells:
            while (r, col) in occupied:
                col += 1
            for dr in range(min(cell.rowspan, n - r)):
                for dc in range(cell.colspan):
                    occupied.add((r + dr, col + dc))
            col += cell.colspan
    width = 1 + max((c for _, c in occupied), default=-1)
    covered = [0] * n
    for r, _ in occupied:
        covered[r] += 1
    return width, covered


def _header_rows(rows: list[list[TableCell]], head_rows: int) -> int:
    """<thead> rows, else leading rows of only <th>; never cut through a rowspan."""
    if head_rows == 0:
        while head_rows < len(rows) and rows[head_rows] and all(c.header for c in rows[head_rows]):
            head_rows += 1
        if head_rows == len(rows) and head_rows > 1:
            head_rows = 1  # a table of only <th> is not all header
    while head_rows > 0 and any(
        c.row + c.rowspan > head_rows for row in rows[:head_rows] for c in row
    ):
        head_rows -= 1
    return head_rows


def _caption_of(table: HtmlElement) -> str | None:
    for child in table:
        if _tag(child) == "caption":
            buf = InlineText()
            _collect_children(child, buf, separator=" ", with_images=False)
            text, _ = buf.result()
            return text or None
    return None


# --------------------------------------------------------------------------- inline walk


def _tag(el: object) -> str:
    tag = getattr(el, "tag", None)
    return tag.lower() if isinstance(tag, str) else ""


def _collect_children(
    el: HtmlElement,
    buf: InlineText,
    *,
    separator: str,
    with_images: bool = True,
    deferred: list[HtmlElement] | None = None,
) -> None:
    buf.add(el.text)
    for child in el:
        if _tag(child):
            _collect(child, buf, separator=separator, with_images=with_images, deferred=deferred)
        buf.add(child.tail)


def _collect(
    el: HtmlElement,
    buf: InlineText,
    *,
    separator: str,
    with_images: bool = True,
    deferred: list[HtmlElement] | None = None,
) -> None:
    """Append an element's rendered text to `buf`; blocks become `separator` boundaries."""
    tag = _tag(el)
    if tag == "br":
        buf.newline()
        return
    if tag == "img":
        if with_images:
            buf.images.append(PendingImage(el.get("src") or "", el.get("alt") or "", _path_of(el)))
        return
    if deferred is not None and tag in _DEFERRED_IN_ITEM:
        deferred.append(el)
        return
    block = tag in _BLOCK_TAGS
    if block:
        buf.soft_break(separator)
    href = el.get("href") if tag == "a" else None
    start = buf.mark()
    _collect_children(el, buf, separator=separator, with_images=with_images, deferred=deferred)
    if href and not href.strip().lower().startswith("javascript:"):
        buf.link(start, href.strip())
    if block:
        buf.soft_break(separator)


def _path_of(el: HtmlElement) -> str:
    return el.getroottree().getpath(el).lstrip("/")


# --------------------------------------------------------------------------- block walk


class _Walker:
    """Emits rows for a DOM subtree in reading order."""

    def __init__(self, ctx: ParseContext, root: HtmlElement, location: str | None = None) -> None:
        self.ctx = ctx
        self.location = location
        self.has_blocks = _elements_with_block_descendants(root)

    def loc(self, el: HtmlElement) -> str:
        return self.location or _path_of(el)

    def container(self, el: HtmlElement) -> None:
        """Runs of inline content become paragraphs; block children are dispatched."""
        buf = InlineText()
        buf.add(el.text)
        for child in el:
            tag = _tag(child)
            if tag and (tag in _BLOCK_TAGS or child in self.has_blocks or _heading_level(child)):
                self.flush(buf, el)
                buf = InlineText()
                self.dispatch(child)
            elif tag:
                _collect(child, buf, separator=" ")
            buf.add(child.tail)
        self.flush(buf, el)

    def flush(
        self, buf: InlineText, el: HtmlElement, row_type: RowType = RowType.PARAGRAPH
    ) -> None:
        text, links = buf.result()
        if text:
            self.ctx.emit(row_type, text, self.loc(el), links=links)
        for image in buf.images:
            self.emit_image(image)

    def emit_image(self, image: PendingImage) -> None:
        if self.location is not None:
            image = replace(image, location=self.location)
        emit_pending_image(self.ctx, image)

    def dispatch(self, el: HtmlElement) -> None:
        tag = _tag(el)
        level = _heading_level(el)
        if level is not None:
            buf = InlineText()
            _collect_children(el, buf, separator=" ")
            text, links = buf.result()
            if text:
                # A <br> in a title is layout; same-length swap keeps link offsets valid.
                text = text.replace("\n", " ")
                self.ctx.emit(RowType.HEADING, text, self.loc(el), heading_level=level, links=links)
            for image in buf.images:
                self.emit_image(image)
        elif tag == "table":
            self.table(el)
        elif tag == "li":
            self.list_item(el)
        elif tag == "pre":
            buf = InlineText(preserve=True)
            _collect_children(el, buf, separator="\n")
            self.flush(buf, el)
        elif tag in ("figcaption", "caption", "legend", "summary"):
            buf = InlineText()
            _collect_children(el, buf, separator=" ")
            self.flush(
                buf, el, RowType.CAPTION if tag in ("figcaption", "caption") else RowType.PARAGRAPH
            )
        elif tag == "hr":
            return
        else:
            self.container(el)

    def list_item(self, el: HtmlElement) -> None:
        """The item's own text is one row; nested lists and blocks follow as their own rows."""
        deferred: list[HtmlElement] = []
        buf = InlineText()
        _collect_children(el, buf, separator=" ", deferred=deferred)
        self.flush(buf, el, RowType.LIST_ITEM)
        for child in deferred:
            self.dispatch(child)

    def table(self, el: HtmlElement) -> None:
        grid = table_grid_from_element(el)
        if grid.num_rows <= 1 and grid.num_cols <= 1:
            # A one-cell table is layout, not data: read its content as ordinary blocks.
            for cell in el.iter("td", "th"):
                self.container(cell)
                break
            return
        if grid.caption:
            self.ctx.emit(RowType.CAPTION, grid.caption, self.loc(el))
        self.ctx.emit_table(grid, self.loc(el))
        for img in el.iter("img"):
            src = img.get("src") or ""
            if src.lower().startswith("data:"):
                self.emit_image(PendingImage(src, img.get("alt") or "", _path_of(img)))
            else:
                self.ctx.diagnostics.add(
                    "parse", "image.unavailable", f"image in table at {self.loc(img)} not stored"
                )


def _heading_level(el: HtmlElement) -> int | None:
    tag = _tag(el)
    if tag in _HEADINGS:
        return _HEADINGS[tag]
    if el.get("role") == "heading":
        level = (el.get("aria-level") or "2").strip()
        return min(int(level), 9) if level.isdigit() and int(level) > 0 else 2
    return None


def _elements_with_block_descendants(root: HtmlElement) -> set[HtmlElement]:
    """Inline elements (e.g. <a> around a <div>) that must be walked as blocks."""
    marked: set[HtmlElement] = set()
    for el in root.iter():
        if _tag(el) in _BLOCK_TAGS or (_tag(el) and _heading_level(el)):
            parent = el.getparent()
            while parent is not None and parent not in marked:
                marked.add(parent)
                parent = parent.getparent()
    return marked


def _drop_non_content(root: HtmlElement) -> None:
    """Remove what a reader never sees, keeping the tail text of removed elements.

    Comments need no removal: the walkers skip them and keep their tails.
    """
    doomed: list[HtmlElement] = []
    for el in root.iter():
        tag = _tag(el)
        if not tag or el is root:
            continue
        classes = set((el.get("class") or "").split())
        if (
            tag in _DROP_TAGS
            or el.get("hidden") is not None
            or el.get("aria-hidden") == "true"
            or _HIDDEN_STYLE.search(el.get("style") or "")
            or classes & _DROP_CLASSES
            or (tag == "sup" and classes & _DROP_SUP_CLASSES)
        ):
            doomed.append(el)
    for el in doomed:
        el.drop_tree()


# --------------------------------------------------------------------------- entry points


def parse_html(ctx: ParseContext) -> None:
    """Emit headings, paragraphs, list items, captions, tables and images of an HTML file."""
    try:
        data = ctx.source_path.read_bytes()
    except OSError as exc:
        ctx.diagnostics.add("parse", "document.unreadable", type(exc).__name__, level="error")
        return
    declared = _META_CHARSET.search(data[:4096])
    text = decode_bytes(
        data, ctx.diagnostics, declared=declared.group(1).decode("ascii") if declared else None
    )
    if text is None:
        return
    text = _XML_DECL.sub("", text, count=1)
    if not text.strip():
        ctx.diagnostics.add("parse", "document.empty", "no HTML to parse", level="error")
        return
    try:
        root = lxml.html.document_fromstring(text)
    except (etree.ParserError, ValueError) as exc:
        ctx.diagnostics.add("parse", "html.unparseable", type(exc).__name__, level="error")
        return
    _drop_non_content(root)
    body = root.find("body")
    start = body if body is not None else root
    before = len(ctx.rows)
    _Walker(ctx, start).container(start)
    if len(ctx.rows) == before:
        ctx.diagnostics.add("parse", "document.empty", "no visible text in the HTML", level="error")


def emit_html_fragment(ctx: ParseContext, fragment: str, source_location: str) -> None:
    """Emit rows for an HTML snippet (a raw HTML block in Markdown) with one fixed location."""
    if not fragment.strip():
        return
    try:
        root = lxml.html.fragment_fromstring(fragment, create_parent="div")
    except (etree.ParserError, ValueError) as exc:
        ctx.diagnostics.add(
            "parse", "html.unparseable", f"HTML block at {source_location}: {type(exc).__name__}"
        )
        return
    _drop_non_content(root)
    _Walker(ctx, root, location=source_location).container(root)
