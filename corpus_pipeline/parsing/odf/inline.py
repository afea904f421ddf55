"""What one OpenDocument paragraph holds: its text with link offsets, and what is anchored in it
(notes, reviewer comments, pictures, text boxes), in order.

ODF collapses runs of white space in text nodes; explicit spaces (`text:s`), tabs and line
breaks are elements. A note's citation stays in the text as `[n]` and its body is kept beside
the paragraph, so the note is found with the sentence that cites it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from corpus_pipeline.parsing.odf.names import dc, draw, int_attr, office, text, xlink

# Empty markers and declarations: nothing of them is read (their tails are).
_SKIPPED = frozenset(
    text(n)
    for n in (
        "soft-page-break", "bookmark", "bookmark-start", "bookmark-end", "reference-mark",
        "reference-mark-start", "reference-mark-end", "change", "change-start", "change-end",
        "alphabetical-index-mark", "toc-mark", "user-index-mark", "note-citation",
    )
) | {office("annotation-end")}  # fmt: skip
_DRAWINGS = frozenset(
    draw(n)
    for n in (
        "custom-shape", "rect", "ellipse", "polygon", "path", "line", "polyline", "g",
        "connector", "measure", "circle", "regular-polygon", "caption",
    )
)  # fmt: skip


_ANCHORED = frozenset({text("note-body"), office("annotation")})


@dataclass(frozen=True)
class Note:
    kind: str  # "Footnote" or "Endnote"
    citation: str
    text: str


@dataclass
class Inline:
    """A paragraph's text as written (collapsed by `normalise` later), with link offsets into it
    and what is anchored in it."""

    parts: list[str] = field(default_factory=list)
    length: int = 0
    links: list[tuple[int, int, str]] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    comments: list[tuple[str, str]] = field(default_factory=list)  # (author, text)
    frames: list[etree._Element] = field(default_factory=list)  # pictures
    boxes: list[etree._Element] = field(default_factory=list)  # text boxes, shapes with text

    def add(self, value: str) -> None:
        """Text as written (spaces, tabs and breaks spelled out as elements)."""
        self.parts.append(value)
        self.length += len(value)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def read_inline(el: etree._Element) -> Inline:
    out = Inline()
    _walk(el, out)
    return out


def plain_text(el: etree._Element) -> str:
    """An element's paragraphs as one line each (notes, comments, table cells, slide titles);
    the bodies of notes and comments anchored in them are not part of their text."""
    lines = []
    for p in el.iter(text("p"), text("h")):
        if _anchored(p, el):
            continue
        line = " ".join(read_inline(p).text.split())
        if line:
            lines.append(line)
    return "\n".join(lines)


def _anchored(p: etree._Element, within: etree._Element) -> bool:
    """`p` belongs to a note or comment inside `within` (read with that note, not here)."""
    for ancestor in p.iterancestors():
        if ancestor is within:
            return False
        if ancestor.tag in _ANCHORED:
            return True
    return False


def _text_node(value: str | None, out: Inline) -> None:
    """A text node: white space runs collapse to one space (ODF 1.3 §6.1.2)."""
    if not value:
        return
    collapsed = " ".join(value.split())
    if value[:1].isspace() and (out.parts and not out.parts[-1][-1:].isspace()):
        collapsed = " " + collapsed
    if value[-1:].isspace() and collapsed:
        collapsed += " "
    if collapsed:
        out.add(collapsed)


def _walk(el: etree._Element, out: Inline) -> None:
    _text_node(el.text, out)
    for child in el.iterchildren():
        if isinstance(child.tag, str):
            _child(child, out)
        _text_node(child.tail, out)


def _child(child: etree._Element, out: Inline) -> None:
    tag = child.tag
    if tag in _SKIPPED:
        return
    if tag == text("s"):
        out.add(" " * int_attr(child.get(text("c")), most=100))
    elif tag == text("tab"):
        out.add("\t")
    elif tag == text("line-break"):
        out.add("\n")
    elif tag == text("a"):
        start = out.length
        _walk(child, out)
        href = (child.get(xlink("href")) or "").strip()
        if href and out.length > start:
            out.links.append((start, out.length, href))
    elif tag == text("note"):
        _note(child, out)
    elif tag == office("annotation"):
        author = " ".join((child.findtext(dc("creator")) or "").split())
        body = plain_text(child).replace("\n", " ")
        if body:
            out.comments.append((author, body))
    elif tag == text("number"):
        _walk(child, out)
        out.add(" ")
    elif tag == draw("frame"):
        box = child.find(draw("text-box"))
        if box is not None:
            out.boxes.append(box)
        elif child.find(draw("image")) is not None:
            out.frames.append(child)
    elif tag in _DRAWINGS:
        out.boxes.append(child)
    elif tag == draw("a"):
        _walk(child, out)
    elif not draw.owns(tag):
        _walk(child, out)  # spans, fields, ruby, meta: their text is the paragraph's


def _note(note: etree._Element, out: Inline) -> None:
    citation = " ".join((note.findtext(text("note-citation")) or "").split())
    kind = "Endnote" if note.get(text("note-class")) == "endnote" else "Footnote"
    if citation:
        out.add(f"[{citation}]")
    body = note.find(text("note-body"))
    content = plain_text(body).replace("\n", " ") if body is not None else ""
    if content:
        out.notes.append(Note(kind, citation, content))
