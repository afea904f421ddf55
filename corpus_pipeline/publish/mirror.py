"""Pushing a published revision into the object store, for query replicas on other machines
(they pull it with `corpus_pipeline.storage.mirror`, which describes the remote layout).

Compared against the remote's last file list, not a listing: a push that failed half-way is
completed by the next one, and files of earlier revisions are not sent again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from corpus_pipeline.contracts.published import (
    CURRENT,
    INDEX_LOCK_FILES,
    LANCE_DIR,
    read_pointer,
    revision_file_name,
)
from corpus_pipeline.contracts.search import RevisionFile, RevisionFiles, RevisionPointer
from corpus_pipeline.storage.mirror import (
    SEGMENTS,
    files_key,
    remote_dir,
    remote_files,
    remote_pointer,
)
from corpus_pipeline.storage.store import ObjectStore

# Rewritten in place by LanceDB (the newest-version hint; `_latest.manifest` in older formats).
_MUTABLE_NAMES = {"latest_version_hint.json", "_latest.manifest"}


@dataclass(frozen=True)
class MirrorReport:
    namespace: str
    revision: int
    files: int
    uploaded: int
    bytes_uploaded: int
    seconds: float


def revision_files(ns_dir: Path, pointer: RevisionPointer) -> RevisionFiles:
    """What a replica needs for `pointer`: its tantivy folder and the LanceDB tables (whole:
    a table's older versions are small manifests, and its data files are shared)."""
    files: list[RevisionFile] = []
    index_dir = ns_dir / pointer.tantivy_dir
    for item in sorted(index_dir.iterdir()):
        if item.name in INDEX_LOCK_FILES or not item.is_file():
            continue
        path = f"{pointer.tantivy_dir}/{item.name}"
        per_revision = item.name.endswith(".json")  # meta.json, .managed.json
        key = path if per_revision else f"{SEGMENTS}/{item.name}"
        files.append(
            RevisionFile(path=path, key=key, size=item.stat().st_size, mutable=per_revision)
        )
    lance = ns_dir / LANCE_DIR
    for item in sorted(p for p in lance.rglob("*") if p.is_file()):
        path = item.relative_to(ns_dir).as_posix()
        files.append(
            RevisionFile(
                path=path,
                key=path,
                size=item.stat().st_size,
                mutable=item.name in _MUTABLE_NAMES,
            )
        )
    return RevisionFiles(namespace=pointer.namespace, revision=pointer.revision, files=files)


def push(store: ObjectStore, published_dir: Path, namespace: str) -> MirrorReport | None:
    """Bring the store's copy of a namespace up to the local CURRENT (None when it already is)."""
    started = time.perf_counter()
    ns_dir = published_dir / namespace
    pointer = read_pointer(ns_dir)
    if pointer is None:
        return None
    remote = remote_dir(namespace)
    previous = remote_pointer(store, namespace)
    if previous == pointer:
        return None
    sent: dict[str, int] = {}
    if previous is not None:
        sent = {f.key: f.size for f in remote_files(store, namespace, previous).files}
    listing = revision_files(ns_dir, pointer)
    uploaded = size = 0
    for item in listing.files:
        if not item.mutable and sent.get(item.key) == item.size:
            continue
        store.put_file(ns_dir / item.path, f"{remote}/{item.key}")
        uploaded += 1
        size += item.size
    body = pointer.model_dump_json(indent=2).encode() + b"\n"
    store.put_bytes(f"{remote}/{files_key(pointer.revision)}", listing.model_dump_json().encode())
    store.put_bytes(f"{remote}/{revision_file_name(pointer.revision)}", body)
    store.put_bytes(f"{remote}/{CURRENT}", body)
    return MirrorReport(
        namespace=namespace,
        revision=pointer.revision,
        files=len(listing.files),
        uploaded=uploaded,
        bytes_uploaded=size,
        seconds=time.perf_counter() - started,
    )
