"""Plain text of a document as a weekend RAG would take it: what the naive floor reads.

No layout, no OCR, no table structure, no passwords: PDF page text from PyMuPDF (each page
numbered), the paragraphs of a DOCX in body order, the paragraphs of each PPTX slide (a slide
is a page), the cell values of each XLSX sheet row by row (a sheet is a page), the text nodes
of HTML (scripts and styles dropped), and other text files decoded as they are. Anything else
(images, legacy Office formats, an encrypted or damaged file) has no plain text: the floor
cannot see it, and says so (`Unreadable`).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

import lxml.html
import pymupdf
from lxml import etree

Part = tuple[str, int | None]
"""A stretch of text and the page it is on (None: a flow format without pages)."""

_mupdf: Any = pymupdf  # only partly annotated
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".csv", ".tsv", ".json", ".rst", ".log"})


class Unreadable(ValueError):
    """The file has no plain text the floor can read; the message says why."""


def decode_text(data: bytes) -> str:
    """UTF-8 (a BOM dropped), else Windows-1252: text files as an editor would open them."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def pdf_parts(data: bytes) -> list[Part]:
    """Each page's PyMuPDF text, numbered from 1."""
    _mupdf.TOOLS.mupdf_display_errors(False)  # a damaged file's repairs are not the subject
    try:
        with _mupdf.open(stream=data, filetype="pdf") as doc:
            if doc.needs_pass:
                raise Unreadable("encrypted PDF")
            return [(page.get_text(), number) for number, page in enumerate(doc, 1)]
    except (RuntimeError, ValueError) as exc:  # PyMuPDF's errors derive from RuntimeError
        if isinstance(exc, Unreadable):
            raise
        raise Unreadable(f"PDF cannot be opened ({type(exc).__name__})") from exc


def _paragraphs(root: Any, namespace: str) -> list[str]:
    """The text of each paragraph (`p` elements, their `t` runs joined) in document order."""
    return [
        "".join(t.text or "" for t in p.iter(f"{namespace}t")) for p in root.iter(f"{namespace}p")
    ]


def _xml(archive: zipfile.ZipFile, member: str) -> Any:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    return etree.fromstring(archive.read(member), parser)


def docx_parts(data: bytes) -> list[Part]:
    """The body's paragraphs (table cells included), in order."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        root = _xml(archive, "word/document.xml")
    return [("\n".join(_paragraphs(root, _W)), None)]


def pptx_parts(data: bytes) -> list[Part]:
    """Each slide's paragraphs (shapes and tables), slides numbered in presentation order."""
    from pptx import Presentation

    presentation = Presentation(io.BytesIO(data))
    return [
        ("\n".join(_paragraphs(slide.element, _A)), number)
        for number, slide in enumerate(presentation.slides, 1)
    ]


def xlsx_parts(data: bytes) -> list[Part]:
    """Each sheet's cell values, a row to a line, sheets numbered in workbook order."""
    from openpyxl import load_workbook

    book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        return [
            (
                "\n".join(
                    " ".join(str(v) for v in row if v is not None)
                    for row in sheet.iter_rows(values_only=True)
                ),
                number,
            )
            for number, sheet in enumerate(book.worksheets, 1)
        ]
    finally:
        book.close()


def html_parts(data: bytes) -> list[Part]:
    """The text nodes of the page, a line each (scripts, styles and blank lines left out)."""
    root = lxml.html.document_fromstring(data)
    for element in list(root.iter("script", "style")):
        element.drop_tree()
    lines = (" ".join(line.split()) for line in "\n".join(root.itertext()).splitlines())
    return [("\n".join(line for line in lines if line), None)]


_READERS: dict[str, Callable[[bytes], list[Part]]] = {
    ".pdf": pdf_parts,
    ".docx": docx_parts,
    ".pptx": pptx_parts,
    ".xlsx": xlsx_parts,
    ".html": html_parts,
    ".htm": html_parts,
}


def plain_text(name: str, data: bytes) -> list[Part]:
    """The document's plain text by its name's extension; `Unreadable` when there is none."""
    suffix = PurePath(name).suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return [(decode_text(data), None)]
    reader = _READERS.get(suffix)
    if reader is None:
        raise Unreadable(f"no plain text in a '{suffix or name}' file")
    try:
        return reader(data)
    except Unreadable:
        raise
    except Exception as exc:  # any reader's failure on a damaged file: the floor skips it
        raise Unreadable(f"{suffix[1:].upper()} cannot be read ({type(exc).__name__})") from exc
