"""Validation at the door: what a delivered file must be before anything of it is stored.

One rule set for every way in (`corpus ingest` today, the upload API): the file is not empty,
its type sniffed from the bytes is a document format and agrees with its extension's family (a
`.pdf` that is a ZIP is refused), its container opens (a truncated PDF or Office file is
refused), and an encrypted PDF comes with a password. Each refusal carries the HTTP status an
API answers with and a message that names the reason. `safe_name` turns a delivered file name
into a label that can never act as a path.
"""

from __future__ import annotations

import io
import re
import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from corpus_pipeline.common.errors import (
    CorpusError,
    CorruptDocumentError,
    PasswordRequiredError,
    UnsupportedFormatError,
)
from corpus_pipeline.contracts import FileFormat
from corpus_pipeline.intake.archives import archive_kind, read_archive
from corpus_pipeline.profiling.sniff import sniff_format

# Extension → the formats its bytes may be (text formats overlap: a .md without headings
# sniffs as text, a .txt with headings as Markdown, a .json of segments is its own format).
FAMILIES: dict[str, frozenset[FileFormat]] = {
    "pdf": frozenset({FileFormat.PDF}),
    "docx": frozenset({FileFormat.DOCX}),
    "pptx": frozenset({FileFormat.PPTX}),
    "xlsx": frozenset({FileFormat.XLSX}),
    "xls": frozenset({FileFormat.XLS}),
    "ods": frozenset({FileFormat.ODS}),
    "html": frozenset({FileFormat.HTML}),
    "htm": frozenset({FileFormat.HTML}),
    **dict.fromkeys(
        ("md", "markdown", "txt", "text"), frozenset({FileFormat.MARKDOWN, FileFormat.TEXT})
    ),
    "json": frozenset({FileFormat.SEGMENTS_JSON, FileFormat.TEXT}),
    **dict.fromkeys(
        ("png", "jpg", "jpeg", "gif", "webp", "tif", "tiff", "bmp"), frozenset({FileFormat.IMAGE})
    ),
}
_OFFICE = {FileFormat.DOCX, FileFormat.PPTX, FileFormat.XLSX, FileFormat.ODS}


class Refused(CorpusError):
    """A file refused at the door; `status` is the HTTP answer (400, 413, 415)."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True)
class Admitted:
    format: FileFormat
    evidence: str


def admit(name: str, data: bytes, *, max_bytes: int, has_password: bool = False) -> Admitted:
    """The file's sniffed format when it may be stored, else `Refused` naming why."""
    label = safe_name(name)
    if not data:
        raise Refused(400, f"'{label}' is empty")
    if len(data) > max_bytes:
        raise Refused(413, f"'{label}' is {len(data):,} bytes, above the limit of {max_bytes:,}")
    extension = PurePosixPath(label).suffix.lower().lstrip(".")
    sniffed = sniff_format(data, extension)
    if sniffed.format is FileFormat.UNKNOWN:
        raise Refused(415, str(UnsupportedFormatError("unknown", sniffed.evidence)))
    family = FAMILIES.get(extension)
    if family is not None and sniffed.format not in family:
        raise Refused(
            415,
            f"'{label}' is {sniffed.format.value} by its bytes ({sniffed.evidence}), "
            f"not .{extension}",
        )
    _opens(sniffed.format, data, has_password)
    return Admitted(sniffed.format, sniffed.evidence)


def _opens(fmt: FileFormat, data: bytes, has_password: bool) -> None:
    """The container opens: a PDF's objects, an Office file's ZIP directory."""
    if fmt in _OFFICE:
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                archive.infolist()
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            detail = f"truncated or damaged ({type(exc).__name__})"
            raise Refused(400, str(CorruptDocumentError(fmt.value, detail))) from None
    elif fmt is FileFormat.PDF:
        import pymupdf

        mu: Any = pymupdf  # untyped library: one typed boundary
        try:
            with mu.open(stream=data, filetype="pdf") as doc:
                encrypted = bool(doc.needs_pass)
                pages = doc.page_count
        except (RuntimeError, ValueError) as exc:
            detail = f"cannot be opened ({type(exc).__name__})"
            raise Refused(400, str(CorruptDocumentError("pdf", detail))) from None
        if encrypted and not has_password:
            raise Refused(400, str(PasswordRequiredError("pdf")))
        if not encrypted and pages == 0:
            raise Refused(400, str(CorruptDocumentError("pdf", "no pages (truncated?)")))


@dataclass(frozen=True)
class Delivery:
    """One document a delivered file carries: its label and bytes, or why the door refused it."""

    label: str
    data: bytes
    refused: Refused | None = None


def deliveries(
    name: str, data: bytes, *, max_bytes: int, has_password: bool = False
) -> list[Delivery]:
    """The documents in one delivered file: the file itself, or each member of an archive
    (labelled `<archive>/<member path>`), each admitted at the door. A refused single file, or
    an archive refused whole (`archives.read_archive`), raises; a refused member is returned
    with its refusal, so the caller decides between skipping it and refusing the delivery."""
    if not archive_kind(name):
        admit(name, data, max_bytes=max_bytes, has_password=has_password)
        return [Delivery(name, data)]
    out = []
    for member in read_archive(name, data):
        label = f"{name}/{member.path}"
        try:
            admit(label, member.data, max_bytes=max_bytes, has_password=has_password)
        except Refused as exc:
            out.append(Delivery(label, member.data, exc))
        else:
            out.append(Delivery(label, member.data))
    return out


_UNSAFE = re.compile(r"[^\w.\- ()+,&@'=]+")


def safe_name(name: str) -> str:
    """A file name as a label: folders, `..` and drive letters dropped into the name, control
    and path characters replaced ("../../etc/passwd" → "etc_passwd"), at most 200 characters,
    never empty."""
    text = unicodedata.normalize("NFC", name)
    text = "".join(c if c.isprintable() else "_" for c in text)
    parts = [p for p in re.split(r"[\\/]+", text) if p.strip() not in ("", ".", "..")]
    parts = [re.sub(r"^[A-Za-z]:$", "", p) for p in parts]
    label = "_".join(p for p in parts if p)
    label = _UNSAFE.sub("_", label).strip(" ._") or "file"
    return label[-200:]
