"""XLSX strategy: sheets as sections, touching cells as tables, against the shared corpus and
workbooks built in the tests."""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from openpyxl.drawing.image import Image as SheetImage
from openpyxl.worksheet.worksheet import Worksheet
from PIL import Image

from corpus_pipeline.common.errors import CorruptDocumentError
from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.xlsx import Region, cell_text, parse_xlsx, regions
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
    return run_parser(parse_xlsx, path, tmp_path / "work", FileFormat.XLSX)


def _built(tmp_path: Path, fill: Callable[[Worksheet], None]) -> ParseContext:
    """A one-sheet workbook written by `fill`, saved and parsed."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert isinstance(sheet, Worksheet)
    fill(sheet)
    path = tmp_path / "built.xlsx"
    workbook.save(path)
    return _parse(path, tmp_path)


def _rows(ctx: ParseContext, row_type: RowType) -> list[str]:
    return [r.text for r in ctx.rows if r.row_type is row_type]


# -- the pure region finder ----------------------------------------------------------------------


def test_cells_sharing_an_edge_form_one_region():
    assert regions({(1, 1), (1, 2), (2, 2)}) == [Region(1, 1, 2, 2)]


def test_cells_touching_only_at_a_corner_are_two_regions():
    assert regions({(1, 1), (2, 2)}) == [Region(1, 1, 1, 1), Region(2, 2, 2, 2)]


def test_regions_come_in_reading_order_and_overlapping_boxes_merge():
    # An L and a cell inside its bounding box are one block; the far cell is another.
    cells = {(1, 1), (2, 1), (3, 1), (3, 2), (3, 3), (1, 3), (5, 9)}
    assert regions(cells) == [Region(1, 1, 3, 3), Region(5, 9, 5, 9)]


def test_cell_values_are_rendered_as_a_reader_sees_them():
    assert cell_text(3.0) == "3"
    assert cell_text(2.5) == "2.5"
    assert cell_text(True) == "TRUE"
    assert cell_text(dt.datetime(2024, 3, 1)) == "2024-03-01"
    assert cell_text(dt.datetime(2024, 3, 1, 9, 30)) == "2024-03-01T09:30:00"
    assert cell_text("  first \n header ") == "first header"
    assert cell_text(None) == ""


# -- the shared corpus ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "doc", ["xlsx_01.xlsx", "xlsx_06_edge_cases_.xlsx", "xlsx_09_section_label_header.xlsx"]
)
def test_sheets_and_tables_match_ground_truth(doc: str, tmp_path: Path) -> None:
    ctx = _parse(DOCS / doc, tmp_path)
    grader = scorer()
    headings = grader.score_headings(expected_headings(doc), headings_of(ctx))
    assert headings["recall"] == headings["precision"] == 1.0, headings
    tables = grader.score_tables(expected_tables(doc), tables_of(ctx))
    assert tables["found"] == tables["expected"] == tables["predicted"], tables
    assert tables["shape_exact"] == 1.0 and tables["cell_recall"] == 1.0, tables


def test_merged_cells_become_rowspan_and_colspan(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "xlsx_01.xlsx", tmp_path)
    html = str(tables_of(ctx)[4]["html"])
    assert '<th rowspan="2">first</th><th colspan="2">header</th>' in html
    assert '<td rowspan="2" colspan="2">9</td>' in html


def test_a_hidden_sheet_is_skipped_with_a_diagnostic(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "xlsx_01.xlsx", tmp_path)
    assert _rows(ctx, RowType.HEADING) == ["Sheet1", "Sheet2", "Sheet3"]
    assert any(d.code == "sheet.hidden" and "Sheet4" in d.message for d in ctx.diagnostics.items)


def test_sheet_rows_carry_the_sheet_position_as_page(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "xlsx_01.xlsx", tmp_path)
    pages = {r.text: r.page_numbers for r in ctx.rows if r.row_type is RowType.HEADING}
    assert pages == {"Sheet1": [1], "Sheet2": [2], "Sheet3": [3]}
    tables = [r.page_numbers for r in ctx.rows if r.row_type is RowType.TABLE]
    assert tables == [[1], [2], [2], [2], [3], [3]]


def test_a_merged_title_row_is_the_caption_not_the_header(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "xlsx_09_section_label_header.xlsx", tmp_path)
    assert _rows(ctx, RowType.CAPTION) == ["Reading List"]
    (table,) = tables_of(ctx)
    assert "<caption>Reading List</caption>" in str(table["html"])
    assert "<thead><tr><th>#</th><th>Genre</th>" in str(table["html"])
    assert "Bantam Books" in str(table["html"])


def test_the_profile_counts_sheets_and_routes_to_the_xlsx_parser():
    profile = profile_source(DOCS / "xlsx_01.xlsx").profile
    assert profile.format is FileFormat.XLSX
    assert profile.page_count == 4
    assert profile.routing.strategy == "xlsx"


# -- built workbooks --------------------------------------------------------------------------


def test_a_lone_cell_is_text_and_a_block_is_a_table(tmp_path: Path) -> None:
    def fill(ws: Worksheet) -> None:
        ws.title = "Budget"
        ws["A1"] = "Approved by the board in March."
        ws["B3"], ws["C3"] = "Item", "Cost"
        ws["B4"], ws["C4"] = "Boats", 1200.0
        ws["B5"], ws["C5"] = "Nets", 80.5

    ctx = _built(tmp_path, fill)
    assert _rows(ctx, RowType.HEADING) == ["Budget"]
    assert _rows(ctx, RowType.PARAGRAPH) == ["Approved by the board in March."]
    assert _rows(ctx, RowType.TABLE) == ["Item | Cost\nBoats | 1200\nNets | 80.5"]
    (table,) = [r for r in ctx.rows if r.row_type is RowType.TABLE]
    assert table.source_location == "Budget!B3:C5"


def test_a_long_data_sheet_is_stored_in_blocks_that_repeat_the_header(tmp_path: Path) -> None:
    def fill(ws: Worksheet) -> None:
        ws.title = "Counts"
        ws.append(["Pond", "Ducks"])
        for n in range(1, 121):
            ws.append([f"Pond {n}", n])
        ws.merge_cells("B50:B53")  # crosses the boundary between the first two blocks

    ctx = _built(tmp_path, fill)
    tables = [r for r in ctx.rows if r.row_type is RowType.TABLE]
    assert [t.source_location for t in tables] == [
        "Counts!A2:B51",
        "Counts!A52:B101",
        "Counts!A102:B121",
    ]
    htmls = [str(t["html"]) for t in tables_of(ctx)]
    assert all("<thead><tr><th>Pond</th><th>Ducks</th></tr></thead>" in h for h in htmls)
    assert "<caption>Counts (rows 2–51 of A1:B121)</caption>" in htmls[0]
    assert htmls[0].count("<tr>") == 51 and htmls[2].count("<tr>") == 21
    # The merged value (B50) ends block 1 and continues at the top of block 2.
    assert '<td>Pond 49</td><td rowspan="2">49</td>' in htmls[0]
    assert '<td>Pond 51</td><td rowspan="2">49</td>' in htmls[1]
    assert "Pond 120" in tables[2].text


def test_a_formula_without_a_stored_result_keeps_its_formula_text(tmp_path: Path) -> None:
    def fill(ws: Worksheet) -> None:
        ws.append(["Item", "Cost"])
        ws.append(["Boats", 1200])
        ws.append(["Total", "=SUM(B2:B2)"])  # openpyxl stores no result, like most libraries

    ctx = _built(tmp_path, fill)
    (table,) = tables_of(ctx)
    assert "<td>Total</td><td>=SUM(B2:B2)</td>" in str(table["html"])
    (note,) = [d for d in ctx.diagnostics.items if d.code == "formula.uncached"]
    assert note.message.startswith("1 formula cell(s)")


def test_a_stored_formula_result_is_read_as_the_value(tmp_path: Path) -> None:
    import zipfile

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert isinstance(sheet, Worksheet)
    for row in (["Item", "Cost"], ["Boats", 1200], ["Total", "=SUM(B2:B2)"]):
        sheet.append(row)
    plain = tmp_path / "plain.xlsx"
    workbook.save(plain)
    # What a spreadsheet application saves: the formula and its computed result.
    path = tmp_path / "computed.xlsx"
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(path, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"<v></v>", b"<v>1200</v>")
            dst.writestr(item, data)
    ctx = _parse(path, tmp_path)
    assert "<td>Total</td><td>1200</td>" in str(tables_of(ctx)[0]["html"])
    assert not [d for d in ctx.diagnostics.items if d.code == "formula.uncached"]


def test_dates_and_numbers_in_cells_read_as_displayed(tmp_path: Path) -> None:
    def fill(ws: Worksheet) -> None:
        ws.append(["Survey", "Date", "Ducks"])
        ws.append(["Lake", dt.date(2024, 5, 2), 14])
        ws.append(["River", dt.date(2024, 5, 9), 7.5])

    (table,) = tables_of(_built(tmp_path, fill))
    assert "<td>2024-05-02</td><td>14</td>" in str(table["html"])
    assert "<td>River</td><td>2024-05-09</td><td>7.5</td>" in str(table["html"])


def test_an_embedded_picture_is_stored_as_an_image(tmp_path: Path) -> None:
    def fill(ws: Worksheet) -> None:
        ws.append(["Species", "Count"])
        ws.append(["Teal", 3])
        buf = io.BytesIO()
        Image.new("RGB", (80, 60), "navy").save(buf, format="PNG")
        buf.seek(0)
        ws.add_image(SheetImage(buf), "E2")

    ctx = _built(tmp_path, fill)
    images = [r for r in ctx.rows if r.row_type is RowType.IMAGE]
    assert len(images) == 1 and images[0].resource_path
    assert (tmp_path / "work" / images[0].resource_path).is_file()


def test_a_truncated_workbook_raises_corrupt_document_error(tmp_path: Path) -> None:
    broken = truncated_copy(DOCS / "xlsx_01.xlsx", tmp_path)
    with pytest.raises(CorruptDocumentError, match="xlsx") as info:
        _parse(broken, tmp_path)
    assert info.value.format == "xlsx"


def test_an_ingested_workbook_answers_a_search_with_the_sheet_as_section(settings) -> None:
    record, response = search_after_ingest(
        settings,
        DOCS / "xlsx_09_section_label_header.xlsx",
        "publisher of A Brief History of Time",
        top_k=3,
    )
    top = response.results[0]
    assert top.document_id == record.document_id
    assert top.chunk_type.value == "table" and "Bantam Books" in top.content
    assert top.section_path == ["Library Catalog"] and top.pages == [1]


# -- legacy .xls --------------------------------------------------------------------------------


def _xls(tmp_path: Path) -> Path:
    import xlwt

    book = xlwt.Workbook()
    sheet = book.add_sheet("Survey")
    sheet.write_merge(0, 0, 0, 2, "Duck survey")
    for c, head in enumerate(("Pond", "Date", "Ducks")):
        sheet.write(1, c, head)
    dates = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    for r, (pond, day, count) in enumerate(
        (("Lake", dt.date(2024, 5, 2), 14), ("River", dt.date(2024, 5, 9), 7.5)), start=2
    ):
        sheet.write(r, 0, pond)
        sheet.write(r, 1, day, dates)
        sheet.write(r, 2, count)
    hidden = book.add_sheet("Scratch")
    hidden.write(0, 0, "notes")
    hidden.visibility = 1
    path = tmp_path / "survey.xls"
    book.save(str(path))
    return path


# -- OpenDocument spreadsheets --------------------------------------------------------------------

_ODS_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content
  xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
  xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
  xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3">
 <office:automatic-styles>
  <style:style style:name="ta1" style:family="table"><style:table-properties table:display="true"/></style:style>
  <style:style style:name="ta2" style:family="table"><style:table-properties table:display="false"/></style:style>
 </office:automatic-styles>
 <office:body><office:spreadsheet>
  <table:table table:name="Survey" table:style-name="ta1">
   <table:table-row>
    <table:table-cell table:number-columns-spanned="3"><text:p>Duck survey</text:p></table:table-cell>
    <table:covered-table-cell table:number-columns-repeated="2"/>
   </table:table-row>
   <table:table-row>
    <table:table-cell><text:p>Pond</text:p></table:table-cell>
    <table:table-cell><text:p>Date</text:p></table:table-cell>
    <table:table-cell><text:p>Ducks</text:p></table:table-cell>
   </table:table-row>
   <table:table-row>
    <table:table-cell office:value-type="string"><text:p>Lake</text:p></table:table-cell>
    <table:table-cell office:value-type="date" office:date-value="2024-05-02"><text:p>02/05/24</text:p></table:table-cell>
    <table:table-cell office:value-type="float" office:value="14"><text:p>14</text:p></table:table-cell>
    <table:table-cell table:number-columns-repeated="16381"/>
   </table:table-row>
   <table:table-row>
    <table:table-cell table:number-rows-spanned="2"><text:p>River</text:p></table:table-cell>
    <table:table-cell office:value-type="date" office:date-value="2024-05-09"><text:p>09/05/24</text:p></table:table-cell>
    <table:table-cell office:value-type="float" office:value="7.5"><text:p>7.5</text:p></table:table-cell>
   </table:table-row>
   <table:table-row>
    <table:covered-table-cell/>
    <table:table-cell office:value-type="date" office:date-value="2024-05-16"><text:p>16/05/24</text:p></table:table-cell>
    <table:table-cell office:value-type="float" office:value="3"><text:p>3</text:p></table:table-cell>
   </table:table-row>
   <table:table-row table:number-rows-repeated="1048570"><table:table-cell table:number-columns-repeated="16384"/></table:table-row>
  </table:table>
  <table:table table:name="Scratch" table:style-name="ta2">
   <table:table-row><table:table-cell><text:p>notes</text:p></table:table-cell></table:table-row>
  </table:table>
 </office:spreadsheet></office:body>
</office:document-content>
"""


def _ods(tmp_path: Path) -> Path:
    import zipfile

    path = tmp_path / "survey.ods"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        zf.writestr("content.xml", _ODS_CONTENT)
    return path


def _other_workbook(kind: str, tmp_path: Path) -> tuple[Path, Any, FileFormat]:
    from corpus_pipeline.parsing.xlsx import parse_ods, parse_xls

    if kind == "xls":
        return _xls(tmp_path), parse_xls, FileFormat.XLS
    return _ods(tmp_path), parse_ods, FileFormat.ODS


@pytest.mark.parametrize("kind", ["xls", "ods"])
def test_legacy_and_opendocument_workbooks_are_read_like_xlsx(kind: str, tmp_path: Path) -> None:
    path, parser, fmt = _other_workbook(kind, tmp_path)
    profile = profile_source(path).profile
    assert (profile.format, profile.routing.strategy) == (fmt, kind)
    ctx = run_parser(parser, path, tmp_path / "work", fmt)
    assert _rows(ctx, RowType.HEADING) == ["Survey"]
    assert _rows(ctx, RowType.CAPTION) == ["Duck survey"]
    (table,) = tables_of(ctx)
    html = str(table["html"])
    assert "<thead><tr><th>Pond</th><th>Date</th><th>Ducks</th></tr></thead>" in html
    assert "<td>Lake</td><td>2024-05-02</td><td>14</td>" in html
    assert "<td>River</td><td>2024-05-09</td><td>7.5</td>" in html.replace(' rowspan="2"', "")
    assert any(d.code == "sheet.hidden" and "Scratch" in d.message for d in ctx.diagnostics.items)


def test_an_opendocument_row_merge_becomes_a_rowspan(tmp_path: Path) -> None:
    path, parser, fmt = _other_workbook("ods", tmp_path)
    (table,) = tables_of(run_parser(parser, path, tmp_path / "work", fmt))
    assert '<td rowspan="2">River</td><td>2024-05-09</td><td>7.5</td>' in str(table["html"])


@pytest.mark.parametrize("kind", ["xls", "ods"])
def test_a_broken_workbook_raises_corrupt_document_error(kind: str, tmp_path: Path) -> None:
    path, parser, fmt = _other_workbook(kind, tmp_path)
    broken = truncated_copy(path, tmp_path, keep=120)
    with pytest.raises(CorruptDocumentError, match=kind):
        run_parser(parser, broken, tmp_path / "work", fmt)


def test_an_opendocument_workbook_that_expands_past_its_budget_is_refused_as_corrupt(
    tmp_path: Path,
) -> None:
    """A few hundred kilobytes that inflate past the per-member budget: refused while
    decompressing, before the parse worker's memory fills."""
    import zipfile

    from corpus_pipeline.parsing.xlsx import parse_ods
    from corpus_pipeline.parsing.zipped import MAX_MEMBER_BYTES

    path = tmp_path / "bomb.ods"
    padding = b" " * (MAX_MEMBER_BYTES + 1024)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        zf.writestr("content.xml", _ODS_CONTENT.encode("utf-8") + padding)
    assert path.stat().st_size < 1024 * 1024
    with pytest.raises(CorruptDocumentError, match=r"ods.*MemberTooLarge"):
        run_parser(parse_ods, path, tmp_path / "work", FileFormat.ODS)
