"""Automatic numbering: list labels ("2.1.1", "a)", "iv.") counted as Word counts them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

from corpus_pipeline.parsing.docx.ooxml import int_value, is_on, val, w
from corpus_pipeline.parsing.docx.styles import Styles


@dataclass(frozen=True)
class Level:
    start: int
    fmt: str
    text: str
    restart: int | None
    legal: bool
    suffix: str
    style_id: str | None


def _parse_level(lvl: etree._Element) -> Level:
    suff = val(lvl.find(w("suff"))) or "tab"
    return Level(
        start=int_value(val(lvl.find(w("start"))), 1) or 0,
        fmt=val(lvl.find(w("numFmt"))) or "decimal",
        text=val(lvl.find(w("lvlText"))) or "",
        restart=int_value(val(lvl.find(w("lvlRestart")))),
        legal=is_on(lvl.find(w("isLgl"))),
        suffix="" if suff == "nothing" else " ",
        style_id=val(lvl.find(w("pStyle"))),
    )


class Numbering:
    """Counters for automatic numbering, advanced for every numbered paragraph in order.

    Word keeps one counter set per abstract definition (list instances that share it continue
    each other) unless an instance overrides start values. Levels that were skipped take their
    start value when a deeper level is shown, and later count on from it (what Word and the
    corpus ground truth show: "2", "2.1.1", then "2.2").
    """

    def __init__(self, root: etree._Element | None, styles: Styles) -> None:
        self._abstract: dict[str, dict[int, Level]] = {}
        self._abstract_link: dict[str, str] = {}
        self._nums: dict[int, tuple[str, dict[int, Level], dict[int, int]]] = {}
        self._counters: dict[str, dict[int, int]] = {}
        self._styles = styles
        if root is None:
            return
        for abstract in root.iterchildren(w("abstractNum")):
            aid = abstract.get(w("abstractNumId")) or ""
            levels: dict[int, Level] = {}
            for lvl in abstract.iterchildren(w("lvl")):
                ilvl = int_value(lvl.get(w("ilvl")))
                if ilvl is not None:
                    levels[ilvl] = _parse_level(lvl)
            self._abstract[aid] = levels
            link = val(abstract.find(w("numStyleLink")))
            if link:
                self._abstract_link[aid] = link
        for num in root.iterchildren(w("num")):
            num_id = int_value(num.get(w("numId")))
            num_aid = val(num.find(w("abstractNumId")))
            if num_id is None or num_aid is None:
                continue
            lvl_over: dict[int, Level] = {}
            start_over: dict[int, int] = {}
            for over in num.iterchildren(w("lvlOverride")):
                ilvl = int_value(over.get(w("ilvl")))
                if ilvl is None:
                    continue
                start = int_value(val(over.find(w("startOverride"))))
                if start is not None:
                    start_over[ilvl] = start
                override = over.find(w("lvl"))
                if override is not None:
                    lvl_over[ilvl] = _parse_level(override)
            self._nums[num_id] = (num_aid, lvl_over, start_over)

    def _levels(self, aid: str, depth: int = 0) -> dict[int, Level]:
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
