"""What the parse holds of one page while its range is read: text blocks or OCR paragraphs,
tables and images, and what the heading pass marks on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from corpus_pipeline.contracts import PdfTocEntry
from corpus_pipeline.parsing.pdf.layout import Block
from corpus_pipeline.parsing.pdf.ocr import OcrParagraph


@dataclass
class PageContent:
    number: int
    width: float
    height: float
    blocks: list[Block]
    ocr: list[OcrParagraph] = field(default_factory=list)
    scanned: bool = False  # read by OCR (its text arrives when the recognition finishes)
    tables: list[Any] = field(default_factory=list)
    images: list[Any] = field(default_factory=list)
    in_figure: set[int] = field(default_factory=set)
    toc_unmatched: list[PdfTocEntry] = field(default_factory=list)


def layer_chars(p: PageContent) -> int:
    """Characters of the page's text layer."""
    return sum(len(ln.text) for b in p.blocks for ln in b.lines)
