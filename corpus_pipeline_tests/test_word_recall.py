"""Word recall (corpus_pipeline.quality.recall): the words of a PDF's plain text layer that
reach its chunks, with running headers excluded only by the PDF parser's own rule."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from corpus_pipeline.quality.recall import (
    chunk_words,
    pdf_word_recall,
    word_recall,
    words,
)

_mupdf: Any = pymupdf
HEADER = "Acme Quarterly Review Confidential"


def paragraph(tag: str, n: int) -> str:
    """`n` distinct words (`tag0 … tag{n-1}`), so every word is counted exactly once."""
    return " ".join(f"{tag}{i}" for i in range(n))


def write_pdf(path: Path, pages: list[list[str]], header: str | None = None) -> Path:
    """An A4 text PDF: each page's paragraphs in the body, one per line block; `header` (if
    given) at the top edge of every page, where running headers live."""
    doc = _mupdf.open()
    for paragraphs in pages:
        page = doc.new_page(width=595, height=842)
        if header:
            page.insert_text((72, 30), header, fontsize=9)
        y = 150.0
        for text in paragraphs:
            page.insert_textbox(_mupdf.Rect(72, y, 523, y + 200), text, fontsize=11)
            y += 220
    doc.save(path)
    doc.close()
    return path


def test_the_tokeniser_folds_case_and_compatibility_forms_and_keeps_digits():
    assert words("The ﬁrst Table 12, the FIRST table") == Counter(
        {"the": 2, "first": 2, "table": 2, "12": 1}
    )


def test_a_line_break_hyphen_and_its_joined_word_are_the_same_word():
    assert words("the pipe-\nline runs") == words("the pipeline runs")


def test_resource_markers_are_no_words_but_table_text_is():
    assert chunk_words(["Intro [table: tables/t001.html] end", "Year | Revenue\n2023 | 12"]) == (
        Counter({"intro": 1, "end": 1, "year": 1, "revenue": 1, "2023": 1, "12": 1})
    )


def test_recall_is_a_multiset_share():
    expected = Counter({"a": 3, "b": 1})
    assert word_recall(expected, Counter({"a": 1, "b": 5})) == 0.5
    assert word_recall(Counter(), Counter({"a": 1})) is None


def test_everything_kept_gives_full_recall(tmp_path: Path):
    kept = [paragraph("alpha", 30), paragraph("beta", 20)]
    pdf = write_pdf(tmp_path / "doc.pdf", [kept, [paragraph("gamma", 25)]])
    result = pdf_word_recall(pdf, [*kept, paragraph("gamma", 25)])
    assert result.recall == 1.0
    assert result.expected_words == 75
    assert result.missing == []


def test_a_dropped_paragraph_lowers_recall_by_its_share(tmp_path: Path):
    kept, dropped = paragraph("alpha", 30), paragraph("beta", 10)
    pdf = write_pdf(tmp_path / "doc.pdf", [[kept, dropped]])
    result = pdf_word_recall(pdf, [kept])
    assert result.recall == pytest.approx(30 / 40)
    assert {w for w, _ in result.missing} <= {f"beta{i}" for i in range(10)}
    assert [page for page, _ in result.lowest_pages] == [1]


def test_a_running_header_on_every_page_is_excluded_by_the_parsers_rule(tmp_path: Path):
    bodies = [paragraph(f"p{n}w", 20) for n in range(4)]
    pdf = write_pdf(tmp_path / "doc.pdf", [[b] for b in bodies], header=HEADER)
    result = pdf_word_recall(pdf, bodies)
    assert result.recall == 1.0
    assert result.furniture_words == 4 * len(HEADER.split())


def test_a_top_line_on_one_page_only_is_not_furniture_and_counts(tmp_path: Path):
    bodies = [paragraph(f"p{n}w", 20) for n in range(4)]
    pdf = write_pdf(tmp_path / "doc.pdf", [[b] for b in bodies])
    with _mupdf.open(pdf) as doc:  # the header on page 1 only: no repetition, no furniture
        doc[0].insert_text((72, 30), HEADER, fontsize=9)
        doc.save(tmp_path / "once.pdf")
    result = pdf_word_recall(tmp_path / "once.pdf", bodies)
    assert result.furniture_words == 0
    assert result.recall == pytest.approx(80 / (80 + len(HEADER.split())))


def test_a_page_without_a_text_layer_counts_for_nothing(tmp_path: Path):
    body = paragraph("alpha", 30)
    pdf = write_pdf(tmp_path / "doc.pdf", [[body], []])
    result = pdf_word_recall(pdf, [body, "words read by OCR from the scanned page"])
    assert (result.pages, result.pages_with_text) == (2, 1)
    assert result.recall == 1.0


def test_headers_are_judged_per_range_of_the_split_plan_as_the_parser_does(tmp_path: Path):
    bodies = [paragraph(f"p{n}w", 20) for n in range(4)]
    pdf = write_pdf(tmp_path / "doc.pdf", [[b] for b in bodies], header=HEADER)
    result = pdf_word_recall(pdf, bodies, ranges=[(1, 2), (3, 4)])
    assert (result.recall, result.furniture_words) == (1.0, 4 * len(HEADER.split()))


def test_a_page_outside_the_split_plan_still_counts(tmp_path: Path):
    bodies = [paragraph(f"p{n}w", 20) for n in range(3)]
    pdf = write_pdf(tmp_path / "doc.pdf", [[b] for b in bodies])
    result = pdf_word_recall(pdf, bodies[:2], ranges=[(1, 2)])
    assert result.pages == 3
    assert result.recall == pytest.approx(40 / 60)


def test_a_deduplicated_chunk_counts_once_for_every_place_it_occurs(tmp_path: Path):
    boilerplate, body = paragraph("form", 10), paragraph("body", 10)
    pdf = write_pdf(tmp_path / "doc.pdf", [[boilerplate], [boilerplate, body]])
    assert pdf_word_recall(pdf, [(boilerplate, 2), body]).recall == 1.0
    assert pdf_word_recall(pdf, [boilerplate, body]).recall == pytest.approx(20 / 30)
