"""OCR of page images with Tesseract (pytesseract), keeping Tesseract's paragraphs and lines.

A scanned page has no text layer: it is rendered at 300 dpi and read with `image_to_data`, whose
block/paragraph/line numbers give the same paragraph structure the text-layer path produces.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from corpus_pipeline.parsing.pdf.headings import join_lines
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


def ocr_page(page: Page, lang: str) -> list[OcrParagraph]:
    """Paragraphs of one rendered page in Tesseract's reading order."""
    import pytesseract
    from PIL import Image

    pix = page.get_pixmap(dpi=DPI)
    image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    del pix
    data = pytesseract.image_to_data(image, lang=lang, output_type=pytesseract.Output.DICT)
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
