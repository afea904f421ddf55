"""DOCX strategy: headings, tables, images and links against the shared corpus and built files."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import docx
import pytest
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls
from PIL import Image, ImageDraw

from corpus_pipeline.common.errors import CorruptDocumentError
from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.docx import parse_docx
from corpus_pipeline_tests.support import (
    DOCS,
    expected_headings,
    expected_tables,
    headings_of,
    run_parser,
    scorer,
    tables_of,
    truncated_copy,
)


def _parse(path: Path, tmp_path: Path) -> ParseContext:
    return run_parser(parse_docx, path, tmp_path / "work", FileFormat.DOCX)


def _parse_doc(document: object, tmp_path: Path) -> ParseContext:
    path = tmp_path / "built.docx"
    document.save(str(path))  # type: ignore[attr-defined]
    return _parse(path, tmp_path)


def _append_xml(document: object, xml: str) -> None:
    """Insert raw body-level XML before the section properties."""
    body = document.element.body  # type: ignore[attr-defined]
    body.sectPr.addprevious(parse_xml(xml))


def _png(color: str = "red") -> bytes:
    img = Image.new("RGB", (64, 48), "white")
    ImageDraw.Draw(img).rectangle((8, 8, 40, 30), fill=color)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _table_html(ctx: ParseContext, index: int) -> str:
    return str(tables_of(ctx)[index]["html"])


# -- headings against the corpus ground truth ---------------------------------------------------


@pytest.mark.parametrize(
    "doc", ["word_sample.docx", "unit_test_headers.docx", "unit_test_headers_numbered.docx"]
)
def test_headings_match_ground_truth(doc: str, tmp_path: Path) -> None:
    ctx = _parse(DOCS / doc, tmp_path)
    scores = scorer().score_headings(expected_headings(doc), headings_of(ctx))
    assert scores["recall"] == 1.0
    assert scores["precision"] == 1.0
    assert scores["order"] == 1.0
    assert scores["level_acc"] == 1.0


def test_title_is_level_one_and_heading_styles_sit_below_it(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "word_sample.docx", tmp_path)
    assert [(h["text"], h["level"]) for h in headings_of(ctx)] == [
        ("Swimming in the lake", 1),
        ("Let’s swim!", 2),
        ("Let’s eat", 3),
    ]


def test_automatic_heading_numbers_are_rendered_into_the_text(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "unit_test_headers_numbered.docx", tmp_path)
    texts = [h["text"] for h in headings_of(ctx)]
    assert texts == [
        "Test Document",
        "1. Section 1",
        "1.1. Section 1.1",
        "1.2. Section 1.2",
        "1.2.1. Section 1.2.3",
        "2. Section 2",
        "2.1.1. Section 2.1.1",
        "2.2. Section 2.1",
        "REFERENCES",  # its list level has numFmt "none"
    ]


def test_document_without_heading_styles_yields_no_headings(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "lorem_ipsum.docx", tmp_path)
    assert headings_of(ctx) == []
    assert scorer().score_headings(expected_headings("lorem_ipsum.docx"), [])["precision"] == 1.0
    assert ctx.rows
    assert all(r.row_type is RowType.PARAGRAPH for r in ctx.rows)


def test_heading_from_direct_outline_level_and_custom_style(tmp_path: Path) -> None:
    document = docx.Document()
    _append_xml(
        document,
        f'<w:p {nsdecls("w")}><w:pPr><w:outlineLvl w:val="1"/></w:pPr>'
        "<w:r><w:t>Direct outline</w:t></w:r></w:p>",
    )
    custom = document.styles.add_style("Chapter Title", 1)  # paragraph style
    custom.base_style = document.styles["Heading 1"]
    document.add_paragraph("Inherited chapter", style="Chapter Title")
    document.add_heading("", level=2)  # empty: skipped
    ctx = _parse_doc(document, tmp_path)
    assert [(h["text"], h["level"]) for h in headings_of(ctx)] == [
        ("Direct outline", 2),
        ("Inherited chapter", 1),
    ]


# -- paragraph kinds ------------------------------------------------------------------------------


def test_captions_lists_and_removed_numbering_are_classified(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "word_sample.docx", tmp_path)
    kinds = {r.text: r.row_type for r in ctx.rows}
    assert kinds["Figure 1: This is a cute duckling"] is RowType.CAPTION
    assert kinds["Paddle about"] is RowType.LIST_ITEM
    assert kinds["Grain"] is RowType.LIST_ITEM
    # List Bullet style with numId 0: numbering explicitly removed, so a plain paragraph.
    assert kinds["Also, don’t forget:"] is RowType.PARAGRAPH
    assert kinds["Summer activities"] is RowType.PARAGRAPH  # Subtitle is not a heading


def test_table_of_contents_content_control_emits_toc_rows(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Before")
    _append_xml(
        document,
        f"<w:sdt {nsdecls('w')}><w:sdtPr><w:docPartObj>"
        '<w:docPartGallery w:val="Table of Contents"/><w:docPartUnique/></w:docPartObj></w:sdtPr>'
        "<w:sdtContent><w:p><w:r><w:t>Contents</w:t></w:r></w:p>"
        '<w:p><w:hyperlink w:anchor="_Toc1"><w:r><w:t>Intro</w:t></w:r><w:r><w:tab/></w:r>'
        "<w:r><w:t>1</w:t></w:r></w:hyperlink></w:p></w:sdtContent></w:sdt>",
    )
    document.add_heading("Intro", level=1)
    ctx = _parse_doc(document, tmp_path)
    rows = [(r.row_type, r.text, r.source_location) for r in ctx.rows]
    assert rows == [
        (RowType.PARAGRAPH, "Before", "body/p[0]"),
        (RowType.TOC, "Contents", "body/sdt[0]/p[0]"),
        (RowType.TOC, "Intro 1", "body/sdt[0]/p[1]"),
        (RowType.HEADING, "Intro", "body/p[1]"),
    ]
    assert ctx.rows[2].links[0].target == "#_Toc1"


def test_paragraphs_in_wrappers_and_insertions_are_kept_deletions_dropped(tmp_path: Path) -> None:
    document = docx.Document()
    w = nsdecls("w")
    _append_xml(
        document,
        f'<w:customXml {w} w:element="x">'
        "<w:p><w:r><w:t>In custom XML</w:t></w:r></w:p></w:customXml>",
    )
    _append_xml(
        document,
        f'<w:p {w}><w:r><w:t xml:space="preserve">Kept </w:t></w:r>'
        '<w:ins w:id="1" w:author="a"><w:r><w:t xml:space="preserve">inserted </w:t></w:r></w:ins>'
        '<w:smartTag w:uri="u" w:element="e"><w:r><w:t>tagged</w:t></w:r></w:smartTag>'
        '<w:del w:id="2" w:author="a"><w:r><w:delText> gone</w:delText></w:r></w:del></w:p>',
    )
    _append_xml(
        document,
        f"<w:sdt {w}><w:sdtPr/><w:sdtContent><w:p><w:r><w:t>In a control</w:t></w:r></w:p>"
        "</w:sdtContent></w:sdt>",
    )
    ctx = _parse_doc(document, tmp_path)
    assert [(r.text, r.source_location) for r in ctx.rows] == [
        ("In custom XML", "body/customXml[0]/p[0]"),
        ("Kept inserted tagged", "body/p[0]"),
        ("In a control", "body/sdt[0]/p[0]"),
    ]


# -- tables ---------------------------------------------------------------------------------------


def test_word_tables_match_ground_truth_shapes_and_spans(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "word_tables.docx", tmp_path)
    scores = scorer().score_tables(expected_tables("word_tables.docx"), tables_of(ctx))
    assert scores["found"] == scores["expected"] == 7
    assert scores["precision"] == 1.0
    assert scores["shape_acc"] == 1.0
    assert scores["span_recall"] == 1.0


def test_word_tables_html_carries_merged_cells(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "word_tables.docx", tmp_path)
    assert '<td colspan="2">Merged Cell 1.1 1.2</td>' in _table_html(ctx, 1)
    assert '<td rowspan="2">Merged Cell 1.1 2.1</td>' in _table_html(ctx, 3)
    assert '<td colspan="5"></td>' in _table_html(ctx, 4)
    # gridBefore: the late-starting row keeps its cell in the second column
    assert "<tr><td></td><td>Cell 1.1</td></tr>" in _table_html(ctx, 5)
    assert '<th rowspan="2">Merged Cell 0.2 1.2</th>' in _table_html(ctx, 6)


def test_word_sample_table_keeps_empty_corner_and_header(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "word_sample.docx", tmp_path)
    html = _table_html(ctx, 0)
    assert html.startswith("<table><thead><tr><th></th><th>Food</th><th>Calories per portion</th>")
    scores = scorer().score_tables(expected_tables("word_sample.docx"), tables_of(ctx))
    assert scores["shape_acc"] == 1.0
    assert scores["cell_recall"] == 1.0


def test_generated_vertical_and_horizontal_merges(tmp_path: Path) -> None:
    document = docx.Document()
    table = document.add_table(rows=3, cols=3)
    for r in range(3):
        for c in range(3):
            table.cell(r, c).text = f"r{r}c{c}"
    table.cell(0, 0).merge(table.cell(1, 0)).text = "tall"
    table.cell(2, 1).merge(table.cell(2, 2)).text = "wide"
    ctx = _parse_doc(document, tmp_path)
    html = _table_html(ctx, 0)
    assert '<th rowspan="2">tall</th>' in html
    assert '<td colspan="2">wide</td>' in html
    assert html.count("<tr>") == 3
    assert ctx.rows[0].source_location == "body/tbl[0]"


def test_nested_table_text_is_flattened_into_the_cell(tmp_path: Path) -> None:
    document = docx.Document()
    outer = document.add_table(rows=2, cols=2)
    outer.cell(0, 0).text = "Key"
    outer.cell(0, 1).text = "Value"
    outer.cell(1, 0).text = "nested"
    inner = outer.cell(1, 1).add_table(rows=1, cols=2)
    inner.cell(0, 0).text = "alpha"
    inner.cell(0, 1).text = "beta"
    ctx = _parse_doc(document, tmp_path)
    assert len(tables_of(ctx)) == 1
    assert "<td>alpha | beta</td>" in _table_html(ctx, 0)


# -- images and links ----------------------------------------------------------------------------


def test_same_picture_twice_is_stored_once_but_emitted_twice(tmp_path: Path) -> None:
    document = docx.Document()
    png = _png()
    document.add_picture(io.BytesIO(png))
    document.add_paragraph("between")
    document.add_picture(io.BytesIO(png))
    ctx = _parse_doc(document, tmp_path)
    images = [r for r in ctx.rows if r.row_type is RowType.IMAGE]
    assert len(images) == 2
    assert images[0].resource_path == images[1].resource_path
    assert len(ctx.resources.stored_images) == 1
    assert len(list((ctx.workdir / "images").iterdir())) == 1
    assert [r.row_type for r in ctx.rows] == [RowType.IMAGE, RowType.PARAGRAPH, RowType.IMAGE]


def test_inline_picture_follows_its_paragraph_text_with_alt_text(tmp_path: Path) -> None:
    document = docx.Document()
    paragraph = document.add_paragraph("A duck: ")
    paragraph.add_run().add_picture(io.BytesIO(_png("blue")))
    doc_pr = paragraph._p.xpath(".//wp:docPr")[0]
    doc_pr.set("descr", "A small blue\nrectangle")
    ctx = _parse_doc(document, tmp_path)
    assert [(r.row_type, r.text) for r in ctx.rows] == [
        (RowType.PARAGRAPH, "A duck:"),
        (RowType.IMAGE, "A small blue rectangle"),
    ]
    assert ctx.rows[1].source_location == "body/p[0]/img[0]"


def test_hyperlink_span_covers_the_link_text(tmp_path: Path) -> None:
    document = docx.Document()
    paragraph = document.add_paragraph("See ")
    rel_id = document.part.relate_to("https://example.org/docs", RT.HYPERLINK, is_external=True)
    hyperlink: Any = parse_xml(
        f'<w:hyperlink {nsdecls("w", "r")} r:id="{rel_id}">'
        "<w:r><w:t>the docs</w:t></w:r></w:hyperlink>"
    )
    paragraph._p.append(hyperlink)
    paragraph.add_run(" for more.")
    ctx = _parse_doc(document, tmp_path)
    row = ctx.rows[0]
    assert row.text == "See the docs for more."
    assert len(row.links) == 1
    link = row.links[0]
    assert row.text[link.start : link.end] == "the docs"
    assert link.target == "https://example.org/docs"


def test_hyperlink_field_becomes_a_link_span(tmp_path: Path) -> None:
    document = docx.Document()
    _append_xml(
        document,
        f'<w:p {nsdecls("w")}><w:r><w:t xml:space="preserve">Go to </w:t></w:r>'
        '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        '<w:r><w:instrText xml:space="preserve"> HYPERLINK "https://example.com/a" '
        "</w:instrText></w:r>"
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>site A</w:t></w:r>'
        '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>',
    )
    ctx = _parse_doc(document, tmp_path)
    row = ctx.rows[0]
    assert row.text == "Go to site A"
    assert [(row.text[s.start : s.end], s.target) for s in row.links] == [
        ("site A", "https://example.com/a")
    ]


# -- broken input --------------------------------------------------------------------------------


def test_truncated_docx_raises_corrupt_document_error(tmp_path: Path) -> None:
    broken = truncated_copy(DOCS / "word_sample.docx", tmp_path, keep=500)
    with pytest.raises(CorruptDocumentError, match="docx") as info:
        _parse(broken, tmp_path)
    assert info.value.format == "docx"


def test_zip_without_main_document_raises_corrupt_document_error(tmp_path: Path) -> None:
    import zipfile

    broken = tmp_path / "no_body.docx"
    with zipfile.ZipFile(DOCS / "lorem_ipsum.docx") as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            if item.filename != "word/document.xml":
                dst.writestr(item, src.read(item))
    with pytest.raises(CorruptDocumentError, match=re.escape("word/document.xml")):
        _parse(broken, tmp_path)


def test_missing_image_part_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    import zipfile

    broken = tmp_path / "no_image.docx"
    with zipfile.ZipFile(DOCS / "word_sample.docx") as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            if not item.filename.startswith("word/media/"):
                dst.writestr(item, src.read(item))
    ctx = _parse(broken, tmp_path)
    assert not [r for r in ctx.rows if r.row_type is RowType.IMAGE]
    assert len(headings_of(ctx)) == 3
    assert any(d.code == "docx.missing_parts" for d in ctx.diagnostics.items)
