"""Routing: the parser strategy for a profiled file, and the one typed parse entry point."""

from __future__ import annotations

import importlib

from corpus_pipeline.contracts import DocumentProfile, FileFormat, RoutingDecision
from corpus_pipeline.errors import UnsupportedFormatError
from corpus_pipeline.parsing.base import Parser

# Strategy → "module:function", imported on first use (a format's libraries load only when a
# file of that format is parsed).
_STRATEGIES = {
    "docx": "corpus_pipeline.parsing.docx:parse_docx",
    "html": "corpus_pipeline.parsing.html:parse_html",
    "markdown": "corpus_pipeline.parsing.markdown:parse_markdown",
    "text": "corpus_pipeline.parsing.text:parse_text",
    "pdf": "corpus_pipeline.parsing.pdf:parse_pdf",
    "xlsx": "corpus_pipeline.parsing.xlsx:parse_xlsx",
    "xls": "corpus_pipeline.parsing.xlsx:parse_xls",
    "ods": "corpus_pipeline.parsing.xlsx:parse_ods",
    "pptx": "corpus_pipeline.parsing.pptx:parse_pptx",
    "image": "corpus_pipeline.parsing.image:parse_image",
    "segments_json": "corpus_pipeline.parsing.segments:parse_segments",
}


def route(profile: DocumentProfile, evidence: str) -> RoutingDecision:
    """Pick a strategy from the sniffed format and the profile's structural evidence."""
    fmt = profile.format
    if fmt is FileFormat.TEXT and (profile.heading_count or 0) >= 2:
        return RoutingDecision(strategy="markdown", reason=f"{evidence}; Markdown headings found")
    if fmt is FileFormat.PDF:
        category = profile.pdf.category if profile.pdf is not None else "general"
        return RoutingDecision(strategy="pdf", reason=f"{evidence}; PDF category {category}")
    if fmt.value in _STRATEGIES:
        return RoutingDecision(strategy=fmt.value, reason=evidence)
    return RoutingDecision(strategy="unsupported", reason=f"{evidence}; not a document format")


def parser_for(profile: DocumentProfile) -> Parser:
    """The strategy function for a profile, or an error that names the format."""
    target = _STRATEGIES.get(profile.routing.strategy)
    if target is None:
        raise UnsupportedFormatError(profile.format.value, profile.routing.reason)
    module, _, function = target.partition(":")
    parser: Parser = getattr(importlib.import_module(module), function)
    return parser
