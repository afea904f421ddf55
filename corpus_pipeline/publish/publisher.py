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

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from corpus_pipeline.contracts import ChunksFile, Manifest, SourceRecord
from corpus_pipeline.contracts.published import (
    CHUNKS,
    DOCUMENTS,
    GRAPH_EDGES,
    GRAPH_NODES,
    KEEP_INDEX_REVISIONS,
    LANCE_DIR,
    RESOURCES,
    SECTIONS,
    VECTORS,
    gc_index_dirs,
    in_list,
    namespace_lock,
    write_pointer,
)

# Re-exported (`as`): the publisher's callers read the pointer and build items from here.
from corpus_pipeline.contracts.published import read_pointer as read_pointer
from corpus_pipeline.contracts.search import RevisionPointer
from corpus_pipeline.index import channels as ch
from corpus_pipeline.index.documents import index_document
from corpus_pipeline.publish import tables as t
from corpus_pipeline.publish.artifacts import PublishItem as PublishItem
from corpus_pipeline.publish.artifacts import (
    chunk_places,
    load_artifacts,
    signatures_for,
)
from corpus_pipeline.publish.chunk_index import (
    ChunkIndexState,
    chunk_payload,
    chunk_resource,
    location,
    prepare_index_dir,
    repoint_resources,
    stale_resource,
)
from corpus_pipeline.publish.graph import attachment_pairs, document_keywords

# LanceDB rows held in memory before they are appended (bounds a bulk publish's memory).
LANCE_BATCH_ROWS = 20_000
# Rows added since a table's indices were built are scanned by every filtered read (a
# document's chunks by `document_id`: ~4 µs a row on this machine). A store grown by one large
# publish read 55k unindexed chunk rows per document (0.2 s; agentic search reads tens of
# documents a query), so a publish that leaves more than this many folds them in.
UNINDEXED_ROWS = 1_000


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


def _pause_point(ns_dir: Path, stage: str) -> None:
    """Fault-injection point for crash tests: with CORPUS_PUBLISH_PAUSE_AT=<stage> the publisher
    announces the stage in a marker file and waits there (so a test can kill it)."""
    if os.environ.get("CORPUS_PUBLISH_PAUSE_AT") == stage:
        (ns_dir / f".paused-{stage}").write_text(str(os.getpid()), encoding="utf-8")
        time.sleep(120)


def publish_namespace(
    published_dir: Path, namespace: str, items: list[PublishItem]
) -> PublishReport:
    """Publish `items` (every document the namespace should contain) as one new revision."""
    started = time.perf_counter()
    ns_dir = namespace_dir(published_dir, namespace)
    timings: dict[str, float] = {}
    with namespace_lock(ns_dir):
        previous = read_pointer(ns_dir)
        tables = _tables_at(ns_dir, previous)
        mark = time.perf_counter()
        diff = _diff(ns_dir, tables, previous, items)
        timings["diff"] = time.perf_counter() - mark
        if previous is not None and not diff.changed and not diff.removed:
            return PublishReport(
                namespace=namespace,
                pointer=previous,
                unchanged=diff.unchanged,
                seconds=time.perf_counter() - started,
                timings=timings,
            )
        revision = (previous.revision if previous else 0) + 1
        now = datetime.now(UTC)

        # 3. Documents stream through one at a time: their LanceDB rows are written in bounded
        # batches and their chunks go to tantivy as they come, except chunks that occur in
        # several documents (or are indexed already): those are merged first, written at the end.
        mark = time.perf_counter()
        written = _write_documents(ns_dir, tables, previous, diff, namespace, revision, now)
        timings["documents"] = time.perf_counter() - mark
        _pause_point(ns_dir, "tantivy_committed")

        # 4. LanceDB: graph edges of the changed documents, indices
        mark = time.perf_counter()
        _write_graph_and_indices(tables, written.node_keywords, revision, namespace, diff)
        timings["graph"] = time.perf_counter() - mark
        _pause_point(ns_dir, "lance_written")

        # 5. swap
        pointer = RevisionPointer(
            namespace=namespace,
            revision=revision,
            created_at=now,
            tantivy_dir=written.index_dir.relative_to(ns_dir).as_posix(),
            lance_versions={name: table.version for name, table in tables.items()},
            documents=tables[DOCUMENTS].count_rows(),
            chunks=written.unique_chunks,
        )
        write_pointer(ns_dir, pointer)
        gc_index_dirs(ns_dir, KEEP_INDEX_REVISIONS)
        return PublishReport(
            namespace=namespace,
            pointer=pointer,
            published=diff.changed,
            removed=diff.removed,
            unchanged=diff.unchanged,
            seconds=time.perf_counter() - started,
            timings=timings,
        )


def _tables_at(ns_dir: Path, previous: RevisionPointer | None) -> dict[str, Any]:
    """1. Every LanceDB table, rolled back to the version the CURRENT pointer names (a crashed
    publish leaves newer versions)."""
    import lancedb  # 5 s to import: only processes that publish pay it, not document runs

    db = lancedb.connect(str(ns_dir / LANCE_DIR))
    tables = t.open_tables(db)
    if previous is not None:
        for name, table in tables.items():
            version = previous.lance_versions.get(name)
            if version is not None and table.version != version:
                table.restore(version)
    return tables


@dataclass
class _Diff:
    """2. What this publish changes: the registry against the published documents, by
    artifact signature."""

    wanted: dict[str, PublishItem]
    published: dict[str, dict[str, Any]]  # document id → its published signature, created_at
    signatures: dict[str, str]
    changed: list[str]
    removed: list[str]
    # The index the new one is linked from; None: written from scratch.
    index_base: RevisionPointer | None

    @property
    def unchanged(self) -> int:
        return len(self.wanted) - len(self.changed)


def _diff(
    ns_dir: Path, tables: dict[str, Any], previous: RevisionPointer | None, items: list[PublishItem]
) -> _Diff:
    published_docs = (
        {
            row["document_id"]: row
            for row in tables[DOCUMENTS]
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
    if previous is not None and RESOURCES not in previous.lance_versions:
        changed = sorted(wanted)  # published before resources were stored: add them all
    index_base = previous
    if previous is not None and not ch.index_is_current(ns_dir / previous.tantivy_dir):
        # An index of an earlier schema or analysis is rebuilt from scratch.
        changed = sorted(wanted)
        index_base = None
    removed = sorted(d for d in published_docs if d not in wanted)
    return _Diff(wanted, published_docs, signatures, changed, removed, index_base)


@dataclass
class _Written:
    """3. What the documents step leaves: the new index and the changed documents' keywords."""

    index_dir: Path
    unique_chunks: int
    node_keywords: dict[str, list[str]]


@dataclass
class _DocumentWrite:
    """The documents step under way: the index writer, the chunks merged across documents
    (written after the last one) and the LanceDB rows waiting for their batch."""

    namespace: str
    revision: int
    now: datetime
    stale: list[str]
    state: ChunkIndexState
    places: Counter[str]
    writer: Any
    rows: t.RowBatches
    merged: set[str] = field(default_factory=set)
    node_keywords: dict[str, list[str]] = field(default_factory=dict)


def _write_documents(
    ns_dir: Path,
    tables: dict[str, Any],
    previous: RevisionPointer | None,
    diff: _Diff,
    namespace: str,
    revision: int,
    now: datetime,
) -> _Written:
    index_dir = prepare_index_dir(ns_dir, diff.index_base, revision)
    index = ch.open_index(index_dir)
    places = chunk_places(diff.wanted[doc].directory for doc in diff.changed)
    run = _DocumentWrite(
        namespace=namespace,
        revision=revision,
        now=now,
        stale=sorted(set(diff.changed) | set(diff.removed)),
        state=ChunkIndexState(index if diff.index_base is not None else None),
        places=places,
        # Bulk loads get a second indexing thread; small updates stay on one.
        writer=index.writer(heap_size=256_000_000, num_threads=2 if len(places) > 20_000 else 1),
        rows=t.RowBatches(tables, LANCE_BATCH_ROWS),
    )
    if run.stale and previous is not None:
        _remove_stale(tables, run)
    for doc in diff.changed:
        _add_document(run, diff, doc)
    run.rows.flush()
    repoint_resources(tables[CHUNKS], run.state.payloads, run.merged)
    for chunk_id in sorted(run.merged):
        payload = run.state.payloads[chunk_id]
        if chunk_id in run.state.indexed:
            run.writer.delete_documents_by_term(ch.F_CHUNK_ID, chunk_id)
        if payload and payload["occurrences"]:
            run.writer.add_document(index_document(payload))
    run.writer.commit()
    run.writer.wait_merging_threads()
    index.reload()
    return _Written(index_dir, index.searcher().num_docs, run.node_keywords)


def _remove_stale(tables: dict[str, Any], run: _DocumentWrite) -> None:
    """The changed and removed documents leave: their places leave the chunks they share with
    other documents (merged again), their rows leave every table."""
    stale = run.stale
    old_rows = (
        tables[CHUNKS]
        .search()
        .where(in_list("document_id", stale))
        .select(["document_id", "chunk_id"])
        .limit(None)
        .to_list()
    )
    for row in old_rows:
        payload = run.state.get(row["chunk_id"])
        if payload is not None:
            payload["occurrences"] = [
                o for o in payload["occurrences"] if o["document_id"] not in stale
            ]
            run.merged.add(row["chunk_id"])
    for name in (DOCUMENTS, SECTIONS, CHUNKS, GRAPH_NODES, RESOURCES, VECTORS):
        tables[name].delete(in_list("document_id", stale))
    edges = tables[GRAPH_EDGES]
    edges.delete(f"{in_list('source', stale)} OR {in_list('target', stale)}")


def _add_document(run: _DocumentWrite, diff: _Diff, doc: str) -> None:
    """One changed document: its chunks to the index (or merged), its rows to the batches."""
    item = diff.wanted[doc]
    chunks, nav, manifest = load_artifacts(item.directory)
    record = item.record
    _index_chunks(run, item, chunks, manifest)
    created = diff.published.get(doc, {}).get("created_at") or run.now
    revision = run.revision
    rows = run.rows
    rows.add(
        DOCUMENTS,
        [
            t.document_row(
                nav,
                record,
                manifest,
                len(chunks.chunks),
                diff.signatures[doc],
                revision,
                created,
                run.now,
            )
        ],
    )
    rows.add(SECTIONS, t.section_rows(record, nav, chunks, revision))
    rows.add(CHUNKS, t.chunk_rows(record, chunks, revision))
    if item.vectors is not None:
        rows.add(VECTORS, t.vector_rows(item, chunks, revision))
    resource_rows = t.resource_rows(record, item.directory, nav, chunks, revision)
    rows.add(RESOURCES, resource_rows, sum(len(r["data"]) for r in resource_rows))
    keywords = document_keywords((c.metadata.keywords, len(c.occurrences)) for c in chunks.chunks)
    run.node_keywords[doc] = keywords
    rows.add(
        GRAPH_NODES,
        [
            {
                "revision": revision,
                "namespace": run.namespace,
                "node_id": doc,
                "document_id": doc,
                "title": manifest.title,
                "keywords": keywords,
            }
        ],
    )


def _index_chunks(
    run: _DocumentWrite, item: PublishItem, chunks: ChunksFile, manifest: Manifest
) -> None:
    """A chunk in this document only, and not indexed yet, goes straight to the index; any
    other is merged (its places in this document added to its payload)."""
    record: SourceRecord = item.record
    doc = record.document_id
    state = run.state
    printed = any(manifest.page_labels)  # once per document, not per chunk
    for chunk in chunks.chunks:
        locations = [
            location(record, manifest, occ, printed, chunk.metadata.statement)
            for occ in chunk.occurrences
        ]
        payload = state.get(chunk.chunk_id)
        if payload is None and run.places[chunk.chunk_id] == 1:
            # Its only place, and not indexed yet: straight to the index.
            state.payloads.pop(chunk.chunk_id, None)
            payload = chunk_payload(item.directory, doc, chunk, locations)
            run.writer.add_document(index_document(payload))
            continue
        if payload is None:
            payload = chunk_payload(item.directory, doc, chunk, [])
            state.payloads[chunk.chunk_id] = payload
        elif stale_resource(payload, run.stale):
            payload["resource"] = chunk_resource(item.directory, doc, chunk)
        payload["occurrences"].extend(locations)
        run.merged.add(chunk.chunk_id)


def _write_graph_and_indices(
    tables: dict[str, Any],
    node_keywords: dict[str, list[str]],
    revision: int,
    namespace: str,
    diff: _Diff,
) -> None:
    """The changed documents' edges (an e-mail and its attachment get their `attachment` edge
    instead of a keyword one), then the indices."""
    pairs = attachment_pairs(
        {doc: item.record.attached_to for doc, item in diff.wanted.items()}, diff.changed
    )
    attached = {frozenset(pair) for pair in pairs}
    edge_rows = [
        row
        for row in t.edge_rows(tables[GRAPH_NODES], node_keywords, revision, namespace)
        if frozenset((row["source"], row["target"])) not in attached
    ]
    edge_rows += t.attachment_edge_rows(pairs, revision, namespace)
    if edge_rows:
        tables[GRAPH_EDGES].add(t.to_table(GRAPH_EDGES, edge_rows))
    t.ensure_indices(tables)
    for table in tables.values():
        if revision % 20 == 0 or t.unindexed_rows(table) > UNINDEXED_ROWS:
            table.optimize()  # compacts, and folds the new rows into the indices


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
