"""A PDF page's text read once per document: the profile's reads handed on to the parse.

Profiling a PDF reads the styled text blocks of up to 64 sampled pages (fonts, sizes, columns,
the table probe); the parse then reads every page again, and building a page's text is most of
the cost of reading it (a fifth of a 10-Q's parse time); on the pages its table probe flags,
the probe's words and drawings are what the table finder reads next. The reads travel with the
file's profile (`keep`: the `DocumentProfile` the pipeline hands from the profile step to the
parse), marked with the file they were read from (resolved path, size, modification time: a
replaced file never gets another file's reads); the parse takes them (`take`) instead of reading
those pages again — in this process, or in its worker process, which receives them with its job.
Reads are identical either way (the same `page_blocks` over the same `TEXT_FLAGS` text page), so
the artifacts do not change. MuPDF's messages while reading those pages (repaired objects, text
without position) travel with them, so the parse records what it would have seen reading them
itself. Each profile's reads are taken once, and go when the profile goes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus_pipeline.contracts import DocumentProfile
from corpus_pipeline.parsing.pdf.layout import Block

FileKey = tuple[str, int, int]

# Where the reads ride on the profile: an instance attribute, not a model field, so the
# profile's JSON, equality, hash and repr never see them; pickling (the parse worker's job)
# carries them.
_ON_PROFILE = "_pdf_page_reads"


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


def keep(profile: DocumentProfile, reads: PageReads) -> None:
    """Hand a file's page reads to its parse with its profile (nothing when there are none)."""
    if reads.source is None or not reads.blocks:
        return
    vars(profile)[_ON_PROFILE] = reads


def take(profile: DocumentProfile, path: Path | str) -> PageReads:
    """The page reads the profile carries for the file at `path`, removed from it (empty when
    there are none, or when they were read from another file)."""
    reads = vars(profile).pop(_ON_PROFILE, None)
    if not isinstance(reads, PageReads) or reads.source is None:
        return PageReads()
    if reads.source != file_key(path):
        return PageReads()
    return reads
