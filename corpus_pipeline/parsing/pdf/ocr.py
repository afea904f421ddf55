"""OCR of page images with Tesseract (pytesseract), keeping Tesseract's paragraphs and lines.

A scanned page has no text layer: it is rendered at 300 dpi and read with `image_to_data`, whose
block/paragraph/line numbers give the same paragraph structure the text-layer path produces.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from typing import Any

from corpus_pipeline.parsing.pdf.headings import join_lines, numbering_depth
from corpus_pipeline.parsing.pdf.layout import BBox

# PyMuPDF is only partly annotated; its objects are handled as `Any` so strict mypy stays useful.
Page = Any

DPI = 300
# ISO 639-1 (profile language guess) → Tesseract traineddata name.
_TESSERACT_LANG = {
    "en": "eng", "de": "deu", "fr": "fra", "es": "spa", "it": "ita", "pt": "por", "nl": "nld",
    "sv": "swe", "da": "dan", "no": "nor", "fi": "fin", "pl": "pol", "cs": "ces", "ru": "rus",
    "uk": "ukr", "tr": "tur", "el": "ell", "ar": "ara", "he": "heb", "ko": "kor", "ja": "jpn",
    "zh": "chi_sim", "hi": "hin", "hu": "hun", "ro": "ron",
}  # fmt: skip


@dataclass(frozen=True)
class OcrParagraph:
    text: str
    bbox: BBox  # points
    line_height: float  # points


@cache
def tesseract_version() -> str | None:
    """The Tesseract version, or None when the binary (or pytesseract) is missing."""
    try:
        import pytesseract

        return str(pytesseract.get_tesseract_version())
    except Exception:  # missing binary raises TesseractNotFoundError, or OSError
        return None


@cache
def _installed() -> frozenset[str]:
    try:
        import pytesseract

        return frozenset(pytesseract.get_languages(config=""))
    except Exception:
        return frozenset({"eng"})


def tesseract_lang(language: str | None) -> str:
    """The profile's language as an installed Tesseract language, else English."""
    code = _TESSERACT_LANG.get(language or "", "eng")
    return code if code in _installed() else "eng"


def render_page(page: Page) -> Any:
    """The page as an RGB PIL image at `DPI` (PyMuPDF is not thread-safe: render here, in the
    parser's thread, and recognise anywhere)."""
    from PIL import Image

    pix = page.get_pixmap(dpi=DPI)
    image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    del pix
    return image


def page_seconds(parse_timeout_seconds: float) -> float:
    """How long one page's recognition may run: a third of the parse time limit (0: no limit).
    A page of noise (a damaged scan) keeps Tesseract busy for many minutes (over 400 s for one
    A4 page); stopped, it loses its text with a diagnostic, where the whole document would
    otherwise fail at the parse limit."""
    return parse_timeout_seconds / 3 if parse_timeout_seconds > 0 else 0.0


def recognise(image: Any, lang: str, timeout: float = 0.0) -> list[OcrParagraph]:
    """Paragraphs of a page image rendered at `DPI`, in Tesseract's reading order; past
    `timeout` seconds (0: none) Tesseract is stopped and a RuntimeError raised.

    Tesseract runs single-threaded (`OMP_THREAD_LIMIT=1` unless set): its OpenMP threads
    spin against each other and against the other pages' recognition, which runs side by side
    (one 300-dpi slide took 5.1 s with OpenMP on a busy 2-core machine, 2.0 s without)."""
    import pytesseract

    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    data = pytesseract.image_to_data(
        image, lang=lang, output_type=pytesseract.Output.DICT, timeout=timeout
    )
    scale = 72.0 / DPI
    paragraphs: dict[tuple[int, int], dict[int, list[int]]] = {}
    for i, word in enumerate(data["text"]):
        if not str(word).strip() or float(data["conf"][i]) < 0:
            continue
        key = (int(data["block_num"][i]), int(data["par_num"][i]))
        paragraphs.setdefault(key, {}).setdefault(int(data["line_num"][i]), []).append(i)
    out: list[OcrParagraph] = []
    for lines in paragraphs.values():
        texts: list[str] = []
        heights: list[float] = []
        xs0: list[float] = []
        ys0: list[float] = []
        xs1: list[float] = []
        ys1: list[float] = []
        for idxs in lines.values():
            texts.append(" ".join(str(data["text"][i]).strip() for i in idxs))
            for i in idxs:
                left, top = float(data["left"][i]), float(data["top"][i])
                w, h = float(data["width"][i]), float(data["height"][i])
                xs0.append(left)
                ys0.append(top)
                xs1.append(left + w)
                ys1.append(top + h)
                heights.append(h)
        text = join_lines(texts)
        if text:
            out.append(
                OcrParagraph(
                    text=text,
                    bbox=(min(xs0) * scale, min(ys0) * scale, max(xs1) * scale, max(ys1) * scale),
                    line_height=sorted(heights)[len(heights) // 2] * scale,
                )
            )
    return out


# A scanned heading: one line, a title's length, no sentence end.
_MAX_HEADING_WORDS = 12
_MAX_HEADING_CHARS = 90
TITLE_HEIGHT_RATIO = 1.3


def body_line_height(paragraphs: list[OcrParagraph]) -> float | None:
    """The line height most of a page's text is set in (median weighted by characters)."""
    weighted = sorted((p.line_height, len(p.text)) for p in paragraphs if p.text)
    total = sum(n for _, n in weighted)
    seen = 0
    for height, n in weighted:
        seen += n
        if seen * 2 >= total:
            return height
    return None


def ocr_heading_level(paragraph: OcrParagraph, body_height: float | None) -> int | None:
    """The heading level of an OCR paragraph, or None for body text.

    A scan has no fonts, so only what survives as pixels counts: a single short line without a
    sentence end that is numbered like a section (`3.1 Results` → level 2), written in capitals
    (`ABSTRACT` → 2), or set clearly larger than the body text (a title → 1)."""
    text = paragraph.text.strip()
    top, bottom = paragraph.bbox[1], paragraph.bbox[3]
    if (
        not text
        or bottom - top > 1.7 * paragraph.line_height  # more than one line
        or len(text) > _MAX_HEADING_CHARS
        or len(text.split()) > _MAX_HEADING_WORDS
        or text.endswith((".", ",", ";"))
        or not any(ch.isalpha() for ch in text)
    ):
        return None
    large = body_height is not None and paragraph.line_height >= TITLE_HEIGHT_RATIO * body_height
    depth = numbering_depth(text)
    words = text.split()
    if depth and len(words) >= 2 and words[1][:1].isupper():
        return min(depth, 6)
    letters = [ch for ch in text if ch.isalpha()]
    wordy = len(letters) >= 0.6 * len(text.replace(" ", ""))  # not a code or an identifier
    if len(letters) >= 4 and wordy and all(ch.isupper() for ch in letters):
        return 1 if large else 2
    if large and text[:1].isupper():
        return 1
    return None
