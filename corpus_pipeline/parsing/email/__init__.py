"""E-mail strategies: `.eml` (RFC 5322, the standard library's `email` with its `default`
policy) and Outlook `.msg` (MS-OXMSG on `olefile`, `oxmsg`), read into one `MailMessage` and
rendered alike (`render`): the subject as title and top heading, the sending date as the
document's date, From/To/Cc/Date/Subject/Message-ID as the first paragraph, the body (HTML
through the HTML parser), quoted replies as sections of their own, and a list of the
attachments.

An `.mbox` never reaches a parser: the door splits it into one `.eml` document per message,
and stores each attachment as a document of its own linked to its message (`intake.mail`).
"""

from __future__ import annotations

from corpus_pipeline.parsing.base import ParseContext, load_or_corrupt
from corpus_pipeline.parsing.email.message import MailMessage, read_eml
from corpus_pipeline.parsing.email.render import emit_message


def parse_eml(ctx: ParseContext) -> None:
    """Emit the rows of an RFC 5322 message."""
    data = ctx.source_path.read_bytes()
    emit_message(ctx, load_or_corrupt("eml", "message", lambda: read_eml(data)))


def parse_msg(ctx: ParseContext) -> None:
    """Emit the rows of an Outlook message."""
    data = ctx.source_path.read_bytes()
    emit_message(ctx, load_or_corrupt("msg", "message", lambda: _read(data, outlook=True)))


def mail_facts(data: bytes, outlook: bool) -> dict[str, object]:
    """Profile evidence of a message: its inline images and a sample of its subject and body
    text (for the language guess); nothing when it cannot be read (the parse says why)."""
    try:
        message = _read(data, outlook)
    except Exception:  # the profile stays shallow; damage is the parse's to report
        return {}
    body = message.plain
    if body is None and message.html:
        import lxml.html
        from lxml import etree

        try:
            body = lxml.html.fragment_fromstring(message.html, create_parent="div").text_content()
        except (etree.ParserError, ValueError):  # markup lxml cannot take: no sample from it
            body = None
    sample = f"{message.subject}\n{body or ''}"
    return {
        "image_count": len(message.inline),
        "char_count": len(sample),
        "text_sample": sample[:8000],
    }


def _read(data: bytes, outlook: bool) -> MailMessage:
    if not outlook:
        return read_eml(data)
    from corpus_pipeline.parsing.email.outlook import read_msg

    return read_msg(data)


__all__ = ["mail_facts", "parse_eml", "parse_msg"]
