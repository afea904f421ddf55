"""Outlook `.msg` files (OLE2 compound files of MAPI properties, read by `oxmsg`) as the same
`MailMessage` an `.eml` gives.

Outlook stores the HTML body as its own stream, or encapsulated in the RTF body; a body that
only exists as plain text stays plain text here. An attached message is exported as an RFC 5322
`.eml` of its own (`message/rfc822`, with its header fields, bodies and attachments), so the
door ingests it as an e-mail like any other; the bytes are the same on every read (the MIME
boundaries are derived from the content), so a re-delivered `.msg` delivers the same file.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import hashlib
import mimetypes
import re
from email.message import EmailMessage

from corpus_pipeline.parsing.email.message import (
    READ_ERRORS,
    Attachment,
    AttachmentNames,
    MailMessage,
)
from corpus_pipeline.parsing.email.oxmsg import (
    MSG_DAMAGE,
    OutlookMessage,
    read_message,
    transport_field,
)

_TO, _CC = 1, 2  # PR_RECIPIENT_TYPE
_EML_POLICY = email.policy.default.clone(cte_type="7bit")
_MEDIA_TYPE = re.compile(r"^[\w.+-]+/[\w.+-]+$")
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"  # RFC 5322 atext
_ADDR_SPEC = re.compile(rf"^{_ATOM}(\.{_ATOM})*@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$")
_MESSAGE_SUFFIX = re.compile(r"\.(msg|eml)$", re.I)


def read_msg(data: bytes) -> MailMessage:
    """One Outlook message. Raises one of `oxmsg.MSG_DAMAGE` on a file that is not one (the
    callers turn that into a refusal or a corrupt-document error)."""
    return _mail(read_message(data))


def _mail(msg: OutlookMessage) -> MailMessage:
    sent = msg.sent
    fields = {
        "From": _addresses(msg, "From"),
        "To": _addresses(msg, "To"),
        "Cc": _addresses(msg, "Cc"),
        "Date": sent.strftime("%a, %d %b %Y %H:%M:%S %z") if sent else None,
        "Subject": msg.subject,
        "Message-ID": transport_field(msg, "Message-ID") or msg.message_id,
    }
    html = (msg.html or "").replace("\x00", "") or None
    message = MailMessage(
        headers=[(k, " ".join(v.split())) for k, v in fields.items() if v and v.strip()],
        subject=" ".join((msg.subject or "").split()),
        sent=sent,
        plain=(msg.plain or "").replace("\x00", "") or None,
        html=html,
    )
    names = AttachmentNames()
    for att in msg.attachments:
        declared = att.long_name or att.short_name or att.display_name
        if att.message is not None:
            payload = _eml(att.message)
            declared = declared or att.message.subject or "message"
            declared = f"{_MESSAGE_SUFFIX.sub('', declared)}.eml"
            media_type = "message/rfc822"
        else:
            payload = att.data or b""
            guessed = mimetypes.guess_type(declared or "")[0]
            media_type = att.media_type or guessed or "application/octet-stream"
        cid = (att.content_id or "").strip("<>")
        if cid and html and f"cid:{cid}" in html and media_type.startswith("image/"):
            message.inline[cid] = (media_type, payload)
        else:
            message.attachments.append(
                Attachment(names.name(declared, media_type), media_type, payload)
            )
    return message


def _addresses(msg: OutlookMessage, field: str, rfc5322: bool = False) -> str | None:
    """From, To or Cc: the transport header field, else the sender or the recipients of that
    type. As extract-msg wrote them ("Name <address>" joined by "; ", a transport field's
    commas made semicolons), or `rfc5322` for an `.eml` (quoted where needed, joined by ", ")."""
    value = transport_field(msg, field)
    if value:
        return value if rfc5322 or field == "From" else value.replace(",", ";")
    if field == "From":
        people = [(msg.sender_name, msg.sender_address)]
    else:
        kind = _TO if field == "To" else _CC
        people = [(r.name, r.address) for r in msg.recipients if r.kind == kind]
    shown = [_address(name, address, rfc5322) for name, address in people]
    return (", " if rfc5322 else "; ").join(s for s in shown if s) or None


def _address(name: str | None, address: str | None, rfc5322: bool) -> str | None:
    if rfc5322:  # one that is no plain ASCII address is left out of the .eml
        plain = address is not None and _ADDR_SPEC.match(address)
        return email.utils.formataddr((name or "", address)) if plain and address else None
    if name is None:
        return address
    return f"{name} <{address}>" if address is not None else name


# -- an attached message as an .eml ---------------------------------------------------------


def _eml(msg: OutlookMessage) -> bytes:
    """An attached message as RFC 5322 bytes, 7-bit clean (policy `default`, every body and
    attachment in quoted-printable or base64 as needed), the same on every read."""
    mail = _mail(msg)
    out = EmailMessage(policy=_EML_POLICY)
    fields = {
        "From": _addresses(msg, "From", rfc5322=True),
        "To": _addresses(msg, "To", rfc5322=True),
        "Cc": _addresses(msg, "Cc", rfc5322=True),
        "Date": email.utils.format_datetime(mail.sent) if mail.sent else None,
        "Subject": mail.subject,  # always written: the door knows an .eml by its fields
        "Message-ID": dict(mail.headers).get("Message-ID"),
    }
    for name, value in fields.items():
        if value is not None:
            try:
                out[name] = " ".join(value.split())
                out.policy.fold_binary(name, out[name])
            except READ_ERRORS:  # left out: a value the header registry cannot take or write
                del out[name]  # (a non-ASCII address, which RFC 5322 cannot carry)
    if mail.plain is not None:
        out.set_content(mail.plain)
    if mail.html is not None:
        (out.add_alternative if mail.plain is not None else out.set_content)(
            mail.html, subtype="html"
        )
    html_part = out.get_body(preferencelist=("html",)) if mail.html is not None else None
    for cid, (media_type, data) in mail.inline.items():
        if html_part is not None:
            html_part.add_related(data, *_leaf_type(media_type), cid=f"<{cid}>")
    for attachment in mail.attachments:
        if attachment.media_type == "message/rfc822" and attachment.data.isascii():
            _attach_message(out, attachment)
        else:
            maintype, subtype = _leaf_type(attachment.media_type)
            out.add_attachment(attachment.data, maintype, subtype, filename=attachment.name)
    digest = _digest(mail)
    for number, part in enumerate(p for p in out.walk() if p.is_multipart()):
        part.set_boundary(f"=_{digest}.{number}")
    return out.as_bytes()


def _attach_message(out: EmailMessage, attachment: Attachment) -> None:
    """An attached 7-bit message (an `.eml` of `_eml`'s) as a message/rfc822 part, its bytes
    as they are: parsed and written again, odd header values could fold otherwise. (One with
    8-bit bytes goes as application/octet-stream: a message part cannot be base64.)"""
    part = EmailMessage(policy=out.policy)
    part["Content-Type"] = "message/rfc822"
    part.add_header("Content-Disposition", "attachment", filename=attachment.name)
    part.set_payload(attachment.data.decode("ascii"))
    if out.get_content_type() != "multipart/mixed":
        out.make_mixed()
    out.attach(part)


def _leaf_type(media_type: str) -> tuple[str, str]:
    """(maintype, subtype) of a part that holds bytes: a malformed, multipart or message type
    becomes application/octet-stream."""
    media_type = media_type.lower()
    if not _MEDIA_TYPE.match(media_type) or media_type.startswith(("multipart/", "message/")):
        media_type = "application/octet-stream"
    maintype, subtype = media_type.split("/", 1)
    return maintype, subtype


def _digest(mail: MailMessage) -> str:
    """A hash of the message's content, for MIME boundaries that no part can contain and
    that are the same on every read ("=_" never occurs in base64 or quoted-printable)."""
    sha = hashlib.sha256(repr((mail.headers, mail.plain, mail.html)).encode("utf-8", "replace"))
    for label, data in [*mail.inline.values(), *((a.name, a.data) for a in mail.attachments)]:
        sha.update(label.encode("utf-8", "replace") + b"\0" + data)
    return sha.hexdigest()[:32]


__all__ = ["MSG_DAMAGE", "read_msg"]
