"""Heading evidence for PDF text, strongest first: embedded TOC, numbering and chapter
markers, font geometry, and (only when configured) an LLM for the still-ambiguous rest.

Everything here works on `Segment`s: runs of consecutive lines of one block that share a
style, so a bold heading line on top of its paragraph is judged on its own.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from corpus_pipeline.contracts import PdfTocEntry
from corpus_pipeline.enrich.llm import ChatModel, LLMFailure
from corpus_pipeline.parsing.pdf.layout import BBox, Line, union

Kind = Literal["numbered", "size", "bold"]

_ROMAN = r"(?:X{0,3})(?:IX|IV|V?I{0,3})"
_NUMBERED = re.compile(
    rf"^(?:(?P<num>\d{{1,3}}(?:\.\d{{1,3}}){{0,5}})\.?|(?P<alpha>[A-Z])\.|(?P<roman>{_ROMAN})\.|"
    r"(?P<paren>\(\d{1,2}\)|\d{1,2}\)|\([a-z]\)))\s+\S"
)
_CHAPTER = re.compile(
    r"^(?:chapter|kapitel|chapitre|cap[ií]tulo|capitolo|hoofdstuk|part|teil|partie|appendix|"
    r"anhang|annexe|annex|ap[eé]ndice)\s+([0-9]+|[A-Z]|[IVXLC]+)\b|^第\s*[0-9一二三四五六七八九十百]+\s*[章節部篇]",
    re.I,
)
# Numbering schemes of reports and filings, each with the level it names: a filing's PART holds
# its Items and Item 1 its Notes; chapters, parts, annexes and appendices open top-level
# divisions; "Section 3.2" is as deep as its number.
_SCHEMES: tuple[tuple[re.Pattern[str], int | None], ...] = (
    (_CHAPTER, 1),
    (re.compile(r"^item\s+\d{1,2}[A-Z]?\s*[.:–—-]", re.I), 2),
    (re.compile(r"^note\s+\d{1,3}\s*[.:–—-]", re.I), 3),
    (re.compile(r"^section\s+(\d{1,3}(?:\.\d{1,3}){0,4})\b", re.I), None),
)
# A line that is nothing but a scheme's label ("PART I.", "Item 1A.", "Note 7 –"): the title
# often sits beside it on the same baseline.
_LABEL_ONLY = re.compile(
    r"^(?:part|item|note|section|chapter|annex|appendix)\s+[0-9IVXLC]{1,4}[A-Z]?(?:\.\d+)*"
    r"\s*[.:–—-]?$|^\d{1,3}(?:\.\d{1,3}){0,5}\.?$",
    re.I,
)
BULLET = re.compile(r"^\s*[•◦▪▫‣⁃●○■□➢►▶✓✔∙·]")
# A web address on its own line (a publisher's site on a cover or in a footer) is not a section.
WEB_ADDRESS = re.compile(
    r"^(?:https?://\S+|www\.\S+|(?:[\w-]+\.)+(?:com|org|net|edu|gov|int|io|info|biz|co|eu|de|uk|fr)(?:/\S*)?)$",
    re.IGNORECASE,
)
# A date on its own ("July 1, 2023", "30 June 2022", "2023-07-01") labels a column or a cover,
# never a section.
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
DATE_ONLY = re.compile(
    rf"^(?:{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}|\d{{1,2}}\.?\s+{_MONTH}\s+\d{{4}}|"
    rf"{_MONTH}\s+\d{{4}}|\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}})$",
    re.I,
)
CAPTION = re.compile(
    r"^\s*(?:figure|fig\.|abbildung|abb\.|image|chart|graph|table|tab\.|tabelle|tableau)\s*"
    r"[\dIVX]+[a-z]?\s*[:.\-–—]?",
    re.I,
)


@dataclass(slots=True)
class Segment:
    """Consecutive same-style lines of one block (the unit a heading decision is made on)."""

    page: int
    block: int
    lines: list[Line]
    whole_block: bool
    gap_above: float
    first_in_block: bool = True
    after_object: bool = False  # a table or image precedes it in reading order
    beside: bool = False  # other text shares its baseline: a table row, not a heading
    scheme: bool = False  # numbered by a report/filing scheme (PART, Item, Note, Chapter …)
    kind: Kind | None = None
    depth: int | None = None
    level: int | None = None
    toc: bool = False
    heading: bool = False
    absorbed: bool = False  # merged into the heading above (a title wrapped over two blocks)

    _text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = join_lines([ln.text for ln in self.lines])
        return self._text

    @property
    def size(self) -> float:
        sizes: Counter[float] = Counter()
        for ln in self.lines:
            sizes[ln.size] += len(ln.text)
        return sizes.most_common(1)[0][0]

    @property
    def bold(self) -> bool:
        return all(ln.bold for ln in self.lines)

    @property
    def italic(self) -> bool:
        return all(ln.italic for ln in self.lines)

    @property
    def style(self) -> tuple[float, bool, bool, str]:
        return (self.size, self.bold, self.italic, self.lines[0].font)

    @property
    def bbox(self) -> BBox:
        return union(ln.bbox for ln in self.lines)


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")


def join_lines(lines: list[str]) -> str:
    """Join wrapped lines: drop end-of-line hyphens before a lower-case continuation; no space
    between CJK ideographs."""
    out = ""
    for raw in lines:
        text = raw.strip()
        if not text:
            continue
        if not out:
            out = text
        elif out.endswith("-") and len(out) > 1 and out[-2].isalpha() and text[:1].islower():
            out = out[:-1] + text
        elif _CJK.match(out[-1]) and _CJK.match(text[0]):
            out += text
        else:
            out += " " + text
    return out


def scheme_level(text: str) -> int | None:
    """Level named by a report/filing numbering scheme ("PART II" → 1, "Item 1A." → 2,
    "Note 7 –" → 3, "Section 3.2" → 2, "Chapter 4"/"Annex B" → 1), else None."""
    for pattern, level in _SCHEMES:
        m = pattern.match(text)
        if m:
            return level if level is not None else m.group(1).count(".") + 1
    return None


def numbering_depth(text: str) -> int | None:
    """Depth of a leading section number (`1.2.3 Title` → 3, `A. Title` → 1), a scheme's
    level (see `scheme_level`)."""
    level = scheme_level(text)
    if level is not None:
        return level
    m = _NUMBERED.match(text)
    if not m:
        return None
    if m.group("num"):
        return m.group("num").count(".") + 1
    if m.group("roman") or m.group("alpha"):
        return 1
    return 0  # "(1)", "a)": numbered, but the depth is unknown (the font decides)


@dataclass
class Stats:
    """Body style of the text being read; the yardstick for "larger" and "bolder"."""

    body_size: float
    bold_is_signal: bool
    italic_is_signal: bool
    body_font: str


def style_stats(segments: list[Segment], body_hint: float | None) -> Stats:
    sizes: Counter[float] = Counter()
    fonts: Counter[str] = Counter()
    bold = italic = chars = 0
    for seg in segments:
        for ln in seg.lines:
            n = len(ln.text)
            sizes[ln.size] += n
            fonts[ln.font] += n
            chars += n
            bold += n if ln.bold else 0
            italic += n if ln.italic else 0
    body = body_hint or (sizes.most_common(1)[0][0] if sizes else 10.0)
    # Where a fifth of the text is bold, bold marks emphasis or tables, not headings.
    return Stats(
        body_size=max(body, 1.0),
        bold_is_signal=bold < 0.2 * max(chars, 1),
        italic_is_signal=italic < 0.1 * max(chars, 1),
        body_font=fonts.most_common(1)[0][0] if fonts else "",
    )


def classify(seg: Segment, nxt: Segment | None, stats: Stats) -> tuple[Kind | None, int | None]:
    """Rule-based heading evidence for one segment: (kind, numbering depth)."""
    if len(seg.lines) > 3:  # cheap exit first: most segments are paragraph blocks
        return None, None
    text = seg.text
    n = len(text)
    words = len(text.split())
    letters = sum(ch.isalpha() for ch in text)
    ratio = seg.size / stats.body_size
    if n == 0 or n > 160 or len(seg.lines) > 3 or words > 20 or seg.beside:
        return None, None
    if letters == 0:
        # A bare chapter number set large ("1" above the chapter title).
        if text.isdigit() and len(text) <= 2 and ratio >= 1.5:
            return "size", None
        return None, None
    if letters < 2 or CAPTION.match(text) or text[-1] in ",;" or text.endswith("-"):
        return None, None
    if BULLET.match(text) or WEB_ADDRESS.match(text) or DATE_ONLY.match(text):
        return None, None
    if nxt is not None and nxt.block == seg.block and nxt.text[:1].islower():
        return None, None  # the run continues mid-sentence: emphasis, not a heading
    larger = ratio >= 1.12
    bold = seg.bold and stats.bold_is_signal and ratio >= 0.75
    italic = (
        seg.italic
        and stats.italic_is_signal
        and ratio >= 0.9
        and seg.first_in_block
        and not seg.whole_block
        and text[:1].isupper()
    )
    isolated = seg.whole_block and len(seg.lines) == 1 and seg.gap_above >= 1.2 * stats.body_size
    other_font = seg.lines[0].font != stats.body_font and ratio >= 1.05
    depth = numbering_depth(text)
    sentence = text.endswith((".", ":", "!", "?")) and words > 6
    # A document's own numbering scheme ("PART I", "Item 2.", "Note 7 –") is evidence enough for
    # a bold line a little smaller than the body text (filings set them at the notes' size).
    scheme_bold = bold and depth is not None and scheme_level(text) is not None
    min_ratio = 0.8 if scheme_bold else 0.95
    if (
        depth is not None
        and ratio >= min_ratio
        and (larger or bold or isolated or other_font)
        and not sentence
        and words <= 15
    ):
        return "numbered", depth or None
    if larger and not sentence:
        return "size", None
    emphasis = bold or (italic and n <= 60 and len(seg.lines) == 1)
    if emphasis and n <= 100 and words <= 12 and not text.endswith((".", ":")):
        return "bold", None
    return None, None


def side_by_side(seg: Segment, page_lines: list[Line], cuts: list[float]) -> bool:
    """True when a segment reads as a table row or a contents line: its own lines sit side by
    side on one baseline ("Three Months Ended   Nine Months Ended"), unless one is only a
    number label ("PART I." + "FINANCIAL INFORMATION", "Introduction" + "1"); or other text of the same column
    shares its baseline (a page number, a neighbouring cell; a section number before its
    title does not count)."""
    own = {id(ln) for ln in seg.lines}
    for a, b in itertools.pairwise(seg.lines):
        label = _LABEL_ONLY.match(a.text.strip()) or _LABEL_ONLY.match(b.text.strip())
        if _same_baseline(a, b) and not label:
            return True
    for ln in seg.lines:
        top, bottom = ln.bbox[1], ln.bbox[3]
        for other in page_lines:
            if other.bbox[1] >= bottom or other.bbox[3] <= top:
                continue  # no vertical overlap (most lines of the page): cheap before the rest
            if id(other) in own or not other.text.strip() or not _same_baseline(ln, other):
                continue
            if other.bbox[2] <= ln.bbox[0] + 1.0 and _LABEL_ONLY.match(other.text.strip()):
                continue  # the section number set apart before its title
            lo, hi = sorted((ln.bbox[0], other.bbox[0]))
            if not any(lo < cut < hi for cut in cuts):
                return True
    return False


def _same_baseline(a: Line, b: Line) -> bool:
    """Vertically overlapping by more than half of the lower line, side by side."""
    overlap = min(a.bbox[3], b.bbox[3]) - max(a.bbox[1], b.bbox[1])
    height = min(a.bbox[3] - a.bbox[1], b.bbox[3] - b.bbox[1])
    apart = a.bbox[2] <= b.bbox[0] + 1.0 or b.bbox[2] <= a.bbox[0] + 1.0
    return height > 0 and overlap > 0.5 * height and apart


_PAGE_NUMBER = re.compile(r"^(?:\d{1,4}|[ivxlc]{1,6}|[A-Z]-\d{1,3})$", re.I)
_CONTENTS_TITLE = re.compile(
    r"^(?:table\s+of\s+)?contents$|^index$|^inhalt(?:sverzeichnis)?$", re.I
)


def contents_page(page_lines: list[Line], width: float) -> bool:
    """A contents page: four or more entries, each a line of words ending in a page number at
    the right margin (nothing else on that baseline but an optional label such as "Item 1."),
    with the page numbers rising down the page. A table's rows end in figures too, but carry
    several of them per row and in no order."""
    pages: list[tuple[float, int]] = []
    for num in page_lines:
        text = num.text.strip()
        if not _PAGE_NUMBER.match(text) or not text.isdigit() or num.bbox[0] < 0.6 * width:
            continue
        row = [o for o in page_lines if o is not num and _same_baseline(o, num)]
        if not 1 <= len(row) <= 2 or any(o.bbox[0] > num.bbox[0] for o in row):
            continue
        words = " ".join(o.text for o in row if not _LABEL_ONLY.match(o.text.strip())).split()
        if sum(any(ch.isalpha() for ch in w) for w in words) < 2:
            continue
        if any(w.replace(",", "").replace(".", "").isdigit() for w in words[1:]):
            continue
        pages.append((num.bbox[1], int(text)))
    numbers = [n for _, n in sorted(pages)]
    rising = sum(1 for a, b in itertools.pairwise(numbers) if b >= a)
    return len(numbers) >= 4 and rising >= 0.8 * (len(numbers) - 1)


def demote_contents(segments: list[Segment]) -> None:
    """On a contents page only its title is a heading; the entries point at the real ones."""
    for seg in segments:
        if seg.heading and not seg.toc and not _CONTENTS_TITLE.match(seg.text.strip()):
            seg.heading = False
            seg.kind = None


def demote_running(segments: list[Segment], page_height: dict[int, float]) -> None:
    """A candidate text that recurs on three or more pages, mostly in the top or bottom band,
    is a running header or footer (a company name, a report title), never a section."""
    places: dict[str, list[Segment]] = {}
    for seg in segments:
        if seg.heading and not seg.toc and not seg.scheme:
            places.setdefault(norm(seg.text), []).append(seg)
    for group in places.values():
        if len({s.page for s in group}) < 3:
            continue
        banded = sum(
            1
            for s in group
            if s.bbox[1] < 0.12 * page_height.get(s.page, 792.0)
            or s.bbox[3] > 0.88 * page_height.get(s.page, 792.0)
        )
        if banded * 2 >= len(group):
            for seg in group:
                seg.heading = False
                seg.kind = None


def demote_empty(segments: list[Segment]) -> None:
    """A heading followed straight by one of a higher level, with no text of its own between
    (the lines of a cover above the document's first part), opens no section: it is read as
    text of the section it sits in. Equal levels are left alone: a parent whose children were
    set in its own style looks the same."""
    heads = [i for i, s in enumerate(segments) if s.heading and s.level is not None and not s.toc]
    for a, b in itertools.pairwise(heads):
        cur, nxt = segments[a], segments[b]
        if cur.scheme:
            continue
        between = segments[a + 1 : b]
        if all(s.absorbed or not s.text.strip() for s in between) and (
            nxt.level is not None and cur.level is not None and nxt.level < cur.level
        ):
            cur.heading = False
            cur.kind = None
            cur.level = None


def demote_lists(segments: list[Segment]) -> None:
    """Three or more same-style candidates in a row with no text between are a list (or a
    contents page), not a heading sequence. Scheme-numbered headings ("Item 2.", "Note 3 –")
    are strong evidence on their own and never part of such a run."""
    i = 0
    while i < len(segments):
        if not segments[i].heading or segments[i].toc or segments[i].scheme:
            i += 1
            continue
        j = i
        first = segments[i]
        while (
            j + 1 < len(segments)
            and (segments[j + 1].heading or BULLET.match(segments[j + 1].text))
            and not segments[j + 1].toc
            and not segments[j + 1].scheme
            and not segments[j + 1].after_object
            and (
                segments[j + 1].style[:3] == first.style[:3]
                or (first.kind == "bold" and segments[j + 1].kind == "bold")
            )
        ):
            j += 1
        if j - i + 1 >= 3:
            for seg in segments[i : j + 1]:
                seg.heading = False
                seg.kind = None
        i = j + 1


def assign_levels(segments: list[Segment], tiers: list[tuple[float, bool]], floor: int = 0) -> int:
    """Levels for rule-based headings: a scheme's level or the numbering depth first; font
    clustering (rank of the size among the heading styles seen, largest first, at most 4)
    places the rest, never above the scheme heading that holds them ("Cash Equivalents" under
    "Note 3 –" sits below it). `tiers` and the returned `floor` (level of the last scheme
    heading) persist across ranges."""
    for seg in segments:
        if seg.heading and not seg.toc and not (seg.kind == "numbered" and seg.depth):
            key = _tier(seg)
            if key not in tiers:
                tiers.append(key)
    tiers.sort(key=lambda k: (-k[0], k[1]))
    for seg in segments:
        if not seg.heading or seg.toc:
            continue
        if seg.kind == "numbered" and seg.depth:
            seg.level = min(seg.depth, 4)
            if seg.scheme:
                floor = seg.level
        else:
            seg.level = max(min(tiers.index(_tier(seg)) + 1, 4), floor + 1)
    return floor


def _tier(seg: Segment) -> tuple[float, bool]:
    """Size decides the level; body-size emphasis (bold/italic) sits below every larger size."""
    return (seg.size, seg.kind == "bold")


# --------------------------------------------------------------------------------------------
# Embedded TOC


def norm(text: str) -> str:
    """Comparison key: NFKC, case-folded, no whitespace (PDF spacing is unreliable)."""
    return "".join(unicodedata.normalize("NFKC", text).casefold().split())


def toc_reliable(entries: list[PdfTocEntry], page_text: dict[int, str]) -> bool:
    """An outline copied from a larger document points at pages without those titles; trust
    it only when most sampled entries are found on their target page."""
    checked = found = 0
    for e in entries[:40]:
        if e.page < 1 or e.page not in page_text:
            continue
        checked += 1
        found += norm(e.title) in page_text[e.page]
    return checked > 0 and found * 2 >= checked


def match_toc(entries: list[PdfTocEntry], segments: list[Segment]) -> list[PdfTocEntry]:
    """Mark the segment each TOC entry points at (fuzzy title match on its page, nearest to
    the target y); returns the entries that matched no line."""
    by_page: dict[int, list[Segment]] = {}
    for seg in segments:
        by_page.setdefault(seg.page, []).append(seg)
    unmatched: list[PdfTocEntry] = []
    for e in entries:
        key = norm(e.title)
        best: tuple[float, Segment] | None = None
        for seg in by_page.get(e.page, []):
            if seg.toc or len(seg.lines) > 4:
                continue
            text = norm(seg.text)
            if not text:
                continue
            if text == key:
                score = 1.0
            elif text.startswith(key) and len(key) >= 0.6 * len(text):
                score = 0.95
            else:
                score = difflib.SequenceMatcher(None, key, text, autojunk=False).ratio()
            if score < 0.8:
                continue
            if e.y is not None:
                score -= min(abs(seg.bbox[1] - e.y), 400.0) / 4000.0
            if best is None or score > best[0]:
                best = (score, seg)
        if best is None:
            unmatched.append(e)
            continue
        seg = best[1]
        seg.toc = seg.heading = True
        seg.level = min(e.level, 9)
    return unmatched


# --------------------------------------------------------------------------------------------
# LLM for ambiguous candidates (hierarchy role)

_PROMPT = (
    "Each numbered line below was taken from a PDF page and might be a section heading. Answer "
    "with a JSON object mapping the line number to true (heading) or false (not a heading). "
    "Body font size is {body:.1f} pt.\n\n{lines}"
)


@dataclass
class LLMJudge:
    """Asks the hierarchy model about bold-only candidates; any failure keeps the rules."""

    model: ChatModel
    errors: list[str] = field(default_factory=list)

    def judge(self, candidates: list[Segment], body: float) -> dict[int, bool]:
        if not candidates:
            return {}
        listing = "\n".join(
            f"{i}. [{c.size:.1f}pt{' bold' if c.bold else ''}] {c.text[:160]}"
            for i, c in enumerate(candidates)
        )
        try:
            content = self.model.complete(_PROMPT.format(body=body, lines=listing)) or "{}"
            start, end = content.find("{"), content.rfind("}")
            data = json.loads(content[start : end + 1]) if start >= 0 else {}
            return {int(k): bool(v) for k, v in data.items() if str(k).isdigit()}
        except LLMFailure as exc:
            self.errors.append(f"hierarchy model failed ({exc}); rules kept")
        except (ValueError, TypeError, AttributeError) as exc:
            self.errors.append(f"hierarchy model failed ({type(exc).__name__}); rules kept")
        return {}


WRAP_SIZE_TOLERANCE = 0.12


def _same_face(a: Segment, b: Segment) -> bool:
    """Same font, weight and slant, sizes within 12 %: display titles are often set a size
    smaller on their second line so it fits (33 pt then 30 pt)."""
    if (a.bold, a.italic, a.lines[0].font) != (b.bold, b.italic, b.lines[0].font):
        return False
    return abs(a.size - b.size) <= WRAP_SIZE_TOLERANCE * max(a.size, b.size)


def merge_wrapped(segments: list[Segment]) -> None:
    """Join a heading wrapped over two blocks (same face, next line right below) into one."""
    prev: Segment | None = None
    for seg in segments:
        if (
            prev is not None
            and seg.heading
            and prev.heading
            and not seg.toc
            and not prev.toc
            and seg.page == prev.page
            and _same_face(seg, prev)
            and numbering_depth(seg.text) is None
            and 0 <= seg.bbox[1] - prev.bbox[3] <= 0.8 * seg.size
        ):
            prev.lines = prev.lines + seg.lines
            prev._text = None
            seg.heading = False
            seg.absorbed = True
            continue
        prev = seg
