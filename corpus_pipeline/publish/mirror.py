"""Published revisions mirrored through the object store, for query replicas on other machines.

The publisher writes a revision to its local folder; on a shared deployment (an S3 object
store) it then pushes that revision under `published/<namespace>/` in the store, and every
query replica pulls it to its own disk and serves it from there (memory-mapped index files,
no network on the request path).

Both sides lean on one property of the two engines: their data files are never rewritten.
A tantivy segment file or a LanceDB data, index, deletion or version-manifest file keeps its
content for life under its name, so a file already mirrored is never sent again; only the few
files an engine rewrites in place (`latest_version_hint.json`, a revision's `meta.json`) are
copied every time. Order gives consistency: every file of a revision first, then its file list,
then `CURRENT.json`. A replica that reads the remote CURRENT finds everything it names, builds
the revision beside the one it serves, and swaps its own CURRENT last (so its snapshot
manager loads the new revision exactly as it would after a local publish).

Remote layout below `published/<namespace>/`: `tantivy/segments/<file>` (shared by all
revisions), `tantivy/rev-<n>/meta.json`…, `lance/<table>.lance/…` (as on disk),
`revisions/<n>.json` + `<n>.files.json`, `CURRENT.json`.
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from corpus_pipeline.common.errors import CorpusError, MirrorError
from corpus_pipeline.contracts.search import RevisionFile, RevisionFiles, RevisionPointer
from corpus_pipeline.publish.publisher import (
    CURRENT,
    INDEX_LOCK_FILES,
    KEEP_INDEX_REVISIONS,
    gc_index_dirs,
    namespace_lock,
    read_pointer,
    write_pointer,
)
from corpus_pipeline.storage.store import ObjectStore

log = logging.getLogger("corpus.mirror")

REMOTE_ROOT = "published"
NAMESPACE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")  # as CorpusSettings.namespace
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


def remote_dir(namespace: str) -> str:
    return f"{REMOTE_ROOT}/{namespace}"


def _files_key(revision: int) -> str:
    return f"revisions/{revision:06d}.files.json"


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
        key = path if per_revision else f"tantivy/segments/{item.name}"
        files.append(
            RevisionFile(path=path, key=key, size=item.stat().st_size, mutable=per_revision)
        )
    lance = ns_dir / "lance"
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


def remote_pointer(store: ObjectStore, namespace: str) -> RevisionPointer | None:
    key = f"{remote_dir(namespace)}/{CURRENT}"
    if not store.exists(key):
        return None
    return RevisionPointer.model_validate_json(store.get_bytes(key))


def _remote_files(store: ObjectStore, namespace: str, pointer: RevisionPointer) -> RevisionFiles:
    data = store.get_bytes(f"{remote_dir(namespace)}/{_files_key(pointer.revision)}")
    return RevisionFiles.model_validate_json(data)


def push(store: ObjectStore, published_dir: Path, namespace: str) -> MirrorReport | None:
    """Bring the store's copy of a namespace up to the local CURRENT (None when it already is).

    Compared against the remote's last file list, not a listing: a push that failed half-way
    is completed by the next one, and files of earlier revisions are not sent again.
    """
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
        sent = {f.key: f.size for f in _remote_files(store, namespace, previous).files}
    listing = revision_files(ns_dir, pointer)
    uploaded = size = 0
    for item in listing.files:
        if not item.mutable and sent.get(item.key) == item.size:
            continue
        store.put_file(ns_dir / item.path, f"{remote}/{item.key}")
        uploaded += 1
        size += item.size
    body = pointer.model_dump_json(indent=2).encode() + b"\n"
    store.put_bytes(f"{remote}/{_files_key(pointer.revision)}", listing.model_dump_json().encode())
    store.put_bytes(f"{remote}/revisions/{pointer.revision:06d}.json", body)
    store.put_bytes(f"{remote}/{CURRENT}", body)
    return MirrorReport(
        namespace=namespace,
        revision=pointer.revision,
        files=len(listing.files),
        uploaded=uploaded,
        bytes_uploaded=size,
        seconds=time.perf_counter() - started,
    )


def _local_path(ns_dir: Path, namespace: str, relative: str) -> Path:
    """A listed path as a file below the namespace folder; anything else is refused (the list
    comes from the network)."""
    pure = PurePosixPath(relative)
    if pure.is_absolute() or not pure.parts or ".." in pure.parts or "\\" in relative:
        raise MirrorError(namespace, f"file path '{relative}' escapes the namespace folder")
    return ns_dir.joinpath(*pure.parts)


def _reuse_segment(ns_dir: Path, target: Path, size: int) -> bool:
    """Hard-link an index segment this replica already holds under another revision."""
    for sibling in sorted((ns_dir / "tantivy").glob(f"rev-*/{target.name}")):
        if sibling != target and sibling.stat().st_size == size:
            os.link(sibling, target)
            return True
    return False


def pull(store: ObjectStore, published_dir: Path, namespace: str) -> RevisionPointer | None:
    """Copy the store's current revision of a namespace to local disk and swap the local
    CURRENT to it; None when the local copy is already current. One process per machine does
    the work (the namespace lock); a failure leaves the local CURRENT where it was."""
    if not NAMESPACE.fullmatch(namespace):
        raise MirrorError(namespace, "not a namespace name")
    pointer = remote_pointer(store, namespace)
    ns_dir = published_dir / namespace
    if pointer is None or read_pointer(ns_dir) == pointer:
        return None
    if pointer.namespace != namespace:
        raise MirrorError(namespace, f"CURRENT names namespace '{pointer.namespace}'")
    with namespace_lock(ns_dir):
        if read_pointer(ns_dir) == pointer:  # another worker process pulled it meanwhile
            return None
        remote = remote_dir(namespace)
        for item in _remote_files(store, namespace, pointer).files:
            target = _local_path(ns_dir, namespace, item.path)
            if not item.mutable and target.is_file() and target.stat().st_size == item.size:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            if item.key.startswith("tantivy/segments/") and _reuse_segment(
                ns_dir, target, item.size
            ):
                continue
            partial = target.with_name(f".{target.name}.partial")
            store.get_file(f"{remote}/{item.key}", partial)
            if partial.stat().st_size != item.size:
                partial.unlink()
                raise MirrorError(namespace, f"'{item.key}' is not the {item.size} bytes listed")
            os.replace(partial, target)
        write_pointer(ns_dir, pointer)
        gc_index_dirs(ns_dir, KEEP_INDEX_REVISIONS)
    return pointer


class RemoteRevisions:
    """A replica's view of the store: pulls every namespace found there, at most once per
    `interval` seconds (the snapshot manager calls it on each of its polls)."""

    def __init__(self, store: ObjectStore, published_dir: Path, interval: float = 5.0) -> None:
        self.store = store
        self.published_dir = published_dir
        self.interval = interval
        self._next = 0.0

    def pull_all(self) -> dict[str, str]:
        """Namespace → error name for every namespace whose pull failed this time."""
        if time.monotonic() < self._next:
            return {}
        self._next = time.monotonic() + self.interval
        failures: dict[str, str] = {}
        try:
            namespaces = self.store.children(REMOTE_ROOT)
        except CorpusError as exc:
            log.warning("listing published revisions failed (%s)", type(exc).__name__)
            return {"*": type(exc).__name__}
        for namespace in namespaces:
            try:
                pointer = pull(self.store, self.published_dir, namespace)
            except Exception as exc:  # a broken namespace must not stop the others
                failures[namespace] = type(exc).__name__
                log.warning("pulling namespace %s failed (%s)", namespace, exc)
                continue
            if pointer is not None:
                log.info("namespace %s: revision %d pulled", namespace, pointer.revision)
        return failures
