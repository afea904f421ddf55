"""Code versions of the per-document assets: a hash of the sources each stage runs.

Dagster records an asset's code version with every materialisation and marks a partition stale
when the asset's current code version differs, so after a parser change the UI shows exactly
the documents parsed by the old code, and a backfill of the stale partitions reprocesses only
those. The hash is of the stage's own modules (file paths and bytes), so it changes when, and
only when, that code changes; no version number to remember to bump.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent

# Asset → the modules (files or packages, relative to corpus_pipeline/) whose code decides it.
STAGE_SOURCES: dict[str, tuple[str, ...]] = {
    "source_document": ("storage/store.py",),
    "document_profile": ("profiling",),
    "parsed_document": (
        "parsing",
        "structure/hierarchy.py",
        "structure/titles.py",
        "common/textedit.py",
        "finance",
    ),
    "document_chunks": ("structure/chunking.py", "enrich", "common/ids.py", "finance"),
    "document_nav": ("structure/nav.py",),
    "document_manifest": ("pipeline/stages.py", "quality/artifacts.py", "contracts"),
    "document_embeddings": ("embeddings/vectors.py",),
}


def source_hash(root: Path, sources: Iterable[str]) -> str:
    """16 hex digits of sha256 over each Python file's path (relative to `root`) and bytes."""
    digest = hashlib.sha256()
    files: set[Path] = set()
    for name in sources:
        path = root / name
        files.update(path.rglob("*.py") if path.is_dir() else [path])
    for file in sorted(files):
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@cache
def code_version(asset: str) -> str:
    return source_hash(PACKAGE, STAGE_SOURCES[asset])
