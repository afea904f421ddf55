"""PDF images: once per xref, deterministic PNG, tiny and repeated decorations dropped."""

from __future__ import annotations

import io
from typing import Any

import pymupdf as _pymupdf
from PIL import Image, ImageDraw

from corpus_pipeline.parsing.pdf.images import PdfImage, drop_repeated, extract_images
from corpus_pipeline.parsing.pdf.layout import image_coverage, places_no_image

from .support import REALWORLD_DOCS, needs_shared

mu: Any = _pymupdf  # PyMuPDF is untyped; keep mypy --strict quiet at one place

PHOTO_RECT = mu.Rect(72, 72, 372, 297)


def _png(width: int = 240, height: int = 180, compress: int = 6) -> bytes:
    """A photo-like picture (gradient + shapes); `compress` changes bytes, not pixels."""
    img = Image.new("RGB", (width, height))
    img.putdata(
        [((x * 7) % 256, (y * 5) % 256, (x * y) % 256) for y in range(height) for x in range(width)]
    )
    draw = ImageDraw.Draw(img)
    draw.ellipse((width // 4, height // 4, width // 2, height // 2), fill=(250, 240, 10))
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=compress)
    return buf.getvalue()


def _stripes_png() -> bytes:
    """A picture that looks nothing like `_png()` (different perceptual hash)."""
    img = Image.new("RGB", (240, 180), "white")
    draw = ImageDraw.Draw(img)
    for x in range(0, 240, 40):
        draw.rectangle((x, 0, x + 19, 179), fill=(20, 20, 120))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _doc(pages: int) -> Any:
    doc = mu.open()
    for _ in range(pages):
        doc.new_page()
    return doc


def _extract_all(doc: Any) -> list[PdfImage]:
    seen: set[int] = set()
    out: list[PdfImage] = []
    for number, page in enumerate(doc, 1):
        out += extract_images(doc, page, number, seen)
    return out


def test_single_large_photo_is_kept_as_png() -> None:
    doc = _doc(1)
    doc[0].insert_image(PHOTO_RECT, stream=_png())
    images = drop_repeated(_extract_all(doc), doc.page_count)
    assert len(images) == 1
    image = images[0]
    assert (image.page, image.width, image.height) == (1, 240, 180)
    assert image.data.startswith(b"\x89PNG")
    with Image.open(io.BytesIO(image.data)) as img:
        assert img.size == (240, 180)


def test_same_picture_on_three_pages_is_dropped_as_decoration() -> None:
    doc = _doc(4)
    for number, level in enumerate((1, 6, 9)):  # distinct bytes → distinct xrefs, same pixels
        doc[number].insert_image(PHOTO_RECT, stream=_png(compress=level))
    doc[3].insert_image(PHOTO_RECT, stream=_stripes_png())
    images = _extract_all(doc)
    assert len({im.xref for im in images}) == 4
    kept = drop_repeated(images, doc.page_count)
    assert [im.page for im in kept] == [4]


def test_one_xref_referenced_on_every_page_is_skipped() -> None:
    doc = _doc(3)
    xref = doc[0].insert_image(PHOTO_RECT, stream=_png())
    for number in (1, 2):
        doc[number].insert_image(PHOTO_RECT, xref=xref)
    assert _extract_all(doc) == []


def test_tiny_image_is_skipped() -> None:
    doc = _doc(1)
    doc[0].insert_image(PHOTO_RECT, stream=_png(10, 10))
    assert _extract_all(doc) == []


def test_same_xref_placed_twice_on_a_page_is_extracted_once() -> None:
    doc = _doc(1)
    page = doc[0]
    xref = page.insert_image(PHOTO_RECT, stream=_png())
    page.insert_image(mu.Rect(72, 400, 372, 625), xref=xref)
    assert len(page.get_image_info(xrefs=True)) == 2
    images = _extract_all(doc)
    assert [im.xref for im in images] == [xref]


def test_png_output_is_byte_identical_across_runs() -> None:
    doc = _doc(1)
    doc[0].insert_image(PHOTO_RECT, stream=_png())
    data = doc.tobytes()
    runs = []
    for _ in range(2):
        reopened = mu.open(stream=data, filetype="pdf")
        runs.append([im.data for im in _extract_all(reopened)])
    assert runs[0] == runs[1] and len(runs[0]) == 1


def test_cmyk_image_is_converted_to_rgb() -> None:
    rgb = mu.Pixmap(_png())
    cmyk = mu.Pixmap(mu.csCMYK, rgb)
    doc = _doc(1)
    doc[0].insert_image(PHOTO_RECT, pixmap=cmyk)
    [image] = _extract_all(doc)
    with Image.open(io.BytesIO(image.data)) as img:
        assert img.mode == "RGB"


def test_transparent_png_keeps_its_alpha() -> None:
    img = Image.open(io.BytesIO(_png())).convert("RGBA")
    img.putalpha(128)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    doc = _doc(1)
    doc[0].insert_image(PHOTO_RECT, stream=buf.getvalue())
    [image] = _extract_all(doc)
    with Image.open(io.BytesIO(image.data)) as out:
        assert out.mode == "RGBA"
        assert out.getpixel((5, 5))[3] == 128  # type: ignore[index]


# -- the cheap "no image here" test before PyMuPDF's image listing ------------------------------


def _inline_image_page() -> Any:
    doc = _doc(1)
    page = doc[0]
    page.insert_text((72, 72), "a caption")
    xref = page.get_contents()[0]
    stream = (
        doc.xref_stream(xref)
        + b"\nq 200 0 0 200 72 100 cm BI /W 2 /H 2 /BPC 8 /CS /G ID \x00\xff\xff\x00 EI Q\n"
    )
    doc.update_stream(xref, stream)
    return doc


def test_a_text_only_page_places_no_image() -> None:
    doc = _doc(1)
    doc[0].insert_text((72, 72), "Revenue grew in the quarter.")
    assert places_no_image(doc[0])
    assert image_coverage(doc[0]) == 0.0


def test_a_placed_image_is_seen_and_its_area_measured() -> None:
    doc = _doc(1)
    doc[0].insert_image(PHOTO_RECT, stream=_png())
    assert not places_no_image(doc[0])
    expected = abs(PHOTO_RECT) / abs(doc[0].rect)
    assert abs(image_coverage(doc[0]) - expected) < 1e-3


def test_an_image_inside_a_form_xobject_is_seen() -> None:
    source = _doc(1)
    source[0].insert_image(PHOTO_RECT, stream=_png())
    doc = _doc(1)
    doc[0].show_pdf_page(doc[0].rect, source, 0)  # the page becomes a form XObject
    assert not places_no_image(doc[0])
    assert image_coverage(doc[0]) > 0.1


def test_an_inline_image_is_seen() -> None:
    doc = _inline_image_page()
    assert doc[0].get_image_info(), "MuPDF sees the inline image"
    assert not places_no_image(doc[0])


@needs_shared(REALWORLD_DOCS)
def test_on_real_pdfs_no_page_said_imageless_places_an_image() -> None:
    """Patterns, soft masks and Type3 glyphs draw images too (a headset manual's ruled bars);
    the cheap test must never call such a page imageless."""
    names = ["honor_watch_gs_pro.pdf", "stereo_headset.pdf", "2023_Q3_AAPL.pdf"]
    files = [REALWORLD_DOCS / n for n in names]
    said_imageless = 0
    for path in files:
        with mu.open(path) as doc:
            for page in doc:
                if places_no_image(page):
                    said_imageless += 1
                    assert page.get_image_info() == [], f"{path.name} page {page.number + 1}"
    assert said_imageless > 20, "the test saves the text read on ordinary pages"
