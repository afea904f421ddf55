"""Image strategy: frames stored as images and read with OCR through the PDF scan path; and the
heading rule for OCR lines."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from corpus_pipeline.common.errors import CorruptDocumentError
from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.image import parse_image, read_frames
from corpus_pipeline.parsing.pdf.ocr import OcrParagraph, ocr_heading_level
from corpus_pipeline.profiling import profile_source
from corpus_pipeline_tests.support import DOCS, needs_tesseract, run_parser


def _parse(path: Path, tmp_path: Path) -> ParseContext:
    return run_parser(parse_image, path, tmp_path / "work", FileFormat.IMAGE)


def _line(text: str, height: float = 10.0, lines: int = 1) -> OcrParagraph:
    return OcrParagraph(
        text=text, bbox=(50.0, 100.0, 300.0, 100.0 + height * lines), line_height=height
    )


# -- the OCR heading rule -------------------------------------------------------------------


def test_a_numbered_short_line_is_a_heading_at_its_depth():
    assert ocr_heading_level(_line("1 INTRODUCTION"), 10.0) == 1
    assert ocr_heading_level(_line("3.2 Annotation phases"), 10.0) == 2


def test_a_line_in_capitals_is_a_heading():
    assert ocr_heading_level(_line("ABSTRACT"), 10.0) == 2
    assert ocr_heading_level(_line("ABSTRACT", height=16.0), 10.0) == 1


def test_a_larger_line_is_a_title():
    assert ocr_heading_level(_line("Field notes on diving ducks", height=16.0), 10.0) == 1


def test_body_text_is_not_a_heading():
    assert ocr_heading_level(_line("Field notes on diving ducks"), 10.0) is None
    assert ocr_heading_level(_line("The ducks dove for mussels all day."), 10.0) is None
    assert ocr_heading_level(_line("ABSTRACT AND SUMMARY", lines=3), 10.0) is None
    assert ocr_heading_level(_line("ACM ISBN 976-1-4503-9385-0/22/08"), 10.0) is None
    assert ocr_heading_level(_line("1 the first item of a list"), 10.0) is None


# -- images -----------------------------------------------------------------------------------


def test_the_profile_counts_frames_and_routes_to_the_image_parser():
    profile = profile_source(DOCS / "2206.01062.tif").profile
    assert profile.format is FileFormat.IMAGE
    assert profile.page_count == 2
    assert profile.routing.strategy == "image"


def test_every_frame_is_stored_as_an_image_of_its_page(tmp_path: Path, monkeypatch) -> None:
    import corpus_pipeline.parsing.pdf.document as pdf_module

    monkeypatch.setattr(pdf_module, "tesseract_version", lambda: None)  # storage only
    ctx = _parse(DOCS / "2206.01062.tif", tmp_path)
    images = [r for r in ctx.rows if r.row_type is RowType.IMAGE]
    assert [r.page_numbers for r in images] == [[1], [2]]
    assert all((tmp_path / "work" / str(r.resource_path)).is_file() for r in images)
    assert [d.code for d in ctx.diagnostics.items].count("ocr.unavailable") == 1


@needs_tesseract
def test_a_webp_picture_of_text_is_read_with_ocr(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "webp-test.webp", tmp_path)
    text = " ".join(r.text for r in ctx.rows if r.row_type is RowType.PARAGRAPH)
    assert "Docling bundles PDF document conversion" in text


@needs_tesseract
@pytest.mark.slow
def test_a_scanned_tiff_keeps_its_pages_and_headings(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "2206.01062.tif", tmp_path)
    headings = [(r.text, r.page_numbers) for r in ctx.rows if r.row_type is RowType.HEADING]
    assert ("ABSTRACT", [1]) in headings and ("CCS CONCEPTS", [1]) in headings
    page_two = " ".join(r.text for r in ctx.rows if r.page_numbers == [2])
    assert "annotation campaign was carried out in four phases" in page_two


@needs_tesseract
def test_a_generated_png_heading_and_body_are_told_apart(tmp_path: Path) -> None:
    image = Image.new("L", (1200, 500), "white")
    draw = ImageDraw.Draw(image)
    draw.text((60, 40), "2 SURVEY METHODS", fill="black", font=ImageFont.load_default(40))
    body = "Observers counted every duck on the lake twice a day during the whole season"
    draw.text((60, 140), body, fill="black", font=ImageFont.load_default(28))
    buf = io.BytesIO()
    image.save(buf, format="PNG", dpi=(150, 150))
    path = tmp_path / "page.png"
    path.write_bytes(buf.getvalue())
    ctx = _parse(path, tmp_path)
    assert [r.text for r in ctx.rows if r.row_type is RowType.HEADING] == ["2 SURVEY METHODS"]
    assert any("counted every duck" in r.text for r in ctx.rows if r.row_type is RowType.PARAGRAPH)


def test_a_file_that_is_not_an_image_raises_corrupt_document_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    with pytest.raises(CorruptDocumentError, match="image") as info:
        read_frames(broken)
    assert info.value.format == "image"


def test_an_image_too_large_to_decode_safely_says_so(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1_000)
    path = tmp_path / "poster.png"
    Image.new("L", (100, 100), "white").save(path)  # 10,000 pixels > 2 x 1,000
    assert (
        profile_source(path).profile.routing.strategy == "image"
    )  # profiling reads the header only
    with pytest.raises(CorruptDocumentError, match="too large to decode safely"):
        read_frames(path)
