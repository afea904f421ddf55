"""What a deployment can parse (`GET /v1/supported-formats`, `corpus formats --json`): one entry
per parser strategy with what it keeps, and whether the external programs some of them need
(LibreOffice, Tesseract) are installed here. Built by `corpus_pipeline.parsing.formats`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from corpus_pipeline.contracts.base import Contract
from corpus_pipeline.contracts.profile import FileFormat

Tool = Literal["libreoffice", "tesseract"]


class ToolStatus(Contract):
    """An external program some formats or features need, and whether this deployment has it."""

    tool: Tool
    available: bool
    enables: str = Field(description="What it is needed for.")
    detail: str = Field(description="How it was found, or how to install it.")


class FormatSupport(Contract):
    """One parser strategy: the files it reads and what of their structure it keeps. (Fields
    that may be null have a default: the OpenAPI document's examples leave nulls out.)"""

    format: FileFormat = Field(description="The format sniffed from the bytes.")
    strategy: str = Field(description="The parser strategy (`profile.routing.strategy`).")
    name: str = Field(description="What people call these files.")
    extensions: list[str] = Field(description="File name extensions, without the dot.")
    media_types: list[str] = Field(description="Media types the sniffer gives these files.")
    headings: str | None = Field(
        default=None, description="Where headings come from; null when the format has none."
    )
    tables: bool = Field(description="Tables are kept as tables (HTML).")
    table_spans: bool = Field(description="Merged cells are kept as rowspan/colspan.")
    images: bool = Field(description="Pictures are stored as image chunks.")
    ocr: bool | None = Field(
        default=None,
        description="Text is read from scans and pictures (needs Tesseract): true when on here, "
        "false when off, null for a format without OCR.",
    )
    requires: Tool | None = Field(
        default=None,
        description="An external program without which such files cannot be parsed at all.",
    )
    available: bool = Field(description="Files of this kind are accepted and parsed here.")
    reason: str | None = Field(
        default=None, description="Why they are not, or what is off (OCR without Tesseract)."
    )
    notes: str = ""


class ContainerSupport(Contract):
    """A file accepted at the door that is never parsed as one: it is split into documents."""

    name: str
    extensions: list[str]
    becomes: str = Field(description="The documents it is split into.")


class SupportedFormats(Contract):
    """Exactly what this deployment can parse, as of the request."""

    tools: list[ToolStatus]
    formats: list[FormatSupport]
    containers: list[ContainerSupport]
