"""Result assembly for classic search: a fused hit's stored payload as a cited result (the
place it is cited by, and every other place its content occurs), the order of demoted hits,
and the response."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, cast

from corpus_pipeline.contracts import ChunkType
from corpus_pipeline.contracts.artifacts import is_textless_image
from corpus_pipeline.contracts.published import DOCUMENTS
from corpus_pipeline.contracts.search import Location, SearchRequest, SearchResponse, SearchResult
from corpus_pipeline.index import channels as ch
from query_service.retrieval.filters import excluded
from query_service.retrieval.pages import PageReference
from query_service.retrieval.recency import superseded
from query_service.snapshot.payloads import resource_from_payload
from query_service.snapshot.revision import Revision

NO_PAGES = PageReference()


def on_named_page(location: dict[str, Any], pages: PageReference) -> bool:
    """Whether a place a chunk occurs is on a page the question names."""
    return bool(
        set(location["pages"]) & set(pages.numbers)
        or set(location.get("pages_from_end", ())) & set(pages.from_end)
        or {ch.filter_value(x) for x in location.get("page_labels", ())} & set(pages.labels)
    )


def cited_result(
    payload: dict[str, Any],
    score: float,
    ranks: dict[str, int],
    request: SearchRequest,
    superseded: frozenset[str] = frozenset(),
    pages: PageReference = NO_PAGES,
    named: Sequence[str] = (),
    only: frozenset[str] = frozenset(),
) -> SearchResult | None:
    """A cited result, or None when exclusions remove every place the content occurs; a place
    in a superseded document is cited after the others, a place in a document the question
    names (best named first) or on a page it names before them (identical content printed in
    several filings of a series, or on several pages, is one chunk); with `only`, the places
    in those documents alone (the question's routing is certain)."""
    locations = [
        loc
        for loc in payload["occurrences"]
        if not excluded(loc, request) and (not only or loc["document_id"] in only)
    ]
    if not locations:
        return None
    if superseded or pages or named:
        order = {document_id: i for i, document_id in enumerate(named)}
        locations.sort(
            key=lambda loc: (
                loc["document_id"] in superseded,
                order.get(loc["document_id"], len(order)),
                not on_named_page(loc, pages),
            )
        )
    first = locations[0]
    return SearchResult(
        content=payload["content"],
        chunk_type=ChunkType(payload["chunk_type"]),
        document_id=first["document_id"],
        chunk_id=payload["chunk_id"],
        source_file_name=first["source_file_name"],
        section_path=first["section_path"],
        section_id=first.get("section_id"),
        pages=first["pages"],
        score=round(score, 8),
        channels=ranks,
        occurrences=[
            Location(
                document_id=loc["document_id"],
                source_file_name=loc["source_file_name"],
                section_path=loc["section_path"],
                section_id=loc.get("section_id"),
                pages=loc["pages"],
            )
            for loc in locations
        ],
        resource=resource_from_payload(request.namespace, payload),
    )


def demoted(result: SearchResult, older: frozenset[str]) -> bool:
    """Ranked after every other hit: a hit only in superseded documents (the question asks for
    the latest), and an image with no text of its own (nothing to read or cite by)."""
    return result.document_id in older or is_textless_image(result.chunk_type.value, result.content)


def superseded_documents(revision: Revision) -> frozenset[str]:
    """The revision's documents that a later member of their series supersedes (read once)."""

    def load() -> frozenset[str]:
        rows = revision.rows(
            DOCUMENTS, columns=["document_id", "source_file_name", "document_date"]
        )
        return superseded(
            (r["document_id"], r["source_file_name"], r["document_date"]) for r in rows
        )

    return cast(frozenset[str], revision.memo("superseded", load))


def response(
    revision: Revision,
    request: SearchRequest,
    started: float,
    results: list[SearchResult],
    small: bool,
    fixes: dict[str, str] | None = None,
) -> SearchResponse:
    return SearchResponse(
        query=request.query,
        namespace=revision.namespace,
        revision=revision.number,
        small_corpus=small,
        took_ms=round((time.perf_counter() - started) * 1000, 3),
        corrections=fixes or {},
        results=results,
    )
