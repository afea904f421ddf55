"""Seed files for the parser fuzz run (`harness.fuzz`): small valid files of every format,
built here in code, plus the files of `../shared/corpus/docs` read at run time (never copied).

A seed only counts for the format its bytes sniff as, so a builder that drifts from what the
sniffer expects shows up as a format without seeds instead of fuzzing the wrong parser. Legacy
Word and PowerPoint files cannot be written by any library here: they are converted from the
DOCX and PPTX seeds by LibreOffice when it is installed, and are otherwise reported seedless.
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from corpus_pipeline.contracts import FileFormat
from corpus_pipeline.profiling.sniff import sniff_format


@dataclass(frozen=True)
class Seed:
    """One valid file: the name it is delivered under (its extension matters to the sniffer)
    and its bytes; `origin` says where it came from (`generated` or the shared file's name)."""

    name: str
    data: bytes
    origin: str = "generated"

    @property
    def extension(self) -> str:
        return Path(self.name).suffix.lower().lstrip(".")


_HEADING = "Quarterly report"
_BODY = (
    "Tufted ducks dive for molluscs in fresh water. The survey counted 1,204 birds in March, "
    "up 12% on the year; café owners near the lake reported quieter mornings."
)


def _png(size: tuple[int, int] = (48, 32), text: str = "") -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, "white")
    if text:
        ImageDraw.Draw(image).text((4, 4), text, fill="black")
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def _zip(members: Iterable[tuple[str, bytes]]) -> bytes:
    """A package; a `mimetype` member is stored first and uncompressed, as ODF and EPUB want."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            kind = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
            archive.writestr(zipfile.ZipInfo(name, (2024, 3, 5, 9, 30, 0)), data, kind)
    return buffer.getvalue()


# -- text formats ---------------------------------------------------------------------------------


def markdown_seeds() -> list[Seed]:
    text = (
        "---\ntitle: Survey\n---\n\n"
        f"# {_HEADING}\n\n{_BODY}\n\n## Counts\n\n"
        "| Site | Birds | Change |\n| --- | ---: | :---: |\n| North | 640 | +8% |\n"
        "| South | 564 | +17% |\n\n### Notes\n\n- first item\n  - nested *item*\n"
        "1. numbered [link](https://example.org)\n\n> quoted line\n\n"
        "```python\nprint('code')\n```\n\n![chart](chart.png)\n"
    )
    return [Seed("survey.md", text.encode())]


def text_seeds() -> list[Seed]:
    text = f"{_HEADING.upper()}\n\n{_BODY}\n\nA second paragraph, with no markup at all.\n"
    return [
        Seed("notes.txt", text.encode()),
        Seed("notes-latin1.txt", text.encode("cp1252")),
        Seed("notes-utf16.txt", text.encode("utf-16")),
    ]


def html_seeds() -> list[Seed]:
    image = "data:image/png;base64," + __import__("base64").b64encode(_png()).decode()
    text = (
        "<!doctype html><html><head><title>Survey</title><style>p{}</style></head><body>"
        f"<h1>{_HEADING}</h1><p>{_BODY}</p><h2>Counts</h2>"
        "<table><tr><th rowspan='2'>Site</th><th colspan='2'>Birds</th></tr>"
        "<tr><th>2023</th><th>2024</th></tr><tr><td>North</td><td>592</td><td>640</td></tr>"
        "</table><ul><li>one<ul><li>nested</li></ul></li></ul><ol><li>first</li></ol>"
        f"<p>An <a href='#x'>anchor</a> and <img src='{image}' alt='chart'></p>"
        "<script>var x = 1;</script></body></html>"
    )
    return [Seed("survey.html", text.encode())]


def segments_seeds() -> list[Seed]:
    segments = [
        {"type": "heading", "content": _HEADING, "level": 1},
        {"type": "text", "content": _BODY},
        {"type": "table", "content": "<table><tr><td colspan='2'>a</td></tr></table>"},
    ]
    return [Seed("segments.json", json.dumps(segments).encode())]


def csv_seeds() -> list[Seed]:
    rows = 'site,birds,"change, %"\nNorth,640,8\nSouth,564,17\n"East ""lake""",0,\n'
    return [
        Seed("counts.csv", rows.encode()),
        Seed("counts.tsv", rows.replace(",", "\t").encode()),
        Seed("counts-semicolon.csv", rows.replace(",", ";").encode("cp1252")),
    ]


def rtf_seeds() -> list[Seed]:
    text = (
        r"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Times;}{\f1 Arial;}}"
        r"{\info{\title Survey}{\creatim\yr2024\mo3\dy5}}"
        r"{\pard\s1\outlinelevel0\b\fs32 " + _HEADING + r"\par}"
        r"\pard " + _BODY.replace("é", r"\'e9") + r"\par "
        r"\trowd\cellx2000\cellx4000 Site\cell Birds\cell\row"
        r"\trowd\cellx2000\cellx4000 North\cell 640\cell\row"
        r"\pard Unicode \u8364? sign and a {\field{\*\fldinst HYPERLINK x}{\fldrslt link}}\par}"
    )
    return [Seed("letter.rtf", text.encode("ascii", errors="replace"))]


# -- e-mail ---------------------------------------------------------------------------------------


def _message(attachment: bool = True) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Alice Martin <alice@example.com>"
    msg["To"] = "Bob Stone <bob@example.com>"
    msg["Cc"] = "Carol Diaz <carol@example.com>"
    msg["Subject"] = "Re: " + _HEADING
    msg["Date"] = "Tue, 05 Mar 2024 09:30:00 +0100"
    msg["Message-ID"] = "<survey-1@example.com>"
    msg.set_content(f"Hi Bob,\n\n{_BODY}\n\nOn Monday Bob wrote:\n> Any numbers yet?\n> Bob\n")
    msg.add_alternative(f"<html><body><h1>{_HEADING}</h1><p>{_BODY}</p></body></html>", "html")
    if attachment:
        msg.add_attachment(_png(text="chart"), maintype="image", subtype="png", filename="c.png")
        msg.add_attachment(
            b"site,birds\nNorth,640\n", maintype="text", subtype="csv", filename="counts.csv"
        )
    return bytes(msg)


def eml_seeds() -> list[Seed]:
    return [Seed("survey.eml", _message()), Seed("plain.eml", _message(attachment=False))]


def mbox_seeds() -> list[Seed]:
    messages = [_message(attachment=False), _message()]
    parts = [b"From alice@example.com Tue Mar  5 09:30:00 2024\n" + m + b"\n" for m in messages]
    return [Seed("mailbox.mbox", b"".join(parts))]


def _mapi(tag: int, value: bytes) -> bytes:
    return struct.pack("<II", tag, 6) + value.ljust(8, b"\0")


def msg_seeds() -> list[Seed]:
    """An Outlook message (MS-OXMSG): property streams of a sent note with one attachment,
    written as an OLE2 compound file by extract-msg's own writer."""
    from extract_msg.ole_writer import OleWriter

    writer = OleWriter()
    header = struct.pack("<8sIIII8s", b"", 1, 1, 1, 1, b"")
    sent = _mapi(0x00390040, struct.pack("<Q", 133540000000000000))  # PR_CLIENT_SUBMIT_TIME
    writer.addEntry("__properties_version1.0", header + sent + _mapi(0x0E070003, b"\1"))
    strings = {
        "001A": "IPM.Note",
        "0037": _HEADING,
        "1000": _BODY,
        "0C1A": "Alice Martin",
        "5D01": "alice@example.com",
        "0E04": "Bob Stone",
        "1035": "<m-1@example.com>",
    }
    for prop, text in strings.items():
        writer.addEntry(f"__substg1.0_{prop}001F", text.encode("utf-16-le"))
    writer.addEntry("__substg1.0_10130102", f"<p>{_BODY}</p>".encode())
    writer.addEntry("__nameid_version1.0", storage=True)
    for stream in ("00020102", "00030102", "00040102"):
        writer.addEntry(f"__nameid_version1.0/__substg1.0_{stream}", b"")
    recipient = "__recip_version1.0_#00000000"
    writer.addEntry(recipient, storage=True)
    writer.addEntry(f"{recipient}/__properties_version1.0", b"\0" * 8 + _mapi(0x0C150003, b"\1"))
    for prop, text in {"3001": "Bob Stone", "39FE": "bob@example.com", "3002": "SMTP"}.items():
        writer.addEntry(f"{recipient}/__substg1.0_{prop}001F", text.encode("utf-16-le"))
    attachment = "__attach_version1.0_#00000000"
    writer.addEntry(attachment, storage=True)
    writer.addEntry(f"{attachment}/__properties_version1.0", b"\0" * 8 + _mapi(0x37050003, b"\1"))
    writer.addEntry(f"{attachment}/__substg1.0_37010102", _png(text="chart"))
    writer.addEntry(f"{attachment}/__substg1.0_3707001F", "chart.png".encode("utf-16-le"))
    buffer = io.BytesIO()
    writer.write(buffer)
    return [Seed("survey.msg", buffer.getvalue())]


# -- office formats through their libraries ------------------------------------------------------


def pdf_seeds() -> list[Seed]:
    import pymupdf

    mu: Any = pymupdf  # only partly annotated
    doc = mu.open()
    for number in (1, 2):
        page = doc.new_page()
        page.insert_text((72, 72), f"{number}. {_HEADING}", fontsize=20)
        page.insert_textbox(mu.Rect(72, 100, 520, 300), _BODY * 2, fontsize=11)
        for row in range(3):  # a ruled 3x2 table
            y = 320 + row * 20
            page.draw_line((72, y), (372, y))
            page.insert_text((76, y + 14), f"site {row}", fontsize=10)
            page.insert_text((226, y + 14), str(600 + row), fontsize=10)
        page.insert_image(mu.Rect(72, 420, 168, 484), stream=_png(text="fig"))
    doc.set_toc([[1, _HEADING, 1], [2, "Counts", 2]])
    doc.set_metadata({"title": "Survey", "creationDate": "D:20240305093000"})
    data: bytes = doc.tobytes()
    return [Seed("survey.pdf", data)]


def docx_seeds() -> list[Seed]:
    import docx

    document = docx.Document()
    document.core_properties.title = "Survey"
    document.add_heading(_HEADING, level=1)
    document.add_paragraph(_BODY)
    document.add_heading("Counts", level=2)
    table = document.add_table(rows=3, cols=3)
    table.cell(0, 0).merge(table.cell(0, 1)).text = "Birds"
    table.cell(1, 0).merge(table.cell(2, 0)).text = "North"
    table.cell(1, 2).text = "640"
    document.add_paragraph("first", style="List Bullet")
    document.add_paragraph("second", style="List Number")
    document.add_picture(io.BytesIO(_png(text="fig")))
    buffer = io.BytesIO()
    document.save(buffer)
    return [Seed("survey.docx", buffer.getvalue())]


def pptx_seeds() -> list[Seed]:
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = _HEADING
    slide.placeholders[1].text_frame.text = _BODY
    notes = slide.notes_slide.notes_text_frame
    if notes is not None:
        notes.text = "Speaker notes"
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Counts"
    grid = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    grid.cell(0, 0).text, grid.cell(1, 1).text = "Site", "640"
    second.shapes.add_picture(io.BytesIO(_png(text="fig")), Inches(1), Inches(4))
    buffer = io.BytesIO()
    deck.save(buffer)
    return [Seed("survey.pptx", buffer.getvalue())]


def xlsx_seeds() -> list[Seed]:
    import datetime as dt

    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Counts"
    for row in (["Site", "Birds", "When"], ["North", 640, dt.date(2024, 3, 5)], ["South", 564]):
        sheet.append(row)
    sheet["B4"] = "=SUM(B2:B3)"
    sheet.merge_cells("A6:C6")
    sheet["A6"] = "merged note"
    book.create_sheet("Empty")
    buffer = io.BytesIO()
    book.save(buffer)
    return [Seed("counts.xlsx", buffer.getvalue())]


def xls_seeds() -> list[Seed]:
    import xlwt  # dev dependency: the only writer of Excel 97-2003 workbooks here

    book = xlwt.Workbook()
    sheet = book.add_sheet("Counts")
    rows: list[list[str | int]] = [["Site", "Birds"], ["North", 640], ["South", 564]]
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            sheet.write(r, c, value)
    sheet.write_merge(4, 4, 0, 1, "merged note")
    buffer = io.BytesIO()
    book.save(buffer)
    return [Seed("counts.xls", buffer.getvalue())]


def image_seeds() -> list[Seed]:
    from PIL import Image

    picture = Image.open(io.BytesIO(_png((160, 48), "Tufted ducks 1204")))
    seeds = [Seed("scan.png", _png((160, 48), "Tufted ducks 1204"))]
    for fmt, ext in (("JPEG", "jpg"), ("GIF", "gif"), ("TIFF", "tif"), ("BMP", "bmp")):
        buffer = io.BytesIO()
        picture.save(buffer, fmt)
        seeds.append(Seed(f"scan.{ext}", buffer.getvalue()))
    return seeds


# -- OpenDocument and EPUB packages, written as XML ----------------------------------------------

_ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:xlink="http://www.w3.org/1999/xlink" '
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
    'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" office:version="1.3"'
)
_ODF_TABLE = (
    "<table:table table:name='Counts'><table:table-column table:number-columns-repeated='3'/>"
    "<table:table-row><table:table-cell table:number-columns-spanned='2'><text:p>Birds</text:p>"
    "</table:table-cell><table:covered-table-cell/><table:table-cell><text:p>2024</text:p>"
    "</table:table-cell></table:table-row><table:table-row table:number-rows-repeated='2'>"
    "<table:table-cell office:value-type='float' office:value='640' "
    "table:number-rows-spanned='2'><text:p>640</text:p>"
    "</table:table-cell><table:table-cell table:number-columns-repeated='2'/>"
    "</table:table-row></table:table>"
)


def _odf(mime: str, body: str, picture: bool = False) -> bytes:
    content = f"<?xml version='1.0' encoding='UTF-8'?><office:document-content {_ODF_NS}>"
    content += f"<office:body>{body}</office:body></office:document-content>"
    meta = (
        f"<?xml version='1.0' encoding='UTF-8'?><office:document-meta {_ODF_NS}><office:meta>"
        "<dc:title>Survey</dc:title><meta:creation-date>2024-03-05T09:30:00</meta:creation-date>"
        "</office:meta></office:document-meta>"
    )
    manifest = (
        "<?xml version='1.0' encoding='UTF-8'?><manifest:manifest "
        'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        f"<manifest:file-entry manifest:full-path='/' manifest:media-type='{mime}'/>"
        "<manifest:file-entry manifest:full-path='content.xml' manifest:media-type='text/xml'/>"
        "</manifest:manifest>"
    )
    members = [
        ("mimetype", mime.encode()),
        ("content.xml", content.encode()),
        ("meta.xml", meta.encode()),
        ("META-INF/manifest.xml", manifest.encode()),
    ]
    if picture:
        members.append(("Pictures/fig.png", _png(text="fig")))
    return _zip(members)


def odt_seeds() -> list[Seed]:
    body = (
        f"<office:text><text:h text:outline-level='1'>{_HEADING}</text:h><text:p>{_BODY}"
        "<text:note text:note-class='footnote'><text:note-citation>1</text:note-citation>"
        "<text:note-body><text:p>Counted by volunteers.</text:p></text:note-body></text:note>"
        "</text:p><text:h text:outline-level='2'>Counts</text:h>"
        "<text:list><text:list-item><text:p>first</text:p><text:list><text:list-item>"
        "<text:p>nested</text:p></text:list-item></text:list></text:list-item></text:list>"
        f"{_ODF_TABLE}<text:p><draw:frame draw:name='fig' svg:width='2cm' svg:height='1cm'>"
        "<draw:image xlink:href='Pictures/fig.png'/></draw:frame></text:p></office:text>"
    )
    return [Seed("report.odt", _odf("application/vnd.oasis.opendocument.text", body, True))]


def odp_seeds() -> list[Seed]:
    def frame(kind: str, text: str) -> str:
        return (
            f"<draw:frame presentation:class='{kind}' svg:x='1cm' svg:y='1cm'>"
            f"<draw:text-box><text:p>{text}</text:p></draw:text-box></draw:frame>"
        )

    slides = "".join(
        f"<draw:page draw:name='p{n}'>{frame('title', title)}{frame('outline', _BODY)}"
        f"<presentation:notes><draw:frame><draw:text-box><text:p>note {n}</text:p>"
        "</draw:text-box></draw:frame></presentation:notes></draw:page>"
        for n, title in ((1, _HEADING), (2, "Counts"))
    )
    body = f"<office:presentation>{slides}</office:presentation>"
    return [Seed("deck.odp", _odf("application/vnd.oasis.opendocument.presentation", body))]


def ods_seeds() -> list[Seed]:
    body = f"<office:spreadsheet>{_ODF_TABLE}</office:spreadsheet>"
    return [Seed("counts.ods", _odf("application/vnd.oasis.opendocument.spreadsheet", body))]


def epub_seeds() -> list[Seed]:
    def xhtml(title: str, body: str) -> bytes:
        return (
            "<?xml version='1.0' encoding='utf-8'?><html xmlns='http://www.w3.org/1999/xhtml' "
            "xmlns:epub='http://www.idpf.org/2007/ops'><head><title>"
            f"{title}</title></head><body>{body}</body></html>"
        ).encode()

    container = (
        "<?xml version='1.0'?><container version='1.0' "
        "xmlns='urn:oasis:names:tc:opendocument:xmlns:container'><rootfiles>"
        "<rootfile full-path='OEBPS/content.opf' media-type='application/oebps-package+xml'/>"
        "</rootfiles></container>"
    )
    items = [
        ("nav", "nav.xhtml", "application/xhtml+xml", " properties='nav'"),
        ("c1", "c1.xhtml", "application/xhtml+xml", ""),
        ("c2", "c2.xhtml", "application/xhtml+xml", ""),
        ("img", "fig.png", "image/png", ""),
    ]
    manifest = "".join(f"<item id='{i}' href='{h}' media-type='{m}'{p}/>" for i, h, m, p in items)
    opf = (
        "<?xml version='1.0'?><package xmlns='http://www.idpf.org/2007/opf' version='3.0' "
        "unique-identifier='id'><metadata xmlns:dc='http://purl.org/dc/elements/1.1/'>"
        "<dc:identifier id='id'>urn:x</dc:identifier><dc:title>Survey</dc:title>"
        "<dc:date>2024-03-05</dc:date><dc:language>en</dc:language></metadata>"
        f"<manifest>{manifest}</manifest><spine><itemref idref='c1'/><itemref idref='c2'/>"
        "</spine></package>"
    )
    nav = "<nav epub:type='toc'><ol><li><a href='c1.xhtml'>One</a></li><li><a href='c2.xhtml'>"
    nav += "Two</a></li></ol></nav>"
    members = [
        ("mimetype", b"application/epub+zip"),
        ("META-INF/container.xml", container.encode()),
        ("OEBPS/content.opf", opf.encode()),
        ("OEBPS/nav.xhtml", xhtml("Contents", nav)),
        ("OEBPS/c1.xhtml", xhtml("One", f"<h1>{_HEADING}</h1><p>{_BODY}</p>")),
        (
            "OEBPS/c2.xhtml",
            xhtml(
                "Two",
                "<h1>Counts</h1><table><tr><td>640</td></tr></table><img src='fig.png' alt='fig'/>",
            ),
        ),
        ("OEBPS/fig.png", _png(text="fig")),
    ]
    return [Seed("manual.epub", _zip(members))]


# -- legacy Office through LibreOffice -----------------------------------------------------------


def _libreoffice(source: Seed, target: str, name: str) -> list[Seed]:
    """`source` converted to `target` by LibreOffice in a throwaway profile; none without it."""
    binary = shutil.which("soffice") or shutil.which("libreoffice")
    if binary is None:
        return []
    with tempfile.TemporaryDirectory(prefix="fuzz-seed-") as tmp:
        folder = Path(tmp)
        (folder / source.name).write_bytes(source.data)
        command = [
            binary,
            f"-env:UserInstallation={(folder / 'profile').as_uri()}",
            "--headless",
            "--convert-to",
            target,
            "--outdir",
            str(folder / "out"),
            str(folder / source.name),
        ]
        subprocess.run(command, capture_output=True, timeout=180, check=False)
        made = sorted((folder / "out").glob(f"*.{target}"))
        return [Seed(name, made[0].read_bytes())] if made else []


def doc_seeds() -> list[Seed]:
    return _libreoffice(docx_seeds()[0], "doc", "report.doc")


def ppt_seeds() -> list[Seed]:
    return _libreoffice(pptx_seeds()[0], "ppt", "deck.ppt")


BUILDERS: dict[FileFormat, Callable[[], list[Seed]]] = {
    FileFormat.PDF: pdf_seeds,
    FileFormat.DOCX: docx_seeds,
    FileFormat.PPTX: pptx_seeds,
    FileFormat.XLSX: xlsx_seeds,
    FileFormat.XLS: xls_seeds,
    FileFormat.ODS: ods_seeds,
    FileFormat.MARKDOWN: markdown_seeds,
    FileFormat.TEXT: text_seeds,
    FileFormat.HTML: html_seeds,
    FileFormat.IMAGE: image_seeds,
    FileFormat.SEGMENTS_JSON: segments_seeds,
    FileFormat.ODT: odt_seeds,
    FileFormat.ODP: odp_seeds,
    FileFormat.RTF: rtf_seeds,
    FileFormat.EPUB: epub_seeds,
    FileFormat.EML: eml_seeds,
    FileFormat.MSG: msg_seeds,
    FileFormat.MBOX: mbox_seeds,
    FileFormat.CSV: csv_seeds,
    FileFormat.DOC: doc_seeds,
    FileFormat.PPT: ppt_seeds,
}
"""Which formats this module can build seeds for; a format missing here (a new one) is fuzzed
from the shared files alone, or reported without seeds."""


def shared_seeds(folder: Path, max_bytes: int) -> dict[FileFormat, list[Seed]]:
    """The files of a shared folder up to `max_bytes`, by the format their bytes sniff as."""
    found: dict[FileFormat, list[Seed]] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.iterdir()):
        if not path.is_file() or path.stat().st_size > max_bytes:
            continue
        data = path.read_bytes()
        fmt = sniff_format(data, path.suffix.lstrip(".")).format
        found.setdefault(fmt, []).append(Seed(path.name, data, origin=f"shared:{path.name}"))
    return found


def generated_seeds(fmt: FileFormat) -> tuple[list[Seed], list[str]]:
    """The built seeds of a format that sniff as it, and a note for each one that did not."""
    builder = BUILDERS.get(fmt)
    if builder is None:
        return [], []
    kept: list[Seed] = []
    problems: list[str] = []
    for seed in builder():
        sniffed = sniff_format(seed.data, seed.extension).format
        if sniffed is fmt:
            kept.append(seed)
        else:
            problems.append(f"{seed.name} was built as {fmt.value} but sniffs as {sniffed.value}")
    return kept, problems
