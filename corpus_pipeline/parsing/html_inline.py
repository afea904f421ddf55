"""HTML inline content rendered as row text: whitespace collapsed while appending, exact link
offsets, images met on the way (`InlineText`, `collect`), shared by the HTML walker, HTML tables
and the Markdown parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict, Unpack

import lxml.html

from corpus_pipeline.contracts import LinkSpan
from corpus_pipeline.contracts.rows import trimmed_link

HtmlElement = lxml.html.HtmlElement

HEADINGS = {f"h{n}": n for n in range(1, 7)}
BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center", "dd",
        "details", "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
        "form", "header", "hgroup", "hr", "html", "legend", "li", "main", "menu", "nav", "ol",
        "p", "pre", "search", "section", "summary", "table", "tbody", "td", "tfoot", "th",
        "thead", "tr", "ul", *HEADINGS,
    }
)  # fmt: skip
_LIST_TAGS = frozenset({"ul", "ol", "dl", "menu"})
# Inside a list item these start their own rows after the item's text.
_DEFERRED_IN_ITEM = frozenset({*_LIST_TAGS, "table", "pre", "blockquote", "figure", *HEADINGS})
_INVISIBLE = str.maketrans({"\u00ad": None, "\u200b": None, "\ufeff": None})


@dataclass(frozen=True)
class PendingImage:
    """An image met inside a block; handled after the block's text row is emitted."""

    src: str
    alt: str
    location: str


@dataclass
class InlineText:
    """Accumulates rendered inline text with collapsed whitespace and exact link offsets.

    Whitespace is collapsed while appending (not afterwards), so the offsets recorded for
    links are offsets into the final row text. `preserve` keeps whitespace (for <pre>).
    """

    preserve: bool = False
    images: list[PendingImage] = field(default_factory=list)
    _parts: list[str] = field(default_factory=list)
    _length: int = 0
    _last: str = ""
    _pending_space: bool = False
    _links: list[tuple[int, int, str]] = field(default_factory=list)

    def add(self, text: str | None) -> None:
        if not text:
            return
        text = text.translate(_INVISIBLE)
        if self.preserve:
            self._append(text.replace("\r\n", "\n").replace("\r", "\n"))
            return
        for token in re.split(r"(\s+)", text):
            if not token:
                continue
            if token.isspace():
                self._pending_space = self._length > 0
                continue
            if self._pending_space and self._last not in ("\n", " "):
                self._append(" ")
            self._pending_space = False
            self._append(token)

    def newline(self) -> None:
        """A hard line break (<br>, Markdown hard break)."""
        if self._length > 0 or self.preserve:
            self._append("\n")
        self._pending_space = False

    def soft_break(self, separator: str) -> None:
        """Boundary of a block element inside inline content: a space or a single newline."""
        if self.preserve:
            if self._length > 0 and self._last != "\n":
                self._append("\n")
            return
        if separator == "\n":
            if self._length > 0 and self._last != "\n":
                self._append("\n")
            self._pending_space = False
        elif self._length > 0:
            self._pending_space = True

    def mark(self) -> int:
        return self._length

    def link(self, start: int, target: str) -> None:
        """Record a link whose text was appended since `mark()` returned `start`."""
        if target:
            self._links.append((start, self._length, target))

    def result(self) -> tuple[str, list[LinkSpan]]:
        """The row text (outer whitespace stripped) and link spans into it."""
        raw = "".join(self._parts)
        if self.preserve:
            raw = raw.removeprefix("\n")
        lead = len(raw) - len(raw.lstrip())
        text = raw.strip()
        links: list[LinkSpan] = []
        for raw_start, raw_end, target in self._links:
            start = max(raw_start - lead, 0)
            span = trimmed_link(text, start, min(raw_end - lead, len(text)), target)
            if span is not None:
                links.append(span)
        return text, links

    def _append(self, text: str) -> None:
        self._parts.append(text)
        self._length += len(text)
        self._last = text[-1]


def tag_of(el: object) -> str:
    tag = getattr(el, "tag", None)
    return tag.lower() if isinstance(tag, str) else ""


class Rendering(TypedDict):
    """How `collect` renders elements: blocks become `separator` boundaries; images are kept
    unless `with_images` is False; given `deferred`, the blocks that start their own rows inside
    a list item are put there instead."""

    separator: str
    with_images: NotRequired[bool]
    deferred: NotRequired[list[HtmlElement]]


def collect_children(el: HtmlElement, buf: InlineText, **how: Unpack[Rendering]) -> None:
    buf.add(el.text)
    for child in el:
        if tag_of(child):
            collect(child, buf, **how)
        buf.add(child.tail)


def collect(el: HtmlElement, buf: InlineText, **how: Unpack[Rendering]) -> None:
    """Append an element's rendered text to `buf`, rendered `how` it says."""
    tag = tag_of(el)
    if tag == "br":
        buf.newline()
        return
    if tag == "img":
        if how.get("with_images", True):
            buf.images.append(PendingImage(el.get("src") or "", el.get("alt") or "", path_of(el)))
        return
    deferred = how.get("deferred")
    if deferred is not None and tag in _DEFERRED_IN_ITEM:
        deferred.append(el)
        return
    block = tag in BLOCK_TAGS
    if block:
        buf.soft_break(how["separator"])
    href = el.get("href") if tag == "a" else None
    start = buf.mark()
    collect_children(el, buf, **how)
    if href and not href.strip().lower().startswith("javascript:"):
        buf.link(start, href.strip())
    if block:
        buf.soft_break(how["separator"])


def path_of(el: HtmlElement) -> str:
    return el.getroottree().getpath(el).lstrip("/")
