"""The served snapshot: the current revision of every namespace, swapped atomically.

A background thread polls each namespace's CURRENT pointer; a new revision is opened and
warmed completely (index, searcher, every LanceDB table) before it replaces the old one in a
single reference assignment. Requests take their Revision once at the start and finish on it.
A revision that fails to load is logged and the previous one keeps serving.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from corpus_pipeline.common.memory import trim_heap
from corpus_pipeline.common.periodic import Periodic
from corpus_pipeline.contracts.published import TABLES
from corpus_pipeline.storage.mirror import RemoteRevisions
from corpus_pipeline.storage.store import ObjectStore
from query_service.snapshot.revision import (
    NamespaceNotFound,
    Revision,
    open_revision,
    read_current_pointer,
)

log = logging.getLogger("corpus.query_service")


class SnapshotManager:
    def __init__(
        self,
        published_dir: Path,
        reload_seconds: float = 1.0,
        opener: Callable[[Path, str], Revision] | None = None,
        remote: RemoteRevisions | None = None,
    ) -> None:
        self.published_dir = published_dir
        self.remote = remote
        self.reload_seconds = reload_seconds
        self._open = opener or _open_warm
        self._revisions: dict[str, Revision] = {}
        self._reloader = Periodic("snapshot-reloader", reload_seconds, self.refresh)
        self.failures: dict[str, str] = {}

    def start(self) -> None:
        self.refresh()
        self._reloader.start()

    def stop(self) -> None:
        self._reloader.stop(timeout=5)

    def refresh(self) -> None:
        """Load every namespace whose CURRENT pointer names a revision not yet served (after
        pulling new revisions from the object store, on a replica of a shared deployment)."""
        if self.remote is not None:
            self.failures.update(self.remote.pull_all())
        if not self.published_dir.is_dir():
            return
        swapped = False
        for ns_dir in sorted(self.published_dir.iterdir()):
            namespace = ns_dir.name
            try:
                pointer = read_current_pointer(self.published_dir, namespace)
            except NamespaceNotFound:
                continue
            except (OSError, ValueError) as exc:
                self._failed(namespace, exc)
                continue
            served = self._revisions.get(namespace)
            if served is not None and served.pointer == pointer:
                continue
            try:
                revision = self._open(self.published_dir, namespace)
            except Exception as exc:  # any load failure must leave the old revision serving
                self._failed(namespace, exc)
                continue
            served = None  # the replaced revision is freed once no request holds it
            self._revisions = {**self._revisions, namespace: revision}
            self.failures.pop(namespace, None)
            log.info("namespace %s now serves revision %d", namespace, revision.number)
            swapped = True
        if swapped:
            release_memory()

    def _failed(self, namespace: str, exc: BaseException) -> None:
        self.failures[namespace] = type(exc).__name__
        log.warning(
            "revision of namespace %s failed to load (%s); keeping the previous one",
            namespace,
            type(exc).__name__,
        )

    def current(self, namespace: str) -> Revision:
        revision = self._revisions.get(namespace)
        if revision is None:
            raise NamespaceNotFound(namespace)
        return revision

    def all(self) -> dict[str, Revision]:
        return dict(self._revisions)

    @property
    def ready(self) -> bool:
        return bool(self._revisions)


def release_memory() -> None:
    """Once a replaced revision's memory is free, its pages go back to the system."""
    trim_heap()


def remote_revisions(
    object_store_url: str, published_dir: Path, poll_seconds: float
) -> RemoteRevisions | None:
    """The store this replica pulls revisions from: the pipeline's S3 object store when one is
    configured (`object_store_url`); none when the service reads the pipeline's own folder."""
    if not object_store_url:
        return None
    store = ObjectStore(object_store_url)
    if store.is_local:
        return None
    return RemoteRevisions(store, published_dir, poll_seconds)


def _open_warm(published_dir: Path, namespace: str) -> Revision:
    revision = open_revision(published_dir, namespace)
    for name in TABLES:
        revision.table(name)
    return revision
