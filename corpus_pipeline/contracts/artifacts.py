"""The fixed on-disk format of one document: chunks.json, doc_nav.json, manifest.json,
headings.json and diagnostics.json. JSON Schemas generated from these models are checked in
under `corpus_pipeline/contracts/schemas/` and a test fails when they drift.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import ConfigDict, Field

from corpus_pipeline.contracts.base import Contract
from corpus_pipeline.contracts.profile import DocumentProfile, FileFormat

SCHEMA_VERSION: Literal["1.0"] = "1.0"


class _Model(Contract):
    """A contract of the on-disk format: an aliased field may be given by its name too."""

    model_config = ConfigDict(populate_by_name=True)


class ChunkType(StrEnum):
    """The three segment types; nothing else is ever emitted."""

    TEXT = "text"
    IMAGE = "image"
    TABLE = "table"


class StatementType(StrEnum):
    """The primary financial statements of a filing or an annual report (US GAAP and IFRS
    names alike: a "statement of financial position" is a balance sheet)."""

    BALANCE_SHEET = "balance_sheet"
    INCOME = "income"
    COMPREHENSIVE_INCOME = "comprehensive_income"
    CASH_FLOW = "cash_flow"
    EQUITY = "equity"


def image_placeholder(stem: str) -> str:
    """The content of an image that has no text of its own (no alt text, caption, OCR or
    description): its stored file's name, so identical pictures share one chunk."""
    return f"{IMAGE_PLACEHOLDER_PREFIX}{stem}"


IMAGE_PLACEHOLDER_PREFIX = "Image "


def is_textless_image(chunk_type: str, content: str) -> bool:
    """An image chunk whose content is only its placeholder: nothing a reader can use, so it
    never outranks a text or table chunk."""
    return (
        chunk_type == ChunkType.IMAGE.value
        and content.startswith(IMAGE_PLACEHOLDER_PREFIX)
        and " " not in content[len(IMAGE_PLACEHOLDER_PREFIX) :].strip()
    )


class Relation(StrEnum):
    """`embeds`: the resource sits at `position` in the content; `related`: a plain link."""

    EMBEDS = "embeds"
    RELATED = "related"


class ConnectTo(_Model):
    """A connection from a chunk to a resource chunk or an external target."""

    target: str = Field(description="chunk_id of an embedded resource, or the link target.")
    relation: Relation
    ref: str = Field(description="Resource file path for `embeds`; link text for `related`.")
    position: tuple[int, int] = Field(
        description="[start, end) character span of the reference in content."
    )


_SECTION_ID = r"^s[0-9]+$"


class Occurrence(_Model):
    """One place where a chunk's content occurs in the document."""

    hierarchy_path: list[str] = Field(description="Heading titles from the root (for display).")
    section_id: str | None = Field(
        default=None,
        pattern=_SECTION_ID,
        description="The section it sits in (None before the first heading): its identity.",
    )
    order: int = Field(ge=0, description="Position of the chunk in document order.")
    page_nums: list[int] = Field(default_factory=list)


class ChunkMetadata(_Model):
    length: int = Field(ge=0, description="Characters in `content`.")
    summary: str
    page_nums: list[int] = Field(description="1-based page numbers; empty for flow formats.")
    tokens: int = Field(ge=0, description="Tokens of `content` (o200k_base).")
    keywords: list[str]
    file_path: str | None = Field(
        default=None, description="tables/*.html or images/* for resources."
    )
    order: int = Field(ge=0, description="Position of the first occurrence in document order.")
    connect_to: list[ConnectTo] = Field(default_factory=list)
    statement: StatementType | None = Field(
        default=None,
        description="The primary financial statement the chunk belongs to (its table, or the "
        "text printed with it), by the statement's title or its line items; None elsewhere.",
    )


class Chunk(_Model):
    """A typed segment. `chunk_id` hashes only the normalised text content (no references)."""

    chunk_id: str = Field(pattern=r"^c[0-9a-f]{32}$")
    chunk_type: ChunkType
    content: str
    hierarchy_path: list[str] = Field(
        description="Heading titles from the document root (first occurrence; for display)."
    )
    section_id: str | None = Field(
        default=None, pattern=_SECTION_ID, description="Section of the first occurrence."
    )
    metadata: ChunkMetadata
    occurrences: list[Occurrence] = Field(
        min_length=1, description="Every place this content occurs (identical text keeps one id)."
    )


class ChunksFile(_Model):
    schema_version: Literal["1.0"] = SCHEMA_VERSION
    document_id: str
    chunks: list[Chunk]


class SectionNode(_Model):
    section_id: str = Field(
        pattern=_SECTION_ID,
        description="Unique in the document (its heading's row order); titles may repeat.",
    )
    title: str
    path: list[str]
    level: int = Field(ge=1)
    summary: str
    chunk_count: int = Field(ge=0, description="Chunks directly in this section (not descendants).")
    children: list[SectionNode] = Field(default_factory=list)


class ResourceEntry(_Model):
    resource_id: str = Field(description="Position-unique id, e.g. table-0001 or image-0003.")
    kind: Literal["table", "image"]
    file_path: str
    chunk_id: str
    caption: str | None = None
    section_path: list[str]
    section_id: str | None = Field(default=None, pattern=_SECTION_ID)
    page_nums: list[int] = Field(default_factory=list)


class DocNav(_Model):
    schema_version: Literal["1.0"] = SCHEMA_VERSION
    document_id: str
    title: str
    root_chunk_count: int = Field(ge=0, description="Chunks before the first heading.")
    sections: list[SectionNode]
    resources: list[ResourceEntry]


class HierarchyNode(_Model):
    title: str
    level: int = Field(ge=1)
    children: list[HierarchyNode] = Field(default_factory=list)


class HeadingNode(_Model):
    """A heading as recovered, with where it came from; the full heading tree."""

    section_id: str = Field(pattern=_SECTION_ID, description="The section this heading opens.")
    title: str
    level: int = Field(ge=1)
    order: int = Field(ge=0, description="Row order of the heading in the parsed table.")
    path: list[str]
    page: int | None = None
    source_location: str
    children: list[HeadingNode] = Field(default_factory=list)


class HeadingsFile(_Model):
    schema_version: Literal["1.0"] = SCHEMA_VERSION
    document_id: str
    headings: list[HeadingNode]


class Diagnostic(_Model):
    """Something a stage could not do as asked. A part that failed (one image, one table, one
    page's text) is recorded here with what was lost, and the document goes on."""

    stage: Literal["ingest", "profile", "parse", "hierarchy", "chunks", "nav", "manifest"]
    level: Literal["info", "warning", "error"]
    code: str = Field(pattern=r"^[a-z0-9_.]+$")
    message: str = Field(description="In words, e.g. 'image on page 12 could not be decoded'.")
    page: int | None = Field(default=None, ge=1, description="1-based page (or slide/sheet).")
    lost: str | None = Field(
        default=None, description="What the document lost, e.g. 'image', 'table', 'page text'."
    )
    exception: str | None = Field(
        default=None, description="Class name of the library error behind it (no message)."
    )


class DiagnosticsFile(_Model):
    schema_version: Literal["1.0"] = SCHEMA_VERSION
    document_id: str
    diagnostics: list[Diagnostic]


class SourceInfo(_Model):
    source_file_name: str
    namespace: str
    object_key: str = Field(description="Key in the object store (never a URL with credentials).")
    archived_path: str = Field(
        description="Path of the archived copy inside the document directory."
    )
    sha256: str
    size_bytes: int
    media_type: str
    format: str
    source_kind: str
    organizational_unit: str | None = None
    document_date: str | None = None


class Statistics(_Model):
    chunks: int
    text_chunks: int
    table_chunks: int
    image_chunks: int
    sections: int
    headings: int
    tables: int
    images: int
    image_files: int = Field(description="Distinct stored image files after perceptual dedupe.")
    tokens: int
    characters: int
    rows: int
    pages: int | None = None
    pages_parsed: int | None = Field(
        default=None, description="Pages actually read (less than `pages` when cut by budget)."
    )
    truncated: bool = Field(default=False, description="The parse budget cut the document.")


class DocumentSubject(_Model):
    """What a document reports on and for when: the issuer and its tickers, the form, and the
    reporting period, as read from its cover, title, file name and statements (all optional:
    a manual has none of them). Search routes questions naming a company or a period here."""

    entity: str | None = Field(
        default=None, description="The issuer or organisation, e.g. 'Apple Inc.'."
    )
    tickers: list[str] = Field(default_factory=list, description="Trading symbols, e.g. AAPL.")
    form_type: str | None = Field(
        default=None, description="'10-Q', '10-K', '20-F', '8-K', 'annual report', …"
    )
    period_end: str | None = Field(
        default=None, description="ISO date the reporting period ends (the cover's)."
    )
    fiscal_year: int | None = Field(default=None, description="The issuer's fiscal year.")
    fiscal_quarter: int | None = Field(
        default=None, ge=1, le=4, description="The fiscal quarter of a quarterly report."
    )
    period_labels: list[str] = Field(
        default_factory=list,
        description="How the document names its period in its file name, title and running "
        "headers: quarters as '2022q3', years as '2022'.",
    )


class Conversion(_Model):
    """A file converted before it was parsed (a legacy Office file through LibreOffice): what
    read its content, so a surprise in the chunks can be traced to the converter."""

    tool: str = Field(description="The converter, e.g. 'LibreOffice'.")
    version: str | None = Field(default=None, description="The version the converter reports.")
    from_format: FileFormat = Field(description="The format as delivered, e.g. 'doc'.")
    to_format: FileFormat = Field(description="The format parsed, e.g. 'docx'.")
    seconds: float = Field(ge=0, description="Wall time of the conversion itself.")


class Manifest(_Model):
    schema_version: Literal["1.0"] = SCHEMA_VERSION
    document_id: str
    namespace: str
    source_file_name: str
    title: str
    document_date: str | None = Field(
        default=None,
        description="ISO date the document is filed under: the uploader's, else the one its "
        "file's metadata declares (see document_date_source).",
    )
    document_date_source: Literal["upload", "file"] | None = Field(
        default=None, description="Where document_date comes from."
    )
    source: SourceInfo
    profile: DocumentProfile
    parser: str = Field(description="Parser strategy that produced the rows.")
    conversion: Conversion | None = Field(
        default=None,
        description="How the file was converted before parsing (null: parsed as delivered).",
    )
    pipeline_version: str
    timings: dict[str, float] = Field(description="Seconds per stage.")
    statistics: Statistics
    page_labels: list[str] = Field(
        default_factory=list,
        description="The label printed on each physical page, in page order ('' where none; "
        "empty for formats without pages): the PDF's declared page labels, else the page "
        "numbers printed in its headers and footers.",
    )
    running_text: list[str] = Field(
        default_factory=list,
        description="The running headers and footers printed on the document's pages, without "
        "page numbers: how the document names itself on every page. Stripped from the chunks' "
        "text and indexed with every chunk instead.",
    )
    subject: DocumentSubject = Field(
        default_factory=DocumentSubject,
        description="Issuer, tickers, form and reporting period (empty when none is stated).",
    )
    files: dict[str, str] = Field(
        description="Relative path → sha256 of every file in the directory."
    )
    hierarchy: list[HierarchyNode] = Field(alias="HIERARCHY")
    diagnostics_count: dict[str, int]
