"""DOCX strategy: walks `word/document.xml` at the XML level so nothing is lost.

python-docx's high-level API skips content controls (`w:sdt`), tracked insertions and
`customXml`/`smartTag` wrappers, and does not expose merged-cell geometry or automatic
numbering; all of those matter for a faithful reading order, heading text and table spans, so
this module reads the body element tree directly and uses python-docx only to open the package
and resolve relationships (images, hyperlink targets, styles, numbering).
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote

from lxml import etree

from corpus_pipeline.common.errors import CorruptDocumentError
from corpus_pipeline.contracts import LinkSpan, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.dates import declared_office_date
from corpus_pipeline.parsing.tables import GridBuilder, TableGrid

_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_WP_NS = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
_A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
_PIC_NS = "http://schemas.openxmlformats.org/drawingml/2006/picture"
_V_NS = "urn:schemas-microsoft-com:vml"
_O_NS = "urn:schemas-microsoft-com:office:office"
_MC_NS = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_M_NS = "http://schemas.openxmlformats.org/officeDocument/2006/math"

_RT_STYLES = "/styles"
_RT_NUMBERING = "/numbering"


def _w(name: str) -> str:
    return f"{{{_W_NS}}}{name}"


def _local(el: etree._Element) -> str:
    tag = el.tag
    if not isinstance(tag, str):  # comments / processing instructions
        return ""
    return tag.rsplit("}", 1)[-1]


def _ns(el: etree._Element) -> str:
    tag = el.tag
    if not isinstance(tag, str) or not tag.startswith("{"):
        return ""
    return tag[1:].split("}", 1)[0]


def _val(el: etree._Element | None, attr: str = "val") -> str | None:
    if el is None:
        return None
    return el.get(_w(attr))


def _int(value: str | None, default: int | None = None) -> int | None:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _on(el: etree._Element | None) -> bool:
    """OOXML boolean property: present and not explicitly false."""
    return el is not None and (_val(el) or "true").lower() not in ("0", "false", "off")


# Containers that only wrap block- or run-level content; their children are read in place.
_WRAPPERS = {"customXml", "smartTag", "ins", "moveTo", "sdtContent", "dir", "bdo"}
# Removed content (tracked deletions) that must not be read.
_DELETED = {"del", "moveFrom"}


# --------------------------------------------------------------------------------------------
# Styles


@dataclass(frozen=True)
class _Style:
    name: str
    based_on: str | None
    outline_level: int | None
    num_id: int | None
    ilvl: int | None


class _Styles:
    """Paragraph styles with their based-on chains (headings and lists are often inherited)."""

    def __init__(self, root: etree._Element | None) -> None:
        self._styles: dict[str, _Style] = {}
        self.default_id: str | None = None
        if root is None:
            return
        for st in root.iterchildren(_w("style")):
            if st.get(_w("type")) not in (None, "paragraph"):
                continue
            sid = st.get(_w("styleId"))
            if not sid:
                continue
            if st.get(_w("default")) in ("1", "true", "on"):
                self.default_id = sid
            ppr = st.find(_w("pPr"))
            numpr = ppr.find(_w("numPr")) if ppr is not None else None
            self._styles[sid] = _Style(
                name=(_val(st.find(_w("name"))) or sid).strip().lower(),
                based_on=_val(st.find(_w("basedOn"))),
                outline_level=_int(_val(ppr.find(_w("outlineLvl"))) if ppr is not None else None),
                num_id=_int(_val(numpr.find(_w("numId")))) if numpr is not None else None,
                ilvl=_int(_val(numpr.find(_w("ilvl")))) if numpr is not None else None,
            )

    def chain(self, style_id: str | None) -> Iterator[tuple[str, _Style]]:
        """The style and its ancestors, nearest first (cycles in broken files are cut)."""
        seen: set[str] = set()
        current = style_id if style_id is not None else self.default_id
        while current is not None and current not in seen:
            seen.add(current)
            style = self._styles.get(current)
            if style is None:
                return
            yield current, style
            current = style.based_on

    def heading(self, style_id: str | None) -> int | str | None:
        """0-based outline level, "title", or None; the nearest style that decides wins.

        A style id that is not defined at all (styles part lost) is judged by the id alone.
        """
        chain = list(self.chain(style_id))
        if not chain and style_id:
            chain = [(style_id, _Style(style_id.lower(), None, None, None, None))]
        for sid, style in chain:
            if style.outline_level is not None:
                return style.outline_level if 0 <= style.outline_level <= 8 else None
            match = re.fullmatch(r"heading\s*([1-9])", style.name) or re.fullmatch(
                r"heading([1-9])", sid.lower()
            )
            if match:
                return int(match.group(1)) - 1
            if style.name == "title" or sid == "Title":
                return "title"
        return None

    def named(self, style_id: str | None, pattern: str) -> bool:
        """Whether the style or an ancestor has a (built-in, English) name matching `pattern`."""
        return any(re.fullmatch(pattern, style.name) for _, style in self.chain(style_id))

    def numbering(self, style_id: str | None) -> tuple[int | None, int | None]:
        """(numId, ilvl) inherited from the style chain."""
        num_id: int | None = None
        ilvl: int | None = None
        for _, style in self.chain(style_id):
            if num_id is None and style.num_id is not None:
                num_id = style.num_id
            if ilvl is None and style.ilvl is not None:
                ilvl = style.ilvl
        return num_id, ilvl


# --------------------------------------------------------------------------------------------
# Numbering


@dataclass(frozen=True)
class _Level:
    start: int
    fmt: str
    text: str
    restart: int | None
    legal: bool
    suffix: str
    style_id: str | None


def _parse_level(lvl: etree._Element) -> _Level:
    suff = _val(lvl.find(_w("suff"))) or "tab"
    return _Level(
        start=_int(_val(lvl.find(_w("start"))), 1) or 0,
        fmt=_val(lvl.find(_w("numFmt"))) or "decimal",
        text=_val(lvl.find(_w("lvlText"))) or "",
        restart=_int(_val(lvl.find(_w("lvlRestart")))),
        legal=_on(lvl.find(_w("isLgl"))),
        suffix="" if suff == "nothing" else " ",
        style_id=_val(lvl.find(_w("pStyle"))),
    )


class _Numbering:
    """Counters for automatic numbering, advanced for every numbered paragraph in order.

    Word keeps one counter set per abstract definition (list instances that share it continue
    each other) unless an instance overrides start values. Levels that were skipped take their
    start value when a deeper level is shown, and later count on from it (what Word and the
    corpus ground truth show: "2", "2.1.1", then "2.2").
    """

    def __init__(self, root: etree._Element | None, styles: _Styles) -> None:
        self._abstract: dict[str, dict[int, _Level]] = {}
        self._abstract_link: dict[str, str] = {}
        self._nums: dict[int, tuple[str, dict[int, _Level], dict[int, int]]] = {}
        self._counters: dict[str, dict[int, int]] = {}
        self._styles = styles
        if root is None:
            return
        for abstract in root.iterchildren(_w("abstractNum")):
            aid = abstract.get(_w("abstractNumId")) or ""
            levels: dict[int, _Level] = {}
            for lvl in abstract.iterchildren(_w("lvl")):
                ilvl = _int(lvl.get(_w("ilvl")))
                if ilvl is not None:
                    levels[ilvl] = _parse_level(lvl)
            self._abstract[aid] = levels
            link = _val(abstract.find(_w("numStyleLink")))
            if link:
                self._abstract_link[aid] = link
        for num in root.iterchildren(_w("num")):
            num_id = _int(num.get(_w("numId")))
            num_aid = _val(num.find(_w("abstractNumId")))
            if num_id is None or num_aid is None:
                continue
            lvl_over: dict[int, _Level] = {}
            start_over: dict[int, int] = {}
            for over in num.iterchildren(_w("lvlOverride")):
                ilvl = _int(over.get(_w("ilvl")))
                if ilvl is None:
                    continue
                start = _int(_val(over.find(_w("startOverride"))))
                if start is not None:
                    start_over[ilvl] = start
                override = over.find(_w("lvl"))
                if override is not None:
                    lvl_over[ilvl] = _parse_level(override)
            self._nums[num_id] = (num_aid, lvl_over, start_over)

    def _levels(self, aid: str, depth: int = 0) -> dict[int, _Level]:
        levels = self._abstract.get(aid, {})
        link = self._abstract_link.get(aid)
        if not levels and link and depth < 4:
            num_id, _ = self._styles.numbering(link)
            if num_id is not None and num_id in self._nums:
                return self._levels(self._nums[num_id][0], depth + 1)
        return levels

    def is_list(self, num_id: int | None) -> bool:
        return num_id is not None and num_id != 0 and num_id in self._nums

    def advance(self, num_id: int, ilvl: int | None, style_id: str | None) -> str:
        """Count one paragraph of list `num_id` and return its rendered label ("" if none)."""
        aid, lvl_over, start_over = self._nums[num_id]
        levels = {**self._levels(aid), **lvl_over}
        if not levels:
            return ""
        if ilvl is None:
            ilvl = next((i for i, lv in levels.items() if lv.style_id == style_id), 0)
        ilvl = max(0, min(ilvl, 8))
        key = f"num:{num_id}" if start_over or lvl_over else f"abstract:{aid}"
        counters = self._counters.setdefault(key, {})

        def start(i: int) -> int:
            if i in start_over:
                return start_over[i]
            lv = levels.get(i)
            return lv.start if lv is not None else 1

        counters[ilvl] = counters[ilvl] + 1 if ilvl in counters else start(ilvl)
        for deeper in [i for i in counters if i > ilvl]:
            restart = levels[deeper].restart if deeper in levels else None
            if restart is None or (restart != 0 and ilvl < restart):
                del counters[deeper]
        level = levels.get(ilvl)
        if level is None or level.fmt in ("bullet", "none") or not level.text:
            return ""

        def render(match: re.Match[str]) -> str:
            i = int(match.group(1)) - 1
            if i > ilvl:
                return ""
            if i not in counters:
                counters[i] = start(i)
            lv = levels.get(i)
            fmt = "decimal" if level.legal or lv is None else lv.fmt
            return _format_number(counters[i], fmt)

        label = re.sub(r"%([1-9])", render, level.text).strip()
        return label + level.suffix if label else ""


def _format_number(n: int, fmt: str) -> str:
    if fmt in ("lowerLetter", "upperLetter") and n > 0:
        letter = chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)
        return letter.upper() if fmt == "upperLetter" else letter
    if fmt in ("lowerRoman", "upperRoman") and 0 < n < 4000:
        roman = _roman(n)
        return roman if fmt == "upperRoman" else roman.lower()
    if fmt == "decimalZero":
        return f"{n:02d}"
    if fmt == "none":
        return ""
    return str(n)


def _roman(n: int) -> str:
    out = []
    for value, sym in (
        (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
        (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
    ):  # fmt: skip
        while n >= value:
            out.append(sym)
            n -= value
    return "".join(out)


# --------------------------------------------------------------------------------------------
# Paragraph text


@dataclass(frozen=True)
class _ImageRef:
    rel_id: str
    alt: str


@dataclass
class _Field:
    instr: str = ""
    result_start: int | None = None


@dataclass
class _Inline:
    """What one paragraph holds: its text, link offsets, images and text boxes, in order."""

    parts: list[str] = field(default_factory=list)
    length: int = 0
    links: list[tuple[int, int, str]] = field(default_factory=list)
    images: list[_ImageRef] = field(default_factory=list)
    textboxes: list[etree._Element] = field(default_factory=list)
    fields: list[_Field] = field(default_factory=list)

    def add(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.length += len(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _hyperlink_instr(instr: str) -> str | None:
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


class _Reader:
    """Shared state of one parse: package relationships, styles, numbering and the context."""

    def __init__(self, ctx: ParseContext, document: Any) -> None:
        self.ctx = ctx
        self.part = document.part
        self.styles = _Styles(self._related_root(_RT_STYLES))
        self.numbering = _Numbering(self._related_root(_RT_NUMBERING), self.styles)
        self.body = cast("etree._Element", document.element.body)
        self.title_offset = 1 if self._has_title() else 0

    # -- package -------------------------------------------------------------------------

    def _related_root(self, reltype_suffix: str) -> etree._Element | None:
        for rel in self.part.rels.values():
            if rel.is_external or not str(rel.reltype).endswith(reltype_suffix):
                continue
            target = rel.target_part
            element = getattr(target, "element", None)
            if isinstance(element, etree._Element):
                return element
            try:
                return etree.fromstring(target.blob)
            except etree.XMLSyntaxError:
                self.ctx.diagnostics.add(
                    "parse", "docx.part_unreadable", f"{reltype_suffix} unreadable"
                )
                return None
        return None

    def link_target(self, rel_id: str) -> str | None:
        rel = self.part.rels.get(rel_id)
        return str(rel.target_ref) if rel is not None else None

    def image_bytes(self, rel_id: str) -> bytes | None:
        """The embedded picture's bytes; None (with a diagnostic) when it is not in the file."""
        rel = self.part.rels.get(rel_id)
        if rel is None or rel.is_external:
            what = "missing from the file" if rel is None else "linked, not embedded"
            self.ctx.diagnostics.add(
                "parse", "image.unavailable", f"an image is {what}; skipped", lost="image"
            )
            return None
        with self.ctx.part(
            "image", "an image could not be read from the file; skipped", code="image.unreadable"
        ) as part:
            blob = rel.target_part.blob
        return blob if not part.failed and isinstance(blob, bytes) else None

    def _has_title(self) -> bool:
        """Title-styled text exists: it becomes level 1 and "Heading N" level N+1."""
        for p in self.body.iter(_w("p")):
            if self.styles.heading(self.style_id(p)) != "title":
                continue
            if "".join(t.text or "" for t in p.iter(_w("t"))).strip():
                return True
        return False

    # -- paragraphs ----------------------------------------------------------------------

    @staticmethod
    def style_id(p: etree._Element) -> str | None:
        return _val(p.find(f"{_w('pPr')}/{_w('pStyle')}"))

    def inline(self, p: etree._Element) -> _Inline:
        out = _Inline()
        self._walk_inline(p, out)
        return out

    def _walk_inline(self, el: etree._Element, out: _Inline) -> None:
        for child in el.iterchildren():
            name = _local(child)
            ns = _ns(child)
            if ns == _MC_NS:
                if name == "AlternateContent":
                    choice = child.find(f"{{{_MC_NS}}}Choice")
                    if choice is not None:
                        self._walk_inline(choice, out)
                continue
            if ns == _M_NS:
                if name == "t":
                    out.add(child.text or "")
                else:
                    self._walk_inline(child, out)
                continue
            if ns != _W_NS:
                self._walk_inline(child, out)
                continue
            if (
                name in ("pPr", "rPr", "sdtPr", "sdtEndPr", "instrText", "delText")
                or name in _DELETED
            ):
                if name == "instrText" and out.fields:
                    out.fields[-1].instr += child.text or ""
                continue
            if name == "t":
                out.add(child.text or "")
            elif name == "tab" or name == "ptab":
                out.add("\t")
            elif name in ("br", "cr"):
                out.add("\n")
            elif name == "noBreakHyphen":
                out.add("-")
            elif name == "fldChar":
                self._field_char(child, out)
            elif name == "hyperlink":
                start = out.length
                self._walk_inline(child, out)
                target = self._hyperlink_target(child)
                if target and out.length > start:
                    out.links.append((start, out.length, target))
            elif name == "fldSimple":
                start = out.length
                self._walk_inline(child, out)
                target = _hyperlink_instr(child.get(_w("instr")) or "")
                if target and out.length > start:
                    out.links.append((start, out.length, target))
            elif name in ("drawing", "pict", "object"):
                self._graphics(child, out, alt="")
            elif name == "txbxContent":
                out.textboxes.append(child)
            else:
                self._walk_inline(child, out)

    def _field_char(self, el: etree._Element, out: _Inline) -> None:
        kind = el.get(_w("fldCharType"))
        if kind == "begin":
            out.fields.append(_Field())
        elif kind == "separate" and out.fields:
            out.fields[-1].result_start = out.length
        elif kind == "end" and out.fields:
            fld = out.fields.pop()
            target = _hyperlink_instr(fld.instr)
            if target and fld.result_start is not None and out.length > fld.result_start:
                out.links.append((fld.result_start, out.length, target))

    def _hyperlink_target(self, el: etree._Element) -> str | None:
        rel_id = el.get(f"{{{_R_NS}}}id")
        anchor = el.get(_w("anchor"))
        url = self.link_target(rel_id) if rel_id else None
        if url and anchor:
            return f"{url}#{anchor}"
        if url:
            return url
        return f"#{anchor}" if anchor else None

    def _graphics(self, el: etree._Element, out: _Inline, alt: str) -> None:
        """Images (DrawingML blips, VML imagedata) and text boxes inside a drawing."""
        for child in el.iterchildren():
            name = _local(child)
            ns = _ns(child)
            if ns == _MC_NS and name == "Fallback":
                continue  # the same picture again, for older readers
            if ns == _W_NS and name == "txbxContent":
                out.textboxes.append(child)
                continue
            child_alt = alt
            if ns == _WP_NS and name in ("inline", "anchor"):
                doc_pr = child.find(f"{{{_WP_NS}}}docPr")
                if doc_pr is not None:
                    child_alt = doc_pr.get("descr") or doc_pr.get("title") or ""
            elif ns == _PIC_NS and name == "pic" and not alt:
                c_nv = child.find(f"{{{_PIC_NS}}}nvPicPr/{{{_PIC_NS}}}cNvPr")
                if c_nv is not None:
                    child_alt = c_nv.get("descr") or c_nv.get("title") or ""
            elif ns == _V_NS and name == "shape":
                child_alt = alt or child.get("alt") or ""
            if ns == _A_NS and name == "blip":
                rel_id = child.get(f"{{{_R_NS}}}embed")
                if rel_id:
                    out.images.append(_ImageRef(rel_id, child_alt))
                elif child.get(f"{{{_R_NS}}}link"):
                    self.ctx.diagnostics.add("parse", "image.linked", "linked image skipped")
                continue
            if ns == _V_NS and name == "imagedata":
                rel_id = child.get(f"{{{_R_NS}}}id")
                if rel_id:
                    out.images.append(
                        _ImageRef(rel_id, child_alt or child.get(f"{{{_O_NS}}}title") or "")
                    )
                continue
            self._graphics(child, out, child_alt)

    def label(self, p: etree._Element) -> tuple[bool, str]:
        """(is numbered, rendered label); advances the list counters in document order."""
        numpr = p.find(f"{_w('pPr')}/{_w('numPr')}")
        direct_id = _int(_val(numpr.find(_w("numId")))) if numpr is not None else None
        direct_lvl = _int(_val(numpr.find(_w("ilvl")))) if numpr is not None else None
        style_id = self.style_id(p)
        style_num, style_lvl = self.styles.numbering(style_id)
        if direct_id == 0:
            return False, ""  # numbering explicitly removed
        num_id = direct_id if direct_id is not None else style_num
        ilvl = direct_lvl if direct_lvl is not None else style_lvl
        if num_id is None or not self.numbering.is_list(num_id):
            return False, ""
        return True, self.numbering.advance(num_id, ilvl, style_id)

    def heading_level(self, p: etree._Element) -> int | None:
        """1-based heading level from direct outline level or the style chain, else None."""
        direct = _int(_val(p.find(f"{_w('pPr')}/{_w('outlineLvl')}")))
        kind: int | str | None
        if direct is not None:
            kind = direct if 0 <= direct <= 8 else None
        else:
            kind = self.styles.heading(self.style_id(p))
        if kind is None:
            return None
        if kind == "title":
            return 1
        return min(9, int(kind) + 1 + self.title_offset)


# --------------------------------------------------------------------------------------------
# Text normalisation


def _normalise(
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
        e = min(pos[min(end, len(text))], len(result))
        while s < e and result[s].isspace():
            s += 1
        while e > s and result[e - 1].isspace():
            e -= 1
        if e > s:
            spans.append(LinkSpan(start=s, end=e, target=target))
    return result, spans


# --------------------------------------------------------------------------------------------
# Body traversal


class _Locator:
    """Builds `body/sdt[0]/p[2]`-style paths: per-container, per-tag 0-based indexes."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._counts: dict[str, int] = {}

    def next(self, tag: str) -> str:
        index = self._counts.get(tag, 0)
        self._counts[tag] = index + 1
        return f"{self.prefix}/{tag}[{index}]"


def _is_toc_sdt(sdt: etree._Element) -> bool:
    gallery = sdt.find(f"{_w('sdtPr')}/{_w('docPartObj')}/{_w('docPartGallery')}")
    return "table of contents" in (_val(gallery) or "").lower()


def _children(el: etree._Element, tag: str) -> Iterator[etree._Element]:
    """Direct `w:{tag}` children, looking through wrapper elements (sdt, customXml, ins)."""
    for child in el.iterchildren():
        name = _local(child)
        if _ns(child) != _W_NS or name in _DELETED:
            continue
        if name == tag:
            yield child
        elif name in _WRAPPERS or name == "sdt":
            inner = child.find(_w("sdtContent")) if name == "sdt" else child
            if inner is not None:
                yield from _children(inner, tag)


@dataclass
class _PlacedCell:
    """A `w:tc` at its grid column; `consumed` marks a vMerge continuation (not emitted)."""

    col: int
    span: int
    merge: str | None
    text: str
    rowspan: int = 1
    consumed: bool = False


class _BodyWalker:
    def __init__(self, reader: _Reader) -> None:
        self.r = reader
        self.ctx = reader.ctx

    def blocks(self, container: etree._Element, loc: _Locator, in_toc: bool) -> None:
        for child in container.iterchildren():
            name = _local(child)
            ns = _ns(child)
            if ns == _MC_NS and name == "AlternateContent":
                choice = child.find(f"{{{_MC_NS}}}Choice")
                if choice is not None:
                    self.blocks(choice, loc, in_toc)
                continue
            if ns != _W_NS or name in _DELETED:
                continue
            if name == "p":
                with self.ctx.part(
                    "paragraph", "a paragraph could not be read; skipped", code="paragraph.failed"
                ):
                    self.paragraph(child, loc.next("p"), in_toc)
            elif name == "tbl":
                with self.ctx.part(
                    "table", "a table could not be read; skipped", code="table.failed"
                ):
                    self.table(child, loc.next("tbl"))
            elif name == "sdt":
                content = child.find(_w("sdtContent"))
                if content is not None:
                    self.blocks(content, _Locator(loc.next("sdt")), in_toc or _is_toc_sdt(child))
            elif name in _WRAPPERS:
                self.blocks(child, _Locator(loc.next(name)), in_toc)

    def paragraph(self, p: etree._Element, where: str, in_toc: bool) -> None:
        inline = self.r.inline(p)
        numbered, label = self.r.label(p)
        style_id = self.r.style_id(p)
        styles = self.r.styles
        level = None if in_toc else self.r.heading_level(p)
        row_type = RowType.PARAGRAPH
        if in_toc or styles.named(style_id, r"toc( heading|\s*\d)"):
            row_type = RowType.TOC
        elif level is not None:
            row_type = RowType.HEADING
        elif styles.named(style_id, r"caption"):
            row_type = RowType.CAPTION
        elif numbered or (styles.named(style_id, r"list\b.*") and not self._numbering_removed(p)):
            row_type = RowType.LIST_ITEM
        single_line = row_type in (RowType.HEADING, RowType.TOC)
        text, links = _normalise(inline.text, inline.links, single_line)
        if text and row_type is RowType.HEADING and label:
            shift = len(label)
            text = label + text
            links = [
                LinkSpan(start=s.start + shift, end=s.end + shift, target=s.target) for s in links
            ]
        if text:
            self.ctx.emit(row_type, text, where, heading_level=level, links=links)
        self.images(inline.images, where)
        for i, box in enumerate(inline.textboxes):
            self.blocks(box, _Locator(f"{where}/txbx[{i}]"), in_toc)

    @staticmethod
    def _numbering_removed(p: etree._Element) -> bool:
        return _val(p.find(f"{_w('pPr')}/{_w('numPr')}/{_w('numId')}")) == "0"

    def images(self, refs: list[_ImageRef], where: str) -> None:
        for i, ref in enumerate(refs):
            data = self.r.image_bytes(ref.rel_id)
            if data:
                self.ctx.emit_image(data, ref.alt, f"{where}/img[{i}]")

    def table(self, tbl: etree._Element, where: str) -> None:
        images: list[_ImageRef] = []
        grid = self.grid(tbl, images)
        self.ctx.emit_table(grid, where)
        self.images(images, where)

    def grid(self, tbl: etree._Element, images: list[_ImageRef]) -> TableGrid:
        """Word rows/cells → anchored grid cells with rowspan/colspan.

        Cells are placed by grid column (gridBefore + preceding gridSpans) so a vMerge
        continuation is matched to the cell above it in the same column, not by cell index.
        """
        rows = list(_children(tbl, "tr"))
        placed: list[list[_PlacedCell]] = []
        header_rows = 0
        counting_header = True
        for tr in rows:
            tr_pr = tr.find(_w("trPr"))
            before = _int(_val(tr_pr.find(_w("gridBefore"))) if tr_pr is not None else None, 0)
            col = max(before or 0, 0)
            if counting_header and tr_pr is not None and _on(tr_pr.find(_w("tblHeader"))):
                header_rows += 1
            else:
                counting_header = False
            cells: list[_PlacedCell] = []
            for tc in _children(tr, "tc"):
                tc_pr = tc.find(_w("tcPr"))
                span = max(
                    _int(_val(tc_pr.find(_w("gridSpan"))) if tc_pr is not None else None, 1) or 1, 1
                )
                v_merge = tc_pr.find(_w("vMerge")) if tc_pr is not None else None
                h_merge = tc_pr.find(_w("hMerge")) if tc_pr is not None else None
                text = self.cell_text(tc, images)
                if h_merge is not None and _val(h_merge) != "restart" and cells:
                    # legacy horizontal merge: this cell widens the one on its left
                    cells[-1].span += span
                    cells[-1].text = "\n".join(t for t in (cells[-1].text, text) if t)
                else:
                    merge = None if v_merge is None else (_val(v_merge) or "continue")
                    cells.append(_PlacedCell(col, span, merge, text))
                col += span
            placed.append(cells)

        for r, cells in enumerate(placed):
            for cell in cells:
                if cell.merge != "restart":
                    continue
                for below in placed[r + 1 :]:
                    match = next((c for c in below if c.col == cell.col), None)
                    if match is None or match.merge != "continue":
                        break
                    match.consumed = True
                    cell.rowspan += 1

        if header_rows == 0 and len(rows) > 1:
            header_rows = 1
        r = 0
        while r < min(header_rows, len(placed)):  # a header cell's rowspan pulls rows into the head
            header_rows = max([header_rows] + [r + c.rowspan for c in placed[r] if not c.consumed])
            r += 1

        builder = GridBuilder(max_rows=len(rows))
        for r, cells in enumerate(placed):
            head = r < header_rows
            for _ in range(cells[0].col if cells else 0):  # gridBefore: empty leading cells
                builder.add(r, "", header=head)
            for cell in cells:
                if not cell.consumed:
                    builder.add(r, cell.text, cell.rowspan, cell.span, header=head)
        return builder.build(header_rows=header_rows)

    def cell_text(self, tc: etree._Element, images: list[_ImageRef]) -> str:
        """A cell's paragraphs as lines; nested tables flattened into rows of ' | '-joined text."""
        lines: list[str] = []
        self._cell_blocks(tc, lines, images)
        return "\n".join(line for line in lines if line)

    def _cell_blocks(
        self, container: etree._Element, lines: list[str], images: list[_ImageRef]
    ) -> None:
        for child in container.iterchildren():
            name = _local(child)
            if _ns(child) != _W_NS or name in _DELETED or name == "tcPr":
                continue
            if name == "p":
                inline = self.r.inline(child)
                self.r.label(child)  # keep list counters in document order
                text, _ = _normalise(inline.text, [], single_line=False)
                lines.append(text)
                images.extend(inline.images)
                for box in inline.textboxes:
                    self._cell_blocks(box, lines, images)
            elif name == "tbl":
                lines.append(self.grid(child, images).to_text())
            elif name == "sdt":
                content = child.find(_w("sdtContent"))
                if content is not None:
                    self._cell_blocks(content, lines, images)
            elif name in _WRAPPERS:
                self._cell_blocks(child, lines, images)


# --------------------------------------------------------------------------------------------
# Entry point


def _open(path: Path, ctx: ParseContext) -> Any:
    """Open the package, turning every low-level failure into a `CorruptDocumentError`.

    python-docx refuses a package in which any relationship points at a missing part (a lost
    image, say); such files are re-opened with those dangling relationships removed, so one
    broken picture does not cost the whole document.
    """
    if not path.is_file():
        raise FileNotFoundError(path)
    if not zipfile.is_zipfile(path):
        raise CorruptDocumentError("docx", "not a zip archive (truncated or not a DOCX file)")
    try:
        return _load(path)
    except KeyError as exc:
        missing = str(exc.args[0]) if exc.args else "a package part"
        try:
            data, dropped = _without_dangling_rels(path)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, etree.XMLSyntaxError) as err:
            raise CorruptDocumentError(
                "docx", f"unreadable archive ({type(err).__name__})"
            ) from err
        if not dropped:
            raise CorruptDocumentError("docx", f"missing package part: {missing}") from exc
        try:
            document = _load(io.BytesIO(data))
        except KeyError as again:
            raise CorruptDocumentError("docx", f"missing package part: {missing}") from again
        ctx.diagnostics.add(
            "parse",
            "docx.missing_parts",
            f"{len(dropped)} part(s) the document refers to (images, mostly) are missing from "
            "the file; their references were dropped",
            lost="package part",
        )
        return document


def _load(source: Path | io.BytesIO) -> Any:
    """python-docx open; every failure but KeyError (missing part) becomes CorruptDocumentError."""
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        return docx.Document(str(source) if isinstance(source, Path) else source)
    except PackageNotFoundError as exc:
        raise CorruptDocumentError("docx", "no Word package in the archive") from exc
    except etree.XMLSyntaxError as exc:
        raise CorruptDocumentError("docx", f"malformed XML: {exc.msg}") from exc
    except ValueError as exc:
        raise CorruptDocumentError(
            "docx", "not a Word document (its main part has another content type)"
        ) from exc
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise CorruptDocumentError("docx", f"unreadable archive ({type(exc).__name__})") from exc
    except (AttributeError, TypeError) as exc:
        # python-docx reads package XML of the wrong shape (a [Content_Types].xml without its
        # namespace, say) into elements without the expected children, and fails on them
        raise CorruptDocumentError(
            "docx", f"malformed package part ({type(exc).__name__})"
        ) from exc


def _without_dangling_rels(path: Path) -> tuple[bytes, list[str]]:
    """A copy of the package whose .rels files only point at parts that exist."""
    dropped: list[str] = []
    buffer = io.BytesIO()
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zout:
        names = set(zin.namelist())
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith(".rels"):
                data = _prune_rels(info.filename, data, names, dropped)
            zout.writestr(info, data)
    return buffer.getvalue(), dropped


def _prune_rels(rels_name: str, data: bytes, names: set[str], dropped: list[str]) -> bytes:
    root = etree.fromstring(data)
    # "word/_rels/document.xml.rels" describes "word/document.xml": targets are relative to "word/"
    base = posixpath.dirname(posixpath.dirname(rels_name))
    changed = False
    for rel in list(root):
        target = rel.get("Target") or ""
        if rel.get("TargetMode") == "External" or not target:
            continue
        resolved = target.lstrip("/") if target.startswith("/") else posixpath.join(base, target)
        resolved = posixpath.normpath(unquote(resolved))
        if resolved not in names:
            root.remove(rel)
            dropped.append(resolved)
            changed = True
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8") if changed else data


def parse_docx(ctx: ParseContext) -> None:
    """Emit the document body's blocks in source order (see the module docstring for why)."""
    document = _open(ctx.source_path, ctx)
    ctx.declared_title = document.core_properties.title or None
    core = document.core_properties
    ctx.declared_date = declared_office_date(core.created, core.modified)
    reader = _Reader(ctx, document)
    _BodyWalker(reader).blocks(reader.body, _Locator("body"), in_toc=False)
