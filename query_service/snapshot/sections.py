"""The section trees and chunk rows of a revision's documents, as navigation reads them: read
once per revision and shared by its requests (a long filing's rows take longer to read than a
retrieval step takes to rank them); the MAX_CACHED_DOCUMENTS most recently used documents'
chunk rows are kept. Sections are keyed by id: two sections with the same title path are two
nodes of the tree."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from corpus_pipeline.contracts.published import CHUNKS, SECTIONS, quote
from query_service.snapshot.revision import Revision

MAX_CACHED_DOCUMENTS = 64

SectionPath = tuple[str, ...]
Sid = str  # a section's id in its document; "" = before the first heading


class SectionCache:
    """One revision's documents: their sections (by id, with each one's children) and chunk
    rows (by section and by chunk id), read when a document is first asked for."""

    def __init__(self, revision: Revision) -> None:
        self.revision = revision
        self._sections: dict[str, dict[Sid, dict[str, Any]]] = {}
        self._children: dict[str, dict[Sid, list[Sid]]] = {}
        self._chunks: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self._placed: dict[str, dict[Sid, list[dict[str, Any]]]] = {}
        self._by_id: dict[str, dict[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    @classmethod
    def of(cls, revision: Revision) -> SectionCache:
        """The revision's cache (one per revision, shared by every request on it)."""
        cache: SectionCache = revision.memo("agentic-documents", lambda: cls(revision))
        return cache

    def sections(self, document_id: str) -> dict[Sid, dict[str, Any]]:
        if document_id not in self._sections:
            rows = self.revision.rows(
                SECTIONS,
                f"document_id = {quote(document_id)}",
                ["section_id", "parent_id", "path", "title", "summary", "sort_order"],
            )
            rows.sort(key=lambda r: r["sort_order"])
            self._sections[document_id] = {r["section_id"]: r for r in rows}
            children: dict[Sid, list[Sid]] = {}
            for r in rows:
                children.setdefault(r["parent_id"] or "", []).append(r["section_id"])
            self._children[document_id] = children
        return self._sections[document_id]

    def neighbours(self, document_id: str, sid: Sid) -> list[Sid]:
        """The parent (the document start for a top-level section) and the children."""
        sections = self.sections(document_id)
        parent = [sections[sid]["parent_id"] or ""] if sid in sections else []
        return parent + self._children[document_id].get(sid, [])

    def path(self, document_id: str, sid: Sid) -> SectionPath:
        section = self.sections(document_id).get(sid)
        return tuple(section["path"]) if section else ()

    def order(self, document_id: str, sid: Sid) -> int:
        """The section's place in its document (-1: the document start, or unknown)."""
        section = self.sections(document_id).get(sid)
        return int(section["sort_order"]) if section else -1

    def rows_in(self, document_id: str, sid: Sid) -> list[dict[str, Any]]:
        """Chunk rows placed directly in a section (any of their occurrences), in document
        order; indexed once per document, since navigation asks for many sections."""
        if document_id not in self._placed:
            placed: dict[Sid, list[dict[str, Any]]] = {}
            for row in self.chunks(document_id):
                for key in row.get("section_ids") or [""]:
                    placed.setdefault(key, []).append(row)
            self._placed[document_id] = placed
        return self._placed[document_id].get(sid, [])

    def by_id(self, document_id: str) -> dict[str, dict[str, Any]]:
        """A document's chunk rows by chunk id (indexed once, like `rows_in`)."""
        index = self._by_id.get(document_id)
        if index is None:
            index = {r["chunk_id"]: r for r in self.chunks(document_id)}
            self._by_id[document_id] = index
        return index

    def chunks(self, document_id: str) -> list[dict[str, Any]]:
        with self._lock:
            cached = self._chunks.get(document_id)
            if cached is not None:
                self._chunks.move_to_end(document_id)
                return cached
        rows = self.revision.rows(CHUNKS, f"document_id = {quote(document_id)}")
        rows.sort(key=lambda r: r["sort_order"])
        with self._lock:
            self._chunks[document_id] = rows
            while len(self._chunks) > MAX_CACHED_DOCUMENTS:
                evicted, _ = self._chunks.popitem(last=False)
                self._placed.pop(evicted, None)
                self._by_id.pop(evicted, None)
        return rows
