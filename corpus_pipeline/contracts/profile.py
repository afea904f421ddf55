"""The document profile: computed once at the entry point, read by every later stage."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field

from corpus_pipeline.contracts.base import FrozenModel


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
    ODT = "odt"
    ODP = "odp"
    RTF = "rtf"
    EPUB = "epub"
    EML = "eml"
    MSG = "msg"
    MBOX = "mbox"
    CSV = "csv"
    DOC = "doc"  # legacy Word (OLE2), converted by LibreOffice
    PPT = "ppt"  # legacy PowerPoint (OLE2), converted by LibreOffice
    UNKNOWN = "unknown"


class RoutingDecision(FrozenModel):
    """Which parser strategy runs, and the evidence for it."""

    strategy: str = Field(description="Parser strategy name, e.g. 'docx', 'markdown'.")
    reason: str = Field(description="Human-readable evidence for the choice.")


PdfCategory = Literal["general", "slides", "scan", "atlas"]


class PdfTocEntry(FrozenModel):
    """One entry of the embedded outline (bookmarks)."""

    level: int = Field(ge=1)
    title: str
    page: int = Field(description="1-based target page; 0 when the entry has no valid target.")
    y: float | None = Field(default=None, description="Target y (points from the top), if known.")


class PdfPageFacts(FrozenModel):
    """Cheap facts about one sampled page (only sampled pages are listed)."""

    page: int = Field(ge=1)
    width: float
    height: float
    chars: int = Field(ge=0, description="Characters in the text layer.")
    lines: int = Field(ge=0)
    max_font_size: float = 0.0
    image_coverage: float = Field(ge=0, description="Share of the page area covered by images.")
    columns: int = Field(default=1, ge=1)
    table_likely: bool = False


class PdfProfile(FrozenModel):
    """PDF-specific evidence: drives routing (`category`) and the parser's split plan."""

    page_count: int = Field(ge=0)
    encrypted: bool = False
    sampled_pages: int = Field(ge=0, description="Pages looked at (the rest are extrapolated).")
    text_coverage: float = Field(ge=0, le=1, description="Share of sampled pages with text.")
    toc: list[PdfTocEntry] = Field(default_factory=list, description="Capped at 2,000 entries.")
    toc_levels: int = Field(default=0, ge=0)
    fonts: dict[str, int] = Field(
        default_factory=dict, description="Font name → characters (top 20, sampled pages)."
    )
    font_sizes: dict[str, int] = Field(
        default_factory=dict, description="Rounded size (half points) → characters."
    )
    body_font_size: float | None = Field(
        default=None, description="Most frequent size by characters."
    )
    image_coverage: float = Field(default=0.0, ge=0, description="Mean over sampled pages.")
    landscape_share: float = Field(default=0.0, ge=0, le=1)
    slide_like_share: float = Field(default=0.0, ge=0, le=1)
    multi_column_pages: list[int] = Field(default_factory=list)
    table_pages: list[int] = Field(
        default_factory=list, description="Sampled pages where a table is likely."
    )
    pages: list[PdfPageFacts] = Field(default_factory=list, description="Sampled pages only.")
    category: PdfCategory = Field(
        default="general", description="Routing only: which PDF strategy reads the pages."
    )
    classification: str = Field(
        default="document",
        description="Open semantic kind (research paper, manual, ...); not used for routing.",
    )
    split_plan: list[tuple[int, int]] = Field(
        default_factory=list,
        description="1-based inclusive page ranges the parser processes one after another.",
    )
    ms_per_page: float = Field(default=0.0, ge=0, description="Profiling cost per sampled page.")


class DocumentProfile(FrozenModel):
    """Cheap structural facts about a file, gathered before parsing."""

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
    needs_conversion: bool = Field(
        default=False,
        description="No reader here opens the file as delivered (legacy Word or PowerPoint, an "
        ".xls xlrd cannot read): LibreOffice converts it before parsing.",
    )
    pdf: PdfProfile | None = Field(default=None, description="PDF facts (PDF files only).")
    routing: RoutingDecision
