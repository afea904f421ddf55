"""The table finder over a page's own drawings and words (`pdf_table_finder`), on generated PDFs:
shaded tables, words across column borders, superscripts, external headers, spaced text grids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pymupdf as _pymupdf

from corpus_pipeline.parsing.pdf.table_finder import cell_text, find_ruled_tables
from corpus_pipeline.parsing.pdf.tables import PageView, find_tables, table_likely

mu: Any = _pymupdf
GREY = (0.9, 0.9, 0.9)
COLS = (72.0, 232.0, 332.0, 432.0)
ROW_H = 18.0


def _page() -> tuple[Any, Any]:
    doc = mu.open()
    return doc, doc.new_page()


def _text(page: Any, x: float, row_top: float, text: str, size: float = 10) -> None:
    page.insert_text((x, row_top + 13), text, fontsize=size)


def _rows(page: Any, top: float, rows: Sequence[Sequence[str]], step: float = ROW_H) -> None:
    """Each row's texts at the column starts, one row every `step` points."""
    for i, row in enumerate(rows):
        for j, text in enumerate(row):
            if text:
                _text(page, COLS[j] + 4, top + i * step, text)


def _shaded_table(page: Any, top: float, rows: Sequence[Sequence[str]]) -> None:
    """Every other row on a grey band, no ruling line anywhere (browser-printed filings)."""
    for i, row in enumerate(rows):
        y = top + i * ROW_H
        if i % 2:
            page.draw_rect((COLS[0], y, COLS[-1], y + ROW_H), color=None, fill=GREY)
        for j, text in enumerate(row):
            _text(page, COLS[j] + 4, y, text)


def _ruled(page: Any, top: float, n_rows: int) -> None:
    for i in range(n_rows + 1):
        page.draw_line((COLS[0], top + i * ROW_H), (COLS[-1], top + i * ROW_H))
    for x in COLS:
        page.draw_line((x, top), (x, top + n_rows * ROW_H))


def _cells(table: Any) -> list[list[str]]:
    return [[c.text for c in row] for row in table.grid.rows()]


def _found(page: Any) -> list[Any]:
    view = PageView(page)
    return find_ruled_tables(view.paths, view.words, view.spans, view.rect)


def test_a_table_drawn_only_as_shaded_rows_is_found_with_its_rows() -> None:
    _, page = _page()
    rows = [
        ["Net sales", "1,200", "1,100"],
        ["Cost of sales", "700", "650"],
        ["Gross margin", "500", "450"],
        ["Operating income", "300", "280"],
    ]
    _shaded_table(page, 100, rows)
    assert table_likely(page)
    [table] = find_tables(page, 1)
    assert [r for r in _cells(table) if any(r)] == rows


def test_a_word_across_a_column_border_is_placed_once_in_the_cell_holding_its_centre() -> None:
    _, page = _page()
    _ruled(page, 100, 3)
    _rows(page, 100, [["Item", "Change", "Total"], ["Apple", "(2)%", "10"]])
    # "(12)%" starts in the second column and runs over the border into the third
    border = COLS[2]
    _text(page, border - 20, 100 + 2 * ROW_H, "(12)%")
    _text(page, COLS[0] + 4, 100 + 2 * ROW_H, "Pear")
    [table] = find_tables(page, 1)
    last = _cells(table)[-1]
    assert last.count("(12)%") == 1 and "(12)%" in last[:2]
    assert all("%" not in c for c in last[2:]), "no stray fragment of the word in the next cell"


def test_a_superscript_mark_stays_glued_to_its_word() -> None:
    _, page = _page()
    _ruled(page, 100, 2)
    _text(page, COLS[0] + 4, 100, "Product")
    _text(page, COLS[1] + 4, 100, "Sales")
    width = mu.get_text_length("Mac", fontsize=10)
    _text(page, COLS[0] + 4, 118, "Mac")
    page.insert_text((COLS[0] + 4 + width, 118 + 8), "®", fontsize=6)
    _text(page, COLS[1] + 4, 118, "7,614")
    [table] = find_tables(page, 1)
    assert _cells(table)[1][0] == "Mac®"


def test_a_column_header_line_right_above_the_rulings_is_the_header_not_row_zero() -> None:
    _, page = _page()
    _text(page, COLS[1] + 4, 100 - ROW_H, "2023")
    _text(page, COLS[2] + 4, 100 - ROW_H, "2022")
    _ruled(page, 100, 3)
    _rows(page, 100, [["Net sales by category:", "", ""], ["iPhone", "39,669", "40,665"]])
    [found] = _found(page)
    assert not found.header_inside
    [table] = find_tables(page, 1)
    header = sorted((c.col, c.text) for c in table.grid.cells if c.row == 0 and c.text)
    assert header == [(1, "2023"), (2, "2022")] and table.grid.header_rows == 1
    assert _cells(table)[1][0] == "Net sales by category:", "row zero is a body row under it"


def test_a_title_far_above_leaves_row_zero_as_the_header() -> None:
    _, page = _page()
    _text(page, COLS[0], 40, "Quarterly results", size=14)
    _ruled(page, 120, 3)
    _rows(page, 120, [["Item", "2023", "2022"], ["iPhone", "39,669", "40,665"]])
    [found] = _found(page)
    assert found.header_inside


def test_an_unruled_table_with_a_blank_line_between_rows_is_still_a_table() -> None:
    _, page = _page()
    rows = [
        ["Region", "Revenue", "Growth"],
        ["Americas", "50,000", "5%"],
        ["Europe", "30,000", "3%"],
    ]
    rows += [["Japan", "9,000", "1%"], ["Rest", "11,000", "7%"]]
    _rows(page, 100, rows, step=2 * ROW_H)
    [table] = find_tables(page, 1)
    assert [r for r in _cells(table) if any(r)] == rows


def test_cell_text_joins_side_by_side_pieces_and_keeps_each_lines_word_order() -> None:
    # (x0, y0, x1, y1, text, block, line, word): a bullet and its item are separate lines of
    # the word list at one height; a right-to-left line lists its words right to left
    words = [
        (10.0, 10.0, 14.0, 20.0, "•", 0, 0, 0),
        (20.0, 10.0, 60.0, 20.0, "First", 0, 1, 0),
        (200.0, 30.0, 240.0, 40.0, "مرحبا", 1, 0, 0),
        (150.0, 30.0, 190.0, 40.0, "بالعالم", 1, 0, 1),
    ]
    assert cell_text(words, (0, 0, 300, 50)) == "• First\nمرحبا بالعالم"


def test_the_table_test_and_the_finder_read_the_page_once() -> None:
    _, page = _page()
    _ruled(page, 100, 3)
    _rows(page, 100, [["Item", "2023", "2022"], ["iPhone", "39,669", "40,665"]])
    calls = {"get_textpage": 0, "get_cdrawings": 0}
    for name in calls:  # count on the page itself, where PyMuPDF's own get_text calls them
        original = getattr(page, name)

        def counted(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            calls[_name] += 1
            return _original(*args, **kw)

        setattr(page, name, counted)
    view = PageView(page)
    assert table_likely(view)
    assert len(find_tables(view, 1)) == 1
    assert calls == {"get_textpage": 1, "get_cdrawings": 1}
