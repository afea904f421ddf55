"""Document prior: which documents a query names, ranked over each document's card.

A question about "Microsoft's Q1 2023 10-Q" names its document by words that are on the
document's cover, in its file name or title, and nowhere near the answer's paragraph (a filing
says "we" and "our", not its company's name). Chunk channels cannot see that, so the classic
search adds a fourth channel: the best chunks of the documents whose *card* (file name, title
and opening page) matches the query best. Cards are built once per published revision and
ranked with Okapi BM25 (pure functions below, tested on their own).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from corpus_pipeline.finance.periods import quarters_named
from corpus_pipeline.index import channels as ch

BM25_K1 = 1.2
BM25_B = 0.75
CARD_CHARS = 4000  # the opening page of a filing or a paper fits; a long first page is cut
OPENING_CHUNKS = 3  # documents without page numbers open with their first chunks


_WORD = re.compile(r"\w[\w&'.-]*")
_QUARTER = re.compile(r"\d{4}q[1-4]")  # a quarter as `finance.periods.quarters_named` spells it


def name_words(query: str) -> str:
    """The words by which a query can name a document: capitalised words after its first word
    ("Microsoft's", "Q1", "Ponemon"), words with digits ("2023", "10-Q") and the quarters it
    names ("first quarter of 2023" → "2023q1"). A topic word
    ("inventory", "authority") names no document, even when few cards hold it."""
    words = _WORD.findall(query)
    named = [
        w for i, w in enumerate(words) if (i and w[0].isupper()) or any(c.isdigit() for c in w)
    ]
    return " ".join(named + quarters_named(query))


@dataclass(frozen=True)
class Card:
    document_id: str
    text: str


@dataclass(frozen=True)
class DocumentCards:
    """Term postings of the cards, for BM25 ranking of documents."""

    postings: dict[str, list[tuple[str, int]]]
    lengths: dict[str, int]
    average: float

    @classmethod
    def build(cls, cards: Iterable[Card]) -> DocumentCards:
        postings: dict[str, list[tuple[str, int]]] = defaultdict(list)
        lengths: dict[str, int] = {}
        for card in sorted(cards, key=lambda c: c.document_id):
            tokens = ch.analyze("content", ch.with_variants(card.text))
            lengths[card.document_id] = len(tokens)
            for term, tf in Counter(tokens).items():
                postings[term].append((card.document_id, tf))
        average = sum(lengths.values()) / len(lengths) if lengths else 0.0
        return cls(dict(postings), lengths, average)

    def names(self, terms: Sequence[str], max_share: float = 1.0) -> list[str]:
        """The query terms that can name a document: on at least one card, on at most
        `max_share` of them, and not on every card (in query order, unique)."""
        total = len(self.lengths)
        most = max(1.0, max_share * total)  # a name is on at least its own document's card
        return [
            term
            for term in dict.fromkeys(terms)
            if 0 < len(self.postings.get(term, ())) <= most and len(self.postings[term]) < total
        ]

    def holds(self, document_id: str, terms: Sequence[str]) -> list[str]:
        """The terms that are on one document's card."""
        return [t for t in terms if any(d == document_id for d, _ in self.postings.get(t, ()))]

    def rank(
        self,
        terms: Sequence[str],
        limit: int,
        max_share: float = 1.0,
        skip: frozenset[str] = frozenset(),
    ) -> list[tuple[str, float]]:
        """The `limit` best documents for the query terms (BM25; ties by document id), none of
        `skip`. Only terms on at most `max_share` of the cards count (a name, not a topic
        word); a term on every card cannot rank anything."""
        total = len(self.lengths)
        scores: dict[str, float] = defaultdict(float)
        for term in self.names(terms, max_share):
            posting = self.postings[term]
            idf = ch.bm25_idf(total, len(posting))
            for document_id, tf in posting:
                norm = 1 - BM25_B + BM25_B * self.lengths[document_id] / (self.average or 1)
                scores[document_id] += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * norm)
        ranked = sorted(
            ((d, v) for d, v in scores.items() if d not in skip),
            key=lambda item: (-item[1], item[0]),
        )
        return [(d, round(s, 6)) for d, s in ranked[:limit]]


def named_documents(
    cards: DocumentCards,
    terms: Sequence[str],
    limit: int,
    max_share: float,
    latest: bool = False,
    superseded: frozenset[str] = frozenset(),
) -> list[str]:
    """The documents a query names, best first — or none, unless it names a dated document:
    the best card holds a quarter the query names ("Intel's Q1 2023 10-Q", "the first quarter
    of 2023"), or the query asks for the latest and the best card holds one of its names
    ("NVIDIA's most recent 10-Q"). Other capitalised words name topics as often as documents
    ("IBM" in a question about the company, not the IBM manual): measured on both question sets,
    letting them name documents moved answers of the development set down a rank. A question
    for the latest ranks only documents no later member of their series supersedes: in an
    archive a company's name is on every quarter's card, and the current one must not lose
    the `limit` places to its predecessors."""
    ranked = cards.rank(terms, limit, max_share, skip=superseded if latest else frozenset())
    if not ranked:
        return []
    held = cards.holds(ranked[0][0], cards.names(terms, max_share))
    if any(_QUARTER.fullmatch(term) for term in held) or (latest and held):
        return [document_id for document_id, _ in ranked]
    return []


def opening_text(chunks: Sequence[dict[str, Any]]) -> str:
    """A document's opening: its chunks printed on its first page (cover, title page, abstract),
    else its first chunks in reading order; at most CARD_CHARS characters."""
    ordered = sorted(chunks, key=lambda c: c["sort_order"])
    paged = [c for c in ordered if c.get("pages")]
    if paged:
        first = min(min(c["pages"]) for c in paged)
        chosen = [c for c in paged if first in c["pages"]]
    else:
        chosen = ordered[:OPENING_CHUNKS]
    return "\n".join(c["content"] for c in chosen)[:CARD_CHARS]


def card_for(document: dict[str, Any], chunks: Sequence[dict[str, Any]]) -> Card:
    words = [document["source_file_name"], document.get("title") or "", opening_text(chunks)]
    return Card(document["document_id"], "\n".join(w for w in words if w))


def load_cards(documents: Any, chunks: Any) -> DocumentCards:
    """Cards of a revision's documents from its LanceDB tables (documents, chunks): one scan of
    each, only the leading chunks of every document."""
    docs = documents.search().select(["document_id", "source_file_name", "title"]).limit(None)
    rows = (
        chunks.search()
        .where(f"sort_order < {4 * OPENING_CHUNKS + 40}")
        .select(["document_id", "content", "pages", "sort_order"])
        .limit(None)
        .to_list()
    )
    by_document: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_document[row["document_id"]].append(row)
    return DocumentCards.build(
        card_for(doc, by_document.get(doc["document_id"], [])) for doc in docs.to_list()
    )
