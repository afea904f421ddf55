"""A bounded LRU cache of complete answers.

The key covers everything that changes an answer: principal, namespace, revision and the whole
canonical request. The caller looks up with the revision it is about to serve from, so an
entry of an older revision is never returned, and the first answer stored for a namespace's
newer revision drops the older revisions' entries (they can never be hit again; a store that
publishes every few seconds otherwise filled the cache with them: +0.5 MB per revision in the
soak); only successful, complete answers are stored.
Counters are kept per namespace, so a key is shown the counts of its own namespaces only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class CacheKey:
    principal: str
    namespace: str
    revision: int
    kind: str
    request: str  # canonical JSON of the request model


@dataclass
class CacheCounts:
    """One namespace's share of the cache."""

    entries: int = 0
    bytes: int = 0
    hits: int = 0
    misses: int = 0


class AnswerCache:
    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[CacheKey, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self._counts: dict[str, CacheCounts] = {}
        self._revision: dict[str, int] = {}  # namespace → newest revision stored

    def _of(self, namespace: str) -> CacheCounts:
        return self._counts.setdefault(namespace, CacheCounts())

    def get(self, key: CacheKey) -> bytes | None:
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                self.misses += 1
                self._of(key.namespace).misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            self._of(key.namespace).hits += 1
            return value

    def put(self, key: CacheKey, value: bytes) -> None:
        if self.max_entries == 0 or len(value) > self.max_bytes:
            return
        with self._lock:
            if key.revision > self._revision.get(key.namespace, key.revision):
                self._drop_before(key.namespace, key.revision)
            self._revision[key.namespace] = max(
                key.revision, self._revision.get(key.namespace, key.revision)
            )
            old = self._entries.pop(key, None)
            if old is not None:
                self._count(key, old, -1)
            self._entries[key] = value
            self._count(key, value, 1)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                evicted_key, evicted = self._entries.popitem(last=False)
                self._count(evicted_key, evicted, -1)

    def _drop_before(self, namespace: str, revision: int) -> None:
        stale = [k for k in self._entries if k.namespace == namespace and k.revision < revision]
        for key in stale:
            self._count(key, self._entries.pop(key), -1)

    def _count(self, key: CacheKey, value: bytes, sign: int) -> None:
        counts = self._of(key.namespace)
        counts.entries += sign
        counts.bytes += sign * len(value)
        self._bytes += sign * len(value)

    def counts(self) -> dict[str, CacheCounts]:
        """Per namespace: entries, bytes, hits and misses (copies)."""
        with self._lock:
            return {namespace: replace(c) for namespace, c in self._counts.items()}

    @property
    def entries(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes
