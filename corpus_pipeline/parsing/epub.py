"""EPUB strategy: the spine's content documents in reading order, each through the HTML parser
(headings, lists, tables with spans and images survive as they do for a web page).

The zip is read directly (`epub_package`; ebooklib is AGPL). A chapter file without a heading
of its own is headed, at level 1, by the title the navigation document gives it, so every
chapter is a section; a file with headings keeps its own. The navigation document, when it is
in the spine, is read as table-of-contents rows. Pictures are read from the zip (a reference
that leaves the package is not followed) and handed to the HTML parser inline. The OPF's
dc:title and dc:date are the declared title and date.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Iterator

from lxml import etree

from corpus_pipeline.contracts import RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.epub_package import (
    XHTML_TYPES,
    Publication,
    TocEntry,
    chapter_titles,
    read_publication,
    toc_entries,
    xhtml_root,
)
from corpus_pipeline.parsing.html import emit_html_fragment
from corpus_pipeline.parsing.zipped import ZipPackage

_HEADINGS = frozenset(f"h{n}" for n in range(1, 7))


def parse_epub(ctx: ParseContext) -> None:
    """Emit the chapters of an EPUB in spine order (see the module docstring)."""
    with ZipPackage(ctx.source_path, "epub") as package:
        pub = read_publication(package)
        ctx.declared_title = pub.title
        ctx.declared_date = pub.date
        entries: list[TocEntry] = []
        titles: dict[str, str] = {}
        with ctx.part("navigation", "the table of contents cannot be read; chapters untitled"):
            entries = toc_entries(package, pub)
            titles = chapter_titles(entries)
        for member in _content_documents(ctx, pub):
            with ctx.part("chapter", f"chapter {member} could not be read; skipped"):
                if member == pub.nav:
                    for entry in entries:
                        ctx.emit(RowType.TOC, entry.title, member)
                else:
                    _chapter(ctx, package, member, titles.get(member))
    if not ctx.rows:
        ctx.diagnostics.add("parse", "document.empty", "no text in the EPUB", level="error")


def _content_documents(ctx: ParseContext, pub: Publication) -> Iterator[str]:
    for member in pub.spine:
        if pub.media_types.get(member, "") in XHTML_TYPES:
            yield member
        else:  # an image or a PDF page in the spine: not read as text
            ctx.diagnostics.add(
                "parse", "epub.spine_item_skipped", f"spine item {member} is not XHTML; skipped"
            )


def _chapter(ctx: ParseContext, package: ZipPackage, member: str, title: str | None) -> None:
    root = xhtml_root(package.read(member))
    if root is None:
        ctx.diagnostics.add("parse", "chapter.unreadable", f"chapter {member} is not XHTML")
        return
    body = next(root.iter("body"), None)
    if body is None:
        return
    if title and not any(el.tag in _HEADINGS for el in body.iter()):
        ctx.emit(RowType.HEADING, title, member, heading_level=1)
    _cover_images(body)
    for img in body.iter("img"):
        _inline_image(ctx, package, member, img)
    inner = (body.text or "") + "".join(
        etree.tostring(child, method="html", encoding="unicode") for child in body
    )
    emit_html_fragment(ctx, inner, member)


def _cover_images(body: etree._Element) -> None:
    """An `<svg>` that only frames a picture (how covers are written) becomes an `<img>`: the
    HTML parser drops SVG."""
    for svg in list(body.iter("svg")):
        image = next(svg.iter("image"), None)
        href = image.get("href") if image is not None else None
        parent = svg.getparent()
        if href and parent is not None:
            img = etree.Element("img", src=href, alt="")
            img.tail = svg.tail
            parent.replace(svg, img)


def _inline_image(ctx: ParseContext, package: ZipPackage, member: str, img: etree._Element) -> None:
    """Replace a picture's reference into the zip by its bytes (a data URI); a reference to
    anything outside the package is left for the HTML parser to record as unavailable."""
    src = (img.get("src") or "").strip()
    target = package.resolve(member, src) if src and not src.startswith("data:") else None
    if target is None:
        return
    with ctx.part("image", f"an image in {member} could not be read; skipped") as part:
        data = package.read(target)
    if part.failed:
        img.set("src", "")
        return
    media = mimetypes.guess_type(target)[0] or "application/octet-stream"
    img.set("src", f"data:{media};base64,{base64.b64encode(data).decode('ascii')}")
