"""Routing: the parser strategy for a profiled file, and the one typed parse entry point."""

from __future__ import annotations

from corpus_pipeline.contracts import DocumentProfile, FileFormat, RoutingDecision
from corpus_pipeline.errors import UnsupportedFormatError
from corpus_pipeline.parsing.base import Parser

_NOT_YET = {
    FileFormat.XLS: "legacy .xls parsing is not available yet (save the workbook as .xlsx)",
    FileFormat.ODS: "OpenDocument spreadsheet parsing is not available yet (save as .xlsx)",
    FileFormat.SEGMENTS_JSON: "raw segment JSON import is not available yet",
}


def route(profile: DocumentProfile, evidence: str) -> RoutingDecision:
    """Pick a strategy from the sniffed format and the profile's structural evidence."""
    fmt = profile.format
    if fmt is FileFormat.TEXT and (profile.heading_count or 0) >= 2:
        return RoutingDecision(strategy="markdown", reason=f"{evidence}; Markdown headings found")
    if fmt in (
        FileFormat.DOCX,
        FileFormat.HTML,
        FileFormat.MARKDOWN,
        FileFormat.TEXT,
        FileFormat.XLSX,
        FileFormat.PPTX,
        FileFormat.IMAGE,
    ):
        return RoutingDecision(strategy=fmt.value, reason=evidence)
    if fmt is FileFormat.PDF:
        category = profile.pdf.category if profile.pdf is not None else "general"
        return RoutingDecision(strategy="pdf", reason=f"{evidence}; PDF category {category}")
    if fmt in _NOT_YET:
        return RoutingDecision(strategy="unsupported", reason=f"{evidence}; {_NOT_YET[fmt]}")
    return RoutingDecision(strategy="unsupported", reason=f"{evidence}; not a document format")


def parser_for(profile: DocumentProfile) -> Parser:
    """The strategy function for a profile, or an error that names the format."""
    strategy = profile.routing.strategy
    if strategy == "docx":
        from corpus_pipeline.parsing.docx import parse_docx

        return parse_docx
    if strategy == "html":
        from corpus_pipeline.parsing.html import parse_html

        return parse_html
    if strategy == "markdown":
        from corpus_pipeline.parsing.markdown import parse_markdown

        return parse_markdown
    if strategy == "pdf":
        from corpus_pipeline.parsing.pdf import parse_pdf

        return parse_pdf
    if strategy == "image":
        from corpus_pipeline.parsing.image import parse_image

        return parse_image
    if strategy == "pptx":
        from corpus_pipeline.parsing.pptx import parse_pptx

        return parse_pptx
    if strategy == "xlsx":
        from corpus_pipeline.parsing.xlsx import parse_xlsx

        return parse_xlsx
    if strategy == "text":
        from corpus_pipeline.parsing.text import parse_text

        return parse_text
    detail = profile.routing.reason
    raise UnsupportedFormatError(profile.format.value, detail)
