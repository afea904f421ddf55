"""Markdown strategy: markdown-it's syntax tree → rows in reading order.

Row text is the *rendered* inline text (no `**`, no link syntax), so link offsets point at
what a reader sees. Raw HTML blocks go through the HTML walker, so an HTML table or heading
inside Markdown is parsed exactly like one in an HTML file.
"""

from __future__ import annotations

import re

import lxml.html
from lxml import etree
from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from corpus_pipeline.common.errors import NestingTooDeepError
from corpus_pipeline.contracts import RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.html import emit_html_fragment, emit_pending_image
from corpus_pipeline.parsing.html_inline import InlineText, PendingImage
from corpus_pipeline.parsing.tables import GridBuilder, TableGrid
from corpus_pipeline.parsing.text import line_range, read_source_text

_BR = re.compile(r"^<br\s*/?>$", re.IGNORECASE)


# Blocks nested in blocks (lists in lists, quotes in quotes) at most. The reader skips what
# lies deeper without a word, so a file that reaches the bound is refused, not half read.
MAX_NESTING = 64


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable(["table", "strikethrough"])
    try:
        from mdit_py_plugins.front_matter import front_matter_plugin
    except ImportError:  # optional: without it front matter renders as a rule + paragraph
        return md
    return md.use(front_matter_plugin)


def parse_markdown(ctx: ParseContext) -> None:
    """Emit headings, paragraphs, list items, code, tables and images of a Markdown file."""
    text = read_source_text(ctx, "Markdown")
    if text is None:
        return
    tokens = _markdown().parse(text)
    if any(token.level >= MAX_NESTING - 1 for token in tokens):
        raise NestingTooDeepError("markdown", "blocks", MAX_NESTING)
    tree = SyntaxTreeNode(tokens)
    before = len(ctx.rows)
    _Emitter(ctx).blocks(tree.children, "lines 1-1")
    if len(ctx.rows) == before:
        ctx.diagnostics.add(
            "parse", "document.empty", "no visible text in the Markdown", level="error"
        )


class _Emitter:
    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx

    def blocks(self, nodes: list[SyntaxTreeNode], fallback: str) -> None:
        for node in nodes:
            self.block(node, _location(node, fallback))

    def block(self, node: SyntaxTreeNode, location: str) -> None:
        kind = node.type
        if kind == "heading":
            self.emit_inline(node, RowType.HEADING, location, heading_level=int(node.tag[1:]))
        elif kind == "paragraph":
            self.emit_inline(node, RowType.PARAGRAPH, location)
        elif kind == "list_item":
            self.list_item(node, location)
        elif kind in ("fence", "code_block"):
            code = node.content.rstrip("\n")
            if code.strip():
                self.ctx.emit(RowType.PARAGRAPH, code, location)
        elif kind == "table":
            self.table(node, location)
        elif kind == "html_block":
            emit_html_fragment(self.ctx, node.content, location)
        elif kind in ("front_matter", "hr"):
            return
        else:  # lists, blockquotes and anything a plugin adds: walk the children
            self.blocks(node.children, location)

    def emit_inline(
        self,
        node: SyntaxTreeNode,
        row_type: RowType,
        location: str,
        heading_level: int | None = None,
    ) -> None:
        buf = InlineText()
        for child in node.children:
            _render_inline(child, buf, location)
        self.flush(buf, row_type, location, heading_level)

    def flush(
        self,
        buf: InlineText,
        row_type: RowType,
        location: str,
        heading_level: int | None = None,
    ) -> None:
        text, links = buf.result()
        if text:
            self.ctx.emit(row_type, text, location, heading_level=heading_level, links=links)
        for image in buf.images:
            emit_pending_image(self.ctx, image, base_dir=self.ctx.source_path.parent)

    def list_item(self, node: SyntaxTreeNode, location: str) -> None:
        """One row per item (its paragraphs); nested lists and other blocks follow."""
        buf = InlineText()
        rest: list[SyntaxTreeNode] = []
        for child in node.children:
            if child.type == "paragraph":
                buf.soft_break("\n")
                for inline in child.children:
                    _render_inline(inline, buf, location)
            else:
                rest.append(child)
        self.flush(buf, RowType.LIST_ITEM, location)
        self.blocks(rest, location)

    def table(self, node: SyntaxTreeNode, location: str) -> None:
        self.ctx.emit_table(table_grid_from_markdown(node, location), location)


def table_grid_from_markdown(node: SyntaxTreeNode, location: str = "") -> TableGrid:
    """A GFM table node as a grid; its <thead> row is the header."""
    rows: list[tuple[list[str], bool]] = []
    for section in node.children:
        for tr in section.children:
            cells = []
            for cell in tr.children:
                buf = InlineText()
                for child in cell.children:
                    _render_inline(child, buf, location)
                cells.append(buf.result()[0])
            rows.append((cells, section.type == "thead"))
    builder = GridBuilder(max_rows=len(rows))
    for r, (cells, header) in enumerate(rows):
        for text in cells:
            builder.add(r, text, header=header)
    return builder.build(header_rows=sum(1 for _, header in rows if header))


def _render_inline(node: SyntaxTreeNode, buf: InlineText, location: str) -> None:
    """Rendered text of an inline node; links recorded, images queued for after the row."""
    kind = node.type
    if kind in ("text", "code_inline"):
        buf.add(node.content)
    elif kind == "softbreak":
        buf.add(" ")
    elif kind == "hardbreak":
        buf.newline()
    elif kind == "image":
        alt = InlineText()
        for child in node.children:
            _render_inline(child, alt, location)
        buf.images.append(PendingImage(str(node.attrs.get("src", "")), alt.result()[0], location))
    elif kind == "html_inline":
        _inline_html(node.content, buf, location)
    elif kind == "link":
        start = buf.mark()
        for child in node.children:
            _render_inline(child, buf, location)
        buf.link(start, str(node.attrs.get("href", "")))
    else:  # em, strong, s, inline from plugins: their text counts
        if node.children:
            for child in node.children:
                _render_inline(child, buf, location)
        else:
            buf.add(node.content)


def _inline_html(tag: str, buf: InlineText, location: str) -> None:
    """Inline tags carry no text; only <br> and <img> matter."""
    if _BR.match(tag.strip()):
        buf.newline()
        return
    if not tag.lower().startswith("<img"):
        return
    try:
        img = lxml.html.fragment_fromstring(tag)
    except (etree.ParserError, ValueError):
        return
    buf.images.append(PendingImage(img.get("src") or "", img.get("alt") or "", location))


def _location(node: SyntaxTreeNode, fallback: str) -> str:
    if node.map is None:
        return fallback
    start, end = node.map
    return line_range(start + 1, max(end, start + 1))
