"""PDF tables: a cheap "is there a table here?" test, the table finder (`pdf_table_finder`) turned
into `TableGrid`s with real rowspan/colspan, captions, and joining of tables split by a page break.

The test and the finder share one read of the page (`PageView`: one MuPDF text page, one path
list). On the 20 real 10-Q filings the finder takes ~21 ms per flagged page with the test
included, against ~190 ms for PyMuPDF's `find_tables` it replaced; `table_likely` lets the
parser skip it on plain text pages. Everything is deterministic: same page in, same grid out.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from corpus_pipeline.parsing.base import DiagnosticSink, Part
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

Rect = tuple[float, float, float, float]

_CAPTION_RE = re.compile(
    r"^\s*(?:Table|Tab\.|Tabelle|Tableau|\[?표)\s*[\dIVXivx]+(?:[.\-–][\dIVXivx]+)*", re.UNICODE
)
_PROSE_SEGMENT_EMS = 10.0  # median segment width in line heights (~20+ chars): text columns
_CAPTION_GAP = 36.0  # pt between caption block and table edge (about three text lines)
_MIN_FILLED = 0.3  # share of anchor cells with text below which a "table" is a figure/frame
_MAX_COVERED = 0.5  # share of grid slots covered by spans above which it is a diagram
_MAX_MEAN_CELL_CHARS = 400  # prose laid out in boxes (back covers, sidebars), not a table
_MAX_VERTICALS = 1000  # more vertical rulings than this: a drawing, not one-column tables
_TOP_OF_PAGE = 0.3  # a continuation starts in the top 30 % of the page
_DEFAULT_PAGE_HEIGHT = 842.0  # A4; used when the caller gives no page heights
_COL_ALIGN_TOL = 0.03  # column x-positions match within 3 % of the table width


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


class PageView:
    """What the table code reads from one page, each read once.

    Every `get_text` call rebuilds MuPDF's text page (1-40 ms on a real filing page) and
    every `get_cdrawings` call re-runs the content stream; the table test and the finder
    read words, blocks, spans and paths of the same page several times, so they share one
    text page (the layout's, with its flags, when the caller passes it) and one path list.
    Coordinates are unrotated page space.
    """

    def __init__(self, page: pymupdf.Page, textpage: Any = None) -> None:
        self.page = page
        if textpage is not None:
            self.textpage = textpage  # the parser's own, shared with its layout read

    def reads(self) -> dict[str, Any]:
        """What this view has read so far (plain data: it can travel to a worker process)."""
        return {k: v for k, v in vars(self).items() if k not in ("page", "textpage")}

    def keep_reads(self, reads: dict[str, Any]) -> None:
        """Another view's reads of the same page: not read again here."""
        vars(self).update(reads)

    @cached_property
    def textpage(self) -> Any:
        from corpus_pipeline.parsing.pdf.layout import TEXT_FLAGS

        return _api(self.page).get_textpage(flags=TEXT_FLAGS)

    @cached_property
    def words(self) -> list[Any]:
        return list(_api(self.page).get_text("words", textpage=self.textpage))

    @cached_property
    def blocks(self) -> list[Any]:
        return list(_api(self.page).get_text("blocks", textpage=self.textpage))

    @cached_property
    def spans(self) -> list[Span]:
        """Non-blank text spans with their bold and superscript flags."""
        import pymupdf

        data = _api(self.page).get_text("dict", textpage=self.textpage)
        return [
            Span(
                _rect(s["bbox"]),
                bool(s["flags"] & pymupdf.TEXT_FONT_BOLD) or "bold" in str(s["font"]).lower(),
                bool(s["flags"] & pymupdf.TEXT_FONT_SUPERSCRIPT),
            )
            for b in data["blocks"]
            for line in b.get("lines", ())
            for s in line["spans"]
            if str(s["text"]).strip()
        ]

    @cached_property
    def paths(self) -> list[dict[str, Any]]:
        return list(_api(self.page).get_cdrawings())

    @cached_property
    def rect(self) -> Rect:
        """The page's rectangle in unrotated space (where text and drawings are)."""
        import pymupdf

        api = _api(self.page)
        if not int(api.rotation):
            return _rect(api.rect)
        r = _api(pymupdf).Rect(api.rect) * api.derotation_matrix
        r.normalize()
        return _rect(r)

    @cached_property
    def segments(self) -> tuple[list[Rect], list[Rect]]:
        return _segments(self.paths)

    @cached_property
    def text_rows(self) -> list[TextRow]:
        return _line_segments(self.words)


def _view(page: pymupdf.Page | PageView) -> PageView:
    return page if isinstance(page, PageView) else PageView(page)


# -- cheap evidence ------------------------------------------------------------------------------


def table_likely(page: pymupdf.Page | PageView) -> bool:
    """True when ruling lines cross like a grid or ≥3 text lines align in ≥3 columns.

    Costs a drawing scan plus one word extraction (a few ms), so the parser can skip the
    table finder on the many pages that are plain prose.
    """
    view = _view(page)
    return _ruled_grid(view.segments) or bool(_aligned_text_regions(view))


def _segments(paths: list[dict[str, Any]]) -> tuple[list[Rect], list[Rect]]:
    """Horizontal and vertical rulings: stroked lines and rect edges, or hairline filled rects.

    Plain filled areas (backgrounds, bars, logos) are ignored: their edges cross like a grid
    without being one.
    """
    hs: list[Rect] = []
    vs: list[Rect] = []
    for path in paths:
        stroked = "s" in str(path.get("type", ""))
        for item in path.get("items", ()):
            kind = item[0]
            if kind == "l" and stroked:
                (x0, y0), (x1, y1) = item[1], item[2]
                if abs(y1 - y0) < 1.0 and abs(x1 - x0) >= 3.0:
                    hs.append((min(x0, x1), y0, max(x0, x1), y0))
                elif abs(x1 - x0) < 1.0 and abs(y1 - y0) >= 3.0:
                    vs.append((x0, min(y0, y1), x0, max(y0, y1)))
            elif kind == "re":
                x0, y0, x1, y1 = item[1]
                x0, x1 = min(x0, x1), max(x0, x1)
                y0, y1 = min(y0, y1), max(y0, y1)
                if y1 - y0 < 2.0 and x1 - x0 >= 3.0:
                    hs.append((x0, (y0 + y1) / 2, x1, (y0 + y1) / 2))
                elif x1 - x0 < 2.0 and y1 - y0 >= 3.0:
                    vs.append(((x0 + x1) / 2, y0, (x0 + x1) / 2, y1))
                elif stroked and x1 - x0 >= 3.0 and y1 - y0 >= 3.0:
                    hs += [(x0, y0, x1, y0), (x0, y1, x1, y1)]
                    vs += [(x0, y0, x0, y1), (x1, y0, x1, y1)]
    return hs, vs


def _ruled_grid(segments: tuple[list[Rect], list[Rect]]) -> bool:
    """A grid has ≥6 distinct crossings over ≥3 rows or columns; one frame has 4 over 2x2."""
    hs, vs = segments
    if len(hs) < 2 or len(vs) < 2:
        return False
    tol = 2.0
    points: set[tuple[int, int]] = set()
    for hx0, hy, hx1, _ in hs[:400]:
        for vx, vy0, _, vy1 in vs[:400]:
            if hx0 - tol <= vx <= hx1 + tol and vy0 - tol <= hy <= vy1 + tol:
                points.add((round(vx / tol), round(hy / tol)))
    xs = {p[0] for p in points}
    ys = {p[1] for p in points}
    return len(points) >= 6 and (len(xs) >= 3 or len(ys) >= 3)


def _line_segments(words: list[Any]) -> list[tuple[float, float, list[Rect]]]:
    """Text rows as (y0, y1, segments): words on one baseline, split at gaps wider than ~2 spaces."""
    rows: list[list[Any]] = []
    for w in sorted(words, key=lambda w: (round(w[3]), w[0])):
        if rows and abs(rows[-1][0][3] - w[3]) <= 2.0:
            rows[-1].append(w)
        else:
            rows.append([w])
    out: list[tuple[float, float, list[Rect]]] = []
    for row in rows:
        row.sort(key=lambda w: w[0])
        height = max(w[3] - w[1] for w in row)
        segs: list[list[float]] = []
        for w in row:
            if segs and w[0] - segs[-1][2] <= max(height * 0.8, 4.0):
                segs[-1][2] = max(segs[-1][2], w[2])
                segs[-1][3] = max(segs[-1][3], w[3])
            else:
                segs.append([w[0], w[1], w[2], w[3]])
        out.append(
            (
                min(w[1] for w in row),
                max(w[3] for w in row),
                [(s[0], s[1], s[2], s[3]) for s in segs],
            )
        )
    return out


def _aligned(seg: Rect, other: list[Rect], tol: float = 3.0) -> bool:
    """Left, right or centre edges line up (text, numbers and centred headers)."""
    cx = (seg[0] + seg[2]) / 2
    return any(
        abs(seg[0] - o[0]) <= tol or abs(seg[2] - o[2]) <= tol or abs(cx - (o[0] + o[2]) / 2) <= tol
        for o in other
    )


TextRow = tuple[float, float, list[Rect]]


def _aligned_text_regions(view: PageView, refine: bool = False) -> list[tuple[Rect, list[TextRow]]]:
    """Runs of ≥3 nearby rows with ≥3 segments each, ≥3 of which align with a neighbour row.

    `refine` (for the text-strategy finder, not for the cheap test) cuts a run at wide empty
    gutters, so a two-page spread or a neighbouring text column does not become table
    columns, and returns the header lines just above that sit over the region's columns
    (the text strategy would split a wrapped header word by word, so they are kept apart).
    """
    all_rows = view.text_rows
    rows = [r for r in all_rows if len(r[2]) >= 3]
    runs: list[list[TextRow]] = []
    for row in rows:
        if runs and row[0] - runs[-1][-1][1] <= 3 * (row[1] - row[0]):
            runs[-1].append(row)
        else:
            runs.append([row])
    if refine:
        gutter = 0.2 * (view.rect[2] - view.rect[0])
        runs = [part for run in runs for part in _split_at_gutters(run, gutter)]
    regions: list[tuple[Rect, list[TextRow]]] = []
    for run in runs:
        if not _is_aligned(run) or _prose_like(run):
            continue
        segs = [s for r in run for s in r[2]]
        x0, x1 = min(s[0] for s in segs), max(s[2] for s in segs)
        header = _header_above(all_rows, run, _clusters(segs), x0, x1) if refine else []
        regions.append(((x0, run[0][0], x1, run[-1][1]), header))
    return regions


def _prose_like(run: list[TextRow]) -> bool:
    """Newspaper-style text columns align too; their segments are long lines, not cells."""
    widths = sorted((s[2] - s[0]) / max(y1 - y0, 1.0) for y0, y1, segs in run for s in segs)
    return widths[len(widths) // 2] >= _PROSE_SEGMENT_EMS


def _is_aligned(run: list[TextRow]) -> bool:
    if len(run) < 3:
        return False
    aligned_rows = 0
    for i, (_, _, segs) in enumerate(run):
        near = run[max(0, i - 3) : i] + run[i + 1 : i + 4]  # neighbours keep long runs cheap
        others = [s for r in near for s in r[2]]
        if sum(_aligned(s, others) for s in segs) >= 3:
            aligned_rows += 1
            if aligned_rows >= 3:
                return True
    return False


def _clusters(segs: list[Rect]) -> list[tuple[float, float]]:
    """Column extents: the union of overlapping segment x-intervals."""
    out: list[list[float]] = []
    for s in sorted(segs, key=lambda s: s[0]):
        if out and s[0] <= out[-1][1]:
            out[-1][1] = max(out[-1][1], s[2])
        else:
            out.append([s[0], s[2]])
    return [(c[0], c[1]) for c in out]


def _split_at_gutters(run: list[TextRow], gutter: float) -> list[list[TextRow]]:
    """Cut a run where no segment crosses an x-gap wider than `gutter`."""
    cols = _clusters([s for r in run for s in r[2]])
    cuts = [b[0] for a, b in itertools.pairwise(cols) if b[0] - a[1] >= gutter]
    if not cuts:
        return [run]
    edges = [float("-inf"), *cuts, float("inf")]
    parts: list[list[TextRow]] = []
    for lo, hi in itertools.pairwise(edges):
        part = []
        for y0, y1, segs in run:
            inside = [s for s in segs if lo <= s[0] < hi]
            if len(inside) >= 3:
                part.append((y0, y1, inside))
        parts.append(part)
    return parts


def _header_above(
    all_rows: list[TextRow],
    run: list[TextRow],
    cols: list[tuple[float, float]],
    x0: float,
    x1: float,
) -> list[TextRow]:
    """≤3 close rows just above the run whose segments each sit over exactly one column."""
    top = run[0][0]
    height = run[0][1] - run[0][0]
    above = sorted((r for r in all_rows if r[1] <= top + 0.5), key=lambda r: -r[0])
    header: list[TextRow] = []
    for y0, y1, segs in above[:3]:
        if top - y1 > 1.5 * height:
            break
        inside = [s for s in segs if s[2] > x0 and s[0] < x1]
        hits = [sum(1 for c in cols if s[0] < c[1] and s[2] > c[0]) for s in inside]
        if not inside or any(h != 1 for h in hits):
            break  # nothing there, or a line spanning columns (caption, prose): not a header
        header.insert(0, (y0, y1, inside))
        top = y0
    return header


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
        if _CAPTION_RE.match(cell_text(words, (x0, y0, x1, y1))):
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
    view = _view(page)
    words, spans = view.words, view.spans
    lined: list[FoundTable] = []
    with _detection(sink, page_number) as part:
        lined = find_ruled_tables(view.paths, words, spans, view.rect)
    if part.failed:
        return []  # the page's drawings or text cannot be read: its words stay text
    found: list[tuple[FoundTable, list[TextRow] | None]]
    found = [(t, None) for t in lined if _plausible(t)]
    if not found:
        for region, above in _aligned_text_regions(view, refine=True):
            with _detection(sink, page_number):
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


def _api(obj: object) -> Any:
    """PyMuPDF's methods are untyped; this marks the boundary for mypy --strict."""
    return obj


def _rect(r: Any) -> Rect:
    return (float(r[0]), float(r[1]), float(r[2]), float(r[3]))


def _detection(sink: DiagnosticSink, page_number: int) -> AbstractContextManager[Part]:
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
        if not _CAPTION_RE.match(text):
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


# -- joining across pages ------------------------------------------------------------------------


def join_continued_tables(
    tables: list[PdfTable],
    page_heights: dict[int, float] | None = None,
    text_above: Callable[[PdfTable], list[str]] | None = None,
) -> list[PdfTable]:
    """Merge a table that continues at the top of the next page into its predecessor.

    Continuation = the next page's first table starts in the top part of the page and either
    repeats the header row (the repeat is dropped) or has the same column count with column
    x-positions aligned within 3 % of the width. `page_heights` (page → height) sharpens the
    top-of-page test; without it an A4 height is assumed. `text_above` (the text blocks of the
    table's page above it, running headers and footers removed) rules out a table that a title
    introduces on its own page: statements set one per page share a header and columns but are
    not one table. Its caption and a "(continued)" line do not count.
    """
    out: list[PdfTable] = []
    for i, tab in enumerate(tables):
        # In document order, tables[i - 1] is the last table before `tab`: it must sit on the
        # previous page (so it is that page's last table and `tab` is this page's first).
        if (
            out
            and tables[i - 1].page == tab.page - 1
            and _at_top(tab, page_heights)
            and not _introduced(tab, text_above)
        ):
            joined = _join(out[-1], tables[i - 1], tab)
            if joined is not None:
                out[-1] = joined
                continue
        out.append(tab)
    return out


_CONTINUED = re.compile(r"\bcont(?:inued|['’]d|\.)", re.IGNORECASE)


def _introduced(tab: PdfTable, text_above: Callable[[PdfTable], list[str]] | None) -> bool:
    """Text other than its caption or a continuation note stands above the table on its page."""
    if text_above is None:
        return False
    caption = " ".join((tab.caption or "").split())
    return any(
        text and text != caption and not _CONTINUED.search(text)
        for text in (" ".join(t.split()) for t in text_above(tab))
    )


def _at_top(tab: PdfTable, page_heights: dict[int, float] | None) -> bool:
    height = (page_heights or {}).get(tab.page, _DEFAULT_PAGE_HEIGHT)
    return tab.bbox[1] <= _TOP_OF_PAGE * height


def _row_texts(grid: TableGrid, row: int) -> list[str]:
    return [
        " ".join(c.text.split()) for c in sorted(grid.cells, key=lambda c: c.col) if c.row == row
    ]


def _join(prev: PdfTable, last: PdfTable, nxt: PdfTable) -> PdfTable | None:
    """Append `nxt` to `prev` (which may already be joined; `last` is its final piece)."""
    a, b = prev.grid, nxt.grid
    if nxt.caption and _caption_label(nxt.caption) != _caption_label(prev.caption or ""):
        return None  # its own numbered caption: a new table, not a continuation
    repeated = 0
    head = max(a.header_rows, 1)
    if b.num_rows > head and all(_row_texts(a, r) == _row_texts(b, r) for r in range(head)):
        repeated = head
    elif a.num_cols != b.num_cols or not _columns_align(last, nxt):
        return None
    offset = a.num_rows - repeated
    moved = [replace(c, row=c.row + offset) for c in b.cells if c.row >= repeated]
    row_pages = a.row_pages or (prev.page,) * a.num_rows
    grid = TableGrid(
        cells=[*a.cells, *moved],
        caption=a.caption or b.caption,
        header_rows=a.header_rows,
        row_pages=row_pages + (nxt.page,) * (b.num_rows - repeated),
    )
    return replace(prev, pages=(*prev.pages, nxt.page), grid=grid, caption=grid.caption)


def _caption_label(caption: str) -> str:
    """'Table 3-2 Built-in …' → 'table 3-2' (what a "Table 3-2 (continued)" repeats)."""
    match = _CAPTION_RE.match(caption)
    return match.group(0).strip().lower() if match else ""


def _columns_align(a: PdfTable, b: PdfTable) -> bool:
    tol = _COL_ALIGN_TOL * max(a.bbox[2] - a.bbox[0], 1.0)
    return len(a.col_xs) == len(b.col_xs) > 0 and all(
        abs(x - y) <= tol for x, y in zip(a.col_xs, b.col_xs, strict=True)
    )
