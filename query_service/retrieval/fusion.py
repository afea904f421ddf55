"""Weighted reciprocal rank fusion, as a pure function.

score(d) = Σ_channels weight_c / (k + rank_c(d) + 1), rank 0-based over the channel's list with
duplicate ids removed (a channel that lists an id twice ranks it once, at its first place).
When a channel also gives its scores, ids with exactly equal scores share the rank of the first
of them (competition ranking, "1224"): a channel that cannot tell two chunks apart — e.g. the
path channel for chunks of the same section — must not favour one by list position.
Ties in the fused score are broken by the best rank in any channel, then by id, so the order is
deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from corpus_pipeline.contracts.search import DEFAULT_WEIGHTS, RRF_K

K = TypeVar("K", bound=Hashable)  # keys of one call are of one orderable type (ids, addresses)


@dataclass
class Fused(Generic[K]):
    key: K
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def unique_ranks(ranked: Sequence[K], scores: Sequence[float] | None = None) -> dict[K, int]:
    """First position of each id, counting ranks over unique ids only; with scores, equal
    scores share the rank of the first id that has it."""
    ranks: dict[K, int] = {}
    previous: float | None = None
    shared_rank = 0
    for index, key in enumerate(ranked):
        if key in ranks:
            continue
        position = len(ranks)
        if scores is not None:
            score = scores[index]
            if previous is None or score != previous:
                shared_rank = position
            previous = score
            position = shared_rank
        ranks[key] = position
    return ranks


def weighted_rrf(
    channels: Mapping[str, Sequence[K]],
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
    scores: Mapping[str, Sequence[float]] | None = None,
) -> list[Fused[K]]:
    weights = DEFAULT_WEIGHTS if weights is None else weights
    fused: dict[K, Fused[K]] = {}
    for channel, ranked in channels.items():
        weight = weights.get(channel, 0.0)
        channel_scores = scores.get(channel) if scores is not None else None
        for key, rank in unique_ranks(ranked, channel_scores).items():
            entry = fused.setdefault(key, Fused(key=key, score=0.0))
            entry.score += weight / (k + rank + 1)
            entry.ranks[channel] = rank
    return sorted(fused.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.key))
