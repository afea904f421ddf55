"""The MAPI properties of an Outlook `.msg` file (MS-OXMSG), read with `olefile` (BSD).

A `.msg` is an OLE2 compound file. Each object (the message, each recipient, each attachment,
an attached message) is a storage holding `__properties_version1.0`, whose 16-byte entries
carry the fixed-size values, and one `__substg1.0_<id><type>` stream per variable-size value:
strings in UTF-16-LE (type 001F) or in the message's code page (001E), binaries (0102). An
attached message is a storage of its own (`__substg1.0_3701000D`). The compressed RTF body
(MS-OXRTFCP) is inflated with `compressed_rtf` (MIT); the HTML or plain body Outlook
encapsulated in it (MS-OXRTFEX) is taken back out by `deencapsulate`.

The fields mean what extract-msg (GPL-3.0, which this module replaced) made of them, so
messages read as before: the sender is PR_SENDER_NAME with the SMTP address, the recipients
come from their storages, and the date is the submit time of a sent message (here in UTC).
The transport headers a received message kept (`transport`) take precedence for From, To, Cc
and Message-ID (`outlook`).
"""

from __future__ import annotations

import email.header
import io
import re
import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import Message
from email.parser import HeaderParser
from email.policy import compat32
from typing import Any

from striprtf.striprtf import specialchars  # type: ignore[import-untyped]

from corpus_pipeline.parsing.rtf_reader import RtfReader

# What reading a damaged or foreign file raises, and all it raises (fuzzed): olefile reports a
# broken container as OSError (its OleFileError), an impossible sector size or index as
# ValueError, IndexError, KeyError, EOFError, OverflowError or struct.error; MsgFormatError
# (a ValueError) is this module's own. Every caller catches exactly these.
MSG_DAMAGE = (OSError, ValueError, IndexError, KeyError, EOFError, OverflowError, struct.error)

_PROPERTIES = "__properties_version1.0"
# Bytes before a property stream's first entry: the message's header counts its recipients
# and attachments; an attached message's is shorter; a recipient's or attachment's is reserved.
_HEADER = {"message": 32, "embedded": 24, "child": 8}
_STORAGE, _STREAM = 1, 2  # olefile's STGTY_STORAGE, STGTY_STREAM
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)
_NULL_TIME = 915_000_000_000_000_000  # the year 4500 and later: MAPI's "no date"
_MSGFLAG_UNSENT = 0x8
_EMBEDDED_MESSAGE = 5  # PR_ATTACH_METHOD afEmbeddedMessage (6 is an OLE object)
_MAX_NESTING = 8  # attached messages inside attached messages are read this deep
# Windows code pages that Python names otherwise than cpNNNN (the rest are tried as cpNNNN).
_CODE_PAGES = {
    65001: "utf-8", 1200: "utf-16-le", 20127: "ascii", 20866: "koi8_r", 21866: "koi8_u",
    936: "gbk", 54936: "gb18030", 50220: "iso2022_jp", 50221: "iso2022_jp",
    50222: "iso2022_jp", 51932: "euc_jp", 51949: "euc_kr", 10000: "mac_roman",
    **{28590 + n: f"iso-8859-{n}" for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 15)},
}  # fmt: skip
_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


class MsgFormatError(ValueError):
    """The compound file opens but holds no Outlook message, or a damaged body."""


@dataclass(frozen=True)
class Recipient:
    name: str | None
    address: str | None
    kind: int  # PR_RECIPIENT_TYPE: 1 To, 2 Cc, 3 Bcc


@dataclass
class MsgAttachment:
    """An attachment by value (`data`) or an attached message (`message`)."""

    long_name: str | None
    short_name: str | None
    display_name: str | None
    media_type: str | None
    content_id: str | None
    data: bytes | None = None
    message: OutlookMessage | None = None


@dataclass
class OutlookMessage:
    subject: str | None
    sender_name: str | None
    sender_address: str | None
    message_id: str | None
    sent: datetime | None
    plain: str | None
    html: str | None
    # PR_TRANSPORT_MESSAGE_HEADERS as written, when a received message kept them.
    transport: Message | None = None
    recipients: list[Recipient] = field(default_factory=list)
    attachments: list[MsgAttachment] = field(default_factory=list)


def read_message(data: bytes) -> OutlookMessage:
    """The message of an Outlook `.msg`; one of MSG_DAMAGE for any other bytes."""
    import olefile  # type: ignore[import-untyped]

    # A container with incorrect (not only fatal) defects is refused, as Outlook would.
    with olefile.OleFileIO(io.BytesIO(data), raise_defects=olefile.DEFECT_INCORRECT) as ole:
        tree: dict[tuple[str, ...], list[str]] = {}
        for path in ole.listdir(streams=True, storages=True):
            tree.setdefault(_key(path[:-1]), []).append(path[-1])
        root = _Storage(ole, tree, (), "message", None)
        if root.props is None:
            raise MsgFormatError("no MAPI property stream at the root")
        return _message(root, 0)


def _key(path: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return tuple(part.lower() for part in path)


class _Storage:
    """One MAPI object: its fixed-size properties and its value streams."""

    def __init__(
        self,
        ole: Any,  # olefile is untyped
        tree: dict[tuple[str, ...], list[str]],
        path: tuple[str, ...],
        kind: str,
        parent: _Storage | None,
    ) -> None:
        self.ole, self.tree, self.path = ole, tree, path
        self.entries = {name.lower(): name for name in tree.get(_key(path), [])}
        raw = self.stream(_PROPERTIES)
        self.props = None if raw is None else _properties(raw, _HEADER[kind])
        self.codec: str = self._codec() or (parent.codec if parent else "cp1252")

    def child(self, name: str, kind: str) -> _Storage:
        return _Storage(self.ole, self.tree, (*self.path, name), kind, self)

    def storages(self, prefix: str) -> list[str]:
        """The storages below this one named `prefix…`, in directory order."""
        return [
            name
            for name in self.entries.values()
            if name.lower().startswith(prefix) and self._type(name) == _STORAGE
        ]

    def storage(self, name: str) -> str | None:
        actual = self.entries.get(name.lower())
        return actual if actual is not None and self._type(actual) == _STORAGE else None

    def stream(self, name: str) -> bytes | None:
        actual = self.entries.get(name.lower())
        if actual is None or self._type(actual) != _STREAM:
            return None
        with self.ole.openstream("/".join((*self.path, actual))) as stream:
            data: bytes = stream.read()
        return data

    def _type(self, name: str) -> int:
        return int(self.ole.get_type("/".join((*self.path, name))) or 0)

    def string(self, prop: int) -> str | None:
        """A string property: its UTF-16 stream, else its 8-bit one in the code page."""
        wide = self.stream(f"__substg1.0_{prop:04X}001F")
        if wide is not None:
            return wide.decode("utf-16-le", errors="replace")
        narrow = self.stream(f"__substg1.0_{prop:04X}001E")
        return None if narrow is None else _decoded(narrow, self.codec)

    def integer(self, prop: int) -> int | None:
        value = (self.props or {}).get(prop << 16 | 0x0003)
        return None if value is None else int.from_bytes(value[:4], "little")

    def time(self, prop: int) -> datetime | None:
        value = (self.props or {}).get(prop << 16 | 0x0040)
        stamp = 0 if value is None else int.from_bytes(value, "little")
        if not stamp or stamp >= _NULL_TIME:
            return None
        return _FILETIME_EPOCH + timedelta(microseconds=stamp // 10)

    def _codec(self) -> str | None:
        """The code page of 8-bit strings: PR_MESSAGE_CODEPAGE, else PR_INTERNET_CPID."""
        page = self.integer(0x3FFD) or self.integer(0x3FDE)
        return _CODE_PAGES.get(page, f"cp{page}") if page else None


def _properties(raw: bytes, header: int) -> dict[int, bytes]:
    """The fixed-size entries of a property stream: tag (id << 16 | type) → 8 value bytes."""
    return {
        int.from_bytes(raw[start : start + 4], "little"): raw[start + 8 : start + 16]
        for start in range(header, len(raw) - 15, 16)
    }


def _decoded(data: bytes, codec: str) -> str:
    """Bytes in a named code page (Windows-1252 when Python does not know the name)."""
    try:
        return data.decode(codec, errors="replace")
    except LookupError:
        return data.decode("cp1252", errors="replace")


def _message(store: _Storage, depth: int) -> OutlookMessage:
    flags = store.integer(0x0E07) or 0  # PR_MESSAGE_FLAGS
    plain = store.string(0x1000)
    html = store.stream("__substg1.0_10130102")
    rtf = _rtf(store) if plain is None or not html else None  # only a missing body is read
    if plain is None and rtf is not None:
        plain = deencapsulate(rtf, "text")
    headers = store.string(0x007D)
    message = OutlookMessage(
        subject=store.string(0x0037),
        sender_name=store.string(0x0C1A),
        sender_address=store.string(0x5D01),  # PR_SENDER_SMTP_ADDRESS
        message_id=store.string(0x1035),
        sent=None if flags & _MSGFLAG_UNSENT else store.time(0x0039),  # PR_CLIENT_SUBMIT_TIME
        plain=plain,
        html=_html(html) if html else deencapsulate(rtf, "html") if rtf else None,
        transport=_transport(headers) if headers else None,
    )
    for name in store.storages("__recip"):
        recipient = store.child(name, "child")
        address = recipient.string(0x39FE) or recipient.string(0x3003)  # SMTP, else any
        kind = (recipient.integer(0x0C15) or 0) & 0xF
        message.recipients.append(Recipient(recipient.string(0x3001), address, kind))
    for name in store.storages("__attach"):
        attachment = _attachment(store.child(name, "child"), depth)
        if attachment is not None:
            message.attachments.append(attachment)
    return message


def _attachment(store: _Storage, depth: int) -> MsgAttachment | None:
    """An attachment by value or an attached message; None for one that holds no bytes of its
    own (a link, an OLE object) or a message nested deeper than _MAX_NESTING."""
    found = MsgAttachment(
        long_name=store.string(0x3707),
        short_name=store.string(0x3704),
        display_name=store.string(0x3001),
        media_type=store.string(0x370E),
        content_id=store.string(0x3712),
        data=store.stream("__substg1.0_37010102"),
    )
    if found.data is not None:
        return found
    storage = store.storage("__substg1.0_3701000D")
    method = store.integer(0x3705)  # PR_ATTACH_METHOD; without it, a message by its streams
    if storage is None or depth >= _MAX_NESTING or method not in (None, _EMBEDDED_MESSAGE):
        return None
    inner = store.child(storage, "embedded")
    if inner.props is None:
        return None
    found.message = _message(inner, depth + 1)
    return found


def _rtf(store: _Storage) -> bytes | None:
    """The RTF body (PR_RTF_COMPRESSED) inflated; MsgFormatError when it is damaged."""
    packed = store.stream("__substg1.0_10090102")
    if not packed:
        return None
    import compressed_rtf  # type: ignore[import-untyped]

    try:
        data: bytes = compressed_rtf.decompress(packed)
    except Exception as exc:  # compressed_rtf raises bare Exception on a bad header or CRC
        raise MsgFormatError(f"damaged compressed RTF body ({exc})") from None
    return data


def _html(data: bytes) -> str:
    """The HTML body stream as text: UTF-8, else the charset its <meta> declares, else
    Windows-1252."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        declared = _META_CHARSET.search(data[:4096])
        return _decoded(data, declared.group(1).decode("ascii") if declared else "cp1252")


def _transport(text: str) -> Message:
    text = text.removeprefix("Microsoft Mail Internet Headers Version 2.0").lstrip()
    return HeaderParser(policy=compat32).parsestr(text)


def transport_field(message: OutlookMessage, name: str) -> str | None:
    """A transport header field with its RFC 2047 encoded words decoded; None when the
    message kept no such field."""
    value = None if message.transport is None else message.transport[name]
    if value is None:
        return None
    parts = email.header.decode_header(str(value).replace("\r\n", ""))
    return "".join(
        _decoded(text, charset or "raw-unicode-escape") if isinstance(text, bytes) else text
        for text, charset in parts
    )


# -- the body encapsulated in RTF (MS-OXRTFEX) -----------------------------------------------

_FROM = {"html": re.compile(r"\\fromhtml1(?![0-9])"), "text": re.compile(r"\\fromtext(?![a-z])")}


def deencapsulate(rtf: bytes, kind: str) -> str | None:
    """The HTML (`kind` "html": `\\fromhtml1`) or plain text ("text": `\\fromtext`) that an
    RTF body encapsulates; None when it encapsulates no such body. The marker stands in the
    RTF header, before the first group (the font table)."""
    text = rtf.decode("latin-1")
    end = text.find("{", 1)
    head = text if end < 0 else text[:end]
    if not _FROM[kind].search(head):
        return None
    return _Deencapsulator(text).body()


class _Deencapsulator(RtfReader):
    """The project's RTF reader (code pages, fonts, `\\u`, skipped destinations) with the
    content rules of encapsulation: the text of `{\\*\\htmltag …}` groups is markup and is kept,
    and so is body text, except between `\\htmlrtf` and `\\htmlrtf0` (RTF-only formatting;
    the state is scoped by groups); every other destination is dropped."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.out: list[str] = []
        self.htmlrtf = [False]

    def body(self) -> str:
        self.read()
        text = "".join(self.out)
        if any("\ud800" <= c <= "\udfff" for c in text):  # \u surrogate pairs made whole
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", errors="replace")
        return text

    def _word(self, word: str, arg: int | None, pos: int) -> int:
        if not self.g.skip and word in ("htmlrtf", "htmltag"):
            self.star = False
            if word == "htmlrtf":
                self.htmlrtf[-1] = arg != 0
            else:
                self.g.dest = "htmltag"
            return pos
        return super()._word(word, arg, pos)

    def _body_word(self, word: str, arg: int | None) -> None:
        if word in specialchars and word not in ("row", "cell", "nestcell"):
            self._out(specialchars[word])  # no tables: their RTF is all inside \htmlrtf

    def _end_paragraph(self, final: bool = False) -> None:
        if not final:
            self._out("\n")

    def _out(self, text: str) -> None:
        if not (self.g.skip or self.htmlrtf[-1]) and self.g.dest in (None, "htmltag"):
            self.out.append(text)

    def _open_group(self) -> None:
        super()._open_group()
        self.htmlrtf.append(self.htmlrtf[-1])

    def _close_group(self) -> None:
        super()._close_group()
        self.htmlrtf.pop()
