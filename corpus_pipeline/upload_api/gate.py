"""Uploads in flight per key, limited (`CORPUS_MAX_UPLOADS_PER_KEY`): a key past its share is
told to come back (429)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import HTTPException


class UploadGate:
    """Uploads in flight per key: a key past its share is told to come back (429), so one
    client cannot hold every upload thread and the disk's scratch space. Used on the event
    loop only (no lock)."""

    def __init__(self, per_key: int) -> None:
        self.per_key = per_key
        self._in_flight: dict[str, int] = {}

    @contextmanager
    def slot(self, name: str) -> Iterator[None]:
        if self._in_flight.get(name, 0) >= self.per_key:
            raise HTTPException(
                429,
                f"this key has {self.per_key} uploads in flight already; retry when one is done",
                headers={"Retry-After": "5"},
            )
        self._in_flight[name] = self._in_flight.get(name, 0) + 1
        try:
            yield
        finally:
            self._in_flight[name] -= 1
            if not self._in_flight[name]:
                del self._in_flight[name]
