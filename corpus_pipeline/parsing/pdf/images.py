"""PDF images: pull each placed raster image out once, as a deterministic PNG, and drop
decorations (tiny icons, rules, logos repeated on many pages) that would only add noise.

PNG bytes must not vary between runs: the ResourceSink dedupes by byte hash first and reruns
should produce identical files, so encoding goes through PyMuPDF's PNG writer, which writes no
timestamp or other metadata (checked by a test that encodes twice).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corpus_pipeline.parsing.base import DiagnosticSink, image_decoding

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
    doc: pymupdf.Document,
    page: pymupdf.Page,
    page_number: int,
    seen_xrefs: set[int],
    diagnostics: DiagnosticSink | None = None,
) -> list[PdfImage]:
    """Images placed on this page, in placement order, each xref at most once per document.

    Inline images (xref 0) have no object to extract and are skipped. An xref shared by many
    pages (a logo referenced from every page) is recognised here from the page resources,
    because once-per-xref extraction would otherwise hide its repetition from `drop_repeated`.
    One image that cannot be decoded is recorded in `diagnostics` and skipped; the others stay.
    """
    sink = diagnostics if diagnostics is not None else DiagnosticSink()
    page_api: Any = page
    page_area = abs(page_api.rect) or 1.0
    out: list[PdfImage] = []
    for info in _placements(doc, page, page_number, seen_xrefs, sink):
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
        with image_decoding(sink, page_number):
            if _shared_by_many_pages(doc, xref, int(page_api.number)):
                continue
            pix = _pixmap(doc, xref, page_number, sink)
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


def _placements(
    doc: pymupdf.Document,
    page: pymupdf.Page,
    page_number: int,
    seen_xrefs: set[int],
    sink: DiagnosticSink,
) -> list[dict[str, Any]]:
    """`page.get_image_info(xrefs=True)`, one image at a time.

    PyMuPDF finds each placement's xref by decoding every image of the page for its digest,
    so one undecodable image would cost the page all of its images; here each is decoded on
    its own (a failure is recorded once and the xref marked seen), and xrefs already handled
    on earlier pages are not decoded again.
    """
    page_api: Any = page
    doc_api: Any = doc
    import pymupdf

    mu: Any = pymupdf
    new = [int(item[0]) for item in page_api.get_images() if int(item[0]) not in seen_xrefs]
    if not new:
        return []  # every placement would get xref 0 (skipped): no text read for nothing
    infos: list[dict[str, Any]] = page_api.get_image_info(hashes=True)
    digests: dict[bytes, int] = {}
    for xref in new:
        with image_decoding(sink, page_number) as part:
            digests[mu.Pixmap(doc_api, xref).digest] = xref
        if part.failed:
            seen_xrefs.add(xref)
    return [{**info, "xref": digests.get(info.get("digest", b""), 0)} for info in infos]


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


def _pixmap(doc: pymupdf.Document, xref: int, page_number: int, sink: DiagnosticSink) -> Any:
    """The image as a grey or RGB pixmap (alpha from its soft mask), ready for the PNG writer.

    MuPDF raises for a pixmap it cannot write as PNG (CMYK, DeviceN, Lab, indexed) or combine
    with a mask (an alpha channel already, a mask of another size, which the PDF spec allows);
    each is converted instead, so the picture is kept. Only a failing soft mask is given up:
    the image stays, without transparency, with a diagnostic.
    """
    import pymupdf

    mu: Any = pymupdf  # untyped constructors
    pix = mu.Pixmap(doc, xref)
    smask = _smask_xref(doc, xref)
    if smask:
        with sink.part(
            "image transparency",
            f"soft mask of an image on page {page_number} could not be applied; "
            "the image is kept without transparency",
            page=page_number,
            code="image.mask_failed",
            level="info",
        ):
            pix = _with_mask(pix, mu.Pixmap(doc, smask))
    return png_ready(pix)


def _with_mask(pix: Any, mask: Any) -> Any:
    """`pix` with `mask` as its alpha channel; MuPDF wants a colour pixmap without alpha and a
    one-channel mask of the same size, so the inputs are brought into that shape first."""
    import pymupdf

    mu: Any = pymupdf
    if pix.alpha:
        pix = mu.Pixmap(pix, 0)  # drop the existing alpha: the soft mask replaces it
    if _colour_name(pix) not in _PNG_SPACES:
        pix = mu.Pixmap(mu.csRGB, pix)
    if mask.alpha or mask.n != 1:
        mask = mu.Pixmap(mu.csGRAY, mask) if mask.n > 1 else mu.Pixmap(mask, 0)
    if (mask.width, mask.height) != (pix.width, pix.height):
        mask = mu.Pixmap(mask, pix.width, pix.height, None)  # scaled, as a renderer would
    return mu.Pixmap(pix, mask)


_PNG_SPACES = ("DeviceGray", "DeviceRGB")


def _colour_name(pix: Any) -> str | None:
    return str(pix.colorspace.name) if pix.colorspace is not None else None


def png_ready(pix: Any) -> Any:
    """A pixmap MuPDF's PNG writer accepts: grey or RGB, with or without alpha.

    CMYK, DeviceN (e.g. a single black separation, which has one channel but is not grey),
    Lab, ICC-based and indexed images are converted to RGB; a bare alpha mask (no colour
    space) becomes grey.
    """
    import pymupdf

    mu: Any = pymupdf
    name = _colour_name(pix)
    if name in _PNG_SPACES:
        return pix
    if name is None:  # alpha-only pixmap: its coverage as grey
        return mu.Pixmap(mu.csGRAY, pix) if pix.n > pix.alpha else pix
    return mu.Pixmap(mu.csRGB, pix)


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
