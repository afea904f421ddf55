"""Page references in a question: "the table on page 28", "slide 14", "the last page".

Readers cite pages the way they see them: by the number printed on the page (which a cover or
front matter shifts away from the page's position in the file), by position ("the first
page", "page two", "slide 11"), or from the end ("the last page"). A question that names a page
is answered on that page, whatever else its words match, so the classic search adds a page
channel: the chunks printed on a named page, ranked by the question's content words. Pure
functions below; the channel itself is in `query_service.retrieval.classic`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_PAGES = 10  # "pages 3-200" names a part of the document, not a page

_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
_UNIT = r"(?:pages?|pp?\.|slides?)"
_LABEL = r"\d{1,4}|[ivx]{1,6}\b|" + "|".join(_WORDS)
# "page 28", "pages 3-5", "pages 3 and 4", "page(1)", "p. 7", "slide 14", "page iv", "page two"
_NUMBERED = re.compile(
    rf"\b{_UNIT}\s*\(?\s*({_LABEL})\)?"
    rf"(?:\s*(?:-|–|to|through)\s*(\d{{1,4}})\b|((?:\s*(?:,|and|&)\s*\d{{1,4}}\b)+))?",
    re.IGNORECASE,
)
# "the first page", "2nd slide", "the second to last page", "the last page", "penultimate slide"
_ORDINAL = re.compile(
    r"\b(?:(" + "|".join(_ORDINALS) + r"|\d{1,2}(?:st|nd|rd|th))"
    r"(?:\s+(?:to|from)\s+(?:the\s+)?(last|final))?|last|final|penultimate)\s+(?:page|slide)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class PageReference:
    """The pages a question names: positions (1 = the first page), positions from the end
    (1 = the last page) and page numbers as printed ("28", "iv"; a page of a document that
    prints no numbers is labelled by its position)."""

    numbers: tuple[int, ...] = ()
    from_end: tuple[int, ...] = ()
    labels: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.numbers or self.from_end or self.labels)


def _ordinal(word: str) -> int:
    word = word.casefold()
    return _ORDINALS.get(word) or int(re.sub(r"\D", "", word))


def page_references(question: str) -> PageReference:
    """Every page the question names (see the module docstring); empty when it names none."""
    numbers: dict[int, None] = {}
    from_end: dict[int, None] = {}
    labels: dict[str, None] = {}
    for match in _NUMBERED.finditer(question):
        first, upto, more = match.group(1).casefold(), match.group(2), match.group(3)
        if first in _WORDS:
            numbers[_WORDS[first]] = None  # "page two": the second page, as a reader counts
            continue
        if not first.isdigit():
            labels[first] = None  # a roman page of front matter ("page iv")
            continue
        start = int(first)
        pages = [start]
        if upto and 0 <= int(upto) - start < MAX_PAGES:
            pages = list(range(start, int(upto) + 1))
        if more:
            pages += [int(n) for n in re.findall(r"\d+", more)]
        for page in pages[:MAX_PAGES]:
            labels[str(page)] = None
    for match in _ORDINAL.finditer(question):
        text = match.group(0).casefold()
        if match.group(1) and match.group(2):
            from_end[_ordinal(match.group(1)) if _ordinal(match.group(1)) > 1 else 2] = None
        elif match.group(1):
            numbers[_ordinal(match.group(1))] = None
        elif text.startswith("penultimate"):
            from_end[2] = None
        else:
            from_end[1] = None
    return PageReference(tuple(numbers), tuple(from_end), tuple(labels))


def page_phrases(question: str) -> list[str]:
    """The words by which the question names its pages ("page 28", "the last slide"), as
    written: inside the page channel they are already met, so they rank nothing there."""
    spans = [*_NUMBERED.finditer(question), *_ORDINAL.finditer(question)]
    return [m.group(0) for m in sorted(spans, key=lambda m: m.start())]
