"""Rotation among several API keys of one OpenAI-compatible endpoint, under per-key rate limits.

Shared by every caller of a provider: the query service's chat client (planner, navigator) and
the embeddings endpoint of the dense channel. Each key has its own sliding one-minute window of
request timestamps; `acquire` reserves a slot on the key with the most free capacity
(round-robin among equals) and sleeps until the earliest key frees up when none is free. A key
answered with HTTP 429 cools down for the provider's `Retry-After` (or `retry-after-ms`), else
for a default pause. Clock and sleep are injectable, so tests need no real waiting.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

WINDOW_SECONDS = 60.0


class KeysExhausted(Exception):
    """No key is free within the longest allowed wait."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"all API keys are rate limited for {wait:.0f} s")
        self.wait = wait


def split_keys(value: str) -> list[str]:
    """Keys from a comma-separated setting (blanks dropped)."""
    return [key.strip() for key in value.split(",") if key.strip()]


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = parsedate_to_datetime(value)
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            return max(0.0, (when - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError, OverflowError):
        return None


@dataclass
class _KeyState:
    sent: deque[float] = field(default_factory=deque)
    cooldown_until: float = -math.inf


class KeyPool:
    """Thread-safe request slots over `keys` API keys, `requests_per_minute` each."""

    def __init__(
        self,
        keys: int,
        requests_per_minute: int,
        *,
        default_cooldown_seconds: float = 60.0,
        max_wait_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if keys < 1:
            raise ValueError("a key pool needs at least one key")
        if requests_per_minute < 1:
            raise ValueError("requests_per_minute must be at least 1")
        self.requests_per_minute = requests_per_minute
        self.default_cooldown_seconds = default_cooldown_seconds
        self.max_wait_seconds = max_wait_seconds
        self._clock = clock
        self._sleep = sleep
        self._keys = [_KeyState() for _ in range(keys)]
        self._cursor = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._keys)

    def _free_at(self, state: _KeyState, now: float) -> float:
        """When the key can take its next request (<= now: free now)."""
        while state.sent and state.sent[0] <= now - WINDOW_SECONDS:
            state.sent.popleft()
        at = state.cooldown_until
        if len(state.sent) >= self.requests_per_minute:
            at = max(at, state.sent[len(state.sent) - self.requests_per_minute] + WINDOW_SECONDS)
        return at

    def acquire(self) -> int:
        """Reserve a request slot on a key, sleeping until one is free; returns its index.
        Raises `KeysExhausted` when the wait would exceed `max_wait_seconds`."""
        while True:
            with self._lock:
                now = self._clock()
                count = len(self._keys)
                best: int | None = None
                best_free = 0
                earliest = math.inf
                for step in range(count):
                    index = (self._cursor + step) % count
                    state = self._keys[index]
                    at = self._free_at(state, now)
                    if at > now:
                        earliest = min(earliest, at)
                        continue
                    free = self.requests_per_minute - len(state.sent)
                    if best is None or free > best_free:
                        best, best_free = index, free
                if best is not None:
                    self._keys[best].sent.append(now)
                    self._cursor = (best + 1) % count
                    return best
                wait = earliest - now
            if wait > self.max_wait_seconds:
                raise KeysExhausted(wait)
            self._sleep(wait)

    def cool_down(self, index: int, seconds: float | None) -> None:
        """Rest a key the provider rate-limited (`seconds` from its answer, else the default)."""
        with self._lock:
            pause = self.default_cooldown_seconds if seconds is None else seconds
            state = self._keys[index]
            state.cooldown_until = max(state.cooldown_until, self._clock() + pause)
