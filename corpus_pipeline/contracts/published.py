"""The published revision as both sides see it: the reader contract between the publisher
(`corpus_pipeline.publish`) and every reader (the query service, a replica's mirror, `doctor`).

A namespace folder below the published directory holds:

- `CURRENT.json`: the pointer (`RevisionPointer`) naming the served revision, swapped atomically
  (`os.replace`) after everything it names is written; `revisions/<n>.json` keeps each one;
- `tantivy/rev-<n>/`: the channel index of revision n (segments hard-linked between
  revisions; the last KEEP_INDEX_REVISIONS folders stay, so a reader finishes on its own);
- `lance/`: one LanceDB database whose tables (below) a pointer checks out at the versions it
  names (rows per document, chunks keep one row per document that holds them);
- `.publish.lock`: held by whoever writes the folder (the publisher, or a replica's pull).

Readers open a revision by its pointer only, never through publisher code; what they may rely
on is here: the file names, the table names and columns, the section tree's order, and the SQL
filter quoting of LanceDB.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from corpus_pipeline.contracts.search import RevisionPointer

# -- files of a namespace folder ---------------------------------------------------------------

CURRENT = "CURRENT.json"
LANCE_DIR = "lance"
TANTIVY_DIR = "tantivy"
REVISIONS_DIR = "revisions"
PUBLISH_LOCK = ".publish.lock"
# Lock files of a tantivy index folder: never copied, linked or mirrored.
INDEX_LOCK_FILES = {".tantivy-writer.lock", ".tantivy-meta.lock"}
# Index folders kept on disk (the newest ones): a request started on an older revision ends on it.
KEEP_INDEX_REVISIONS = 3


def index_dir_name(revision: int) -> str:
    """A revision's tantivy folder, relative to the namespace folder (`tantivy/rev-000042`)."""
    return f"{TANTIVY_DIR}/rev-{revision:06d}"


def revision_file_name(revision: int) -> str:
    """Where a revision's pointer is kept, relative to the namespace folder."""
    return f"{REVISIONS_DIR}/{revision:06d}.json"


# -- the pointer --------------------------------------------------------------------------------


def read_pointer(ns_dir: Path) -> RevisionPointer | None:
    """The namespace folder's current pointer; None when nothing was published there."""
    path = ns_dir / CURRENT
    if not path.is_file():
        return None
    return RevisionPointer.model_validate_json(path.read_text(encoding="utf-8"))


def write_pointer(ns_dir: Path, pointer: RevisionPointer) -> None:
    """Keep the pointer under `revisions/`, then swap CURRENT to it atomically (fsynced first):
    a reader sees the old revision or the new one, never a mix."""
    revisions = ns_dir / REVISIONS_DIR
    revisions.mkdir(exist_ok=True)
    data = pointer.model_dump_json(indent=2) + "\n"
    (ns_dir / revision_file_name(pointer.revision)).write_text(data, encoding="utf-8")
    tmp = ns_dir / f".{CURRENT}.tmp"
    tmp.write_text(data, encoding="utf-8")
    with tmp.open("rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, ns_dir / CURRENT)


# -- writers of a namespace folder --------------------------------------------------------------


@contextmanager
def namespace_lock(ns_dir: Path) -> Iterator[None]:
    """The folder's one writer at a time (across processes: a file lock)."""
    ns_dir.mkdir(parents=True, exist_ok=True)
    with (ns_dir / PUBLISH_LOCK).open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def gc_index_dirs(ns_dir: Path, keep: int) -> None:
    """Remove all but the newest `keep` index folders."""
    dirs = sorted((ns_dir / TANTIVY_DIR).glob("rev-*"))
    for old in dirs[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


# -- the LanceDB tables -------------------------------------------------------------------------

DOCUMENTS = "documents"
SECTIONS = "sections"
CHUNKS = "chunks"
GRAPH_NODES = "graph_nodes"
GRAPH_EDGES = "graph_edges"
RESOURCES = "resources"
VECTORS = "vectors"

_STR_LIST = pa.list_(pa.string())
_TS = pa.timestamp("us", tz="UTC")
# The columns a row of a revision's table leads with: the revision it belongs to, its
# namespace, and (in a table with rows per document) its document.
_REVISION_COLUMNS = [("revision", pa.int64()), ("namespace", pa.string())]
_DOCUMENT_COLUMNS = [*_REVISION_COLUMNS, ("document_id", pa.string())]

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
            *_DOCUMENT_COLUMNS,
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
            *_DOCUMENT_COLUMNS,
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
            *_REVISION_COLUMNS,
            ("node_id", pa.string()),
            ("document_id", pa.string()),
            ("title", pa.string()),
            ("keywords", _STR_LIST),
        ]
    ),
    GRAPH_EDGES: pa.schema(
        [
            *_REVISION_COLUMNS,
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
            *_DOCUMENT_COLUMNS,
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
# Every table of a revision, in the order they are opened (a pointer names a version of each;
# one published before a table existed lacks it).
TABLES: tuple[str, ...] = tuple(SCHEMAS)


def quote(value: str) -> str:
    """A SQL string literal for LanceDB filters."""
    return "'" + value.replace("'", "''") + "'"


def in_list(column: str, values: list[str]) -> str:
    return f"{column} IN ({', '.join(quote(v) for v in values)})"


# -- the section tree ---------------------------------------------------------------------------


def descendants(links: Iterable[tuple[str, str | None]], roots: set[str]) -> set[str]:
    """`roots` and every section below them; `links` are (section_id, parent_id) pairs in
    document order (the SECTIONS table's `sort_order`: parents first, so one pass suffices)."""
    found = set(roots)
    for section_id, parent_id in links:
        if parent_id is not None and parent_id in found:
            found.add(section_id)
    return found
