"""OpenDocument text (ODT) and presentations (ODP): headings by outline level, list items,
tables with spans, pictures with alt text, footnotes, declared metadata, slides as sections
with their notes; sniffed, profiled and routed from the bytes, refused at the door when broken.
Each package is written in the test as the XML an editor writes."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import date
from pathlib import Path

import pytest
from PIL import Image

from corpus_pipeline.common.errors import CorruptDocumentError
from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.intake.door import Refused, admit
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.odf import parse_odp, parse_odt
from corpus_pipeline.profiling import profile_source
from corpus_pipeline_tests.support import build_documents, run_parser, tables_of

NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
    'xmlns:xlink="http://www.w3.org/1999/xlink" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" '
    'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0"'
)
ODT = "application/vnd.oasis.opendocument.text"
ODP = "application/vnd.oasis.opendocument.presentation"

REPORT = """
<text:sequence-decls><text:sequence-decl text:name="Figure"/></text:sequence-decls>
<text:p text:style-name="P1">Annual Report</text:p>
<text:h text:outline-level="1">Introduction</text:h>
<text:p>Revenue grew<text:note text:note-class="footnote"><text:note-citation>1</text:note-citation>
<text:note-body><text:p>Audited figures.</text:p></text:note-body></text:note> in 2023.</text:p>
<text:list>
  <text:list-item><text:p>First point</text:p></text:list-item>
  <text:list-item><text:p>Second point</text:p>
    <text:list><text:list-item><text:p>Nested point</text:p></text:list-item></text:list>
  </text:list-item>
</text:list>
<text:section text:name="Draft" text:display="none"><text:p>Hidden draft</text:p></text:section>
<text:h text:outline-level="2">Figures</text:h>
<table:table table:name="Sales">
  <table:table-column table:number-columns-repeated="3"/>
  <table:table-header-rows><table:table-row>
    <table:table-cell table:number-columns-spanned="2"><text:p>Region</text:p></table:table-cell>
    <table:covered-table-cell/>
    <table:table-cell><text:p>Total</text:p></table:table-cell>
  </table:table-row></table:table-header-rows>
  <table:table-row>
    <table:table-cell table:number-rows-spanned="2"><text:p>North</text:p></table:table-cell>
    <table:table-cell><text:p>Q1</text:p></table:table-cell>
    <table:table-cell><text:p>10</text:p></table:table-cell>
  </table:table-row>
  <table:table-row>
    <table:covered-table-cell/>
    <table:table-cell><text:p>Q2</text:p></table:table-cell>
    <table:table-cell><text:p>12</text:p></table:table-cell>
  </table:table-row>
</table:table>
<text:p><draw:frame draw:name="Chart"><draw:image xlink:href="Pictures/chart.png"/>
<svg:title>Chart</svg:title><svg:desc>Revenue by quarter</svg:desc></draw:frame></text:p>
"""
STYLES = '<style:style style:name="P1" style:family="paragraph" style:parent-style-name="Title"/>'
META = """<office:meta><dc:title>Annual Report 2023</dc:title>
<meta:creation-date>2023-04-05T10:11:12.5</meta:creation-date><dc:date>2024-01-02T00:00:00</dc:date>
</office:meta>"""


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def _package(mimetype: str, kind: str, body: str, styles: str = "", meta: str = "") -> bytes:
    """An OpenDocument zip: `mimetype` stored first, content, metadata and one picture."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), mimetype, compress_type=zipfile.ZIP_STORED)
        content = (
            f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {NS} '
            f'office:version="1.3"><office:automatic-styles>{styles}</office:automatic-styles>'
            f"<office:body><office:{kind}>{body}</office:{kind}></office:body>"
            "</office:document-content>"
        )
        zf.writestr("content.xml", content)
        zf.writestr("meta.xml", f"<office:document-meta {NS}>{meta}</office:document-meta>")
        zf.writestr("Pictures/chart.png", _png())
        zf.writestr("META-INF/manifest.xml", "<manifest/>")
    return out.getvalue()


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.fixture
def report(tmp_path: Path) -> ParseContext:
    path = _write(tmp_path, "report.odt", _package(ODT, "text", REPORT, STYLES, META))
    return run_parser(parse_odt, path, tmp_path / "work", FileFormat.ODT)


def _rows(ctx: ParseContext, *types: RowType) -> list[str]:
    return [r.text for r in ctx.rows if r.row_type in types]


def test_headings_take_their_outline_level_under_the_title(report: ParseContext) -> None:
    headings = [(r.text, r.heading_level) for r in report.rows if r.row_type is RowType.HEADING]
    assert headings == [("Annual Report", 1), ("Introduction", 2), ("Figures", 3)]


def test_list_paragraphs_are_list_items_nested_ones_included(report: ParseContext) -> None:
    assert _rows(report, RowType.LIST_ITEM) == ["First point", "Second point", "Nested point"]


def test_a_table_keeps_its_column_and_row_spans(report: ParseContext) -> None:
    (table,) = tables_of(report)
    assert table["html"].strip() == (
        '<table><thead><tr><th colspan="2">Region</th><th>Total</th></tr></thead><tbody>'
        '<tr><td rowspan="2">North</td><td>Q1</td><td>10</td></tr>'
        "<tr><td>Q2</td><td>12</td></tr></tbody></table>"
    )


def test_a_picture_is_stored_with_its_description(report: ParseContext) -> None:
    (image,) = [r for r in report.rows if r.row_type is RowType.IMAGE]
    assert image.text == "Revenue by quarter"
    assert image.resource_path and (report.workdir / image.resource_path).stat().st_size > 0


def test_a_footnote_follows_the_paragraph_that_cites_it(report: ParseContext) -> None:
    texts = _rows(report, RowType.PARAGRAPH)
    cited = texts.index("Revenue grew[1] in 2023.")
    assert texts[cited + 1] == "Footnote 1: Audited figures."


def test_a_hidden_section_is_not_read(report: ParseContext) -> None:
    assert "Hidden draft" not in [r.text for r in report.rows]
    assert "Figures" in _rows(report, RowType.HEADING)


def test_the_metadata_title_and_creation_date_are_declared(report: ParseContext) -> None:
    assert report.declared_title == "Annual Report 2023"
    assert report.declared_date == date(2023, 4, 5)


def test_an_odt_is_sniffed_profiled_and_routed(tmp_path: Path) -> None:
    path = _write(tmp_path, "report.odt", _package(ODT, "text", REPORT, STYLES))
    profile = profile_source(path).profile
    assert (profile.format, profile.media_type, profile.routing.strategy) == (
        FileFormat.ODT,
        ODT,
        "odt",
    )
    assert (profile.heading_count, profile.table_count, profile.image_count) == (2, 1, 1)


DECK = """
<draw:page draw:name="page1">
  <draw:frame presentation:class="title" svg:x="1cm" svg:y="1cm">
    <draw:text-box><text:p>Quarterly Results</text:p></draw:text-box></draw:frame>
  <draw:frame presentation:class="outline" svg:x="1cm" svg:y="4cm"><draw:text-box>
    <text:list><text:list-item><text:p>Revenue up</text:p></text:list-item>
    <text:list-item><text:p>Costs down</text:p></text:list-item></text:list>
  </draw:text-box></draw:frame>
  <presentation:notes><draw:frame presentation:class="notes"><draw:text-box>
    <text:p>Mention the new plant.</text:p></draw:text-box></draw:frame>
    <draw:frame presentation:class="page-number"><draw:text-box><text:p>&lt;number&gt;</text:p>
    </draw:text-box></draw:frame></presentation:notes>
</draw:page>
<draw:page draw:name="Outlook" draw:style-name="dp1">
  <draw:frame svg:x="12cm" svg:y="3cm"><draw:text-box><text:p>Right</text:p></draw:text-box>
  </draw:frame>
  <draw:frame svg:x="1cm" svg:y="3.2cm"><draw:text-box><text:p>Left</text:p></draw:text-box>
  </draw:frame>
  <draw:frame svg:x="1cm" svg:y="8cm"><draw:image xlink:href="Pictures/chart.png"/>
    <svg:desc>Growth chart</svg:desc></draw:frame>
</draw:page>
<draw:page draw:name="page3" draw:style-name="dp2">
  <draw:frame svg:y="1cm"><draw:text-box><text:p>Never shown</text:p></draw:text-box></draw:frame>
</draw:page>
<draw:page draw:name="page4">
  <draw:frame svg:y="1cm"><draw:text-box><text:p>Questions?</text:p></draw:text-box></draw:frame>
</draw:page>
"""
PAGE_STYLES = (
    '<style:style style:name="dp1" style:family="drawing-page"/>'
    '<style:style style:name="dp2" style:family="drawing-page">'
    '<style:drawing-page-properties presentation:visibility="hidden"/></style:style>'
)


@pytest.fixture
def deck(tmp_path: Path) -> ParseContext:
    path = _write(tmp_path, "deck.odp", _package(ODP, "presentation", DECK, PAGE_STYLES))
    return run_parser(parse_odp, path, tmp_path / "work", FileFormat.ODP)


def test_each_slide_is_a_section_titled_by_its_title_frame_or_name(deck: ParseContext) -> None:
    headings = [
        (r.text, r.heading_level, r.page_numbers)
        for r in deck.rows
        if r.row_type is RowType.HEADING
    ]
    assert headings == [
        ("Quarterly Results", 1, [1]),
        ("Outlook", 1, [2]),
        ("Slide 4", 1, [4]),  # slide 3 is hidden; an automatic name titles nothing
    ]
    assert "Never shown" not in [r.text for r in deck.rows]


def test_slide_frames_are_read_top_to_bottom_then_left_to_right(deck: ParseContext) -> None:
    slide_two = [(r.row_type, r.text) for r in deck.rows if r.page_numbers == [2]]
    assert slide_two == [
        (RowType.HEADING, "Outlook"),
        (RowType.PARAGRAPH, "Left"),
        (RowType.PARAGRAPH, "Right"),
        (RowType.IMAGE, "Growth chart"),
    ]


def test_bullets_are_list_items_and_notes_follow_their_slide(deck: ParseContext) -> None:
    slide_one = [(r.row_type, r.text) for r in deck.rows if r.page_numbers == [1]]
    assert slide_one[1:] == [
        (RowType.LIST_ITEM, "Revenue up"),
        (RowType.LIST_ITEM, "Costs down"),
        (RowType.PARAGRAPH, "Speaker notes: Mention the new plant."),
    ]


def test_an_odp_is_profiled_with_its_slide_count(tmp_path: Path) -> None:
    path = _write(tmp_path, "deck.odp", _package(ODP, "presentation", DECK, PAGE_STYLES))
    profile = profile_source(path).profile
    assert (profile.format, profile.routing.strategy, profile.page_count) == (
        FileFormat.ODP,
        "odp",
        4,
    )


def test_a_truncated_odt_is_refused_at_the_door_naming_its_format() -> None:
    data = _package(ODT, "text", REPORT)[:300]
    with pytest.raises(Refused) as refused:
        admit("report.odt", data, max_bytes=10_000_000)
    assert refused.value.status == 400
    assert str(refused.value) == "corrupt odt document: truncated or damaged (BadZipFile)"


def test_a_package_without_content_is_refused_at_the_door() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("mimetype", ODP)
    with pytest.raises(Refused, match=r"corrupt odp document: the package has no content\.xml"):
        admit("deck.odp", out.getvalue(), max_bytes=10_000_000)


def test_malformed_content_is_a_corrupt_document(tmp_path: Path) -> None:
    data = _package(ODT, "text", "<text:p>unclosed")
    path = _write(tmp_path, "broken.odt", data)
    with pytest.raises(CorruptDocumentError, match="corrupt odt document: the document's content"):
        run_parser(parse_odt, path, tmp_path / "work", FileFormat.ODT)


@pytest.mark.slow
def test_an_ingested_odt_is_chunked_under_its_headings(settings) -> None:
    records = build_documents(settings, {"report.odt": _package(ODT, "text", REPORT, STYLES, META)})
    directory = settings.artifacts_dir / records["report.odt"].document_id
    chunks = json.loads((directory / "chunks.json").read_text(encoding="utf-8"))["chunks"]
    paths = {tuple(c["hierarchy_path"]) for c in chunks}
    assert ("Annual Report", "Introduction") in paths
    assert ("Annual Report", "Introduction", "Figures") in paths
    footnote = next(c for c in chunks if "Audited figures" in c["content"])
    assert footnote["hierarchy_path"] == ["Annual Report", "Introduction"]
