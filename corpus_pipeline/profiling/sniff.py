"""Format sniffing from content. The extension is only a tie-breaker between text formats
(Markdown vs plain text) and a hint for naming the format of a broken container."""

from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass

from corpus_pipeline.contracts import FileFormat

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
    (b"BM", "image/bmp"),
)
_OOXML = {
    "word/document.xml": (
        FileFormat.DOCX,
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    "ppt/presentation.xml": (
        FileFormat.PPTX,
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
    "xl/workbook.xml": (
        FileFormat.XLSX,
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
}
_CONTAINER_EXTENSIONS = {
    "docx": FileFormat.DOCX,
    "pptx": FileFormat.PPTX,
    "xlsx": FileFormat.XLSX,
    "ods": FileFormat.ODS,
}
_MEDIA = {
    FileFormat.DOCX: _OOXML["word/document.xml"][1],
    FileFormat.PPTX: _OOXML["ppt/presentation.xml"][1],
    FileFormat.XLSX: _OOXML["xl/workbook.xml"][1],
    FileFormat.ODS: "application/vnd.oasis.opendocument.spreadsheet",
}
_HTML_START = re.compile(
    rb"^\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)\b", re.I | re.S
)
_MD_SIGNAL = re.compile(r"^(#{1,6}\s+\S|```|\s*[-*+]\s+\S|\s*\d+\.\s+\S|\|.+\|\s*$|>\s)", re.M)
_MD_EXTENSIONS = {"md", "markdown", "mdown", "mkd"}
_TEXT_EXTENSIONS = {"txt", "text", "log", "csv", "tsv", "rst"}


@dataclass(frozen=True)
class Sniffed:
    format: FileFormat
    media_type: str
    evidence: str


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
        return Sniffed(FileFormat.PDF, "application/pdf", "PDF header")
    for magic, media in _IMAGE_MAGIC:
        if data.startswith(magic):
            return Sniffed(FileFormat.IMAGE, media, f"{media} signature")
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return Sniffed(FileFormat.IMAGE, "image/webp", "WebP signature")
    if data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06"):
        return _sniff_zip(data, ext)
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        if ext == "xls":
            return Sniffed(FileFormat.XLS, "application/vnd.ms-excel", "OLE2 container, .xls")
        return Sniffed(
            FileFormat.UNKNOWN, "application/x-ole-storage", "legacy Office binary (OLE2)"
        )
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
            for member, (fmt, media) in _OOXML.items():
                if member in names:
                    return Sniffed(fmt, media, f"ZIP container with {member}")
            if "mimetype" in names:
                mime = zf.read("mimetype").decode("ascii", errors="replace").strip()
                if mime == _MEDIA[FileFormat.ODS]:
                    return Sniffed(FileFormat.ODS, mime, "OpenDocument spreadsheet")
                return Sniffed(
                    FileFormat.UNKNOWN, mime or "application/zip", f"OpenDocument {mime}"
                )
    except (zipfile.BadZipFile, OSError, KeyError):
        guessed = _CONTAINER_EXTENSIONS.get(ext)
        if guessed is not None:
            return Sniffed(
                guessed, _MEDIA[guessed], f"ZIP signature but unreadable container (.{ext})"
            )
        return Sniffed(FileFormat.UNKNOWN, "application/zip", "unreadable ZIP container")
    return Sniffed(FileFormat.UNKNOWN, "application/zip", "ZIP archive without a document part")


def _sniff_text(data: bytes, text: str, ext: str) -> Sniffed:
    if _HTML_START.match(data[:4096]) or (ext in {"html", "htm", "xhtml"} and "<" in text[:4096]):
        return Sniffed(FileFormat.HTML, "text/html", "HTML markup")
    stripped = text.lstrip()
    if stripped[:1] in "[{" and _is_segments_json(stripped):
        return Sniffed(FileFormat.SEGMENTS_JSON, "application/json", "JSON list of segments")
    signals = len(_MD_SIGNAL.findall(text[:65536]))
    if ext in _MD_EXTENSIONS:
        return Sniffed(
            FileFormat.MARKDOWN, "text/markdown", f"text, .{ext}, {signals} Markdown signals"
        )
    if ext not in _TEXT_EXTENSIONS and signals >= 3 and re.search(r"^#{1,6}\s+\S", text, re.M):
        return Sniffed(
            FileFormat.MARKDOWN, "text/markdown", f"text with {signals} Markdown signals"
        )
    return Sniffed(FileFormat.TEXT, "text/plain", "text without markup")


def _is_segments_json(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    items = value.get("segments") if isinstance(value, dict) else value
    return (
        isinstance(items, list)
        and bool(items)
        and all(isinstance(i, dict) and "type" in i for i in items)
        and any("content" in i or "text" in i for i in items)
    )
