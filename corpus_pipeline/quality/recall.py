"""Word recall: how much of a PDF's own text layer survives into its chunks.

A parser that drops a paragraph, a table or a page leaves no error behind; comparing the words
of the chunks with the words PyMuPDF's plain `page.get_text()` finds is the cheapest way to see
such silent losses. Both sides go through the same tokeniser (`words`), and the comparison is a
multiset one: a word the page holds three times must occur three times in the chunks.

Running headers and footers are dropped by the parser on purpose, so they are excluded from the
expected words, but only by the parser's own rule: the functions of
`corpus_pipeline.parsing.pdf.layout` (`band_keys`, `repeated_keys`, `strip_furniture`), composed
as the parser's `_Reader._range` composes them (per range of the split plan, the repeated band
texts accumulating over the ranges). Pages without a text layer (scans) have no plain words and
count for nothing; their OCR text in the chunks does not raise recall either.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus_pipeline.parsing.pdf.layout import (
    band_keys,
    page_blocks,
    repeated_keys,
    strip_furniture,
    text_space,
)
from corpus_pipeline.parsing.pdf.profile import open_pdf

# Ideographs and kana are words one character at a time: the parser joins wrapped CJK lines
# without a space, the plain text keeps the line break, and both must give the same words.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")
# A hyphen between word characters joins them, whether or not a line break follows: the parser
# removes end-of-line hyphens before a lower-case continuation, the plain text keeps them.
_HYPHEN = re.compile(r"(?<=\w)[-\u00ad\u2010\u2011]\s*(?=\w)")
# `[table: tables/t001.html]`: a reference to a resource file, not document text.
_MARKER = re.compile(r"\[(?:table|image): [^\]\n]*\]")
MISSING_SAMPLE = 12
LOWEST_PAGES = 5


def words(text: str) -> Counter[str]:
    """The tokeniser of both sides: NFKC, case-folded, hyphen-joined `\\w+` words (digits kept)."""
    normal = unicodedata.normalize("NFKC", text).casefold()
    return Counter(_WORD.findall(_HYPHEN.sub("", normal)))


ChunkText = str | tuple[str, int]
"""A chunk's content, or its content and how many places of the document it occurs in."""


def chunk_words(chunks: Iterable[ChunkText]) -> Counter[str]:
    """Words of chunk contents (text and table chunks alike), resource markers removed. A chunk
    deduplicated within its document (one id, several occurrences) counts once per occurrence:
    its text is not lost, it is stored once for every place it stands."""
    total: Counter[str] = Counter()
    for chunk in chunks:
        content, times = (chunk, 1) if isinstance(chunk, str) else chunk
        found = words(_MARKER.sub(" ", content))
        for word in found:
            found[word] *= times
        total.update(found)
    return total


def word_recall(expected: Counter[str], found: Counter[str]) -> float | None:
    """|expected ∩ found| / |expected| over multisets; None when nothing is expected."""
    size = sum(expected.values())
    if not size:
        return None
    return sum((expected & found).values()) / size


@dataclass(frozen=True)
class PageWords:
    """One page's plain-text words and the part of them the parser removes as furniture."""

    page: int
    plain: Counter[str]
    furniture: Counter[str]

    @property
    def expected(self) -> Counter[str]:
        return self.plain - self.furniture


def pdf_page_words(doc: Any, ranges: Sequence[tuple[int, int]] = ()) -> list[PageWords]:
    """Per page of an open PyMuPDF document: plain words, and the words of the lines the PDF
    parser strips as running headers/footers/page numbers (its rule, over its ranges)."""
    count = doc.page_count
    short_document = count < 3
    repeated: set[str] = set()
    out: list[PageWords] = []
    for start, end in ranges or [(1, count)]:
        pages = []
        for number in range(max(start, 1), min(end, count) + 1):
            page = doc.load_page(number - 1)
            blocks = page_blocks(page, number)
            pages.append((number, page.get_text(), blocks, text_space(page).height))
        band: Counter[str] = Counter()
        for _n, _t, blocks, height in pages:
            band.update(band_keys(blocks, height).keys())
        repeated |= repeated_keys(band, len(pages))
        for number, plain, blocks, height in pages:
            before = [ln for b in blocks for ln in b.lines]
            kept = strip_furniture(blocks, height, repeated, short_document=short_document)
            kept_ids = {id(ln) for b in kept for ln in b.lines}
            removed = "\n".join(ln.text for ln in before if id(ln) not in kept_ids)
            out.append(PageWords(number, words(plain), words(removed)))
    # A page outside every range is one the parser never reads: all its words are expected.
    covered = {p.page for p in out}
    for number in range(1, count + 1):
        if number not in covered:
            out.append(PageWords(number, words(doc.load_page(number - 1).get_text()), Counter()))
    return sorted(out, key=lambda p: p.page)


@dataclass(frozen=True)
class Recall:
    """Word recall of one document, with what is needed to see where words went missing."""

    recall: float | None
    expected_words: int
    matched_words: int
    furniture_words: int
    pages: int
    pages_with_text: int
    missing: list[tuple[str, int]] = field(default_factory=list)
    """The most-missed words with how many occurrences are missing."""
    lowest_pages: list[tuple[int, float]] = field(default_factory=list)
    """Pages below 1.0, lowest first, consuming the chunk words in page order."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "recall": None if self.recall is None else round(self.recall, 4),
            "expected_words": self.expected_words,
            "matched_words": self.matched_words,
            "furniture_words": self.furniture_words,
            "pages": self.pages,
            "pages_with_text": self.pages_with_text,
            "missing": [[w, n] for w, n in self.missing],
            "lowest_pages": [[p, round(r, 3)] for p, r in self.lowest_pages],
        }


def measure(pages: Sequence[PageWords], found: Counter[str]) -> Recall:
    """Recall of the pages' expected words in `found` (the chunk words)."""
    expected: Counter[str] = Counter()
    furniture = 0
    for p in pages:
        expected.update(p.expected)
        furniture += sum((p.plain & p.furniture).values())
    matched = expected & found
    left = Counter(found)
    per_page: list[tuple[int, float]] = []
    for p in pages:
        page_expected = p.expected
        page_recall = word_recall(page_expected, left)
        if page_recall is not None:
            left -= page_expected & left
            if page_recall < 1.0:
                per_page.append((p.page, page_recall))
    return Recall(
        recall=word_recall(expected, found),
        expected_words=sum(expected.values()),
        matched_words=sum(matched.values()),
        furniture_words=furniture,
        pages=len(pages),
        pages_with_text=sum(1 for p in pages if p.plain),
        missing=(expected - found).most_common(MISSING_SAMPLE),
        lowest_pages=sorted(per_page, key=lambda pr: pr[1])[:LOWEST_PAGES],
    )


def pdf_word_recall(
    pdf: Path,
    chunks: Iterable[ChunkText],
    password: str | None = None,
    ranges: Sequence[tuple[int, int]] = (),
) -> Recall:
    """Word recall of a PDF's chunks (`ranges`: the profile's split plan, default one range)."""
    doc = open_pdf(pdf, password)
    try:
        pages = pdf_page_words(doc, ranges)
    finally:
        doc.close()
    return measure(pages, chunk_words(chunks))


def document_word_recall(pdf: Path, artifacts: Path, password: str | None = None) -> Recall:
    """Word recall of an ingested PDF from its artifact directory (`chunks.json` for the chunks,
    `manifest.json` for the split plan the parser followed)."""
    data = json.loads((artifacts / "chunks.json").read_text(encoding="utf-8"))
    manifest = json.loads((artifacts / "manifest.json").read_text(encoding="utf-8"))
    plan = ((manifest.get("profile") or {}).get("pdf") or {}).get("split_plan") or []
    return pdf_word_recall(
        pdf,
        (
            (str(c.get("content", "")), max(len(c.get("occurrences") or ()), 1))
            for c in data.get("chunks", [])
        ),
        password,
        [(int(a), int(b)) for a, b in plan],
    )
