"""Classic search: channel queries, weighted reciprocal rank fusion, cited results.

A request runs in named steps: what the question says (`_understand`: its terms per channel,
the issuers, periods, pages and parts it names, its vectors), the channels searched `depth`
deep (`channel_search`), fused, and the fused hits cited (`results`); a search that found too
few results the request admits is read again four times deeper until the channels run dry.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import tantivy

from corpus_pipeline.contracts.search import (
    CHANNELS,
    DEFAULT_WEIGHTS,
    SearchRequest,
    SearchResponse,
    SearchResult,
)
from corpus_pipeline.finance.measures import Expansion, expand
from corpus_pipeline.index import channels as ch
from query_service.retrieval.channel_search import (
    NAME_SHARE,
    PRIOR_DOCUMENTS,
    ChannelPlan,
    DocKey,
    HitPayloads,
    beside_discussion,
    fuse,
    search_channels,
)
from query_service.retrieval.dense import DenseIndex, query_vector
from query_service.retrieval.filters import and_, documents_filter, filter_query, filters_unknown_to
from query_service.retrieval.fusion import Fused
from query_service.retrieval.instructions import search_text
from query_service.retrieval.pages import PageReference, page_references
from query_service.retrieval.queries import label_phrases, lexical_queries, shape_query
from query_service.retrieval.recency import asks_for_latest
from query_service.retrieval.results import (
    NO_PAGES,
    cited_result,
    demoted,
    response,
    superseded_documents,
)
from query_service.retrieval.spelling import spelled
from query_service.snapshot.documents import name_words, named_documents
from query_service.snapshot.payloads import payload_at
from query_service.snapshot.revision import Revision
from query_service.snapshot.routing import Routing

# Each channel's list is read this deep before fusion: a chunk a channel ranks 120th still adds
# its share to one that other channels rank high (measured on the real-world set: page-hit@5
# 0.673 at 50, 0.678 at 100, 0.683 at 200 and 400; 10-Q filings 0.500 → 0.550).
MIN_DEPTH = 200
# Chunks the dense channel ranks (its hits are mapped into the index one by one).
DENSE_DEPTH = 100

# Words by which a question says it is about an issuer's report.
REPORTS = re.compile(
    r"\b(?:10-?[KQ]|20-?F|8-?K|annual report|quarterly report|filings?|financial statements?|"
    r"fiscal|earnings)\b",
    re.IGNORECASE,
)


def classic_search(revision: Revision, request: SearchRequest) -> SearchResponse:
    started = time.perf_counter()
    if filters_unknown_to(revision, request):
        return response(revision, request, started, [], small=False)
    type_filter = filter_query(request)
    if revision.pointer.chunks <= request.top_k:
        results = _whole_corpus(revision, request, type_filter)
        return response(revision, request, started, results[: request.top_k], True)
    weights = request.weights or DEFAULT_WEIGHTS
    question = _understand(revision, request, weights, type_filter)
    results = _ranked(revision, request, weights, question)
    if not results and question.routing.certain:
        # The routed filings hold nothing the question matches: a guess never answers with
        # nothing where the store (within the caller's filters) holds a match.
        question = replace(
            question,
            type_filter=type_filter,
            routing=replace(question.routing, certain=False),
        )
        results = _ranked(revision, request, weights, question)
    return response(revision, request, started, results[: request.top_k], False, question.fixes)


def _ranked(
    revision: Revision, request: SearchRequest, weights: Mapping[str, float], question: _Question
) -> list[SearchResult]:
    """The question's channels searched, fused and cited, deeper until top k are found."""
    plan = _channel_plan(revision, question)
    payloads = HitPayloads(revision)
    depth = max(MIN_DEPTH, request.top_k * 5)
    while True:
        ranked = search_channels(revision.searcher, plan, depth)
        payloads.addresses = ranked.addresses
        fused = fuse(ranked, weights, question.rerank, payloads)
        if question.expansion is not None and (question.routing or request.filters.document_ids):
            # The statements searched within the question's filing(s), not the whole store.
            fused = beside_discussion(
                fused, ranked.lists.get("statement", []), len(question.expansion.statements)
            )
        results = _cite(fused, payloads, request, question)
        if len(results) >= request.top_k or ranked.exhausted:
            return results
        depth *= 4


def _whole_corpus(
    revision: Revision, request: SearchRequest, type_filter: tantivy.Query | None
) -> list[SearchResult]:
    """A store of no more chunks than the request asks for: every chunk the filters admit, in
    document order, unranked."""
    total = revision.pointer.chunks
    query = type_filter or tantivy.Query.all_query()
    hits = revision.searcher.search(query, max(total, 1), count=False).hits
    payloads = [payload_at(revision, address) for _, address in hits]
    payloads.sort(key=lambda p: (p["occurrences"][0]["document_id"], p["occurrences"][0]["order"]))
    results: list[SearchResult] = []
    for payload in payloads:
        result = cited_result(payload, 0.0, {}, request)
        if result is not None:
            results.append(result)
    return results


@dataclass
class _Question:
    """What a question says, read before any channel runs."""

    text: str  # as searched: answer instructions left out, misspellings corrected
    fixes: dict[str, str]
    type_filter: tantivy.Query | None  # the request's filters (and the routed filings)
    routing: Routing
    expansion: Expansion | None
    terms: dict[str, list[str]]
    labels: list[list[str]]
    pages: PageReference
    parts: list[str]
    older: frozenset[str]  # superseded documents, when the question asks for the latest
    rerank: tuple[DenseIndex, np.ndarray] | None
    dense: list[tuple[str, float]]
    documents: list[str]  # the documents it names, best first


def _understand(
    revision: Revision,
    request: SearchRequest,
    weights: Mapping[str, float],
    type_filter: tantivy.Query | None,
) -> _Question:
    query_text, fixes = spelled(revision.searcher, search_text(request.query))

    def used(channel: str, field: str | None = None) -> bool:
        """Whether the request weighs `channel` (and the revision indexed the field it reads)."""
        return weights.get(channel, 0) > 0 and (field is None or field in revision.fields)

    routing = _routing(revision, query_text, weights)
    expansion = expand(query_text) if used("statement", ch.F_STATEMENT) else None
    if routing and not (routing.period or expansion or REPORTS.search(query_text)):
        # An issuer named without a period, a measure or a report is as often a topic
        # ("Amazon-related datasets") as the document asked about: no prior.
        routing = Routing()
    if routing.certain and explicit_scope(request):
        # The caller's filters are an instruction, the routing a guess: within them it only
        # ranks (its documents first), never narrows the search to documents outside them.
        routing = replace(routing, certain=False)
    if routing.certain:
        # The question names its issuers and their periods: search keeps to those filings.
        type_filter = and_(type_filter, documents_filter(routing.documents))
    older = superseded_documents(revision) if asks_for_latest(query_text) else frozenset()
    vectors = query_vector(revision, query_text) if used("dense") or used("rerank") else None
    return _Question(
        text=query_text,
        fixes=fixes,
        type_filter=type_filter,
        routing=routing,
        expansion=expansion,
        terms={
            channel: shape_query(channel, query_text)
            for channel in CHANNELS
            if used(channel) and channel in ch.CHANNEL_FIELDS
        },
        labels=label_phrases(query_text),
        pages=page_references(query_text) if used("page", ch.F_PAGE) else NO_PAGES,
        parts=ch.parts_named(query_text) if used("part", ch.F_PART) else [],
        older=older,
        rerank=vectors if used("rerank") else None,
        dense=vectors[0].rank(vectors[1], DENSE_DEPTH) if vectors and used("dense") else [],
        documents=_named_documents(revision, query_text, weights, routing, older),
    )


def explicit_scope(request: SearchRequest) -> bool:
    """The caller bounds the documents searched: a filter, or documents left out."""
    return not request.filters.is_empty() or bool(request.exclude_document_ids)


def _routing(revision: Revision, query_text: str, weights: Mapping[str, float]) -> Routing:
    """The issuers and periods the question names, when a channel uses them."""
    if weights.get("document", 0) > 0 or weights.get("statement", 0) > 0:
        return revision.router().route(query_text)
    return Routing()


def _named_documents(
    revision: Revision,
    query_text: str,
    weights: Mapping[str, float],
    routing: Routing,
    older: frozenset[str],
) -> list[str]:
    """The documents of the document channel: the routed filings, else the documents whose
    cards the question's name-like words match (a question about the latest filing names only
    current members of its series)."""
    if weights.get("document", 0) <= 0:
        return []
    if routing:
        return list(routing.documents[:PRIOR_DOCUMENTS])
    names = name_words(query_text)
    if not names:
        return []
    return named_documents(
        revision.cards(),
        shape_query("path", names),
        PRIOR_DOCUMENTS,
        NAME_SHARE,
        latest=asks_for_latest(query_text),
        superseded=older,
    )


def _channel_plan(revision: Revision, question: _Question) -> ChannelPlan:
    terms = question.terms
    scoped_terms = (
        (terms.get("content") or shape_query("content", question.text))
        if question.pages or question.parts
        else []
    )
    queries = lexical_queries(
        revision.searcher,
        revision.pointer.chunks,
        question.text,
        terms,
        question.labels,
        question.pages,
        question.parts,
        scoped_terms,
        question.type_filter,
    )
    return ChannelPlan(
        queries=queries,
        type_filter=question.type_filter,
        dense=question.dense,
        documents=question.documents,
        content_terms=terms.get("content") or [],
        expansion=question.expansion,
        query_text=question.text,
        routing=question.routing,
    )


def _cite(
    fused_list: list[Fused[DocKey]],
    payloads: HitPayloads,
    request: SearchRequest,
    question: _Question,
) -> list[SearchResult]:
    """The fused hits as cited results, best first, until top k are not demoted (demoted hits
    only sort after these: the rest cannot enter top k)."""
    older = question.older
    only = frozenset(question.routing.documents) if question.routing.certain else frozenset()
    results = []
    current = 0  # results not only in superseded documents
    for fused in fused_list:
        result = cited_result(
            payloads(fused.key),
            fused.score,
            fused.ranks,
            request,
            older,
            question.pages,
            question.documents,
            only,
        )
        if result is not None:
            results.append(result)
            current += not demoted(result, older)
            if current == request.top_k:
                break
    results.sort(key=lambda r: demoted(r, older))
    return results
