"""Page layout from PyMuPDF's text dict: styled lines, blocks, column order, page furniture.

PyMuPDF's `sort=True` orders blocks by position, which interleaves the columns of a two-column
page; here gutters are found from where no text line crosses, and blocks are read column by
column between full-width blocks (titles, abstracts, wide figures), a one-level XY cut.
"""

from __future__ import annotations

import functools
import itertools
import re
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import pymupdf

from corpus_pipeline.parsing.base import part_errors

# PyMuPDF is only partly annotated; its objects are handled as `Any` so strict mypy stays useful.
Page = Any
Document = Any
_mupdf: Any = pymupdf

# No image payloads (expensive) and no ligature expansion surprises; whitespace kept as written.
TEXT_FLAGS = (
    pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_PRESERVE_LIGATURES | pymupdf.TEXT_MEDIABOX_CLIP
)
BAND = 0.08  # top/bottom share of the page where running headers and footers live

BBox = tuple[float, float, float, float]


def union(boxes: Iterable[BBox]) -> BBox:
    """The smallest box holding every given box (at least one)."""
    x0, y0, x1, y1 = zip(*boxes, strict=True)
    return (min(x0), min(y0), max(x1), max(y1))


def as_bbox(bbox: Any) -> BBox:
    """A PyMuPDF rectangle (or any 4+ sequence) as a plain box of floats."""
    x0, y0, x1, y1 = (float(v) for v in tuple(bbox)[:4])
    return (x0, y0, x1, y1)


def bbox_area(box: BBox) -> float:
    return max(box[2] - box[0], 0.0) * max(box[3] - box[1], 0.0)


def centre_inside(inner: BBox, outer: Any) -> bool:
    """The center of `inner` lies within `outer` (tables and figures own their text)."""
    ox0, oy0, ox1, oy1 = as_bbox(outer)
    cx, cy = (inner[0] + inner[2]) / 2, (inner[1] + inner[3]) / 2
    return ox0 <= cx <= ox1 and oy0 <= cy <= oy1


def text_space(page: Any) -> Any:
    """The page rectangle in the unrotated space PyMuPDF extracts text, drawings and images in
    (`page.rect` is the rotated, displayed one: on a /Rotate 90 page width and height swap)."""
    return page.rect * page.derotation_matrix


_INLINE_IMAGE = re.compile(rb"\bBI\b")
# What in a resource graph can draw an image: image XObjects, patterns and shadings (which may
# hold images), soft masks, Type3 glyphs (content streams of their own).
_IMAGE_SOURCE = re.compile(r"/(?:Image|Pattern|Shading|SMask|Type3)\b")
_REFERENCE = re.compile(r"\b(\d+) 0 R\b")
# A font other than Type3 draws glyphs only: what it references (widths, descriptor, font file,
# encoding) is not followed.
_FONT = re.compile(r"/Type\s*/Font(?:Descriptor)?\b")
MAX_RESOURCE_OBJECTS = 400


def places_no_image(page: Any) -> bool:
    """Whether the page certainly draws no image, read from its resource graph and content
    streams (under a millisecond) before `get_image_info`, which reads the whole page as
    text again (2-8 ms on a filing page): no object reachable from its resources that can draw
    an image, no inline image (`BI`) in its content or its forms', no annotation (an appearance
    may draw one). Anything unsure (inherited resources, a very large graph, a read error)
    says False, so the exact read decides."""
    doc = page.parent
    try:
        if page.first_annot is not None or _INLINE_IMAGE.search(page.read_contents()):
            return False
        kind, value = doc.xref_get_key(page.xref, "Resources")
        if kind not in ("dict", "xref"):
            return False  # inherited from the page tree: not followed here
        texts = [value]
        seen: set[int] = set()
        while texts:
            text = texts.pop()
            if _IMAGE_SOURCE.search(text):
                return False
            for match in _REFERENCE.finditer(text):
                xref = int(match.group(1))
                if xref in seen:
                    continue
                seen.add(xref)
                if len(seen) > MAX_RESOURCE_OBJECTS:
                    return False
                source = doc.xref_object(xref, compressed=True)
                if _IMAGE_SOURCE.search(source):
                    return False
                if "/Form" in source and _INLINE_IMAGE.search(doc.xref_stream(xref) or b""):
                    return False
                if not _FONT.search(source):
                    texts.append(source)
    except part_errors():
        return False
    return True


def image_coverage(page: Any) -> float:
    """Share of the page area covered by placed images (0..1); the scan/atlas evidence."""
    rect = text_space(page)
    area = max(rect.width * rect.height, 1.0)
    covered = 0.0
    try:
        if places_no_image(page):
            return 0.0
        for info in page.get_image_info():
            box = _mupdf.Rect(info["bbox"]) & rect
            covered += max(box.width, 0) * max(box.height, 0)
    except part_errors():
        return 0.0  # evidence only; the parser records the page's unreadable images itself
    return float(min(covered / area, 1.0))


_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi|,b$|-b$", re.I)
_ITALIC_NAME = re.compile(r"italic|oblique|,i$|-i$", re.I)


@dataclass(slots=True)
class Line:
    """One text line with its dominant style (by characters)."""

    text: str
    bbox: BBox
    size: float
    bold: bool
    font: str
    italic: bool = False


@dataclass(slots=True)
class Block:
    """A PyMuPDF text block on one page (lines in stream order)."""

    page: int
    index: int
    lines: list[Line] = field(default_factory=list)

    @property
    def bbox(self) -> BBox:
        return union(ln.bbox for ln in self.lines)


def page_blocks(page: Page, page_number: int, textpage: Any = None) -> list[Block]:
    """Text blocks with styled lines; empty lines and blocks are dropped.

    `textpage`: one made with `TEXT_FLAGS` that other reads of the page share (building it is
    most of the cost of a read)."""
    data = page.get_text("dict", flags=TEXT_FLAGS, textpage=textpage)
    blocks: list[Block] = []
    for index, raw in enumerate(data.get("blocks", [])):
        if raw.get("type", 0) != 0:
            continue
        block = Block(page=page_number, index=index)
        for raw_line in raw.get("lines", []):
            line = _line(raw_line)
            if line is not None:
                block.lines.append(line)
        if block.lines:
            blocks.append(block)
    return blocks


@functools.lru_cache(maxsize=4096)
def _font_style(font: str) -> tuple[bool, bool]:
    """(bold, italic) by the font's name; a filing has a few fonts and ~100k spans."""
    return bool(_BOLD_NAME.search(font)), bool(_ITALIC_NAME.search(font))


def _line(raw: dict[str, Any]) -> Line | None:
    spans = raw.get("spans") or []
    texts = [str(s.get("text", "")) for s in spans]
    text = "".join(texts)
    if not text.strip():
        return None
    # Dominant size and font by characters (the first of equals, as `Counter.most_common`).
    sizes: dict[float, int] = {}
    fonts: dict[str, int] = {}
    bold_chars = italic_chars = chars = 0
    for s, span_text in zip(spans, texts, strict=True):
        n = len(span_text.strip())
        if not n:
            continue
        size = round(float(s.get("size", 0.0)) * 2) / 2
        font = str(s.get("font", ""))
        sizes[size] = sizes.get(size, 0) + n
        fonts[font] = fonts.get(font, 0) + n
        chars += n
        flags = int(s.get("flags", 0))
        bold, italic = _font_style(font)
        if flags & 16 or bold:
            bold_chars += n
        if flags & 2 or italic:
            italic_chars += n
    if not chars:
        return None
    bbox = raw["bbox"]
    return Line(
        text=" ".join(text.split()),
        bbox=(float(bbox[0]), float(bbox[1]), float(bbox[2]), float(bbox[3])),
        size=max(sizes, key=sizes.__getitem__),
        bold=bold_chars * 2 > chars,
        font=max(fonts, key=fonts.__getitem__),
        italic=italic_chars * 2 > chars,
    )


# --------------------------------------------------------------------------------------------
# Columns


def gutters(blocks: list[Block], width: float) -> list[float]:
    """x positions of column gutters: gaps no line crosses, with real text on both sides."""
    lines = [ln for b in blocks for ln in b.lines]
    if len(lines) < 6:
        return []
    left = min(ln.bbox[0] for ln in lines)
    right = max(ln.bbox[2] for ln in lines)
    area = max(right - left, 1.0)
    # Wide lines (titles across both columns) would hide the gutter; judge the narrow ones.
    narrow = [ln for ln in lines if ln.bbox[2] - ln.bbox[0] < 0.6 * area]
    if len(narrow) < 6:
        return []
    spans = sorted((ln.bbox[0], ln.bbox[2]) for ln in narrow)
    merged: list[list[float]] = []
    for x0, x1 in spans:
        if merged and x0 <= merged[-1][1] + 1.0:
            merged[-1][1] = max(merged[-1][1], x1)
        else:
            merged.append([x0, x1])
    top = min(ln.bbox[1] for ln in narrow)
    bottom = max(ln.bbox[3] for ln in narrow)
    height = max(bottom - top, 1.0)
    found: list[float] = []
    for a, b in itertools.pairwise(merged):
        gap = b[0] - a[1]
        if gap < 6.0:
            continue
        x = (a[1] + b[0]) / 2
        lhs = [ln for ln in narrow if ln.bbox[2] <= x]
        rhs = [ln for ln in narrow if ln.bbox[0] >= x]
        if len(lhs) < 3 or len(rhs) < 3:
            continue
        if _extent(lhs) < 0.25 * height or _extent(rhs) < 0.25 * height:
            continue
        # Both sides must be text columns, not a label column next to a body.
        if min(_mean_width(lhs), _mean_width(rhs)) < 0.15 * area:
            continue
        found.append(x)
    return found


def _extent(lines: list[Line]) -> float:
    return sum(ln.bbox[3] - ln.bbox[1] for ln in lines)


def _mean_width(lines: list[Line]) -> float:
    return sum(ln.bbox[2] - ln.bbox[0] for ln in lines) / len(lines)


def reading_order(items: list[tuple[BBox, object]], cuts: list[float]) -> list[object]:
    """Order boxes column by column; boxes crossing a gutter separate bands (XY cut)."""
    ordered = sorted(items, key=lambda it: (round(it[0][1]), it[0][0]))
    if not cuts:
        return [obj for _, obj in ordered]
    out: list[object] = []
    band: list[tuple[BBox, object]] = []

    def column(box: BBox) -> int:
        center = (box[0] + box[2]) / 2
        return sum(center > c for c in cuts)

    def flush() -> None:
        band.sort(key=lambda it: (column(it[0]), round(it[0][1]), it[0][0]))
        out.extend(obj for _, obj in band)
        band.clear()

    for box, obj in ordered:
        if any(box[0] < c - 2 and box[2] > c + 2 for c in cuts):
            flush()
            out.append(obj)
        else:
            band.append((box, obj))
    flush()
    return out


# --------------------------------------------------------------------------------------------
# Running headers, footers and page numbers

_PAGE_NUMBER = re.compile(
    r"^(page\s*)?(\d+|[ivxlcdm]+)(\s*(of|/)\s*\d+)?$|^[-–—]\s*\d+\s*[-–—]$", re.I
)


def furniture_key(text: str) -> str:
    """Normalised text with digits masked, so 'Page 3' and 'Page 4' are the same furniture."""
    return re.sub(r"\d+", "#", " ".join(text.casefold().split()))


EDGE_LINES = 2  # lines at each end of a page that may be running headers/footers
MAX_RUNNING_WORDS = 12  # a running header names a document or a part, it says nothing more


def _edge_order(blocks: list[Block]) -> list[Line]:
    """The page's text lines from top to bottom."""
    lines = [ln for b in blocks for ln in b.lines if ln.text.strip()]
    return sorted(lines, key=lambda ln: (ln.bbox[1], ln.bbox[0]))


def band_keys(blocks: list[Block], height: float) -> dict[str, str]:
    """Keys of the lines in the top and bottom bands of one page, and of its first and last
    lines wherever they sit (a page printed from a browser or a word processor ends its text
    with the running footer right below the content, far from the page's edge), each with the
    first line's text."""
    ordered = _edge_order(blocks)
    edges = {id(ln) for ln in ordered[:EDGE_LINES] + ordered[-EDGE_LINES:]}
    keys: dict[str, str] = {}
    for ln in ordered:
        if id(ln) in edges or in_band(ln, height):
            keys.setdefault(furniture_key(ln.text), " ".join(ln.text.split()))
    return keys


MAX_RUNNING_LINES = 6
MAX_RUNNING_CHARS = 300


def running_text(repeated: set[str], examples: dict[str, str]) -> list[str]:
    """The document's running headers and footers as printed, without their page numbers
    ("Apple Inc. | Q1 2023 Form 10-Q | 21" → "Apple Inc. | Q1 2023 Form 10-Q"): how the
    document names itself on every page. `examples`: key → first text, in reading order."""
    out: list[str] = []
    for key, text in examples.items():
        if key not in repeated or is_page_number(text):
            continue
        bare = _PIPED_NUMBER.sub("", text).strip(" |│")
        if bare and bare not in out and sum(map(len, out)) + len(bare) <= MAX_RUNNING_CHARS:
            out.append(bare)
        if len(out) == MAX_RUNNING_LINES:
            break
    return out


def in_band(line: Line, height: float) -> bool:
    return line.bbox[3] <= BAND * height or line.bbox[1] >= (1 - BAND) * height


def repeated_keys(counts: Counter[str], pages: int) -> set[str]:
    """Band texts present on at least half of the pages (and on two pages at least)."""
    if pages < 2:
        return set()
    need = max(2, (pages + 1) // 2)
    return {k for k, n in counts.items() if n >= need}


def is_page_number(text: str) -> bool:
    return bool(_PAGE_NUMBER.match(" ".join(text.split())))


_ROMAN = re.compile(r"^(?=[ivx])x{0,3}(?:ix|iv|v?i{0,3})$")
_PIPED_NUMBER = re.compile(r"^(\d{1,4})\s*[|│]|[|│]\s*(\d{1,4})$")
MARK_TOP, MARK_BOTTOM = 0.15, 0.88  # page numbers sit a little further in than running text


def page_number_marks(blocks: list[Block], height: float) -> list[str]:
    """The page numbers printed near one page's top or bottom edge, or as its first or last
    line ("28", "Page 5 of 9" → "5", "- 7 -" → "7", "iv", "Apple Inc. | Form 10-Q | 3" → "3"),
    top to bottom."""
    out: list[str] = []
    lines = _edge_order(blocks)
    if not lines:
        return out
    top = lines[0].bbox[1]
    bottom = max(ln.bbox[3] for ln in lines)
    for ln in lines:
        near_edge = ln.bbox[3] <= MARK_TOP * height or ln.bbox[1] >= MARK_BOTTOM * height
        if not (near_edge or ln.bbox[1] == top or ln.bbox[3] == bottom):
            continue
        text = " ".join(ln.text.split())
        if _PAGE_NUMBER.match(text):
            bare = re.sub(r"^page\s*", "", text, flags=re.I).casefold()
            number = re.search(r"\d+", bare) or _ROMAN.match(bare)
            if number:
                out.append(number.group(0))
        elif piped := _PIPED_NUMBER.search(text):
            out.append(piped.group(1) or piped.group(2))
    return out


_NUMBERED_HEADER = re.compile(r"^\d{1,4}\s+\D.*\D\s+\S*$|^\D.*\s\d{1,4}$")


def _header_block(block: Block, height: float) -> bool:
    """A short block near the top or bottom edge that holds a bare page number."""
    _, y0, _, y1 = block.bbox
    near_edge = y1 <= 0.15 * height or y0 >= 0.88 * height
    return (
        near_edge and len(block.lines) <= 3 and any(is_page_number(ln.text) for ln in block.lines)
    )


def _gap(a: Line, b: Line) -> float:
    """Vertical space between two lines (0 when they overlap)."""
    return max(0.0, max(a.bbox[1], b.bbox[1]) - min(a.bbox[3], b.bbox[3]))


def strip_furniture(
    blocks: list[Block], height: float, repeated: set[str], short_document: bool = False
) -> list[Block]:
    """Drop header/footer lines: repeated text and lone page numbers in the bands, or peeled
    off either end of the page's text wherever it ends (a footer printed right below the
    content). In a one- or two-page excerpt repetition cannot show, so a band line carrying a
    page number ("Title of the paper 9") counts as a running header too. The blocks given are
    left as they are (a page read once may be stripped twice: for the outline check, then for
    its parse)."""
    out: list[Block] = []

    def running(ln: Line) -> bool:
        return furniture_key(ln.text) in repeated or is_page_number(ln.text)

    def running_edge(ln: Line) -> bool:
        """Repetition says less off the bands: a short line, in a document long enough."""
        if is_page_number(ln.text):
            return True
        short = len(ln.text.split()) <= MAX_RUNNING_WORDS
        return short and not short_document and furniture_key(ln.text) in repeated

    # Off the bands, a running line is peeled only from the ends of the page's text, set apart
    # from the text it ends by a blank line at least, never in a larger type than the page's
    # usual (a chapter's big "1" over its title is a heading), and never the page's last line.
    inner = [ln for ln in _edge_order(blocks) if not (in_band(ln, height) and running(ln))]
    usual = statistics.median(ln.size for ln in inner) if inner else 0.0
    peeled: set[int] = set()
    for end in (inner, inner[::-1]):
        run: list[Line] = []
        for ln in end[: min(EDGE_LINES, len(inner) - 1 - len(peeled))]:
            if not running_edge(ln) or ln.size > usual + 0.5:
                break
            run.append(ln)
        while run and _gap(run[-1], end[len(run)]) < run[-1].size:
            run.pop()  # not set apart from the text that follows: part of it
        peeled.update(id(ln) for ln in run)

    def furniture(ln: Line) -> bool:
        if id(ln) in peeled:
            return True
        if not in_band(ln, height):
            return False
        if running(ln):
            return True
        return short_document and bool(_NUMBERED_HEADER.match(ln.text))

    for b in blocks:
        if short_document and _header_block(b, height):
            continue
        kept = [ln for ln in b.lines if not furniture(ln)]
        if kept:
            out.append(b if len(kept) == len(b.lines) else replace(b, lines=kept))
    return out
