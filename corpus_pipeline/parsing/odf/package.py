"""An open OpenDocument package (ODT, ODP): its content, the styles that decide headings,
captions and hidden slides, the metadata it declares, and its pictures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lxml import etree

from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.dates import iso_date
from corpus_pipeline.parsing.odf.names import dc, draw, meta, office, presentation, style, xlink
from corpus_pipeline.parsing.odf.names import svg as svg_name
from corpus_pipeline.parsing.zipped import ZipPackage

# Picture formats Pillow cannot decode: a frame's raster alternative is taken first.
_VECTOR = (".svg", ".svm", ".wmf", ".emf")


@dataclass(frozen=True)
class _Style:
    parent: str | None
    outline_level: str | None
    hidden: bool


class Styles:
    """Paragraph and page styles by name, with their parent chains (automatic styles in
    content.xml mostly only point at the named style that means something: "Title",
    "Heading 2", "Caption")."""

    def __init__(self, *roots: etree._Element | None) -> None:
        self._styles: dict[str, _Style] = {}
        for root in roots:
            if root is None:
                continue
            for el in root.iter(style("style")):
                name = el.get(style("name"))
                if not name:
                    continue
                page = el.find(style("drawing-page-properties"))
                visibility = page.get(presentation("visibility")) if page is not None else None
                self._styles[name] = _Style(
                    parent=el.get(style("parent-style-name")),
                    outline_level=el.get(style("default-outline-level")),
                    hidden=visibility == "hidden",
                )

    def chain(self, name: str | None) -> Iterator[tuple[str, _Style | None]]:
        """The style and its ancestors, nearest first (cycles in broken files are cut)."""
        seen: set[str] = set()
        while name and name not in seen:
            seen.add(name)
            found = self._styles.get(name)
            yield name, found
            name = found.parent if found is not None else None

    def named(self, name: str | None, *wanted: str) -> bool:
        """The style or an ancestor is one of the `wanted` (internal) names, in any case (a
        converted Word file says "caption")."""
        folded = {w.casefold() for w in wanted}
        return any(n.casefold() in folded for n, _ in self.chain(name))

    def outline_level(self, name: str | None) -> int | None:
        for _, found in self.chain(name):
            if found is not None and found.outline_level and found.outline_level.isdigit():
                return max(1, int(found.outline_level))
        return None

    def hidden(self, name: str | None) -> bool:
        found = self._styles.get(name or "")
        return found is not None and found.hidden


@dataclass
class OdfDocument:
    package: ZipPackage
    content: etree._Element
    styles: Styles


def open_document(ctx: ParseContext, fmt: str, what: str) -> OdfDocument:
    """Open the package, read its content (a missing or broken one makes it corrupt), its
    styles (optional: without them only the structure the content spells out is kept) and the
    title and date its metadata declares."""
    package = ZipPackage(ctx.source_path, fmt)
    content = package.xml("content.xml", f"the {what}'s content")
    styles_root = None
    if "styles.xml" in package.names:
        with ctx.part("styles", "the styles part cannot be read; headings by outline only"):
            styles_root = package.part_xml("styles.xml")
    if "meta.xml" in package.names:
        with ctx.part("metadata", "the metadata part cannot be read; no title or date kept"):
            declare_meta(ctx, package.part_xml("meta.xml"))
    return OdfDocument(package, content, Styles(content, styles_root))


def declare_meta(ctx: ParseContext, part: etree._Element) -> None:
    """dc:title as the declared title; the creation date, else the last-saved date (dc:date)."""
    title = " ".join((part.findtext(f".//{dc('title')}") or "").split())
    ctx.declared_title = title or None
    for stamp in (part.findtext(f".//{meta('creation-date')}"), part.findtext(f".//{dc('date')}")):
        day = iso_date(stamp)
        if day is not None:
            ctx.declared_date = day
            return


def frame_alt(frame: etree._Element) -> str:
    """A picture's description, else its title (what a screen reader says)."""
    for tag in ("desc", "title"):
        value = " ".join((frame.findtext(svg_name(tag)) or "").split())
        if value:
            return value
    return ""


def emit_frame_image(
    ctx: ParseContext,
    doc: OdfDocument,
    frame: etree._Element,
    where: str,
    pages: list[int] | None = None,
) -> None:
    """Store the picture of a `draw:frame` (its raster version when it has several) with its
    alt text; a linked or missing picture is recorded as lost."""
    hrefs = [i.get(xlink("href")) or "" for i in frame.iterchildren(draw("image"))]
    if not hrefs:
        return
    hrefs.sort(key=lambda h: h.lower().endswith(_VECTOR))
    member = doc.package.resolve("content.xml", hrefs[0])
    if member is None:
        ctx.diagnostics.add(
            "parse",
            "image.unavailable",
            f"an image at {where} is linked or missing from the file; skipped",
            lost="image",
            page=pages[0] if pages else None,
        )
        return
    with ctx.part(
        "image", f"an image at {where} could not be read; skipped", code="image.unreadable"
    ) as part:
        data = doc.package.read(member)
    if not part.failed:
        ctx.emit_image(data, frame_alt(frame), where, page_numbers=pages)


def is_object_frame(frame: etree._Element) -> bool:
    """A frame holding an embedded object (a chart, a formula): its picture is only a preview."""
    return frame.find(draw("object")) is not None or frame.find(draw("object-ole")) is not None


def read_body(
    ctx: ParseContext,
    fmt: str,
    what: str,
    kind: str,
    read: Callable[[OdfDocument, etree._Element], None],
) -> None:
    """Open the document (`open_document`) and hand its `office:body/office:<kind>` (text,
    presentation) to `read`; a document without one is an empty parse, an error. The package is
    closed however the reading ends."""
    doc = open_document(ctx, fmt, what)
    with doc.package:
        root = doc.content.find(f"{office('body')}/{office(kind)}")
        if root is None:
            ctx.diagnostics.add("parse", "document.empty", f"no {kind} body", level="error")
            return
        read(doc, root)
