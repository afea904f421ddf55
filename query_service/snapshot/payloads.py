"""The stored index payloads of a revision's chunks: what the channel index keeps of each
unique chunk (content, resource, every place it occurs), read by index address or chunk id."""

from __future__ import annotations

from typing import Any

import tantivy

from corpus_pipeline.contracts.search import Resource, resource_url
from corpus_pipeline.index import channels as ch
from query_service.snapshot.revision import Revision


def payload_at(revision: Revision, address: tantivy.DocAddress) -> dict[str, Any]:
    """The payload of the index document at `address`."""
    return ch.decode_stored(revision.searcher.doc(address)[ch.F_STORED][0])


def chunk_address(
    searcher: tantivy.Searcher, chunk_id: str, type_filter: tantivy.Query | None = None
) -> tantivy.DocAddress | None:
    """Where a chunk is in the index, if the filter (when given) admits it."""
    query = tantivy.Query.term_query(ch.schema(), ch.F_CHUNK_ID, chunk_id)
    if type_filter is not None:
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, query), (tantivy.Occur.Must, type_filter)]
        )
    hits = searcher.search(query, 1, count=False).hits
    return hits[0][1] if hits else None


def payload_for_chunk(revision: Revision, chunk_id: str) -> dict[str, Any] | None:
    """The published index payload of one chunk (content, resource, every place it occurs)."""
    query = tantivy.Query.term_query(ch.schema(), ch.F_CHUNK_ID, chunk_id)
    hits = revision.searcher.search(query, 1, count=False).hits
    return payload_at(revision, hits[0][1]) if hits else None


def resource_from_payload(namespace: str, payload: dict[str, Any]) -> Resource | None:
    """A chunk's resource, addressed by document and relative ref with its service URL: only
    the contract's fields leave the service (a revision published before refs existed named the
    file by `file_path`, next to an absolute path that must never be answered)."""
    raw = payload.get("resource")
    if not raw:
        return None
    ref = raw.get("ref") or raw["file_path"]
    document_id = raw.get("document_id") or payload["occurrences"][0]["document_id"]
    return Resource(
        kind=raw["kind"],
        document_id=document_id,
        ref=ref,
        url=resource_url(namespace, document_id, ref),
        html=raw.get("html"),
        description=raw.get("description"),
    )
