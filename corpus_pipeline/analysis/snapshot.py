"""The published snapshot as frames: each namespace read at the revision its `CURRENT.json`
names (through `query_service.snapshot.revision`, the query service's own reader), so a frame
holds exactly one consistent revision per namespace, the one being served."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import polars as pl

from corpus_pipeline.analysis.frames import UTC_TIME, Home, from_arrow, settings_of, typed_frame
from corpus_pipeline.contracts.artifacts import Manifest, Statistics
from corpus_pipeline.contracts.published import (
    CHUNKS,
    CURRENT,
    DOCUMENTS,
    GRAPH_EDGES,
    GRAPH_NODES,
    SCHEMAS,
    SECTIONS,
    read_pointer,
)
from query_service.snapshot.revision import Revision, open_revision


def namespaces(home: Home) -> list[str]:
    """The namespaces with a published revision, sorted."""
    published = settings_of(home).published_dir
    if not published.is_dir():
        return []
    return sorted(p.name for p in published.iterdir() if (p / CURRENT).is_file())


def _revisions(home: Home, namespace: str | None) -> Iterator[Revision]:
    published = settings_of(home).published_dir
    for name in [namespace] if namespace else namespaces(home):
        if read_pointer(published / name) is not None:
            yield open_revision(published, name)


def revisions(home: Home) -> pl.DataFrame:
    """One row per namespace: the revision served now, when it was published, its counts."""
    published = settings_of(home).published_dir
    rows = [
        p.model_dump(include={"namespace", "revision", "created_at", "documents", "chunks"})
        for name in namespaces(home)
        if (p := read_pointer(published / name)) is not None
    ]
    schema = {
        "namespace": pl.String,
        "revision": pl.Int64,
        "created_at": UTC_TIME,
        "documents": pl.Int64,
        "chunks": pl.Int64,
    }
    return typed_frame(rows, schema)


def _table(home: Home, name: str, namespace: str | None, columns: list[str]) -> pl.DataFrame:
    """A published table of every namespace (or one), at each one's current revision."""
    frames = [
        from_arrow(rev.table(name).search().select(columns).limit(None).to_arrow())
        for rev in _revisions(home, namespace)
        if name in rev.pointer.lance_versions
    ]
    empty = from_arrow(SCHEMAS[name].empty_table().select(columns))
    return pl.concat([empty, *frames], how="vertical_relaxed").select(columns)


_DOCUMENT_COLUMNS = [
    "namespace",
    "document_id",
    "source_file_name",
    "format",
    "title",
    "source_kind",
    "organizational_unit",
    "document_date",
    "chunk_count",
    "entity",
    "form_type",
    "period_end",
    "created_at",
    "updated_at",
    "manifest",
]


def _manifest_figures(text: str) -> dict[str, Any]:
    manifest = Manifest.model_validate_json(text)
    return {
        **manifest.statistics.model_dump(),
        "warnings": manifest.diagnostics_count.get("warning", 0),
        "parser": manifest.parser,
    }


def documents(home: Home, namespace: str | None = None) -> pl.DataFrame:
    """One row per published document: its identity, format and dates, and its manifest's
    figures (`pages`, `sections`, `headings`, `tables`, `images`, `tokens`, chunks by type,
    `warnings`; `pages` is null for formats without pages)."""
    frame = _table(home, DOCUMENTS, namespace, _DOCUMENT_COLUMNS)
    schema: dict[str, Any] = {
        name: pl.Boolean if name == "truncated" else pl.Int64 for name in Statistics.model_fields
    }
    schema |= {"warnings": pl.Int64, "parser": pl.String}
    figures = typed_frame([_manifest_figures(m) for m in frame["manifest"]], schema)
    return frame.drop("manifest").hstack(figures).sort("namespace", "source_file_name")


def sections(home: Home, namespace: str | None = None) -> pl.DataFrame:
    """One row per section of each document's tree, in document order: `level` is the heading
    level, `depth` the section's depth in the tree (1 for a top section)."""
    columns = [
        *["namespace", "document_id", "section_id", "parent_id"],
        *["title", "level", "path", "sort_order"],
    ]
    frame = _table(home, SECTIONS, namespace, columns)
    return frame.with_columns(depth=pl.col("path").list.len()).sort(
        "namespace", "document_id", "sort_order"
    )


def chunks(home: Home, namespace: str | None = None) -> pl.DataFrame:
    """One row per chunk of each document (a chunk two documents hold is a row of each): its
    type, section, pages, content, `tokens` (o200k) and `length` (characters)."""
    columns = [
        *["namespace", "document_id", "chunk_id", "chunk_type", "section_id"],
        *["section_path", "pages", "sort_order", "content", "metadata"],
    ]
    frame = _table(home, CHUNKS, namespace, columns)
    figures = {
        f: pl.col("metadata").str.json_path_match(f"$.{f}").cast(pl.Int64)
        for f in ("tokens", "length")
    }
    return (
        frame.with_columns(**figures)
        .drop("metadata")
        .sort("namespace", "document_id", "sort_order")
    )


class Graph(NamedTuple):
    """The document graph: one node per document, an edge per pair of related documents."""

    nodes: pl.DataFrame
    edges: pl.DataFrame


def graph(home: Home, namespace: str | None = None) -> Graph:
    """The published document graph; edges join documents that share top keywords (`score` is
    their overlap coefficient, `shared_keywords` what they share)."""
    node_columns = ["namespace", "node_id", "document_id", "title", "keywords"]
    nodes = _table(home, GRAPH_NODES, namespace, node_columns)
    edge_columns = ["namespace", "source", "target", "relation", "score", "shared_keywords"]
    return Graph(nodes, _table(home, GRAPH_EDGES, namespace, edge_columns))
