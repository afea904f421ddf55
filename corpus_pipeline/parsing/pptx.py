"""PPTX strategy (python-pptx): one level-1 section per slide, its shapes in reading order.

A slide's section is its title placeholder, else "Slide N" (its content must not fall under the
previous slide's title). Shapes are read top to bottom, then left to right, groups recursively:
text frames as paragraphs (bulleted placeholder text as list items), tables with
rowspan/colspan from merged cells, pictures as images (alt text from the shape's description),
charts as a line of text (kind, title, series and categories). Speaker notes and reviewer
comments (which python-pptx does not expose; read from the slide's comments part) follow the
slide's shapes, so a search finds them and cites the slide. Hidden slides are skipped (like
hidden sheets), with a diagnostic; slide numbers stay their positions in the deck.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lxml import etree
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER
from pptx.oxml.slide import CT_Slide

from corpus_pipeline.common.xmlnames import Namespace
from corpus_pipeline.contracts import RowType
from corpus_pipeline.parsing.base import ParseContext, load_or_corrupt
from corpus_pipeline.parsing.dates import declare_core_properties
from corpus_pipeline.parsing.tables import TableCell, TableGrid
from corpus_pipeline.parsing.zipped import check_expansion

_P = Namespace("http://schemas.openxmlformats.org/presentationml/2006/main")
_A = Namespace("http://schemas.openxmlformats.org/drawingml/2006/main")
_RT_COMMENTS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments"
_RT_AUTHORS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/commentAuthors"
_TITLES = (PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE)
_BULLETED = (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT, PP_PLACEHOLDER.VERTICAL_BODY)


def parse_pptx(ctx: ParseContext) -> None:
    check_expansion(ctx.source_path, "pptx", ctx.memory_limit_mb)
    presentation = load_or_corrupt(
        "pptx", "presentation", lambda: Presentation(str(ctx.source_path))
    )
    declare_core_properties(ctx, presentation)
    authors: dict[str, str] = {}
    with ctx.part(
        "comment authors",
        "the reviewer comment authors could not be read; comments are kept without them",
        code="comment_authors.failed",
    ):
        authors = _comment_authors(presentation)
    # Each slide is resolved through a relationship: one the package lacks makes it corrupt.
    slides = load_or_corrupt("pptx", "slide list", lambda: list(presentation.slides))
    for number, slide in enumerate(slides, start=1):
        if not isinstance(slide.element, CT_Slide):  # its root element is not a slide
            message = f"slide {number} is not a readable slide; skipped"
            ctx.diagnostics.add("parse", "slide.failed", message, page=number, lost="slide")
            continue
        if slide._element.get("show") in ("0", "false"):
            ctx.diagnostics.add("parse", "slide.hidden", f"slide {number} is hidden; skipped")
            continue
        # A slide whose layout or master is missing cannot place its placeholders.
        with ctx.part(
            "slide",
            f"slide {number} could not be read; the rest of it is skipped",
            page=number,
            code="slide.failed",
        ):
            _slide(ctx, slide, number, authors)


def _slide(ctx: ParseContext, slide: Any, number: int, authors: dict[str, str]) -> None:
    """One slide's section: its title, its shapes in reading order, notes and comments."""
    pages = [number]
    title_shape = slide.shapes.title
    title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
    ctx.emit(
        RowType.HEADING,
        title or f"Slide {number}",
        f"slide {number}",
        heading_level=1,
        page_numbers=pages,
    )
    skip = {title_shape.shape_id} if title_shape is not None and title else set()
    for shape in _reading_order(slide.shapes):
        if shape.shape_id not in skip:
            with ctx.part(
                "shape",
                f"a shape on slide {number} could not be read; skipped",
                page=number,
                code="shape.failed",
            ):
                _shape(ctx, shape, number)
    with ctx.part(
        "speaker notes",
        f"speaker notes of slide {number} could not be read; skipped",
        page=number,
        code="notes.failed",
    ):
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            text = notes.text.strip() if notes is not None else ""
            if text:
                ctx.emit(
                    RowType.PARAGRAPH,
                    f"Speaker notes: {text}",
                    f"slide {number} notes",
                    page_numbers=pages,
                )
    comments: list[tuple[str, str]] = []
    with ctx.part(
        "comments",
        f"reviewer comments of slide {number} could not be read; skipped",
        page=number,
        code="comments.failed",
    ):
        comments = _comments(slide, authors)
    for author, text in comments:
        ctx.emit(
            RowType.PARAGRAPH,
            f"Reviewer comment by {author}: {text}" if author else f"Reviewer comment: {text}",
            f"slide {number} comments",
            page_numbers=pages,
        )


# Shapes whose tops differ by less than this (a quarter inch, in EMU) sit on one line.
SAME_LINE_EMU = 228_600


def _reading_order(shapes: Any) -> Iterator[Any]:
    """Shapes top to bottom, those on one line left to right; groups recursively."""
    by_top = sorted(shapes, key=lambda s: (s.top or 0, s.left or 0, s.shape_id))
    lines: list[list[Any]] = []
    for shape in by_top:
        if lines and (shape.top or 0) - (lines[-1][0].top or 0) < SAME_LINE_EMU:
            lines[-1].append(shape)
        else:
            lines.append([shape])
    for line in lines:
        for shape in sorted(line, key=lambda s: (s.left or 0, s.top or 0, s.shape_id)):
            if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
                yield from _reading_order(shape.shapes)
            else:
                yield shape


def _shape(ctx: ParseContext, shape: Any, number: int) -> None:
    pages = [number]
    where = f"slide {number}: {shape.name}"
    if getattr(shape, "has_table", False) and shape.has_table:
        ctx.emit_table(_table_grid(shape.table), where, page_numbers=pages)
    elif getattr(shape, "has_chart", False) and shape.has_chart:
        ctx.emit(RowType.PARAGRAPH, _chart_text(shape.chart), where, page_numbers=pages)
    elif shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
        alt = shape._element.nvPicPr.cNvPr.get("descr") or ""
        with ctx.part(
            "image",
            f"picture on slide {number} could not be read; skipped",
            page=number,
            code="image.unreadable",
        ) as part:
            blob = shape.image.blob  # KeyError/ValueError: a missing or linked image part
        if not part.failed:
            ctx.emit_image(blob, alt, where, page_numbers=pages)
    elif shape.has_text_frame:
        bulleted = shape.is_placeholder and shape.placeholder_format.type in _BULLETED
        for paragraph in shape.text_frame.paragraphs:
            text = " ".join("".join(run.text for run in paragraph.runs).split())
            if text:
                kind = (
                    RowType.LIST_ITEM if bulleted or _has_bullet(paragraph) else RowType.PARAGRAPH
                )
                ctx.emit(kind, text, where, page_numbers=pages)


def _has_bullet(paragraph: Any) -> bool:
    ppr = paragraph._p.pPr
    return ppr is not None and (
        ppr.find(_A("buChar")) is not None or ppr.find(_A("buAutoNum")) is not None
    )


def _table_grid(table: Any) -> TableGrid:
    cells = []
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            if cell.is_spanned:
                continue
            rowspan, colspan = (
                (cell.span_height, cell.span_width) if cell.is_merge_origin else (1, 1)
            )
            text = "\n".join(" ".join(p.text.split()) for p in cell.text_frame.paragraphs)
            cells.append(TableCell(r, c, text.strip(), rowspan, colspan))
    return TableGrid(cells=cells, header_rows=1 if table.first_row else 0)


def _chart_text(chart: Any) -> str:
    kind = str(chart.chart_type).split(" ")[0].split(".")[-1].replace("_", " ").lower()
    title = chart.chart_title.text_frame.text if chart.has_title else ""
    parts = [f"Chart ({kind})" + (f": {' '.join(title.split())}" if title.strip() else "")]
    try:
        categories = [str(c) for c in chart.plots[0].categories] if len(chart.plots) else []
    except (IndexError, KeyError, ValueError):
        categories = []
    series = [s.name for plot in chart.plots for s in plot.series if s.name]
    if series:
        parts.append("Series: " + ", ".join(series))
    if categories:
        parts.append("Categories: " + ", ".join(categories))
    return ". ".join(parts)


def _comment_authors(presentation: Any) -> dict[str, str]:
    part = presentation.part
    for rel in part.rels.values():
        if rel.reltype == _RT_AUTHORS:
            root = etree.fromstring(rel.target_part.blob)
            return {a.get("id", ""): a.get("name", "") for a in root.iter(_P("cmAuthor"))}
    return {}


def _comments(slide: Any, authors: dict[str, str]) -> list[tuple[str, str]]:
    """(author, text) of the slide's reviewer comments, in their stored order."""
    out = []
    for rel in slide.part.rels.values():
        if rel.reltype != _RT_COMMENTS:
            continue
        root = etree.fromstring(rel.target_part.blob)
        for comment in root.iter(_P("cm")):
            text = " ".join("".join(comment.findtext(_P("text")) or "").split())
            if text:
                out.append((authors.get(comment.get("authorId", ""), ""), text))
    return out
