"""The registry of parser strategies: one entry per strategy the router hands files to, with the
extensions and media types of its files, what of their structure it keeps, and the external
program it needs. It is the single list: the router's `STRATEGIES` is derived from it, and
`GET /v1/supported-formats` and `corpus formats` answer from it (`capabilities`), with what is
installed on this deployment looked up at the time of asking (LibreOffice, Tesseract).

A test pins the registry to the router (every strategy `parser_for` dispatches, and no other),
to the door (every extension listed is one the door admits for that format) and to the format
table of docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts.formats import (
    ContainerSupport,
    FormatSupport,
    SupportedFormats,
    Tool,
    ToolStatus,
)
from corpus_pipeline.contracts.profile import FileFormat

_PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
_XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_XLS = "application/vnd.ms-excel"
_SHEETS = "one section per visible sheet"
_SLIDES = "one section per slide, titled by its title"
_MAIL = "the subject; quoted replies and forwarded messages as sections of their own"


@dataclass(frozen=True)
class FormatSpec:
    """One parser strategy as the code implements it: `ocr` says the strategy reads text from
    pixels when Tesseract is installed, `requires` names a program without which it cannot
    run at all."""

    strategy: str
    format: FileFormat
    name: str
    extensions: tuple[str, ...]
    media_types: tuple[str, ...]
    headings: str | None
    tables: bool
    table_spans: bool
    images: bool
    ocr: bool = False
    requires: Tool | None = None
    notes: str = ""


_MODERN = (
    FormatSpec(
        strategy="pdf",
        format=FileFormat.PDF,
        name="PDF",
        extensions=("pdf",),
        media_types=("application/pdf",),
        headings="the embedded outline, then numbering, then font geometry",
        tables=True,
        table_spans=True,
        images=True,
        ocr=True,
        notes="text layer, or OCR for scanned pages (whose tables are read as text); running "
        "headers and footers set apart; tables joined across page breaks; encrypted files "
        "with a password",
    ),
    FormatSpec(
        strategy="docx",
        format=FileFormat.DOCX,
        name="Word document",
        extensions=("docx",),
        media_types=(_DOCX,),
        headings="paragraph styles and outline levels",
        tables=True,
        table_spans=True,
        images=True,
        notes="content controls, tracked insertions, automatic numbering and hyperlinks kept",
    ),
    FormatSpec(
        strategy="pptx",
        format=FileFormat.PPTX,
        name="PowerPoint presentation",
        extensions=("pptx",),
        media_types=(_PPTX,),
        headings=_SLIDES,
        tables=True,
        table_spans=True,
        images=True,
        notes="speaker notes and comments; charts as a line of text; hidden slides skipped",
    ),
    FormatSpec(
        strategy="xlsx",
        format=FileFormat.XLSX,
        name="Excel workbook",
        extensions=("xlsx",),
        media_types=(_XLSX,),
        headings=_SHEETS,
        tables=True,
        table_spans=True,
        images=True,
        notes="regions of touching cells become tables; stored values; charts as text",
    ),
    FormatSpec(
        strategy="xls",
        format=FileFormat.XLS,
        name="Excel 97-2003 workbook",
        extensions=("xls",),
        media_types=(_XLS,),
        headings=_SHEETS,
        tables=True,
        table_spans=True,
        images=False,
        notes="read with xlrd; one it cannot read is converted by LibreOffice (xls_legacy)",
    ),
    FormatSpec(
        strategy="ods",
        format=FileFormat.ODS,
        name="OpenDocument spreadsheet",
        extensions=("ods",),
        media_types=("application/vnd.oasis.opendocument.spreadsheet",),
        headings=_SHEETS,
        tables=True,
        table_spans=True,
        images=False,
        notes="regions of touching cells become tables, as in an Excel workbook",
    ),
    FormatSpec(
        strategy="odt",
        format=FileFormat.ODT,
        name="OpenDocument text",
        extensions=("odt",),
        media_types=("application/vnd.oasis.opendocument.text",),
        headings="outline levels",
        tables=True,
        table_spans=True,
        images=True,
        notes="lists, footnotes and endnotes, text boxes; title and date from meta.xml",
    ),
    FormatSpec(
        strategy="odp",
        format=FileFormat.ODP,
        name="OpenDocument presentation",
        extensions=("odp",),
        media_types=("application/vnd.oasis.opendocument.presentation",),
        headings=_SLIDES,
        tables=True,
        table_spans=True,
        images=True,
        notes="speaker notes and comments; hidden slides skipped",
    ),
    FormatSpec(
        strategy="rtf",
        format=FileFormat.RTF,
        name="Rich Text Format",
        extensions=("rtf",),
        media_types=("application/rtf",),
        headings="outline levels and heading styles",
        tables=True,
        table_spans=True,
        images=True,
        notes="footnotes; PNG and JPEG pictures; text in the file's code page",
    ),
    FormatSpec(
        strategy="epub",
        format=FileFormat.EPUB,
        name="EPUB e-book",
        extensions=("epub",),
        media_types=("application/epub+zip",),
        headings="the chapters' HTML headings, else their navigation titles",
        tables=True,
        table_spans=True,
        images=True,
        notes="the spine's chapters in reading order, each through the HTML parser",
    ),
    FormatSpec(
        strategy="html",
        format=FileFormat.HTML,
        name="HTML page",
        extensions=("html", "htm"),
        media_types=("text/html",),
        headings="h1 to h6",
        tables=True,
        table_spans=True,
        images=True,
        notes="embedded (data:) images; scripts, hidden elements and page chrome dropped",
    ),
    FormatSpec(
        strategy="markdown",
        format=FileFormat.MARKDOWN,
        name="Markdown",
        extensions=("md", "markdown"),
        media_types=("text/markdown",),
        headings="# and underlined headings",
        tables=True,
        table_spans=True,
        images=True,
        notes="CommonMark with GFM tables; raw HTML (tables with spans too) through the HTML "
        "parser; embedded (data:) images",
    ),
    FormatSpec(
        strategy="text",
        format=FileFormat.TEXT,
        name="plain text",
        extensions=("txt", "text"),
        media_types=("text/plain",),
        headings="numbered, ALL CAPS or underlined lines standing alone",
        tables=False,
        table_spans=False,
        images=False,
        notes="a text with Markdown headings is read as Markdown",
    ),
    FormatSpec(
        strategy="csv",
        format=FileFormat.CSV,
        name="CSV or TSV table",
        extensions=("csv", "tsv"),
        media_types=("text/csv", "text/tab-separated-values"),
        headings=None,
        tables=True,
        table_spans=False,
        images=False,
        notes="encoding, delimiter and header row sniffed; blocks of rows, each led by the "
        "header; cut at the cell budget",
    ),
    FormatSpec(
        strategy="eml",
        format=FileFormat.EML,
        name="e-mail message",
        extensions=("eml",),
        media_types=("message/rfc822",),
        headings=_MAIL,
        tables=True,
        table_spans=True,
        images=True,
        notes="sender, recipients, date, subject and message id kept; the HTML body through the "
        "HTML parser; each attachment becomes a document linked to its message",
    ),
    FormatSpec(
        strategy="msg",
        format=FileFormat.MSG,
        name="Outlook message",
        extensions=("msg",),
        media_types=("application/vnd.ms-outlook",),
        headings=_MAIL,
        tables=True,
        table_spans=True,
        images=True,
        notes="read with extract-msg (GPL-3.0), then as an e-mail message",
    ),
    FormatSpec(
        strategy="image",
        format=FileFormat.IMAGE,
        name="image",
        extensions=("png", "jpg", "jpeg", "gif", "webp", "tif", "tiff", "bmp"),
        media_types=(
            "image/png",
            "image/jpeg",
            "image/gif",
            "image/webp",
            "image/tiff",
            "image/bmp",
        ),
        headings="line geometry and numbering of the OCR text",
        tables=False,
        table_spans=False,
        images=True,
        ocr=True,
        notes="every frame stored as an image, then read as a scanned page",
    ),
    FormatSpec(
        strategy="segments_json",
        format=FileFormat.SEGMENTS_JSON,
        name="segment JSON",
        extensions=("json",),
        media_types=("application/json",),
        headings="heading segments, else changes of section path",
        tables=True,
        table_spans=True,
        images=True,
        notes="a document segmented elsewhere, validated whole before anything is stored",
    ),
)
_BY_STRATEGY = {spec.strategy: spec for spec in _MODERN}


def _legacy(strategy: str, fmt: FileFormat, name: str, media: str, target: str) -> FormatSpec:
    """A legacy Office strategy: converted by LibreOffice, then read by `target`'s parser, so it
    keeps what that parser keeps."""
    modern = _BY_STRATEGY[target]
    return FormatSpec(
        strategy=strategy,
        format=fmt,
        name=name,
        extensions=(fmt.value,),
        media_types=(media,),
        headings=modern.headings,
        tables=modern.tables,
        table_spans=modern.table_spans,
        images=modern.images,
        requires="libreoffice",
        notes=f"converted to {target.upper()} by a managed LibreOffice, then read as "
        f"{target.upper()}; the manifest records the conversion",
    )


# Each legacy strategy, by the modern one it converts to.
_LEGACY = {
    "docx": _legacy("doc", FileFormat.DOC, "legacy Word document", "application/msword", "docx"),
    "pptx": _legacy(
        "ppt", FileFormat.PPT, "legacy PowerPoint", "application/vnd.ms-powerpoint", "pptx"
    ),
    "xls": _legacy("xls_legacy", FileFormat.XLS, "XLS that xlrd cannot read", _XLS, "xlsx"),
}
# Every strategy, each legacy one right after its modern counterpart.
FORMATS: tuple[FormatSpec, ...] = tuple(
    entry
    for spec in _MODERN
    for entry in (spec, *([_LEGACY[spec.strategy]] if spec.strategy in _LEGACY else []))
)
# The strategies the router may choose (`router.route`) and must dispatch (`router.parser_for`).
STRATEGIES: frozenset[str] = frozenset(spec.strategy for spec in FORMATS)
# Formats no strategy parses, and why.
UNPARSED: Mapping[FileFormat, str] = {
    FileFormat.MBOX: "split at the door into one e-mail document per message",
    FileFormat.UNKNOWN: "not a document format: refused at the door",
}
CONTAINERS = (
    ContainerSupport(
        name="mbox mailbox",
        extensions=["mbox"],
        becomes="one e-mail document per message, each attachment a document linked to it",
    ),
    ContainerSupport(
        name="archive",
        extensions=["zip", "tar", "tar.gz", "tgz"],
        becomes="one document per member (named <archive>/<member path>), each admitted alone",
    ),
)
_ENABLES: Mapping[Tool, str] = {
    "libreoffice": "legacy .doc and .ppt files, and the .xls files xlrd cannot read",
    "tesseract": "OCR: the text of scanned PDF pages and of images",
}
_NO_TESSERACT = "not installed; install it with `make system-deps`"
_OCR_OFF = "OCR is off: Tesseract is not installed, so scans and pictures get no text"


def capabilities(settings: CorpusSettings) -> SupportedFormats:
    """What this deployment parses now: LibreOffice looked up as the door looks it up (with
    `settings`), Tesseract as the PDF parser does."""
    from corpus_pipeline.parsing.legacy import libreoffice_available
    from corpus_pipeline.parsing.pdf.ocr import tesseract_version

    configured = bool(settings.libreoffice_path.strip())
    return report(
        libreoffice=libreoffice_status(libreoffice_available(settings), configured=configured),
        tesseract=tesseract_status(tesseract_version()),
    )


def libreoffice_status(available: bool, *, configured: bool = False) -> ToolStatus:
    """LibreOffice's line: `configured` when CORPUS_LIBREOFFICE_PATH names the program."""
    from corpus_pipeline.parsing.legacy import INSTALL_HINT

    if available:
        detail = "installed"
    elif configured:
        detail = f"CORPUS_LIBREOFFICE_PATH names no program here; {INSTALL_HINT}"
    else:
        detail = f"not installed; {INSTALL_HINT}"
    return ToolStatus(
        tool="libreoffice", available=available, enables=_ENABLES["libreoffice"], detail=detail
    )


def tesseract_status(version: str | None) -> ToolStatus:
    """Tesseract's line, from the version it reports (None: not installed)."""
    detail = f"installed (Tesseract {version})" if version else _NO_TESSERACT
    return ToolStatus(
        tool="tesseract",
        available=version is not None,
        enables=_ENABLES["tesseract"],
        detail=detail,
    )


def supported_formats(settings: CorpusSettings) -> list[FormatSupport]:
    """Every strategy of the registry, as available here now (`capabilities`)."""
    return capabilities(settings).formats


def report(*, libreoffice: ToolStatus, tesseract: ToolStatus) -> SupportedFormats:
    """The registry evaluated for a deployment with (or without) each tool."""
    from corpus_pipeline.parsing.legacy import INSTALL_HINT

    tools = {"libreoffice": libreoffice.available, "tesseract": tesseract.available}
    formats = []
    for spec in FORMATS:
        available = spec.requires is None or tools[spec.requires]
        reason = None
        if not available:
            reason = (
                "needs LibreOffice, which is not installed on this deployment: such files are "
                f"refused at the door ({INSTALL_HINT})"
            )
        elif spec.ocr and not tesseract.available:
            reason = _OCR_OFF
        formats.append(
            FormatSupport(
                format=spec.format,
                strategy=spec.strategy,
                name=spec.name,
                extensions=list(spec.extensions),
                media_types=list(spec.media_types),
                headings=spec.headings,
                tables=spec.tables,
                table_spans=spec.table_spans,
                images=spec.images,
                ocr=tesseract.available if spec.ocr else None,
                requires=spec.requires,
                available=available,
                reason=reason,
                notes=spec.notes,
            )
        )
    return SupportedFormats(
        tools=[libreoffice, tesseract], formats=formats, containers=list(CONTAINERS)
    )


def examples() -> dict[str, tuple[str, SupportedFormats]]:
    """The OpenAPI examples of the answer, cut down to three formats: with both tools
    installed, and with neither."""
    shown = {"pdf", "docx", "doc"}
    cases = {
        "installed": ("LibreOffice and Tesseract installed", True, "5.3.0"),
        "missing": ("Neither LibreOffice nor Tesseract installed", False, None),
    }
    out = {}
    for name, (summary, office, version) in cases.items():
        full = report(libreoffice=libreoffice_status(office), tesseract=tesseract_status(version))
        cut = [f for f in full.formats if f.strategy in shown]
        out[name] = (summary, full.model_copy(update={"formats": cut}))
    return out
