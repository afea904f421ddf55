"""The document profile: computed once at the entry point, read by every later stage."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class FileFormat(StrEnum):
    """Formats sniffed from the bytes (never trusted from the extension alone)."""

    PDF = "pdf"
    DOCX = "docx"
    PPTX = "pptx"
    XLSX = "xlsx"
    XLS = "xls"
    ODS = "ods"
    MARKDOWN = "markdown"
    TEXT = "text"
    HTML = "html"
    IMAGE = "image"
    SEGMENTS_JSON = "segments_json"
    UNKNOWN = "unknown"


class RoutingDecision(BaseModel):
    """Which parser strategy runs, and the evidence for it."""

    model_config = ConfigDict(frozen=True)

    strategy: str = Field(description="Parser strategy name, e.g. 'docx', 'markdown'.")
    reason: str = Field(description="Human-readable evidence for the choice.")


class DocumentProfile(BaseModel):
    """Cheap structural facts about a file, gathered before parsing."""

    model_config = ConfigDict(frozen=True)

    format: FileFormat
    media_type: str
    extension: str = Field(description="Lower-case extension of the delivered name ('' if none).")
    size_bytes: int = Field(ge=0)
    sha256: str
    page_count: int | None = Field(
        default=None, description="Pages/slides/sheets where the format has them."
    )
    paragraph_count: int | None = None
    char_count: int | None = None
    heading_count: int | None = Field(
        default=None, description="Headings visible without full parsing."
    )
    table_count: int | None = None
    image_count: int | None = None
    language: str | None = Field(default=None, description="ISO 639-1 guess from a text sample.")
    has_embedded_toc: bool = False
    routing: RoutingDecision
