"""CSV and TSV: encoding and dialect sniffed, a header row detected, the rows stored as HTML
tables of at most 50 rows that each repeat the header, a line naming the columns for the text
channels, and a cell budget that cuts a long file with a diagnostic."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.contracts.search import SearchRequest
from corpus_pipeline.enrich.tokens import count_tokens
from corpus_pipeline.intake.door import admit
from corpus_pipeline.parsing.base import MAX_TABLE_TOKENS, ParseContext
from corpus_pipeline.parsing.csv_table import BLOCK_ROWS, parse_csv
from corpus_pipeline.profiling.sniff import sniff_format

from .support import bare_profile, build_documents, publish_namespaces

LATIN1 = "Name;Stadt;Betrag\nMüller;Köln;12,50\nBäcker;München;7,20\nGroß;Düsseldorf;3,00\n"


def _parse(tmp_path: Path, name: str, data: bytes, **settings: int) -> ParseContext:
    path = tmp_path / name
    path.write_bytes(data)
    ctx = ParseContext(
        source_path=path,
        source_file_name=name,
        profile=bare_profile(path, FileFormat.CSV, "csv"),
        workdir=tmp_path / "work",
        settings=load_settings(home=tmp_path / "home", **settings) if settings else None,
    )
    parse_csv(ctx)
    return ctx


def _tables(ctx: ParseContext) -> list[str]:
    """The stored HTML of each table row, in order."""
    return [
        (ctx.workdir / str(r.resource_path)).read_text(encoding="utf-8")
        for r in ctx.rows
        if r.row_type is RowType.TABLE
    ]


def _sales(rows: int) -> bytes:
    lines = ["region,month,revenue"]
    lines += [f"region {n % 7},2024-{n % 12 + 1:02d},{n * 10}" for n in range(rows)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def test_a_latin1_file_with_semicolons_is_decoded_and_split(tmp_path: Path):
    ctx = _parse(tmp_path, "kunden.csv", LATIN1.encode("latin-1"))
    [table] = [r for r in ctx.rows if r.row_type is RowType.TABLE]
    assert table.text == (
        "Name | Stadt | Betrag\nMüller | Köln | 12,50\nBäcker | München | 7,20\n"
        "Groß | Düsseldorf | 3,00"
    )
    assert any(d.code == "encoding.detected" for d in ctx.diagnostics.items)


def test_a_first_row_of_names_above_numbers_is_the_header(tmp_path: Path):
    ctx = _parse(tmp_path, "kunden.csv", LATIN1.encode("utf-8"))
    [html] = _tables(ctx)
    assert "<thead><tr><th>Name</th><th>Stadt</th><th>Betrag</th></tr></thead>" in html
    heading, shape = ctx.rows[0], ctx.rows[1]
    assert (heading.row_type, heading.text) == (RowType.HEADING, "kunden")
    assert shape.text == "3 rows, 3 columns: Name, Stadt, Betrag"


def test_a_first_row_of_numbers_is_data(tmp_path: Path):
    ctx = _parse(tmp_path, "readings.csv", b"1,2,3\n4,5,6\n7,8,9\n")
    [html] = _tables(ctx)
    assert "<thead>" not in html and "<td>1</td>" in html
    assert ctx.rows[1].text == "3 rows, 3 columns"


def test_a_long_file_is_stored_in_blocks_each_led_by_the_header(tmp_path: Path):
    ctx = _parse(tmp_path, "sales.csv", _sales(2000))
    tables = [r for r in ctx.rows if r.row_type is RowType.TABLE]
    htmls = _tables(ctx)
    header = "<thead><tr><th>region</th><th>month</th><th>revenue</th></tr></thead>"
    assert all(html.count(header) == 1 for html in htmls)
    assert all(html.count("<tr>") <= BLOCK_ROWS + 1 for html in htmls)
    # Each block fits a table chunk whole, and its caption names the rows it holds, in order.
    assert not any("part" in table.source_location for table in tables)
    spans = [re.findall(r"rows (\d+)–(\d+)", html)[0] for html in htmls]
    assert spans[0][0] == "2" and spans[-1][1] == "2001"
    assert all(int(b[0]) == int(a[1]) + 1 for a, b in itertools.pairwise(spans))
    assert tables[-1].text.splitlines()[-1] == "region 4 | 2024-08 | 19990"


def test_the_cell_budget_cuts_a_long_file_with_a_diagnostic(tmp_path: Path):
    ctx = _parse(tmp_path, "sales.csv", _sales(100), parse_max_cells=90)
    kept = [line for r in ctx.rows if r.row_type is RowType.TABLE for line in r.text.splitlines()]
    assert len(kept) == 30 and kept[-1] == "region 0 | 2024-05 | 280"
    [cut] = [d for d in ctx.diagnostics.items if d.code == "parse.budget_exceeded"]
    assert cut.message.startswith("cell budget reached: read 30 of 101 rows (limit: 90 cells)")


def test_a_tsv_is_split_on_tabs(tmp_path: Path):
    data = b"city\tpopulation\nOslo\t709000\nBergen\t291000\n"
    [table] = [r for r in _parse(tmp_path, "cities.tsv", data).rows if r.row_type is RowType.TABLE]
    assert table.text == "city | population\nOslo | 709000\nBergen | 291000"


def test_quoted_fields_keep_their_delimiters_and_line_breaks(tmp_path: Path):
    data = b'item,note\nduck,"dives, then surfaces"\ngoose,"line one\nline two"\n'
    [html] = _tables(_parse(tmp_path, "notes.csv", data))
    assert "<td>dives, then surfaces</td>" in html and "<td>line one<br>line two</td>" in html


# -- sniffing and the door ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "extension"),
    [
        (LATIN1.encode("latin-1"), "csv"),
        (b"city\tpopulation\nOslo\t709000\n", "tsv"),
        (_sales(10), "txt"),  # content decides: a .txt of consistent rows is a table
    ],
)
def test_delimited_rows_are_sniffed_as_csv(data: bytes, extension: str):
    assert sniff_format(data, extension).format is FileFormat.CSV


def test_prose_with_commas_stays_text():
    prose = (
        b"Ducks, geese and swans feed on the lake.\nIn winter, they move south.\n"
        b"The coots, however, stay.\nSome grebes, too, remain all year, we think.\n"
        b"Herons wait.\nGulls, as ever, follow the boats.\n"
    )
    assert sniff_format(prose, "txt").format is FileFormat.TEXT


def test_a_csv_of_one_column_is_admitted_as_text():
    assert admit("names.csv", b"Alice\nBob\nCarol\n", max_bytes=1_000).format is FileFormat.TEXT


@pytest.mark.slow
def test_a_csv_cell_is_found_by_search(settings):
    from query_service.retrieval.classic import classic_search
    from query_service.snapshot.revision import open_revision

    records = build_documents(settings, {"kunden.csv": LATIN1.encode("latin-1")})
    publish_namespaces(settings, "default")
    revision = open_revision(settings.published_dir, "default")
    [hit] = classic_search(revision, SearchRequest(query="Düsseldorf", top_k=1)).results
    assert hit.document_id == records["kunden.csv"].document_id
    assert hit.chunk_type == "table" and "Groß | Düsseldorf | 3,00" in hit.content


def test_rows_too_wide_for_one_table_are_stored_as_parts_of_columns(tmp_path: Path):
    header = ["station", *(f"reading {i}" for i in range(3000))]
    values = ["north", *(str(i * 7) for i in range(3000))]
    data = (",".join(header) + "\n" + ",".join(values) + "\n").encode()
    ctx = _parse(tmp_path, "wide.csv", data)
    tables = [r for r in ctx.rows if r.row_type is RowType.TABLE]
    assert len(tables) > 10
    assert all(count_tokens(r.text) <= MAX_TABLE_TOKENS + 20 for r in tables)  # + its caption
    assert all("station" in r.text and "north" in r.text for r in tables), "labels repeat"
    cells = [c for r in tables for line in r.text.splitlines()[-1:] for c in line.split(" | ")]
    assert [c for c in cells if c != "north"] == values[1:], "every value once, in order"
