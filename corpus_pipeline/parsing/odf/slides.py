"""ODP strategy: one level-1 section per slide, its frames in reading order (as PPTX does).

A slide's section is the text of its title frame (`presentation:class="title"`), else the
slide's name when someone gave it one, else "Slide N" (an editor's automatic "page3" names
nothing). Frames are read top to bottom, then left to right (groups recursively): text boxes
and shapes through the ODT walker (lists stay list items), tables with their spans, pictures
with their alt text. Speaker notes and reviewer comments follow the slide's frames. Every row
cites its slide number; hidden slides are skipped with a diagnostic and keep their number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

from corpus_pipeline.contracts import RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.odf.document import TextWalker
from corpus_pipeline.parsing.odf.inline import plain_text
from corpus_pipeline.parsing.odf.names import dc, draw, office, presentation, svg, table
from corpus_pipeline.parsing.odf.package import OdfDocument, read_body

_AUTOMATIC_NAME = re.compile(r"(page|slide|folie|diapositive)\s*\d+", re.IGNORECASE)
_TO_CM = {"cm": 1.0, "mm": 0.1, "in": 2.54, "pt": 2.54 / 72, "pc": 2.54 / 6, "px": 2.54 / 96}
_LENGTH = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([a-z]*)\s*$")
# Frames an editor fills in on every slide (footer text, date, slide number).
_FURNITURE = frozenset({"header", "footer", "date-time", "page-number"})
# Frames whose tops differ by less than this (a quarter inch) sit on one line.
SAME_LINE_CM = 0.635


def parse_odp(ctx: ParseContext) -> None:
    """Emit an OpenDocument presentation's slides (see the module docstring)."""

    def read(doc: OdfDocument, root: etree._Element) -> None:
        for number, page in enumerate(root.iterchildren(draw("page")), start=1):
            if doc.styles.hidden(page.get(draw("style-name"))):
                ctx.diagnostics.add("parse", "slide.hidden", f"slide {number} is hidden; skipped")
                continue
            with ctx.part("slide", f"slide {number} could not be read; skipped", page=number):
                _slide(ctx, doc, page, number)

    read_body(ctx, "odp", "presentation", "presentation", read)


def _slide(ctx: ParseContext, doc: OdfDocument, page: etree._Element, number: int) -> None:
    pages = [number]
    title_frame = next(
        (f for f in page.iter(draw("frame")) if f.get(presentation("class")) == "title"), None
    )
    title = " ".join(plain_text(title_frame).split()) if title_frame is not None else ""
    name = " ".join((page.get(draw("name")) or "").split())
    if not title and name and not _AUTOMATIC_NAME.fullmatch(name):
        title = name
    heading = title or f"Slide {number}"
    ctx.emit(RowType.HEADING, heading, f"slide {number}", heading_level=1, page_numbers=pages)
    walker = TextWalker(ctx, doc, page, pages)
    for i, shape in enumerate(_reading_order(page)):
        if (
            shape is title_frame
            or shape.get(presentation("placeholder")) == "true"
            or shape.get(presentation("class")) in _FURNITURE
        ):
            continue
        where = f"slide {number}: {shape.get(draw('name')) or f'shape {i + 1}'}"
        with ctx.part(
            "shape", f"a shape on slide {number} could not be read; skipped", page=number
        ):
            _shape(walker, shape, where)
    notes = page.find(presentation("notes"))
    if notes is not None:
        frames = [
            f
            for f in notes.iter(draw("frame"))
            if f.find(draw("text-box")) is not None
            and f.get(presentation("class")) not in _FURNITURE  # the notes page's number
        ]
        text = "\n".join(t for t in (plain_text(f) for f in frames) if t)
        if text:
            where = f"slide {number} notes"
            ctx.emit(RowType.PARAGRAPH, f"Speaker notes: {text}", where, page_numbers=pages)
    for comment in page.iterchildren(office("annotation")):
        author = " ".join((comment.findtext(dc("creator")) or "").split())
        text = plain_text(comment).replace("\n", " ")
        if text:
            by = f" by {author}" if author else ""
            where = f"slide {number} comments"
            ctx.emit(RowType.PARAGRAPH, f"Reviewer comment{by}: {text}", where, page_numbers=pages)


def _shape(walker: TextWalker, shape: etree._Element, where: str) -> None:
    grid_table = shape.find(table("table"))
    if shape.tag == draw("frame") and grid_table is not None:
        walker.table(grid_table, where)
    else:
        walker.drawing(shape, where, RowType.PARAGRAPH)


def _reading_order(container: etree._Element) -> Iterator[etree._Element]:
    """Shapes top to bottom, those on one line left to right; groups recursively."""
    shapes = [s for s in container.iterchildren() if draw.owns(s.tag)]
    by_top = sorted(shapes, key=_position)
    lines: list[list[etree._Element]] = []
    for shape in by_top:
        if lines and _position(shape)[0] - _position(lines[-1][0])[0] < SAME_LINE_CM:
            lines[-1].append(shape)
        else:
            lines.append([shape])
    for line in lines:
        for shape in sorted(line, key=lambda s: _position(s)[1]):
            if shape.tag == draw("g"):
                yield from _reading_order(shape)
            else:
                yield shape


def _position(shape: etree._Element) -> tuple[float, float]:
    """(top, left) in cm; a group sits where its first-placed member does."""
    if shape.tag == draw("g"):
        members = [_position(s) for s in shape.iterchildren() if isinstance(s.tag, str)]
        return min(members, default=(0.0, 0.0))
    return _length(shape.get(svg("y"))), _length(shape.get(svg("x")))


def _length(value: str | None) -> float:
    match = _LENGTH.match(value or "")
    if match is None:
        return 0.0
    return float(match.group(1)) * _TO_CM.get(match.group(2) or "cm", 1.0)
