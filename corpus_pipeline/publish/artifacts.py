"""What the publisher reads of a document: its committed artifacts, their signature (whether
the document changed since the last publish) and the date it is filed under."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus_pipeline.contracts import ChunksFile, DocNav, Manifest, SourceRecord

SIGNATURES = "signatures.json"


@dataclass(frozen=True)
class PublishItem:
    """A document whose artifacts should be published."""

    record: SourceRecord
    directory: Path
    # The document's vector file of the configured space (`embeddings.vectors_path`), if any.
    vectors: Path | None = None


def artifact_signature(directory: Path) -> str:
    """Hash of the manifest's file list: changes exactly when any artifact file changes."""
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    return hashlib.sha256(json.dumps(manifest["files"], sort_keys=True).encode()).hexdigest()


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


def load_artifacts(directory: Path) -> tuple[ChunksFile, DocNav, Manifest]:
    return (
        ChunksFile.model_validate_json((directory / "chunks.json").read_text(encoding="utf-8")),
        DocNav.model_validate_json((directory / "doc_nav.json").read_text(encoding="utf-8")),
        Manifest.model_validate_json((directory / "manifest.json").read_text(encoding="utf-8")),
    )


def chunk_places(directories: Iterable[Path]) -> Counter[str]:
    """How many chunk entries of these documents carry each id (a cheap first pass over
    chunks.json, without building models)."""
    places: Counter[str] = Counter()
    for directory in directories:
        data = json.loads((directory / "chunks.json").read_bytes())
        places.update(chunk["chunk_id"] for chunk in data["chunks"])
    return places


def document_date(record: SourceRecord, manifest: Manifest) -> str | None:
    """The uploader's date, else the one the file declares; a manifest written before file
    dates were read carries neither, so the uploader's is read from the record."""
    if manifest.document_date:
        return manifest.document_date
    return record.document_date.isoformat() if record.document_date else None
