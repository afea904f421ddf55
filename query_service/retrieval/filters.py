"""A search request's filters: as index clauses (so top k is taken after filtering) and as the
per-place check behind them (a deduplicated chunk's index document carries the values of all
its places; each place cited must satisfy every filter itself)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Any

import tantivy

from corpus_pipeline.contracts import ChunkType
from corpus_pipeline.contracts.search import SearchFilters, SearchRequest
from corpus_pipeline.finance.subject import entity_key
from corpus_pipeline.index import channels as ch
from query_service.snapshot.revision import Revision

# The list filters: the request's field, and the key of a place's value for it.
_LIST_FILTERS = (
    ("document_type", "document_type"),
    ("source", "source"),
    ("organizational_unit", "organizational_unit"),
    ("document_ids", "document_id"),
    ("entity", "entity"),
    ("form_type", "form_type"),
    ("fiscal_period", "fiscal_period"),
)
_FILTER_FIELDS = {
    "document_type": ch.F_DOCUMENT_TYPE,
    "source": ch.F_SOURCE,
    "organizational_unit": ch.F_ORG_UNIT,
    "document_id": ch.F_DOCUMENT_IDS,
    "entity": ch.F_ENTITY,
    "form_type": ch.F_FORM_TYPE,
    "fiscal_period": ch.F_FISCAL_PERIOD,
}


def and_(first: tantivy.Query | None, second: tantivy.Query) -> tantivy.Query:
    """Both queries (the second alone when there is no first)."""
    if first is None:
        return second
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, first), (tantivy.Occur.Must, second)])


def documents_filter(document_ids: Sequence[str]) -> tantivy.Query:
    return tantivy.Query.term_set_query(ch.schema(), ch.F_DOCUMENT_IDS, sorted(document_ids))


def _type_filter(chunk_types: Sequence[ChunkType]) -> tantivy.Query | None:
    if set(chunk_types) >= set(ChunkType):
        return None
    return tantivy.Query.term_set_query(
        ch.schema(), ch.F_CHUNK_TYPE, sorted(t.value for t in chunk_types)
    )


def filter_query(request: SearchRequest) -> tantivy.Query | None:
    """Chunk-type and metadata filters as index clauses, so top-k is taken after filtering."""
    schema = ch.schema()
    clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
    type_filter = _type_filter(request.chunk_types)
    if type_filter is not None:
        clauses.append((tantivy.Occur.Must, type_filter))
    filters = request.filters
    for name, key in _LIST_FILTERS:
        wanted = getattr(filters, name)
        if wanted is not None:
            field = _FILTER_FIELDS[key]
            values = sorted({w if key == "document_id" else ch.filter_value(w) for w in wanted})
            if key == "entity":
                values = sorted({*values, *(entity_key(w) for w in wanted)} - {""})
            clauses.append(
                (tantivy.Occur.Must, tantivy.Query.term_set_query(schema, field, values))
            )
    if filters.path_prefix is not None:
        prefixes = [
            (
                tantivy.Occur.Should,
                tantivy.Query.regex_query(
                    schema, ch.F_SOURCE_PATH, re.escape(ch.filter_value(p)) + ".*"
                ),
            )
            for p in filters.path_prefix
        ]
        clauses.append((tantivy.Occur.Must, tantivy.Query.boolean_query(prefixes)))
    if filters.date_from is not None or filters.date_to is not None:
        lower = filters.date_from.toordinal() if filters.date_from else date.min.toordinal()
        upper = filters.date_to.toordinal() if filters.date_to else date.max.toordinal()
        clauses.append(
            (
                tantivy.Occur.Must,
                tantivy.Query.range_query(
                    schema, ch.F_DATE, tantivy.FieldType.Integer, lower, upper
                ),
            )
        )
    if not clauses:
        return None
    return tantivy.Query.boolean_query(clauses)


def filters_unknown_to(revision: Revision, request: SearchRequest) -> bool:
    """A filter on a field the revision's index was published without (an issuer, a form or a
    fiscal period, before documents carried them): no place can have a value for it."""
    return any(
        getattr(request.filters, name) is not None and _FILTER_FIELDS[key] not in revision.fields
        for name, key in _LIST_FILTERS
    )


def excluded(location: dict[str, Any], request: SearchRequest) -> bool:
    """Whether the request excludes a place a chunk occurs (by document, by section path, or
    by a filter the place does not pass)."""
    if location["document_id"] in request.exclude_document_ids:
        return True
    path = location["section_path"]
    if any(path[: len(p)] == p for p in request.exclude_section_paths if p):
        return True
    return not _passes_filters(location, request.filters)


def _location_values(location: dict[str, Any], key: str) -> list[str]:
    """The values a place answers a list filter with (an issuer by name and tickers, a fiscal
    period as its year and its quarter)."""
    if key == "entity":
        return ch.entity_names(location)
    if key == "fiscal_period":
        return ch.fiscal_periods(location)
    value = location.get(key)
    return [value] if value else []


def _passes_filters(location: dict[str, Any], filters: SearchFilters) -> bool:
    """The per-place check behind the index pre-filter (a deduplicated chunk's index document
    carries the values of all its places; each place must satisfy every filter itself)."""
    for name, key in _LIST_FILTERS:
        wanted = getattr(filters, name)
        if wanted is not None:
            values = {ch.filter_value(v) for v in _location_values(location, key)}
            asked = {ch.filter_value(w) for w in wanted}
            if key == "entity":
                asked |= {entity_key(w) for w in wanted}
            if not values & asked:
                return False
    if filters.path_prefix is not None:
        value = ch.filter_value(location.get("source_file_name") or "")
        if not any(value.startswith(ch.filter_value(p)) for p in filters.path_prefix):
            return False
    if filters.date_from is not None or filters.date_to is not None:
        raw = location.get("document_date")
        if not raw:
            return False
        day = date.fromisoformat(raw)
        if (filters.date_from and day < filters.date_from) or (
            filters.date_to and day > filters.date_to
        ):
            return False
    return True
