"""Classic search: three channel queries, weighted reciprocal rank fusion, cited results."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import tantivy

from corpus_pipeline.contracts import ChunkType
from corpus_pipeline.contracts.search import (
    CHANNELS,
    DEFAULT_WEIGHTS,
    Location,
    Resource,
    SearchRequest,
    SearchResponse,
    SearchResult,
)
from corpus_pipeline.index import channels as ch
from query_service.fusion import weighted_rrf
from query_service.revision import Revision

MAX_QUERY_TERMS = 64
MIN_DEPTH = 50

DocKey = tuple[int, int]


def shape_query(channel: str, query: str) -> list[str]:
    """The query's tokens for one channel, analysed exactly as that channel was indexed
    (unique, in order, capped)."""
    seen: dict[str, None] = {}
    for token in ch.analyze(channel, query):
        seen.setdefault(token, None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return list(seen)


def channel_query(
    channel: str, terms: Sequence[str], type_filter: tantivy.Query | None
) -> tantivy.Query:
    field = ch.CHANNEL_FIELDS[channel]
    schema = ch.schema()
    should = tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, tantivy.Query.term_query(schema, field, term)) for term in terms]
    )
    if type_filter is None:
        return should
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, should), (tantivy.Occur.Must, type_filter)]
    )


def _type_filter(chunk_types: Sequence[ChunkType]) -> tantivy.Query | None:
    if set(chunk_types) >= set(ChunkType):
        return None
    return tantivy.Query.term_set_query(
        ch.schema(), ch.F_CHUNK_TYPE, sorted(t.value for t in chunk_types)
    )


def _excluded(location: dict[str, Any], request: SearchRequest) -> bool:
    if location["document_id"] in request.exclude_document_ids:
        return True
    path = location["section_path"]
    return any(path[: len(p)] == p for p in request.exclude_section_paths if p)


def _result(
    payload: dict[str, Any], score: float, ranks: dict[str, int], request: SearchRequest
) -> SearchResult | None:
    """A cited result, or None when exclusions remove every place the content occurs."""
    locations = [loc for loc in payload["occurrences"] if not _excluded(loc, request)]
    if not locations:
        return None
    first = locations[0]
    resource = payload.get("resource")
    return SearchResult(
        content=payload["content"],
        chunk_type=ChunkType(payload["chunk_type"]),
        document_id=first["document_id"],
        chunk_id=payload["chunk_id"],
        source_file_name=first["source_file_name"],
        section_path=first["section_path"],
        pages=first["pages"],
        score=round(score, 8),
        channels=ranks,
        occurrences=[
            Location(
                document_id=loc["document_id"],
                source_file_name=loc["source_file_name"],
                section_path=loc["section_path"],
                pages=loc["pages"],
            )
            for loc in locations
        ],
        resource=Resource.model_validate(resource) if resource else None,
    )


def _payload(revision: Revision, address: tantivy.DocAddress) -> dict[str, Any]:
    return ch.decode_stored(revision.searcher.doc(address)[ch.F_STORED][0])


def classic_search(revision: Revision, request: SearchRequest) -> SearchResponse:
    started = time.perf_counter()
    type_filter = _type_filter(request.chunk_types)
    weights = request.weights or DEFAULT_WEIGHTS
    searcher = revision.searcher
    total = revision.pointer.chunks
    results: list[SearchResult] = []
    small = total <= request.top_k
    if small:
        query = type_filter or tantivy.Query.all_query()
        hits = searcher.search(query, max(total, 1), count=False).hits
        payloads = [_payload(revision, address) for _, address in hits]
        payloads.sort(
            key=lambda p: (p["occurrences"][0]["document_id"], p["occurrences"][0]["order"])
        )
        for payload in payloads:
            result = _result(payload, 0.0, {}, request)
            if result is not None:
                results.append(result)
    else:
        depth = max(MIN_DEPTH, request.top_k * 5)
        terms = {
            channel: shape_query(channel, request.query)
            for channel in CHANNELS
            if weights.get(channel, 0) > 0
        }
        while True:
            ranked: dict[str, list[DocKey]] = {}
            addresses: dict[DocKey, tantivy.DocAddress] = {}
            exhausted = True
            for channel, channel_terms in terms.items():
                if not channel_terms:
                    continue
                hits = searcher.search(
                    channel_query(channel, channel_terms, type_filter), depth, count=False
                ).hits
                exhausted &= len(hits) < depth
                keys = []
                for _, address in hits:
                    key = (address.segment_ord, address.doc)
                    addresses[key] = address
                    keys.append(key)
                ranked[channel] = keys
            results = []
            for fused in weighted_rrf(ranked, weights):
                result = _result(
                    _payload(revision, addresses[fused.key]), fused.score, fused.ranks, request
                )
                if result is not None:
                    results.append(result)
                    if len(results) == request.top_k:
                        break
            if len(results) >= request.top_k or exhausted:
                break
            depth *= 4
    return SearchResponse(
        query=request.query,
        namespace=revision.namespace,
        revision=revision.number,
        small_corpus=small,
        took_ms=round((time.perf_counter() - started) * 1000, 3),
        results=results[: request.top_k],
    )
