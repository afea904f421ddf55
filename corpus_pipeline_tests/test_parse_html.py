"""HTML strategy: headings, tables, chrome removal, links and images on corpus and built files."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import lxml.html
import pytest
from PIL import Image, ImageDraw

from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.html import parse_html
from corpus_pipeline.parsing.html_tables import table_grid_from_element
from corpus_pipeline_tests.support import (
    DOCS,
    expected_headings,
    expected_tables,
    headings_of,
    run_parser,
    scorer,
    tables_of,
)


def _parse(path: Path, tmp_path: Path) -> ParseContext:
    return run_parser(parse_html, path, tmp_path / "work", FileFormat.HTML)


def _parse_html(html: str | bytes, tmp_path: Path) -> ParseContext:
    path = tmp_path / "page.html"
    path.write_bytes(html.encode("utf-8") if isinstance(html, str) else html)
    return _parse(path, tmp_path)


def _png() -> bytes:
    img = Image.new("RGB", (32, 24), "white")
    ImageDraw.Draw(img).rectangle((4, 4, 20, 16), fill="blue")
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _grid_rows(table_html: str) -> list[lxml.html.HtmlElement]:
    return list(lxml.html.fragment_fromstring(table_html).iter("tr"))


# -- corpus: headings and tables against the ground truth ---------------------------------------


@pytest.mark.parametrize(
    "doc", ["wiki_duck.html", "example_03.html", "example_04.html", "example_08.html"]
)
def test_heading_scores_reach_the_measured_floor(doc: str, tmp_path: Path) -> None:
    ctx = _parse(DOCS / doc, tmp_path)
    score = scorer().score_headings(expected_headings(doc), headings_of(ctx))
    assert score["recall"] == 1.0
    assert score["order"] == 1.0
    assert score["level_acc"] == 1.0


def test_wiki_duck_keeps_the_sidebar_contents_heading_before_the_title(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "wiki_duck.html", tmp_path)
    heads = headings_of(ctx)
    assert heads[:2] == [{"text": "Contents", "level": 2}, {"text": "Duck", "level": 1}]


def test_wiki_duck_finds_the_infobox_and_the_authority_control_table(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "wiki_duck.html", tmp_path)
    score = scorer().score_tables(expected_tables("wiki_duck.html"), tables_of(ctx))
    assert score["recall"] == 1.0
    assert score["shape_exact"] == 1.0
    assert score["span_recall"] == 1.0


def test_wiki_duck_drops_citation_markers_and_edit_links(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "wiki_duck.html", tmp_path)
    para = next(r for r in ctx.rows if r.text.startswith("Ducks have a cosmopolitan distribution"))
    assert "except Antarctica. Several species" in para.text
    assert not any("[edit]" in r.text or r.text == "edit" for r in ctx.rows)


def test_wiki_duck_link_offsets_cover_the_anchor_text(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "wiki_duck.html", tmp_path)
    para = next(r for r in ctx.rows if r.text.startswith("Ducks have a cosmopolitan distribution"))
    link = para.links[0]
    assert para.text[link.start : link.end] == "cosmopolitan distribution"
    assert link.target == "/wiki/Cosmopolitan_distribution"


def test_example_04_table_keeps_rowspan_and_colspan(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "example_04.html", tmp_path)
    html = tables_of(ctx)[0]["html"]
    assert '<th colspan="2">Header 2 &amp; 3 (colspan)</th>' in html
    assert '<td rowspan="2">Row 1 &amp; 2, Col 1 (rowspan)</td>' in html
    assert '<td colspan="2">Row 2, Col 2 &amp; 3 (colspan)</td>' in html
    score = scorer().score_tables(expected_tables("example_04.html"), tables_of(ctx))
    assert (score["shape_exact"], score["span_recall"]) == (1.0, 1.0)


def test_example_08_overrunning_rowspans_are_clamped(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "example_08.html", tmp_path)
    tables = tables_of(ctx)
    assert len(tables) == 3
    for table in tables:
        rows = _grid_rows(table["html"])
        for index, tr in enumerate(rows):
            for cell in tr:
                assert int(cell.get("rowspan", "1")) <= len(rows) - index


def test_example_08_year_cell_spans_all_body_rows(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "example_08.html", tmp_path)
    html = tables_of(ctx)[0]["html"]
    assert '<th rowspan="5">2025</th><td>January</td>' in html
    score = scorer().score_tables(expected_tables("example_08.html"), tables_of(ctx))
    assert (score["recall"], score["shape_acc"], score["cell_recall"]) == (1.0, 1.0, 1.0)


# -- built files ---------------------------------------------------------------------------------


def test_scripts_styles_and_hidden_elements_are_dropped(tmp_path: Path) -> None:
    ctx = _parse_html(
        "<html><head><style>p{}</style></head><body><script>var x=1;</script>"
        "<p>visible</p><div hidden>h1</div><p style='display: none'>h2</p>"
        "<noscript>ns</noscript><template><p>tpl</p></template></body></html>",
        tmp_path,
    )
    assert [r.text for r in ctx.rows] == ["visible"]


def test_headings_paragraphs_and_nested_list_items_in_reading_order(tmp_path: Path) -> None:
    ctx = _parse_html(
        "<body><h2>Sec</h2><p>Para <b>bold</b>.</p>"
        "<ul><li>One<ul><li>One.a</li></ul></li><li>Two</li></ul></body>",
        tmp_path,
    )
    assert [(r.row_type, r.text, r.heading_level) for r in ctx.rows] == [
        (RowType.HEADING, "Sec", 2),
        (RowType.PARAGRAPH, "Para bold.", None),
        (RowType.LIST_ITEM, "One", None),
        (RowType.LIST_ITEM, "One.a", None),
        (RowType.LIST_ITEM, "Two", None),
    ]


def test_source_location_is_the_element_path(tmp_path: Path) -> None:
    ctx = _parse_html("<body><div><p>a</p><p>b</p></div></body>", tmp_path)
    assert [r.source_location for r in ctx.rows] == ["html/body/div/p[1]", "html/body/div/p[2]"]


def test_pre_block_keeps_its_line_breaks(tmp_path: Path) -> None:
    ctx = _parse_html("<body><pre>\ndef f():\n    return 1\n</pre></body>", tmp_path)
    assert ctx.rows[0].text == "def f():\n    return 1"


def test_link_offsets_after_collapsed_whitespace(tmp_path: Path) -> None:
    ctx = _parse_html('<p>Read   the\n <a href="/doc#x">  user   guide </a> now.</p>', tmp_path)
    row = ctx.rows[0]
    assert row.text == "Read the user guide now."
    assert [(row.text[s.start : s.end], s.target) for s in row.links] == [("user guide", "/doc#x")]


def test_figcaption_becomes_a_caption_row(tmp_path: Path) -> None:
    ctx = _parse_html("<figure><figcaption>Fig. 1 A duck</figcaption></figure>", tmp_path)
    assert [(r.row_type, r.text) for r in ctx.rows] == [(RowType.CAPTION, "Fig. 1 A duck")]


def test_data_uri_image_is_stored_as_an_image_row(tmp_path: Path) -> None:
    src = "data:image/png;base64," + base64.b64encode(_png()).decode("ascii")
    ctx = _parse_html(f'<p>Before</p><img src="{src}" alt="A blue box">', tmp_path)
    image = next(r for r in ctx.rows if r.row_type is RowType.IMAGE)
    assert image.text == "A blue box"
    assert image.resource_path is not None
    assert (ctx.workdir / image.resource_path).read_bytes()[:4] == b"\x89PNG"


def test_remote_image_leaves_a_diagnostic_and_keeps_its_alt_text(tmp_path: Path) -> None:
    ctx = _parse_html(
        '<p>x</p><img src="https://example.org/a.png" alt="Chart of sales">', tmp_path
    )
    assert [r.text for r in ctx.rows] == ["x", "Chart of sales"]
    assert not any(r.row_type is RowType.IMAGE for r in ctx.rows)
    diag = next(d for d in ctx.diagnostics.items if d.code == "image.unavailable")
    assert "example.org" not in diag.message


def test_table_caption_header_and_nested_table_text(tmp_path: Path) -> None:
    ctx = _parse_html(
        "<table><caption>Prices</caption><thead><tr><th>Item</th><th>Cost</th></tr></thead>"
        "<tbody><tr><td>Tea<table><tr><td>green</td></tr><tr><td>black</td></tr></table></td>"
        "<td>3</td></tr></tbody></table>",
        tmp_path,
    )
    assert [r.row_type for r in ctx.rows] == [RowType.CAPTION, RowType.TABLE]
    html = tables_of(ctx)[0]["html"]
    assert html.startswith("<table><caption>Prices</caption><thead><tr><th>Item</th>")
    assert "<td>Tea<br>green<br>black</td>" in html


def test_table_grid_from_element_counts_leading_th_rows_as_header() -> None:
    table = lxml.html.fragment_fromstring(
        "<table><tr><th rowspan='2'>A</th><th colspan='2'>B</th></tr>"
        "<tr><th>b1</th><th>b2</th></tr><tr><td>1</td><td>2</td><td>3</td></tr></table>"
    )
    grid = table_grid_from_element(table)
    assert (grid.num_rows, grid.num_cols, grid.header_rows) == (3, 3, 2)
    assert [(c.text, c.row, c.col) for c in grid.rows()[1]] == [("b1", 1, 1), ("b2", 1, 2)]


def test_meta_charset_is_honoured_for_non_utf8_bytes(tmp_path: Path) -> None:
    html = '<html><head><meta http-equiv="Content-Type" content="text/html; charset=koi8-r">'
    ctx = _parse_html(
        (html + "</head><body><p>Привет, утка</p></body></html>").encode("koi8-r"), tmp_path
    )
    assert ctx.rows[0].text == "Привет, утка"
    assert ctx.diagnostics.items == []


def test_undeclared_non_utf8_html_falls_back_to_cp1252_with_a_warning(tmp_path: Path) -> None:
    ctx = _parse_html("<p>Café “ok”</p>".encode("cp1252"), tmp_path)
    assert ctx.rows[0].text == "Café “ok”"
    assert [d.code for d in ctx.diagnostics.items] == ["encoding.fallback"]


def test_empty_file_emits_nothing_and_a_diagnostic(tmp_path: Path) -> None:
    ctx = _parse_html(b"", tmp_path)
    assert ctx.rows == []
    assert [d.code for d in ctx.diagnostics.items] == ["document.empty"]


def test_binary_input_emits_nothing_and_a_diagnostic(tmp_path: Path) -> None:
    ctx = _parse_html(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 20, tmp_path)
    assert ctx.rows == []
    assert [d.code for d in ctx.diagnostics.items] == ["encoding.undecodable"]
