"""RTF strategy: the blocks `rtf_reader` finds, as rows with the structure the file declares.

Headings come only from what RTF states, never from looks: a paragraph's own `\\outlinelevel`,
else its style's outline level or a style named "heading N" (as Word writes them) or "title".
Paragraphs of a list (`\\ls`, or the bullet text a list paragraph carries) are list items,
tables keep their merged cells as spans, footnotes follow the paragraph that cites them, and
PNG/JPEG pictures are stored. The info group gives the declared title and date (its creation
time, else its revision time).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from corpus_pipeline.common.errors import CorruptDocumentError
from corpus_pipeline.contracts import RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.rtf_reader import Cell, Paragraph, RtfDocument, Table, read_rtf
from corpus_pipeline.parsing.tables import TableCell, TableGrid

_HEADING_STYLE = re.compile(r"heading\s*([1-9])")


def parse_rtf(ctx: ParseContext) -> None:
    """Emit the paragraphs, headings, list items, tables, notes and pictures of an RTF file."""
    data = ctx.source_path.read_bytes()
    if not data[:64].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\rtf"):
        raise CorruptDocumentError("rtf", "no RTF header")
    doc = read_rtf(data)
    ctx.declared_title = " ".join(doc.info.get("title", "").split()) or None
    ctx.declared_date = doc.dates.get("creatim") or doc.dates.get("revtim")
    offset = 1 if any(_level(doc, b) == 0 for b in doc.blocks if isinstance(b, Paragraph)) else 0
    tables = 0
    for number, block in enumerate(doc.blocks):
        if isinstance(block, Table):
            tables += 1
            ctx.emit_table(table_grid(block), f"table {tables}")
            continue
        where = f"paragraph {number + 1}"
        level = _level(doc, block)
        text = _clean(block.text, single_line=level is not None)
        if text and level is not None:
            heading = 1 if level == 0 else min(9, level + offset)
            ctx.emit(RowType.HEADING, text, where, heading_level=heading)
        elif text:
            kind = RowType.LIST_ITEM if block.listed else RowType.PARAGRAPH
            ctx.emit(kind, text, where)
        for index, (label, note) in enumerate(block.notes):
            text = f"Footnote {label}: {_clean(note)}"
            ctx.emit(RowType.PARAGRAPH, text, f"{where}/note[{index}]")
        for index, image in enumerate(block.images):
            ctx.emit_image(image, "", f"{where}/picture[{index}]")
    if not ctx.rows:
        ctx.diagnostics.add("parse", "document.empty", "no text in the RTF file", level="error")


def _level(doc: RtfDocument, para: Paragraph) -> int | None:
    """0 for a title, N for a level-N heading, None for body text."""
    if para.outline is not None and 0 <= para.outline <= 8:
        return para.outline + 1
    style = doc.styles.get(para.style)
    if style is None:
        return None
    if style.outline is not None and 0 <= style.outline <= 8:
        return style.outline + 1
    match = _HEADING_STYLE.fullmatch(style.name)
    if match:
        return int(match.group(1))
    return 0 if style.name == "title" else None


def _clean(text: str, single_line: bool = False) -> str:
    """White space collapsed (line breaks kept in body text), soft hyphens dropped."""
    lines = [" ".join(line.split()) for line in text.replace("\xad", "").splitlines()]
    joiner = " " if single_line else "\n"
    return joiner.join(line for line in lines if line)


def table_grid(table: Table) -> TableGrid:
    """RTF rows → a grid. Columns are the table's distinct cell edges (`\\cellx`): a cell whose
    edge skips others spans them (how a merged cell is usually written); a `\\clmrg` cell widens
    the cell on its left and a `\\clvmrg` cell lengthens the cell above it. The first row heads
    a longer table unless rows are marked as headers (`\\trhdr`)."""
    edges = sorted({c.right for row in table.rows for c in row if c.right is not None})
    anchors: dict[tuple[int, int], list[int]] = {}  # (row, col) → [rowspan, colspan]
    texts: dict[tuple[int, int], str] = {}
    for r, row in enumerate(table.rows):
        last: tuple[int, int] | None = None
        for start, end, cell in _columns(row, edges):
            above = _anchor_above(anchors, r, start) if cell.vmerge == "next" else None
            if cell.hmerge == "next" and last is not None:
                anchors[last][1] += end - start
            elif above is not None:
                anchors[above][0] = r - above[0] + 1
                last = None
            else:
                anchors[(r, start)] = [1, end - start]
                texts[(r, start)] = _clean(cell.text)
                last = (r, start)
    header_rows = table.header_rows or (1 if len(table.rows) > 1 else 0)
    cells = [
        TableCell(r, c, texts[(r, c)], rowspan, colspan)
        for (r, c), (rowspan, colspan) in sorted(anchors.items())
    ]
    grid = TableGrid(cells=cells, header_rows=header_rows)
    while grid.header_rows and any(
        c.row + c.rowspan > grid.header_rows for c in grid.cells if c.row < grid.header_rows
    ):
        grid.header_rows -= 1
    return grid


def _columns(row: list[Cell], edges: list[int]) -> Iterator[tuple[int, int, Cell]]:
    """(first column, column after the last, cell) for each cell of a row."""
    column = 0
    for cell in row:
        end = column + 1
        if cell.right is not None:
            end = max(end, bisect.bisect_left(edges, cell.right) + 1)
        yield column, end, cell
        column = end


def _anchor_above(
    anchors: dict[tuple[int, int], list[int]], row: int, col: int
) -> tuple[int, int] | None:
    for r in range(row - 1, -1, -1):
        if (r, col) in anchors:
            return (r, col)
    return None
