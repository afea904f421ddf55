"""Publish one consistent revision of a namespace: LanceDB tables + tantivy channels.

Order of work, per call:
1. lock the namespace (one writer; Dagster's `index_writer` pool serialises runs, the file lock
   also covers the CLI and a crashed writer), load the CURRENT pointer and roll every LanceDB
   table back to the version that pointer names (a crashed publish leaves newer versions);
2. diff the registry against the published documents by artifact signature;
3. documents, streamed one at a time: a new tantivy index folder per revision, hard-linked
   from the previous one (segments are immutable); the changed/removed documents' LanceDB rows
   deleted, then each changed document's rows appended in bounded batches and its chunks added
   to the index as they are read. Content-hash dedupe across the namespace means a chunk's
   index document lists every place its content occurs: chunks found in several documents (or
   already indexed) are merged first and written after the last document;
4. graph edges of the changed documents (one candidate query + an inverted keyword index),
   LanceDB scalar indices;
5. write the revision file and swap CURRENT atomically (os.replace). Readers see the old
   revision or the new one, never a mix; a crash before step 5 leaves the old one intact.

The work of steps 3–4 grows with the changed documents, not with the corpus: chunk lookups are
term queries, deletes hit scalar indices, edge candidates share a keyword. Memory is bounded
by one document plus one batch of rows (plus the merged duplicates), not by the batch.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import tantivy

from corpus_pipeline.contracts import (
    ChunksFile,
    ChunkType,
    DocNav,
    Manifest,
    SourceRecord,
    StatementType,
)
from corpus_pipeline.contracts.search import RevisionPointer, is_relative_ref
from corpus_pipeline.index import channels as ch
from corpus_pipeline.index.documents import index_document
from corpus_pipeline.publish import tables as t
from corpus_pipeline.publish.graph import MIN_SHARED, document_keywords, related_edges
from corpus_pipeline.publish.sections import build_sections

CURRENT = "CURRENT.json"
KEEP_INDEX_REVISIONS = 3
# LanceDB rows held in memory before they are appended (bounds a bulk publish's memory).
LANCE_BATCH_ROWS = 20_000
# Resource bytes (images, table HTML) held in memory before they are appended.
LANCE_BATCH_BYTES = 64 * 1024 * 1024
# Above this many keywords the edge step reads every node instead of filtering by keyword.
EDGE_FILTER_MAX_KEYWORDS = 200
INDEX_LOCK_FILES = {".tantivy-writer.lock", ".tantivy-meta.lock"}


@dataclass(frozen=True)
class PublishItem:
    """A document whose artifacts should be published."""

    record: SourceRecord
    directory: Path
    # The document's vector file of the configured space (`embeddings.vectors_path`), if any.
    vectors: Path | None = None


@dataclass
class PublishReport:
    namespace: str
    pointer: RevisionPointer
    published: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    # Files sent to the object store's mirror of the revision (None: no mirror configured).
    mirrored_files: int | None = None


def namespace_dir(published_dir: Path, namespace: str) -> Path:
    return published_dir / namespace


def read_pointer(ns_dir: Path) -> RevisionPointer | None:
    path = ns_dir / CURRENT
    if not path.is_file():
        return None
    return RevisionPointer.model_validate_json(path.read_text(encoding="utf-8"))


def artifact_signature(directory: Path) -> str:
    """Hash of the manifest's file list: changes exactly when any artifact file changes."""
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    return hashlib.sha256(json.dumps(manifest["files"], sort_keys=True).encode()).hexdigest()


SIGNATURES = "signatures.json"


def _vectors_signature(path: Path | None) -> str:
    return "" if path is None else "+" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def signatures_for(ns_dir: Path, items: dict[str, PublishItem]) -> dict[str, str]:
    """Artifact signatures, re-read only for manifests whose (mtime, size) changed since the
    last publish: a stat per document instead of parsing every manifest of the corpus."""
    cache_path = ns_dir / SIGNATURES
    cache: dict[str, list[Any]] = {}
    if cache_path.is_file():
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    fresh: dict[str, list[Any]] = {}
    for doc, item in items.items():
        stat = (item.directory / "manifest.json").stat()
        key: list[Any] = [stat.st_mtime_ns, stat.st_size]
        if item.vectors is not None:  # vectors that arrive later make the document change
            vectors = item.vectors.stat()
            key += [item.vectors.name, vectors.st_mtime_ns, vectors.st_size]
        cached = cache.get(doc)
        signature = (
            cached[-1]
            if cached and cached[:-1] == key
            else artifact_signature(item.directory) + _vectors_signature(item.vectors)
        )
        out[doc] = signature
        fresh[doc] = [*key, signature]
    tmp = ns_dir / f".{SIGNATURES}.tmp"
    tmp.write_text(json.dumps(fresh, sort_keys=True), encoding="utf-8")
    os.replace(tmp, cache_path)
    return out


@contextmanager
def namespace_lock(ns_dir: Path) -> Iterator[None]:
    ns_dir.mkdir(parents=True, exist_ok=True)
    with (ns_dir / ".publish.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _pause_point(ns_dir: Path, stage: str) -> None:
    """Fault-injection point for crash tests: with CORPUS_PUBLISH_PAUSE_AT=<stage> the publisher
    announces the stage in a marker file and waits there (so a test can kill it)."""
    if os.environ.get("CORPUS_PUBLISH_PAUSE_AT") == stage:
        (ns_dir / f".paused-{stage}").write_text(str(os.getpid()), encoding="utf-8")
        time.sleep(120)


def _open_tables(db: Any) -> dict[str, Any]:
    """Open (or create) every table; a table published by an older version gains the columns
    it lacks (all null for its rows until their documents are reprocessed)."""
    existing = set(db.list_tables().tables)
    out: dict[str, Any] = {}
    for name, schema in t.SCHEMAS.items():
        if name not in existing:
            out[name] = db.create_table(name, schema=schema)
            continue
        table = db.open_table(name)
        missing = [f for f in schema if f.name not in table.schema.names]
        if missing:
            table.add_columns(pa.schema(missing))
        out[name] = table
    return out


def _ensure_indices(tables: dict[str, Any]) -> None:
    from lancedb.index import BTree, LabelList

    for name, specs in t.INDICES.items():
        table = tables[name]
        present = {tuple(i.columns) for i in table.list_indices()}
        if table.count_rows() == 0:
            continue
        for column, kind in specs:
            if (column,) not in present:
                table.create_index(column, config=BTree() if kind == "btree" else LabelList())


# Rows added since a table's indices were built are scanned by every filtered read (a
# document's chunks by `document_id`: ~4 µs a row on this machine). A store grown by one large
# publish read 55k unindexed chunk rows per document (0.2 s; agentic search reads tens of
# documents a query), so a publish that leaves more than this many folds them in.
UNINDEXED_ROWS = 1_000


def _unindexed_rows(table: Any) -> int:
    """The most rows any of the table's indices does not cover yet."""
    most = 0
    for index in table.list_indices():
        stats = table.index_stats(index.name)
        most = max(most, stats.num_unindexed_rows if stats is not None else 0)
    return most


class _ChunkIndexState:
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


def _payload(
    directory: Path, document_id: str, chunk: Any, locations: list[dict[str, Any]]
) -> dict[str, Any]:
    """The stored index payload of a chunk: its content and every place it occurs."""
    return {
        "chunk_id": chunk.chunk_id,
        "chunk_type": chunk.chunk_type.value,
        "content": chunk.content,
        "summary": chunk.metadata.summary,
        "resource": _resource(directory, document_id, chunk),
        "occurrences": locations,
    }


def _chunk_places(directories: Iterable[Path]) -> Counter[str]:
    """How many chunk entries of these documents carry each id (a cheap first pass over
    chunks.json, without building models)."""
    places: Counter[str] = Counter()
    for directory in directories:
        data = json.loads((directory / "chunks.json").read_bytes())
        places.update(chunk["chunk_id"] for chunk in data["chunks"])
    return places


class _RowBatches:
    """LanceDB rows buffered per table and appended in batches of bounded size."""

    def __init__(self, tables: dict[str, Any], max_rows: int | None = None) -> None:
        self.tables = tables
        self.max_rows = max_rows or LANCE_BATCH_ROWS
        self.rows: dict[str, list[dict[str, Any]]] = {}
        self.payload_bytes = 0

    def add(self, name: str, rows: list[dict[str, Any]], payload_bytes: int = 0) -> None:
        """`payload_bytes`: large binary content of the rows (resource files), bounded apart."""
        self.rows.setdefault(name, []).extend(rows)
        self.payload_bytes += payload_bytes
        if (
            sum(len(r) for r in self.rows.values()) >= self.max_rows
            or self.payload_bytes >= LANCE_BATCH_BYTES
        ):
            self.flush()

    def flush(self) -> None:
        for name in sorted(self.rows):
            if self.rows[name]:
                self.tables[name].add(t.to_table(name, self.rows[name]))
        self.rows = {}
        self.payload_bytes = 0


def _prepare_index_dir(ns_dir: Path, previous: RevisionPointer | None, revision: int) -> Path:
    target = ns_dir / "tantivy" / f"rev-{revision:06d}"
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


def gc_index_dirs(ns_dir: Path, keep: int) -> None:
    dirs = sorted((ns_dir / "tantivy").glob("rev-*"))
    for old in dirs[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def write_pointer(ns_dir: Path, pointer: RevisionPointer) -> None:
    revisions = ns_dir / "revisions"
    revisions.mkdir(exist_ok=True)
    data = pointer.model_dump_json(indent=2) + "\n"
    (revisions / f"{pointer.revision:06d}.json").write_text(data, encoding="utf-8")
    tmp = ns_dir / f".{CURRENT}.tmp"
    tmp.write_text(data, encoding="utf-8")
    with tmp.open("rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, ns_dir / CURRENT)


def _document_date(record: SourceRecord, manifest: Manifest) -> str | None:
    """The uploader's date, else the one the file declares; a manifest written before file
    dates were read carries neither, so the uploader's is read from the record."""
    if manifest.document_date:
        return manifest.document_date
    return record.document_date.isoformat() if record.document_date else None


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


def _location(
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
        "document_date": _document_date(record, manifest),
        "entity": subject.entity,
        "tickers": list(subject.tickers),
        "form_type": subject.form_type,
        "fiscal_year": subject.fiscal_year,
        "fiscal_quarter": subject.fiscal_quarter,
        "statement": statement.value if statement else None,
    }


def _resource(directory: Path, document_id: str, chunk: Any) -> dict[str, Any] | None:
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


_MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".html": "text/html; charset=utf-8",
}


def _resource_rows(
    record: SourceRecord, directory: Path, nav: DocNav, chunks: ChunksFile, revision: int
) -> list[dict[str, Any]]:
    """One row per table/image file the document lists, with its bytes: the published revision
    then serves exactly what it was built from. Only plain relative refs to existing files."""
    refs = {r.file_path for r in nav.resources} | {
        c.metadata.file_path for c in chunks.chunks if c.metadata.file_path
    }
    rows = []
    for ref in sorted(refs):
        path = directory / ref
        if not is_relative_ref(ref) or not path.is_file():
            continue
        data = path.read_bytes()
        rows.append(
            {
                "revision": revision,
                "namespace": record.namespace,
                "document_id": record.document_id,
                "ref": ref,
                "kind": "table" if ref.startswith("tables/") else "image",
                "media_type": _MEDIA_TYPES.get(path.suffix.lower(), "application/octet-stream"),
                "sha256": hashlib.sha256(data).hexdigest(),
                "data": data,
            }
        )
    return rows


def _stale_resource(payload: dict[str, Any], stale: list[str]) -> bool:
    """The payload names a resource of a document being replaced or removed (or in the older
    format without a ref): a document that holds the chunk now provides it again."""
    resource = payload.get("resource")
    if not resource:
        return False
    return "ref" not in resource or resource.get("document_id") in stale


def _repoint_resources(
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
        .where(t.in_list("chunk_id", sorted(orphaned)))
        .select(["chunk_id", "document_id", "resource_path"])
        .limit(None)
        .to_list()
    )
    for row in sorted(rows, key=lambda r: (r["chunk_id"], r["document_id"]), reverse=True):
        if row["resource_path"]:
            orphaned[row["chunk_id"]].update(
                document_id=row["document_id"], ref=row["resource_path"]
            )


def publish_namespace(
    published_dir: Path, namespace: str, items: list[PublishItem]
) -> PublishReport:
    """Publish `items` (every document the namespace should contain) as one new revision."""
    started = time.perf_counter()
    ns_dir = namespace_dir(published_dir, namespace)
    timings: dict[str, float] = {}
    with namespace_lock(ns_dir):
        previous = read_pointer(ns_dir)
        import lancedb  # 5 s to import: only processes that publish pay it, not document runs

        db = lancedb.connect(str(ns_dir / "lance"))
        tables = _open_tables(db)
        if previous is not None:
            for name, table in tables.items():
                version = previous.lance_versions.get(name)
                if version is not None and table.version != version:
                    table.restore(version)
        mark = time.perf_counter()
        published_docs = (
            {
                row["document_id"]: row
                for row in tables[t.DOCUMENTS]
                .search()
                .select(["document_id", "signature", "created_at"])
                .limit(None)
                .to_list()
            }
            if previous is not None
            else {}
        )
        wanted = {item.record.document_id: item for item in items}
        signatures = signatures_for(ns_dir, wanted)
        changed = sorted(
            d for d in wanted if published_docs.get(d, {}).get("signature") != signatures[d]
        )
        if previous is not None and t.RESOURCES not in previous.lance_versions:
            changed = sorted(wanted)  # published before resources were stored: add them all
        index_base = previous
        if previous is not None and not ch.index_is_current(ns_dir / previous.tantivy_dir):
            # An index of an earlier schema or analysis is rebuilt from scratch.
            changed = sorted(wanted)
            index_base = None
        removed = sorted(d for d in published_docs if d not in wanted)
        unchanged = len(wanted) - len(changed)
        timings["diff"] = time.perf_counter() - mark
        if previous is not None and not changed and not removed:
            return PublishReport(
                namespace=namespace,
                pointer=previous,
                unchanged=unchanged,
                seconds=time.perf_counter() - started,
                timings=timings,
            )
        revision = (previous.revision if previous else 0) + 1
        stale = sorted(set(changed) | set(removed))
        now = datetime.now(UTC)

        # 3. Documents stream through one at a time: their LanceDB rows are written in bounded
        # batches and their chunks go to tantivy as they come, except chunks that occur in
        # several documents (or are indexed already): those are merged first, written at the end.
        mark = time.perf_counter()
        index_dir = _prepare_index_dir(ns_dir, index_base, revision)
        index = ch.open_index(index_dir)
        state = _ChunkIndexState(index if index_base is not None else None)
        places = _chunk_places(wanted[doc].directory for doc in changed)
        # Bulk loads get a second indexing thread; small updates stay on one.
        writer = index.writer(heap_size=256_000_000, num_threads=2 if len(places) > 20_000 else 1)
        merged: set[str] = set()
        if stale and previous is not None:
            old_rows = (
                tables[t.CHUNKS]
                .search()
                .where(t.in_list("document_id", stale))
                .select(["document_id", "chunk_id"])
                .limit(None)
                .to_list()
            )
            for row in old_rows:
                payload = state.get(row["chunk_id"])
                if payload is not None:
                    payload["occurrences"] = [
                        o for o in payload["occurrences"] if o["document_id"] not in stale
                    ]
                    merged.add(row["chunk_id"])
            for name in (t.DOCUMENTS, t.SECTIONS, t.CHUNKS, t.GRAPH_NODES, t.RESOURCES, t.VECTORS):
                tables[name].delete(t.in_list("document_id", stale))
            edges = tables[t.GRAPH_EDGES]
            edges.delete(f"{t.in_list('source', stale)} OR {t.in_list('target', stale)}")
        rows = _RowBatches(tables)
        node_keywords: dict[str, list[str]] = {}
        for doc in changed:
            chunks, nav, manifest = _load_artifacts(wanted[doc].directory)
            record = wanted[doc].record
            printed = any(manifest.page_labels)  # once per document, not per chunk
            for chunk in chunks.chunks:
                locations = [
                    _location(record, manifest, occ, printed, chunk.metadata.statement)
                    for occ in chunk.occurrences
                ]
                payload = state.get(chunk.chunk_id)
                if payload is None and places[chunk.chunk_id] == 1:
                    # Its only place, and not indexed yet: straight to the index.
                    state.payloads.pop(chunk.chunk_id, None)
                    payload = _payload(wanted[doc].directory, doc, chunk, locations)
                    writer.add_document(index_document(payload))
                    continue
                if payload is None:
                    payload = _payload(wanted[doc].directory, doc, chunk, [])
                    state.payloads[chunk.chunk_id] = payload
                elif _stale_resource(payload, stale):
                    payload["resource"] = _resource(wanted[doc].directory, doc, chunk)
                payload["occurrences"].extend(locations)
                merged.add(chunk.chunk_id)
            created = published_docs.get(doc, {}).get("created_at") or now
            rows.add(
                t.DOCUMENTS,
                [
                    _document_row(
                        nav,
                        record,
                        manifest,
                        len(chunks.chunks),
                        signatures[doc],
                        revision,
                        created,
                        now,
                    )
                ],
            )
            rows.add(t.SECTIONS, _section_rows(record, nav, chunks, revision))
            rows.add(t.CHUNKS, _chunk_rows(record, chunks, revision))
            if wanted[doc].vectors is not None:
                rows.add(t.VECTORS, _vector_rows(wanted[doc], chunks, revision))
            resource_rows = _resource_rows(record, wanted[doc].directory, nav, chunks, revision)
            rows.add(t.RESOURCES, resource_rows, sum(len(r["data"]) for r in resource_rows))
            keywords = document_keywords(
                (c.metadata.keywords, len(c.occurrences)) for c in chunks.chunks
            )
            node_keywords[doc] = keywords
            rows.add(
                t.GRAPH_NODES,
                [
                    {
                        "revision": revision,
                        "namespace": namespace,
                        "node_id": doc,
                        "document_id": doc,
                        "title": manifest.title,
                        "keywords": keywords,
                    }
                ],
            )
        rows.flush()
        _repoint_resources(tables[t.CHUNKS], state.payloads, merged)
        for chunk_id in sorted(merged):
            payload = state.payloads[chunk_id]
            if chunk_id in state.indexed:
                writer.delete_documents_by_term(ch.F_CHUNK_ID, chunk_id)
            if payload and payload["occurrences"]:
                writer.add_document(index_document(payload))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        unique_chunks = index.searcher().num_docs
        timings["documents"] = time.perf_counter() - mark
        _pause_point(ns_dir, "tantivy_committed")

        # 4. LanceDB: graph edges of the changed documents, indices
        mark = time.perf_counter()
        edge_rows = _edges(tables[t.GRAPH_NODES], node_keywords, revision, namespace)
        if edge_rows:
            tables[t.GRAPH_EDGES].add(t.to_table(t.GRAPH_EDGES, edge_rows))
        _ensure_indices(tables)
        for table in tables.values():
            if revision % 20 == 0 or _unindexed_rows(table) > UNINDEXED_ROWS:
                table.optimize()  # compacts, and folds the new rows into the indices
        timings["graph"] = time.perf_counter() - mark
        _pause_point(ns_dir, "lance_written")

        # 5. swap
        pointer = RevisionPointer(
            namespace=namespace,
            revision=revision,
            created_at=now,
            tantivy_dir=index_dir.relative_to(ns_dir).as_posix(),
            lance_versions={name: table.version for name, table in tables.items()},
            documents=tables[t.DOCUMENTS].count_rows(),
            chunks=unique_chunks,
        )
        write_pointer(ns_dir, pointer)
        gc_index_dirs(ns_dir, KEEP_INDEX_REVISIONS)
        return PublishReport(
            namespace=namespace,
            pointer=pointer,
            published=changed,
            removed=removed,
            unchanged=unchanged,
            seconds=time.perf_counter() - started,
            timings=timings,
        )


def _vector_rows(item: PublishItem, chunks: ChunksFile, revision: int) -> list[dict[str, Any]]:
    """The document's vectors of the chunks it holds now (a vector file written for an older
    chunk set contributes only the chunks that are still there)."""
    from corpus_pipeline.embeddings.vectors import read_vectors

    assert item.vectors is not None
    spec, vectors = read_vectors(item.vectors)
    document_id = item.record.document_id
    return [
        {
            "revision": revision,
            "document_id": document_id,
            "chunk_id": chunk.chunk_id,
            "space": spec.key,
            "vector": vectors[chunk.chunk_id].tolist(),
        }
        for chunk in chunks.chunks
        if chunk.chunk_id in vectors
    ]


def _load_artifacts(directory: Path) -> tuple[ChunksFile, DocNav, Manifest]:
    return (
        ChunksFile.model_validate_json((directory / "chunks.json").read_text(encoding="utf-8")),
        DocNav.model_validate_json((directory / "doc_nav.json").read_text(encoding="utf-8")),
        Manifest.model_validate_json((directory / "manifest.json").read_text(encoding="utf-8")),
    )


def _document_row(
    nav: DocNav,
    record: SourceRecord,
    manifest: Manifest,
    chunk_count: int,
    signature: str,
    revision: int,
    created: datetime,
    now: datetime,
) -> dict[str, Any]:
    return {
        "document_id": record.document_id,
        "namespace": record.namespace,
        "owner": record.organizational_unit,
        "status": "active",
        "active_revision": revision,
        "source_file_name": record.source_file_name,
        "format": manifest.profile.format.value,
        "title": manifest.title,
        "source_kind": record.source_kind.value,
        "organizational_unit": record.organizational_unit,
        "document_date": date.fromisoformat(day)
        if (day := _document_date(record, manifest))
        else None,
        "chunk_count": chunk_count,
        "entity": manifest.subject.entity,
        "tickers": list(manifest.subject.tickers),
        "form_type": manifest.subject.form_type,
        "period_end": date.fromisoformat(end) if (end := manifest.subject.period_end) else None,
        "fiscal_year": manifest.subject.fiscal_year,
        "fiscal_quarter": manifest.subject.fiscal_quarter,
        "signature": signature,
        "manifest": manifest.model_dump_json(by_alias=True),
        "nav": nav.model_dump_json(),
        "created_at": created,
        "updated_at": now,
    }


def _section_rows(
    record: SourceRecord, nav: DocNav, chunks: ChunksFile, revision: int
) -> list[dict[str, Any]]:
    return [
        {
            "revision": revision,
            "namespace": record.namespace,
            "document_id": record.document_id,
            "section_id": s.section_id,
            "parent_id": s.parent_id,
            "path": list(s.path),
            "title": s.title,
            "level": s.level,
            "summary": s.summary,
            "sort_order": s.sort_order,
        }
        for s in build_sections(nav.sections)
    ]


def _chunk_rows(record: SourceRecord, chunks: ChunksFile, revision: int) -> list[dict[str, Any]]:
    return [
        {
            "revision": revision,
            "namespace": record.namespace,
            "document_id": record.document_id,
            "chunk_id": c.chunk_id,
            "chunk_type": c.chunk_type.value,
            "content": c.content,
            "searchable_text": c.content + "\n" + c.metadata.summary,
            "source_path": record.source_file_name,
            "section_path": list(c.hierarchy_path),
            "section_id": c.section_id,
            "section_ids": sorted({o.section_id for o in c.occurrences if o.section_id}),
            "resource_path": c.metadata.file_path,
            "pages": list(c.metadata.page_nums),
            "metadata": c.metadata.model_dump_json(),
            "sort_order": c.metadata.order,
        }
        for c in chunks.chunks
    ]


def _edges(
    nodes: Any, node_keywords: dict[str, list[str]], revision: int, namespace: str
) -> list[dict[str, Any]]:
    """Edges of the changed documents. One query reads the candidate nodes: those sharing a
    keyword with a changed document (every node when that keyword list is long)."""
    wanted = sorted({k for kws in node_keywords.values() if len(kws) >= MIN_SHARED for k in kws})
    if not wanted:
        return []
    query = nodes.search().select(["document_id", "keywords"]).limit(None)
    if len(wanted) <= EDGE_FILTER_MAX_KEYWORDS:
        query = query.where(f"array_has_any(keywords, [{', '.join(t.quote(k) for k in wanted)}])")
    candidates = ((row["document_id"], list(row["keywords"])) for row in query.to_list())
    return [
        {
            "revision": revision,
            "namespace": namespace,
            "source": edge.source,
            "target": edge.target,
            "relation": "related",
            "score": edge.score,
            "shared_keywords": list(edge.shared),
        }
        for edge in related_edges(node_keywords, candidates)
    ]


def publish_items_for(
    artifacts_dir: Path,
    records: list[SourceRecord],
    namespace: str,
    vectors_for: Callable[[str], Path | None] | None = None,
) -> list[PublishItem]:
    """Registered documents of a namespace that have a committed artifact directory, with
    their vector file when `vectors_for` (document id → path) finds one."""
    items = []
    for record in sorted(records, key=lambda r: r.document_id):
        directory = artifacts_dir / record.document_id
        if record.namespace == namespace and (directory / "manifest.json").is_file():
            vectors = vectors_for(record.document_id) if vectors_for else None
            items.append(PublishItem(record=record, directory=directory, vectors=vectors))
    return items
