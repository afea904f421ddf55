"""PDF profile: routing category, semantic classification, TOC, fonts, split plan, cost."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pymupdf

from corpus_pipeline.contracts import PdfProfile, PdfTocEntry
from corpus_pipeline.parsing.pdf.profile import open_pdf, split_plan
from corpus_pipeline.parsing.router import parser_for
from corpus_pipeline.profiling import profile_source
from corpus_pipeline_tests.support import DOCS, REALWORLD_DOCS, needs_shared

mu: Any = pymupdf  # PyMuPDF is only partly annotated


def _pdf(profile_path: Path) -> PdfProfile:
    pdf = profile_source(profile_path).profile.pdf
    assert pdf is not None
    return pdf


def test_a_wide_deck_with_big_titles_is_slides(tmp_path):
    doc: Any = mu.open()
    for n in range(5):
        page = doc.new_page(width=960, height=540)
        page.insert_text((60, 80), f"Slide title {n}", fontsize=36, fontname="hebo")
        page.insert_text((60, 160), "One short bullet point", fontsize=22)
    path = tmp_path / "deck.pdf"
    doc.save(path)
    pdf = _pdf(path)
    assert pdf.category == "slides"
    assert pdf.classification == "slide deck"
    assert pdf.landscape_share == 1.0


def test_an_image_only_page_is_a_scan(tmp_path):
    src: Any = mu.open()
    src.new_page().insert_text((72, 100), "scanned words", fontsize=30)
    png = src[0].get_pixmap(dpi=72).tobytes("png")
    doc: Any = mu.open()
    doc.new_page().insert_image(doc[0].rect, stream=png)
    path = tmp_path / "scan.pdf"
    doc.save(path)
    pdf = _pdf(path)
    assert pdf.category == "scan"
    assert pdf.text_coverage == 0.0
    assert pdf.classification == "scanned document"


def test_the_embedded_outline_is_profiled():
    profile = profile_source(DOCS / "bookmark_sample.pdf").profile
    assert profile.has_embedded_toc
    assert profile.pdf is not None
    assert profile.pdf.toc_levels == 3
    assert [e.title for e in profile.pdf.toc][:2] == ["PART I - DEFINITIONS", "1. Interpretation"]
    assert profile.routing.strategy == "pdf"
    assert parser_for(profile).__name__ == "parse_pdf"


def test_text_pdf_facts_body_size_language_and_columns():
    profile = profile_source(DOCS / "multi_page.pdf").profile
    pdf = profile.pdf
    assert pdf is not None
    assert pdf.category == "general"
    assert pdf.body_font_size == 12.0
    assert profile.language == "en"
    assert profile.page_count == pdf.page_count == 5
    two_columns = profile_source(DOCS / "normal_4pages.pdf").profile.pdf
    assert two_columns is not None and two_columns.multi_column_pages


def test_profiling_is_cheap_per_page():
    pdf = _pdf(DOCS / "multi_page.pdf")
    assert 0 < pdf.ms_per_page < 200


def test_split_plan_cuts_at_top_level_toc_entries():
    toc = [
        PdfTocEntry(level=1, title="A", page=1),
        PdfTocEntry(level=2, title="A.1", page=40),
        PdfTocEntry(level=1, title="B", page=90),
        PdfTocEntry(level=1, title="C", page=300),
    ]
    # Ranges start at chapters and never exceed N pages; a long chapter is cut every N.
    assert split_plan(400, toc, 100) == [
        (1, 89),
        (90, 189),
        (190, 289),
        (290, 299),
        (300, 399),
        (400, 400),
    ]
    assert split_plan(250, [], 100) == [(1, 100), (101, 200), (201, 250)]
    assert split_plan(50, toc, 100) == [(1, 50)]


def _tagged_pdf(path: Path, pages: int, ids_per_page: int) -> bytes:
    """A PDF whose pages carry `ids_per_page` marked-content ids under a structure tree."""
    doc: Any = mu.open()
    for number in range(pages):
        page = doc.new_page()
        page.insert_text((72, 72), f"Tagged words stay words {number}", fontsize=12)
        xref = page.get_contents()[0]
        first = number * ids_per_page
        tags = b"".join(b"/P <</MCID %d>> BDC EMC\n" % (first + i) for i in range(ids_per_page))
        doc.update_stream(xref, tags + doc.xref_stream(xref))
    tree = doc.get_new_xref()
    doc.update_object(tree, "<< /Type /StructTreeRoot /K [] >>")
    doc.xref_set_key(doc.pdf_catalog(), "StructTreeRoot", f"{tree} 0 R")
    doc.save(path)
    return path.read_bytes()


def _tree(doc: Any) -> str:
    return str(doc.xref_get_key(doc.pdf_catalog(), "StructTreeRoot")[0])


def test_a_small_structure_tree_is_kept(tmp_path):
    path = tmp_path / "tagged.pdf"
    _tagged_pdf(path, pages=3, ids_per_page=40)
    doc = open_pdf(path)
    try:
        assert _tree(doc) == "xref"  # its ActualText is the authored text
    finally:
        doc.close()


def test_a_structure_tree_tagging_every_word_is_detached_in_memory_only(tmp_path):
    path = tmp_path / "tagged.pdf"
    original = _tagged_pdf(path, pages=3, ids_per_page=4000)
    doc = open_pdf(path)
    try:
        assert _tree(doc) == "null"
        assert "Tagged words stay words 2" in doc[2].get_text()
    finally:
        doc.close()
    assert path.read_bytes() == original  # the file itself is never written


@needs_shared(REALWORLD_DOCS)
def test_a_browser_printed_filing_reads_the_same_without_its_structure_tree():
    # Every word of this 10-Q is tagged; MuPDF resolved each tag per page read (~100 ms/page).
    path = REALWORLD_DOCS / "2023_Q1_MSFT.pdf"
    kept: Any = mu.open(path)
    detached = open_pdf(path)
    try:
        assert _tree(kept) == "xref" and _tree(detached) == "null"
        for number in (0, 10, 40):
            assert detached[number].get_text("rawdict") == kept[number].get_text("rawdict")
            assert detached[number].get_cdrawings() == kept[number].get_cdrawings()
            assert detached[number].get_image_info() == kept[number].get_image_info()
    finally:
        kept.close()
        detached.close()


def test_the_parse_reads_the_profiles_sampled_pages_and_gets_the_same_rows(tmp_path: Path) -> None:
    from corpus_pipeline.common.settings import load_settings
    from corpus_pipeline.pipeline.stages import read_rows, run_parse, run_profile

    settings = load_settings(home=tmp_path)
    pdf = tmp_path / "two.pdf"
    doc = mu.open()
    for text in ("Heading one\nBody text of the first page.", "Second page body text."):
        doc.new_page().insert_text((72, 72), text)
    doc.save(pdf)
    profiled = run_profile(pdf, pdf.name, settings=settings)
    assert profiled.reads is not None and sorted(profiled.reads.blocks) == [1, 2]
    with_reads = run_parse("a", profiled, tmp_path / "a", settings)
    assert not profiled.reads.blocks, "the parse uses the reads instead of reading the pages"
    without = run_parse("b", replace(profiled, reads=None), tmp_path / "b", settings)
    assert read_rows(with_reads.rows_path) == read_rows(without.rows_path)


def test_reads_of_another_file_are_not_used(tmp_path: Path) -> None:
    """Reads travel with the file they were read from: a replaced file is read again."""
    import os

    from corpus_pipeline.common.settings import load_settings
    from corpus_pipeline.pipeline.stages import read_rows, run_parse, run_profile

    settings = load_settings(home=tmp_path)
    pdf = tmp_path / "replaced.pdf"
    for text in ("Old first page text.", "New first page text, a little longer."):
        doc = mu.open()
        doc.new_page().insert_text((72, 72), text)
        doc.save(pdf)
        if text.startswith("Old"):
            profiled = run_profile(pdf, pdf.name, settings=settings)
    os.utime(pdf, ns=(1, 1))  # another modification time, whatever the clock's resolution
    assert profiled.reads is not None
    parsed = run_parse("r", profiled, tmp_path / "r", settings)
    assert [r.text for r in read_rows(parsed.rows_path)] == [
        "New first page text, a little longer."
    ]
    assert sorted(profiled.reads.blocks) == [1], "the stale reads were left alone"


def test_the_table_finder_reads_what_the_profiles_probe_read(tmp_path: Path) -> None:
    """A page the probe flags keeps the probe's words, drawings, spans and blocks; the parse's
    table finder uses them and finds the same table."""
    from corpus_pipeline.common.settings import load_settings
    from corpus_pipeline.pipeline.stages import read_rows, run_parse, run_profile

    from .test_pdf_tables import _draw_table

    settings = load_settings(home=tmp_path)
    pdf = tmp_path / "table.pdf"
    doc = mu.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Net sales by category were as follows:")
    rows = [["Category", "2023", "2022"], ["iPhone", "39,669", "40,665"], ["Mac", "6,840", "7,382"]]
    _draw_table(page, 100.0, rows)
    doc.new_page().insert_text((72, 72), "A page of prose without any table on it.")
    doc.save(pdf)
    profiled = run_profile(pdf, pdf.name, settings=settings)
    kept = profiled.reads
    assert kept is not None and sorted(kept.tables) == [1], "only the flagged page's reads"
    assert {"words", "paths", "spans", "blocks"} <= set(kept.tables[1])
    assert "textpage" not in kept.tables[1] and "page" not in kept.tables[1]
    with_reads = run_parse("a", profiled, tmp_path / "a", settings)
    assert not kept.tables, "the table finder used the probe's reads"
    without = run_parse("b", replace(profiled, reads=None), tmp_path / "b", settings)
    rows_read = read_rows(with_reads.rows_path)
    assert rows_read == read_rows(without.rows_path)
    tables = [r for r in rows_read if r.row_type == "table"]
    assert len(tables) == 1 and "39,669" in tables[0].text
