"""A bounded LRU cache of complete answers.

The key covers everything that changes an answer: principal, namespace, revision and the whole
canonical request. The caller looks up with the revision it is about to serve from, so an
entry of an older revision is never returned; only successful, complete answers are stored.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True)
class CacheKey:
    principal: str
    namespace: str
    revision: int
    kind: str
    request: str  # canonical JSON of the request model


class AnswerCache:
    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[CacheKey, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: CacheKey) -> bytes | None:
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: CacheKey, value: bytes) -> None:
        if self.max_entries == 0 or len(value) > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(old)
            self._entries[key] = value
            self._bytes += len(value)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= len(evicted)

    @property
    def entries(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes
