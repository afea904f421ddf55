"""A PDF page's text read once per document: the profile's reads handed on to the parse.

Profiling a PDF reads the styled text blocks of up to 64 sampled pages (fonts, sizes, columns,
the table probe); the parse then reads every page again, and building a page's text is most of
the cost of reading it (a fifth of a 10-Q's parse time); on the pages its table probe flags,
the probe's words and drawings are what the table finder reads next. The profile keeps its
reads here, keyed by the file (resolved path, size, modification time: a replaced file never gets another
file's reads); the parse takes them instead of reading those pages again — in this process, or
in its worker process, which receives them with its job. Reads are identical either way (the
same `page_blocks` over the same `TEXT_FLAGS` text page), so the artifacts do not change.
MuPDF's messages while reading those pages (repaired objects, text without position) travel
with them, so the parse records what it would have seen reading them itself. Bounded: the reads
of the last KEEP_FILES files only, each taken once.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus_pipeline.parsing.pdf.layout import Block

KEEP_FILES = 4

FileKey = tuple[str, int, int]


@dataclass
class PageReads:
    blocks: dict[int, list[Block]] = field(default_factory=dict)  # 1-based page → its blocks
    messages: list[str] = field(default_factory=list)  # MuPDF's, while reading them
    # The table probe's reads of the pages it flagged (`pdf_tables.PageView.reads`: words,
    # drawings, spans, blocks), so the finder reads none of them again.
    tables: dict[int, dict[str, Any]] = field(default_factory=dict)


_READS: OrderedDict[FileKey, PageReads] = OrderedDict()
_LOCK = threading.Lock()


def file_key(path: Path | str) -> FileKey | None:
    """The file's identity for its reads (None when it cannot be read)."""
    try:
        resolved = Path(path).resolve()
        stat = os.stat(resolved)
    except OSError:
        return None
    return (str(resolved), stat.st_size, stat.st_mtime_ns)


def keep(path: Path | str, reads: PageReads) -> None:
    """Keep a file's page reads for its parse (the oldest file's are dropped past KEEP_FILES)."""
    key = file_key(path)
    if key is None or not reads.blocks:
        return
    with _LOCK:
        _READS[key] = reads
        _READS.move_to_end(key)
        while len(_READS) > KEEP_FILES:
            _READS.popitem(last=False)


def take(path: Path | str) -> PageReads:
    """The file's kept page reads, removed from here (empty when there are none)."""
    key = file_key(path)
    if key is None:
        return PageReads()
    with _LOCK:
        return _READS.pop(key, None) or PageReads()
