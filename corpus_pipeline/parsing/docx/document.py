"""The DOCX entry point (`parse_docx`) and the walk of the document body: paragraphs, tables,
content controls and text boxes in source order, each block isolated (`ctx.part`).
"""

from __future__ import annotations

from lxml import etree

from corpus_pipeline.contracts import LinkSpan, RowType
from corpus_pipeline.parsing.base import Locator, ParseContext
from corpus_pipeline.parsing.dates import declare_core_properties
from corpus_pipeline.parsing.docx.inline import ImageRef, normalise
from corpus_pipeline.parsing.docx.ooxml import (
    DELETED,
    MC_NS,
    W_NS,
    WRAPPERS,
    local_name,
    namespace,
    val,
    w,
)
from corpus_pipeline.parsing.docx.package import open_package
from corpus_pipeline.parsing.docx.reader import DocxReader
from corpus_pipeline.parsing.docx.tables import TableReader


def _is_toc_sdt(sdt: etree._Element) -> bool:
    gallery = sdt.find(f"{w('sdtPr')}/{w('docPartObj')}/{w('docPartGallery')}")
    return "table of contents" in (val(gallery) or "").lower()


class BodyWalker:
    """Emits the rows of the body (and of text boxes and content controls) in source order."""

    def __init__(self, reader: DocxReader) -> None:
        self.r = reader
        self.ctx = reader.ctx
        self.tables = TableReader(reader)

    def blocks(self, container: etree._Element, loc: Locator, in_toc: bool) -> None:
        for child in container.iterchildren():
            name = local_name(child)
            ns = namespace(child)
            if ns == MC_NS and name == "AlternateContent":
                choice = child.find(MC_NS("Choice"))
                if choice is not None:
                    self.blocks(choice, loc, in_toc)
                continue
            if ns != W_NS or name in DELETED:
                continue
            if name == "p":
                with self.ctx.part(
                    "paragraph", "a paragraph could not be read; skipped", code="paragraph.failed"
                ):
                    self.paragraph(child, loc.next("p"), in_toc)
            elif name == "tbl":
                with self.ctx.part(
                    "table", "a table could not be read; skipped", code="table.failed"
                ):
                    self.table(child, loc.next("tbl"))
            elif name == "sdt":
                content = child.find(w("sdtContent"))
                if content is not None:
                    self.blocks(content, Locator(loc.next("sdt")), in_toc or _is_toc_sdt(child))
            elif name in WRAPPERS:
                self.blocks(child, Locator(loc.next(name)), in_toc)

    def paragraph(self, p: etree._Element, where: str, in_toc: bool) -> None:
        inline = self.r.inline(p)
        numbered, label = self.r.label(p)
        style_id = self.r.style_id(p)
        styles = self.r.styles
        level = None if in_toc else self.r.heading_level(p)
        row_type = RowType.PARAGRAPH
        if in_toc or styles.named(style_id, r"toc( heading|\s*\d)"):
            row_type = RowType.TOC
        elif level is not None:
            row_type = RowType.HEADING
        elif styles.named(style_id, r"caption"):
            row_type = RowType.CAPTION
        elif numbered or (styles.named(style_id, r"list\b.*") and not self._numbering_removed(p)):
            row_type = RowType.LIST_ITEM
        single_line = row_type in (RowType.HEADING, RowType.TOC)
        text, links = normalise(inline.text, inline.links, single_line)
        if text and row_type is RowType.HEADING and label:
            shift = len(label)
            text = label + text
            links = [
                LinkSpan(start=s.start + shift, end=s.end + shift, target=s.target) for s in links
            ]
        if text:
            self.ctx.emit(row_type, text, where, heading_level=level, links=links)
        self.images(inline.images, where)
        for i, box in enumerate(inline.textboxes):
            self.blocks(box, Locator(f"{where}/txbx[{i}]"), in_toc)

    @staticmethod
    def _numbering_removed(p: etree._Element) -> bool:
        return val(p.find(f"{w('pPr')}/{w('numPr')}/{w('numId')}")) == "0"

    def images(self, refs: list[ImageRef], where: str) -> None:
        for i, ref in enumerate(refs):
            data = self.r.image_bytes(ref.rel_id)
            if data:
                self.ctx.emit_image(data, ref.alt, f"{where}/img[{i}]")

    def table(self, tbl: etree._Element, where: str) -> None:
        images: list[ImageRef] = []
        grid = self.tables.grid(tbl, images)
        self.ctx.emit_table(grid, where)
        self.images(images, where)


def parse_docx(ctx: ParseContext) -> None:
    """Emit the document body's blocks in source order (see the module docstring for why)."""
    document = open_package(ctx.source_path, ctx)
    declare_core_properties(ctx, document)
    reader = DocxReader(ctx, document)
    BodyWalker(reader).blocks(reader.body, Locator("body"), in_toc=False)
