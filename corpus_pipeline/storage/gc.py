"""Garbage collection: stored bytes and per-document folders that no registry record references.

The registry's records are the only roots. A blob under `sources/sha256/` is kept while a
record points at it; a folder under `artifacts/`, `work/` or `embeddings/` while a record has
its name as document id. Published revisions are never touched: a revision serves its own
copies (LanceDB tables with the resources' bytes, the index), so removing an unregistered
document's folders cannot change the revision in use, and its next publish leaves the document
out anyway. Anything younger than `min_age` is kept however unreferenced it looks: a file being
registered has its bytes stored before its record is written, and a document being committed
is staged (`.staging-…`) before it is renamed into place.

Candidates are listed before the records are read, so a record written meanwhile refers to a
blob that is either listed as young or not listed at all. A registration that reuses an old
blob at the very moment it is removed stores it again (`SourceRegistry.register` checks after
writing its record).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import SourceRecord
from corpus_pipeline.storage.store import SOURCES_PREFIX, ObjectStore, SourceRegistry

DEFAULT_MIN_AGE = timedelta(hours=1)
Kind = Literal["blob", "artifacts", "work", "embeddings"]


@dataclass(frozen=True)
class Garbage:
    """One unreferenced thing: an object key, or a folder relative to CORPUS_HOME."""

    kind: Kind
    location: str
    size_bytes: int


@dataclass
class GcReport:
    """What a pass removed (or, dry, would remove) and what it kept although unreferenced."""

    dry_run: bool
    min_age: timedelta
    removed: list[Garbage] = field(default_factory=list)
    kept_young: list[Garbage] = field(default_factory=list)

    @property
    def removed_bytes(self) -> int:
        return sum(g.size_bytes for g in self.removed)

    def summary(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        minutes = int(self.min_age.total_seconds() // 60)
        young = (
            f"; kept {len(self.kept_young)} unreferenced younger than {minutes} min"
            if self.kept_young
            else ""
        )
        return f"gc: {verb} {len(self.removed)} ({self.removed_bytes:,} bytes){young}"


def collect_garbage(
    settings: CorpusSettings,
    *,
    dry_run: bool = False,
    min_age: timedelta = DEFAULT_MIN_AGE,
    now: datetime | None = None,
) -> GcReport:
    """Remove (or with `dry_run` only list) what no registry record references and is older
    than `min_age`. A registry that cannot be read whole raises and removes nothing."""
    store = ObjectStore(settings.object_store)
    cutoff = (now or datetime.now(UTC)) - min_age
    blobs = store.list(SOURCES_PREFIX)
    roots: dict[Kind, Path] = {
        "artifacts": settings.artifacts_dir,
        "work": settings.work_dir,
        "embeddings": settings.embeddings_dir,
    }
    folders = {kind: _children(root) for kind, root in roots.items()}
    records = SourceRegistry(store).records()  # after the listings: see the module's docstring
    referenced_keys = {r.object_key for r in records}
    referenced_ids = {r.document_id for r in records}
    report = GcReport(dry_run=dry_run, min_age=min_age)
    for key in blobs:
        if key in referenced_keys or not store.exists(key):  # gone meanwhile: nothing to do
            continue
        size, modified = store.stat(key)
        item = Garbage("blob", key, size)
        if modified is None or modified > cutoff:
            report.kept_young.append(item)
            continue
        if not dry_run:
            store.delete(key)
        report.removed.append(item)
    for kind, paths in folders.items():
        for path in paths:
            if path.name in referenced_ids:
                continue
            try:
                link = path.is_symlink()  # never ours: the link goes, never what it points to
                size = 0 if link else _size(path)
                item = Garbage(kind, path.relative_to(settings.home).as_posix(), size)
                if datetime.fromtimestamp(path.lstat().st_mtime, UTC) > cutoff:
                    report.kept_young.append(item)
                    continue
                if not dry_run and link:
                    path.unlink()
                elif not dry_run:
                    shutil.rmtree(path)
            except FileNotFoundError:  # removed meanwhile (a document forgotten): nothing to do
                continue
            report.removed.append(item)
    return report


def _children(root: Path) -> list[Path]:
    """The per-document folders under a root (leftover `.staging-`/`.trash-` folders of an
    interrupted commit among them: no record has their name)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def forget_document(settings: CorpusSettings, document_id: str) -> SourceRecord:
    """Forget a document: its record, its stored bytes (unless another document holds the same
    content), artifacts, vectors and working files; the next publish of its namespace leaves it
    out."""
    record = SourceRegistry(ObjectStore(settings.object_store)).delete(document_id)
    shutil.rmtree(settings.artifacts_dir / document_id, ignore_errors=True)
    shutil.rmtree(settings.work_dir / document_id, ignore_errors=True)
    shutil.rmtree(settings.embeddings_dir / document_id, ignore_errors=True)
    return record
