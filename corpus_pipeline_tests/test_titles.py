"""Document titles: a declared title when it names the document, else a heading that does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf as _pymupdf
import pytest

from corpus_pipeline.contracts import FileFormat, ParsedRow, RowType
from corpus_pipeline.parsing.pdf import parse_pdf
from corpus_pipeline.structure.titles import document_title, plausible_declared_title
from corpus_pipeline_tests.support import run_parser

mu: Any = _pymupdf  # PyMuPDF is untyped; keep mypy --strict quiet at one place


def heading(text: str, level: int, order: int) -> ParsedRow:
    return ParsedRow(
        order=order,
        row_type=RowType.HEADING,
        text=text,
        heading_level=level,
        source_location=f"row {order}",
    )


@pytest.mark.parametrize(
    "declared",
    [
        "0000320193-23-000077",  # an accession number
        "Microsoft Word - Protocol-230315.docx",
        "report_final_v2",
        "HHS2022B",  # one code word
        "Contents",
        "Untitled",
        "annual-report-2022",  # the file name again
        "",
        None,
    ],
)
def test_a_declared_title_that_does_not_name_the_document_is_ignored(declared):
    assert plausible_declared_title(declared, "annual-report-2022.pdf") is None


def test_a_declared_title_that_names_the_document_wins():
    rows = [heading("INDEX", 1, 0), heading("PART I. FINANCIAL INFORMATION", 1, 1)]
    title = document_title(
        rows, "2023_Q3_MSFT.pdf", "Form 10-Q for Microsoft Corp filed 10/24/2023"
    )
    assert title == "Form 10-Q for Microsoft Corp filed 10/24/2023"


def test_generic_part_names_and_page_numbers_are_never_the_title():
    rows = [
        heading("Table of Contents", 1, 0),
        heading("15", 1, 1),
        heading("1 Introduction", 1, 2),
        heading("Annual Performance Report", 1, 3),
    ]
    assert document_title(rows, "apr.pdf", "0001-22") == "Annual Performance Report"


def test_without_any_naming_heading_the_file_stem_is_the_title():
    assert document_title([heading("Contents", 1, 0)], "owners-manual.pdf") == "owners-manual"


def test_a_pdf_declares_its_metadata_title(tmp_path: Path) -> None:
    doc = mu.open()
    doc.new_page().insert_text((72, 72), "Body text.", fontsize=11)
    doc.set_metadata({"title": "Owner's Manual"})
    source = tmp_path / "manual-2170416.pdf"
    doc.save(source)
    ctx = run_parser(parse_pdf, source, tmp_path / "work", FileFormat.PDF)
    assert ctx.declared_title == "Owner's Manual"
    assert document_title(ctx.rows, source.name, ctx.declared_title) == "Owner's Manual"


def paragraph(text: str, order: int) -> ParsedRow:
    return ParsedRow(
        order=order, row_type=RowType.PARAGRAPH, text=text, source_location=f"row {order}"
    )


def test_a_filing_is_titled_by_its_registrant_and_form():
    cover = [
        "UNITED STATES SECURITIES AND EXCHANGE COMMISSION",
        "FORM 10-Q",
        "For the quarterly period ended October 29, 2023",
        "NVIDIA CORPORATION",
        "(Exact name of registrant as specified in its charter)",
        "Delaware",
    ]
    rows = [paragraph(t, i) for i, t in enumerate(cover)] + [heading("FORM 10-Q", 1, 9)]
    assert document_title(rows, "2023_Q3_NVDA.pdf") == "NVIDIA CORPORATION Form 10-Q"


def test_a_plausible_declared_title_still_wins_over_the_cover():
    rows = [
        paragraph("Heron Corp", 0),
        paragraph("(Exact name of registrant as specified in its charter)", 1),
    ]
    declared = "Form 10-Q for Heron Corp filed 10/24/2023"
    assert document_title(rows, "heron.pdf", declared) == declared


def test_a_document_without_a_registrant_caption_is_no_filing():
    rows = [
        heading("Annual Performance Report", 1, 0),
        paragraph("FORM 10-Q is mentioned here.", 1),
    ]
    assert document_title(rows, "report.pdf") == "Annual Performance Report"
