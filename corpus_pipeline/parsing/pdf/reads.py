"""A PDF page's text read once per document: the profile's reads handed on to the parse.

Profiling a PDF reads the styled text blocks of up to 64 sampled pages (fonts, sizes, columns,
the table probe); the parse then reads every page again, and building a page's text is most of
the cost of reading it (a fifth of a 10-Q's parse time); on the pages its table probe flags,
the probe's words and drawings are what the table finder reads next. Profiling returns the
reads beside the profile (`profiling.Profiled`); the pipeline passes them to the parse
(`ParseContext.prior_reads`, and the parse worker's job), marked with the file they were read
from (resolved path, size, modification time: a replaced file never gets another file's
reads). The parse uses them (`usable`) instead of reading those pages again and removes what it
used. Reads are identical either way (the same `page_blocks` over the same `TEXT_FLAGS` text
page), so the artifacts do not change. MuPDF's messages while reading those pages (repaired
objects, text without position) travel with them, so the parse records what it would have seen
reading them itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus_pipeline.parsing.pdf.layout import Block

FileKey = tuple[str, int, int]


@dataclass
class PageReads:
    # The file they were read from (`file_key`); None: nothing to hand on.
    source: FileKey | None = None
    blocks: dict[int, list[Block]] = field(default_factory=dict)  # 1-based page → its blocks
    messages: list[str] = field(default_factory=list)  # MuPDF's, while reading them
    # The table probe's reads of the pages it flagged (`page_view.PageView.reads`: words,
    # drawings, spans, blocks), so the finder reads none of them again.
    tables: dict[int, dict[str, Any]] = field(default_factory=dict)


def file_key(path: Path | str) -> FileKey | None:
    """The file's identity for its reads (None when it cannot be read)."""
    try:
        resolved = Path(path).resolve()
        stat = os.stat(resolved)
    except OSError:
        return None
    return (str(resolved), stat.st_size, stat.st_mtime_ns)


def usable(prior: object, path: Path | str) -> PageReads:
    """The reads handed to the parse of the file at `path` (`ParseContext.prior_reads`), or
    empty ones when there are none, they are not a PDF's, or they were read from another file."""
    if not isinstance(prior, PageReads) or prior.source is None:
        return PageReads()
    if prior.source != file_key(path):
        return PageReads()
    return prior
