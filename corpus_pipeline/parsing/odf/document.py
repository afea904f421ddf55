"""The ODT entry point (`parse_odt`) and the walk of `office:text` in source order: headings by
outline level, paragraphs, list items, tables, pictures, text boxes, notes and indexes, each
block isolated (`ctx.part`).

Levels are the headings' `text:outline-level`; a paragraph styled "Title" is level 1 and then
pushes every heading one level down (as the DOCX parser does with Word's Title style), so the
document's title heads its chapters. Footnotes and endnotes follow the paragraph that cites
them ("Footnote 1: …"), reviewer comments likewise.
"""

from __future__ import annotations

from lxml import etree

from corpus_pipeline.contracts import RowType
from corpus_pipeline.parsing.base import Locator, ParseContext
from corpus_pipeline.parsing.docx.inline import normalise
from corpus_pipeline.parsing.odf.inline import read_inline
from corpus_pipeline.parsing.odf.names import draw, int_attr, office, table, text
from corpus_pipeline.parsing.odf.package import (
    OdfDocument,
    emit_frame_image,
    is_object_frame,
    read_body,
)
from corpus_pipeline.parsing.odf.tables import table_grid

# Indexes an editor generates (their entries are navigation, read as TOC rows).
_INDEXES = frozenset(
    text(n)
    for n in (
        "table-of-content", "illustration-index", "table-index", "object-index",
        "user-index", "alphabetical-index", "bibliography",
    )
)  # fmt: skip
# Declarations and settings inside the body that are not content.
_NOT_CONTENT = frozenset(
    {
        *(text(n) for n in ("tracked-changes", "sequence-decls", "variable-decls",
                            "user-field-decls", "dde-connection-decls", "soft-page-break",
                            "index-title-template", "bookmark", "bookmark-start", "bookmark-end")),
        *(table(n) for n in ("calculation-settings", "content-validations", "label-ranges",
                             "named-expressions", "database-ranges")),
        office("forms"),
    }
)  # fmt: skip


class TextWalker:
    """Emits the rows of an ODT body (and of its text boxes) in source order."""

    def __init__(
        self,
        ctx: ParseContext,
        doc: OdfDocument,
        root: etree._Element,
        pages: list[int] | None = None,
    ) -> None:
        self.ctx = ctx
        self.doc = doc
        self.title_offset = 1 if self._has_title(root) else 0
        self.pages = pages  # a slide's rows cite their slide

    def _has_title(self, root: etree._Element) -> bool:
        return any(
            self.doc.styles.named(p.get(text("style-name")), "Title")
            and "".join(p.itertext()).strip()
            for p in root.iter(text("p"))
        )

    def blocks(self, container: etree._Element, loc: Locator, kind: RowType) -> None:
        """`kind`: how a plain paragraph here reads (PARAGRAPH, LIST_ITEM in a list, TOC)."""
        for child in container.iterchildren():
            tag = child.tag
            if not isinstance(tag, str) or tag in _NOT_CONTENT:
                continue
            if child.get(text("display")) == "none":  # a hidden section
                continue
            if tag in (text("p"), text("h")):
                name = "h" if tag == text("h") else "p"
                with self.ctx.part("paragraph", "a paragraph could not be read; skipped"):
                    self.paragraph(child, loc.next(name), kind)
            elif tag == text("list"):
                self.list(child, Locator(loc.next("list")))
            elif tag == table("table"):
                with self.ctx.part("table", "a table could not be read; skipped"):
                    self.table(child, loc.next("table"))
            elif tag in _INDEXES:
                index_body = child.find(text("index-body"))
                if index_body is not None:
                    self.blocks(index_body, Locator(loc.next("index")), RowType.TOC)
            elif draw.owns(tag):
                self.drawing(child, loc.next("frame"), kind)
            else:  # sections, index titles, change regions: containers of blocks
                self.blocks(child, Locator(loc.next(etree.QName(child).localname)), kind)

    def list(self, el: etree._Element, loc: Locator) -> None:
        for item in el.iterchildren(text("list-item"), text("list-header")):
            self.blocks(item, Locator(loc.next("item")), RowType.LIST_ITEM)

    def paragraph(self, p: etree._Element, where: str, kind: RowType) -> None:
        inline = read_inline(p)
        styles = self.doc.styles
        style_name = p.get(text("style-name"))
        level: int | None = None
        if p.tag == text("h"):
            outline = p.get(text("outline-level"))
            level = int_attr(outline, default=styles.outline_level(style_name) or 1, most=10)
        elif styles.named(style_name, "Title"):
            level = 1
        elif kind is not RowType.TOC and styles.outline_level(style_name) is not None:
            level = styles.outline_level(style_name)
        row_type = kind
        if level is not None and kind is not RowType.TOC:
            row_type = RowType.HEADING
            if not styles.named(style_name, "Title"):
                level = min(9, level + self.title_offset)
        elif styles.named(style_name, "Caption"):
            row_type = RowType.CAPTION
        single_line = row_type in (RowType.HEADING, RowType.TOC)
        value, links = normalise(inline.text, inline.links, single_line)
        if value:
            heading_level = level if row_type is RowType.HEADING else None
            self.ctx.emit(
                row_type,
                value,
                where,
                heading_level=heading_level,
                links=links,
                page_numbers=self.pages,
            )
        for note in inline.notes:
            label = f"{note.kind} {note.citation}" if note.citation else note.kind
            self.note(f"{label}: {note.text}", where)
        for author, comment in inline.comments:
            by = f" by {author}" if author else ""
            self.note(f"Reviewer comment{by}: {comment}", where)
        for i, frame in enumerate(inline.frames):
            self.drawing(frame, f"{where}/frame[{i}]", RowType.PARAGRAPH)
        for i, box in enumerate(inline.boxes):
            self.blocks(box, Locator(f"{where}/box[{i}]"), RowType.PARAGRAPH)

    def note(self, value: str, where: str) -> None:
        self.ctx.emit(RowType.PARAGRAPH, value, f"{where}/note", page_numbers=self.pages)

    def drawing(self, el: etree._Element, where: str, kind: RowType) -> None:
        """A frame (picture, text box), a group or a shape anchored to the page."""
        if el.tag == draw("frame"):
            box = el.find(draw("text-box"))
            if box is not None:
                self.blocks(box, Locator(f"{where}/box"), kind)
            elif is_object_frame(el):
                self.ctx.diagnostics.add(
                    "parse", "object.skipped", f"an embedded object at {where} is not read"
                )
            else:
                emit_frame_image(self.ctx, self.doc, el, where, self.pages)
        else:
            self.blocks(el, Locator(where), kind)

    def table(self, el: etree._Element, where: str) -> None:
        frames: list[etree._Element] = []
        self.ctx.emit_table(table_grid(el, frames), where, page_numbers=self.pages)
        for i, frame in enumerate(frames):
            emit_frame_image(self.ctx, self.doc, frame, f"{where}/frame[{i}]", self.pages)


def parse_odt(ctx: ParseContext) -> None:
    """Emit an OpenDocument text's blocks in source order (see the module docstring)."""

    def read(doc: OdfDocument, root: etree._Element) -> None:
        TextWalker(ctx, doc, root).blocks(root, Locator("text"), RowType.PARAGRAPH)

    read_body(ctx, "odt", "document", "text", read)
