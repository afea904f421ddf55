"""The parsed table: one uniform typed row contract that every parser emits.

Rows are persisted as Parquet with the explicit Arrow schema below, so notebooks and later
stages read the same columns whatever the source format was.
"""

from __future__ import annotations

from enum import StrEnum

import pyarrow as pa
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from corpus_pipeline.contracts.base import FrozenModel


class RowType(StrEnum):
    """What a row is; the chunker decides segment types from this."""

    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST_ITEM = "list_item"
    TABLE = "table"
    IMAGE = "image"
    CAPTION = "caption"
    TOC = "toc"


class LinkSpan(FrozenModel):
    """A non-embedded link inside a row's text (becomes a `related` connection)."""

    start: int = Field(ge=0, description="Character offset of the link text in `text`.")
    end: int = Field(ge=0, description="End offset (exclusive).")
    target: str = Field(description="The link target as written in the source (URL or anchor).")


def trimmed_link(text: str, start: int, end: int, target: str) -> LinkSpan | None:
    """The link over `text[start:end]` without the whitespace at its ends; None when nothing
    but whitespace is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return LinkSpan(start=start, end=end, target=target) if end > start else None


class ParsedRow(FrozenModel):
    """One block of a document in reading order."""

    order: int = Field(ge=0, description="0-based position in reading order.")
    row_type: RowType
    text: str = Field(
        description="Plain text; for tables a row-wise rendition, for images alt text."
    )
    heading_level: int | None = Field(
        default=None, ge=1, le=9, description="1 = top level; only for headings."
    )
    hierarchy_path: list[str] = Field(
        default_factory=list, description="Heading titles from the document root to this row."
    )
    section_ids: list[str] = Field(
        default_factory=list,
        description=(
            "Ids of the open sections from the root (parallel to `hierarchy_path`): a section's "
            "identity, so two sibling sections with the same title stay two sections."
        ),
    )
    page_numbers: list[int] = Field(
        default_factory=list, description="1-based; empty for flow formats."
    )
    resource_path: str | None = Field(
        default=None,
        description="Job-local artifact path (tables/*.html, images/*) for tables and images.",
    )
    source_location: str = Field(
        description="Where the row came from (element path or line range)."
    )
    links: list[LinkSpan] = Field(default_factory=list)


PARSED_ROW_SCHEMA = pa.schema(
    [
        pa.field("order", pa.int32(), nullable=False),
        pa.field("row_type", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("heading_level", pa.int8(), nullable=True),
        pa.field("hierarchy_path", pa.list_(pa.string()), nullable=False),
        pa.field("section_ids", pa.list_(pa.string()), nullable=False),
        pa.field("page_numbers", pa.list_(pa.int32()), nullable=False),
        pa.field("resource_path", pa.string(), nullable=True),
        pa.field("source_location", pa.string(), nullable=False),
        pa.field(
            "links",
            pa.list_(
                pa.struct(
                    [
                        pa.field("start", pa.int32(), nullable=False),
                        pa.field("end", pa.int32(), nullable=False),
                        pa.field("target", pa.string(), nullable=False),
                    ]
                )
            ),
            nullable=False,
        ),
    ]
)


def rows_to_table(rows: list[ParsedRow]) -> pa.Table:
    """Rows → Arrow table with the contract schema (column order fixed)."""
    columns: dict[str, list[object]] = {name: [] for name in PARSED_ROW_SCHEMA.names}
    for row in rows:
        data = row.model_dump(mode="json")
        for name in PARSED_ROW_SCHEMA.names:
            columns[name].append(data[name])
    return pa.Table.from_pydict(columns, schema=PARSED_ROW_SCHEMA)


def table_to_rows(table: pa.Table) -> list[ParsedRow]:
    """Arrow table (as written by `rows_to_table`) → validated rows."""
    if table.schema.names != PARSED_ROW_SCHEMA.names:
        raise ValueError(
            f"parsed table columns {table.schema.names} do not match the contract "
            f"{PARSED_ROW_SCHEMA.names}"
        )
    return [ParsedRow.model_validate(record) for record in table.to_pylist()]


# -- raw segment JSON: documents segmented elsewhere -----------------------------------------

SEGMENT_TYPE_NAMES: dict[str, RowType] = {
    **dict.fromkeys(("heading", "title", "section_header", "header"), RowType.HEADING),
    **dict.fromkeys(("text", "paragraph", "narrative_text", "formula"), RowType.PARAGRAPH),
    **dict.fromkeys(("list_item", "list"), RowType.LIST_ITEM),
    "table": RowType.TABLE,
    **dict.fromkeys(("image", "picture", "figure"), RowType.IMAGE),
    "caption": RowType.CAPTION,
}


class ImportedSegment(BaseModel):
    """One segment of a document segmented elsewhere (the raw segment JSON import format).

    A file is a JSON list of these, or `{"segments": [...]}`. Headings give the hierarchy;
    without any heading segment, `section_path` does (headings are created where it changes).
    A table is HTML (`html`, or `content` starting with `<table`); an image carries its bytes
    as a data URI or base64 in `data`, and `content` is its caption or description."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    type: str = Field(
        description="heading/title, text/paragraph, list_item, table, image/picture/figure, caption"
    )
    content: str = Field(default="", validation_alias=AliasChoices("content", "text"))
    level: int | None = Field(default=None, ge=1, le=9, description="Heading level (1 = top).")
    section_path: list[str] | None = Field(
        default=None, validation_alias=AliasChoices("section_path", "hierarchy_path", "path")
    )
    page_numbers: list[int] = Field(
        default_factory=list, validation_alias=AliasChoices("page_numbers", "pages", "page")
    )
    html: str | None = Field(default=None, description="A table as HTML.")
    data: str | None = Field(default=None, description="Image bytes: a data URI or base64.")

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        name = value.strip().lower().replace("-", "_").replace(" ", "_")
        if name not in SEGMENT_TYPE_NAMES:
            known = ", ".join(sorted(SEGMENT_TYPE_NAMES))
            raise ValueError(f"unknown segment type {value!r} (known: {known})")
        return name

    @field_validator("page_numbers", mode="before")
    @classmethod
    def _pages(cls, value: object) -> object:
        return [value] if isinstance(value, int) else value

    @property
    def row_type(self) -> RowType:
        return SEGMENT_TYPE_NAMES[self.type]


class SegmentImportFile(BaseModel):
    """The object form of a raw segment JSON file."""

    segments: list[ImportedSegment] = Field(min_length=1)
