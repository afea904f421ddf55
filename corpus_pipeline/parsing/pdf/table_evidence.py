"""The cheap "is there a table here?" test (`table_likely`), and the aligned text regions the
text-strategy finder (`tables.find_tables`) looks for tables in.

The test costs a drawing scan plus one word extraction (a few ms), so the parser can skip the
table finder on the many pages that are plain prose; both read the page through one
`PageView`.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from corpus_pipeline.parsing.pdf.page_view import PageView, Rect, TextRow, view_of

if TYPE_CHECKING:
    import pymupdf

_PROSE_SEGMENT_EMS = 10.0  # median segment width in line heights (~20+ chars): text columns


def table_likely(page: pymupdf.Page | PageView) -> bool:
    """True when ruling lines cross like a grid or ≥3 text lines align in ≥3 columns.

    Costs a drawing scan plus one word extraction (a few ms), so the parser can skip the
    table finder on the many pages that are plain prose.
    """
    view = view_of(page)
    return _ruled_grid(view.segments) or bool(aligned_text_regions(view))


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


def _aligned(seg: Rect, other: list[Rect], tol: float = 3.0) -> bool:
    """Left, right or centre edges line up (text, numbers and centred headers)."""
    cx = (seg[0] + seg[2]) / 2
    return any(
        abs(seg[0] - o[0]) <= tol or abs(seg[2] - o[2]) <= tol or abs(cx - (o[0] + o[2]) / 2) <= tol
        for o in other
    )


def aligned_text_regions(view: PageView, refine: bool = False) -> list[tuple[Rect, list[TextRow]]]:
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
