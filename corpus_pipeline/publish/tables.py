"""Writing the LanceDB tables of a published namespace (their layout is the reader contract,
`corpus_pipeline.contracts.published`): opening them, the rows of one document, appending
in bounded batches, the graph edges and the scalar indices.

Rows are per document (chunks keep one row per document that holds them, so deleting a
document is one `delete`); the search index deduplicates across documents instead.
"""

from __future__ import annotations

import hashlib
import os
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from corpus_pipeline.contracts import ChunksFile, DocNav, Manifest, SourceRecord
from corpus_pipeline.contracts.published import (
    CHUNKS,
    DOCUMENTS,
    GRAPH_EDGES,
    GRAPH_NODES,
    RESOURCES,
    SCHEMAS,
    SECTIONS,
    VECTORS,
    quote,
)
from corpus_pipeline.contracts.search import is_relative_ref
from corpus_pipeline.publish.artifacts import PublishItem, document_date
from corpus_pipeline.publish.graph import MIN_SHARED, related_edges
from corpus_pipeline.publish.sections import build_sections

os.environ.setdefault("LANCE_LOG", "error")

# Scalar indices that keep per-document work independent of the corpus size.
INDICES: dict[str, list[tuple[str, str]]] = {
    DOCUMENTS: [("document_id", "btree")],
    SECTIONS: [("document_id", "btree")],
    CHUNKS: [("document_id", "btree"), ("chunk_id", "btree")],
    GRAPH_NODES: [("document_id", "btree"), ("keywords", "label_list")],
    GRAPH_EDGES: [("source", "btree"), ("target", "btree")],
    RESOURCES: [("document_id", "btree")],
    VECTORS: [("document_id", "btree")],
}
# Resource bytes (images, table HTML) held in memory before they are appended.
LANCE_BATCH_BYTES = 64 * 1024 * 1024
# Above this many keywords the edge step reads every node instead of filtering by keyword.
EDGE_FILTER_MAX_KEYWORDS = 200


def to_table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMAS[name])


def open_tables(db: Any) -> dict[str, Any]:
    """Open (or create) every table; a table published by an older version gains the columns
    it lacks (all null for its rows until their documents are reprocessed)."""
    existing = set(db.list_tables().tables)
    out: dict[str, Any] = {}
    for name, schema in SCHEMAS.items():
        if name not in existing:
            out[name] = db.create_table(name, schema=schema)
            continue
        table = db.open_table(name)
        missing = [f for f in schema if f.name not in table.schema.names]
        if missing:
            table.add_columns(pa.schema(missing))
        out[name] = table
    return out


def ensure_indices(tables: dict[str, Any]) -> None:
    from lancedb.index import BTree, LabelList

    for name, specs in INDICES.items():
        table = tables[name]
        present = {tuple(i.columns) for i in table.list_indices()}
        if table.count_rows() == 0:
            continue
        for column, kind in specs:
            if (column,) not in present:
                table.create_index(column, config=BTree() if kind == "btree" else LabelList())


def unindexed_rows(table: Any) -> int:
    """The most rows any of the table's indices does not cover yet."""
    most = 0
    for index in table.list_indices():
        stats = table.index_stats(index.name)
        most = max(most, stats.num_unindexed_rows if stats is not None else 0)
    return most


class RowBatches:
    """LanceDB rows buffered per table and appended in batches of bounded size."""

    def __init__(self, tables: dict[str, Any], max_rows: int) -> None:
        self.tables = tables
        self.max_rows = max_rows
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
                self.tables[name].add(to_table(name, self.rows[name]))
        self.rows = {}
        self.payload_bytes = 0


# -- the rows of one document -----------------------------------------------------------------


def document_row(
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
        if (day := document_date(record, manifest))
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


def section_rows(
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


def chunk_rows(record: SourceRecord, chunks: ChunksFile, revision: int) -> list[dict[str, Any]]:
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


def vector_rows(item: PublishItem, chunks: ChunksFile, revision: int) -> list[dict[str, Any]]:
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


def resource_rows(
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


def edge_rows(
    nodes: Any, node_keywords: dict[str, list[str]], revision: int, namespace: str
) -> list[dict[str, Any]]:
    """Edges of the changed documents. One query reads the candidate nodes: those sharing a
    keyword with a changed document (every node when that keyword list is long)."""
    wanted = sorted({k for kws in node_keywords.values() if len(kws) >= MIN_SHARED for k in kws})
    if not wanted:
        return []
    query = nodes.search().select(["document_id", "keywords"]).limit(None)
    if len(wanted) <= EDGE_FILTER_MAX_KEYWORDS:
        query = query.where(f"array_has_any(keywords, [{', '.join(quote(k) for k in wanted)}])")
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


def attachment_edge_rows(
    pairs: list[tuple[str, str]], revision: int, namespace: str
) -> list[dict[str, Any]]:
    """One `attachment` edge from each e-mail (source) to a file attached to it (target)."""
    return [
        {
            "revision": revision,
            "namespace": namespace,
            "source": message,
            "target": attachment,
            "relation": "attachment",
            "score": 1.0,
            "shared_keywords": [],
        }
        for message, attachment in pairs
    ]
