"""OpenDocument tables (`table:table`) as `TableGrid`s, shared by ODT and ODP.

Merged cells are spelled out: the anchor cell carries `table:number-columns-spanned` /
`number-rows-spanned` and the cells it covers are `table:covered-table-cell`s, which are
skipped (the grid places cells around earlier rowspans, as HTML does). Repeated rows and cells
(`number-*-repeated`, how an editor writes blank runs) are expanded only while they hold text.
Header rows are `table:table-header-rows`, else the first row of a longer table.
"""

from __future__ import annotations

from collections.abc import Iterator

from lxml import etree

from corpus_pipeline.parsing.odf.inline import plain_text
from corpus_pipeline.parsing.odf.names import draw, int_attr, table
from corpus_pipeline.parsing.tables import GridBuilder, TableGrid

# Repeated rows or cells with text are expanded at most this often.
MAX_REPEAT = 100
_ROW_GROUPS = frozenset(table(n) for n in ("table-rows", "table-row-group"))


def table_grid(el: etree._Element, frames: list[etree._Element]) -> TableGrid:
    """The table's grid; the pictures met in its cells are appended to `frames`."""
    rows = list(_rows(el))
    builder = GridBuilder(max_rows=sum(repeat for _, repeat, _ in rows))
    r = 0
    header_rows = 0
    for row, repeat, in_header in rows:
        cells = [(cell, _cell_text(cell, frames)) for cell in row.iterchildren(table("*"))]
        if not any(value for _, value in cells):
            repeat = 1  # an empty run counts once (it is how blank rows are written)
        for _ in range(repeat):
            for cell, value in cells:
                if cell.tag != table("table-cell"):
                    continue
                times = int_attr(cell.get(table("number-columns-repeated")), most=MAX_REPEAT)
                for _ in range(times if value else 1):
                    builder.add(
                        r,
                        value,
                        int_attr(cell.get(table("number-rows-spanned"))),
                        int_attr(cell.get(table("number-columns-spanned"))),
                        header=in_header,
                    )
            header_rows += in_header
            r += 1
    if header_rows == 0 and r > 1:
        header_rows = 1
    grid = builder.build(header_rows=header_rows)
    while grid.header_rows and any(  # a header never ends inside a rowspan
        c.row + c.rowspan > grid.header_rows for c in grid.cells if c.row < grid.header_rows
    ):
        grid.header_rows -= 1
    return grid


def _rows(
    el: etree._Element, in_header: bool = False
) -> Iterator[tuple[etree._Element, int, bool]]:
    """(row, repeat, is a header row) in order, through header and row groups."""
    for child in el.iterchildren():
        if child.tag == table("table-row"):
            repeat = int_attr(child.get(table("number-rows-repeated")), most=MAX_REPEAT)
            yield child, repeat, in_header
        elif child.tag == table("table-header-rows"):
            yield from _rows(child, True)
        elif child.tag in _ROW_GROUPS:
            yield from _rows(child, in_header)


def _cell_text(cell: etree._Element, frames: list[etree._Element]) -> str:
    """A cell's paragraphs as lines; a nested table flattened into rows of ' | '-joined text."""
    lines: list[str] = []
    for child in cell.iterchildren():
        if child.tag == table("table"):
            lines.append(table_grid(child, frames).to_text())
        elif isinstance(child.tag, str):
            lines.append(plain_text(child))
            frames.extend(f for f in child.iter(draw("frame")) if f.find(draw("image")) is not None)
    return "\n".join(line for line in lines if line)
