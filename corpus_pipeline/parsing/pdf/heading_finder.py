"""The headings of a PDF, range by range: the embedded outline where it is trusted, else the
layout (numbering, font size and weight, position), with the demotions of `headings`
(contents pages, running titles, lists, labels inside drawn frames) and levels that carry on
from one range to the next.
"""

from __future__ import annotations

from typing import Any

from corpus_pipeline.contracts import PdfProfile, PdfTocEntry
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.pdf.headings import (
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
    match_toc,
    merge_wrapped,
    scheme_level,
    side_by_side,
    style_stats,
)
from corpus_pipeline.parsing.pdf.layout import (
    BBox,
    Block,
    Line,
    as_bbox,
    bbox_area,
    centre_inside,
    text_space,
)
from corpus_pipeline.parsing.pdf.page_content import PageContent


class HeadingFinder:
    """Marks the heading segments of each range of pages; what carries from one range to the
    next (the size tiers seen, the numbering depth reached) lives here."""

    def __init__(
        self,
        ctx: ParseContext,
        doc: Any,
        pdf: PdfProfile,
        toc: list[PdfTocEntry],
        judge: LLMJudge | None,
    ) -> None:
        self.ctx = ctx
        self.doc = doc
        self.pdf = pdf
        self.category = pdf.category
        self.toc = toc  # the outline's entries on pages the document has
        self.toc_trusted = False  # the outline matches the page text (decided before the ranges)
        self.judge = judge
        self.tiers: list[tuple[float, bool]] = []
        self.scheme_floor = 0

    def find(
        self,
        pages: list[PageContent],
        segments: dict[tuple[int, int], list[Segment]],
        cuts: dict[int, list[float]],
    ) -> None:
        """Mark the headings among a range's segments (`cuts`: each page's column gutters)."""
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
                seg.beside = side_by_side(seg, page_lines[seg.page], cuts.get(seg.page, []))
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
                    as_bbox(d["rect"])
                    for d in page.get_cdrawings()
                    if "rect" in d and bbox_area(as_bbox(d["rect"])) >= 0.08 * area
                ]
            if drawn.failed:
                continue
            page_segs = [s for s in flat if s.page == number]
            for frame in frames:
                inside = [s for s in cands if centre_inside(s.bbox, frame)]
                # Labels set side by side are no candidates themselves, but still labels.
                labels = len(inside) + sum(
                    1 for s in page_segs if s.beside and centre_inside(s.bbox, frame)
                )
                lines = sum(len(s.lines) for s in page_segs if centre_inside(s.bbox, frame))
                # A boxed sidebar has headings over paragraphs; a diagram is mostly labels.
                if len(inside) >= 3 and labels * 10 >= lines * 3:
                    for seg in inside:
                        seg.heading = False
                        seg.kind = None

    def _page_titles(self, pages: list[PageContent], flat: list[Segment], stats: Stats) -> None:
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


def style_segments(
    pages: list[PageContent], ordered: dict[int, list[object]]
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
                    Segment(p.number, item.index, run, len(runs) == 1, gap, starts, after_object)
                )
                after_object = False
                prev_bottom = run[-1].bbox[3]
            out[(p.number, item.index)] = segs
    return out


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
