"""A document's date when the uploader gave none: the one its file declares.

PDF info dictionaries carry `D:YYYYMMDDHHmmSS…` creation/modification stamps and Office core
properties carry `created`/`modified`. The creation date comes first (a re-save keeps it, and it
is when the content was issued); the modification date only when there is no creation date. A
stamp outside 1980 … next year is a tool's placeholder (1601, 1899, 2099), not a date.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

from corpus_pipeline.parsing.base import ParseContext, part_errors

_PDF_DATE = re.compile(r"^(?:D:)?(\d{4})(\d{2})?(\d{2})?")
_ISO_DATE = re.compile(r"^\s*(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?")
EARLIEST_YEAR = 1980


def plausible(day: date | None, today: date | None = None) -> date | None:
    """The date, unless it is a placeholder outside EARLIEST_YEAR … next year."""
    if day is None:
        return None
    latest = (today or date.today()).year + 1
    return day if EARLIEST_YEAR <= day.year <= latest else None


def pdf_date(stamp: str | None) -> date | None:
    """`D:20230804063012-04'00'` → 2023-08-04; missing month/day count as the first."""
    return _matched(_PDF_DATE.match((stamp or "").strip()))


def iso_date(stamp: str | None) -> date | None:
    """`2023`, `2023-04` or `2023-04-05[T…]` (ODF, EPUB metadata) → a date (missing month or
    day: the first); placeholders and junk → None."""
    return _matched(_ISO_DATE.match(stamp or ""))


def _matched(match: re.Match[str] | None) -> date | None:
    if match is None:
        return None
    year, month, day = (int(g) if g else 1 for g in match.groups())
    try:
        return plausible(date(year, month, day))
    except ValueError:
        return None


def declared_pdf_date(metadata: dict[str, str] | None) -> date | None:
    """The creation date of a PDF's info dictionary, else its modification date."""
    meta = metadata or {}
    return pdf_date(meta.get("creationDate")) or pdf_date(meta.get("modDate"))


def declared_office_date(created: datetime | None, modified: datetime | None) -> date | None:
    """An Office file's core `created` property, else `modified`."""
    for stamp in (created, modified):
        day = plausible(stamp.date() if stamp else None)
        if day is not None:
            return day
    return None


def declare_core_properties(ctx: ParseContext, package: Any) -> None:
    """Title and date from an OOXML package's core properties (python-docx / python-pptx). A
    properties part whose root is not the core-properties element has none of the accessors
    (AttributeError): only the title and the date are lost."""
    damage: tuple[type[BaseException], ...] = (AttributeError, *part_errors())
    try:
        core = package.core_properties
        title, created, modified = core.title, core.created, core.modified
    except damage as exc:
        message = "the document properties could not be read; no title or date declared"
        ctx.diagnostics.add(
            "parse", "core_properties.failed", message, lost="document properties", exception=exc
        )
        return
    ctx.declared_title = title or None
    ctx.declared_date = declared_office_date(created, modified)
