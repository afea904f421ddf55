"""PDF tables: ruled grids → TableGrid with spans, decimals, captions, page joins, cheap gating."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pymupdf as _pymupdf
import pytest

from corpus_pipeline.parsing.pdf.table_joining import join_continued_tables
from corpus_pipeline.parsing.pdf.tables import PdfTable, find_tables, table_likely
from corpus_pipeline_tests.support import DOCS, expected_tables, scorer

COLS = (72.0, 192.0, 312.0, 432.0)  # three columns
ROW_H = 20.0

mu: Any = _pymupdf  # PyMuPDF is untyped; keep mypy --strict quiet at one place


def _draw_table(
    page: Any,
    top: float,
    rows: Sequence[Sequence[str | None]],
) -> None:
    """Ruled grid; a None cell continues the cell to its left (no vertical rule between them)."""
    for i in range(len(rows) + 1):
        page.draw_line((COLS[0], top + i * ROW_H), (COLS[-1], top + i * ROW_H))
    for j, x in enumerate(COLS):
        for i, row in enumerate(rows):
            inner = 0 < j < len(COLS) - 1
            if inner and row[j] is None:
                continue
            page.draw_line((x, top + i * ROW_H), (x, top + (i + 1) * ROW_H))
    for i, row in enumerate(rows):
        for j, text in enumerate(row):
            if text:
                page.insert_text((COLS[j] + 4, top + i * ROW_H + 14), text, fontsize=10)


def _page_with_table(rows: Sequence[Sequence[str | None]], top: float = 100.0) -> Any:
    doc = mu.open()
    page = doc.new_page()
    _draw_table(page, top, rows)
    return doc, page


def _two_pages() -> tuple[Any, Any]:
    doc = mu.open()
    doc.new_page()
    doc.new_page()  # adding a page invalidates earlier Page objects: load them afterwards
    return doc[0], doc[1]


def _cells(table: PdfTable) -> list[list[str]]:
    return [[c.text for c in row] for row in table.grid.rows()]


ROWS = [
    ["Item", "Price", "Qty"],
    ["Apple", "4.50", "3"],
    ["Pear", "12.05", "10"],
]


def test_ruled_table_has_its_shape_and_cell_texts() -> None:
    _, page = _page_with_table(ROWS)
    [table] = find_tables(page, 1)
    assert (table.grid.num_rows, table.grid.num_cols) == (3, 3)
    assert _cells(table) == ROWS
    assert table.page == 1 and table.pages == (1,)
    assert table.grid.header_rows == 1


def test_merged_header_cell_becomes_colspan() -> None:
    rows: list[list[str | None]] = [
        ["Name", "Scores", None],
        ["", "first", "second"],
        ["Ann", "1", "2"],
    ]
    _, page = _page_with_table(rows)
    [table] = find_tables(page, 1)
    html = table.grid.to_html()
    assert '<th colspan="2">Scores</th>' in html
    assert (table.grid.num_rows, table.grid.num_cols) == (3, 3)


def test_decimal_cell_text_survives() -> None:
    _, page = _page_with_table(ROWS)
    [table] = find_tables(page, 1)
    texts = [c.text for c in table.grid.cells]
    assert "4.50" in texts and "12.05" in texts


def test_caption_line_above_table_is_the_caption() -> None:
    _, page = _page_with_table(ROWS)
    page.insert_text((72, 90), "Table 3: Results", fontsize=10)
    [table] = find_tables(page, 1)
    assert table.caption == "Table 3: Results"
    assert table.grid.caption == "Table 3: Results"
    assert "<caption>Table 3: Results</caption>" in table.grid.to_html()


def test_table_continued_with_repeated_header_is_joined() -> None:
    first, second = _two_pages()
    header = ["Item", "Price", "Qty"]
    _draw_table(first, 680.0, [header, ["Apple", "4.50", "3"], ["Pear", "12.05", "10"]])
    _draw_table(second, 60.0, [header, ["Plum", "0.99", "7"], ["Fig", "2.00", "1"]])
    tables = find_tables(first, 1) + find_tables(second, 2)
    assert len(tables) == 2
    [joined] = join_continued_tables(tables, {1: first.rect.height, 2: second.rect.height})
    assert joined.pages == (1, 2) and joined.page == 1
    assert _cells(joined) == [
        header,
        ["Apple", "4.50", "3"],
        ["Pear", "12.05", "10"],
        ["Plum", "0.99", "7"],
        ["Fig", "2.00", "1"],
    ]
    # Each row knows the page it is printed on (the repeated header is dropped).
    assert joined.grid.row_pages == (1, 1, 1, 2, 2)


def _text_above(pages: dict[int, Any]) -> Any:
    def above(tab: PdfTable) -> list[str]:
        blocks = pages[tab.page].get_text("blocks")
        return [str(b[4]) for b in blocks if b[3] <= tab.bbox[1] + 1]

    return above


@pytest.mark.parametrize(("title", "joined"), [("Balance Sheet", False), ("(continued)", True)])
def test_a_table_its_own_title_introduces_is_no_continuation(title: str, joined: bool) -> None:
    first, second = _two_pages()
    header = ["Item", "Price", "Qty"]
    _draw_table(first, 680.0, [header, ["Apple", "4.50", "3"], ["Pear", "12.05", "10"]])
    second.insert_text((72, 50), title, fontsize=11)
    _draw_table(second, 60.0, [header, ["Plum", "0.99", "7"], ["Fig", "2.00", "1"]])
    tables = find_tables(first, 1) + find_tables(second, 2)
    heights = {1: first.rect.height, 2: second.rect.height}
    result = join_continued_tables(tables, heights, _text_above({1: first, 2: second}))
    assert len(result) == (1 if joined else 2)


def test_table_in_middle_of_next_page_is_not_joined() -> None:
    first, second = _two_pages()
    _draw_table(first, 680.0, ROWS)
    _draw_table(second, 420.0, ROWS)
    tables = find_tables(first, 1) + find_tables(second, 2)
    assert [t.pages for t in join_continued_tables(tables)] == [(1,), (2,)]


def test_next_page_table_with_its_own_caption_is_not_joined() -> None:
    first, second = _two_pages()
    _draw_table(first, 680.0, ROWS)
    second.insert_text((72, 70), "Table 4: Other results", fontsize=10)
    _draw_table(second, 80.0, [["Plum", "0.99", "7"], ["Fig", "2.00", "1"]])
    tables = find_tables(first, 1) + find_tables(second, 2)
    assert [t.pages for t in join_continued_tables(tables)] == [(1,), (2,)]


def test_continuation_without_header_but_aligned_columns_is_joined() -> None:
    first, second = _two_pages()
    _draw_table(first, 680.0, ROWS)
    _draw_table(second, 60.0, [["Plum", "0.99", "7"], ["Fig", "2.00", "1"]])
    [joined] = join_continued_tables(find_tables(first, 1) + find_tables(second, 2))
    assert joined.grid.num_rows == 5 and joined.pages == (1, 2)


def test_table_likely_false_on_plain_text_true_on_ruled_grid() -> None:
    doc = mu.open()
    prose = doc.new_page()
    prose.insert_textbox(
        mu.Rect(72, 72, 520, 700),
        " ".join(["The quick brown fox jumps over the lazy dog."] * 60),
        fontsize=11,
    )
    assert not table_likely(prose)
    _, ruled = _page_with_table(ROWS)
    assert table_likely(ruled)


def test_three_column_prose_is_not_a_table() -> None:
    doc = mu.open()
    page = doc.new_page()
    text = " ".join(["Rivers carry sediment to the sea and shape the land they cross."] * 12)
    for x in (40, 220, 400):
        page.insert_textbox(mu.Rect(x, 60, x + 170, 780), text, fontsize=9)
    assert not table_likely(page)
    assert find_tables(page, 1) == []


def test_single_frame_box_is_not_a_table() -> None:
    doc = mu.open()
    page = doc.new_page()
    page.draw_rect(mu.Rect(72, 100, 500, 200))
    page.insert_text((80, 120), "Note: a boxed paragraph is not a table.", fontsize=10)
    assert not table_likely(page)
    assert find_tables(page, 1) == []


def test_ruled_one_column_table_is_found() -> None:
    """PyMuPDF drops one-column grids; ODT/DOCX exports draw them fully ruled."""
    doc = mu.open()
    single = doc.new_page()
    for y in (100, 120, 140):
        single.draw_line((72, y), (300, y))
    for x in (72, 300):
        single.draw_line((x, 100), (x, 140))
    single.insert_text((76, 114), "Cell 1 item 1", fontsize=10)
    single.insert_text((76, 134), "Cell 2 item 1", fontsize=10)
    [table] = find_tables(single, 1)
    assert (table.grid.num_rows, table.grid.num_cols) == (2, 1)
    assert _cells(table) == [["Cell 1 item 1"], ["Cell 2 item 1"]]


def test_unruled_aligned_table_falls_back_to_text_strategy() -> None:
    doc = mu.open()
    page = doc.new_page()
    rows = [
        ("Region", "Sales", "Growth", "Staff"),
        ("North", "1,200", "4.50", "12"),
        ("South", "980", "3.10", "9"),
        ("East", "1,450", "5.25", "15"),
        ("West", "700", "1.05", "6"),
    ]
    for i, row in enumerate(rows):
        for x, text in zip((72, 200, 320, 440), row, strict=True):
            page.insert_text((x, 400 + 16 * i), text, fontsize=10)
    page.insert_text((72, 100), "A plain paragraph above the table, written as prose.", fontsize=10)
    page.insert_text((72, 386), "Figures for the last quarter of the year, by region", fontsize=10)
    assert table_likely(page)
    [table] = find_tables(page, 1)
    assert (table.grid.num_rows, table.grid.num_cols) == (5, 4)
    assert _cells(table)[0] == ["Region", "Sales", "Growth", "Staff"]
    assert _cells(table)[1] == ["North", "1,200", "4.50", "12"]


def _scores(doc_name: str, only_likely: bool) -> dict[str, Any]:
    doc: Any = mu.open(DOCS / doc_name)
    tables: list[PdfTable] = []
    for number, page in enumerate(doc, 1):
        if not only_likely or table_likely(page):
            tables += find_tables(page, number)
    got = [{"page": t.page, "html": t.grid.to_html()} for t in join_continued_tables(tables)]
    return dict(scorer().score_tables(expected_tables(doc_name), got))


@pytest.mark.parametrize("only_likely", [False, True])
@pytest.mark.parametrize(
    ("doc_name", "floor"),
    [
        ("redp5110_sampled.pdf", 1.0),
        ("2305.03393v1-pg9.pdf", 1.0),
        ("text_document_03.odt.pdf", 1.0),
        ("table_mislabeled_as_picture.pdf", 1.0),
    ],
)
def test_official_table_recall_on_real_pdfs(doc_name: str, floor: float, only_likely: bool) -> None:
    scores = _scores(doc_name, only_likely)
    assert scores["recall"] >= floor, json.dumps(scores)
    assert scores["shape_acc"] == 1.0


def test_multi_row_header_spans_match_ground_truth() -> None:
    scores = _scores("2305.03393v1-pg9.pdf", only_likely=False)
    assert scores["span_recall"] == 1.0


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_a_table_on_a_rotated_page_reads_as_on_the_unrotated_page(rotation: int) -> None:
    _, upright = _page_with_table(ROWS)
    [expected] = find_tables(upright, 1)
    _, page = _page_with_table(ROWS)
    page.set_rotation(rotation)
    [table] = find_tables(page, 1)
    assert _cells(table) == ROWS, "rows stay rows: not transposed or reversed"
    assert table.bbox == expected.bbox, "in the unrotated space the parser's text lives in"
    assert page.rotation == rotation, "the page's rotation is put back"
