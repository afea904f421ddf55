"""Recency: "the latest 10-Q" means the newest member of a series, not every member.

Periodic documents repeat each other's words (four quarterly filings of one company, annual
reports of ten years), so a question that asks for the latest one finds all of them equally.
When the question asks for the latest or most recent, chunks that occur only in a superseded
member of a series rank after every other hit, in their order. A series is the documents whose
file names are the same once digits and separators are dropped ("2023_Q3_AAPL.pdf" and
"2022_Q3_AAPL.pdf"; "2019-annual-performance-report.pdf" and "2022-…"); a member is
superseded when another member has a later document date (the uploader's, else the date the
file declares). Names with no word of three letters ("2303.05039v2.pdf") form no series.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import date
from pathlib import PurePosixPath

_LATEST = re.compile(r"\b(?:latest|most\s+recent|newest|most\s+current)\b", re.I)
_WORD = re.compile(r"[^\W\d_]+")
MIN_WORD = 3


def asks_for_latest(query: str) -> bool:
    """The question asks for the newest document of its kind."""
    return _LATEST.search(query) is not None


def series_key(source_file_name: str) -> str | None:
    """The series a file name belongs to: its folder and stem without digits and separators."""
    path = PurePosixPath(source_file_name)
    words = _WORD.findall(str(path.with_suffix("")).casefold())
    if not any(len(w) >= MIN_WORD for w in words):
        return None
    return " ".join(words)


def superseded(documents: Iterable[tuple[str, str, date | None]]) -> frozenset[str]:
    """Ids of the documents (id, source file name, date) that a later member of their series
    supersedes; undated documents are never superseded and supersede nothing."""
    series: dict[str, list[tuple[date, str]]] = defaultdict(list)
    for document_id, name, day in documents:
        key = series_key(name)
        if key is not None and day is not None:
            series[key].append((day, document_id))
    older: set[str] = set()
    for members in series.values():
        newest = max(day for day, _ in members)
        older.update(document_id for day, document_id in members if day < newest)
    return frozenset(older)
