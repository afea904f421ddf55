"""PPTX strategy: slides as sections, shapes in reading order, tables, notes and reviewer
comments, against the shared corpus and presentations built in the tests."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Inches

from corpus_pipeline.common.errors import CorruptDocumentError
from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.pptx import parse_pptx
from corpus_pipeline.profiling import profile_source
from corpus_pipeline_tests.support import (
    DOCS,
    expected_headings,
    expected_tables,
    headings_of,
    run_parser,
    scorer,
    search_after_ingest,
    tables_of,
    truncated_copy,
)


def _parse(path: Path, tmp_path: Path) -> ParseContext:
    return run_parser(parse_pptx, path, tmp_path / "work", FileFormat.PPTX)


def _texts(ctx: ParseContext, *types: RowType) -> list[str]:
    return [r.text for r in ctx.rows if r.row_type in types]


def _blank_slide(presentation: object) -> object:
    return presentation.slides.add_slide(presentation.slide_layouts[6])  # type: ignore[attr-defined]


def test_slide_titles_match_ground_truth(tmp_path: Path) -> None:
    doc = "powerpoint_comments.pptx"
    ctx = _parse(DOCS / doc, tmp_path)
    headings = scorer().score_headings(expected_headings(doc), headings_of(ctx))
    assert headings["recall"] == headings["precision"] == headings["order"] == 1.0, headings


def test_a_merged_cell_table_matches_ground_truth(tmp_path: Path) -> None:
    doc = "powerpoint_sample.pptx"
    ctx = _parse(DOCS / doc, tmp_path)
    tables = scorer().score_tables(expected_tables(doc), tables_of(ctx))
    assert tables["found"] == tables["expected"] == 1, tables
    assert tables["shape_exact"] == tables["span_recall"] == 1.0, tables
    html = str(tables_of(ctx)[0]["html"])
    assert '<th colspan="3">Class1</th>' in html and '<td rowspan="3">R4</td>' in html


def test_a_slide_without_title_is_its_own_section(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "powerpoint_sample.pptx", tmp_path)
    assert _texts(ctx, RowType.HEADING) == ["Test Table Slide", "Second slide title", "Slide 3"]


def test_reviewer_comments_and_speaker_notes_are_read_with_their_slide(tmp_path: Path) -> None:
    comments = _parse(DOCS / "powerpoint_comments.pptx", tmp_path / "a")
    rows = [(r.text, r.page_numbers) for r in comments.rows if r.row_type is RowType.PARAGRAPH]
    assert ("Reviewer comment by Jane Smith: This is a cool feature", [3]) in rows
    assert ("Reviewer comment by Jane Smith: I need to try this out!", [3]) in rows
    assert ("Reviewer comment by John Reviewer: This is a sample reviewer comment", [1]) in rows
    notes = _parse(DOCS / "powerpoint_sample.pptx", tmp_path / "b")
    assert "Speaker notes: Some notes on the second slide." in _texts(notes, RowType.PARAGRAPH)


def test_shapes_on_one_line_are_read_left_to_right(tmp_path: Path) -> None:
    presentation = Presentation()
    slide = _blank_slide(presentation)
    # Created right to left; the right box sits a hair higher than the left one.
    for left, top, text in ((6.0, 1.00, "right"), (3.0, 1.05, "middle"), (0.5, 1.1, "left")):
        box = slide.shapes.add_textbox(Inches(left), Inches(top), Inches(2), Inches(1))  # type: ignore[attr-defined]
        box.text_frame.text = text
    below = slide.shapes.add_textbox(Inches(0.5), Inches(3), Inches(2), Inches(1))  # type: ignore[attr-defined]
    below.text_frame.text = "below"
    path = tmp_path / "order.pptx"
    presentation.save(str(path))
    assert _texts(_parse(path, tmp_path), RowType.PARAGRAPH) == ["left", "middle", "right", "below"]


def test_a_hidden_slide_is_skipped_and_the_next_keeps_its_number(tmp_path: Path) -> None:
    presentation = Presentation()
    for title in ("Visible one", "Hidden draft", "Visible two"):
        slide = presentation.slides.add_slide(presentation.slide_layouts[5])
        slide.shapes.title.text = title  # type: ignore[union-attr]
    presentation.slides[1]._element.set("show", "0")
    path = tmp_path / "hidden.pptx"
    presentation.save(str(path))
    ctx = _parse(path, tmp_path)
    headings = [(r.text, r.page_numbers) for r in ctx.rows if r.row_type is RowType.HEADING]
    assert headings == [("Visible one", [1]), ("Visible two", [3])]
    assert [d.code for d in ctx.diagnostics.items] == ["slide.hidden"]


def test_pictures_and_charts_are_kept(tmp_path: Path) -> None:
    presentation = Presentation()
    slide = _blank_slide(presentation)
    buf = io.BytesIO()
    Image.new("RGB", (120, 90), "teal").save(buf, format="PNG")
    buf.seek(0)
    picture = slide.shapes.add_picture(buf, Inches(1), Inches(1))  # type: ignore[attr-defined]
    picture._element.nvPicPr.cNvPr.set("descr", "A teal square")
    chart_data: Any = CategoryChartData  # python-pptx's chart data API is unannotated
    data = chart_data()
    data.categories = ["Lake", "River"]
    data.add_series("Ducks counted", (14, 7))
    frame = slide.shapes.add_chart(  # type: ignore[attr-defined]
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(4), Inches(4), Inches(3), data
    )
    frame.chart.has_title = True
    frame.chart.chart_title.text_frame.text = "Duck survey"
    path = tmp_path / "media.pptx"
    presentation.save(str(path))
    ctx = _parse(path, tmp_path)
    (image,) = [r for r in ctx.rows if r.row_type is RowType.IMAGE]
    assert image.text == "A teal square" and image.resource_path
    (chart,) = [t for t in _texts(ctx, RowType.PARAGRAPH) if t.startswith("Chart")]
    assert "Duck survey" in chart and "Ducks counted" in chart and "Lake, River" in chart


def test_the_profile_counts_slides_and_routes_to_the_pptx_parser() -> None:
    profile = profile_source(DOCS / "powerpoint_sample.pptx").profile
    assert profile.format is FileFormat.PPTX
    assert profile.page_count == 3
    assert profile.routing.strategy == "pptx"


def test_a_truncated_presentation_raises_corrupt_document_error(tmp_path: Path) -> None:
    broken = truncated_copy(DOCS / "powerpoint_sample.pptx", tmp_path)
    with pytest.raises(CorruptDocumentError, match="pptx") as info:
        _parse(broken, tmp_path)
    assert info.value.format == "pptx"


def test_an_ingested_presentation_finds_a_reviewer_comment(settings) -> None:
    _, response = search_after_ingest(
        settings, DOCS / "powerpoint_comments.pptx", "which feature did a reviewer call cool"
    )
    top = response.results[0]
    assert "This is a cool feature" in top.content
    assert top.section_path == ["Features"] and top.pages == [3]
