"""What one paragraph holds (its text, link offsets, images and text boxes, in order), hyperlink
field targets, and the paragraph's text with whitespace collapsed and link offsets remapped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lxml import etree

from corpus_pipeline.contracts import LinkSpan
from corpus_pipeline.contracts.rows import trimmed_link


@dataclass(frozen=True)
class ImageRef:
    rel_id: str
    alt: str


@dataclass
class ComplexField:
    instr: str = ""
    result_start: int | None = None


@dataclass
class Inline:
    """What one paragraph holds: its text, link offsets, images and text boxes, in order."""

    parts: list[str] = field(default_factory=list)
    length: int = 0
    links: list[tuple[int, int, str]] = field(default_factory=list)
    images: list[ImageRef] = field(default_factory=list)
    textboxes: list[etree._Element] = field(default_factory=list)
    fields: list[ComplexField] = field(default_factory=list)

    def add(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.length += len(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def hyperlink_instr(instr: str) -> str | None:
    """Target of a `HYPERLINK "url" [\\l "anchor"]` field instruction."""
    tokens = re.findall(r'"([^"]*)"|(\S+)', instr.strip())
    words = [quoted or bare for quoted, bare in tokens]
    if not words or words[0].upper() != "HYPERLINK":
        return None
    url = ""
    anchor = ""
    i = 1
    while i < len(words):
        word = words[i]
        if word.lower() == "\\l" and i + 1 < len(words):
            anchor = words[i + 1]
            i += 2
            continue
        if word.startswith("\\"):
            i += 2 if word.lower() in ("\\o", "\\t") else 1
            continue
        if not url:
            url = word
        i += 1
    if anchor:
        return f"{url}#{anchor}"
    return url or None


def normalise(
    text: str, links: list[tuple[int, int, str]], single_line: bool
) -> tuple[str, list[LinkSpan]]:
    """Collapse whitespace (keeping line breaks unless `single_line`) and remap link offsets."""
    out: list[str] = []
    pos = [0] * (len(text) + 1)
    pending: str | None = None
    for i, ch in enumerate(text):
        if ch.isspace():
            if out:
                pending = "\n" if (ch == "\n" and not single_line) or pending == "\n" else " "
            pos[i] = len(out)
            continue
        if pending is not None:
            out.append(pending)
            pending = None
        pos[i] = len(out)
        out.append(ch)
    result = "".join(out)
    pos[len(text)] = len(result)
    spans = []
    for start, end, target in links:
        s = min(pos[start], len(result))
        span = trimmed_link(result, s, min(pos[min(end, len(text))], len(result)), target)
        if span is not None:
            spans.append(span)
    return result, spans
