"""Plain-text strategy: decoding fallbacks and the conservative heading heuristic."""

from __future__ import annotations

from pathlib import Path

from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.text import parse_text
from corpus_pipeline_tests.support import headings_of, run_parser


def _parse_txt(data: str | bytes, tmp_path: Path) -> ParseContext:
    path = tmp_path / "doc.txt"
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return run_parser(parse_text, path, tmp_path / "work", FileFormat.TEXT)


def test_numbered_headings_get_their_depth_as_level(tmp_path: Path) -> None:
    ctx = _parse_txt(
        "1 Introduction\n\nBody text.\n\n1.2 Scope\n\n1.2.3. Limits\n\n2. Methods\n", tmp_path
    )
    assert headings_of(ctx) == [
        {"text": "1 Introduction", "level": 1},
        {"text": "1.2 Scope", "level": 2},
        {"text": "1.2.3. Limits", "level": 3},
        {"text": "2. Methods", "level": 1},
    ]


def test_a_sentence_ending_with_a_period_is_not_a_heading(tmp_path: Path) -> None:
    ctx = _parse_txt("This short line is a sentence.\n\nALL CAPS SENTENCE.\n", tmp_path)
    assert headings_of(ctx) == []
    assert [r.row_type for r in ctx.rows] == [RowType.PARAGRAPH, RowType.PARAGRAPH]


def test_numbers_that_start_a_sentence_are_not_headings(tmp_path: Path) -> None:
    ctx = _parse_txt("2024 was a good year\n\n1.5 million ducks\n", tmp_path)
    assert headings_of(ctx) == []


def test_all_caps_standalone_line_is_a_heading(tmp_path: Path) -> None:
    ctx = _parse_txt("SUMMARY OF RESULTS\n\nWe found ducks.\n", tmp_path)
    assert headings_of(ctx) == [{"text": "SUMMARY OF RESULTS", "level": 1}]


def test_setext_underlines_give_levels_one_and_two(tmp_path: Path) -> None:
    ctx = _parse_txt("Title\n=====\n\nSection\n-------\nBody under it.\n", tmp_path)
    assert headings_of(ctx) == [{"text": "Title", "level": 1}, {"text": "Section", "level": 2}]
    assert ctx.rows[-1].text == "Body under it."


def test_long_line_is_not_a_heading(tmp_path: Path) -> None:
    ctx = _parse_txt("A" * 81 + "\n", tmp_path)
    assert headings_of(ctx) == []


def test_paragraph_lines_are_joined_with_spaces(tmp_path: Path) -> None:
    ctx = _parse_txt("first line\nsecond line\n\nnext para\n", tmp_path)
    assert [(r.text, r.source_location) for r in ctx.rows] == [
        ("first line second line", "lines 1-2"),
        ("next para", "lines 4-4"),
    ]


def test_list_lines_become_list_items(tmp_path: Path) -> None:
    ctx = _parse_txt("- apple\n- banana\n  bread\n* cherry\n1. one\n", tmp_path)
    assert [(r.row_type, r.text) for r in ctx.rows] == [
        (RowType.LIST_ITEM, "apple"),
        (RowType.LIST_ITEM, "banana bread"),
        (RowType.LIST_ITEM, "cherry"),
        (RowType.LIST_ITEM, "one"),
    ]


def test_bare_urls_become_links(tmp_path: Path) -> None:
    ctx = _parse_txt("See https://example.org/a. Thanks\n", tmp_path)
    link = ctx.rows[0].links[0]
    assert ctx.rows[0].text[link.start : link.end] == "https://example.org/a"


def test_cp1252_text_decodes_with_a_diagnostic(tmp_path: Path) -> None:
    ctx = _parse_txt("Café “crème” – 5 €\n".encode("cp1252"), tmp_path)
    assert [r.text for r in ctx.rows] == ["Café “crème” – 5 €"]
    assert [(d.code, d.level) for d in ctx.diagnostics.items] == [("encoding.fallback", "warning")]


def test_utf8_bom_is_stripped(tmp_path: Path) -> None:
    ctx = _parse_txt(b"\xef\xbb\xbfHello duck\n", tmp_path)
    assert [r.text for r in ctx.rows] == ["Hello duck"]
    assert ctx.diagnostics.items == []


def test_utf16_with_bom_decodes(tmp_path: Path) -> None:
    ctx = _parse_txt("Ente und Bär\r\n\r\nzweiter Absatz\r\n".encode("utf-16"), tmp_path)
    assert [r.text for r in ctx.rows] == ["Ente und Bär", "zweiter Absatz"]


def test_binary_input_emits_nothing_and_a_diagnostic(tmp_path: Path) -> None:
    ctx = _parse_txt(bytes(range(256)) * 4, tmp_path)
    assert ctx.rows == []
    assert [d.code for d in ctx.diagnostics.items] == ["encoding.undecodable"]


def test_empty_input_emits_nothing_and_a_diagnostic(tmp_path: Path) -> None:
    ctx = _parse_txt("\n \n\t\n", tmp_path)
    assert ctx.rows == []
    assert [d.code for d in ctx.diagnostics.items] == ["document.empty"]


def test_an_opening_title_line_becomes_the_parent_of_numbered_sections(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(
        "FIELD NOTES\n\n1. Site\n\nThe north shore.\n\n1.1 Access\n\nBy boat.\n\n2. Species\n\nMallards.\n"
    )
    ctx = run_parser(parse_text, path, tmp_path / "work", FileFormat.TEXT)
    levels = [(r.text, r.heading_level) for r in ctx.rows if r.row_type is RowType.HEADING]
    assert levels == [("FIELD NOTES", 1), ("1. Site", 2), ("1.1 Access", 3), ("2. Species", 2)]
