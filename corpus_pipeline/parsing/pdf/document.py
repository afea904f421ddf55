"""PDF strategy: text layer (or OCR) → headings, paragraphs, list items, tables and images.

The profile decides the reader (`category`): `general` (headings from the embedded TOC,
numbering, font geometry), `slides` (one section per page, titled by its largest top text),
`scan` (Tesseract OCR) and `atlas` (page sections with labels as text). Pages are read range by
range following the profile's split plan, and MuPDF's cache is shrunk between ranges, so a
2,000-page file parses in bounded memory; the parse budget cuts overlong documents with a
diagnostic instead of failing them.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any

import pymupdf

import corpus_pipeline.parsing.pdf.images as pdf_images
import corpus_pipeline.parsing.pdf.reads as reads
import corpus_pipeline.parsing.pdf.tables as pdf_tables
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import PdfProfile
from corpus_pipeline.enrich.llm import ChatModel
from corpus_pipeline.parsing.base import DiagnosticSink, ParseContext, Part, part_errors
from corpus_pipeline.parsing.dates import declared_pdf_date
from corpus_pipeline.parsing.pdf.heading_finder import HeadingFinder, style_segments
from corpus_pipeline.parsing.pdf.headings import LLMJudge, norm, toc_reliable
from corpus_pipeline.parsing.pdf.layout import (
    TEXT_FLAGS,
    BBox,
    Block,
    as_bbox,
    band_keys,
    centre_inside,
    gutters,
    image_coverage,
    page_blocks,
    page_number_marks,
    reading_order,
    repeated_keys,
    running_text,
    strip_furniture,
    text_space,
)
from corpus_pipeline.parsing.pdf.ocr import (
    OcrParagraph,
    page_seconds,
    recognise,
    render_page,
    tesseract_lang,
    tesseract_version,
)
from corpus_pipeline.parsing.pdf.page_content import PageContent, layer_chars
from corpus_pipeline.parsing.pdf.page_labels import declared_labels, printed_labels
from corpus_pipeline.parsing.pdf.prefetch import PagePrefetch, can_fork
from corpus_pipeline.parsing.pdf.rows import RowWriter
from corpus_pipeline.parsing.pdf.table_joining import join_continued_tables

# PyMuPDF is only partly annotated; its objects are handled as `Any` so strict mypy stays useful.
Document = Any
_mupdf: Any = pymupdf

_SCAN_CHARS = 40
# A PDF at least this long, parsed while a core is free (`pdf_page_helper`), has every other
# page read by a helper process (`prefetch`).
HELPER_MIN_PAGES = 32


def parse_pdf(ctx: ParseContext) -> None:
    """Read a PDF into rows; refuses truncated, empty or locked files with a CorpusError."""
    # Imported here: the profiler itself imports this package's layout module.
    from corpus_pipeline.parsing.pdf.profile import mupdf_messages, open_pdf, profile_pdf

    mupdf_messages()  # start from a clean slate: only this file's messages are recorded
    carried: list[str] = []
    doc = open_pdf(ctx.source_path, ctx.password)
    try:
        ctx.declared_title = (doc.metadata or {}).get("title") or None
        ctx.declared_date = declared_pdf_date(doc.metadata)
        pdf = ctx.profile.pdf
        if pdf is None:
            pdf, _ = profile_pdf(doc, _setting(ctx, "pdf_split_pages"))
        reader = PdfReader(ctx, doc, pdf)
        carried = reader.page_reads.messages  # read with the profile's page reads
        reader.run()
    finally:
        doc.close()
        messages = list(dict.fromkeys([*carried, *mupdf_messages()]))
        if messages:
            shown = "; ".join(messages[:5]) + (
                f" (+{len(messages) - 5} more)" if len(messages) > 5 else ""
            )
            ctx.diagnostics.add(
                "parse",
                "pdf.repaired",
                f"the PDF library repaired or skipped damaged objects while reading: {shown}",
                level="info",
            )


def _setting(ctx: ParseContext, name: str) -> int:
    if ctx.settings is not None:
        return int(getattr(ctx.settings, name))
    return int(CorpusSettings.model_fields[name].default)


class PdfReader:
    """One parse of a PDF: the page walk, range by range, and what it carries across pages."""

    def __init__(self, ctx: ParseContext, doc: Document, pdf: PdfProfile) -> None:
        self.ctx = ctx
        self.doc = doc
        self.pdf = pdf
        self.category = pdf.category
        self.max_pages = _setting(ctx, "parse_max_pages")
        self.max_chars = _setting(ctx, "parse_max_chars")
        self.pages_done = 0
        self.chars = 0
        self.cut_at: int | None = None
        self.repeated: set[str] = set()
        self.seen_xrefs: set[int] = set()
        self.cuts: dict[int, list[float]] = {}  # column gutters per page (reading order)
        self.toc = [e for e in pdf.toc if 1 <= e.page <= doc.page_count]
        self.sampled_tables = {f.page: f.table_likely for f in pdf.pages}
        # The profile's reads of sampled pages, handed on by the pipeline.
        self.page_reads = reads.usable(ctx.prior_reads, ctx.source_path)
        self.ocr_lang = tesseract_lang(ctx.profile.language)
        self.ocr_warned = False
        self.ocr_pages = 0
        self.ocr_workers = _setting(ctx, "ocr_workers")
        self.ocr_seconds = page_seconds(_setting(ctx, "parse_timeout_seconds"))
        self.ocr_pool: ThreadPoolExecutor | None = None  # started at the first scanned page
        self.ocr_pending: list[tuple[PageContent, Future[list[OcrParagraph]]]] = []
        self.judge = self._judge()
        self.headings = HeadingFinder(ctx, doc, pdf, self.toc, self.judge)
        self.rows = RowWriter(ctx, self.category)
        self.prefetch: PagePrefetch | None = None  # the helper reading every other page
        self.fetched_tables: dict[int, tuple[list[Any], list[Any]]] = {}  # page → tables, diags
        self.number_marks: dict[int, list[str]] = {}  # page → numbers printed in its bands
        self.band_texts: dict[str, str] = {}  # furniture key → first text, in reading order

    def _judge(self) -> LLMJudge | None:
        settings = self.ctx.settings
        model = ChatModel.for_role(settings, "hierarchy") if settings is not None else None
        return LLMJudge(model) if model is not None else None

    # -- driver ----------------------------------------------------------------------------

    def run(self) -> None:
        if self.toc:
            texts = {}
            for e in self.toc[:40]:
                if e.page not in texts:
                    texts[e.page] = self._body_text(e.page)
            self.headings.toc_trusted = toc_reliable(self.toc, texts)
            if not self.headings.toc_trusted:
                self.ctx.diagnostics.add(
                    "parse",
                    "toc.unreliable",
                    "the embedded outline does not match the page text; headings come from "
                    "the layout instead",
                    level="info",
                )
        if self.category == "scan" and tesseract_version() is None:
            self._warn_ocr()
        plan = self.pdf.split_plan or [(1, self.doc.page_count)]
        try:
            self._start_helper()
            for start, end in plan:
                if self.cut_at is not None:
                    break
                self._range(start, min(end, self.doc.page_count))
                _mupdf.TOOLS.store_shrink(100)  # release MuPDF's cached page resources
        finally:
            if self.prefetch is not None:
                self.prefetch.close()
            if self.ocr_pool is not None:
                self.ocr_pool.shutdown(cancel_futures=True)
        if self.cut_at is not None:
            self.ctx.diagnostics.add(
                "parse",
                "parse.budget_exceeded",
                f"parse budget reached: read {self.cut_at} of {self.doc.page_count} pages "
                f"(limits: {self.max_pages} pages, {self.max_chars} characters); "
                "the rest of the document is missing",
            )
        if self.ocr_pages:
            self.ctx.diagnostics.add(
                "parse",
                "ocr.pages",
                f"{self.ocr_pages} page(s) read with Tesseract OCR ({self.ocr_lang})",
                level="info",
            )
        self.ctx.page_labels = printed_labels(
            self.doc.page_count, self.number_marks, declared_labels(self.doc)
        )
        self.ctx.running_text = running_text(self.repeated, self.band_texts)
        if self.judge is not None:
            for message in sorted(set(self.judge.errors)):
                self.ctx.diagnostics.add("hierarchy", "hierarchy.llm_fallback", message)

    def _body_text(self, number: int) -> str:
        """Normalised page text without headers/footers (a running title is no evidence);
        empty when the page cannot be read (reported once, when the page itself is parsed)."""
        try:
            page = self.doc.load_page(number - 1)
            raw = self.page_reads.blocks.get(number)
            if raw is None:
                raw = self.page_reads.blocks[number] = page_blocks(page, number)  # parse reuses it
        except part_errors():
            return ""  # not silent: `_read_page` records this page's failure
        blocks = strip_furniture(raw, text_space(page).height, set(), self.doc.page_count < 3)
        return norm(" ".join(ln.text for b in blocks for ln in b.lines))

    def _start_helper(self) -> None:
        """Fork the page helper for a long PDF with text, when the settings leave it a core
        (scans already run two Tesseracts)."""
        settings = self.ctx.settings
        if (
            settings is None
            or not settings.pdf_page_helper
            or self.category == "scan"
            or self.doc.page_count < HELPER_MIN_PAGES
            or not can_fork()
        ):
            return
        last = min(self.doc.page_count, self.max_pages)
        try:
            self.prefetch = PagePrefetch(self._prefetch_page, range(2, last + 1, 2), self._own_file)
        except OSError:  # no process or pipe to spare: the parse reads every page itself
            self.prefetch = None

    def _own_file(self) -> None:
        """In the helper, first: a document of its own. The forked one shares the parse's open
        file, and with it the file offset, so reads of the two processes would interleave."""
        from corpus_pipeline.parsing.pdf.profile import mupdf_messages, open_pdf

        self.doc = open_pdf(self.ctx.source_path, self.ctx.password)
        mupdf_messages()  # the parse's, copied by the fork: not the helper's to report

    def _prefetch_page(self, number: int) -> tuple[list[Block], Any, list[str]] | None:
        """In the helper: what `_read_page` reads of the page that depends on nothing else —
        its text blocks and, unless the page is one to OCR, its tables with the diagnostics
        their finding recorded — and MuPDF's messages meanwhile. None: the parse reads it."""
        from corpus_pipeline.parsing.pdf.profile import mupdf_messages

        self.ctx.diagnostics = DiagnosticSink()  # this process's copy: what the page adds
        try:
            page = self.doc.load_page(number - 1)
            blocks, textpage = self._page_text(page, number)
            p = PageContent(number, 0.0, 0.0, blocks)
            chars = layer_chars(p)
            tables = None
            if not self._to_ocr(page, chars):
                self._find_tables(p, page, textpage, chars)
                tables = (p.tables, self.ctx.diagnostics.items)
        except part_errors():
            return None
        return blocks, tables, mupdf_messages()

    def _take_prefetched(self, number: int) -> None:
        """Put the helper's reads of page `number` where `_read_page` finds the profile's."""
        fetched = self.prefetch.take(number) if self.prefetch is not None else None
        if fetched is None:
            return
        from corpus_pipeline.parsing.pdf.profile import mupdf_messages

        blocks, tables, messages = fetched
        self.page_reads.blocks[number] = blocks
        if tables is not None:
            self.fetched_tables[number] = tables
        # MuPDF's messages in page order, as one process reading every page would see them.
        self.page_reads.messages.extend([*mupdf_messages(), *messages])

    def _to_ocr(self, page: Any, chars: int) -> bool:
        return chars < _SCAN_CHARS and (self.category == "scan" or image_coverage(page) >= 0.5)

    def _warn_ocr(self) -> None:
        if not self.ocr_warned:
            self.ocr_warned = True
            self.ctx.diagnostics.add(
                "parse",
                "ocr.unavailable",
                "Tesseract is not available: pages without a text layer were not read",
            )

    # -- one range of pages ------------------------------------------------------------------

    def _range(self, start: int, end: int) -> None:
        pages: list[PageContent] = []
        for number in range(start, end + 1):
            if self.pages_done >= self.max_pages or self.chars >= self.max_chars:
                self.cut_at = number - 1
                break
            pages.append(self._read_page(number))
            self.pages_done += 1
        self._finish_ocr(0)
        if not pages:
            return
        counts: Counter[str] = Counter()
        for p in pages:
            keys = band_keys(p.blocks, p.height)
            counts.update(keys.keys())
            for key, text in keys.items():
                self.band_texts.setdefault(key, text)
            self.number_marks[p.number] = page_number_marks(p.blocks, p.height)
        self.repeated |= repeated_keys(counts, len(pages))
        for p in pages:
            p.blocks = strip_furniture(
                p.blocks, p.height, self.repeated, short_document=self.doc.page_count < 3
            )
        first_parts = self._join_tables(pages)
        self._drop_repeated_images(pages)
        ordered = {p.number: self._order(p) for p in pages}
        segments = style_segments(pages, ordered)
        self.headings.find(pages, segments, self.cuts)
        for p in pages:
            self.rows.emit_page(p, ordered[p.number], segments, first_parts)

    def _read_page(self, number: int) -> PageContent:
        """One page's text, OCR, tables and images; each part fails alone (see `ctx.part`)."""
        ctx = self.ctx
        p = PageContent(number, 0.0, 0.0, [])
        self._take_prefetched(number)
        with ctx.part(
            "page text",
            f"text of page {number} could not be read; page skipped",
            page=number,
            code="page.failed",
        ) as read:
            page = self.doc.load_page(number - 1)
            space = text_space(page)
            p.width, p.height = space.width, space.height
            p.blocks, textpage = self._page_text(page, number)
        if read.failed:
            return p
        chars = layer_chars(p)
        if self._to_ocr(page, chars):
            if tesseract_version() is None:
                self._warn_ocr()
            else:
                with self._recognition(number):
                    image = render_page(page)
                    self._start_ocr(p, image)
                if p.scanned:
                    return p  # its text, tables-free, arrives with the recognition
        self._read_rest(p, page, textpage, chars)
        return p

    def _page_text(self, page: Any, number: int) -> tuple[list[Block], Any]:
        """The page's text blocks — read already by the profile or the helper, else now — and
        the MuPDF text page they were read from (None if read elsewhere), shared with the
        table reads."""
        known = self.page_reads.blocks.pop(number, None)
        if known is not None:
            return known, None
        textpage = page.get_textpage(flags=TEXT_FLAGS)
        return page_blocks(page, number, textpage), textpage

    def _read_rest(self, p: PageContent, page: Any, textpage: Any, chars: int) -> None:
        """A page's tables and images, once its text is known not to come from OCR."""
        ctx, number = self.ctx, p.number
        fetched = self.fetched_tables.pop(number, None)
        if fetched is not None:  # found by the helper, with what finding them recorded
            p.tables, recorded = fetched
            ctx.diagnostics.items.extend(recorded)
        else:
            self._find_tables(p, page, textpage, chars)
        with ctx.part(
            "image",
            f"images on page {number} could not be listed; skipped",
            page=number,
            code="image.failed",
        ):
            p.images = list(
                pdf_images.extract_images(self.doc, page, number, self.seen_xrefs, ctx.diagnostics)
            )
        self.chars += chars

    def _find_tables(self, p: PageContent, page: Any, textpage: Any, chars: int) -> None:
        number = p.number
        if not chars:
            return
        with pdf_tables.table_detection(self.ctx.diagnostics, number):
            # The profile already asked `table_likely` for its sampled pages.
            known = self.sampled_tables.get(number)
            if known is not False:
                # One text page for test and finder (the layout's, else built on first use).
                view = pdf_tables.PageView(page, textpage)
                probed = self.page_reads.tables.pop(number, None)
                if probed is not None:
                    view.keep_reads(probed)  # the profile's probe read it all already
                if known or pdf_tables.table_likely(view):
                    p.tables = list(pdf_tables.find_tables(view, number, self.ctx.diagnostics))

    def _recognition(self, number: int) -> AbstractContextManager[Part]:
        """Isolation of a page's OCR (rendering or recognising it): the page has no text."""
        message = f"OCR of page {number} failed; the page has no text"
        return self.ctx.part("page text", message, page=number, code="ocr.failed")

    def _start_ocr(self, p: PageContent, image: Any) -> None:
        """Recognise a rendered page on the OCR pool (`ocr_workers` Tesseract processes side by
        side); at most two pages per worker wait, rendered, in memory (~25 MB each)."""
        if self.ocr_pool is None:
            self.ocr_pool = ThreadPoolExecutor(self.ocr_workers, thread_name_prefix="corpus-ocr")
        self.ocr_pending.append(
            (p, self.ocr_pool.submit(recognise, image, self.ocr_lang, self.ocr_seconds))
        )
        p.scanned = True
        self._finish_ocr(2 * self.ocr_workers)

    def _finish_ocr(self, keep: int) -> None:
        """Collect recognised pages, oldest first, until at most `keep` are pending. A page whose
        recognition failed is read like an unreadable scan: a diagnostic, then its tables and
        images from the page itself; a page where nothing was recognised keeps its images."""
        while len(self.ocr_pending) > keep:
            p, future = self.ocr_pending.pop(0)
            with self._recognition(p.number) as recognised:
                p.ocr = future.result()
                self.ocr_pages += 1
            if recognised.failed or not p.ocr:  # nothing recognised: images are its content
                p.scanned = False
                chars = layer_chars(p) if recognised.failed else 0
                self._read_rest(p, self.doc.load_page(p.number - 1), None, chars)
            else:
                self.chars += sum(len(o.text) for o in p.ocr)

    def _join_tables(self, pages: list[PageContent]) -> set[int]:
        """Join tables continued over a page break; returns ids of the tables to emit."""
        parts = [t for p in pages for t in p.tables]
        if not parts:
            return {id(t) for t in parts}
        by_number = {p.number: p for p in pages}

        def text_above(tab: Any) -> list[str]:
            page = by_number.get(tab.page)
            if page is None:
                return []
            box = as_bbox(tab.bbox)
            return [
                " ".join(line.text for line in b.lines)
                for b in page.blocks
                if b.bbox[3] <= box[1] + 1 and not centre_inside(b.bbox, box)
            ]

        joined = join_continued_tables(parts, {p.number: p.height for p in pages}, text_above)
        by_start = {(t.page, tuple(t.bbox)): t for t in joined}
        emit: set[int] = set()
        for p in pages:
            new: list[Any] = []
            for t in p.tables:
                merged = by_start.get((t.page, tuple(t.bbox)))
                if merged is not None:
                    emit.add(id(merged))
                    new.append(merged)
                else:
                    new.append(t)  # a continuation part: keeps its box, emits nothing
            p.tables = new
        return emit

    def _drop_repeated_images(self, pages: list[PageContent]) -> None:
        images = [i for p in pages for i in p.images]
        if not images:
            return
        kept = {id(i) for i in pdf_images.drop_repeated(images, self.doc.page_count)}
        for p in pages:
            p.images = [i for i in p.images if id(i) in kept]

    def _order(self, p: PageContent) -> list[object]:
        """Blocks, tables, images and OCR paragraphs of one page in reading order."""
        table_boxes = [tuple(t.bbox) for t in p.tables]
        image_boxes = [tuple(i.bbox) for i in p.images]
        blocks = []
        for b in p.blocks:
            if any(centre_inside(b.bbox, box) for box in table_boxes):
                continue
            if any(centre_inside(b.bbox, box) for box in image_boxes):
                p.in_figure.add(b.index)
            blocks.append(b)
        cuts = gutters(blocks, p.width)
        self.cuts[p.number] = cuts
        items: list[tuple[BBox, object]] = [(b.bbox, b) for b in blocks]
        items += [(as_bbox(t.bbox), t) for t in p.tables]
        items += [(as_bbox(i.bbox), i) for i in p.images]
        items += [(o.bbox, o) for o in p.ocr]
        return reading_order(items, cuts)
