"""Joining a table that a page break split: the next page's first table continues the previous
page's last one when it starts at the top of its page and repeats the header row or lines up
with its columns (`join_continued_tables`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from corpus_pipeline.parsing.pdf.tables import TABLE_CAPTION, PdfTable
from corpus_pipeline.parsing.tables import TableGrid

_TOP_OF_PAGE = 0.3  # a continuation starts in the top 30 % of the page
_DEFAULT_PAGE_HEIGHT = 842.0  # A4; used when the caller gives no page heights
_COL_ALIGN_TOL = 0.03  # column x-positions match within 3 % of the table width


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
    match = TABLE_CAPTION.match(caption)
    return match.group(0).strip().lower() if match else ""


def _columns_align(a: PdfTable, b: PdfTable) -> bool:
    tol = _COL_ALIGN_TOL * max(a.bbox[2] - a.bbox[0], 1.0)
    return len(a.col_xs) == len(b.col_xs) > 0 and all(
        abs(x - y) <= tol for x, y in zip(a.col_xs, b.col_xs, strict=True)
    )
