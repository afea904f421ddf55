"""A document's title: what names it, for readers and for the search's path channel.

The title the file declares (PDF/Office metadata, HTML <title>) comes first when it reads like
a title: tools often leave a file name, an id ("0000320193-23-000077"), "Microsoft Word - x.doc"
or a placeholder there instead. Otherwise the first of the shallowest headings that names
something (not a generic part such as "Table of Contents", "1 Introduction" or "Index", not a
page number), else the file name.
"""

from __future__ import annotations

import re
from pathlib import Path

from corpus_pipeline.contracts import ParsedRow, RowType
from corpus_pipeline.finance.subject import cover_texts, registrant, sec_form

MAX_TITLE_CHARS = 200
GENERIC_PARTS = frozenset(
    {
        "abstract",
        "acknowledgements",
        "acknowledgments",
        "appendix",
        "contents",
        "cover",
        "executive summary",
        "foreword",
        "index",
        "introduction",
        "overview",
        "preface",
        "references",
        "summary",
        "table of contents",
        "title page",
        "untitled",
    }
)
_NUMBERING = re.compile(r"^(?:[0-9]+(?:\.[0-9]+)*\.?|[ivxlc]+\.|[a-z]\.)\s+", re.I)
_TOOL_PREFIX = re.compile(r"^microsoft (?:word|powerpoint|excel)\s*-\s*", re.I)
_FILE_NAME = re.compile(r"\.(?:docx?|pdf|pptx?|xlsx?|odt|rtf|txt|html?|indd|qxp)$", re.I)


def _key(text: str) -> str:
    return _NUMBERING.sub("", " ".join(text.split())).strip(" .:").casefold()


def generic(text: str) -> bool:
    """A part every document may have ("1 Introduction", "Table of Contents")."""
    return _key(text) in GENERIC_PARTS


def names_something(text: str) -> bool:
    """Not a generic part name, and mostly words (not an id, a date or a page number)."""
    letters = sum(ch.isalpha() for ch in text)
    return not generic(text) and letters >= 4 and letters >= 0.5 * len(text.replace(" ", ""))


def plausible_declared_title(text: str | None, source_file_name: str) -> str | None:
    """The declared title, normalised, when it names the document; else None."""
    title = " ".join((text or "").split())
    if not title or len(title) > MAX_TITLE_CHARS or _TOOL_PREFIX.match(title):
        return None
    if _FILE_NAME.search(title) or "_" in title or not names_something(title):
        return None
    if " " not in title and any(ch.isdigit() for ch in title):
        return None  # one code word: an id or a file name ("HHS2022B")
    stem = Path(source_file_name).stem
    if _key(title) in {_key(stem), _key(stem.replace("_", " ").replace("-", " "))}:
        return None  # the file name again
    return title


def filing_title(rows: list[ParsedRow]) -> str | None:
    """ "<registrant> Form <type>" from an SEC filing's cover page, or None when the document is
    not a filing (its cover names no registrant)."""
    cover = cover_texts(rows)
    name = registrant(cover)
    if name is None or not names_something(name):
        return None
    form = sec_form(cover)
    return f"{name} Form {form}" if form else name


def document_title(
    rows: list[ParsedRow], source_file_name: str, declared: str | None = None
) -> str:
    """The declared title if plausible, else an SEC filing's registrant and form, else the
    first non-generic shallowest heading, else the file name without extension."""
    title = plausible_declared_title(declared, source_file_name) or filing_title(rows)
    if title:
        return title
    headings = [
        r for r in rows if r.row_type is RowType.HEADING and r.heading_level and r.text.strip()
    ]
    for level in sorted({r.heading_level or 9 for r in headings}):
        for row in headings:
            if row.heading_level == level and names_something(row.text):
                return " ".join(row.text.split())[:MAX_TITLE_CHARS]
    return Path(source_file_name).stem
