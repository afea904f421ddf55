"""Misspelt query words, corrected against the published revision's own vocabulary.

Users and agents pass questions on as typed: "course requiremnt", "Microsfot's revenue". A word
the store has never seen matches nothing in any channel, so the question loses exactly the word
that said what it was about. Like Lucene's DirectSpellChecker, the candidates are the word's
single edits (Damerau: a letter deleted, inserted, replaced, or two neighbours swapped) looked up
in the term channel's dictionary, which keeps words as written; the one most chunks use wins.
No word list is shipped and nothing is fitted: a word is corrected only when the store lacks it
and the store has a word one edit away, so a correct query is never changed.
"""

from __future__ import annotations

import re
import string

import tantivy

from corpus_pipeline.enrich.text import STOP_WORDS
from corpus_pipeline.finance.measures import without_measures
from corpus_pipeline.index import channels as ch

# Shorter words have too many neighbours one edit away ("tabel" is also "label").
MIN_LENGTH = 5
# A correction must be a word of the store, not a stray token of one chunk's OCR.
MIN_CHUNKS = 2
# Corrections per query: each costs ~50 dictionary lookups per letter.
MAX_CORRECTIONS = 4
_WORD = re.compile(r"[\w'-]+")


def single_edits(word: str) -> set[str]:
    """Every string one Damerau edit away from `word` that keeps its first letter (lowercase
    ASCII letters inserted or substituted: the words this applies to are typed, and the term
    channel folds case). Like Lucene's spell checker, the first letter is taken as typed:
    "bullet" is never "gullet"."""
    head, word = word[:1], word[1:]
    splits = [(head + word[:i], word[i:]) for i in range(len(word) + 1)]
    letters = string.ascii_lowercase
    return (
        {a + b[1:] for a, b in splits if b}
        | {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
        | {a + c + b[1:] for a, b in splits if b for c in letters}
        | {a + c + b for a, b in splits for c in letters}
    ) - {head + word}


def correction(searcher: tantivy.Searcher, word: str) -> str | None:
    """The store's word one edit from `word` that the most chunks use, when `word` itself is in
    no chunk; ties go to the alphabetically first (deterministic). A word whose stem the store
    has is another form of a known word ("locates", "reasone"), not a typo: the content channel
    finds it already."""
    if searcher.doc_freq(ch.F_TERM, word) or any(
        searcher.doc_freq(ch.F_CONTENT, stem) for stem in ch.analyze("content", word)
    ):
        return None
    best: tuple[int, str] | None = None
    for candidate in sorted(single_edits(word)):
        count = searcher.doc_freq(ch.F_TERM, candidate)
        if count >= MIN_CHUNKS and (best is None or count > best[0]):
            best = (count, candidate)
    return best[1] if best else None


def corrections(searcher: tantivy.Searcher, text: str) -> dict[str, str]:
    """Misspelt word (lowercase) → the store's word, for the words of `text` that are plain
    letters, MIN_LENGTH or longer, not function words, not part of a measure's name the query
    understanding knows ("EBITDA", "capex"), and found in no chunk."""
    out: dict[str, str] = {}
    # The term channel's own tokens: "covid-19" or "x86" stay whole and are never corrected.
    for word in ch.analyze("term", without_measures(text)):
        if (
            len(word) < MIN_LENGTH
            or not (word.isascii() and word.isalpha())
            or word in STOP_WORDS
            or word in out
        ):
            continue
        fixed = correction(searcher, word)
        if fixed is not None:
            out[word] = fixed
            if len(out) == MAX_CORRECTIONS:
                break
    return out


def spelled(searcher: tantivy.Searcher, text: str) -> tuple[str, dict[str, str]]:
    """`text` with each misspelt word replaced by its correction (whole words, any case), and
    the corrections made."""
    fixes = corrections(searcher, text)
    if not fixes:
        return text, fixes
    return _WORD.sub(lambda m: fixes.get(m.group().lower(), m.group()), text), fixes
