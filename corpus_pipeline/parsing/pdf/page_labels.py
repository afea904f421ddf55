"""Printed page labels: the number a reader sees on a page, which is not its position in the file.

Users and agents cite pages as printed ("the table on page 28") while the file's 29th page holds
it (a cover, a table of contents or roman-numbered front matter come first). The label of each
physical page comes from the PDF's own /PageLabels when it declares them, else from the page
numbers printed in the header/footer bands: the offset between printed and physical numbers
that most numbered pages share is the document's numbering, and pages between its first and
last numbered page (a full-page figure without a footer) take their label from that offset.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pymupdf

_mupdf: Any = pymupdf  # PyMuPDF is only partly annotated

MIN_NUMBERED_PAGES = 3  # an offset seen on fewer pages is a coincidence (a year, a count)
MIN_SHARE = 0.5  # of the pages carrying a number in their bands


def printed_labels(
    page_count: int, marks: Mapping[int, Sequence[str]], declared: Sequence[str] = ()
) -> list[str]:
    """One label per physical page ('' where none): the declared labels when any is set, else
    the printed numbers (`marks`: physical page → numbers printed in its bands) that follow the
    document's dominant numbering. Labels equal to the physical number are kept too: they tell
    that the document is numbered from its first page."""
    if any(label.strip() for label in declared):
        return [label.strip() for label in declared][:page_count] + [""] * max(
            0, page_count - len(declared)
        )
    labels = [""] * page_count
    offset = _numbering_offset(marks)
    if offset is not None:
        agreeing = [p for p, numbers in marks.items() if str(p - offset) in numbers]
        first, last = min(agreeing), max(agreeing)
        for page in range(max(1, first), min(page_count, last) + 1):
            if page - offset >= 1:
                labels[page - 1] = str(page - offset)
    for page, numbers in marks.items():
        roman = [n for n in numbers if n and not n.isdigit()]
        if roman and not labels[page - 1] and 1 <= page <= page_count:
            labels[page - 1] = roman[0].lower()
    return labels


def _numbering_offset(marks: Mapping[int, Sequence[str]]) -> int | None:
    """physical − printed that most numbered pages agree on, if enough of them do."""
    offsets: Counter[int] = Counter()
    for page, numbers in marks.items():
        offsets.update({page - int(n) for n in numbers if n.isdigit()})
    if not offsets:
        return None
    numbered = sum(1 for numbers in marks.values() if any(n.isdigit() for n in numbers))
    offset, count = min(offsets.items(), key=lambda item: (-item[1], abs(item[0]), item[0]))
    if count < MIN_NUMBERED_PAGES or count < MIN_SHARE * numbered:
        return None
    return offset


def declared_labels(doc: Any) -> list[str]:
    """The page labels the PDF declares (/PageLabels), one per page; [] when it has none or
    they cannot be read (a damaged number tree is not worth failing the page for)."""
    try:
        rules = sorted(doc.get_page_labels(), key=lambda rule: rule["startpage"])
        labels = []
        for number in range(doc.page_count):
            active = [r for r in rules if r["startpage"] <= number]
            if not active:
                labels.append("")
                continue
            rule = active[-1]
            style = rule.get("style", "")
            value = number - rule["startpage"] + rule.get("firstpagenum", 1)
            value -= 1 if style in ("a", "A") else 0  # the alphabet counts from 0
            labels.append(str(_mupdf.utils.construct_label(style, rule.get("prefix", ""), value)))
        return labels
    except Exception:  # a malformed number tree only loses the labels
        return []
