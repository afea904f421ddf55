"""Formats are sniffed from the bytes; the router names formats it cannot parse yet."""

from __future__ import annotations

import io
import zipfile

import pytest

from corpus_pipeline.common.errors import UnsupportedFormatError
from corpus_pipeline.contracts import FileFormat
from corpus_pipeline.parsing.router import parser_for
from corpus_pipeline.profiling import profile_source, sniff_format

from .support import DOCS


def test_a_docx_renamed_to_txt_is_still_a_docx(tmp_path):
    renamed = tmp_path / "report.txt"
    renamed.write_bytes((DOCS / "word_sample.docx").read_bytes())
    profile = profile_source(renamed).profile
    assert profile.format is FileFormat.DOCX
    assert profile.routing.strategy == "docx"


def test_html_delivered_as_markdown_is_routed_to_the_html_parser():
    sniffed = sniff_format(b"<!DOCTYPE html><html><body><h1>Hi</h1></body></html>", "md")
    assert sniffed.format is FileFormat.HTML


def test_markdown_is_recognised_from_its_structure_without_an_extension():
    data = b"# Title\n\nSome text.\n\n## Part\n\n- one\n- two\n"
    assert sniff_format(data, "").format is FileFormat.MARKDOWN


def test_plain_prose_is_text():
    assert sniff_format(b"Just a few sentences. Nothing else.", "").format is FileFormat.TEXT


def test_pdf_and_images_are_recognised_by_signature():
    assert sniff_format(b"%PDF-1.7\n...", "docx").format is FileFormat.PDF
    assert sniff_format(b"\x89PNG\r\n\x1a\n....", "").format is FileFormat.IMAGE


def test_a_zip_without_a_document_part_is_unknown():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("notes.txt", "hello")
    assert sniff_format(buf.getvalue(), "zip").format is FileFormat.UNKNOWN


def test_a_truncated_docx_keeps_its_format_so_the_parser_can_say_it_is_corrupt():
    data = (DOCS / "word_sample.docx").read_bytes()[:600]
    assert sniff_format(data, "docx").format is FileFormat.DOCX


def test_random_binary_is_unknown():
    assert sniff_format(bytes(range(256)) * 4, "bin").format is FileFormat.UNKNOWN


def test_a_format_without_a_strategy_is_refused_with_its_name(tmp_path):
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(UnsupportedFormatError, match="unsupported format 'unknown'"):
        parser_for(profile_source(blob).profile)


def test_profile_counts_docx_structure_and_guesses_language():
    profile = profile_source(DOCS / "word_tables.docx").profile
    assert profile.table_count == 7
    assert profile.paragraph_count and profile.paragraph_count > 0
    unit = profile_source(DOCS / "unit_test_headers.docx").profile
    assert unit.heading_count and unit.heading_count >= 5
    assert profile_source(DOCS / "wiki.md").profile.language == "en"
