"""What an e-mail delivers besides itself: an mbox's messages, a message's attachments.

An mbox is a set of messages delivered in one file, like an archive: it is no document itself,
each message becomes the document `<mbox>/0001.eml`, `<mbox>/0002.eml`, … (numbered in mailbox
order, so re-delivering a grown mailbox keeps every earlier message's identity). A message
(`.eml`, `.msg`) is a document, and so is each file attached to it, named
`<message>/<attachment name>` (the name the message lists it under, `parsing.email`) and
recorded as attached to the message: the door admits each of them as it admits an upload, and
the published graph links the two (`publish.tables.attachment_edges`).
"""

from __future__ import annotations

from dataclasses import dataclass

from corpus_pipeline.contracts import FileFormat
from corpus_pipeline.parsing.email.message import READ_ERRORS, read_eml, split_mbox

# E-mails inside e-mails are expanded this deep (a forwarded message's attachments, once more).
MAX_DEPTH = 3
MAIL_FORMATS = frozenset({FileFormat.EML, FileFormat.MSG, FileFormat.MBOX})


@dataclass(frozen=True)
class Carried:
    """A file an e-mail delivers: its label, bytes, and the label of the message it is
    attached to (None for a message of an mbox)."""

    label: str
    data: bytes
    parent: str | None


def carried(label: str, data: bytes, fmt: FileFormat) -> list[Carried]:
    """The messages of an mbox, or the attachments of a message, in order; nothing for any
    other format, or for a message whose parts cannot be read (the parse names the damage)."""
    if fmt is FileFormat.MBOX:
        messages = split_mbox(data)
        return [Carried(f"{label}/{n:04d}.eml", m, None) for n, m in enumerate(messages, 1)]
    if fmt not in (FileFormat.EML, FileFormat.MSG):
        return []
    try:
        if fmt is FileFormat.EML:
            message = read_eml(data)
        else:
            from corpus_pipeline.parsing.email.outlook import read_msg

            message = read_msg(data)
    except READ_ERRORS:
        return []
    return [Carried(f"{label}/{a.name}", a.data, label) for a in message.attachments]


def msg_refusal(data: bytes) -> str | None:
    """Why an Outlook message cannot be read (the reader's error class), or None."""
    from corpus_pipeline.parsing.email.outlook import MSG_DAMAGE, read_msg

    try:
        read_msg(data)
    except MSG_DAMAGE as exc:  # what a damaged container or message raises (`oxmsg`)
        return type(exc).__name__
    return None
