"""Outlook `.msg` files (OLE2 compound files of MAPI properties) read with `extract-msg`
(GPL-3.0) into the same `MailMessage` an `.eml` gives.

Outlook stores the HTML body as its own stream, or encapsulated in the RTF body; a body that
only exists as plain text stays plain text here (extract-msg would dress it up as HTML). An
embedded message is exported as a `.msg` of its own, so it is ingested like one.
"""

from __future__ import annotations

import contextlib
import logging
import mimetypes
import re
from datetime import datetime
from typing import Any

from corpus_pipeline.parsing.email.message import (
    Attachment,
    AttachmentNames,
    MailMessage,
)

_HTML_STREAM = "__substg1.0_10130102"
_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def read_msg(data: bytes) -> MailMessage:
    """One Outlook message. Raises whatever extract-msg raises on a file that is not one (the
    callers turn that into a refusal or a corrupt-document error)."""
    import extract_msg

    # extract-msg logs every fallback it takes at INFO/WARNING; the parse records what matters.
    logging.getLogger("extract_msg").setLevel(logging.ERROR)
    msg: Any = extract_msg.openMsg(data, strict=False, delayAttachments=False)
    try:
        return _message(msg)
    finally:
        msg.close()


def _message(msg: Any) -> MailMessage:
    sent = getattr(msg, "date", None)
    fields = {
        "From": getattr(msg, "sender", None),
        "To": getattr(msg, "to", None),
        "Cc": getattr(msg, "cc", None),
        "Date": sent.strftime("%a, %d %b %Y %H:%M:%S %z") if isinstance(sent, datetime) else None,
        "Subject": getattr(msg, "subject", None),
        "Message-ID": getattr(msg, "messageId", None),
    }
    html = (_html(msg) or "").replace("\x00", "") or None
    message = MailMessage(
        headers=[(k, " ".join(str(v).split())) for k, v in fields.items() if v and str(v).strip()],
        subject=" ".join(str(fields["Subject"] or "").split()),
        sent=sent if isinstance(sent, datetime) else None,
        plain=(getattr(msg, "body", None) or "").replace("\x00", "") or None,
        html=html,
    )
    names = AttachmentNames()
    for att in getattr(msg, "attachments", []):
        declared = att.longFilename or att.shortFilename or att.displayName
        media_type = att.mimetype or mimetypes.guess_type(declared or "")[0]
        payload = att.data
        if not isinstance(payload, bytes):
            embedded = payload
            if not hasattr(embedded, "exportBytes"):
                continue  # a linked or unsupported attachment holds no bytes of its own
            payload = embedded.exportBytes()
            declared = declared or getattr(embedded, "subject", None) or "message"
            declared = declared if declared.lower().endswith(".msg") else f"{declared}.msg"
            media_type = "application/vnd.ms-outlook"
        media_type = media_type or "application/octet-stream"
        cid = (att.cid or "").strip("<>")
        if cid and html and f"cid:{cid}" in html and media_type.startswith("image/"):
            message.inline[cid] = (media_type, payload)
        else:
            message.attachments.append(
                Attachment(names.name(declared, media_type), media_type, payload)
            )
    return message


def _html(msg: Any) -> str | None:
    """The HTML body Outlook stored (its own stream, or encapsulated in the RTF body)."""
    data = msg.getStream(_HTML_STREAM)
    if not data and getattr(msg, "rtfBody", None):
        from extract_msg.enums import DeencapType

        with contextlib.suppress(Exception):  # RTF de-encapsulation fails in many ways
            data = msg.deencapsulateBody(msg.rtfBody, DeencapType.HTML)
    if not data:
        return None
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        declared = _META_CHARSET.search(data[:4096])
        charset = declared.group(1).decode("ascii") if declared else "cp1252"
        try:
            return bytes(data).decode(charset, errors="replace")
        except LookupError:
            return bytes(data).decode("cp1252", errors="replace")
