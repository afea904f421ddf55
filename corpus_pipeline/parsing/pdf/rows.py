"""A page's rows: its ordered blocks, OCR paragraphs, tables and images emitted as headings,
paragraphs, list items, captions, tables and images (`RowWriter.emit_page`), with figure
captions joined to their images and table captions not emitted twice.
"""

from __future__ import annotations

import re
from typing import Any

from corpus_pipeline.contracts import RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.pdf.headings import CAPTION, Segment, join_lines, norm
from corpus_pipeline.parsing.pdf.layout import Block, Line
from corpus_pipeline.parsing.pdf.ocr import OcrParagraph, body_line_height, ocr_heading_level
from corpus_pipeline.parsing.pdf.page_content import PageContent

_BULLET = re.compile(r"^\s*(?:[•◦▪▫‣⁃●○■□➢►▶✓✔∙·\-–—*]|\(?[a-z0-9]{1,2}\))\s+")
_FIGURE_CAPTION = re.compile(r"^\s*(?:figure|fig\.|abbildung|abb\.|image|chart)\s*[\dIVX]+", re.I)


class RowWriter:
    """Emits the rows of one page after another into the parse context."""

    def __init__(self, ctx: ParseContext, category: str) -> None:
        self.ctx = ctx
        self.category = category  # the profile's: slides and atlas pages are sections

    def emit_page(
        self,
        p: PageContent,
        items: list[object],
        segments: dict[tuple[int, int], list[Segment]],
        first_parts: set[int],
    ) -> None:
        ctx = self.ctx
        pages = [p.number]
        for e in p.toc_unmatched:
            ctx.emit(
                RowType.HEADING,
                e.title,
                f"page {p.number} outline",
                heading_level=e.level,
                page_numbers=pages,
            )
        if self.category in ("slides", "atlas"):
            titled = any(
                s.heading
                for item in items
                if isinstance(item, Block)
                for s in segments.get((p.number, item.index), [])
            )
            if not titled:
                label = "Slide" if self.category == "slides" else "Page"
                ctx.emit(
                    RowType.HEADING,
                    f"{label} {p.number}",
                    f"page {p.number}",
                    heading_level=1,
                    page_numbers=pages,
                )
        body_height = body_line_height(p.ocr)
        captions = _image_captions(items, segments, p.number)
        table_captions = {norm(t.caption) for t in p.tables if getattr(t, "caption", None)}
        consumed = set(captions.values())
        for index, item in enumerate(items):
            if isinstance(item, Block):
                if index in consumed:
                    continue
                self._emit_block(p, item, segments.get((p.number, item.index), []), table_captions)
            elif isinstance(item, OcrParagraph):
                level = ocr_heading_level(item, body_height)
                ctx.emit(
                    RowType.HEADING if level else RowType.PARAGRAPH,
                    item.text,
                    f"page {p.number} ocr",
                    heading_level=level,
                    page_numbers=pages,
                )
            elif hasattr(item, "grid"):
                if id(item) in first_parts:
                    ctx.emit_table(
                        item.grid, f"page {p.number} table", list(getattr(item, "pages", pages))
                    )
            elif hasattr(item, "data"):
                caption_index = captions.get(index)
                caption = ""
                if caption_index is not None:
                    block = items[caption_index]
                    assert isinstance(block, Block)
                    caption = join_lines([ln.text for ln in block.lines])
                image: Any = item
                row = ctx.emit_image(image.data, caption, f"page {p.number} image", [image.page])
                if caption and row is not None:
                    ctx.emit(
                        RowType.CAPTION, caption, f"page {p.number} caption", page_numbers=pages
                    )

    def _emit_block(
        self, p: PageContent, block: Block, segs: list[Segment], table_captions: set[str]
    ) -> None:
        ctx = self.ctx
        loc = f"page {p.number} block {block.index}"
        pages = [p.number]
        run: list[Line] = []

        def flush() -> None:
            if not run:
                return
            for kind, text in _paragraphs(run):
                if CAPTION.match(text):
                    if norm(text) not in table_captions:
                        ctx.emit(RowType.CAPTION, text, loc, page_numbers=pages)
                else:
                    ctx.emit(kind, text, loc, page_numbers=pages)
            run.clear()

        for seg in segs:
            if seg.absorbed:
                continue
            if seg.heading and seg.level is not None:
                flush()
                ctx.emit(
                    RowType.HEADING, seg.text, loc, heading_level=seg.level, page_numbers=pages
                )
            else:
                run.extend(seg.lines)
        flush()


def _paragraphs(lines: list[Line]) -> list[tuple[RowType, str]]:
    """Paragraph text of a run of lines, split into list items at bullet lines."""
    out: list[tuple[RowType, list[str]]] = []
    for ln in lines:
        m = _BULLET.match(ln.text)
        if m:
            out.append(
                (
                    RowType.LIST_ITEM,
                    [ln.text[m.end() :] if ln.text[0] in "•◦▪▫‣⁃●○■□➢►▶✓✔∙·" else ln.text],
                )
            )
        elif out:
            out[-1][1].append(ln.text)
        else:
            out.append((RowType.PARAGRAPH, [ln.text]))
    return [(kind, join_lines(texts)) for kind, texts in out if join_lines(texts)]


def _image_captions(
    items: list[object], segments: dict[tuple[int, int], list[Segment]], page: int
) -> dict[int, int]:
    """Image item index → index of the adjacent figure-caption block (after, else before)."""
    out: dict[int, int] = {}
    used: set[int] = set()

    def caption_block(j: int) -> bool:
        if not 0 <= j < len(items) or j in used:
            return False
        item = items[j]
        if not isinstance(item, Block):
            return False
        if any(s.heading for s in segments.get((page, item.index), [])):
            return False
        return bool(_FIGURE_CAPTION.match(item.lines[0].text))

    for i, item in enumerate(items):
        if isinstance(item, Block) or not hasattr(item, "data"):
            continue
        for j in (i + 1, i - 1):
            if caption_block(j):
                out[i] = j
                used.add(j)
                break
    return out
