"""Ruled tables from a page's drawings and words: pdfplumber's "lines" algorithm as PyMuPDF's
`find_tables` runs it, without that call's per-character extraction.

PyMuPDF's finder rebuilds a Python dict for every character of the page on every call (half
its time on real filings), renders two pixmaps to guess each table's header and extracts cell
text from those characters again. The table geometry needs none of that: ruling lines come
from the page's vector paths (`get_cdrawings`, C speed), "is there text" and cell text from the
word list the parser reads anyway. The edge snapping, joining, intersection and cell search
are the pdfplumber functions PyMuPDF ships (`pymupdf.table`, pinned with PyMuPDF); what PyMuPDF
adds around them (fill clusters as table borders, "simulated" lines from thin rectangles, the
external-header test) is re-implemented here on the same inputs. Pure: same paths and words
in, same tables out.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pymupdf import table as _table

# pdfplumber's edge and cell functions as PyMuPDF ships them (untyped): one typed boundary
_plumber: Any = _table

Rect = tuple[float, float, float, float]
Point = tuple[float, float]

SNAP = 3.0  # pt: edges this close are snapped to one line (PyMuPDF's default)
JOIN = 3.0  # pt: collinear edges with a gap this small are joined
MIN_EDGE = 3.0  # pt: shorter edges are noise; thinner rectangles are lines
INTERSECTION = 3.0  # pt: an h and a v edge this close cross


@dataclass(frozen=True)
class Span:
    """One text span of the page: where it is, whether it is bold or a superscript."""

    bbox: Rect
    bold: bool
    superscript: bool = False


@dataclass(frozen=True)
class Row:
    bbox: Rect
    cells: tuple[Rect | None, ...]  # one slot per column; None where a spanning cell covers it


@dataclass(frozen=True)
class FoundTable:
    """A table as the grid builder reads it: rows of cell slots, their text, the header flag.

    `header_inside`: row 0 is the table's header (False when the header is a text line above
    the ruled area, PyMuPDF's "external" header).
    """

    bbox: Rect
    rows: tuple[Row, ...]
    extracted: tuple[tuple[str | None, ...], ...]
    header_inside: bool

    @property
    def row_count(self) -> int:
        return len(self.rows)

    @property
    def col_count(self) -> int:
        return max((len(r.cells) for r in self.rows), default=0)


def find_ruled_tables(
    paths: Sequence[dict[str, Any]],
    words: Sequence[Sequence[Any]],
    spans: Sequence[Span],
    page_rect: Rect,
) -> list[FoundTable]:
    """Tables bounded by ruling lines, rectangles and filled areas, top to bottom.

    `paths` are `page.get_cdrawings()`, `words` `page.get_text("words")`, both in unrotated
    page space like `page_rect`.
    """
    texts = [_rect(w) for w in words if str(w[4]).strip()]
    edges = _edges(paths, texts, page_rect)
    return _tables(edges, texts, words, spans, _fills(paths))


def find_text_tables(
    words: Sequence[Sequence[Any]], spans: Sequence[Span], region: Rect
) -> list[FoundTable]:
    """Tables without rulings inside `region`: pdfplumber's "text" strategy, where rows are
    the tops and bottoms of words and columns the x-positions ≥3 words share."""
    inside = [w for w in words if str(w[4]).strip() and _inside(_centre(_rect(w)), region)]
    boxes = [{"x0": w[0], "x1": w[2], "top": w[1], "bottom": w[3]} for w in inside]
    edges = [
        *_plumber.words_to_edges_v(boxes, word_threshold=3),
        *_plumber.words_to_edges_h(boxes, word_threshold=1),
    ]
    for e in edges:
        e["doctop"] = e["top"]
        e.setdefault("width", e["x1"] - e["x0"])
        e.setdefault("height", e["bottom"] - e["top"])
    return _tables(edges, [_rect(w) for w in inside], words, spans, [])


def intersections_to_cells(
    intersections: dict[tuple[float, float], dict[str, list[Any]]],
) -> list[tuple[float, float, float, float]]:
    """PyMuPDF's (pdfplumber's) `intersections_to_cells`, with the same cells in the same order,
    without its quadratic scans: for every crossing, the crossings below it and right of it come
    from per-column and per-row indexes, and the edges through each crossing are turned into
    boxes once, not at every comparison (on a filing's ruled tables the original is a quarter of
    the parse)."""
    points = sorted(intersections)
    vertical = {p: {_plumber.obj_to_bbox(e) for e in intersections[p]["v"]} for p in points}
    horizontal = {p: {_plumber.obj_to_bbox(e) for e in intersections[p]["h"]} for p in points}
    column: dict[float, list[tuple[float, float]]] = {}
    row: dict[float, list[tuple[float, float]]] = {}
    for p in points:  # sorted by (x, y): a column's points by y, a row's by x
        column.setdefault(p[0], []).append(p)
        row.setdefault(p[1], []).append(p)

    def connects(a: tuple[float, float], b: tuple[float, float]) -> bool:
        return bool(
            (a[0] == b[0] and vertical[a] & vertical[b])
            or (a[1] == b[1] and horizontal[a] & horizontal[b])
        )

    cells = []
    for pt in points:
        below = [b for b in column[pt[0]] if b[1] > pt[1]]
        right = [r for r in row[pt[1]] if r[0] > pt[0]]
        cell = None
        for below_pt in below:
            if not connects(pt, below_pt):
                continue
            for right_pt in right:
                if not connects(pt, right_pt):
                    continue
                corner = (right_pt[0], below_pt[1])
                if corner in vertical and connects(corner, right_pt) and connects(corner, below_pt):
                    cell = (pt[0], pt[1], corner[0], corner[1])
                    break
            if cell is not None:
                break
        if cell is not None:
            cells.append(cell)
    return cells


def _tables(
    edges: list[dict[str, Any]],
    texts: list[Rect],
    words: Sequence[Sequence[Any]],
    spans: Sequence[Span],
    fills: list[tuple[Rect, Any]],
) -> list[FoundTable]:
    """Edges → snapped and joined lines → crossings → cells → tables of touching cells."""
    edges = _plumber.merge_edges(edges, SNAP, SNAP, JOIN, JOIN)
    edges = _plumber.filter_edges(edges, min_length=MIN_EDGE)
    intersections = _plumber.edges_to_intersections(edges, INTERSECTION, INTERSECTION)
    cells = intersections_to_cells(intersections)
    out = []
    for group in _cells_to_tables(cells, texts):
        rows = _rows(group)
        extracted = []
        for row in rows:
            y0, y1 = row.bbox[1], row.bbox[3]
            near = [w for w in words if y0 <= (w[1] + w[3]) / 2 <= y1]  # the row's words
            extracted.append(tuple(None if c is None else cell_text(near, c) for c in row.cells))
        inside = _header_inside(rows, texts, spans, fills)
        out.append(FoundTable(_union(group), rows, tuple(extracted), inside))
    return out


# -- edges ---------------------------------------------------------------------------------------


def _edges(paths: Sequence[dict[str, Any]], texts: list[Rect], clip: Rect) -> list[dict[str, Any]]:
    """Axis-parallel edges of every line, rectangle and quad, plus the outline of each cluster
    of touching graphics that holds text (tables drawn only as shaded cells)."""
    out: list[dict[str, Any]] = []

    def add(p1: Point, p2: Point) -> None:
        edge = _edge(p1, p2, clip)
        if edge is not None:
            out.append(edge)

    for path in paths:
        items = list(path.get("items", ()))
        if path.get("closePath") and items and items[0][0] == "l" and items[-1][0] == "l":
            items.append(("l", items[-1][2], items[0][1]))
        for item in items:
            kind = item[0]
            if kind == "l":
                add(_pt(item[1]), _pt(item[2]))
            elif kind == "re":
                x0, y0, x1, y1 = _norm(item[1])
                w, h = x1 - x0, y1 - y0
                if w <= MIN_EDGE and w < h:  # a thin rectangle drawn as a vertical line
                    add(((x0 + x1) / 2, y0), ((x0 + x1) / 2, y1))
                elif h <= MIN_EDGE and h < w:  # ... as a horizontal line
                    add((x0, (y0 + y1) / 2), (x1, (y0 + y1) / 2))
                else:
                    for a, b in _sides((x0, y0, x1, y1)):
                        add(a, b)
            elif kind == "qu":
                ul, ur, ll, lr = (_pt(p) for p in item[1])
                for a, b in ((ul, ll), (ll, lr), (lr, ur), (ur, ul)):
                    add(a, b)
    for box in _clusters([_norm(p["rect"]) for p in paths if "rect" in p], texts):
        x0, y0, x1, y1 = box
        for a, b in (((x0, y0), (x1, y0)), ((x0, y1), (x1, y1)), ((x0, y0), (x0, y1))):
            add(a, b)
        add((x1, y0), (x1, y1))
    return out


def _sides(r: Rect) -> list[tuple[Point, Point]]:
    x0, y0, x1, y1 = r
    return [((x0, y0), (x0, y1)), ((x0, y1), (x1, y1)), ((x1, y1), (x1, y0)), ((x1, y0), (x0, y0))]


def _edge(p1: Point, p2: Point, clip: Rect) -> dict[str, Any] | None:
    """pdfplumber's edge record for a (nearly) axis-parallel line, clipped to the page."""
    if abs(p1[0] - p2[0]) > SNAP and abs(p1[1] - p2[1]) > SNAP:
        return None  # a diagonal
    x0, x1 = min(p1[0], p2[0]), max(p1[0], p2[0])
    y0, y1 = min(p1[1], p2[1]), max(p1[1], p2[1])
    if x0 > clip[2] or x1 < clip[0] or y0 > clip[3] or y1 < clip[1]:
        return None
    x0, x1 = max(x0, clip[0]), min(x1, clip[2])
    y0, y1 = max(y0, clip[1]), min(y1, clip[3])
    if x1 - x0 == 0 and y1 - y0 == 0:
        return None
    return {
        "x0": x0,
        "x1": x1,
        "top": y0,
        "bottom": y1,
        "doctop": y0,
        "width": x1 - x0,
        "height": y1 - y0,
        "object_type": "line",
        "orientation": "h" if y0 == y1 else "v",
    }


def _clusters(rects: Iterable[Rect], texts: list[Rect]) -> list[Rect]:
    """Graphics that (almost) touch, joined into one box; boxes with text in them are kept.

    Shaded rows and cell backgrounds without any ruling still enclose a table this way.
    """
    pending = sorted(set(rects), key=lambda r: (r[3], r[0]))
    out: list[Rect] = []
    while pending:
        box = pending.pop(0)
        grown = True
        while grown:
            grown = False
            keep = []
            for r in pending:
                if _neighbours(box, r):
                    box = (
                        min(box[0], r[0]),
                        min(box[1], r[1]),
                        max(box[2], r[2]),
                        max(box[3], r[3]),
                    )
                    grown = True
                else:
                    keep.append(r)
            pending = keep
        if any(_inside(t, box) for t in texts):
            out.append(box)
    return out


def _neighbours(a: Rect, b: Rect) -> bool:
    """Some corner coordinate of one lies within SNAP of the other's extent on both axes.

    Written out (no helper calls): clustering asks this for every pair of a page's graphics."""
    s = SNAP
    if a[0] > b[2] + s or b[0] > a[2] + s or a[1] > b[3] + s or b[1] > a[3] + s:
        return False  # apart on one axis: no corner can be near
    return (
        (b[0] - s <= a[0] <= b[2] + s or b[0] - s <= a[2] <= b[2] + s)
        and (b[1] - s <= a[1] <= b[3] + s or b[1] - s <= a[3] <= b[3] + s)
    ) or (
        (a[0] - s <= b[0] <= a[2] + s or a[0] - s <= b[2] <= a[2] + s)
        and (a[1] - s <= b[1] <= a[3] + s or a[1] - s <= b[3] <= a[3] + s)
    )


# -- cells to tables -----------------------------------------------------------------------------


def _cells_to_tables(cells: list[Rect], texts: list[Rect]) -> list[list[Rect]]:
    """Cells sharing corners form one table; tables of one column or without text are dropped
    (pdfplumber's grouping with PyMuPDF's filter), ordered top-to-bottom, left-to-right."""
    remaining = list(cells)
    tables: list[list[Rect]] = []
    while remaining:
        group = [remaining.pop(0)]
        corners = set(_corners(group[0]))
        grown = True
        while grown:
            grown = False
            keep = []
            for cell in remaining:
                cs = _corners(cell)
                if any(c in corners for c in cs):
                    group.append(cell)
                    corners.update(cs)
                    grown = True
                else:
                    keep.append(cell)
            remaining = keep
        tables.append(group)
    kept = [
        t
        for t in tables
        if len({c[0] for c in t}) >= 2
        and len({c[2] for c in t}) >= 2
        and _has_text(_union(t), texts)
    ]
    return sorted(kept, key=lambda t: min((c[1], c[0]) for c in t))


def _has_text(box: Rect, texts: list[Rect]) -> bool:
    return any(_overlap(w, box) for w in texts)


def _corners(r: Rect) -> tuple[Point, ...]:
    return ((r[0], r[1]), (r[0], r[3]), (r[2], r[1]), (r[2], r[3]))


def _rows(cells: list[Rect]) -> tuple[Row, ...]:
    """Rows by top edge; each row has a slot per distinct left edge of the table."""
    xs = sorted({c[0] for c in cells})
    rows = []
    for _, group in itertools.groupby(sorted(cells, key=lambda c: (c[1], c[0])), lambda c: c[1]):
        by_x = {c[0]: c for c in group}
        slots = tuple(by_x.get(x) for x in xs)
        rows.append(Row(_union([c for c in slots if c is not None]), slots))
    return tuple(rows)


# -- header --------------------------------------------------------------------------------------


def _header_inside(
    rows: tuple[Row, ...], texts: list[Rect], spans: Sequence[Span], fills: list[tuple[Rect, Any]]
) -> bool:
    """Is row 0 the header, or is it the text line right above the table (PyMuPDF's rule)?

    Row 0 is the header when the table has one row or column, when it is shaded unlike the
    page above it, or when nothing suitable stands above: no line within a line height, or a
    line whose words cross a column border. Boldness is left to the grid builder: a bold
    first row is as often a section label ("Net sales by category:") under a header line.
    """
    if len(rows) < 2 or len(rows[0].cells) < 2 or all(c is None for c in rows[1].cells):
        return True
    top = rows[0].bbox
    above_box = (top[0], top[1] - (top[3] - top[1]), top[2], top[1])
    if _fill_at(fills, _centre(top)) != _fill_at(fills, _centre(above_box)):
        return True
    above = [
        s
        for s in spans
        if s.bbox[3] <= top[1] + 0.5 and _x_overlap(s.bbox, top) and not s.superscript
    ]
    if not above:
        return True
    nearest = max(above, key=lambda s: s.bbox[3])
    if top[1] - nearest.bbox[3] >= nearest.bbox[3] - nearest.bbox[1]:
        return True  # the text above is too far away to label the columns
    borders = [c[2] for c in rows[0].cells[:-1] if c is not None]
    line = [t for t in texts if abs(t[3] - nearest.bbox[3]) <= 3.0 and _x_overlap(t, top)]
    return any(t[0] < x < t[2] for x in borders for t in line)


def _fills(paths: Sequence[dict[str, Any]]) -> list[tuple[Rect, Any]]:
    """Filled areas in painting order, with their colour (white is the page: None)."""
    out = []
    for p in paths:
        fill = p.get("fill")
        if "f" in str(p.get("type", "")) and fill is not None and "rect" in p:
            colour = tuple(round(float(v), 2) for v in fill)
            out.append((_norm(p["rect"]), None if all(v >= 0.99 for v in colour) else colour))
    return out


def _fill_at(fills: list[tuple[Rect, Any]], point: Point) -> Any:
    """Colour painted last at `point` (None: the page background)."""
    for rect, colour in reversed(fills):
        if rect[0] <= point[0] <= rect[2] and rect[1] <= point[1] <= rect[3]:
            return colour
    return None


# -- text ----------------------------------------------------------------------------------------


def cell_text(words: Sequence[Sequence[Any]], rect: Rect) -> str:
    """Text of the words centred inside `rect`, one line per visual line.

    The word list's own lines are kept whole (their word order is the reading order, also
    for vertical and right-to-left text); lines side by side at one height (a nested table's
    row, a bullet and its item, a superscript "®") are joined left to right, glued where they
    touch.
    """
    inside = sorted(
        (
            w
            for w in words
            if rect[0] <= (w[0] + w[2]) / 2 <= rect[2] and rect[1] <= (w[1] + w[3]) / 2 <= rect[3]
        ),
        key=lambda w: (w[5], w[6], w[7]),
    )
    pieces = [list(g) for _, g in itertools.groupby(inside, key=lambda w: (w[5], w[6]))]
    pieces.sort(key=lambda g: (min(w[1] for w in g), min(w[0] for w in g)))
    rows: list[list[list[Sequence[Any]]]] = []
    top = bottom = 0.0
    for piece in pieces:
        y0, y1 = min(w[1] for w in piece), max(w[3] for w in piece)
        if rows and top <= (y0 + y1) / 2 <= bottom:
            rows[-1].append(piece)
            top, bottom = min(top, y0), max(bottom, y1)
        else:
            rows.append([piece])
            top, bottom = y0, y1
    out = []
    for row in rows:
        row.sort(key=lambda g: min(w[0] for w in g))
        text = ""
        for i, piece in enumerate(row):
            if i:
                touching = abs(min(w[0] for w in piece) - max(w[2] for w in row[i - 1])) < 0.5
                text += "" if touching else " "
            text += " ".join(str(w[4]) for w in piece)
        out.append(text)
    return "\n".join(out)


# -- geometry ------------------------------------------------------------------------------------


def _pt(p: Any) -> Point:
    return (float(p[0]), float(p[1]))


def _rect(r: Sequence[Any]) -> Rect:
    return (float(r[0]), float(r[1]), float(r[2]), float(r[3]))


def _norm(r: Sequence[Any]) -> Rect:
    x0, y0, x1, y1 = _rect(r)
    return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


def _union(rects: Iterable[Rect]) -> Rect:
    rs = list(rects)
    return (
        min(r[0] for r in rs),
        min(r[1] for r in rs),
        max(r[2] for r in rs),
        max(r[3] for r in rs),
    )


def _centre(r: Rect) -> Point:
    return ((r[0] + r[2]) / 2, (r[1] + r[3]) / 2)


def _inside(inner: Rect | Point, outer: Rect) -> bool:
    if len(inner) == 2:
        inner = (inner[0], inner[1], inner[0], inner[1])
    return (
        outer[0] <= inner[0]
        and inner[2] <= outer[2]
        and outer[1] <= inner[1]
        and inner[3] <= outer[3]
    )


def _overlap(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and a[2] > b[0] and a[1] < b[3] and a[3] > b[1]


def _x_overlap(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and a[2] > b[0]
