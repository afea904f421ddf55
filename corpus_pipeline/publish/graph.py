"""The document graph: one node per document, undirected `related` edges by shared keywords,
and `attachment` edges from an e-mail to each file attached to it (`attachment_pairs`).

Score: the overlap coefficient of the two documents' keyword sets,
``|A ∩ B| / min(|A|, |B|)`` — symmetric by construction, 1.0 when the smaller set is contained
in the larger. An edge exists only when at least ``MIN_SHARED`` keywords are shared and the
score is at least ``MIN_SCORE``. Document keywords are the ``NODE_KEYWORDS`` most frequent
chunk keywords (weighted by occurrences; ties broken alphabetically, so deterministic).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

MIN_SHARED = 3
MIN_SCORE = 0.8
NODE_KEYWORDS = 20


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    score: float
    shared: tuple[str, ...]


def document_keywords(
    chunk_keywords: Iterable[tuple[list[str], int]], limit: int = NODE_KEYWORDS
) -> list[str]:
    """Top keywords of a document from (chunk keywords, occurrence count) pairs."""
    counts: Counter[str] = Counter()
    for keywords, weight in chunk_keywords:
        for keyword in keywords:
            counts[keyword] += weight
    return [k for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def overlap_score(a: Iterable[str], b: Iterable[str]) -> tuple[float, tuple[str, ...]]:
    set_a, set_b = set(a), set(b)
    if not set_a or not set_b:
        return 0.0, ()
    shared = tuple(sorted(set_a & set_b))
    return len(shared) / min(len(set_a), len(set_b)), shared


def related_edge(
    doc_a: str, keywords_a: list[str], doc_b: str, keywords_b: list[str]
) -> Edge | None:
    """The edge between two documents if the rule holds (endpoints ordered, so symmetric)."""
    if doc_a == doc_b:
        return None
    score, shared = overlap_score(keywords_a, keywords_b)
    if len(shared) < MIN_SHARED or score < MIN_SCORE:
        return None
    source, target = sorted((doc_a, doc_b))
    return Edge(source=source, target=target, score=round(score, 6), shared=shared)


def related_edges(
    changed: dict[str, list[str]], nodes: Iterable[tuple[str, list[str]]]
) -> list[Edge]:
    """Every edge between a changed document and any node (changed ones included), sorted.

    Candidates come from an inverted keyword index over `nodes`, so only pairs that share a
    keyword are compared (the same edges as comparing every pair)."""
    keywords_of: dict[str, list[str]] = {}
    by_keyword: dict[str, set[str]] = {}
    for doc, keywords in nodes:
        keywords_of[doc] = keywords
        for keyword in keywords:
            by_keyword.setdefault(keyword, set()).add(doc)
    edges: dict[tuple[str, str], Edge] = {}
    for doc, keywords in changed.items():
        if len(keywords) < MIN_SHARED:
            continue
        candidates = set().union(*(by_keyword.get(k, set()) for k in keywords)) - {doc}
        for other in sorted(candidates):
            edge = related_edge(doc, keywords, other, keywords_of[other])
            if edge is not None:
                edges[(edge.source, edge.target)] = edge
    return [edges[key] for key in sorted(edges)]


def attachment_pairs(
    attached_to: dict[str, str | None], changed: Iterable[str]
) -> list[tuple[str, str]]:
    """(message, attachment) of every published attachment whose message is published too,
    when either changed: a changed document's edges are all rewritten, so an unchanged
    message keeps its edge to an attachment that changed, and the other way round."""
    touched = set(changed)
    return sorted(
        (parent, doc)
        for doc, parent in attached_to.items()
        if parent is not None and parent in attached_to and touched & {doc, parent}
    )
