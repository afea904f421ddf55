"""An e-mail as one neutral record (`MailMessage`), read from RFC 5322 bytes (an `.eml`, or one
message of an mbox) with the standard library's `email` package and its `default` policy.

`outlook.read_msg` fills the same record from an Outlook `.msg`, so the parser renders both
alike. The door reads attachments through here too (`intake.mail`): an attachment has one name
everywhere, the door stores it as the document `<message>/<name>` and the message lists it
under that name.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import mimetypes
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from email.errors import MessageError
from email.headerregistry import BaseHeader, HeaderRegistry
from email.message import EmailMessage, Message

from corpus_pipeline.common.errors import NestingTooDeepError

# The header fields a message shows first and the search indexes with its text, in this order.
HEADER_FIELDS = ("From", "To", "Cc", "Date", "Subject", "Message-ID")
_NAME_BAD = re.compile(r"[\x00-\x1f\x7f<>:\"|?*]+")
_MAX_NAME = 120
# What reading a damaged header raises inside the header registry (the default policy parses
# every header it hands out).
_HEADER_ERRORS = (MessageError, ValueError, IndexError, TypeError, AttributeError, OverflowError)
# Header values are cut to this many characters before they are parsed (`_BoundedHeaders`).
MAX_HEADER_CHARS = 16 * 1024
# What reading a message may raise on damaged bytes (an attached message that will not
# serialise, a part in an unknown encoding), for callers that must go on without its parts.
READ_ERRORS = (*_HEADER_ERRORS, LookupError, UnicodeError, KeyError)
# Parts nested in parts (multiparts, attached messages) at most: real mail nests a few levels
# (a forward of a forward with its alternatives); thousands only to exhaust a reader's stack.
MAX_MIME_DEPTH = 32


class MessageTooDeep(NestingTooDeepError):
    """A message whose parts nest deeper than MAX_MIME_DEPTH: refused, never half read."""

    def __init__(self) -> None:
        super().__init__("eml", "parts", MAX_MIME_DEPTH)


def mime_depth(msg: Message) -> int:
    """How deep the message's parts nest (1: a single part), counted without recursion and
    only up to just past MAX_MIME_DEPTH."""
    deepest = 0
    stack = [(msg, 1)]
    while stack and deepest <= MAX_MIME_DEPTH:
        part, depth = stack.pop()
        deepest = max(deepest, depth)
        payload = part.get_payload()
        if isinstance(payload, list):
            stack.extend((sub, depth + 1) for sub in payload if isinstance(sub, Message))
    return deepest


@dataclass(frozen=True)
class Attachment:
    """A file carried by a message: its unique name within the message, type and bytes."""

    name: str
    media_type: str
    data: bytes


@dataclass
class MailMessage:
    """What a reader sees of one message, whatever its file format."""

    headers: list[tuple[str, str]]  # (field, value) of HEADER_FIELDS that are present
    subject: str
    sent: datetime | None
    plain: str | None = None
    html: str | None = None
    # Images the HTML body shows by content id (`cid:`): part of the body, not attachments.
    inline: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)


class AttachmentNames:
    """Unique, path-free attachment names: the last component of the declared file name with
    control and reserved characters replaced, or `attachment-N.<ext>` from the type; a repeated
    name gets ` (2)`, ` (3)` … before its extension."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def name(self, declared: str | None, media_type: str) -> str:
        base = clean_name(declared or "")
        if not base:
            extension = mimetypes.guess_extension(media_type) or ".bin"
            base = f"attachment-{len(self._taken) + 1}{extension}"
        stem, dot, extension = base.rpartition(".")
        if not stem:
            stem, dot, extension = base, "", ""
        candidate, number = base, 2
        while candidate.casefold() in self._taken:
            candidate = f"{stem} ({number}){dot}{extension}"
            number += 1
        self._taken.add(candidate.casefold())
        return candidate


def clean_name(declared: str) -> str:
    """A declared file name as a safe last path component (at most 120 characters, keeping
    its extension); '' when nothing usable is left."""
    last = re.split(r"[\\/]+", declared.strip())[-1]
    text = _NAME_BAD.sub("_", " ".join(last.split())).strip(" ._")
    if len(text) > _MAX_NAME:
        stem, dot, extension = text.rpartition(".")
        keep = f"{dot}{extension}" if stem and len(extension) <= 10 else ""
        text = text[: _MAX_NAME - len(keep)].rstrip(" ._") + keep
    return text


class _BoundedHeaders(HeaderRegistry):
    """The default policy's header registry, with every value cut to MAX_HEADER_CHARS before
    it is parsed: the structured header parser takes quadratic time on a huge value (a fuzzed
    800 KB address list held it past 10 s), and no real header comes near that length (a
    To of 300 addresses is some 12,000 characters)."""

    def __call__(self, name: str, value: str) -> BaseHeader:
        return super().__call__(name, value[:MAX_HEADER_CHARS])


POLICY = email.policy.default.clone(header_factory=_BoundedHeaders())


def read_eml(data: bytes) -> MailMessage:
    """One RFC 5322 message: its header fields, bodies, inline images and attachments. A
    message nested deeper than MAX_MIME_DEPTH raises MessageTooDeep."""
    try:
        msg = email.message_from_bytes(data, policy=POLICY)
    except RecursionError:  # the standard parser recurses per level: far past any real mail
        raise MessageTooDeep() from None
    if mime_depth(msg) > MAX_MIME_DEPTH:
        raise MessageTooDeep()
    html_part = _body(msg, "html")
    plain_part = _body(msg, "plain")
    html = body_text(html_part) if html_part is not None else None
    message = MailMessage(
        headers=[(name, value) for name in HEADER_FIELDS if (value := header_text(msg, name))],
        subject=header_text(msg, "Subject"),
        sent=_sent(msg),
        plain=body_text(plain_part) if plain_part is not None else None,
        html=html,
    )
    names = AttachmentNames()
    for part in _leaves(msg):
        if part is html_part or part is plain_part:
            continue
        media_type = part.get_content_type()
        cid = header_text(part, "Content-ID").strip("<>")
        if cid and html and f"cid:{cid}" in html and part.get_content_maintype() == "image":
            message.inline[cid] = (media_type, _payload(part))
        elif _is_attachment(part):
            declared = part.get_filename() or _embedded_subject(part)
            message.attachments.append(
                Attachment(names.name(declared, media_type), media_type, _payload(part))
            )
    return message


def header_text(msg: Message, name: str) -> str:
    """A header field's decoded value on one line ('' when absent); a value the header
    registry cannot parse is taken as written."""
    try:
        value = msg.get(name)
    except _HEADER_ERRORS:
        value = next((v for k, v in msg.raw_items() if k.lower() == name.lower()), None)
    return " ".join(str(value).split()) if value is not None else ""


def body_text(part: Message) -> str:
    """A text part decoded by its declared charset (undecodable bytes replaced, NULs dropped:
    no markup parser takes them); an unknown charset falls back to UTF-8."""
    raw = part.get_payload(decode=True)
    data = raw if isinstance(raw, bytes) else str(part.get_payload()).encode("utf-8", "replace")
    charset = part.get_content_charset() or "utf-8"
    try:
        text = data.decode(charset, errors="replace")
    except LookupError:
        text = data.decode("utf-8", errors="replace")
    return text.replace("\x00", "")


def split_mbox(data: bytes) -> list[bytes]:
    """The messages of an mbox: each begins after a `From ` line that opens the file or
    follows a blank line; `>From ` lines escaped by the writer (mboxrd) are restored."""
    starts = [
        m
        for m in _MBOX_SEPARATOR.finditer(data)
        if m.start() == 0
        or data[m.start() - 2 : m.start()] == b"\n\n"
        or data[m.start() - 3 : m.start()] == b"\n\r\n"
    ]
    ends = [m.start() for m in starts[1:]] + [len(data)]
    messages = []
    for here, end in zip(starts, ends[: len(starts)], strict=True):
        body = data[here.end() : end]
        body = _MBOX_ESCAPED.sub(rb"\1", body).rstrip(b"\r\n") + b"\n"
        if body.strip():
            messages.append(body)
    return messages


_MBOX_SEPARATOR = re.compile(rb"^From [^\r\n]*(?:\r?\n|\Z)", re.M)
_MBOX_ESCAPED = re.compile(rb"^>(>*From )", re.M)


def _body(msg: EmailMessage, kind: str) -> Message | None:
    try:
        return msg.get_body(preferencelist=(kind,))
    except _HEADER_ERRORS:
        return None


def _leaves(part: Message) -> Iterator[Message]:
    """The non-multipart parts in order; an attached message (message/rfc822) is one leaf."""
    payload = part.get_payload()
    if part.get_content_maintype() == "multipart" and isinstance(payload, list):
        for sub in payload:
            if isinstance(sub, Message):
                yield from _leaves(sub)
    elif part.get_content_maintype() != "multipart":
        yield part


def _is_attachment(part: Message) -> bool:
    """A file rather than a rendering of the body: declared as an attachment, named, or not
    text (an unnamed inline text part is the body's other alternative)."""
    disposition = (part.get_content_disposition() or "").lower()
    return (
        disposition == "attachment"
        or part.get_filename() is not None
        or part.get_content_maintype() not in ("text", "multipart")
    )


def _embedded_subject(part: Message) -> str | None:
    """An attached message is named after its subject."""
    if part.get_content_type() != "message/rfc822":
        return None
    inner = part.get_payload(0)
    subject = header_text(inner, "Subject") if isinstance(inner, Message) else ""
    return f"{subject or 'message'}.eml"


def _payload(part: Message) -> bytes:
    """The part's bytes, transfer encoding undone; an attached message as RFC 5322 bytes."""
    if part.get_content_type() == "message/rfc822":
        inner = part.get_payload(0)
        if isinstance(inner, Message):
            try:
                return inner.as_bytes()
            except READ_ERRORS:
                return str(inner).encode("utf-8", "replace")
    raw = part.get_payload(decode=True)
    return raw if isinstance(raw, bytes) else b""


def _sent(msg: Message) -> datetime | None:
    """The Date header as a datetime; None when absent or unreadable."""
    try:
        header = msg.get("Date")
    except _HEADER_ERRORS:
        header = None
    when = getattr(header, "datetime", None)
    if isinstance(when, datetime):
        return when
    raw = header_text(msg, "Date")
    try:
        return email.utils.parsedate_to_datetime(raw) if raw else None
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
