"""PDF profile: cheap facts from a sample of pages, gathered once before parsing.

Routing needs only a few questions answered (is there a text layer, does it look like slides,
a scan, or a drawing set, how long is it, is there an outline); answering them from up to
`SAMPLE_PAGES` pages with `get_text("dict")` keeps profiling at a few ms per page, and
`find_tables` is never run here.
"""

from __future__ import annotations

import itertools
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pymupdf

from corpus_pipeline.common.errors import (
    CorruptDocumentError,
    PasswordRequiredError,
    WrongPasswordError,
)
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import PdfPageFacts, PdfProfile, PdfTocEntry
from corpus_pipeline.contracts.profile import PdfCategory
from corpus_pipeline.enrich.llm import ChatModel, LLMFailure
from corpus_pipeline.parsing.base import part_errors
from corpus_pipeline.parsing.pdf.layout import (
    TEXT_FLAGS,
    gutters,
    image_coverage,
    page_blocks,
    text_space,
)
from corpus_pipeline.parsing.pdf.reads import PageReads

# PyMuPDF is only partly annotated; its objects are handled as `Any` so strict mypy stays useful.
Page = Any
Document = Any
_mupdf: Any = pymupdf

# MuPDF prints what it repairs ("could not parse color space") to stdout, where it would mix
# into `corpus ingest`'s lines; it is collected instead (`mupdf_messages`) and recorded once.
_mupdf.TOOLS.mupdf_display_errors(False)
_mupdf.TOOLS.mupdf_display_warnings(False)

SAMPLE_PAGES = 64
# Above this many tagged items (estimated) a document's structure tree is detached when opened.
STRUCTURE_TREE_LIMIT = 10_000
STRUCTURE_SAMPLE_PAGES = 16  # the first 8 and 8 spread over the rest
TOC_CAP = 2000
_TEXT_PAGE_CHARS = 40


_REPEATED = "... repeated N times..."


def mupdf_messages() -> list[str]:
    """What MuPDF reported since the last call (repaired objects, unreadable colour spaces),
    distinct and in order, with object numbers folded so one cause counts once."""
    raw = _mupdf.TOOLS.mupdf_warnings(reset=True) or ""
    folded = (re.sub(r"\(\d+ 0 R\)|\d+", "N", line).strip() for line in raw.splitlines())
    # MuPDF's "... repeated N times..." only says the line before came again (and whether it
    # is printed depends on where the buffer was last read): the line itself is kept once.
    return list(dict.fromkeys(line for line in folded if line and line != _REPEATED))


def open_pdf(path: Path, password: str | None = None) -> Document:
    """Open and authenticate a PDF, or refuse it with an error that names the problem."""
    with path.open("rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - 2048))
        tail = fh.read()
    if b"%%EOF" not in tail:
        raise CorruptDocumentError("pdf", "the file is truncated (no end-of-file marker)")
    try:
        doc = _mupdf.open(path, filetype="pdf")
    except (pymupdf.FileDataError, pymupdf.mupdf.FzErrorBase, RuntimeError, ValueError) as exc:
        raise CorruptDocumentError("pdf", f"cannot be opened ({type(exc).__name__})") from exc
    if doc.needs_pass:
        if not password:
            doc.close()
            raise PasswordRequiredError("pdf")
        if not doc.authenticate(password):
            doc.close()
            raise WrongPasswordError("pdf")
    if doc.page_count == 0:
        doc.close()
        raise CorruptDocumentError("pdf", "the document has no pages")
    _detach_structure_tree(doc)
    return doc


def _detach_structure_tree(doc: Document) -> None:
    """Drop a very large tagged-PDF structure tree from the open document (in memory; the file
    is never written).

    MuPDF resolves every marked-content id of a page against the structure tree each time the
    page is interpreted, at a cost that grows with the tree. Browser-printed filings tag every
    word (~300-450 ids per page, ~30,000 per filing): each text, drawing or image read of a
    page then costs ~100 ms instead of ~4, and their text is the same without the tree. Smaller
    trees stay: they cost little, and their ActualText is the text the author meant (small
    capitals read "States", not "StateS"). The estimate is the sampled pages' mean number of
    marked-content ids times the page count, read from the content streams (no interpretation).
    """
    try:
        catalog = doc.pdf_catalog()
        if doc.xref_get_key(catalog, "StructTreeRoot")[0] == "null":
            return
        sample = sample_pages(doc.page_count, STRUCTURE_SAMPLE_PAGES)
        ids = sum(doc[i].read_contents().count(b"/MCID") for i in sample) / len(sample)
        if ids * doc.page_count > STRUCTURE_TREE_LIMIT:
            doc.xref_set_key(catalog, "StructTreeRoot", "null")
    except part_errors():
        pass  # a damaged catalog or content stream: reading stays correct, only slower


def sample_pages(page_count: int, limit: int = SAMPLE_PAGES) -> list[int]:
    """0-based page indexes: all pages of short documents, else the first 8 plus a spread."""
    if page_count <= limit:
        return list(range(page_count))
    head = list(range(8))
    rest = limit - len(head)
    step = (page_count - 8) / rest
    return head + sorted({8 + int(i * step) for i in range(rest)})


def read_toc(doc: Document) -> list[PdfTocEntry]:
    """The embedded outline with target pages (1-based; 0 = no target) and target y."""
    entries: list[PdfTocEntry] = []
    try:
        raw = doc.get_toc(simple=False)
    except part_errors():
        return entries  # a damaged outline: headings then come from the layout
    for item in raw[:TOC_CAP]:
        level, title, page = int(item[0]), str(item[1]), int(item[2])
        dest = item[3] if len(item) > 3 and isinstance(item[3], dict) else {}
        to = dest.get("to")
        y = float(to.y) if to is not None and hasattr(to, "y") else None
        title = " ".join(title.split())
        if title:
            entries.append(PdfTocEntry(level=max(1, level), title=title, page=max(page, 0), y=y))
    return entries


def _page_facts(
    page: Page, number: int, reads: PageReads | None = None
) -> tuple[PdfPageFacts, Counter[str], Counter[float], str]:
    textpage = page.get_textpage(flags=TEXT_FLAGS)  # one text read for layout and table probe
    blocks = page_blocks(page, number, textpage)
    if reads is not None:  # the parse reads this page from here (`parsing.pdf.reads`)
        reads.blocks[number] = blocks
        reads.messages.extend(mupdf_messages())
    fonts: Counter[str] = Counter()
    sizes: Counter[float] = Counter()
    texts: list[str] = []
    max_size = 0.0
    lines = chars = 0
    for b in blocks:
        for ln in b.lines:
            n = len(ln.text)
            lines += 1
            chars += n
            fonts[ln.font] += n
            sizes[ln.size] += n
            max_size = max(max_size, ln.size)
            texts.append(ln.text)
    rect = page.rect  # as displayed: a landscape slide stays landscape
    columns = len(gutters(blocks, text_space(page).width)) + 1 if chars else 1
    facts = PdfPageFacts(
        page=number,
        width=round(rect.width, 1),
        height=round(rect.height, 1),
        chars=chars,
        lines=lines,
        max_font_size=max_size,
        image_coverage=round(image_coverage(page), 3),
        columns=columns,
        table_likely=_table_likely(page, number, textpage, reads),
    )
    return facts, fonts, sizes, "\n".join(texts)


def _table_likely(page: Page, number: int, textpage: Any, reads: PageReads | None) -> bool:
    """Ask the table module (another engineer's) if it exists yet; never fails the profile.
    With `reads`, a flagged page's reads (the finder's too, from the same text page) are kept
    for the parse."""
    try:
        import corpus_pipeline.parsing.pdf.tables as pdf_tables
    except ImportError:
        return False
    try:
        view = pdf_tables.PageView(page, textpage)
        likely = bool(pdf_tables.table_likely(view))
        if likely and reads is not None:
            _ = view.words, view.spans, view.blocks, view.paths  # what the finder reads
            reads.tables[number] = view.reads()
            reads.messages.extend(mupdf_messages())
        return likely
    except part_errors():  # a probe; the parser's table finder reports a damaged page
        return False


def _drawing_count(page: Page) -> int:
    try:
        return len(page.get_cdrawings())
    except part_errors():  # evidence only: a page whose drawings cannot be read counts none
        return 0


def categorize(
    pages: list[PdfPageFacts], drawings: dict[int, int], body: float | None
) -> PdfCategory:
    """Routing category from the sampled pages (majority vote on simple page shapes)."""
    if not pages:
        return "general"
    n = len(pages)
    scan = sum(p.chars < _TEXT_PAGE_CHARS and p.image_coverage >= 0.5 for p in pages)
    if scan * 2 > n:
        return "scan"
    slide = sum(_slide_like(p, body) for p in pages)
    if slide * 10 >= n * 6:
        return "slides"
    atlas = sum(
        p.chars < 800
        and (drawings.get(p.page, 0) >= 300 or p.image_coverage >= 0.6)
        and p.chars >= _TEXT_PAGE_CHARS
        for p in pages
    )
    if atlas * 2 > n:
        return "atlas"
    return "general"


def _slide_like(p: PdfPageFacts, body: float | None) -> bool:
    ratio = p.width / max(p.height, 1.0)
    big_text = p.max_font_size >= 20 or (body or 0) >= 14
    return 1.25 <= ratio <= 1.85 and p.lines <= 30 and big_text


def classify(category: PdfCategory, page_count: int, toc: list[PdfTocEntry], sample: str) -> str:
    """Open semantic kind from rules (the `classification` LLM role may refine it later)."""
    if category == "scan":
        return "scanned document"
    if category == "slides":
        return "slide deck"
    if category == "atlas":
        return "map or drawing set"
    low = sample.casefold()
    if "annual report" in low or "form 10-k" in low:
        return "annual report"
    if "abstract" in low and ("references" in low or "introduction" in low):
        return "research paper"
    if re.search(r"\b(agreement|hereinafter|the parties|clause)\b", low):
        return "contract or legal document"
    if re.search(r"\b(manual|handbook|user guide|installation|procedure)\b", low):
        return "manual"
    if toc and page_count >= 50:
        return "book or long report"
    return "document"


def split_plan(page_count: int, toc: list[PdfTocEntry], every: int) -> list[tuple[int, int]]:
    """Page ranges for bounded-memory parsing: cut at top-level TOC pages, else every N."""
    if page_count <= every:
        return [(1, page_count)]
    top = min((e.level for e in toc), default=1)
    starts = sorted({e.page for e in toc if e.level == top and 1 <= e.page <= page_count})
    cuts = [1]
    for s in starts:
        if s > cuts[-1]:
            cuts.append(s)
    cuts.append(page_count + 1)
    plan: list[tuple[int, int]] = []
    for a, b in itertools.pairwise(cuts):
        start = a
        while start < b:
            end = min(b - 1, start + every - 1)
            plan.append((start, end))
            start = end + 1
    # Merge tiny neighbouring chapters so ranges stay close to N pages.
    merged: list[tuple[int, int]] = []
    for a, b in plan:
        if merged and (b - merged[-1][0] + 1) <= every:
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


def profile_pdf(
    doc: Document, split_pages: int = 200, reads: PageReads | None = None
) -> tuple[PdfProfile, str]:
    """The PDF profile and a text sample (for the language guess); with `reads`, the text
    blocks of every sampled page are put there for the parse."""
    started = time.perf_counter()
    indexes = sample_pages(doc.page_count)
    facts: list[PdfPageFacts] = []
    fonts: Counter[str] = Counter()
    sizes: Counter[float] = Counter()
    drawings: dict[int, int] = {}
    texts: list[str] = []
    sample_len = 0
    for i in indexes:
        try:
            page = doc.load_page(i)
            f, pf, ps, text = _page_facts(page, i + 1, reads)
        except part_errors():
            # One unreadable page is left out of the sample (`sampled_pages` counts the pages
            # read); the parse stage reads it again and records it as a lost page.
            continue
        facts.append(f)
        fonts.update(pf)
        sizes.update(ps)
        if f.chars < 800 and f.chars >= _TEXT_PAGE_CHARS:
            drawings[i + 1] = _drawing_count(page)
        if sample_len < 12000:
            texts.append(text)
            sample_len += len(text)
    toc = read_toc(doc)
    body = sizes.most_common(1)[0][0] if sizes else None
    category = categorize(facts, drawings, body)
    sample = "\n".join(texts)
    n = max(len(facts), 1)
    profile = PdfProfile(
        page_count=doc.page_count,
        encrypted=bool(doc.is_encrypted),
        sampled_pages=len(facts),
        text_coverage=round(sum(f.chars >= _TEXT_PAGE_CHARS for f in facts) / n, 3),
        toc=toc,
        toc_levels=max((e.level for e in toc), default=0),
        fonts=dict(fonts.most_common(20)),
        font_sizes={f"{s:g}": c for s, c in sorted(sizes.items())[:60]},
        body_font_size=body,
        image_coverage=round(sum(f.image_coverage for f in facts) / n, 3),
        landscape_share=round(sum(f.width > f.height for f in facts) / n, 3),
        slide_like_share=round(sum(_slide_like(f, body) for f in facts) / n, 3),
        multi_column_pages=[f.page for f in facts if f.columns > 1],
        table_pages=[f.page for f in facts if f.table_likely],
        pages=facts[:SAMPLE_PAGES],
        category=category,
        classification=classify(category, doc.page_count, toc, sample),
        split_plan=split_plan(doc.page_count, toc, split_pages),
        ms_per_page=round((time.perf_counter() - started) * 1000 / n, 3),
    )
    return profile, sample


_CLASSIFY_PROMPT = (
    "In two to four words, what kind of document is this (for example: research paper, annual "
    "report, user manual, contract, invoice, slide deck)? Answer with the kind only.\n\n{text}"
)


def llm_classification(sample: str, settings: CorpusSettings) -> str | None:
    """The `classification` role's label for a text sample; None when unset or failing (the
    rule-based label stays)."""
    model = ChatModel.for_role(settings, "classification")
    if model is None or not sample.strip():
        return None
    try:
        reply = model.complete(_CLASSIFY_PROMPT.format(text=sample[:4000]))
    except LLMFailure:
        return None
    label = " ".join(reply.split()).strip(" .").lower()
    return label[:80] or None
