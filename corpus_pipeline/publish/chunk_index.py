"""Writing the channel index of a revision (tantivy): the revision's index folder, and each
chunk's stored payload — its content, its resource and every place it occurs, with the
document attributes search filters and routes by.

Content-hash dedupe across the namespace means a chunk's index document lists every place its
content occurs: a chunk found in several documents (or already indexed) is read once
(`ChunkIndexState`), edited, and written again after the last document.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tantivy

from corpus_pipeline.contracts import ChunkType, Manifest, SourceRecord, StatementType
from corpus_pipeline.contracts.published import INDEX_LOCK_FILES, in_list, index_dir_name
from corpus_pipeline.contracts.search import RevisionPointer
from corpus_pipeline.index import channels as ch
from corpus_pipeline.publish.artifacts import document_date


class ChunkIndexState:
    """Current tantivy payloads of the chunks this publish touches (read lazily, then edited)."""

    def __init__(self, index: tantivy.Index | None) -> None:
        self.searcher = index.searcher() if index is not None else None
        self.payloads: dict[str, dict[str, Any] | None] = {}
        self.indexed: set[str] = set()

    def get(self, chunk_id: str) -> dict[str, Any] | None:
        if chunk_id not in self.payloads:
            payload = None
            if self.searcher is not None:
                query = tantivy.Query.term_query(ch.schema(), ch.F_CHUNK_ID, chunk_id)
                hits = self.searcher.search(query, 1).hits
                if hits:
                    payload = ch.decode_stored(self.searcher.doc(hits[0][1])[ch.F_STORED][0])
                    self.indexed.add(chunk_id)
            self.payloads[chunk_id] = payload
        return self.payloads[chunk_id]


def prepare_index_dir(ns_dir: Path, previous: RevisionPointer | None, revision: int) -> Path:
    """The revision's index folder: new, or hard-linked from the previous revision's (segments
    are immutable; the per-revision `.json` files are copied)."""
    target = ns_dir / index_dir_name(revision)
    if target.exists():
        shutil.rmtree(target)  # left over by a crashed publish of the same number
    if previous is None:
        ch.create_index(target)
        return target
    target.mkdir(parents=True)
    for item in (ns_dir / previous.tantivy_dir).iterdir():
        if item.name in INDEX_LOCK_FILES:
            continue
        if item.name.endswith(".json"):
            shutil.copy2(item, target / item.name)
        else:
            os.link(item, target / item.name)
    return target


def chunk_payload(
    directory: Path, document_id: str, chunk: Any, locations: list[dict[str, Any]]
) -> dict[str, Any]:
    """The stored index payload of a chunk: its content and every place it occurs."""
    return {
        "chunk_id": chunk.chunk_id,
        "chunk_type": chunk.chunk_type.value,
        "content": chunk.content,
        "summary": chunk.metadata.summary,
        "resource": chunk_resource(directory, document_id, chunk),
        "occurrences": locations,
    }


def _page_marks(manifest: Manifest, pages: Sequence[int], printed: bool) -> dict[str, list[Any]]:
    """How a reader may name a chunk's pages besides their positions: counted from the end of
    the document ("the last page") and by the numbers printed on them ("page iv", "page 28" on
    the file's 30th page); a document that prints no page numbers (`printed` False: none of
    its `page_labels` is set) is cited by position."""
    count = manifest.profile.page_count or 0
    labels = manifest.page_labels

    def label(page: int) -> str:
        if not printed:
            return str(page)
        return labels[page - 1] if page <= len(labels) else ""

    return {
        "pages_from_end": [count - p + 1 for p in pages if 1 <= p <= count],
        "page_labels": [text for p in pages if p >= 1 and (text := label(p))],
    }


def location(
    record: SourceRecord,
    manifest: Manifest,
    occ: Any,
    printed: bool,
    statement: StatementType | None = None,
) -> dict[str, Any]:
    """One place a chunk occurs, with the document attributes that search filters test and
    routes by (its issuer and period) and the financial statement it is part of there."""
    subject = manifest.subject
    return {
        "document_id": record.document_id,
        "source_file_name": record.source_file_name,
        "document_title": manifest.title,
        "running_text": list(manifest.running_text),
        "section_path": list(occ.hierarchy_path),
        "section_id": occ.section_id,
        "pages": list(occ.page_nums),
        **_page_marks(manifest, occ.page_nums, printed),
        "order": occ.order,
        "document_type": manifest.profile.format.value,
        "source": record.source_kind.value,
        "organizational_unit": record.organizational_unit,
        "document_date": document_date(record, manifest),
        "entity": subject.entity,
        "tickers": list(subject.tickers),
        "form_type": subject.form_type,
        "fiscal_year": subject.fiscal_year,
        "fiscal_quarter": subject.fiscal_quarter,
        "statement": statement.value if statement else None,
    }


def chunk_resource(directory: Path, document_id: str, chunk: Any) -> dict[str, Any] | None:
    """A table/image chunk's resource: its document and relative ref (served from the
    revision's `resources` table), never a file-system path of this machine."""
    path = chunk.metadata.file_path
    if not path:
        return None
    if chunk.chunk_type is ChunkType.TABLE:
        html_path = directory / path
        html = html_path.read_text(encoding="utf-8").strip() if html_path.is_file() else None
        return {
            "kind": "table",
            "document_id": document_id,
            "ref": path,
            "html": html,
            "description": None,
        }
    return {
        "kind": "image",
        "document_id": document_id,
        "ref": path,
        "html": None,
        "description": chunk.content,
    }


def stale_resource(payload: dict[str, Any], stale: list[str]) -> bool:
    """The payload names a resource of a document being replaced or removed (or in the older
    format without a ref): a document that holds the chunk now provides it again."""
    resource = payload.get("resource")
    if not resource:
        return False
    return "ref" not in resource or resource.get("document_id") in stale


def repoint_resources(
    chunk_table: Any, payloads: dict[str, dict[str, Any] | None], chunk_ids: set[str]
) -> None:
    """A deduplicated chunk names the resource of one document; when that document left the
    namespace, name the same resource in a document that still holds the chunk."""
    orphaned = {}
    for chunk_id in chunk_ids:
        payload = payloads.get(chunk_id)
        resource = payload.get("resource") if payload else None
        if payload and resource and payload["occurrences"]:
            holders = {o["document_id"] for o in payload["occurrences"]}
            if resource.get("document_id") not in holders:
                orphaned[chunk_id] = resource
    if not orphaned:
        return
    rows = (
        chunk_table.search()
        .where(in_list("chunk_id", sorted(orphaned)))
        .select(["chunk_id", "document_id", "resource_path"])
        .limit(None)
        .to_list()
    )
    for row in sorted(rows, key=lambda r: (r["chunk_id"], r["document_id"]), reverse=True):
        if row["resource_path"]:
            orphaned[row["chunk_id"]].update(
                document_id=row["document_id"], ref=row["resource_path"]
            )
