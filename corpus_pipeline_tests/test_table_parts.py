"""Long tables as parts: header rows repeated, balanced row groups, exact pages, spans kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf as _pymupdf

from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.parsing.pdf import parse_pdf
from corpus_pipeline.parsing.tables import TableCell, TableGrid, split_rows
from corpus_pipeline_tests.support import run_parser

mu: Any = _pymupdf  # PyMuPDF is untyped; keep mypy --strict quiet at one place


def words(text: str) -> int:
    return len(text.split())


def grid(rows: list[list[str]], header_rows: int = 1, pages: tuple[int, ...] = ()) -> TableGrid:
    cells = [TableCell(r, c, text) for r, row in enumerate(rows) for c, text in enumerate(row)]
    return TableGrid(
        cells=cells, caption="Table 1: Prices", header_rows=header_rows, row_pages=pages
    )


HEADER = ["Item", "Price"]
BODY = [[f"item{i}", f"{i}.00"] for i in range(12)]  # 3 words per row with the separator


def test_a_table_within_the_limit_stays_whole() -> None:
    table = grid([HEADER, *BODY])
    assert split_rows(table, 100, words) == [table]


def test_a_long_table_is_split_into_balanced_parts_each_led_by_the_header() -> None:
    parts = split_rows(grid([HEADER, *BODY]), 20, words)
    assert len(parts) == 3
    for part in parts:
        lines = part.to_text().split("\n")
        assert lines[:2] == ["Table 1: Prices", "Item | Price"]
        assert len(lines) - 2 == 4  # 12 body rows in three parts of four
    assert [p.to_text().split("\n")[2] for p in parts] == [
        "item0 | 0.00",
        "item4 | 4.00",
        "item8 | 8.00",
    ]
    assert all(p.header_rows == 1 for p in parts)
    assert "<thead><tr><th>Item</th><th>Price</th></tr></thead>" in parts[1].to_html()


def test_every_body_row_is_in_exactly_one_part() -> None:
    parts = split_rows(grid([HEADER, *BODY]), 14, words)
    body = [line for p in parts for line in p.to_text().split("\n")[2:]]
    assert body == [f"item{i} | {i}.00" for i in range(12)]


def test_a_part_never_ends_inside_a_merged_cell() -> None:
    cells = [TableCell(0, 0, "Region"), TableCell(0, 1, "Sales")]
    for r in range(1, 13, 3):  # each region label spans three rows
        cells.append(TableCell(r, 0, f"region{r}", rowspan=3))
        cells += [TableCell(r + k, 1, f"{r + k}.5") for k in range(3)]
    parts = split_rows(TableGrid(cells=cells, header_rows=1), 16, words)
    assert len(parts) > 1
    for part in parts:
        body = [c for c in part.cells if c.row >= 1]
        assert body[0].text.startswith("region"), "each part starts at a merged label"
        assert part.num_rows == 1 + sum(c.rowspan for c in body if c.col == 0)


def test_parts_cite_the_pages_their_rows_are_on_and_cut_at_the_page_break() -> None:
    pages = (1,) + (1,) * 7 + (2,) * 5
    parts = split_rows(grid([HEADER, *BODY], pages=pages), 30, words)
    assert [p.pages() for p in parts] == [[1], [2]]


def _long_table_pdf(path: Path, rows: int) -> None:
    """A ruled three-column table of `rows` body rows running over a page break."""
    doc = mu.open()
    page = doc.new_page()
    page.insert_text((72, 60), "Segment results", fontsize=16)
    xs = (72, 290, 410, 540)
    top = y = 90.0
    for i in range(rows + 1):
        if y > 780:
            for x in xs:
                page.draw_line((x, top), (x, y))
            page.draw_line((72, y), (540, y))
            page = doc.new_page()
            top = y = 40.0
        label = (
            ("Segment", "Revenue", "Operating income")
            if i == 0
            else (f"Segment {i}", f"{1000 + i:,}", f"{200 + i:,}")
        )
        for x, text in zip(xs, label, strict=False):
            page.insert_text((x + 4, y + 14), text, fontsize=9)
        page.draw_line((72, y), (540, y))
        y += 20
    for x in xs:
        page.draw_line((x, top), (x, y))
    page.draw_line((72, y), (540, y))
    doc.save(path)


def test_a_long_pdf_table_becomes_parts_with_exact_pages(tmp_path: Path) -> None:
    source = tmp_path / "segments.pdf"
    _long_table_pdf(source, 120)
    rows = run_parser(parse_pdf, source, tmp_path / "work", FileFormat.PDF).rows
    tables = [r for r in rows if r.row_type is RowType.TABLE]
    # 35 rows on page 1, 38 on pages 2 and 3, 9 on page 4: parts follow the pages.
    assert [t.page_numbers for t in tables] == [[1], [2], [3, 4]]
    assert all(t.text.split("\n")[0] == "Segment | Revenue | Operating income" for t in tables)
    labels = [line.split(" | ")[0] for t in tables for line in t.text.split("\n")[1:]]
    assert labels == [f"Segment {i}" for i in range(1, 121)]


def test_a_page_of_empty_rows_is_one_part_not_an_error() -> None:
    # A map legend or drawn grid: text on the first page, empty cells on the next.
    rows = [HEADER, *BODY, *[["", ""] for _ in range(6)]]
    pages = (1,) * 13 + (2,) * 6
    parts = split_rows(grid(rows, pages=pages), 20, words)
    assert [p.pages() for p in parts][-1] == [2]
    body = [line for p in parts for line in p.to_text().split("\n")[2:]]
    assert body == [f"item{i} | {i}.00" for i in range(12)]
