"""Isolation per part: one image, table, page or picture that a library cannot read becomes a
diagnostic and the document goes on. Files are generated here (PyMuPDF, python-docx, PIL);
the last test reads real-world reports that used to fail as a whole."""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from PIL import Image

from corpus_pipeline.contracts import Diagnostic, RowType
from corpus_pipeline.parsing.base import DiagnosticSink, ParseContext
from corpus_pipeline.parsing.pdf import parse_pdf
from corpus_pipeline.profiling import profile_source

from .support import REALWORLD_DOCS as REALWORLD
from .support import needs_shared

mu: Any = pymupdf  # PyMuPDF is only partly annotated


def _drop_members(whole: Path, broken: Path, prefix: str) -> None:
    """Copy a ZIP package without the members under `prefix`: a part it refers to is gone."""
    with zipfile.ZipFile(whole) as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            if not item.filename.startswith(prefix):
                dst.writestr(item, src.read(item))


def _png(mode: str, size: tuple[int, int], color: Any) -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, color).save(buf, format="PNG")
    return buf.getvalue()


def _jpeg_cmyk() -> bytes:
    buf = io.BytesIO()
    Image.new("CMYK", (200, 150), (0, 200, 200, 0)).save(buf, format="JPEG")
    return buf.getvalue()


def _pdf_with_image(path: Path, stream: bytes, text: str = "Page with a picture.") -> Any:
    """One A4 page with a text line and a large image; returns the open document."""
    doc: Any = mu.open()
    page = doc.new_page()
    page.insert_text((72, 72), text)
    page.insert_image(mu.Rect(72, 100, 472, 500), stream=stream)
    return doc


def _parse(path: Path, tmp_path: Path) -> ParseContext:
    ctx = ParseContext(
        source_path=path,
        source_file_name=path.name,
        profile=profile_source(path).profile,
        workdir=tmp_path / "work",
    )
    parse_pdf(ctx) if path.suffix == ".pdf" else _parse_docx(ctx)
    return ctx


def _parse_docx(ctx: ParseContext) -> None:
    from corpus_pipeline.parsing.docx import parse_docx

    parse_docx(ctx)


def _text(ctx: ParseContext) -> str:
    return "\n".join(r.text for r in ctx.rows)


def _lost(ctx: ParseContext, lost: str) -> list[Diagnostic]:
    return [d for d in ctx.diagnostics.items if d.lost == lost]


def _stored_images(ctx: ParseContext) -> list[Image.Image]:
    out = []
    for row in ctx.rows:
        if row.row_type is RowType.IMAGE and row.resource_path:
            with Image.open(ctx.workdir / row.resource_path) as img:
                img.load()
                out.append(img.copy())
    return out


# -- the mechanism ---------------------------------------------------------------------------


def test_library_error_in_a_part_becomes_a_diagnostic() -> None:
    sink = DiagnosticSink()
    with sink.part("image", "image on page 3 could not be decoded; skipped", page=3) as part:
        raise mu.mupdf.FzErrorArgument("color and mask pixmaps must be the same size")
    assert part.failed
    [d] = sink.items
    assert (d.stage, d.page, d.lost, d.exception) == ("parse", 3, "image", "FzErrorArgument")
    assert d.message == "image on page 3 could not be decoded; skipped"


def test_programming_error_is_not_hidden() -> None:
    sink = DiagnosticSink()
    with pytest.raises(TypeError), sink.part("image", "never recorded"):
        raise TypeError("a bug of ours")
    assert sink.items == []


# -- PDF images ------------------------------------------------------------------------------


def test_soft_mask_of_another_size_keeps_the_picture(tmp_path: Path) -> None:
    """MuPDF refuses to combine a 200x200 image with a 100x50 soft mask (FzErrorArgument);
    the PDF spec allows it, so the mask is scaled and the picture kept with its alpha."""
    doc = _pdf_with_image(tmp_path / "x.pdf", _png("RGBA", (200, 200), (255, 0, 0, 128)))
    xref = doc[0].get_images()[0][0]
    smask = int(doc.xref_get_key(xref, "SMask")[1].split()[0])
    doc.update_stream(smask, zlib.compress(bytes([200]) * 100 * 50), compress=False)
    for key, value in (("Width", "100"), ("Height", "50"), ("Filter", "/FlateDecode")):
        doc.xref_set_key(smask, key, value)
    doc.xref_set_key(smask, "DecodeParms", "null")
    path = tmp_path / "mask.pdf"
    doc.save(path)
    ctx = _parse(path, tmp_path)
    assert "Page with a picture." in _text(ctx)
    [img] = _stored_images(ctx)
    assert img.size == (200, 200) and img.mode == "RGBA"
    assert img.getpixel((10, 10)) == (255, 0, 0, 200)  # the scaled mask became the alpha


def test_undecodable_image_is_a_diagnostic_and_the_page_stays(tmp_path: Path) -> None:
    doc = _pdf_with_image(tmp_path / "x.pdf", _png("RGB", (200, 200), (0, 0, 255)))
    doc.xref_set_key(doc[0].get_images()[0][0], "ColorSpace", "/NoSuchSpace")
    page = doc.new_page()
    page.insert_text((72, 72), "The second page is fine.")
    path = tmp_path / "bad_image.pdf"
    doc.save(path)
    ctx = _parse(path, tmp_path)
    assert "Page with a picture." in _text(ctx)
    assert "The second page is fine." in _text(ctx)
    assert not _stored_images(ctx)
    [d] = _lost(ctx, "image")
    assert (d.stage, d.page, d.exception) == ("parse", 1, "FzErrorSyntax")
    assert d.message == "image on page 1 could not be decoded; skipped"


def test_broken_soft_mask_keeps_the_picture_without_transparency(tmp_path: Path) -> None:
    doc = _pdf_with_image(tmp_path / "x.pdf", _png("RGBA", (200, 200), (0, 128, 0, 100)))
    xref = doc[0].get_images()[0][0]
    smask = int(doc.xref_get_key(xref, "SMask")[1].split()[0])
    doc.xref_set_key(smask, "ColorSpace", "/NoSuchSpace")
    path = tmp_path / "bad_mask.pdf"
    doc.save(path)
    ctx = _parse(path, tmp_path)
    [img] = _stored_images(ctx)
    pixel = img.getpixel((5, 5))
    assert img.mode == "RGB" and isinstance(pixel, tuple)
    assert max(abs(a - b) for a, b in zip(pixel, (0, 128, 0), strict=True)) <= 2
    [d] = _lost(ctx, "image transparency")
    assert (d.page, d.exception, d.level) == (1, "FzErrorSyntax", "info")


def _separation_pdf(path: Path) -> Any:
    """A one-channel DeviceN (black separation) image, like the agency reports' charts: one
    channel, but not grey, which MuPDF's PNG writer refuses."""
    doc = _pdf_with_image(path, _png("L", (120, 80), 90))
    xref = doc[0].get_images()[0][0]
    fn = doc.get_new_xref()
    doc.update_object(fn, "<</FunctionType 2/Domain[0 1]/C0[0 0 0 0]/C1[0 0 0 1]/N 1>>")
    doc.xref_set_key(xref, "ColorSpace", f"[/DeviceN[/Black]/DeviceCMYK {fn} 0 R]")
    return doc


@pytest.mark.parametrize("kind", ["cmyk", "devicen", "indexed", "alpha"])
def test_any_colour_encoding_is_stored_as_a_decodable_image(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.pdf"
    if kind == "devicen":
        doc = _separation_pdf(path)
    else:
        streams: dict[str, Callable[[], bytes]] = {
            "cmyk": _jpeg_cmyk,
            "indexed": lambda: _png("P", (120, 80), 3),
            "alpha": lambda: _png("LA", (120, 80), (60, 128)),
        }
        doc = _pdf_with_image(path, streams[kind]())
    doc.save(path)
    ctx = _parse(path, tmp_path)
    [img] = _stored_images(ctx)
    assert img.size[0] >= 80 and img.mode in ("L", "LA", "RGB", "RGBA")
    assert not _lost(ctx, "image")


# -- PDF pages -------------------------------------------------------------------------------


def test_page_whose_text_cannot_be_read_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MuPDF recovers from every broken content stream and font we could write (it warns and
    reads on), so page 2's text extraction is made to raise MuPDF's own error class."""
    doc: Any = mu.open()
    for n in (1, 2, 3):
        doc.new_page().insert_text((72, 72), f"Text of page {n} is here.")
    path = tmp_path / "pages.pdf"
    doc.save(path)
    real = mu.Page.get_text

    def get_text(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.number == 1:
            raise mu.mupdf.FzErrorFormat("syntax error in content stream")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(mu.Page, "get_text", get_text)
    ctx = _parse(path, tmp_path)
    text = _text(ctx)
    assert "Text of page 1 is here." in text and "Text of page 3 is here." in text
    assert "page 2" not in text
    [d] = _lost(ctx, "page text")
    assert (d.page, d.exception, d.code) == (2, "FzErrorFormat", "page.failed")
    assert d.message == "text of page 2 could not be read; page skipped"


def test_failing_table_keeps_its_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from corpus_pipeline.parsing.pdf import tables as pdf_tables

    doc: Any = mu.open()
    page = doc.new_page()
    page.insert_text((72, 60), "Results as a table.")
    for r in range(4):
        for c in range(3):
            page.draw_rect(mu.Rect(72 + c * 120, 100 + r * 30, 192 + c * 120, 130 + r * 30))
            page.insert_text((78 + c * 120, 120 + r * 30), f"cell {r}-{c}")
    path = tmp_path / "table.pdf"
    doc.save(path)

    def broken(*args: Any) -> Any:
        raise mu.mupdf.FzErrorGeneric("cannot extract")

    monkeypatch.setattr(pdf_tables, "table_likely", lambda page: True)
    monkeypatch.setattr(pdf_tables, "find_ruled_tables", broken)
    ctx = _parse(path, tmp_path)
    assert not [r for r in ctx.rows if r.row_type is RowType.TABLE]
    assert "cell 2-1" in _text(ctx)
    [d] = _lost(ctx, "table")
    assert (d.page, d.code) == (1, "table.failed")
    assert d.message == "tables on page 1 could not be detected; their text is kept as text"


# -- DOCX ------------------------------------------------------------------------------------


def test_docx_with_a_missing_image_part_keeps_its_text(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Report", level=1)
    document.add_paragraph("Before the picture.")
    document.add_picture(io.BytesIO(_png("RGB", (64, 64), (10, 20, 30))))
    document.add_paragraph("After the picture.")
    whole = tmp_path / "whole.docx"
    document.save(str(whole))
    broken = tmp_path / "broken.docx"
    _drop_members(whole, broken, "word/media/")
    ctx = _parse(broken, tmp_path)
    text = _text(ctx)
    assert "Before the picture." in text and "After the picture." in text
    assert not _stored_images(ctx)
    assert [d.code for d in _lost(ctx, "image")] == ["image.unavailable"]
    assert all("word/" not in d.message for d in ctx.diagnostics.items)


# -- real world ------------------------------------------------------------------------------


@pytest.mark.slow
@needs_shared(REALWORLD)
@pytest.mark.parametrize(
    "name", ["2015-annual-performance-report.pdf", "2019-annual-performance-report.pdf"]
)
def test_agency_reports_with_separation_images_parse(tmp_path: Path, name: str) -> None:
    """These failed whole with FzErrorArgument ("pixmap must be grayscale or rgb to write as
    png") on their one-channel DeviceN charts; now their charts are stored like any image."""
    path = REALWORLD / name
    ctx = _parse(path, tmp_path)
    assert len(_text(ctx)) > 100_000
    assert len(_stored_images(ctx)) >= 5
    assert not _lost(ctx, "image")


def test_pptx_with_a_missing_picture_part_keeps_its_slides(tmp_path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    from corpus_pipeline.parsing.pptx import parse_pptx

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[5])
    slide.shapes.title.text = "Quarterly numbers"
    slide.shapes.add_picture(io.BytesIO(_png("RGB", (64, 64), (1, 2, 3))), Inches(1), Inches(2))
    whole = tmp_path / "whole.pptx"
    prs.save(str(whole))
    broken = tmp_path / "broken.pptx"
    _drop_members(whole, broken, "ppt/media/")
    ctx = ParseContext(
        source_path=broken,
        source_file_name=broken.name,
        profile=profile_source(broken).profile,
        workdir=tmp_path / "work",
    )
    parse_pptx(ctx)
    assert "Quarterly numbers" in _text(ctx)
    assert not _stored_images(ctx)
    [d] = _lost(ctx, "image")
    assert (d.page, d.exception) == (1, "KeyError")
