"""E-mail files built for the tests: RFC 5322 messages with the standard library, an mbox, a
small PDF to attach, and Outlook `.msg` files written as OLE2 compound files with
extract-msg's own `OleWriter` (MS-OXMSG streams: the MAPI property stream, string and binary
property streams, recipient and attachment storages, attached messages, a compressed RTF
body). extract-msg is a test-only dependency: the product reads `.msg` files with
`parsing.email.oxmsg`."""

from __future__ import annotations

import datetime as dt
import io
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

import compressed_rtf  # type: ignore[import-untyped]
from extract_msg.ole_writer import OleWriter

SENT = "Tue, 05 Mar 2024 09:30:00 +0100"


def message(
    subject: str = "Quarterly budget review",
    plain: str | None = "Hi Bob,\n\nThe figures are below.\n",
    html: str | None = None,
    attachments: Sequence[tuple[str, str, bytes]] = (),
    cc: str | None = "Carol Diaz <carol@example.com>",
    message_id: str = "<budget-42@example.com>",
) -> bytes:
    """A message from Alice to Bob (and Carol), with the given bodies and (name, media type,
    bytes) attachments."""
    msg = EmailMessage()
    msg["From"] = "Alice Martin <alice@example.com>"
    msg["To"] = "Bob Stone <bob@example.com>"
    if cc:
        msg["Cc"] = cc
    msg["Subject"] = subject
    msg["Date"] = SENT
    msg["Message-ID"] = message_id
    if plain is not None:
        msg.set_content(plain)
    if html is not None:
        if plain is None:
            msg.set_content(html, subtype="html")
        else:
            msg.add_alternative(html, subtype="html")
    for name, media_type, data in attachments:
        maintype, _, subtype = media_type.partition("/")
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return bytes(msg)


def mbox(*messages: bytes) -> bytes:
    """An mbox of the messages (mboxrd: body lines starting "From " escaped)."""
    out = []
    for number, data in enumerate(messages, start=1):
        escaped = b"\n".join(
            b">" + line if line.lstrip(b">").startswith(b"From ") else line
            for line in data.replace(b"\r\n", b"\n").split(b"\n")
        )
        out.append(b"From sender%d@example.com Tue Mar  5 09:30:00 2024\n" % number)
        out.append(escaped.rstrip(b"\n") + b"\n\n")
    return b"".join(out)


def pdf(text: str) -> bytes:
    """A one-page PDF with a text layer."""
    import pymupdf

    mu: Any = pymupdf  # untyped library: one typed boundary
    doc = mu.open()
    page = doc.new_page()
    page.insert_text((72, 72), text, fontsize=12)
    data: bytes = doc.tobytes()
    doc.close()
    return data


def png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (48, 32), "navy").save(buffer, "PNG")
    return buffer.getvalue()


# -- Outlook .msg ---------------------------------------------------------------------------------


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-le")


def _property(tag: int, value: bytes) -> bytes:
    """One 16-byte entry of a property stream: tag (id << 16 | type), flags, 8-byte value."""
    return struct.pack("<II", tag, 6) + value.ljust(8, b"\0")


def _filetime(when: dt.datetime) -> bytes:
    epoch = dt.datetime(1601, 1, 1, tzinfo=dt.UTC)
    return struct.pack("<Q", int((when - epoch).total_seconds() * 10_000_000))


@dataclass(frozen=True)
class Outlook:
    """What an Outlook message holds, for `outlook_msg`: `rtf` is an RTF body stored
    compressed; `codepage` writes 8-bit strings (type 001E) in it instead of UTF-16; `inline`
    are (content id, media type, bytes) images the HTML shows; `embedded` attached messages;
    `transport` the header block a received message keeps."""

    subject: str
    body: str | None
    sent: dt.datetime | None
    html: str | None = None
    attachments: Sequence[tuple[str, str, bytes]] = ()
    rtf: str | None = None
    codepage: int | None = None
    inline: Sequence[tuple[str, str, bytes]] = ()
    embedded: Sequence[Outlook] = ()
    transport: str | None = None


def outlook_msg(
    subject: str,
    body: str | None,
    sent: dt.datetime | None,
    html: str | None = None,
    attachments: Sequence[tuple[str, str, bytes]] = (),
    **more: Any,
) -> bytes:
    """A sent Outlook message from Alice to Bob, Cc Carol, with a plain (and an HTML) body and
    attachments by value; `more` are the other fields of `Outlook`."""
    writer = OleWriter()
    _write_message(writer, "", Outlook(subject, body, sent, html, attachments, **more))
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _write_message(writer: OleWriter, prefix: str, msg: Outlook) -> None:
    """The streams of one message below `prefix` (the root, or an attachment's
    `__substg1.0_3701000D` storage, whose property stream header is 8 bytes shorter)."""
    recipients = [("Bob Stone", "bob@example.com", 1), ("Carol Diaz", "carol@example.com", 2)]
    files: list[tuple[str, str, bytes, str | None]] = [
        (n, t, d, None) for n, t, d in msg.attachments
    ]
    files += [(f"image{i}.png", t, d, cid) for i, (cid, t, d) in enumerate(msg.inline)]
    count = len(files) + len(msg.embedded)
    header = struct.pack("<8sIIII", b"", len(recipients), count, len(recipients), count)
    header += b"" if prefix else b"\0" * 8
    properties = b""
    if msg.sent is not None:
        properties += _property(0x00390040, _filetime(msg.sent))  # PR_CLIENT_SUBMIT_TIME
    properties += _property(0x0E070003, struct.pack("<I", 1))  # PR_MESSAGE_FLAGS: read, sent
    if msg.codepage is not None:
        properties += _property(0x3FFD0003, struct.pack("<I", msg.codepage))  # code page
        properties += _property(0x340D0003, struct.pack("<I", 0))  # store: no Unicode
    writer.addEntry(f"{prefix}__properties_version1.0", header + properties)
    strings = {
        "001A": "IPM.Note",  # message class
        "0037": msg.subject,
        "0C1A": "Alice Martin",  # sender name
        "5D01": "alice@example.com",  # sender SMTP address
        "0E04": "Bob Stone",  # display To
        "0E03": "Carol Diaz",  # display Cc
        "1035": "<budget-7@example.com>",  # internet message id
    }
    if msg.body is not None:
        strings["1000"] = msg.body
    if msg.transport is not None:
        strings["007D"] = msg.transport
    for prop, text in strings.items():
        _string(writer, f"{prefix}__substg1.0_{prop}", text, msg.codepage)
    if msg.html is not None:
        writer.addEntry(f"{prefix}__substg1.0_10130102", msg.html.encode("utf-8"))
    if msg.rtf is not None:
        packed = compressed_rtf.compress(msg.rtf.encode("latin-1"))
        writer.addEntry(f"{prefix}__substg1.0_10090102", packed)
    if not prefix:
        writer.addEntry("__nameid_version1.0", storage=True)
        for stream in ("00020102", "00030102", "00040102"):
            writer.addEntry(f"__nameid_version1.0/__substg1.0_{stream}", b"")
    for number, (name, address, kind) in enumerate(recipients):
        storage = f"{prefix}__recip_version1.0_#{number:08X}"
        writer.addEntry(storage, storage=True)
        type_property = _property(0x0C150003, struct.pack("<I", kind))  # PR_RECIPIENT_TYPE
        writer.addEntry(f"{storage}/__properties_version1.0", b"\0" * 8 + type_property)
        for prop, text in {"3001": name, "39FE": address, "3003": address, "3002": "SMTP"}.items():
            _string(writer, f"{storage}/__substg1.0_{prop}", text, msg.codepage)
    for number, (name, media_type, data, cid) in enumerate(files):
        storage = _attachment_storage(writer, prefix, number, 1)  # by value
        writer.addEntry(f"{storage}/__substg1.0_37010102", data)
        _string(writer, f"{storage}/__substg1.0_3707", name, msg.codepage)
        _string(writer, f"{storage}/__substg1.0_370E", media_type, msg.codepage)
        if cid is not None:
            _string(writer, f"{storage}/__substg1.0_3712", cid, msg.codepage)
    for number, inner in enumerate(msg.embedded, start=len(files)):
        storage = _attachment_storage(writer, prefix, number, 5)  # an embedded message
        _string(writer, f"{storage}/__substg1.0_3001", inner.subject, msg.codepage)
        writer.addEntry(f"{storage}/__substg1.0_3701000D", storage=True)
        _write_message(writer, f"{storage}/__substg1.0_3701000D/", inner)


def _attachment_storage(writer: OleWriter, prefix: str, number: int, method: int) -> str:
    storage = f"{prefix}__attach_version1.0_#{number:08X}"
    writer.addEntry(storage, storage=True)
    method_property = _property(0x37050003, struct.pack("<I", method))  # PR_ATTACH_METHOD
    writer.addEntry(f"{storage}/__properties_version1.0", b"\0" * 8 + method_property)
    return storage


def _string(writer: OleWriter, stream: str, text: str, codepage: int | None) -> None:
    """A string property: UTF-16 (001F), or 8-bit (001E) in `codepage`."""
    if codepage is None:
        writer.addEntry(f"{stream}001F", _utf16(text))
    else:
        writer.addEntry(f"{stream}001E", text.encode(f"cp{codepage}"))


def ole_without_message() -> bytes:
    """An OLE2 compound file that holds no Outlook message (one unrelated stream)."""
    writer = OleWriter()
    writer.addEntry("Contents", b"not a message" * 10)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
