"""Headings and tables of reports and filings (issue 14): numbering schemes name levels, table
rows and column headers, contents entries, running headers and bare dates are never headings,
a table keeps the column header set above its ruled rows, and numbers match however typed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf
import pytest

from corpus_pipeline.finance.periods import quarters_named
from corpus_pipeline.index.channels import analyze, variants, with_variants
from corpus_pipeline.parsing.pdf.headings import scheme_level
from corpus_pipeline.parsing.pdf.tables import find_tables
from corpus_pipeline.parsing.tables import TableCell, TableGrid
from corpus_pipeline_tests.support import REALWORLD_DOCS, needs_shared
from corpus_pipeline_tests.test_parse_pdf import BODY, body, headings, make_pdf, parse

mu: Any = pymupdf


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("PART I — FINANCIAL INFORMATION", 1),
        ("Part II. Other Information", 1),
        ("Item 1A. Risk Factors", 2),
        ("ITEM 2. MANAGEMENT'S DISCUSSION", 2),
        ("Note 7 – Shareholders' Equity", 3),
        ("Section 3.2 Scope", 2),
        ("Chapter 4 Results", 1),
        ("Annex B Glossary", 1),
        ("Itemised costs", None),
        ("Notes on the method", None),
    ],
)
def test_numbering_schemes_name_their_level(text: str, level: int | None) -> None:
    assert scheme_level(text) == level


def test_filing_parts_items_and_notes_nest_and_survive_list_demotion(tmp_path: Path) -> None:
    # Bold body-size lines in a row would read as a list; scheme numbering outweighs that.
    path = make_pdf(
        tmp_path / "filing.pdf",
        [
            [
                ("PART I - FINANCIAL INFORMATION", 10, "hebo"),
                ("Item 1. Financial Statements", 10, "hebo"),
                ("Note 1 - Summary of Policies", 10, "hebo"),
                *body(),
                ("Basis of Presentation", 10, "hebo"),
                *body(),
                ("Item 2. Management Discussion", 10, "hebo"),
                *body(4),
            ]
        ],
    )
    assert [(t, lvl) for t, lvl, _ in headings(parse(path, tmp_path))] == [
        ("PART I - FINANCIAL INFORMATION", 1),
        ("Item 1. Financial Statements", 2),
        ("Note 1 - Summary of Policies", 3),
        ("Basis of Presentation", 4),  # a font heading sits below the scheme heading holding it
        ("Item 2. Management Discussion", 2),
    ]


def _page(tmp_path: Path, draw: Any) -> Path:
    doc: Any = mu.open()
    page = doc.new_page(width=612, height=792)
    draw(page)
    path = tmp_path / "page.pdf"
    doc.save(path)
    return path


def test_column_headers_side_by_side_are_no_heading(tmp_path: Path) -> None:
    def draw(page: Any) -> None:
        page.insert_text((72, 100), "Revenue Overview", fontsize=10, fontname="hebo")
        y = 118.0
        for _ in range(4):
            page.insert_text((72, y), BODY[:90], fontsize=10)
            y += 14
        page.insert_text((300, y + 10), "Three Months Ended", fontsize=10, fontname="hebo")
        page.insert_text((450, y + 10), "Nine Months Ended", fontsize=10, fontname="hebo")
        for i in range(4):
            page.insert_text((72, y + 30 + 14 * i), BODY[:90], fontsize=10)

    found = [t for t, _, _ in headings(parse(_page(tmp_path, draw), tmp_path))]
    assert found == ["Revenue Overview"]


def test_a_contents_page_holds_no_sections(tmp_path: Path) -> None:
    entries = ["Financial Statements", "Risk Factors", "Legal Proceedings", "Controls", "Exhibits"]
    path = make_pdf(tmp_path / "doc.pdf", [[("Body page", 10, "helv"), *body()]] * 2)
    doc: Any = mu.open(path)
    page = doc.new_page(pno=0, width=595, height=842)
    page.insert_text((250, 80), "TABLE OF CONTENTS", fontsize=12, fontname="hebo")
    for i, entry in enumerate(entries):
        y = 120 + 20 * i
        page.insert_text((72, y), f"Item {i + 1}.", fontsize=10, fontname="hebo")
        page.insert_text((130, y), entry, fontsize=10, fontname="hebo")
        page.insert_text((520, y), str(3 + 4 * i), fontsize=10)
    doc.saveIncr()
    doc.close()
    found = [(t, pages) for t, _, pages in headings(parse(path, tmp_path))]
    assert [t for t, pages in found if pages == [1]] == ["TABLE OF CONTENTS"]


def test_a_running_company_name_and_a_bare_date_are_no_sections(tmp_path: Path) -> None:
    pages = [
        [("ACME Corp.", 10, "hebo"), (f"Topic {n}", 14, "helv"), *body(4)] for n in range(1, 5)
    ]
    pages[1].insert(2, ("July 1, 2023", 10, "hebo"))
    found = [t for t, _, _ in headings(parse(make_pdf(tmp_path / "r.pdf", pages), tmp_path))]
    assert found == ["Topic 1", "Topic 2", "Topic 3", "Topic 4"]


def test_a_ruled_table_keeps_the_column_header_set_above_it(tmp_path: Path) -> None:
    def draw(page: Any) -> None:
        page.insert_text((300, 100), "Three Months Ended", fontsize=8, fontname="hebo")
        page.insert_text((320, 112), "2023", fontsize=8, fontname="hebo")
        page.insert_text((420, 112), "2022", fontsize=8, fontname="hebo")
        rows = [("Products", "60,584", "63,355"), ("Services", "21,213", "19,604")]
        rows += [("Total net sales", "81,797", "82,959")]
        for i, (label, a, b) in enumerate(rows):
            y = 130 + 16 * i
            page.draw_line((72, y - 11), (500, y - 11))
            page.insert_text((72, y), label, fontsize=8)
            page.insert_text((320, y), a, fontsize=8)
            page.insert_text((420, y), b, fontsize=8)
        page.draw_line((72, 130 + 16 * 3 - 11), (500, 130 + 16 * 3 - 11))
        for x in (72, 300, 400, 500):
            page.draw_line((x, 119), (x, 167))

    doc: Any = mu.open(_page(tmp_path, draw))
    [table] = find_tables(doc[0], 1)
    text = table.grid.to_text()
    assert text.splitlines()[:2] == ["Three Months Ended", "2023 | 2022"]
    assert "Products | 60,584 | 63,355" in text
    assert table.grid.header_rows == 2


def test_table_text_joins_currency_and_percent_signs_to_their_figures() -> None:
    cells = ["Products", "$", "60,584", "", "35.4", "%"]
    grid = TableGrid(cells=[TableCell(0, j, t) for j, t in enumerate(cells)])
    assert grid.to_text() == "Products | $60,584 | 35.4%"


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("8,362", ["8362"]),
        ("1,234.56", ["1234.56"]),
        ("10-Q", ["10Q"]),
        ("COVID-19", ["COVID19"]),
        ("FY2023", ["FY 2023"]),
        ("Q3", []),
        ("2022/2023", []),
        ("a,b", []),
    ],
)
def test_identifier_variants(token: str, expected: list[str]) -> None:
    assert variants(token) == expected


@pytest.mark.parametrize(
    ("typed", "printed"),
    [("8362", "8,362"), ("8,362", "8362"), ("10Q", "Form 10-Q"), ("FY 2023", "FY2023")],
)
def test_numbers_match_however_they_are_typed(typed: str, printed: str) -> None:
    for channel in ("content", "term"):
        query = set(analyze(channel, with_variants(typed)))
        indexed = set(analyze(channel, with_variants(printed)))
        assert query & indexed - {"form"}, (channel, typed, printed)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Apple's Q3 2023 10-Q", ["2023q3"]),
        ("2022_Q3_NVDA.pdf", ["2022q3"]),
        ("in the first quarter of 2023", ["2023q1"]),
        ("the third quarter of fiscal 2024", ["2024q3"]),
        ("Q1 FY2023 and 2022 Q4", ["2023q1", "2022q4"]),
        ("AQ3 2022, Q3 20221, Q5 2023, quarter 2023", []),
    ],
)
def test_a_quarter_has_one_spelling_however_it_is_written(text: str, expected: list[str]) -> None:
    assert quarters_named(text) == expected


def test_a_quarter_typed_one_way_matches_a_page_that_prints_it_another() -> None:
    query = set(analyze("content", with_variants("revenue in Q3 2023")))
    printed = set(analyze("content", with_variants("In the third quarter of 2023, revenue rose")))
    other_year = set(analyze("content", with_variants("In the third quarter of 2022")))
    assert "2023q3" in query & printed
    assert "2023q3" not in other_year


@needs_shared(REALWORLD_DOCS)
def test_a_real_10q_has_its_filing_structure(tmp_path: Path) -> None:
    ctx = parse(REALWORLD_DOCS / "2023_Q3_AAPL.pdf", tmp_path)
    found = headings(ctx)
    levels = {t: lvl for t, lvl, _ in found}
    assert levels["PART I — FINANCIAL INFORMATION"] == 1
    assert levels["Item 1. Financial Statements"] == 2
    assert levels["Note 2 – Revenue"] == 3
    titles = [t for t, _, _ in found]
    assert not [t for t in titles if "Months Ended" in t or t.endswith("Change")]
    assert max(titles.count(t) for t in titles) <= 2


def test_bold_scheme_headings_set_below_the_body_size_still_nest(tmp_path: Path) -> None:
    # Filings set PART/Item/Note lines in bold at the notes' size, smaller than the MD&A text.
    path = make_pdf(
        tmp_path / "filing.pdf",
        [
            [
                ("PART I - FINANCIAL INFORMATION", 8.5, "hebo"),
                ("Item 1. Financial Statements", 8.5, "hebo"),
                *body(),
                ("Note 1 - Summary of Policies", 8.5, "hebo"),
                *body(4),
            ]
        ],
    )
    assert [(t, lvl) for t, lvl, _ in headings(parse(path, tmp_path))] == [
        ("PART I - FINANCIAL INFORMATION", 1),
        ("Item 1. Financial Statements", 2),
        ("Note 1 - Summary of Policies", 3),
    ]


@needs_shared(REALWORLD_DOCS)
def test_a_real_10q_with_small_scheme_headings_and_one_statement_per_page(tmp_path: Path) -> None:
    ctx = parse(REALWORLD_DOCS / "2023_Q1_AAPL.pdf", tmp_path)
    levels = {t: lvl for t, lvl, _ in headings(ctx)}
    assert levels["PART I — FINANCIAL INFORMATION"] == 1
    assert levels["Item 1. Financial Statements"] == 2
    assert levels["Note 1 – Summary of Significant Accounting Policies"] == 3
    # Each statement is its own table on its own page (they share a header, not a table).
    tables = [r for r in ctx.rows if r.row_type.value == "table"]
    assert [t.page_numbers for t in tables if t.page_numbers[0] in (4, 5, 6)] == [[4], [5], [6]]
