"""Word tables (`w:tbl`) as `TableGrid`s: cells placed by grid column, vertical and legacy
horizontal merges as spans, repeated header rows, nested tables flattened into cell text.
"""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from corpus_pipeline.parsing.docx.inline import ImageRef, normalise
from corpus_pipeline.parsing.docx.ooxml import (
    DELETED,
    W_NS,
    WRAPPERS,
    children,
    int_value,
    is_on,
    local_name,
    namespace,
    val,
    w,
)
from corpus_pipeline.parsing.docx.reader import DocxReader
from corpus_pipeline.parsing.tables import GridBuilder, TableGrid


@dataclass
class _PlacedCell:
    """A `w:tc` at its grid column; `consumed` marks a vMerge continuation (not emitted)."""

    col: int
    span: int
    merge: str | None
    text: str
    rowspan: int = 1
    consumed: bool = False


class TableReader:
    """Word tables as `TableGrid`s: merged cells as rowspan/colspan, header rows, cell text."""

    def __init__(self, reader: DocxReader) -> None:
        self.r = reader

    def grid(self, tbl: etree._Element, images: list[ImageRef]) -> TableGrid:
        """Word rows/cells → anchored grid cells with rowspan/colspan.

        Cells are placed by grid column (gridBefore + preceding gridSpans) so a vMerge
        continuation is matched to the cell above it in the same column, not by cell index.
        """
        rows = list(children(tbl, "tr"))
        placed: list[list[_PlacedCell]] = []
        header_rows = 0
        counting_header = True
        for tr in rows:
            tr_pr = tr.find(w("trPr"))
            before = int_value(val(tr_pr.find(w("gridBefore"))) if tr_pr is not None else None, 0)
            col = max(before or 0, 0)
            if counting_header and tr_pr is not None and is_on(tr_pr.find(w("tblHeader"))):
                header_rows += 1
            else:
                counting_header = False
            cells: list[_PlacedCell] = []
            for tc in children(tr, "tc"):
                tc_pr = tc.find(w("tcPr"))
                span = max(
                    int_value(val(tc_pr.find(w("gridSpan"))) if tc_pr is not None else None, 1)
                    or 1,
                    1,
                )
                v_merge = tc_pr.find(w("vMerge")) if tc_pr is not None else None
                h_merge = tc_pr.find(w("hMerge")) if tc_pr is not None else None
                text = self.cell_text(tc, images)
                if h_merge is not None and val(h_merge) != "restart" and cells:
                    # legacy horizontal merge: this cell widens the one on its left
                    cells[-1].span += span
                    cells[-1].text = "\n".join(t for t in (cells[-1].text, text) if t)
                else:
                    merge = None if v_merge is None else (val(v_merge) or "continue")
                    cells.append(_PlacedCell(col, span, merge, text))
                col += span
            placed.append(cells)

        for r, cells in enumerate(placed):
            for cell in cells:
                if cell.merge != "restart":
                    continue
                for below in placed[r + 1 :]:
                    match = next((c for c in below if c.col == cell.col), None)
                    if match is None or match.merge != "continue":
                        break
                    match.consumed = True
                    cell.rowspan += 1

        if header_rows == 0 and len(rows) > 1:
            header_rows = 1
        r = 0
        while r < min(header_rows, len(placed)):  # a header cell's rowspan pulls rows into the head
            header_rows = max([header_rows] + [r + c.rowspan for c in placed[r] if not c.consumed])
            r += 1

        builder = GridBuilder(max_rows=len(rows))
        for r, cells in enumerate(placed):
            head = r < header_rows
            for _ in range(cells[0].col if cells else 0):  # gridBefore: empty leading cells
                builder.add(r, "", header=head)
            for cell in cells:
                if not cell.consumed:
                    builder.add(r, cell.text, cell.rowspan, cell.span, header=head)
        return builder.build(header_rows=header_rows)

    def cell_text(self, tc: etree._Element, images: list[ImageRef]) -> str:
        """A cell's paragraphs as lines; nested tables flattened into rows of ' | '-joined text."""
        lines: list[str] = []
        self._cell_blocks(tc, lines, images)
        return "\n".join(line for line in lines if line)

    def _cell_blocks(
        self, container: etree._Element, lines: list[str], images: list[ImageRef]
    ) -> None:
        for child in container.iterchildren():
            name = local_name(child)
            if namespace(child) != W_NS or name in DELETED or name == "tcPr":
                continue
            if name == "p":
                inline = self.r.inline(child)
                self.r.label(child)  # keep list counters in document order
                text, _ = normalise(inline.text, [], single_line=False)
                lines.append(text)
                images.extend(inline.images)
                for box in inline.textboxes:
                    self._cell_blocks(box, lines, images)
            elif name == "tbl":
                lines.append(self.grid(child, images).to_text())
            elif name == "sdt":
                content = child.find(w("sdtContent"))
                if content is not None:
                    self._cell_blocks(content, lines, images)
            elif name in WRAPPERS:
                self._cell_blocks(child, lines, images)
