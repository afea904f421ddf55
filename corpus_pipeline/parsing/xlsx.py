"""XLSX and XLS strategies: every visible sheet is a section, every block of touching cells a
table.

A sheet has no reading order of its own, so structure comes from geometry: cells that touch
(sharing an edge; a merged range counts as all the cells it covers) form one region, and
regions are read top to bottom, left to right. Diagonal contact does not join regions: two
tables set corner to corner are two tables. A region of at least two rows and two columns is a
table (merged ranges become rowspan/colspan); a single-cell top row above such a region (a
merged title row, or a label in its first column) is the table's caption; anything smaller is
text. A table longer than MAX_TABLE_ROWS data rows is stored in blocks that repeat its header.
Values are the results the file stores (formulas are not re-evaluated here); a formula whose
result was never stored keeps its formula text.
"""

from __future__ import annotations

import datetime as dt
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from openpyxl import load_workbook
from openpyxl.utils import get_column_letter

from corpus_pipeline.contracts import RowType
from corpus_pipeline.parsing.base import ParseContext, load_or_corrupt
from corpus_pipeline.parsing.odf import names as odf
from corpus_pipeline.parsing.tables import TableCell, TableGrid
from corpus_pipeline.parsing.zipped import ZipPackage, check_expansion, xml_parser

Cell = tuple[int, int]  # (row, column), 1-based as in the sheet
# Data rows per stored table: a longer block (a data sheet) is stored as consecutive tables of
# this many rows, each led by the header row, so a chunk stays a readable, citable size.
MAX_TABLE_ROWS = 50


@dataclass(frozen=True)
class Region:
    """A rectangle of a sheet, 1-based and inclusive."""

    top: int
    left: int
    bottom: int
    right: int

    @property
    def rows(self) -> int:
        return self.bottom - self.top + 1

    @property
    def cols(self) -> int:
        return self.right - self.left + 1

    def a1(self) -> str:
        first = f"{get_column_letter(self.left)}{self.top}"
        last = f"{get_column_letter(self.right)}{self.bottom}"
        return first if first == last else f"{first}:{last}"


def regions(occupied: Iterable[Cell]) -> list[Region]:
    """Bounding boxes of the edge-connected groups of occupied cells, in reading order; boxes
    that overlap are merged (a region's box may enclose a few empty cells)."""
    todo = set(occupied)
    boxes: list[Region] = []
    while todo:
        start = min(todo)
        todo.discard(start)
        stack = [start]
        top, left, bottom, right = start[0], start[1], start[0], start[1]
        while stack:
            r, c = stack.pop()
            top, left, bottom, right = min(top, r), min(left, c), max(bottom, r), max(right, c)
            for near in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if near in todo:
                    todo.discard(near)
                    stack.append(near)
        boxes.append(Region(top, left, bottom, right))
    merged = True
    while merged:  # overlapping boxes describe one block
        merged = False
        for i, a in enumerate(boxes):
            for j in range(i + 1, len(boxes)):
                b = boxes[j]
                if (
                    a.top <= b.bottom
                    and b.top <= a.bottom
                    and a.left <= b.right
                    and b.left <= a.right
                ):
                    boxes[i] = Region(
                        min(a.top, b.top),
                        min(a.left, b.left),
                        max(a.bottom, b.bottom),
                        max(a.right, b.right),
                    )
                    del boxes[j]
                    merged = True
                    break
            if merged:
                break
    return sorted(boxes, key=lambda b: (b.top, b.left))


def cell_text(value: Any) -> str:
    """A cell's display text: integral numbers without '.0', dates as ISO, text trimmed."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return " ".join(str(value).split())


class _Sheet:
    """Cell texts and merged ranges of one worksheet, whatever file format it came from."""

    def __init__(self, texts: dict[Cell, str], merged: Iterable[Region]) -> None:
        self.texts = texts
        # Merged range anchor -> (rowspan, colspan); every covered cell -> its anchor.
        self.spans: dict[Cell, tuple[int, int]] = {}
        self.covered: dict[Cell, Cell] = {}
        # A merged range matters only as far as the sheet has text: it is clipped to the texts'
        # extent (a range over a whole sheet, or a damaged span, would cover millions of cells).
        last_row = max((r for r, _ in texts), default=0)
        last_col = max((c for _, c in texts), default=0)
        for whole in merged:
            rng = Region(
                whole.top, whole.left, min(whole.bottom, last_row), min(whole.right, last_col)
            )
            if rng.rows < 1 or rng.cols < 1:
                continue
            anchor = (rng.top, rng.left)
            self.spans[anchor] = (rng.rows, rng.cols)
            for r in range(rng.top, rng.bottom + 1):
                for c in range(rng.left, rng.right + 1):
                    if (r, c) != anchor:
                        self.covered[(r, c)] = anchor

    @classmethod
    def from_openpyxl(cls, ws: Any, formulas: Any = None) -> _Sheet:
        """`formulas`: the same sheet loaded with formulas, for cells whose result the file
        does not store (written by a library, never opened in a spreadsheet application)."""
        texts = {}
        for row in ws.iter_rows():
            for cell in row:
                text = cell_text(cell.value)
                if text:
                    texts[(cell.row, cell.column)] = text
        if formulas is not None:
            for row in formulas.iter_rows():
                for cell in row:
                    key = (cell.row, cell.column)
                    if key not in texts and isinstance(cell.value, str) and cell.value[:1] == "=":
                        texts[key] = cell.value
        merged = [
            Region(r.min_row, r.min_col, r.max_row, r.max_col) for r in ws.merged_cells.ranges
        ]
        return cls(texts, merged)

    def occupied(self) -> set[Cell]:
        cells = set(self.texts)
        for anchor, (rows, cols) in self.spans.items():
            if anchor in self.texts:
                cells.update(
                    (anchor[0] + r, anchor[1] + c) for r in range(rows) for c in range(cols)
                )
        return cells

    def anchors_in_row(self, region: Region, row: int) -> list[Cell]:
        return [
            (row, c)
            for c in range(region.left, region.right + 1)
            if (row, c) in self.texts and (row, c) not in self.covered
        ]

    def grid(self, bands: list[Region], caption: str | None, header: bool) -> TableGrid:
        """A table of the given row bands of one column range, stacked in order (a header band
        then a block of data rows; `header`: its first row is a text header row). Merged ranges are clipped to each band; a merged range that
        starts in an earlier band continues with its text."""
        cells = []
        offset = 0
        for band in bands:
            for r in range(band.top, band.bottom + 1):
                for c in range(band.left, band.right + 1):
                    anchor = self.covered.get((r, c), (r, c))
                    rows, cols = self.spans.get(anchor, (1, 1))
                    top, left = max(anchor[0], band.top), max(anchor[1], band.left)
                    if (r, c) != (top, left):
                        continue  # inside a merged range drawn from its first visible cell
                    bottom = min(anchor[0] + rows - 1, band.bottom)
                    right = min(anchor[1] + cols - 1, band.right)
                    cells.append(
                        TableCell(
                            offset + r - band.top,
                            c - band.left,
                            self.texts.get(anchor, ""),
                            bottom - r + 1,
                            right - c + 1,
                        )
                    )
            offset += band.rows
        return TableGrid(cells=cells, caption=caption, header_rows=1 if header else 0)

    def header_is_text(self, region: Region) -> bool:
        texts = [self.texts[a] for a in self.anchors_in_row(region, region.top)]
        return bool(texts) and not any(_numeric(t) for t in texts)


def row_blocks(region: Region, header: bool, max_rows: int) -> list[list[Region]]:
    """The bands of each stored table: the whole region, or, when it has more than `max_rows`
    data rows, consecutive blocks of data rows, each led by the header row."""
    first = region.top + 1 if header else region.top
    if region.bottom - first + 1 <= max_rows:
        return [[region]]
    head = [Region(region.top, region.left, region.top, region.right)] if header else []
    return [
        [*head, Region(top, region.left, min(top + max_rows - 1, region.bottom), region.right)]
        for top in range(first, region.bottom + 1, max_rows)
    ]


def _numeric(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def _caption(sheet: _Sheet, region: Region) -> tuple[str | None, Region]:
    """A lone cell on the top row of a table-sized region is its title, not its header."""
    if region.rows < 3 or region.cols < 2:
        return None, region
    anchors = sheet.anchors_in_row(region, region.top)
    if len(anchors) != 1:
        return None, region
    rowspan, _ = sheet.spans.get(anchors[0], (1, 1))
    if rowspan != 1:
        return None, region
    body = Region(region.top + 1, region.left, region.bottom, region.right)
    return sheet.texts[anchors[0]], body


def parse_xlsx(ctx: ParseContext) -> None:
    """Emit each visible sheet as a level-1 heading followed by its regions in reading order."""
    check_expansion(ctx.source_path, "xlsx", ctx.memory_limit_mb)
    workbook = load_or_corrupt(
        "xlsx", "workbook", lambda: load_workbook(ctx.source_path, data_only=True)
    )
    uncached = _formulas_without_results(ctx.source_path)
    formulas = (
        load_or_corrupt("xlsx", "workbook", lambda: load_workbook(ctx.source_path))
        if uncached
        else None
    )
    if uncached:
        ctx.diagnostics.add(
            "parse",
            "formula.uncached",
            f"{uncached} formula cell(s) without a stored result: their formula text is kept",
        )
    for number, ws in enumerate(workbook.worksheets, start=1):
        if ws.sheet_state != "visible":
            skip_hidden(ctx, ws.title, ws.sheet_state)
            continue
        pages = [number]
        same = formulas.worksheets[number - 1] if formulas is not None else None
        with ctx.part(
            "sheet",
            f"cells of sheet {ws.title!r} could not be read; skipped",
            page=number,
            code="sheet.failed",
        ):
            emit_sheet(ctx, ws.title, number, _Sheet.from_openpyxl(ws, same))
        for image in getattr(ws, "_images", []):
            _emit_image(ctx, image, ws.title, pages)
        for chart in getattr(ws, "_charts", []):
            with ctx.part(
                "chart",
                f"a chart on sheet {ws.title!r} could not be read; skipped",
                page=number,
                code="chart.failed",
            ):
                text = _chart_text(chart)
                ctx.emit(RowType.PARAGRAPH, text, f"{ws.title}!chart", page_numbers=pages)


_FORMULA_CELL = re.compile(rb"<c\b[^>]*>\s*<f\b[^>]*(?:/>|>[^<]*</f>)\s*(?:<v>([^<]*)</v>)?", re.S)


def _formulas_without_results(path: Path) -> int:
    """How many formula cells store no result (`<f>` without a `<v>` in the sheet XML) — the
    workbook is then read a second time for their formula text."""
    count = 0
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if name.startswith("xl/worksheets/") and name.endswith(".xml"):
                data = zf.read(name)
                if b"<f" in data:
                    count += sum(
                        1 for m in _FORMULA_CELL.finditer(data) if not m.group(1)
                    )  # empty or absent <v>
    return count


def skip_hidden(ctx: ParseContext, title: str, state: str) -> None:
    ctx.diagnostics.add("parse", "sheet.hidden", f"sheet {title!r} is {state}; skipped")


def emit_sheet(ctx: ParseContext, title: str, number: int, sheet: _Sheet) -> None:
    """A sheet's heading, then its regions: tables (in header-led blocks when long) or text."""
    pages = [number]
    ctx.emit(RowType.HEADING, title, title, heading_level=1, page_numbers=pages)
    for region in regions(sheet.occupied()):
        location = f"{title}!{region.a1()}"
        if region.rows >= 2 and region.cols >= 2:
            caption, body = _caption(sheet, region)
            if caption is not None:
                ctx.emit(RowType.CAPTION, caption, location, page_numbers=pages)
            header = sheet.header_is_text(body)
            blocks = row_blocks(body, header, MAX_TABLE_ROWS)
            for bands in blocks:
                rows = bands[-1]
                label = caption
                if len(blocks) > 1:
                    span = f"rows {rows.top}–{rows.bottom} of {body.a1()}"
                    label = f"{caption} ({span})" if caption else f"{title} ({span})"
                where = f"{title}!{rows.a1() if len(blocks) > 1 else body.a1()}"
                ctx.emit_table(sheet.grid(bands, label, header), where, page_numbers=pages)
            continue
        texts = [
            sheet.texts[(r, c)]
            for r in range(region.top, region.bottom + 1)
            for c in range(region.left, region.right + 1)
            if (r, c) in sheet.texts and (r, c) not in sheet.covered
        ]
        ctx.emit(RowType.PARAGRAPH, "\n".join(texts), location, page_numbers=pages)


def _emit_image(ctx: ParseContext, image: Any, sheet: str, pages: list[int]) -> None:
    number = pages[0] if pages else None
    with ctx.part(
        "image",
        f"an image on sheet {sheet!r} could not be read; skipped",
        page=number,
        code="image.unreadable",
    ) as part:
        data = image._data()
    if not part.failed:
        ctx.emit_image(data, "", f"{sheet}!image", page_numbers=pages)


def _chart_text(chart: Any) -> str:
    """What a chart shows, as searchable text: its kind, title and the ranges it plots."""
    kind = type(chart).__name__.removesuffix("Chart").lower() or "chart"
    title = _rich_text(getattr(chart, "title", None))
    refs = []
    for series in getattr(chart, "series", []) or []:
        for attr in ("val", "yVal", "xVal", "cat"):
            ref = getattr(getattr(getattr(series, attr, None), "numRef", None), "f", None)
            if ref:
                refs.append(str(ref))
    parts = [f"{kind.capitalize()} chart" + (f": {title}" if title else "")]
    if refs:
        parts.append("Data: " + ", ".join(dict.fromkeys(refs)))
    return ". ".join(parts)


def _rich_text(title: Any) -> str:
    """The plain text of a chart title (openpyxl keeps it as rich-text runs)."""
    rich = getattr(getattr(getattr(title, "tx", None), "rich", None), "p", None) or []
    runs = [run.t for paragraph in rich for run in (getattr(paragraph, "r", None) or []) if run.t]
    return " ".join(" ".join(runs).split())


# -- legacy .xls (BIFF, read with xlrd) ---------------------------------------------------------


def parse_xls(ctx: ParseContext) -> None:
    """The same reading as XLSX for a legacy workbook (xlrd; no pictures or charts)."""
    for number, name, state, sheet in _read_xls(ctx):
        if state != "visible":
            skip_hidden(ctx, name, state)
        elif sheet is not None:
            emit_sheet(ctx, name, number, sheet)


def _read_xls(ctx: ParseContext) -> list[tuple[int, str, str, _Sheet | None]]:
    """Every sheet's cells, read before anything is emitted: BIFF is a binary format whose
    damage surfaces as any exception deep in xlrd, and all of it means one thing here."""
    import xlrd

    def read() -> list[tuple[int, str, str, _Sheet | None]]:
        return _xls_sheets(
            xlrd.open_workbook(str(ctx.source_path), formatting_info=True, on_demand=True)
        )

    return load_or_corrupt("xls", "workbook", read)


def _xls_sheets(book: Any) -> list[tuple[int, str, str, _Sheet | None]]:
    states = {0: "visible", 1: "hidden", 2: "veryHidden"}
    out: list[tuple[int, str, str, _Sheet | None]] = []
    for index in range(book.nsheets):
        sheet = book.sheet_by_index(index)
        state = states.get(sheet.visibility, "hidden")
        if state != "visible":
            out.append((index + 1, sheet.name, state, None))
            continue
        texts = {}
        for r in range(sheet.nrows):
            for c in range(sheet.ncols):
                text = cell_text(_xls_value(sheet.cell(r, c), book.datemode))
                if text:
                    texts[(r + 1, c + 1)] = text
        merged = [Region(r0 + 1, c0 + 1, r1, c1) for r0, r1, c0, c1 in sheet.merged_cells]
        out.append((index + 1, sheet.name, state, _Sheet(texts, merged)))
        book.unload_sheet(index)
    return out


def _xls_value(cell: Any, datemode: Literal[0, 1]) -> Any:
    import xlrd

    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            return xlrd.xldate.xldate_as_datetime(cell.value, datemode)
        except (xlrd.xldate.XLDateError, ValueError, OverflowError):
            return cell.value
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return bool(cell.value)
    if cell.ctype in (xlrd.XL_CELL_ERROR, xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK):
        return None
    return cell.value


# -- OpenDocument spreadsheets (content.xml, read with lxml) -------------------------------------

# Repeated rows/columns with content are expanded at most this often (empty ones are skipped).
_ODS_MAX_REPEAT = 1_000
# The last column of a sheet (LibreOffice's and Excel's XFD); past it no cell can be named.
_ODS_MAX_COLUMN = 16_384


def parse_ods(ctx: ParseContext) -> None:
    """The same reading as XLSX for an OpenDocument spreadsheet (values as the file shows them)."""
    from lxml import etree

    def read() -> Any:
        # Counted while decompressing: a small file that expands to gigabytes is refused as
        # damaged before it fills the parse worker's memory.
        with ZipPackage(ctx.source_path, "ods") as package:
            return etree.fromstring(package.read("content.xml"), xml_parser())

    root = load_or_corrupt("ods", "spreadsheet", read)
    hidden_styles = {
        style.get(odf.style("name"))
        for style in root.iter(odf.style("style"))
        for props in style.iter(odf.style("table-properties"))
        if props.get(odf.table("display")) == "false"
    }
    for number, table in enumerate(root.iter(odf.table("table")), start=1):
        title = table.get(odf.table("name")) or f"Sheet{number}"
        if table.get(odf.table("style-name")) in hidden_styles:
            skip_hidden(ctx, title, "hidden")
            continue
        sheet, beyond = _ods_sheet(table)
        if beyond:
            ctx.diagnostics.add(
                "parse",
                "sheet.cells_beyond_limit",
                f"sheet {title!r}: {beyond} cell(s) past column {_ODS_MAX_COLUMN:,}, the last a "
                "spreadsheet has, skipped",
                lost="cells",
            )
        emit_sheet(ctx, title, number, sheet)


def _ods_sheet(table: Any) -> tuple[_Sheet, int]:
    """The sheet's cells, and how many cells with text lay past `_ODS_MAX_COLUMN` (skipped: no
    column can be named there, and only a damaged repeat count puts them there)."""
    texts: dict[Cell, str] = {}
    merged: list[Region] = []
    beyond = 0
    r = 0
    for row in table.iter(odf.table("table-row")):
        cells = [
            (cell, _ods_text(cell))
            for cell in row
            if cell.tag in (odf.table("table-cell"), odf.table("covered-table-cell"))
        ]
        repeat_rows = _ods_count(row.get(odf.table("number-rows-repeated")))
        if not any(text for _, text in cells):
            r += repeat_rows  # empty rows (often "to the end of the sheet") hold nothing
            continue
        for _ in range(min(repeat_rows, _ODS_MAX_REPEAT)):
            r += 1
            c = 0
            for cell, text in cells:
                repeat = _ods_count(cell.get(odf.table("number-columns-repeated")))
                if not text or cell.tag != odf.table("table-cell"):
                    c += repeat
                    continue
                for _ in range(min(repeat, _ODS_MAX_REPEAT)):
                    c += 1
                    if c > _ODS_MAX_COLUMN:
                        beyond += 1
                        continue
                    texts[(r, c)] = text
                    rows = _ods_count(cell.get(odf.table("number-rows-spanned")))
                    cols = _ods_count(cell.get(odf.table("number-columns-spanned")))
                    if rows > 1 or cols > 1:
                        merged.append(Region(r, c, r + rows - 1, c + cols - 1))
    return _Sheet(texts, merged), beyond


def _ods_count(value: str | None) -> int:
    """A repeat or span count: at least 1, whatever the attribute holds (absent, zero,
    negative, not a number)."""
    try:
        return max(1, int(value or "1"))
    except ValueError:
        return 1


def _ods_text(cell: Any) -> str:
    """The cell as displayed: its paragraphs (dates keep their ISO value when shown otherwise)."""
    paragraphs = ["".join(p.itertext()) for p in cell.iter(odf.text("p"))]
    shown = " ".join(" ".join(paragraphs).split())
    if cell.get(odf.office("value-type")) == "date" and cell.get(odf.office("date-value")):
        return str(cell.get(odf.office("date-value"))).removesuffix("T00:00:00")
    return shown
