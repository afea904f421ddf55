"""Raw segment JSON: documents segmented elsewhere, imported as rows; bad files are refused
with the segment and field named."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from corpus_pipeline.common.errors import CorruptDocumentError, InvalidInputError
from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.segments import parse_segments
from corpus_pipeline.profiling import profile_source
from corpus_pipeline_tests.support import run_parser, tables_of


def _parse(tmp_path: Path, value: Any) -> ParseContext:
    path = tmp_path / "segments.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    return run_parser(parse_segments, path, tmp_path / "work", FileFormat.SEGMENTS_JSON)


def _rows(ctx: ParseContext) -> list[tuple[str, str, int | None]]:
    return [(r.row_type.value, r.text, r.heading_level) for r in ctx.rows]


def test_headings_text_and_html_tables_are_imported_in_order(tmp_path: Path) -> None:
    ctx = _parse(
        tmp_path,
        {
            "segments": [
                {"type": "title", "text": "Pond survey", "page": 1},
                {"type": "text", "content": "Tufted ducks dive for mussels.", "page": 1},
                {"type": "section_header", "text": "Counts", "level": 2, "pages": [2]},
                {
                    "type": "table",
                    "html": "<table><tr><th colspan='2'>2024</th></tr>"
                    "<tr><td>Teal</td><td>14</td></tr></table>",
                },
            ]
        },
    )
    assert _rows(ctx)[:3] == [
        ("heading", "Pond survey", 1),
        ("paragraph", "Tufted ducks dive for mussels.", None),
        ("heading", "Counts", 2),
    ]
    assert [r.page_numbers for r in ctx.rows[:3]] == [[1], [1], [2]]
    assert '<th colspan="2">2024</th>' in str(tables_of(ctx)[0]["html"])


def test_without_headings_the_section_paths_make_them(tmp_path: Path) -> None:
    ctx = _parse(
        tmp_path,
        [
            {"type": "text", "text": "Intro words.", "section_path": ["Report"]},
            {"type": "text", "text": "Diving.", "section_path": ["Report", "Ducks", "Diving"]},
            {"type": "list_item", "text": "Mallard", "section_path": ["Report", "Ducks", "Diving"]},
            {"type": "text", "text": "Geese graze.", "section_path": ["Report", "Geese"]},
        ],
    )
    assert _rows(ctx) == [
        ("heading", "Report", 1),
        ("paragraph", "Intro words.", None),
        ("heading", "Ducks", 2),
        ("heading", "Diving", 3),
        ("paragraph", "Diving.", None),
        ("list_item", "Mallard", None),
        ("heading", "Geese", 2),
        ("paragraph", "Geese graze.", None),
    ]


def test_an_image_with_bytes_is_stored_and_one_without_keeps_its_text(tmp_path: Path) -> None:
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), "olive").save(buf, format="PNG")
    encoded = base64.b64encode(buf.getvalue()).decode()
    ctx = _parse(
        tmp_path,
        [
            {"type": "picture", "content": "Map of the ponds", "data": encoded},
            {"type": "figure", "content": "Chart of counts"},
        ],
    )
    image = ctx.rows[0]
    assert image.row_type is RowType.IMAGE and image.text == "Map of the ponds"
    assert (tmp_path / "work" / str(image.resource_path)).is_file()
    assert _rows(ctx)[1] == ("caption", "Chart of counts", None)
    assert [d.code for d in ctx.diagnostics.items] == ["image.missing_data"]


def test_an_unknown_segment_type_is_refused_naming_the_segment(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError) as info:
        _parse(tmp_path, [{"type": "text", "text": "ok"}, {"type": "blob", "text": "?"}])
    assert info.value.field == "segments[1].type"
    assert "unknown segment type 'blob'" in str(info.value)


def test_a_bad_field_value_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError) as info:
        _parse(tmp_path, {"segments": [{"type": "heading", "text": "T", "level": 0}]})
    assert info.value.field == "segments[0].level"


def test_broken_json_is_refused_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "segments.json"
    path.write_text('[{"type": "text", "text": "unterminated', encoding="utf-8")
    with pytest.raises(CorruptDocumentError, match="not valid JSON"):
        run_parser(parse_segments, path, tmp_path / "work", FileFormat.SEGMENTS_JSON)


def test_a_segment_list_is_sniffed_and_routed_to_the_import(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps([{"type": "text", "text": "hello"}, {"type": "table"}]))
    profile = profile_source(path).profile
    assert profile.format is FileFormat.SEGMENTS_JSON
    assert profile.routing.strategy == "segments_json"
