"""Query shaping for classic search: a question's terms per channel, analysed exactly as that
channel was indexed, and the index query each lexical channel runs (path, content, term, and
the places a question names: pages and numbered parts)."""

from __future__ import annotations

from collections.abc import Sequence

import tantivy

from corpus_pipeline.enrich.text import STOP_WORDS
from corpus_pipeline.index import channels as ch
from query_service.retrieval.pages import PageReference, page_phrases

MAX_QUERY_TERMS = 64
_CONTENT_WORDS_ONLY = {"path", "term"}
UBIQUITOUS_SHARE = 0.5
PATH_MIN_SHARE = 0.35
# The term channel ranks the chunks that say a numbered part the question names ("Appendix C",
# "Table II", "Unit 8", typed "unit-8" too: `channels.PART_LABEL`) as a phrase, word for word.
LABEL_BOOST = 3.0
# The term channel's other number of a word counts this much of the form asked (real-world set,
# lexical, in-process, page-hit@5 / MRR: without the other forms 0.709 / 0.568; with them at
# 1.0: 0.724 / 0.580, 0.8: 0.729 / 0.581, 0.6: 0.724 / 0.580; 10-Q 0.550 → 0.625 at 0.8).
INFLECTED_WEIGHT = 0.8

# One channel's index query: the channel, the query, and the least score a hit must reach.
ChannelQuery = tuple[str, tantivy.Query, float]


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


def label_phrases(query: str) -> list[list[str]]:
    """The numbered parts a query names, as term-channel token sequences."""
    out: list[list[str]] = []
    for match in ch.PART_LABEL.finditer(query):
        # Word and number apart: the term channel keeps "unit-8" whole, the page says "Unit 8".
        tokens = [*ch.analyze("term", match.group(1)), *ch.analyze("term", match.group(2))]
        if len(tokens) >= 2 and tokens not in out:
            out.append(tokens)
    return out


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
    return within(on_page, terms, type_filter)


def part_query(
    parts: Sequence[str], terms: Sequence[str], type_filter: tantivy.Query | None
) -> tantivy.Query:
    """The chunks of a numbered part the question names (under its heading, or the table or
    figure captioned with it), ranked by the question's content words (BM25)."""
    schema = ch.schema()
    named = [tantivy.Query.term_query(schema, ch.F_PART, part) for part in parts]
    return within(named, terms, type_filter)


def place_terms(terms: Sequence[str], naming: Sequence[str]) -> list[str]:
    """The terms that rank chunks within a place the question names: its content words less
    those naming the place ("page 28", "Appendix E") — every chunk there has met them, and
    the chunks that also say them ("Page 28" in a running footer) are no better an answer
    (the real-world set: page-hit@5 0.698 → 0.709, MRR 0.561 → 0.568, no question lower)."""
    named = set(ch.analyze("content", " ".join(naming)))
    return [t for t in terms if t not in named] or list(terms)


def within(
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


def lexical_queries(
    searcher: tantivy.Searcher,
    total: int,
    question: str,
    terms: dict[str, list[str]],
    labels: Sequence[Sequence[str]],
    pages: PageReference,
    parts: Sequence[str],
    scoped_terms: Sequence[str],
    type_filter: tantivy.Query | None,
) -> list[ChannelQuery]:
    """One index query per channel that speaks, with the least score a hit must reach; then the
    pages and the numbered parts the question names, ranked within by `scoped_terms`."""
    queries: list[ChannelQuery] = []
    for channel, channel_terms in terms.items():
        if not channel_terms:
            continue
        if channel == "path":
            query, full = path_query(searcher, channel_terms, total)
            if type_filter is not None:
                query = tantivy.Query.boolean_query(
                    [
                        (tantivy.Occur.Must, query),
                        (tantivy.Occur.Must, tantivy.Query.const_score_query(type_filter, 0.0)),
                    ]
                )
            # A title that matches only a small share of the query ("word" of "Which Latin
            # professor looked up the word …") says nothing about where the answer is.
            queries.append((channel, query, PATH_MIN_SHARE * full))
        else:
            queries.append(
                (channel, channel_query(channel, channel_terms, type_filter, labels, searcher), 0.0)
            )
    if pages:
        page_terms = place_terms(scoped_terms, page_phrases(question))
        queries.append(("page", page_query(pages, page_terms, type_filter), 0.0))
    if parts:
        part_terms = place_terms(scoped_terms, ch.part_phrases(question))
        queries.append(("part", part_query(parts, part_terms, type_filter), 0.0))
    return queries
