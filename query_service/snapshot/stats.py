"""Access statistics: how often each chunk and document was returned, and when last.

Recording is a queue append on the request path; a background thread aggregates and flushes
batches into SQLite next to the corpus (`<published>/<namespace>/access_stats.sqlite`). The
statistics never touch source content. As a ranking prior (off unless
`CORPUS_ACCESS_PRIOR_WEIGHT` > 0) a result's fused score gains
`weight * log1p(hits) / log1p(max hits in the namespace)`.
"""

from __future__ import annotations

import logging
import math
import queue
import sqlite3
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from corpus_pipeline.common.periodic import Periodic

log = logging.getLogger("corpus.query_service")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunk_hits (chunk_id TEXT PRIMARY KEY, document_id TEXT NOT NULL,
                                       hits INTEGER NOT NULL, last_hit TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS document_hits (document_id TEXT PRIMARY KEY, hits INTEGER NOT NULL,
                                          last_hit TEXT NOT NULL);
"""

Hit = tuple[str, str, str]  # namespace, chunk_id, document_id


class AccessStats:
    def __init__(self, published_dir: Path, flush_seconds: float = 1.0) -> None:
        self.published_dir = published_dir
        self.flush_seconds = flush_seconds
        self._queue: queue.SimpleQueue[Hit] = queue.SimpleQueue()
        self._flusher = Periodic("access-stats", flush_seconds, self._flush_logged)
        self._chunk_hits: dict[str, Counter[str]] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        self._flusher.start()

    def stop(self) -> None:
        self._flusher.stop(timeout=10)
        self.flush()

    def record(self, namespace: str, hits: list[tuple[str, str]]) -> None:
        """(chunk_id, document_id) pairs returned by one answer; O(1) per pair, no I/O."""
        for chunk_id, document_id in hits:
            self._queue.put((namespace, chunk_id, document_id))

    def _flush_logged(self) -> None:
        """A flush in the background: a failed one is logged, and its hits wait for the next."""
        try:
            self.flush()
        except (sqlite3.Error, OSError) as exc:
            log.warning("access statistics flush failed (%s)", type(exc).__name__)

    def flush(self) -> int:
        batch: dict[str, list[tuple[str, str]]] = {}
        while True:
            try:
                namespace, chunk_id, document_id = self._queue.get_nowait()
            except queue.Empty:
                break
            batch.setdefault(namespace, []).append((chunk_id, document_id))
        now = datetime.now(UTC).isoformat()
        for namespace, hits in batch.items():
            self._write(namespace, hits, now)
        return sum(len(h) for h in batch.values())

    def _db(self, namespace: str) -> sqlite3.Connection:
        path = self.published_dir / namespace / "access_stats.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=10)
        conn.executescript(_SCHEMA)
        return conn

    def _write(self, namespace: str, hits: list[tuple[str, str]], now: str) -> None:
        chunks = Counter(hits)
        documents = Counter(document_id for _, document_id in hits)
        with self._db(namespace) as conn:
            conn.executemany(
                "INSERT INTO chunk_hits VALUES (?, ?, ?, ?) ON CONFLICT(chunk_id) DO UPDATE SET "
                "hits = hits + excluded.hits, last_hit = excluded.last_hit",
                [(c, d, n, now) for (c, d), n in sorted(chunks.items())],
            )
            conn.executemany(
                "INSERT INTO document_hits VALUES (?, ?, ?) ON CONFLICT(document_id) DO UPDATE SET "
                "hits = hits + excluded.hits, last_hit = excluded.last_hit",
                [(d, n, now) for d, n in sorted(documents.items())],
            )
        with self._lock:
            counter = self._chunk_hits.setdefault(namespace, Counter())
            for (chunk_id, _), n in chunks.items():
                counter[chunk_id] += n

    def chunk_hits(self, namespace: str) -> dict[str, tuple[int, str]]:
        """Persisted per-chunk counts and last hit (for tests, notebooks and the prior)."""
        path = self.published_dir / namespace / "access_stats.sqlite"
        if not path.is_file():
            return {}
        with sqlite3.connect(path) as conn:
            return {
                c: (h, last)
                for c, h, last in conn.execute("SELECT chunk_id, hits, last_hit FROM chunk_hits")
            }

    def prior(self, namespace: str, chunk_id: str) -> float:
        """log1p(hits) / log1p(max hits): 0 for unseen chunks, 1 for the most returned."""
        with self._lock:
            counter = self._chunk_hits.get(namespace)
            if not counter:
                return 0.0
            top = max(counter.values())
            return math.log1p(counter.get(chunk_id, 0)) / math.log1p(top) if top else 0.0

    def load(self, namespace: str) -> None:
        """Seed the in-memory counts from disk (at start-up)."""
        counts = Counter({c: h for c, (h, _) in self.chunk_hits(namespace).items()})
        with self._lock:
            self._chunk_hits[namespace] = counts


def wait_until_flushed(stats: AccessStats, timeout: float = 5.0) -> None:
    """Test helper: block until the queue is drained and written."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if stats._queue.empty():
            stats.flush()
            return
        time.sleep(0.02)
