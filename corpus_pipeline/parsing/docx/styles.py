"""Paragraph styles: heading levels, list numbering and names inherited along based-on chains."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from corpus_pipeline.parsing.docx.ooxml import int_value, val, w


@dataclass(frozen=True)
class Style:
    name: str
    based_on: str | None
    outline_level: int | None
    num_id: int | None
    ilvl: int | None


class Styles:
    """Paragraph styles with their based-on chains (headings and lists are often inherited)."""

    def __init__(self, root: etree._Element | None) -> None:
        self._styles: dict[str, Style] = {}
        self.default_id: str | None = None
        if root is None:
            return
        for st in root.iterchildren(w("style")):
            if st.get(w("type")) not in (None, "paragraph"):
                continue
            sid = st.get(w("styleId"))
            if not sid:
                continue
            if st.get(w("default")) in ("1", "true", "on"):
                self.default_id = sid
            ppr = st.find(w("pPr"))
            numpr = ppr.find(w("numPr")) if ppr is not None else None
            self._styles[sid] = Style(
                name=(val(st.find(w("name"))) or sid).strip().lower(),
                based_on=val(st.find(w("basedOn"))),
                outline_level=int_value(
                    val(ppr.find(w("outlineLvl"))) if ppr is not None else None
                ),
                num_id=int_value(val(numpr.find(w("numId")))) if numpr is not None else None,
                ilvl=int_value(val(numpr.find(w("ilvl")))) if numpr is not None else None,
            )

    def chain(self, style_id: str | None) -> Iterator[tuple[str, Style]]:
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
            chain = [(style_id, Style(style_id.lower(), None, None, None, None))]
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
