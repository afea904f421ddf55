"""Raw segment JSON strategy: a document already segmented elsewhere, imported as rows.

The file is validated against `ImportedSegment` as a whole before anything is emitted, so a
bad segment refuses the file with its position and field named (`segments[3].type: …`) and
nothing half-imported is stored. Headings give the hierarchy; a file without heading segments
gets one where `section_path` changes. Tables must be HTML (spans kept); images need their
bytes (`data`), otherwise their text stays as a caption with a warning.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from lxml import etree
from lxml import html as lxml_html
from pydantic import TypeAdapter, ValidationError

from corpus_pipeline.common.errors import CorruptDocumentError, InvalidInputError
from corpus_pipeline.contracts import RowType
from corpus_pipeline.contracts.rows import ImportedSegment
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.html import decode_data_uri
from corpus_pipeline.parsing.html_tables import table_grid_from_element
from corpus_pipeline.parsing.text import read_source_text

_SEGMENTS = TypeAdapter(list[ImportedSegment])


def load_segments(text: str) -> list[ImportedSegment]:
    """The validated segments of a file, or an error naming the first bad field."""
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptDocumentError("segments_json", f"not valid JSON ({exc.msg})") from exc
    prefix = "segments"
    items = value.get("segments") if isinstance(value, dict) else value
    if not isinstance(items, list) or not items:
        raise InvalidInputError("segments", "expected a non-empty list of segments")
    try:
        return _SEGMENTS.validate_python(items)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = error.get("loc", ())
        index = f"[{loc[0]}]" if loc and isinstance(loc[0], int) else ""
        field = ".".join(str(p) for p in loc[1:]) if index else ".".join(map(str, loc))
        where = f"{prefix}{index}" + (f".{field}" if field else "")
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        raise InvalidInputError(where, message) from exc


def parse_segments(ctx: ParseContext) -> None:
    text = read_source_text(ctx, "segment JSON")
    if text is None:
        return
    segments = load_segments(text)
    synthesize = not any(s.row_type is RowType.HEADING for s in segments)
    open_path: list[str] = []
    for index, segment in enumerate(segments):
        where = f"segments[{index}]"
        pages = segment.page_numbers
        if synthesize and segment.section_path is not None:
            path = [" ".join(p.split()) for p in segment.section_path if p.strip()]
            common = 0
            while common < min(len(path), len(open_path)) and path[common] == open_path[common]:
                common += 1
            for depth in range(common, len(path)):
                ctx.emit(
                    RowType.HEADING,
                    path[depth],
                    f"{where}.section_path",
                    heading_level=depth + 1,
                    page_numbers=pages,
                )
            open_path = path
        _emit(ctx, segment, where)


def _emit(ctx: ParseContext, segment: ImportedSegment, where: str) -> None:
    content = segment.content.strip()
    pages = segment.page_numbers
    kind = segment.row_type
    if kind is RowType.TABLE:
        markup = segment.html or (content if content.lower().startswith("<table") else None)
        table = _table_element(markup) if markup else None
        if table is not None:
            ctx.emit_table(table_grid_from_element(table), where, page_numbers=pages)
            return
        ctx.diagnostics.add("parse", "table.not_html", f"{where}: table kept as text (no HTML)")
        kind = RowType.PARAGRAPH
    elif kind is RowType.IMAGE:
        data = _image_bytes(segment.data)
        row = ctx.emit_image(data, content, where, page_numbers=pages) if data else None
        if row is not None:
            return
        ctx.diagnostics.add("parse", "image.missing_data", f"{where}: no image bytes; text kept")
        kind = RowType.CAPTION
    if content:
        level = (segment.level or 1) if kind is RowType.HEADING else None
        ctx.emit(kind, content, where, heading_level=level, page_numbers=pages)


def _table_element(markup: str) -> Any:
    try:
        fragment = lxml_html.fragment_fromstring(markup, create_parent="div")
    except (etree.ParserError, ValueError):
        return None
    tables = fragment.xpath(".//table")
    return tables[0] if tables else None


def _image_bytes(data: str | None) -> bytes | None:
    if not data:
        return None
    if data.lower().startswith("data:"):
        return decode_data_uri(data)
    try:
        return base64.b64decode("".join(data.split()), validate=True)
    except (binascii.Error, ValueError):
        return None
