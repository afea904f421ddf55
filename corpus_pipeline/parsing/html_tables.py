"""HTML tables: a `<table>` element as a `TableGrid` (`table_grid_from_element`), the single
HTML-table conversion (HTML files, HTML blocks in Markdown, segment JSON).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from corpus_pipeline.parsing.html_inline import HtmlElement, InlineText, collect_children, tag_of
from corpus_pipeline.parsing.tables import GridBuilder, TableCell, TableGrid

_MAX_SPAN = 1000


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
        cells = [_raw_cell(cell) for cell in tr if tag_of(cell) in ("td", "th")]
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
        tag = tag_of(child)
        if tag == "tr":
            out.append((child, False))
        elif tag in ("thead", "tbody", "tfoot"):
            out.extend((tr, tag == "thead") for tr in child if tag_of(tr) == "tr")
    return out


def _raw_cell(cell: HtmlElement) -> _RawCell:
    buf = InlineText()
    collect_children(cell, buf, separator="\n", with_images=False)
    text, _ = buf.result()
    return _RawCell(
        text=text,
        rowspan=_span(cell.get("rowspan")),
        colspan=_span(cell.get("colspan")),
        header=tag_of(cell) == "th",
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
        if tag_of(child) == "caption":
            buf = InlineText()
            collect_children(child, buf, separator=" ", with_images=False)
            text, _ = buf.result()
            return text or None
    return None
