"""Channel search for classic search: every channel's ranked list at one depth (the lexical
queries, the dense channel, the documents the question names, the statements a measure is
computed from), fused by weighted reciprocal rank, and reranked by the model's vectors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

import numpy as np
import tantivy

from corpus_pipeline.finance.measures import Expansion
from corpus_pipeline.index import channels as ch
from query_service.retrieval.dense import DenseIndex
from query_service.retrieval.filters import and_, documents_filter
from query_service.retrieval.fusion import Fused, weighted_rrf
from query_service.retrieval.queries import ChannelQuery, channel_query, shape_query, within
from query_service.snapshot.payloads import chunk_address, payload_at
from query_service.snapshot.revision import Revision
from query_service.snapshot.routing import Routing

DocKey = tuple[int, int]
# The rerank channel orders the fused lexical channels' best RERANK_POOL chunks by the cosine of
# their vectors to the query's: the model reorders what the words found instead of adding its
# own hits (on the real-world set with the local model, weight 1.5: page-hit@5 +0.005, @1
# +0.021, MRR +0.016, no type of 20+ questions lower; the dense channel's own hits cost the
# papers).
RERANK_POOL = 30
# The document channel: the best chunks of the PRIOR_DOCUMENTS documents whose cards match the
# query's name-like terms (on at most NAME_SHARE of the cards), best document first. In an
# archive of a few issuers' filings each company's name is on a fifth of the cards or more: at
# a tenth, "Apple" named nothing in a store of five companies' 320 filings (page-hit@5 of the
# 40 filing questions 0.350 → 0.475 at 0.25 and at 0.5; the real-world set unchanged).
PRIOR_DOCUMENTS = 5
NAME_SHARE = 0.5


@dataclass
class Ranked:
    """Each channel's ranked index documents (with their scores where the channel has them)
    and where each one is; `exhausted` when no lexical channel had more hits than the depth."""

    lists: dict[str, list[DocKey]] = field(default_factory=dict)
    scores: dict[str, list[float]] = field(default_factory=dict)
    addresses: dict[DocKey, tantivy.DocAddress] = field(default_factory=dict)
    exhausted: bool = True

    def key(self, address: tantivy.DocAddress) -> DocKey:
        key = (address.segment_ord, address.doc)
        self.addresses[key] = address
        return key


class HitPayloads:
    """The stored payloads of a request's hits, each decoded once (by index address: the same
    within a revision, so across the rounds of a deeper search too)."""

    def __init__(self, revision: Revision) -> None:
        self.revision = revision
        self.addresses: dict[DocKey, tantivy.DocAddress] = {}
        self._decoded: dict[DocKey, dict[str, Any]] = {}

    def __call__(self, key: DocKey) -> dict[str, Any]:
        if key not in self._decoded:
            self._decoded[key] = payload_at(self.revision, self.addresses[key])
        return self._decoded[key]


def statement_hits(
    searcher: tantivy.Searcher,
    expansion: Expansion,
    query_text: str,
    routing: Routing,
    type_filter: tantivy.Query | None,
    depth: int,
) -> list[list[tantivy.DocAddress]]:
    """The statement channel: the chunks of the primary statements a question's measures are
    computed from, ranked by the question's words and the statements' own words for the
    measure's lines ("cash ratio" → "cash and cash equivalents", "total current liabilities");
    the routed documents one after another (a document's statements taking turns, so a
    measure needing two statements has both near the top), else the whole store."""
    terms = shape_query("content", f"{query_text}\n{expansion.words}")
    scopes: list[str | None] = list(routing.documents[:PRIOR_DOCUMENTS]) or [None]
    out: list[list[tantivy.DocAddress]] = []
    for scope in scopes:
        scoped = type_filter if scope is None else and_(type_filter, documents_filter([scope]))
        lists = [
            [
                address
                for _, address in searcher.search(
                    within(
                        [tantivy.Query.term_query(ch.schema(), ch.F_STATEMENT, statement.value)],
                        terms,
                        scoped,
                    ),
                    depth,
                    count=False,
                ).hits
            ]
            for statement in expansion.statements
        ]
        out.append([a for turn in zip_longest(*lists) for a in turn if a is not None])
    return out


# Where the best chunk of each statement a question's measure is computed from ranks at worst
# (0-based): beside the two passages that best match the question's words, not below them all.
STATEMENT_SLOT = 2


def beside_discussion(
    fused: list[Fused[DocKey]], statement: list[DocKey], statements: int
) -> list[Fused[DocKey]]:
    """The fused list with the statement channel's leading chunks (one per statement: its
    lists take turns) moved up to STATEMENT_SLOT and the slots after it when fusion ranked them
    lower: a question judging a measure ("a healthy liquidity profile based on its quick
    ratio") gets the statement that holds the figures in its top few, beside the discussion,
    even where the statement shares few of the question's words."""
    out = list(fused)
    for n, key in enumerate(dict.fromkeys(statement[:statements])):
        slot = STATEMENT_SLOT + n
        index = next((i for i, f in enumerate(out) if f.key == key), None)
        if index is not None and index > slot:
            out.insert(slot, out.pop(index))
    return out


@dataclass(frozen=True)
class ChannelPlan:
    """What the channels search for: the lexical queries, the dense channel's nearest chunks,
    the documents the question names (searched by its content terms), the statements of its
    measures, all under one filter."""

    queries: list[ChannelQuery]
    type_filter: tantivy.Query | None
    dense: list[tuple[str, float]]
    documents: list[str]
    content_terms: list[str]
    expansion: Expansion | None
    query_text: str
    routing: Routing


def search_channels(searcher: tantivy.Searcher, plan: ChannelPlan, depth: int) -> Ranked:
    """Every channel's list, `depth` deep (in a fixed channel order: fusion adds in it)."""
    ranked = Ranked()
    for channel, query, min_score in plan.queries:
        hits = searcher.search(query, depth, count=False).hits
        if min_score:
            hits = [h for h in hits if h[0] >= min_score - 1e-6]
        ranked.exhausted &= len(hits) < depth
        ranked.lists[channel] = [ranked.key(address) for _, address in hits]
        ranked.scores[channel] = [round(score, 5) for score, _ in hits]
    if plan.dense:
        _dense_list(searcher, plan, depth, ranked)
    if plan.documents and plan.content_terms:
        _document_list(searcher, plan, depth, ranked)
    if plan.expansion:
        ranked.lists["statement"] = [
            ranked.key(found)
            for listed in statement_hits(
                searcher, plan.expansion, plan.query_text, plan.routing, plan.type_filter, depth
            )
            for found in listed
        ]
    return ranked


def _dense_list(searcher: tantivy.Searcher, plan: ChannelPlan, depth: int, ranked: Ranked) -> None:
    """The chunks nearest the query's vector, each found in the index under the same filter as
    every other channel (a filtered-out chunk never comes back here)."""
    ranked.lists["dense"] = []
    ranked.scores["dense"] = []
    for chunk_id, score in plan.dense[:depth]:
        found = chunk_address(searcher, chunk_id, plan.type_filter)
        if found is not None:
            ranked.lists["dense"].append(ranked.key(found))
            ranked.scores["dense"].append(round(score, 5))


def _document_list(
    searcher: tantivy.Searcher, plan: ChannelPlan, depth: int, ranked: Ranked
) -> None:
    """The best chunks of the documents the query names, document by document."""
    keys = []
    for document_id in plan.documents:
        query = tantivy.Query.boolean_query(
            [
                (
                    tantivy.Occur.Must,
                    channel_query("content", plan.content_terms, plan.type_filter),
                ),
                (
                    tantivy.Occur.Must,
                    tantivy.Query.term_query(ch.schema(), ch.F_DOCUMENT_IDS, document_id),
                ),
            ]
        )
        for _, address in searcher.search(query, depth, count=False).hits:
            keys.append(ranked.key(address))
    ranked.lists["document"] = keys


def fuse(
    ranked: Ranked,
    weights: Mapping[str, float],
    vectors: tuple[DenseIndex, np.ndarray] | None,
    payloads: HitPayloads,
) -> list[Fused[DocKey]]:
    """The channels fused; with `vectors`, the lexical pool reordered by the model is fused in
    as one more ranked list."""
    fused_list = weighted_rrf(ranked.lists, weights, scores=ranked.scores)
    if vectors is None:
        return fused_list
    pool = [f.key for f in fused_list[:RERANK_POOL]]
    similar = vectors[0].similarity(vectors[1], [payloads(key)["chunk_id"] for key in pool])
    order = sorted(
        (i for i, cos in enumerate(similar) if cos is not None),
        key=lambda i: (-(similar[i] or 0.0), i),
    )
    ranked.lists["rerank"] = [pool[i] for i in order]
    ranked.scores["rerank"] = [round(similar[i] or 0.0, 5) for i in order]
    return weighted_rrf(ranked.lists, weights, scores=ranked.scores)
