"""PDF tables: the table finder (`table_finder`) turned into `TableGrid`s with real
rowspan/colspan, header rows and captions (`find_tables`).

The cheap "is there a table here?" test is `table_evidence.table_likely`; test and finder share
one read of the page (`page_view.PageView`: one MuPDF text page, one path list); tables split by
a page break are joined in `table_joining`. On the 20 real 10-Q filings the finder takes ~21 ms
per flagged page with the test included, against ~190 ms for PyMuPDF's `find_tables` it
replaced; `table_likely` lets the parser skip it on plain text pages. Everything is
deterministic: same page in, same grid out.
"""

from __future__ import annotations

import itertools
import re
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from corpus_pipeline.parsing.base import DiagnosticSink, Part
from corpus_pipeline.parsing.pdf.page_view import PageView, Rect, TextRow, view_of
from corpus_pipeline.parsing.pdf.table_evidence import aligned_text_regions, table_likely
from corpus_pipeline.parsing.pdf.table_finder import (
    FoundTable,
    Span,
    cell_text,
    find_ruled_tables,
    find_text_tables,
)
from corpus_pipeline.parsing.tables import TableCell, TableGrid

if TYPE_CHECKING:
    import pymupdf

# The parser's table API: `PageView` and `table_likely` are looked up here (a test replaces
# `table_likely`), with the finder.
__all__ = ["TABLE_CAPTION", "PageView", "PdfTable", "find_tables", "table_likely"]

TABLE_CAPTION = re.compile(
    r"^\s*(?:Table|Tab\.|Tabelle|Tableau|\[?표)\s*[\dIVXivx]+(?:[.\-–][\dIVXivx]+)*", re.UNICODE
)
_CAPTION_GAP = 36.0  # pt between caption block and table edge (about three text lines)
_MIN_FILLED = 0.3  # share of anchor cells with text below which a "table" is a figure/frame
_MAX_COVERED = 0.5  # share of grid slots covered by spans above which it is a diagram
_MAX_MEAN_CELL_CHARS = 400  # prose laid out in boxes (back covers, sidebars), not a table
_MAX_VERTICALS = 1000  # more vertical rulings than this: a drawing, not one-column tables


@dataclass(frozen=True)
class PdfTable:
    """One detected table.

    `col_xs` (column left edges, page coordinates) is an addition to the agreed interface with
    a default, so callers constructing PdfTable without it still work; page joining needs it.
    """

    page: int
    pages: tuple[int, ...]
    bbox: Rect
    grid: TableGrid
    caption: str | None
    col_xs: tuple[float, ...] = field(default=(), compare=False, repr=False)


# -- table finder --------------------------------------------------------------------------------


def find_tables(
    page: pymupdf.Page | PageView, page_number: int, diagnostics: DiagnosticSink | None = None
) -> list[PdfTable]:
    """Ruled tables first; the text strategy only where aligned text exists and lines found none.

    Degenerate finds (one column, one row, mostly empty, prose in boxes) are dropped: frames
    and figure outlines close cells too. Ruled grids of one column are never found as grids,
    so fully ruled one-column tables (ODT/DOCX exports) are read from the rulings here;
    unruled one-column "tables" stay text. Coordinates are unrotated page space, like the
    rest of the PDF parser's (a page's /Rotate does not transpose its tables). One table
    that cannot be extracted is recorded in `diagnostics` and left out, so its words stay in
    the page text; the others are kept.
    """
    sink = diagnostics if diagnostics is not None else DiagnosticSink()
    view = view_of(page)
    words, spans = view.words, view.spans
    lined: list[FoundTable] = []
    with table_detection(sink, page_number) as part:
        lined = find_ruled_tables(view.paths, words, spans, view.rect)
    if part.failed:
        return []  # the page's drawings or text cannot be read: its words stay text
    found: list[tuple[FoundTable, list[TextRow] | None]]
    found = [(t, None) for t in lined if _plausible(t)]
    if not found:
        for region, above in aligned_text_regions(view, refine=True):
            with table_detection(sink, page_number):
                tabs = find_text_tables(words, spans, region)
                found += [(t, above) for t in tabs if _plausible(t, spaced=True)]
    boxes = _single_column_boxes(*view.segments)
    if not found and not boxes:
        return []
    located: list[tuple[Rect, TableGrid, tuple[float, ...]]] = []
    for tab, header in found:
        with _one_table(sink, page_number):
            grid, col_xs = _grid(tab, spans)
            bbox = tab.bbox
            if header is not None:
                grid, col_xs = _text_grid(grid, _col_ranges(tab), header, words)
            else:
                ranges = _partition(col_xs, bbox)
                header = _column_header_above(view.text_rows, bbox, ranges, words)
                grid = _with_header(grid, ranges, header, words)
            if header:
                bbox = (bbox[0], min(bbox[1], header[0][0]), bbox[2], bbox[3])
            located.append((bbox, grid, col_xs))
    for bbox, ys in boxes:
        if any(_overlaps(bbox, other[0]) for other in located):
            continue
        texts = [cell_text(words, (bbox[0], y0, bbox[2], y1)) for y0, y1 in itertools.pairwise(ys)]
        if sum(1 for t in texts if t.strip()) >= 2:
            cells = [TableCell(i, 0, t) for i, t in enumerate(texts)]
            located.append((bbox, TableGrid(cells=cells), (bbox[0],)))
    out = []
    for bbox, grid, col_xs in sorted(located, key=lambda x: (round(x[0][1]), x[0][0])):
        grid.caption = _caption(view.blocks, bbox)
        out.append(PdfTable(page_number, (page_number,), bbox, grid, grid.caption, col_xs))
    return out


def _overlaps(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _single_column_boxes(hs: list[Rect], vs: list[Rect]) -> list[tuple[Rect, list[float]]]:
    """Two neighbouring verticals of equal extent with ≥3 full-width horizontals between them.

    Verticals are bucketed by extent and only x-neighbours are paired, so vector-heavy pages
    (charts, drawings) stay cheap; a page with very many verticals is not searched at all.
    """
    if len(vs) > _MAX_VERTICALS:
        return []
    tol = 2.5
    buckets: dict[tuple[int, int], list[Rect]] = {}
    for v in vs:
        buckets.setdefault((round(v[1] / tol), round(v[3] / tol)), []).append(v)
    hs_by_y = sorted(hs, key=lambda h: h[1])
    out: list[tuple[Rect, list[float]]] = []
    for bucket in buckets.values():
        for left, right in itertools.pairwise(sorted(bucket, key=lambda v: v[0])):
            x0, x1 = left[0], right[0]
            y0, y1 = min(left[1], right[1]), max(left[3], right[3])
            if x1 - x0 < 36:
                continue
            if any(x0 + tol < v[0] < x1 - tol and v[1] < y1 - tol and v[3] > y0 + tol for v in vs):
                continue  # inner vertical: a multi-column grid, PyMuPDF's job
            ys: list[float] = []
            for h in hs_by_y:
                full = abs(h[0] - x0) <= tol and abs(h[2] - x1) <= tol
                if full and y0 - tol <= h[1] <= y1 + tol and (not ys or h[1] - ys[-1] > tol):
                    ys.append(h[1])
            if len(ys) >= 3 and ys[0] - y0 <= tol and y1 - ys[-1] <= tol:
                out.append(((x0, y0, x1, y1), ys))
    return out


def _col_ranges(tab: Any) -> list[tuple[float, float]]:
    """x-extent of each column of a finder table (from its unmerged cells)."""
    out = []
    for j in range(tab.col_count):
        rects = [r.cells[j] for r in tab.rows if r.cells[j] is not None]
        out.append((min(r[0] for r in rects), max(r[2] for r in rects)) if rects else (0.0, 0.0))
    return out


def _text_grid(
    grid: TableGrid,
    ranges: list[tuple[float, float]],
    header: list[TextRow],
    words: list[Any],
) -> tuple[TableGrid, tuple[float, ...]]:
    """Clean a text-strategy grid: drop blank rows/columns (line spacing, gutters) and put the
    header lines found above it into one header row, each segment under the column it overlaps.
    """
    rows = sorted({c.row for c in grid.cells if c.text.strip()})
    cols = sorted({c.col for c in grid.cells if c.text.strip()})
    row_at = {r: i + (1 if header else 0) for i, r in enumerate(rows)}
    col_at = {c: i for i, c in enumerate(cols)}
    cells = [
        replace(c, row=row_at[c.row], col=col_at[c.col], rowspan=1, colspan=1)
        for c in grid.cells
        if c.row in row_at and c.col in col_at
    ]
    kept = [ranges[c] for c in cols]
    if not header:
        first = 1 if grid.header_rows and rows and rows[0] == 0 else 0
        return TableGrid(cells=cells, header_rows=first), tuple(r[0] for r in kept)
    heads: list[list[str]] = [[] for _ in kept]
    for _, _, segs in header:
        for seg in segs:
            heads[_best_column(seg, kept)].append(cell_text(words, seg).replace("\n", " "))
    cells += [TableCell(0, j, " ".join(texts), header=True) for j, texts in enumerate(heads)]
    return TableGrid(cells=cells, header_rows=1), tuple(r[0] for r in kept)


def _best_column(seg: Rect, ranges: list[tuple[float, float]]) -> int:
    """Column with the largest x-overlap, else the one with the nearest centre."""
    centre = (seg[0] + seg[2]) / 2

    def score(j: int) -> tuple[float, float]:
        lo, hi = ranges[j]
        return (min(seg[2], hi) - max(seg[0], lo), -abs(centre - (lo + hi) / 2))

    return max(range(len(ranges)), key=score)


def table_detection(sink: DiagnosticSink, page_number: int) -> AbstractContextManager[Part]:
    """Isolation of the finder on one page: no tables from it, the page's words stay text."""
    message = f"tables on page {page_number} could not be detected; their text is kept as text"
    return sink.part("table", message, page=page_number, code="table.failed")


def _one_table(sink: DiagnosticSink, page_number: int) -> AbstractContextManager[Part]:
    """Isolation of one table: dropped from the tables, so its words stay in the page text."""
    message = f"table on page {page_number} could not be extracted; its text is kept as text"
    return sink.part("table", message, page=page_number, code="table.failed")


def _plausible(tab: FoundTable, spaced: bool = False) -> bool:
    """A grid of rows and columns with text in enough of its cells.

    `spaced`: a text-strategy grid, whose blank rows and columns (line spacing, gutters) are
    dropped later and do not count as empty cells.
    """
    if tab.row_count < 2 or tab.col_count < 2:
        return False
    grid = [list(row) for row in tab.extracted]
    if spaced:
        grid = [row for row in grid if any(c and c.strip() for c in row)]
        keep = [j for j in range(tab.col_count) if any((r[j] or "").strip() for r in grid)]
        grid = [[row[j] for j in keep] for row in grid]
    slots = [c for row in grid for c in row]
    texts = [c for c in slots if c is not None]
    filled = [c for c in texts if c.strip()]
    if not texts or len(filled) / len(texts) < _MIN_FILLED:
        return False
    if 1 - len(texts) / len(slots) > _MAX_COVERED:
        return False  # mostly merged slots: boxes of a diagram, not rows and columns
    return sum(len(c) for c in filled) / len(filled) <= _MAX_MEAN_CELL_CHARS


def _grid(tab: FoundTable, spans: list[Span]) -> tuple[TableGrid, tuple[float, ...]]:
    """Anchor cells with spans: a None slot in `rows[i].cells` is covered by a neighbour."""
    rows = tab.rows
    n_rows, n_cols = len(rows), tab.col_count
    col_x = [
        min((c[0] for r in rows if (c := r.cells[j]) is not None), default=float("inf"))
        for j in range(n_cols)
    ]
    row_y = [float(r.bbox[1]) for r in rows]
    tol = 1.0
    cells: list[TableCell] = []
    for i, row in enumerate(rows):
        for j, rect in enumerate(row.cells):
            if rect is None:
                continue
            colspan = 1 + sum(1 for k in range(j + 1, n_cols) if col_x[k] < rect[2] - tol)
            rowspan = 1 + sum(1 for k in range(i + 1, n_rows) if row_y[k] < rect[3] - tol)
            text = (tab.extracted[i][j] or "").strip()
            cells.append(TableCell(i, j, text, rowspan, colspan))
    grid = TableGrid(cells=cells, header_rows=_header_rows(tab, cells, spans))
    col_xs = tuple(round(float(x), 2) for x in col_x if x != float("inf"))
    return grid, col_xs


def _header_rows(tab: FoundTable, cells: list[TableCell], spans: list[Span]) -> int:
    """Row 0 is a header when the finder says so; spans from row 0 extend it.

    An "external" header is a text line above the table (often the caption), so row 0 only
    counts then if it is styled differently (bold) from the body.
    """
    if not tab.header_inside and not _bold_first_row(tab, spans):
        return 0
    first = [c for c in cells if c.row == 0]
    return max((c.rowspan for c in first), default=1)


def _bold_first_row(tab: FoundTable, spans: list[Span]) -> bool:
    """Row 0 (nearly) all bold while the body is clearly less so: a styled header row."""
    if len(tab.rows) < 2:
        return False
    body = tab.rows[1]
    body_rect = (body.bbox[0], body.bbox[1], tab.bbox[2], tab.bbox[3])

    def bold_share(bbox: Rect) -> float:
        inside = [s for s in spans if _overlaps(s.bbox, bbox)]
        return sum(1 for s in inside if s.bold) / len(inside) if inside else 0.0

    head = bold_share(tab.rows[0].bbox)
    return head >= 0.9 and bold_share(body_rect) <= head - 0.2


def _caption(blocks: list[Any], bbox: Rect) -> str | None:
    """Nearest text block just above or below the table whose text starts like a caption."""
    best: tuple[float, str] | None = None
    for b in blocks:
        if b[6] != 0:
            continue
        text = " ".join(str(b[4]).split())
        if not TABLE_CAPTION.match(text):
            continue
        if b[2] < bbox[0] or b[0] > bbox[2]:
            continue
        if 0 <= bbox[1] - b[3] <= _CAPTION_GAP:
            gap = bbox[1] - b[3]
        elif 0 <= b[1] - bbox[3] <= _CAPTION_GAP:
            gap = b[1] - bbox[3]
        else:
            continue
        if best is None or gap < best[0]:
            best = (gap, text)
    return best[1] if best else None


# -- column headers above a table ----------------------------------------------------------------


_HEADER_ROWS_ABOVE = 4


def _column_header_above(
    rows: list[TextRow], bbox: Rect, ranges: list[tuple[float, float]], words: list[Any]
) -> list[TextRow]:
    """Rows just above a ruled table that label its columns. The finder often starts a table
    at its first ruled row, below the header ("Three Months Ended" over two columns, the dates
    under it), which then reads as loose lines or even as headings. Up to four close rows
    whose segments all lie within the table's width, each in the label column or right of it;
    a line that reaches from the label column into the others (a title, a sentence) ends the
    header."""
    if not ranges:
        return []
    x0, top, x1, bottom = bbox
    label_right = ranges[0][1]
    inside = sorted(r[1] - r[0] for r in rows if r[0] >= top - 0.5 and r[1] <= bottom + 0.5)
    line_height = inside[len(inside) // 2] if inside else 0.0
    above = sorted((r for r in rows if r[1] <= top + 0.5), key=lambda r: -r[0])
    header: list[TextRow] = []
    for y0, y1, segs in above[:_HEADER_ROWS_ABOVE]:
        if top - y1 > 1.2 * max(y1 - y0, 1.0) + 2.0:
            break
        if line_height and y1 - y0 > 1.05 * line_height:
            break  # set larger than the table's text: a heading or title above it
        if TABLE_CAPTION.match(cell_text(words, (x0, y0, x1, y1))):
            break  # "Table 3: …" names the table; `_caption` keeps it as its caption
        if any(s[0] < x0 - 2.0 or s[2] > x1 + 2.0 for s in segs):
            break
        if any(s[0] < label_right - 1.0 < s[2] - 2.0 for s in segs):
            break  # reaches from the label column into the values: a title or a sentence
        header.insert(0, (y0, y1, segs))
        top = y0
    while header and all(s[2] <= label_right + 1.0 for s in header[0][2]):
        header.pop(0)  # a line over the label column alone ("Before table") is text above it
    return header


def _partition(col_xs: tuple[float, ...], bbox: Rect) -> list[tuple[float, float]]:
    """Columns as adjacent x-intervals from their left edges to the next one's (the last to
    the table's right edge): unlike cell extents, spanning cells cannot make them overlap."""
    edges = [*col_xs, bbox[2]]
    return [(a, b) for a, b in itertools.pairwise(edges)]


def _with_header(
    grid: TableGrid, ranges: list[tuple[float, float]], header: list[TextRow], words: list[Any]
) -> TableGrid:
    """`grid` below header rows built from `header`: each segment becomes a header cell over
    the columns it overlaps (a colspan when it spans several)."""
    if not header:
        return grid
    n = len(header)
    cells = [replace(c, row=c.row + n) for c in grid.cells]
    for i, (_, _, segs) in enumerate(header):
        placed: list[tuple[int, int, str]] = []  # (first col, last col, text)
        for seg in sorted(segs, key=lambda s: s[0]):
            cols = [j for j, c in enumerate(ranges) if seg[0] < c[1] and seg[2] > c[0]]
            first, last = (min(cols), max(cols)) if cols else (_best_column(seg, ranges),) * 2
            text = " ".join(cell_text(words, seg).split())
            if not text:
                continue
            if placed and first <= placed[-1][1]:  # shares a column with the previous segment
                prev = placed.pop()
                placed.append((prev[0], max(prev[1], last), f"{prev[2]} {text}"))
            else:
                placed.append((first, last, text))
        cells += [TableCell(i, a, t, 1, b - a + 1, header=True) for a, b, t in placed]
    return TableGrid(cells=cells, caption=grid.caption, header_rows=n + grid.header_rows)
