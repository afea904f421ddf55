"""Validation at the door: what a delivered file must be before anything of it is stored.

One rule set for every way in (`corpus ingest` today, the upload API): the file is not empty,
its type sniffed from the bytes is a document format and agrees with its extension's family (a
`.pdf` that is a ZIP is refused), its container opens (a truncated PDF or Office file is
refused), and an encrypted PDF comes with a password. Each refusal carries the HTTP status an
API answers with and a message that names the reason. `safe_name` turns a delivered file name
into a label that can never act as a path. `deliveries` lists the documents a file delivers:
itself, an archive's members, and what an e-mail carries (`intake.mail`), each admitted here.
"""

from __future__ import annotations

import io
import re
import unicodedata
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from corpus_pipeline.common.errors import (
    ZIP_DAMAGE,
    CorpusError,
    CorruptDocumentError,
    PasswordRequiredError,
    UnsupportedFormatError,
)
from corpus_pipeline.contracts import FileFormat
from corpus_pipeline.intake.archives import ArchiveLimits, archive_kind, read_archive
from corpus_pipeline.intake.mail import MAX_DEPTH, carried, msg_refusal
from corpus_pipeline.parsing.email.message import MessageTooDeep
from corpus_pipeline.parsing.formats import EXTENSIONS
from corpus_pipeline.parsing.legacy import (
    INSTALL_HINT,
    KINDS,
    libreoffice_available,
    xlrd_refusal,
)
from corpus_pipeline.profiling.sniff import sniff_format

# Beyond its own format, what the bytes of a file named as a parsed format may be.
_ALSO: dict[FileFormat, frozenset[FileFormat]] = {
    # What Word, PowerPoint and Excel open under a legacy name: the binary format, its modern
    # successor and (Word, Excel) HTML, e.g. a report system's export saved as .xls.
    FileFormat.DOC: frozenset({FileFormat.DOCX, FileFormat.RTF, FileFormat.HTML}),
    FileFormat.PPT: frozenset({FileFormat.PPTX}),
    FileFormat.XLS: frozenset({FileFormat.XLSX, FileFormat.HTML}),
    # Text formats overlap: a .md without headings sniffs as text, a .txt with headings as
    # Markdown, and either may hold a delimited table or an e-mail.
    **dict.fromkeys(
        (FileFormat.MARKDOWN, FileFormat.TEXT),
        frozenset({FileFormat.MARKDOWN, FileFormat.TEXT, FileFormat.CSV, FileFormat.EML}),
    ),
    # A .csv whose rows do not split consistently is read as text, as is a .json that is no
    # list of segments.
    FileFormat.CSV: frozenset({FileFormat.TEXT}),
    FileFormat.SEGMENTS_JSON: frozenset({FileFormat.TEXT}),
}
# Extension → the formats its bytes may be: the format the registry lists it for
# (`parsing.formats`) and what else `_ALSO` admits under that name; an mbox is split into its
# messages (`deliveries`).
FAMILIES: dict[str, frozenset[FileFormat]] = {
    **{
        ext: frozenset({fmt, *_ALSO.get(fmt, ())})
        for fmt, extensions in EXTENSIONS.items()
        for ext in extensions
    },
    "mbox": frozenset({FileFormat.MBOX}),
}
_OFFICE = {
    FileFormat.DOCX,
    FileFormat.PPTX,
    FileFormat.XLSX,
    FileFormat.ODS,
    FileFormat.ODT,
    FileFormat.ODP,
    FileFormat.EPUB,
}
# The part a package cannot be read without: refused at the door when it is missing.
_MAIN_PART = {
    FileFormat.ODS: "content.xml",
    FileFormat.ODT: "content.xml",
    FileFormat.ODP: "content.xml",
    FileFormat.EPUB: "META-INF/container.xml",
}


class Refused(CorpusError):
    """A file refused at the door; `status` is the HTTP answer (400, 413, 415)."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True)
class Admitted:
    format: FileFormat
    evidence: str


def admit(
    name: str,
    data: bytes,
    *,
    max_bytes: int,
    has_password: bool = False,
    libreoffice: bool | None = None,
    mailbox: bool = False,
) -> Admitted:
    """The file's sniffed format when it may be stored, else `Refused` naming why.
    `libreoffice`: whether this deployment has LibreOffice (`parsing.legacy`; None: looked up
    with the settings of the environment). `mailbox`: an mbox is admitted, for `deliveries`
    to split into its messages; alone it is refused, as no document."""
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
    if sniffed.format is FileFormat.MBOX and not mailbox:
        raise Refused(415, f"'{label}' is an mbox of many messages: {_MBOX_HINT}")
    _opens(sniffed.format, data, has_password)
    _convertible(label, sniffed.format, data, libreoffice)
    return Admitted(sniffed.format, sniffed.evidence)


def _convertible(label: str, fmt: FileFormat, data: bytes, libreoffice: bool | None) -> None:
    """A file only LibreOffice reads (legacy Word or PowerPoint, an .xls xlrd cannot open) is
    refused on a deployment without it: accepted, it could only fail later."""
    if fmt not in KINDS or (libreoffice_available() if libreoffice is None else libreoffice):
        return
    what = f"a {KINDS[fmt]}"
    if fmt is FileFormat.XLS:
        refusal = xlrd_refusal(data)
        if refusal is None:
            return  # read by xlrd
        what = f"{what} that xlrd cannot read ({refusal})"
    raise Refused(
        415,
        f"'{label}' is {what}: it needs LibreOffice, which is not installed on this deployment "
        f"({INSTALL_HINT})",
    )


def _opens(fmt: FileFormat, data: bytes, has_password: bool) -> None:
    """The container opens: a PDF's objects, an Office file's ZIP (or OLE2) directory."""
    if fmt in KINDS and not _ole_opens(data):
        detail = "truncated or damaged (OLE2 container)"
        raise Refused(400, str(CorruptDocumentError(fmt.value, detail)))
    if fmt in _OFFICE:
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = set(archive.namelist())
        except ZIP_DAMAGE as exc:
            detail = f"truncated or damaged ({type(exc).__name__})"
            raise Refused(400, str(CorruptDocumentError(fmt.value, detail))) from None
        main = _MAIN_PART.get(fmt)
        if main is not None and main not in names:
            detail = f"the package has no {main}"
            raise Refused(400, str(CorruptDocumentError(fmt.value, detail)))
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
    elif fmt is FileFormat.MSG:
        failure = msg_refusal(data)
        if failure is not None:
            detail = f"not a readable Outlook message ({failure})"
            raise Refused(400, str(CorruptDocumentError("msg", detail)))


def _ole_opens(data: bytes) -> bool:
    """Whether a legacy Office file's OLE2 directory reads."""
    import olefile  # type: ignore[import-untyped]

    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            ole.listdir()
    except Exception:  # olefile reports damage as several exception classes
        return False
    return True


@dataclass(frozen=True)
class Delivery:
    """One document a delivered file carries: its label and bytes, or why the door refused it."""

    label: str
    data: bytes
    refused: Refused | None = None
    # The label of the e-mail this file is attached to (`intake.mail`), which its record
    # names (`SourceRecord.attached_to`); None for any other document.
    parent: str | None = None


def deliveries(
    name: str,
    data: bytes,
    *,
    max_bytes: int,
    has_password: bool = False,
    libreoffice: bool | None = None,
) -> list[Delivery]:
    """The documents in one delivered file: the file itself, or each member of an archive
    (labelled `<archive>/<member path>`), each admitted at the door, followed by what an e-mail
    carries (`intake.mail`: an mbox is only its messages, a message is followed by its
    attachments). A refused single file, or an archive refused whole
    (`archives.read_archive`), raises; a refused member or attachment is returned with its
    refusal, so the caller decides between skipping it and refusing the delivery."""

    def check(label: str, content: bytes) -> FileFormat:
        found = admit(
            label,
            content,
            max_bytes=max_bytes,
            has_password=has_password,
            libreoffice=libreoffice,
            mailbox=True,
        )
        return found.format

    if not archive_kind(name):
        out = _with_carried(Delivery(name, data), check(name, data), check, 0)
    else:
        out = []
        for member in read_archive(name, data):
            label = f"{name}/{member.path}"
            try:
                found = check(label, member.data)
                out.extend(_with_carried(Delivery(label, member.data), found, check, 0))
            except Refused as exc:
                out.append(Delivery(label, member.data, exc))
    limit = ArchiveLimits.max_entries
    if len(out) > limit:
        raise Refused(400, f"'{name}' holds more than {limit} documents; nothing was stored")
    return out


_MBOX_HINT = "deliver it with `corpus ingest` or the upload API, which store each as a document"


def _with_carried(
    delivery: Delivery, fmt: FileFormat, check: Callable[[str, bytes], FileFormat], depth: int
) -> list[Delivery]:
    """An admitted delivery (not an mbox: it is only its messages) and, recursively, the files
    it carries, each admitted by `check`; one refused is listed with its refusal."""
    out = [] if fmt is FileFormat.MBOX else [delivery]
    try:
        items = carried(delivery.label, delivery.data, fmt) if depth < MAX_DEPTH else []
    except MessageTooDeep as exc:
        raise Refused(400, f"'{safe_name(delivery.label)}' is refused: {exc}") from None
    if fmt is FileFormat.MBOX and not items:
        raise Refused(400, f"'{safe_name(delivery.label)}' holds no e-mail message")
    for item in items:
        inner = Delivery(item.label, item.data, parent=item.parent)
        try:
            found = check(item.label, item.data)
            out.extend(_with_carried(inner, found, check, depth + 1))
        except Refused as exc:
            out.append(Delivery(item.label, item.data, exc, item.parent))
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
