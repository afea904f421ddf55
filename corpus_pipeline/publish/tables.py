"""LanceDB tables of a published namespace (one database per namespace folder).

Rows are per document (chunks keep one row per document that holds them, so deleting a
document is one `delete`); the search index deduplicates across documents instead.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

os.environ.setdefault("LANCE_LOG", "error")

DOCUMENTS = "documents"
SECTIONS = "sections"
CHUNKS = "chunks"
GRAPH_NODES = "graph_nodes"
GRAPH_EDGES = "graph_edges"
RESOURCES = "resources"
VECTORS = "vectors"

_STR_LIST = pa.list_(pa.string())
_TS = pa.timestamp("us", tz="UTC")

SCHEMAS: dict[str, pa.Schema] = {
    DOCUMENTS: pa.schema(
        [
            ("document_id", pa.string()),
            ("namespace", pa.string()),
            ("owner", pa.string()),
            ("status", pa.string()),
            ("active_revision", pa.int64()),
            ("source_file_name", pa.string()),
            ("format", pa.string()),
            ("title", pa.string()),
            ("source_kind", pa.string()),
            ("organizational_unit", pa.string()),
            ("document_date", pa.date32()),
            ("chunk_count", pa.int64()),
            # What the document reports on (`DocumentSubject`): null for most documents.
            ("entity", pa.string()),
            ("tickers", _STR_LIST),
            ("form_type", pa.string()),
            ("period_end", pa.date32()),
            ("fiscal_year", pa.int32()),
            ("fiscal_quarter", pa.int32()),
            ("signature", pa.string()),
            ("manifest", pa.string()),
            ("nav", pa.string()),
            ("created_at", _TS),
            ("updated_at", _TS),
        ]
    ),
    SECTIONS: pa.schema(
        [
            ("revision", pa.int64()),
            ("namespace", pa.string()),
            ("document_id", pa.string()),
            ("section_id", pa.string()),
            ("parent_id", pa.string()),
            ("path", _STR_LIST),
            ("title", pa.string()),
            ("level", pa.int32()),
            ("summary", pa.string()),
            ("sort_order", pa.int32()),
        ]
    ),
    CHUNKS: pa.schema(
        [
            ("revision", pa.int64()),
            ("namespace", pa.string()),
            ("document_id", pa.string()),
            ("chunk_id", pa.string()),
            ("chunk_type", pa.string()),
            ("content", pa.string()),
            ("searchable_text", pa.string()),
            ("source_path", pa.string()),
            ("section_path", _STR_LIST),
            ("section_id", pa.string()),
            ("section_ids", _STR_LIST),
            ("resource_path", pa.string()),
            ("pages", pa.list_(pa.int32())),
            ("metadata", pa.string()),
            ("sort_order", pa.int32()),
        ]
    ),
    GRAPH_NODES: pa.schema(
        [
            ("revision", pa.int64()),
            ("namespace", pa.string()),
            ("node_id", pa.string()),
            ("document_id", pa.string()),
            ("title", pa.string()),
            ("keywords", _STR_LIST),
        ]
    ),
    GRAPH_EDGES: pa.schema(
        [
            ("revision", pa.int64()),
            ("namespace", pa.string()),
            ("source", pa.string()),
            ("target", pa.string()),
            ("relation", pa.string()),
            ("score", pa.float64()),
            ("shared_keywords", _STR_LIST),
        ]
    ),
    # The bytes of every table/image file a document lists, so a revision serves exactly the
    # files it was published with (the artifact folder may be re-ingested after publishing).
    RESOURCES: pa.schema(
        [
            ("revision", pa.int64()),
            ("namespace", pa.string()),
            ("document_id", pa.string()),
            ("ref", pa.string()),
            ("kind", pa.string()),
            ("media_type", pa.string()),
            ("sha256", pa.string()),
            ("data", pa.large_binary()),
        ]
    ),
    # Dense vectors of the chunks (one row per document that holds a chunk, like CHUNKS), each
    # tagged with its space (`EmbeddingSpec.key`): sets of different models are never compared.
    VECTORS: pa.schema(
        [
            ("revision", pa.int64()),
            ("document_id", pa.string()),
            ("chunk_id", pa.string()),
            ("space", pa.string()),
            ("vector", pa.list_(pa.float32())),
        ]
    ),
}

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


def quote(value: str) -> str:
    """A SQL string literal for LanceDB filters."""
    return "'" + value.replace("'", "''") + "'"


def in_list(column: str, values: list[str]) -> str:
    return f"{column} IN ({', '.join(quote(v) for v in values)})"


def to_table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMAS[name])
