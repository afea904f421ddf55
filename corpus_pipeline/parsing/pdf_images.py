"""PDF images: pull each placed raster image out once, as a deterministic PNG, and drop
decorations (tiny icons, rules, logos repeated on many pages) that would only add noise.

PNG bytes must not vary between runs: the ResourceSink dedupes by byte hash first and reruns
should produce identical files, so encoding goes through PyMuPDF's PNG writer, which writes no
timestamp or other metadata (checked by a test that encodes twice).
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pymupdf

MIN_SIDE_PX = 32  # icons, bullets and spacer images are smaller
MIN_AREA_SHARE = 0.01  # placements under 1 % of the page are decorations
PHASH_MAX_DISTANCE = 4  # same as ResourceSink: re-encoded copies of one picture
REPEAT_MIN_PAGES = 3
REPEAT_PAGE_SHARE = 0.5
REPEAT_LOOKAHEAD = 6  # pages read ahead when an xref is first met


@dataclass(frozen=True)
class PdfImage:
    """One extracted image: `bbox` is its first placement on `page` (PDF points)."""

    page: int
    bbox: tuple[float, float, float, float]
    xref: int
    data: bytes
    width: int
    height: int


def extract_images(
    doc: pymupdf.Document, page: pymupdf.Page, page_number: int, seen_xrefs: set[int]
) -> list[PdfImage]:
    """Images placed on this page, in placement order, each xref at most once per document.

    Inline images (xref 0) have no object to extract and are skipped. An xref shared by many
    pages (a logo referenced from every page) is recognised here from the page resources,
    because once-per-xref extraction would otherwise hide its repetition from `drop_repeated`.
    """
    page_api: Any = page
    page_area = abs(page_api.rect) or 1.0
    out: list[PdfImage] = []
    for info in page_api.get_image_info(xrefs=True):
        xref = int(info.get("xref") or 0)
        if xref <= 0 or xref in seen_xrefs:
            continue
        width, height = int(info.get("width", 0)), int(info.get("height", 0))
        if width < MIN_SIDE_PX or height < MIN_SIDE_PX:
            seen_xrefs.add(xref)
            continue
        bbox = tuple(float(v) for v in info["bbox"])
        shown = max(bbox[2] - bbox[0], 0.0) * max(bbox[3] - bbox[1], 0.0)
        if shown < MIN_AREA_SHARE * page_area:
            continue  # not marked seen: the same image may be shown large elsewhere
        seen_xrefs.add(xref)
        if _shared_by_many_pages(doc, xref, int(page_api.number)):
            continue
        pix = _pixmap(doc, xref)
        if pix is None:
            continue
        out.append(
            PdfImage(
                page=page_number,
                bbox=(bbox[0], bbox[1], bbox[2], bbox[3]),
                xref=xref,
                data=pix.tobytes("png"),
                width=pix.width,
                height=pix.height,
            )
        )
    return out


def _shared_by_many_pages(doc: pymupdf.Document, xref: int, page_index: int) -> bool:
    """The repetition rule of `drop_repeated`, applied to one xref via the next pages' resources.

    Only a window of following pages is read (each lookup costs ~0.2 ms): running logos and
    watermarks recur on neighbouring pages, and short documents are covered completely.
    """
    api: Any = doc
    count = int(api.page_count)
    if count < 2:
        return False
    later = range(page_index + 1, min(count, page_index + 1 + REPEAT_LOOKAHEAD))
    pages = 1 + sum(1 for pno in later if any(im[0] == xref for im in api.get_page_images(pno)))
    return _is_repeated(pages, count)


def _is_repeated(pages: int, page_count: int) -> bool:
    return pages >= REPEAT_MIN_PAGES or (
        page_count >= 2 and pages >= 2 and pages >= REPEAT_PAGE_SHARE * page_count
    )


def _pixmap(doc: pymupdf.Document, xref: int) -> Any:
    """RGB(A) or grey pixmap with the soft mask applied; None when it cannot be decoded."""
    import pymupdf

    mu: Any = pymupdf  # untyped constructors
    try:
        pix = mu.Pixmap(doc, xref)
        smask = _smask_xref(doc, xref)
        if smask:
            with contextlib.suppress(RuntimeError, ValueError):  # mask of another size
                pix = mu.Pixmap(pix, mu.Pixmap(doc, smask))
        if pix.colorspace is None or pix.n - pix.alpha not in (1, 3):
            pix = mu.Pixmap(mu.csRGB, pix)  # CMYK, Lab, separations → RGB
        return pix
    except (RuntimeError, ValueError):
        return None


def _smask_xref(doc: pymupdf.Document, xref: int) -> int:
    api: Any = doc
    kind, value = api.xref_get_key(xref, "SMask")
    if kind != "xref":
        return 0
    head = value.split()[0] if value else "0"
    return int(head) if head.isdigit() else 0


def drop_repeated(images: list[PdfImage], page_count: int) -> list[PdfImage]:
    """Drop pictures whose perceptual hash recurs on ≥3 pages or on ≥half the pages.

    Catches logos embedded as separate objects per page (same look, different xref and
    bytes); near-identical hashes (distance ≤ 4) count as the same picture.
    """
    import imagehash
    from PIL import Image

    hashes: list[Any] = []
    for im in images:
        with Image.open(io.BytesIO(im.data)) as img:
            hashes.append(imagehash.phash(img.convert("RGB")))
    groups: list[int] = []  # group id per image (index of the group's first image)
    for i, h in enumerate(hashes):
        group = next(
            (groups[j] for j in range(i) if hashes[j] - h <= PHASH_MAX_DISTANCE),
            i,
        )
        groups.append(group)
    pages_of: dict[int, set[int]] = {}
    for im, group in zip(images, groups, strict=True):
        pages_of.setdefault(group, set()).add(im.page)
    return [
        im
        for im, group in zip(images, groups, strict=True)
        if not _is_repeated(len(pages_of[group]), page_count)
    ]
