"""HTML strategy: walk the DOM in reading order and emit typed rows.

Only what a reader sees is kept: scripts, styles, form controls, hidden elements and clearly
identifiable page chrome (edit links, citation superscripts) are dropped before the walk, so
search never indexes them. Wikipedia's navboxes are *not* dropped: their tables (authority
control) are part of the expected content.

The same walker serves raw HTML blocks inside Markdown (`emit_html_fragment`). Inline content is
rendered by `html_inline`; tables are converted by `html_tables.table_grid_from_element`.
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
from dataclasses import replace
from pathlib import Path

import lxml.html
from lxml import etree

from corpus_pipeline.common.errors import NestingTooDeepError
from corpus_pipeline.contracts import RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.html_inline import (
    BLOCK_TAGS,
    HEADINGS,
    HtmlElement,
    InlineText,
    PendingImage,
    collect,
    collect_children,
    path_of,
    tag_of,
)
from corpus_pipeline.parsing.html_tables import table_grid_from_element
from corpus_pipeline.parsing.text import decode_bytes

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
_HIDDEN_STYLE = re.compile(r"(?:display\s*:\s*none|visibility\s*:\s*hidden)", re.IGNORECASE)
_META_CHARSET = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE
)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")


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


# --------------------------------------------------------------------------- block walk


class _Walker:
    """Emits rows for a DOM subtree in reading order."""

    def __init__(self, ctx: ParseContext, root: HtmlElement, location: str | None = None) -> None:
        self.ctx = ctx
        self.location = location
        self.has_blocks = _elements_with_block_descendants(root)

    def loc(self, el: HtmlElement) -> str:
        return self.location or path_of(el)

    def container(self, el: HtmlElement) -> None:
        """Runs of inline content become paragraphs; block children are dispatched."""
        buf = InlineText()
        buf.add(el.text)
        for child in el:
            tag = tag_of(child)
            if tag and (tag in BLOCK_TAGS or child in self.has_blocks or _heading_level(child)):
                self.flush(buf, el)
                buf = InlineText()
                self.dispatch(child)
            elif tag:
                collect(child, buf, separator=" ")
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
        tag = tag_of(el)
        level = _heading_level(el)
        if level is not None:
            buf = InlineText()
            collect_children(el, buf, separator=" ")
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
            collect_children(el, buf, separator="\n")
            self.flush(buf, el)
        elif tag in ("figcaption", "caption", "legend", "summary"):
            buf = InlineText()
            collect_children(el, buf, separator=" ")
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
        collect_children(el, buf, separator=" ", deferred=deferred)
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
                self.emit_image(PendingImage(src, img.get("alt") or "", path_of(img)))
            else:
                self.ctx.diagnostics.add(
                    "parse", "image.unavailable", f"image in table at {self.loc(img)} not stored"
                )


def _heading_level(el: HtmlElement) -> int | None:
    tag = tag_of(el)
    if tag in HEADINGS:
        return HEADINGS[tag]
    if el.get("role") == "heading":
        level = (el.get("aria-level") or "2").strip()
        return min(int(level), 9) if level.isdigit() and int(level) > 0 else 2
    return None


def _elements_with_block_descendants(root: HtmlElement) -> set[HtmlElement]:
    """Inline elements (e.g. <a> around a <div>) that must be walked as blocks."""
    marked: set[HtmlElement] = set()
    for el in root.iter():
        if tag_of(el) in BLOCK_TAGS or (tag_of(el) and _heading_level(el)):
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
        tag = tag_of(el)
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
    if _depth(root) > MAX_DEPTH:
        raise NestingTooDeepError("html", "elements", MAX_DEPTH)
    _drop_non_content(root)
    body = root.find("body")
    start = body if body is not None else root
    before = len(ctx.rows)
    _Walker(ctx, start).container(start)
    if len(ctx.rows) == before:
        ctx.diagnostics.add("parse", "document.empty", "no visible text in the HTML", level="error")


# Elements nested in elements at most: the parser (libxml2) drops what lies deeper without a
# word, so a document that reaches its bound is refused rather than read without it.
MAX_DEPTH = 255


def _depth(root: etree._Element) -> int:
    """The deepest element's depth (the root: 1), counted without recursion."""
    depth = deepest = 0
    for event, _ in etree.iterwalk(root, events=("start", "end")):
        depth += 1 if event == "start" else -1
        deepest = max(deepest, depth)
    return deepest


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
