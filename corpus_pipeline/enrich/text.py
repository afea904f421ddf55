"""Sentence splitting, extractive summaries and statistical keywords (all offline).

Summary: the highest-scoring sentences by average content-word frequency, kept in document
order, with a position prior for the lead sentence. Keywords: YAKE (unsupervised, statistical).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from typing import Any

_WORD = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*", re.UNICODE)
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "may",
        "more",
        "most",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "also",
        "about",
        "after",
        "all",
        "any",
        "before",
        "between",
        "both",
        "each",
        "other",
        "over",
        "same",
        "some",
        "only",
        "under",
        "up",
        "very",
    ]
)
_MAX_SUMMARY_CHARS = 400


@cache
def _segmenter(language: str) -> Any:
    import pysbd

    try:
        return pysbd.Segmenter(language=language, clean=False)
    except ValueError:
        return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str, language: str | None = None) -> list[str]:
    """Rule-based sentence boundaries (pysbd); each sentence keeps its trailing space."""
    if not text.strip():
        return []
    return [s for s in _segmenter(language or "en").segment(text) if s.strip()]


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def extractive_summary(text: str, max_sentences: int = 2, language: str | None = None) -> str:
    """Pick up to `max_sentences` salient sentences, in their original order."""
    flat = " ".join(text.split())
    if not flat:
        return ""
    sentences = [" ".join(s.split()) for s in split_sentences(flat, language)]
    if len(sentences) <= max_sentences:
        return _clip(" ".join(sentences))
    freq = Counter(w for w in words(flat) if w not in STOP_WORDS and len(w) > 2)
    top = max(freq.values(), default=1)

    def score(index: int, sentence: str) -> float:
        content = [w for w in words(sentence) if w not in STOP_WORDS and len(w) > 2]
        if not content:
            return 0.0
        lead = 0.25 if index == 0 else 0.0
        return float(sum(freq[w] / top for w in content) / (len(content) ** 0.5) + lead)

    ranked = sorted(range(len(sentences)), key=lambda i: (-score(i, sentences[i]), i))
    chosen = sorted(ranked[:max_sentences])
    return _clip(" ".join(sentences[i] for i in chosen))


def _clip(text: str) -> str:
    if len(text) <= _MAX_SUMMARY_CHARS:
        return text
    cut = text[:_MAX_SUMMARY_CHARS].rsplit(" ", 1)[0]
    return cut + " …"


@cache
def _yake_languages() -> frozenset[str]:
    from importlib import resources

    folder = resources.files("yake") / "core" / "StopwordsList"
    return frozenset(
        p.name.removeprefix("stopwords_").removesuffix(".txt") for p in folder.iterdir()
    )


@cache
def _yake(language: str, top: int) -> Any:
    import yake

    if language not in _yake_languages():
        language = "en"

    return yake.KeywordExtractor(lan=language, n=2, top=top, dedupLim=0.7)


def keywords(text: str, top: int = 8, language: str | None = None) -> list[str]:
    """Statistical keywords (YAKE), lower-cased and de-duplicated, best first."""
    if top <= 0 or len(words(text)) < 3:
        return []
    try:
        found = _yake(language or "en", top).extract_keywords(text)
    except (ValueError, ZeroDivisionError, KeyError):
        return []
    out: list[str] = []
    for phrase, _score in found:
        key = " ".join(phrase.lower().split())
        if key and key not in out:
            out.append(key)
    return out[:top]
