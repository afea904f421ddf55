"""One message as rows: its subject as the top heading, the header fields as the first
paragraph, the body, each quoted run as a section of its own, and the attachments it carries.

The header fields are text of the document, not only metadata: From/To/Cc addresses and the
Message-ID are found by the `term` channel (raw identifiers), names and the subject by
`content`, and the subject (the title and the top heading) by `path`. An HTML body is read
with the HTML parser, so its headings and tables survive, and it is preferred over the plain
alternative, which mail clients derive from it and which flattens tables; images it shows by
content id (`cid:`) come from the message's own parts.
"""

from __future__ import annotations

import base64
import dataclasses
import re

from corpus_pipeline.contracts import LinkSpan, ParsedRow, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.dates import plausible
from corpus_pipeline.parsing.email.message import Attachment, MailMessage
from corpus_pipeline.parsing.email.quotes import REPLY, Segment, opens_quote, plain_segments
from corpus_pipeline.parsing.html import emit_html_fragment

NO_SUBJECT = "(no subject)"
ATTACHMENTS = "Attachments"
_CID_SRC = re.compile(r"""(\bsrc\s*=\s*["']?)cid:([^"'\s>]+)""", re.I)
_URL = re.compile(r"https?://[^\s<>\"']+")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")


def emit_message(ctx: ParseContext, message: MailMessage) -> None:
    """Emit the rows of one message and declare its subject and sending date."""
    ctx.declared_title = message.subject or None
    ctx.declared_date = plausible(message.sent.date()) if message.sent else None
    ctx.emit(RowType.HEADING, message.subject or NO_SUBJECT, "header", heading_level=1)
    if message.headers:
        header = "\n".join(f"{name}: {value}" for name, value in message.headers)
        ctx.emit(RowType.PARAGRAPH, header, "header")
    if not (message.html and _emit_html_body(ctx, message)) and message.plain:
        _emit_plain_body(ctx, message.plain)
    if message.attachments:
        ctx.emit(RowType.HEADING, ATTACHMENTS, "attachments", heading_level=2)
        for number, attachment in enumerate(message.attachments, start=1):
            _emit_attachment(ctx, attachment, number)


def _emit_html_body(ctx: ParseContext, message: MailMessage) -> bool:
    """The HTML body through the HTML parser; its rows from the first one that opens quoted
    text go under a section of their own. False when it shows nothing."""
    html = _CID_SRC.sub(lambda m: m.group(1) + _data_uri(message, m.group(2)), message.html or "")
    # The message's context with rows of its own, to cut at the quote before they are emitted.
    scratch = dataclasses.replace(ctx, rows=[])
    scratch.resources = ctx.resources  # tables and images numbered with the message's own
    emit_html_fragment(scratch, html, "html body")
    rows = scratch.rows
    if not any(row.text.strip() for row in rows):
        return False
    cut, title = len(rows), None
    for index, row in enumerate(rows):
        following = rows[index + 1].text if index + 1 < len(rows) else ""
        title = opens_quote(row.text, following) if row.row_type is not RowType.TABLE else None
        if title is not None:
            cut = index
            break
    _copy(ctx, rows[:cut], shift=1)
    if title is not None:
        ctx.emit(RowType.HEADING, title, rows[cut].source_location, heading_level=2)
        _copy(ctx, rows[cut:], shift=2)
    return True


def _data_uri(message: MailMessage, cid: str) -> str:
    found = message.inline.get(cid)
    if found is None:
        return f"cid:{cid}"
    media_type, data = found
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def _copy(ctx: ParseContext, rows: list[ParsedRow], shift: int) -> None:
    """Rows of the body into the message, its headings nested below the message's own."""
    for row in rows:
        level = min(row.heading_level + shift, 9) if row.heading_level else None
        ctx.emit(
            row.row_type,
            row.text,
            row.source_location,
            heading_level=level,
            page_numbers=row.page_numbers,
            resource_path=row.resource_path,
            links=row.links,
        )


def _emit_plain_body(ctx: ParseContext, text: str) -> None:
    """Paragraphs (blank-line separated, hard wraps joined) and list items; quoted runs as
    sections, and the writer's text after a quoted run under "Reply"."""
    quoted_before = False
    for segment in plain_segments(text):
        if segment.title is not None:
            ctx.emit(RowType.HEADING, segment.title, _where(segment, 0, 0), heading_level=2)
            quoted_before = True
        elif quoted_before:
            ctx.emit(RowType.HEADING, REPLY, _where(segment, 0, 0), heading_level=2)
        for first, last, block in _blocks(segment.lines):
            location = _where(segment, first, last)
            if all(_BULLET.match(line) for line in block):
                for line in block:
                    _emit_text(ctx, RowType.LIST_ITEM, _BULLET.sub("", line).strip(), location)
            else:
                _emit_text(ctx, RowType.PARAGRAPH, " ".join(s.strip() for s in block), location)


def _blocks(lines: list[str]) -> list[tuple[int, int, list[str]]]:
    """Blank-line separated runs: (first, last) index within the lines, and the lines."""
    out: list[tuple[int, int, list[str]]] = []
    start: int | None = None
    for index, line in enumerate([*lines, ""]):
        if line.strip() and start is None:
            start = index
        elif not line.strip() and start is not None:
            out.append((start, index - 1, lines[start:index]))
            start = None
    return out


def _where(segment: Segment, first: int, last: int) -> str:
    return f"body lines {segment.first_line + first}-{segment.first_line + last}"


def _emit_text(ctx: ParseContext, row_type: RowType, text: str, location: str) -> None:
    """A row whose bare URLs are links (`related` connections, as in the text parser)."""
    if not text:
        return
    links = []
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(".,;:!?)]}'\"")
        links.append(LinkSpan(start=match.start(), end=match.start() + len(url), target=url))
    ctx.emit(row_type, text, location, links=links)


def _emit_attachment(ctx: ParseContext, attachment: Attachment, number: int) -> None:
    """One line per attachment, its name a `related` link to the document the door stores it
    as (`<message name>/<attachment name>`, when the door admits it)."""
    name = attachment.name
    text = f"{name} ({attachment.media_type}, {_size(len(attachment.data))})"
    link = LinkSpan(start=0, end=len(name), target=f"{ctx.source_file_name}/{name}")
    ctx.emit(RowType.LIST_ITEM, text, f"attachment {number}", links=[link])


def _size(n: int) -> str:
    if n < 1024:
        return f"{n:,} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"
