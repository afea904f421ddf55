"""The upload API's request body, read as a stream with its limits enforced while reading.

A multipart body is parsed as it arrives (python-multipart's push parser): each file goes
straight to its own file in the request's scratch folder, the bytes of the request are counted
per chunk whether it came with a Content-Length or chunked, and a file or the request that
passes its limit is refused (413) at that chunk, not after the body was read. Nothing here is
stored: the caller admits the files at the door, stores them, and removes the scratch folder
whatever happens. Form fields are small (`FIELD_BYTES`) and counted (`MAX_FIELDS`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from python_multipart.multipart import MultipartParser, parse_options_header

from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.intake.door import Refused, deliveries, safe_name

MIB = 1024 * 1024
FIELD_BYTES = 64 * 1024
MAX_FIELDS = 32
MAX_FILES = 1000
# File bytes gathered before they are written in one hop to a thread (one hop per network
# chunk of ~64 KiB cost the loop more than the writes).
WRITE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class UploadLimits:
    file_bytes: int
    request_bytes: int
    max_files: int = MAX_FILES


@dataclass
class ReceivedFile:
    """One file part: its name as sent, where its bytes are, and how many."""

    sent: str
    path: Path
    size: int = 0


@dataclass
class ReceivedForm:
    files: list[ReceivedFile] = field(default_factory=list)
    fields: dict[str, str] = field(default_factory=dict)


def _limit(size: int) -> str:
    return f"{size // MIB} MiB" if size >= MIB else f"{size:,} bytes"


class _Reader:
    """Callbacks of the push parser: headers per part, a field's bytes in memory (capped), a
    file's bytes queued for writing to its own file (written off the event loop)."""

    def __init__(self, limits: UploadLimits, directory: Path) -> None:
        self.limits = limits
        self.directory = directory
        self.form = ReceivedForm()
        self.pending: list[tuple[BinaryIO, bytes]] = []
        self._header_name = b""
        self._header_value = b""
        self._disposition = b""
        self._field: bytearray | None = None
        self._field_name = ""
        self._file: ReceivedFile | None = None
        self._handle: BinaryIO | None = None
        self.handles: list[BinaryIO] = []

    def on_part_begin(self) -> None:
        self._disposition = b""
        self._field = None
        self._file = None
        self._handle = None

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def on_header_end(self) -> None:
        if self._header_name.lower() == b"content-disposition":
            self._disposition = self._header_value
        self._header_name = self._header_value = b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        if b"name" not in options:
            raise Refused(400, "a form part without a name (Content-Disposition)")
        name = options[b"name"].decode("utf-8", "replace")
        if b"filename" in options:
            if len(self.form.files) >= self.limits.max_files:
                raise Refused(413, f"more than {self.limits.max_files} files in one request")
            sent = options[b"filename"].decode("utf-8", "replace") or "file"
            path = self.directory / f"{len(self.form.files):05d}"
            self._file = ReceivedFile(sent, path)
            self._handle = path.open("wb")  # a new, empty file: no read of the disk
            self.handles.append(self._handle)
            self.form.files.append(self._file)
        else:
            if len(self.form.fields) >= MAX_FIELDS:
                raise Refused(413, f"more than {MAX_FIELDS} form fields")
            self._field_name = name
            self._field = bytearray()

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self._file is not None and self._handle is not None:
            self._file.size += len(chunk)
            if self._file.size > self.limits.file_bytes:
                label = safe_name(self._file.sent)
                raise Refused(
                    413, f"'{label}' is above the limit of {_limit(self.limits.file_bytes)}"
                )
            self.pending.append((self._handle, chunk))
        elif self._field is not None:
            if len(self._field) + len(chunk) > FIELD_BYTES:
                raise Refused(
                    413, f"form field '{self._field_name}' is above {FIELD_BYTES:,} bytes"
                )
            self._field.extend(chunk)

    def on_part_end(self) -> None:
        if self._field is not None:
            self.form.fields[self._field_name] = self._field.decode("utf-8", "replace")
        self._field = None

    def pending_bytes(self) -> int:
        return sum(len(chunk) for _, chunk in self.pending)

    def write_pending(self) -> None:
        """Runs in a worker thread: the file bytes received since the last write, to their
        files (the parser adds no more meanwhile: the loop awaits this)."""
        pending, self.pending = self.pending, []
        for handle, chunk in pending:
            handle.write(chunk)

    def close(self) -> None:
        for handle in self.handles:
            handle.close()


# The longest multipart boundary read (RFC 2046 asks for at most 70; the parser fails past 256).
MAX_BOUNDARY = 256


async def receive_form(
    content_type: str | None,
    stream: AsyncIterator[bytes],
    limits: UploadLimits,
    directory: Path,
) -> ReceivedForm:
    """The form of a multipart body, its files written under `directory` (which the caller
    removes). Refused (400/413) as soon as the body is not multipart or passes a limit."""
    kind, options = parse_options_header(content_type)
    if kind != b"multipart/form-data" or b"boundary" not in options:
        raise Refused(400, "the body must be multipart/form-data with one or more 'files'")
    boundary = options[b"boundary"]
    if not 1 <= len(boundary) <= MAX_BOUNDARY:
        raise Refused(400, f"the multipart boundary must be 1 to {MAX_BOUNDARY} characters long")
    reader = _Reader(limits, directory)
    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": reader.on_part_begin,
            "on_part_data": reader.on_part_data,
            "on_part_end": reader.on_part_end,
            "on_header_field": reader.on_header_field,
            "on_header_value": reader.on_header_value,
            "on_header_end": reader.on_header_end,
            "on_headers_finished": reader.on_headers_finished,
        },
    )
    received = 0
    try:
        async for chunk in stream:
            received += len(chunk)
            if received > limits.request_bytes:
                raise Refused(
                    413, f"the request is above the limit of {_limit(limits.request_bytes)}"
                )
            parser.write(chunk)
            if reader.pending_bytes() >= WRITE_BYTES:
                await asyncio.to_thread(reader.write_pending)
        parser.finalize()
        if reader.pending:
            await asyncio.to_thread(reader.write_pending)
    except Refused:
        raise
    except Exception as exc:  # python-multipart's parse errors: the body is not a valid form
        raise Refused(400, f"the multipart body cannot be read ({type(exc).__name__})") from None
    finally:
        reader.close()
    return reader.form


@dataclass(frozen=True)
class Checked:
    """One document a delivered file holds, as the door found it: admitted (its bytes at
    `path`) or refused (`status`, `message`); `member` when it came out of an archive (or an
    e-mail), `parent` the label of the e-mail it is attached to."""

    label: str
    path: str | None = None
    status: int | None = None
    message: str | None = None
    member: bool = False
    parent: str | None = None


def check_file(
    path: str,
    sent: str,
    scratch: str,
    number: int,
    max_bytes: int,
    has_password: bool,
    libreoffice: bool | None = None,
) -> list[Checked]:
    """The door's verdict on one received file, run in a door process: parsers of untrusted
    bytes (PDF, Office, archives) hold the interpreter and may crash, so neither may stall or
    take down the server. An archive's admitted members are written to `scratch` here, so only
    paths travel back."""
    name = safe_name(sent)
    try:
        found = deliveries(
            name,
            Path(path).read_bytes(),
            max_bytes=max_bytes,
            has_password=has_password,
            libreoffice=libreoffice,
        )
    except Refused as exc:
        return [Checked(name, status=exc.status, message=str(exc))]
    except CorpusError as exc:  # an archive refused whole
        return [Checked(name, status=400, message=f"'{name}': {exc}")]
    out: list[Checked] = []
    for member, item in enumerate(found):
        inside = item.label != name
        if item.refused is not None:
            refusal = (item.refused.status, str(item.refused))
            out.append(Checked(item.label, None, *refusal, inside, item.parent))
        elif not inside:
            out.append(Checked(name, path))  # the file itself: on disk already
        else:
            target = Path(scratch) / f"{number:05d}-{member:05d}"
            target.write_bytes(item.data)
            out.append(Checked(item.label, str(target), member=True, parent=item.parent))
    return out
