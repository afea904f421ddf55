"""One shared token budget for a whole agentic run (thread-safe reserve → commit).

Every spender reserves before it spends and commits what it actually used (the unused part of a
reservation returns to the pool). A reservation that does not fit is refused, so `used` can
never exceed `limit`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache

from corpus_pipeline.enrich.tokens import count_tokens


class BudgetExhausted(Exception):
    pass


@dataclass
class TokenBudget:
    limit: int
    used: int = 0
    reserved: int = 0
    per_step: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def remaining(self) -> int:
        return self.limit - self.used - self.reserved

    def reserve(self, tokens: int) -> int:
        with self._lock:
            if tokens > self.limit - self.used - self.reserved:
                raise BudgetExhausted(f"{tokens} tokens requested, {self.remaining} left")
            self.reserved += tokens
            return tokens

    def commit(self, reservation: int, actual: int, step: str) -> None:
        with self._lock:
            self.reserved -= reservation
            actual = min(actual, reservation)
            self.used += actual
            self.per_step[step] = self.per_step.get(step, 0) + actual

    def release(self, reservation: int) -> None:
        with self._lock:
            self.reserved -= reservation


@lru_cache(maxsize=8192)
def tokens_of(text: str) -> int:
    """Token count, remembered: the same chunks and their result records are counted again
    for every request that reads them."""
    return count_tokens(text)
