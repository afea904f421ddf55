"""Image strategy: a scan or picture is stored as an image and read with OCR.

Pillow decodes the file (TIFF with several pages, PNG, JPEG, WebP, GIF, BMP, …). Every frame
is stored as an image row (so a photo without text is still found and cited, and a vision
model can describe it), then the frames become the pages of a temporary PDF — one page per
frame, sized by the image's own resolution — which the PDF parser reads through its scan path:
Tesseract OCR with paragraphs, headings from line geometry and numbering, tables where the
layout shows them. One reading of scanned pages, whatever container they came in.
"""

from __future__ import annotations

import io
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymupdf
from PIL import Image, UnidentifiedImageError

from corpus_pipeline.common.errors import CorruptDocumentError
from corpus_pipeline.contracts import RowType
from corpus_pipeline.parsing.base import DiagnosticSink, ParseContext

_mupdf: Any = pymupdf  # PyMuPDF is only partly annotated
# Resolution assumed when the file does not state one (typical of screenshots and photos).
DEFAULT_DPI = 150.0
# Frames read from one file at most (a TIFF can hold thousands of pages).
MAX_FRAMES = 500
# What Pillow raises for a damaged header or frame: besides its own errors, a TIFF without
# dimensions is a TypeError, short or inconsistent records are struct errors and lookups.
_DAMAGE = (
    UnidentifiedImageError,
    OSError,
    ValueError,
    EOFError,
    SyntaxError,
    TypeError,
    LookupError,
    struct.error,
)


@dataclass(frozen=True)
class Frame:
    png: bytes
    width_pt: float
    height_pt: float


def read_frames(
    path: Path, max_frames: int = MAX_FRAMES, diagnostics: DiagnosticSink | None = None
) -> tuple[list[Frame], int]:
    """The image's frames as PNG with their page size in points, and the total frame count.

    One frame that cannot be decoded (a damaged page of a multi-page TIFF) is recorded in
    `diagnostics` and skipped; the file is corrupt only when no frame can be read at all.
    """
    sink = diagnostics if diagnostics is not None else DiagnosticSink()
    try:
        with Image.open(path) as image:
            total = getattr(image, "n_frames", 1)
            frames: list[Frame] = []
            first_error: BaseException | None = None
            file_dpi = image.info.get("dpi")
            for index in range(min(total, max_frames)):
                with sink.part(
                    "image",
                    f"frame {index + 1} could not be decoded; skipped",
                    page=index + 1,
                    code="image.frame_failed",
                ) as part:
                    frames.append(_frame(image, index, file_dpi))
                if part.failed and first_error is None:
                    first_error = part.error
            if not frames and first_error is not None:
                raise first_error
    except Image.DecompressionBombError as exc:
        raise CorruptDocumentError(
            "image", f"the image is too large to decode safely (over {2 * _max_pixels():,} pixels)"
        ) from exc
    except _DAMAGE as exc:
        raise CorruptDocumentError(
            "image", f"the image cannot be decoded ({type(exc).__name__})"
        ) from exc
    return frames, total


def _frame(image: Any, index: int, file_dpi: object) -> Frame:
    if index:
        image.seek(index)
    dpi = _dpi(image.info.get("dpi") or file_dpi)
    rgb = image.convert("L" if image.mode in ("1", "L", "I;16") else "RGB")
    buf = io.BytesIO()
    rgb.save(buf, format="PNG")
    return Frame(buf.getvalue(), rgb.width * 72 / dpi, rgb.height * 72 / dpi)


def _max_pixels() -> int:
    """Pillow's decompression-bomb guard (it refuses images over twice this many pixels)."""
    return int(Image.MAX_IMAGE_PIXELS or 0)


def _dpi(value: object) -> float:
    try:
        x = float(value[0]) if isinstance(value, tuple | list) else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, IndexError):
        return DEFAULT_DPI
    return x if 30 <= x <= 2400 else DEFAULT_DPI


def frames_to_pdf(frames: list[Frame], dest: Path) -> Path:
    """A PDF with one page per frame, the frame filling the page."""
    doc: Any = _mupdf.open()
    for frame in frames:
        page = doc.new_page(width=frame.width_pt, height=frame.height_pt)
        page.insert_image(page.rect, stream=frame.png)
    doc.save(dest, deflate=True)
    doc.close()
    return dest


def parse_image(ctx: ParseContext) -> None:
    from corpus_pipeline.parsing.pdf.document import parse_pdf

    frames, total = read_frames(ctx.source_path, diagnostics=ctx.diagnostics)
    if total > len(frames):
        ctx.diagnostics.add(
            "parse", "image.frames_limited", f"read {len(frames)} of {total} frames"
        )
    stored = set()
    for number, frame in enumerate(frames, start=1):
        row = ctx.emit_image(frame.png, "", f"frame {number}", page_numbers=[number])
        if row is not None and row.resource_path:
            stored.add(row.resource_path)
    with tempfile.TemporaryDirectory(prefix="corpus-image-") as tmp:
        pdf_path = frames_to_pdf(frames, Path(tmp) / "frames.pdf")
        pages = ParseContext(
            source_path=pdf_path,
            source_file_name=ctx.source_file_name,
            profile=ctx.profile,
            workdir=ctx.workdir,
            settings=ctx.settings,
        )
        # One document: the PDF reading shares this parse's resources and warnings.
        pages.diagnostics = ctx.diagnostics
        pages.resources = ctx.resources
        parse_pdf(pages)
    for row in pages.rows:
        if row.row_type is RowType.IMAGE and row.resource_path in stored:
            continue  # a page without OCR text comes back as its own picture: stored above
        ctx.emit(
            row.row_type,
            row.text,
            row.source_location,
            heading_level=row.heading_level,
            page_numbers=row.page_numbers,
            resource_path=row.resource_path,
            links=row.links,
        )
