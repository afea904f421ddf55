"""Weighted reciprocal rank fusion, as a pure function.

score(d) = Σ_channels weight_c / (k + rank_c(d) + 1), rank 0-based over the channel's list with
duplicate ids removed (a channel that lists an id twice ranks it once, at its first place).
Ties are broken by the best rank in any channel, then by id, so the order is deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from corpus_pipeline.contracts.search import DEFAULT_WEIGHTS, RRF_K

K = TypeVar("K", bound=Hashable)


@dataclass
class Fused(Generic[K]):
    key: K
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def unique_ranks(ranked: Sequence[K]) -> dict[K, int]:
    """First position of each id, counting ranks over unique ids only."""
    ranks: dict[K, int] = {}
    for key in ranked:
        if key not in ranks:
            ranks[key] = len(ranks)
    return ranks


def weighted_rrf(
    channels: Mapping[str, Sequence[K]],
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> list[Fused[K]]:
    weights = DEFAULT_WEIGHTS if weights is None else weights
    fused: dict[K, Fused[K]] = {}
    for channel, ranked in channels.items():
        weight = weights.get(channel, 0.0)
        for key, rank in unique_ranks(ranked).items():
            entry = fused.setdefault(key, Fused(key=key, score=0.0))
            entry.score += weight / (k + rank + 1)
            entry.ranks[channel] = rank
    return sorted(fused.values(), key=lambda f: (-f.score, min(f.ranks.values()), str(f.key)))
