"""Where a message's own text ends and the text it quotes begins.

Replies carry what they answer in three shapes: a separator line that opens everything below
it ("-----Original Message-----", a forwarded-message rule, Outlook's "From: … Sent: …"
block), an attribution line ("On Tue, 5 Mar 2024, Bob wrote:") before a block of `>` lines,
and bare `>` blocks between the writer's own paragraphs (an inline answer). Each quoted run
becomes its own segment, so the parser can give it a section of its own; the text is kept,
only the `>` markers go.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

QUOTED_REPLY = "Quoted reply"
FORWARDED = "Forwarded message"
REPLY = "Reply"

_SEPARATOR = re.compile(
    r"^\s*-{2,}\s*(original message|ursprüngliche nachricht|message d'origine|mensaje original)"
    r"\s*-{2,}\s*$",
    re.I,
)
_FORWARD = re.compile(r"^\s*-{2,}\s*(forwarded message|begin forwarded message)\b.*$", re.I)
_FORWARD_APPLE = re.compile(r"^\s*begin forwarded message:\s*$", re.I)
_HEADER_FROM = re.compile(r"^\s*\*?from:\*?\s+\S", re.I)
_HEADER_SENT = re.compile(r"^\s*\*?(sent|date):\*?\s+\S", re.I | re.M)
_ATTRIBUTION = re.compile(
    r"^\s*(on|le|am|el|il|op)\b.{0,300}\b(wrote|a écrit|schrieb|escribió|scrisse|schreef)\s*:\s*$",
    re.I | re.S,
)
_QUOTE_MARK = re.compile(r"^\s*>+ ?")


@dataclass(frozen=True)
class Segment:
    """A run of a body: the writer's own text (`title` None) or quoted text under `title`."""

    title: str | None
    lines: list[str]
    first_line: int  # 1-based, within the body


def opens_quote(text: str, following: str = "") -> str | None:
    """The section title when `text` (a line, or a paragraph of an HTML body) opens quoted
    text that runs to the end of the message; `following` is the text after it (Outlook's
    header block spans lines)."""
    if _SEPARATOR.match(text):
        return QUOTED_REPLY
    if _FORWARD.match(text) or _FORWARD_APPLE.match(text):
        return FORWARDED
    if _HEADER_FROM.match(text) and _HEADER_SENT.search(f"{text}\n{following}"[:600]):
        return QUOTED_REPLY
    if _ATTRIBUTION.match(" ".join(text.split())):
        return QUOTED_REPLY
    return None


def plain_segments(text: str) -> list[Segment]:
    """A plain-text body cut into own and quoted segments, in reading order."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    segments: list[Segment] = []
    own: list[str] = []
    own_start = 1
    i = 0
    while i < len(lines):
        title, end = _quote_start(lines, i)
        if title is None:
            if not own:
                own_start = i + 1
            own.append(lines[i])
            i += 1
            continue
        if any(line.strip() for line in own):
            segments.append(Segment(None, own, own_start))
        own = []
        stop = len(lines) if end is None else end
        segments.append(Segment(title, _unquoted(lines[i:stop]), i + 1))
        i = stop
    if any(line.strip() for line in own):
        segments.append(Segment(None, own, own_start))
    return segments


def _quote_start(lines: list[str], i: int) -> tuple[str | None, int | None]:
    """(title, end) when line `i` opens a quote: end is where a `>` block stops, None when
    the quote runs to the end; (None, None) when it opens none."""
    line = lines[i]
    if _QUOTE_MARK.match(line):
        return QUOTED_REPLY, _quote_block_end(lines, i)
    candidates = [(line, 1)]
    if i + 1 < len(lines) and re.search(r"\d", line):  # a long date line wrapped in two
        candidates.append((f"{line} {lines[i + 1]}", 2))
    for text, width in candidates:
        if _ATTRIBUTION.match(" ".join(text.split())):
            after = _next_text(lines, i + width)
            if after is not None and _QUOTE_MARK.match(lines[after]):
                return QUOTED_REPLY, _quote_block_end(lines, after)
            return QUOTED_REPLY, None
    return opens_quote(line, "\n".join(lines[i + 1 : i + 6])), None


def _unquoted(lines: list[str]) -> list[str]:
    """Quoted lines without their `>` marks; an attribution line stays a paragraph of its own
    (a blank line is kept where unquoted text meets quoted text)."""
    out: list[str] = []
    for before, line in zip(["", *lines], lines, strict=False):
        if _QUOTE_MARK.match(line) and before.strip() and not _QUOTE_MARK.match(before):
            out.append("")
        out.append(_QUOTE_MARK.sub("", line))
    return out


def _quote_block_end(lines: list[str], start: int) -> int:
    """The index after a block of `>` lines (blank lines inside it belong to it)."""
    end = start
    i = start
    while i < len(lines) and (_QUOTE_MARK.match(lines[i]) or not lines[i].strip()):
        if lines[i].strip():
            end = i + 1
        i += 1
    return end


def _next_text(lines: list[str], start: int) -> int | None:
    for i in range(start, len(lines)):
        if lines[i].strip():
            return i
    return None
