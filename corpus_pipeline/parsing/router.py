"""Routing: the parser strategy for a profiled file, and the one typed parse entry point."""

from __future__ import annotations

from corpus_pipeline.common.errors import UnsupportedFormatError
from corpus_pipeline.contracts import DocumentProfile, FileFormat, RoutingDecision
from corpus_pipeline.parsing import formats
from corpus_pipeline.parsing.base import Parser

# The strategies, from the registry (`parsing.formats`): `parser_for` dispatches exactly these
# (a test pins it), and what `GET /v1/supported-formats` lists is what is parsed.
STRATEGIES = formats.STRATEGIES


def route(profile: DocumentProfile, evidence: str) -> RoutingDecision:
    """Pick a strategy from the sniffed format and the profile's structural evidence."""
    fmt = profile.format
    if fmt is FileFormat.TEXT and (profile.heading_count or 0) >= 2:
        return RoutingDecision(strategy="markdown", reason=f"{evidence}; Markdown headings found")
    if fmt is FileFormat.PDF:
        category = profile.pdf.category if profile.pdf is not None else "general"
        return RoutingDecision(strategy="pdf", reason=f"{evidence}; PDF category {category}")
    if profile.needs_conversion:  # parsed after LibreOffice converts it (`parsing.legacy`)
        strategy = "xls_legacy" if fmt is FileFormat.XLS else fmt.value
        return RoutingDecision(strategy=strategy, reason=f"{evidence}; converted by LibreOffice")
    if fmt.value in STRATEGIES:
        return RoutingDecision(strategy=fmt.value, reason=evidence)
    return RoutingDecision(strategy="unsupported", reason=f"{evidence}; not a document format")


def parser_for(profile: DocumentProfile) -> Parser:
    """The strategy function for a profile, or an error that names the format."""
    # Each format's module is imported here, on first use: its libraries load only when a file
    # of that format is parsed.
    match profile.routing.strategy:
        case "docx":
            from corpus_pipeline.parsing.docx import parse_docx

            return parse_docx
        case "html":
            from corpus_pipeline.parsing.html import parse_html

            return parse_html
        case "markdown":
            from corpus_pipeline.parsing.markdown import parse_markdown

            return parse_markdown
        case "text":
            from corpus_pipeline.parsing.text import parse_text

            return parse_text
        case "pdf":
            from corpus_pipeline.parsing.pdf import parse_pdf

            return parse_pdf
        case "xlsx":
            from corpus_pipeline.parsing.xlsx import parse_xlsx

            return parse_xlsx
        case "xls":
            from corpus_pipeline.parsing.xlsx import parse_xls

            return parse_xls
        case "ods":
            from corpus_pipeline.parsing.xlsx import parse_ods

            return parse_ods
        case "pptx":
            from corpus_pipeline.parsing.pptx import parse_pptx

            return parse_pptx
        case "image":
            from corpus_pipeline.parsing.image import parse_image

            return parse_image
        case "segments_json":
            from corpus_pipeline.parsing.segments import parse_segments

            return parse_segments
        case "doc" | "ppt" | "xls_legacy":
            from corpus_pipeline.parsing.legacy import parse_legacy

            return parse_legacy
        case "odt":
            from corpus_pipeline.parsing.odf import parse_odt

            return parse_odt
        case "odp":
            from corpus_pipeline.parsing.odf import parse_odp

            return parse_odp
        case "rtf":
            from corpus_pipeline.parsing.rtf import parse_rtf

            return parse_rtf
        case "epub":
            from corpus_pipeline.parsing.epub import parse_epub

            return parse_epub
        case "eml":
            from corpus_pipeline.parsing.email import parse_eml

            return parse_eml
        case "msg":
            from corpus_pipeline.parsing.email import parse_msg

            return parse_msg
        case "csv":
            from corpus_pipeline.parsing.csv_table import parse_csv

            return parse_csv
    raise UnsupportedFormatError(profile.format.value, profile.routing.reason)
