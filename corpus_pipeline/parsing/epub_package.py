"""An EPUB's package read from its zip: the container points at the OPF, whose metadata names
the publication, whose manifest lists the files and whose spine orders them; the navigation
document (EPUB 3 `nav`, else the EPUB 2 NCX) titles the chapters. Every reference is resolved
inside the zip only (`ZipPackage.resolve`), every member read within its budget.
"""

from __future__ import annotations

import html.entities
import re
from dataclasses import dataclass, field
from datetime import date

from lxml import etree

from corpus_pipeline.common.errors import CorruptDocumentError
from corpus_pipeline.common.xmlnames import Namespace
from corpus_pipeline.parsing.dates import iso_date
from corpus_pipeline.parsing.zipped import ZipPackage, xml_parser

CONTAINER = "META-INF/container.xml"
_CONTAINER_NS = Namespace("urn:oasis:names:tc:opendocument:xmlns:container")
_OPF = Namespace("http://www.idpf.org/2007/opf")
_DC = Namespace("http://purl.org/dc/elements/1.1/")
_NCX = Namespace("http://www.daisy.org/z3986/2005/ncx/")
XHTML_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/xml"})
_ENTITY = re.compile(rb"&([A-Za-z][A-Za-z0-9]{1,31});")
_XML_ENTITIES = frozenset({b"amp", b"lt", b"gt", b"quot", b"apos"})


@dataclass(frozen=True)
class TocEntry:
    member: str
    fragment: str
    title: str
    depth: int


@dataclass
class Publication:
    opf: str
    title: str | None = None
    creators: list[str] = field(default_factory=list)
    date: date | None = None
    spine: list[str] = field(default_factory=list)  # members, in reading order
    media_types: dict[str, str] = field(default_factory=dict)  # member → media type
    nav: str | None = None  # the EPUB 3 navigation document
    ncx: str | None = None  # the EPUB 2 table of contents


def read_publication(package: ZipPackage) -> Publication:
    """Container → OPF → metadata, manifest and spine; a package without them is corrupt."""
    container = package.xml(CONTAINER, "the container")
    rootfile = container.find(f".//{_CONTAINER_NS('rootfile')}")
    path = rootfile.get("full-path") if rootfile is not None else None
    if not path or path not in package.names:
        raise CorruptDocumentError("epub", "the container names no package document")
    opf = package.xml(path, "the package document")
    pub = Publication(opf=path)
    metadata = opf.find(_OPF("metadata"))
    if metadata is not None:
        _metadata(pub, metadata)
    ids: dict[str, str] = {}
    for item in opf.iterfind(f"{_OPF('manifest')}/{_OPF('item')}"):
        member = package.resolve(path, item.get("href") or "")
        if member is None:
            continue
        ids[item.get("id") or ""] = member
        pub.media_types[member] = (item.get("media-type") or "").strip().lower()
        if "nav" in (item.get("properties") or "").split():
            pub.nav = member
    spine = opf.find(_OPF("spine"))
    if spine is not None:
        pub.ncx = ids.get(spine.get("toc") or "")
        for ref in spine.iterfind(_OPF("itemref")):
            member = ids.get(ref.get("idref") or "")
            if member is not None and member not in pub.spine:
                pub.spine.append(member)
    if pub.ncx is None:
        pub.ncx = next((m for m, t in pub.media_types.items() if t.endswith("x-dtbncx+xml")), None)
    return pub


def _metadata(pub: Publication, metadata: etree._Element) -> None:
    titles = [" ".join("".join(t.itertext()).split()) for t in metadata.iter(_DC("title"))]
    pub.title = next((t for t in titles if t), None)
    creators = (" ".join("".join(c.itertext()).split()) for c in metadata.iter(_DC("creator")))
    pub.creators = [c for c in creators if c]
    stamps = ["".join(d.itertext()) for d in metadata.iter(_DC("date"))]
    stamps += [
        m.text or "" for m in metadata.iter(_OPF("meta")) if m.get("property") == "dcterms:modified"
    ]
    pub.date = next((d for d in map(iso_date, stamps) if d is not None), None)


def xhtml_root(data: bytes) -> etree._Element | None:
    """A content document parsed as XML (self-closed `<a/>` stays empty, as it must), HTML
    named entities turned into characters first, every namespace dropped from names (the HTML
    walker reads plain `p`, `h1`, `img`); None when nothing could be recovered."""

    def numeric(match: re.Match[bytes]) -> bytes:
        name = match.group(1)
        point = html.entities.name2codepoint.get(name.decode("ascii"))
        if name in _XML_ENTITIES or point is None:
            return match.group(0)
        return b"&#%d;" % point

    try:
        root = etree.fromstring(_ENTITY.sub(numeric, data), xml_parser(recover=True))
    except etree.XMLSyntaxError:
        return None
    if root is None:
        return None
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        el.tag = etree.QName(el).localname
        for key in [k for k in el.attrib if k.startswith("{")]:
            value = el.attrib.pop(key)
            local = etree.QName(key).localname
            if local not in el.attrib:
                el.set(local, value)
    etree.cleanup_namespaces(root)
    return root


def toc_entries(package: ZipPackage, pub: Publication) -> list[TocEntry]:
    """The navigation document's entries in order (the EPUB 3 toc nav, else the NCX)."""
    if pub.nav is not None:
        root = xhtml_root(package.read(pub.nav))
        navs = list(root.iter("nav")) if root is not None else []
        toc = next((n for n in navs if "toc" in (n.get("type") or "").split()), None)
        if toc is not None or navs:
            entries: list[TocEntry] = []
            _nav_list(package, pub.nav, toc if toc is not None else navs[0], 1, entries)
            return entries
    if pub.ncx is not None:
        ncx = etree.fromstring(package.read(pub.ncx), xml_parser(recover=True))
        if ncx is not None:
            nav_map = ncx.find(f".//{_NCX('navMap')}")
            entries = []
            if nav_map is not None:
                _nav_points(package, pub.ncx, nav_map, 1, entries)
            return entries
    return []


def _nav_list(
    package: ZipPackage, base: str, el: etree._Element, depth: int, out: list[TocEntry]
) -> None:
    for child in el:
        if child.tag in ("ol", "ul"):
            _nav_list(package, base, child, depth, out)
        elif child.tag == "li":
            label = next((c for c in child if c.tag in ("a", "span")), None)
            if label is not None:
                _add(package, base, label.get("href") or "", "".join(label.itertext()), depth, out)
            for sub in child:
                if sub.tag in ("ol", "ul"):
                    _nav_list(package, base, sub, depth + 1, out)


def _nav_points(
    package: ZipPackage, base: str, el: etree._Element, depth: int, out: list[TocEntry]
) -> None:
    for point in el.iterchildren(_NCX("navPoint")):
        title = point.findtext(f"{_NCX('navLabel')}/{_NCX('text')}") or ""
        content = point.find(_NCX("content"))
        href = (content.get("src") or "") if content is not None else ""
        _add(package, base, href, title, depth, out)
        _nav_points(package, base, point, depth + 1, out)


def _add(
    package: ZipPackage, base: str, href: str, title: str, depth: int, out: list[TocEntry]
) -> None:
    member = package.resolve(base, href)
    title = " ".join(title.split())
    if member is not None and title:
        out.append(TocEntry(member, href.partition("#")[2], title, depth))


def chapter_titles(entries: list[TocEntry]) -> dict[str, str]:
    """Each content file's title: the shallowest entry that points at it (the whole file
    before a part of it), the first of those when several do."""
    best: dict[str, TocEntry] = {}
    for entry in entries:
        known = best.get(entry.member)
        if known is None or (entry.depth, bool(entry.fragment)) < (
            known.depth,
            bool(known.fragment),
        ):
            best[entry.member] = entry
    return {member: entry.title for member, entry in best.items()}
