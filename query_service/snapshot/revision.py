"""A published revision opened for reading: the tantivy index of that revision and the LanceDB
tables checked out at the versions its pointer names (read-only, immune to later writes)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tantivy

from corpus_pipeline.contracts.published import CHUNKS, CURRENT, DOCUMENTS, LANCE_DIR
from corpus_pipeline.contracts.search import RevisionPointer
from corpus_pipeline.index import channels as ch
from query_service.snapshot.documents import DocumentCards, load_cards
from query_service.snapshot.routing import Router

os.environ.setdefault("LANCE_LOG", "error")


class NamespaceNotFound(LookupError):
    """No published revision exists for the namespace."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        super().__init__(f"namespace '{namespace}' has no published revision")


@dataclass
class Revision:
    namespace: str
    pointer: RevisionPointer
    directory: Path
    index: tantivy.Index
    searcher: tantivy.Searcher
    # The index's fields: a revision published by an earlier schema lacks the newer ones (the
    # page fields), and searches skip what it cannot answer.
    fields: frozenset[str] = frozenset(ch.INDEX_FIELDS)
    _tables: dict[str, Any] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _cards: DocumentCards | None = None
    _memo: dict[str, Any] = field(default_factory=dict)

    @property
    def number(self) -> int:
        return self.pointer.revision

    def table(self, name: str) -> Any:
        """A LanceDB table at this revision's version (opened once, then shared)."""
        with self._lock:
            if name not in self._tables:
                import lancedb

                db = lancedb.connect(str(self.directory / LANCE_DIR))
                table = db.open_table(name)
                table.checkout(self.pointer.lance_versions[name])
                self._tables[name] = table
            return self._tables[name]

    def rows(
        self, name: str, where: str | None = None, columns: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """Every row of a table (those `where` selects, a LanceDB SQL filter), with all its
        columns or `columns`."""
        query = self.table(name).search()
        if where is not None:
            query = query.where(where)
        if columns is not None:
            query = query.select(columns)
        rows: list[dict[str, Any]] = query.limit(None).to_list()
        return rows

    def memo(self, key: str, factory: Callable[[], Any]) -> Any:
        """A reader's derived state shared by every request on this revision (a revision never
        changes, so what is read from it once stays true until the next one is loaded). The
        factory may open the revision's tables: the lock is reentrant."""
        with self._lock:
            if key not in self._memo:
                self._memo[key] = factory()
            return self._memo[key]

    def cards(self) -> DocumentCards:
        """The documents' cards for the document prior (built on first use, then shared: a
        revision never changes)."""
        if self._cards is None:
            cards = load_cards(self.table(DOCUMENTS), self.table(CHUNKS))
            with self._lock:
                self._cards = self._cards or cards
        return self._cards

    def router(self) -> Router:
        """The documents' issuers and periods, for entity and period routing (read once)."""

        def load() -> Router:
            return Router.from_rows(self.rows(DOCUMENTS, columns=["document_id", "manifest"]))

        router: Router = self.memo("router", load)
        return router


def read_current_pointer(published_dir: Path, namespace: str) -> RevisionPointer:
    path = published_dir / namespace / CURRENT
    if not path.is_file():
        raise NamespaceNotFound(namespace)
    return RevisionPointer.model_validate_json(path.read_text(encoding="utf-8"))


def open_revision(
    published_dir: Path, namespace: str, pointer: RevisionPointer | None = None
) -> Revision:
    """Open the namespace's current revision (or the given pointer's) fully before returning."""
    pointer = pointer or read_current_pointer(published_dir, namespace)
    directory = published_dir / namespace
    index = ch.open_index(directory / pointer.tantivy_dir)
    index.config_reader(reload_policy="Manual")
    index.reload()
    return Revision(
        namespace=namespace,
        pointer=pointer,
        directory=directory,
        index=index,
        searcher=index.searcher(),
        fields=frozenset(ch.field_names(directory / pointer.tantivy_dir)),
    )
