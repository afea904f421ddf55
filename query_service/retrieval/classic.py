"""Classic search: three channel queries, weighted reciprocal rank fusion, cited results."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from datetime import date
from itertools import zip_longest
from typing import Any, cast

import tantivy

from corpus_pipeline.contracts import ChunkType
from corpus_pipeline.contracts.artifacts import is_textless_image
from corpus_pipeline.contracts.search import (
    CHANNELS,
    DEFAULT_WEIGHTS,
    Location,
    Resource,
    SearchFilters,
    SearchRequest,
    SearchResponse,
    SearchResult,
    resource_url,
)
from corpus_pipeline.enrich.text import STOP_WORDS
from corpus_pipeline.finance.measures import Expansion, expand
from corpus_pipeline.finance.subject import entity_key
from corpus_pipeline.index import channels as ch
from query_service.retrieval.dense import query_vector
from query_service.retrieval.fusion import weighted_rrf
from query_service.retrieval.instructions import search_text
from query_service.retrieval.pages import PageReference, page_phrases, page_references
from query_service.retrieval.recency import asks_for_latest, superseded
from query_service.retrieval.spelling import spelled
from query_service.snapshot.documents import name_words, named_documents
from query_service.snapshot.revision import Revision
from query_service.snapshot.routing import Routing

MAX_QUERY_TERMS = 64
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
_CONTENT_WORDS_ONLY = {"path", "term"}
UBIQUITOUS_SHARE = 0.5
PATH_MIN_SHARE = 0.35
# Each channel's list is read this deep before fusion: a chunk a channel ranks 120th still adds
# its share to one that other channels rank high (measured on the real-world set: page-hit@5
# 0.673 at 50, 0.678 at 100, 0.683 at 200 and 400; 10-Q filings 0.500 → 0.550).
MIN_DEPTH = 200
# Chunks the dense channel ranks (its hits are mapped into the index one by one).
DENSE_DEPTH = 100
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

# Words by which a question says it is about an issuer's report.
REPORTS = re.compile(
    r"\b(?:10-?[KQ]|20-?F|8-?K|annual report|quarterly report|filings?|financial statements?|"
    r"fiscal|earnings)\b",
    re.IGNORECASE,
)

DocKey = tuple[int, int]
NO_PAGES = PageReference()


def shape_query(channel: str, query: str) -> list[str]:
    """The query's tokens for one channel, analysed exactly as that channel was indexed
    (unique, in order, capped).

    The path and term channels drop English function words: section titles are short, so a
    title like "Swimming in the lake" would otherwise win on "in"/"the" alone, and the term
    channel exists for identifiers. The content channel keeps every word (BM25's IDF discounts
    them there), and a query made only of function words ("The Who") keeps them everywhere.
    """
    if channel in _CONTENT_WORDS_ONLY:
        words = [w for w in ch.analyze("term", query) if w not in STOP_WORDS]
        if words:
            query = " ".join(words)
    query = ch.with_variants(query)
    seen: dict[str, None] = {}
    for token in ch.analyze(channel, query):
        seen.setdefault(token, None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return list(seen)


def informative_terms(
    searcher: tantivy.Searcher, channel: str, terms: list[str], total: int
) -> list[str]:
    """Path-channel terms that occur in at least half of all chunks (typically a file-name word
    shared by a whole document) cannot rank anything and are dropped from that channel."""
    if channel != "path" or total == 0:
        return terms
    field = ch.CHANNEL_FIELDS[channel]
    return [t for t in terms if searcher.doc_freq(field, t) < UBIQUITOUS_SHARE * total]


def path_query(
    searcher: tantivy.Searcher, terms: Sequence[str], total: int
) -> tuple[tantivy.Query, float]:
    """The path channel scores a chunk by the summed IDF of the query terms its file name and
    section path contain — no length normalisation: a deep section path is no worse a match
    than a shallow one, and chunks matching the same title words tie (and share a rank).
    Returns the query and the summed IDF of all its terms (the score of a full match)."""
    schema = ch.schema()
    clauses = []
    full = 0.0
    for term in terms:
        df = searcher.doc_freq(ch.F_PATH, term)
        idf = round(ch.bm25_idf(total, df), 4)
        full += idf
        if df == 0:
            continue
        query = tantivy.Query.term_query(schema, ch.F_PATH, term)
        clauses.append((tantivy.Occur.Should, tantivy.Query.const_score_query(query, idf)))
    return tantivy.Query.boolean_query(clauses), full


# The term channel ranks the chunks that say a numbered part the question names ("Appendix C",
# "Table II", "Unit 8", typed "unit-8" too: `channels.PART_LABEL`) as a phrase, word for word.
LABEL_BOOST = 3.0


def label_phrases(query: str) -> list[list[str]]:
    """The numbered parts a query names, as term-channel token sequences."""
    out: list[list[str]] = []
    for match in ch.PART_LABEL.finditer(query):
        # Word and number apart: the term channel keeps "unit-8" whole, the page says "Unit 8".
        tokens = [*ch.analyze("term", match.group(1)), *ch.analyze("term", match.group(2))]
        if len(tokens) >= 2 and tokens not in out:
            out.append(tokens)
    return out


# The term channel's other number of a word counts this much of the form asked (real-world set,
# lexical, in-process, page-hit@5 / MRR: without the other forms 0.709 / 0.568; with them at
# 1.0: 0.724 / 0.580, 0.8: 0.729 / 0.581, 0.6: 0.724 / 0.580; 10-Q 0.550 → 0.625 at 0.8).
INFLECTED_WEIGHT = 0.8


def channel_query(
    channel: str,
    terms: Sequence[str],
    type_filter: tantivy.Query | None,
    labels: Sequence[Sequence[str]] = (),
    searcher: tantivy.Searcher | None = None,
) -> tantivy.Query:
    field = ch.CHANNEL_FIELDS[channel]
    schema = ch.schema()

    def word(term: str) -> tantivy.Query:
        query = tantivy.Query.term_query(schema, field, term)
        if channel != "term" or searcher is None:
            return query
        # The term channel keeps words as written; a word also counts in its other number
        # ("inventory": the balance sheet's "Inventories"), once (the best of its forms), with
        # the IDF of all its forms together as a stemmed word has it, the form asked a little
        # ahead of the others.
        df = {t: searcher.doc_freq(field, t) for t in (term, *ch.inflections(term))}
        written = {t: n for t, n in df.items() if n and (t == term or t not in terms)}
        if set(written) <= {term}:
            return query
        total = searcher.num_docs
        shared = ch.bm25_idf(total, sum(written.values()))
        return tantivy.Query.disjunction_max_query(
            [
                tantivy.Query.boost_query(
                    tantivy.Query.term_query(schema, field, t),
                    (1.0 if t == term else INFLECTED_WEIGHT) * shared / ch.bm25_idf(total, n),
                )
                for t, n in written.items()
            ]
        )

    clauses = [(tantivy.Occur.Should, word(term)) for term in terms]
    for words in labels if channel == "term" else ():
        phrase = tantivy.Query.phrase_query(schema, field, list(words))
        clauses.append((tantivy.Occur.Should, tantivy.Query.boost_query(phrase, LABEL_BOOST)))
    should = tantivy.Query.boolean_query(clauses)
    if type_filter is None:
        return should
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, should), (tantivy.Occur.Must, type_filter)]
    )


def _and(first: tantivy.Query | None, second: tantivy.Query) -> tantivy.Query:
    if first is None:
        return second
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, first), (tantivy.Occur.Must, second)])


def documents_filter(document_ids: Sequence[str]) -> tantivy.Query:
    return tantivy.Query.term_set_query(ch.schema(), ch.F_DOCUMENT_IDS, sorted(document_ids))


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
        scoped = type_filter if scope is None else _and(type_filter, documents_filter([scope]))
        lists = [
            [
                address
                for _, address in searcher.search(
                    _within(
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


def on_named_page(location: dict[str, Any], pages: PageReference) -> bool:
    """Whether a place a chunk occurs is on a page the question names."""
    return bool(
        set(location["pages"]) & set(pages.numbers)
        or set(location.get("pages_from_end", ())) & set(pages.from_end)
        or {ch.filter_value(x) for x in location.get("page_labels", ())} & set(pages.labels)
    )


def page_query(
    pages: PageReference, terms: Sequence[str], type_filter: tantivy.Query | None
) -> tantivy.Query:
    """The chunks printed on a page the question names (by position, from the end, or by the
    label printed on it), ranked by the question's content words (BM25)."""
    schema = ch.schema()
    on_page = [
        tantivy.Query.term_query(schema, name, value)
        for name, values in (
            (ch.F_PAGE, pages.numbers),
            (ch.F_PAGE_FROM_END, pages.from_end),
            (ch.F_PAGE_LABEL, pages.labels),
        )
        for value in values
    ]
    return _within(on_page, terms, type_filter)


def part_query(
    parts: Sequence[str], terms: Sequence[str], type_filter: tantivy.Query | None
) -> tantivy.Query:
    """The chunks of a numbered part the question names (under its heading, or the table or
    figure captioned with it), ranked by the question's content words (BM25)."""
    schema = ch.schema()
    named = [tantivy.Query.term_query(schema, ch.F_PART, part) for part in parts]
    return _within(named, terms, type_filter)


def place_terms(terms: Sequence[str], naming: Sequence[str]) -> list[str]:
    """The terms that rank chunks within a place the question names: its content words less
    those naming the place ("page 28", "Appendix E") — every chunk there has met them, and
    the chunks that also say them ("Page 28" in a running footer) are no better an answer
    (the real-world set: page-hit@5 0.698 → 0.709, MRR 0.561 → 0.568, no question lower)."""
    named = set(ch.analyze("content", " ".join(naming)))
    return [t for t in terms if t not in named] or list(terms)


def _within(
    places: Sequence[tantivy.Query], terms: Sequence[str], type_filter: tantivy.Query | None
) -> tantivy.Query:
    """The chunks that match any of `places`, ranked by the question's content words (BM25)."""
    clauses = [
        (
            tantivy.Occur.Must,
            tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in places]),
        ),
        (tantivy.Occur.Should, channel_query("content", terms, None)),
    ]
    if type_filter is not None:
        clauses.append((tantivy.Occur.Must, type_filter))
    return tantivy.Query.boolean_query(clauses)


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


def _result(
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
        if not _excluded(loc, request) and (not only or loc["document_id"] in only)
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


def payload_for_chunk(revision: Revision, chunk_id: str) -> dict[str, Any] | None:
    """The published index payload of one chunk (content, resource, every place it occurs)."""
    query = tantivy.Query.term_query(ch.schema(), ch.F_CHUNK_ID, chunk_id)
    hits = revision.searcher.search(query, 1, count=False).hits
    return _payload(revision, hits[0][1]) if hits else None


def _chunk_address(
    searcher: tantivy.Searcher, chunk_id: str, type_filter: tantivy.Query | None
) -> tantivy.DocAddress | None:
    """Where a chunk is in the index, if the request's filter admits it."""
    query = tantivy.Query.term_query(ch.schema(), ch.F_CHUNK_ID, chunk_id)
    if type_filter is not None:
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, query), (tantivy.Occur.Must, type_filter)]
        )
    hits = searcher.search(query, 1, count=False).hits
    return hits[0][1] if hits else None


def _payload(revision: Revision, address: tantivy.DocAddress) -> dict[str, Any]:
    return ch.decode_stored(revision.searcher.doc(address)[ch.F_STORED][0])


def _demoted(result: SearchResult, older: frozenset[str]) -> bool:
    """Ranked after every other hit: a hit only in superseded documents (the question asks for
    the latest), and an image with no text of its own (nothing to read or cite by)."""
    return result.document_id in older or is_textless_image(result.chunk_type.value, result.content)


def superseded_documents(revision: Revision) -> frozenset[str]:
    """The revision's documents that a later member of their series supersedes (read once)."""

    def load() -> frozenset[str]:
        rows = (
            revision.table("documents")
            .search()
            .select(["document_id", "source_file_name", "document_date"])
            .limit(None)
            .to_list()
        )
        return superseded(
            (r["document_id"], r["source_file_name"], r["document_date"]) for r in rows
        )

    return cast(frozenset[str], revision.memo("superseded", load))


def _filters_unknown_to(revision: Revision, request: SearchRequest) -> bool:
    """A filter on a field the revision's index was published without (an issuer, a form or a
    fiscal period, before documents carried them): no place can have a value for it."""
    return any(
        getattr(request.filters, name) is not None and _FILTER_FIELDS[key] not in revision.fields
        for name, key in _LIST_FILTERS
    )


def classic_search(revision: Revision, request: SearchRequest) -> SearchResponse:
    started = time.perf_counter()
    if _filters_unknown_to(revision, request):
        return _response(revision, request, started, [], small=False)
    type_filter = filter_query(request)
    weights = request.weights or DEFAULT_WEIGHTS
    searcher = revision.searcher
    total = revision.pointer.chunks
    results: list[SearchResult] = []
    fixes: dict[str, str] = {}
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
        query_text, fixes = spelled(searcher, search_text(request.query))
        routing = (
            revision.router().route(query_text)
            if weights.get("document", 0) > 0 or weights.get("statement", 0) > 0
            else Routing()
        )
        expansion = (
            expand(query_text)
            if weights.get("statement", 0) > 0 and ch.F_STATEMENT in revision.fields
            else None
        )
        if routing and not (routing.period or expansion or REPORTS.search(query_text)):
            # An issuer named without a period, a measure or a report is as often a topic
            # ("Amazon-related datasets") as the document asked about: no prior.
            routing = Routing()
        if routing.certain:
            # The question names its issuers and their periods: search keeps to those filings.
            type_filter = _and(type_filter, documents_filter(routing.documents))
        terms = {
            channel: shape_query(channel, query_text)
            for channel in CHANNELS
            if weights.get(channel, 0) > 0 and channel in ch.CHANNEL_FIELDS
        }
        labels = label_phrases(query_text)
        pages = (
            page_references(query_text)
            if weights.get("page", 0) > 0 and ch.F_PAGE in revision.fields
            else NO_PAGES
        )
        parts = (
            ch.parts_named(query_text)
            if weights.get("part", 0) > 0 and ch.F_PART in revision.fields
            else []
        )
        scoped_terms = (
            (terms.get("content") or shape_query("content", query_text)) if pages or parts else []
        )
        older = superseded_documents(revision) if asks_for_latest(query_text) else frozenset()
        vectors = (
            query_vector(revision, query_text)
            if weights.get("dense", 0) > 0 or weights.get("rerank", 0) > 0
            else None
        )
        dense: list[tuple[str, float]] = []
        if vectors is not None and weights.get("dense", 0) > 0:
            dense = vectors[0].rank(vectors[1], DENSE_DEPTH)
        if weights.get("rerank", 0) <= 0:
            vectors = None
        decoded: dict[DocKey, dict[str, Any]] = {}  # a chunk's stored payload, read once

        def payload_of(key: DocKey) -> dict[str, Any]:
            if key not in decoded:
                decoded[key] = _payload(revision, addresses[key])
            return decoded[key]

        documents: list[str] = []
        if weights.get("document", 0) > 0 and routing:
            documents = list(routing.documents[:PRIOR_DOCUMENTS])
        elif weights.get("document", 0) > 0:
            names = name_words(query_text)
            named = (
                named_documents(
                    revision.cards(),
                    shape_query("path", names),
                    PRIOR_DOCUMENTS,
                    NAME_SHARE,
                    latest=asks_for_latest(query_text),
                    superseded=older,
                )
                if names
                else []
            )
            # A question about the latest filing names only current members of its series.
            documents = named
        # One index query per channel that speaks, with the least score a hit must reach.
        queries: list[tuple[str, tantivy.Query, float]] = []
        for channel, channel_terms in terms.items():
            if not channel_terms:
                continue
            if channel == "path":
                query, full = path_query(searcher, channel_terms, total)
                if type_filter is not None:
                    query = tantivy.Query.boolean_query(
                        [
                            (tantivy.Occur.Must, query),
                            (
                                tantivy.Occur.Must,
                                tantivy.Query.const_score_query(type_filter, 0.0),
                            ),
                        ]
                    )
                # A title that matches only a small share of the query ("word" of "Which Latin
                # professor looked up the word …") says nothing about where the answer is.
                queries.append((channel, query, PATH_MIN_SHARE * full))
            else:
                queries.append(
                    (
                        channel,
                        channel_query(channel, channel_terms, type_filter, labels, searcher),
                        0.0,
                    )
                )
        if pages:
            page_terms = place_terms(scoped_terms, page_phrases(query_text))
            queries.append(("page", page_query(pages, page_terms, type_filter), 0.0))
        if parts:
            part_terms = place_terms(scoped_terms, ch.part_phrases(query_text))
            queries.append(("part", part_query(parts, part_terms, type_filter), 0.0))
        while True:
            ranked: dict[str, list[DocKey]] = {}
            channel_scores: dict[str, list[float]] = {}
            addresses: dict[DocKey, tantivy.DocAddress] = {}
            exhausted = True
            for channel, query, min_score in queries:
                hits = searcher.search(query, depth, count=False).hits
                if min_score:
                    hits = [h for h in hits if h[0] >= min_score - 1e-6]
                exhausted &= len(hits) < depth
                keys = []
                for _, address in hits:
                    key = (address.segment_ord, address.doc)
                    addresses[key] = address
                    keys.append(key)
                ranked[channel] = keys
                channel_scores[channel] = [round(score, 5) for score, _ in hits]
            if dense:
                # The chunks nearest the query's vector, each found in the index under the same
                # filter as every other channel (a filtered-out chunk never comes back here).
                ranked["dense"] = []
                channel_scores["dense"] = []
                for chunk_id, score in dense[:depth]:
                    found = _chunk_address(searcher, chunk_id, type_filter)
                    if found is not None:
                        key = (found.segment_ord, found.doc)
                        addresses[key] = found
                        ranked["dense"].append(key)
                        channel_scores["dense"].append(round(score, 5))
            if documents and terms.get("content"):
                # The best chunks of the documents the query names, document by document.
                keys = []
                for document_id in documents:
                    query = tantivy.Query.boolean_query(
                        [
                            (
                                tantivy.Occur.Must,
                                channel_query("content", terms["content"], type_filter),
                            ),
                            (
                                tantivy.Occur.Must,
                                tantivy.Query.term_query(
                                    ch.schema(), ch.F_DOCUMENT_IDS, document_id
                                ),
                            ),
                        ]
                    )
                    for _, address in searcher.search(query, depth, count=False).hits:
                        key = (address.segment_ord, address.doc)
                        addresses[key] = address
                        keys.append(key)
                ranked["document"] = keys
            if expansion:
                keys = []
                for listed in statement_hits(
                    searcher, expansion, query_text, routing, type_filter, depth
                ):
                    for found in listed:
                        key = (found.segment_ord, found.doc)
                        addresses[key] = found
                        keys.append(key)
                ranked["statement"] = keys
            fused_list = weighted_rrf(ranked, weights, scores=channel_scores)
            if vectors is not None:
                # The lexical pool reordered by the model, fused in as one more ranked list.
                pool = [f.key for f in fused_list[:RERANK_POOL]]
                similar = vectors[0].similarity(
                    vectors[1], [payload_of(key)["chunk_id"] for key in pool]
                )
                order = sorted(
                    (i for i, cos in enumerate(similar) if cos is not None),
                    key=lambda i: (-(similar[i] or 0.0), i),
                )
                ranked["rerank"] = [pool[i] for i in order]
                channel_scores["rerank"] = [round(similar[i] or 0.0, 5) for i in order]
                fused_list = weighted_rrf(ranked, weights, scores=channel_scores)
            results = []
            current = 0  # results not only in superseded documents
            for fused in fused_list:
                payload = payload_of(fused.key)
                result = _result(
                    payload,
                    fused.score,
                    fused.ranks,
                    request,
                    older,
                    pages,
                    documents,
                    frozenset(routing.documents) if routing.certain else frozenset(),
                )
                if result is not None:
                    results.append(result)
                    current += not _demoted(result, older)
                    if current == request.top_k:
                        # Demoted hits only sort after these: the rest cannot enter top k.
                        break
            results.sort(key=lambda r: _demoted(r, older))
            if len(results) >= request.top_k or exhausted:
                break
            depth *= 4
    return _response(revision, request, started, results[: request.top_k], small, fixes)


def _response(
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
