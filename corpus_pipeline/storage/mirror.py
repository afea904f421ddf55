"""Published revisions mirrored through the object store, for query replicas on other machines.

The publisher writes a revision to its local folder; on a shared deployment (an S3 object
store) it then pushes that revision under `published/<namespace>/` in the store
(`corpus_pipeline.publish.mirror`), and every query replica pulls it to its own disk (here) and
serves it from there (memory-mapped index files, no network on the request path).

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
from pathlib import Path, PurePosixPath

from corpus_pipeline.common.errors import CorpusError, MirrorError
from corpus_pipeline.contracts.published import (
    CURRENT,
    KEEP_INDEX_REVISIONS,
    TANTIVY_DIR,
    gc_index_dirs,
    namespace_lock,
    read_pointer,
    write_pointer,
)
from corpus_pipeline.contracts.search import RevisionFiles, RevisionPointer
from corpus_pipeline.storage.store import ObjectStore

log = logging.getLogger("corpus.mirror")

REMOTE_ROOT = "published"
NAMESPACE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")  # as CorpusSettings.namespace
# Where a remote index segment is kept (one copy for every revision that holds it).
SEGMENTS = "tantivy/segments"


def remote_dir(namespace: str) -> str:
    return f"{REMOTE_ROOT}/{namespace}"


def files_key(revision: int) -> str:
    """The key (below the namespace's remote folder) of a revision's file list."""
    return f"revisions/{revision:06d}.files.json"


def remote_pointer(store: ObjectStore, namespace: str) -> RevisionPointer | None:
    key = f"{remote_dir(namespace)}/{CURRENT}"
    if not store.exists(key):
        return None
    return RevisionPointer.model_validate_json(store.get_bytes(key))


def remote_files(store: ObjectStore, namespace: str, pointer: RevisionPointer) -> RevisionFiles:
    data = store.get_bytes(f"{remote_dir(namespace)}/{files_key(pointer.revision)}")
    return RevisionFiles.model_validate_json(data)


def _local_path(ns_dir: Path, namespace: str, relative: str) -> Path:
    """A listed path as a file below the namespace folder; anything else is refused (the list
    comes from the network)."""
    pure = PurePosixPath(relative)
    if pure.is_absolute() or not pure.parts or ".." in pure.parts or "\\" in relative:
        raise MirrorError(namespace, f"file path '{relative}' escapes the namespace folder")
    return ns_dir.joinpath(*pure.parts)


def _reuse_segment(ns_dir: Path, target: Path, size: int) -> bool:
    """Hard-link an index segment this replica already holds under another revision."""
    for sibling in sorted((ns_dir / TANTIVY_DIR).glob(f"rev-*/{target.name}")):
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
        for item in remote_files(store, namespace, pointer).files:
            target = _local_path(ns_dir, namespace, item.path)
            if not item.mutable and target.is_file() and target.stat().st_size == item.size:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            if item.key.startswith(f"{SEGMENTS}/") and _reuse_segment(ns_dir, target, item.size):
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
