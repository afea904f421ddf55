"""Search contracts shared by the publisher, the query service library, the CLI and HTTP."""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Annotated, Literal
from urllib.parse import quote

from pydantic import AfterValidator, Field, field_validator, model_validator

from corpus_pipeline.contracts.artifacts import ChunkType
from corpus_pipeline.contracts.base import Contract, SectionId

CHANNELS = (
    "path",
    "content",
    "term",
    "document",
    "page",
    "part",
    "statement",
    "dense",
    "rerank",
)
# The document channel (the best chunks of the documents whose file name, title and opening page
# match the query's names) speaks only when a query names a dated document (a quarter, or "the
# latest" of a series: `query_service.snapshot.documents.named_documents`); its weight, like the page
# channel's (the chunks printed on a page the question names, "on page 28") and the part
# channel's (the chunks of a numbered part it names, "Appendix E", "Figure 1"), is the real-world
# set's choice, checked against the development questions (README: the sweep on both). The
# statement channel (the primary financial statements a measure the question asks about is
# computed from: "quick ratio" → the balance sheet) speaks only for such questions.
DEFAULT_WEIGHTS: dict[str, float] = {
    "path": 1.0,
    "content": 2.0,
    "term": 1.5,
    "document": 2.0,
    "page": 3.0,
    "part": 2.0,
    "statement": 4.0,
    "dense": 0.0,
    "rerank": 1.5,
}
RRF_K = 60


class RevisionPointer(Contract):
    """What a published revision consists of; the namespace's CURRENT file holds one."""

    namespace: str
    revision: int = Field(ge=1)
    created_at: datetime
    tantivy_dir: str = Field(
        description="Index directory of this revision, relative to the namespace folder."
    )
    lance_versions: dict[str, int] = Field(
        description="LanceDB table name → version of this revision."
    )
    documents: int = Field(ge=0)
    chunks: int = Field(ge=0, description="Unique chunks (after cross-document dedupe).")


class RevisionFile(Contract):
    """One file of a published revision as mirrored in the object store."""

    path: str = Field(description="Where the file lives below the namespace folder on disk.")
    key: str = Field(description="Its object key below the namespace's remote folder.")
    size: int = Field(ge=0, description="Bytes; a download of another size is refused.")
    mutable: bool = Field(
        default=False, description="Rewritten in place by its writer (always re-copied)."
    )


class RevisionFiles(Contract):
    """Every file a replica needs to open one revision (written before the remote CURRENT)."""

    namespace: str
    revision: int = Field(ge=1)
    files: list[RevisionFile]


def _query_has_text(value: str) -> str:
    if not value.strip():
        raise ValueError("query must contain text")
    return value


def _types_not_empty(value: list[ChunkType]) -> list[ChunkType]:
    if not value:
        raise ValueError("chunk_types must not be empty")
    return value


_FISCAL_PERIOD = re.compile(r"(?:19|20)\d{2}(?:[qQ][1-4])?")
QueryText = Annotated[str, Field(min_length=1, max_length=4096), AfterValidator(_query_has_text)]
ChunkTypes = Annotated[list[ChunkType], AfterValidator(_types_not_empty)]

# Bounds of every list and string a search request may carry: a request's size (and the work
# and memory it costs) is bounded by its model, refused with 422 before any search runs.
MAX_FILTER_VALUES = 100  # values of one filter field
MAX_FILTER_VALUE_CHARS = 512  # characters of one filter value (a path prefix, an issuer, …)
MAX_ID_CHARS = 200  # a document or chunk id
MAX_DOCUMENT_IDS = 1000  # document ids in `filters.document_ids` or `exclude_document_ids`
MAX_SECTION_PATHS = 100  # section paths excluded
MAX_PATH_DEPTH = 32  # headings in one section path
FilterValue = Annotated[str, Field(max_length=MAX_FILTER_VALUE_CHARS)]
DocumentId = Annotated[str, Field(max_length=MAX_ID_CHARS)]
_FilterList = Annotated[list[FilterValue], Field(max_length=MAX_FILTER_VALUES)] | None
DocumentIds = Annotated[list[DocumentId], Field(max_length=MAX_DOCUMENT_IDS)]
SectionPaths = Annotated[
    list[Annotated[list[FilterValue], Field(max_length=MAX_PATH_DEPTH)]],
    Field(max_length=MAX_SECTION_PATHS),
]


class SearchFilters(Contract):
    """OR within one field, AND across fields. A place whose document has no value for a
    filtered field never matches. An empty list is an error, never 'match everything'."""

    document_type: _FilterList = Field(
        default=None, min_length=1, description="Parsed formats, e.g. docx, pdf."
    )
    source: _FilterList = Field(
        default=None, min_length=1, description="How files arrived: upload, s3, folder, cli."
    )
    organizational_unit: _FilterList = Field(
        default=None, min_length=1, description="Free text set at ingest."
    )
    date_from: date | None = Field(
        default=None, description="Inclusive, over the document's own date."
    )
    date_to: date | None = Field(
        default=None, description="Inclusive, over the document's own date."
    )
    document_ids: DocumentIds | None = Field(default=None, min_length=1)
    path_prefix: _FilterList = Field(
        default=None, min_length=1, description="Prefixes of the source file path."
    )
    entity: _FilterList = Field(
        default=None,
        min_length=1,
        description="The issuer a document reports on, by name or ticker (e.g. 'Apple Inc.', "
        "'AAPL').",
    )
    form_type: _FilterList = Field(
        default=None, min_length=1, description="'10-Q', '10-K', 'annual report', …"
    )
    fiscal_period: _FilterList = Field(
        default=None,
        min_length=1,
        description="Fiscal years and quarters, e.g. '2023' or '2023Q1'.",
    )

    @model_validator(mode="after")
    def _ordered_dates(self) -> SearchFilters:
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise ValueError("date_from must not be after date_to")
        return self

    @field_validator(
        "document_type",
        "source",
        "organizational_unit",
        "document_ids",
        "path_prefix",
        "entity",
        "form_type",
    )
    @classmethod
    def _non_blank(cls, value: _FilterList) -> _FilterList:
        if value is not None and any(not v.strip() for v in value):
            raise ValueError("filter values must not be blank")
        return value

    @field_validator("fiscal_period")
    @classmethod
    def _periods(cls, value: _FilterList) -> _FilterList:
        if value is not None and not all(_FISCAL_PERIOD.fullmatch(v.strip()) for v in value):
            raise ValueError("fiscal periods are a year or a year and quarter: '2023', '2023Q1'")
        return value

    def is_empty(self) -> bool:
        return all(getattr(self, name) is None for name in type(self).model_fields)


class SearchRequest(Contract):
    mode: Literal["classic"] = Field(default="classic", description="Retrieval mode.")
    query: QueryText
    namespace: str = Field(default="default", pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    top_k: int = Field(default=10, ge=1, le=200)
    chunk_types: ChunkTypes = Field(default_factory=lambda: list(ChunkType))
    exclude_document_ids: DocumentIds = Field(default_factory=list)
    exclude_section_paths: SectionPaths = Field(
        default_factory=list, description="Section paths (heading titles from the root)."
    )
    filters: SearchFilters = Field(default_factory=SearchFilters)
    weights: dict[str, float] | None = Field(
        default=None,
        description="Channel weights; default path 1, content 2, term 1.5, document 2 (only "
        "for a question that names a dated document, or an issuer with a period, a measure or a "
        "report), page 3 (only for a question that names a page), part 2 (only for a question "
        "that names a numbered part: 'Appendix E', 'Figure 1'), statement 4 (only for a "
        "question about a financial measure or statement: the statements it is computed from), "
        "dense 0 (off; used only when the revision holds vectors), rerank 1.5 (the fused "
        "lexical top 30 reordered by vector similarity to the query; only when the revision "
        "holds vectors).",
    )

    @field_validator("weights")
    @classmethod
    def _known_channels(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        if value is not None:
            unknown = set(value) - set(CHANNELS)
            if unknown:
                raise ValueError(f"unknown channels {sorted(unknown)}; known: {list(CHANNELS)}")
            if any(not math.isfinite(w) or w < 0 for w in value.values()):
                raise ValueError("weights must be finite and >= 0")
        return value


class Location(Contract):
    """One place where a chunk's content occurs."""

    document_id: str
    source_file_name: str
    section_path: list[str]
    section_id: SectionId = None
    pages: list[int] = Field(default_factory=list)


def resource_url(namespace: str, document_id: str, ref: str) -> str:
    """The service-relative download path of a resource (the namespace is always named, so the
    URL works as given for any namespace)."""
    return (
        f"/v1/documents/{quote(document_id, safe='')}/resources/{quote(ref, safe='/')}"
        f"?namespace={quote(namespace, safe='')}"
    )


class Resource(Contract):
    """A table or image of a result, addressed by its document and relative ref — never by a
    server path, which a remote agent could not open and which would reveal the server layout."""

    kind: Literal["table", "image"]
    document_id: str = Field(description="The document whose published resources hold it.")
    ref: str = Field(
        description="Path relative to the document, e.g. images/<phash>.png, tables/table-0001.html."
    )
    url: str = Field(
        description="Service-relative download path: "
        "/v1/documents/{document_id}/resources/{ref}?namespace={namespace}."
    )
    html: str | None = Field(default=None, description="Table HTML with rowspan/colspan.")
    description: str | None = None

    @field_validator("ref")
    @classmethod
    def _relative(cls, value: str) -> str:
        if not is_relative_ref(value):
            raise ValueError("ref must be a relative path inside the document")
        return value


def is_relative_ref(ref: str) -> bool:
    """True for a plain relative path (`images/x.png`): no root, drive, backslash, empty or dot
    segment — the only shape a resource ref may take anywhere."""
    parts = ref.split("/")
    return (
        bool(ref)
        and "\\" not in ref
        and ":" not in parts[0]
        and all(part not in ("", ".", "..") for part in parts)
    )


class CitedChunk(Contract):
    """A chunk a search returns and where it stands: the fields every kind of result opens with."""

    content: str
    chunk_type: ChunkType
    document_id: str
    chunk_id: str
    source_file_name: str
    section_path: list[str]
    section_id: SectionId = None
    pages: list[int]


class SearchResult(CitedChunk):
    score: float = Field(description="Fused discovery score (weighted reciprocal rank fusion).")
    channels: dict[str, int] = Field(
        default_factory=dict, description="Channel → 0-based rank where it ranked."
    )
    occurrences: list[Location] = Field(
        description="Every document and section where this content occurs."
    )
    resource: Resource | None = None


class SearchResponse(Contract):
    query: str
    namespace: str
    revision: int
    mode: Literal["classic"] = "classic"
    small_corpus: bool = Field(
        description="True when the namespace held no more chunks than top_k."
    )
    took_ms: float
    corrections: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Query words found in no chunk, searched as the store's word one edit away "
            "(misspelt → searched)."
        ),
    )
    results: list[SearchResult]
