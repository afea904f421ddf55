"""Shared contracts: the pydantic models every stage and the query service agree on.

This package imports neither Dagster nor FastAPI, so `query_service` (and notebooks) can use it
without the pipeline's heavy dependencies. A test guards that rule.
"""

from corpus_pipeline.contracts.artifacts import (
    SCHEMA_VERSION,
    Chunk,
    ChunkMetadata,
    ChunksFile,
    ChunkType,
    ConnectTo,
    Conversion,
    Diagnostic,
    DiagnosticsFile,
    DocNav,
    DocumentSubject,
    HeadingNode,
    HeadingsFile,
    HierarchyNode,
    Manifest,
    Occurrence,
    Relation,
    ResourceEntry,
    SectionNode,
    SourceInfo,
    StatementType,
    Statistics,
)
from corpus_pipeline.contracts.profile import (
    DocumentProfile,
    FileFormat,
    PdfPageFacts,
    PdfProfile,
    PdfTocEntry,
    RoutingDecision,
)
from corpus_pipeline.contracts.rows import PARSED_ROW_SCHEMA, LinkSpan, ParsedRow, RowType
from corpus_pipeline.contracts.source import SourceKind, SourceRecord

__all__ = [
    "PARSED_ROW_SCHEMA",
    "SCHEMA_VERSION",
    "Chunk",
    "ChunkMetadata",
    "ChunkType",
    "ChunksFile",
    "ConnectTo",
    "Conversion",
    "Diagnostic",
    "DiagnosticsFile",
    "DocNav",
    "DocumentProfile",
    "DocumentSubject",
    "FileFormat",
    "HeadingNode",
    "HeadingsFile",
    "HierarchyNode",
    "LinkSpan",
    "Manifest",
    "Occurrence",
    "ParsedRow",
    "PdfPageFacts",
    "PdfProfile",
    "PdfTocEntry",
    "Relation",
    "ResourceEntry",
    "RoutingDecision",
    "RowType",
    "SectionNode",
    "SourceInfo",
    "SourceKind",
    "SourceRecord",
    "StatementType",
    "Statistics",
]
