"""A search result's snippet with the query's words marked, for `corpus search`.

A word of the content matches when the index's stemming analyzer (`index.channels`, the one
the content channel searches with) makes it a term of the query that is not a stop word, so
"feeding" is marked for "How do ducks feed?" exactly when the search could have matched it.
The snippet is the window of the content that holds the most distinct matched terms.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from corpus_pipeline.enrich.text import STOP_WORDS
from corpus_pipeline.index import channels as ch

SNIPPET_CHARS = 280
_WORD = re.compile(r"\w+")
_STOP_TERMS = frozenset(t for word in STOP_WORDS for t in ch.analyze("content", word))


@dataclass(frozen=True)
class Snippet:
    """The text shown and the (start, end) offsets of its marked words in it."""

    text: str
    marks: tuple[tuple[int, int], ...]

    def plain(self, before: str = "**", after: str = "**") -> str:
        """The snippet with each marked word between `before` and `after` (plain text)."""
        out, last = [], 0
        for start, end in self.marks:
            out += [self.text[last:start], before, self.text[start:end], after]
            last = end
        return "".join([*out, self.text[last:]])


def query_terms(query: str) -> frozenset[str]:
    """The query's terms as the content channel analyses them, stop words left out (all of
    them when the query holds nothing else)."""
    terms = ch.analyze("content", query)
    return frozenset(t for t in terms if t not in _STOP_TERMS) or frozenset(terms)


def snippet(content: str, query: str, size: int = SNIPPET_CHARS) -> Snippet:
    """The `size` characters of `content` (whitespace collapsed) around the most distinct
    query terms, cut at word boundaries with '…' where cut, and the matched words in it."""
    text = " ".join(content.split())
    terms = query_terms(query)
    hits = [
        (m.start(), m.end(), term)
        for m in _WORD.finditer(text)
        if (term := _term(m.group())) in terms
    ]
    first, last = _best_window(hits, size)
    # A little of what leads to the first match, as far as the last one still fits.
    start = max(0, first - min(size // 5, size - (last - first)))
    end = min(len(text), start + size)
    if end < len(text) and text[end] != " " and " " in text[start:end]:
        end = text.rfind(" ", start, end)  # not in the middle of a word
    if start > 0 and text[start - 1] != " ":
        start = text.find(" ", start, end) + 1 or start  # nor here
    lead, tail = ("… " if start > 0 else ""), (" …" if end < len(text) else "")
    shift = len(lead) - start
    marks = tuple((s + shift, e + shift) for s, e, _ in hits if s >= start and e <= end)
    return Snippet(lead + text[start:end] + tail, marks)


@functools.lru_cache(maxsize=4096)
def _term(word: str) -> str:
    """A word's term in the content channel ('' for none)."""
    return next(iter(ch.analyze("content", word)), "")


def _best_window(hits: list[tuple[int, int, str]], size: int) -> tuple[int, int]:
    """Where the first and last matched words of the window of `size` characters holding the
    most distinct terms, closest together, begin and end ((0, 0) when nothing matched)."""
    best, best_key = (0, 0), (0, 0)
    for i, (start, _, _) in enumerate(hits):
        inside = []
        for hit in hits[i:]:
            if hit[1] > start + size:
                break
            inside.append(hit)
        distinct = {term for _, _, term in inside}
        seen: set[str] = set()
        for _, end, term in inside:  # the shortest span from `start` that holds them all
            seen.add(term)
            if len(seen) == len(distinct):
                key = (len(distinct), start - end)
                if key > best_key:
                    best, best_key = (start, end), key
                break
    return best
