"""Format sniffing from content. The extension is only a tie-breaker between text formats
(Markdown vs plain text) and a hint for naming the format of a broken container. The media
type of a format, and the extensions that name a broken container's format, are the
registry's (`parsing.formats`); images and delimited text are typed by what their bytes say."""

from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass

from corpus_pipeline.common.errors import ZIP_DAMAGE
from corpus_pipeline.contracts import FileFormat
from corpus_pipeline.parsing.formats import EXTENSIONS, MEDIA_TYPES

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
    (b"BM", "image/bmp"),
)
# The media type of each parsed format that has one (images and delimited text have several).
_MEDIA = {fmt: types[0] for fmt, types in MEDIA_TYPES.items() if len(types) == 1}
# The part an Office Open XML package cannot lack, and so names it.
_OOXML = {
    "word/document.xml": FileFormat.DOCX,
    "ppt/presentation.xml": FileFormat.PPTX,
    "xl/workbook.xml": FileFormat.XLSX,
}
# OpenDocument and EPUB packages, by their `mimetype` member: their format's media type.
_PACKAGES = {
    FileFormat.ODS: "OpenDocument spreadsheet",
    FileFormat.ODT: "OpenDocument text",
    FileFormat.ODP: "OpenDocument presentation",
    FileFormat.EPUB: "EPUB publication",
}
_PACKAGE_TYPES = {_MEDIA[fmt]: (fmt, what) for fmt, what in _PACKAGES.items()}
# A ZIP or OLE2 container that cannot be read is named by its extension, as the format of
# that name: the door can then say the .docx (or .doc) is damaged rather than unknown.
_CONTAINER_EXTENSIONS = {
    ext: fmt for fmt in (*_OOXML.values(), *_PACKAGES) for ext in EXTENSIONS[fmt]
}
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# Root stream of an OLE2 compound file → what the file is; checked in this order. (An Outlook
# message, .msg, is an OLE2 file too: its root has a `__properties_version1.0` stream.)
_OLE_STREAMS: dict[str, tuple[FileFormat, str]] = {
    "WordDocument": (FileFormat.DOC, "legacy Word"),
    "PowerPoint Document": (FileFormat.PPT, "legacy PowerPoint"),
    "Workbook": (FileFormat.XLS, "Excel 97-2003 workbook"),
    "Book": (FileFormat.XLS, "Excel 5.0/95 workbook"),
}
_OLE_EXTENSIONS = {
    ext: fmt
    for fmt in (FileFormat.DOC, FileFormat.PPT, FileFormat.XLS, FileFormat.MSG)
    for ext in EXTENSIONS[fmt]
}
_HTML_START = re.compile(
    rb"^\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)\b", re.I | re.S
)
_MD_SIGNAL = re.compile(r"^(#{1,6}\s+\S|```|\s*[-*+]\s+\S|\s*\d+\.\s+\S|\|.+\|\s*$|>\s)", re.M)
_MD_EXTENSIONS = {"md", "markdown", "mdown", "mkd"}
_TEXT_EXTENSIONS = {"txt", "text", "log", "csv", "tsv", "rst"}
# E-mail: the header fields that say a text is a message (RFC 5322), and an mbox's separator.
_MAIL_FIELDS = frozenset(
    {"from", "to", "cc", "subject", "date", "message-id", "mime-version", "received",
     "return-path", "reply-to", "in-reply-to", "references", "delivered-to", "sender"}
)  # fmt: skip
_HEADER_FIELD = re.compile(r"^([!-9;-~]+):")
_MBOX_FROM = re.compile(r"^From \S+.*\d")
_HEADER_SAMPLE = 65536
# Delimited tables: named so (content still decides), or plain text strictly tested.
_CSV_EXTENSIONS = {"csv", "tsv", "tab"}
_PLAIN_EXTENSIONS = {"", "txt", "text", "dat"}


@dataclass(frozen=True)
class Sniffed:
    format: FileFormat
    media_type: str
    evidence: str


def _sniffed(fmt: FileFormat, evidence: str) -> Sniffed:
    """A format with one media type, found by `evidence`."""
    return Sniffed(fmt, _MEDIA[fmt], evidence)


def decode_text(data: bytes) -> str | None:
    """Decode bytes that look like text (BOMs honoured, UTF-8, then cp1252); None for binary."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        sample = data[:8192]
        controls = sum(1 for b in sample if b < 9 or 13 < b < 32)
        if controls > len(sample) * 0.01:
            return None
        return data.decode("cp1252", errors="replace")


def sniff_format(data: bytes, extension: str = "") -> Sniffed:
    """Decide the format from the bytes."""
    ext = extension.lower().lstrip(".")
    if data.startswith(b"%PDF-") or b"%PDF-" in data[:1024]:
        return _sniffed(FileFormat.PDF, "PDF header")
    for magic, media in _IMAGE_MAGIC:
        if data.startswith(magic):
            return Sniffed(FileFormat.IMAGE, media, f"{media} signature")
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return Sniffed(FileFormat.IMAGE, "image/webp", "WebP signature")
    if data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06"):
        return _sniff_zip(data, ext)
    if data[:64].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\rtf"):
        return _sniffed(FileFormat.RTF, "RTF header")
    if data.startswith(_OLE_MAGIC):
        return _sniff_ole(data, ext)
    text = decode_text(data)
    if text is None:
        return Sniffed(
            FileFormat.UNKNOWN,
            "application/octet-stream",
            "binary content without a known signature",
        )
    return _sniff_text(data, text, ext)


def _sniff_zip(data: bytes, ext: str) -> Sniffed:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist())
            for member, fmt in _OOXML.items():
                if member in names:
                    return _sniffed(fmt, f"ZIP container with {member}")
            if "mimetype" in names:
                with zf.open("mimetype") as stream:  # a few bytes, whatever it claims
                    mime = stream.read(200).decode("ascii", errors="replace").strip()
                if mime in _PACKAGE_TYPES:
                    fmt, what = _PACKAGE_TYPES[mime]
                    return Sniffed(fmt, mime, what)
                return Sniffed(
                    FileFormat.UNKNOWN, mime or "application/zip", f"OpenDocument {mime}"
                )
    # A damaged container fails in many ways (a negative seek, an unknown compression method,
    # a truncated deflate stream, a member name that is not UTF-8): all of them say the same.
    except (*ZIP_DAMAGE, KeyError):
        guessed = _CONTAINER_EXTENSIONS.get(ext)
        if guessed is not None:
            return _sniffed(guessed, f"ZIP signature but unreadable container (.{ext})")
        return Sniffed(FileFormat.UNKNOWN, "application/zip", "unreadable ZIP container")
    return Sniffed(FileFormat.UNKNOWN, "application/zip", "ZIP archive without a document part")


def _sniff_ole(data: bytes, ext: str) -> Sniffed:
    """An OLE2 compound file, told apart by the streams at its root (not those of an embedded
    object, which sit in a storage below it): the first entry of `_OLE_STREAMS` found names
    it. A container that cannot be read is named by its extension, so the door can say that
    the .doc is damaged rather than unknown."""
    import olefile  # type: ignore[import-untyped]

    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            root = {path[0].lower() for path in ole.listdir(streams=True, storages=False)}
    except Exception:  # olefile reports damage as several exception classes
        guessed = _OLE_EXTENSIONS.get(ext)
        if guessed is not None:
            return _sniffed(guessed, f"OLE2 signature but unreadable container (.{ext})")
        return Sniffed(FileFormat.UNKNOWN, "application/x-ole-storage", "unreadable OLE2 container")
    if _is_outlook_message(root):
        evidence = "OLE2 container with MAPI property streams (Outlook message)"
        return _sniffed(FileFormat.MSG, evidence)
    for stream, (fmt, what) in _OLE_STREAMS.items():
        if stream.lower() in root:
            return _sniffed(fmt, f"OLE2 container with a {stream!r} stream ({what})")
    if ext == "msg":
        evidence = "OLE2 container without the property streams of an Outlook message"
        return Sniffed(FileFormat.UNKNOWN, "application/x-ole-storage", evidence)
    return Sniffed(
        FileFormat.UNKNOWN, "application/x-ole-storage", "OLE2 container of no document format"
    )


def _is_outlook_message(root: set[str]) -> bool:
    """An Outlook message (.msg): a MAPI property stream and property value streams at the
    root of the compound file (MS-OXMSG)."""
    return "__properties_version1.0" in root and any(n.startswith("__substg1.0_") for n in root)


def _sniff_text(data: bytes, text: str, ext: str) -> Sniffed:
    if _HTML_START.match(data[:4096]) or (ext in {"html", "htm", "xhtml"} and "<" in text[:4096]):
        return _sniffed(FileFormat.HTML, "HTML markup")
    stripped = text.lstrip()
    if stripped[:1] in "[{" and _is_segments_json(stripped):
        return _sniffed(FileFormat.SEGMENTS_JSON, "JSON list of segments")
    mail = _sniff_mail(text, ext) if ext not in _MD_EXTENSIONS else None
    if mail is not None:
        return mail
    signals = len(_MD_SIGNAL.findall(text[:65536]))
    if ext in _MD_EXTENSIONS:
        return _sniffed(FileFormat.MARKDOWN, f"text, .{ext}, {signals} Markdown signals")
    delimited = _sniff_delimited(text, ext)
    if delimited is not None:
        return delimited
    if ext not in _TEXT_EXTENSIONS and signals >= 3 and re.search(r"^#{1,6}\s+\S", text, re.M):
        return _sniffed(FileFormat.MARKDOWN, f"text with {signals} Markdown signals")
    return _sniffed(FileFormat.TEXT, "text without markup")


def _sniff_mail(text: str, ext: str) -> Sniffed | None:
    """An mbox (a `From ` separator line, then a message's header fields) or one message: a
    first block made only of header fields, at least three of them known ones (two in an
    .eml). An .eml that opens with an envelope `From ` line is still one message."""
    if text.startswith("From "):
        first, _, rest = text[:_HEADER_SAMPLE].partition("\n")
        if not _MBOX_FROM.match(first) or len(_header_fields(rest, len(text))) < 2:
            return None
        if ext == "eml":
            return _sniffed(FileFormat.EML, "e-mail with an mbox From line")
        return Sniffed(FileFormat.MBOX, "application/mbox", "mbox: From separator, then headers")
    fields = _header_fields(text[:_HEADER_SAMPLE], len(text))
    if len(fields) >= 3 or (ext == "eml" and len(fields) >= 2):
        known = ", ".join(sorted(fields))
        return _sniffed(FileFormat.EML, f"e-mail header fields ({known})")
    return None


def _header_fields(head: str, total: int) -> set[str]:
    """The known mail header fields of the first block of `head`, when every line up to the
    first blank one is a field or a folded continuation; otherwise none."""
    names: set[str] = set()
    for line in head.split("\n"):
        line = line.rstrip("\r")
        if not line.strip():
            return names & _MAIL_FIELDS
        if line[0] in " \t" and names:
            continue
        field = _HEADER_FIELD.match(line)
        if field is None:
            return set()
        names.add(field.group(1).lower())
    return names & _MAIL_FIELDS if len(head) >= total else set()


def _sniff_delimited(text: str, ext: str) -> Sniffed | None:
    """Rows of delimited cells (`parsing.csv_table.sniff_delimiter`): a .csv/.tsv whose rows
    split consistently, or plain text that splits strictly so."""
    if ext not in _CSV_EXTENSIONS and ext not in _PLAIN_EXTENSIONS:
        return None
    from corpus_pipeline.parsing.csv_table import sniff_delimiter

    delimiter = sniff_delimiter(text, strict=ext not in _CSV_EXTENSIONS)
    if delimiter is None:
        return None
    kind = {"\t": "tab", ",": "comma", ";": "semicolon", "|": "pipe"}[delimiter]
    media = "text/tab-separated-values" if delimiter == "\t" else "text/csv"
    return Sniffed(FileFormat.CSV, media, f"delimited text ({kind}-separated rows)")


def _is_segments_json(text: str) -> bool:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # nested past the recursion limit: no segment list
        return False
    items = value.get("segments") if isinstance(value, dict) else value
    return (
        isinstance(items, list)
        and bool(items)
        and all(isinstance(i, dict) and "type" in i for i in items)
        and any("content" in i or "text" in i for i in items)
    )
