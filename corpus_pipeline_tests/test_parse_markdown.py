"""Markdown strategy: headings, lists, code, GFM and HTML tables, links and images."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.markdown import parse_markdown
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
    return run_parser(parse_markdown, path, tmp_path / "work", FileFormat.MARKDOWN)


def _parse_md(text: str | bytes, tmp_path: Path) -> ParseContext:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    path = src / "doc.md"
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return _parse(path, tmp_path)


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), "green").save(buf, format="PNG")
    return buf.getvalue()


# -- corpus ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", ["wiki.md", "mixed.md"])
def test_heading_scores_reach_the_measured_floor(doc: str, tmp_path: Path) -> None:
    ctx = _parse(DOCS / doc, tmp_path)
    score = scorer().score_headings(expected_headings(doc), headings_of(ctx))
    assert (score["recall"], score["precision"], score["order"], score["level_acc"]) == (1, 1, 1, 1)


def test_mixed_md_html_table_is_found(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "mixed.md", tmp_path)
    score = scorer().score_tables(expected_tables("mixed.md"), tables_of(ctx))
    assert (score["recall"], score["shape_exact"], score["cell_recall"]) == (1.0, 1.0, 1.0)
    assert "<thead><tr><th>Character</th>" in tables_of(ctx)[0]["html"]


def test_mixed_md_html_block_text_becomes_rows(tmp_path: Path) -> None:
    ctx = _parse(DOCS / "mixed.md", tmp_path)
    texts = [(r.row_type, r.text) for r in ctx.rows]
    assert (RowType.PARAGRAPH, "Now a div — almost there...") in texts
    assert (RowType.LIST_ITEM, "foo") in texts
    assert texts[-1] == (RowType.PARAGRAPH, "The end!")


# -- built files -----------------------------------------------------------------------------------


def test_inline_link_offsets_cover_the_rendered_link_text(tmp_path: Path) -> None:
    ctx = _parse_md("See **the** [*user* guide](https://x.org/g) and [b](#b).\n", tmp_path)
    row = ctx.rows[0]
    assert row.text == "See the user guide and b."
    assert [(row.text[s.start : s.end], s.target) for s in row.links] == [
        ("user guide", "https://x.org/g"),
        ("b", "#b"),
    ]


def test_gfm_table_has_a_header_row(tmp_path: Path) -> None:
    ctx = _parse_md("| Name | Qty |\n|---|--:|\n| tea | 3 |\n| **jam** | 1 |\n", tmp_path)
    html = tables_of(ctx)[0]["html"]
    assert html.startswith("<table><thead><tr><th>Name</th><th>Qty</th></tr></thead><tbody>")
    assert "<td>jam</td>" in html
    assert ctx.rows[0].text == "Name | Qty\ntea | 3\njam | 1"


def test_atx_and_setext_headings_get_levels(tmp_path: Path) -> None:
    ctx = _parse_md("Top\n===\n\nSub\n---\n\n### Deep ###\n", tmp_path)
    assert headings_of(ctx) == [
        {"text": "Top", "level": 1},
        {"text": "Sub", "level": 2},
        {"text": "Deep", "level": 3},
    ]


def test_front_matter_is_stripped(tmp_path: Path) -> None:
    ctx = _parse_md("---\ntitle: Hidden\n---\n# Shown\n", tmp_path)
    assert [r.text for r in ctx.rows] == ["Shown"]


def test_each_list_item_is_one_row_with_nested_items_after(tmp_path: Path) -> None:
    ctx = _parse_md("- one\n  continued\n  - inner\n- two\n\n1. first\n", tmp_path)
    assert [(r.row_type, r.text) for r in ctx.rows] == [
        (RowType.LIST_ITEM, "one continued"),
        (RowType.LIST_ITEM, "inner"),
        (RowType.LIST_ITEM, "two"),
        (RowType.LIST_ITEM, "first"),
    ]


def test_fenced_code_is_a_paragraph_keeping_newlines(tmp_path: Path) -> None:
    ctx = _parse_md("```python\ndef f():\n    return 1\n```\n", tmp_path)
    assert [(r.row_type, r.text) for r in ctx.rows] == [
        (RowType.PARAGRAPH, "def f():\n    return 1")
    ]


def test_blockquote_paragraphs_are_kept(tmp_path: Path) -> None:
    ctx = _parse_md("> quoted *text*\n> more\n", tmp_path)
    assert [r.text for r in ctx.rows] == ["quoted text more"]


def test_source_location_is_the_line_range(tmp_path: Path) -> None:
    ctx = _parse_md("# A\n\npara line 1\npara line 2\n", tmp_path)
    assert [r.source_location for r in ctx.rows] == ["lines 1-1", "lines 3-4"]


def test_missing_relative_image_leaves_a_diagnostic_and_keeps_alt_text(tmp_path: Path) -> None:
    ctx = _parse_md("Text ![Sales chart](img/chart.png) here.\n", tmp_path)
    assert [r.text for r in ctx.rows] == ["Text here.", "Sales chart"]
    assert [d.code for d in ctx.diagnostics.items] == ["image.unavailable"]


def test_data_uri_image_is_stored_as_an_image_row(tmp_path: Path) -> None:
    src = "data:image/png;base64," + base64.b64encode(_png()).decode("ascii")
    ctx = _parse_md(f"![Green square]({src})\n", tmp_path)
    assert [(r.row_type, r.text) for r in ctx.rows] == [(RowType.IMAGE, "Green square")]
    assert ctx.rows[0].resource_path is not None
    assert (ctx.workdir / ctx.rows[0].resource_path).is_file()


def test_image_next_to_the_source_is_stored_when_present(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pic.png").write_bytes(_png())
    ctx = _parse_md("![Local](pic.png)\n", tmp_path)
    assert [(r.row_type, r.text) for r in ctx.rows] == [(RowType.IMAGE, "Local")]


def test_image_path_outside_the_source_folder_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes(_png())
    ctx = _parse_md("![Up](../secret.png)\n", tmp_path)
    assert [(r.row_type, r.text) for r in ctx.rows] == [(RowType.PARAGRAPH, "Up")]


def test_html_heading_inside_markdown_is_a_heading(tmp_path: Path) -> None:
    ctx = _parse_md('<h2 align="center">Project</h2>\n\nBody.\n', tmp_path)
    assert headings_of(ctx) == [{"text": "Project", "level": 2}]
    assert ctx.rows[0].source_location == "lines 1-1"


def test_empty_file_emits_nothing_and_a_diagnostic(tmp_path: Path) -> None:
    ctx = _parse_md("\n  \n", tmp_path)
    assert ctx.rows == []
    assert [d.code for d in ctx.diagnostics.items] == ["document.empty"]
