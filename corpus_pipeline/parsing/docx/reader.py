"""The shared state of one DOCX parse (`DocxReader`): the package's relationships (images,
hyperlink targets), styles and numbering, and the reading of one paragraph: its inline content,
list label and heading level.
"""

from __future__ import annotations

from typing import Any, cast

from lxml import etree

from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.docx.inline import ComplexField, ImageRef, Inline, hyperlink_instr
from corpus_pipeline.parsing.docx.numbering import Numbering
from corpus_pipeline.parsing.docx.ooxml import (
    A_NS,
    DELETED,
    M_NS,
    MC_NS,
    O_NS,
    PIC_NS,
    R_NS,
    RT_NUMBERING,
    RT_STYLES,
    V_NS,
    W_NS,
    WP_NS,
    int_value,
    local_name,
    namespace,
    val,
    w,
)
from corpus_pipeline.parsing.docx.styles import Styles


class DocxReader:
    """Shared state of one parse: package relationships, styles, numbering and the context."""

    def __init__(self, ctx: ParseContext, document: Any) -> None:
        self.ctx = ctx
        self.part = document.part
        self.styles = Styles(self._related_root(RT_STYLES))
        self.numbering = Numbering(self._related_root(RT_NUMBERING), self.styles)
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
        for p in self.body.iter(w("p")):
            if self.styles.heading(self.style_id(p)) != "title":
                continue
            if "".join(t.text or "" for t in p.iter(w("t"))).strip():
                return True
        return False

    # -- paragraphs ----------------------------------------------------------------------

    @staticmethod
    def style_id(p: etree._Element) -> str | None:
        return val(p.find(f"{w('pPr')}/{w('pStyle')}"))

    def inline(self, p: etree._Element) -> Inline:
        out = Inline()
        self._walk_inline(p, out)
        return out

    def _walk_inline(self, el: etree._Element, out: Inline) -> None:
        for child in el.iterchildren():
            name = local_name(child)
            ns = namespace(child)
            if ns == MC_NS:
                if name == "AlternateContent":
                    choice = child.find(MC_NS("Choice"))
                    if choice is not None:
                        self._walk_inline(choice, out)
                continue
            if ns == M_NS:
                if name == "t":
                    out.add(child.text or "")
                else:
                    self._walk_inline(child, out)
                continue
            if ns != W_NS:
                self._walk_inline(child, out)
                continue
            if (
                name in ("pPr", "rPr", "sdtPr", "sdtEndPr", "instrText", "delText")
                or name in DELETED
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
                target = hyperlink_instr(child.get(w("instr")) or "")
                if target and out.length > start:
                    out.links.append((start, out.length, target))
            elif name in ("drawing", "pict", "object"):
                self._graphics(child, out, alt="")
            elif name == "txbxContent":
                out.textboxes.append(child)
            else:
                self._walk_inline(child, out)

    def _field_char(self, el: etree._Element, out: Inline) -> None:
        kind = el.get(w("fldCharType"))
        if kind == "begin":
            out.fields.append(ComplexField())
        elif kind == "separate" and out.fields:
            out.fields[-1].result_start = out.length
        elif kind == "end" and out.fields:
            fld = out.fields.pop()
            target = hyperlink_instr(fld.instr)
            if target and fld.result_start is not None and out.length > fld.result_start:
                out.links.append((fld.result_start, out.length, target))

    def _hyperlink_target(self, el: etree._Element) -> str | None:
        rel_id = el.get(R_NS("id"))
        anchor = el.get(w("anchor"))
        url = self.link_target(rel_id) if rel_id else None
        if url and anchor:
            return f"{url}#{anchor}"
        if url:
            return url
        return f"#{anchor}" if anchor else None

    def _graphics(self, el: etree._Element, out: Inline, alt: str) -> None:
        """Images (DrawingML blips, VML imagedata) and text boxes inside a drawing."""
        for child in el.iterchildren():
            name = local_name(child)
            ns = namespace(child)
            if ns == MC_NS and name == "Fallback":
                continue  # the same picture again, for older readers
            if ns == W_NS and name == "txbxContent":
                out.textboxes.append(child)
                continue
            child_alt = alt
            if ns == WP_NS and name in ("inline", "anchor"):
                doc_pr = child.find(WP_NS("docPr"))
                if doc_pr is not None:
                    child_alt = doc_pr.get("descr") or doc_pr.get("title") or ""
            elif ns == PIC_NS and name == "pic" and not alt:
                c_nv = child.find(f"{PIC_NS('nvPicPr')}/{PIC_NS('cNvPr')}")
                if c_nv is not None:
                    child_alt = c_nv.get("descr") or c_nv.get("title") or ""
            elif ns == V_NS and name == "shape":
                child_alt = alt or child.get("alt") or ""
            if ns == A_NS and name == "blip":
                rel_id = child.get(R_NS("embed"))
                if rel_id:
                    out.images.append(ImageRef(rel_id, child_alt))
                elif child.get(R_NS("link")):
                    self.ctx.diagnostics.add("parse", "image.linked", "linked image skipped")
                continue
            if ns == V_NS and name == "imagedata":
                rel_id = child.get(R_NS("id"))
                if rel_id:
                    out.images.append(ImageRef(rel_id, child_alt or child.get(O_NS("title")) or ""))
                continue
            self._graphics(child, out, child_alt)

    def label(self, p: etree._Element) -> tuple[bool, str]:
        """(is numbered, rendered label); advances the list counters in document order."""
        numpr = p.find(f"{w('pPr')}/{w('numPr')}")
        direct_id = int_value(val(numpr.find(w("numId")))) if numpr is not None else None
        direct_lvl = int_value(val(numpr.find(w("ilvl")))) if numpr is not None else None
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
        direct = int_value(val(p.find(f"{w('pPr')}/{w('outlineLvl')}")))
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
