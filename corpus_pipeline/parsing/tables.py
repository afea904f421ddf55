"""Table grids with merged cells, rendered as deterministic HTML.

Parsers (DOCX, HTML, Markdown, later PDF/XLSX) describe a table as anchored cells with spans;
this module is the one place that turns that into `rowspan`/`colspan` HTML and a plain-text
rendition for search.
"""

from __future__ import annotations

import bisect
import html
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class TableCell:
    """A cell anchored at its top-left grid position."""

    row: int
    col: int
    text: str
    rowspan: int = 1
    colspan: int = 1
    header: bool = False


@dataclass
class TableGrid:
    """A logical grid: `cells` holds only anchor cells; spans cover the rest."""

    cells: list[TableCell] = field(default_factory=list)
    caption: str | None = None
    header_rows: int = 0
    # The page each row is printed on, when the table spans pages (PDF tables joined over a
    # page break); empty when unknown or on one page.
    row_pages: tuple[int, ...] = ()

    @property
    def num_rows(self) -> int:
        return max((c.row + c.rowspan for c in self.cells), default=0)

    @property
    def num_cols(self) -> int:
        return max((c.col + c.colspan for c in self.cells), default=0)

    def rows(self) -> list[list[TableCell]]:
        """Anchor cells grouped by row, left to right."""
        out: list[list[TableCell]] = [[] for _ in range(self.num_rows)]
        for cell in sorted(self.cells, key=lambda c: (c.row, c.col)):
            out[cell.row].append(cell)
        return out

    def to_html(self) -> str:
        """Deterministic HTML with <thead> for header rows and explicit spans."""
        parts = ["<table>"]
        if self.caption:
            parts.append(f"<caption>{html.escape(self.caption)}</caption>")
        rows = self.rows()
        header_rows = min(self.header_rows, len(rows))
        for section, start, end in (("thead", 0, header_rows), ("tbody", header_rows, len(rows))):
            if start >= end:
                continue
            parts.append(f"<{section}>")
            for row in rows[start:end]:
                parts.append("<tr>")
                for cell in row:
                    tag = "th" if cell.header or section == "thead" else "td"
                    attrs = ""
                    if cell.rowspan > 1:
                        attrs += f' rowspan="{cell.rowspan}"'
                    if cell.colspan > 1:
                        attrs += f' colspan="{cell.colspan}"'
                    text = html.escape(cell.text).replace("\n", "<br>")
                    parts.append(f"<{tag}{attrs}>{text}</{tag}>")
                parts.append("</tr>")
            parts.append(f"</{section}>")
        parts.append("</table>")
        return "".join(parts)

    def to_text(self) -> str:
        """Row-wise plain text (cells joined by ' | '), the searchable rendition."""
        lines = [self.caption] if self.caption else []
        lines += [line for line in self.row_texts() if line]
        return "\n".join(lines)

    def row_texts(self) -> list[str]:
        """Each row's text as `to_text` writes it ("" for a row without text)."""
        return [
            " | ".join(_text_cells([" ".join(c.text.split()) for c in row])) for row in self.rows()
        ]

    def pages(self) -> list[int]:
        """The pages the rows are printed on (empty when unknown)."""
        return sorted(set(self.row_pages))


def split_rows(grid: TableGrid, max_tokens: int, count: Callable[[str], int]) -> list[TableGrid]:
    """A table longer than `max_tokens` as parts of consecutive body rows, each led by the
    header rows (so every part reads as the table it belongs to) and keeping the caption.

    Parts follow the pages first (rows of consecutive pages share a part while they fit), so
    each part cites the pages it is printed on; a run still too long is cut into balanced row
    groups. A part never ends inside a merged cell; a table that fits stays whole.
    """
    texts = grid.row_texts()
    costs = [count(t) for t in texts]
    if sum(costs) <= max_tokens:
        return [grid]
    head = min(grid.header_rows, len(texts))
    budget = max(max_tokens - sum(costs[:head]), max_tokens // 3)
    spanned = {r for c in grid.cells for r in range(c.row + 1, c.row + c.rowspan)}
    pages = grid.row_pages
    breaks = [
        r
        for r in range(head + 1, len(texts))
        if r not in spanned and pages and pages[r] != pages[r - 1]
    ]
    runs: list[tuple[int, int]] = []  # page runs, merged while they fit
    for start, end in itertools.pairwise([head, *breaks, len(texts)]):
        if runs and sum(costs[runs[-1][0] : end]) <= budget:
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((start, end))
    cuts = [head]
    for start, end in runs:
        total = sum(costs[start:end])
        target = total / max(1, math.ceil(total / budget))  # a run of empty rows: one part
        used = 0
        for row in range(start, end):
            if used and row not in spanned and used + costs[row] > target:
                cuts.append(row)
                used = 0
            used += costs[row]
        cuts.append(end)
    if len(cuts) <= 2:  # one part: nothing to split at
        return [grid]
    header = [replace(c, rowspan=min(c.rowspan, head - c.row)) for c in grid.cells if c.row < head]
    parts = []
    for start, end in itertools.pairwise(cuts):
        cells = [replace(c, row=c.row - start + head) for c in grid.cells if start <= c.row < end]
        # The repeated header is printed with the part: it is on the part's first page.
        pages = (
            (grid.row_pages[start],) * head + grid.row_pages[start:end] if grid.row_pages else ()
        )
        parts.append(
            TableGrid(cells=header + cells, caption=grid.caption, header_rows=head, row_pages=pages)
        )
    return parts


def split_columns(grid: TableGrid, max_tokens: int, count: Callable[[str], int]) -> list[TableGrid]:
    """A table still over `max_tokens` after its rows are split (rows too wide: a CSV of a
    thousand columns) as parts of consecutive columns, each led by the first column when that
    column is narrow (the rows' labels, as row parts repeat the header). A part never ends
    inside a merged cell; a table that fits stays whole. A single cell over the limit stays a
    part of its own (the chunker bounds its text)."""
    if sum(count(t) for t in grid.row_texts()) <= max_tokens or grid.num_cols < 2:
        return [grid]
    widths = [0] * grid.num_cols
    for cell in grid.cells:
        widths[cell.col] += count(cell.text) + 2  # and its " | "
    label = widths[0] <= max_tokens // 3
    first = 1 if label else 0
    budget = max_tokens - (widths[0] if label else 0)
    spanned = {c for cell in grid.cells for c in range(cell.col + 1, cell.col + cell.colspan)}
    cuts, used = [first], 0
    for col in range(first, grid.num_cols):
        if used and col not in spanned and used + widths[col] > budget:
            cuts.append(col)
            used = 0
        used += widths[col]
    cuts.append(grid.num_cols)
    if len(cuts) <= 2:
        return [grid]
    lead = [c for c in grid.cells if label and c.col == 0 and c.colspan == 1]
    groups: list[list[TableCell]] = [[] for _ in cuts[1:]]
    for cell in grid.cells:  # one pass: each cell to its part (a wide table has many parts)
        if cell.col >= first:
            part = bisect.bisect_right(cuts, cell.col) - 1
            groups[part].append(replace(cell, col=cell.col - cuts[part] + first))
    return [
        TableGrid(
            cells=lead + cells,
            caption=grid.caption,
            header_rows=grid.header_rows,
            row_pages=grid.row_pages,
        )
        for cells in groups
    ]


_LEADING_UNIT = frozenset("$€£¥")
_TRAILING_UNIT = frozenset({"%", ")", "%)"})


def _text_cells(cells: list[str]) -> list[str]:
    """A row's cells as they read: empty cells (spacer columns) dropped, and a currency sign
    or a percent sign set in its own column joined to its number ("$ | 60,584" → "$60,584",
    "35.4 | %" → "35.4%"), so the figure reads and is found as it was printed."""
    out: list[str] = []
    pending = ""
    for text in cells:
        if not text:
            continue
        if text in _LEADING_UNIT:
            pending += text
            continue
        if text in _TRAILING_UNIT and out:
            out[-1] += text
            continue
        out.append(pending + text)
        pending = ""
    if pending:
        out.append(pending)
    return out


# The widest sheet an office suite writes (Excel's XFD, LibreOffice since 7.4): no real table
# spans further.
MAX_COLUMNS = 16_384


class GridBuilder:
    """Places cells into a grid while honouring spans from rows above (HTML/DOCX semantics).

    Use `add(row, text, rowspan, colspan)` in source order: the cell lands in the first free
    column of that row, skipping columns occupied by earlier rowspans.
    """

    def __init__(self, max_rows: int | None = None) -> None:
        self._occupied: set[tuple[int, int]] = set()
        self._cells: list[TableCell] = []
        self._max_rows = max_rows

    def add(
        self, row: int, text: str, rowspan: int = 1, colspan: int = 1, header: bool = False
    ) -> TableCell:
        rowspan = max(1, rowspan)
        colspan = max(1, colspan)
        if self._max_rows is not None:
            rowspan = max(1, min(rowspan, self._max_rows - row))
        col = 0
        while (row, col) in self._occupied:
            col += 1
        # A span reaches at most to the last column a real table has; a damaged file's
        # "spans 10^9 columns" would otherwise fill memory with covered slots.
        colspan = max(1, min(colspan, MAX_COLUMNS - col))
        cell = TableCell(row, col, text, rowspan, colspan, header)
        for r in range(row, row + rowspan):
            for c in range(col, col + colspan):
                self._occupied.add((r, c))
        self._cells.append(cell)
        return cell

    def build(self, caption: str | None = None, header_rows: int = 0) -> TableGrid:
        return TableGrid(cells=list(self._cells), caption=caption, header_rows=header_rows)
