"""HTTP/MCP response and request contracts of the query service (beyond search itself)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import Field, field_validator, model_validator

from corpus_pipeline.contracts.artifacts import ChunkType, DocNav, Manifest
from corpus_pipeline.contracts.base import Contract, SectionId
from corpus_pipeline.contracts.search import MAX_PATH_DEPTH, FilterValue, Resource

NAMESPACE_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"


class DocumentSummary(Contract):
    document_id: str
    namespace: str
    source_file_name: str
    title: str
    format: str
    status: str
    active_revision: int
    chunk_count: int
    source_kind: str
    organizational_unit: str | None = None
    document_date: date | None = None
    entity: str | None = Field(default=None, description="The issuer it reports on.")
    tickers: list[str] = Field(default_factory=list)
    form_type: str | None = Field(default=None, description="'10-Q', 'annual report', …")
    period_end: date | None = Field(default=None, description="End of its reporting period.")
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    created_at: datetime
    updated_at: datetime


class DocumentList(Contract):
    namespace: str
    revision: int
    total: int
    offset: int
    limit: int
    items: list[DocumentSummary]


class DocumentDetail(Contract):
    revision: int
    document: DocumentSummary
    manifest: Manifest
    nav: DocNav


class OutlineSection(Contract):
    section_id: str
    title: str
    path: list[str]
    level: int
    summary: str
    children: list[OutlineSection] = Field(default_factory=list)


class Outline(Contract):
    revision: int
    document_id: str
    title: str
    source_file_name: str
    sections: list[OutlineSection]


class ReadRef(Contract):
    """Either a chunk id, or a section: document id plus the section's id (exactly one section,
    from the outline or a result) or its heading path from the root (every section with that
    path: titles may repeat)."""

    chunk_id: str | None = Field(default=None, max_length=64)
    document_id: str | None = Field(default=None, max_length=200)
    section_id: str | None = Field(default=None, pattern=r"^s[0-9]{1,9}$")
    section_path: list[FilterValue] | None = Field(default=None, max_length=MAX_PATH_DEPTH)

    @model_validator(mode="after")
    def _one_kind(self) -> ReadRef:
        if (self.chunk_id is None) == (self.document_id is None):
            raise ValueError(
                "give either chunk_id, or document_id with an optional section_id or section_path"
            )
        if self.chunk_id is not None and (
            self.section_path is not None or self.section_id is not None
        ):
            raise ValueError("section_id/section_path go with document_id, not with chunk_id")
        if self.section_id is not None and self.section_path is not None:
            raise ValueError("give section_id or section_path, not both")
        return self


MAX_READ_CHUNKS = 1000  # chunks one read answers with, over all its refs


class ReadRequest(Contract):
    """Refs read in order; a ref given twice is read once. One answer holds at most
    MAX_READ_CHUNKS chunks: the refs past it answer `truncated` (ask for them again)."""

    namespace: str = Field(default="default", pattern=NAMESPACE_PATTERN)
    refs: list[ReadRef] = Field(min_length=1, max_length=100)
    max_chunks_per_ref: int = Field(default=50, ge=1, le=500)

    @field_validator("refs")
    @classmethod
    def _once_each(cls, refs: list[ReadRef]) -> list[ReadRef]:
        return list({ref.model_dump_json(): ref for ref in refs}.values())


class ReadChunk(Contract):
    chunk_id: str
    chunk_type: ChunkType
    document_id: str
    source_file_name: str
    section_path: list[str]
    section_id: SectionId = None
    pages: list[int]
    content: str = Field(
        description="Content with embedded tables (HTML) and images rendered in place."
    )
    resources: list[Resource] = Field(
        default_factory=list, description="Resources embedded in this chunk."
    )


class ReadItem(Contract):
    ref: ReadRef
    status: Literal["ok", "not_found"]
    message: str | None = None
    truncated: bool = False
    chunks: list[ReadChunk] = Field(default_factory=list)


class ReadResponse(Contract):
    namespace: str
    revision: int
    items: list[ReadItem]


class Neighbor(Contract):
    document_id: str
    title: str
    source_file_name: str
    relation: str
    score: float
    shared_keywords: list[str]


class Neighbors(Contract):
    revision: int
    document_id: str
    neighbors: list[Neighbor]


class NamespaceInfo(Contract):
    namespace: str
    revision: int
    documents: int
    chunks: int
    published_at: datetime


class Namespaces(Contract):
    namespaces: list[NamespaceInfo]


class FilterValues(Contract):
    namespace: str
    revision: int
    document_type: list[str]
    source: list[str]
    organizational_unit: list[str]
    date_min: date | None
    date_max: date | None
    path_prefix: list[str] = Field(description="Top-level folders of the source paths.")
    entity: list[str] = Field(default_factory=list, description="Issuers and their tickers.")
    form_type: list[str] = Field(default_factory=list)
    fiscal_period: list[str] = Field(
        default_factory=list, description="Fiscal years and quarters: '2023', '2023Q1'."
    )


class NamespaceCache(Contract):
    """One namespace's share of the answer cache."""

    namespace: str
    entries: int = 0
    bytes: int = 0
    hits: int = 0
    misses: int = 0


class CacheStats(Contract):
    """The answer cache of the server process that answered (each process has its own), for
    the namespaces the key may read only."""

    namespaces: list[NamespaceCache]
    max_entries: int
    max_bytes: int


class Health(Contract):
    """Ok or not, nothing else: anyone may ask."""

    status: Literal["ok", "loading"]


class ErrorBody(Contract):
    detail: str
    field: str | None = None
