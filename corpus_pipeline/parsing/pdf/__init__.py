"""PDF strategy: text layer (or OCR) → headings, paragraphs, list items, tables and images.

The profile decides the reader (`category`): `general` (headings from the embedded TOC,
numbering, font geometry), `slides` (one section per page, titled by its largest top text),
`scan` (Tesseract OCR) and `atlas` (page sections with labels as text). Pages are read range by
range following the profile's split plan, and MuPDF's cache is shrunk between ranges, so a
2,000-page file parses in bounded memory; the parse budget cuts overlong documents with a
diagnostic instead of failing them.
"""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pymupdf

from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import PdfProfile, PdfTocEntry, RowType
from corpus_pipeline.enrich.llm import ChatModel
from corpus_pipeline.parsing.base import DiagnosticSink, ParseContext, part_errors
from corpus_pipeline.parsing.dates import declared_pdf_date
from corpus_pipeline.parsing.pdf import images as pdf_images
from corpus_pipeline.parsing.pdf import reads
from corpus_pipeline.parsing.pdf import tables as pdf_tables
from corpus_pipeline.parsing.pdf.headings import (
    CAPTION,
    LLMJudge,
    Segment,
    Stats,
    assign_levels,
    classify,
    contents_page,
    demote_contents,
    demote_empty,
    demote_lists,
    demote_running,
    join_lines,
    match_toc,
    merge_wrapped,
    norm,
    scheme_level,
    side_by_side,
    style_stats,
    toc_reliable,
)
from corpus_pipeline.parsing.pdf.layout import (
    TEXT_FLAGS,
    BBox,
    Block,
    Line,
    band_keys,
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
    body_line_height,
    ocr_heading_level,
    recognise,
    render_page,
    tesseract_lang,
    tesseract_version,
)
from corpus_pipeline.parsing.pdf.page_labels import printed_labels
from corpus_pipeline.parsing.pdf.prefetch import PagePrefetch, can_fork

# PyMuPDF is only partly annotated; its objects are handled as `Any` so strict mypy stays useful.
Page = Any
Document = Any
_mupdf: Any = pymupdf

__all__ = ["parse_pdf"]

_BULLET = re.compile(r"^\s*(?:[•◦▪▫‣⁃●○■□➢►▶✓✔∙·\-–—*]|\(?[a-z0-9]{1,2}\))\s+")
_FIGURE_CAPTION = re.compile(r"^\s*(?:figure|fig\.|abbildung|abb\.|image|chart)\s*[\dIVX]+", re.I)
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
        reader = _Reader(ctx, doc, pdf)
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


def _layer_chars(p: _Page) -> int:
    """Characters of the page's text layer."""
    return sum(len(ln.text) for b in p.blocks for ln in b.lines)


def _declared_labels(doc: Document) -> list[str]:
    """The page labels the PDF declares (/PageLabels), one per page; [] when it has none or
    they cannot be read (a damaged number tree is not worth failing the page for)."""
    try:
        rules = sorted(doc.get_page_labels(), key=lambda rule: rule["startpage"])
        labels = []
        for number in range(doc.page_count):
            active = [r for r in rules if r["startpage"] <= number]
            if not active:
                labels.append("")
                continue
            rule = active[-1]
            style = rule.get("style", "")
            value = number - rule["startpage"] + rule.get("firstpagenum", 1)
            value -= 1 if style in ("a", "A") else 0  # the alphabet counts from 0
            labels.append(str(_mupdf.utils.construct_label(style, rule.get("prefix", ""), value)))
        return labels
    except Exception:  # a malformed number tree only loses the labels
        return []


@dataclass
class _Page:
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


class _Reader:
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
        self.tiers: list[tuple[float, bool]] = []
        self.scheme_floor = 0
        self.repeated: set[str] = set()
        self.seen_xrefs: set[int] = set()
        self.cuts: dict[int, list[float]] = {}  # column gutters per page (reading order)
        self.toc = [e for e in pdf.toc if 1 <= e.page <= doc.page_count]
        self.sampled_tables = {f.page: f.table_likely for f in pdf.pages}
        self.page_reads = reads.take(ctx.source_path)  # the profile's reads of sampled pages
        self.toc_trusted = False
        self.ocr_lang = tesseract_lang(ctx.profile.language)
        self.ocr_warned = False
        self.ocr_pages = 0
        self.ocr_workers = _setting(ctx, "ocr_workers")
        self.ocr_pool: ThreadPoolExecutor | None = None  # started at the first scanned page
        self.ocr_pending: list[tuple[_Page, Future[list[OcrParagraph]]]] = []
        self.judge = self._judge()
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
            self.toc_trusted = toc_reliable(self.toc, texts)
            if not self.toc_trusted:
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
            self.doc.page_count, self.number_marks, _declared_labels(self.doc)
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
            p = _Page(number, 0.0, 0.0, blocks)
            chars = _layer_chars(p)
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
        pages: list[_Page] = []
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
        segments = self._segments(pages, ordered)
        self._headings(pages, segments)
        for p in pages:
            self._emit_page(p, ordered[p.number], segments, first_parts)

    def _read_page(self, number: int) -> _Page:
        """One page's text, OCR, tables and images; each part fails alone (see `ctx.part`)."""
        ctx = self.ctx
        p = _Page(number, 0.0, 0.0, [])
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
        chars = _layer_chars(p)
        if self._to_ocr(page, chars):
            if tesseract_version() is None:
                self._warn_ocr()
            else:
                with ctx.part(
                    "page text",
                    f"OCR of page {number} failed; the page has no text",
                    page=number,
                    code="ocr.failed",
                ):
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

    def _read_rest(self, p: _Page, page: Any, textpage: Any, chars: int) -> None:
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

    def _find_tables(self, p: _Page, page: Any, textpage: Any, chars: int) -> None:
        number = p.number
        if not chars:
            return
        with self.ctx.part(
            "table",
            f"tables on page {number} could not be detected; their text is kept as text",
            page=number,
            code="table.failed",
        ):
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

    def _start_ocr(self, p: _Page, image: Any) -> None:
        """Recognise a rendered page on the OCR pool (`ocr_workers` Tesseract processes side by
        side); at most two pages per worker wait, rendered, in memory (~25 MB each)."""
        if self.ocr_pool is None:
            self.ocr_pool = ThreadPoolExecutor(self.ocr_workers, thread_name_prefix="corpus-ocr")
        self.ocr_pending.append((p, self.ocr_pool.submit(recognise, image, self.ocr_lang)))
        p.scanned = True
        self._finish_ocr(2 * self.ocr_workers)

    def _finish_ocr(self, keep: int) -> None:
        """Collect recognised pages, oldest first, until at most `keep` are pending. A page whose
        recognition failed is read like an unreadable scan: a diagnostic, then its tables and
        images from the page itself; a page where nothing was recognised keeps its images."""
        while len(self.ocr_pending) > keep:
            p, future = self.ocr_pending.pop(0)
            with self.ctx.part(
                "page text",
                f"OCR of page {p.number} failed; the page has no text",
                page=p.number,
                code="ocr.failed",
            ) as recognised:
                p.ocr = future.result()
                self.ocr_pages += 1
            if recognised.failed or not p.ocr:  # nothing recognised: images are its content
                p.scanned = False
                chars = _layer_chars(p) if recognised.failed else 0
                self._read_rest(p, self.doc.load_page(p.number - 1), None, chars)
            else:
                self.chars += sum(len(o.text) for o in p.ocr)

    def _join_tables(self, pages: list[_Page]) -> set[int]:
        """Join tables continued over a page break; returns ids of the tables to emit."""
        parts = [t for p in pages for t in p.tables]
        if not parts:
            return {id(t) for t in parts}
        by_number = {p.number: p for p in pages}

        def text_above(tab: Any) -> list[str]:
            page = by_number.get(tab.page)
            if page is None:
                return []
            box = _box(tab.bbox)
            return [
                " ".join(line.text for line in b.lines)
                for b in page.blocks
                if b.bbox[3] <= box[1] + 1 and not _inside(b.bbox, box)
            ]

        joined = pdf_tables.join_continued_tables(
            parts, {p.number: p.height for p in pages}, text_above
        )
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

    def _drop_repeated_images(self, pages: list[_Page]) -> None:
        images = [i for p in pages for i in p.images]
        if not images:
            return
        kept = {id(i) for i in pdf_images.drop_repeated(images, self.doc.page_count)}
        for p in pages:
            p.images = [i for i in p.images if id(i) in kept]

    def _order(self, p: _Page) -> list[object]:
        """Blocks, tables, images and OCR paragraphs of one page in reading order."""
        table_boxes = [tuple(t.bbox) for t in p.tables]
        image_boxes = [tuple(i.bbox) for i in p.images]
        blocks = []
        for b in p.blocks:
            if any(_inside(b.bbox, box) for box in table_boxes):
                continue
            if any(_inside(b.bbox, box) for box in image_boxes):
                p.in_figure.add(b.index)
            blocks.append(b)
        cuts = gutters(blocks, p.width)
        self.cuts[p.number] = cuts
        items: list[tuple[BBox, object]] = [(b.bbox, b) for b in blocks]
        items += [(_box(t.bbox), t) for t in p.tables]
        items += [(_box(i.bbox), i) for i in p.images]
        items += [(o.bbox, o) for o in p.ocr]
        return reading_order(items, cuts)

    def _segments(
        self, pages: list[_Page], ordered: dict[int, list[object]]
    ) -> dict[tuple[int, int], list[Segment]]:
        """Style runs of every text block, keyed by (page, block index)."""
        out: dict[tuple[int, int], list[Segment]] = {}
        for p in pages:
            prev_bottom: float | None = None
            after_object = False
            for item in ordered[p.number]:
                if not isinstance(item, Block):
                    prev_bottom = None
                    after_object = True
                    continue
                runs = _style_runs(item.lines)
                segs = []
                for k, run in enumerate(runs):
                    top = run[0].bbox[1]
                    gap = 999.0 if prev_bottom is None else max(top - prev_bottom, 0.0)
                    starts = k == 0 or runs[k - 1][-1].text.rstrip().endswith((".", ":", "!", "?"))
                    segs.append(
                        Segment(
                            p.number, item.index, run, len(runs) == 1, gap, starts, after_object
                        )
                    )
                    after_object = False
                    prev_bottom = run[-1].bbox[3]
                out[(p.number, item.index)] = segs
        return out

    # -- headings ----------------------------------------------------------------------------

    def _headings(self, pages: list[_Page], segments: dict[tuple[int, int], list[Segment]]) -> None:
        figure = {(p.number, i) for p in pages for i in p.in_figure}
        flat = [s for key, segs in segments.items() if key not in figure for s in segs]
        if not flat:
            return
        stats = style_stats(flat, self.pdf.body_font_size)
        numbers = {p.number for p in pages}
        if self.category in ("slides", "atlas"):
            self._page_titles(pages, flat, stats)
            return
        entries = [e for e in self.toc if e.page in numbers]
        unmatched = match_toc(entries, flat) if entries else []
        for p in pages:
            p_entries = [e for e in unmatched if e.page == p.number]
            if p_entries and self.toc_trusted:
                p.toc_unmatched = p_entries
        if self.toc_trusted and self.pdf.toc_levels > 1:
            return
        page_lines = {p.number: [ln for b in p.blocks for ln in b.lines] for p in pages}
        contents = {p.number for p in pages if contents_page(page_lines[p.number], p.width)}
        for i, seg in enumerate(flat):
            if seg.toc:
                continue
            if len(seg.lines) <= 3 and len(seg.text) <= 160:
                seg.beside = side_by_side(seg, page_lines[seg.page], self.cuts.get(seg.page, []))
            nxt = flat[i + 1] if i + 1 < len(flat) else None
            seg.kind, seg.depth = classify(seg, nxt, stats)
            seg.heading = seg.kind is not None
            seg.scheme = seg.kind == "numbered" and scheme_level(seg.text) is not None
        demote_contents([s for s in flat if s.page in contents])
        demote_running(flat, {p.number: p.height for p in pages})
        demote_lists(flat)
        self._demote_framed(flat)
        merge_wrapped(flat)
        if self.judge is not None:
            ambiguous = [s for s in flat if s.kind == "bold"]
            verdicts = self.judge.judge(ambiguous, stats.body_size)
            for i, seg in enumerate(ambiguous):
                if i in verdicts:
                    seg.heading = verdicts[i]
        self.scheme_floor = assign_levels(flat, self.tiers, self.scheme_floor)
        demote_empty(flat)
        if self.toc_trusted:  # a chapter-only outline: layout headings sit below it
            for seg in flat:
                if seg.heading and not seg.toc and seg.level is not None:
                    seg.level = min(seg.level + 1, 9)

    def _demote_framed(self, flat: list[Segment]) -> None:
        """Three or more unnumbered "headings" inside one large drawn frame are the labels of
        a figure or a form (e.g. a syntax diagram), not sections. Drawings are read only on
        pages that have such candidates."""
        by_page: dict[int, list[Segment]] = {}
        for seg in flat:
            if seg.heading and not seg.toc and not seg.depth:
                by_page.setdefault(seg.page, []).append(seg)
        for number, cands in by_page.items():
            if len(cands) < 3:
                continue
            frames: list[BBox] = []
            with self.ctx.part(
                "heading check",
                f"drawings on page {number} could not be read; its headings were not checked "
                "against drawn frames",
                page=number,
                code="drawings.failed",
                level="info",
            ) as drawn:
                page = self.doc.load_page(number - 1)
                area = abs(text_space(page))
                frames = [
                    _box(d["rect"])
                    for d in page.get_cdrawings()
                    if "rect" in d and _area(_box(d["rect"])) >= 0.08 * area
                ]
            if drawn.failed:
                continue
            page_segs = [s for s in flat if s.page == number]
            for frame in frames:
                inside = [s for s in cands if _inside(s.bbox, frame)]
                # Labels set side by side are no candidates themselves, but still labels.
                labels = len(inside) + sum(
                    1 for s in page_segs if s.beside and _inside(s.bbox, frame)
                )
                lines = sum(len(s.lines) for s in page_segs if _inside(s.bbox, frame))
                # A boxed sidebar has headings over paragraphs; a diagram is mostly labels.
                if len(inside) >= 3 and labels * 10 >= lines * 3:
                    for seg in inside:
                        seg.heading = False
                        seg.kind = None

    def _page_titles(self, pages: list[_Page], flat: list[Segment], stats: Stats) -> None:
        for p in pages:
            own = [s for s in flat if s.page == p.number and any(ch.isalpha() for ch in s.text)]
            top = [s for s in own if s.bbox[1] < 0.45 * p.height and len(s.text) <= 160]
            if not top:
                continue
            best = max(top, key=lambda s: (s.size, -s.bbox[1]))
            if self.category == "atlas" and best.size < 1.3 * stats.body_size:
                continue
            best.heading = True
            best.level = 1

    # -- emission ----------------------------------------------------------------------------

    def _emit_page(
        self,
        p: _Page,
        items: list[object],
        segments: dict[tuple[int, int], list[Segment]],
        first_parts: set[int],
    ) -> None:
        ctx = self.ctx
        pages = [p.number]
        for e in p.toc_unmatched:
            ctx.emit(
                RowType.HEADING,
                e.title,
                f"page {p.number} outline",
                heading_level=e.level,
                page_numbers=pages,
            )
        if self.category in ("slides", "atlas"):
            titled = any(
                s.heading
                for item in items
                if isinstance(item, Block)
                for s in segments.get((p.number, item.index), [])
            )
            if not titled:
                label = "Slide" if self.category == "slides" else "Page"
                ctx.emit(
                    RowType.HEADING,
                    f"{label} {p.number}",
                    f"page {p.number}",
                    heading_level=1,
                    page_numbers=pages,
                )
        body_height = body_line_height(p.ocr)
        captions = _image_captions(items, segments, p.number)
        table_captions = {norm(t.caption) for t in p.tables if getattr(t, "caption", None)}
        consumed = set(captions.values())
        for index, item in enumerate(items):
            if isinstance(item, Block):
                if index in consumed:
                    continue
                self._emit_block(p, item, segments.get((p.number, item.index), []), table_captions)
            elif isinstance(item, OcrParagraph):
                level = ocr_heading_level(item, body_height)
                ctx.emit(
                    RowType.HEADING if level else RowType.PARAGRAPH,
                    item.text,
                    f"page {p.number} ocr",
                    heading_level=level,
                    page_numbers=pages,
                )
            elif hasattr(item, "grid"):
                if id(item) in first_parts:
                    ctx.emit_table(
                        item.grid, f"page {p.number} table", list(getattr(item, "pages", pages))
                    )
            elif hasattr(item, "data"):
                caption_index = captions.get(index)
                caption = ""
                if caption_index is not None:
                    block = items[caption_index]
                    assert isinstance(block, Block)
                    caption = join_lines([ln.text for ln in block.lines])
                image: Any = item
                row = ctx.emit_image(image.data, caption, f"page {p.number} image", [image.page])
                if caption and row is not None:
                    ctx.emit(
                        RowType.CAPTION, caption, f"page {p.number} caption", page_numbers=pages
                    )

    def _emit_block(
        self, p: _Page, block: Block, segs: list[Segment], table_captions: set[str]
    ) -> None:
        ctx = self.ctx
        loc = f"page {p.number} block {block.index}"
        pages = [p.number]
        run: list[Line] = []

        def flush() -> None:
            if not run:
                return
            for kind, text in _paragraphs(run):
                if CAPTION.match(text):
                    if norm(text) not in table_captions:
                        ctx.emit(RowType.CAPTION, text, loc, page_numbers=pages)
                else:
                    ctx.emit(kind, text, loc, page_numbers=pages)
            run.clear()

        for seg in segs:
            if seg.absorbed:
                continue
            if seg.heading and seg.level is not None:
                flush()
                ctx.emit(
                    RowType.HEADING, seg.text, loc, heading_level=seg.level, page_numbers=pages
                )
            else:
                run.extend(seg.lines)
        flush()


def _style_runs(lines: list[Line]) -> list[list[Line]]:
    runs: list[list[Line]] = []
    for ln in lines:
        last = runs[-1][-1] if runs else None
        if (
            last is not None
            and abs(last.size - ln.size) < 0.6
            and last.bold == ln.bold
            and last.italic == ln.italic
        ):
            runs[-1].append(ln)
        else:
            runs.append([ln])
    return runs


def _paragraphs(lines: list[Line]) -> list[tuple[RowType, str]]:
    """Paragraph text of a run of lines, split into list items at bullet lines."""
    out: list[tuple[RowType, list[str]]] = []
    for ln in lines:
        m = _BULLET.match(ln.text)
        if m:
            out.append(
                (
                    RowType.LIST_ITEM,
                    [ln.text[m.end() :] if ln.text[0] in "•◦▪▫‣⁃●○■□➢►▶✓✔∙·" else ln.text],
                )
            )
        elif out:
            out[-1][1].append(ln.text)
        else:
            out.append((RowType.PARAGRAPH, [ln.text]))
    return [(kind, join_lines(texts)) for kind, texts in out if join_lines(texts)]


def _image_captions(
    items: list[object], segments: dict[tuple[int, int], list[Segment]], page: int
) -> dict[int, int]:
    """Image item index → index of the adjacent figure-caption block (after, else before)."""
    out: dict[int, int] = {}
    used: set[int] = set()

    def caption_block(j: int) -> bool:
        if not 0 <= j < len(items) or j in used:
            return False
        item = items[j]
        if not isinstance(item, Block):
            return False
        if any(s.heading for s in segments.get((page, item.index), [])):
            return False
        return bool(_FIGURE_CAPTION.match(item.lines[0].text))

    for i, item in enumerate(items):
        if isinstance(item, Block) or not hasattr(item, "data"):
            continue
        for j in (i + 1, i - 1):
            if caption_block(j):
                out[i] = j
                used.add(j)
                break
    return out


def _box(bbox: Any) -> BBox:
    x0, y0, x1, y1 = (float(v) for v in tuple(bbox)[:4])
    return (x0, y0, x1, y1)


def _area(box: BBox) -> float:
    return max(box[2] - box[0], 0.0) * max(box[3] - box[1], 0.0)


def _inside(inner: BBox, outer: Any) -> bool:
    """The center of `inner` lies within `outer` (tables and figures own their text)."""
    ox0, oy0, ox1, oy1 = _box(outer)
    cx, cy = (inner[0] + inner[2]) / 2, (inner[1] + inner[3]) / 2
    return ox0 <= cx <= ox1 and oy0 <= cy <= oy1
